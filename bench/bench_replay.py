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
How fast ``robot-memory replay`` takes diagnostics from an MCAP, and in how much memory.

The bag: DiagnosticArrays of 5 statuses (as bench_node's flood), one in ten statuses WARN,
headers stamped, written by rosbags into an MCAP. Lines:

``{"bench": "replay_mcap", ...}``  statuses per second replayed into a fresh evidence
    database (``replay.replay``, no dreams: the dream is bench_autodream's), and
    ``baseline_per_s``: the library's own bare read-and-decode of the same bag (rosbags'
    Reader and ``deserialize_cdr`` of every message, each status's fields read), measured
    in the same run; ``ratio`` = figure / baseline. Medians of ``repeats``.
``{"bench": "replay_mcap_distinct", ...}``  the same on a bag whose arrays all differ (a
    sequence number in each), so none is read from the cache of arrays seen before: the
    floor, for a robot whose every report changes.
``{"bench": "replay_rss", ...}``  the peak resident memory of ``robot-memory replay`` in
    its own process on a bag and on one ``scale`` times larger (``ratio``: flat is 1).
``{"bench": "goal", ...}``  the issue's goals: 200,000 statuses/s and 0.5 of the baseline.

Usage: ``python bench/bench_replay.py [--quick] [--arrays N] [--repeats R]``.
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

try:
    from robot_memory.bags import replay
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.bags import replay
from rosbags.rosbag2 import Reader
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores

from robot_memory.bags import write
from robot_memory.evidence.store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile

REPO = pathlib.Path(__file__).resolve().parents[1]
START_NS = int(dt.datetime(2026, 5, 1, 1, 0, tzinfo=dt.timezone.utc).timestamp()) * 10**9
STATUSES = 5
GOAL_PER_S = 200_000
GOAL_RATIO = 0.5


def make_bag(path: pathlib.Path, arrays: int, distinct: bool = False) -> pathlib.Path:
    """
    Write an MCAP of ``arrays`` DiagnosticArrays, 20 ms apart; return its directory.

    Each array's header is stamped with its time, as a robot's are; its statuses take
    one of 10 variants (values that change now and then), or, ``distinct``, also carry a
    sequence number that makes every array unlike any other (no two read alike).
    """
    store = get_typestore(Stores.ROS2_KILTED)
    kind = 'diagnostic_msgs/msg/DiagnosticArray'

    def serialized(variant: int, sequence: str) -> bytearray:
        extra = [{'key': 'sequence', 'value': sequence}] if sequence else []
        statuses = [{'level': 1 if (variant + item) % 10 == 0 else 0,
                     'name': f'base: motor {item}', 'hardware_id': f'motor_{item}',
                     'message': 'current high' if (variant + item) % 10 == 0 else 'ok',
                     'values': [{'key': 'current', 'value': f'{1.0 + variant / 10:.1f}'},
                                {'key': 'temperature', 'value': '41'}] + extra}
                    for item in range(STATUSES)]
        message = write.build(store, kind, {'status': statuses})
        return bytearray(store.serialize_cdr(message, kind))

    variants = [serialized(variant, '0' * 10 if distinct else '') for variant in range(10)]
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection('/diagnostics', kind, typestore=store)
        for index in range(arrays):
            ns = START_NS + index * 20_000_000
            raw = variants[index % 10]
            stamp = (ns // 10**9, ns % 10**9)
            struct.pack_into('<II' if raw[1] else '>II', raw, 4, *stamp)  # header stamp
            if distinct:
                raw = bytes(raw).replace(b'0' * 10, b'%010d' % index)
            writer.write(connection, ns, bytes(raw))
    return path


def bare_read(path: pathlib.Path) -> int:
    """Read and decode every status with the library alone; return the statuses read."""
    store = get_typestore(Stores.ROS2_KILTED)
    count = 0
    with Reader(path) as reader:
        for connection, _, raw in reader.messages():
            message = store.deserialize_cdr(raw, connection.msgtype)
            for status in message.status:
                (status.level, status.name, status.message, status.hardware_id,
                 [(item.key, item.value) for item in status.values])
                count += 1
    return count


def replay_once(path: pathlib.Path, scratch: pathlib.Path) -> int:
    """Replay the bag into a fresh memory; returns the observations taken."""
    for stale in scratch.glob('robot-memory*'):
        stale.unlink()
    memory = MemoryFile(scratch / 'robot-memory.md')
    with EvidenceStore(scratch / 'robot-memory.db', batch_size=10**9) as store:
        summary = replay.replay([path], store, memory, replay.ReplayOptions(nightly=None))
    return summary.observations


def timed(function, *args) -> tuple:
    started = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - started, result


def peak_rss_mb(path: pathlib.Path, scratch: pathlib.Path) -> float:
    """Peak resident memory (MB) of ``robot-memory replay`` of ``path`` in its own process."""
    for stale in scratch.glob('robot-memory*'):
        stale.unlink()
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    process = subprocess.Popen(
        [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'replay', str(path), '--no-dream',
         '--json', '--file', str(scratch / 'robot-memory.md')],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f'robot-memory replay exited {process.returncode}')
    return usage.ru_maxrss / 1024


def measure(name: str, bag: pathlib.Path, scratch: pathlib.Path, arrays: int,
            repeats: int) -> tuple:
    """Time the replay of ``bag`` beside the bare read; print its line; return the medians."""
    figures, baselines = [], []
    for _ in range(repeats):
        seconds, count = timed(bare_read, bag)
        baselines.append(count / seconds)
        seconds, taken = timed(replay_once, bag, scratch)
        if taken != count:
            raise RuntimeError(f'replay took {taken} of {count} statuses')
        figures.append(count / seconds)
    figure, baseline = statistics.median(figures), statistics.median(baselines)
    size = sum(file.stat().st_size for file in bag.iterdir())
    print(json.dumps({'bench': name, 'n': arrays * STATUSES, 'arrays': arrays,
                      'bag_mb': round(size / 1e6, 2), 'statuses_per_s': round(figure),
                      'baseline_per_s': round(baseline), 'ratio': round(figure / baseline, 3),
                      'repeats': repeats, 'all_per_s': [round(value) for value in figures],
                      'all_baseline_per_s': [round(value) for value in baselines]}),
          flush=True)
    return figure, baseline


def main(argv=None) -> int:
    """Run the benchmark; print JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='small bags, for the smoke test')
    parser.add_argument('--arrays', type=int, default=None, help='DiagnosticArrays in the bag')
    parser.add_argument('--repeats', type=int, default=None, help='runs of each measurement')
    parser.add_argument('--scale', type=int, default=None, help='size of the larger RSS bag')
    args = parser.parse_args(argv)
    arrays = args.arrays or (4_000 if args.quick else 200_000)
    repeats = args.repeats or 3
    scale = args.scale or (4 if args.quick else 5)
    with tempfile.TemporaryDirectory(prefix='bench-replay-') as temp:
        temp = pathlib.Path(temp)
        bag = make_bag(temp / 'bag', arrays)
        scratch = temp / 'memory'
        scratch.mkdir()
        figure, baseline = measure('replay_mcap', bag, scratch, arrays, repeats)
        distinct = make_bag(temp / 'distinct', arrays, distinct=True)
        measure('replay_mcap_distinct', distinct, scratch, arrays, repeats)
        shutil.rmtree(distinct)
        small = peak_rss_mb(bag, scratch)
        large_bag = make_bag(temp / 'large', arrays * scale)
        large = peak_rss_mb(large_bag, scratch)
        print(json.dumps({'bench': 'replay_rss', 'n': arrays * STATUSES,
                          'large_n': arrays * STATUSES * scale, 'mb': round(small, 1),
                          'large_mb': round(large, 1), 'ratio': round(large / small, 3),
                          'large_bag_mb': round(sum(
                              file.stat().st_size for file in large_bag.iterdir()) / 1e6, 2)}))
        met = None if args.quick else (figure >= GOAL_PER_S and figure / baseline >= GOAL_RATIO)
        print(json.dumps({'bench': 'goal', 'n': arrays * STATUSES, 'goal_per_s': GOAL_PER_S,
                          'goal_ratio': GOAL_RATIO, 'met': met}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
