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
How a context block fills its token budget, and which lines are conditions.

Split from ``context`` (the block's ranking and sections): the token estimate, the
:class:`Filler` that places lines in the order offered and cuts the first that does not
fit, and the test that tells a labelled routine or constant condition from a fault.
"""

import dataclasses
import re

from robot_memory.rcan import untrusted


def estimate_tokens(text: str) -> int:
    """Return a conservative token estimate: UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode('utf-8')) // 4)


# Entry texts a dream labels as normal on this robot (robot_memory.dream.pattern): shown
# after the faults, in their own section.
CONDITIONS = ('Routine: ', 'Constant: ')
CONDITIONS_HEADER = 'Routine and constant conditions (normal on this robot):'
# Cut a line that does not fit only when at least this much of its text can stay.
_MIN_CUT_BYTES = 16
_ELLIPSIS = '…'
_PARTIAL_ESCAPE = re.compile(r'\\u[0-9a-f]{0,3}$')


class Filler:
    """The lines of a block within a token budget, in the order they are offered."""

    def __init__(self, budget: int):
        # The header opens a block that has a line; its cost is kept aside from the start.
        self.budget = budget - estimate_tokens(untrusted.HEADER) - 1
        self.lines: list[str] = []
        self.costs: list[int] = []
        self.used = 0
        self.ended = False
        self.truncated = False

    def put(self, text: str) -> bool:
        cost = estimate_tokens(text) + (1 if self.lines else 0)
        if self.used + cost > self.budget:
            return False
        self.lines.append(text)
        self.costs.append(cost)
        self.used += cost
        return True

    def unput(self) -> None:
        self.lines.pop()
        self.used -= self.costs.pop()

    def put_or_cut(self, line: str):
        """
        Return the line as placed (whole or cut with an ellipsis), or None.

        Either way a line that does not fit whole ends the block, so nothing lower takes
        its place.
        """
        if self.put(line):
            return line
        self.ended = True
        room = (self.budget - self.used - (1 if self.lines else 0)) * 4
        head, _, text = line.partition('] ')
        head += '] '
        keep = room - len(head.encode('utf-8')) - len(_ELLIPSIS.encode('utf-8'))
        if keep < _MIN_CUT_BYTES:
            return None
        cut = text.encode('utf-8')[:keep].decode('utf-8', errors='ignore')
        cut = _PARTIAL_ESCAPE.sub('', cut).rstrip()
        if not cut:
            return None
        cut_line = head + cut + _ELLIPSIS
        if not self.put(cut_line):
            return None
        self.truncated = True
        return cut_line

    def section(self, header, items) -> list:
        """Return a labelled section: the header only with at least its first line."""
        if self.ended:
            return []
        first = next(items, None)
        if first is None:
            return []
        if not self.put(('\n' if self.lines else '') + header):
            self.ended = True
            return []
        shown = self.run(first, items)
        if not shown:
            self.unput()
        return shown

    def run(self, first, items) -> list:
        shown = []
        item = first
        while item is not None and not self.ended:
            line = self.put_or_cut(item.line)
            if line is None:
                break
            shown.append(item if line == item.line else dataclasses.replace(item, line=line))
            item = next(items, None)
        return shown


def is_condition(text: str) -> bool:
    """Whether an entry's text labels it a routine or constant condition (see CONDITIONS)."""
    return text.startswith(CONDITIONS)


# The status or node a dream's entry is about, as the default rules word it after the
# dream's label: 'Routine: <name> (<hardware id>) reports ...', '<node> logs ...'.
_SUBJECT = re.compile(r'(?:[A-Z][a-z]+: )?(.+?) (?:reports|logs) ')


def _subject(text: str) -> str:
    """Return what an entry is about (see _SUBJECT), '' when its text does not say."""
    match = _SUBJECT.match(text)
    return match.group(1) if match else ''


def conditions_explaining(conditions: list, faults: list) -> tuple:
    """Split conditions into (those about a status a shown fault is about, the others)."""
    subjects = {_subject(item.entry.text) for item in faults} - {''}
    if not subjects or not conditions:
        return [], conditions
    explaining: list = []
    others: list = []
    for item in conditions:
        (explaining if _subject(item.entry.text) in subjects else others).append(item)
    return explaining, others


def faults_first(items, conditions: list):
    """Yield the items that are not conditions; collect those that are into ``conditions``."""
    for item in items:
        if is_condition(item.entry.text):
            conditions.append(item)
        else:
            yield item
