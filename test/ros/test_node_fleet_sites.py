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
Two robots at two sites learn each other's lessons only through the fleet store (issue 37, 7).

Each site has its own Zenoh router; the two are linked only through a third (the hub), which
the fleet store (``robot-memory fleet serve`` on SQLite) connects to. A memory_node at each
site delivers its payload through its site's router. An operator promotes the north robot's
entry to the south site with ``fleet promote``, and the south robot's entry to the north site
from the operator page's Fleet view: each robot takes the other's entry as a fleet lesson.
The two robots are not each other's LAN peers (neither allows nor calls the other), so the
store is their only path; beside it, each one's LAN federation with a peer of its own site
(the test, signing as that peer, over ``~/exchange_peer_context``) keeps working both ways,
and never hands a fleet lesson on.
"""

import datetime as dt
import json

from robot_memory.cli.main import main
from robot_memory.common.timeutil import UTC
from robot_memory.federation import peer_context
from robot_memory.fleet import keys
from robot_memory.fleet import lesson_store
from robot_memory.fleet.envelope import Trust
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.transport import open_session
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.ros import convert
from robot_memory.srv import Dream
from robot_memory.srv import ExchangePeerContext
from robot_memory.web.fleet_view import FleetSettings
from support.fleet import Child
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import LIDAR
from support.fleet import until
from support.fleet import write_memory
from support.processes import child_env
from support.processes import free_port
from support.ros_harness import NodeProcess
from support.ros_probe import call
from support.ros_probe import wait_ready
from support.web import serve

NORTH, SOUTH = 'RRN-000000000201', 'RRN-000000000202'
LAN = {NORTH: 'RRN-000000000211', SOUTH: 'RRN-000000000212'}  # a LAN peer at each site
SITE = {NORTH: 'depot-north', SOUTH: 'depot-south'}
OWN = {NORTH: ('mem-enc00201', ENCODER), SOUTH: ('mem-lid00202', LIDAR)}
WET = 'Loading bay floor is wet after cleaning'


def _keys(directory, name) -> tuple:
    private, public = directory / f'{name}.pem', directory / f'{name}.pub'
    peer_context.generate_keypair(private, public)
    return private, public


def _router(listen: str, *connect: str) -> Child:
    arguments = ['-m', 'robot_memory.fleet.router', '--listen', listen]
    for endpoint in connect:
        arguments += ['--connect', endpoint]
    return Child(arguments, child_env(), 'router listening')


def _robot(tmp_path, rrn: str, router: str, fleet_public, robot_keys, lan_keys) -> NodeProcess:
    directory = tmp_path / rrn
    directory.mkdir()
    now = dt.datetime.now(UTC)
    entry_id, text = OWN[rrn]
    write_memory(directory / 'robot-memory.md', rrn,
                 [entry(entry_id, text, at=now - dt.timedelta(hours=1))], now)
    return NodeProcess(
        directory, f'site{rrn[-1]}', rrn=rrn, fleet_connect=[router], fleet_site=SITE[rrn],
        fleet_model='rover-2', fleet_firmware='1.4.0', fleet_retry_s=1.0,
        fleet_public_key=str(fleet_public),
        **{'federation.private_key_path': str(robot_keys[0]),
           'federation.allowed_peers': [LAN[rrn]],
           'federation.require_signatures': True,
           'federation.peer_public_keys': [f'{LAN[rrn]}={lan_keys[1]}']})


def _document(node: NodeProcess):
    return MemoryFile(node.memory_file).load(dt.datetime.now(UTC)).document


def _fleet_entries(node: NodeProcess) -> list:
    return [(entry.text, entry.extras['from_rrn']) for block in _document(node).peer_context or ()
            if block.rrn == 'fleet' for entry in block.entries]


def _stored(session, rrn: str) -> list:
    for reply in session.get(keys.robot_key(rrn), timeout=2.0):
        if reply.ok is not None:
            return json.loads(reply.ok.payload.to_bytes())['entries']
    return []


def _lan_exchange(probe, node: NodeProcess, rrn: str, lan_keys):
    """Send the node a signed payload of its LAN peer; return the node's answer."""
    now = dt.datetime.now(UTC)
    document = new_document(LAN[rrn], now)
    document.entries = [MemoryEntry(id='mem-0badc0de', type='environment_note', text=WET,
                                    confidence=0.9, first_seen=now - dt.timedelta(hours=2),
                                    last_reinforced=now, observation_count=5, tags=['floor'])]
    policy = peer_context.FederationPolicy(private_key_path=lan_keys[0])
    message = convert.peer_context_message(peer_context.build_payload(document, now, policy))
    return call(probe, ExchangePeerContext, f'{node.prefix}/exchange_peer_context',
                ExchangePeerContext.Request(request=message))


