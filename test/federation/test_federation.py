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

"""Peer federation (RCAN §6): sharing, validation, merge, expiry, signing and audit rows."""

import copy
import datetime as dt
import math
import stat
import struct

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from pydantic import ValidationError
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import AUDIT_ACTIONS
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.federation.federation_audit import audit_records
from robot_memory.federation.federation_audit import UnchangedAudits
from robot_memory.federation.peer_context import build_payload
from robot_memory.federation.peer_context import canonical_bytes
from robot_memory.federation.peer_context import corroborations
from robot_memory.federation.peer_context import expire_peers
from robot_memory.federation.peer_context import FederationError
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.federation.peer_context import merge_peer_payload
from robot_memory.federation.peer_context import PeerPayload
from robot_memory.federation.peer_context import PeerRejected
from robot_memory.federation.peer_context import shareable_entries
from robot_memory.federation.peer_context import sign_payload
from robot_memory.federation.peer_context import validate_payload
from robot_memory.rcan.context import build_context
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry

A = 'RRN-000000000005'
B = 'RRN-000000000001'
C = 'RRN-000000000007'
NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
CORRIDOR = 'East corridor blocked by construction barrier'


def own(entry_id, text, confidence=0.9, entry_type='environment_note', days_ago=0.0, count=3,
        tags=(), **extra):
    """Return an own entry last reinforced ``days_ago`` before NOW."""
    last = NOW - dt.timedelta(days=days_ago)
    return MemoryEntry(id=entry_id, type=entry_type, text=text, confidence=confidence,
                       first_seen=last - dt.timedelta(days=1), last_reinforced=last,
                       observation_count=count, tags=list(tags), **extra)


def robot_a():
    return MemoryDocument(rrn=A, last_updated=NOW, entries=[
        own('mem-corridor1', CORRIDOR, 0.9, days_ago=2.0, tags=['navigation']),
        own('mem-lights001', 'Lab lights flicker at night', 0.6),
        own('mem-secret001', 'Operator door code is 1234', 0.95, tags=['Private']),
        own('mem-secret002', 'Customer floor plan is confidential', 0.95, private=True),
        own('mem-public001', 'Dock 3 charger is slow', 0.8, private='no'),
        own('mem-gone00001', 'Old ramp removed', 0.99, entry_type='resolved'),
        own('mem-faded0001', 'Wet floor near the kitchen', 0.5, days_ago=10.0),
    ])


def robot_b():
    return MemoryDocument(rrn=B, last_updated=NOW, entries=[
        own('mem-bcorridor', 'the east corridor is blocked by a construction barrier', 0.4,
            days_ago=1.0, count=2),
        own('mem-bwheel001', 'Left wheel encoder intermittent', 0.8,
            entry_type='hardware_observation'),
    ])


def policy(**changes):
    values = {'allowed_peers': (A, C), 'max_entries': 10}
    values.update(changes)
    return FederationPolicy(**values)


def wire(payload):
    """Return the payload as plain data, as the node hands it over from the message."""
    return payload.to_data()


def test_shareable_entries_skip_private_resolved_and_faded_and_share_effective_confidence():
    shared = shareable_entries(robot_a(), NOW, policy())
    assert [entry.id for entry in shared] == ['mem-public001', 'mem-corridor1', 'mem-lights001']
    corridor = shared[1]
    assert corridor.confidence == pytest.approx(0.9 - 0.05 * 2.0)
    assert corridor.last_reinforced == NOW - dt.timedelta(days=2)


def test_shareable_entries_are_cut_to_max_entries_highest_first():
    shared = shareable_entries(robot_a(), NOW, policy(max_entries=1))
    assert [entry.id for entry in shared] == ['mem-public001']


