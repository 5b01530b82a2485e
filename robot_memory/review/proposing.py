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
Proposals instead of silent writes: a queue of changes waiting for a person's decision.

Each source of changes has a mode (``ProposalSettings``, the ``proposals.*`` parameters):
``apply`` writes at once (what every source did before), ``propose`` puts the change in
the queue, where it waits until a person approves or rejects it or it expires. The sources:

``distiller``
    An LLM distiller's wording of a new entry during a dream. The dream creates the entry
    with the rule template's text (the evidence is the robot's own) and proposes the
    distiller's text as a ``reword`` of that entry.
``agents``
    Typed-memory writes of agents: ``~/learn``, the MCP ``learn`` tool and
    ``robot-memory learn``. The request is checked (a refusal is returned at once) and
    queued as a ``learn``; approving it runs the learn then.
``peers``
    What a peer robot sends that would change this robot's ``peer_context``: the payload is
    checked like any other (allowlist, signature, size, age) and queued as a
    ``peer_context``; a newer payload from the same peer replaces a pending one. Peers never
    write the robot's own entries (RCAN §6), in either mode.

A pending proposal is in no file, no context block and no recall until it is approved.
The queue lives in the evidence database (table ``proposals``, named migrations recorded in
``proposals_migrations``); every proposal and every decision (approve, reject, expire,
replace) is written to the audit log (``audit``, entry id ``proposal:<id>``) with who
decided and why. Time is always passed in (``now``).

