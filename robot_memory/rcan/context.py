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

r"""
The context block handed to the robot's LLM brain (RCAN §5).

Own entries first (faults), then a labelled section of this robot's weak recent entries
(below the injection threshold, reinforced within ``recent_hours``), then, labelled, the
conditions a dream labelled routine or constant, so they never crowd a fault out (one about
the status of a fault shown comes before the weak recent ones), then one labelled section per
peer; each line is ``<band> [NN%] text`` with decay evaluated at ``now``; ``resolved``
entries never appear. The block is cut to a token budget (tokens estimated as UTF-8 bytes
/ 4, rounded up, which over-counts emoji and symbols rather than under-counting them) and
keeps the ranking (RCAN §4.4): what is shown of each section is a prefix of it, and the
first line that does not fit is cut with an ellipsis or ends the block — a lower entry
never takes the place of a higher one; its last line names what the budget left out
(``context_fill``), and :func:`summary` how many are below the threshold, and the highest.

Text reaches the brain and terminals neutralised (:func:`neutralise`): control and
bidirectional-override characters are shown as ``\uXXXX`` escapes, the file keeps them.

Two ways to the same block (the index in ``context_index``, the line in ``context_line``).
Without an index every call decays and sorts every entry
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
block exactly, which ``test/rcan/test_context_index.py`` checks on random documents. The count
below the threshold is what the section holds less what is eligible; the highest below is
among the few keys within the slack of the first key past the threshold (all of them only
when that is about 0, where the clamp ties them); the weak-recent section reads only the
entries reinforced within ``recent_hours`` whose stored confidence could be under the
threshold there, and only when the own entries left room for it.
"""

import dataclasses
import datetime as dt
import operator
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.common.timeutil import format_iso
from robot_memory.rcan import relevance
from robot_memory.rcan import untrusted
from robot_memory.rcan.context_fill import CONDITIONS  # noqa: F401 - the public names
from robot_memory.rcan.context_fill import conditions_explaining
from robot_memory.rcan.context_fill import CONDITIONS_HEADER
from robot_memory.rcan.context_fill import estimate_tokens
from robot_memory.rcan.context_fill import faults_first
from robot_memory.rcan.context_fill import Filler
from robot_memory.rcan.context_fill import is_condition  # noqa: F401
from robot_memory.rcan.context_fill import left_out
from robot_memory.rcan.context_fill import without
from robot_memory.rcan.context_index import below_key
from robot_memory.rcan.context_index import ContextIndex
from robot_memory.rcan.context_index import in_rank_order
from robot_memory.rcan.context_line import ContextLine
from robot_memory.rcan.context_line import format_line
from robot_memory.rcan.context_line import percent
from robot_memory.rcan.context_line import plural
from robot_memory.rcan.context_line import threshold_percent
from robot_memory.rcan.lifecycle import DEFAULTS
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.untrusted import check_displayable  # noqa: F401 - the public names
from robot_memory.rcan.untrusted import is_displayable  # noqa: F401
from robot_memory.rcan.untrusted import neutralise

if TYPE_CHECKING:  # pydantic, imported only where a config is validated
    from robot_memory.rcan.lifecycle import AnyConfig
    from robot_memory.rcan.schema_models import MemoryEntry


@dataclasses.dataclass
class ContextBlock:
    """
    The block's text plus the entries it shows and what it leaves out, for services and CLI.

    ``omitted``: eligible entries (own, weak recent and peers) not shown for the budget,
    ``left_out`` those its last line names (``context_fill.left_out``). ``below_threshold``:
    own entries (not resolved) under the request's threshold, ``below_threshold_max`` and
    ``below_threshold_entry`` the highest of them (None when there is none). ``recent``: the
    weak recent entries shown in their labelled section. ``truncated``: the last entry line
    was cut. ``held``: the ContextLines the block reached but kept out because their text
    reads like an instruction to a model and no person released it (``untrusted.held``; a
    peer's is never released here). ``framing``: how the brain's prompt should frame the
    lines (``GetContext.framing``); a non-empty ``text`` opens with ``untrusted.HEADER``.
    ``relevant``: the ContextLines shown lifted to the front for the query (``relevance``).
    """

    rrn: str
    at: dt.datetime
    text: str
    entries: list
    peer_entries: list
    omitted: int = 0
    token_estimate: int = 0
    threshold: float = 0.0
    below_threshold: int = 0
    below_threshold_max: Optional[float] = None
    below_threshold_entry: Optional['MemoryEntry'] = None
    recent: list = dataclasses.field(default_factory=list)
    truncated: bool = False
    held: list = dataclasses.field(default_factory=list)
    framing: str = untrusted.FRAMING
    relevant: list = dataclasses.field(default_factory=list)
    left_out: list = dataclasses.field(default_factory=list)