def test_build_payload_respects_the_byte_limit():
    document = MemoryDocument(rrn=A, last_updated=NOW, entries=[
        own(f'mem-fill{index:04d}', f'Filler observation number {index} ' + 'x' * 200)
        for index in range(40)])
    limited = policy(max_entries=40, max_payload_bytes=2000)
    payload = build_payload(document, NOW, limited)
    assert 0 < len(payload.entries) < 40
    assert len(canonical_bytes(payload)) <= 2000
    validate_payload(wire(payload), policy(max_entries=40, max_payload_bytes=2000), NOW, B)


def test_corridor_entry_from_a_is_merged_into_b_under_a_and_shown_in_a_section():
    payload = validate_payload(wire(build_payload(robot_a(), NOW, policy())), policy(), NOW, B)
    document = robot_b()
    outcome = merge_peer_payload(document, payload, NOW, policy())
    assert outcome.rrn == A and outcome.received == 3 and len(outcome.added) == 3
    (block,) = document.peer_context
    assert block.rrn == A and block.last_synced == NOW
    ids = {entry.id for entry in block.entries}
    assert f'peer:{A}:mem-corridor1' in ids
    assert not ids & {entry.id for entry in document.entries}
    corridor = next(entry for entry in block.entries if entry.text == CORRIDOR)
    assert corridor.confidence == pytest.approx(0.8)
    context = build_context(document, NOW)
    own_part, peer_part = context.text.split(f'Reported by peer {A}')
    assert CORRIDOR in peer_part and CORRIDOR not in own_part
    assert 'Left wheel encoder' in own_part
    assert [line.source_rrn for line in context.peer_entries] == [A, A, A]


def test_decay_on_the_receiver_continues_from_the_senders_belief():
    payload = build_payload(robot_a(), NOW, policy())
    document = robot_b()
    merge_peer_payload(document, payload, NOW, policy())
    later = NOW + dt.timedelta(days=3)
    corridor = next(e for e in document.peer_context[0].entries if e.text == CORRIDOR)
    sender = robot_a().entry_by_id('mem-corridor1')
    assert effective_confidence(corridor, later) == pytest.approx(
        effective_confidence(sender, later))


def test_own_similar_entry_is_corroborated_but_never_reinforced():
    document = robot_b()
    before = list(document.entries)
    before_dump = [entry.model_dump() for entry in before]
    outcome = merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW,
                                 policy())
    assert outcome.corroborated == ('mem-bcorridor',)
    assert all(after is original for after, original in zip(document.entries, before))
    assert [entry.model_dump() for entry in document.entries] == before_dump
    mine = document.entry_by_id('mem-bcorridor')
    assert mine.confidence == 0.4 and mine.observation_count == 2
    assert mine.last_reinforced == NOW - dt.timedelta(days=1)
    assert corroborations(document) == {'mem-bcorridor': [A]}


def test_same_id_corroborates_even_with_different_words():
    document = robot_b()
    peer = MemoryDocument(rrn=A, last_updated=NOW, entries=[
        own('mem-bwheel001', 'Encoder on the left drive drops ticks', 0.9,
            entry_type='hardware_observation')])
    outcome = merge_peer_payload(document, build_payload(peer, NOW, policy()), NOW, policy())
    assert outcome.corroborated == ('mem-bwheel001',)


def test_unrelated_text_and_other_types_do_not_corroborate():
    document = robot_b()
    peer = MemoryDocument(rrn=A, last_updated=NOW, entries=[
        own('mem-other001', 'Kitchen doorway has a 3cm lip', 0.9),
        own('mem-other002', 'the east corridor is blocked by a construction barrier', 0.9,
            entry_type='behavior_pattern')])
    outcome = merge_peer_payload(document, build_payload(peer, NOW, policy()), NOW, policy())
    assert outcome.corroborated == ()


