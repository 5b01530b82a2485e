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

"""The proposals queue: settings, queue, decisions, audit, and each source in propose mode."""

import datetime as dt
import json

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.dream import summary as dream_summary
from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.federation import peer_context
from robot_memory.rcan import context
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import new_entry
from robot_memory.review import proposing
from robot_memory.review.proposing import ProposalError
from robot_memory.review.proposing import ProposalQueue
from robot_memory.review.proposing import ProposalSettings
from robot_memory.settings_file import parameter_specs
from robot_memory.settings_file import validate_parameters
from robot_memory.substrate.substrate_store import Substrate
from support.cli import run

NOW = dt.datetime(2026, 5, 2, 2, 0, tzinfo=UTC)
NIGHT = dt.datetime(2026, 5, 1, 20, 0, tzinfo=UTC)
LLM_TEXT = 'Left wheel encoder drops ticks under load; keep speed at or below 0.3 m/s'
PROPOSE_ALL = ProposalSettings(distiller='propose', agents='propose', peers='propose',
                               expire_after_hours=24)


def audit_rows(path, entry_id):
    with EvidenceStore(path) as store:
        return [(record.action, record.actor, record.reason) for record in
                store.history(entry_id)]


# ------------------------------------------------------------------------------ settings

def test_every_source_applies_by_default_as_before():
    settings = validate_parameters({}).proposals
    assert (settings.distiller, settings.agents, settings.peers) == ('apply',) * 3
    assert settings.expire_after_hours == 168.0
    names = {spec.name for spec in parameter_specs()}
    assert {'proposals.distiller', 'proposals.agents', 'proposals.peers',
            'proposals.expire_after_hours'} <= names


def test_a_bad_mode_is_refused_naming_the_setting_and_what_to_use():
    with pytest.raises(ValueError) as error:
        validate_parameters({'proposals.agents': 'maybe'})
    message = str(error.value)
    assert message.startswith('proposals.agents: ')
    assert "'maybe' is not a mode" in message and 'apply' in message and 'propose' in message
    with pytest.raises(ValueError, match='proposals.expire_after_hours'):
        validate_parameters({'proposals.expire_after_hours': 0.0})


def test_the_parameters_file_documents_the_settings():
    from support.paths import REPO
    text = (REPO / 'config' / 'robot_memory.yaml').read_text(encoding='utf-8')
    for name in ('distiller', 'agents', 'peers', 'expire_after_hours'):
        assert f'      {name}: ' in text


# ------------------------------------------------------------------------------ the queue

@pytest.fixture
def queue(tmp_path):
    with ProposalQueue.open(tmp_path / 'robot-memory.db') as opened:
        yield opened


def test_the_queue_is_a_named_migration_in_the_evidence_database(tmp_path, queue):
    names = [row[0] for row in queue.db.conn.execute('SELECT name FROM proposals_migrations')]
    assert names == ['0001_proposals_queue']
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:  # shares the file
        assert store.audit_count() == 0


def test_propose_list_and_stats_then_expiry_is_audited(tmp_path, queue):
    first = queue.propose('learn', 'mcp', 'semantic', 'learn "a"', {'text': 'a'}, NOW, 3600)
    second = queue.propose('learn', 'cli', 'semantic', 'learn "b"', {'text': 'b'},
                           NOW + dt.timedelta(minutes=30), 3600)
    later = NOW + dt.timedelta(minutes=45)
    assert [item.id for item in queue.pending(later)] == [first.id, second.id]
    assert queue.stats(later) == {'pending': 2, 'oldest_age_s': 2700.0,
                                  'by_source': {'distiller': 0, 'agents': 2, 'peers': 0}}
    # An hour after the first: it has expired, the second has not.
    after = NOW + dt.timedelta(minutes=61)
    assert [item.id for item in queue.pending(after)] == [second.id]
    expired = queue.expire(after, 'memory_node')
    assert [(item.id, item.status, item.decided_by) for item in expired] == \
        [(first.id, 'expired', 'memory_node')]
    rows = audit_rows(tmp_path / 'robot-memory.db', f'proposal:{first.id}')
    assert [row[:2] for row in rows] == [('propose', 'mcp'), ('expire', 'memory_node')]
    assert 'the change was not made' in rows[1][2]


