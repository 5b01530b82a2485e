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
Context signals: bytes a robot-day for 30 signals at 10 Hz, and their cost per message.

Two JSON lines:

``signals_size``  30 signals (three telemetry messages of ten numeric fields each) at
                  ``--rate`` Hz for ``--hours`` of a robot-day through ``EvidenceStore.add``
                  (flushed every 500 messages, as the node does): ``bytes_per_day`` of
                  ``signal_hours`` (its pages, ``dbstat``; goal <= 1 MB, judged over 24 h:
                  ``met``), the ``baseline`` the same values as raw float rows would take
                  (8 bytes each, no key), and the ``ratio``.
``signals_cost``  microseconds a telemetry message costs ``EvidenceStore.add`` with its
                  signals kept, median of ``--repeat`` runs of 10 min of messages, against
                  the same messages with every signal excluded by rule (``signals:
                  exclude: ['*']``): ``ratio``.

Usage: ``python bench/bench_signals.py [--quick] [--hours H] [--rate HZ]``.
"""

import argparse
import datetime as dt
import json
import pathlib
import sqlite3
import statistics
import sys
import tempfile
import time

try:
    from robot_memory.evidence.observations import TelemetryObservation
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.evidence.observations import TelemetryObservation
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.rules import Rules

GOAL_BYTES = 1_000_000
START = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
TOPICS = ('/odom', '/battery_state', '/joint_states')


def _message(topic: str, tick: int, stamp: dt.datetime) -> TelemetryObservation:
    fields = {f'field{index}': (tick * (index + 1)) % 97 / 7.0 for index in range(10)}
    fields['header'] = {'stamp': {'sec': int(stamp.timestamp())}, 'frame_id': 'base'}
    return TelemetryObservation(stamp, topic, 'robot_msgs/msg/Sample', fields)


def _stored(directory: pathlib.Path, seconds: int, rate: float, rules: Rules) -> tuple:
    """Store ``seconds`` of messages; return (signal_hours bytes, seconds taken by add)."""
    path = directory / f'signals-{len(list(directory.iterdir()))}.db'
    taken = 0.0
    with EvidenceStore(path, rules=rules, batch_size=500) as store:
        step = 1.0 / rate
        ticks = int(seconds * rate)
        for tick in range(ticks):
            stamp = START + dt.timedelta(seconds=tick * step)
            messages = [_message(topic, tick, stamp) for topic in TOPICS]
            began = time.perf_counter()
            for message in messages:
                store.add(message)
            if tick % 500 == 499:
                store.flush()
            taken += time.perf_counter() - began
        store.flush()
    db = sqlite3.connect(path)
    try:
        size = db.execute('SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?',
                          ('signal_hours',)).fetchone()[0]
    finally:
        db.close()
    return size, taken / max(1, ticks * len(TOPICS))


def main(argv=None) -> int:
    """Print the two JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='2 hours; the cost over 1 min of messages, 3 repeats')
    parser.add_argument('--hours', type=float, default=None, help='hours stored (default 24)')
    parser.add_argument('--rate', type=float, default=10.0, help='messages a second (10)')
    parser.add_argument('--repeat', type=int, default=None, help='cost runs (default 5)')
    args = parser.parse_args(argv)
    hours = args.hours or (2.0 if args.quick else 24.0)
    repeat = args.repeat or (3 if args.quick else 5)
    if hours <= 0 or args.rate <= 0 or repeat < 1:
        parser.error('--hours, --rate and --repeat must be positive')
    with tempfile.TemporaryDirectory(prefix='bench-signals-') as scratch:
        directory = pathlib.Path(scratch)
        size, _ = _stored(directory, int(hours * 3600), args.rate, Rules.default())
        per_day = size * 24.0 / hours
        values = 30 * args.rate * 86400
        print(json.dumps({'bench': 'signals_size', 'signals': 30, 'rate_hz': args.rate,
                          'hours': hours, 'bytes_per_day': round(per_day),
                          'goal_bytes': GOAL_BYTES,
                          'met': per_day <= GOAL_BYTES if hours >= 24 else None,
                          'baseline_bytes_per_day': round(values * 8),
                          'ratio': round(per_day / (values * 8), 5)}), flush=True)
        excluded = Rules.from_data({'signals': {'exclude': ['*']}})
        kept, none = [], []
        window = 60 if args.quick else 600
        for _ in range(repeat):
            kept.append(_stored(directory, window, args.rate, Rules.default())[1] * 1e6)
            none.append(_stored(directory, window, args.rate, excluded)[1] * 1e6)
        print(json.dumps({'bench': 'signals_cost', 'n': repeat,
                          'messages': int(window * args.rate * len(TOPICS)),
                          'us_per_message': round(statistics.median(kept), 2),
                          'baseline_us_per_message': round(statistics.median(none), 2),
                          'ratio': round(statistics.median(kept) / statistics.median(none), 3)}),
              flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