def test_peer_not_on_allowlist_is_refused_and_empty_allowlist_accepts_none():
    data = wire(build_payload(robot_a(), NOW, policy()))
    with pytest.raises(PeerRejected) as caught:
        validate_payload(data, policy(allowed_peers=(C,)), NOW, B)
    assert caught.value.kind == 'not_allowed'
    assert 'not on the allowlist' in str(caught.value) and 'allowed_peers' in str(caught.value)
    with pytest.raises(PeerRejected):
        validate_payload(data, FederationPolicy(), NOW, B)


def test_payload_claiming_our_own_rrn_is_refused():
    data = wire(build_payload(robot_a(), NOW, policy()))
    with pytest.raises(PeerRejected) as caught:
        validate_payload(data, policy(allowed_peers=(A, B)), NOW, A)
    assert caught.value.kind == 'own_rrn'


def _refused(data, expected_kind, fragment, **policy_changes):
    document = robot_b()
    before = render(document)
    with pytest.raises(PeerRejected) as caught:
        payload = validate_payload(data, policy(**policy_changes), NOW, B)
        merge_peer_payload(document, payload, NOW, policy(**policy_changes))
    assert caught.value.kind == expected_kind, str(caught.value)
    assert fragment in str(caught.value)
    assert render(document) == before
    return caught.value


def _good():
    return copy.deepcopy(wire(build_payload(robot_a(), NOW, policy())))


def test_oversized_payloads_are_refused_with_clear_messages():
    data = _good()
    _refused(data, 'oversized', '3 entries (at most 2)', max_entries=2)
    _refused(data, 'oversized', 'characters (at most 10)', max_text_chars=10)
    error = _refused(data, 'oversized', 'bytes (at most 300)', max_payload_bytes=300)
    assert 'fewer or shorter entries' in str(error)


@pytest.mark.parametrize('mutate, fragment', [
    (lambda d: d['entries'][0].update(confidence=float('nan')), 'confidence'),
    (lambda d: d['entries'][0].update(confidence='0.9'), 'confidence'),
    (lambda d: d['entries'][0].update(confidence=1.5), 'confidence'),
    (lambda d: d['entries'][0].update(id='../../etc/passwd'), 'entries.0.id'),
    (lambda d: d['entries'][0].update(id=f'peer:{C}:mem-1'), 'relayed'),
    (lambda d: d['entries'][1].update(id=d['entries'][0]['id']), 'duplicate id'),
    (lambda d: d['entries'][0].update(type='rumour'), 'entries.0.type'),
    (lambda d: d['entries'][0].update(type='resolved'), 'resolved'),
    (lambda d: d['entries'][0].update(text='two\nlines'), 'U+000A'),
    (lambda d: d['entries'][0].update(observation_count=0), 'observation_count'),
    (lambda d: d['entries'][0].update(observation_count=True), 'observation_count'),
    (lambda d: d['entries'][0].update(first_seen='yesterday'), 'first_seen'),
    (lambda d: d['entries'][0].update(first_seen=NOW + dt.timedelta(days=30)), 'after'),
    (lambda d: d['entries'][0].update(last_reinforced=NOW + dt.timedelta(days=30)),
     'in the future'),
    (lambda d: d['entries'][0].update(extra_key=1), 'entries.0.extra_key'),
    (lambda d: d.update(sent_at=NOW + dt.timedelta(hours=2)), 'in the future'),
    (lambda d: d.update(sent_at=12345), 'sent_at'),
    (lambda d: d.update(entries='none'), 'entries'),
    (lambda d: d.update(surprise=True), 'unknown keys surprise'),
    (lambda d: d.update(rrn=42), 'is not an RRN'),
    (lambda d: d.update(signature='not base64!'), 'signature'),
])
def test_malformed_payloads_are_refused_and_leave_the_document_unchanged(mutate, fragment):
    data = _good()
    mutate(data)
    error = _refused(data, 'malformed', fragment)
    assert 'rejected (malformed)' in str(error)


