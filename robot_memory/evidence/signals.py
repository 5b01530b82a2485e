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
Context signals: what the robot's numbers were, kept as compact summaries per interval.

A *signal* is a named number the robot reports over and over: a numeric field of a
telemetry message (``/cmd_vel linear.x``, ``/battery_state voltage``) or a numeric value
of a diagnostic status, OK reports included (``motors: Left Motor Temp (C)``). Names that
identify or count rather than measure (ids, serials, stamps, sequence numbers, ``count``,
``total``, covariances) are never signals; ``SignalRules`` (the ``signals:`` section of the
rules file) narrows them further and says which ones the robot controls.

``SignalBook`` sums every value into its interval of INTERVAL_S (min, max, sum, count) in
memory; the evidence store writes the book with each flush into ``signal_hours``: one row
per signal and hour holding the hour's 60 intervals as float32 min, max and mean and a
uint32 count (SLOT_BYTES each): at most 30 x 24 x ~1 kB a robot-day for 30 signals, at
any rate. ``read`` gives them back as ``Series`` for the dream (``dream.conditions``).
The same book is fed by the node, ``robot-memory ingest`` and ``replay``, since all three
store through ``EvidenceStore``.
"""

import array
import dataclasses
import fnmatch
import functools
import math
import re
import sqlite3
import struct
from typing import Iterable
from typing import Optional


INTERVAL_S = 60.0
SLOTS = 60  # intervals an hour
HOUR_S = INTERVAL_S * SLOTS
SLOT_BYTES = 16
MAX_SIGNALS = 256
MAX_NAME_CHARS = 160
MAX_ITEMS = 8  # items of a sequence field taken (joint efforts: the first eight joints)
_NOT_MEASURES = frozenset((
    'id', 'ids', 'serial', 'uuid', 'address', 'port', 'pid', 'since', 'total', 'stamp',
    'timestamp', 'time', 'date', 'count', 'seq', 'sequence', 'version', 'index', 'header',
    'frame', 'covariance', 'sec', 'nanosec', 'nsec', 'secs', 'nsecs', 'uptime', 'counter'))
_WORD = re.compile(r'[a-z0-9]+')
DEFAULT_CONTROLLABLE = ('*cmd_vel* linear.*', '*cmd_vel* angular.*', '*speed*', '*velocity*')
# Words and units for well-known signals, by glob on the lower-cased name.
LABELS = (
    ('*cmd_vel* linear.x', 'linear speed', 'm/s'),
    ('*cmd_vel* angular.z', 'turn rate', 'rad/s'),
    ('*odom* twist.twist.linear.x', 'speed', 'm/s'),
    ('*battery* voltage', 'battery voltage', 'V'),
    ('*battery* temperature', 'battery temperature', '°C'),
    ('*battery* percentage', 'battery charge', ''),
    ('*payload*', 'payload', 'kg'),
)


def keeps(rules, name: str) -> bool:
    """Whether ``name`` is kept as a signal under ``rules`` (``include`` / ``exclude`` globs)."""
    name = name.lower()
    return (any(fnmatch.fnmatchcase(name, glob.lower()) for glob in rules.include)
            and not any(fnmatch.fnmatchcase(name, glob.lower()) for glob in rules.exclude))


def is_controllable(rules, name: str) -> bool:
    """Whether the robot controls the signal ``name`` under ``rules`` (its ``controllable``)."""
    name = name.lower()
    return any(fnmatch.fnmatchcase(name, glob.lower()) for glob in rules.controllable)


@dataclasses.dataclass(frozen=True)
class SignalRules:
    """
    Which numbers are signals, and which the robot controls: the defaults of a rules file.

    Globs are matched against the lower-cased signal name (``/cmd_vel linear.x``,
    ``motors: left motor temp (c)``). ``include`` / ``exclude`` choose the signals kept;
    ``controllable`` the ones the robot decides (advice states their safe side). A rules
    file's ``signals:`` section is validated as ``evidence.rules_file.SignalSection``, which
    answers the same two questions; this plain form keeps pydantic out of the evidence store.
    """

    include: tuple = ('*',)
    exclude: tuple = ()
    controllable: tuple = DEFAULT_CONTROLLABLE

    def keeps(self, name: str) -> bool:
        """Whether ``name`` is kept as a signal."""
        return keeps(self, name)

    def is_controllable(self, name: str) -> bool:
        """Whether the robot controls the signal ``name`` (advice may state its safe side)."""
        return is_controllable(self, name)


def label(name: str) -> tuple:
    """Return (words, unit) for a signal: ``('linear speed', 'm/s')``, else (name, '')."""
    lower = name.lower()
    for glob, words, unit in LABELS:
        if fnmatch.fnmatchcase(lower, glob):
            return words, unit
    return name, ''


@functools.lru_cache(maxsize=4096)  # every key of every message asks
def is_measure(key: str) -> bool:
    """Whether a value's key measures something (not an id, a counter, a stamp)."""
    return not any(word in _NOT_MEASURES for word in _WORD.findall(key.lower()))


