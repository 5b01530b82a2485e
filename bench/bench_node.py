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
Benchmark of memory_node over ROS 2: ingestion, ~/get_context latency, resident memory.

Runs the installed ``memory_node`` on a 10,000-entry memory file and, in the same run, the
baselines it is compared with, each in its own process, on a private ROS_DOMAIN_ID with
discovery kept on this host. Prints one JSON object a line; medians throughout, and every
p99 is the median of the p99s of 5 rounds (one burst of a shared machine moves one round):

``ingest``                  messages/s the node took in from a DiagnosticArray flood (5
                            statuses a message; reliable, depth 1000, as the node subscribes)
                            that another process offers at a fixed rate above what either
                            side can take, vs a bare rclpy subscriber process (same type and
                            QoS, it only counts) under the same flood. Phases alternate node
                            / bare; ``ratio`` = node rate / bare rate, goal >= 0.9. The
                            node's count is its own health report on /diagnostics (status
                            ``evidence``: ``received`` observations / 5); ``lost`` = its
                            ``lost_in_middleware`` + ``dropped_backlog_full``; ``delivered``
                            = share of the offered messages taken in.
``get_context_in_node``     time inside the node's ~/get_context service callback: the
                            installed ``MemoryNode`` built in this process on the same file,
                            its ``get_context_callback`` called with a real request (wall
                            p50 / p99, and thread-CPU p99). Goal p99 < 5 ms. Baseline: the
                            callback's work done by the scan (cached document,
                            ``context.build_context_scan``, message conversion).
``get_context_indexed``     the same work through ``DocumentCache.build_context`` (the
                            context index), what the callback costs once it uses the index.
``get_context_round_trip``  a client in this process calling the running node's
                            ~/get_context (p50 / p99); baseline: the same client calling a
                            bare rclpy GetContext server that answers a canned reply of the
                            same size (the transport's share), calls interleaved.
``rss``                     VmRSS of the node while one sustained flood (30 s quick, 5 min
                            full, or ``--rss-seconds``: the node's middleware history and
                            heap still crept by 0.08 MB/min after 20 minutes) is offered to
                            it and, on its own topic at the same time, to
                            the bare subscriber: start, end and maximum, and the slope over
                            the second half in MB/min; goal <= 90 MB and flat (|slope| < 2
                            MB/min). Baseline: the bare subscriber's maximum and slope under
                            the same flood (what rclpy and the middleware alone do).
                            ``rate`` = messages/s taken into the backlog, ``stored_per_s`` =
                            observations/s stored, ``lost`` = observations dropped (backlog
                            full) + messages lost in the middleware over the flood;
                            ``held``: what the node holds for ingestion after it (its
                            evidence status: the backlog's peak, the books' source keys,
                            the decoder's cached strings) and ``sqlite_cache_kib`` the
                            evidence connection's page cache cap.
``cpu_idle``, ``cpu_1hz``   the node's CPU time (utime + stime) as % of one core, idle and
                            while a robot process publishes /diagnostics at 1 Hz with 30
                            statuses and a trickle of /rosout, vs a bare rclpy subscriber on
                            the same topics (``bench/node_cpu.py``); medians of 120 s windows
                            (10 s with --quick), a fresh node on a 300-entry file. Goal
                            <= 1.0 % of a core at 1 Hz. ``wakeups_per_s``: how often the
                            node's threads woke a second (the bare one's beside it).
``rss_breakdown``           where the node's memory goes, in a fresh process without ROS
                            traffic: VmRSS after importing rclpy and the message types
                            (``baseline_mb``, what a bare subscriber imports), after
                            importing ``robot_memory.ros.node`` (``modules_mb``), and after
                            loading the memory file as the node caches it and building its
                            context index (``document_mb``, n entries).

Needs the ROS environment (``source scripts/env.sh``; ``memory_node`` on PATH). The node
runs from the colcon install tree: run ``scripts/setup.sh`` after editing sources.

Usage: ``python bench/bench_node.py [--quick] [--domain N] [--rate MSGS_PER_S]
[--entries N] [--only ingest,in_node,round_trip,rss,breakdown,cpu] [--rss-seconds S]
[--node-executable PATH]``.
"""

import argparse
import datetime as dt
import json
import math
import os
import pathlib
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
RRN = 'RRN-000000000777'
NAMESPACE = 'bench_node'
ENTRIES = 10_000
INGEST_GOAL = 0.9  # issue 35: the margin won back (it was 0.8)
P99_GOAL_MS = 5.0
RSS_GOAL_MB = 90.0  # issue 35: at most, over the full 300 s (it was < 100)
FLAT_GOAL_MB_PER_MIN = 2.0
ROUNDS = 5
# The evidence status's counts of observations (dropped) and messages (lost) not stored.
LOSSES = ('dropped_backlog_full', 'lost_in_middleware')
# What the node holds in memory for ingestion, from its evidence status after a flood.
HELD = ('peak_backlog', 'open_runs', 'state_book', 'ok_book', 'unstored_runs', 'decode_cache')


def _without_source_tree(paths):
    """``paths`` minus the source checkout: its robot_memory has no generated msg/srv."""
    kept = []
    for path in paths:
        try:
            if pathlib.Path(path or '.').resolve() == REPO:
                continue
        except OSError:
            pass
        kept.append(path)
    return kept


# run_all.py puts the checkout first on PYTHONPATH; the installed package must win here and
# in every child process (the node itself runs from the install tree).
sys.path[:] = _without_source_tree(sys.path)
os.environ['PYTHONPATH'] = os.pathsep.join(
    _without_source_tree(os.environ.get('PYTHONPATH', '').split(os.pathsep)))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # also under python -P
import node_children  # noqa: E402, I100 - the child processes, beside this script
import node_cpu  # noqa: E402, I100 - the cpu figures
from node_children import _qos  # noqa: E402, I100
from node_children import BARE_SERVICE  # noqa: E402, I100
from node_children import BARE_TOPIC  # noqa: E402, I100
from node_children import STATUSES_PER_MESSAGE  # noqa: E402, I100

from robot_memory.testing.processes import end_process  # noqa: E402 - the installed one


# ------------------------------------------------------------------------ main process

class Child:
    """A child process driven by one-line commands with one JSON line in reply."""

    def __init__(self, command, log_path: pathlib.Path, env: dict):
        self.log = open(log_path, 'wb')
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.log, env=env, text=True, bufsize=1)

    @property
    def pid(self) -> int:
        return self.process.pid

    def ask(self, line: str) -> dict:
        self.process.stdin.write(line + '\n')
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError(f'child {self.process.args[2:4]} ended: see {self.log.name}')
        return json.loads(reply)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                self.ask('quit')
                self.process.wait(10)
            except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired):
                pass
        end_process(self.process, signal.SIGTERM, 10)
        self.log.close()


def vm_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (VmRSS of /proc/<pid>/status)."""
    for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f'no VmRSS for {pid}')


