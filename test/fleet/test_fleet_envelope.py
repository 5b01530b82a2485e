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

"""The fleet envelope and its key expressions: what a robot seals, what the store refuses, why."""

import json
import pathlib

import pytest

from robot_memory.fleet import keys
from robot_memory.fleet.envelope import open_envelope
from robot_memory.fleet.envelope import read_robots
from robot_memory.fleet.envelope import Trust
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.refusals import Refused
from support.fleet import A
from support.fleet import B
from support.fleet import C
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import NOW

# the fleet's fixtures: robots with keys, store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)


def _sealed(robots, dream_id=3, **provenance):
    return robots.a.envelope([entry('mem-enc00001', ENCODER)], dream_id, **provenance)


def _refused(raw, robots, reason, fragment, site='depot-north', rrn=A, trust=None):
    with pytest.raises(Refused) as caught:
        open_envelope(raw, site, rrn, trust or robots.trust, NOW)
    assert caught.value.reason == reason, str(caught.value)
    assert fragment in str(caught.value)
    return caught.value


def _edited(raw, change):
    data = json.loads(raw)
    change(data)
    return json.dumps(data).encode('utf-8')


def test_key_expressions_name_site_and_rrn_and_refuse_wildcards():
    assert keys.payload_key('depot-north', A) == f'robot-memory/fleet/depot-north/{A}/payload'
    assert keys.alive_key('depot-north', A).endswith(f'/depot-north/{A}/alive')
    assert keys.site_and_rrn(keys.ingest_key('depot-north', A)) == ('depot-north', A)
    assert keys.site_and_rrn(keys.payload_key('s1', B)) == ('s1', B)
    assert keys.site_and_rrn('robot-memory/fleet/**') is None
    for bad in ('*', 'a/b', '', 'depot north', '$star'):
        with pytest.raises(FleetError, match='cannot be used in a key expression'):
            keys.payload_key(bad, A)


def test_a_sealed_envelope_opens_with_its_provenance_and_entries(robots):
    opened = open_envelope(_sealed(robots), 'depot-north', A, robots.trust, NOW)
    assert (opened.rrn, opened.sent_at) == (A, NOW)
    assert opened.provenance.dream_id == 3
    assert (opened.provenance.model, opened.provenance.firmware) == ('rover-2', '1.4.0')
    assert [item.text for item in opened.payload.entries] == [ENCODER]


def test_unsigned_payloads_are_refused(robots):
    raw = _edited(_sealed(robots), lambda data: data['payload'].update(signature=''))
    _refused(raw, robots, 'unsigned', 'not signed')
    raw = _edited(_sealed(robots), lambda data: data.update(provenance_signature=''))
    _refused(raw, robots, 'unsigned', 'private_key_path')


def test_forged_entries_or_provenance_are_refused(robots):
    def text(data):
        data['payload']['entries'][0]['text'] = 'All wheels fine'
    _refused(_edited(_sealed(robots), text), robots, 'forged', "payload's signature")
    raw = _edited(_sealed(robots), lambda data: data.update(firmware='9.9.9'))
    _refused(raw, robots, 'forged', 'provenance signature')
    raw = _edited(_sealed(robots), lambda data: data.update(dream_id=4))
    _refused(raw, robots, 'forged', 'provenance signature')
    raw = _edited(_sealed(robots), lambda data: data.update(dream_at='2026-01-01T00:00:00Z'))
    _refused(raw, robots, 'forged', 'provenance signature')
    # signed by b's key, claiming to be a
    raw = robots.b.envelope([entry('mem-enc00001', ENCODER)], 1)
    swapped = _edited(raw, lambda data: data['payload'].update(rrn=A))
    _refused(swapped, robots, 'forged', 'signature')


def test_a_robot_may_publish_only_under_its_own_rrn_and_site(robots):
    _refused(_sealed(robots), robots, 'wrong_key', f'signed as depot-north/{A!r}', rrn=B)
    _refused(_sealed(robots), robots, 'wrong_key', 'published under depot-south',
             site='depot-south')


def test_unknown_robots_are_refused(robots):
    trust = Trust({B: robots.b.public_key, C: robots.c.public_key})
    error = _refused(_sealed(robots), robots, 'unknown_robot', 'not an allowed robot', trust=trust)
    assert '--robots' in error.advice


def test_oversized_and_malformed_payloads_are_refused(robots):
    small = Trust(robots.trust.public_keys, max_bytes=200)
    _refused(_sealed(robots), robots, 'oversized', '(at most 200)', trust=small)
    few = Trust(robots.trust.public_keys, max_entries=1)
    two = robots.a.envelope([entry('mem-enc00001', ENCODER), entry('mem-other001', 'Other')], 2)
    _refused(two, robots, 'oversized', '2 entries (at most 1)', trust=few)
    _refused(b'\xff\xfe', robots, 'malformed', 'not UTF-8 JSON')
    _refused(b'[1, 2]', robots, 'malformed', 'not a robot-memory-fleet/1 envelope')
    raw = _edited(_sealed(robots), lambda data: data.pop('dream_id'))
    _refused(raw, robots, 'malformed', "missing keys ['dream_id']")
    raw = _edited(_sealed(robots), lambda data: data.update(dream_id='3'))
    _refused(raw, robots, 'malformed', 'dream_id must be a whole number')
    raw = _edited(_sealed(robots), lambda data: data['payload']['entries'][0].update(
        confidence='high'))
    _refused(raw, robots, 'malformed', 'confidence')


def test_a_payload_older_than_the_stores_limit_is_refused_as_replayed(robots):
    strict = Trust(robots.trust.public_keys, max_age_s=3600.0)
    raw = robots.a.envelope([entry('mem-enc00001', ENCODER)], 1,
                            at=NOW.replace(hour=10))
    _refused(raw, robots, 'replayed', 'older than 3600 s', trust=strict)


def test_the_robots_file_names_rrn_and_key_and_refuses_bad_lines():
    lines = ['# the fleet', '', f'{A}=/etc/keys/a.pub', f' {B} = /etc/keys/b.pub ']
    assert read_robots(lines, 'robots.txt') == {A: pathlib.Path('/etc/keys/a.pub'),
                                                B: pathlib.Path('/etc/keys/b.pub')}
    with pytest.raises(FleetError, match=r'robots.txt:1: .* is not "RRN=path'):
        read_robots([A], 'robots.txt')
    with pytest.raises(FleetError, match='listed twice'):
        read_robots([f'{A}=x', f'{A}=y'], 'robots.txt')
    with pytest.raises(FleetError, match='is not an RRN'):
        read_robots(['not an rrn=x'], 'robots.txt')


def test_a_trust_with_an_unreadable_key_is_refused_naming_the_robot(tmp_path):
    with pytest.raises(FleetError, match=f'the public key of {A}: cannot read'):
        Trust({A: tmp_path / 'missing.pub'})
