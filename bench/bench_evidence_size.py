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
Evidence at real rates: database bytes a robot-day at 1 Hz x 30 statuses, three constant faults.

The robot of bench/bench_node.py's cpu figures (30 statuses from the profiles in
``bench/profiles/``, three of them constantly ERROR, numeric values that move a little
every second as a sensor's do) reports once a second for ``--days`` days through
``EvidenceStore.add`` with the default rules, a dream every night at 03:00 UTC (which
seals its window, as the node's do). Baseline, in the same run: the same stream stored
row by row (``run_gap_s=None``, one row a report, as before runs). One JSON line:

``evidence_size``  ``bytes_per_day`` (the database after the last day, over the days;
                   goal <= 5 MB), ``baseline_bytes_per_day`` (row by row), ``ratio``,
                   and the rows of each.

Usage: ``python bench/bench_evidence_size.py [--quick] [--days N]``.
"""

import argparse
import datetime as dt
import json
import pathlib
import sys
import tempfile

try:
    from robot_memory.dream.autodream import dream
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.dream.autodream import dream
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import from_dict
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from node_children import _moved  # noqa: E402, I100 - the cpu figures' robot, beside us
from node_children import robot_statuses  # noqa: E402

GOAL_BYTES = 5_000_000
START = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


def stored_bytes(directory: pathlib.Path, days: int, ticks: int, run_gap_s) -> tuple:
    """Store ``days`` of ``ticks`` reports a day; return (database bytes, rows, reports)."""
    database = directory / 'evidence.db'
    memory = MemoryFile(directory / 'robot-memory.md')
    statuses = robot_statuses()
    reports = 0
    with EvidenceStore(database, rules=Rules.default(), run_gap_s=run_gap_s) as store:
        for day in range(days):
            midnight = START + dt.timedelta(days=day)
            for tick in range(ticks):
                if tick == 3 * 3600:
                    dream(store, memory, midnight + dt.timedelta(seconds=tick))
                stamp = midnight + dt.timedelta(seconds=tick)
                for slot, (name, hardware_id, level, message, values) in enumerate(statuses):
                    store.add(from_dict({
                        'stamp': stamp, 'source': 'diagnostic', 'name': name,
                        'hardware_id': hardware_id, 'level': level, 'message': message,
                        'values': {key: _moved(str(value), tick, slot)
                                   for key, value in values.items()}}).observation)
                    reports += 1
        store.flush()
        rows = store.db.execute('SELECT count(*) FROM observations').fetchone()[0]
    size = sum(path.stat().st_size for path in directory.glob('evidence.db*'))
    return size, rows, reports


def main(argv=None) -> int:
    """Print the evidence_size line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--quick', action='store_true', help='a tenth of a day')
    parser.add_argument('--days', type=int, default=None, help='robot-days (default 2)')
    args = parser.parse_args(argv)
    days = args.days or (1 if args.quick else 2)
    ticks = 8_640 if args.quick else 86_400  # reports a day of each status (quick: 2.4 h)
    with tempfile.TemporaryDirectory(prefix='bench-evidence-') as scratch:
        runs_dir, rows_dir = pathlib.Path(scratch, 'runs'), pathlib.Path(scratch, 'rows')
        runs_dir.mkdir()
        rows_dir.mkdir()
        size, rows, reports = stored_bytes(runs_dir, days, ticks, 60.0)
        base_size, base_rows, _ = stored_bytes(rows_dir, days, ticks, None)
    robot_days = days * ticks / 86_400
    per_day, base_per_day = size / robot_days, base_size / robot_days
    print(json.dumps({'bench': 'evidence_size', 'n': reports, 'days': days, 'statuses': 30,
                      'rate_hz': 1.0, 'constant_faults': 3, 'bytes_per_day': round(per_day),
                      'rows': rows, 'baseline_bytes_per_day': round(base_per_day),
                      'baseline_rows': base_rows,
                      'baseline': 'the same reports stored row by row (run_gap_s=None)',
                      'ratio': round(per_day / base_per_day, 4), 'goal_bytes': GOAL_BYTES,
                      'met': None if args.quick else per_day <= GOAL_BYTES}), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
