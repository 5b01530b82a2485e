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
Benchmark of undo and of the history it needs; prints one JSON object a line. Medians.

``record_versions``  what the typed memory's version triggers (migration
                     ``0005_record_versions``) cost a write: per-item ``Substrate.learn``
                     and a ``learn_many`` of n records, each into a store with the triggers
                     and into one with them dropped (the baseline), interleaved in the same
                     run; ``ratio`` is with / without.
``undo_to``          ``robot_memory.review.undo.undo --to`` a time before a dream that took in
                     edits by hand of a tenth of an n-entry memory file, on a database
                     that also holds n typed records learned after that time; against
                     the baseline of one locked load + save of the same file
                     (``MemoryFile.update``), which every writer pays.

Usage: ``python bench/bench_undo.py [--quick] [--n N]``.
"""

import argparse
import datetime as dt
import json
import pathlib
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from robot_memory.dream.autodream import dream  # noqa: E402
from robot_memory.evidence.evidence_store import EvidenceStore  # noqa: E402
from robot_memory.locations import default_db_path  # noqa: E402
from robot_memory.rcan.memory_file import MemoryFile  # noqa: E402
from robot_memory.rcan.memory_file import new_document  # noqa: E402
from robot_memory.rcan.memory_file import render  # noqa: E402
from robot_memory.rcan.schema import new_entry  # noqa: E402
from robot_memory.review.undo import undo  # noqa: E402
from robot_memory.substrate import Substrate  # noqa: E402

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 5, 1, 2, 0, tzinfo=UTC)


def bench_record_versions(n: int, learns: int, repeats: int, directory: pathlib.Path) -> dict:
    """
    Learn and learn_many with and without the version triggers, interleaved.

    Both stores are open at once and every timed learn alternates between them, so a
    change in the machine's load falls on both alike.
    """
    times = {'learn': {True: [], False: []}, 'learn_many': {True: [], False: []}}
    texts = [f'note {index} about shelf {index % 97} in room {index % 13}' for index in range(n)]
    for repeat in range(repeats):
        stores = {}
        for versioned in ((True, False) if repeat % 2 == 0 else (False, True)):
            store = stores[versioned] = Substrate(directory / f'versions-{versioned}-{repeat}.db')
            if not versioned:
                for name in ('insert', 'update', 'delete'):
                    store.db.execute(f'DROP TRIGGER substrate_version_{name}')
            started = time.perf_counter()
            store.learn_many(texts, NOW, type='episodic')
            times['learn_many'][versioned].append(time.perf_counter() - started)
        for index in range(learns):
            for versioned, store in stores.items():
                started = time.perf_counter()
                store.learn(f'the cup {index} sits on shelf {index * 7} near the door', now=NOW)
                times['learn'][versioned].append(time.perf_counter() - started)
        for store in stores.values():
            store.close()
    record = {'bench': 'record_versions', 'n': n, 'learns': learns, 'repeats': repeats}
    for name, by in times.items():
        with_ms = 1000 * statistics.median(by[True])
        without_ms = 1000 * statistics.median(by[False])
        record[f'{name}_ms'] = round(with_ms, 3)
        record[f'{name}_baseline_ms'] = round(without_ms, 3)
        record[f'{name}_ratio'] = round(with_ms / without_ms, 3)
    record['ms'] = record['learn_ms']
    record['baseline_ms'] = record['learn_baseline_ms']
    record['ratio'] = record['learn_ratio']
    return record


def _robot(directory: pathlib.Path, n: int):
    """Return a memory file of n entries taken in by dream 1, a tenth edited and taken in by 2."""
    directory.mkdir(parents=True)
    memory = MemoryFile(directory / 'robot-memory.md')
    document = new_document('RRN-000000000001', NOW)
    document.entries = [new_entry('environment_note', f'Doorway {index} has a {index % 9} cm lip',
                                  0.6, NOW - dt.timedelta(days=1)) for index in range(n)]
    memory.path.write_bytes(render(document))
    store = EvidenceStore(default_db_path(memory.path))
    dream(store, memory, NOW)
    text = memory.path.read_text()
    for index in range(0, n, 10):
        text = text.replace(f'Doorway {index} has', f'Doorway {index} now has', 1)
    memory.path.write_text(text)
    dream(store, memory, NOW + dt.timedelta(hours=1))
    with Substrate(store.path) as typed:
        typed.learn_many([f'fact {index} about the hallway' for index in range(n)],
                         NOW + dt.timedelta(hours=2), type='episodic')
    return memory, store


def bench_undo_to(n: int, repeats: int, directory: pathlib.Path) -> dict:
    """Undo of n / 10 entry changes and n records, against one locked load + save."""
    undos, baselines = [], []
    for repeat in range(repeats):
        memory, store = _robot(directory / f'undo-{n}-{repeat}', n)
        with store:
            started = time.perf_counter()
            report = undo(store, memory, NOW + dt.timedelta(hours=3), 'bench', 'benchmark',
                          to=NOW + dt.timedelta(minutes=30))
            undos.append(time.perf_counter() - started)
        assert len(report.entries) == n // 10 and len(report.records) == n, report.summary()
        started = time.perf_counter()
        with memory.update(NOW + dt.timedelta(hours=4)) as result:
            result.document.entries = list(reversed(result.document.entries))
        baselines.append(time.perf_counter() - started)
    ms = 1000 * statistics.median(undos)
    baseline = 1000 * statistics.median(baselines)
    return {'bench': 'undo_to', 'n': n, 'entries_changed': n // 10, 'records_archived': n,
            'repeats': repeats, 'ms': round(ms, 3), 'baseline_ms': round(baseline, 3),
            'ratio': round(ms / baseline, 3)}


def main(argv=None) -> int:
    """Run the benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small n for a smoke run')
    parser.add_argument('--n', type=int, help='entries and records (default 10,000)')
    args = parser.parse_args(argv)
    n = args.n or (200 if args.quick else 10_000)
    repeats = 3 if args.quick else 5
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        print(json.dumps(bench_record_versions(n, 20 if args.quick else 200, repeats,
                                               directory)), flush=True)
        print(json.dumps(bench_undo_to(n, repeats, directory)), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