def summary(block: ContextBlock) -> str:
    """One line for people and services: what the block shows and what it leaves out, and why."""
    parts = [f'{plural(len(block.entries), "entry", "entries")}, '
             f'{plural(len(block.peer_entries), "peer entry", "peer entries")}']
    if block.relevant:
        parts.append(f'{len(block.relevant)} chosen for the query ('
                     f'{", ".join(item.entry.id for item in block.relevant)})')
    if block.recent:
        parts.append(f'{plural(len(block.recent), "recent entry", "recent entries")} below '
                     'the threshold')
    parts.append(f'{block.omitted} omitted by the budget' + (
        ' (the last line cut)' if block.truncated else ''))
    if block.held:
        parts.append(held_summary(block.held))
    limit = threshold_percent(block.threshold)
    if block.below_threshold:
        entry = block.below_threshold_entry
        # Both are set with the count: the highest of the entries it counts.
        assert entry is not None and block.below_threshold_max is not None
        parts.append(f'{block.below_threshold} below the {limit} injection threshold, the '
                     f'highest {percent(block.below_threshold_max)}%: '
                     f'{_shown_text(entry)} ({entry.id})')
    else:
        parts.append(f'none below the {limit} injection threshold')
    return '; '.join(parts)


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars - 1] + '…'


def _shown_text(entry) -> str:
    """Return an own entry's text for the summary line; never text held from the brain."""
    if untrusted.held(entry.text, entry.extras):
        return '(text held for review: it reads like an instruction to a model)'
    return neutralise(_clip(entry.text, 80))


def held_summary(held: list) -> str:
    """Say which entries the block held back for their instruction-like text, and why."""
    own = [item.entry.id for item in held if not item.source_rrn]
    peers = sorted({item.source_rrn for item in held if item.source_rrn})
    said = []
    if own:
        said.append(f'{", ".join(own[:5])}{" and more" if len(own) > 5 else ""}: a person '
                    'releases one by approving its proposal (robot-memory proposals)')
    if peers:
        said.append(f'{len(held) - len(own)} of peer {", ".join(peers)} (never released '
                    'here)')
    return (f'{plural(len(held), "entry", "entries")} held from the brain, their text reads '
            f'like an instruction to a model: {"; ".join(said)}')


def _released(items, held: list):
    """Yield the ContextLines whose text may reach the brain; collect the others in held."""
    for item in items:
        extras = None if item.source_rrn else item.entry.extras
        if untrusted.held(item.entry.text, extras):
            held.append(item)
        else:
            yield item


class _RankedLines:
    """
    A section's eligible entries in rank order, formatted as lines only as they are read.

    A budget shows a few lines of thousands of eligible entries; formatting them all cost
    more than ranking them.
    """

    def __init__(self, scored: list, config: 'AnyConfig', source: str):
        self.scored = scored
        self.config = config
        self.source = source

    def __len__(self) -> int:
        return len(self.scored)

    def __iter__(self):
        config, source = self.config, self.source
        for confidence, entry in self.scored:
            yield ContextLine(entry, confidence, format_line(entry.text, confidence, config),
                              source)


def _ranked(entries, now, config, threshold, reference=None, source='', below=None):
    """
    Return the eligible entries as ContextLines in rank order.

    The order is effective confidence, then newest, then id; those under ``threshold`` are
    appended to ``below`` as (confidence, entry, document order) when it is given.
    """
    scored = []
    for order, entry in enumerate(entries):
        if entry.type == 'resolved':
            continue
        confidence = effective_confidence(entry, now, config, reference)
        if confidence < threshold:
            if below is not None:
                below.append((confidence, entry, order))
            continue
        scored.append((confidence, entry))
    scored.sort(key=lambda item: (-item[0], -(item[1].last_reinforced or reference
                                              or now).timestamp(), item[1].id))
    return _RankedLines(scored, config, source)


def _below_highest(below, now):
    """(count, highest confidence, its entry) of (confidence, entry, order) items."""
    if not below:
        return 0, None, None
    # The key orders by confidence first: only the items at the highest need the rest of it.
    highest = max(map(operator.itemgetter(0), below))
    confidence, entry, _ = min((item for item in below if item[0] == highest),
                               key=lambda item: below_key(
                                   item[0], (item[1].last_reinforced or now).timestamp(),
                                   item[1], item[2]))
    return len(below), confidence, entry


def _recent_window(config: 'AnyConfig', min_confidence: Optional[float]):
    """How far back the weak-recent section looks; None when it is off for this request."""
    if config.recent_hours <= 0 or (min_confidence is not None
                                    and min_confidence > config.inject_min):
        return None
    return dt.timedelta(hours=config.recent_hours)