def test_two_sites_learn_each_others_lessons_only_through_the_store_beside_their_lan(
        tmp_path, probe, capsys):
    made = tmp_path / 'keys'
    made.mkdir()
    fleet_key, fleet_public = _keys(made, 'fleet')
    robot_keys = {rrn: _keys(made, rrn) for rrn in (NORTH, SOUTH)}
    lan_keys = {rrn: _keys(made, LAN[rrn]) for rrn in (NORTH, SOUTH)}
    hub, north, south = (f'tcp/127.0.0.1:{free_port()}' for _ in range(3))
    listing = tmp_path / 'robots.txt'
    listing.write_text(''.join(f'{rrn}={robot_keys[rrn][1]}\n' for rrn in (NORTH, SOUTH)))
    database = tmp_path / 'fleet.db'
    children = [_router(hub), _router(north, hub), _router(south, hub)]
    nodes: dict = {}
    session = page = None
    try:
        children.append(Child(
            ['-m', 'robot_memory.cli.main', 'fleet', 'serve', '--store', str(database),
             '--listen', f'tcp/127.0.0.1:{free_port()}', '--connect', hub, '--robots',
             str(listing), '--fleet-public-key', str(fleet_public), '--fleet-key',
             str(fleet_key)], child_env(),
            'fleet serve: store'))
        for rrn, router in ((NORTH, north), (SOUTH, south)):
            nodes[rrn] = _robot(tmp_path, rrn, router, fleet_public, robot_keys[rrn],
                                lan_keys[rrn]).start()
        session = open_session('client', connect=[hub])
        for rrn, node in nodes.items():
            wait_ready(probe, node)
            reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
            assert reply.success, reply.message
        for rrn in nodes:  # each payload crossed its site's router and the hub to the store
            kept = until(lambda: _stored(session, rrn), f'the store kept nothing of {rrn}')
            assert [(row['entry_id'], row['site']) for row in kept] == [(OWN[rrn][0], SITE[rrn])]
        # north's entry to every robot of depot-south, from the CLI, published through the hub
        assert main(['fleet', 'promote', '--store', str(database), '--fleet-key', str(fleet_key),
                     '--operator', 'ops-anna', '--reason', 'check the south rovers too',
                     '--rrn', NORTH, '--entry', OWN[NORTH][0], '--site', SITE[SOUTH],
                     '--connect', hub]) == 0
        capsys.readouterr()
        # south's entry to every robot of depot-north, from the page's Fleet view
        page, client = serve(MemoryFile(tmp_path / 'page.md'),
                             fleet=FleetSettings(str(database), fleet_key, (north,)))
        status, text = client.change('/fleet/promote', rrn=SOUTH, entry=OWN[SOUTH][0],
                                     to=f'site:{SITE[NORTH]}', reason='the north bay too')
        assert status == 200 and f'published through {north}' in text, text
        until(lambda: _fleet_entries(nodes[SOUTH]) == [(ENCODER, NORTH)],
              "the south robot did not take the north robot's lesson")
        until(lambda: _fleet_entries(nodes[NORTH]) == [(LIDAR, SOUTH)],
              "the north robot did not take the south robot's lesson")
        # beside the fleet, each robot's LAN federation works both ways, and hands on only
        # its own entries: a fleet lesson is never relayed to a LAN peer
        for rrn, node in nodes.items():
            reply = _lan_exchange(probe, node, rrn, lan_keys[rrn])
            assert reply.success, reply.message
            assert reply.response.rrn == rrn
            assert [item.id for item in reply.response.entries] == [OWN[rrn][0]]
            blocks = {block.rrn: [item.text for item in block.entries]
                      for block in _document(node).peer_context}
            other = SOUTH if rrn == NORTH else NORTH
            assert blocks == {LAN[rrn]: [WET], 'fleet': [OWN[other][1]]}, blocks
    finally:
        if page is not None:
            page.stop()
        if session is not None:
            session.close()
        for node in nodes.values():
            assert node.stop() == 0, node.log()
        for child in reversed(children):
            child.stop()
    assert main(['history', 'peer:fleet:' + _lesson_of(database, NORTH), '--file',
                 str(nodes[SOUTH].memory_file)]) == 0
    assert f'from the fleet: {NORTH} {OWN[NORTH][0]}, promoted by ops-anna to every robot ' \
        f'of site {SITE[SOUTH]}' in capsys.readouterr().out


def _lesson_of(database, rrn: str) -> str:
    """Return the id of the lesson made of ``rrn``'s entry, from the store's lessons."""
    with FleetStore(str(database), Trust({})) as store:
        return next(lesson['lesson_id'] for lesson in lesson_store.lessons(store)
                    if lesson['source_rrn'] == rrn)
