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
Three real memory_nodes sharing what they learned (RCAN §6), as separate processes.

A, B and C run on this run's ROS_DOMAIN_ID under their own namespaces, with signed
payloads required and each other on their allowlists. A and B each see their own
/diagnostics (remapped), so what A learns reaches B and C only through federation. The
memory clocks run 1800x faster from one shared origin, so the three agree on the time.

A fourth node (the guard, memory time = wall time, signatures required, one allowed sender)
takes hostile payloads over ~/exchange_peer_context, generated with hypothesis: each is a
valid signed payload with one thing made wrong (NaN/inf/negative confidence, huge or
unprintable text, bad or foreign RRNs, path-like ids, thousands of entries, timestamps far
past or future, bad signatures). Each must be refused with a reason that names that very
thing (valid ones accepted), the guard must stay up, and its memory file must never gain
an invalid entry.
"""

import base64
import datetime as dt
import math
import re
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
from std_srvs.srv import Trigger

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC
from robot_memory.federation import peer_context
from robot_memory.rcan.context import is_displayable
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.ros import convert
from robot_memory.srv import Dream
from robot_memory.srv import ExchangePeerContext
from robot_memory.srv import GetContext
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import spin
from support.ros_probe import wait_ready

RRN = {'a': 'RRN-000000000101', 'b': 'RRN-000000000102', 'c': 'RRN-000000000103'}
OUTSIDER = 'RRN-000000000199'
SCALE = 1800.0
WARN = bytes([1])
CORRIDOR = DiagnosticStatus(level=WARN, name='navigation: east corridor', hardware_id='nav',
                            message='path blocked by pallets')


class Fleet:
    """Three nodes, their keys and the shared memory-time origin."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.origin = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(seconds=5)
        self.keys = {}
        for name in ('a', 'b', 'c', 'impostor'):
            private, public = tmp_path / f'{name}.key', tmp_path / f'{name}.pub'
            peer_context.generate_keypair(private, public)
            self.keys[name] = (private, public)
        self.nodes = {}

    def now(self) -> dt.datetime:
        """Return the robots' shared memory time."""
        wall = dt.datetime.now(UTC)
        return self.origin + (wall - self.origin) * SCALE

    def start(self, name, peers=(), period=0.0, expiry=30 * 86400.0, remap=True):
        others = [other for other in ('a', 'b', 'c') if other != name]
        directory = self.tmp_path / name
        directory.mkdir()
        node = NodeProcess(
            directory, f'f{name}',
            remaps=[f'/diagnostics:=/f{name}/diagnostics'] if remap else (),
            rrn=RRN[name], time_scale=SCALE, time_origin=format_iso(self.origin),
            flush_period_s=0.1, **{'dream.initial_max': 0.9},
            peer_nodes=[f'/f{peer}/robot_memory' for peer in peers],
            peer_sync_period_s=period,
            **{'federation.allowed_peers': [RRN[other] for other in others],
               'federation.require_signatures': True,
               'federation.private_key_path': str(self.keys[name][0]),
               'federation.peer_public_keys': [f'{RRN[other]}={self.keys[other][1]}'
                                               for other in others],
               'federation.peer_expiry_s': expiry})
        self.nodes[name] = node.start()
        return node

    def document(self, name):
        return MemoryFile(self.nodes[name].memory_file).load(self.now()).document