def _recent_scan(entries, now, config, window):
    """
    Return (confidence, entry) of weak own entries reinforced recently, in rank order.

    Own entries under inject_min reinforced within ``window`` of ``now``; none when
    ``window`` is None.
    """
    recent: list = []
    if window is None:
        return recent
    since = now - window
    for order, entry in enumerate(entries):
        if entry.type == 'resolved' or entry.last_reinforced is None \
                or entry.last_reinforced < since:
            continue
        confidence = effective_confidence(entry, now, config)
        if confidence < config.inject_min:
            recent.append((confidence, entry, order))
    return in_rank_order(recent, now)


def peer_header(rrn: str, last_synced: dt.datetime) -> str:
    """Return the label of a peer's section: it is the peer's experience, not this robot's."""
    return (f'Reported by peer {neutralise(rrn)} (last synced {format_iso(last_synced)}; '
            'not verified here):')


def recent_header(config: 'AnyConfig' = DEFAULTS) -> str:
    """Return the label of the weak-recent section: seen lately, not yet confirmed over time."""
    return (f'Seen in the last {config.recent_hours:g} h, below the '
            f'{threshold_percent(config.inject_min)} injection threshold (little evidence '
            'so far; not yet confirmed over time):')


def build_context(document: MemoryDocument, now: dt.datetime,
                  config: 'AnyConfig' = DEFAULTS,
                  token_budget: Optional[int] = None, include_peers: bool = True,
                  min_confidence: Optional[float] = None,
                  index: Optional['ContextIndex'] = None, relevant=()) -> ContextBlock:
    """
    Build the emoji-banded block for ``document`` at ``now`` within ``token_budget``.

    ``min_confidence`` raises the injection threshold for this call, never lowers it; a
    raised threshold also leaves out the weak-recent section. ``index`` (a
    :class:`ContextIndex` of this very document at this decay rate) makes the call
    O(log n + shown) instead of O(n log n); the block is the same either way. An index of
    another document or rate is ignored. ``relevant``: ids of own entries chosen for the
    brain's query, best first (``substrate.context_relevance``): they lead the block, as
    far as every red line still fits (:func:`relevance.lifted`); none, nothing changes.
    """
    if index is not None and index.serves(document, config):
        return _build_indexed(document, now, config, token_budget, include_peers,
                              min_confidence, index, relevant)
    return build_context_scan(document, now, config, token_budget, include_peers,
                              min_confidence, relevant)


def _chosen(document, relevant, now, config, threshold) -> list:
    """Return the ContextLines of the own entries ``relevant`` names, best first."""
    return [ContextLine(entry, confidence, format_line(entry.text, confidence, config))
            for confidence, entry in relevance.chosen(document, relevant, now, config,
                                                      threshold)]


def _threshold(config: 'AnyConfig', min_confidence: Optional[float]) -> float:
    return config.inject_min if min_confidence is None else max(config.inject_min,
                                                                min_confidence)


def build_context_scan(document: MemoryDocument, now: dt.datetime,
                       config: 'AnyConfig' = DEFAULTS,
                       token_budget: Optional[int] = None, include_peers: bool = True,
                       min_confidence: Optional[float] = None, relevant=()) -> ContextBlock:
    """Return the reference block: decay, filter and sort every entry, then fill the budget."""
    threshold = _threshold(config, min_confidence)
    under: list = []
    ranked = _ranked(document.entries, now, config, threshold, below=under)
    below = _below_highest(under, now)
    ranked_peers = []
    if include_peers:
        for block in document.peer_context or []:
            lines = _ranked(block.entries, now, config, threshold, block.last_synced, block.rrn)
            ranked_peers.append((block, lines))
    window = _recent_window(config, min_confidence)
    chosen = _chosen(document, relevant, now, config, threshold)

    def fill(reserve):
        return _assemble(document, now, config, token_budget, threshold,
                         (len(ranked), iter(ranked)),
                         lambda: _recent_scan(document.entries, now, config, window),
                         [(block, len(lines), iter(lines)) for block, lines in ranked_peers],
                         below, chosen, reserve)
    return _filled(fill)


def _filled(fill) -> ContextBlock:
    """
    Return the block: filled with no room kept for the "Left out" line, or again with it.

    ``fill(False)`` when every line fits whole; else ``fill(True)``, which keeps that room.
    """
    return fill(False) or fill(True)


