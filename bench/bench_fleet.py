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
The fleet at scale on loopback (issue 37 point 6): robots, three sites, the store; JSON lines.

A PostgreSQL server of its own (``robot_memory.testing.fleet_servers``), ``robot-memory fleet
serve`` on it, three Zenoh routers (``python -m robot_memory.fleet.router``), each linked to
the store and to the site before it, and ``--robots`` robots split over the sites, one worker
process a site (``bench/fleet_robots.py``: a Zenoh client session, outbox, liveliness token
and payload queryable per robot, as memory_node has them; entries from the quality profiles).
Every round is a dream of every robot at a simulated fleet time (``--period-min`` apart),
spread over ``--spread-s`` seconds of real time. Mid-run one site's router is killed (SIGKILL)
and restarted on its port, and one robot's link is down for an hour of fleet time.

Lines:
``fleet_latency``  p50/p99 seconds from a robot's publish to the store's ack (signed with the
    fleet key, checked by the robot), rounds without a fault (a delivery not acked within
    ``--timeout-s`` counts as the timeout: a lower bound); the baseline is the same Zenoh get
    answered by a bare queryable that keeps nothing.
``fleet_bytes``  bytes a robot sends per robot-day when nothing changes (one nightly dream: its
    put and its delivery), against sending its whole robot-memory.md once.
``fleet_ingest``  the store keeping sealed envelopes as ``fleet serve`` keeps a queue of them
    (``FleetStore.receive_many``; one ``receive`` each beside it) against a bare batched INSERT
    (psycopg ``executemany`` in one transaction) of the same rows into the same server, timed
    in turn in each of 5 repeats; ``ratio`` is the median of the repeats' ratios.
``fleet_rollup``  "same fault on N robots" (the report's path: ``store.fault_entries()`` and
    its grouping) over ``--rollup-robots`` x 50 entries, against one bare SQL GROUP BY.
``fleet_delivery``  dreams made, stored, superseded by a newer stored one, pending, lost and
    counted twice, after the router kill and the link outage.
``fleet_latency_distribution``, ``fleet_bytes_distribution``  what bench/plots.py draws.

Usage: ``python bench/bench_fleet.py [--quick] [--robots N] [--rounds R] [--spread-s S]
[--only store]``; ``--only store`` runs the store's two lines (``fleet_ingest``,
``fleet_rollup``) without the routers and robots, for work on the store alone.
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

try:
    from robot_memory.common.timeutil import format_iso
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.fleet.transport import open_session
from robot_memory.testing.fleet_servers import Child
from robot_memory.testing.fleet_servers import free_port
from robot_memory.testing.fleet_servers import new_database
from robot_memory.testing.fleet_servers import PostgresControl

import fleet_store_bench  # noqa: I100 - bench/fleet_store_bench.py, beside this script

HERE = pathlib.Path(__file__).resolve().parent
SITES = ('depot-north', 'depot-south', 'harbour-east')
PROFILES = ('turtlebot4_lite', 'clearpath_husky', 'husarion_panther', 'ur_arm_ros2_control')
MODELS = {'turtlebot4_lite': 'tb4-lite', 'clearpath_husky': 'husky-a200',
          'husarion_panther': 'panther-1', 'ur_arm_ros2_control': 'ur10e'}
GOAL_P99_S, GOAL_KB_PER_DAY = 2.0, 50.0
DREAMS_PER_DAY = 1  # memory_node's nightly dream (dream_time); dream_period_s is off by default


def _env() -> dict:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(HERE.parent), env.get('PYTHONPATH')]))
    return env


def _percentile(values: list, share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


class Worker:
    """One site's worker process (bench/fleet_robots.py), driven one command a line."""

    def __init__(self, spec_path: pathlib.Path):
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / 'fleet_robots.py'), str(spec_path)], env=_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline()
        if not ready:
            raise SystemExit(f'bench_fleet: the worker {spec_path.name} did not start')

    def send(self, command: dict) -> None:
        """Send a command (answered by :meth:`answer`)."""
        self.process.stdin.write(json.dumps(command) + '\n')
        self.process.stdin.flush()

    def answer(self) -> list:
        """Return the answer to the last command."""
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit('bench_fleet: a worker died; see its stderr above')
        return json.loads(line)

    def stop(self) -> None:
        """Stop the worker (the stop command, then its PID)."""
        if self.process.poll() is None:
            try:
                self.send({'op': 'stop'})
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


def _ask_all(workers: list, command: dict) -> list:
    for worker in workers:
        worker.send(command)
    return [item for worker in workers for item in worker.answer()]


