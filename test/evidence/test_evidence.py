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

"""The SQLite evidence store: file safety, migrations, buffered ingest, audit, retention."""

import datetime as dt
import importlib
import sqlite3
import stat
import subprocess
import sys

import pytest
from sqlite_utils import Database
from sqlite_utils import Migrations

from robot_memory.common.sqlite_db import apply_migrations
from robot_memory.common.sqlite_db import MigrationSet
from robot_memory.common.sqlite_db import PlainDatabase
from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_audit import AuditRecord
from robot_memory.evidence.evidence_store import CACHE_KIB
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.evidence_store import MIGRATIONS
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import LogObservation
from robot_memory.evidence.runs import insert_observations
from robot_memory.evidence.runs import ROWS_PER_INSERT
from robot_memory.locations import default_db_path

T0 = dt.datetime(2026, 5, 1, 0, 0, tzinfo=UTC)


def warn(at, message='dropped 12 ticks', hardware_id='wheel_left', level=1):
    return DiagnosticObservation(at, 'base: encoder', hardware_id, level, message)


def ok(at, hardware_id='wheel_left'):
    return DiagnosticObservation(at, 'base: encoder', hardware_id, 0, 'OK')


@pytest.fixture
def store():
    with EvidenceStore(':memory:') as opened:
        yield opened


@pytest.mark.parametrize('path', [':memory:', None])
def test_a_store_in_memory_leaves_no_file_and_shares_nothing(tmp_path, monkeypatch, path):
    monkeypatch.chdir(tmp_path)
    with EvidenceStore(path, batch_size=1) as first, EvidenceStore(path) as second:
        first.add(warn(T0))
        assert (first.path, first.observation_count(), second.observation_count()) == (None, 1, 0)
        assert first.set_aside_copies() == []
        assert first.applied_migrations() == second.applied_migrations() != []
    assert list(tmp_path.iterdir()) == []


def test_default_path_is_beside_the_memory_file(tmp_path):
    assert default_db_path(tmp_path / 'x' / 'robot-memory.md') == tmp_path / 'x' / 'robot-memory.db'


def test_database_is_private_wal_with_a_busy_timeout(tmp_path):
    path = tmp_path / 'robot-memory.db'
    path.touch(mode=0o644)
    with EvidenceStore(path, busy_timeout_s=3) as store:
        store.add(warn(T0))
        store.flush()
        assert store.db.execute('PRAGMA journal_mode').fetchone()[0] == 'wal'
        assert store.db.execute('PRAGMA busy_timeout').fetchone()[0] == 3000
        assert store.db.execute('PRAGMA cache_size').fetchone()[0] == -CACHE_KIB  # KiB
        for name in ('robot-memory.db', 'robot-memory.db-wal'):
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600


def test_migrations_are_named_and_applied_once(tmp_path):
    path = tmp_path / 'robot-memory.db'
    EvidenceStore(path).close()
    with EvidenceStore(path) as store:
        apply_migrations(MIGRATIONS, store.db)  # nothing left to apply
        assert store.applied_migrations() == ['0001_evidence_tables', '0002_append_only_triggers',
                                              '0003_undo_history', '0004_replay_progress',
                                              '0005_signature_history', '0006_observation_runs',
                                              '0007_ingest_progress', '0008_replay_content',
                                              '0009_blackbox', '0010_signals',
                                              '0011_replay_repeats']
        rows = list(store.db.query('SELECT name FROM migrations ORDER BY id'))
        assert [row['name'] for row in rows] == store.applied_migrations()


def _sqlite_utils_twin(steps: MigrationSet) -> Migrations:
    """Return sqlite-utils' own Migrations of the same steps, recorded in the same table."""
    twin = Migrations(steps.name)
    twin.migrations_table = steps.migrations_table
    for name, function, transactional in steps.steps:
        twin(name=name, transactional=transactional)(function)
    return twin


def _schema(conn) -> set:
    return set(conn.execute('SELECT type, name, tbl_name, sql FROM sqlite_master'))