def _assemble(document, now, config, token_budget, threshold, own, recent, peers, below,
              chosen=(), reserve=True):
    """
    Fill the budget: own faults, the weak-recent section, own conditions, then the peers'.

    A labelled routine or constant condition never pushes a fault out, not even one seen in
    the last 24 h below the threshold: the weak-recent section comes before the conditions.
    Except a condition about the status of a fault shown (the lidar's "no events" while
    docked, under its rate fault): it says when that status's reports are normal, which the
    brain needs to read the fault, so it opens the conditions section right after the faults,
    before the weak-recent section. ``recent()`` returns the weak recent entries as
    (confidence, entry) in rank order; those the budget leaves out count as omitted, like
    own and peer entries. ``chosen``: ContextLines relevant to the query, lifted first.
    Without ``reserve`` no room is kept for the "Left out" line, and a block that leaves
    anything out, or cuts a line, is None: fill it again with the room kept (:func:`_filled`).
    """
    filler = Filler(config.token_budget if not token_budget else token_budget, reserve)
    eligible, items = own
    lifted: set = set()
    if chosen:
        items = relevance.lifted(items, chosen, filler.budget, config, lifted)
    conditions: list = []
    held: list = []
    collected = conditions  # all the own conditions read, also after the split below
    items = faults_first(_released(items, held), conditions)
    first = next(items, None)
    shown = filler.run(first, items) if first is not None else []
    explaining, conditions = conditions_explaining(conditions, shown)
    shown_explaining = filler.section(CONDITIONS_HEADER, iter(explaining))
    shown += shown_explaining
    weak = recent()
    shown_recent = []
    before = len(held)
    if not filler.ended:
        shown_recent = filler.section(recent_header(config), _released((
            ContextLine(entry, confidence, format_line(entry.text, confidence, config))
            for confidence, entry in weak), held))
    omitted = len(weak) - len(shown_recent) - (len(held) - before)
    rest = iter(conditions)
    if shown_explaining and not shown_recent:  # the section goes on
        shown += filler.run(next(rest, None), rest)
    else:
        shown += filler.section(CONDITIONS_HEADER, rest)
    omitted += eligible - len(shown) - before
    shown_peers = []
    for block, eligible, peer_items in peers:
        if not eligible:
            continue
        before = len(held)
        added = filler.section(peer_header(block.rrn, block.last_synced),
                               _released(peer_items, held))
        shown_peers.extend(added)
        omitted += eligible - len(added) - (len(held) - before)
    named = []
    if (omitted or filler.truncated) and not reserve:
        return None  # not every line fits whole: fill again, keeping the room
    if omitted:  # name what the budget left out
        named, cut = filler.close(left_out(
            filler, shown + shown_recent + shown_peers, items, collected,
            [ContextLine(e, c, format_line(e.text, c, config)) for c, e in weak],
            [p[2] for p in peers], held), omitted)
        if cut is not None:  # the cut line made room for the names: its entry is one
            omitted += 1
            shown, shown_recent, shown_peers = without(cut, shown, shown_recent, shown_peers)
    text = '\n'.join([untrusted.HEADER] + filler.lines) if filler.lines else ''
    count, highest, entry = below
    return ContextBlock(document.rrn, now, text, shown, shown_peers, omitted,
                        estimate_tokens(text), threshold, count, highest, entry, shown_recent,
                        filler.truncated, held,
                        relevant=[item for item in shown if item.entry.id in lifted],
                        left_out=named)


def _build_indexed(document, now, config, token_budget, include_peers, min_confidence,
                   index: ContextIndex, relevant=()) -> ContextBlock:
    threshold = _threshold(config, min_confidence)

    def section_plan(section, entries, reference, source):
        plan = section.plan(now, config, threshold) if section.usable else None
        if plan is not None:
            eligible, walk, highest = plan
            below = (len(section) - eligible,) + (highest or (None, None))
            return eligible, walk.lines(source), below
        under: list = []
        ranked = _ranked(entries, now, config, threshold, reference, source, under)
        return len(ranked), iter(ranked), _below_highest(under, now)

    window = _recent_window(config, min_confidence)
    if window is not None and index.own.usable:
        def recent():
            return index.own.weak_recent(now, config, window)
    else:
        def recent():
            return _recent_scan(document.entries, now, config, window)
    chosen = _chosen(document, relevant, now, config, threshold)

    def fill(reserve):
        # A walk is read once: each fill plans its sections again (O(log n) each).
        eligible, items, below = section_plan(index.own, document.entries, None, '')
        peers = []
        if include_peers:
            for block, section in zip(document.peer_context or [], index.peers):
                peer_eligible, peer_items, _ = section_plan(section, block.entries,
                                                            block.last_synced, block.rrn)
                peers.append((block, peer_eligible, peer_items))
        return _assemble(document, now, config, token_budget, threshold, (eligible, items),
                         recent, peers, below, chosen, reserve)
    return _filled(fill)