def _drained(child: Child) -> Child:
    """Keep reading a child's output (the store logs every delivery), so it never blocks."""
    def read():
        for line in child.process.stdout:
            child.lines.append(line)
    threading.Thread(target=read, daemon=True).start()
    return child


def make_robots(args, directory: pathlib.Path, start: dt.datetime) -> list:
    """Make each robot's key pair; return their specs, sites in turn."""
    (directory / 'keys').mkdir()
    # the fleet's pair: the store signs its acks, robots take only acks it signed
    generate_keypair(directory / 'keys' / 'fleet.pem', directory / 'keys' / 'fleet.pub')
    robots = []
    for index in range(args.robots):
        rrn = f'RRN-{index + 1:012d}'
        private, public = directory / 'keys' / f'{rrn}.pem', directory / 'keys' / f'{rrn}.pub'
        generate_keypair(private, public)
        profile = PROFILES[index % len(PROFILES)]
        robots.append({'rrn': rrn, 'index': index, 'site': SITES[index % len(SITES)],
                       'profile': profile, 'model': MODELS[profile],
                       'firmware': f'1.{index % 3}.0', 'entries': args.entries,
                       'private_key': str(private), 'public_key': str(public),
                       'start': format_iso(start)})
    (directory / 'robots.txt').write_text(
        ''.join(f'{robot["rrn"]}={robot["public_key"]}\n' for robot in robots), encoding='utf-8')
    return robots


class Fleet:
    """The store, the routers and the site workers of one run; stopped by :meth:`stop`."""

    def __init__(self, args, directory: pathlib.Path, store_url: str, robots: list):
        self.children, self.workers = [], []
        self.store_endpoint = f'tcp/127.0.0.1:{free_port()}'
        self.store = _drained(Child(
            ['-m', 'robot_memory.cli.main', 'fleet', 'serve', '--store', store_url, '--listen',
             self.store_endpoint, '--robots', str(directory / 'robots.txt'), '--fleet-key',
             str(directory / 'keys' / 'fleet.pem')], _env(),
            'fleet serve: store'))
        self.children.append(self.store)
        self.endpoints = [f'tcp/127.0.0.1:{free_port()}' for _ in SITES]
        self.routers = [self.start_router(site) for site in range(len(SITES))]
        time.sleep(1.0)  # the routers link up
        for site, name in enumerate(SITES):
            spec = {'site': name, 'router': self.endpoints[site], 'threads': args.threads,
                    'directory': str(directory),
                    'robots': [robot for robot in robots if robot['site'] == name]}
            path = directory / f'worker-{name}.json'
            path.write_text(json.dumps(spec), encoding='utf-8')
            self.workers.append(Worker(path))

    def start_router(self, site: int) -> Child:
        """Start site ``site``'s router: linked to the store and to the site before it."""
        links = ['--connect', self.store_endpoint]
        if site:
            links += ['--connect', self.endpoints[site - 1]]
        child = Child(['-m', 'robot_memory.fleet.router', '--listen', self.endpoints[site]]
                      + links, _env(), 'router listening')
        self.children.append(child)
        return child

    def kill_router(self, site: int) -> None:
        """Kill a site's router at once (SIGKILL), as a power cut does."""
        self.routers[site].process.kill()
        self.routers[site].process.wait()

    def stop(self) -> None:
        """Stop the workers, then the routers and the store."""
        for worker in self.workers:
            worker.stop()
        for child in reversed(self.children):
            child.stop()  # SIGTERM, SIGKILL after 20 s


