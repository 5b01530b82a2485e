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

"""What one dream did (``DreamReport``), for the dream log, the CLI and the summary."""

import dataclasses
import datetime as dt
import json
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.rcan.context import plural


@dataclasses.dataclass
class DreamReport:
    """What one dream did, with entry ids, and how much evidence it consumed."""

    at: dt.datetime
    actor: str
    created: list = dataclasses.field(default_factory=list)
    reinforced: list = dataclasses.field(default_factory=list)
    resolved: list = dataclasses.field(default_factory=list)
    reopened: list = dataclasses.field(default_factory=list)
    pruned: list = dataclasses.field(default_factory=list)
    # [kept id, merged id] of entries of one incident made one (dream.incidents).
    merged: list = dataclasses.field(default_factory=list)
    manual: list = dataclasses.field(default_factory=list)
    # Entries taken in again from the memory file after the evidence database was rebuilt.
    rebuilt: list = dataclasses.field(default_factory=list)
    held: list = dataclasses.field(default_factory=list)
    consumed: int = 0
    signatures: int = 0
    first_id: int = 0
    last_id: int = 0
    noop: bool = False
    clock_backwards: bool = False
    # Refused: the time leaps far ahead of the last dream and the newest evidence
    # (dream.clock); the node reports it. ``leap_confirmed`` says the leap a person accepted.
    clock_leap: bool = False
    leap_confirmed: Optional[str] = None
    recovered: Optional[str] = None
    distiller_fallbacks: int = 0
    compacted: int = 0
    dream_id: Optional[int] = None
    problems: list = dataclasses.field(default_factory=list)
    # Entries below prune_min kept in the file because the archive could not take them.
    prune_held_back: int = 0
    # What contradicts what: {'entry_id', 'kind', 'text', 'what'} (see dream_summary).
    contradictions: list = dataclasses.field(default_factory=list)
    # Conditions learned this dream (dream.conditions.new_condition): entry, signal, the
    # condition, its advice ('' if none) and what it rests on.
    conditions: list = dataclasses.field(default_factory=list)
    # Where the summary for people was written (None: not written, e.g. nothing new).
    summary_file: Optional[str] = None
    # Ids of the proposals this dream queued (the distiller's texts, in propose mode).
    proposed: list = dataclasses.field(default_factory=list)
    # Every proposal waiting for a decision after this dream (Proposal.to_dict()), for the
    # summary; not in to_dict (the queue holds them).
    waiting: list = dataclasses.field(default_factory=list, repr=False)
    # The distiller's texts held back for approval: (entry id, rule text, proposed text).
    rewords: list = dataclasses.field(default_factory=list, repr=False)
    propose_texts: bool = dataclasses.field(default=False, repr=False)
    # Every audited change with the entry's text, for the summary (not in to_dict: the
    # audit log already holds them).
    changes: list = dataclasses.field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        """Plain JSON data."""
        kept = self.changes, self.waiting, self.rewords
        self.changes, self.waiting, self.rewords = [], [], []
        try:
            data = dataclasses.asdict(self)
        finally:
            self.changes, self.waiting, self.rewords = kept
        del data['changes'], data['waiting'], data['rewords'], data['propose_texts']
        data['at'] = format_iso(self.at)
        return data

    def summary(self) -> str:
        """One line for people."""
        if self.clock_backwards:
            return f'dream at {format_iso(self.at)}: nothing done, the clock went backwards'
        if self.clock_leap:
            return (f'dream at {format_iso(self.at)}: nothing done, the clock leapt ahead '
                    '(robot-memory dream --confirm-leap accepts it)')
        if self.noop:
            return f'dream at {format_iso(self.at)}: nothing new'
        return (f'dream at {format_iso(self.at)}: created {len(self.created)}, reinforced '
                f'{len(self.reinforced)}, resolved {len(self.resolved)}, reopened '
                f'{len(self.reopened)}, pruned {len(self.pruned)}'
                f'{f" ({self.prune_held_back} held back)" if self.prune_held_back else ""}'
                f'{f", merged {len(self.merged)}" if self.merged else ""}, manual edits '
                f'{len(self.manual)}'
                f'{f", rebuilt {len(self.rebuilt)}" if self.rebuilt else ""}; consumed '
                f'{plural(self.consumed, "observation")} of '
                f'{plural(self.signatures, "signature")}'
                f'{"; the leap of the clock was confirmed" if self.leap_confirmed else ""}'
                f'{self._problems_said()}')

    def _problems_said(self) -> str:
        if not self.problems:
            return ''
        more = len(self.problems) - 1
        return (f'; {plural(len(self.problems), "problem")}: {self.problems[0]}'
                f'{f" (and {more} more in the summary)" if more else ""}')


def diff_summary(before: dict, after: dict) -> str:
    """Return what changed between two versions of an entry, field by field, in one line."""
    def short(value):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 80 else text[:77] + '...'

    parts = []
    for key in list(before) + [key for key in after if key not in before]:
        if key not in after:
            parts.append(f'{key} removed')
        elif key not in before:
            parts.append(f'{key} added: {short(after[key])}')
        elif before[key] != after[key]:
            parts.append(f'{key}: {short(before[key])} -> {short(after[key])}')
    return '; '.join(parts) or 'no field changed'


def returned_after_deletion(store, link: dict, count: int, contradiction) -> None:
    """
    Tell a fault that returns after a dream took in its entry's deletion by hand, once.

    The deletion keeps the link's ``entry_id``; a later dream that finds evidence for it and
    the entry gone checks the audit log: deleted by hand (not pruned) is a contradiction.
    """
    if not link['entry_id']:
        return
    trail = store.history(link['entry_id'])
    last = trail[-1] if trail else None
    if last is not None and last.action == 'manual' and last.detail.get('change') == 'deleted':
        contradiction(link['entry_id'], 'deleted_by_hand_seen_again',
                      last.detail.get('before', {}).get('text', ''),
                      f'deleted by hand, but its fault was reported {count} more times since; '
                      'later evidence starts a new entry from a low confidence')
        link['entry_id'] = None
