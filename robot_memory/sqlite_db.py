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

"""
What both SQLite stores (evidence and typed memory) share about opening their database.

Two processes may open a new database at the same moment (a node and the command line, or
two nodes started together by one launch file). Two things go wrong then unless handled:

- switching a new file to write-ahead logging needs a moment alone with it, and SQLite
  reports "database is locked" at once instead of waiting out the busy timeout; and
- sqlite-utils' ``Migrations.apply`` reads which migrations are pending before it takes the
  write lock, so both would apply the same migration and the second would fail on the
  unique record of it.

``open_database`` retries the first until the busy timeout, and ``apply_migrations`` takes
the write lock first (``BEGIN IMMEDIATE``), reads what is pending under it and applies all
of it in that one transaction, so the second process finds nothing left to do.
"""

import sqlite3
import time

from robot_memory import lazy_imports

_sqlite_utils = lazy_imports.sqlite_utils()
Database = _sqlite_utils.Database
Migrations = _sqlite_utils.Migrations


def open_database(target: str, busy_timeout_s: float, migrations) -> 'Database':
    """
    Return a connection to ``target`` in WAL mode with ``migrations`` applied.

    ``target`` may be ``':memory:'``. Raises ``sqlite3.DatabaseError`` (the connection
    closed) for the caller to word: a locked database is not a damaged one.
    """
    conn = sqlite3.connect(target, timeout=busy_timeout_s, check_same_thread=False)
    try:
        db = Database(conn, execute_plugins=False)
        conn.execute(f'PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}')
        if target != ':memory:':
            _enable_wal(conn, busy_timeout_s)
        conn.execute('PRAGMA synchronous = NORMAL')
        apply_migrations(migrations, db)
    except BaseException:
        conn.close()
        raise
    return db


def _enable_wal(conn: sqlite3.Connection, busy_timeout_s: float) -> None:
    deadline = time.monotonic() + busy_timeout_s
    while True:
        try:
            if conn.execute('PRAGMA journal_mode').fetchone()[0].lower() != 'wal':
                conn.execute('PRAGMA journal_mode = WAL')
            return
        except sqlite3.OperationalError as error:
            if 'locked' not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def apply_migrations(migrations, db: 'Database') -> None:
    """Apply ``migrations``' pending steps to ``db`` under the write lock, all or none."""
    if not migrations.pending(db):
        return   # the usual case; a read-only database never needs the write lock
    conn = db.conn
    conn.execute('BEGIN IMMEDIATE')
    try:
        migrations.apply(db)   # each step's own transaction becomes a savepoint
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    conn.commit()
