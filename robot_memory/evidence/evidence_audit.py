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
The audit logs of the evidence database: their record and their one writer each.

``AuditRecord`` is one change to an entry of the memory file, a plain record with no database
behind it, so that what makes audit records (the evidence store, peer federation) can share
it without importing the store. ``write_audit`` is the only ``INSERT`` into ``audit`` and
``write_record_audit`` the only one into ``substrate_audit`` (the typed records' log); both
run inside the caller's transaction.
"""

import dataclasses
import datetime as dt
from typing import Iterable
from typing import Optional

from robot_memory.common.timeutil import format_iso


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """One change to an entry: when, which entry, what, who, why, and details."""

    at: dt.datetime
    entry_id: str
    action: str
    actor: str
    reason: str
    detail: dict = dataclasses.field(default_factory=dict)
    dream_id: Optional[int] = None
    id: Optional[int] = None

    def to_dict(self) -> dict:
        """Plain JSON data."""
        return {'id': self.id, 'at': format_iso(self.at), 'entry_id': self.entry_id,
                'action': self.action, 'actor': self.actor, 'reason': self.reason,
                'detail': self.detail, 'dream_id': self.dream_id}


def write_audit(conn, rows: Iterable) -> None:
    """Append ``(at, entry_id, action, actor, reason, detail_json, dream_id)`` rows to audit."""
    conn.executemany('INSERT INTO audit (at, entry_id, action, actor, reason, detail, dream_id) '
                     'VALUES (?, ?, ?, ?, ?, ?, ?)', rows)


def write_record_audit(conn, rows: Iterable) -> None:
    """Append ``(at_s, record_id, action, actor, reason, detail_json)`` rows to substrate_audit."""
    conn.executemany('INSERT INTO substrate_audit (at, record_id, action, actor, reason, detail) '
                     'VALUES (?, ?, ?, ?, ?, ?)', rows)