def teach(probe, node, count):
    """Publish ``count`` corridor warnings on the node's own /diagnostics at 100 Hz, dream."""
    publisher = probe.create_publisher(DiagnosticArray, f'/{node.namespace}/diagnostics', 100)
    try:
        wait_for(lambda: publisher.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for _ in range(count):
            publisher.publish(DiagnosticArray(status=[CORRIDOR]))
            time.sleep(0.01)
    finally:
        probe.destroy_publisher(publisher)
    wait_for(lambda: False, 0.5, spin=spin(probe))  # let the worker flush
    reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
    assert reply.success and len(reply.created) == 1, reply.message
    return reply.created[0]


@pytest.fixture(scope='module')
def fleet(tmp_path_factory, probe):
    """Make A learn the blocked corridor strongly, B weakly; B then syncs with A on demand."""
    fleet = Fleet(tmp_path_factory.mktemp('fleet'))
    try:
        a = fleet.start('a')
        b = fleet.start('b', peers=['a'])
        c = fleet.start('c', peers=['a', 'b'], period=1.0, expiry=4 * 3600.0, remap=False)
        wait_ready(probe, a, topic='/fa/diagnostics')
        wait_ready(probe, b, topic='/fb/diagnostics')
        wait_ready(probe, c)
        fleet.a_entry = teach(probe, a, 250)
        fleet.b_entry = teach(probe, b, 100)
        fleet.b_before = fleet.document('b').entries
        fleet.sync = call(probe, Trigger, f'{b.prefix}/sync_peers', Trigger.Request())
        yield fleet
    finally:
        for node in fleet.nodes.values():
            node.stop()


def test_b_receives_a_s_corridor_labelled_as_a_s(fleet, probe):
    assert fleet.sync.success, fleet.sync.message
    b = fleet.nodes['b']
    reply = call(probe, GetContext, f'{b.prefix}/get_context',
                 GetContext.Request(include_peers=True))
    assert reply.success, reply.message
    [peer] = [entry for entry in reply.peer_entries if entry.source_rrn == RRN['a']]
    assert 'east corridor' in peer.text and peer.id == f'peer:{RRN["a"]}:{fleet.a_entry}'
    assert f'Reported by peer {RRN["a"]}' in reply.text
    own_section = reply.text.split('Reported by peer')[0]
    assert [entry.id for entry in reply.entries] == [fleet.b_entry]
    assert 'east corridor' in own_section  # B's own, weaker observation, kept apart
    [block] = [block for block in fleet.document('b').peer_context if block.rrn == RRN['a']]
    assert [entry.id for entry in block.entries] == [peer.id]


def test_b_s_own_entry_is_not_reinforced_by_a_s_data(fleet):
    after = fleet.document('b')
    assert after.entries == fleet.b_before, 'a peer merge changed an own entry'
    [block] = [block for block in after.peer_context if block.rrn == RRN['a']]
    [peer] = block.entries
    assert peer.confidence > fleet.b_before[0].confidence  # A is surer; B stays as it was
    assert peer.extras['corroborates'] == [fleet.b_entry]


def test_the_exchange_went_both_ways_and_c_syncs_periodically(fleet):
    a_blocks = {block.rrn for block in fleet.document('a').peer_context or ()}
    assert RRN['b'] in a_blocks, 'A did not keep what B sent with its request'
    assert wait_for(lambda: {RRN['a'], RRN['b']} <= {
        block.rrn for block in fleet.document('c').peer_context or ()}, 15.0), \
        fleet.nodes['c'].log()
    c = fleet.document('c')
    [a_block] = [block for block in c.peer_context if block.rrn == RRN['a']]
    assert [entry.id for entry in a_block.entries] == [f'peer:{RRN["a"]}:{fleet.a_entry}']
    assert c.entries == [], 'C learned nothing itself and must have no own entries'


def _payload(fleet, rrn, key, entries=None, now=None):
    """Return a signed payload as ``rrn`` would send it (signed with ``key``), as a message."""
    now = now or fleet.now()
    document = new_document(rrn, now)
    document.entries = entries if entries is not None else [MemoryEntry(
        id='mem-0badc0de', type='environment_note', text='Loading bay floor is wet',
        confidence=0.9, first_seen=now - dt.timedelta(hours=2), last_reinforced=now,
        observation_count=5, tags=['floor'])]
    policy = peer_context.FederationPolicy(private_key_path=key, max_entries=10_000,
                                           max_payload_bytes=16 * 1024 * 1024)
    return convert.peer_context_message(peer_context.build_payload(document, now, policy))


def _exchange(probe, fleet, message):
    a = fleet.nodes['a']
    return call(probe, ExchangePeerContext, f'{a.prefix}/exchange_peer_context',
                ExchangePeerContext.Request(request=message))


def _a_state(fleet):
    document = fleet.document('a')
    return document.entries, {block.rrn: block.entries for block in document.peer_context or ()}


def test_a_correctly_signed_payload_from_an_allowed_peer_is_accepted(fleet, probe):
    reply = _exchange(probe, fleet, _payload(fleet, RRN['b'], fleet.keys['b'][0]))
    assert reply.success, reply.message
    assert reply.response.rrn == RRN['a'] and reply.response.signature
    assert [entry.id for entry in reply.response.entries] == [fleet.a_entry]
    blocks = _a_state(fleet)[1]
    assert [entry.text for entry in blocks[RRN['b']]] == ['Loading bay floor is wet']


@pytest.mark.parametrize('case, kind', [
    ('outsider', 'not_allowed'), ('forged', 'signature'), ('unsigned', 'signature'),
    ('oversized', 'oversized'), ('malformed', 'malformed'), ('relay', 'malformed'),
    ('own_rrn', 'own_rrn')])
def test_a_bad_payload_is_refused_with_a_reason_and_changes_nothing(fleet, probe, case, kind):
    now = fleet.now()
    b_key = fleet.keys['b'][0]
    if case == 'outsider':
        message = _payload(fleet, OUTSIDER, fleet.keys['impostor'][0])
    elif case == 'forged':
        message = _payload(fleet, RRN['b'], fleet.keys['impostor'][0])
    elif case == 'unsigned':
        message = _payload(fleet, RRN['b'], b_key)
        message.signature = ''
    elif case == 'oversized':
        entries = [MemoryEntry(id=f'mem-{index:08x}', type='environment_note',
                               text=f'Shelf {index} is empty', confidence=0.9,
                               first_seen=now, last_reinforced=now, observation_count=1)
                   for index in range(60)]
        message = _payload(fleet, RRN['b'], b_key, entries=entries, now=now)
    elif case == 'malformed':
        message = _payload(fleet, RRN['b'], b_key)
        message.entries[0].type = 'gossip'
    elif case == 'relay':
        message = _payload(fleet, RRN['b'], b_key)
        message.entries[0].id = f'peer:{RRN["c"]}:mem-00000001'
    else:
        message = _payload(fleet, RRN['a'], fleet.keys['a'][0])
    before = _a_state(fleet)
    reply = _exchange(probe, fleet, message)
    assert not reply.success
    assert f'({kind})' in reply.message, reply.message
    assert not reply.response.entries, 'a refused caller must not receive our memory'
    own, blocks = _a_state(fleet)
    assert own == before[0]
    assert blocks.get(RRN['b']) == before[1].get(RRN['b'])
    assert OUTSIDER not in blocks


def test_every_exchange_is_in_the_audit_log(fleet):
    import sqlite3  # noqa: I100 - only here

    database = fleet.nodes['a'].memory_file.with_name('robot-memory.db')
    deadline = time.monotonic() + 10.0
    while True:
        with sqlite3.connect(database) as db:
            rows = db.execute("SELECT entry_id, reason FROM audit WHERE action = 'peer_merge'"
                              ).fetchall()
        reasons = ' | '.join(reason for _, reason in rows)
        if all(f'rejected ({kind})' in reasons for kind in
               ('not_allowed', 'signature', 'oversized', 'malformed', 'own_rrn')) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for kind in ('not_allowed', 'signature', 'oversized', 'malformed', 'own_rrn'):
        assert f'rejected ({kind})' in reasons, reasons
    assert f'peer:{OUTSIDER}' in {subject for subject, _ in rows}
    assert any(reason.startswith('merged') for _, reason in rows), reasons


def test_a_silent_peer_expires(fleet, probe):
    c = fleet.nodes['c']
    assert wait_for(lambda: RRN['a'] in {block.rrn for block in
                                         fleet.document('c').peer_context or ()}, 10.0)
    assert fleet.nodes['a'].stop() == 0
    # C's expiry is 4 memory hours = 8 s of wall time at 1800x.
    assert wait_for(lambda: RRN['a'] not in {block.rrn for block in
                                             fleet.document('c').peer_context or ()}, 30.0), \
        c.log()
    assert RRN['b'] in {block.rrn for block in fleet.document('c').peer_context}
    # C's sync with A fails at its next attempt once A has left C's view of the graph; a
    # request C sent just before A stopped counts as failed then too (at the latest after
    # peers.SYNC_TIMEOUT_S, 10 s, when discovery is slow to notice).
    deadline = time.monotonic() + 20.0
    while True:
        peers = health(probe, 'peers', timeout=10.0, where=RRN['c'])
        if peers['_level'] == 1 or time.monotonic() > deadline:
            break
    assert peers['_level'] == 1 and '/fa/robot_memory' in peers['_message'], peers
    reply = call(probe, GetContext, f'{c.prefix}/get_context',
                 GetContext.Request(include_peers=True))
    assert RRN['a'] not in reply.text and all(entry.source_rrn != RRN['a']
                                              for entry in reply.peer_entries)


# ------------------------------------------------------------------ hostile payloads, fuzzed

GUARD = 'RRN-000000000201'
SENDER = 'RRN-000000000202'
SKEW_S = 300.0      # federation.max_clock_skew_s (default)
MAX_AGE_S = 3600.0  # federation.max_payload_age_s (default)
MAX_ENTRIES = 50    # federation.max_entries (default)
OWN_ID = re.compile(r'mem-[0-9a-f]{4,12}')  # the ids the tests' valid payloads use
REFUSAL = re.compile(r'peer payload from .*? rejected \((\w+)\): (.*)', re.DOTALL)
UNSAFE = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]')
INT32_MIN = dt.datetime(1901, 12, 14, tzinfo=UTC)   # builtin_interfaces/Time holds int32 seconds
INT32_MAX = dt.datetime(2038, 1, 19, tzinfo=UTC)


