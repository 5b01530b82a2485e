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

"""The store's acks signed with the fleet key: what a robot forgets only on the store's word."""

import base64
import dataclasses

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.federation.peer_context import generate_keypair
from robot_memory.federation.peer_context import load_private_key
from robot_memory.fleet import acks
from robot_memory.fleet.fleet_store import Ack
from support.fleet import A
from support.fleet import B

DELIVERY = b'{"format":"robot-memory-fleet/1","the envelope":"as the robot sent it"}'


@pytest.fixture
def fleet(tmp_path):
    """Return the fleet's key pair and another one: (private key, public path, other key)."""
    generate_keypair(tmp_path / 'fleet.pem', tmp_path / 'fleet.pub')
    generate_keypair(tmp_path / 'other.pem', tmp_path / 'other.pub')
    return (load_private_key(tmp_path / 'fleet.pem'), tmp_path / 'fleet.pub',
            load_private_key(tmp_path / 'other.pem'))


@pytest.mark.parametrize('status', ['stored', 'duplicate'])
def test_an_ack_the_fleet_key_signed_for_this_delivery_lets_the_robot_forget(fleet, status):
    key, public, _ = fleet
    signed = acks.sign(Ack(status, A, 7, message='dream 7 of A kept'), DELIVERY, key)
    assert len(base64.b64decode(signed.signature)) == 64
    assert acks.checked(signed, DELIVERY, public) == signed


@pytest.mark.parametrize('change', [
    {'status': 'duplicate'}, {'rrn': B}, {'dream_id': 8}, {'reason': 'x'},
])
def test_an_ack_altered_after_signing_is_refused(fleet, change):
    key, public, _ = fleet
    signed = acks.sign(Ack('stored', A, 7), DELIVERY, key)
    refused = acks.checked(dataclasses.replace(signed, **change), DELIVERY, public)
    assert (refused.status, refused.reason, refused.acknowledged) == ('refused', 'unsigned_ack',
                                                                      False)
    assert 'is not signed by the fleet key' in refused.message
    assert 'the payload waits' in refused.message and '--fleet-key' in refused.message


def test_an_ack_about_other_bytes_or_by_another_key_is_refused(fleet):
    key, public, other = fleet
    about_other_bytes = acks.sign(Ack('stored', A, 7), DELIVERY + b' ', key)
    by_another_key = acks.sign(Ack('stored', A, 7), DELIVERY, other)
    for ack in (about_other_bytes, by_another_key):
        assert acks.checked(ack, DELIVERY, public).reason == 'unsigned_ack'


@pytest.mark.parametrize('signature', ['', 'not base64!', base64.b64encode(b'short').decode(),
                                       'é' * 88, base64.b64encode(bytes(64)).decode()])
def test_an_ack_without_a_valid_signature_is_refused(fleet, signature):
    _, public, _ = fleet
    refused = acks.checked(Ack('stored', A, 7, signature=signature), DELIVERY, public)
    assert (refused.status, refused.reason, refused.rrn, refused.dream_id) == (
        'refused', 'unsigned_ack', A, 7)


def test_a_refusal_needs_no_signature_it_only_keeps_the_payload_waiting(fleet):
    _, public, _ = fleet
    refusal = Ack('refused', A, None, reason='replayed', message='older than what is kept')
    assert acks.checked(refusal, DELIVERY, public) == refusal
    failed = Ack('failed', A, 7, message='the store could not keep it')
    assert acks.checked(failed, DELIVERY, public) == failed


def test_what_is_signed_names_the_ack_and_the_delivery_and_survives_the_wire(fleet):
    key, public, _ = fleet
    signed = acks.sign(Ack('stored', A, 7, message='kept: 3 entries'), DELIVERY, key)
    # the message is for people and not signed; every field the robot acts on is
    assert acks.checked(dataclasses.replace(signed, message='anything'), DELIVERY, public) \
        .acknowledged
    assert acks.ack_bytes(signed, DELIVERY) != acks.ack_bytes(signed, DELIVERY[:-1])
    assert acks.ack_bytes(Ack('stored', A, 7), DELIVERY).startswith(
        b'["robot-memory-fleet-ack/1","stored","' + A.encode() + b'",7,""')


_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text())


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(status=st.sampled_from(['stored', 'duplicate']), rrn=_JSON_SCALARS,
       dream_id=_JSON_SCALARS, reason=st.text(max_size=40),
       signature=st.one_of(st.text(max_size=100), st.binary(min_size=64, max_size=64).map(
           lambda raw: base64.b64encode(raw).decode())))
def test_no_ack_made_without_the_fleet_key_lets_the_robot_forget(
        fleet, status, rrn, dream_id, reason, signature):
    _, public, _ = fleet
    ack = Ack(status, rrn, dream_id, reason=reason, signature=signature)
    assert not acks.checked(ack, DELIVERY, public).acknowledged