def _number(value) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
    return number if math.isfinite(number) else None


def leaves(fields, prefix: str = '', depth: int = 0):
    """Yield (path, number) for the numeric fields of a telemetry message's ``fields``."""
    if depth > 8:
        return
    items: Iterable[tuple]
    if isinstance(fields, dict):
        items = fields.items()
    elif isinstance(fields, (list, tuple)):
        items = ((f'{index}', value) for index, value in enumerate(fields[:MAX_ITEMS]))
    else:
        return
    for key, value in items:
        key = str(key)
        if not is_measure(key):
            continue
        path = f'{prefix}.{key}' if prefix and not key.isdigit() else (
            f'{prefix}[{key}]' if prefix else key)
        if isinstance(value, (dict, list, tuple)):
            yield from leaves(value, path, depth + 1)
        else:
            number = _number(value)
            if number is not None:
                yield path, number


@dataclasses.dataclass
class Series:
    """One signal's intervals in time order: start (UNIX s), min, max, mean, count."""

    name: str
    starts: array.array
    mins: array.array
    maxs: array.array
    means: array.array
    counts: array.array


class SignalBook:
    """Values summed into their intervals in memory, until the store's next flush."""

    def __init__(self, rules=None):
        self.rules = rules or SignalRules()
        self.buckets: dict = {}  # (name, interval index) -> [min, max, sum, count]
        self.names: dict = {}  # name -> kept (bool), cached
        self.dropped_names = 0

    def _kept(self, name: str) -> bool:
        kept = self.names.get(name)
        if kept is None:
            if len(self.names) >= MAX_SIGNALS * 4:
                return False
            kept = (len(name) <= MAX_NAME_CHARS and self.rules.keeps(name)
                    and sum(1 for value in self.names.values() if value) < MAX_SIGNALS)
            if not kept and len(name) <= MAX_NAME_CHARS and self.rules.keeps(name):
                self.dropped_names += 1
            self.names[name] = kept
        return kept

    def add(self, stamp: float, name: str, value: float) -> None:
        """Sum one value of signal ``name`` at ``stamp`` into its interval."""
        if not self._kept(name):
            return
        key = (name, int(stamp // INTERVAL_S))
        bucket = self.buckets.get(key)
        if bucket is None:
            self.buckets[key] = [value, value, value, 1]
        else:
            if value < bucket[0]:
                bucket[0] = value
            elif value > bucket[1]:
                bucket[1] = value
            bucket[2] += value
            bucket[3] += 1

    def take_status(self, stamp: float, status_name: str, numbers: dict) -> None:
        """Sum a diagnostic status's numeric values (``{key: value}``)."""
        for key, value in numbers.items():
            if is_measure(key):
                self.add(stamp, f'{status_name}: {key}', value)

    def take_telemetry(self, stamp: float, topic: str, fields) -> None:
        """Sum the numeric fields of a telemetry message."""
        for path, value in leaves(fields):
            self.add(stamp, f'{topic} {path}', value)

    def grouped(self) -> dict:
        """Return the buckets as ``{(name, hour): {slot: [min, max, sum, count]}}``."""
        found: dict = {}
        for (name, index), bucket in self.buckets.items():
            hour, slot = divmod(index, SLOTS)
            found.setdefault((name, hour), {})[slot] = bucket
        return found

    def clear(self) -> None:
        """Forget the buckets (once written)."""
        self.buckets = {}


_EMPTY = struct.pack(f'<{SLOTS}f{SLOTS}f{SLOTS}f{SLOTS}I', *([0.0] * SLOTS * 3), *([0] * SLOTS))


def _unpack(blob: bytes) -> tuple:
    if len(blob) != SLOTS * SLOT_BYTES:
        blob = _EMPTY
    floats = array.array('f')
    floats.frombytes(blob[:SLOTS * 12])
    counts = array.array('I')
    counts.frombytes(blob[SLOTS * 12:])
    return floats[:SLOTS], floats[SLOTS:2 * SLOTS], floats[2 * SLOTS:], counts


def _merge(blob: Optional[bytes], slots: dict) -> bytes:
    mins, maxs, means, counts = _unpack(blob or _EMPTY)
    for slot, (low, high, total, count) in slots.items():
        old = counts[slot]
        if old:
            low, high = min(low, mins[slot]), max(high, maxs[slot])
            total += means[slot] * old
        count = min(old + count, 0xFFFFFFFF)
        mins[slot], maxs[slot], means[slot], counts[slot] = low, high, total / count, count
    return mins.tobytes() + maxs.tobytes() + means.tobytes() + counts.tobytes()


def write(conn: sqlite3.Connection, grouped: dict) -> None:
    """Merge ``SignalBook.grouped()`` into ``signal_hours`` (inside the caller's transaction)."""
    rows = []
    for (name, hour), slots in grouped.items():
        row = conn.execute('SELECT data FROM signal_hours WHERE hour = ? AND name = ?',
                           (hour, name)).fetchone()
        rows.append((name, hour, _merge(row[0] if row else None, slots)))
    conn.executemany('INSERT OR REPLACE INTO signal_hours (name, hour, data) VALUES (?, ?, ?)',
                     rows)


def forget_before(conn: sqlite3.Connection, cutoff: float) -> int:
    """Delete the hours that ended before ``cutoff`` (UNIX s); returns how many."""
    return conn.execute('DELETE FROM signal_hours WHERE hour < ?',
                        (int(cutoff // HOUR_S),)).rowcount


def read(conn: sqlite3.Connection, since: float, until: float) -> dict:
    """Return ``{name: Series}`` of the intervals from ``since`` to ``until`` (UNIX s)."""
    found: dict = {}
    rows = conn.execute('SELECT name, hour, data FROM signal_hours WHERE hour >= ? AND '
                        'hour <= ? ORDER BY name, hour',
                        (int(since // HOUR_S), int(until // HOUR_S)))
    for name, hour, data in rows:
        series = found.get(name)
        if series is None:
            series = found[name] = Series(name, array.array('d'), array.array('f'),
                                          array.array('f'), array.array('f'),
                                          array.array('I'))
        mins, maxs, means, counts = _unpack(data)
        base = hour * HOUR_S
        low = max(0, math.ceil((since - base) / INTERVAL_S))
        high = min(SLOTS, math.floor((until - base) / INTERVAL_S) + 1)
        if low == 0 and high == SLOTS and all(counts):  # a full hour: copied whole, in C
            series.starts.extend([base + slot * INTERVAL_S for slot in range(SLOTS)])
            series.mins.extend(mins)
            series.maxs.extend(maxs)
            series.means.extend(means)
            series.counts.extend(counts)
            continue
        for slot in range(low, high):
            if counts[slot]:
                series.starts.append(base + slot * INTERVAL_S)
                series.mins.append(mins[slot])
                series.maxs.append(maxs[slot])
                series.means.append(means[slot])
                series.counts.append(counts[slot])
    return found
