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
Simulated robots of bench_fleet.py: their entries from the quality profiles, and a worker.

``robot_entries(profile, index, count, start)`` makes a robot's own entries from a profile in
``bench/profiles``: one entry per planted cause (the same text on every robot of the profile,
so the same fault shows on many robots), then notes on the profile's statuses at the robot's
own places until ``count``. ``python bench/fleet_robots.py SPEC`` is one worker process: the
robots of one site, each with its own Zenoh client session to the site's router, its outbox
file, liveliness token and payload queryable, as memory_node's fleet link has them
(``robot_memory.ros.fleet_link``). It reads one command a line on stdin and answers one JSON
line on stdout:

- ``dream``: every robot seals its payload at the fleet time ``at`` into its outbox
  (``envelope_for``), publishes it on its payload key and delivers the newest pending one to
  the store (``fleet.transport.deliver``), each at a random moment within ``spread_s``; a robot
  in ``offline`` has its session closed and only queues. Per robot: the latency from publish to
  the store's ack, and the bytes it sent (keys and payloads of the put and of each delivery).
- ``drain``: robots with pending payloads deliver until acknowledged (or ``attempts`` tried).
- ``state``: each robot's outbox (acked, superseded, pending dreams) and its entry ids.
"""

import concurrent.futures
import datetime as dt
import json
import pathlib
import random
import sys
import threading
import time

try:
    from robot_memory.common.timeutil import parse_iso
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.common.timeutil import parse_iso
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.fleet import keys
from robot_memory.fleet.envelope import envelope_for
from robot_memory.fleet.envelope import Provenance
from robot_memory.fleet.outbox import Outbox
from robot_memory.fleet.transport import answer_payload
from robot_memory.fleet.transport import declare_presence
from robot_memory.fleet.transport import deliver
from robot_memory.fleet.transport import open_session
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / 'profiles'))
import generate  # noqa: E402, I100 - bench/profiles/generate.py, the quality profiles

TYPES = {'fault': 'hardware_observation', 'transient': 'hardware_observation',
         'storm': 'hardware_observation', 'routine': 'behavior_pattern',
         'constant': 'environment_note'}
PLACES = ('aisle', 'dock', 'ramp', 'charger', 'bay', 'corridor', 'lift', 'gate')


def _entry(number: int, kind: str, text: str, start: dt.datetime, rng) -> MemoryEntry:
    seen = start - dt.timedelta(days=rng.uniform(2.0, 20.0))
    return MemoryEntry(id=f'mem-{number:08x}', type=kind, text=text,
                       confidence=round(rng.uniform(0.8, 0.97), 2), first_seen=seen,
                       last_reinforced=start - dt.timedelta(hours=rng.uniform(1.0, 20.0)),
                       observation_count=rng.randrange(3, 40), tags=[kind.split('_')[0]])


def robot_entries(profile: dict, index: int, count: int, start: dt.datetime) -> list:
    """Return ``count`` own entries of robot ``index`` of ``profile`` (module docstring)."""
    rng = random.Random(f'{profile["name"]}-{index}')
    entries, causes = [], set()
    for plant in profile['plants']:
        if plant['cause'] in causes or not plant.get('statuses') or len(entries) >= count:
            continue
        causes.add(plant['cause'])
        status = plant['statuses'][0]
        level = {1: 'WARN', 2: 'ERROR', 3: 'STALE'}.get(status.get('level'), 'WARN')
        text = (f"{level} on '{status['name']}' ({status['hardware_id']}): "
                f"{status['message']}, {plant['expect']} ({plant['cause'].replace('_', ' ')})")
        entries.append(_entry(len(entries) + 1, TYPES.get(plant['expect'], 'hardware_observation'),
                              text, start, rng))
    statuses = profile['statuses']
    while len(entries) < count:
        status = statuses[len(entries) % len(statuses)]
        place = f'{rng.choice(PLACES)} {rng.randrange(1, 40)}'
        text = (f"'{status['name']}' reads {status['message']} near {place} on robot "
                f'{index}, {rng.randrange(2, 30)} times since the last dream')
        entries.append(_entry(len(entries) + 1, 'environment_note', text, start, rng))
    return entries


class Robot:
    """One simulated robot: its document, key, outbox and Zenoh client session."""

    def __init__(self, spec: dict, site: str, router: str, directory: pathlib.Path):
        self.rrn, self.site, self.router = spec['rrn'], site, router
        self.model, self.firmware = spec['model'], spec['firmware']
        start = parse_iso(spec['start'])
        profile = generate.load(spec['profile'])
        self.document = MemoryDocument(rrn=self.rrn, last_updated=start, entries=robot_entries(
            profile, spec['index'], spec['entries'], start))
        self.policy = FederationPolicy(private_key_path=pathlib.Path(spec['private_key']))
        self.outbox = TimedOutbox(directory / f'{self.rrn}.outbox.db')
        self.fleet_public_key = directory / 'keys' / 'fleet.pub'  # acks must be signed by it
        self.session = None
        self._declared: list = []
        self._latest = None
        self.made = 0

    def link(self) -> None:
        """Open the session to the site's router, with presence and payload queryable."""
        if self.session is None:
            self.session = open_session('client', connect=[self.router])
            self._declared = [declare_presence(self.session, self.site, self.rrn),
                              answer_payload(self.session, self.site, self.rrn,
                                             lambda: self._latest)]

    def unlink(self) -> None:
        """Close the session (the robot's link is down)."""
        for declared in self._declared:
            declared.undeclare()
        self._declared = []
        if self.session is not None:
            self.session.close()
        self.session = None

    def seal(self, dream_id: int, at: dt.datetime) -> bytes:
        """Seal the payload of a dream at ``at`` into the outbox; return it."""
        provenance = Provenance(self.site, self.model, self.firmware, dream_id, at)
        envelope = envelope_for(self.document, at, self.policy, provenance)
        self.outbox.add(dream_id, at, self.rrn, self.site, envelope, at)
        self._latest = envelope
        self.made += 1
        return envelope

    def deliver(self, at: dt.datetime, timeout_s: float) -> dict:
        """Deliver the newest pending payload; return its latency, answer and bytes sent."""
        waiting = self.outbox.next()
        if waiting is None:
            return {'status': 'nothing', 'bytes': 0}
        sent = len(keys.ingest_key(self.site, self.rrn)) + len(waiting.envelope)
        began, booked = time.perf_counter(), self.outbox.book_s
        done = deliver(self.session, self.outbox, at, timeout_s, self.fleet_public_key)
        took = time.perf_counter() - began
        status = done.ack.status if done.ack is not None else 'no_answer'
        return {'status': status, 'bytes': sent, 's': took, 'dream_id': done.dream_id,
                'superseded': len(done.superseded), 'book_s': self.outbox.book_s - booked}

    def dream(self, dream_id: int, at: dt.datetime, online: bool, timeout_s: float) -> dict:
        """Seal, publish and deliver one dream; return its latency, answer and bytes."""
        if not online:
            self.unlink()
            self.seal(dream_id, at)
            return {'rrn': self.rrn, 'dream_id': dream_id, 'online': False, 'bytes': 0}
        self.link()
        envelope = self.seal(dream_id, at)
        began = time.perf_counter()
        self.session.put(keys.payload_key(self.site, self.rrn), envelope)
        put = len(keys.payload_key(self.site, self.rrn)) + len(envelope)
        result = self.deliver(at, timeout_s)
        latency = time.perf_counter() - began
        acked = result['status'] in ('stored', 'duplicate')
        return {'rrn': self.rrn, 'dream_id': dream_id, 'online': True, 'status': result['status'],
                'latency_s': latency if acked else None, 'bytes': put + result['bytes'],
                'book_s': result.get('book_s', 0.0),
                'put_bytes': put, 'envelope_bytes': len(envelope),
                'superseded': result.get('superseded', 0)}

    def state(self) -> dict:
        """Return the outbox's dreams by state, and the robot's entry ids."""
        rows = self.outbox.db.execute('SELECT dream_id, dream_at, state FROM outbox').fetchall()
        return {'rrn': self.rrn, 'made': self.made,
                'dreams': [[row[0], row[1], row[2]] for row in rows],
                'entries': sorted(entry.id for entry in self.document.entries)}