def test_a_migration_set_reads_and_writes_what_sqlite_utils_records(tmp_path):
    steps = MigrationSet('test', 'test_migrations')

    @steps(name='one')
    def one(db):
        db.execute('CREATE TABLE a (x)')

    @steps()
    def two(db):
        db.execute('CREATE TABLE b (x)')

    conn = sqlite3.connect(tmp_path / 'm.db')
    assert steps.applied_names(conn) == [] and steps.pending_names(conn) == ['one', 'two']
    apply_migrations(steps, PlainDatabase(conn))
    recorded = _sqlite_utils_twin(steps).applied(Database(conn))
    assert steps.applied_names(conn) == [m.name for m in recorded] == ['one', 'two']
    assert steps.pending_names(conn) == []
    assert _sqlite_utils_twin(steps).pending(Database(conn)) == []
    assert {'a', 'b', 'test_migrations'} <= set(Database(conn).table_names())
    other = MigrationSet('other', 'test_migrations')  # another set, the same table
    other(name='one')(one)
    assert other.pending_names(conn) == ['one']
    with pytest.raises(ValueError, match="'one' is already registered"):
        steps(name='one')(two)
    conn.close()


@pytest.mark.parametrize('module', ['robot_memory.evidence.evidence_store',
                                    'robot_memory.evidence.proposal_queue',
                                    'robot_memory.substrate.record_tables'])
def test_each_store_gets_the_schema_sqlite_utils_would_give_it(tmp_path, module):
    """Applied without sqlite-utils, a store's migrations give the same tables, records too."""
    steps = importlib.import_module(module).MIGRATIONS
    ours, theirs = (sqlite3.connect(tmp_path / f'{name}.db') for name in ('ours', 'theirs'))
    apply_migrations(steps, PlainDatabase(ours))
    _sqlite_utils_twin(steps).apply(Database(theirs))
    assert _schema(ours) == _schema(theirs)
    table = steps.migrations_table
    assert [row[:3] for row in ours.execute(f'SELECT id, migration_set, name FROM {table}')] \
        == [row[:3] for row in theirs.execute(f'SELECT id, migration_set, name FROM {table}')]
    assert steps.pending_names(theirs) == []  # either reads the other's records
    assert _sqlite_utils_twin(steps).pending(Database(ours)) == []


def test_a_failed_step_leaves_nothing_and_no_record(tmp_path):
    steps = MigrationSet('test', 'test_migrations')

    @steps(name='one')
    def one(db):
        db.execute('CREATE TABLE kept (x)')

    @steps(name='two')
    def two(db):
        db.execute('CREATE TABLE rolled_back (x)')
        raise RuntimeError('migration failed')

    conn = sqlite3.connect(tmp_path / 'm.db')
    with pytest.raises(RuntimeError):
        apply_migrations(steps, PlainDatabase(conn))
    assert not conn.in_transaction
    assert steps.applied_names(conn) == []  # all or none: one's record went with two's failure
    assert 'kept' not in {row[0] for row in conn.execute('SELECT name FROM sqlite_master')}


def test_plain_execute_commits_a_write_made_outside_a_transaction(tmp_path):
    path = tmp_path / 'w.db'
    db = PlainDatabase(sqlite3.connect(path))
    db.execute('CREATE TABLE t (x)')
    db.execute('INSERT INTO t VALUES (1)')
    assert not db.conn.in_transaction
    assert sqlite3.connect(path).execute('SELECT x FROM t').fetchall() == [(1,)]
    db.execute('BEGIN')  # transaction control is left to the caller
    db.execute('INSERT INTO t VALUES (2)')
    assert db.conn.in_transaction
    db.conn.rollback()
    db.execute('CREATE TABLE u (x UNIQUE)')
    with pytest.raises(sqlite3.IntegrityError):
        db.execute('INSERT INTO u VALUES (1), (1)')  # fails half-way: rolled back, not left open
    assert not db.conn.in_transaction
    assert list(db.query('SELECT x FROM t')) == [{'x': 1}]
    with pytest.raises(ValueError, match='execute'):
        db.query('DELETE FROM t')


