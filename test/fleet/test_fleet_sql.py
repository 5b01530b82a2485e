# Copyright 2026 robot_memory maintainers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""The SQL layer's multi-row writes: the same rows on both dialects, staged or not."""

import json
import os
import subprocess
import sys

import pytest

from robot_memory.fleet import sql
from robot_memory.fleet.sql import connect
from robot_memory.testing.fleet_servers import new_database

# the fleet's fixtures: store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)

TYPES = ('TEXT', 'BIGINT', 'DOUBLE PRECISION')
UPSERT = ('INSERT INTO counts (name, n, at, state)', "(?, ?, ?, 'new')",
          'ON CONFLICT (name) DO UPDATE SET n = counts.n + excluded.n, at = excluded.at, '
          "state = 'again'")


@pytest.fixture
def db(store_url):
    opened = connect(store_url)
    opened.execute('CREATE TABLE counts (name TEXT PRIMARY KEY, n BIGINT NOT NULL, at DOUBLE '
                   'PRECISION, state TEXT NOT NULL)')
    yield opened
    opened.close()


def _all(db) -> list:
    return db.tuples('SELECT name, n, at, state FROM counts ORDER BY name')


@pytest.mark.parametrize('types', [(), TYPES], ids=['one_row_statement', 'typed'])
def test_rows_are_upserted_alike_twice_in_one_transaction(db, types):
    with db.transaction():
        db.insert_many(*UPSERT[:2], [('a', 1, 1.5), ('b', 2, None)], UPSERT[2], types)
        # the second write of a transaction: what the first staged is not written again
        db.insert_many(*UPSERT[:2], [('b', 10, 2.5), ("c'", 3, 0.25)], UPSERT[2], types)
    db.insert_many(*UPSERT[:2], [('a', 100, 3.0)], UPSERT[2], types)  # outside one too
    assert _all(db) == [('a', 101, 3.0, 'again'), ('b', 12, 2.5, 'again'),
                        ("c'", 3, 0.25, 'new')]


def test_what_a_rolled_back_transaction_staged_is_gone_and_the_next_one_writes(db):
    with pytest.raises(RuntimeError, match='abandoned'):
        with db.transaction():
            db.insert_many(*UPSERT[:2], [('a', 1, 1.0)], UPSERT[2], TYPES)
            raise RuntimeError('abandoned')
    assert _all(db) == []
    db.insert_many(*UPSERT[:2], [('b', 2, 2.0)], UPSERT[2], TYPES)
    assert _all(db) == [('b', 2, 2.0, 'new')]


def test_after_a_commit_that_failed_the_next_transaction_stages_and_writes(db):
    # a deferred check fails the COMMIT itself, after the first staged write of the connection
    if db.dialect.name == 'sqlite':
        db.execute('PRAGMA foreign_keys = ON')
    db.execute('CREATE TABLE owners (name TEXT PRIMARY KEY)')
    db.execute('CREATE TABLE owned (name TEXT REFERENCES owners (name) DEFERRABLE INITIALLY '
               'DEFERRED)')
    with pytest.raises(Exception, match='(?i)foreign key'):
        with db.transaction():
            db.insert_many(*UPSERT[:2], [('a', 1, 1.0)], UPSERT[2], TYPES)
            db.execute('INSERT INTO owned (name) VALUES (?)', ('nobody',))
    assert _all(db) == []
    db.insert_many(*UPSERT[:2], [('b', 2, 2.0)], UPSERT[2], TYPES)
    assert _all(db) == [('b', 2, 2.0, 'new')]


def test_rows_of_the_wrong_width_are_refused_before_anything_is_written(db):
    with pytest.raises(ValueError, match='3 types'):
        db.insert_many(*UPSERT[:2], [('a', 1, 1.0, 'extra')], UPSERT[2], TYPES)
    assert _all(db) == []


def test_new_rows_are_inserted_and_a_key_already_there_rolls_the_transaction_back(db):
    columns = ('name', 'n', 'at', 'state')
    types = TYPES + ('TEXT',)
    with db.transaction():
        db.insert_new('counts', columns, [('a', 1, 1.0, 'new'), ('b', 2, None, 'new')], types)
    with pytest.raises(Exception, match='(?i)unique|duplicate'):
        with db.transaction():
            db.insert_new('counts', columns, [('c', 3, 3.0, 'new')], types)
            db.insert_new('counts', columns, [('a', 9, 9.0, 'new')], types)
    assert _all(db) == [('a', 1, 1.0, 'new'), ('b', 2, None, 'new')]


@pytest.mark.parametrize('chunks', [True, False], ids=['streamed', 'read_then_grouped'])
def test_rows_are_grouped_by_their_first_column_in_their_order(db, monkeypatch, chunks):
    # streamed in chunks where psycopg and libpq can (PostgreSQL), else read and grouped
    monkeypatch.setattr(sql, '_streams_chunks', lambda: chunks)
    monkeypatch.setattr(sql, 'STREAM_ROWS', 2)  # several chunks of these few rows
    db.insert_many(*UPSERT[:2], [(f'{name}{number}', number, None) for number in range(5)
                                 for name in 'ba'], UPSERT[2], TYPES)
    found = db.grouped('SELECT substr(name, 1, 1), name, n FROM counts WHERE n > ? ORDER BY '
                       'n, name', (0,))
    assert found == {'a': [('a', 'a1', 1), ('a', 'a2', 2), ('a', 'a3', 3), ('a', 'a4', 4)],
                     'b': [('b', 'b1', 1), ('b', 'b2', 2), ('b', 'b3', 3), ('b', 'b4', 4)]}
    assert list(found) == ['a', 'b'] and db.grouped('SELECT name FROM counts WHERE n < 0') == {}


OS_LIBPQ_SCRIPT = """
import json, sys
import psycopg
from robot_memory.fleet import sql
db = sql.connect(sys.argv[1])
db.execute('CREATE TABLE counts (name TEXT PRIMARY KEY, n BIGINT NOT NULL, at DOUBLE '
           'PRECISION, state TEXT NOT NULL)')
upsert = json.loads(sys.argv[2])
with db.transaction():
    db.insert_many(*upsert[:2], [(f'{name}{number}', number, 0.5) for number in range(5)
                                 for name in 'ba'], upsert[2], json.loads(sys.argv[3]))
found = db.grouped('SELECT substr(name, 1, 1), name, n FROM counts WHERE n > ? ORDER BY n, name',
                   (2,))
print(json.dumps({'impl': psycopg.pq.__impl__, 'libpq': psycopg.pq.version(),
                  'streams': sql._streams_chunks(), 'found': found}))
"""


def test_the_sql_layer_works_with_the_os_libpq_streamed_or_read_then_grouped(postgres):
    # psycopg without its binary wheel (Debian's python3-psycopg, pip's pure-Python one)
    # loads the OS's libpq: before libpq 17 (Debian 12 has 15) rows cannot be streamed in
    # chunks, and the roll-up reads them, then groups. The real library decides here.
    env = dict(os.environ, PSYCOPG_IMPL='python')
    done = subprocess.run([sys.executable, '-c', OS_LIBPQ_SCRIPT, new_database(postgres),
                           json.dumps(UPSERT), json.dumps(TYPES)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report['impl'] == 'python'
    assert report['streams'] == (report['libpq'] >= 170000)
    assert report['found'] == {'a': [['a', 'a3', 3], ['a', 'a4', 4]],
                               'b': [['b', 'b3', 3], ['b', 'b4', 4]]}