@pytest.mark.parametrize('field, char', [
    ('text', '\u202e'), ('text', '\u2066'), ('text', '\u200f'), ('text', '\u202a'),
    ('tags', '\u202e'), ('tags', '\u2069'),
])
def test_bidi_override_characters_in_a_payload_are_refused_naming_the_field(field, char):
    """Check that text the brain receives from a peer is safe to read."""
    data = _good()
    if field == 'text':
        data['entries'][1]['text'] = f'corridor {char}dekcolb{char} clear'
        where = 'entries.1.text'
    else:
        data['entries'][1]['tags'] = ['ok', f'nav{char}']
        where = 'entries.1.tags'
    error = _refused(data, 'malformed', where)
    assert f'U+{ord(char):04X}' in str(error) and 'bidirectional' in str(error)


def test_an_own_entry_with_a_bidi_override_is_kept_home_not_shared():
    document = robot_a()
    tricky = own('mem-tricky01', 'door code \u202e4321', 0.9)
    document.entries.append(tricky)
    payload = build_payload(document, NOW, policy())
    assert payload.entries and 'mem-tricky01' not in [entry.id for entry in payload.entries]
    assert validate_payload(wire(payload), policy(), NOW, B) is not None


def test_old_payload_is_refused_as_stale():
    data = _good()
    data['sent_at'] = NOW - dt.timedelta(hours=3)
    _refused(data, 'stale', 'older than')


def test_out_of_order_payload_does_not_overwrite_a_newer_block():
    document = robot_b()
    newer = build_payload(robot_a(), NOW, policy())
    older = build_payload(robot_a(), NOW - dt.timedelta(minutes=5), policy())
    merge_peer_payload(document, newer, NOW, policy())
    before = render(document)
    with pytest.raises(PeerRejected) as caught:
        merge_peer_payload(document, older, NOW + dt.timedelta(minutes=1), policy())
    assert caught.value.kind == 'stale' and render(document) == before


def test_not_a_mapping_is_malformed():
    with pytest.raises(PeerRejected) as caught:
        validate_payload(['rrn', A], policy(), NOW, B)
    assert 'expected a mapping' in str(caught.value)


@pytest.fixture
def keys(tmp_path):
    """Key pairs of A and C, and a policy on B's side that requires signatures."""
    paths = {}
    for name in ('a', 'c', 'b'):
        paths[name] = (tmp_path / f'{name}.pem', tmp_path / f'{name}.pub')
        generate_keypair(*paths[name])
    signing = policy(require_signatures=True, private_key_path=paths['b'][0],
                     peer_public_keys={A: paths['a'][1], C: paths['c'][1]})
    return paths, signing


def test_keypair_files_are_pem_with_a_private_mode_and_never_overwritten(keys):
    paths, _ = keys
    private, public = paths['a']
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_bytes().startswith(b'-----BEGIN PRIVATE KEY-----')
    assert public.read_bytes().startswith(b'-----BEGIN PUBLIC KEY-----')
    original = private.read_bytes()
    with pytest.raises(FederationError) as caught:
        generate_keypair(private, public)
    assert 'never overwritten' in str(caught.value) and private.read_bytes() == original


def test_a_private_key_readable_by_others_is_refused(keys):
    paths, _ = keys
    paths['a'][0].chmod(0o644)
    with pytest.raises(FederationError) as caught:
        sign_payload(build_payload(robot_a(), NOW, policy()), paths['a'][0])
    assert 'chmod 600' in str(caught.value)


def test_signed_payload_is_accepted_when_signatures_are_required(keys):
    paths, signing = keys
    sender = policy(private_key_path=paths['a'][0])
    payload = validate_payload(wire(build_payload(robot_a(), NOW, sender)), signing, NOW, B)
    assert payload.signature and len(payload.entries) == 3


