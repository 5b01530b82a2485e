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
- a migration run that reads which steps are pending before it takes the write lock (as
  sqlite-utils' ``Migrations.apply`` does) lets both apply the same step, and the second
  fails on the unique record of it.

``open_database`` retries the first until the busy timeout, and ``apply_migrations`` takes
the write lock first (``BEGIN IMMEDIATE``), reads what is pending under it and applies all
of it in that one transaction, so the second process finds nothing left to do.

A store's migrations are a ``MigrationSet``: steps registered when the module is imported
and applied with plain ``sqlite3``, recorded in the table and format of sqlite-utils'
``Migrations`` (so databases written by earlier releases, which applied them through
sqlite-utils, stay as they are). A store's connection is a ``PlainDatabase``: ``execute``,
``query`` and ``atomic`` as sqlite-utils' ``Database`` offers them, without importing it,
which costs a command some 70 ms and a node some 7 MB of resident memory.

Also what they share about the file: it is created private (``create_private_file``), an
error is told apart as damage (``is_damage``) or a full disk (``is_disk_full``), a damaged
file is found without writing to it (``damage_found``) and set aside with its write-ahead
log as ``<db>.corrupt-<time>`` (``set_aside``), never deleted.
"""

import contextlib
import datetime as dt
import errno
import os
import pathlib
import re
import secrets
import shutil
import sqlite3
import time
from typing import Optional

from robot_memory.common.fileio import FILE_MODE
from robot_memory.common.fileio import fsync_directory
from robot_memory.common.fileio import kept_name
from robot_memory.common.fileio import side_file
from robot_memory.errors import RobotMemoryError

# Primary SQLite result codes: a damaged file, and a full disk.
_SQLITE_CORRUPT_CODES = (11, 26)
_SQLITE_FULL = 13
_SQLITE_IO_CODES = (10, 14)
_LOW_SPACE_BYTES = 1 << 20
CORRUPT = 'corrupt'   # the label of a damaged database set aside: <db>.corrupt-<time>


class MigrationSet:
    """
    A named, ordered set of schema migrations, recorded as sqlite-utils records them.

    Used as sqlite-utils' ``Migrations`` is: ``@steps(name='0001_tables')`` registers a
    function taking the store's ``PlainDatabase`` (a step only calls ``db.execute``); the
    steps applied are recorded in ``migrations_table`` in sqlite-utils' own format (columns
    ``migration_set``, ``name``, ``applied_at``, the table created with the statements
    sqlite-utils uses), so databases written before stay as they are.
    """

    def __init__(self, name: str, migrations_table: str = '_sqlite_migrations'):
        self.name = name
        self.migrations_table = migrations_table
        self._steps: list = []

    def __call__(self, *, name: Optional[str] = None, transactional: bool = True):
        """Return a decorator registering a migration step (the function's name by default)."""
        def register(function):
            step = name or function.__name__
            if any(known == step for known, _, _ in self._steps):
                raise ValueError(f'migration {step!r} is already registered in {self.name!r}')
            self._steps.append((step, function, transactional))
            return function
        return register

    def applied_names(self, conn: sqlite3.Connection) -> list:
        """Names of the steps applied to the database of ``conn``, in the order applied."""
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (self.migrations_table,)).fetchone() is None:
            return []
        return [name for name, in conn.execute(
            f'SELECT name FROM "{self.migrations_table}" WHERE migration_set = ? '
            'ORDER BY rowid', (self.name,))]

    def pending_names(self, conn: sqlite3.Connection) -> list:
        """Names of the steps not yet applied to the database of ``conn``, in order."""
        applied = set(self.applied_names(conn))
        return [step for step, _, _ in self._steps if step not in applied]

    @property
    def steps(self) -> tuple:
        """Return the registered steps in order, each (name, function, transactional)."""
        return tuple(self._steps)

    def apply_pending(self, db: 'PlainDatabase') -> None:
        """
        Apply the steps not yet recorded, each in a savepoint with the record of it.

        The caller holds the write transaction (``apply_migrations``). A step that raises
        leaves nothing of itself and no record; the error goes to the caller.
        """
        conn = db.conn
        table = _quoted(self.migrations_table)
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (self.migrations_table,)).fetchone() is None:
            conn.execute(f'CREATE TABLE {table} (\n   "id" INTEGER PRIMARY KEY,\n'
                         '   "migration_set" TEXT,\n   "name" TEXT,\n   "applied_at" TEXT\n)')
            index = _quoted(f'idx_{self.migrations_table}_migration_set_name')
            conn.execute(f'CREATE UNIQUE INDEX {index}\n    ON {table} ("migration_set", '
                         '"name")')
        pending = set(self.pending_names(conn))
        for step, function, _ in self._steps:
            if step not in pending:
                continue
            with db.atomic():
                function(db)
                conn.execute(f'INSERT INTO {table} ("migration_set", "name", "applied_at") '
                             'VALUES (?, ?, ?)',
                             (self.name, step, str(dt.datetime.now(dt.timezone.utc))))


def _quoted(name: str) -> str:
    """Return an SQL identifier in double quotes."""
    return '"' + name.replace('"', '""') + '"'