@pytest.fixture(scope='module')
def guard(tmp_path_factory, probe):
    """Return a node that requires signed payloads and accepts only SENDER's; its sender key."""
    tmp_path = tmp_path_factory.mktemp('guard')
    for name in ('guard', 'sender'):
        peer_context.generate_keypair(tmp_path / f'{name}.key', tmp_path / f'{name}.pub')
    node = NodeProcess(tmp_path, 'fguard', rrn=GUARD, **{
        'federation.allowed_peers': [SENDER], 'federation.require_signatures': True,
        'federation.private_key_path': str(tmp_path / 'guard.key'),
        'federation.peer_public_keys': [f'{SENDER}={tmp_path / "sender.pub"}']}).start()
    try:
        wait_ready(probe, node)
        now = dt.datetime.now(UTC)  # a first payload: the memory file exists from here on
        first = _send(probe, node, _signed(tmp_path / 'sender.key',
                                           [_plain(0, 'Loading bay floor is wet', now)], now))
        assert first.success, first.message
        yield node, tmp_path / 'sender.key'
    finally:
        assert node.stop() == 0, node.log()


# What a valid payload may hold: no control characters, and none of the bidirectional marks
# and overrides a payload is refused for (U+200E drawn here once made a "valid" plan invalid).
_PRINTABLE = st.characters(blacklist_categories=('Cc', 'Cs', 'Zl', 'Zp'),
                           blacklist_characters='\ufeff\ufffe\uffff').filter(is_displayable)
