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
A fleet to try in one command (run by scripts/fleet_demo.sh): a store, two sites, robots.

Starts a PostgreSQL server of its own in DIR (``initdb``/``pg_ctl``; a SQLite file with
``--sqlite`` or where PostgreSQL is not installed), the fleet store (``robot-memory fleet
serve``), one Zenoh router per site (``python -m robot_memory.fleet.router``) linked to the
store, and a handful of simulated robots with different faults: each has its memory file and
key pair, dreams (``robot-memory dream``) and pushes its signed payload through its site's
router (``robot-memory fleet push``). One robot later resolves its fault; an operator promotes
one robot's entry as a fleet lesson. Then it prints ``robot-memory fleet report`` and
``robot-memory fleet lessons`` and stops every process it started.
"""

import argparse
import contextlib
import datetime as dt
import pathlib
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from robot_memory.cli.main import main as robot_memory
from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.writer import render
from robot_memory.testing.fleet_servers import free_port
from robot_memory.testing.fleet_servers import PostgresControl
from robot_memory.testing.processes import end_process

ENCODER = 'Left wheel encoder intermittent under sustained load'
LIDAR = 'Lidar dropouts near the loading bay'
BATTERY = 'Battery voltage sags below 22 V when lifting over 300 kg'
DOCK = 'Docking retries at charger 3 (alignment off by 4 cm)'
# rrn, site, model, firmware, faults (the first robot's encoder is resolved later)
ROBOTS = (
    ('RRN-000000000101', 'depot-north', 'rover-2', '1.4.0', (ENCODER, LIDAR)),
    ('RRN-000000000102', 'depot-north', 'rover-2', '1.4.0', (ENCODER,)),
    ('RRN-000000000103', 'depot-south', 'rover-2', '1.5.0', (ENCODER, DOCK)),
    ('RRN-000000000104', 'depot-south', 'lifter-1', '2.0.1', (BATTERY,)),
    ('RRN-000000000105', 'depot-north', 'lifter-1', '2.0.1', (BATTERY, LIDAR)),
    ('RRN-000000000106', 'depot-south', 'rover-2', '1.5.0', (DOCK,)),
)
SHORT_ROBOTS = 4


class Child:
    """A process of the demo, its output kept; stopped by its PID."""

    def __init__(self, arguments: list, ready: str, log: pathlib.Path):
        self.process = subprocess.Popen([sys.executable, *arguments], text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.log = log
        self.lines: list = []
        deadline = time.monotonic() + 60.0
        while not any(ready in line for line in self.lines):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise SystemExit(f'fleet demo: {arguments[:3]} did not start: '
                                 f'{"".join(self.lines)[-2000:]}')
            readable, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if readable:
                self.lines.append(self.process.stdout.readline())

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and keep what it said in its log."""
        end_process(self.process)
        self.lines += self.process.stdout.readlines()
        self.process.stdout.close()
        self.log.write_text(''.join(self.lines), encoding='utf-8')


def write_robot(directory: pathlib.Path, rrn: str, faults, now: dt.datetime) -> tuple:
    """Write a robot's memory file, key pair and parameters file; return (memory, config)."""
    directory.mkdir(parents=True)
    private, public = directory / 'robot.pem', directory / 'robot.pub'
    generate_keypair(private, public)
    entries = [MemoryEntry(id=f'mem-{index:08x}', type='hardware_observation', text=text,
                           confidence=0.8, first_seen=now - dt.timedelta(days=2),
                           last_reinforced=now - dt.timedelta(hours=1), observation_count=4,
                           tags=['demo']) for index, text in enumerate(faults, 1)]
    memory = directory / 'robot-memory.md'
    memory.write_bytes(render(MemoryDocument(rrn=rrn, last_updated=now, entries=entries)))
    config = directory / 'params.yaml'
    config.write_text(f'/**:\n  ros__parameters:\n    rrn: "{rrn}"\n    federation:\n'
                      f'      private_key_path: "{private}"\n', encoding='utf-8')
    return memory, config


def run(command: list, log=None) -> None:
    """Run one robot-memory command in this process (its output to ``log`` if given)."""
    with contextlib.redirect_stdout(log) if log is not None else contextlib.nullcontext():
        code = robot_memory(command)
    if code != 0:
        raise SystemExit(f'fleet demo: robot-memory {" ".join(command[:2])} failed ({code})'
                         + (f'; see {log.name}' if log is not None else ''))


def dream_and_push(memory, config, site, model, firmware, router) -> None:
    """Dream on a robot's memory file and push its payload through its site's router."""
    with open(memory.parent / 'robot.log', 'a', encoding='utf-8') as log:
        run(['dream', '--file', str(memory)], log)
        run(['fleet', 'push', '--file', str(memory), '--config', str(config), '--connect',
             router, '--site', site, '--model', model, '--firmware', firmware, '--timeout',
             '10'], log)
    said = (memory.parent / 'robot.log').read_text(encoding='utf-8').splitlines()[-1]
    print(f'  {memory.parent.name}  {site:<12} {model:<9} {firmware:<6} {said}')


