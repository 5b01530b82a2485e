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
The block's first section, "Active now": the faults active at the time of the call.

Pure: the faults come in as plain objects (``robot_memory.evidence.active_now.ActiveFault``
or alike: ``text``, ``severity``, ``active_since``, ``last_seen``, ``acknowledged_by``), time
as seconds. The section is short (:data:`MAX_LINES` lines at most, then a count) and within
the block's budget, and it never pushes out a 🔴 entry: :func:`with_active_now` builds the
block on the budget left after the section and, when that shows fewer 🔴 entries than the
block without it, shortens the section, down to nothing.
"""

import dataclasses
from typing import Callable
from typing import Optional

from robot_memory.rcan import untrusted
from robot_memory.rcan.context import ContextBlock
from robot_memory.rcan.context import estimate_tokens
from robot_memory.rcan.lifecycle import band

HEADER = 'Active now (faults reported at this moment, not yet cleared by OK reports):'
MAX_LINES = 5
SEVERITIES = {1: 'WARN', 2: 'ERROR', 3: 'STALE'}
RED = '🔴'


def age(seconds: float) -> str:
    """Return a duration in the largest whole unit: '45 s', '3 min', '2 h', '4 d'."""
    seconds = max(0.0, seconds)
    for unit, size in (('d', 86400), ('h', 3600), ('min', 60)):
        if seconds >= size:
            return f'{int(seconds // size)} {unit}'
    return f'{int(seconds)} s'


def fault_line(fault, now_s: float) -> str:
    """Return one fault's line: severity, since when, last seen, what, acknowledged."""
    text = fault.text
    if untrusted.is_instruction_like(text):
        text = '(its message reads like an instruction to a model: left out)'
    line = (f'- {SEVERITIES.get(fault.severity, "ERROR")} for {age(now_s - fault.active_since)}'
            f' (last {age(now_s - fault.last_seen)} ago): {untrusted.quote(text, 120)}')
    if fault.acknowledged_by:
        line += f' [acknowledged by {untrusted.quote(fault.acknowledged_by, 40)}]'
    return line


def section_lines(faults: list, now_s: float, max_lines: int = MAX_LINES) -> list:
    """Return the section's lines (header first); [] when nothing is active."""
    if not faults or max_lines <= 0:
        return []
    shown = [fault_line(fault, now_s) for fault in faults[:max_lines]]
    more = len(faults) - len(shown)
    if more:
        shown.append(f'- and {more} more active (GetContext.active_now lists them all)')
    return [HEADER] + shown


def section_text(faults: list, now_s: float) -> str:
    """Return the whole section as text ('' when nothing is active)."""
    return '\n'.join(section_lines(faults, now_s))


def _reds(block: ContextBlock, config) -> int:
    return sum(1 for line in block.entries if band(line.effective_confidence, config) == RED)


def _used(block: ContextBlock, upto: Optional[str] = None) -> int:
    """
    Return at least what the block's lines cost its filler (each line rounded up, +1).

    ``upto``: only its lines up to this one (the last 🔴 entry's), header included.
    """
    lines = block.text.split('\n')
    if upto is not None:
        lines = lines[:lines.index(upto) + 1] if upto in lines else lines
    return sum(estimate_tokens(line) + 1 for line in lines) + 1


def with_active_now(build: Callable[[Optional[int]], ContextBlock], faults: list, now_s: float,
                    budget: int, config) -> tuple:
    """
    Return (block, faults shown): ``build(budget)``'s block with "Active now" first.

    ``build`` makes the block on a token budget; ``budget`` is the call's whole budget. The
    section takes what it needs from it, as long as the block still shows every 🔴 entry it
    shows without the section; otherwise fewer fault lines, and none at all when even one
    would push out a 🔴 entry (the caller's active_now field still lists them).
    """
    full = build(budget)
    if not faults:
        return full, 0
    reds = _reds(full, config)
    # The 🔴 entries come first: what they take of the budget is known without a build.
    red_lines = [item.line for item in full.entries
                 if band(item.effective_confidence, config) == RED]
    text_lines = full.text.split('\n')
    last_red = max((text_lines.index(line) for line in red_lines if line in text_lines),
                   default=None)
    red_used = _used(full, text_lines[last_red]) if last_red is not None else 0
    for count in range(min(len(faults), MAX_LINES), 0, -1):
        lines = section_lines(faults, now_s, count)
        cost = estimate_tokens('\n'.join(lines)) + 2  # the newlines around it
        if (cost >= budget - estimate_tokens(untrusted.HEADER) - 1
                or red_used + cost > budget):
            continue
        if not full.truncated and _used(full) + cost <= budget:
            block = full  # it fits beside the section: the smaller budget builds the same
        else:
            block = build(budget - cost)
        if _reds(block, config) < reds:
            continue
        rest = block.text.split('\n')[1:] if block.text else []
        text = '\n'.join([untrusted.HEADER] + lines + ([''] + rest if rest else []))
        return dataclasses.replace(block, text=text, token_estimate=estimate_tokens(text)), \
            count
    return full, 0