_LINE = st.text(_PRINTABLE, min_size=1, max_size=500).filter(str.strip)
_ENTRY = st.fixed_dictionaries({
    'suffix': st.from_regex(r'[0-9a-f]{0,8}', fullmatch=True),
    'type': st.sampled_from(['hardware_observation', 'environment_note', 'behavior_pattern']),
    'text': _LINE,
    'confidence': st.floats(0.0, 1.0).map(lambda value: round(value, 4)),
    'age_s': st.floats(0.0, 30 * 86400.0),     # last_reinforced this long before sent_at
    'span_s': st.floats(0.0, 365 * 86400.0),   # first_seen this long before last_reinforced
    'observation_count': st.integers(1, 2 ** 32 - 1),
    'tags': st.lists(st.text(_PRINTABLE, min_size=1, max_size=64).filter(str.strip),
                     max_size=5)})
_FUTURE_S = st.floats(SKEW_S + 120.0, 10 * 365 * 86400.0)  # beyond the skew, transit included


def _shared(index, plan, sent_at):
    last = sent_at - dt.timedelta(seconds=plan['age_s'])
    return peer_context.SharedEntry(
        id=f'mem-{index:04x}{plan["suffix"]}', type=plan['type'], text=plan['text'],
        confidence=plan['confidence'], first_seen=last - dt.timedelta(seconds=plan['span_s']),
        last_reinforced=last, observation_count=plan['observation_count'], tags=plan['tags'])