class TimedOutbox(Outbox):
    """An outbox that adds up the seconds it spends recording the store's answers."""

    book_s = 0.0

    def _timed(self, method, *args, **kwargs) -> None:
        began = time.perf_counter()
        try:
            method(*args, **kwargs)
        finally:
            self.book_s += time.perf_counter() - began

    def acknowledge(self, *args, **kwargs) -> None:
        self._timed(super().acknowledge, *args, **kwargs)

    def note(self, *args, **kwargs) -> None:
        self._timed(super().note, *args, **kwargs)


def _dream_all(robots: list, command: dict, pool) -> list:
    at, offline = parse_iso(command['at']), set(command.get('offline', ()))
    rng = random.Random(f'{command["round"]}')
    began = time.monotonic()

    def one(robot, offset):
        time.sleep(max(0.0, began + offset - time.monotonic()))
        moment = at + dt.timedelta(seconds=offset)
        return robot.dream(command['round'] + 1, moment, robot.rrn not in offline,
                           command['timeout_s'])
    offsets = [rng.uniform(0.0, command['spread_s']) for _ in robots]
    return list(pool.map(one, robots, offsets))


def _drain(robots: list, command: dict, pool) -> list:
    at = parse_iso(command['at'])

    def one(robot):
        results = []
        for _ in range(command['attempts']):
            if robot.outbox.next() is None:
                break
            robot.link()
            results.append(dict(robot.deliver(at, command['timeout_s']), rrn=robot.rrn))
        return results
    return [result for found in pool.map(one, robots) for result in found]


def main(argv=None) -> int:
    """Run one site's robots until the ``stop`` command (module docstring)."""
    spec = json.loads(pathlib.Path((argv or sys.argv[1:])[0]).read_text(encoding='utf-8'))
    directory = pathlib.Path(spec['directory'])
    robots = [Robot(item, spec['site'], spec['router'], directory) for item in spec['robots']]
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=spec['threads']) as pool:
        print(json.dumps({'ready': len(robots)}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            if command['op'] == 'stop':
                break
            if command['op'] == 'dream':
                answer = _dream_all(robots, command, pool)
            elif command['op'] == 'drain':
                answer = _drain(robots, command, pool)
            else:
                answer = [robot.state() for robot in robots]
            with lock:
                print(json.dumps(answer), flush=True)
    for robot in robots:
        robot.unlink()
        robot.outbox.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
