"""Smoke test of bench/bench_memory_file.py: it runs and prints well-formed JSON lines.

Runs ``--quick`` (100 and 1,000 entries, 3 repeats) with this interpreter. No timing
is asserted: the numbers belong to the machine, the shape belongs to the script.
"""

import json
import math
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = REPO / 'bench' / 'bench_memory_file.py'
MEASURED = {'load', 'save_warm', 'save_cold', 'load_save', 'load_save_cold', 'write_atomic',
            'load_save_pyyaml'}


def test_quick_benchmark_prints_one_json_object_per_line():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    run = subprocess.run([sys.executable, str(SCRIPT), '--quick'], cwd=REPO, env=env,
                         capture_output=True, timeout=240)
    assert run.returncode == 0, run.stderr.decode()
    lines = run.stdout.decode('utf-8').splitlines()
    assert lines, 'the benchmark printed nothing'
    records = []
    for line in lines:
        record = json.loads(line)
        assert isinstance(record, dict), line
        assert {'bench', 'n'} <= set(record), line
        figure = 'mb' if record['bench'] == 'peak_memory' else (
            'ratio' if record['bench'] == 'scaling' else 'ms')
        value = record[figure]
        assert isinstance(value, (int, float)) and not isinstance(value, bool)
        assert math.isfinite(value) and value > 0, line
        records.append(record)
    seen = {(record['bench'], record['n']) for record in records}
    assert {(bench, n) for bench in MEASURED for n in (100, 1000)} <= seen
    assert ('context', 1000) in seen
    for record in records:
        if record['bench'] in MEASURED | {'context'}:
            assert record['repeats'] == 3 and record['baseline_ms'] > 0, record
            assert math.isclose(record['ratio'], record['ms'] / record['baseline_ms'],
                                rel_tol=0.01, abs_tol=0.002), record
    goal = [record for record in records if record['bench'] == 'goal']
    assert len(goal) == 1 and goal[0]['goal_ms'] == 100 and goal[0]['met'] is None
    [memory] = [record for record in records if record['bench'] == 'peak_memory']
    assert memory['n'] == 2000 and memory['mb'] >= memory['baseline_mb'] > 0
    [scaling] = [record for record in records if record['bench'] == 'scaling']
    assert (scaling['n'], scaling['from_n']) == (1000, 100) and scaling['ratio'] > 0
    reference = [record for record in records if record['bench'] == 'reference_rcan']
    assert reference == [{'bench': 'reference_rcan', 'n': 10000, 'ms': 7600,
                          'source': 'measured by the project on this machine class, '
                                    'see DESIGN.md', 'measured_in_this_run': False}]
