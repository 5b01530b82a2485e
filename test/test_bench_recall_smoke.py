"""Smoke test of bench/bench_recall.py: ``--quick`` runs and prints well-formed JSON lines.

No timing is asserted: the numbers belong to the machine, the shape belongs to the script.
"""

import json
import math
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = REPO / 'bench' / 'bench_recall.py'


def test_quick_recall_benchmark_prints_its_figures_and_baselines():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    run = subprocess.run([sys.executable, str(SCRIPT), '--quick'], cwd=REPO, env=env,
                         capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    benches = {record['bench'] for record in records}
    assert {'recall_keyword', 'recall_hybrid', 'learn_rate', 'recall_quality'} <= benches
    for record in records:
        if record['bench'] in ('recall_hybrid', 'learn_rate'):
            assert record['n'] == 1000 and record['met'] is None, record
            assert math.isfinite(record['ratio']) and record['ratio'] > 0, record
            assert record['peak_rss_mb'] > 0, record
        if record['bench'] == 'recall_hybrid':
            assert record['p50_ms'] > 0 and record['baseline_p50_ms'] > 0, record
            assert record['matrix_full_loads'] == 1, 'recalls reloaded the vector matrix'
        if record['bench'] == 'learn_rate':
            assert record['per_s'] > 0 and record['baseline_per_s'] > 0, record
            if record['embedder'] != 'none':
                assert record['matrix_full_loads'] == 1, 'learns reloaded the vector matrix'
        if record['bench'] == 'recall_quality':
            for mode in ('keyword', 'vector', 'hybrid'):
                for key in ('r1', 'r5', 'r5_paraphrase', 'r1_dev', 'r5_test'):
                    assert 0.0 <= record[f'{mode}_{key}'] <= 1.0, record
    learners = {record['embedder'] for record in records if record['bench'] == 'learn_rate'}
    assert {'none', 'hashing-v1-256'} <= learners
