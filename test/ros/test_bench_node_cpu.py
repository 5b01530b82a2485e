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
Smoke test of bench/bench_node.py's cpu figures: they run and print well-formed JSON lines.

Runs ``--quick --only cpu`` against the installed memory_node on this run's ROS_DOMAIN_ID.
No share is asserted: the numbers belong to the machine, the shape (and that both
processes took the load) to the script.
"""

import json
import math
import os
import subprocess
import sys

from support.paths import REPO

SCRIPT = REPO / 'bench' / 'bench_node.py'


def test_quick_cpu_figures_print_the_node_beside_the_bare_subscriber():
    run = subprocess.run([sys.executable, '-P', str(SCRIPT), '--quick', '--only', 'cpu',
                          '--domain', os.environ['ROS_DOMAIN_ID']], cwd=REPO, env=dict(os.environ),
                         capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    # The robot profiles (bench_quality's negative controls are no robot's).
    profiles = sorted(path.stem for path in (REPO / 'bench' / 'profiles').glob('*.yaml')
                      if path.stem != 'negative_controls')
    assert [record['bench'] for record in records] == \
        ['cpu_idle', 'cpu_1hz'] + ['cpu_profile'] * len(profiles), records
    idle, loaded = records[:2]
    assert [record['profile'] for record in records[2:]] == profiles
    for record in records[2:]:  # each robot's own status set, at 1 Hz
        assert 5 <= record['statuses'] <= 30 and record['rate_hz'] == 1.0, record
        assert record['met'] == (record['share'] <= record['goal_share']), record
    for record in records:
        assert record['n'] >= 1 and record['window_s'] > 0, record
        assert math.isfinite(record['share']) and record['share'] >= 0, record
        assert record['baseline_share'] >= 0, record
        assert record['wakeups_per_s'] >= 0 and record['baseline_wakeups_per_s'] >= 0, record
        if record['baseline_share']:
            assert math.isclose(record['ratio'], record['share'] / record['baseline_share'],
                                rel_tol=0.02, abs_tol=0.01), record
    assert (idle['statuses'], loaded['statuses'], loaded['rate_hz']) == (0, 30, 1.0)
    assert loaded['goal_share'] == 1.0 and loaded['met'] == (loaded['share'] <= 1.0)
    # Both took the robot's reports: 30 statuses a message for the node (its ERROR logs
    # too), every message for the bare subscriber (the node's own health too).
    assert loaded['node_received'] >= 30 * (loaded['sent'] - 2), loaded
    assert loaded['baseline_messages'] >= loaded['sent'] - 2, loaded
    # ... and each woke at least once a message to take it.
    assert loaded['wakeups_per_s'] >= 0.9 and loaded['baseline_wakeups_per_s'] >= 0.9, loaded
