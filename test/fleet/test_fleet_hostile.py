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
Hostile deliveries: whatever reaches the fleet store, it answers and keeps nothing forged.

Anyone on a site's network can put bytes on a robot's ingest key. Generated deliveries (any
bytes; a robot's sealed envelope with any field replaced by any JSON value, or removed)
must each be answered: opened, or refused with a reason. No other exception may escape, or
one crafted delivery would stop ``fleet serve``'s queue for every robot behind it. What the
store keeps from a changed envelope must be exactly what the robot signed.
"""

import json

from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.federation.peer_context import canonical_bytes
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.fleet.envelope import open_envelope
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.lessons import Lesson
from robot_memory.fleet.lessons import lesson_id_of
from robot_memory.fleet.lessons import open_lesson
from robot_memory.fleet.lessons import seal_lesson
from robot_memory.fleet.refusals import REASONS
from robot_memory.fleet.refusals import Refused
from support.fleet import A
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import LIDAR
from support.fleet import NOW

# the fleet's fixtures: robots with keys
pytest_plugins = ('support.fleet_fixtures',)

SITE = 'depot-north'

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
    | st.floats() | st.text(max_size=40),
    lambda inner: (st.lists(inner, max_size=4)
                   | st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=12)
# where a field sits in an envelope: the envelope, its payload, its first entry
PLACES = st.sampled_from([(), ('payload',), ('payload', 'entries', 0)])
LESSON_PLACES = st.sampled_from([(), ('entry',)])


def _sealed(robots) -> bytes:
    return robots.a.envelope([entry('mem-enc00001', ENCODER),
                              entry('mem-lid00002', LIDAR, count=5)], 3)


@st.composite
def changed(draw, original: bytes, places=PLACES) -> bytes:
    """Return the robot's envelope with one field replaced by any JSON value, or removed."""
    data = json.loads(original)
    place = data
    for step in draw(places):
        place = place[step]
    key = draw(st.sampled_from(sorted(place)) | st.text(max_size=12))
    if key in place and draw(st.booleans()):
        del place[key]
    else:
        place[key] = draw(JSON)
    return json.dumps(data, allow_nan=True).encode('utf-8')


# JSON nested deeper than Python's recursion limit: a few kilobytes from anyone
NESTED = st.builds(lambda opener, depth: opener * depth, st.sampled_from([b'[', b'{"a":']),
                   st.integers(min_value=500, max_value=30000))


def _deliveries(original: bytes):
    return st.one_of(st.binary(max_size=300), changed(original), NESTED,
                     st.builds(lambda raw, cut: raw[:cut], changed(original),
                               st.integers(min_value=0, max_value=len(original))))


def _signed(opened) -> tuple:
    """Return what the robot's signatures cover, as the store would keep it."""
    provenance = opened.provenance
    return (canonical_bytes(opened.payload), provenance.site, provenance.model,
            provenance.firmware, provenance.dream_id, provenance.dream_at)


def test_any_delivery_is_opened_or_refused_and_only_as_signed(robots):
    original = _sealed(robots)
    signed = _signed(open_envelope(original, SITE, A, robots.trust, NOW))

    @settings(max_examples=300, deadline=None)
    @example(raw=b'[' * 50000)
    @given(raw=_deliveries(original))
    def check(raw):
        try:
            opened = open_envelope(raw, SITE, A, robots.trust, NOW)
        except Refused as refused:
            assert refused.reason in REASONS and str(refused) and refused.advice
            return
        assert _signed(opened) == signed  # not the robot's words: it must not open

    check()


@pytest.mark.parametrize('store_url', ['sqlite'], indirect=True)
def test_the_store_answers_every_hostile_delivery_and_keeps_only_what_was_signed(
        robots, store_url):
    original = _sealed(robots)
    with FleetStore(store_url, robots.trust) as store:
        @settings(max_examples=60, deadline=None)
        @given(batch=st.lists(_deliveries(original), min_size=1, max_size=6))
        def check(batch):
            deliveries = [(raw, SITE, A) for raw in batch] + [(b'{}', SITE, A)]
            acks = store.receive_many(deliveries, NOW)
            assert len(acks) == len(deliveries)
            assert all(ack.status in ('stored', 'duplicate', 'refused') for ack in acks)
            assert acks[-1].status == 'refused' and acks[-1].reason == 'malformed'
            for ack in acks:
                if ack.status == 'refused':
                    assert ack.reason in REASONS and ack.message

        check()
        # whatever was kept is the robot's own dream 3, its two entries in its own words
        assert store.dream_count(A) <= 1
        assert sorted(row['text'] for row in store.entries(A)) in ([], sorted([ENCODER,
                                                                               LIDAR]))


def test_any_lesson_message_is_opened_or_refused(tmp_path):
    private, public = tmp_path / 'fleet.pem', tmp_path / 'fleet.pub'
    generate_keypair(private, public)
    issued = NOW
    lesson = Lesson(lesson_id_of(A, 'mem-enc00001', 'site', SITE, issued), 'promote', 'site',
                    SITE, issued, A, 'mem-enc00001', {'type': 'hardware_observation',
                                                      'text': ENCODER, 'confidence': 0.9,
                                                      'tags': ['fleet']}, 'ops', 'seen on 9')
    original = seal_lesson(lesson, private)
    assert open_lesson(original, public) == lesson

    @settings(max_examples=200, deadline=None)
    @example(raw=b'{"a":' * 20000)
    @given(raw=st.one_of(st.binary(max_size=300), NESTED, changed(original, LESSON_PLACES)))
    def check(raw):
        try:
            opened = open_lesson(raw, public)
        except Refused as refused:
            assert refused.reason in REASONS and str(refused) and refused.advice
            return
        assert opened == lesson

    check()