def _schedule(args) -> dict:
    """Return the fault plan: the round the router dies in, and the outage's rounds."""
    kill = max(1, args.rounds // 2)
    outage_rounds = max(1, round(60 / args.period_min))
    first = max(1, kill - outage_rounds) if args.rounds > outage_rounds + 1 else 1
    return {'kill_round': kill, 'kill_site': 1,
            'outage': set(range(first, min(args.rounds - 1, first + outage_rounds)))}


def run_rounds(args, fleet: Fleet, robots: list, start: dt.datetime) -> dict:
    """Run every round (dreams, the router kill, the link outage); return what happened."""
    plan = _schedule(args)
    offline_rrn = robots[2]['rrn']  # a robot of the third site
    results, fault_rounds = [], set()
    for number in range(args.rounds):
        at = start + dt.timedelta(minutes=args.period_min * number)
        if number == plan['kill_round']:
            fleet.kill_router(plan['kill_site'])
            fault_rounds.add(number)
        offline = [offline_rrn] if number in plan['outage'] else []
        found = _ask_all(fleet.workers, {'op': 'dream', 'round': number, 'at': format_iso(at),
                                         'spread_s': args.spread_s, 'offline': offline,
                                         'timeout_s': args.timeout_s})
        for item in found:
            item['round'] = number
        results += found
        if number == plan['kill_round']:
            fleet.routers[plan['kill_site']] = fleet.start_router(plan['kill_site'])
            time.sleep(2.0)  # the restarted router links up; its robots reconnect
        took = [item['latency_s'] for item in found if item.get('latency_s')]
        print(json.dumps({'bench': 'fleet_round', 'round': number, 'fleet_time': format_iso(at),
                          'delivered': len(took),
                          'p50_s': round(statistics.median(took), 4) if took else None,
                          'p99_s': round(_percentile(took, 0.99), 4) if took else None,
                          'outbox_p99_s': round(_percentile(
                              [item.get('book_s', 0.0) for item in found], 0.99), 4)
                          if found else None,
                          'not_delivered': sum(1 for item in found if item['online']
                                               and not item.get('latency_s')),
                          'offline': len(offline), 'router_killed': number in fault_rounds}),
              file=sys.stderr, flush=True)
    end = start + dt.timedelta(minutes=args.period_min * args.rounds)
    drained = _ask_all(fleet.workers, {'op': 'drain', 'at': format_iso(end), 'attempts': 5,
                                       'timeout_s': args.timeout_s})
    states = _ask_all(fleet.workers, {'op': 'state'})
    return {'results': results, 'drained': drained, 'states': states, 'plan': plan,
            'offline_rrn': offline_rrn, 'fault_rounds': fault_rounds}


def bare_latency(args, endpoint: str, envelope_bytes: int) -> list:
    """Return seconds of a Zenoh get through a site router to a queryable that keeps nothing."""
    store = open_session('router', [f'tcp/127.0.0.1:{free_port()}'], [endpoint])
    client = open_session('client', connect=[endpoint])
    try:
        queryable = store.declare_queryable('bench/bare/*', lambda query: query.reply(
            query.key_expr, b'{"status":"stored"}'))
        time.sleep(1.0)
        payload, took = b'x' * envelope_bytes, []
        for number in range(args.bare_repeats):
            began = time.perf_counter()
            answers = list(client.get(f'bench/bare/{number}', payload=payload,
                                      timeout=args.timeout_s))
            if answers:
                took.append(time.perf_counter() - began)
        queryable.undeclare()
        return took
    finally:
        client.close()
        store.close()


def figures(args, run: dict, robots: list, bare: list) -> list:
    """Return the latency, bytes and delivery lines (and the distributions) of a run."""
    results = run['results']
    delivered = [item for item in results if item['online'] and item['rrn'] != run['offline_rrn']
                 and item['round'] not in run['fault_rounds']]
    acked = [item['latency_s'] for item in delivered if item.get('latency_s') is not None]
    # a delivery the store did not ack within the timeout took longer: counted at the timeout,
    # so a p99 among them is a lower bound (p99_is_lower_bound)
    not_acked = len(delivered) - len(acked)
    steady = acked + [args.timeout_s] * not_acked
    faulty = [item['latency_s'] for item in results if item.get('latency_s') is not None
              and item['round'] in run['fault_rounds']]
    p99 = _percentile(steady, 0.99) if steady else None
    bare_p99 = _percentile(bare, 0.99) if bare else None
    lines = [{'bench': 'fleet_latency', 'n': len(steady), 'robots': args.robots,
              'sites': len(SITES), 'p50_s': round(statistics.median(steady), 4),
              'p99_s': round(p99, 4), 'max_s': round(max(steady), 4), 'not_acked': not_acked,
              'p99_is_lower_bound': bool(not_acked) and p99 >= args.timeout_s,
              'offered_dreams_per_s': round(args.robots / args.spread_s, 2),
              'baseline': 'the same Zenoh get through a site router to a bare queryable',
              'baseline_p50_s': round(statistics.median(bare), 4),
              'baseline_p99_s': round(bare_p99, 4), 'ratio': round(p99 / bare_p99, 2),
              'fault_round_p99_s': round(_percentile(faulty, 0.99), 4) if faulty else None,
              'fault_round_not_acked': sum(1 for item in results if item['online'] and
                                           item['round'] in run['fault_rounds'] and
                                           item.get('latency_s') is None),
              'goal_p99_s': GOAL_P99_S,
              'met': None if args.quick or args.robots != 200 else p99 <= GOAL_P99_S}]
    per_robot = {}
    for item in results:
        if item['online'] and item['round'] not in run['fault_rounds']:
            per_robot.setdefault(item['rrn'], []).append(item['bytes'])
    day = {rrn: statistics.median(sent) * DREAMS_PER_DAY for rrn, sent in per_robot.items()}
    sizes = fleet_store_bench.memory_file_sizes(robots)
    kb = statistics.median(day.values()) / 1000
    lines.append({'bench': 'fleet_bytes', 'n': len(day), 'dreams_per_day': DREAMS_PER_DAY,
                  'kb_per_robot_day': round(kb, 2),
                  'kb_per_robot_day_max': round(max(day.values()) / 1000, 2),
                  'envelope_kb': round(statistics.median(
                      item['envelope_bytes'] for item in results if item.get('envelope_bytes'))
                      / 1000, 2), 'entries': args.entries,
                  'baseline': 'the whole robot-memory.md sent once a dream',
                  'baseline_kb_per_robot_day': round(statistics.median(sizes) / 1000, 2),
                  'ratio': round(kb * 1000 / statistics.median(sizes), 2),
                  'goal_kb_per_robot_day': GOAL_KB_PER_DAY,
                  'met': None if args.quick else max(day.values()) / 1000 <= GOAL_KB_PER_DAY})
    lines.append({'bench': 'fleet_latency_distribution', 'n': len(acked), 'not_acked': not_acked,
                  'latencies_ms': sorted(round(value * 1000, 1) for value in acked),
                  'baseline_ms': sorted(round(value * 1000, 1) for value in bare)})
    lines.append({'bench': 'fleet_bytes_distribution', 'n': len(day),
                  'bytes': [round(value) for _, value in sorted(day.items())],
                  'baseline_bytes': sizes})
    return lines


def fleet_lines(args, directory: pathlib.Path, server, robots: list, start: dt.datetime) -> list:
    """Run the fleet (routers, robots, the store serving); return its lines."""
    store_url = new_database(server)
    fleet = Fleet(args, directory, store_url, robots)
    try:
        run = run_rounds(args, fleet, robots, start)
        envelope = max(item.get('envelope_bytes', 0) for item in run['results'])
        bare = bare_latency(args, fleet.endpoints[0], envelope)
        lines = figures(args, run, robots, bare)
        lines.append(fleet_store_bench.delivery_line(run, store_url, args.quick))
    finally:
        fleet.stop()
    return lines


def main(argv=None) -> int:
    """Parse the arguments, run the fleet and the store benchmarks, print the lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='a few robots, seconds')
    parser.add_argument('--robots', type=int, default=None, help='robots (default 200)')
    parser.add_argument('--rounds', type=int, default=None, help='dreams a robot (default 10)')
    parser.add_argument('--entries', type=int, default=50, help='own entries a robot')
    parser.add_argument('--period-min', type=float, default=15.0,
                        help='fleet minutes between rounds (the link outage is one hour)')
    parser.add_argument('--spread-s', type=float, default=None,
                        help="real seconds a round's dreams are spread over (default 20)")
    parser.add_argument('--threads', type=int, default=16, help='threads a site worker')
    parser.add_argument('--timeout-s', type=float, default=10.0,
                        help="seconds a delivery waits for the store's ack (the node's 10)")
    parser.add_argument('--bare-repeats', type=int, default=None)
    parser.add_argument('--rollup-robots', type=int, default=None, help='default 5000')
    parser.add_argument('--only', choices=('store',), default=None,
                        help="store: only fleet_ingest and fleet_rollup (no routers, no robots' "
                        'sessions)')
    args = parser.parse_args(argv)
    args.robots = args.robots or (6 if args.quick else 200)
    args.rounds = args.rounds or (6 if args.quick else 10)
    args.spread_s = args.spread_s or (2.0 if args.quick else 20.0)
    args.bare_repeats = args.bare_repeats or (20 if args.quick else 500)
    args.rollup_robots = args.rollup_robots or (100 if args.quick else 5000)
    load_start = os.getloadavg()
    postgres = PostgresControl()
    directory = pathlib.Path(tempfile.mkdtemp(prefix='bench-fleet-'))
    try:
        server = postgres.start()
        start = (dt.datetime.now(UTC) - dt.timedelta(minutes=args.period_min * args.rounds + 30)
                 ).replace(microsecond=0)
        robots = make_robots(args, directory, start)
        lines = [] if args.only == 'store' else fleet_lines(args, directory, server, robots, start)
        lines.append(fleet_store_bench.ingest_line(args, server, robots))
        lines.append(fleet_store_bench.rollup_line(args, server))
    finally:
        postgres.remove()
        shutil.rmtree(directory, ignore_errors=True)
    load = [[round(value, 2) for value in loads] for loads in (load_start, os.getloadavg())]
    for line in lines:
        line.setdefault('load_avg_start_end', load)
        print(json.dumps(line), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
