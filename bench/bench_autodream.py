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
Benchmark of the evidence store and autodream; prints one JSON object a line.

Each line is ``{"bench", "n", "ms", "rate", "baseline_ms", "ratio"}``: the median of
several runs, the rate in items per second and the ratio to a bare ``sqlite3`` baseline
doing the irreducible part of the same work on the same rows:

``ingest``           ``EvidenceStore.add`` of n diagnostic observations (classification,
                     buffering, one transaction per 500 rows) vs ``executemany`` of the
                     already-classified rows, 500 per transaction. Goal: >= 50,000/s.
``ingest_contended`` the same while two other threads keep the GIL busy, as memory_node's
                     ingest thread does under a flood, vs ``executemany`` under the same
                     contention (what the store did before its multi-row INSERTs: sqlite3
                     waits for the GIL after every row it steps). Reported, no goal.
``dream``            ``autodream.dream`` over n new observations of 10,000 signatures (a
                     first night: every signature creates an entry, the file is written)
                     vs one ``GROUP BY signature`` over the same rows. Goal: < 10 s for 1M.
``dream_reinforce``  the next night: n more observations reinforce the 10,000 entries.
``ingest_file``      ``robot-memory ingest`` (a process) of 7 days of JSON lines, 8 statuses
                     at 1 Hz (two constantly bad), vs the same of 1 day: ``ms`` and
                     ``baseline_ms`` are their times, ``peak_mb`` and ``baseline_peak_mb``
                     their peak resident memory, ``ratio`` = peak_mb / baseline_peak_mb
                     (goal: about 1, memory flat whatever the file's size). The peaks
                     are the ingest process's own (started by a small fresh launcher).

Usage: ``python bench/bench_autodream.py [--quick] [--runs N] [--only BENCH]...``.
"""

import argparse
import contextlib
import datetime as dt
import json
import os
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

try:
    from robot_memory.dream.autodream import dream
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile

UTC = dt.timezone.utc
NIGHT = dt.datetime(2026, 5, 1, 20, 0, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001')
INSERT = ('INSERT INTO observations (stamp, source, signature, source_key, severity, payload) '
          'VALUES (?, ?, ?, ?, ?, ?)')


def emit(bench: str, n: int, times: list, baselines: list) -> None:
    """Print one result line: medians, rate and ratio to the baseline."""
    ms = statistics.median(times) * 1000.0
    baseline_ms = statistics.median(baselines) * 1000.0
    print(json.dumps({'bench': bench, 'n': n, 'ms': round(ms, 2),
                      'rate': round(n / (ms / 1000.0), 1), 'baseline_ms': round(baseline_ms, 2),
                      'ratio': round(ms / baseline_ms, 2)}), flush=True)


def observations(n: int, signatures: int, night: dt.datetime) -> list:
    """Return ``n`` WARN diagnostics of ``signatures`` different devices spread over four hours."""
    step = 4 * 3600.0 / n
    return [DiagnosticObservation(night + dt.timedelta(seconds=index * step),
                                  f'sensor {index % signatures}: status', f'hw{index % signatures}',
                                  1 + (index % 7 == 0), f'dropped {index % 97} ticks')
            for index in range(n)]


def classified_rows(items: list) -> list:
    """Return the rows the store writes for ``items`` (classification done once, outside timing)."""
    rules = Rules.default()
    rows = []
    for item in items:
        for found in rules.classify(item):
            rows.append((item.stamp.timestamp(), item.source, found.signature, found.source_key,
                         found.severity, found.payload))
    return rows


def bare_insert(path: pathlib.Path, rows: list, batch: int = 500) -> float:
    """Seconds for executemany of ``rows`` into the same table, ``batch`` rows a transaction."""
    connection = sqlite3.connect(str(path), isolation_level=None)
    connection.execute('PRAGMA journal_mode = WAL')
    connection.execute('PRAGMA synchronous = NORMAL')
    connection.execute('CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT, '
                       'stamp REAL NOT NULL, source TEXT NOT NULL, signature TEXT, '
                       'source_key TEXT NOT NULL, severity INTEGER NOT NULL, payload TEXT)')
    started = time.perf_counter()
    for start in range(0, len(rows), batch):
        connection.execute('BEGIN')
        connection.executemany(INSERT, rows[start:start + batch])
        connection.execute('COMMIT')
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed


def bench_ingest(n: int, runs: int, scratch: pathlib.Path, bench: str = 'ingest',
                 held=contextlib.nullcontext) -> None:
    """Store ingest rate against bare executemany of the same rows (both inside ``held()``)."""
    items = observations(n, 1000, NIGHT)
    rows = classified_rows(items)
    times, baselines = [], []
    with held():
        for run in range(runs):
            store = EvidenceStore(scratch / f'{bench}-{run}.db')
            started = time.perf_counter()
            for item in items:
                store.add(item)
            store.flush()
            times.append(time.perf_counter() - started)
            store.close()
            baselines.append(bare_insert(scratch / f'{bench}-bare-{run}.db', rows))
    emit(bench, n, times, baselines)


@contextlib.contextmanager
def gil_held(threads: int = 2):
    """Run ``threads`` pure-Python loops meanwhile: other threads wanting the GIL back."""
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            sum(range(500))

    workers = [threading.Thread(target=spin, daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def fill(directory: pathlib.Path, n: int, signatures: int, night: dt.datetime) -> None:
    """Append n classified observations to the store in ``directory`` (untimed setup)."""
    rows = classified_rows(observations(n, signatures, night))
    store = EvidenceStore(directory / 'robot-memory.db')
    with store.db.atomic():
        store.db.conn.executemany(INSERT, rows)
    store.close()


def bare_group_by(path: pathlib.Path, after: int) -> float:
    """Seconds for the bare aggregate a dream needs: one GROUP BY signature over new rows."""
    connection = sqlite3.connect(str(path))
    started = time.perf_counter()
    connection.execute('SELECT signature, count(*), min(stamp), max(stamp), max(severity) '
                       'FROM observations WHERE id > ? GROUP BY signature', (after,)).fetchall()
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed


def timed_dream(template: pathlib.Path, work: pathlib.Path, now: dt.datetime) -> tuple:
    """Copy ``template`` to ``work``, run one dream there; (seconds, report)."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(template, work)
    memory = MemoryFile(work / 'robot-memory.md')
    store = EvidenceStore(work / 'robot-memory.db')
    started = time.perf_counter()
    report = dream(store, memory, now, store.rules, CONFIG, actor='bench')
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed, report


def bench_dream(n: int, signatures: int, runs: int, scratch: pathlib.Path) -> None:
    """Dream over n observations of ``signatures`` signatures: first night, then reinforce."""
    first = scratch / 'night1'
    first.mkdir()
    fill(first, n, signatures, NIGHT)
    now = NIGHT + dt.timedelta(hours=6)
    times, baselines = [], []
    for run in range(runs):
        elapsed, report = timed_dream(first, scratch / 'work', now)
        assert len(report.created) == signatures, report.summary()
        times.append(elapsed)
        baselines.append(bare_group_by(first / 'robot-memory.db', 0))
    emit('dream', n, times, baselines)

    second = scratch / 'night2'
    shutil.copytree(scratch / 'work', second)
    after = EvidenceStore(second / 'robot-memory.db')
    last_id = after.dream_cursor().last_id
    after.close()
    fill(second, n, signatures, NIGHT + dt.timedelta(days=1))
    times, baselines = [], []
    for run in range(runs):
        elapsed, report = timed_dream(second, scratch / 'work', now + dt.timedelta(days=1))
        assert len(report.reinforced) == signatures, report.summary()
        times.append(elapsed)
        baselines.append(bare_group_by(second / 'robot-memory.db', last_id))
    emit('dream_reinforce', n, times, baselines)


# Eight statuses as a TurtleBot 4 Lite reports them; the first two are constantly bad.
FILE_STATUSES = (('joy_linux_node: Joystick Driver Status', 'none', 2, 'Joystick not open.'),
                 ('turtlebot4_diagnostics: Wheel Status', 'Turtlebot4', 1, 'Disabled'),
                 ('turtlebot4_diagnostics: Battery Percentage', 'Turtlebot4', 0, 'OK'),
                 ('turtlebot4_diagnostics: Battery Voltage', 'Turtlebot4', 0, 'OK'),
                 ('rplidar_node: Scan Rate', 'rplidar', 0, 'OK'),
                 ('oakd: Camera Frequency', 'oakd', 0, 'OK'),
                 ('create3: Dock Status', 'create3', 0, 'OK'),
                 ('create3: Hazards', 'create3', 0, 'OK'))


def write_statuses(path: pathlib.Path, seconds: int) -> int:
    """Write ``seconds`` of FILE_STATUSES at 1 Hz as JSON lines; returns the lines written."""
    with path.open('w', encoding='utf-8') as handle:
        for second in range(seconds):
            at = (NIGHT + dt.timedelta(seconds=second)).strftime('%Y-%m-%dT%H:%M:%SZ')
            for index, (name, hardware_id, level, message) in enumerate(FILE_STATUSES):
                values = {'frequency': f'{5.0 + (second * 7 + index) % 13 / 10:.1f}',
                          'is_docked': 'True' if second % 7200 < 3600 else 'False'}
                handle.write(json.dumps({'stamp': at, 'source': 'diagnostic', 'name': name,
                                         'hardware_id': hardware_id, 'level': level,
                                         'message': message, 'values': values},
                                        separators=(',', ':')) + '\n')
    return seconds * len(FILE_STATUSES)


# Linux keeps a process's peak RSS (ru_maxrss) across fork and exec: a child forked from
# this process, which holds ~900 MB after the million-row dreams, reported 912 MB for a day
# and a week alike. So a small fresh launcher (no site packages, a few MB) starts the child
# and reports wait4's figure: the child's own peak, or the launcher's if that were larger.
_LAUNCHER = """
import json, os, sys, time
devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
started = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=devnull)
_, status, usage = os.wait4(pid, 0)
print(json.dumps({'seconds': time.perf_counter() - started, 'peak_kib': usage.ru_maxrss,
                  'status': os.waitstatus_to_exitcode(status)}))
"""


def ingest_process(path: pathlib.Path, directory: pathlib.Path) -> tuple:
    """Run ``robot-memory ingest`` of ``path`` as a process; (seconds, its peak RSS in MB)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(pathlib.Path(__file__).resolve().parents[1]),
                      os.environ.get('PYTHONPATH')])))
    argv = [sys.executable, '-m', 'robot_memory.cli.main', 'ingest', str(path), '--file',
            str(directory / 'robot-memory.md')]
    launched = subprocess.run([sys.executable, '-S', '-c', _LAUNCHER, *argv], env=env,
                              capture_output=True, text=True, check=True)
    found = json.loads(launched.stdout)
    if found['status'] != 0:
        raise RuntimeError(f'{" ".join(argv)} exited {found["status"]}')
    return found['seconds'], found['peak_kib'] / 1024.0  # Linux reports KiB


def bench_ingest_file(seconds: int, scratch: pathlib.Path) -> None:
    """Peak memory of ``ingest`` of 7 x ``seconds`` of statuses against 1 x ``seconds``."""
    found = {}
    for days in (1, 7):
        path = scratch / f'statuses-{days}.jsonl'
        lines = write_statuses(path, days * seconds)
        directory = scratch / f'ingest-{days}'
        directory.mkdir()
        found[days] = (lines, *ingest_process(path, directory))
        path.unlink()
    (lines, elapsed, peak), (_, base_elapsed, base_peak) = found[7], found[1]
    print(json.dumps({'bench': 'ingest_file', 'n': lines, 'ms': round(elapsed * 1000.0, 2),
                      'rate': round(lines / elapsed, 1),
                      'baseline_ms': round(base_elapsed * 1000.0, 2),
                      'peak_mb': round(peak, 1), 'baseline_peak_mb': round(base_peak, 1),
                      'ratio': round(peak / base_peak, 2)}), flush=True)


BENCHES = ('ingest', 'ingest_contended', 'dream', 'ingest_file')


def main(argv=None) -> int:
    """Run the benchmarks and print one JSON line per benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='small smoke run (20,000 ingested, 50,000 dreamt over 500 signatures)')
    parser.add_argument('--runs', type=int, default=None,
                        help='runs per benchmark, the median is reported (default 5 ingest / 3 '
                             'dream; 2 with --quick)')
    parser.add_argument('--only', action='append', choices=BENCHES,
                        help='run only this benchmark (repeatable; dream runs dream_reinforce '
                             'too)')
    args = parser.parse_args(argv)
    runs = args.runs or (2 if args.quick else None)
    chosen = set(args.only or BENCHES)
    with tempfile.TemporaryDirectory(prefix='bench-autodream-') as scratch:
        scratch = pathlib.Path(scratch)
        if args.quick:
            sizes = {'ingest': 20_000, 'ingest_contended': 500, 'dream': (50_000, 500),
                     'ingest_file': 600}  # 10 minutes against 70
        else:
            sizes = {'ingest': 200_000, 'ingest_contended': 2_000,
                     'dream': (1_000_000, 10_000), 'ingest_file': 86_400}  # a day, a week
        if 'ingest' in chosen:
            bench_ingest(sizes['ingest'], runs or 5, scratch)
        if 'ingest_contended' in chosen:
            bench_ingest(sizes['ingest_contended'], runs or 3, scratch, 'ingest_contended',
                         gil_held)
        if 'dream' in chosen:
            bench_dream(*sizes['dream'], runs or 3, scratch)
        if 'ingest_file' in chosen:
            bench_ingest_file(sizes['ingest_file'], scratch)
    return 0


if __name__ == '__main__':
    sys.exit(main())
