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
The proposals queue at the edge of memory_node: ``~/proposals`` and its diagnostic status.

The queue (``robot_memory.review.proposing``) has a connection of its own to the node's database,
used under one lock from the executor's threads. ``~/proposals`` (``Proposals.srv``) lists,
approves or rejects; an approved change is made where it belongs (a learn in the typed
memory, a reword or a peer block in the memory file) and the context is published again.
The ``proposals`` status on ``/diagnostics`` shows how many wait and how old the oldest is;
overdue ones are expired (and audited) when it is computed.
"""

import json
import threading

from robot_memory.errors import RobotMemoryError
from robot_memory.review import proposing
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN
from robot_memory.ros.refusal import refuse
from robot_memory.srv import Proposals

ACTIONS = ('list', 'approve', 'reject')
DEFAULT_ACTOR = 'ros:proposals'


class ProposalServices:
    """The proposals queue of one node, ``~/proposals`` and its health."""

    def __init__(self, node, *, settings, clock, memory, rrn: str, db_path, substrate,
                 on_change, on_health_change, group):
        """
        Open the queue in ``db_path`` and create ``~/proposals`` on ``node``.

        ``settings`` returns the node's current settings, ``clock`` is the memory clock,
        ``substrate()`` returns the typed memory an approved learn goes to,
        ``on_change()`` is called when an approval changed the memory file and
        ``on_health_change()`` when the queue changed. Raises ValueError when the queue
        cannot be opened.
        """
        self._node = node
        self._settings = settings
        self._clock = clock
        self._memory = memory
        self._rrn = rrn
        self._substrate = substrate
        self._on_change = on_change
        self._on_health_change = on_health_change
        self.queue = proposing.ProposalQueue.open(db_path)
        self.queue.hints = proposing.REQUEST_HINTS
        self._lock = threading.Lock()
        node.create_service(Proposals, '~/proposals', self.proposals_callback,
                            callback_group=group)

    def propose_payload(self, payload, now, actor: str):
        """Queue a peer's checked payload; an object whose summary() says so."""
        settings = self._settings()
        with self._lock:
            proposal = proposing.propose_peer(self.queue, self._memory, payload, now,
                                              settings.federation, settings.proposals, actor,
                                              self._rrn)
        self._on_health_change()
        return _Held(payload.rrn, proposal)

    def proposals_callback(self, request, response):
        """Answer ~/proposals: list, approve or reject."""
        action = request.action.strip() or 'list'
        now = self._clock.now()
        actor = request.actor.strip() or DEFAULT_ACTOR
        decided, failures = [], []
        try:
            if action not in ACTIONS:
                raise proposing.ProposalError(f'action {action!r} is not one of '
                                              f'{" | ".join(ACTIONS)}')
            with self._lock:
                self.queue.expire(now, self._node.get_name())
                if action != 'list':
                    wanted = request.id.strip()
                    if not wanted:
                        raise proposing.ProposalError(f'say which proposal to {action}: its id '
                                                      '(list shows them), or all to approve '
                                                      'every one')
                    if wanted == 'all' and action == 'approve':
                        ids = [item.id for item in self.queue.pending(now)]
                    else:
                        ids = [wanted]
                    reason = request.reason.strip() or (
                        'approved by an operator' if action == 'approve' else '')
                    for proposal_id in ids:
                        try:
                            decided.append(proposing.decide_proposal(
                                self.queue, proposal_id, action, actor, reason, now,
                                memory_file=self._memory, substrate_factory=self._substrate,
                                allowed_peers=self._settings().federation.allowed_peers))
                        except (RobotMemoryError, ValueError) as error:
                            failures.append(str(error))
                pending = self.queue.pending(now)
        except (RobotMemoryError, ValueError) as error:
            with self._lock:
                response.pending = len(self.queue.pending(now))
            return refuse(response, error)
        if any(item.kind in ('reword', 'peer_context') and item.status == 'approved'
               for item in decided):
            self._on_change()
        self._on_health_change()
        shown = pending if action == 'list' else decided
        response.success = not failures
        response.pending = len(pending)
        response.proposals_json = json.dumps([item.to_dict() for item in shown],
                                             ensure_ascii=False)
        if action == 'list':
            response.message = f'{len(pending)} proposals wait for approval'
        else:
            done = '; '.join(f'{item.status} #{item.id}' + (f': {item.outcome}' if item.outcome
                                                            else '') for item in decided)
            response.message = '; '.join(part for part in (done, *failures) if part) or \
                'no proposals wait for approval'
        return response

    def health(self) -> HealthStatus:
        """Return the HealthStatus of the "proposals" diagnostic status."""
        now = self._clock.now()
        settings = self._settings().proposals
        try:
            with self._lock:
                self.queue.expire(now, self._node.get_name())
                stats = self.queue.stats(now)
        except (ValueError, OSError) as error:
            return HealthStatus(WARN, f'queue unreadable: {error}', {})
        values = {'pending': stats['pending'], 'oldest_age_s': stats['oldest_age_s'],
                  **{f'pending {source}': count for source, count in stats['by_source'].items()},
                  **{f'mode {source}': settings.mode(source) for source in proposing.SOURCES},
                  'expire_after_hours': settings.expire_after_hours}
        if not stats['pending']:
            return HealthStatus(OK, 'nothing waits for approval', values)
        return HealthStatus(OK, (f'{stats["pending"]} waiting for approval, the oldest for '
                                 f'{stats["oldest_age_s"]:.0f} s'), values)

    def close(self) -> None:
        """Close the queue's connection."""
        self.queue.close()


class _Held:
    """What ``PeerFederation.accept_payload`` returns for a payload held for approval."""

    def __init__(self, rrn: str, proposal):
        self.rrn = rrn
        self.proposal = proposal

    def summary(self) -> str:
        """One line for the service reply."""
        if self.proposal is None:
            return f'payload of {self.rrn} accepted: nothing in its block would change'
        return (f'payload of {self.rrn} held for approval as proposal {self.proposal.id} '
                f'(proposals.peers is propose): {self.proposal.summary}')