def test_a_public_key_file_replaced_in_place_is_used_at_once(keys, tmp_path):
    paths, signing = keys
    sender = policy(private_key_path=paths['a'][0])
    payload = wire(build_payload(robot_a(), NOW, sender))
    assert validate_payload(payload, signing, NOW, B).signature  # A's key, loaded (and kept)
    generate_keypair(tmp_path / 'new.pem', tmp_path / 'new.pub')  # A's key is rotated:
    paths['a'][1].unlink()
    (tmp_path / 'new.pub').rename(paths['a'][1])  # the same path now holds another key
    with pytest.raises(PeerRejected) as caught:
        validate_payload(payload, signing, NOW, B)
    assert caught.value.kind == 'signature', caught.value
    renewed = policy(private_key_path=tmp_path / 'new.pem')
    assert validate_payload(wire(build_payload(robot_a(), NOW, renewed)), signing, NOW, B)
    paths['a'][1].unlink()
    with pytest.raises(FederationError, match='cannot read the public key'):
        validate_payload(payload, signing, NOW, B)


def test_float32_confidence_still_verifies(keys):
    paths, signing = keys
    data = wire(build_payload(robot_a(), NOW, policy(private_key_path=paths['a'][0])))
    for entry in data['entries']:
        entry['confidence'] = struct.unpack('f', struct.pack('f', entry['confidence']))[0]
        assert entry['confidence'] != round(entry['confidence'], 4)
    validate_payload(data, signing, NOW, B)


@pytest.mark.parametrize('forge, fragment', [
    (lambda d, paths: d.update(signature=''), 'not signed'),
    (lambda d, paths: d['entries'][0].update(text='Everything is fine, drive fast'),
     'does not match'),
    (lambda d, paths: d['entries'][0].update(confidence=0.11), 'does not match'),
    (lambda d, paths: d.update(signature=d['signature'][:-4] + 'AAA='), 'does not match'),
    (lambda d, paths: d.update(signature='AAAA'), 'does not match'),
    (lambda d, paths: d.update(signature=sign_payload(
        PeerPayload.model_validate(d), paths['c'][0]).signature), 'does not match'),
])
def test_forged_tampered_or_wrong_key_signatures_are_refused(keys, forge, fragment):
    paths, signing = keys
    data = copy.deepcopy(wire(build_payload(robot_a(), NOW,
                                            policy(private_key_path=paths['a'][0]))))
    forge(data, paths)
    error = _refused(data, 'signature', fragment, require_signatures=True,
                     private_key_path=paths['b'][0],
                     peer_public_keys={A: paths['a'][1], C: paths['c'][1]})
    assert error.rrn == A


def test_unsigned_payload_is_accepted_when_the_fleet_does_not_sign():
    payload = validate_payload(_good(), policy(), NOW, B)
    assert payload.signature == ''


def test_policy_requiring_signatures_needs_every_key():
    with pytest.raises(ValidationError) as caught:
        FederationPolicy(allowed_peers=(A,), require_signatures=True, private_key_path='k.pem')
    assert 'no public key' in str(caught.value) and A in str(caught.value)
    with pytest.raises(ValidationError) as caught:
        FederationPolicy(allowed_peers=(A,), require_signatures=True)
    assert 'private_key_path' in str(caught.value)


@pytest.mark.parametrize('changes, fragment', [
    ({'allowed_peers': ('not an rrn',)}, 'is not an RRN'),
    ({'max_entries': 0}, 'greater than or equal to 1'),
    ({'peer_expiry_s': float('inf')}, 'finite'),
    ({'peer_expiry_s': -1}, 'greater than 0'),
    ({'max_text_chars': 501}, 'less than or equal to 500'),
    ({'corroboration_jaccard': 0}, 'greater than 0'),
    ({'unknown_option': 1}, 'Extra inputs'),
])
def test_bad_policy_values_are_refused_with_a_reason(changes, fragment):
    with pytest.raises(ValidationError) as caught:
        FederationPolicy(**changes)
    assert fragment in str(caught.value)


def test_every_policy_field_is_described():
    for name, field in FederationPolicy.model_fields.items():
        assert field.description, name