def _signed(key, entries, sent_at, rrn=SENDER):
    """Return a payload signed with ``key``, as a robot_memory/PeerContext message."""
    payload = peer_context.PeerPayload(rrn=rrn, sent_at=sent_at, entries=tuple(entries))
    return convert.peer_context_message(peer_context.sign_payload(payload, key))


def _plain(index, text, sent_at):
    return peer_context.SharedEntry(id=f'mem-{index:04x}', type='environment_note', text=text,
                                    confidence=0.8, first_seen=sent_at, last_reinforced=sent_at,
                                    observation_count=1)


def _send(probe, node, message):
    return call(probe, ExchangePeerContext, f'{node.prefix}/exchange_peer_context',
                ExchangePeerContext.Request(request=message))


def _clamp(moment):
    return min(max(moment, INT32_MIN), INT32_MAX)


def _resigned(message, key, now, **changes):
    """``message`` with its first entry changed, signed again."""
    data = convert.peer_context_data(message)['entries']
    data[0].update(changes)
    return _signed(key, [peer_context.SharedEntry(**item) for item in data], now)


def _mutate(kind, value, message, key, now):
    """Make one thing of a valid signed ``message`` wrong, in place (or send a new one)."""
    entry = message.entries[0]
    if kind == 'confidence':
        entry.confidence = value
    elif kind == 'text_long':
        entry.text = 'x' * value
    elif kind in ('text_blank', 'text_nul'):
        entry.text = value
    elif kind == 'text_unicode':  # printable, so valid: signed as it is
        return _resigned(message, key, now, text=value)
    elif kind in ('text_control', 'text_bidi'):
        entry.text = entry.text[:3] + value + entry.text[3:]
    elif kind in ('rrn', 'rrn_outsider', 'rrn_own'):
        message.rrn = value
    elif kind in ('id', 'relay'):
        entry.id = value
    elif kind == 'duplicate_id':
        message.entries = [entry, entry]
    elif kind in ('type', 'resolved'):
        entry.type = value
    elif kind == 'observation_count':
        entry.observation_count = value
    elif kind == 'tags':
        entry.tags = value
    elif kind == 'entries_many':
        return _signed(key, [_plain(index, f'Shelf {index} is empty', now)
                             for index in range(value)], now)
    elif kind == 'payload_bytes':
        return _signed(key, [_plain(index, value * 500, now) for index in range(MAX_ENTRIES)],
                       now)
    elif kind in ('sent_at_future', 'sent_at_past'):
        offset = dt.timedelta(seconds=value)
        message.sent_at = convert.datetime_to_time(
            _clamp(now + offset if kind == 'sent_at_future' else now - offset))
    elif kind == 'last_reinforced_future':
        entry.last_reinforced = convert.datetime_to_time(
            _clamp(now + dt.timedelta(seconds=value)))
    elif kind == 'first_seen_after':
        later = convert.time_to_datetime(entry.last_reinforced) + dt.timedelta(seconds=value)
        entry.first_seen = convert.datetime_to_time(later)
    elif kind == 'ancient':
        return _resigned(message, key, now, first_seen=INT32_MIN,
                         last_reinforced=INT32_MIN + dt.timedelta(seconds=value))
    elif kind == 'ignored_fields':
        entry.effective_confidence = value
        entry.source_rrn = '../../etc/passwd'
    elif kind == 'signature':
        message.signature = value
    elif kind == 'tampered':  # still a valid entry, but not the one that was signed
        entry.text = 'Edited in transit' if entry.text != 'Edited in transit' else 'Edited'
    elif kind != 'valid':
        raise AssertionError(f'unknown mutation {kind}')
    return message


