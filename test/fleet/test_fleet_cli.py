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

"""``robot-memory fleet`` refuses what it cannot send, before anything is queued or sent."""

import datetime as dt
import subprocess
import sys

from robot_memory.cli.main import main
from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.fleet.outbox import outbox_path
from support.fleet import A
from support.fleet import B
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import write_config
from support.fleet import write_memory
from support.processes import child_env

# the fleet's fixtures: robots with keys, store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)

PUSH = ['fleet', 'push', '--connect', 'tcp/127.0.0.1:9', '--site', 'depot-north']


def _memory(tmp_path, rrn=A):
    memory = tmp_path / 'robot-memory.md'
    write_memory(memory, rrn, [entry('mem-enc00001', ENCODER)], dt.datetime.now(UTC))
    return memory


def test_push_needs_the_nodes_parameters_and_a_signing_key(tmp_path, robots, capsys):
    memory = _memory(tmp_path)
    assert main(PUSH + ['--file', str(memory)]) == 1
    assert "give --config: the robot's RRN and signing key" in capsys.readouterr().err
    unsigned = tmp_path / 'unsigned.yaml'
    unsigned.write_text(f'/**:\n  ros__parameters:\n    rrn: "{A}"\n', encoding='utf-8')
    assert main(['dream', '--file', str(memory)]) == 0
    capsys.readouterr()
    assert main(PUSH + ['--file', str(memory), '--config', str(unsigned)]) == 1
    err = capsys.readouterr().err
    assert 'signed end to end, and no signing key is set' in err
    assert 'federation.private_key_path' in err
    assert not outbox_path(memory).exists()


def test_push_refuses_another_robots_file_and_a_memory_without_a_dream(
        tmp_path, robots, capsys):
    memory = _memory(tmp_path)
    config = write_config(tmp_path / 'params.yaml', A, robots.a.private_key)
    assert main(PUSH + ['--file', str(memory), '--config', str(config)]) == 1
    assert 'no dream is recorded for' in capsys.readouterr().err
    other = write_config(tmp_path / 'b.yaml', B, robots.b.private_key)
    assert main(PUSH + ['--file', str(memory), '--config', str(other)]) == 1
    assert f'belongs to {A}, but --config names {B}' in capsys.readouterr().err
    assert not outbox_path(memory).exists()


def test_push_keeps_the_payload_when_no_router_answers(tmp_path, robots, capsys):
    memory = _memory(tmp_path)
    config = write_config(tmp_path / 'params.yaml', A, robots.a.private_key)
    assert main(['dream', '--file', str(memory)]) == 0
    capsys.readouterr()
    assert main(PUSH + ['--file', str(memory), '--config', str(config)]) == 1
    out, err = capsys.readouterr()
    assert 'fleet push: dream 1 queued' in out
    assert 'cannot open a Zenoh client session (connect to tcp/127.0.0.1:9)' in err
    assert f'1 payloads wait in {outbox_path(memory)} and go with the next push' in err
    assert outbox_path(memory).exists()


def test_serve_refuses_a_bad_robots_file_and_a_missing_store_directory(tmp_path, capsys):
    listing = tmp_path / 'robots.txt'
    listing.write_text(f'{A}\n', encoding='utf-8')
    serve = ['fleet', 'serve', '--listen', 'tcp/127.0.0.1:9', '--robots', str(listing)]
    assert main(serve + ['--store', str(tmp_path / 'fleet.db')]) == 1
    assert 'robots.txt:1:' in capsys.readouterr().err
    listing.write_text('', encoding='utf-8')
    assert main(serve + ['--store', str(tmp_path / 'nowhere' / 'fleet.db')]) == 1
    assert 'nowhere does not exist, so the fleet store fleet.db cannot be made there' in \
        capsys.readouterr().err


def test_serve_refuses_a_fleet_key_that_is_not_the_pair_of_its_public_key(tmp_path, capsys):
    # the key that signs acks and the one that checks lessons must be the fleet's one pair:
    # otherwise robots would refuse every ack, or every lesson, of a store that looks fine
    listing = tmp_path / 'robots.txt'
    listing.write_text('', encoding='utf-8')
    generate_keypair(tmp_path / 'fleet.pem', tmp_path / 'fleet.pub')
    generate_keypair(tmp_path / 'other.pem', tmp_path / 'other.pub')
    serve = ['fleet', 'serve', '--listen', 'tcp/127.0.0.1:9', '--robots', str(listing),
             '--store', str(tmp_path / 'fleet.db'), '--fleet-key', str(tmp_path / 'fleet.pem')]
    assert main(serve + ['--fleet-public-key', str(tmp_path / 'other.pub')]) == 1
    err = capsys.readouterr().err
    assert 'fleet.pem and --fleet-public-key' in err and 'are not one key pair' in err
    (tmp_path / 'fleet.pem').chmod(0o644)
    assert main(serve) == 1
    assert 'fleet.pem is readable by others (mode 644); run chmod 600 on it' in \
        capsys.readouterr().err
    assert not (tmp_path / 'fleet.db').exists()  # refused before anything was made


def _without(module: str, argv: list, cwd) -> subprocess.CompletedProcess:
    code = (f'import sys; sys.modules[{module!r}] = None; '
            'from robot_memory.cli.main import main; '
            f'sys.exit(main({argv!r}))')
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=child_env())


def test_a_missing_fleet_extra_exits_2_saying_how_to_install_it(tmp_path):
    listing = tmp_path / 'robots.txt'
    listing.write_text('', encoding='utf-8')
    for module, argv in (
            ('psycopg', ['fleet', 'report', '--store', 'postgresql://fleet@/fleet']),
            ('zenoh', ['fleet', 'serve', '--store', str(tmp_path / 'fleet.db'), '--listen',
                       'tcp/127.0.0.1:9', '--robots', str(listing)])):
        done = _without(module, argv, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "pip install '.[fleet]'" in done.stderr and f'{module} is missing' in done.stderr