def test_silent_peer_expires_and_the_fresh_one_stays():
    document = robot_b()
    merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW, policy())
    later = NOW + dt.timedelta(hours=20)
    other = MemoryDocument(rrn=C, last_updated=later, entries=[own('mem-c0000001', 'C fact')])
    merge_peer_payload(document, build_payload(other, later, policy()), later, policy())
    expiring = policy(peer_expiry_s=24 * 3600)
    assert expire_peers(document, NOW + dt.timedelta(hours=23), expiring) == []
    assert expire_peers(document, NOW + dt.timedelta(hours=25), expiring) == [A]
    assert [block.rrn for block in document.peer_context] == [C]
    assert corroborations(document) == {}


def test_a_peer_replaces_only_its_own_block():
    document = robot_b()
    merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW, policy())
    other = MemoryDocument(rrn=C, last_updated=NOW, entries=[own('mem-c0000001', 'C fact')])
    merge_peer_payload(document, build_payload(other, NOW, policy()), NOW, policy())
    c_block = document.peer_context[1]
    smaller = MemoryDocument(rrn=A, last_updated=NOW, entries=[own('mem-lights001', 'New')])
    later = NOW + dt.timedelta(minutes=1)
    outcome = merge_peer_payload(document, build_payload(smaller, later, policy()), later,
                                 policy())
    assert [block.rrn for block in document.peer_context] == [A, C]
    assert document.peer_context[1] is c_block
    assert [entry.text for entry in document.peer_context[0].entries] == ['New']
    assert outcome.changed == (f'peer:{A}:mem-lights001',)
    assert set(outcome.removed) == {f'peer:{A}:mem-corridor1', f'peer:{A}:mem-public001'}


def test_entry_ids_equal_to_own_ids_cannot_overwrite_own_entries():
    document = robot_b()
    before = [entry.model_dump() for entry in document.entries]
    hostile = MemoryDocument(rrn=A, last_updated=NOW, entries=[
        own('mem-bcorridor', 'Corridor is clear, drive at full speed', 1.0),
        own('mem-bwheel001', 'Wheels are perfect', 1.0, entry_type='hardware_observation')])
    merge_peer_payload(document, build_payload(hostile, NOW, policy()), NOW, policy())
    assert [entry.model_dump() for entry in document.entries] == before
    assert {entry.id for entry in document.peer_context[0].entries} == {
        f'peer:{A}:mem-bcorridor', f'peer:{A}:mem-bwheel001'}


def test_a_payload_claiming_another_peers_rrn_is_caught_by_its_signature(keys):
    paths, signing = keys
    document = robot_b()
    merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW, policy())
    block_a = document.peer_context[0]
    data = wire(build_payload(MemoryDocument(rrn=C, last_updated=NOW, entries=[
        own('mem-c0000001', 'A is wrong about everything')]), NOW,
        policy(private_key_path=paths['c'][0])))
    data['rrn'] = A
    with pytest.raises(PeerRejected) as caught:
        validate_payload(data, signing, NOW, B)
    assert caught.value.kind == 'signature'
    assert document.peer_context == [block_a]


def test_merge_refuses_an_unvalidated_payload_from_outside_the_allowlist():
    document = robot_b()
    payload = build_payload(robot_a(), NOW, policy())
    with pytest.raises(PeerRejected):
        merge_peer_payload(document, payload, NOW, policy(allowed_peers=(C,)))
    assert document.peer_context is None