# kind: (what the refusal's detail must match, or None: must be accepted; values; may a
# payload made this way also be accepted?)
_MUTATIONS = {
    'valid': (None, st.none(), True),
    'ignored_fields': (None, st.sampled_from([math.nan, math.inf, -1.0]), True),
    'ancient': (None, st.floats(0.0, 86400.0), True),
    'confidence': (r'\bconfidence\b', st.sampled_from(
        [math.nan, math.inf, -math.inf, -0.5, -1e-6, 1.0001, 1.5, 3.4e38, -3.4e38]), False),
    'text_long': (r'\btext\b', st.integers(501, 200_000), False),
    'text_blank': (r'\btext\b', st.sampled_from(['', ' ', '\t', '\u3000 \u2003']), False),
    # control, invisible (a tag character, private use) and line-breaking characters
    'text_control': (r'\btext\b', st.sampled_from(
        ['\x01', '\x1b[31m', '\x7f', '\x85', '\u2028', '\ufeff', '\n', '\r', '\U000e0041 tag',
         '\U0010fffd private']), False),
    # the middleware cuts a string at a NUL: what arrives is blank, or no longer what was signed
    'text_nul': (r'\btext\b|\bsignature\b', st.sampled_from(['\x00', '\x00x', 'wet\x00 floor']),
                 False),
    'text_unicode': (None, st.sampled_from(
        ['e\u0301\u0301\u0301', '𝕎𝕖𝕥', '\ufdd0 noncharacter',
         '- [x]: "y" # z', '&anchor *alias !!str', 'שלום world']),
        True),
    # bidirectional overrides make text read differently from what it says
    'text_bidi': (r'\btext\b.*U\+(202E|200F|2066|202A|200E)', st.sampled_from(
        ['\u202eroolf teW\u202c', '\u200f\u2066bay\u2069 🤖', 'door \u202a1234',
         '\u200eleft']), False),
    'rrn': (r'\brrn\b', st.sampled_from(
        ['', '../../etc/passwd', '/etc/passwd', 'RRN 1', 'RRN-ü', '-RRN', 'R' * 65,
         'RRN-1\u202e', 'C:\\RRN']), False),
    'rrn_outsider': (r'\ballowlist\b', st.just(OUTSIDER), False),
    'rrn_own': (r'\bthis robot\b', st.just(GUARD), False),
    'id': (r'\bid\b', st.sampled_from(
        ['', '../../etc/passwd', '/etc/passwd', 'a/b', '.hidden', '-x', 'ü', 'x' * 129,
         'x' * 110, 'C:\\x', 'mem 1', 'mem-1\u202e', '~root']), False),
    'relay': (r'\brelayed\b', st.just(f'peer:{OUTSIDER}:mem-00000001'), False),
    'duplicate_id': (r'\bduplicate id\b', st.none(), False),
    'type': (r'\btype\b', st.sampled_from(['', 'gossip', '../', 'HARDWARE_OBSERVATION', 'NaN']),
             False),
    'resolved': (r'\bresolved\b', st.just('resolved'), False),
    'observation_count': (r'\bobservation_count\b', st.just(0), False),
    'tags': (r'\btags?\b', st.sampled_from(
        [[''], [' '], ['x' * 65], ['a\x01b'], ['\u2028'], [f't{index}' for index in range(33)]]),
        False),
    'entries_many': (r'\bentries\b', st.integers(MAX_ENTRIES + 1, 3000), False),
    'payload_bytes': (r'\bbytes\b', st.sampled_from(['🤖', '\U0001d538']), False),
    'sent_at_future': (r'\bsent_at\b', _FUTURE_S, False),
    'sent_at_past': (r'\bsent_at\b', st.floats(MAX_AGE_S + 1.0, 200 * 365 * 86400.0), False),
    'last_reinforced_future': (r'\blast_reinforced\b', _FUTURE_S, False),
    'first_seen_after': (r'\bfirst_seen\b', st.floats(1e-3, 365 * 86400.0), False),
    'signature': (r'\bsignatures?\b', st.one_of(
        st.sampled_from(['', '!!!', 'x' * 300, 'a b', '\u202e', '../..', 'AAAA']),
        st.binary(min_size=64, max_size=64).map(lambda raw: base64.b64encode(raw).decode())),
        False),
    'tampered': (r'\bsignature\b', st.none(), False),
}


