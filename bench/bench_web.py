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
Benchmark of the operator's page (``robot-memory serve``); prints one JSON object a line.

Each figure stands beside a bare ``python -m http.server`` measured in the same run:

``first_page``  server time (its ``Server-Timing`` header) of the Entries page, the first
                100 rows of an n-entry memory, and of the Now page; median of the repeats
                (the file is parsed when the server starts and cached, as memory_node
                holds it parsed), and ``reparse_ms``: the request after the file changed
                (a dream, an edit), which parses it again; median of three.
                Baseline: the same bytes from http.server (a static file), round trip.
``rss``         VmRSS of the serve process after those pages; baseline: http.server's.
                ``added_mb``: serve minus a Python that only loaded the same memory file.
                No goal: the goal is beside the node (``node_rss``).
``page_weight`` bytes of the Entries page with its style and script (all it loads);
                baseline: the memory file's own bytes for the same rows.
``node_rss``    with ``memory_node`` on PATH (``source scripts/env.sh``): VmRSS of the node
                serving the page (``web_port``) after the same pages, and of the same node
                on the same file without it (the baseline); ``added_mb`` is the page's
                share beside the node. Without the node: a line that says so.

Goals (issue 30): the page adds <= 40 MB beside the node (``node_rss``), the first page
<= 300 ms, page weight <= 300 KB; ``met`` is judged in a full run only.
Usage: ``python bench/bench_web.py [--quick] [--n N]``.
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from robot_memory.rcan.memory_file import new_document  # noqa: E402
from robot_memory.rcan.memory_file import render  # noqa: E402
from robot_memory.rcan.schema import ENTRY_TYPES  # noqa: E402
from robot_memory.rcan.schema import new_entry  # noqa: E402

UTC = dt.timezone.utc
GOALS = {'rss_mb': 40.0, 'first_page_ms': 300.0, 'page_weight_kb': 300.0}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def vm_rss_mb(pid: int) -> float:
    """Return the VmRSS of a process in MB, from /proc."""
    for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f'no VmRSS for {pid}')


def write_memory(path: pathlib.Path, n: int, now: dt.datetime) -> None:
    """Write an n-entry memory file of every type, confidences and ages spread."""
    rng = random.Random(30)
    document = new_document('RRN-000000000001', now)
    types = [kind for kind in ENTRY_TYPES if kind != 'resolved']
    document.entries = [
        new_entry(types[index % len(types)],
                  f'Doorway {index} in room {index % 37} has a {index % 9} cm lip; slow down',
                  round(rng.uniform(0.2, 1.0), 3),
                  now - dt.timedelta(days=rng.uniform(0, 20)), ['bench', f'room{index % 37}'])
        for index in range(n)]
    path.write_bytes(render(document))