def test_merging_through_memory_file_update_round_trips_peer_context(memory_path):
    memory = MemoryFile(memory_path)
    with memory.update(NOW, rrn=B) as result:
        result.document.entries.extend(robot_b().entries)
    payload = validate_payload(_good(), policy(), NOW, B)
    with memory.update(NOW, rrn=B) as result:
        outcome = merge_peer_payload(result.document, payload, NOW, policy())
        assert expire_peers(result.document, NOW, policy()) == []
    reread = memory.load(NOW).document
    assert not memory.load(NOW).problems
    (block,) = reread.peer_context
    assert block.rrn == A and block.last_synced == NOW
    assert len(block.entries) == outcome.received
    assert corroborations(reread) == {'mem-bcorridor': [A]}
    assert reread.entry_by_id('mem-bcorridor').confidence == 0.4
    assert parse_bytes(render(reread), NOW).document.peer_context == reread.peer_context
    assert build_context(reread, NOW).text == build_context(result.document, NOW).text


def test_audit_records_for_accepted_rejected_and_expired_exchanges():
    document = robot_b()
    outcome = merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW,
                                 policy())
    accepted = audit_records(outcome, NOW, actor='robot_memory')
    assert [record.entry_id for record in accepted] == [f'peer:{A}', 'mem-bcorridor']
    assert 'confidence unchanged' in accepted[1].reason
    again = merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW, policy())
    assert audit_records(again, NOW) == []
    try:
        validate_payload(_good(), policy(allowed_peers=(C,)), NOW, B)
    except PeerRejected as error:
        rejected = audit_records(error, NOW)
    assert rejected[0].entry_id == f'peer:{A}'
    assert rejected[0].reason.startswith('rejected (not_allowed)')
    junk = audit_records(PeerRejected('malformed', 'x', 'y', rrn='\n../'), NOW)
    assert junk[0].entry_id == 'peer:unknown'
    expired = audit_records([A], NOW)
    assert expired[0].reason.startswith('expired')
    records = accepted + rejected + expired
    assert {record.action for record in records} <= set(AUDIT_ACTIONS)
    store = EvidenceStore(':memory:')
    try:
        store.record_audit(records)
        assert [row.reason for row in store.history(f'peer:{A}')] == [
            accepted[0].reason, rejected[0].reason, expired[0].reason]
    finally:
        store.close()


def test_unchanged_exchanges_are_counted_and_audited_once_an_hour_per_peer():
    document = robot_b()
    audits = UnchangedAudits()
    first = merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW, policy())
    assert [r.entry_id for r in audits.records(first, NOW, 'peer_sync')] == [
        f'peer:{A}', 'mem-bcorridor']
    assert not audits
    # Re-syncs seconds apart that change nothing, audited as if they came at these minutes.
    outcomes = [merge_peer_payload(document, build_payload(robot_a(), at, policy()), at,
                                   policy())
                for at in (NOW + dt.timedelta(seconds=s) for s in (1, 2, 3))]
    minutes = [NOW + dt.timedelta(minutes=m) for m in (1, 30, 61)]
    assert audits.records(outcomes[0], minutes[0], 'peer_sync') == []  # counted, not written
    assert audits.records(outcomes[1], minutes[1], 'peer_sync') == []
    assert audits
    hourly = audits.records(outcomes[2], minutes[2], 'peer_sync')  # an hour after the first
    assert [(r.entry_id, r.detail['unchanged']) for r in hourly] == [(f'peer:{A}', 3)]
    assert hourly[0].reason.startswith('3 exchanges accepted with nothing changed since ')
    assert hourly[0].detail['since'] == '2026-04-01T12:01:00Z'
    assert not audits
    assert {record.action for record in hourly} <= set(AUDIT_ACTIONS)


