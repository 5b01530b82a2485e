"""The context block handed to the robot's LLM brain (RCAN §5).

Own entries first, then one labelled section per peer; each line is
``<band> [NN%] text`` with decay evaluated at ``now``; ``resolved`` entries and
entries below the injection threshold never appear; the block is cut to a token
budget (tokens estimated as UTF-8 bytes / 4, rounded up, which over-counts emoji
and symbols rather than under-counting them).

Two ways to the same block. Without an index every call decays and sorts every entry
(O(n log n)). With a :class:`ContextIndex` (built once per file load, see
``document_cache``) a call costs O(log n + what is shown): all entries of a section share
one decay rate ``r``, so ``c − r × days(since, now)`` is ``K − r × D(now)`` with the
time-invariant key ``K = c + r × D(since)`` (``D`` = days since the Unix epoch), and the
order by ``K`` is the order by effective confidence up to float noise. The index walks in
``K`` order and settles every placement with the exact formula of
``lifecycle.effective_confidence``: candidates within a slack far above the noise are
ordered exactly, entries stamped at or after ``now`` (no decay: their confidence counts as
it is, whatever their ``K``) are taken apart, and a threshold of 0 (where the clamp at 0
would tie the decayed-away entries) falls back to the scan. The result is the scan's
block exactly, which ``test/test_context_index.py`` checks on random documents.
"""

import bisect
import dataclasses
import datetime as dt
import heapq
from typing import Optional

from robot_memory.lifecycle import DEFAULT_CONFIG
from robot_memory.lifecycle import LifecycleConfig
from robot_memory.lifecycle import band
from robot_memory.lifecycle import effective_confidence
from robot_memory.schema import MemoryDocument
from robot_memory.timeutil import format_iso
from robot_memory.timeutil import UTC


def estimate_tokens(text: str) -> int:
    """A conservative token estimate: UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode('utf-8')) // 4)


def percent(confidence: float) -> int:
    """Confidence as a whole percentage, rounded half up (0.575 is 58%, 0.285 is 29%)."""
    # Rounding to 1e-6 first removes float noise: 0.575 * 100 is 57.49999999999999.
    return int(round(confidence * 100, 6) + 0.5)


@dataclasses.dataclass(frozen=True)
class ContextLine:
    """One injected entry: the entry, its effective confidence and its formatted line."""

    entry: object
    effective_confidence: float
    line: str
    source_rrn: str = ''


@dataclasses.dataclass
class ContextBlock:
    """The block's text plus the entries it shows, for services and the CLI."""

    rrn: str
    at: dt.datetime
    text: str
    entries: list
    peer_entries: list
    omitted: int = 0
    token_estimate: int = 0


def format_line(text: str, confidence: float, config: LifecycleConfig = DEFAULT_CONFIG) -> str:
    """``🔴 [92%] text`` for one entry."""
    return f'{band(confidence, config)} [{percent(confidence)}%] {text}'


def _ranked(entries, now, config, threshold, reference=None, source=''):
    ranked = []
    for entry in entries:
        if entry.type == 'resolved':
            continue
        confidence = effective_confidence(entry, now, config, reference)
        if confidence < threshold:
            continue
        ranked.append(ContextLine(entry, confidence, format_line(entry.text, confidence, config),
                                  source))
    ranked.sort(key=lambda item: (-item.effective_confidence,
                                  -(item.entry.last_reinforced or reference or now).timestamp(),
                                  item.entry.id))
    return ranked


def peer_header(rrn: str, last_synced: dt.datetime) -> str:
    """The label of a peer's section: it is the peer's experience, not this robot's."""
    return f'Reported by peer {rrn} (last synced {format_iso(last_synced)}; not verified here):'


def build_context(document: MemoryDocument, now: dt.datetime,
                  config: LifecycleConfig = DEFAULT_CONFIG,
                  token_budget: Optional[int] = None, include_peers: bool = True,
                  min_confidence: Optional[float] = None,
                  index: Optional['ContextIndex'] = None) -> ContextBlock:
    """Build the emoji-banded block for ``document`` at ``now`` within ``token_budget``.

    ``index`` (a :class:`ContextIndex` of this very document at this decay rate) makes the
    call O(log n + shown) instead of O(n log n); the block is the same either way. An
    index of another document or rate is ignored.
    """
    if index is not None and index.serves(document, config):
        return _build_indexed(document, now, config, token_budget, include_peers,
                              min_confidence, index)
    return build_context_scan(document, now, config, token_budget, include_peers,
                              min_confidence)