def test_plain_atomic_is_a_transaction_or_a_savepoint(tmp_path):
    db = PlainDatabase(sqlite3.connect(tmp_path / 'a.db'))
    db.execute('CREATE TABLE t (x)')
    with db.atomic():
        db.execute('INSERT INTO t VALUES (1)')
        with pytest.raises(RuntimeError):
            with db.atomic():  # a savepoint: only its own work is undone
                db.execute('INSERT INTO t VALUES (2)')
                raise RuntimeError('inner')
        assert db.conn.in_transaction
    assert not db.conn.in_transaction
    with pytest.raises(RuntimeError):
        with db.atomic():
            db.execute('INSERT INTO t VALUES (3)')
            raise RuntimeError('outer')
    assert [row['x'] for row in db.query('SELECT x FROM t')] == [1]
    db.close()


def test_atomic_immediate_takes_the_write_lock_and_rollback_previews(tmp_path):
    """``immediate`` holds the write lock from BEGIN; ``rollback`` undoes a successful block."""
    db = PlainDatabase(sqlite3.connect(tmp_path / 'a.db', isolation_level=None))
    db.execute('CREATE TABLE t (x)')
    other = sqlite3.connect(tmp_path / 'a.db', timeout=0, isolation_level=None)
    with db.atomic():  # deferred: no lock until the block writes
        other.execute('INSERT INTO t VALUES (0)')
    with db.atomic(immediate=True):
        with pytest.raises(sqlite3.OperationalError, match='locked'):
            other.execute('INSERT INTO t VALUES (9)')
    with db.atomic(immediate=True, rollback=True):
        db.execute('INSERT INTO t VALUES (1)')
        assert [row['x'] for row in db.query('SELECT x FROM t')] == [0, 1]
    assert not db.conn.in_transaction
    with db.atomic(immediate=True):
        db.execute('INSERT INTO t VALUES (2)')
        with db.atomic(immediate=True, rollback=True):  # a savepoint, rolled back
            db.execute('INSERT INTO t VALUES (3)')
        assert db.conn.in_transaction
    assert [row['x'] for row in db.query('SELECT x FROM t')] == [0, 2]
    other.close()
    db.close()


INSERT_ONE_ROW = ('INSERT INTO observations (stamp, source, signature, source_key, severity, '
                  'payload, end_stamp, count, ranges) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')


def test_add_buffers_and_flushes_every_batch(tmp_path):
    with EvidenceStore(tmp_path / 'e.db', batch_size=10) as store:
        for second in range(9):
            store.add(warn(T0 + dt.timedelta(seconds=second)))
        assert store.buffered == 9 and store.observation_count() == 0
        store.add(warn(T0 + dt.timedelta(seconds=9)))
        assert store.buffered == 0 and store.observation_count() == 10
        store.add(warn(T0))
        assert store.flush() == 1 and store.observation_count() == 11
    with EvidenceStore(tmp_path / 'e.db') as store:
        store.add(warn(T0))
    with EvidenceStore(tmp_path / 'e.db') as store:
        assert store.observation_count() == 12


@pytest.mark.parametrize('count', [1, 2, 127, 255, 256, 257, 1000, 1537])
def test_multi_row_inserts_write_what_executemany_writes(count):
    # Stamps with every bit of the double used, None signatures, text with quotes.
    rows = [(1_700_000_000.0 + index * 0.1234567890123 + 1e-7, 'diagnostic',
             None if index % 5 == 0 else f"sig '{index % 7}'", f'key{index % 3}', index % 3,
             '{"a": "\u00e9"}' * (index % 2), 1_700_000_000.5 + index, 1 + index % 4,
             '{"v":[1.5,2]}' * (index % 3 == 1)) for index in range(count)]
    tables, inserts = [], []
    for write in (insert_observations,
                  lambda conn, rows: conn.executemany(INSERT_ONE_ROW, rows)):
        conn = sqlite3.connect(':memory:')
        conn.execute('CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT, '
                     'stamp REAL NOT NULL, source TEXT NOT NULL, signature TEXT, '
                     'source_key TEXT NOT NULL, severity INTEGER NOT NULL, payload TEXT, '
                     'end_stamp REAL, count INTEGER, ranges TEXT)')
        statements = []
        conn.set_trace_callback(statements.append)
        write(conn, rows)
        conn.set_trace_callback(None)
        tables.append(conn.execute('SELECT * FROM observations ORDER BY id').fetchall())
        inserts.append(sum(statement.startswith('INSERT') for statement in statements))
        conn.close()
    assert tables[0] == tables[1] == [(index + 1, *row) for index, row in enumerate(rows)]
    assert [type(row[1]) for row in tables[0]] == [float] * count
    # Full statements of 256 rows, then at most one each of 128, 64, ..., 1.
    assert inserts == [count // ROWS_PER_INSERT + bin(count % ROWS_PER_INSERT).count('1'),
                       count]


