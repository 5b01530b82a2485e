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

The queue (``robot_memory.proposals``) has a connection of its own to the node's database,
used under one lock from the executor's threads. ``~/proposals`` (``Proposals.srv``) lists,
approves or rejects; an approved change is made where it belongs (a learn in the typed
memory, a reword or a peer block in the memory file) and the context is published again.
The ``proposals`` status on ``/diagnostics`` shows how many wait and how old the oldest is;
overdue ones are expired (and audited) when it is computed.
"""

import json
import threading

from robot_memory import proposals
from robot_memory.errors import MemoryFileError
from robot_memory.srv import Proposals

ACTIONS = ('list', 'approve', 'reject')
DEFAULT_ACTOR = 'ros:proposals'


class ProposalServices:
    """Mixin of MemoryNode: the proposals queue, ``~/proposals`` and its health."""

    def _init_proposals(self, group) -> None:
        try:
            self.proposal_queue = proposals.ProposalQueue.open(self.db_path)
        except ValueError as error:
            raise self.startup_error(f'proposals queue: {error}') from None
        self._proposal_lock = threading.Lock()
        self.create_service(Proposals, '~/proposals', self.proposals_callback,
                            callback_group=group)

    def queue_learn(self, now, actor: str, **fields) -> dict:
        """
        Return an agent's learn through the configured mode (see proposals.learn_or_propose).

        A proposal is written on the typed memory's own connection, under its lock: with a
        request_id the learn runs inside the transaction that keeps its reply for retries,
        so the proposal and that reply are committed together.
        """
        settings = self.settings.proposals
        if settings.agents == 'apply':
            return proposals.learn_or_propose(self.substrate, None, settings, now, actor,
                                              **fields)
        with self.substrate.exclusive() as db:
            return proposals.learn_or_propose(self.substrate,
                                              lambda: proposals.ProposalQueue(db), settings,
                                              now, actor, **fields)

    def propose_payload(self, payload, now, actor: str):
        """Queue a peer's checked payload; an object whose summary() says so."""
        with self._proposal_lock:
            proposal = proposals.propose_peer(self.proposal_queue, self.memory, payload, now,
                                              self.settings.federation,
                                              self.settings.proposals, actor, self.rrn)
        self.publish_diagnostics()
        return _Held(payload.rrn, proposal)

    def proposals_callback(self, request, response):
        """Answer ~/proposals: list, approve or reject."""
        action = request.action.strip() or 'list'
        now = self.clock_.now()
        actor = request.actor.strip() or DEFAULT_ACTOR
        decided, failures = [], []
        try:
            if action not in ACTIONS:
                raise proposals.ProposalError(f'action {action!r} is not one of '
                                              f'{" | ".join(ACTIONS)}')
            with self._proposal_lock:
                self.proposal_queue.expire(now, self.get_name())
                if action != 'list':
                    wanted = request.id.strip()
                    if not wanted:
                        raise proposals.ProposalError(f'say which proposal to {action}: its id '
                                                      '(list shows them), or all to approve '
                                                      'every one')
                    if wanted == 'all' and action == 'approve':
                        ids = [item.id for item in self.proposal_queue.pending(now)]
                    else:
                        ids = [wanted]
                    reason = request.reason.strip() or (
                        'approved by an operator' if action == 'approve' else '')
                    for proposal_id in ids:
                        try:
                            decided.append(proposals.decide_proposal(
                                self.proposal_queue, proposal_id, action, actor, reason, now,
                                memory_file=self.memory,
                                substrate_factory=lambda: self.substrate,
                                allowed_peers=self.settings.federation.allowed_peers))
                        except (ValueError, MemoryFileError) as error:
                            failures.append(str(error))
                pending = self.proposal_queue.pending(now)
        except (ValueError, MemoryFileError) as error:
            response.success = False
            response.message = str(error)
            return response
        if any(item.kind in ('reword', 'peer_context') and item.status == 'approved'
               for item in decided):
            self.cache.invalidate()
            self.publish_context()
        self.publish_diagnostics()
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

    def proposals_health(self) -> tuple:
        """(level, message, values) for the "proposals" diagnostic status."""
        now = self.clock_.now()
        settings = self.settings.proposals
        try:
            with self._proposal_lock:
                self.proposal_queue.expire(now, self.get_name())
                stats = self.proposal_queue.stats(now)
        except (ValueError, OSError) as error:
            return 1, f'queue unreadable: {error}', {}
        values = {'pending': stats['pending'], 'oldest_age_s': stats['oldest_age_s'],
                  **{f'pending {source}': count for source, count in stats['by_source'].items()},
                  **{f'mode {source}': settings.mode(source) for source in proposals.SOURCES},
                  'expire_after_hours': settings.expire_after_hours}
        if not stats['pending']:
            return 0, 'nothing waits for approval', values
        return 0, (f'{stats["pending"]} waiting for approval, the oldest for '
                   f'{stats["oldest_age_s"]:.0f} s'), values

    def close_proposals(self) -> None:
        """Close the queue's connection."""
        queue = getattr(self, 'proposal_queue', None)
        if queue is not None:
            queue.close()


class _Held:
    """What ``accept_payload`` returns for a payload held for approval."""

    def __init__(self, rrn: str, proposal):
        self.rrn = rrn
        self.proposal = proposal

    def summary(self) -> str:
        """One line for the service reply."""
        if self.proposal is None:
            return f'payload of {self.rrn} accepted: nothing in its block would change'
        return (f'payload of {self.rrn} held for approval as proposal {self.proposal.id} '
                f'(proposals.peers is propose): {self.proposal.summary}')
