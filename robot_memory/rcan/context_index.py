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
The context block's index: each section in decay-invariant order (split from ``context``).

A :class:`ContextIndex` is built once per loaded document (``document_cache``); with it a
block costs O(log n + what is shown) instead of decaying and sorting every entry. How it
stays exactly the scan's block is told in ``context``'s module doc.
"""

import array
import bisect
import datetime as dt
import heapq
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.context_line import ContextLine
from robot_memory.rcan.context_line import format_line
from robot_memory.rcan.lifecycle import DEFAULTS
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.schema import MemoryDocument

if TYPE_CHECKING:  # pydantic, imported only where a config is validated
    from robot_memory.rcan.lifecycle import AnyConfig


def below_key(confidence, stamp, entry, order):
    """Return the sort key of an entry below the threshold: the highest first, then newest."""
    return (-confidence, -stamp, entry.id, order)


def in_rank_order(scored, now) -> list:
    """(confidence, entry, document order) as (confidence, entry) in rank order."""
    scored.sort(key=lambda item: (-item[0], -(item[1].last_reinforced or now).timestamp(),
                                  item[1].id, item[2]))
    return [(confidence, entry) for confidence, entry, _ in scored]


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
# |K − r·D(now) − (c − r·days)| plus the 1e-9 rounding of effective_confidence stays below
# 1e-8 for any datetime (|D| < 3e6 days, r ≤ 1); the slack is a hundred times that.
_SLACK = 1e-6
# More entries stamped at or after now than this (a clock that went back) and the section
# is scanned instead: each of them is placed by its stored confidence, one by one.
_MAX_UNDECAYED = 256


def _days_since_epoch(moment: dt.datetime) -> float:
    return (moment - _EPOCH).total_seconds() / 86400.0


class _SectionIndex:
    """One section (own entries or one peer block) in descending order of ``K``."""

    def __init__(self, entries, rate: float, reference: Optional[dt.datetime]):
        rows = []
        self.usable = True
        for order, entry in enumerate(entries):
            if entry.type == 'resolved':
                continue
            since = entry.last_reinforced or reference
            if since is None:  # no clock to decay from: not an entry this index can place
                self.usable = False
                return
            key = entry.confidence + rate * _days_since_epoch(since)
            rows.append((-key, order, entry, since))
        rows.sort(key=lambda row: row[0])
        self.rate = rate
        self.reference = reference
        # Numbers in arrays (8 bytes each, not a Python object and a pointer): the index
        # of memory_node's 10,000-entry document holds 1 MB less.
        self.neg_keys = array.array('d', [row[0] for row in rows])
        self.orders = array.array('q', [row[1] for row in rows])
        self.entries = [row[2] for row in rows]
        # The tie-break of the scan, computed the same way: newest since first.
        self.stamps = array.array('d', [(row[3]).timestamp() for row in rows])
        by_since = sorted(range(len(rows)), key=lambda position: rows[position][3])
        self.since_sorted = [rows[position][3] for position in by_since]
        self.since_positions = array.array('q', by_since)
        self._weak: dict = {}

    def __len__(self) -> int:
        return len(self.entries)

    def plan(self, now: dt.datetime, config: 'AnyConfig', threshold: float):
        """
        (eligible count, walker, highest below) at ``now``; None when it must be scanned.

        The highest below ``threshold`` is (confidence, entry) or None.
        """
        if threshold <= 0.0:
            return None
        undecayed = self.since_positions[bisect.bisect_left(self.since_sorted, now):]
        if len(undecayed) > _MAX_UNDECAYED:
            return None
        offset = self.rate * _days_since_epoch(now)
        surely = bisect.bisect_right(self.neg_keys, -(threshold + _SLACK + offset))
        maybe = bisect.bisect_right(self.neg_keys, -(threshold - _SLACK + offset))
        skip = set(undecayed)
        reference = self.reference
        entries = self.entries
        eligible = surely - sum(1 for position in undecayed if position < surely)
        below = []
        for position in range(surely, maybe):
            if position in skip:
                continue
            confidence = effective_confidence(entries[position], now, config, reference)
            if confidence >= threshold:
                eligible += 1
            else:
                below.append((position, confidence))
        heap = []
        for position in undecayed:
            confidence = effective_confidence(entries[position], now, config, reference)
            if confidence >= threshold:
                eligible += 1
                heap.append(self._heap_item(position, confidence))
            else:
                below.append((position, confidence))
        # Past maybe every decaying entry is below: the highest is within float noise of the
        # first one's key, so the candidates are the few keys that close to it — unless that
        # is about 0, where the clamp ties every later entry (read them all then: rare, as
        # prune_min removes entries long before, and only for the tie-break).
        first = maybe
        while first < len(entries) and first in skip:
            first += 1
        if first < len(entries):
            floor = self.neg_keys[first] + 2 * _SLACK
            if -self.neg_keys[first] - offset <= 2 * _SLACK:
                floor = float('inf')
            position = first
            while position < len(entries) and self.neg_keys[position] <= floor:
                if position not in skip:
                    below.append((position, effective_confidence(entries[position], now, config,
                                                                 reference)))
                position += 1
        highest = None
        if below:
            position, confidence = min(below, key=lambda item: below_key(
                item[1], self.stamps[item[0]], entries[item[0]], self.orders[item[0]]))
            highest = (confidence, entries[position])
        heapq.heapify(heap)
        return eligible, _Walk(self, now, config, threshold, offset, maybe, skip, heap), highest

    def weak_recent(self, now: dt.datetime, config: 'AnyConfig', window) -> list:
        """
        Return (confidence, entry) of own entries under inject_min reinforced within ``window``.

        In rank order.
        """
        key = (config.inject_min, window)
        candidates = self._weak.get(key)
        if candidates is None:
            # Within the window an entry decays by at most rate × window: only those stored
            # below inject_min + that can be under inject_min there.
            ceiling = config.inject_min + self.rate * window.total_seconds() / 86400.0 + _SLACK
            positions = [position for position in self.since_positions
                         if self.entries[position].confidence < ceiling]
            candidates = ([self.entries[position].last_reinforced for position in positions],
                          positions)
            self._weak[key] = candidates
        stamps, positions = candidates
        recent = []
        for position in positions[bisect.bisect_left(stamps, now - window):]:
            entry = self.entries[position]
            confidence = effective_confidence(entry, now, config)
            if confidence < config.inject_min:
                recent.append((confidence, entry, self.orders[position]))
        return in_rank_order(recent, now)

    def _heap_item(self, position: int, confidence: float):
        entry = self.entries[position]
        return (-confidence, -self.stamps[position], entry.id, self.orders[position], position)


class _Walk:
    """The eligible entries of a section in the scan's exact order, lazily."""

    def __init__(self, section, now, config, threshold, offset, end, skip, heap):
        self.section = section
        self.now = now
        self.config = config
        self.threshold = threshold
        self.offset = offset
        self.end = end
        self.skip = skip
        self.heap = heap

    def lines(self, source: str):
        """Yield the section's ContextLines in order; stop reading when the caller stops."""
        section, heap, skip, end = self.section, self.heap, self.skip, self.end
        now, config, threshold = self.now, self.config, self.threshold
        reference, entries, neg_keys = section.reference, section.entries, section.neg_keys
        limit = self.offset - 2 * _SLACK
        position = 0
        while True:
            while position < end and position in skip:
                position += 1
            # Every unread entry decays to at most a + slack, with a its approximation: a
            # heap top above a + 2·slack is placed before all of them.
            if heap and (position >= end or heap[0][0] < neg_keys[position] + limit):
                item = heapq.heappop(heap)
                confidence = -item[0]
                entry = entries[item[4]]
                yield ContextLine(entry, confidence, format_line(entry.text, confidence, config),
                                  source)
                continue
            if position >= end:
                return
            confidence = effective_confidence(entries[position], now, config, reference)
            if confidence >= threshold:
                heapq.heappush(heap, section._heap_item(position, confidence))
            position += 1


class ContextIndex:
    """
    The sections of one document in decay-invariant order, for one decay rate.

    Build it once per loaded document (``DocumentCache.context_index`` does) and pass it
    to :func:`build_context`. The document must not change while the index is used.
    """

    def __init__(self, document: MemoryDocument, config: 'AnyConfig' = DEFAULTS):
        self.document = document
        self.rate = config.decay_per_day
        self.own = _SectionIndex(document.entries, self.rate, None)
        self.peers = [_SectionIndex(block.entries, self.rate, block.last_synced)
                      for block in document.peer_context or []]
        self._peer_count = len(document.peer_context or [])

    def serves(self, document: MemoryDocument, config: 'AnyConfig') -> bool:
        """Return True when this index was built from ``document`` for ``config``'s decay rate."""
        return (document is self.document and config.decay_per_day == self.rate
                and len(document.peer_context or []) == self._peer_count)