def test_rows_keep_only_what_dreaming_needs(store):
    store.add(warn(T0))
    store.add(LogObservation(T0, 'nav2', 50, 'Crashed 3 times', 'a.cpp', 'f', 9))
    store.flush()
    rows = list(store.db.query('SELECT stamp, source, signature, source_key, severity, payload '
                               'FROM observations ORDER BY id'))
    assert rows[0]['stamp'] == T0.timestamp() and rows[0]['severity'] == 1
    assert rows[0]['signature'] == 'diagnostic|wheel_left|base: encoder|dropped # ticks'
    assert rows[1]['signature'] == 'log|nav2|Crashed # times' and rows[1]['severity'] == 2
    assert len(rows[1]['payload']) < 200


def test_ok_reports_are_thinned_per_source():
    with EvidenceStore(':memory:', ok_heartbeat_s=600) as store:
        seconds = [0, 1, 2, 599, 600, 601]
        stored = [store.add(ok(T0 + dt.timedelta(seconds=s))) for s in seconds]
        assert stored == [1, 0, 0, 0, 1, 0]
        assert store.add(warn(T0 + dt.timedelta(seconds=602))) == 1
        assert store.add(ok(T0 + dt.timedelta(seconds=603))) == 1
        assert store.add(ok(T0 + dt.timedelta(seconds=604), hardware_id='other')) == 1


def test_observations_and_audit_are_append_only(store):
    store.add(warn(T0))
    store.flush()
    store.record_audit([AuditRecord(T0, 'mem-1', 'manual', 'manual', 'edited')])
    for sql in ('UPDATE observations SET severity = 0', 'UPDATE audit SET reason = "x"',
                'DELETE FROM audit'):
        with pytest.raises(sqlite3.IntegrityError, match='append-only'):
            store.db.execute(sql)
    assert store.audit_count() == 1


def test_history_is_oldest_first_and_actions_are_checked(store):
    store.record_audit([
        AuditRecord(T0, 'mem-1', 'create', 'autodream', 'new', {'n': 3}),
        AuditRecord(T0 + dt.timedelta(days=1), 'mem-2', 'create', 'autodream', 'other'),
        AuditRecord(T0 + dt.timedelta(days=2), 'mem-1', 'peer_merge', 'peer:RRN-5', 'merged'),
    ])
    history = store.history('mem-1')
    assert [(record.action, record.detail) for record in history] == \
        [('create', {'n': 3}), ('peer_merge', {})]
    assert history[0].to_dict()['at'] == '2026-05-01T00:00:00Z'
    with pytest.raises(ValueError, match='not one of create, reinforce'):
        store.record_audit([AuditRecord(T0, 'mem-1', 'rewrite', 'x', 'y')])
    assert store.history('mem-unknown') == []


def test_two_connections_share_the_database(tmp_path):
    path = tmp_path / 'e.db'
    with EvidenceStore(path) as first, EvidenceStore(path) as second:
        for index in range(300):
            (first if index % 2 else second).add(warn(T0 + dt.timedelta(seconds=index)))
        first.flush()
        second.flush()
        assert first.observation_count() == 300