_TRANSACTION_CONTROL = frozenset(('BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE'))
_FIRST_KEYWORD = re.compile(r'(?:\s|;|--[^\n]*|/\*.*?\*/)*([A-Za-z]+)', re.S)


class PlainDatabase:
    """
    A store's sqlite3 connection, with what the stores used of sqlite-utils' ``Database``.

    As there: ``execute`` commits a write made outside a transaction at once (Python's
    sqlite3 would leave it in an implicit transaction that nothing commits) and rolls back
    one that fails; ``query`` gives rows as dicts; ``atomic`` is a transaction, or a
    savepoint when one is open.
    """

    __slots__ = ('conn',)

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, parameters=()) -> sqlite3.Cursor:
        """Run ``sql`` on the connection; a write outside a transaction is committed."""
        conn = self.conn
        was_in_transaction = conn.in_transaction
        try:
            cursor = conn.execute(sql, parameters)
        except Exception:
            if not was_in_transaction and conn.in_transaction:
                conn.execute('ROLLBACK')
            raise
        if not was_in_transaction and conn.in_transaction and cursor.description is None:
            keyword = _FIRST_KEYWORD.match(sql)
            if keyword is None or keyword.group(1).upper() not in _TRANSACTION_CONTROL:
                conn.execute('COMMIT')
        return cursor

    def query(self, sql: str, parameters=()):
        """Return the rows of a SELECT as dicts (column name to value), fetched lazily."""
        cursor = self.conn.execute(sql, parameters)
        if cursor.description is None:
            raise ValueError('query() is for statements that return rows; use execute()')
        keys = [column[0] for column in cursor.description]
        return (dict(zip(keys, row)) for row in cursor)

    @contextlib.contextmanager
    def atomic(self, immediate: bool = False, rollback: bool = False):
        """
        Run the block in a transaction, or a savepoint inside an open one.

        ``immediate`` begins with ``BEGIN IMMEDIATE``, taking SQLite's write lock at once: a
        deferred transaction that reads first and writes later fails at once with "database
        is locked" (no busy wait) when another connection committed in between. An error
        rolls the block back (as far as SQLite left anything to roll back: a
        ``RAISE(ROLLBACK)`` ends the whole transaction) and propagates; so does a failed
        COMMIT. ``rollback`` rolls the block back even when it succeeds (a preview).
        """
        conn = self.conn
        if conn.in_transaction:
            savepoint = f'robot_memory_{secrets.token_hex(8)}'
            conn.execute(f'SAVEPOINT {savepoint}')
            try:
                yield self
            except BaseException:
                _roll_back_to(conn, savepoint)
                raise
            if rollback:
                _roll_back_to(conn, savepoint)
            else:
                conn.execute(f'RELEASE SAVEPOINT {savepoint}')
            return
        conn.execute('BEGIN IMMEDIATE' if immediate else 'BEGIN')
        try:
            yield self
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise
        if rollback:
            if conn.in_transaction:
                conn.rollback()
            return
        try:
            conn.execute('COMMIT')
        except BaseException:
            if conn.in_transaction:
                conn.rollback()
            raise

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _roll_back_to(conn, savepoint: str) -> None:
    if conn.in_transaction:
        conn.execute(f'ROLLBACK TO SAVEPOINT {savepoint}')
        conn.execute(f'RELEASE SAVEPOINT {savepoint}')


def open_database(target: str, busy_timeout_s: float,
                  migrations: MigrationSet) -> PlainDatabase:
    """
    Return a connection to ``target`` in WAL mode with ``migrations`` applied.

    The connection comes wrapped in a ``PlainDatabase``. ``target`` may be ``':memory:'``.
    Raises ``sqlite3.DatabaseError`` (the connection closed) for the caller to word: a
    locked database is not a damaged one.
    """
    conn = sqlite3.connect(target, timeout=busy_timeout_s, check_same_thread=False)
    try:
        conn.execute(f'PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}')
        if target != ':memory:':
            _enable_wal(conn, busy_timeout_s)
        conn.execute('PRAGMA synchronous = NORMAL')
        db = PlainDatabase(conn)
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


def refuse_changes(db: PlainDatabase, table: str, events, message: str) -> None:
    """Make ``table`` refuse each of ``events`` ('UPDATE', 'DELETE') with ``message``."""
    for event in events:
        db.execute(f'CREATE TRIGGER IF NOT EXISTS {table}_no_{event.lower()} BEFORE {event} '
                   f"ON {table} BEGIN SELECT RAISE(ABORT, '{message}'); END")


def apply_migrations(migrations: MigrationSet, db: PlainDatabase) -> None:
    """Apply ``migrations``' pending steps to ``db`` under the write lock, all or none."""
    conn = db.conn
    if not migrations.pending_names(conn):
        return   # the usual case; a read-only database never needs the write lock
    with db.atomic(immediate=True):
        migrations.apply_pending(db)


class ForeignDatabase(RobotMemoryError, ValueError):
    """The database file holds another application's tables, none of robot_memory's."""


