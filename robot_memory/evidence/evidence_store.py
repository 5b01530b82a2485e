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
The evidence store: observations, signature links, audit trail and dream state in SQLite.

The database (by default beside the memory file and named after it, ``robot-memory.db``
for ``robot-memory.md``: see ``default_db_path``; mode 0600, WAL, a busy timeout so the
node and the CLI can share it; a symbolic link is opened through to its target) is the
system of record for what the robot observed and for every change made to an entry.
Tables:

``observations``
    One row per run of identical consecutive evidence of a source key (see
    ``robot_memory.evidence.runs``): first and last stamp (UNIX seconds), count, source,
    signature (NULL for OK), source key, severity (0 OK, 1 WARN, 2 ERROR), a compact JSON
    payload (an OK report's: its message and non-numeric values) and the numeric values'
    ranges. A trigger refuses every UPDATE but an open run's growth. OK reports are thinned
    (one when a source turns OK or changes state, else at most one per ``ok_heartbeat_s``).
    ``compact(now)`` folds consumed rows past ``retention_days`` into ``daily_counts``.
``signatures`` / ``sources``
    A signature's entry (``entry_id``) and the entry's original type, so a resolved
    entry re-opens with its type; per source key, the last bad report and since when it
    has been OK.
``audit``
    Append-only (UPDATE and DELETE refused): every change to an entry with time, actor,
    action (create, reinforce, resolve, reopen, prune, manual, peer_merge, rebuild) and
    reason, and
    every proposal and decision of the proposals queue (propose, approve, reject, expire,
    replace; entry id ``proposal:<id>``, see ``robot_memory.review.proposing``).
``dreams`` / ``dream_state`` / ``snapshot`` / ``pending_dream``
    The dream log, the dream cursor (last observation id consumed, last dream time, hash
    of the file the dream wrote), the per-entry snapshot of that file (to recognise a
    person's edits), and the intent record of a dream (or of a ``robot-memory prune``) in
    progress (crash recovery).
``entry_versions`` / ``undos`` / ``undo_horizon``
    The prior state of each entry at every change of the snapshot (dream, prune, undo), the
    undo log, and the first dream recorded so (see ``robot_memory.review.undo``). Append-only.
``ingest_files`` / ``ingest_taken``
    What ``robot-memory ingest`` took, by file and stream (``robot_memory.evidence.ingest``).
``replay_bags`` / ``replay_taken`` / ``replay_seen``
    What ``robot-memory replay`` took from each recording, by recording and topic, and
    each message by what it is (its own stamp and a tag of its topic and bytes; see
    ``robot_memory.bags.replay``), written in the transaction of the observations.
``migrations``
    Named schema migrations, each applied once in its own transaction.

**Damage.** ``on_corrupt='raise'`` (the default) refuses a file that is not a usable SQLite
database with EvidenceDamaged (an EvidenceError). ``on_corrupt='set_aside'`` (what
``robot-memory ingest``, ``dream`` and ``prune`` use) checks the file at open (``PRAGMA
quick_check``, so a truncated file is caught too), renames a damaged one with its WAL to
``robot-memory.db.corrupt-<time>`` (never deleted) and starts a fresh database; the next
dream takes the entries of robot-memory.md in again, with their links to the evidence as
far as the copy can be read (``robot_memory.evidence.salvage``), audited as ``rebuild``.
A full disk is reported as such (EvidenceError saying the disk is full), never as damage.

Ingestion is a cheap append: ``add()`` classifies the observation with the rules and
grows runs in memory; one transaction writes them every ``batch_size`` pieces or on
``flush()``. The store starts no threads; the node's StoreWorker
(robot_memory.evidence.worker) calls ``flush()`` every ``flush_period_s``. A lock makes
``add`` and ``flush`` thread-safe; for anything else use one store (one connection) per
thread: WAL lets a dreaming connection and an ingesting one work side by side.
"""

import contextlib
import dataclasses
import datetime as dt
import json
import pathlib
import sqlite3
import threading
from typing import Callable
from typing import Iterable
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.common import sqlite_db
from robot_memory.common.sqlite_db import create_private_file
from robot_memory.common.sqlite_db import damage_found
from robot_memory.common.sqlite_db import is_damage
from robot_memory.common.sqlite_db import is_disk_full
from robot_memory.common.sqlite_db import open_database
from robot_memory.common.sqlite_db import PlainDatabase
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import to_epoch
from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence import signals
from robot_memory.evidence.dream_book import DreamBook
from robot_memory.evidence.evidence_audit import AuditRecord
from robot_memory.evidence.evidence_audit import write_audit
from robot_memory.evidence.migrations import MIGRATIONS
from robot_memory.evidence.runs import identity_and_numbers
from robot_memory.evidence.runs import insert_observations
from robot_memory.evidence.runs import MAX_OPEN_RUNS
from robot_memory.evidence.runs import RUN_GAP_S
from robot_memory.evidence.runs import RunBook
from robot_memory.locations import link_target

if TYPE_CHECKING:  # imported when a store is made: the typed memory needs no rules
    from robot_memory.evidence.rules import Rules


DB_NAME = 'robot-memory.db'  # the database of robot-memory.md (see default_db_path)
# Context signals are kept this long (a fault's learned condition compares its episodes of
# the last 30 days, dream.pattern.KEEP_DAYS, with them).
SIGNAL_DAYS = 30.0
MEMORY = ':memory:'  # the path of a store kept in memory (SQLite's name for it)
AUDIT_ACTIONS: tuple[str, ...] = (
    'create', 'reinforce', 'resolve', 'reopen', 'prune', 'manual', 'peer_merge')
# Decisions on the proposals queue (robot_memory.review.proposing), entry id ``proposal:<id>``.
AUDIT_ACTIONS += ('propose', 'approve', 'reject', 'expire', 'replace')
# A change made by an undo (robot_memory.review.undo); an entry of a rebuilt database.
AUDIT_ACTIONS += ('undo', 'merge', 'rebuild')
# A fleet lesson taken in, revoked or refused (robot_memory.fleet.lessons), ``peer:fleet:<id>``.
AUDIT_ACTIONS += ('fleet_lesson',)
ON_CORRUPT = ('raise', 'set_aside')
_MAX_BUFFER = 200_000
# SQLite's page cache for the evidence connection, in KiB (its default is 2,000). Ingest
# appends at the end of one table, so a flood touches few pages; left at the default the
# cache still grew by 2 MB of memory_node's resident memory under bench_node's flood. A
# dream reads the new rows once, in order: bench_autodream's 1M-observation dream is as
# fast either way.
CACHE_KIB = 256


class EvidenceError(RobotMemoryError, ValueError):
    """The evidence database cannot be opened or written; says what to do."""

    cause = ''  # of a failed flush: why, without what the store does about it


class EvidenceDamaged(EvidenceError):
    """
    The file is not a usable SQLite database (refused with ``on_corrupt='raise'``).

    ``path`` is the database and ``detail`` what is wrong with it.
    """

    def __init__(self, message: str, path: pathlib.Path, detail: str):
        super().__init__(message)
        self.path = path
        self.detail = detail


class _Damaged(Exception):
    """The database file is damaged (internal: set aside or reported by the constructor)."""


def _disk_full_message(path: Optional[pathlib.Path], doing: str) -> str:
    if doing.startswith('record the finished'):  # after the memory file was written
        return (f'cannot {doing} {path}: the disk is full. The memory file was already '
                'rewritten with its changes; they are kept in the database as a dream in '
                'progress and the next dream records them: free some space (nothing is lost)')
    return (f'cannot {doing} {path}: the disk is full; free some space and retry (nothing '
            'already stored was changed)')


def open_target(path) -> pathlib.Path:
    """Return the database file ``path`` names, through links (EvidenceError if dangling)."""
    try:
        return link_target(path)
    except MemoryFileError as error:
        raise EvidenceError(f'the database {error}') from None


@dataclasses.dataclass
class CompactReport:
    """What ``compact`` folded into daily counts and forgot."""

    rows: int
    days: int
    signatures_forgotten: int


class EvidenceStore(DreamBook):
    """
    The SQLite evidence store; use as a context manager or call ``close()``.

    ``path`` ``':memory:'`` or None keeps the store in memory (gone when it is closed), as
    :class:`~robot_memory.substrate.substrate_store.Substrate` does: for tests and one-off tools.
    ``run_gap_s``: the longest gap a run grows across (None: every piece its own row).
    """

    def __init__(self, path, rules: Optional['Rules'] = None, batch_size: int = 500,
                 retention_days: float = 14.0, ok_heartbeat_s: float = 900.0,
                 busy_timeout_s: float = 10.0, on_corrupt: str = 'raise',
                 run_gap_s: Optional[float] = RUN_GAP_S):
        if on_corrupt not in ON_CORRUPT:
            raise ValueError(f'on_corrupt must be one of {", ".join(ON_CORRUPT)}, got '
                             f'{on_corrupt!r}')
        if batch_size < 1:
            raise ValueError('batch_size must be at least 1')
        if retention_days <= 0:
            raise ValueError('retention_days must be positive (days of raw observations kept)')
        # A symlinked database is used through to its target: -wal, -shm and a set-aside
        # copy lie beside the file SQLite writes, and the link stays.
        self.path = None if path is None or str(path) == MEMORY else open_target(path)
        if not rules:
            # lazy: the rules and pydantic, 115 ms and 12 MB of robot-memory recall
            from robot_memory.evidence.rules import Rules
            rules = Rules.default()
        self.rules = rules
        self.batch_size = batch_size
        self.retention_days = retention_days
        self.ok_heartbeat_s = ok_heartbeat_s
        if run_gap_s is not None and not 0 <= run_gap_s <= RUN_GAP_S:
            raise ValueError(f'run_gap_s must be 0 to {RUN_GAP_S} s (None: one row each)')
        self._runs = RunBook(run_gap_s)
        self.signals = signals.SignalBook(rules.spec.signals)  # context signals (issue 38)
        self._flush_backoff = 0
        self._ok_last: dict = {}
        self._lock = threading.RLock()
        self.dropped = 0
        # The error of the last failed flush (None once a flush succeeds).
        self.write_error: Optional[EvidenceError] = None
        self.on_corrupt = on_corrupt
        # Where a damaged database was moved by this store, and notes for the next report.
        self.set_aside_to: Optional[pathlib.Path] = None
        self.problems: list[str] = []
        try:
            if on_corrupt == 'set_aside' and self.path is not None:
                self._check(busy_timeout_s)
            self.db = self._open(busy_timeout_s)
        except _Damaged as damage:
            assert self.path is not None  # only a file can be damaged
            if on_corrupt != 'set_aside':
                raise EvidenceDamaged(f'{self.path} is not a usable evidence database '
                                      f'({damage}); move it aside and a new one is created, or '
                                      "open it with on_corrupt='set_aside'", self.path,
                                      str(damage)) from None
            self.set_aside_to = self._set_aside()
            self.problems.append(
                f'the evidence database was damaged ({damage}); it was set aside as '
                f'{self.set_aside_to.name} and a new one was created; the next dream takes '
                'the entries of the memory file in again')
            try:
                self.db = self._open(busy_timeout_s)
            except _Damaged as again:
                raise EvidenceError(f'{self.path}: a new evidence database could not be '
                                    f'created ({again})') from None

    def _open(self, busy_timeout_s: float) -> PlainDatabase:
        db = self._open_database(busy_timeout_s)
        db.execute(f'PRAGMA cache_size = -{CACHE_KIB}')
        return db

    def _open_database(self, busy_timeout_s: float) -> PlainDatabase:
        if self.path is None:
            return open_database(MEMORY, busy_timeout_s, MIGRATIONS)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            create_private_file(self.path)
        except OSError as error:
            if is_disk_full(error):
                raise EvidenceError(_disk_full_message(self.path, 'create')) from None
            raise EvidenceError(f'cannot create the evidence database {self.path}: '
                                f'{error.strerror}; check the directory is writable') from None
        try:
            db = open_database(str(self.path), busy_timeout_s, MIGRATIONS)
        except sqlite3.DatabaseError as error:
            if is_damage(error):
                raise _Damaged(str(error)) from None
            if is_disk_full(error, self.path):
                raise EvidenceError(_disk_full_message(self.path, 'open')) from None
            # Not damage (e.g. locked by another process for longer than the busy timeout):
            # moving the file aside would be wrong advice.
            raise EvidenceError(f'cannot open the evidence database {self.path} ({error}); '
                                'it was left as it is') from None
        return db

    def _check(self, busy_timeout_s: float) -> None:
        """Raise _Damaged if the file is not a sound SQLite database (see damage_found)."""
        assert self.path is not None  # a database in memory is not checked
        try:
            damage = damage_found(self.path, busy_timeout_s)
        except OSError as error:
            raise EvidenceError(f'cannot read the evidence database {self.path}: '
                                f'{error.strerror}') from None
        if damage is not None:
            raise _Damaged(damage)

    def _set_aside(self) -> pathlib.Path:
        """Rename the damaged database and its WAL to ``<db>.corrupt-<time>[-wal]``."""
        assert self.path is not None  # only a file can be damaged
        try:
            return sqlite_db.set_aside(self.path, dt.datetime.now(UTC))
        except OSError as error:
            raise EvidenceError(f'{self.path} is damaged and could not be set aside '
                                f'({error.strerror}); move it aside by hand') from None

    def set_aside_copies(self) -> list:
        """Damaged databases set aside beside this one (``<db>.corrupt-*``), oldest first."""
        if self.path is None:
            return []
        return sqlite_db.set_aside_copies(self.path)

    def take_problems(self) -> list:
        """Note about the store for a report (e.g. a database set aside), once each."""
        problems, self.problems = self.problems, []
        return problems

    @contextlib.contextmanager
    def _writing(self, doing: str):
        """Turn a failed write into an EvidenceError that says what happened."""
        try:
            yield
        except sqlite3.Error as error:
            if is_disk_full(error, self.path):
                raise EvidenceError(_disk_full_message(self.path, doing)) from None
            raise EvidenceError(f'cannot {doing} {self.path or MEMORY} ({error})') from None

    @contextlib.contextmanager
    def _transaction(self):
        """
        Return a write transaction that takes SQLite's write lock when it begins.

        ``BEGIN IMMEDIATE``, not a deferred BEGIN: a deferred transaction that reads first
        and writes later fails at once with "database is locked" (no busy wait) when
        another process committed in between, which the node ingesting every 0.5 s makes
        likely for the CLI. Nested use becomes a savepoint.
        """
        with self.db.atomic(immediate=True):
            yield

    def applied_migrations(self) -> list:
        """Names of the schema migrations applied to this database, in order."""
        return MIGRATIONS.applied_names(self.db.conn)

    def __enter__(self) -> 'EvidenceStore':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Flush buffered observations and close the database."""
        with self._lock:
            try:
                self.flush()
            finally:
                self.db.close()

    # ------------------------------------------------------------------ ingestion

    def add(self, observation) -> int:
        """
        Buffer the evidence of one observation; returns how many pieces of evidence it gave.

        Each piece grows its source key's open run or starts one (robot_memory.evidence.runs):
        a dict lookup, no SQL. Once ``batch_size`` pieces wait, ``add`` writes them. If
        that write fails (a full disk), the observation is still accepted: it stays buffered,
        nothing is raised, and :attr:`write_error` says why; the next write is tried after
        another ``batch_size``, or at ``flush()``, which raises. So an ``add`` that returned
        was taken exactly once, and one that raised (a naive stamp) was not taken at all.
        """
        if observation.stamp.tzinfo is None:
            raise ValueError('observation stamps must be aware UTC datetimes, got a naive '
                             f'{observation.stamp.isoformat()}; attach timezone.utc')
        return self.add_prepared(observation.stamp.timestamp(),
                                 [(observation, self.prepare(observation))])

    def prepare(self, observation) -> list:
        """Return the evidence of ``observation`` for ``add_prepared``; its stamp is not read."""
        return [(item, *identity_and_numbers(observation, item))
                for item in self.rules.classify(observation)]

    def add_prepared(self, stamp: float, reports: list) -> int:
        """
        ``add`` (observation, what ``prepare`` gave of it) pairs at ``stamp`` (POSIX seconds).

        The observation may be an earlier one of the same identity (``runs.renumbered``):
        only its source, message and non-numeric values are read.
        """
        added = 0
        with self._lock:
            runs, ok_last, heartbeat = self._runs, self._ok_last, self.ok_heartbeat_s
            for observation, prepared in reports:
                self._take_signals(stamp, observation, prepared)
                for item, identity, numbers in prepared:
                    if item.severity == 0:  # thinned, but a change of state is always kept
                        last = ok_last.get(item.source_key)
                        if (last is not None and last <= stamp < last + heartbeat
                                and not runs.changes_state(item.source_key, identity, stamp,
                                                           observation)):
                            continue
                        ok_last[item.source_key] = stamp
                        item = runs.with_state(observation, item)
                    else:
                        ok_last[item.source_key] = None
                    runs.take(stamp, observation.source, item, identity, numbers)
                    added += 1
            if len(self._ok_last) > MAX_OPEN_RUNS:
                self._ok_last.clear()
            if runs.pending >= self.batch_size + self._flush_backoff:
                try:
                    self.flush()
                except EvidenceError:
                    # Kept buffered and reported in write_error; retried a batch later.
                    self._flush_backoff = runs.pending
        return added

    def _take_signals(self, stamp: float, observation, prepared: list) -> None:
        """Sum a telemetry message's numbers, or a status's, into the context signals."""
        if observation.source == 'telemetry':
            self.signals.take_telemetry(stamp, observation.topic, observation.fields)
        elif prepared and observation.source == 'diagnostic':
            self.signals.take_status(stamp, observation.name, prepared[0][2])

    def signal_series(self, since: float, until: float) -> dict:
        """Return ``{name: signals.Series}`` of the context signals from ``since`` to ``until``."""
        with self._lock:
            self.flush()
            return signals.read(self.db.conn, since, until)

    def flush(self, then: Optional[Callable[[sqlite3.Connection], None]] = None) -> int:
        """
        Write the buffered evidence in one transaction; returns how many pieces were written.

        New runs are inserted; a run stored by an earlier flush grows in place (UPDATE of
        its end, count and ranges) unless a dream has taken it since (``take_window``):
        then what came after it is a new row. ``then(connection)`` runs in the same
        transaction (a replay's progress: the evidence and the record of where it came
        from are written together, or neither is). On failure everything stays buffered
        (beyond 200,000 runs the oldest are dropped and their evidence counted in
        ``dropped``) and EvidenceError says why; it is also kept in ``write_error``.
        """
        with self._lock:
            runs = self._runs
            written = runs.pending
            if not runs.dirty and then is None and not self.signals.buckets:
                return 0
            try:
                with self._transaction():
                    conn = self.db.conn
                    sealed = conn.execute(
                        'SELECT sealed_id FROM dream_state WHERE id = 1').fetchone()[0]
                    inserts, updates = runs.plan(sealed)
                    if updates:
                        conn.executemany('UPDATE observations SET end_stamp = ?, count = ?, '
                                         'ranges = ? WHERE id = ?', updates)
                    insert_observations(conn, [run.fresh_row() for run in inserts])
                    if self.signals.buckets:
                        signals.write(conn, self.signals.grouped())
                    last = conn.execute('SELECT last_insert_rowid()').fetchone()[0]
                    if then is not None:
                        then(conn)
            except sqlite3.Error as error:
                if len(runs.dirty) > _MAX_BUFFER:
                    self.dropped += runs.drop_oldest(_MAX_BUFFER)
                cause = ('the disk is full; free some space' if is_disk_full(error, self.path)
                         else str(error))
                self.write_error = EvidenceError(
                    f'cannot write observations to {self.path or MEMORY} ({cause}); '
                    f'{runs.pending} stay buffered and the next flush retries')
                self.write_error.cause = f'cannot write to {self.path or MEMORY}: {cause}'
                raise self.write_error from None
            runs.stored(inserts, last - len(inserts) + 1)
            self.signals.clear()
            self.write_error = None
            self._flush_backoff = 0
            return written

    def discard_buffered(self) -> int:
        """Forget the evidence waiting for a flush (its caller takes it again); returns it."""
        with self._lock:
            self.signals.clear()  # summed from the same lines: taken again with them
            return self._runs.drop_oldest(0)

    def resume_heartbeats(self) -> None:
        """Thin OK reports from the last stored ones on, as the store that stored them did."""
        rows = self.db.execute('SELECT source_key, severity, max(coalesce(end_stamp, stamp)) '
                               'FROM observations GROUP BY source_key')
        with self._lock:
            self._ok_last.update((key, last) for key, severity, last in rows if severity == 0)

    @property
    def buffered(self) -> int:
        """Pieces of evidence waiting for the next flush."""
        return self._runs.pending

    def books(self) -> dict:
        """Return the source keys each in-memory book of ingestion holds (all bounded)."""
        return {**self._runs.sizes(), 'ok_book': len(self._ok_last)}

    def observation_count(self) -> int:
        """Pieces of raw evidence currently stored (the runs' counts; compacted ones not)."""
        return self.db.execute('SELECT coalesce(sum(count), 0) FROM observations').fetchone()[0]

    # ------------------------------------------------------------------ retention

    def compact(self, now: dt.datetime) -> CompactReport:
        """Fold consumed observations older than the retention window into daily counts."""
        self.flush()
        cutoff = to_epoch(now) - self.retention_days * 86400.0
        last_id = self.dream_cursor().last_id
        # Three scans of every consumed row (stamp has no index) for nothing, most nights of
        # a robot's first two weeks: one that stops at the first row past retention first.
        if self.db.execute('SELECT 1 FROM observations WHERE id <= ? AND stamp < ? LIMIT 1',
                           (last_id, cutoff)).fetchone() is None:
            return self._forget_signatures(cutoff, CompactReport(0, 0, 0))
        with self._writing('compact old observations in'), self._transaction():
            days = self.db.execute(
                "SELECT count(DISTINCT strftime('%Y-%m-%d', stamp, 'unixepoch')) "
                'FROM observations WHERE id <= ? AND stamp < ?', (last_id, cutoff)).fetchone()[0]
            self.db.execute(
                'INSERT INTO daily_counts (day, source, source_key, signature, severity, count, '
                "first_stamp, last_stamp) SELECT strftime('%Y-%m-%d', stamp, 'unixepoch'), "
                "source, source_key, coalesce(signature, ''), severity, sum(count), min(stamp), "
                'max(coalesce(end_stamp, stamp)) FROM observations WHERE id <= ? AND stamp < ? '
                'GROUP BY 1, 3, 4, 5 ON CONFLICT (day, source_key, signature, severity) DO UPDATE '
                'SET count = count + excluded.count, '
                'first_stamp = min(first_stamp, excluded.first_stamp), '
                'last_stamp = max(last_stamp, excluded.last_stamp)', (last_id, cutoff))
            rows = self.db.execute('DELETE FROM observations WHERE id <= ? AND stamp < ?',
                                   (last_id, cutoff)).rowcount
            return self._forget_signatures(cutoff, CompactReport(rows, days, 0))

    def _forget_signatures(self, cutoff: float, report: CompactReport) -> CompactReport:
        """Forget unlinked signatures not seen since ``cutoff`` (within ``compact``)."""
        with self._writing('compact old observations in'), self._transaction():
            signals.forget_before(self.db.conn, cutoff - (SIGNAL_DAYS - self.retention_days)
                                  * 86400.0)
            report.signatures_forgotten = self.db.execute(
                'DELETE FROM signatures WHERE entry_id IS NULL AND held = 0 AND last_bad < ?',
                (cutoff,)).rowcount
        return report

    def daily_counts(self, signature: Optional[str] = None) -> list:
        """Compacted per-day counts (all, or of one signature), oldest day first."""
        sql = ('SELECT day, source, source_key, signature, severity, count FROM daily_counts'
               + (' WHERE signature = ?' if signature is not None else '')
               + ' ORDER BY day, source_key, signature, severity')
        params = (signature,) if signature is not None else ()
        return list(self.db.query(sql, params))

    # ------------------------------------------------------------------ audit

    def record_audit(self, records: Iterable) -> None:
        """Append audit records (e.g. a peer merge or a manual change) in one transaction."""
        rows = [self._audit_row(record) for record in records]
        with self._writing('write audit records to'), self._transaction():
            write_audit(self.db.conn, rows)

    @staticmethod
    def _audit_row(record: AuditRecord) -> tuple:
        if record.action not in AUDIT_ACTIONS:
            raise ValueError(f'audit action {record.action!r} is not one of '
                             f'{", ".join(AUDIT_ACTIONS)}')
        return (format_iso(record.at), record.entry_id, record.action, record.actor,
                record.reason, json.dumps(record.detail, ensure_ascii=False, sort_keys=True),
                record.dream_id)

    def history(self, entry_id: str) -> list:
        """Return the audit trail of one entry, oldest first."""
        rows = self.db.query('SELECT * FROM audit WHERE entry_id = ? ORDER BY id', (entry_id,))
        return [AuditRecord(parse_iso(row['at']), row['entry_id'], row['action'], row['actor'],
                            row['reason'], json.loads(row['detail']), row['dream_id'], row['id'])
                for row in rows]

    def audit_count(self) -> int:
        """Return the number of audit records."""
        return self.db.execute('SELECT count(*) FROM audit').fetchone()[0]

    def dreams(self) -> list:
        """Return the dream log, oldest first, as dicts with the report decoded."""
        return [dict(row, report=json.loads(row['report']))
                for row in self.db.query('SELECT * FROM dreams ORDER BY id')]