def _blocks(node):
    """Return the guard's peer blocks by rrn; its memory file must hold nothing invalid."""
    result = MemoryFile(node.memory_file).load(dt.datetime.now(UTC))
    assert not result.problems and not result.quarantined, (result.problems,
                                                            result.quarantined)
    document = result.document
    assert document.rrn == GUARD and document.entries == [], 'a merge touched own entries'
    blocks = {block.rrn: block for block in document.peer_context or ()}
    assert set(blocks) <= {SENDER}, sorted(blocks)
    for block in blocks.values():
        for entry in block.entries:
            prefix, _, own = entry.id.rpartition(':')
            assert prefix == f'peer:{SENDER}' and OWN_ID.fullmatch(own), entry.id
            assert math.isfinite(entry.confidence) and 0.0 <= entry.confidence <= 1.0, entry
            assert entry.text.strip() and len(entry.text) <= 500, entry
            assert not UNSAFE.search(entry.text), entry.text
            assert entry.type in ('hardware_observation', 'environment_note',
                                  'behavior_pattern'), entry.type
    return blocks


def _accepted(node, sent):
    """Check that the guard's block for SENDER is now exactly the entries of ``sent``."""
    entries = _blocks(node)[SENDER].entries
    assert [entry.id for entry in entries] == [f'peer:{SENDER}:{entry.id}'
                                               for entry in sent.entries]
    assert [entry.text for entry in entries] == [entry.text for entry in sent.entries]


@pytest.mark.parametrize('kind', list(_MUTATIONS))
@settings(max_examples=5, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(plans=st.lists(_ENTRY, min_size=1, max_size=3), data=st.data())
def test_a_hostile_payload_is_refused_naming_the_problem(guard, probe, kind, plans, data):
    node, key = guard
    named, values, may_pass = _MUTATIONS[kind]
    value = data.draw(values, label=kind)
    before = _blocks(node)
    now = dt.datetime.now(UTC)
    message = _mutate(kind, value, _signed(key, [_shared(index, plan, now) for index, plan
                                                 in enumerate(plans)], now), key, now)
    reply = _send(probe, node, message)
    assert node.process.poll() is None, node.log()
    if reply.success:
        assert named is None or may_pass, f'{kind} {value!r} was accepted: {reply.message}'
        assert reply.response.rrn == GUARD and reply.response.signature
        _accepted(node, message)
        return
    assert named is not None, f'a valid payload ({kind}) was refused: {reply.message}'
    match = REFUSAL.fullmatch(reply.message)
    assert match and match.group(1) in peer_context.PeerRejected.KINDS, reply.message
    detail = match.group(2).rsplit('; ', 1)[0]  # what follows is advice (naming every field)
    assert re.search(named, detail), f'{kind} {value!r} refused without naming it: {detail!r}'
    assert not reply.response.entries, 'a refused caller must not receive our memory'
    assert _blocks(node) == before, 'a refused payload changed the memory file'
    # Still serving: a valid payload is accepted right after.
    now = dt.datetime.now(UTC)
    valid = _signed(key, [_plain(0, 'Loading bay floor is wet', now)], now)
    follow_up = _send(probe, node, valid)
    assert follow_up.success, follow_up.message
    _accepted(node, valid)


def test_a_replayed_or_reordered_payload_is_refused_naming_sent_at(guard, probe):
    node, key = guard
    now = dt.datetime.now(UTC)
    first = _signed(key, [_plain(1, 'Dock 2 is out of order', now)], now)
    assert _send(probe, node, first).success
    before = _blocks(node)
    for earlier in (now - dt.timedelta(microseconds=1), now - dt.timedelta(seconds=600)):
        reply = _send(probe, node, _signed(key, [_plain(2, 'Dock 2 works', earlier)], earlier))
        assert not reply.success and '(stale)' in reply.message, reply.message
        assert re.search(r'\bsent_at\b', REFUSAL.fullmatch(reply.message).group(2))
        assert _blocks(node) == before
    assert _send(probe, node, first).success, 'the same payload again changes nothing'
