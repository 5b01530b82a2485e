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
What replays took: by recording and topic (``replay_taken``), and by message (``replay_seen``).

A message is known by its :func:`content_key`, whichever recording it came in: one another
recording gave already is the same message, not taken twice; one its own recording gave to
an earlier replay was taken then (so a replay cut short resumes, and replaying again adds
nothing); a message a recording repeats is taken each time (``replay_seen.times``). Kept by
``robot_memory.bags.replay`` in the transaction that writes the evidence.
"""

import datetime as dt
from typing import Optional
import zlib

from robot_memory.bags import read
from robot_memory.common.timeutil import format_iso

OWN = 'taken by an earlier replay of the same recording'
OTHER = 'the same message (topic, source and stamp) came in another recording already taken'
LEGACY = ('recorded in the hours of another recording, taken before replays kept what each '
          'message was')
_SIGNED = 1 << 31  # tags are stored as signed 32-bit integers: 4 bytes in SQLite
TAG_BYTES = 512  # the head of a message its content key reads (see content_key)


def content_key(bag: read.Bag, raw, ns: int, offset: Optional[int], topic_crc: int) -> tuple:
    """
    Return what a message is, (stamp ns, tag), whichever recording it came in.

    The stamp is the message's own (its header's, its log record's: ``offset`` from
    ``Bag.stamp_offset``), else its recorded time ``ns``; the tag a CRC-32 of its topic
    (``topic_crc``: of the topic the node takes it on), its length and its first
    ``TAG_BYTES`` bytes, which hold its source (a status's name and hardware id, a log
    record's node). Why not all its bytes: a robot's DiagnosticArray is some 5 kB, and the
    CRC of all of them cost 3 % of replay's speed; two messages of a topic with one stamp
    to the nanosecond, one length and one source are one message.
    """
    own = bag.own_stamp(raw, offset)
    tag = zlib.crc32(raw[:TAG_BYTES], topic_crc ^ len(raw))
    return (ns if own is None else own, tag - 2 * _SIGNED if tag >= _SIGNED else tag)


class Progress:
    """
    What was taken: by recording and topic (``replay_taken``) and by message (``replay_seen``).

    A message is known by its ``content_key``: one that another recording gave already is
    the same message, not taken twice; one its own recording gave to an earlier replay was
    taken then (so a replay cut short resumes, and replaying again adds nothing). Messages
    of other devices in the same hours are other messages, and taken.
    """

    def __init__(self, conn):
        self.conn = conn
        self.taken = {}  # (bag, topic) -> [first, last, at_last, messages], recorded ns
        self.legacy: dict = {}  # topic -> {bag: (first, last, at_last)}, before content keys
        self.robots = {}
        for bag, topic, first, last, at_last, messages, legacy_last, legacy_at in conn.execute(
                'SELECT bag, topic, first_ns, last_ns, at_last, messages, legacy_last_ns, '
                'legacy_at_last FROM replay_taken'):
            self.taken[(bag, topic)] = [first, last, at_last, messages]
            if legacy_last is not None:
                self.legacy.setdefault(topic, {})[bag] = (first, legacy_last, legacy_at)
        for bag, robot in conn.execute('SELECT bag, robot FROM replay_bags'):
            self.robots[bag] = robot
        self.numbers = dict(conn.execute('SELECT bag, rowid FROM replay_bags'))
        # The stamps stored keys span: a message outside it needs no look-up.
        self.span = list(conn.execute('SELECT min(stamp), max(stamp) FROM replay_seen').fetchone())
        # content key -> [bag, times, consumed] of the keys met since the last write: how
        # many times the bag gave it (taken), and how many of those this replay met
        self.pending: dict = {}
        self.run: Optional[int] = None  # this replay's replay_runs id, from its first write
        self._decided: Optional[tuple] = None  # (key, state) seen() found to take
        self.dirty: set = set()
        self.new_bags: dict = {}

    def seen(self, bag: str, topic: str, ns: int, ties: int, key: tuple) -> Optional[str]:
        """
        Why a message was taken before (None if it was not); ``ties``: earlier at ns.

        The same bytes twice in one recording are two messages: its n-th repeat in this
        replay is taken unless an earlier replay of the recording took n of them (a replay
        cut short, resumed). One that another recording gave is the same message.
        """
        if self.legacy:
            why = self._legacy(bag, topic, ns, ties)
            if why is not None:
                return why
        state = self.pending.get(key)
        if state is not None and state[0] != bag:
            return OTHER
        if state is None:
            low, high = self.span
            if low is None or not low <= key[0] <= high:
                self._decided = (key, [bag, 1, 1])
                return None
            rows = self.conn.execute('SELECT bag, times, run, consumed FROM replay_seen WHERE '
                                     'stamp = ? AND tag = ?', key).fetchall()
            mine = [row for row in rows if row[0] == self.numbers.get(bag)]
            if not mine:
                if rows:
                    return OTHER
                self._decided = (key, [bag, 1, 1])
                return None
            _, times, run, consumed = mine[0]
            state = [bag, times, consumed if run == self.run else 0]
        met = state[2] + 1  # this replay meets its n-th repeat
        if met <= state[1]:
            state[2] = met
            self.pending[key] = state  # remembered, so the next repeat is the n+1-th
            return OWN
        # taken only once take() says so: a message that cannot be read stays untaken, and
        # a later replay (a later version that reads it) takes it
        self._decided = (key, [bag, met, met])
        return None

    def _legacy(self, bag: str, topic: str, ns: int, ties: int) -> Optional[str]:
        """Return why, by what replays before content keys kept: a time span (or None)."""
        for other, (first, last, at_last) in self.legacy.get(topic, {}).items():
            if other == bag and (ns < last or (ns == last and ties < at_last)):
                return OWN
            if other != bag and first <= ns <= last:
                return LEGACY
        return None

    def take(self, bag: str, topic: str, ns: int, key: tuple) -> None:
        """Record one message taken (in any order of recorded time)."""
        state = self.taken.get((bag, topic))
        if state is None:
            self.taken[(bag, topic)] = [ns, ns, 1, 1]
        else:
            if ns > state[1]:
                state[1], state[2] = ns, 1
            elif ns == state[1]:
                state[2] += 1
            state[0] = min(state[0], ns)
            state[3] += 1
        decided = self._decided
        self.pending[key] = decided[1] if decided is not None and decided[0] == key \
            else [bag, 1, 1]
        self._decided = None
        self.dirty.add((bag, topic))

    def write(self, conn) -> None:
        """Store what changed since the previous flush; runs in its transaction."""
        for bag, row in self.new_bags.items():
            conn.execute('INSERT OR IGNORE INTO replay_bags (bag, path, kind, robot, first_at) '
                         'VALUES (?, ?, ?, ?, ?)', (bag, *row))
        self.new_bags = {}
        numbers = self.numbers
        for bag in {state[0] for state in self.pending.values()} - numbers.keys():
            numbers[bag] = conn.execute('SELECT rowid FROM replay_bags WHERE bag = ?',
                                        (bag,)).fetchone()[0]
        if self.pending:
            if self.run is None:
                self.run = conn.execute('INSERT INTO replay_runs (started) VALUES (?)',
                                        (format_iso(dt.datetime.now(dt.timezone.utc)),)).lastrowid
            conn.executemany(
                'INSERT INTO replay_seen (stamp, tag, bag, times, run, consumed) VALUES '
                '(?, ?, ?, ?, ?, ?) ON CONFLICT (stamp, tag, bag) DO UPDATE SET times = '
                'excluded.times, run = excluded.run, consumed = excluded.consumed',
                [(stamp, tag, numbers[bag], times, self.run, consumed)
                 for (stamp, tag), (bag, times, consumed) in self.pending.items()])
            stamps = [stamp for stamp, _ in self.pending]
            low, high = self.span
            self.span = [min(stamps) if low is None else min(low, min(stamps)),
                         max(stamps) if high is None else max(high, max(stamps))]
            self.pending = {}
        for key in self.dirty:
            first, last, at_last, messages = self.taken[key]
            conn.execute('INSERT INTO replay_taken (bag, topic, first_ns, last_ns, at_last, '
                         'messages) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (bag, topic) DO '
                         'UPDATE SET first_ns = excluded.first_ns, last_ns = excluded.last_ns, '
                         'at_last = excluded.at_last, messages = excluded.messages',
                         (*key, first, last, at_last, messages))
        self.dirty = set()
