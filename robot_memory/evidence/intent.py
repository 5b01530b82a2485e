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
The intent record of a dream, a prune or an undo: the database changes about to be made.

A writer of the memory file computes everything first, then, under the file lock, commits
a :class:`DreamIntent` to the evidence database (``EvidenceStore.begin_dream``), writes the
file atomically and applies the intent in one transaction (``commit_dream``). A process
that dies in between leaves the intent behind; the next dream, prune or undo completes it
when the file on disk is the one it describes and discards it otherwise
(``autodream.recover``).

:meth:`DreamIntent.to_json` is the one writer of the record and :meth:`DreamIntent.from_json`
the one reader. The JSON keys are those written before the record had a type (a dream's
record then had no ``kind``), so a record left by an older version is completed the same.
"""

import dataclasses
import datetime as dt
import json
from typing import Any
from typing import Optional
from typing import Sequence

from robot_memory.common import jsontext
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso

KINDS = ('dream', 'prune', 'undo')
_COMMON = ('kind', 'token', 'at', 'actor', 'file_hash', 'prior_hash', 'file_changed', 'audit')
# The keys each kind writes, and those a record of that kind cannot do without.
_KEYS = {
    'dream': _COMMON + ('first_id', 'last_id', 'signatures', 'signatures_deleted', 'sources',
                        'snapshot', 'snapshot_deleted', 'report'),
    'prune': _COMMON + ('snapshot_deleted',),
    'undo': _COMMON + ('reason', 'label', 'point', 'manual', 'changes'),
}
_OPTIONAL = ('kind', 'prior_hash', 'file_changed')
# Keys holding rows (lists of lists in JSON, tuples here).
_ROWS = ('audit', 'signatures', 'sources', 'snapshot', 'manual', 'changes')
_IDS = ('signatures_deleted', 'snapshot_deleted')


@dataclasses.dataclass(frozen=True)
class DreamIntent:
    """
    What one dream, prune or undo will record once its memory file is written.

    ``audit`` rows are ``(entry_id, action, reason, detail JSON)``; ``signatures`` and
    ``sources`` rows follow ``evidence.SIGNATURE_COLUMNS`` and ``SOURCE_COLUMNS``;
    ``snapshot`` rows are ``(entry_id, canonical JSON)``. An undo also carries its reason,
    the label and fields of its restore point, and its ``(entry_id, before, after)`` rows.
    """

    kind: str
    token: str
    at: dt.datetime
    actor: str
    file_hash: str
    prior_hash: Optional[str] = None
    file_changed: bool = True
    audit: Sequence = ()
    first_id: int = 0
    last_id: int = 0
    signatures: Sequence = ()
    signatures_deleted: Sequence = ()
    sources: Sequence = ()
    snapshot: Sequence = ()
    snapshot_deleted: Sequence = ()
    report: Optional[dict] = None
    reason: str = ''
    label: str = ''
    point: Optional[dict] = None
    manual: Sequence = ()
    changes: Sequence = ()

    def __post_init__(self):
        """Refuse an unknown kind and a naive time; hold every row as a tuple."""
        if self.kind not in KINDS:
            raise ValueError(f'intent kind {self.kind!r} is not one of {", ".join(KINDS)}')
        if self.at.tzinfo is None:
            raise ValueError('an intent time must be an aware datetime (UTC)')
        for name in _ROWS:
            object.__setattr__(self, name, tuple(tuple(row) for row in getattr(self, name)))
        for name in _IDS:
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def at_text(self) -> str:
        """Return the time as stored in the audit and dream logs (ISO-8601, ``Z``)."""
        return format_iso(self.at)

    def to_json(self) -> str:
        """Return the record as compact JSON, with the keys of its kind only."""
        data = {}
        for name in _KEYS[self.kind]:
            value = getattr(self, name)
            if name == 'at':
                value = format_iso(value)
            elif name in _ROWS:
                value = [list(row) for row in value]
            elif name in _IDS:
                value = list(value)
            data[name] = value
        return json.dumps(data, ensure_ascii=False, separators=(',', ':'))

    @classmethod
    def from_json(cls, text: str) -> 'DreamIntent':
        """Read a record written by :meth:`to_json` or an older version; ValueError if damaged."""
        try:
            data = jsontext.loads(text)
        except ValueError as error:
            raise ValueError(f'the intent record is not JSON ({error})') from None
        if not isinstance(data, dict):
            raise ValueError('the intent record is not a JSON object')
        kind = data.get('kind', 'dream')
        if kind not in KINDS:
            raise ValueError(f'the intent record has kind {kind!r}, not one of {", ".join(KINDS)}')
        missing = [name for name in _KEYS[kind] if name not in data and name not in _OPTIONAL]
        if missing:
            raise ValueError(f'the intent record of a {kind} lacks {", ".join(missing)}')
        fields = {name: data[name] for name in _KEYS[kind] if name in data}
        fields['kind'] = kind
        fields['at'] = parse_iso(data['at'])
        for name in _ROWS + _IDS:
            if name in fields:
                rows = _list(fields[name], name)
                if name in _ROWS:
                    for row in rows:
                        _list(row, name)
        return cls(**fields)


def _list(value: Any, name: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f'the intent record field {name} holds {type(value).__name__}, not a '
                         'list')
    return value
