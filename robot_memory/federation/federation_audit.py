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
The audit rows of federation: merges, rejections and expired peers, and the quiet re-syncs.

Rows use the action ``peer_merge`` on ``peer:<rrn>`` (``peer:unknown`` when the sender
could not be identified); the ROS edge writes them to the evidence store.
"""

import datetime as dt
import re
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import to_utc
from robot_memory.evidence.evidence_audit import AuditRecord
from robot_memory.federation.peer_context import AUDIT_ACTION
from robot_memory.federation.peer_context import MergeOutcome
from robot_memory.federation.peer_context import PeerRejected
from robot_memory.rcan.schema import RRN_PATTERN

_RRN = re.compile(RRN_PATTERN)


def _audit_subject(rrn: Optional[str]) -> str:
    if isinstance(rrn, str) and _RRN.fullmatch(rrn):
        return f'peer:{rrn}'
    return 'peer:unknown'


def audit_records(result, now: dt.datetime, actor: str = 'federation') -> list:
    """
    Audit records (action ``peer_merge``) for a merge, a rejection or expired peers.

    Accepted: one record on ``peer:<rrn>`` plus one per own entry it newly corroborates
    (reason says confidence unchanged); a re-sync that changed nothing but ``last_synced``
    gives no records, so a periodic sync does not flood the log. Rejected: one record on
    ``peer:<rrn>`` (``peer:unknown`` when the sender could not be identified) with reason
    ``rejected (<kind>): …``.
    Expired (a list of rrns from :func:`expire_peers`): one ``expired`` record per peer.
    """
    now = to_utc(now)
    if isinstance(result, MergeOutcome):
        if not (result.added or result.changed or result.removed
                or result.newly_corroborated):
            return []
        detail = {'outcome': 'accepted', 'sent_at': format_iso(result.sent_at),
                  'received': result.received, 'added': list(result.added),
                  'changed': list(result.changed), 'removed': list(result.removed),
                  'corroborated': list(result.corroborated), 'signed': result.signed}
        records = [AuditRecord(now, _audit_subject(result.rrn), AUDIT_ACTION, actor,
                               result.summary(), detail)]
        for own_id in result.newly_corroborated:
            records.append(AuditRecord(
                now, own_id, AUDIT_ACTION, actor,
                f'corroborated by peer {result.rrn}; confidence unchanged (RCAN §6)',
                {'outcome': 'corroborated', 'peer': result.rrn}))
        return records
    if isinstance(result, PeerRejected):
        return [AuditRecord(now, _audit_subject(result.rrn), AUDIT_ACTION, actor,
                            f'rejected ({result.kind}): {result.detail}'[:500],
                            {'outcome': 'rejected', 'kind': result.kind,
                             'message': str(result)[:1000]})]
    if isinstance(result, (list, tuple)):
        return [AuditRecord(now, _audit_subject(rrn), AUDIT_ACTION, actor,
                            'expired: no sync within peer_expiry_s; block dropped',
                            {'outcome': 'expired'})
                for rrn in result]
    raise TypeError(f'expected a MergeOutcome, a PeerRejected or a list of rrns, got '
                    f'{type(result).__name__}')


UNCHANGED_AUDIT_S = 3600.0  # one "nothing changed" audit row per peer per this (memory s)


class UnchangedAudits:
    """
    Accepted payloads that changed nothing, counted per peer and audited once per period.

    A periodic sync must neither escape the audit log nor flood it: each such payload is
    counted, and one row per peer says how many there were once ``period_s`` of memory
    time has passed since the first, or as soon as a payload of that peer changes
    something (the count goes first). Not thread-safe: the caller holds its lock.
    """

    def __init__(self, period_s: float = UNCHANGED_AUDIT_S):
        self.period_s = period_s
        self._pending: dict[str, tuple] = {}  # peer rrn -> (count, since)

    def __bool__(self) -> bool:
        """Return whether any count waits to be written."""
        return bool(self._pending)

    def records(self, outcome: MergeOutcome, now: dt.datetime, actor: str) -> list:
        """Return the audit rows to write for this accepted payload (maybe none yet)."""
        records = audit_records(outcome, now, actor)
        count, since = self._pending.pop(outcome.rrn, (0, now))
        if records:
            if count:
                records.insert(0, self._record(outcome.rrn, count, since, now, actor))
            return records
        count += 1
        if (now - since).total_seconds() >= self.period_s:
            return [self._record(outcome.rrn, count, since, now, actor)]
        self._pending[outcome.rrn] = (count, since)
        return []

    def flush(self, now: dt.datetime, actor: str = 'federation') -> list:
        """Return a row for every pending count and forget them (at shutdown)."""
        pending, self._pending = self._pending, {}
        return [self._record(rrn, count, since, now, actor)
                for rrn, (count, since) in pending.items()]

    @staticmethod
    def _record(rrn: str, count: int, since: dt.datetime, now: dt.datetime,
                actor: str) -> AuditRecord:
        return AuditRecord(now, _audit_subject(rrn), AUDIT_ACTION, actor,
                           f'{count} exchanges accepted with nothing changed since '
                           f'{format_iso(since)}', {'outcome': 'accepted', 'unchanged': count,
                                                    'since': format_iso(since)})