def test_evidence_groups_per_signature_with_latest_payload(store):
    for minute, message in enumerate(['dropped 1 ticks', 'dropped 2 ticks', 'checksum bad']):
        store.add(warn(T0 + dt.timedelta(minutes=minute), message))
    store.add(warn(T0 + dt.timedelta(minutes=5), 'dropped 9 ticks', level=2))
    store.add(ok(T0 + dt.timedelta(minutes=9)))
    store.flush()
    groups, last_bad = store.evidence_groups(0, store.max_observation_id())
    dropped = groups['diagnostic|wheel_left|base: encoder|dropped # ticks']
    assert (dropped.count, dropped.errors) == (3, 1)
    assert dropped.last - dropped.first == 300 and 'dropped 9 ticks' in dropped.payload
    assert last_bad == {'diagnostic|wheel_left|base: encoder': dropped.last}
    oks = store.ok_reports(0, store.max_observation_id(), last_bad)
    first_after, last_ok, count = oks['diagnostic|wheel_left|base: encoder']
    assert first_after == last_ok == (T0 + dt.timedelta(minutes=9)).timestamp() and count == 1
    assert store.evidence_groups(store.max_observation_id(), store.max_observation_id()) == \
        ({}, {})


def _mark_consumed(store, last_id):
    store.db.execute('UPDATE dream_state SET last_id = ? WHERE id = 1', (last_id,))


def test_compaction_keeps_daily_counts_of_consumed_old_rows():
    with EvidenceStore(':memory:', retention_days=14) as store:
        for day in range(20):
            for hour in (1, 2, 3):
                store.add(warn(T0 + dt.timedelta(days=day, hours=hour)))
            store.add(ok(T0 + dt.timedelta(days=day, hours=12)))
        store.flush()
        consumed = store.max_observation_id() - 8
        _mark_consumed(store, consumed)
        now = T0 + dt.timedelta(days=20)
        report = store.compact(now)
        assert report.rows == 6 * 4 and report.days == 6
        assert store.observation_count() == 80 - 24
        counts = store.daily_counts('diagnostic|wheel_left|base: encoder|dropped # ticks')
        assert [(row['day'], row['count']) for row in counts] == \
            [(f'2026-05-0{day}', 3) for day in range(1, 7)]
        oks = [row for row in store.daily_counts() if row['severity'] == 0]
        assert len(oks) == 6 and all(row['count'] == 1 for row in oks)
        assert store.compact(now).rows == 0
        assert sum(row['count'] for row in store.daily_counts()) == 24


def test_compaction_never_touches_unconsumed_rows():
    with EvidenceStore(':memory:', retention_days=1) as store:
        store.add(warn(T0))
        store.flush()
        assert store.compact(T0 + dt.timedelta(days=30)).rows == 0
        assert store.observation_count() == 1


def test_ids_never_go_back_after_everything_is_compacted():
    with EvidenceStore(':memory:', retention_days=1) as store:
        store.add(warn(T0))
        store.flush()
        _mark_consumed(store, store.max_observation_id())
        store.compact(T0 + dt.timedelta(days=5))
        assert store.observation_count() == 0
        store.add(warn(T0 + dt.timedelta(days=5)))
        store.flush()
        new_id = store.db.execute('SELECT max(id) FROM observations').fetchone()[0]
        assert new_id == 2


def test_unusable_database_is_reported_with_advice(tmp_path):
    path = tmp_path / 'robot-memory.db'
    path.write_bytes(b'this is not sqlite' * 100)
    with pytest.raises(ValueError, match='not a usable evidence database.*move it aside'):
        EvidenceStore(path)


def test_naive_stamps_are_refused(store):
    with pytest.raises(ValueError, match='aware UTC datetimes'):
        store.add(warn(dt.datetime(2026, 5, 1)))
    assert store.buffered == 0


def test_strings_sqlite_cannot_store_never_block_a_flush(store):
    store.add(warn(T0, message='bad \udc80 byte', hardware_id='w\ud800'))
    assert store.flush() == 1


@pytest.mark.parametrize('settings', [{'batch_size': 0}, {'retention_days': 0}])
def test_bad_settings_are_refused(settings):
    with pytest.raises(ValueError):
        EvidenceStore(':memory:', **settings)


def refuse_writes(store, message='disk I/O error'):
    """Make every INSERT into observations on this store's connection fail like a bad disk."""
    store.db.execute('CREATE TEMP TRIGGER refuse_writes BEFORE INSERT ON main.observations '
                     f"BEGIN SELECT RAISE(ABORT, '{message}'); END")


def allow_writes(store):
    store.db.execute('DROP TRIGGER temp.refuse_writes')


