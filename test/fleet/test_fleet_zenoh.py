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
Robots and the fleet store on Zenoh, for real: a router and the store as child processes.

``robot-memory fleet push`` runs in the test's process (a Zenoh client), through the router,
to ``robot-memory fleet serve`` (its own router session, connected to the site's router), on
SQLite and on PostgreSQL.
"""

import datetime as dt
import json
import subprocess
import sys

import pytest

from robot_memory.cli.main import main
from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.federation.peer_context import load_private_key
from robot_memory.fleet import acks
from robot_memory.fleet import keys
from robot_memory.fleet.envelope import open_envelope
from robot_memory.fleet.fleet_store import Ack
from robot_memory.fleet.outbox import Outbox
from robot_memory.fleet.outbox import outbox_path
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.transport import answer_payload
from robot_memory.fleet.transport import declare_presence
from robot_memory.fleet.transport import open_session
from robot_memory.fleet.transport import TlsFiles
from support.fleet import A
from support.fleet import B
from support.fleet import C
from support.fleet import Child
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import make_certificates
from support.fleet import until as _until
from support.fleet import write_config
from support.fleet import write_memory
from support.processes import child_env
from support.processes import free_port

# the fleet's fixtures: robots with keys, store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)


def _get_json(session, key: str, timeout_s: float = 2.0):
    for reply in session.get(key, timeout=timeout_s):
        if reply.ok is not None:
            return json.loads(reply.ok.payload.to_bytes())
    return None


@pytest.fixture
def router():
    endpoint = f'tcp/127.0.0.1:{free_port()}'
    child = Child(['-m', 'robot_memory.fleet.router', '--listen', endpoint], child_env(),
                  'router listening')
    yield endpoint
    assert child.stop() == 0


@pytest.fixture
def robot_a(tmp_path, robots):
    """Robot A's memory file with one entry, its parameters file, and a dream."""
    memory = tmp_path / 'robot-memory.md'
    now = dt.datetime.now(UTC)
    write_memory(memory, A, [entry('mem-enc00001', ENCODER, at=now - dt.timedelta(hours=1))],
                 now)
    config = write_config(tmp_path / 'params.yaml', A, robots.a.private_key)
    return memory, config


def _dream(memory, capsys) -> None:
    assert main(['dream', '--file', str(memory)]) == 0
    capsys.readouterr()


def _push(memory, config, endpoint, capsys) -> tuple:
    code = main(['fleet', 'push', '--file', str(memory), '--config', str(config), '--connect',
                 endpoint, '--site', 'depot-north', '--model', 'rover-2', '--firmware',
                 '1.4.0', '--timeout', '5'])
    out, err = capsys.readouterr()
    return code, out, err


def _push_until_answered(memory, config, endpoint, capsys) -> tuple:
    """Push until something answers on the ingest key (the routes take a moment to settle)."""
    def pushed():
        code, out, err = _push(memory, config, endpoint, capsys)
        return (code, out, err) if 'no fleet store answered' not in err else None
    return _until(pushed, 'nothing ever answered on the ingest key')


def test_a_robot_pushes_through_a_router_and_catches_up_after_the_link_drops(
        tmp_path, robots, store_url, router, robot_a, capsys):
    memory, config = robot_a
    for dream in (1, 2):  # two dreams while no fleet store answers
        _dream(memory, capsys)
        code, out, err = _push(memory, config, router, capsys)
        assert code == 1 and f'dream {dream} not delivered, no fleet store answered' in err
    assert Outbox(outbox_path(memory)).counts()['pending'] == 2
    listing = tmp_path / 'robots.txt'
    listing.write_text(f'{A}={robots.a.public_key}\n{B}={robots.b.public_key}\n')
    store = Child(['-m', 'robot_memory.cli.main', 'fleet', 'serve', '--store', store_url,
                   '--listen', f'tcp/127.0.0.1:{free_port()}', '--connect', router,
                   '--robots', str(listing)], child_env(), 'fleet serve: store')
    session = open_session('client', connect=[router])
    try:
        _until(lambda: _get_json(session, keys.REPORT), 'the store answered no report query')
        code, out, err = _push(memory, config, router, capsys)
        assert (code, err) == (0, '')
        assert 'dream 2 acknowledged (stored); 1 older payloads superseded by it' in out
        assert Outbox(outbox_path(memory)).counts() == {'pending': 0, 'acked': 1,
                                                        'superseded': 1}
        code, out, err = _push(memory, config, router, capsys)
        assert 'dream 2 was delivered before' in out and 'nothing waits' in out
        # a robot the store does not know is refused, told why, and keeps its payload
        other = tmp_path / 'c'
        other.mkdir()
        write_memory(other / 'robot-memory.md', C, [entry('mem-enc00001', ENCODER)],
                     dt.datetime.now(UTC))
        _dream(other / 'robot-memory.md', capsys)
        code, out, err = _push(other / 'robot-memory.md',
                               write_config(other / 'params.yaml', C, robots.c.private_key),
                               router, capsys)
        assert code == 1 and 'not delivered, refused (unknown_robot)' in err
        assert "add 'RRN=path of its public key' to the store's --robots file" in err
        assert Outbox(outbox_path(other / 'robot-memory.md')).counts()['pending'] == 1
        entries = _get_json(session, keys.robot_key(A))['entries']
        assert [(row['text'], row['last_dream'], row['site']) for row in entries] == [
            (ENCODER, 2, 'depot-north')]
        # someone publishes A's payload under B's key: refused and counted
        raw = robots.a.envelope([entry('mem-enc00001', ENCODER)], 3,
                                at=dt.datetime.now(UTC))
        session.put(keys.payload_key('depot-north', B), raw)
        report = _until(lambda: (lambda found: found if found and found['refusals'][
            'wrong_key'] else None)(_get_json(session, keys.REPORT)),
            'the store counted no wrong_key refusal')
        assert report['dreams_kept'] == 1
    finally:
        session.close()
        assert store.stop() == 0
    assert main(['fleet', 'report', '--store', store_url, '--json']) == 0
    report = json.loads(capsys.readouterr().out)
    assert [robot['rrn'] for robot in report['robots']] == [A]
    assert (report['refusals']['wrong_key'], report['refusals']['unknown_robot']) == (1, 1)
    assert store.wait_for('wrong_key')


def test_an_answer_about_another_dream_does_not_make_the_robot_forget_its_payload(
        router, robot_a, capsys):
    # Something answers on the store's ingest key (another fleet's store, a program by
    # mistake) with a "stored" for a dream that is not the one waiting: the robot keeps it.
    memory, config = robot_a
    _dream(memory, capsys)
    said = {'dream_id': 99, 'rrn': A}
    nested = [b'[' * 50000]  # JSON deeper than Python's recursion limit, first
    other = open_session('client', connect=[router])

    def answer(query):
        query.reply(query.key_expr, nested.pop() if nested else
                    json.dumps(dict(said, status='stored')).encode())
    queryable = other.declare_queryable(keys.ingest_key('depot-north', A), answer)
    try:
        code, _, err = _push_until_answered(memory, config, router, capsys)
        assert code == 1 and "not an ack: b'[[[[" in err
        code, out, err = _push(memory, config, router, capsys)
        assert code == 1 and 'dream 1 not delivered, refused (malformed)' in err
        assert f"stored for dream 99 of '{A}', not for this delivery (dream 1 of {A})" in err
        assert Outbox(outbox_path(memory)).counts() == {'pending': 1, 'acked': 0,
                                                        'superseded': 0}
        said.update(rrn=B, dream_id=1)  # another robot's dream 1: not this one either
        code, out, err = _push(memory, config, router, capsys)
        assert code == 1 and f"of '{B}', not for this delivery" in err
        said.update(rrn=A)  # the answer names this robot and dream: acknowledged
        code, out, err = _push(memory, config, router, capsys)
        assert (code, err) == (0, '') and 'dream 1 acknowledged (stored)' in out
        assert Outbox(outbox_path(memory)).counts()['acked'] == 1
    finally:
        queryable.undeclare()
        other.close()


def test_a_robot_that_knows_the_fleet_key_forgets_only_on_the_stores_signed_ack(
        tmp_path, robots, router, robot_a, capsys):
    # Anyone on the site's network can answer on the ingest key. A robot with the fleet's
    # public key takes a "stored" only when the fleet key signed it for the bytes it sent.
    memory, _ = robot_a
    generate_keypair(tmp_path / 'fleet.pem', tmp_path / 'fleet.pub')
    generate_keypair(tmp_path / 'other.pem', tmp_path / 'other.pub')
    config = write_config(tmp_path / 'fleet-params.yaml', A, robots.a.private_key,
                          tmp_path / 'fleet.pub')
    _dream(memory, capsys)
    signer = [None, load_private_key(tmp_path / 'other.pem')]  # unsigned, then another key
    rogue = open_session('client', connect=[router])

    def answer(query):
        ack = Ack('stored', A, 1, message='dream 1 of A kept')
        if signer[0] is not None:
            ack = acks.sign(ack, query.payload.to_bytes(), signer[0])
        query.reply(query.key_expr, json.dumps(ack.to_data()).encode())
    queryable = rogue.declare_queryable(keys.ingest_key('depot-north', A), answer)
    try:
        code, _, err = _push_until_answered(memory, config, router, capsys)
        assert code == 1 and 'dream 1 not delivered, refused (unsigned_ack)' in err
        assert 'the answer stored for dream 1 carries no signature of the fleet key' in err
        signer.pop(0)
        code, out, err = _push(memory, config, router, capsys)
        assert code == 1 and 'is not signed by the fleet key' in err
        assert Outbox(outbox_path(memory)).counts() == {'pending': 1, 'acked': 0,
                                                        'superseded': 0}
    finally:
        queryable.undeclare()
        rogue.close()
    listing = tmp_path / 'robots.txt'
    listing.write_text(f'{A}={robots.a.public_key}\n')
    store = Child(['-m', 'robot_memory.cli.main', 'fleet', 'serve', '--store',
                   str(tmp_path / 'fleet.db'), '--listen', f'tcp/127.0.0.1:{free_port()}',
                   '--connect', router, '--robots', str(listing), '--fleet-key',
                   str(tmp_path / 'fleet.pem'), '--fleet-public-key', str(tmp_path / 'fleet.pub')],
                  child_env(), 'fleet serve: store')
    try:
        code, out, err = _push_until_answered(memory, config, router, capsys)
        assert (code, err) == (0, '') and 'dream 1 acknowledged (stored)' in out
        assert Outbox(outbox_path(memory)).counts()['acked'] == 1
    finally:
        assert store.stop() == 0


def test_a_robot_answers_queries_for_its_payload_and_shows_it_is_alive(router, robots):
    now = dt.datetime.now(UTC)
    sealed = robots.a.envelope([entry('mem-enc00001', ENCODER, at=now)], 4, at=now)
    robot = open_session('client', connect=[router])
    reader = open_session('client', connect=[router])
    try:
        token = declare_presence(robot, 'depot-north', A)
        queryable = answer_payload(robot, 'depot-north', A, lambda: sealed)

        def alive():
            return [str(reply.ok.key_expr) for reply in reader.liveliness().get(
                'robot-memory/fleet/depot-north/*/alive', timeout=2.0) if reply.ok]
        assert _until(alive, 'no liveliness token') == [keys.alive_key('depot-north', A)]

        def answered():
            return [reply.ok.payload.to_bytes() for reply in reader.get(
                keys.payload_key('depot-north', A), timeout=2.0) if reply.ok]
        [raw] = _until(answered, 'no payload answered')
        opened = open_envelope(raw, 'depot-north', A, robots.trust, now)
        assert (opened.provenance.dream_id, opened.payload.entries[0].text) == (4, ENCODER)
        token.undeclare()
        queryable.undeclare()
        _until(lambda: not alive(), 'the token outlived its undeclaration')
    finally:
        robot.close()
        reader.close()


def _tls_arguments(files) -> list:
    return ['--tls-ca', str(files[0]), '--tls-cert', str(files[1]), '--tls-key', str(files[2])]


def test_mutual_tls_lets_in_only_nodes_with_a_certificate_of_the_fleet_ca(
        tmp_path, robots, robot_a, capsys):
    fleet = make_certificates(tmp_path / 'pki', 'fleet-ca', ['router', 'robot', 'reader'])
    stranger = make_certificates(tmp_path / 'other', 'other-ca', ['robot'])['robot']
    endpoint = f'tls/localhost:{free_port()}'
    router = Child(['-m', 'robot_memory.fleet.router', '--listen', endpoint]
                   + _tls_arguments(fleet['router']), child_env(), 'router listening')
    try:
        robot = open_session('client', connect=[endpoint], tls=TlsFiles(*fleet['robot']))
        reader = open_session('client', connect=[endpoint], tls=TlsFiles(*fleet['reader']))
        try:
            token = declare_presence(robot, 'depot-north', A)
            _until(lambda: [reply for reply in reader.liveliness().get(
                keys.alive_key('depot-north', A), timeout=2.0) if reply.ok],
                'the token did not cross the TLS router')
            token.undeclare()
        finally:
            robot.close()
            reader.close()
        with pytest.raises(FleetError, match='certificates of the fleet CA'):
            open_session('client', connect=[endpoint], tls=TlsFiles(*stranger))
        memory, config = robot_a
        _dream(memory, capsys)
        push = ['fleet', 'push', '--file', str(memory), '--config', str(config), '--connect',
                endpoint, '--site', 'depot-north', '--timeout', '1']
        assert main(push) == 1
        assert 'a tls/ endpoint needs --tls-ca, --tls-cert and --tls-key' in \
            capsys.readouterr().err
        assert main(push + ['--tls-ca', str(fleet['robot'][0])]) == 1
        assert 'give --tls-ca, --tls-cert and --tls-key together' in capsys.readouterr().err
        assert main(push + _tls_arguments(fleet['robot'])) == 1  # connected; no store yet
        assert 'dream 1 not delivered, no fleet store answered' in capsys.readouterr().err
    finally:
        assert router.stop() == 0


def test_no_command_but_fleet_imports_zenoh_or_psycopg(tmp_path, robots):
    memory = tmp_path / 'robot-memory.md'
    write_memory(memory, A, [entry('mem-enc00001', ENCODER)], dt.datetime.now(UTC))
    script = (
        'import sys\n'
        'from robot_memory.cli.main import main\n'
        f'assert main(["show", "--file", {str(memory)!r}]) == 0\n'
        f'assert main(["dream", "--file", {str(memory)!r}]) == 0\n'
        f'assert main(["fleet", "report", "--store", {str(tmp_path / "fleet.db")!r}]) == 0\n'
        'print(sorted(name for name in ("zenoh", "psycopg") if name in sys.modules))\n')
    done = subprocess.run([sys.executable, '-c', script], env=child_env(), text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == '[]'