def build_context_scan(document: MemoryDocument, now: dt.datetime,
                       config: LifecycleConfig = DEFAULT_CONFIG,
                       token_budget: Optional[int] = None, include_peers: bool = True,
                       min_confidence: Optional[float] = None) -> ContextBlock:
    """The reference block: decay, filter and sort every entry, then fill the budget."""
    budget = config.token_budget if not token_budget else token_budget
    threshold = config.inject_min if min_confidence is None else max(config.inject_min,
                                                                      min_confidence)
    lines, shown, shown_peers = [], [], []
    used, omitted = 0, 0

    def take(text):
        nonlocal used
        cost = estimate_tokens(text) + (1 if lines else 0)
        if used + cost > budget:
            return False
        lines.append(text)
        used += cost
        return True

    for item in _ranked(document.entries, now, config, threshold):
        if take(item.line):
            shown.append(item)
        else:
            omitted += 1
    if include_peers:
        for block in document.peer_context or []:
            ranked = _ranked(block.entries, now, config, threshold, block.last_synced, block.rrn)
            if not ranked:
                continue
            header = peer_header(block.rrn, block.last_synced)
            separator = '' if not lines else '\n'
            if not take(separator + header):
                omitted += len(ranked)
                continue
            added = 0
            for item in ranked:
                if take(item.line):
                    shown_peers.append(item)
                    added += 1
                else:
                    omitted += 1
            if not added:
                lines.pop()
                used -= estimate_tokens(separator + header) + (1 if lines else 0)
    text = '\n'.join(lines)
    return ContextBlock(document.rrn, now, text, shown, shown_peers, omitted, estimate_tokens(text))


