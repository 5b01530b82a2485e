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
The proposals queue on a real memory_node: ~/learn and peers propose, ~/proposals decides.

The node is the installed executable in its own process with every source in propose
mode; the probe in this process calls its services and reads ``/diagnostics``.
"""

import datetime as dt
import json

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.federation import peer_context
from robot_memory.ros import convert
from robot_memory.srv import ExchangePeerContext
from robot_memory.srv import GetContext
from robot_memory.srv import Learn
from robot_memory.srv import Proposals
from robot_memory.srv import Recall
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import spin
from support.ros_probe import wait_ready

PEER = 'RRN-000000000002'
TEXT = 'The charging dock is behind the kitchen door'


@pytest.fixture(scope='module')
def node(tmp_path_factory, probe):
    """One memory_node whose agents and peers propose; peer B is allowed."""
    tmp_path = tmp_path_factory.mktemp('proposals')
    process = NodeProcess(tmp_path, 'it_proposals', diagnostics_period_s=0.5, **{
        'proposals.agents': 'propose', 'proposals.peers': 'propose',
        'proposals.expire_after_hours': 2.0, 'federation.allowed_peers': [PEER]}).start()
    try:
        wait_ready(probe, process)
        yield process
    finally:
        assert process.stop() == 0, process.log()


def proposals(probe, node, action='list', **fields):
    """Call ~/proposals."""
    return call(probe, Proposals, f'{node.prefix}/proposals',
                Proposals.Request(action=action, **fields))


def test_a_learn_waits_is_listed_on_diagnostics_and_is_recalled_once_approved(node, probe):
    reply = call(probe, Learn, f'{node.prefix}/learn', Learn.Request(text=TEXT, type='semantic'))
    assert reply.success and reply.id == '', reply.message
    assert reply.message.startswith(f'proposed as #{reply.proposal_id}')
    found = call(probe, Recall, f'{node.prefix}/recall', Recall.Request(query='charging dock'))
    assert found.success and list(found.records) == []
    listed = proposals(probe, node)
    assert listed.success and listed.pending >= 1, listed.message
    [waiting] = [item for item in json.loads(listed.proposals_json) if item['kind'] == 'learn']
    assert waiting['proposer'] == 'ros:learn' and TEXT in waiting['summary']
    assert waiting['id'] == reply.proposal_id
    status = health(probe, 'proposals', where=None)
    assert int(status['pending']) >= 1 and float(status['oldest_age_s']) >= 0.0
    assert status['mode agents'] == 'propose' and status['mode distiller'] == 'apply'
    assert 'waiting for approval' in status['_message']
    decided = proposals(probe, node, 'approve', id=str(waiting['id']), actor='operator:ann',
                        reason='checked on site')
    assert decided.success, decided.message
    assert f'approved #{waiting["id"]}: created ' in decided.message
    found = call(probe, Recall, f'{node.prefix}/recall', Recall.Request(query='charging dock'))
    assert [record.text for record in found.records] == [TEXT]
    with EvidenceStore(node.memory_file.with_name('robot-memory.db')) as store:
        trail = [(record.action, record.actor, record.reason)
                 for record in store.history(f'proposal:{waiting["id"]}')]
    assert trail == [('propose', 'ros:learn', trail[0][2]),
                     ('approve', 'operator:ann', 'checked on site')]


def test_a_retried_learn_is_proposed_once(node, probe):
    request = Learn.Request(text='Ben prefers tea', request_id='tea-1')
    first = call(probe, Learn, f'{node.prefix}/learn', request)
    again = call(probe, Learn, f'{node.prefix}/learn', request)
    assert first.success and first.message.startswith('proposed as #'), first.message
    assert again.success and again.replayed and again.message == first.message
    assert again.proposal_id == first.proposal_id > 0
    waiting = [item for item in json.loads(proposals(probe, node).proposals_json)
               if 'Ben prefers tea' in item['summary']]
    assert len(waiting) == 1
    assert proposals(probe, node, 'reject', id=str(waiting[0]['id']), reason='test').success


def test_refusals_name_what_to_do(node, probe):
    unknown = proposals(probe, node, 'approve', id='999')
    assert not unknown.success and 'there is no proposal 999' in unknown.message
    nothing = proposals(probe, node, 'reject', id='')
    assert not nothing.success and 'say which proposal to reject' in nothing.message
    bad = proposals(probe, node, 'maybe')
    assert not bad.success and "'maybe' is not one of list | approve | reject" in bad.message


def test_replies_tell_the_truth_to_a_ros_caller(node, probe):
    """Issue 26.9: the pending count on a refusal, request fields, no stale preview."""
    reply = call(probe, Learn, f'{node.prefix}/learn', Learn.Request(text='Ann prefers coffee'))
    assert reply.success and reply.proposal_id > 0, reply.message
    for refused in (proposals(probe, node, 'approve', id='999'),
                    proposals(probe, node, 'approve', id='seven'),
                    proposals(probe, node, 'reject', id='')):
        assert not refused.success and refused.pending >= 1, refused.message
        assert 'robot-memory' not in refused.message and '--' not in refused.message
    assert 'action list on ~/proposals' in proposals(probe, node, 'approve', id='999').message
    decided = proposals(probe, node, 'reject', id=str(reply.proposal_id), reason='not ours')
    assert decided.success, decided.message
    [item] = json.loads(decided.proposals_json)
    assert item['status'] == 'rejected' and 'now this would' not in item['summary']


def send(probe, node, text):
    """Peer B sends one entry now; the reply."""
    now = dt.datetime.now(UTC)
    payload = peer_context.PeerPayload(rrn=PEER, sent_at=now, entries=(peer_context.SharedEntry(
        id='mem-0badc0de', type='environment_note', text=text, confidence=0.9,
        first_seen=now, last_reinforced=now, observation_count=2),))
    return call(probe, ExchangePeerContext, f'{node.prefix}/exchange_peer_context',
                ExchangePeerContext.Request(request=convert.peer_context_message(payload)))


def context_text(probe, node):
    """Return the context block ~/get_context answers now."""
    reply = call(probe, GetContext, f'{node.prefix}/get_context',
                 GetContext.Request(include_peers=True))
    assert reply.success, reply.message
    return reply.text


def test_a_peer_payload_waits_then_a_reject_keeps_it_out(node, probe):
    reply = send(probe, node, 'Loading bay floor is wet')
    assert reply.success and 'held for approval as proposal' in reply.message, reply.message
    assert 'wet' not in node.memory_file.read_text(encoding='utf-8') \
        if node.memory_file.exists() else True
    listed = json.loads(proposals(probe, node).proposals_json)
    [held] = [item for item in listed if item['kind'] == 'peer_context']
    assert held['target'] == PEER and 'Loading bay floor is wet' in held['summary']
    refused = proposals(probe, node, 'reject', id=str(held['id']))
    assert not refused.success and 'reason is empty' in refused.message
    rejected = proposals(probe, node, 'reject', id=str(held['id']), reason='B is miscalibrated')
    assert rejected.success and f'rejected #{held["id"]}' in rejected.message
    assert wait_for(lambda: health(probe, 'proposals')['pending'] == '0', 10, spin=spin(probe))
    assert 'wet' not in (node.memory_file.read_text(encoding='utf-8')
                         if node.memory_file.exists() else '')


def test_an_approved_peer_payload_reaches_the_context_block(node, probe):
    reply = send(probe, node, 'Dock 3 is out of order')
    assert 'held for approval as proposal' in reply.message, reply.message
    assert 'Dock 3' not in context_text(probe, node)
    [held] = [item for item in json.loads(proposals(probe, node).proposals_json)
              if item['kind'] == 'peer_context']
    approved = proposals(probe, node, 'approve', id='all', actor='operator:ann')
    assert approved.success and f'approved #{held["id"]}: merged 1 entries from {PEER}' in \
        approved.message, approved.message
    assert approved.pending == 0
    assert 'Dock 3 is out of order' in context_text(probe, node)