def test_a_change_writes_the_pending_count_first_and_flush_writes_the_rest():
    document = robot_b()
    audits = UnchangedAudits(period_s=600.0)
    merge_peer_payload(document, build_payload(robot_a(), NOW, policy()), NOW, policy())
    later = NOW + dt.timedelta(minutes=1)
    same = merge_peer_payload(document, build_payload(robot_a(), later, policy()), later,
                              policy())
    assert audits.records(same, later, 'exchange_service') == []
    changed_at = NOW + dt.timedelta(minutes=2)
    grown = robot_a()
    grown.entries.append(own('mem-newdoor1', 'The north door is jammed', 0.9))
    changed = merge_peer_payload(document, build_payload(grown, changed_at, policy()),
                                 changed_at, policy())
    rows = audits.records(changed, changed_at, 'exchange_service')
    assert rows[0].detail == {'outcome': 'accepted', 'unchanged': 1,
                              'since': '2026-04-01T12:01:00Z'}
    assert rows[1].detail['added'] == [f'peer:{A}:mem-newdoor1']
    end = NOW + dt.timedelta(minutes=3)
    again = merge_peer_payload(document, build_payload(grown, end, policy()), end, policy())
    assert audits.records(again, end, 'peer_sync') == []
    flushed = audits.flush(end)
    assert [(r.entry_id, r.actor, r.detail['unchanged']) for r in flushed] == [
        (f'peer:{A}', 'federation', 1)]
    assert audits.flush(end) == []


_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.datetimes(timezones=st.just(UTC) | st.none()),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
_ENTRY_JUNK = st.fixed_dictionaries({}, optional={
    'id': st.sampled_from(['mem-1', 'peer:x:y', '', 'a' * 200]) | _JUNK,
    'type': st.sampled_from(['environment_note', 'resolved', 'x']) | _JUNK,
    'text': st.text(max_size=30) | _JUNK,
    'confidence': st.floats() | _JUNK,
    'first_seen': st.sampled_from(['2026-04-01T00:00:00Z', '0001-01-01T00:00:00+01:00',
                                   '9999-12-31T23:59:59-05:00']) | _JUNK,
    'last_reinforced': st.datetimes(timezones=st.just(UTC)) | _JUNK,
    'observation_count': st.integers() | _JUNK,
    'tags': st.lists(st.text(max_size=5), max_size=3) | _JUNK,
})
_PAYLOAD_JUNK = st.fixed_dictionaries({}, optional={
    'rrn': st.sampled_from([A, B, C, 'bad rrn']) | _JUNK,
    'sent_at': st.datetimes(timezones=st.just(UTC)) | _JUNK,
    'entries': st.lists(_ENTRY_JUNK, max_size=3) | _JUNK,
    'signature': st.sampled_from(['', 'AAAA', '\ud800']) | _JUNK,
}) | _JUNK


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_PAYLOAD_JUNK)
def test_any_junk_either_validates_or_is_rejected(data):
    document = robot_b()
    try:
        payload = validate_payload(data, policy(), NOW, B)
    except PeerRejected as error:
        assert str(error).startswith('peer payload from')
        return
    outcome = merge_peer_payload(document, payload, NOW, policy())
    assert outcome.received == len(payload.entries)
    assert all(math.isfinite(entry.confidence) for entry in document.peer_context[0].entries)
    assert parse_bytes(render(document), NOW).document.peer_context == document.peer_context


_FIELDS = ('rrn', 'sent_at', 'entries', 'signature')
_ENTRY_FIELDS = ('id', 'type', 'text', 'confidence', 'first_seen', 'last_reinforced',
                 'observation_count', 'tags')


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(_FIELDS + _ENTRY_FIELDS), index=st.integers(0, 2),
       value=_JUNK | st.floats() | st.text(max_size=600), drop=st.booleans())
def test_a_good_payload_with_one_field_spoiled_validates_or_is_rejected(field, index, value,
                                                                        drop):
    data = _good()
    target = data if field in _FIELDS else data['entries'][index]
    if drop:
        target.pop(field)
    else:
        target[field] = value
    document = robot_b()
    before = render(document)
    try:
        payload = validate_payload(data, policy(), NOW, B)
    except PeerRejected as error:
        assert error.kind in PeerRejected.KINDS
        assert render(document) == before
        return
    merge_peer_payload(document, payload, NOW, policy())
    assert parse_bytes(render(document), NOW).document.peer_context == document.peer_context
