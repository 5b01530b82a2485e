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
fit, the test that tells a labelled routine or constant condition from a fault, and the
block's last line when the budget left entries out: ``Left out for the budget: Charger
(routine); Wireless (constant) and 3 more`` (:func:`left_out`, :meth:`Filler.close`). The
block is filled first without keeping room for that line: when everything fits, the
block shows it all. Only when something is left out (or cut) is it filled again keeping room for the
line from the start (``reserve``, :data:`LEFT_OUT_RESERVE`: a few names, or the count
alone), so a block that leaves anything out always says so within its budget; what it names
is each entry's subject (:func:`short_name`), in block order, as many as fit.
"""

import dataclasses
import itertools
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
_RED = '🔴'
_PARTIAL_ESCAPE = re.compile(r'\\u[0-9a-f]{0,3}$')
LEFT_OUT = 'Left out for the budget: '
# The entries the last line may name (the rest are counted: "and 40 more").
MAX_NAMED = 8
_NAME_CHARS = 40
# Room kept for the last line from the start: a blank line, LEFT_OUT and 48 bytes of
# names (two or three short ones), or the count alone ("999,999 entries").
_NAMES_BYTES = 48
LEFT_OUT_RESERVE = -(-(1 + len(LEFT_OUT) + _NAMES_BYTES) // 4) + 1


class Filler:
    """The lines of a block within a token budget, in the order they are offered."""

    def __init__(self, budget: int, reserve: bool = True):
        # The header opens a block that has a line; its cost is kept aside from the start,
        # and, with ``reserve``, so is the room of the shortest "Left out" line (close).
        self.reserve = LEFT_OUT_RESERVE if reserve else 0
        self.budget = budget - estimate_tokens(untrusted.HEADER) - 1 - self.reserve
        self.lines: list[str] = []
        self.costs: list[int] = []
        self.used = 0
        self.ended = False
        self.truncated = False
        self.refused: list = []  # the item a section read but could not place (at most one)
        self.owners: list = []  # the item of each line (None for a header)

    def put(self, text: str) -> bool:
        cost = estimate_tokens(text) + (1 if self.lines else 0)
        if self.used + cost > self.budget:
            return False
        self.lines.append(text)
        self.owners.append(None)
        self.costs.append(cost)
        self.used += cost
        return True

    def unput(self) -> None:
        self.lines.pop()
        self.owners.pop()
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
            self.refused.append(first)
            return []
        shown = self.run(first, items)
        if not shown:
            self.unput()
        return shown

    def run(self, first, items) -> list:
        """Place ``first`` and the items after it; keep the one read but not placed."""
        shown = []
        item = first
        while item is not None:
            line = None if self.ended else self.put_or_cut(item.line)
            if line is None:
                self.refused.append(item)
                break
            self.owners[-1] = item
            shown.append(item if line == item.line else dataclasses.replace(item, line=line))
            item = next(items, None)
        return shown

    def close(self, left: list, count: int) -> tuple:
        """
        End the block with the line naming what the budget left out.

        ``left``: ContextLines left out, in block order; ``count``: all entries left out
        (``left`` may name only the first of them). As many names as fit the budget with
        the room kept for the line (``and N more`` for the others; none, the count alone).
        When a name does not fit and the block's last line is a condition's (whole or cut
        with "…") or a fault's cut with "…" that is not red (🔴), that line makes room: its
        entry is named first. A whole fault line or a red one never does. Return (the
        ContextLines named, the item of the line taken out or None).
        """
        if count <= 0:
            return [], None
        self.budget += self.reserve
        dropped = None
        named, text = self._names(left, count)
        last = self.owners[-1] if self.owners else None
        if len(named) < min(len(left), count) and last is not None and (
                is_condition(last.entry.text)
                or (self.truncated and not self.lines[-1].startswith(_RED))):
            dropped, self.truncated = last, False
            self.unput()
            if self.lines and self.lines[-1].startswith('\n'):
                self.unput()  # the header of a section left without a line
            named, text = self._names([dropped] + left, count + 1)
        if self.put(('\n' if self.lines else '') + LEFT_OUT + text):
            return named, dropped
        return [], dropped

    def _names(self, left: list, count: int) -> tuple:
        """Return the ContextLines named and the line's text after LEFT_OUT, as room allows."""
        # The line's bytes within what put() allows: a newline token and its leading newline.
        room = (self.budget - self.used) * 4 - (5 if self.lines else 0)
        named: list = []
        text = f'{count:,} {"entry" if count == 1 else "entries"}'
        for end in range(1, min(len(left), count) + 1):
            names = '; '.join(_named(item) for item in left[:end])
            more = count - end
            candidate = names + (f' and {more:,} more' if more else '')
            if len((LEFT_OUT + candidate).encode('utf-8')) > room:
                break
            named, text = left[:end], candidate
        return named, text


def _named(item) -> str:
    name = short_name(item.entry.text)
    return name + (f' (peer {untrusted.neutralise(item.source_rrn)})' if item.source_rrn
                   else '')


def short_name(text: str) -> str:
    """
    Return what an entry is about, in a few words, for the "left out" line.

    The status's name without its node's prefix and hardware id (``Charger``), or the
    node of a log entry, marked ``(routine)``/``(constant)`` for a condition; else the
    text's first words. Neutralised and capped at 40 characters.
    """
    label = next((prefix[:-2].lower() for prefix in CONDITIONS if text.startswith(prefix)), '')
    subject = _subject(text)
    if subject:
        subject = re.sub(r' \([^()]*\)$', '', subject).rsplit(': ', 1)[-1]
    else:
        subject = re.sub(r'^[A-Z][a-z]+: ', '', text).split(' - ', 1)[0]
    subject = untrusted.neutralise(subject.strip())
    if len(subject) > _NAME_CHARS:
        subject = subject[:_NAME_CHARS - 1].rstrip() + _ELLIPSIS
    return subject + (f' ({label})' if label else '')


def left_out(filler: Filler, shown: list, faults, conditions: list, recent: list,
             peers: list, held: list) -> list:
    """
    Return the ContextLines the budget left out, in block order, as far as they are known.

    The item the filler refused, then at most ``MAX_NAMED`` more own faults read from
    ``faults`` (the own ranking's iterator; it files the conditions it passes into
    ``conditions``), the own conditions and weak recent entries not shown, then each peer's
    first ones (``peers``: iterators of their rankings). An entry held from the brain
    (``untrusted.held``) is never named; ``held``, the block's list of them, is kept as it
    was (reading on in ``faults`` holds back nothing more).
    """
    seen = {(item.source_rrn, item.entry.id) for item in shown}
    found: list = []

    def take(item) -> None:
        key = (item.source_rrn, item.entry.id)
        extras = None if item.source_rrn else item.entry.extras
        if key not in seen and not untrusted.held(item.entry.text, extras):
            seen.add(key)
            found.append(item)

    for item in filler.refused:
        take(item)
    before = len(held)
    for item in itertools.islice(faults, MAX_NAMED):
        take(item)
    del held[before:]
    for item in itertools.chain(conditions, recent):
        take(item)
    for items in peers:
        for item in itertools.islice(items, MAX_NAMED):
            take(item)
    return found


def without(item, *groups) -> tuple:
    """Return each list of ContextLines in ``groups`` without ``item``'s entry."""
    return tuple([line for line in group if line.entry is not item.entry] for group in groups)


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