def fetch(url: str) -> tuple:
    """Return (body, seconds of the round trip, the server's own ms or None)."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read()
        timing = response.headers.get('Server-Timing', '')
    spent = time.perf_counter() - started
    match = re.search(r'dur=([0-9.]+)', timing)
    return body, spent, float(match.group(1)) if match else None


def wait(url: str, process, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f'{process.args} exited with {process.returncode}')
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f'{url} did not answer')


def start(argv: list, cwd: pathlib.Path) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def loaded_only_mb(memory: pathlib.Path) -> float:
    """RSS of a Python that only loaded the memory file (what memory_node holds anyway)."""
    code = ('import datetime as dt, os, sys\n'
            'from robot_memory.rcan.memory_file import MemoryFile\n'
            'now = dt.datetime.now(dt.timezone.utc)\n'
            'document = MemoryFile(sys.argv[1]).load(now, read_only=True).document\n'
            "print(open(f'/proc/{os.getpid()}/status').read().split('VmRSS:')[1].split()[0])\n")
    run = subprocess.run([sys.executable, '-c', code, str(memory)], capture_output=True,
                         text=True, check=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    return int(run.stdout.strip()) / 1024


def node_rss(memory: pathlib.Path, directory: pathlib.Path, n: int, repeats: int,
             quick: bool) -> dict:
    """Return VmRSS of memory_node with and without the page, on copies of one file."""
    executable = shutil.which('memory_node')
    if executable is None:
        return {'bench': 'node_rss', 'n': n, 'mb': None, 'baseline_mb': None,
                'note': 'memory_node is not on PATH: source scripts/env.sh to measure it'}
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    # The node runs the installed package (with its generated messages), not the checkout.
    env['PYTHONPATH'] = os.pathsep.join(
        part for part in env.get('PYTHONPATH', '').split(os.pathsep)
        if part and pathlib.Path(part).resolve() != REPO)
    env.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 101 + 1))
    nodes, port = {}, free_port()
    for name, web in (('with', port), ('without', 0)):
        scratch = directory / f'node-{name}'
        scratch.mkdir()
        shutil.copy(memory, scratch / 'robot-memory.md')
        params = scratch / 'params.yaml'
        params.write_text(json.dumps({'/**': {'ros__parameters': {
            'memory_file': str(scratch / 'robot-memory.md'), 'rrn': 'RRN-000000000001',
            'dream_time': '', 'web_port': web}}}))
        log = open(scratch / 'node.log', 'wb')
        nodes[name] = (subprocess.Popen(
            [executable, '--ros-args', '-r', f'__ns:=/bench_web_{name}', '--params-file',
             str(params)], stdout=log, stderr=subprocess.STDOUT, env=dict(
                 env, ROS_LOG_DIR=str(scratch / 'ros-log')), cwd=scratch), log, scratch)
    try:
        base = f'http://127.0.0.1:{port}'
        wait(base + '/static/style.css', nodes['with'][0])
        for name, (process, _, scratch) in nodes.items():
            deadline = time.monotonic() + 60
            while b'robot_memory ready' not in (scratch / 'node.log').read_bytes():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f'memory_node did not start: see {scratch}/node.log')
                time.sleep(0.1)
        for _ in range(repeats):
            for path in ('/entries', '/', '/entries?sort=text', '/review', '/dreams'):
                fetch(base + path)
        time.sleep(1.0)
        with_mb = vm_rss_mb(nodes['with'][0].pid)
        without_mb = vm_rss_mb(nodes['without'][0].pid)
    finally:
        for process, log, _ in nodes.values():
            process.send_signal(signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            log.close()
    added = with_mb - without_mb
    return {'bench': 'node_rss', 'n': n, 'mb': round(with_mb, 1),
            'baseline_mb': round(without_mb, 1), 'added_mb': round(added, 1),
            'ratio': round(with_mb / without_mb, 2), 'goal_mb': GOALS['rss_mb'],
            'met': None if quick else added <= GOALS['rss_mb'],
            'baseline': 'the same memory_node on the same file without web_port'}


def main(argv=None) -> int:
    """Run the benchmark and print its JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small n for a smoke run')
    parser.add_argument('--n', type=int, help='entries (default 10,000)')
    args = parser.parse_args(argv)
    n = args.n or (500 if args.quick else 10_000)
    repeats = 5 if args.quick else 21
    now = dt.datetime.now(UTC)
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        memory = directory / 'robot-memory.md'
        write_memory(memory, n, now)
        static = directory / 'static'
        static.mkdir()
        port, bare_port = free_port(), free_port()
        env = dict(os.environ, PYTHONPATH=str(REPO))
        serve = subprocess.Popen(
            [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'serve', '--file', str(memory),
             '--port', str(port), '--read-only'], cwd=directory, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        bare = start([sys.executable, '-m', 'http.server', str(bare_port), '--bind',
                      '127.0.0.1', '--directory', str(static)], directory)
        try:
            base, bare_base = f'http://127.0.0.1:{port}', f'http://127.0.0.1:{bare_port}'
            wait(base + '/static/style.css', serve)
            wait(bare_base + '/', bare)
            figures = {}
            for name, path in (('entries', '/entries'), ('now', '/')):
                page, _, _ = fetch(base + path)
                (static / f'{name}.html').write_bytes(page)
                server_ms, bare_ms = [], []
                for _ in range(repeats):
                    server_ms.append(fetch(base + path)[2])
                    bare_ms.append(1000 * fetch(f'{bare_base}/{name}.html')[1])
                figures[name] = (statistics.median(server_ms), statistics.median(bare_ms),
                                 len(page))
            reparse = []
            for step in range(3):
                stamp = time.time_ns() + step * 1_000_000_000
                os.utime(memory, ns=(stamp, stamp))  # as if a dream had written it
                reparse.append(fetch(base + '/entries')[2])
            ms, bare_ms, _ = figures['entries']
            reparse_ms = statistics.median(reparse)
            print(json.dumps({
                'bench': 'first_page', 'n': n, 'repeats': repeats, 'page': '/entries',
                'ms': round(ms, 2), 'baseline_ms': round(bare_ms, 2),
                'ratio': round(ms / bare_ms, 2), 'goal_ms': GOALS['first_page_ms'],
                'met': None if args.quick else ms <= GOALS['first_page_ms'],
                'reparse_ms': round(reparse_ms, 2),
                'now_page_ms': round(figures['now'][0], 2),
                'now_baseline_ms': round(figures['now'][1], 2),
                'baseline': 'the same bytes from python -m http.server (round trip)'}),
                flush=True)
            rss, bare_rss = vm_rss_mb(serve.pid), vm_rss_mb(bare.pid)
            loaded = loaded_only_mb(memory)
            print(json.dumps({
                'bench': 'rss', 'n': n, 'mb': round(rss, 1), 'baseline_mb': round(bare_rss, 1),
                'ratio': round(rss / bare_rss, 2), 'added_mb': round(rss - loaded, 1),
                'memory_loaded_only_mb': round(loaded, 1),
                'baseline': 'python -m http.server'}), flush=True)
            weight = figures['entries'][2]
            for asset in ('/static/style.css', '/static/live.js'):
                weight += len(fetch(base + asset)[0])
            rows = min(n, 100)
            text = memory.read_text(encoding='utf-8')
            starts = [match.start() for match in re.finditer(r'\n  - id: ', text)]
            same_rows = len(text[starts[0]:starts[rows] if rows < len(starts) else None]
                            .encode('utf-8'))
            print(json.dumps({
                'bench': 'page_weight', 'n': n, 'rows': rows, 'kb': round(weight / 1024, 1),
                'baseline_kb': round(same_rows / 1024, 1),
                'ratio': round(weight / same_rows, 2), 'goal_kb': GOALS['page_weight_kb'],
                'met': None if args.quick else weight / 1024 <= GOALS['page_weight_kb'],
                'baseline': 'the memory file bytes of the same rows'}), flush=True)
        finally:
            for process in (serve, bare):
                process.terminate()
                process.wait(10)
        print(json.dumps(node_rss(memory, directory, n, repeats, args.quick)), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