Approving applies the change first and records the decision after it; each application is
idempotent (a learn runs under the request id ``proposal-<id>``, a reword is skipped when
the entry already has the text, a peer block is merged from the same payload), so a
process that dies in between leaves the proposal pending and approving it again finishes
the work once.
"""

import datetime as dt
from typing import Optional
import uuid

from robot_memory.dream import normal
from robot_memory.evidence.proposal_queue import CLI_HINTS  # noqa: F401 - the public names
from robot_memory.evidence.proposal_queue import DECISIONS  # noqa: F401
from robot_memory.evidence.proposal_queue import DEFAULT_SETTINGS  # noqa: F401
from robot_memory.evidence.proposal_queue import KINDS  # noqa: F401
from robot_memory.evidence.proposal_queue import MAX_ACTOR
from robot_memory.evidence.proposal_queue import Proposal
from robot_memory.evidence.proposal_queue import proposal_number
from robot_memory.evidence.proposal_queue import ProposalError
from robot_memory.evidence.proposal_queue import ProposalQueue
from robot_memory.evidence.proposal_queue import ProposalSettings
from robot_memory.evidence.proposal_queue import REQUEST_HINTS  # noqa: F401
from robot_memory.evidence.proposal_queue import reword_summary  # noqa: F401
from robot_memory.evidence.proposal_queue import SOURCES  # noqa: F401
from robot_memory.evidence.proposal_queue import STATUSES  # noqa: F401
from robot_memory.rcan import untrusted
from robot_memory.rcan.schema import entry_index
from robot_memory.substrate.learning import LearnRequest
from robot_memory.substrate.vocabulary import SENSITIVITIES

# ---------------------------------------------------------------------- what each kind does

# A learn's summary names its text up to this sensitivity (the default service_max_trust):
# above it the text is a secret, and the summary is read by anyone the review page serves.
SUMMARY_MAX_SENSITIVITY = 'medium'
LEARN_FIELDS = ('text', 'type', 'tags', 'context', 'sensitivity', 'confidence', 'conditions',
                'single_valued')


def learn_or_propose(substrate, queue_factory, settings: ProposalSettings, now: dt.datetime,
                     actor: str, **fields) -> dict:
    """
    Return an agent's learn: done at once (``apply``) or checked and queued (``propose``).

    ``fields`` are the learn arguments of LEARN_FIELDS. The reply is the LearnResult's
    dict; a queued one is ``{'action': 'proposed', 'proposal': <id>, ...}`` with what the
    learn would do now in ``message``. ``queue_factory()`` gives the ProposalQueue.
    """
    unknown = sorted(set(fields) - set(LEARN_FIELDS))
    if unknown:
        raise ValueError(f'not learn fields: {", ".join(unknown)}')
    request = LearnRequest(now=now, actor=actor, **fields)
    if settings.agents == 'apply':
        return substrate.learn(request).to_dict()
    preview = substrate.preview_learn(request)
    kept = {key: value for key, value in fields.items() if value is not None}
    sensitivity = substrate.sensitivity_of(fields['text'], fields.get('sensitivity'))
    if substrate.seals(sensitivity):
        # Encrypted at rest while it waits, as it will be once stored: the queue, its
        # summary and the audit log hold nothing of the text.
        kept = substrate.seal_fields(f'proposal-{uuid.uuid4().hex}', kept)
        summary = (f'learn {preview.type} ({sensitivity} sensitivity, encrypted at rest: '
                   f'{len(fields["text"])} characters); now this would: {preview.action}')
    elif SENSITIVITIES.index(sensitivity) > SENSITIVITIES.index(SUMMARY_MAX_SENSITIVITY):
        # Not sealed, but a secret all the same: the summary is shown to whoever reads the
        # review page, the proposals list and the audit log, so it names no text.
        summary = (f'learn {preview.type} ({sensitivity} sensitivity: {len(fields["text"])} '
                   'characters, not shown in this summary); now this would: '
                   f'{preview.action}')
    else:
        text = ' '.join(fields['text'].split())
        shown = text if len(text) <= 120 else text[:117] + '...'
        summary = (f'learn {preview.type} "{shown}"'
                   + (f' tags {", ".join(fields.get("tags") or [])}' if fields.get('tags')
                      else '')
                   + f'; now this would: {preview.message or preview.action}')
    queue = queue_factory()
    proposal = queue.propose('learn', actor, preview.type, summary, kept, now,
                             settings.expire_after_s)
    return {'action': 'proposed', 'record_id': '', 'type': preview.type, 'duplicate': False,
            'proposal': proposal.id,
            'message': f'proposed as #{proposal.id}; nothing is stored until a person '
                       f'approves it (robot-memory approve {proposal.id}); {summary}'}


def apply_learn(substrate, proposal: Proposal, now: dt.datetime, approver: str) -> str:
    """Run an approved learn (once: under the request id ``proposal-<id>``); what it did."""
    payload = proposal.payload
    if 'sealed' in payload:
        payload = substrate.open_fields(payload)
    fields = {key: value for key, value in payload.items() if key in LEARN_FIELDS}
    actor = f'{proposal.proposer} (approved by {approver})'[:MAX_ACTOR]
    reply = substrate.once(f'proposal-{proposal.id}', 'learn', fields, now,
                           lambda: substrate.learn(now=now, actor=actor, **fields).to_dict())
    return f'{reply["action"]} {reply["record_id"]}: {reply.get("message", "")}'


def apply_reword(memory_file, proposal: Proposal, now: dt.datetime) -> tuple:
    """
    Give the entry the approved text under the file lock; (outcome, canonical entry).

    A text that reads like an instruction to a model is released with it: the entry's
    ``released`` field gets the text's ``untrusted.release_key``, so the block injects it.
    A release (``before`` equal to ``after``: the dream's or the page's proposal for a held
    entry) applies to the entry's text now if the dream restated it since around the same
    flagged text.
    """
    # lazy: the dream, 140 ms and 4 MB of robot-memory learn
    from robot_memory.dream import autodream
    entry_id = proposal.target
    before, after = proposal.payload['before'], proposal.payload['after']
    with memory_file.update(now, on_corrupt='raise') as result:
        document = result.document
        position = entry_index(document.entries, entry_id)
        if position is None:
            raise ProposalError(f'entry {entry_id} is no longer in the memory file (pruned or '
                                f'deleted); reject proposal {proposal.id}')
        entry = document.entries[position]
        key = untrusted.release_key(after)
        if before == after and key and untrusted.release_key(entry.text) == key:
            after = entry.text  # restated since: the same flagged text is released
        if entry.text not in (before, after) and not normal.restated_since(entry.text, before,
                                                                           after):
            raise ProposalError(f"entry {entry_id}'s text was changed since the proposal (now "
                                f'"{entry.text}"); reject proposal {proposal.id}, or edit the '
                                'memory file by hand')
        update = {'text': after, untrusted.RELEASED: key} if key else {'text': after}
        updated = entry.model_copy(update=update)
        document.entries[position] = updated
    if key:
        return (f'entry {entry_id} released to the brain: "{after}"',
                autodream.canonical(updated))
    return f'entry {entry_id} now reads "{after}"', autodream.canonical(updated)


def apply_peer(memory_file, proposal: Proposal, now: dt.datetime, allowed=None) -> str:
    """
    Merge an approved peer payload into its block of ``peer_context``.

    ``allowed`` (the node's ``federation.allowed_peers``) refuses a peer that has left the
    allowlist since it sent; None when the caller does not know the allowlist (the CLI).
    """
    # lazy: the peer merge, 20 ms and 1 MB of robot-memory learn
    from robot_memory.federation import peer_context
    payload = peer_context.PeerPayload.model_validate(proposal.payload['payload'])
    if allowed is not None and payload.rrn not in allowed:
        raise ProposalError(f'{payload.rrn} is no longer on federation.allowed_peers; reject '
                            f'proposal {proposal.id}')
    policy = peer_context.FederationPolicy(
        allowed_peers=(payload.rrn,),
        corroboration_jaccard=proposal.payload.get('corroboration_jaccard', 0.6))
    try:
        with memory_file.update(now, proposal.payload.get('rrn'), on_corrupt='raise') as result:
            outcome = peer_context.merge_peer_payload(result.document, payload, now, policy)
    except peer_context.PeerRejected as error:
        raise ProposalError(f'{error}; reject proposal {proposal.id}') from None
    return outcome.summary()


def decide_proposal(queue: ProposalQueue, proposal_id, decision: str, actor: str, reason: str,
                    now: dt.datetime, memory_file=None, substrate_factory=None,
                    allowed_peers=None) -> Proposal:
    """
    Approve or reject one proposal, applying an approved change where it belongs.

    ``memory_file`` (a MemoryFile) is needed to approve a reword or a peer block,
    ``substrate_factory()`` (giving the Substrate) to approve a learn; ``allowed_peers``
    (see ``apply_peer``) when the caller knows the allowlist.
    """
    if decision == 'reject':
        return queue.decide(proposal_id, 'reject', actor, reason, now)
    state = {}

    def apply(proposal: Proposal) -> str:
        if proposal.kind == 'learn':
            return apply_learn(substrate_factory(), proposal, now, actor)
        if memory_file is None:
            raise ValueError('approving a change of the memory file needs the memory file')
        if proposal.kind == 'peer_context':
            return apply_peer(memory_file, proposal, now, allowed_peers)
        outcome, state['entry'] = apply_reword(memory_file, proposal, now)
        return outcome

    def also(conn, now_s: float) -> None:
        if 'entry' not in state:
            return
        proposal = queue.get(proposal_number(proposal_id))
        assert proposal is not None  # being decided in this transaction
        # The entry as it was, for robot_memory.review.undo (before the snapshot moves).
        conn.execute('INSERT INTO entry_versions (at, entry_id, prior) SELECT ?, entry_id, '
                     'data FROM snapshot WHERE entry_id = ?', (now_s, proposal.target))
        # The dream's snapshot follows the file, so the next dream sees no person's edit.
        conn.execute('UPDATE snapshot SET data = ? WHERE entry_id = ?',
                     (state['entry'], proposal.target))
        queue._audit_entry(now_s, proposal, actor, reason)

    return queue.decide(proposal_id, 'approve', actor, reason, now, apply, also)


def propose_peer(queue: ProposalQueue, memory_file, payload, now: dt.datetime, policy,
                 settings: ProposalSettings, actor: str,
                 rrn: Optional[str] = None) -> Optional[Proposal]:
    """
    Queue a checked peer payload that would change its block; None when it changes nothing.

    What would change is found by merging into the loaded document, which is not saved.
    A pending proposal of the same peer is replaced (the newer payload describes the peer's
    memory now). Raises ``federation.PeerRejected`` like a merge would (e.g. stale).
    ``rrn`` is this robot's, for a memory file that does not exist yet.
    """
    # lazy: the peer merge, 20 ms and 1 MB of robot-memory learn
    from robot_memory.federation import peer_context
    from robot_memory.rcan import memory_file as memory_module
    document = (memory_file.load(now).document if memory_file.exists()
                else memory_module.new_document(rrn or memory_module.UNSET_RRN, now))
    outcome = peer_context.merge_peer_payload(document, payload, now, policy)
    if not (outcome.added or outcome.changed or outcome.removed):
        return None
    texts = {entry.id: entry.text for block in document.peer_context or ()
             if block.rrn == payload.rrn for entry in block.entries}
    shown = [f'+ "{texts[entry_id]}"' for entry_id in outcome.added[:3]]
    shown += [f'~ "{texts[entry_id]}"' for entry_id in outcome.changed[:3]]
    summary = (f'peer {payload.rrn}: {len(outcome.added)} new, {len(outcome.changed)} '
               f'changed, {len(outcome.removed)} withdrawn entries in its peer_context block'
               + (f' ({"; ".join(shown)})' if shown else ''))
    data = {'payload': payload.to_data(iso=True), 'rrn': rrn,
            'corroboration_jaccard': policy.corroboration_jaccard}
    return queue.propose('peer_context', actor, payload.rrn, summary, data, now,
                         settings.expire_after_s, replace_pending=True)
