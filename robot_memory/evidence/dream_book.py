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
The dream's half of the evidence store: its cursor, its window, the state it reads, its intent.

``DreamBook`` is a part of ``EvidenceStore`` (robot_memory.evidence.evidence_store): what a dream
(robot_memory.dream.autodream) reads from the database and the two transactions that record it
(``begin_dream`` before the memory file is written, ``commit_dream`` after; an undo's and a
prune's intent are committed the same way). The store provides the connection (``db``) and its
write transactions (``_writing``, ``_transaction``).
"""

import contextlib
import dataclasses
import datetime as dt
import json
from typing import Callable
from typing import ContextManager
from typing import Optional

from robot_memory.common.sqlite_db import PlainDatabase
from robot_memory.common.timeutil import parse_iso
from robot_memory.evidence.evidence_audit import write_audit
from robot_memory.evidence.intent import DreamIntent
from robot_memory.evidence.restore import apply_recorded
from robot_memory.evidence.runs import collect_ranges
from robot_memory.evidence.runs import ValueRanges
from robot_memory.evidence.window import groups_of
from robot_memory.evidence.window import window_episodes
from robot_memory.evidence.window import window_evidence

SIGNATURE_COLUMNS = ('signature', 'source', 'source_key', 'rule', 'entry_id', 'entry_type',
                     'first_seen', 'last_bad', 'bad_total', 'held', 'payload', 'history')
SOURCE_COLUMNS = ('source_key', 'last_bad', 'ok_since', 'last_ok')


@dataclasses.dataclass
class DreamCursor:
    """Where the last dream stopped: observation id, time, hash of the file it wrote."""

    last_id: int
    last_dream_at: Optional[dt.datetime]
    file_hash: Optional[str]


class DreamBook:
    """What a dream reads from the evidence store and commits to it (a part of EvidenceStore)."""

    # What EvidenceStore holds, which these methods use.
    db: PlainDatabase
    _writing: Callable[[str], ContextManager[None]]
    _transaction: Callable[[], ContextManager[None]]

    def dream_cursor(self) -> DreamCursor:
        """Return the last consumed observation id, last dream time and the hash it wrote."""
        row = self.db.execute(
            'SELECT last_id, last_dream_at, file_hash FROM dream_state WHERE id = 1').fetchone()
        return DreamCursor(row[0], parse_iso(row[1]) if row[1] else None, row[2])

    def max_observation_id(self) -> int:
        """Return the highest observation id written so far (flush first)."""
        value = self.db.execute('SELECT max(id) FROM observations').fetchone()[0]
        return max(value or 0, self.dream_cursor().last_id)

    def newest_stamp(self, after: int) -> Optional[float]:
        """Return the latest stamp (POSIX seconds) of evidence with id > ``after``, or None."""
        return self.db.execute('SELECT max(coalesce(end_stamp, stamp)) FROM observations '
                               'WHERE id > ?', (after,)).fetchone()[0]

    def take_window(self) -> int:
        """
        Return the highest observation id for a dream's window, closing the runs up to it.

        In one write transaction with the flushes of every store: a run at or below the id
        returned never grows again (its later evidence becomes a new row), so what a dream
        counted is what it consumed.
        """
        with self._writing('take the dream window in'), self._transaction():
            upto = self.max_observation_id()
            self.db.execute('UPDATE dream_state SET sealed_id = max(sealed_id, ?) WHERE id = 1',
                            (upto,))
        return upto

    def evidence_groups(self, after: int, upto: int) -> tuple:
        """
        Bad evidence with ``after < id <= upto`` per signature, and last bad per source key.

        One scan grouped by (signature, source key); the payload is the latest run's (that of
        its first observation: a run's numbers are in its ranges).
        """
        rows = self.db.execute(
            'SELECT g.signature, g.source_key, g.n, g.errors, g.first, g.last, o.source, '
            'o.payload, g.last_id FROM (SELECT signature, source_key, sum(count) AS n, '
            'sum(count * (severity >= 2)) AS errors, min(stamp) AS first, '
            'max(coalesce(end_stamp, stamp)) AS last, max(id) AS last_id FROM observations '
            'WHERE id > ? AND id <= ? AND severity > 0 '
            'GROUP BY signature, source_key) AS g JOIN observations AS o ON o.id = g.last_id',
            (after, upto)).fetchall()
        return groups_of(rows)

    def episodes(self, after: int, upto: int, log_gap_s: float, status_gap_s: float) -> dict:
        """
        Bad evidence with ``after < id <= upto`` as episodes, per signature in time order.

        An episode is ``[start, end, count, opens]``: reports of one signature with no other
        report of its source between (an OK ends it) and no gap over ``log_gap_s`` (a log)
        or ``status_gap_s`` (a status); ``opens`` is 1 when it begins the window's reports
        of its source (it may continue an episode of the last window).
        """
        return window_episodes(self.db, after, upto, log_gap_s, status_gap_s)

    def window(self, after: int, upto: int, log_gap_s: float, status_gap_s: float) -> tuple:
        """(``evidence_groups``, ``episodes``) of ``after < id <= upto`` in one pass."""
        return window_evidence(self.db, after, upto, log_gap_s, status_gap_s)

    def ok_reports(self, after: int, upto: int, last_bad: dict) -> dict:
        """Per source key: (first OK after its last bad report or None, last OK, count)."""
        with self.db.atomic():
            self.db.execute('CREATE TEMP TABLE IF NOT EXISTS dream_last_bad '
                            '(source_key TEXT PRIMARY KEY, stamp REAL)')
            self.db.execute('DELETE FROM temp.dream_last_bad')
            self.db.conn.executemany('INSERT INTO temp.dream_last_bad VALUES (?, ?)',
                                     [(key, value) for key, value in last_bad.items()
                                      if value is not None])
        rows = self.db.execute(
            'SELECT o.source_key, min(CASE WHEN b.stamp IS NULL OR o.stamp > b.stamp '
            'THEN o.stamp END), max(coalesce(o.end_stamp, o.stamp)), sum(o.count) '
            'FROM observations AS o '
            'LEFT JOIN temp.dream_last_bad AS b ON b.source_key = o.source_key '
            'WHERE o.id > ? AND o.id <= ? AND o.severity = 0 GROUP BY o.source_key',
            (after, upto)).fetchall()
        return {row[0]: (row[1], row[2], row[3]) for row in rows}

    def value_ranges(self, after: int, upto: int) -> ValueRanges:
        """
        Return the min and max of each numeric value of evidence with ``after < id <= upto``.

        Bad evidence per signature and per source key, OK evidence per source key (OK
        reports are thinned, see ``ok_heartbeat_s``): ``{name: {value key: [min, max]}}``.
        """
        return collect_ranges(self.db.execute(
            "SELECT signature, source_key, severity, ranges FROM observations WHERE ranges != '' "
            'AND id > ? AND id <= ?', (after, upto)))

    def signature_rows(self) -> dict:
        """Every signature link as a dict of its columns, by signature."""
        sql = f'SELECT {", ".join(SIGNATURE_COLUMNS)} FROM signatures'
        return {row[0]: dict(zip(SIGNATURE_COLUMNS, row)) for row in self.db.execute(sql)}

    def source_rows(self) -> dict:
        """Every source key's state (last bad, OK since, last OK), by source key."""
        sql = f'SELECT {", ".join(SOURCE_COLUMNS)} FROM sources'
        return {row[0]: dict(zip(SOURCE_COLUMNS, row)) for row in self.db.execute(sql)}

    def snapshot(self) -> dict:
        """Return the per-entry snapshot of the file the last dream wrote: id -> canonical JSON."""
        return dict(self.db.execute('SELECT entry_id, data FROM snapshot').fetchall())

    def pending_dream(self) -> Optional[DreamIntent]:
        """Return the intent record of a dream, prune or undo that did not finish, or None."""
        row = self.db.execute('SELECT payload FROM pending_dream WHERE id = 1').fetchone()
        return DreamIntent.from_json(row[0]) if row else None

    def begin_dream(self, intent: DreamIntent) -> None:
        """Durably record a dream's intended changes before the memory file is written."""
        with self._writing('record the dream in'), self._durable():
            with self._transaction():
                self.db.execute('INSERT OR REPLACE INTO pending_dream (id, token, at, '
                                'file_hash, payload) VALUES (1, ?, ?, ?, ?)',
                                (intent.token, intent.at_text, intent.file_hash,
                                 intent.to_json()))

    def commit_dream(self, intent: DreamIntent) -> Optional[int]:
        """
        Apply a dream's changes (audit, links, snapshot, cursor, log) in one transaction.

        Applies only while ``intent`` is still pending, so a dream completed by a
        concurrent recovery is never applied twice (returns None then). An intent of kind
        ``prune`` (``autodream.prune``) carries only audit records and the entries that
        leave the snapshot; it is applied the same way (returns None). An intent of kind
        ``undo`` is applied by ``robot_memory.review.undo`` (returns the undo's id).
        """
        at = intent.at_text
        with self._writing('record the finished dream in'), self._durable():
            with self._transaction():
                claimed = self.db.execute('DELETE FROM pending_dream WHERE id = 1 AND token = ?',
                                          (intent.token,)).rowcount
                if not claimed:
                    return None
                if intent.kind == 'undo':
                    return apply_recorded(self, intent)
                if intent.kind == 'prune':
                    self._apply_prune(intent)
                    return None
                cursor = self.db.execute(
                    'INSERT INTO dreams (at, actor, first_id, last_id, report) '
                    'VALUES (?, ?, ?, ?, ?)',
                    (at, intent.actor, intent.first_id, intent.last_id,
                     json.dumps(intent.report, ensure_ascii=False, sort_keys=True)))
                dream_id = cursor.lastrowid
                self._record_versions(intent, dream_id)
                write_audit(self.db.conn, [(at, entry_id, action, intent.actor, reason, detail,
                                            dream_id)
                                           for entry_id, action, reason, detail in intent.audit])
                for width in sorted({len(row) for row in intent.signatures}):
                    # An intent written before a column was added has shorter rows.
                    columns = SIGNATURE_COLUMNS[:width]
                    self.db.conn.executemany(
                        f'INSERT OR REPLACE INTO signatures ({", ".join(columns)}) '
                        f'VALUES ({", ".join("?" * width)})',
                        [row for row in intent.signatures if len(row) == width])
                self.db.conn.executemany('DELETE FROM signatures WHERE signature = ?',
                                         [(key,) for key in intent.signatures_deleted])
                self.db.conn.executemany(
                    f'INSERT OR REPLACE INTO sources ({", ".join(SOURCE_COLUMNS)}) '
                    f'VALUES ({", ".join("?" * len(SOURCE_COLUMNS))})', intent.sources)
                self.db.conn.executemany('INSERT OR REPLACE INTO snapshot VALUES (?, ?)',
                                         intent.snapshot)
                self.db.conn.executemany('DELETE FROM snapshot WHERE entry_id = ?',
                                         [(key,) for key in intent.snapshot_deleted])
                self.db.execute('UPDATE dream_state SET last_id = ?, last_dream_at = ?, '
                                'file_hash = ? WHERE id = 1',
                                (intent.last_id, at, intent.file_hash))
        return dream_id

    def _apply_prune(self, intent: DreamIntent) -> None:
        """Return the database half of a prune made outside a dream (inside commit_dream)."""
        for entry_id, action, _, _ in intent.audit:
            if action != 'prune':
                raise ValueError(f'a prune intent holds a {action!r} record for {entry_id}')
        self._record_versions(intent, None)
        write_audit(self.db.conn, [(intent.at_text, entry_id, action, intent.actor, reason,
                                    detail, None)
                                   for entry_id, action, reason, detail in intent.audit])
        self.db.conn.executemany('DELETE FROM snapshot WHERE entry_id = ?',
                                 [(key,) for key in intent.snapshot_deleted])

    def _record_versions(self, intent: DreamIntent, dream_id: Optional[int]) -> None:
        """
        Keep the prior state of each entry the intent changes (before the snapshot moves).

        A person's edit taken in by a dream is recorded first (``manual``), then the dream's
        own change from the edited entry, so an undo of the dream keeps the person's edit.
        """
        conn = self.db.conn
        at = intent.at.timestamp()

        def stored(entry_id):
            row = conn.execute('SELECT data FROM snapshot WHERE entry_id = ?',
                               (entry_id,)).fetchone()
            return row[0] if row else None

        rows, edited = [], {}
        for entry_id, action, _, detail in intent.audit:
            if action != 'manual' or entry_id in edited:
                continue
            change = json.loads(detail)
            shown = change.get('after', change.get('entry'))
            edited[entry_id] = (json.dumps(shown, sort_keys=True, ensure_ascii=False)
                                if change.get('change') != 'deleted' and shown is not None
                                else None)
            rows.append((at, entry_id, stored(entry_id), dream_id, 1))
        final = {row[0]: row[1] for row in intent.snapshot}
        final.update(dict.fromkeys(intent.snapshot_deleted))
        for entry_id, data in final.items():
            prior = edited[entry_id] if entry_id in edited else stored(entry_id)
            if prior != data:
                rows.append((at, entry_id, prior, dream_id, 0))
        conn.executemany('INSERT INTO entry_versions (at, entry_id, prior, dream_id, manual) '
                         'VALUES (?, ?, ?, ?, ?)', rows)

    def discard_pending(self) -> None:
        """Forget the intent record of a dream whose file was never written."""
        with self._writing('update'), self._transaction():
            self.db.execute('DELETE FROM pending_dream')

    @contextlib.contextmanager
    def _durable(self):
        """``PRAGMA synchronous = FULL`` for the dream's two transactions, NORMAL otherwise."""
        self.db.execute('PRAGMA synchronous = FULL')
        try:
            yield
        finally:
            self.db.execute('PRAGMA synchronous = NORMAL')
