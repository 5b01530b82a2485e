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
Runs of identical consecutive observations of one source key, stored as one evidence row.

A diagnostic_updater status repeats every second; stored row by row a constant fault
wrote 86,400 rows a day. A run is one row: first stamp (``stamp``), last (``end_stamp``),
``count`` and the min/max of each numeric value (``ranges``). Observations are identical
when source key, signature, severity, message (a log's whole payload) and every
non-numeric value are equal: a state change (``is_docked: True`` -> ``False``) starts a new
run. A run never grows across a gap over ``RUN_GAP_S`` (shorter than any episode gap of
the dream), a UTC hour boundary (daily and hourly counts stay exact), a stamp earlier than
its end, nor past a dream's window: rows at or below ``dream_state.sealed_id`` are closed,
and what came after goes to a new row (``RunBook.plan``). Counts, first and last times,
episodes and daily counts are then those of the observations one by one
(test_evidence_runs.py), as long as a source key's stamps do not go backwards: a report
older than its source key's last is a row of its own, but episodes order rows by their
first stamp only.
"""

import dataclasses
import functools
import itertools
import json
from json.encoder import encode_basestring_ascii as _json_string
import math
import sqlite3
import sys
from typing import Optional

from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import MAX_STRING_CHARS
from robot_memory.evidence.observations import message_pattern
from robot_memory.evidence.observations import TelemetryObservation

# A run grows only while reports come at most this far apart. The dream's episode gaps
# (robot_memory.dream.pattern GAP_S 120 s, STATUS_GAP_S 3600 s) must not be shorter.
RUN_GAP_S = 60.0
RUN_SPAN_S = 3600.0  # runs never cross a multiple of this (a UTC hour)
# Source keys followed at once (then the book starts over: later evidence starts new runs,
# none is lost). The books take about 1.5 kB a source key: 100,000 let a stream of distinct
# keys hold some 140 MB of memory_node's memory; a robot has hundreds to a few thousand.
MAX_OPEN_RUNS = 10_000
# An OK report that changes its status's state (message or a non-numeric value, numbers
# masked) is kept even inside the OK heartbeat once the stored state has held this long: a
# dock's "docked" is in the evidence within a minute, a value that changes every report is
# not stored every report.
STATE_MIN_S = 60.0
_NUMERIC_START = frozenset('0123456789+-.')
_INSERT_OBSERVATIONS = ('INSERT INTO observations (stamp, source, signature, source_key, '
                        'severity, payload, end_stamp, count, ranges) VALUES ')
_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?)'
# Rows one INSERT statement takes at most. sqlite3 lets go of the GIL while SQLite runs a
# statement and must take it back afterwards; under a flood memory_node's other threads
# (then its executor's, now its ingest thread) hold it most of the time, so each take-back
# waits. executemany runs its statement once a row: the store thread then waited once a
# row and fell behind the flood (83,000 observations in its backlog, 12 MB of the node's
# memory, in bench_node's ingest phase). A multi-row INSERT waits once for 256 rows
# (bench_autodream.py: ingest_contended).
ROWS_PER_INSERT = 256


# One encoder each, not json.dumps: with options dumps builds a new encoder every call, a
# fifth of what storing a run's ranges or an OK status's state cost (same text).
_RANGES_JSON = json.JSONEncoder(separators=(',', ':'), sort_keys=True).encode
_STATE_JSON = json.JSONEncoder(separators=(',', ':'), ensure_ascii=False).encode
# The state texts of the last OK reports stored, by (message, non-numeric values): a status
# has few states, and encoding one again was a tenth of what storing an OK report cost
# under bench_node's flood. Emptied when full.
_STATE_TEXTS: dict = {}
_STATE_TEXTS_MAX = 1024
_NUMBER_TYPES = (int, float)


@functools.cache
def _insert_sql(rows: int) -> str:
    return _INSERT_OBSERVATIONS + ', '.join([_ROW] * rows)


def insert_observations(conn: sqlite3.Connection, rows: list) -> None:
    """
    Insert observation ``rows`` (9 values each, see Run.fresh_row) in order, in few statements.

    Full statements of ROWS_PER_INSERT rows (fewer where SQLite allows fewer variables),
    then the rest as statements of 128, 64, ... 1 rows: at most 8 more, and only 9 texts
    for sqlite3's statement cache.
    """
    if not rows:
        return
    variables = 999  # SQLite < 3.32 allowed 999; Python 3.11 reads the limit
    if sys.version_info >= (3, 11):
        variables = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    size = min(ROWS_PER_INSERT, variables // len(rows[0]))
    start, total = 0, len(rows)
    while start < total:
        while size > total - start:
            size //= 2
        stop = start + size
        conn.execute(_insert_sql(size), list(itertools.chain.from_iterable(rows[start:stop])))
        start = stop


@dataclasses.dataclass
class ValueRanges:
    """Numeric value ranges ``{key: [min, max]}`` of bad evidence and of OK reports."""

    bad: dict  # by signature
    bad_by_source: dict  # by source key
    ok: dict  # by source key


def collect_ranges(rows) -> ValueRanges:
    """Merge the ranges of (signature, source key, severity, ranges JSON) rows."""
    found = ValueRanges({}, {}, {})
    for signature, source_key, severity, text in rows:
        ranges = json.loads(text)
        if severity > 0:
            found.bad[signature] = merge_ranges(found.bad.get(signature, {}), ranges)
            found.bad_by_source[source_key] = merge_ranges(
                found.bad_by_source.get(source_key, {}), ranges)
        else:
            found.ok[source_key] = merge_ranges(found.ok.get(source_key, {}), ranges)
    return found


class Run:
    """One run: what is stored of it (``id``, ``start``, ``count``, ``ranges``) and since."""

    __slots__ = ('id', 'identity', 'source', 'signature', 'source_key', 'severity', 'payload',
                 'start', 'end', 'count', 'ranges', 'hour', 'fresh_start', 'fresh_count',
                 'fresh_ranges')

    def __init__(self, stamp: float, source: str, item, identity: tuple):
        self.id: Optional[int] = None
        self.identity = identity
        self.source = source
        self.signature = item.signature
        self.source_key = item.source_key
        self.severity = item.severity
        self.payload = item.payload
        self.start = self.end = self.fresh_start = stamp
        self.count = 0
        self.fresh_count = 0
        self.ranges: dict = {}
        self.fresh_ranges: dict = {}
        self.hour = stamp // RUN_SPAN_S

    def fresh_row(self) -> tuple:
        """Return the row of what is not yet stored: (stamp, source, ..., end, count, ranges)."""
        return (self.fresh_start, self.source, self.signature, self.source_key, self.severity,
                self.payload, self.end, self.fresh_count, ranges_text(self.fresh_ranges))

    def grown(self) -> tuple:
        """Return the UPDATE parameters of a stored run grown since: end, count, ranges, id."""
        return (self.end, self.count + self.fresh_count,
                ranges_text(merge_ranges(self.ranges, self.fresh_ranges)), self.id)


def ranges_text(ranges: dict) -> str:
    """
    Return ``{key: [min, max]}`` as the compact JSON stored in ``ranges`` ('' if empty).

    Written here for finite numbers (the text json gives: keys sorted and escaped, numbers
    as ``repr``), a third cheaper than the encoder for a row of a few ranges; anything else
    goes through the encoder.
    """
    if not ranges:
        return ''
    parts = []
    for key in sorted(ranges):
        low, high = ranges[key]
        if (type(key) is not str or type(low) not in _NUMBER_TYPES
                or type(high) not in _NUMBER_TYPES
                or not (math.isfinite(low) and math.isfinite(high))):
            return _RANGES_JSON(ranges)
        parts.append(f'{_json_string(key)}:[{low!r},{high!r}]')
    return '{' + ','.join(parts) + '}'


def merge_ranges(into: dict, ranges: dict) -> dict:
    """Return the ranges of ``into`` widened by ``ranges`` (a new dict)."""
    merged = {key: list(pair) for key, pair in into.items()}
    for key, (low, high) in ranges.items():
        pair = merged.get(key)
        if pair is None:
            merged[key] = [low, high]
        else:
            pair[0] = min(pair[0], low)
            pair[1] = max(pair[1], high)
    return merged


def _number(text: str) -> Optional[float]:
    if not text or text[0] not in _NUMERIC_START:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def identity_and_numbers(observation, item) -> tuple:
    """
    Return what must be equal for ``item`` to extend a run, and its numeric values.

    A diagnostic status's numeric values (``"4.6"``) are ranged, its other values are part
    of the identity; a telemetry threshold's numeric field value is ranged; a log's
    payload is its identity.
    """
    if isinstance(observation, DiagnosticObservation):
        words, numbers = [], {}
        for key, text in observation.values:
            value = _number(text)
            if value is None:
                words.append((key, text))
            else:
                numbers[key] = value
        return ((item.signature, item.severity, item.rule, observation.level,
                 observation.message, tuple(words)), numbers)
    if isinstance(observation, TelemetryObservation) and item.payload:
        payload = json.loads(item.payload)
        value = payload.get('value')
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (item.signature, item.severity, item.rule), {payload['field']: value}
    return (item.signature, item.severity, item.payload), {}


def renumbered(prepared: list, values, changed: list) -> Optional[list]:
    """
    Return ``prepared`` evidence of a status now with ``values``, if only numbers changed.

    ``prepared`` is (item, identity, numbers) of the status (EvidenceStore.prepare);
    ``values`` its values with those at the ``changed`` indices (keys kept) replaced. When
    each of those was a number and is another (short ASCII text, storable as it is) and
    its key is the only one of its name, identity and classification hold (unless the
    rules read values: the caller's to check) and only the numbers change. None
    otherwise: prepare it whole.
    """
    result = []
    for item, identity, numbers in prepared:
        words = identity[-1]
        if len(numbers) + len(words) != len(values):
            return None  # a numeric key twice: which one counts is identity_and_numbers'
        fresh = dict(numbers)
        for index in changed:
            key, text = values[index]
            # The key once, with a number: the value at ``index`` was that number.
            if key not in numbers or (words and any(word[0] == key for word in words)):
                return None
            value = _number(text)
            if value is None or len(text) > MAX_STRING_CHARS or not text.isascii():
                return None
            fresh[key] = value
        result.append((item, identity, fresh))
    return result


def _state(observation) -> tuple:
    """Return a status's state: message and non-numeric values, numbers in them masked."""
    return (message_pattern(observation.message),
            tuple((key, message_pattern(text)) for key, text in observation.values
                  if _number(text) is None))


def state_rows(db, since: float) -> list:
    """
    Return the reports since ``since`` of every status with an OK report carrying its state.

    ``(source key, stamp, end, severity, payload)`` in time order per source key, for
    ``robot_memory.dream.cooccurrence.ok_states``.
    """
    # The statuses first: with none (raw evidence, no OK state) the second scan is spared.
    keys = [row[0] for row in db.execute(
        "SELECT DISTINCT source_key FROM observations WHERE severity = 0 AND payload != '' "
        'AND stamp >= ?', (since,))]
    if not keys:
        return []
    return db.execute(
        'SELECT source_key, stamp, coalesce(end_stamp, stamp), severity, payload '
        "FROM observations WHERE source = 'diagnostic' AND stamp >= ? AND source_key IN ("
        'SELECT value FROM json_each(?)) ORDER BY source_key, stamp, id',
        (since, json.dumps(keys))).fetchall()


class RunBook:
    """The open run of each source key, and the runs holding observations not yet stored."""

    def __init__(self, gap_s: Optional[float] = RUN_GAP_S):
        self.gap_s = -1.0 if gap_s is None else gap_s  # None: every piece its own row
        self.open: dict = {}
        self.dirty: list[Run] = []
        self.pending = 0  # observations not yet stored
        self.states: dict = {}  # source key -> the state of its last stored OK report

    def sizes(self) -> dict:
        """Return how many source keys the books follow (each at most MAX_OPEN_RUNS)."""
        return {'open_runs': len(self.open), 'state_book': len(self.states),
                'unstored_runs': len(self.dirty)}

    def changes_state(self, source_key: str, identity: tuple, stamp: float,
                      observation) -> bool:
        """Whether an OK report changes its status's stored state, held STATE_MIN_S."""
        run = self.open.get(source_key)
        return (run is not None and run.identity != identity and stamp - run.end >= STATE_MIN_S
                and isinstance(observation, DiagnosticObservation)
                and _state(observation) != self.states.get(source_key))

    def with_state(self, observation, item):
        """Return a stored OK status's evidence with its state (message, non-numeric values)."""
        if not isinstance(observation, DiagnosticObservation) or item.payload:
            return item
        if len(self.states) >= MAX_OPEN_RUNS:
            self.states.clear()
        self.states[item.source_key] = _state(observation)
        words = tuple((key, text) for key, text in observation.values if _number(text) is None)
        key = (observation.message, words)
        text = _STATE_TEXTS.get(key)
        if text is None:
            state = {'message': observation.message, 'values': dict(words)} if words else \
                {'message': observation.message}
            text = _STATE_JSON(state)
            if len(_STATE_TEXTS) >= _STATE_TEXTS_MAX:
                _STATE_TEXTS.clear()
            _STATE_TEXTS[key] = text
        return item._replace(payload=text)

    def take(self, stamp: float, source: str, item, identity: tuple, numbers: dict) -> None:
        """Add one piece of evidence: grow its source key's open run or start a new one."""
        run = self.open.get(item.source_key)
        if (run is None or run.identity != identity or not run.end <= stamp <= run.end + self.gap_s
                or stamp // RUN_SPAN_S != run.hour):
            if len(self.open) >= MAX_OPEN_RUNS:
                self.open.clear()
            run = self.open[item.source_key] = Run(stamp, source, item, identity)
        if not run.fresh_count:
            run.fresh_start = stamp
            self.dirty.append(run)
        run.end = stamp
        run.fresh_count += 1
        self.pending += 1
        ranges = run.fresh_ranges
        for key, value in numbers.items():
            pair = ranges.get(key)
            if pair is None:
                ranges[key] = [value, value]
            elif value < pair[0]:
                pair[0] = value
            elif value > pair[1]:
                pair[1] = value

    def plan(self, sealed_id: int) -> tuple:
        """
        Return (runs to insert, UPDATE parameters) for a flush; nothing changes yet.

        A stored run no dream has taken (id above ``sealed_id``) grows in place; one a dream
        has taken keeps what it had, and what came since becomes a new row.
        """
        inserts, updates = [], []
        for run in self.dirty:
            if run.id is not None and run.id > sealed_id:
                updates.append(run.grown())
            else:
                inserts.append(run)
        return inserts, updates

    def stored(self, inserts: list, first_id: int) -> None:
        """Record a committed flush: ``inserts`` got ids from ``first_id`` on, in order."""
        for offset, run in enumerate(inserts):
            run.id = first_id + offset
            run.start, run.count, run.ranges = run.fresh_start, 0, {}
        for run in self.dirty:
            run.count += run.fresh_count
            # A run just inserted has no ranges stored before: its fresh ones are its own
            # (no copy; take() gives it a new dict from now on).
            run.ranges = (merge_ranges(run.ranges, run.fresh_ranges) if run.ranges
                          else run.fresh_ranges)
            run.fresh_count, run.fresh_ranges = 0, {}
        self.dirty, self.pending = [], 0

    def drop_oldest(self, keep: int) -> int:
        """Forget all but the newest ``keep`` runs waiting to be stored; returns evidence lost."""
        lost = 0
        for run in self.dirty[:-keep] if keep else self.dirty:
            lost += run.fresh_count
            run.fresh_count, run.fresh_ranges = 0, {}
            if self.open.get(run.source_key) is run:
                del self.open[run.source_key]  # what is stored of it never grows again
        self.dirty = self.dirty[-keep:] if keep else []
        self.pending -= lost
        return lost