def _refuse_foreign(path: pathlib.Path) -> None:
    """
    Refuse a database that holds tables but none of robot_memory's (``--db other-app.db``).

    Its tables were added to and its mode changed to 0600. Read through SQLite, read-only,
    as ``damage_found`` reads (never opened directly). A file SQLite cannot read is left to
    the caller's check of damage.
    """
    if os.stat(path).st_size == 0:
        return
    try:
        conn = sqlite3.connect(f'{pathlib.Path(path).resolve().as_uri()}?mode=ro', uri=True)
        try:
            names = [name for name, in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
        finally:
            conn.close()
    except sqlite3.Error:
        return
    ours = any(name == 'migrations' or name.endswith('_migrations') for name in names)
    if names and not ours:
        shown = ', '.join(sorted(names)[:5]) + (', ...' if len(names) > 5 else '')
        raise ForeignDatabase(f"{path} holds another application's tables ({shown}), none of "
                              "robot_memory's; it was left as it is: give a database of its "
                              'own (a new file, or robot-memory.db beside the memory file)')


def create_private_file(path: pathlib.Path) -> None:
    """
    Create ``path`` empty with mode 0600 if it is missing; make it (and its WAL files) 0600.

    An existing database is never opened here: closing any descriptor of a file drops
    every POSIX lock this process holds on it, including the shared lock of a SQLite
    connection already open on it (another store, the typed memory). Without that lock
    another process's last close deletes the WAL under the connection, and everything it
    commits afterwards is lost.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        _refuse_foreign(path)
    else:
        os.close(fd)
    os.chmod(path, FILE_MODE)
    # SQLite makes its -wal and -shm with the database's mode: made while it was read-only
    # (0400: its damage check reads it), a read-only -shm kept every later writer out with
    # "attempt to write a readonly database" though the database itself was 0600 again.
    for suffix in ('-wal', '-shm'):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(side_file(path, suffix), FILE_MODE)


def _primary_code(error: BaseException) -> Optional[int]:
    code = getattr(error, 'sqlite_errorcode', None)
    return code & 0xff if isinstance(code, int) else None


def is_damage(error: BaseException) -> bool:
    """Whether a sqlite3 error means the database file is damaged (not locked, not full)."""
    if _primary_code(error) in _SQLITE_CORRUPT_CODES:
        return True
    text = str(error).lower()
    return 'malformed' in text or 'not a database' in text


def is_disk_full(error: BaseException, path: Optional[pathlib.Path] = None) -> bool:
    """
    Whether an OSError or sqlite3 error was caused by a full disk.

    SQLite reports ENOSPC as SQLITE_FULL, but failing to create its ``-wal`` / ``-shm``
    files on a full disk surfaces as an I/O or cannot-open error; then the free space of
    the directory decides.
    """
    if isinstance(error, OSError):
        return error.errno in (errno.ENOSPC, errno.EDQUOT)
    code = _primary_code(error)
    if code == _SQLITE_FULL or 'disk is full' in str(error).lower():
        return True
    if code in _SQLITE_IO_CODES and path is not None:
        with contextlib.suppress(OSError):
            return shutil.disk_usage(path.parent).free < _LOW_SPACE_BYTES
    return False


def damage_found(path: pathlib.Path, busy_timeout_s: float) -> Optional[str]:
    """
    Return what is wrong with the database at ``path`` if it is damaged, else None.

    Reads only, and only through SQLite: ``PRAGMA quick_check`` on a read-only
    connection, which (unlike a writer's last close) never checkpoints or deletes the
    WAL, so a damaged database can be set aside exactly as it was found. (SQLite reports a
    short file or one without its header as "file is not a database".) The file is
    never opened directly: see :func:`create_private_file`. A missing or empty file is
    not damaged; an OSError reading its size is raised.
    """
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    uri = f'{path.resolve().as_uri()}?mode=ro'
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s)
    except sqlite3.Error:
        return None  # Not a verdict on the content: opening it reports what is wrong.
    try:
        verdict = conn.execute('PRAGMA quick_check(1)').fetchone()[0]
    except sqlite3.DatabaseError as error:
        return str(error) if is_damage(error) else None
    finally:
        conn.close()
    return None if verdict == 'ok' else f'quick_check found: {verdict}'


def set_aside(path: pathlib.Path, now: dt.datetime) -> pathlib.Path:
    """
    Rename a damaged database and its WAL to ``<db>.corrupt-<time>[-wal]``; return the new name.

    The ``-shm`` index is removed (SQLite rebuilds it from the WAL). Raises OSError.
    """
    target = kept_name(path, CORRUPT, now)
    os.rename(path, target)
    for suffix in ('-wal', '-shm'):
        companion = side_file(path, suffix)
        if not companion.exists():
            continue
        if suffix == '-wal':
            os.rename(companion, side_file(target, suffix))
        else:
            companion.unlink()
    fsync_directory(path.parent)
    return target


def set_aside_copies(path: pathlib.Path) -> list:
    """Return the damaged databases set aside beside ``path`` (``<db>.corrupt-*``), oldest first."""
    return sorted(copy for copy in path.parent.glob(f'{path.name}.{CORRUPT}-*')
                  if not copy.name.endswith('-wal'))