def test_refusals_say_what_to_do(queue):
    proposal = queue.propose('learn', 'mcp', 'semantic', 'learn "a"', {'text': 'a'}, NOW, 60)
    with pytest.raises(ProposalError, match='there is no proposal 99; robot-memory proposals'):
        queue.decide(99, 'reject', 'ops', 'no', NOW)
    with pytest.raises(ProposalError, match="'x7' is not a proposal id"):
        queue.decide('x7', 'reject', 'ops', 'no', NOW)
    with pytest.raises(ProposalError, match='reason is empty'):
        queue.decide(proposal.id, 'reject', 'ops', '  ', NOW)
    late = NOW + dt.timedelta(minutes=2)
    with pytest.raises(ProposalError, match=r'already expired .* have its source propose it '
                                            'again'):
        queue.decide(proposal.id, 'approve', 'ops', 'ok', late, apply=lambda item: 'done')
    assert queue.get(proposal.id).status == 'expired'


def test_a_decision_is_made_once_and_audited_with_actor_and_reason(tmp_path, queue):
    proposal = queue.propose('learn', 'mcp', 'semantic', 'learn "a"', {'text': 'a'}, NOW, 60)
    decided = queue.decide(f'#{proposal.id}', 'reject', 'cli:ops', 'not true', NOW)
    assert (decided.status, decided.decided_by, decided.reason) == \
        ('rejected', 'cli:ops', 'not true')
    with pytest.raises(ProposalError, match='already rejected .* by cli:ops .*nothing to do'):
        queue.decide(proposal.id, 'approve', 'other', 'ok', NOW, apply=lambda item: 'done')
    assert audit_rows(tmp_path / 'robot-memory.db', f'proposal:{proposal.id}')[-1] == \
        ('reject', 'cli:ops', 'not true')


def test_a_failing_application_leaves_the_proposal_pending(queue):
    proposal = queue.propose('learn', 'mcp', 'semantic', 'learn "a"', {'text': 'a'}, NOW, 60)

    def fail(item):
        raise ProposalError('cannot')

    with pytest.raises(ProposalError, match='cannot'):
        queue.decide(proposal.id, 'approve', 'ops', 'ok', NOW, apply=fail)
    assert queue.get(proposal.id).status == 'pending'


# ------------------------------------------------------------------------------ agents

def test_a_proposed_learn_is_not_recalled_until_approved(tmp_path):
    path = tmp_path / 'robot-memory.db'
    with Substrate(path) as substrate, ProposalQueue.open(path) as queue:
        reply = proposing.learn_or_propose(
            substrate, lambda: queue, PROPOSE_ALL, NOW, 'mcp',
            text='The charging dock is behind the kitchen door', type='semantic',
            tags=['dock'])
        assert reply['action'] == 'proposed' and reply['record_id'] == ''
        assert 'would: new semantic record' in reply['message']
        assert substrate.count() == 0
        assert substrate.recall('charging dock', now=NOW).hits == []
        [pending] = queue.pending(NOW)
        assert pending.kind == 'learn' and pending.proposer == 'mcp'
        assert 'The charging dock is behind the kitchen door' in pending.summary
        # A bad request is refused at once, never queued.
        with pytest.raises(ValueError, match='text'):
            proposing.learn_or_propose(substrate, lambda: queue, PROPOSE_ALL, NOW, 'mcp',
                                       text='   ')
        decided = proposing.decide_proposal(queue, pending.id, 'approve', 'cli:ops',
                                            'checked on site', NOW,
                                            substrate_factory=lambda: substrate)
        assert decided.status == 'approved' and decided.outcome.startswith('created ')
        [hit] = substrate.recall('charging dock', now=NOW).hits
        history = substrate.history(hit.id)
        assert history[0].actor == 'mcp (approved by cli:ops)'
        # Approving again changes nothing and says so.
        with pytest.raises(ProposalError, match='already approved'):
            proposing.decide_proposal(queue, pending.id, 'approve', 'cli:ops', 'again', NOW,
                                      substrate_factory=lambda: substrate)
        assert substrate.count() == 1
    assert [row[:2] for row in audit_rows(path, f'proposal:{pending.id}')] == \
        [('propose', 'mcp'), ('approve', 'cli:ops')]