def build_parser() -> argparse.ArgumentParser:
    """Return the demo's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--dir', help='where everything is written (default: a new '
                                      'temporary directory, removed after)')
    parser.add_argument('--short', action='store_true',
                        help=f'{SHORT_ROBOTS} robots instead of {len(ROBOTS)} (for the tests)')
    parser.add_argument('--sqlite', action='store_true',
                        help='a SQLite file as the store instead of a PostgreSQL server')
    return parser


def main(argv=None) -> int:
    """Run the demo fleet, print its report and lessons, stop everything."""
    args = build_parser().parse_args(argv)
    directory = pathlib.Path(args.dir or tempfile.mkdtemp(prefix='robot-memory-fleet-'))
    directory.mkdir(parents=True, exist_ok=True)
    started: list = []
    server = None
    try:
        if not args.sqlite:
            try:
                server = PostgresControl()
                server.start()
            except FileNotFoundError:
                print('fleet demo: PostgreSQL is not installed: the store is a SQLite file')
        store_url = server.server.url('postgres') if server is not None \
            else str(directory / 'fleet.db')
        return _fleet(args, directory, store_url, started)
    finally:
        for child in reversed(started):
            child.stop()
        if server is not None:
            server.remove()  # stopped, its files removed
        if not args.dir:
            shutil.rmtree(directory, ignore_errors=True)


def _fleet(args, directory: pathlib.Path, store_url: str, started: list) -> int:
    now = dt.datetime.now(UTC)
    robots = ROBOTS[:SHORT_ROBOTS] if args.short else ROBOTS
    made = {rrn: write_robot(directory / rrn, rrn, faults, now)
            for rrn, _, _, _, faults in robots}
    listing = directory / 'robots.txt'
    listing.write_text(''.join(f'{rrn}={directory / rrn / "robot.pub"}\n' for rrn in made))
    fleet_key, fleet_public = directory / 'fleet.pem', directory / 'fleet.pub'
    run(['fleet', 'keygen', str(fleet_key), str(fleet_public)])
    store_endpoint = f'tcp/127.0.0.1:{free_port()}'
    started.append(Child(['-m', 'robot_memory.cli.main', 'fleet', 'serve', '--store', store_url,
                          '--listen', store_endpoint, '--robots', str(listing),
                          '--fleet-public-key', str(fleet_public), '--fleet-key',
                          str(fleet_key)], 'fleet serve: store',
                         directory / 'store.log'))
    routers = {}
    for site in sorted({robot[1] for robot in robots}):
        routers[site] = f'tcp/127.0.0.1:{free_port()}'
        started.append(Child(['-m', 'robot_memory.fleet.router', '--listen', routers[site],
                              '--connect', store_endpoint], 'router listening',
                             directory / f'router-{site}.log'))
    time.sleep(1.0)  # the routers' links to the store come up
    sockets = urllib.parse.parse_qs(urllib.parse.urlsplit(store_url).query).get('host')
    server = f' (its server in {pathlib.Path(sockets[0]).parent}, removed at the end)' \
        if sockets else ''
    print(f'fleet demo: store {store_url.split("?")[0]}{server}, sites {", ".join(routers)}, '
          f'{len(robots)} robots; files in {directory}')
    for rrn, site, model, firmware, _ in robots:
        dream_and_push(*made[rrn], site, model, firmware, routers[site])
    # the first robot's encoder was fixed: its next dream no longer holds the entry
    rrn, site, model, firmware, faults = robots[0]
    memory, config = made[rrn]
    write_robot_without(memory, rrn, ENCODER)
    dream_and_push(memory, config, site, model, firmware, routers[site])
    run(['fleet', 'promote', '--store', store_url, '--fleet-key', str(fleet_key), '--rrn',
         robots[1][0], '--entry', 'mem-00000001', '--model', 'rover-2', '--operator',
         'ops-demo', '--reason', 'seen on most rovers: check the encoder cable',
         '--connect', routers[robots[1][1]]])
    print()
    run(['fleet', 'report', '--store', store_url])
    print()
    run(['fleet', 'lessons', '--store', store_url])
    return 0


def write_robot_without(memory: pathlib.Path, rrn: str, text: str) -> None:
    """Rewrite a robot's memory file without the entry of ``text`` (the fault was fixed)."""
    from robot_memory.rcan.memory_file import MemoryFile
    now = dt.datetime.now(UTC)
    with MemoryFile(memory).update(now, rrn) as result:
        result.document.entries = [entry for entry in result.document.entries
                                   if entry.text != text]


if __name__ == '__main__':
    sys.exit(main())
