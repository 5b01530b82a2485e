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
Smoke tests of the benchmarks under bench/: memory file, CLI, web, fleet and the others.

They run and print well-formed JSON lines.

Runs each ``--quick`` with this interpreter. No timing
is asserted: the numbers belong to the machine, the shape belongs to the script.
"""

import json
import math
import os
import subprocess
import sys

from support.paths import REPO
from support.processes import child_env

SCRIPT = REPO / 'bench' / 'bench_memory_file.py'
MEASURED = {'load', 'save_warm', 'save_cold', 'load_save', 'load_save_cold', 'write_atomic',
            'load_save_pyyaml'}


def test_quick_benchmark_prints_one_json_object_per_line():
    env = child_env()
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
                                    'see docs/architecture.md', 'measured_in_this_run': False}]


CLI_SCRIPT = REPO / 'bench' / 'bench_cli.py'
CLI_BENCHES = ('cli_help', 'cli_show', 'cli_recall', 'cli_recall_vectors', 'cli_mcp_initialize',
               'cli_show_other_form', 'cli_show_other_form', 'cli_show_other_form',
               'load_save_process', 'python_start')


def test_quick_cli_benchmark_prints_every_figure_with_its_baseline():
    env = child_env()
    run = subprocess.run([sys.executable, str(CLI_SCRIPT), '--quick'], cwd=REPO, env=env,
                         capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    assert [record['bench'] for record in records] == list(CLI_BENCHES)
    for record in records:
        assert record['ms'] > 0 and record['repeats'] == 1, record
        if record['bench'] == 'cli_show_other_form':  # against our own form, same rounds
            show = records[1]['ms']
            assert record['baseline_ms'] == show and record['goal_ratio'] == 2, record
            assert math.isclose(record['ratio'], record['ms'] / show, rel_tol=0.02), record
            assert record['n'] == 1000 and record['met'] is None, record
        elif record['bench'].startswith('cli_'):
            assert record['baseline'] == 'python -c pass' and record['baseline_ms'] > 0
            assert math.isclose(record['ratio'], record['ms'] / record['baseline_ms'],
                                rel_tol=0.02), record
            if record['bench'] == 'cli_recall_vectors':  # reported, no goal
                assert 'goal_ms' not in record and record['n'] == 1000, record
            else:
                assert record['goal_ms'] in (100, 250, 200, 300) and record['met'] is None
    assert [record.get('form') for record in records[5:8]] == [
        'opencastor', 'by_hand', 'opencastor_written']
    load_save = records[8]
    assert load_save['n'] == 1000 and load_save['goal_speedup'] == 10 and load_save['met'] is None
    if load_save['baseline_ms'] is None:  # opencastor is a benchmark-only dependency
        assert 'opencastor is not installed' in load_save['note']
    else:
        assert math.isclose(load_save['speedup'], load_save['baseline_ms'] / load_save['ms'],
                            rel_tol=0.02), load_save


REPLAY_SCRIPT = REPO / 'bench' / 'bench_replay.py'


def test_quick_replay_benchmark_prints_its_figures_ratios_and_memory():
    env = child_env()
    run = subprocess.run([sys.executable, str(REPLAY_SCRIPT), '--quick', '--arrays', '500'],
                         cwd=REPO, env=env, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    records = {record['bench']: record
               for record in map(json.loads, run.stdout.decode('utf-8').splitlines())}
    assert set(records) == {'replay_mcap', 'replay_mcap_distinct', 'replay_rss', 'goal'}
    for speed in (records['replay_mcap'], records['replay_mcap_distinct']):
        assert speed['n'] == 15000 and speed['repeats'] == 3 and 0 < speed['changed'] <= 1
        assert speed['statuses_per_s'] > 0 and speed['baseline_per_s'] > 0
        assert math.isclose(speed['ratio'], speed['statuses_per_s'] / speed['baseline_per_s'],
                            rel_tol=0.01)
    memory = records['replay_rss']
    assert memory['large_n'] == 4 * memory['n'] and memory['mb'] > 0 and memory['ratio'] > 0
    assert records['goal'] == {'bench': 'goal', 'n': 15000, 'goal_per_s': 200000,
                               'goal_ratio': 0.5, 'met': None}


WEB_SCRIPT = REPO / 'bench' / 'bench_web.py'


def test_quick_web_benchmark_prints_each_figure_beside_http_server():
    env = child_env()
    run = subprocess.run([sys.executable, str(WEB_SCRIPT), '--quick'], cwd=REPO, env=env,
                         capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    assert [record['bench'] for record in records] == ['first_page', 'rss', 'page_weight',
                                                       'node_rss']
    first_page, rss, weight, node = records
    assert first_page['n'] == 500 and first_page['ms'] > 0 and first_page['baseline_ms'] > 0
    assert math.isclose(first_page['ratio'], first_page['ms'] / first_page['baseline_ms'],
                        rel_tol=0.02)
    assert rss['mb'] > rss['added_mb'] > 0 and rss['baseline_mb'] > 0
    assert 'http.server' in rss['baseline'] and 'http.server' in first_page['baseline']
    assert weight['rows'] == 100 and weight['kb'] > weight['baseline_kb'] * 0.5
    assert (first_page['goal_ms'], node['goal_mb'], weight['goal_kb']) == (300, 40, 300)
    # scripts/test.sh puts memory_node on PATH: the page is measured inside a real node
    assert node['mb'] > node['baseline_mb'] > 0 and 'without web_port' in node['baseline']
    assert [record.get('met') for record in records] == [None] * 4  # quick: no goal judged


QUALITY_SCRIPT = REPO / 'bench' / 'bench_quality.py'
# The planted causes whose messages carry a new id each time (goal UUIDs, serials, addresses).
CHANGING_IDS = {'turtlebot4_lite': 'collision_ahead', 'clearpath_husky': 'ntrip_reconnects',
                'husarion_panther': 'serial_reconnect', 'ur_arm_ros2_control': 'switch_timeout'}


def test_quick_quality_benchmark_traces_every_entry_to_its_planted_cause():
    env = child_env()
    run = subprocess.run([sys.executable, str(QUALITY_SCRIPT), '--quick'], cwd=REPO, env=env,
                         capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    # Issue 38: the negative controls (what must not be called normal) are a profile too.
    assert sorted(record['profile'] for record in records) == sorted(
        [*CHANGING_IDS, 'negative_controls'])
    for record in records:
        assert record['bench'] == 'quality' and (record['days'], record['period_s']) == (3, 10.0)
        assert 0.0 <= record['fault_recall'] <= 1.0 and 0.0 <= record['block_share'] <= 1.0
        assert 0.0 <= record['fault_recall_sections'] <= record['fault_recall'], record
        assert record['chars_per_line'] > 0 and record['tokens_per_line'] > 0, record
        assert 0.0 <= record['coverage_400'] <= 1.0, record
        if record['profile'] == 'negative_controls':
            assert record['faults'] == 4 and record['filed_normal'] == [], record
            continue
        assert record['n'] > 200_000 and record['faults'] >= 7, record
        # A fault under changing ids is one entry, and every entry has a planted cause.
        assert record['by_cause'][CHANGING_IDS[record['profile']]] == 1, record
        assert record['false_entries'] == 0, record
        assert record['evidence_bytes_per_day'] > 0 and record['json_bytes_per_day'] > 0
        assert math.isclose(record['ratio'], record['evidence_bytes_per_day']
                            / record['json_bytes_per_day'], rel_tol=0.01), record
        assert record['dream_s'] > 0 and record['baseline_s'] > 0, record
        assert 0 <= record['by_how_much'] <= record['with_values'], record
        # Learned conditions against the planted ones (bench/quality_conditions.py).
        assert 0.0 <= record['condition_recall'] <= 1.0, record
        assert record['conditions_planted'] == 4 and record['false_conditions'] >= 0, record


EVIDENCE_SCRIPT = REPO / 'bench' / 'bench_evidence_size.py'


def test_quick_evidence_size_benchmark_stores_runs_beside_rows():
    run = subprocess.run([sys.executable, '-P', str(EVIDENCE_SCRIPT), '--quick'], cwd=REPO,
                         env=dict(os.environ), capture_output=True, timeout=240)
    assert run.returncode == 0, run.stderr.decode()
    [record] = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    assert record['bench'] == 'evidence_size' and record['met'] is None, record
    assert (record['statuses'], record['rate_hz'], record['constant_faults']) == (30, 1.0, 3)
    assert record['n'] == 30 * 8_640, record
    assert 0 < record['rows'] < record['baseline_rows'] <= record['n'], record
    assert math.isclose(record['ratio'], record['bytes_per_day'] /
                        record['baseline_bytes_per_day'], rel_tol=0.01), record


SIGNALS_SCRIPT = REPO / 'bench' / 'bench_signals.py'


def test_quick_signals_benchmark_prints_their_bytes_a_day_and_cost():
    run = subprocess.run([sys.executable, '-P', str(SIGNALS_SCRIPT), '--quick', '--hours', '1',
                          '--repeat', '1'], cwd=REPO, env=dict(os.environ), capture_output=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr.decode()
    size, cost = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    assert size['bench'] == 'signals_size' and size['signals'] == 30, size
    assert size['bytes_per_day'] > 0 and size['met'] is None, size  # quick: no goal judged
    assert cost['bench'] == 'signals_cost' and cost['us_per_message'] > 0, cost
    assert cost['baseline_us_per_message'] > 0 and cost['ratio'] > 0, cost


FLEET_SCRIPT = REPO / 'bench' / 'bench_fleet.py'
FLEET_BENCHES = ['fleet_latency', 'fleet_bytes', 'fleet_latency_distribution',
                 'fleet_bytes_distribution', 'fleet_delivery', 'fleet_ingest', 'fleet_rollup']


def test_quick_fleet_benchmark_loses_nothing_through_a_router_kill_and_a_link_outage():
    run = subprocess.run([sys.executable, str(FLEET_SCRIPT), '--quick'], cwd=REPO,
                         env=child_env(), capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    records = [json.loads(line) for line in run.stdout.decode('utf-8').splitlines()]
    assert [record['bench'] for record in records] == FLEET_BENCHES
    latency, size, histogram, per_robot, delivery, ingest, rollup = records
    assert latency['robots'] == 6 and latency['sites'] == 3, latency
    assert 0 < latency['p50_s'] <= latency['p99_s'] and latency['baseline_p99_s'] > 0, latency
    assert math.isclose(latency['ratio'], latency['p99_s'] / latency['baseline_p99_s'],
                        rel_tol=0.05), latency
    assert len(histogram['latencies_ms']) == latency['n'] - latency['not_acked'] > 0, histogram
    assert size['kb_per_robot_day'] > 0 and size['baseline_kb_per_robot_day'] > 0, size
    assert len(per_robot['bytes']) == 6 and min(per_robot['bytes']) > 0, per_robot
    # the router died in one round and a robot was offline for an hour of fleet time ...
    assert latency['fault_round_not_acked'] > 0 and delivery['superseded_by_newer'] > 0
    # ... and every dream is in the store or superseded by a newer one kept there, once
    assert delivery['dreams_made'] == 36 and delivery['pending'] == 0, delivery
    assert delivery['acked'] + delivery['superseded_by_newer'] == delivery['dreams_made']
    assert delivery['dreams_stored'] >= delivery['acked'], delivery  # late acks: superseded
    assert (delivery['lost'], delivery['counted_twice'], delivery['met']) == (0, 0, True)
    assert ingest['n'] == 6 and ingest['rows'] > 300 and ingest['baseline_ms'] > 0, ingest
    assert math.isclose(ingest['ratio'], ingest['baseline_ms'] / ingest['ms'], rel_tol=0.05)
    assert rollup['n'] == 100 and rollup['entries'] == 5000, rollup
    assert rollup['faults_on_several_robots'] > 0 and rollup['baseline_ms'] > 0, rollup
    for record in (latency, size, ingest, rollup):
        assert record['met'] is None, record  # quick: no goal judged