# ---------------------------------------------------------------------------- indexed path

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
# |K − r·D(now) − (c − r·days)| plus the 1e-9 rounding of effective_confidence stays below
# 1e-8 for any datetime (|D| < 3e6 days, r ≤ 1); the slack is a hundred times that.
_SLACK = 1e-6
# Every line is at least this many bytes beyond its text: a band emoji (4 bytes for each
# of 🔴 🟡 🟢), ' [', one digit, '%] '.
_LINE_BYTES_BEYOND_TEXT = 10
_BLOCK = 64
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
            text_bytes = len(entry.text.encode('utf-8'))
            rows.append((-key, order, entry, since, text_bytes))
        rows.sort(key=lambda row: row[0])
        self.rate = rate
        self.reference = reference
        self.neg_keys = [row[0] for row in rows]
        self.orders = [row[1] for row in rows]
        self.entries = [row[2] for row in rows]
        # The tie-break of the scan, computed the same way: newest since first.
        self.stamps = [(row[3]).timestamp() for row in rows]
        self.min_tokens = [-(-(row[4] + _LINE_BYTES_BEYOND_TEXT) // 4) for row in rows]
        self.block_min = [min(self.min_tokens[start:start + _BLOCK])
                          for start in range(0, len(rows), _BLOCK)]
        by_since = sorted(range(len(rows)), key=lambda position: rows[position][3])
        self.since_sorted = [rows[position][3] for position in by_since]
        self.since_positions = by_since

    def __len__(self) -> int:
        return len(self.entries)

    def _next_fitting(self, position: int, room: int, end: int) -> int:
        """The first position in [position, end) whose shortest line could fit ``room``."""
        min_tokens, block_min = self.min_tokens, self.block_min
        while position < end:
            if position % _BLOCK == 0 and block_min[position // _BLOCK] > room:
                position += _BLOCK
                continue
            if min_tokens[position] <= room:
                return position
            position += 1
        return end

    def plan(self, now: dt.datetime, config: LifecycleConfig, threshold: float):
        """(eligible count, walker) at ``now``; None when this section must be scanned."""
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
        for position in range(surely, maybe):
            if position not in skip and effective_confidence(
                    entries[position], now, config, reference) >= threshold:
                eligible += 1
        heap = []
        for position in undecayed:
            confidence = effective_confidence(entries[position], now, config, reference)
            if confidence >= threshold:
                eligible += 1
                heap.append(self._heap_item(position, confidence))
        heapq.heapify(heap)
        return eligible, _Walk(self, now, config, threshold, offset, maybe, skip, heap)

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

    def run(self, take, room, source: str) -> list:
        """Offer lines to ``take`` in order; entries whose shortest line exceeds ``room()``
        are passed over unread (``take`` would refuse them: the room only shrinks)."""
        section, heap, skip, end = self.section, self.heap, self.skip, self.end
        now, config, threshold = self.now, self.config, self.threshold
        reference, entries, neg_keys = section.reference, section.entries, section.neg_keys
        limit = self.offset - 2 * _SLACK
        shown = []
        position = 0
        while True:
            position = section._next_fitting(position, room(), end)
            if position < end and position in skip:
                position += 1
                continue
            # Every unread entry that could still fit decays to at most a + slack, with a
            # its approximation: a heap top above a + 2·slack is placed before all of them.
            if heap and (position >= end or heap[0][0] < neg_keys[position] + limit):
                item = heapq.heappop(heap)
                confidence = -item[0]
                entry = entries[item[4]]
                line = format_line(entry.text, confidence, config)
                if take(line):
                    shown.append(ContextLine(entry, confidence, line, source))
                continue
            if position >= end:
                return shown
            confidence = effective_confidence(entries[position], now, config, reference)
            if confidence >= threshold:
                heapq.heappush(heap, section._heap_item(position, confidence))
            position += 1


class ContextIndex:
    """The sections of one document in decay-invariant order, for one decay rate.

    Build it once per loaded document (``DocumentCache.context_index`` does) and pass it
    to :func:`build_context`. The document must not change while the index is used.
    """

    def __init__(self, document: MemoryDocument, config: LifecycleConfig = DEFAULT_CONFIG):
        self.document = document
        self.rate = config.decay_per_day
        self.own = _SectionIndex(document.entries, self.rate, None)
        self.peers = [_SectionIndex(block.entries, self.rate, block.last_synced)
                      for block in document.peer_context or []]
        self._peer_count = len(document.peer_context or [])

    def serves(self, document: MemoryDocument, config: LifecycleConfig) -> bool:
        """True when this index was built from ``document`` for ``config``'s decay rate."""
        return (document is self.document and config.decay_per_day == self.rate
                and len(document.peer_context or []) == self._peer_count)


def _build_indexed(document, now, config, token_budget, include_peers, min_confidence,
                   index: ContextIndex) -> ContextBlock:
    budget = config.token_budget if not token_budget else token_budget
    threshold = config.inject_min if min_confidence is None else max(config.inject_min,
                                                                      min_confidence)
    lines, shown, shown_peers = [], [], []
    used, omitted = 0, 0

    def take(text):
        nonlocal used
        cost = estimate_tokens(text) + (1 if lines else 0)
        if used + cost > budget:
            return False
        lines.append(text)
        used += cost
        return True

    def room():
        return budget - used - (1 if lines else 0)

    def section_plan(section, entries, reference, source):
        plan = section.plan(now, config, threshold) if section.usable else None
        if plan is not None:
            return plan[0], (lambda: plan[1].run(take, room, source))
        ranked = _ranked(entries, now, config, threshold, reference, source)

        def walk():
            return [item for item in ranked if take(item.line)]
        return len(ranked), walk

    eligible, walk = section_plan(index.own, document.entries, None, '')
    shown = walk()
    omitted += eligible - len(shown)
    if include_peers:
        for block, section in zip(document.peer_context or [], index.peers):
            eligible, walk = section_plan(section, block.entries, block.last_synced, block.rrn)
            if not eligible:
                continue
            header = peer_header(block.rrn, block.last_synced)
            separator = '' if not lines else '\n'
            if not take(separator + header):
                omitted += eligible
                continue
            added = walk()
            shown_peers.extend(added)
            omitted += eligible - len(added)
            if not added:
                lines.pop()
                used -= estimate_tokens(separator + header) + (1 if lines else 0)
    text = '\n'.join(lines)
    return ContextBlock(document.rrn, now, text, shown, shown_peers, omitted, estimate_tokens(text))
