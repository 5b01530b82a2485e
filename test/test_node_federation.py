"""Three real memory_nodes sharing what they learned (RCAN §6), as separate processes.

A, B and C run on this run's ROS_DOMAIN_ID under their own namespaces, with signed
payloads required and each other on their allowlists. A and B each see their own
/diagnostics (remapped), so what A learns reaches B and C only through federation. The
memory clocks run 1800x faster from one shared origin, so the three agree on the time.
"""

import datetime as dt
import time

import pytest

from robot_memory import federation
from robot_memory.memory_file import MemoryFile
from robot_memory.memory_file import new_document
from robot_memory.ros import convert
from robot_memory.schema import MemoryEntry
from robot_memory.srv import Dream
from robot_memory.srv import ExchangePeerContext
from robot_memory.srv import GetContext
from robot_memory.timeutil import format_iso
from robot_memory.timeutil import UTC
from std_srvs.srv import Trigger

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus

from ros_harness import NodeProcess
from ros_harness import wait_for
from ros_probe import call
from ros_probe import health
from ros_probe import make_probe
from ros_probe import spin
from ros_probe import wait_ready

RRN = {'a': 'RRN-000000000101', 'b': 'RRN-000000000102', 'c': 'RRN-000000000103'}
OUTSIDER = 'RRN-000000000199'
SCALE = 1800.0
WARN = bytes([1])
CORRIDOR = DiagnosticStatus(level=WARN, name='navigation: east corridor', hardware_id='nav',
                            message='path blocked by pallets')


@pytest.fixture(scope='module')
def probe():
    """An rclpy node in the test process."""
    yield from make_probe('fleet_probe')


class Fleet:
    """Three nodes, their keys and the shared memory-time origin."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.origin = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(seconds=5)
        self.keys = {}
        for name in ('a', 'b', 'c', 'impostor'):
            private, public = tmp_path / f'{name}.key', tmp_path / f'{name}.pub'
            federation.generate_keypair(private, public)
            self.keys[name] = (private, public)
        self.nodes = {}

    def now(self) -> dt.datetime:
        """The robots' shared memory time."""
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
    """A learned the blocked corridor strongly, B weakly; B then synced with A on demand."""
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
    """A signed payload as ``rrn`` would send it (signed with ``key``), as a message."""
    now = now or fleet.now()
    document = new_document(rrn, now)
    document.entries = entries if entries is not None else [MemoryEntry(
        id='mem-0badc0de', type='environment_note', text='Loading bay floor is wet',
        confidence=0.9, first_seen=now - dt.timedelta(hours=2), last_reinforced=now,
        observation_count=5, tags=['floor'])]
    policy = federation.FederationPolicy(private_key_path=key, max_entries=10_000,
                                         max_payload_bytes=16 * 1024 * 1024)
    return convert.peer_context_message(federation.build_payload(document, now, policy))


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
    peers = health(probe, 'peers', timeout=10.0, where=RRN['c'])
    assert peers['_level'] == 1 and '/fa/robot_memory' in peers['_message'], peers
    reply = call(probe, GetContext, f'{c.prefix}/get_context',
                 GetContext.Request(include_peers=True))
    assert RRN['a'] not in reply.text and all(entry.source_rrn != RRN['a']
                                              for entry in reply.peer_entries)