def test_a_failed_automatic_flush_keeps_the_observation_and_does_not_raise(tmp_path):
    # add() buffers; when its automatic flush fails, the observation is accepted (kept in
    # the buffer, counted in the return value) and nothing is raised, so a caller that
    # retries on an exception can never store it twice. flush() says what went wrong.
    with EvidenceStore(tmp_path / 'e.db', batch_size=10) as store:
        refuse_writes(store)
        added = sum(store.add(warn(T0 + dt.timedelta(seconds=second)))
                    for second in range(25))
        assert added == 25 and store.buffered == 25
        assert store.observation_count() == 0
        assert 'cannot write observations' in str(store.write_error)
        with pytest.raises(ValueError, match='stay buffered'):
            store.flush()
        assert store.buffered == 25

        allow_writes(store)
        store.add(warn(T0 + dt.timedelta(seconds=25)))
        assert store.flush() == 26
        assert store.observation_count() == 26 and store.buffered == 0
        assert store.write_error is None


def test_a_failing_disk_is_not_retried_on_every_add(tmp_path, monkeypatch):
    with EvidenceStore(tmp_path / 'e.db', batch_size=10) as store:
        refuse_writes(store)
        attempts = []
        flush = store.flush
        monkeypatch.setattr(store, 'flush', lambda: attempts.append(store.buffered) or flush())
        for second in range(35):
            store.add(warn(T0 + dt.timedelta(seconds=second)))
        allow_writes(store)
        # One attempt when the buffer fills, then one per further batch (not one per add).
        assert attempts == [10, 20, 30] and store.buffered == 35


def _count_elsewhere(path) -> int:
    """Evidence stored as another process sees it (it opens, reads and closes)."""
    done = subprocess.run(
        [sys.executable, '-c', 'import sqlite3, sys; connection = sqlite3.connect(sys.argv[1]); '
         'print(connection.execute("SELECT sum(count) FROM observations").fetchone()[0]); '
         'connection.close()', str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@pytest.mark.parametrize('on_corrupt', ['raise', 'set_aside'])
def test_opening_a_second_store_keeps_the_first_ones_locks(tmp_path, on_corrupt):
    # A plain open()/close() of the database file in a process drops every POSIX lock the
    # process holds on it, SQLite's included. A store that loses its shared lock can have
    # its WAL deleted under it by another process's last close, and every commit after
    # that goes to a deleted file. So opening a store must not open and close the file of
    # a database this process already uses (the node opens the store twice).
    path = tmp_path / 'robot-memory.db'
    with EvidenceStore(path) as first:
        first.add(warn(T0))
        first.flush()
        EvidenceStore(path, on_corrupt=on_corrupt).close()
        assert _count_elsewhere(path) == 1
        for second in range(1, 6):
            first.add(warn(T0 + dt.timedelta(seconds=second)))
        first.flush()
        assert (tmp_path / 'robot-memory.db-wal').exists()
        assert _count_elsewhere(path) == 6


def test_compaction_beside_another_writer_never_fails_as_locked(tmp_path):
    # compact() reads, then writes. In a deferred transaction another connection's commit
    # between the two makes SQLite refuse the write at once ("database is locked", no
    # busy wait), which failed `robot-memory dream` beside a running node. Write
    # transactions take the write lock first, so the other writer waits instead.
    path = tmp_path / 'e.db'
    with EvidenceStore(path, retention_days=1, busy_timeout_s=5) as store, \
            EvidenceStore(path, busy_timeout_s=0.2) as other:
        for day in range(3):
            store.add(warn(T0 + dt.timedelta(days=day)))
        store.flush()
        _mark_consumed(store, store.max_observation_id())
        interleaved = []

        def commit_elsewhere(sql):
            if sql.startswith('INSERT INTO daily_counts') and not interleaved:
                interleaved.append(sql)
                other.add(warn(T0 + dt.timedelta(days=9)))
                try:
                    other.flush()
                except ValueError:
                    pass  # waited for the compaction's write lock: that is the point

        store.db.conn.set_trace_callback(commit_elsewhere)
        report = store.compact(T0 + dt.timedelta(days=5))
        store.db.conn.set_trace_callback(None)
        assert interleaved and report.rows == 3
