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

A store's migrations are a ``MigrationSet``: sqlite-utils migrations, registered when the
module is imported without importing sqlite-utils, which costs a command some 70 ms and a
node some 5 MB. What is pending is read with plain ``sqlite3``; sqlite-utils is imported to
apply a pending step, and for a store that asks for its ``Database`` (the evidence store's
queries). Opening an up-to-date typed memory for a ``recall`` never imports it.

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
import shutil
import sqlite3
import time
from typing import Optional

from robot_memory import lazy_imports
from robot_memory.fileio import FILE_MODE
from robot_memory.fileio import fsync_directory
from robot_memory.fileio import kept_name
from robot_memory.fileio import side_file

# Primary SQLite result codes: a damaged file, and a full disk.
_SQLITE_CORRUPT_CODES = (11, 26)
_SQLITE_FULL = 13
_SQLITE_IO_CODES = (10, 14)
_LOW_SPACE_BYTES = 1 << 20
CORRUPT = 'corrupt'   # the label of a damaged database set aside: <db>.corrupt-<time>


class MigrationSet:
    """
    A named, ordered set of sqlite-utils migrations that imports sqlite-utils only to apply one.

    Used as sqlite-utils' ``Migrations`` is: ``@steps(name='0001_tables')`` registers a
    function taking a sqlite-utils ``Database``; the steps applied are recorded in
    ``migrations_table`` in sqlite-utils' own format (columns ``migration_set``, ``name``,
    ``applied_at``), so databases written before stay as they are.
    """

    def __init__(self, name: str, migrations_table: str = '_sqlite_migrations'):
        self.name = name
        self.migrations_table = migrations_table
        self._steps = []
        self._built = None

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

    def sqlite_utils_migrations(self):
        """Return the same steps as sqlite-utils ``Migrations`` (imports sqlite-utils)."""
        if self._built is None:
            base = lazy_imports.sqlite_utils().Migrations
            kind = type('StoreMigrations', (base,), {'migrations_table': self.migrations_table})
            built = kind(self.name)
            for step, function, transactional in self._steps:
                built(name=step, transactional=transactional)(function)
            self._built = built
        return self._built


class PlainDatabase:
    """A store's sqlite3 connection where sqlite-utils' ``Database`` is not needed."""

    __slots__ = ('conn',)

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, parameters=()) -> sqlite3.Cursor:
        """Run ``sql`` on the connection, as sqlite-utils' ``Database.execute`` does."""
        return self.conn.execute(sql, parameters)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def sqlite_utils_database(conn: sqlite3.Connection):
    """Return sqlite-utils' ``Database`` over ``conn`` (imports sqlite-utils)."""
    return lazy_imports.sqlite_utils().Database(conn, execute_plugins=False)


def open_database(target: str, busy_timeout_s: float, migrations: MigrationSet,
                  plain: bool = False):
    """
    Return a connection to ``target`` in WAL mode with ``migrations`` applied.

    The connection is wrapped in sqlite-utils' ``Database``, or in a ``PlainDatabase``
    (``.conn`` and ``.close()`` only) when ``plain``. ``target`` may be ``':memory:'``.
    Raises ``sqlite3.DatabaseError`` (the connection closed) for the caller to word: a
    locked database is not a damaged one.
    """
    conn = sqlite3.connect(target, timeout=busy_timeout_s, check_same_thread=False)
    try:
        conn.execute(f'PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}')
        if target != ':memory:':
            _enable_wal(conn, busy_timeout_s)
        conn.execute('PRAGMA synchronous = NORMAL')
        db = PlainDatabase(conn) if plain else sqlite_utils_database(conn)
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


def apply_migrations(migrations: MigrationSet, db) -> None:
    """Apply ``migrations``' pending steps to ``db`` under the write lock, all or none."""
    conn = db.conn
    if not migrations.pending_names(conn):
        return   # the usual case; a read-only database never needs the write lock
    database = db if not isinstance(db, PlainDatabase) else sqlite_utils_database(conn)
    conn.execute('BEGIN IMMEDIATE')
    try:
        migrations.sqlite_utils_migrations().apply(database)  # each step: a savepoint
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    conn.commit()


def create_private_file(path: pathlib.Path) -> None:
    """
    Create ``path`` empty with mode 0600 if it is missing; make it 0600 either way.

    An existing database is never opened here: closing any descriptor of a file drops
    every POSIX lock this process holds on it, including the shared lock of a SQLite
    connection already open on it (another store, the typed memory). Without that lock
    another process's last close deletes the WAL under the connection, and everything it
    commits afterwards is lost.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    os.chmod(path, FILE_MODE)


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
