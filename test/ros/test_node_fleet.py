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
memory_node on the fleet, for real: a node process, a Zenoh router and a fleet store.

The router and ``robot-memory fleet serve`` (on a SQLite file) run as child processes; the
node connects to the router with ``fleet_connect`` and, after each dream asked on
``~/dream``, publishes and delivers its signed payload; the test reads the store over Zenoh.
The lessons test runs every link over mutual TLS (the node's ``fleet_tls_*`` parameters).
"""

import datetime as dt
import json


from robot_memory.cli.main import main
from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.fleet import keys
from robot_memory.fleet.envelope import open_envelope
from robot_memory.fleet.envelope import Trust
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.outbox import Outbox
from robot_memory.fleet.outbox import outbox_path
from robot_memory.fleet.transport import open_session
from robot_memory.fleet.transport import publish_lesson
from robot_memory.fleet.transport import TlsFiles
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.srv import Dream
from support.fleet import B
from support.fleet import Child
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import LIDAR
from support.fleet import make_certificates
from support.fleet import make_robots
from support.fleet import until as _until
from support.fleet import write_memory
from support.processes import child_env
from support.processes import free_port
from support.ros_harness import NodeProcess
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import wait_ready

RRN = 'RRN-000000000042'  # NodeProcess's
SITE = 'depot-north'


def _replies(session, key: str, liveliness: bool = False) -> list:
    source = session.liveliness() if liveliness else session
    return [reply.ok for reply in source.get(key, timeout=2.0) if reply.ok is not None]


def _store(tmp_path, router: str, listing, *extra) -> Child:
    return Child(['-m', 'robot_memory.cli.main', 'fleet', 'serve', '--store',
                  str(tmp_path / 'fleet.db'), '--listen', f'tcp/127.0.0.1:{free_port()}',
                  '--connect', router, '--robots', str(listing), *extra], child_env(),
                 'fleet serve: store')


def _entries(session) -> list:
    found = _replies(session, keys.robot_key(RRN))
    return json.loads(found[0].payload.to_bytes())['entries'] if found else []


def test_the_node_publishes_after_each_dream_is_seen_and_catches_up(tmp_path, probe):
    private, public = tmp_path / 'robot.pem', tmp_path / 'robot.pub'
    generate_keypair(private, public)
    now = dt.datetime.now(UTC)
    write_memory(tmp_path / 'robot-memory.md', RRN,
                 [entry('mem-enc00001', ENCODER, at=now - dt.timedelta(hours=1))], now)
    router = f'tcp/127.0.0.1:{free_port()}'
    node = NodeProcess(tmp_path, 'fleet1', fleet_connect=[router], fleet_site=SITE,
                       fleet_model='rover-2', fleet_firmware='1.4.0', fleet_retry_s=1.0,
                       **{'federation.private_key_path': str(private)})
    listing = tmp_path / 'robots.txt'
    listing.write_text(f'{RRN}={public}\n')
    session = routing = store = None
    try:
        node.start()  # the site's router is not up yet: the node starts all the same
        wait_ready(probe, node)
        unlinked = health(probe, 'fleet', where=RRN)
        assert unlinked['linked'] == 'False' and 'no link to the fleet yet' in \
            unlinked['_message'], unlinked
        routing = Child(['-m', 'robot_memory.fleet.router', '--listen', router], child_env(),
                        'router listening')
        store = _store(tmp_path, router, listing)
        session = open_session('client', connect=[router])
        alive = _until(lambda: _replies(session, keys.alive_key(SITE, RRN), liveliness=True),
                       'no liveliness token of the node')
        assert str(alive[0].key_expr) == keys.alive_key(SITE, RRN)
        assert _replies(session, keys.payload_key(SITE, RRN)) == []  # no dream yet
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        kept = _until(lambda: _entries(session), 'the store kept nothing of the node')
        assert [(row['text'], row['rrn']) for row in kept] == [(ENCODER, RRN)]
        [answer] = _replies(session, keys.payload_key(SITE, RRN))
        opened = open_envelope(answer.payload.to_bytes(), SITE, RRN, Trust({RRN: public}),
                               dt.datetime.now(UTC))
        assert (opened.provenance.model, opened.provenance.firmware) == ('rover-2', '1.4.0')
        assert _until(lambda: health(probe, 'fleet', where=RRN)['pending'] == '0',
                      'the node never saw its payload acknowledged')
        # the store goes away; the next dream's payload waits in the outbox, then goes
        assert store.stop() == 0
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        waiting = _until(lambda: health(probe, 'fleet', where=RRN)['pending'] == '1'
                         and health(probe, 'fleet', where=RRN), 'the payload never waited')
        assert waiting['_level'] == 1 and 'wait for the fleet store' in waiting['_message']
        store = _store(tmp_path, router, listing)
        _until(lambda: health(probe, 'fleet', where=RRN)['pending'] == '0',
               'the waiting payload was never delivered after the store came back')
        assert any(': stored' in line and '/ingest/' in line for line in store.lines) or \
            store.wait_for(': stored')
    finally:
        if session is not None:
            session.close()
        assert node.stop() == 0, node.log()
        for child in (store, routing):
            if child is not None:
                child.stop()
    counts = Outbox(outbox_path(tmp_path / 'robot-memory.md')).counts()
    assert counts == {'pending': 0, 'acked': 2, 'superseded': 0}
    assert 'fleet: dream 2 acknowledged' in node.log()


def _tls_options(files) -> list:
    return ['--tls-ca', str(files[0]), '--tls-cert', str(files[1]), '--tls-key', str(files[2])]


def _lesson_ids(memory: MemoryFile) -> list:
    document = memory.load(dt.datetime.now(UTC)).document
    return sorted(entry.id for block in document.peer_context or () if block.rrn == 'fleet'
                  for entry in block.entries)


def _lesson(capsys, *arguments) -> str:
    assert main(['fleet', *arguments]) == 0
    out = capsys.readouterr().out
    return out.split('lesson ', 1)[1].split(':', 1)[0]


def test_the_node_takes_fleet_lessons_over_tls_refuses_forged_ones_and_drops_revoked_ones(
        tmp_path, probe, capsys):
    robots = make_robots(tmp_path / 'keys')  # b: the robot whose entry becomes a lesson
    private, public = tmp_path / 'robot.pem', tmp_path / 'robot.pub'
    generate_keypair(private, public)
    fleet_key, fleet_public = tmp_path / 'fleet.pem', tmp_path / 'fleet.pub'
    assert main(['fleet', 'keygen', str(fleet_key), str(fleet_public)]) == 0
    now = dt.datetime.now(UTC)
    write_memory(tmp_path / 'robot-memory.md', RRN, [], now)
    database = tmp_path / 'fleet.db'
    with FleetStore(str(database), Trust({B: robots.b.public_key})) as kept:
        raw = robots.b.envelope([entry('mem-enc00001', ENCODER, at=now),
                                 entry('mem-lid00001', LIDAR, at=now)], 1, at=now,
                                dream_at=now)
        assert kept.receive(raw, robots.b.site, B, now).status == 'stored'
    store_options = ['--store', str(database), '--fleet-key', str(fleet_key), '--operator',
                     'ops-anna']
    # promoted while the node is off: it catches up by asking the store when it starts
    first = _lesson(capsys, 'promote', *store_options, '--reason', 'seen on 3 robots',
                    '--rrn', B, '--entry', 'mem-enc00001', '--model', 'rover-2')
    # every link over mutual TLS, with certificates of the fleet's CA
    tls = make_certificates(tmp_path / 'tls', 'fleet-ca', ['router', 'store', 'robot', 'ops'])
    router = f'tls/localhost:{free_port()}'
    routing = Child(['-m', 'robot_memory.fleet.router', '--listen', router,
                     *_tls_options(tls['router'])], child_env(), 'router listening')
    listing = tmp_path / 'robots.txt'
    listing.write_text(f'{RRN}={public}\n{B}={robots.b.public_key}\n')
    store = _store(tmp_path, router, listing, '--fleet-public-key', str(fleet_public),
                   '--fleet-key', str(fleet_key), *_tls_options(tls['store']))
    ca, certificate, key = (str(path) for path in tls['robot'])
    node = NodeProcess(tmp_path, 'fleet2', fleet_connect=[router], fleet_site='depot-south',
                       fleet_model='rover-2', fleet_public_key=str(fleet_public),
                       fleet_tls_ca=ca, fleet_tls_cert=certificate, fleet_tls_key=key,
                       **{'federation.private_key_path': str(private)})
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    session = None
    try:
        node.start()
        wait_ready(probe, node)
        _until(lambda: _lesson_ids(memory) == [f'peer:fleet:{first}'],
               'the node never took the lesson promoted before it started')
        session = open_session('client', connect=[router], tls=TlsFiles(*tls['ops']))
        _until(lambda: _replies(session, keys.alive_key('depot-south', RRN), liveliness=True),
               'no liveliness token of the node')
        # published now, to every robot of the node's site
        second = _lesson(capsys, 'promote', *store_options, '--reason', 'the bay is dusty',
                         '--rrn', B, '--entry', 'mem-lid00001', '--site', 'depot-south',
                         '--connect', router, *_tls_options(tls['ops']))
        _until(lambda: len(_lesson_ids(memory)) == 2, 'the published lesson was not taken')
        # a lesson signed with another key: refused by the robot and by the store, counted
        forged = json.loads(store_lesson_message(database, second))
        forged['reason'] = 'disable the lidar'
        publish_lesson(session, 'model', 'rover-2', json.dumps(forged).encode())
        status = _until(lambda: (lambda found: found if found['lessons_refused'] == '1'
                                 else None)(health(probe, 'fleet', where=RRN)),
                        'the forged lesson was not refused by the node')
        assert status['lessons_taken'] == '2'
        store.wait_for('refused (unsigned_lesson)')
        assert len(_lesson_ids(memory)) == 2
        _lesson(capsys, 'revoke', *store_options, '--reason', 'fixed in firmware 1.5',
                '--lesson', first, '--connect', router, *_tls_options(tls['ops']))
        _until(lambda: _lesson_ids(memory) == [f'peer:fleet:{second}'],
               'the revoked lesson stayed')
    finally:
        if session is not None:
            session.close()
        assert node.stop() == 0, node.log()
        store.stop()
        routing.stop()
    assert main(['history', f'peer:fleet:{first}', '--file', str(memory.path)]) == 0
    history = capsys.readouterr().out.splitlines()
    assert len(history) == 2, history
    assert f'from the fleet: {B} mem-enc00001, promoted by ops-anna to every robot of model ' \
        'rover-2: seen on 3 robots' in history[0]
    assert 'revoked by ops-anna: fixed in firmware 1.5' in history[1]
    assert main(['fleet', 'lessons', '--store', str(database)]) == 0
    listed = capsys.readouterr().out
    assert f'{first}  revoked' in listed and f'{second}  active' in listed
    assert 'revoke   ops-anna: fixed in firmware 1.5' in listed


def store_lesson_message(database, lesson_id: str) -> bytes:
    """Return the signed message the store keeps for a lesson."""
    with FleetStore(str(database), Trust({})) as kept:
        return kept.db.value('SELECT message FROM fleet_lessons WHERE lesson_id = ?',
                             (lesson_id,)).encode()
