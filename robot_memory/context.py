"""The context block handed to the robot's LLM brain (RCAN §5).

Own entries first, then one labelled section per peer; each line is
``<band> [NN%] text`` with decay evaluated at ``now``; ``resolved`` entries and
entries below the injection threshold never appear; the block is cut to a token
budget (tokens estimated as UTF-8 bytes / 4, rounded up, which over-counts emoji
and symbols rather than under-counting them).
"""

import dataclasses
import datetime as dt
from typing import Optional

from robot_memory.lifecycle import DEFAULT_CONFIG
from robot_memory.lifecycle import LifecycleConfig
from robot_memory.lifecycle import band
from robot_memory.lifecycle import effective_confidence
from robot_memory.schema import MemoryDocument
from robot_memory.timeutil import format_iso


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
                  min_confidence: Optional[float] = None) -> ContextBlock:
    """Build the emoji-banded block for ``document`` at ``now`` within ``token_budget``."""
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
