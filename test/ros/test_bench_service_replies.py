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
Smoke test of bench/bench_service_replies.py: it runs and prints well-formed JSON lines.

Runs ``--quick`` against the installed memory_node on this run's ROS_DOMAIN_ID. No timing
is asserted: the numbers belong to the machine, the shape belongs to the script.
"""

import json
import math
import os
import subprocess
import sys

from support.paths import REPO

SCRIPT = REPO / 'bench' / 'bench_service_replies.py'


def test_quick_benchmark_prints_one_json_object_per_bench():
    run = subprocess.run([sys.executable, '-P', str(SCRIPT), '--quick'], cwd=REPO,
                         env=dict(os.environ), capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    assert [record['bench'] for record in records] == ['learn_round_trip', 'first_call']
    for record in records:
        assert record['quick'] is True and record['n'] > 0, record
        assert math.isfinite(record['ms']) and record['ms'] > 0, record
        assert record['baseline_ms'] > 0, record
        assert math.isclose(record['ratio'], record['ms'] / record['baseline_ms'],
                            rel_tol=0.01, abs_tol=0.002), record
        assert record['unanswered'] == 0, record
