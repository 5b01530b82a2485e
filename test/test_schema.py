"""Schema rules of RCAN §3: entry constraints, IDs, peer blocks, header."""

import datetime as dt

import pytest
from pydantic import ValidationError

from robot_memory.schema import DocumentHeader
from robot_memory.schema import make_entry_id
from robot_memory.schema import MemoryEntry
from robot_memory.schema import new_entry
from robot_memory.schema import PeerBlock
from robot_memory.schema import PeerEntry
from robot_memory.timeutil import UTC

T0 = dt.datetime(2026, 3, 28, 14, 0, tzinfo=UTC)


def entry(**changes):
    data = dict(id='mem-a3f9c1d2', type='hardware_observation', text='Left wheel encoder',
                confidence=0.92, first_seen=T0, last_reinforced=T0, observation_count=14,
                tags=['wheel'])
    data.update(changes)
    return MemoryEntry(**data)


def test_valid_entry_has_every_field():
    made = entry()
    assert made.confidence == 0.92 and made.observation_count == 14 and made.tags == ['wheel']


@pytest.mark.parametrize('changes, fragment', [
    ({'text': 'x' * 501}, 'at most 500'),
    ({'text': '   '}, 'blank'),
    ({'text': 'two\nlines'}, 'U+000A'),
    ({'text': 'bell\x07'}, 'U+0007'),
    ({'confidence': 1.01}, 'less than or equal to 1'),
    ({'confidence': -0.01}, 'greater than or equal to 0'),
    ({'confidence': float('nan')}, 'finite'),
    ({'observation_count': 0}, 'greater than or equal to 1'),
    ({'observation_count': 2.5}, 'whole number'),
    ({'type': 'rumour'}, "'hardware_observation'"),
    ({'tags': 'wheel'}, 'valid list'),
    ({'tags': ['']}, 'tag'),
    ({'id': '../../etc/passwd'}, 'pattern'),
    ({'id': ''}, 'pattern'),
    ({'first_seen': 'yesterday'}, 'datetime'),
])
def test_invalid_entries_are_refused_with_a_reason(changes, fragment):
    with pytest.raises(ValidationError) as caught:
        entry(**changes)
    assert fragment in str(caught.value)


def test_text_of_exactly_500_characters_is_allowed():
    assert len(entry(text='y' * 500).text) == 500


def test_the_four_entry_types_are_accepted():
    for kind in ('hardware_observation', 'environment_note', 'behavior_pattern', 'resolved'):
        assert entry(type=kind).type == kind


def test_naive_and_offset_times_become_utc():
    made = entry(first_seen='2026-03-28T16:00:00+02:00', last_reinforced='2026-03-28T14:00:00')
    assert made.first_seen == T0 and made.first_seen.tzinfo == UTC
    assert made.last_reinforced == T0


def test_unknown_entry_keys_are_kept():
    made = entry(severity='high')
    assert made.extras == {'severity': 'high'}


def test_id_is_mem_plus_sha256_prefix():
    import hashlib
    digest = hashlib.sha256('hardware_observation:Left wheel'.encode()).hexdigest()
    assert make_entry_id('hardware_observation', 'Left wheel') == 'mem-' + digest[:8]


def test_id_is_lengthened_on_collision():
    first = make_entry_id('environment_note', 'door')
    second = make_entry_id('environment_note', 'door', taken={first})
    assert second.startswith(first) and len(second) == len(first) + 2
    third = make_entry_id('environment_note', 'door', taken={first, second})
    assert third not in (first, second) and third.startswith(first)


def test_id_is_stable_once_assigned():
    made = new_entry('environment_note', 'Kitchen doorway lip', 0.4, T0)
    edited = made.model_copy(update={'text': 'Kitchen doorway has a 3cm lip'})
    assert edited.id == made.id


def test_peer_entries_may_omit_timing_fields():
    peer = PeerEntry(id='mem-peer-b1c2', type='environment_note', text='corridor blocked',
                     confidence=0.75, tags=['navigation', 'peer'])
    assert peer.last_reinforced is None and peer.observation_count is None


def test_peer_block_needs_a_valid_rrn():
    with pytest.raises(ValidationError):
        PeerBlock(rrn='RRN 5; rm -rf', last_synced=T0)


def test_header_accepts_unquoted_version_and_refuses_future_major():
    assert DocumentHeader(schema_version=1.0, rrn='RRN-1', last_updated=T0).schema_version == '1.0'
    with pytest.raises(ValidationError) as caught:
        DocumentHeader(schema_version='2.0', rrn='RRN-1', last_updated=T0)
    assert 'not supported' in str(caught.value)