def percentile(values: list, fraction: float) -> float:
    """Return the nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered) - 1e-9))
    return ordered[min(len(ordered), rank) - 1]


def summary(rounds: list) -> tuple:
    """
    Return (p50 of all samples, median of the rounds' p99s, count).

    One burst of a noisy machine moves one round's p99, not the figure.
    """
    values = [value for samples in rounds for value in samples]
    return (statistics.median(values),
            statistics.median(percentile(samples, 0.99) for samples in rounds if samples),
            len(values))


def write_memory_file(path: pathlib.Path, n: int, now: dt.datetime) -> None:
    """Return a memory file of ``n`` own entries reinforced over 20 days, and three peer blocks."""
    from robot_memory.rcan.memory_file import MemoryFile
    from robot_memory.rcan.schema import ENTRY_TYPES
    from robot_memory.rcan.schema import MemoryDocument
    from robot_memory.rcan.schema import new_entry
    from robot_memory.rcan.schema import PeerBlock
    from robot_memory.rcan.schema import PeerEntry
    rng = random.Random(7)
    words = ('left wheel encoder intermittent under load', 'kitchen doorway has a 3cm lip',
             'lidar returns drop near the glass wall', 'battery sags to 23.1 V at 80% duty',
             'right camera auto-focus inconsistent in low light', 'motor temperature 71 °C',
             'IMU drift 0.4°/min after 2 h', 'gripper slips on the red crates')
    entries, taken = [], set()
    for index in range(n):
        reinforced = now - dt.timedelta(seconds=rng.uniform(0, 20 * 86400))
        text = f'{rng.choice(words)}; {rng.choice(words)} #{index}'
        entry = new_entry(rng.choice(ENTRY_TYPES), text, round(rng.uniform(0.1, 1.0), 2),
                          reinforced, taken=taken)
        entry = entry.model_copy(update={'observation_count': rng.randint(1, 40)})
        taken.add(entry.id)
        entries.append(entry)
    peers = [PeerBlock(rrn=f'RRN-00000000000{peer}', last_synced=now - dt.timedelta(hours=peer),
                       entries=[PeerEntry(id=f'mem-peer-{peer}{index}', type='environment_note',
                                          text=rng.choice(words), confidence=0.75)
                                for index in range(5)])
             for peer in range(2, 5)]
    memory = MemoryFile(path)
    with memory.lock():
        memory.save(MemoryDocument(rrn=RRN, last_updated=now, entries=entries,
                                   peer_context=peers))


class Bench:
    """The main process: starts the children and the node, runs the phases, prints lines."""

    def __init__(self, args, scratch: pathlib.Path):
        import rclpy
        self.args = args
        self.scratch = scratch
        self.env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain),
                        ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
        os.environ.update(ROS_DOMAIN_ID=str(args.domain),
                          ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
        self.memory_path = scratch / 'robot-memory.md'
        write_memory_file(self.memory_path, args.entries, dt.datetime.now(dt.timezone.utc))
        rclpy.init()
        self.node = rclpy.create_node('bench_controller')
        self.children = []
        self.node_process = None

    # -------------------------------------------------------------- processes

    def child(self, role: str, *extra) -> Child:
        command = [sys.executable, str(pathlib.Path(__file__).resolve()), '--role', role,
                   *extra]
        started = Child(command, self.scratch / f'{role}.log', self.env)
        self.children.append(started)
        return started

    def start_node(self, memory_path=None, name='evidence') -> None:
        import yaml
        executable = self.args.node_executable
        values = {'memory_file': str(memory_path or self.memory_path), 'rrn': RRN,
                  'dream_time': '', 'database_file': str(self.scratch / f'{name}.db')}
        params = self.scratch / 'params.yaml'
        params.write_text(yaml.safe_dump({'/**': {'ros__parameters': values}}))
        self.node_log = open(self.scratch / f'memory_node-{name}.log', 'wb')
        self.node_process = subprocess.Popen(
            [executable, '--ros-args', '-r', f'__ns:=/{NAMESPACE}', '--params-file',
             str(params)], stdout=self.node_log, stderr=subprocess.STDOUT, env=self.env,
            cwd=self.scratch)

    def stop(self) -> None:
        for child in self.children:
            child.stop()
        self.stop_node()
        self.node.destroy_node()
        import rclpy
        rclpy.try_shutdown()

    def stop_node(self) -> None:
        if self.node_process is not None and self.node_process.poll() is None:
            end_process(self.node_process, signal.SIGINT, 20)
            self.node_log.close()

    def node_evidence(self, timeout: float = 30.0) -> dict:
        """
        Return the node's settled evidence counters from its own health report on /diagnostics.

        Subscribed only while reading (never during a flood): two reports in a row with the
        same ``received`` and an empty backlog mean the node has caught up.
        """
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        reports = []

        def heard(message):
            for status in message.status:
                if status.hardware_id == RRN and status.name.endswith(': evidence'):
                    reports.append({value.key: value.value for value in status.values})

        subscription = self.node.create_subscription(DiagnosticArray, '/diagnostics', heard,
                                                     _qos())
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                rclpy.spin_once(self.node, timeout_sec=0.1)
                if self.node_process.poll() is not None:
                    raise RuntimeError('memory_node exited: see memory_node.log')
                if len(reports) >= 2 and reports[-1]['received'] == reports[-2]['received'] \
                        and reports[-1]['backlog'] == '0':
                    return {key: int(value) for key, value in reports[-1].items()
                            if value.lstrip('-').isdigit()}
        finally:
            self.node.destroy_subscription(subscription)
        raise RuntimeError(f'memory_node did not report settled evidence counters in '
                           f'{timeout:g} s (reports: {reports[-2:]})')

    def bare_count(self, bare: Child) -> int:
        """Return the bare subscriber's count once it stops changing."""
        last = bare.ask('count')['count']
        while True:
            time.sleep(0.3)
            count = bare.ask('count')['count']
            if count == last:
                return count
            last = count

    # -------------------------------------------------------------- figures

    def ingest(self, publisher: Child, bare: Child) -> dict:
        """Alternating node / bare floods; medians of the rates and their ratio."""
        args = self.args
        node_rates, bare_rates, node_share, bare_share = [], [], [], []
        lost = dropped = 0
        for pair in range(args.pairs):
            order = ('node', 'bare') if pair % 2 == 0 else ('bare', 'node')
            for who in order:
                if who == 'node':
                    before = self.node_evidence()
                    sent = publisher.ask(f'flood /diagnostics {args.rate} {args.flood_s}')
                    after = self.node_evidence()
                    taken = (after['received'] - before['received']) / STATUSES_PER_MESSAGE
                    lost += after.get('lost_in_middleware', 0) - before.get('lost_in_middleware',
                                                                            0)
                    dropped += after.get('dropped_backlog_full', 0) - before.get(
                        'dropped_backlog_full', 0)
                    node_rates.append(taken / sent['seconds'])
                    node_share.append(taken / sent['published'])
                else:
                    before = self.bare_count(bare)
                    sent = publisher.ask(f'flood {BARE_TOPIC} {args.rate} {args.flood_s}')
                    taken = self.bare_count(bare) - before
                    bare_rates.append(taken / sent['seconds'])
                    bare_share.append(taken / sent['published'])
                print(f'  ingest {who}: {taken:.0f} of {sent["published"]} in '
                      f'{sent["seconds"]:.1f} s ({sent["subscribers"]} subscriber(s), '
                      f'{sent["refused"]} writes refused)', file=sys.stderr, flush=True)
        node_rate, bare_rate = statistics.median(node_rates), statistics.median(bare_rates)
        ratio = node_rate / bare_rate
        return {'bench': 'ingest', 'n': args.pairs, 'offered_rate': args.rate,
                'rate': round(node_rate, 1), 'delivered': round(statistics.median(node_share), 3),
                'lost': lost + dropped, 'baseline_rate': round(bare_rate, 1),
                'baseline_delivered': round(statistics.median(bare_share), 3),
                'ratio': round(ratio, 3), 'goal_ratio': INGEST_GOAL, 'met': ratio >= INGEST_GOAL}

    def in_node(self) -> list:
        """Return the service callback's time in a MemoryNode built in this process."""
        from rclpy.parameter import Parameter
        from robot_memory.rcan import context
        from robot_memory.ros import convert
        from robot_memory.ros.node import MemoryNode
        from robot_memory.srv import GetContext
        overrides = [Parameter('memory_file', value=str(self.memory_path)),
                     Parameter('rrn', value=RRN), Parameter('dream_time', value=''),
                     Parameter('database_file', value=str(self.scratch / 'in-process.db'))]
        node = MemoryNode(namespace='bench_in_process', parameter_overrides=overrides)
        try:
            request = GetContext.Request(token_budget=0, include_peers=True, min_confidence=0.0)
            now = node.clock_.now
            config = node.settings.lifecycle

            def callback():
                response = node.get_context_callback(request, GetContext.Response())
                assert response.success, response.message

            def scan():
                moment = now()
                convert.context_message(context.build_context_scan(
                    node.cache.document(moment), moment, config))

            def indexed():
                moment = now()
                convert.context_message(node.cache.build_context(moment, config))

            callback()  # the first call after a load builds the index
            indexed()
            rounds = {'scan': [], 'callback': [], 'indexed': []}
            calls = max(5, self.args.calls // ROUNDS)
            seconds = self.args.seconds_per_figure / ROUNDS
            for _ in range(ROUNDS):
                for name, function in (('scan', scan), ('callback', callback),
                                       ('indexed', indexed)):
                    rounds[name].append(self.timed(function, calls, seconds))
        finally:
            node.destroy_node()
        base_p50, base_p99, _ = summary([wall for wall, _ in rounds['scan']])
        lines = []
        for bench, name in (('get_context_in_node', 'callback'),
                            ('get_context_indexed', 'indexed')):
            p50, p99, n = summary([wall for wall, _ in rounds[name]])
            _, cpu_p99, _ = summary([cpu for _, cpu in rounds[name]])
            lines.append({'bench': bench, 'n': n, 'ms': round(p50, 3), 'p99_ms': round(p99, 3),
                          'cpu_p99_ms': round(cpu_p99, 3), 'baseline_ms': round(base_p50, 3),
                          'baseline_p99_ms': round(base_p99, 3),
                          'ratio': round(p50 / base_p50, 4), 'goal_p99_ms': P99_GOAL_MS,
                          'met': p99 < P99_GOAL_MS})
        return lines

    @staticmethod
    def timed(function, calls: int, seconds: float) -> tuple:
        """
        Return wall and thread-CPU milliseconds of up to ``calls`` calls.

        Stops after ``seconds`` (at least 5 calls).
        """
        wall, cpu = [], []
        deadline = time.perf_counter() + seconds
        while len(wall) < calls and (len(wall) < 5 or time.perf_counter() < deadline):
            started, started_cpu = time.perf_counter(), time.thread_time()
            function()
            cpu.append((time.thread_time() - started_cpu) * 1000.0)
            wall.append((time.perf_counter() - started) * 1000.0)
        return wall, cpu

    def round_trip(self) -> dict:
        """~/get_context of the running node vs a bare server, calls interleaved."""
        import rclpy
        from robot_memory.srv import GetContext
        clients = {'node': self.node.create_client(GetContext,
                                                   f'/{NAMESPACE}/robot_memory/get_context'),
                   'bare': self.node.create_client(GetContext, BARE_SERVICE)}
        for name, client in clients.items():
            if not client.wait_for_service(timeout_sec=30.0):
                raise RuntimeError(f'{name} get_context service did not appear')
        request = GetContext.Request(token_budget=0, include_peers=True, min_confidence=0.0)

        def call(name):
            started = time.perf_counter()
            future = clients[name].call_async(request)
            rclpy.spin_until_future_complete(self.node, future, timeout_sec=30.0)
            elapsed = (time.perf_counter() - started) * 1000.0
            response = future.result()
            if response is None or not response.success:
                raise RuntimeError(f'{name} get_context failed: {response}')
            return elapsed

        for number in range(20):  # warm up both
            call('node')
            call('bare')
        rounds = {'node': [], 'bare': []}
        calls = max(5, self.args.calls // ROUNDS)
        for _ in range(ROUNDS):
            times = {'node': [], 'bare': []}
            deadline = time.perf_counter() + 2 * self.args.seconds_per_figure / ROUNDS
            while len(times['node']) < calls and (len(times['node']) < 5
                                                  or time.perf_counter() < deadline):
                for name in (('node', 'bare') if len(times['node']) % 2 else ('bare', 'node')):
                    times[name].append(call(name))
            for name in rounds:
                rounds[name].append(times[name])
        for client in clients.values():
            self.node.destroy_client(client)
        p50, p99, n = summary(rounds['node'])
        base_p50, base_p99, _ = summary(rounds['bare'])
        return {'bench': 'get_context_round_trip', 'n': n, 'ms': round(p50, 3),
                'p99_ms': round(p99, 3), 'baseline_ms': round(base_p50, 3),
                'baseline_p99_ms': round(base_p99, 3), 'ratio': round(p50 / base_p50, 3)}

    def rss(self, publisher: Child, bare: Child) -> dict:
        """Measure VmRSS of the node and of the bare subscriber while one flood feeds both."""
        from robot_memory.evidence.evidence_store import CACHE_KIB
        pids = {'node': self.node_process.pid, 'bare': bare.pid}
        samples = {name: [] for name in pids}
        stop = threading.Event()

        def sample():
            started = time.monotonic()
            shown = 0.0
            while not stop.is_set():
                elapsed = time.monotonic() - started
                for name, pid in pids.items():
                    samples[name].append((elapsed, vm_rss_mb(pid)))
                if elapsed >= shown:
                    print(f'  rss {elapsed:5.0f} s: node {samples["node"][-1][1]:.1f} MB, bare '
                          f'{samples["bare"][-1][1]:.1f} MB', file=sys.stderr, flush=True)
                    shown += self.args.rss_s / 10
                stop.wait(self.args.rss_period_s)

        before = self.node_evidence()
        start = {name: vm_rss_mb(pid) for name, pid in pids.items()}
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            sent = publisher.ask(f'flood /diagnostics,{BARE_TOPIC} {self.args.rate} '
                                 f'{self.args.rss_s}')
        finally:
            stop.set()
            sampler.join()
        after = self.node_evidence()
        figures = {}
        for name, points in samples.items():
            half = [(t, mb) for t, mb in points if t >= points[-1][0] / 2]
            figures[name] = {'start': start[name], 'end': vm_rss_mb(pids[name]),
                             'max': max(mb for _, mb in points),
                             'slope': _slope(half) * 60.0}
        node, bare = figures['node'], figures['bare']
        return {'bench': 'rss', 'n': len(samples['node']), 'seconds': round(sent['seconds'], 1),
                'offered_rate': self.args.rate,
                'rate': round((after['received'] - before['received']) / STATUSES_PER_MESSAGE
                              / sent['seconds'], 1),
                'stored_per_s': round((after['stored'] - before['stored']) / sent['seconds']),
                'lost': sum(after.get(key, 0) - before.get(key, 0) for key in LOSSES),
                'held': {key: after[key] for key in HELD if key in after},
                'sqlite_cache_kib': CACHE_KIB,
                'start_mb': round(node['start'], 1), 'end_mb': round(node['end'], 1),
                'max_mb': round(node['max'], 1), 'slope_mb_per_min': round(node['slope'], 2),
                'baseline_start_mb': round(bare['start'], 1),
                'baseline_max_mb': round(bare['max'], 1),
                'baseline_slope_mb_per_min': round(bare['slope'], 2),
                'ratio': round(node['max'] / bare['max'], 2),
                'goal_max_mb': RSS_GOAL_MB, 'goal_slope_mb_per_min': FLAT_GOAL_MB_PER_MIN,
                'met': node['max'] <= RSS_GOAL_MB and abs(node['slope']) < FLAT_GOAL_MB_PER_MIN}

    def rss_breakdown(self) -> dict:
        """Measure VmRSS of a fresh process after rclpy, the node's modules, the document."""
        script = (
            'import datetime as dt, json\n'
            'def rss():\n'
            '    for line in open("/proc/self/status"):\n'
            '        if line.startswith("VmRSS:"):\n'
            '            return int(line.split()[1]) / 1024.0\n'
            'import rclpy, rclpy.executors, rclpy.node\n'
            'from diagnostic_msgs.msg import DiagnosticArray\n'
            'figures = [rss()]\n'
            'import robot_memory.ros.node\n'
            'figures.append(rss())\n'
            'from robot_memory.rcan.document_cache import DocumentCache\n'
            'from robot_memory.rcan.lifecycle import DEFAULT_CONFIG\n'
            'from robot_memory.rcan.memory_file import MemoryFile\n'
            'now = dt.datetime.now(dt.timezone.utc)\n'
            'cache = DocumentCache(MemoryFile(%r), "RRN-000000000001")\n'
            'cache.build_context(now, DEFAULT_CONFIG)\n'
            'figures.append(rss())\n'
            'print(json.dumps(figures))\n' % str(self.memory_path))
        done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                              check=True, cwd=tempfile.gettempdir())
        bare, modules, document = json.loads(done.stdout)
        return {'bench': 'rss_breakdown', 'n': self.args.entries,
                'baseline': 'rclpy and the message types imported',
                'baseline_mb': round(bare, 1), 'modules_mb': round(modules - bare, 1),
                'document_mb': round(document - modules, 1), 'total_mb': round(document, 1)}

    def canned_reply(self) -> pathlib.Path:
        """Return the node's answer to the request now, serialized for the bare server."""
        from rclpy.serialization import serialize_message
        from robot_memory.rcan.context import build_context
        from robot_memory.rcan.memory_file import MemoryFile
        from robot_memory.ros import convert
        from robot_memory.srv import GetContext
        now = dt.datetime.now(dt.timezone.utc)
        message = convert.context_message(
            build_context(MemoryFile(self.memory_path).load(now).document, now))
        reply = GetContext.Response(success=True, message='canned', text=message.text,
                                    entries=message.entries,
                                    peer_entries=message.peer_entries)
        path = self.scratch / 'canned-reply.cdr'
        path.write_bytes(serialize_message(reply))
        return path

    def cpu(self) -> list:
        """Measure a fresh node and a bare subscriber, idle and at 1 Hz x 30 statuses."""
        for child in self.children:
            child.stop()
        self.stop_node()
        memory_path = self.scratch / 'cpu-memory.md'
        write_memory_file(memory_path, node_cpu.ENTRIES, dt.datetime.now(dt.timezone.utc))
        robot, listener = self.child('robot'), self.child('listener')
        self.start_node(memory_path, 'cpu')
        self.node_evidence(timeout=60.0)
        return node_cpu.measure(self, self.node_process.pid, robot, listener)

    def run(self) -> None:
        if not self.args.only - {'cpu'}:
            for line in self.cpu():
                print(json.dumps(line, ensure_ascii=False), flush=True)
            return
        publisher = self.child('publisher')
        bare = self.child('bare', str(self.canned_reply()))
        self.start_node()
        self.node_evidence(timeout=60.0)  # the node is up and reporting
        figures = (('ingest', lambda: [self.ingest(publisher, bare)]),
                   ('in_node', self.in_node),
                   ('round_trip', lambda: [self.round_trip()]),
                   ('rss', lambda: [self.rss(publisher, bare)]),
                   ('breakdown', lambda: [self.rss_breakdown()]), ('cpu', self.cpu))
        for name, measure in figures:
            if name in self.args.only:
                for line in measure():
                    print(json.dumps(line, ensure_ascii=False), flush=True)


def _slope(points: list) -> float:
    """Least-squares slope of (x, y) points (0 for fewer than two)."""
    if len(points) < 2:
        return 0.0
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if not spread:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def main(argv=None) -> int:
    """Run the node benchmarks and print one JSON line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='short run (about 1.5 minutes): 3 flood pairs of 3 s, 30 s of '
                             'sustained flood')
    parser.add_argument('--domain', type=int,
                        default=int(os.environ.get('BENCH_NODE_DOMAIN') or 150 + os.getpid() % 21),
                        help='ROS_DOMAIN_ID of the run (default: $BENCH_NODE_DOMAIN, else 150-170 '
                             'from the PID; run_all.py passes no arguments)')
    parser.add_argument('--rate', type=float, default=8000.0,
                        help='messages per second the flood offers (default 8000)')
    parser.add_argument('--entries', type=int, default=ENTRIES,
                        help=f'entries in the memory file (default {ENTRIES:,})')
    parser.add_argument('--rss-seconds', type=float, default=None,
                        help='length of the sustained flood of the rss figure (default: 300, '
                             '30 with --quick)')
    parser.add_argument('--node-executable', default=shutil.which('memory_node'),
                        help='the node program to start (default: memory_node on PATH)')
    parser.add_argument('--only', default='ingest,in_node,round_trip,rss,breakdown,cpu',
                        help='comma-separated figures to measure (default: all of '
                             'ingest,in_node,round_trip,rss,breakdown,cpu)')
    parser.add_argument('--role', choices=('publisher', 'bare', 'robot', 'listener'),
                        help=argparse.SUPPRESS)
    parser.add_argument('canned', nargs='?', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role == 'publisher':
        return node_children.run_publisher()
    if args.role == 'bare':
        return node_children.run_bare(args.canned)
    if args.role in ('robot', 'listener'):
        return (node_children.run_robot if args.role == 'robot'
                else node_children.run_listener)(_qos())
    if not args.node_executable:
        print('bench_node: memory_node is not on PATH; run `bash scripts/setup.sh` and '
              '`source scripts/env.sh` first', file=sys.stderr)
        return 2
    args.only = set(args.only.split(','))
    if args.quick:
        args.pairs, args.flood_s, args.calls, args.seconds_per_figure = 3, 3.0, 1000, 4.0
        args.rss_s, args.rss_period_s = 30.0, 0.5
        args.cpu_warmup_s, args.cpu_window_s, args.cpu_idle_windows, args.cpu_windows = \
            3.0, 10.0, 1, 2
        args.cpu_profile_window_s = 5.0
    else:
        args.pairs, args.flood_s, args.calls, args.seconds_per_figure = 5, 10.0, 5000, 20.0
        args.rss_s, args.rss_period_s = 300.0, 2.0
        args.cpu_warmup_s, args.cpu_window_s, args.cpu_idle_windows, args.cpu_windows = \
            20.0, 120.0, 1, 3
        args.cpu_profile_window_s = 60.0
    if args.rss_seconds is not None:
        if args.rss_seconds <= 0:
            parser.error('--rss-seconds must be positive')
        args.rss_s = args.rss_seconds
        args.rss_period_s = max(args.rss_period_s, args.rss_seconds / 240)  # about 240 samples
    with tempfile.TemporaryDirectory(prefix='bench-node-') as scratch:
        bench = Bench(args, pathlib.Path(scratch))
        try:
            bench.run()
        except BaseException:
            for log in sorted(pathlib.Path(scratch).glob('*.log')):
                tail = log.read_text(errors='replace').strip().splitlines()[-15:]
                print(f'--- {log.name}\n' + '\n'.join(tail), file=sys.stderr)
            raise
        finally:
            bench.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