def test_apply_mode_learns_at_once(tmp_path):
    path = tmp_path / 'robot-memory.db'
    with Substrate(path) as substrate:
        reply = proposing.learn_or_propose(substrate, None, proposing.DEFAULT_SETTINGS, NOW,
                                           'mcp', text='Ben prefers tea')
        assert reply['action'] == 'created' and substrate.count() == 1


# ------------------------------------------------------------------------------ distiller

class Wording:
    """A distiller that words every candidate with LLM_TEXT (as an LLM would)."""

    def rewrite(self, candidates):
        return {candidate.signature: LLM_TEXT for candidate in candidates}


def evidence(directory):
    store = EvidenceStore(directory / 'robot-memory.db')
    for minute in range(0, 120, 2):
        store.add(DiagnosticObservation(NIGHT + dt.timedelta(minutes=minute),
                                        'base: left encoder', 'wheel_left', 1,
                                        f'dropped {minute} ticks'))
    return store


def test_the_distillers_text_waits_for_approval_and_the_summary_lists_it(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    store = evidence(tmp_path)
    config = DreamConfig(rrn='RRN-000000000001')
    report = dream(store, memory, NOW, store.rules, config, Wording(), proposals=PROPOSE_ALL)
    rule_text = 'base: left encoder (wheel_left) reports WARN: dropped 118 ticks'
    [entry] = memory.load(NOW).document.entries
    assert entry.text == rule_text
    assert LLM_TEXT not in memory.path.read_text(encoding='utf-8')
    block = context.build_context(memory.load(NOW).document, NOW + dt.timedelta(days=3))
    assert LLM_TEXT not in str(block)
    [proposal_id] = report.proposed
    summary = dream_summary.build_summary(report)
    assert '## Waiting for approval (1)' in summary
    assert f'#{proposal_id} reword from distiller' in summary and LLM_TEXT in summary
    assert 'every change above was applied directly' not in summary
    kept = pathlib_text(report.summary_file)
    assert LLM_TEXT in kept
    with ProposalQueue(store.db) as queue:
        decided = proposing.decide_proposal(queue, proposal_id, 'approve', 'cli:ops',
                                            'reads better', NOW + dt.timedelta(hours=1),
                                            memory_file=memory)
    assert decided.outcome == f'entry {entry.id} now reads "{LLM_TEXT}"'
    [after] = memory.load(NOW).document.entries
    assert (after.id, after.text) == (entry.id, LLM_TEXT)
    # The next dream does not take the approved text for a person's edit.
    later = dream(store, memory, NOW + dt.timedelta(hours=2), store.rules, config,
                  proposals=PROPOSE_ALL)
    assert later.manual == []
    actions = [record.action for record in store.history(entry.id)]
    assert actions == ['create', 'approve']
    assert [record.action for record in store.history(f'proposal:{proposal_id}')] == \
        ['propose', 'approve']
    store.close()


def pathlib_text(path):
    import pathlib
    return pathlib.Path(path).read_text(encoding='utf-8')


def test_in_apply_mode_the_distiller_writes_and_nothing_waits(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    store = evidence(tmp_path)
    report = dream(store, memory, NOW, store.rules, DreamConfig(rrn='RRN-000000000001'),
                   Wording())
    assert [entry.text for entry in memory.load(NOW).document.entries] == [LLM_TEXT]
    assert report.proposed == [] and report.waiting == []
    assert 'none: every change above was applied directly' in \
        dream_summary.build_summary(report)
    store.close()


def test_a_dream_lists_every_waiting_proposal_and_expires_overdue_ones(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    store = evidence(tmp_path)
    with ProposalQueue(store.db) as queue:
        old = queue.propose('learn', 'mcp', 'semantic', 'learn "old"', {'text': 'old'},
                            NOW - dt.timedelta(days=2), 3600)
        fresh = queue.propose('learn', 'mcp', 'semantic', 'learn "fresh"', {'text': 'fresh'},
                              NOW, 3600)
    report = dream(store, memory, NOW, store.rules, DreamConfig(rrn='RRN-000000000001'))
    assert [item['id'] for item in report.waiting] == [fresh.id]
    assert f'#{fresh.id} learn from agents' in dream_summary.build_summary(report)
    assert [record.action for record in store.history(f'proposal:{old.id}')] == \
        ['propose', 'expire']
    store.close()


def test_a_reword_of_an_entry_that_is_gone_is_refused_with_advice(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    memory.path.write_bytes(render(new_document('RRN-000000000001', NOW)))
    with ProposalQueue.open(tmp_path / 'robot-memory.db') as queue:
        proposal = queue.propose('reword', 'distiller', 'mem-00000000',
                                 proposing.reword_summary('mem-00000000', 'a', 'b'),
                                 {'before': 'a', 'after': 'b'}, NOW, 3600)
        with pytest.raises(ProposalError, match=f'no longer in the memory file .*reject '
                                                f'proposal {proposal.id}'):
            proposing.decide_proposal(queue, proposal.id, 'approve', 'ops', 'ok', NOW,
                                      memory_file=memory)
        assert queue.get(proposal.id).status == 'pending'


# ------------------------------------------------------------------------------ peers

def peer_payload(sent_at, text='Charging dock 3 is out of order'):
    return peer_context.PeerPayload.model_validate({
        'rrn': 'RRN-000000000002', 'sent_at': sent_at,
        'entries': [{'id': 'mem-1234abcd', 'type': 'environment_note', 'text': text,
                     'confidence': 0.8, 'first_seen': sent_at, 'last_reinforced': sent_at,
                     'observation_count': 3, 'tags': []}]})


def test_a_peer_payload_waits_replaces_an_older_one_and_merges_when_approved(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    document = new_document('RRN-000000000001', NOW)
    document.entries = [new_entry('hardware_observation', 'Left wheel slips', 0.9, NOW)]
    memory.path.write_bytes(render(document))
    policy = peer_context.FederationPolicy(allowed_peers=('RRN-000000000002',))
    with ProposalQueue.open(tmp_path / 'robot-memory.db') as queue:
        first = proposing.propose_peer(queue, memory, peer_payload(NOW), NOW, policy,
                                       PROPOSE_ALL, 'ros:exchange')
        assert 'RRN-000000000002' in first.summary and '1 new' in first.summary
        later = NOW + dt.timedelta(minutes=5)
        second = proposing.propose_peer(queue, memory, peer_payload(later, 'Dock 3 fixed'),
                                        later, policy, PROPOSE_ALL, 'ros:exchange')
        assert queue.get(first.id).status == 'replaced'
        assert [item.id for item in queue.pending(later)] == [second.id]
        assert memory.load(later).document.peer_context in (None, [])
        assert 'Dock 3' not in str(context.build_context(memory.load(later).document, later))
        with pytest.raises(ProposalError, match='no longer on federation.allowed_peers; '
                                                f'reject proposal {second.id}'):
            proposing.decide_proposal(queue, second.id, 'approve', 'ros:proposals', 'ok',
                                      later, memory_file=memory, allowed_peers=())
        proposing.decide_proposal(queue, second.id, 'approve', 'cli:ops', 'trusted', later,
                                  memory_file=memory, allowed_peers=('RRN-000000000002',))
    [block] = memory.load(later).document.peer_context
    assert [entry.text for entry in block.entries] == ['Dock 3 fixed']
    assert [row[0] for row in audit_rows(tmp_path / 'robot-memory.db',
                                         f'proposal:{first.id}')] == ['propose', 'replace']


def queued_peer_block(tmp_path, monkeypatch, at=NOW):
    """Return a memory file and the id of a peer block proposed to it at ``at``."""
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    if not memory.path.exists():
        memory.path.write_bytes(render(new_document('RRN-000000000001', NOW)))
    policy = peer_context.FederationPolicy(allowed_peers=('RRN-000000000002',))
    with ProposalQueue.open(tmp_path / 'robot-memory.db') as queue:
        return memory, proposing.propose_peer(queue, memory, peer_payload(at), at, policy,
                                              PROPOSE_ALL, 'ros:exchange').id


def test_the_cli_checks_the_peer_allowlist_of_the_config_it_is_given(tmp_path, capsys,
                                                                     monkeypatch):
    for day in range(3):  # each replaces the one before: the last waits
        memory, waiting = queued_peer_block(tmp_path, monkeypatch, NOW + dt.timedelta(days=day))
    configs = {}
    for name, peers in (('gone', "['RRN-000000000003']"), ('kept', "['RRN-000000000002']")):
        configs[name] = tmp_path / f'{name}.yaml'
        configs[name].write_text('/**:\n  ros__parameters:\n    federation:\n'
                                 f'      allowed_peers: {peers}\n', encoding='utf-8')
    at = ['--file', memory.path, '--at', '2026-05-04T03:00:00Z']
    code, out, err = run(capsys, 'approve', waiting, '--config', configs['gone'], *at)
    assert code == 1 and 'no longer on federation.allowed_peers' in err and out == ''
    code, out, err = run(capsys, 'approve', waiting, '--config', configs['kept'], *at)
    assert code == 0 and out.startswith(f'approved #{waiting}') and 'not checked' not in err
    [block] = memory.load(NOW + dt.timedelta(days=3)).document.peer_context
    assert block.rrn == 'RRN-000000000002'


def test_the_cli_says_when_it_could_not_check_the_peer_allowlist(tmp_path, capsys,
                                                                 monkeypatch):
    memory, waiting = queued_peer_block(tmp_path, monkeypatch)
    code, out, err = run(capsys, 'approve', waiting, '--file', memory.path, '--at',
                         '2026-05-02T03:00:00Z')
    assert code == 0 and out.startswith(f'approved #{waiting}')
    assert 'the peer allowlist was not checked; give --config' in err


# ------------------------------------------------------------------------------ CLI

@pytest.fixture
def robot(tmp_path, monkeypatch):
    monkeypatch.delenv('CASTOR_ROBOT_MEMORY_FILE', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    proposals:\n      agents: propose\n'
                      '      expire_after_hours: 1.0\n', encoding='utf-8')
    return tmp_path / 'robot-memory.md', config


def test_cli_learn_proposes_then_list_approve_and_reject(robot, capsys):
    memory, config = robot
    at = ['--at', '2026-05-02T02:00:00Z']
    code, out, _ = run(capsys, 'learn', 'The charging dock is behind the kitchen door',
                       '--file', memory, '--config', config, *at)
    assert code == 0 and out.startswith('proposed #1 (')
    code, out, _ = run(capsys, 'learn', 'Ben prefers tea', '--file', memory, '--config',
                       config, '--json', *at)
    assert json.loads(out)['proposal'] == 2
    code, out, _ = run(capsys, 'recall', 'charging dock', '--file', memory, *at)
    assert code == 1   # nothing is recalled while it waits
    code, out, _ = run(capsys, 'proposals', '--file', memory, *at)
    assert code == 0
    assert '#1 learn from agents (cli), proposed 0 s ago, expires in 60 min' in out
    assert 'The charging dock is behind the kitchen door' in out and '2 waiting' in out
    code, out, _ = run(capsys, 'proposals', '--file', memory, '--json', *at)
    assert [item['id'] for item in json.loads(out)['pending']] == [1, 2]
    code, out, _ = run(capsys, 'approve', '1', '--file', memory, '--actor', 'ops', *at)
    assert code == 0 and out.startswith('approved #1 (learn from agents): created ')
    code, out, _ = run(capsys, 'recall', 'charging dock', '--file', memory, *at)
    assert code == 0 and 'kitchen door' in out
    with pytest.raises(SystemExit) as usage:   # --reason is required
        run(capsys, 'reject', '2', '--file', memory, *at)
    assert usage.value.code == 2 and '--reason' in capsys.readouterr().err
    code, out, _ = run(capsys, 'reject', '2', '--reason', 'not ours', '--file', memory,
                       '--actor', 'ops', *at)
    assert code == 0 and out.startswith('rejected #2')
    code, _, err = run(capsys, 'approve', '7', '--file', memory, *at)
    assert code == 1 and 'there is no proposal 7; robot-memory proposals lists' in err
    code, out, _ = run(capsys, 'proposals', '--all', '--file', memory, *at)
    assert 'no proposals wait' in out and '#2 rejected by ops: not ours' in out
    code, out, _ = run(capsys, 'history', 'proposal:2', '--file', memory)
    assert 'reject' in out and 'ops' in out and 'not ours' in out


def test_cli_approve_all_and_an_expired_id(robot, capsys):
    memory, config = robot
    code, _, err = run(capsys, 'proposals', '--file', memory)
    assert code == 1 and 'no database at' in err and 'check --file' in err
    assert not memory.with_name('robot-memory.db').exists()
    for text in ('Ben prefers tea', 'Ann prefers coffee'):
        run(capsys, 'learn', text, '--file', memory, '--config', config,
            '--at', '2026-05-02T02:00:00Z')
    code, _, err = run(capsys, 'approve', '1', '--file', memory, '--at',
                       '2026-05-02T04:00:00Z')
    assert code == 1 and 'already expired' in err and 'propose it again' in err
    run(capsys, 'learn', 'Carl prefers juice', '--file', memory, '--config', config,
        '--at', '2026-05-02T05:00:00Z')
    code, out, _ = run(capsys, 'approve', '--all', '--file', memory, '--at',
                       '2026-05-02T05:01:00Z')
    assert code == 0 and out.count('approved #') == 1 and '#3' in out


# ------------------------------------------------------------------------------ MCP

async def _mcp_learn(memory, config):
    from mcp import ClientSession
    from mcp import StdioServerParameters
    from mcp import stdio_client
    from support.mcp_client import installed_command as _installed_command
    from support.mcp_client import payload as _payload
    params = StdioServerParameters(
        command=_installed_command(),
        args=['mcp', '--file', str(memory), '--config', str(config),
              '--at', '2026-05-02T02:00:00Z'], cwd=str(memory.parent))
    with open(memory.with_name('mcp-stderr.txt'), 'w') as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                learned = _payload(await session.call_tool('learn', {'text': 'Ben prefers tea',
                                                                     'request_id': 'tea-1'}))
                retried = _payload(await session.call_tool('learn', {'text': 'Ben prefers tea',
                                                                     'request_id': 'tea-1'}))
                found = _payload(await session.call_tool('recall', {'query': 'Ben tea'}))
    return learned, retried, found


def test_mcp_learn_is_proposed_in_propose_mode(robot):
    import anyio
    memory, config = robot
    learned, retried, found = anyio.run(_mcp_learn, memory, config)
    assert learned['action'] == 'proposed' and learned['proposal'] == 1
    assert retried == {**learned, 'replayed': True}   # a retry is not proposed twice
    assert found['hits'] == []
    with ProposalQueue.open(memory.with_name('robot-memory.db')) as queue:
        [waiting] = queue.pending(NOW)
    assert (waiting.kind, waiting.proposer) == ('learn', 'mcp')


def test_cli_a_listing_writes_nothing_and_a_decision_before_the_proposal_is_refused(
        robot, capsys):
    """Issue 26.9: proposals --at a later time is a listing; approve --at is checked."""
    memory, config = robot
    db = memory.with_name('robot-memory.db')
    run(capsys, 'learn', 'Ben prefers tea', '--file', memory, '--config', config,
        '--at', '2026-05-02T02:00:00Z')
    audit = audit_rows(db, 'proposal:1')
    code, out, _ = run(capsys, 'proposals', '--all', '--file', memory, '--at',
                       '2026-06-01T00:00:00Z')
    assert code == 0 and 'no proposals wait' in out
    assert '#1 no decision by 2026-05-02T03:00:00Z (expires unmade)' in out, out
    assert audit_rows(db, 'proposal:1') == audit  # nothing expired, no audit row
    code, _, err = run(capsys, 'approve', '1', '--file', memory, '--at', '2026-05-02T01:00:00Z')
    assert code == 1 and 'is before proposal 1 was made' in err, err
    code, out, err = run(capsys, 'approve', '1', '--file', memory, '--json', '--at',
                         '2026-05-02T02:30:00Z')
    assert code == 0, err
    decided = json.loads(out)
    assert 'now this would' not in decided['summary'] and decided['outcome'].startswith('created')
    code, out, _ = run(capsys, 'proposals', '--all', '--json', '--file', memory, '--at',
                       '2026-05-02T02:30:00Z')
    assert 'now this would' not in json.loads(out)['decided'][0]['summary']
