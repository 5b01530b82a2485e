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
The fleet store's one SQL layer and its two dialects: SQLite (embedded) and PostgreSQL.

Every statement of the store is written once, with ``?`` placeholders and SQL both
databases speak (``INSERT ... ON CONFLICT ... DO UPDATE``, ``BIGINT``, ``DOUBLE PRECISION``,
``TEXT``); the differences live here and nowhere else: how to connect, the placeholder
(psycopg's ``%s``), how a write transaction begins, and the one-writer lock migrations take.

``connect(url)``: ``postgresql://…`` (or ``postgres://…``) is a PostgreSQL server through
psycopg 3, imported only then; ``sqlite:///path``, ``sqlite:path`` or a plain path is a SQLite
file. Times are stored as Unix seconds (``DOUBLE PRECISION``) so both compare them alike.
"""

import collections
import contextlib
import dataclasses
import functools
import hashlib
import pathlib
import sqlite3
import threading
import time
from typing import Any
from typing import Callable
from typing import Iterator
from typing import Optional

from robot_memory.common.sqlite_db import create_private_file
from robot_memory.errors import MissingExtra
from robot_memory.fleet.refusals import FleetError

BUSY_TIMEOUT_S = 10.0
STREAM_ROWS = 2000  # rows a chunk of FleetDatabase.grouped on PostgreSQL
POSTGRES_SCHEMES = ('postgresql://', 'postgres://')
MIGRATIONS_TABLE = 'fleet_migrations'


@dataclasses.dataclass(frozen=True)
class Dialect:
    """What differs between the two databases."""

    name: str
    placeholder: str
    begin: str
    # taken first in the migrations' transaction, so two stores starting at once apply them once
    migration_lock: str

    def statement(self, sql: str) -> str:
        """Return ``sql`` with this dialect's placeholders (statements never hold a literal ?)."""
        return sql if self.placeholder == '?' else sql.replace('?', self.placeholder)


SQLITE = Dialect('sqlite', '?', 'BEGIN IMMEDIATE', '')
POSTGRES = Dialect('postgresql', '%s', 'BEGIN',
                   'SELECT pg_advisory_xact_lock(7263601)')  # any fixed number: the store's


class FleetDatabase:
    """
    One connection of either dialect: ``execute``, ``rows``, ``transaction``; thread-safe.

    A server connection that was lost (PostgreSQL restarted, the network dropped) is opened
    again by ``reopen``: before a statement when the connection is known broken, and once
    more when the first statement of a transaction or a read outside one finds it lost, as
    nothing was written then. A write lost inside a transaction raises: it is rolled back by
    the server, and the robot's delivery, unacknowledged, comes again.
    """

    def __init__(self, conn: Any, dialect: Dialect, where: str,
                 reopen: Optional[Callable[[], Any]] = None, lost: tuple = ()):
        self.conn = conn
        self.dialect = dialect
        self.where = where
        self.reopen = reopen
        self.lost = lost  # the driver's errors of a lost connection
        self.reconnects = 0
        self._lock = threading.RLock()
        self._depth = 0
        self._staging: dict = {}  # temporary table -> the connection it was made on
        self._staged: set = set()  # the temporary tables this transaction wrote

    def _broken(self) -> bool:
        return bool(getattr(self.conn, 'broken', False) or getattr(self.conn, 'closed', False))

    def _reconnect(self) -> None:
        if self.reopen is None:
            raise FleetError(f'the connection to the fleet store {self.where} was lost')
        with contextlib.suppress(Exception):  # noqa: B902 - the old connection is gone anyway
            self.conn.close()
        self.conn = self.reopen()
        self.reconnects += 1

    def _attempt(self, action: Callable[[], Any], retry: bool) -> Any:
        """Return ``action()``, on a connection opened again when lost (``retry``: once more)."""
        if self.reopen is not None and self._broken():
            self._reconnect()
        try:
            return action()
        except self.lost:
            if not (retry and self.reopen is not None and self._broken()):
                raise
        self._reconnect()
        return action()

    def _run(self, sql: str, parameters, retry: bool) -> Any:
        statement, values = self.dialect.statement(sql), tuple(parameters)

        def run() -> Any:
            cursor = self.conn.cursor()
            cursor.execute(statement, values)
            return cursor
        return self._attempt(run, retry)

    def execute(self, sql: str, parameters=()) -> Any:
        """Run one statement (inside the current transaction, if any); return its cursor."""
        with self._lock:
            return self._run(sql, parameters, retry=False)

    def insert_many(self, head: str, row: str, rows, tail: str = '', types: tuple = ()) -> None:
        """
        Run ``head VALUES row tail`` for every parameter row, as one batch (in the transaction).

        ``row`` is the parenthesised VALUES row with its ``?`` (constants may stand beside them).
        Given ``types``, the SQL type of each ``?`` in order, PostgreSQL gets the rows by COPY
        into a temporary table of the connection, then one ``head SELECT row FROM it tail``:
        psycopg writes COPY rows in C, where a prepared one-row statement a row (pipeline mode)
        or arrays for ``unnest`` spent most of their time in its Python (10,000 rows of
        ``fleet_dream_entries``: 0.25 s by either, 0.05 s by COPY). COPY cannot run in
        pipeline mode: not inside :meth:`batch`. Otherwise, and always on SQLite (in C, in
        process), the one-row statement runs by ``executemany``. A conflict clause in ``tail``
        may not touch one row twice in one batch: callers send unique keys. A write is never
        retried on a lost connection: the transaction raises, as ``execute``.
        """
        rows = [tuple(values) for values in rows]
        if types and (row.count('?') != len(types)
                      or any(len(values) != len(types) for values in rows)):
            raise ValueError(f'{len(types)} types for the ? of {row!r}, and rows of as many')
        if not rows:
            return
        with self._lock:
            if types and self.dialect.name == POSTGRES.name:
                with self.transaction():  # the staged rows last until the transaction ends
                    self._insert_staged(head, row, rows, tail, types)
                return
            self.conn.cursor().executemany(self.dialect.statement(
                f'{head} VALUES {row} {tail}'), rows)

    def insert_new(self, table: str, columns: tuple, rows, types: tuple) -> None:
        """
        Insert rows whose keys the transaction found absent: COPY on PostgreSQL, in one go.

        No conflict clause: a row another store wrote meanwhile (the same dream kept by two
        stores at once) raises a unique violation, and the transaction rolls back (its
        deliveries are not acknowledged, and come again). SQLite has one writer at a time
        (``BEGIN IMMEDIATE``): a plain ``executemany``. Inside a transaction; not in :meth:`batch`.
        """
        rows = [tuple(values) for values in rows]
        if not rows:
            return
        with self._lock:
            if self.dialect.name == POSTGRES.name:
                _copy(self.conn.cursor(), f'{table} ({", ".join(columns)})', rows, types)
                return
            self.conn.cursor().executemany(
                f'INSERT INTO {table} ({", ".join(columns)}) VALUES '
                f'({", ".join("?" * len(columns))})', rows)

    def _insert_staged(self, head: str, row: str, rows: list, tail: str, types: tuple) -> None:
        pieces = row.strip()[1:-1].split('?')
        table = self._staging_table(types)
        cursor = self.conn.cursor()
        if table in self._staged:  # used before in this transaction: empty it again
            cursor.execute(f'TRUNCATE {table}')
        self._staged.add(table)
        _copy(cursor, table, rows, types)
        select = pieces[0] + ''.join(f'u.c{number}{piece}'
                                     for number, piece in enumerate(pieces[1:]))
        cursor.execute(f'{head} SELECT {select} FROM {table} AS u {tail}')

    def _staging_table(self, types: tuple) -> str:
        """Return the temporary table (of this connection) of columns ``c0``, ... of ``types``."""
        table = 'fleet_staging_' + hashlib.sha256(repr(types).encode()).hexdigest()[:12]
        if self._staging.get(table) is not self.conn:  # made on this connection, or not yet
            columns = ', '.join(f'c{number} {kind}' for number, kind in enumerate(types))
            # emptied by every commit and rollback: what a transaction staged stays in it
            self.conn.cursor().execute(f'CREATE TEMPORARY TABLE IF NOT EXISTS {table} '
                                       f'({columns}) ON COMMIT DELETE ROWS')
            self._staging[table] = self.conn
        return table

    def tuples(self, sql: str, parameters=()) -> list:
        """Return the rows of a SELECT as tuples, in the order of its columns (large reads)."""
        with self._lock:
            return list(map(tuple, self._run(sql, parameters, retry=not self._depth).fetchall()))

    def grouped(self, sql: str, parameters=()) -> dict:
        """
        Return the rows of a SELECT as tuples, in lists by their first column, in their order.

        On PostgreSQL the rows are grouped as they come, in chunks (psycopg's ``stream``, with
        libpq 17 or later), while the server still reads the next ones: a large read (the
        report's 40,000 fault entries) costs about its slower half, not both one after the
        other. Otherwise the rows are read, then grouped.
        """
        statement, values = self.dialect.statement(sql), tuple(parameters)

        def read() -> dict:
            cursor = self.conn.cursor()
            if self.dialect.name == POSTGRES.name and _streams_chunks():
                found = cursor.stream(statement, values, size=STREAM_ROWS)
            else:
                found = cursor.execute(statement, values)
            groups = collections.defaultdict(list)
            for row in found:  # tuples (psycopg's and sqlite3's default rows)
                groups[row[0]].append(row)
            return dict(groups)
        with self._lock:
            return self._attempt(read, retry=not self._depth)

    def rows(self, sql: str, parameters=()) -> list:
        """Return the rows of a SELECT as dicts (column name to value)."""
        with self._lock:
            cursor = self._run(sql, parameters, retry=not self._depth)
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def value(self, sql: str, parameters=()) -> Any:
        """Return the first column of the first row, or None."""
        found = self.rows(sql, parameters)
        return next(iter(found[0].values())) if found else None

    @contextlib.contextmanager
    def batch(self) -> Iterator['FleetDatabase']:
        """
        Send the block's writes without waiting for each answer (PostgreSQL's pipeline mode).

        Inside a transaction, for statements whose results are not read: an error raises at
        the block's end at the latest, and the transaction rolls back. SQLite runs in process:
        nothing to wait for, the block runs as it is.
        """
        with self._lock:
            if self.dialect.name != POSTGRES.name:
                yield self
                return
            with self.conn.pipeline():
                yield self

    @contextlib.contextmanager
    def transaction(self) -> Iterator['FleetDatabase']:
        """Run the block as one write transaction; a block inside joins the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self
                finally:
                    self._depth -= 1
                return
            self._run(self.dialect.begin, (), retry=True)
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._staging.clear()  # a temporary table made in the transaction is gone too
                if not self._broken():  # a lost connection's transaction is the server's to end
                    self.conn.cursor().execute('ROLLBACK')
                raise
            finally:
                self._depth = 0
                self._staged.clear()  # commit and rollback empty them (ON COMMIT DELETE ROWS)
            try:
                self.conn.cursor().execute('COMMIT')
            except BaseException:
                # PostgreSQL rolled the transaction back, the tables it made too; SQLite keeps
                # it open (a deferred constraint): end it, so the next block starts afresh
                self._staging.clear()
                if not self._broken():
                    with contextlib.suppress(Exception):  # none open: the error raised below
                        self.conn.cursor().execute('ROLLBACK')
                raise

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self.conn.close()


@functools.lru_cache(maxsize=1)
def _streams_chunks() -> bool:
    """Return True when psycopg can stream rows in chunks (psycopg 3.2 and libpq 17 or later)."""
    import psycopg  # lazy: as in _connect_postgres, which checked that it is installed
    capabilities = getattr(psycopg, 'capabilities', None)  # psycopg 3.2 and later
    return bool(capabilities is not None and capabilities.has_stream_chunked())


def _copy(cursor: Any, target: str, rows: list, types: tuple) -> None:
    """COPY ``rows`` into ``target`` (a table, its columns) in binary: psycopg writes it in C."""
    with cursor.copy(f'COPY {target} FROM STDIN (FORMAT BINARY)') as copy:
        copy.set_types([kind.lower() for kind in types])
        for values in rows:
            copy.write_row(values)


def _sqlite_path(url: str) -> pathlib.Path:
    for prefix in ('sqlite:///', 'sqlite://', 'sqlite:'):
        if url.startswith(prefix):
            return pathlib.Path('/' + url[len(prefix):].lstrip('/') if prefix == 'sqlite:///'
                                else url[len(prefix):])
    return pathlib.Path(url)


def _connect_sqlite(url: str) -> FleetDatabase:
    path = _sqlite_path(url).expanduser()
    if not path.parent.is_dir():
        raise FleetError(f'{path.parent} does not exist, so the fleet store {path.name} cannot '
                         'be made there; check --store, or create the directory first')
    create_private_file(path)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                           check_same_thread=False)
    conn.execute(f'PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}')
    conn.execute('PRAGMA journal_mode = WAL')
    conn.execute('PRAGMA synchronous = NORMAL')
    return FleetDatabase(conn, SQLITE, str(path))


def _connect_postgres(url: str) -> FleetDatabase:
    try:
        import psycopg  # lazy: an optional extra, 94 ms and 20 MB; only a PostgreSQL store
    except ImportError as error:
        raise MissingExtra('a fleet store on PostgreSQL', 'fleet', error.name or 'psycopg') \
            from None
    return FleetDatabase(_open_postgres(url), POSTGRES, _shown(url),
                         reopen=lambda: _open_postgres(url),
                         lost=(psycopg.OperationalError, psycopg.InterfaceError))


def _open_postgres(url: str) -> Any:
    import psycopg  # lazy: as in _connect_postgres, which checked that it is installed
    try:
        conn = psycopg.connect(url, connect_timeout=int(BUSY_TIMEOUT_S))
    except psycopg.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise FleetError(f'cannot connect to the fleet store {_shown(url)}: {first}; check '
                         '--store (postgresql://user@host:port/database) and that the server '
                         'runs') from None
    # psycopg opens a transaction on the first statement; explicit BEGINs need autocommit.
    conn.autocommit = True
    return conn


def _shown(url: str) -> str:
    """Return the URL without its password, for messages."""
    scheme, _, rest = url.partition('://')
    account, at, host = rest.rpartition('@')
    return f'{scheme}://{account.partition(":")[0]}{at}{host}' if at else url


def connect(url: str) -> FleetDatabase:
    """Open the fleet store at ``url`` (PostgreSQL or SQLite), unmigrated."""
    if not isinstance(url, str) or not url.strip():
        raise FleetError('no fleet store given: pass --store postgresql://... or a SQLite file')
    if url.startswith(POSTGRES_SCHEMES):
        return _connect_postgres(url)
    return _connect_sqlite(url)


def migrate(db: FleetDatabase, steps, now: Callable[[], float] = time.time) -> list:
    """
    Apply the steps not yet recorded, in order, in one transaction; return their names.

    ``steps`` is a sequence of (name, statements); a step's statements are written in the
    SQL both dialects speak.
    """
    db.execute(f'CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, '
               'applied_at DOUBLE PRECISION NOT NULL)')
    applied = []
    with db.transaction():
        if db.dialect.migration_lock:
            db.execute(db.dialect.migration_lock)
        done = {row['name'] for row in db.rows(f'SELECT name FROM {MIGRATIONS_TABLE}')}
        for name, statements in steps:
            if name in done:
                continue
            for statement in statements:
                db.execute(statement)
            db.execute(f'INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)',
                       (name, now()))
            applied.append(name)
    return applied
