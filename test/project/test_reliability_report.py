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
The benchmark report.

``bench/run_all.py --quick`` writes a table per script, never hides a failure, and embeds
the confidence plot; runs of some scripts (``--only``) are stored per script and merged, and
goals are judged per script from its full run only.

No timing is asserted: the numbers belong to the machine, the shape belongs to the report.
By default a directory of two tiny scripts is reported, one of which fails, plus the plot.
``--long`` also runs every real ``bench/bench_*.py`` in quick mode (found by
glob, as run_all does; over a minute, which is why it is not in the default run).
"""

import json
import re
import subprocess
import sys

import pytest

from support.modes import LONG
from support.paths import REPO
from support.processes import child_env


RUN_ALL = REPO / 'bench' / 'run_all.py'
sys.path.insert(0, str(REPO / 'bench'))

from run_all import GOALS  # noqa: E402, I100 - bench/ is not a package


def run_all(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN_ALL), '--quick', *map(str, args)],
                          env=dict(child_env(), MPLBACKEND='Agg'), capture_output=True,
                          text=True, timeout=1200)


def sections(markdown: str) -> dict:
    """``## title`` -> the text under it."""
    parts = re.split(r'^## (.+)$', markdown, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.long
@pytest.mark.skipif(not LONG, reason='runs every real benchmark script (over a minute): '
                                     'only with --long')
@pytest.mark.timeout(1500)
def test_run_all_quick_writes_a_table_per_script(tmp_path):
    output = tmp_path / 'BENCHMARKS.md'
    plot = tmp_path / 'docs' / 'confidence.png'
    done = run_all('--output', output, '--plot', plot, '--results-dir', tmp_path / 'results')
    markdown = output.read_text(encoding='utf-8')
    found = sections(markdown)
    scripts = sorted(path.name for path in (REPO / 'bench').glob('bench_*.py'))
    assert scripts and set(scripts) <= set(found)
    for name in scripts:
        rows = [line for line in found[name].splitlines() if line.startswith('| ')]
        assert rows[0].startswith('| bench |'), name
        assert len(rows) >= 2, f'{name} has an empty table'
        # Every real benchmark runs through: a FAILED row here is a broken benchmark.
        assert 'FAILED' not in found[name], found[name][-3000:]
    machine = found['Machine']
    for key in ('cpu', 'cores', 'ram', 'python', 'os'):
        assert re.search(rf'^\| {key} \| \S', machine, flags=re.M), key
    assert sorted(path.name for path in (tmp_path / 'results').iterdir()) == sorted(
        name.replace('.py', '.quick.json') for name in scripts)
    assert plot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert '![Confidence over simulated weeks](docs/confidence.png)' in markdown
    assert done.returncode == 0, done.stderr


def test_a_failing_script_gets_a_row_with_its_stderr(tmp_path):
    bench = tmp_path / 'bench'
    bench.mkdir()
    (bench / 'bench_good.py').write_text(
        '"""A good one."""\nimport json, sys\n'
        'print(json.dumps({"bench": "add", "n": 10, "ms": 1.5, "baseline_ms": 3.0, '
        '"ratio": 0.5, "goal_ms": 2, "quick": "--quick" in sys.argv}))\n')
    (bench / 'bench_bad.py').write_text(
        'import json, sys\nprint(json.dumps({"bench": "half", "n": 1, "ms": 2.0}))\n'
        'print("Traceback: something broke", file=sys.stderr)\nsys.exit(3)\n')
    (bench / 'helper.py').write_text('raise SystemExit("not a benchmark")\n')
    output = tmp_path / 'report' / 'BENCHMARKS.md'
    plot = tmp_path / 'confidence.png'
    done = run_all('--bench-dir', bench, '--output', output, '--plot', plot)
    assert done.returncode == 1
    markdown = output.read_text(encoding='utf-8')
    found = sections(markdown)
    assert set(found) == {'Summary', 'Machine', 'Scripts', 'bench_bad.py', 'bench_good.py',
                          'Confidence over time'}
    assert plot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert '![Confidence over simulated weeks](../confidence.png)' in markdown
    assert '**1 script(s) failed: bench_bad.py.**' in markdown
    good = found['bench_good.py']
    assert 'A good one.' in good
    assert '| bench | n | ms | quick | baseline_ms | ratio | goal_ms |' in good
    assert '| add | 10 | 1.5 | yes | 3 | 0.5 | 2 |' in good
    bad = found['bench_bad.py']
    assert '| half | 1 | 2 |' in bad
    assert '**FAILED**' in bad and 'exit status 3' in bad
    assert 'Traceback: something broke' in bad
    assert re.search(r'^\| bench_bad\.py \| quick \| \w{12}.* \| FAILED: exit status 3 \|$',
                     found['Scripts'], flags=re.M), found['Scripts']
    stored = json.loads((bench / 'results' / 'bench_bad.quick.json').read_text())
    assert stored['failure'] == 'exit status 3' and stored['records'] == [
        {'bench': 'half', 'n': 1, 'ms': 2.0}]
    assert 'Traceback: something broke' in stored['stderr_tail']
    # The goals come first, every one of them, and none is judged from a run that did not
    # measure it at full size.
    assert markdown.index('## Summary') < markdown.index('## Machine')
    goals = [line for line in found['Summary'].splitlines() if line.startswith('| ')][1:]
    assert len(goals) == len(GOALS)
    for goal, line in zip(GOALS, goals):
        assert line.startswith(f'| {goal["goal"]} |'), line
        assert '| — | — | not run at full size |' in line and line.endswith('| not run |')


def test_goals_are_judged_from_the_lines_and_long_outputs_go_to_json(tmp_path):
    bench = tmp_path / 'bench'
    bench.mkdir()
    (bench / 'bench_cli.py').write_text(
        'import json\n'
        'print(json.dumps({"bench": "cli_help", "ms": 80.0, "baseline": "python -c pass", '
        '"baseline_ms": 20.0, "ratio": 4.0, "goal_ms": 100, "met": True}))\n'
        'print(json.dumps({"bench": "cli_show", "n": 10000, "ms": 300.0, "baseline": '
        '"python -c pass", "baseline_ms": 20.0, "ratio": 15.0, "goal_ms": 250, "met": False}))\n'
        'print(json.dumps({"bench": "cli_recall", "n": 1000, "ms": 90.0, "baseline": '
        '"python -c pass", "baseline_ms": 20.0, "ratio": 4.5, "goal_ms": 200, "met": None}))\n')
    (bench / 'bench_federation.py').write_text(
        'import json\n'
        'for i in range(30):\n'
        '    print(json.dumps({"bench": "federation_round", "topology": "random", "round": i, '
        '"sync_bytes": 100 + i}))\n'
        'print(json.dumps({"bench": "federation_summary", "topology": "random", '
        '"robots": 50, "peer_entries_max": 90, "peer_entries_bound": 100, '
        '"ratio_last_round": 0.01}))\n')
    output = tmp_path / 'BENCHMARKS.md'
    done = subprocess.run([sys.executable, str(RUN_ALL), '--bench-dir', bench, '--output',
                           output, '--no-plot'], env=child_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    markdown = output.read_text(encoding='utf-8')
    found = sections(markdown)
    summary = {line.split(' | ')[0][2:]: line for line in found['Summary'].splitlines()
               if line.startswith('| ')}
    goal = {item['bench']: item['goal'] for item in GOALS}  # a goal's text by its bench
    assert summary[goal['cli_help']].startswith(
        f'| {goal["cli_help"]} | 80.0 ms | 20.0 ms python -c pass (x4) | yes | bench_cli.py |')
    assert '| 300.0 ms | 20.0 ms python -c pass (x15) | **no** |' in summary[goal['cli_show']]
    assert 'not judged: measured at another size' in summary[goal['cli_recall']]
    federation = [line for key, line in summary.items() if '(random, 50 robots)' in key]
    assert len(federation) == 1 and '| 90 peer entries a robot max |' in federation[0]
    assert '| yes |' in federation[0]
    # 31 lines: the report keeps the summary line, the JSON beside it keeps all of them.
    table = [line for line in found['bench_federation.py'].splitlines() if line.startswith('| ')]
    assert len(table) == 2 and 'federation_summary' in table[1]
    assert '| round |' not in table[0] and 'sync_bytes' not in table[0]
    assert '[bench_federation.json](bench/results/bench_federation.json)' in \
        found['bench_federation.py']
    records = json.loads((bench / 'results' / 'bench_federation.json').read_text())['records']
    assert len(records) == 31 and records[0]['bench'] == 'federation_round'
    assert 'bench_cli.json' not in found['bench_cli.py']


MEMORY_FILE_LINES = """import json, sys
n = 1000 if '--quick' in sys.argv else 10000
met = None if '--quick' in sys.argv else True
for line in ({"bench": "goal", "n": n, "ms": 40.0, "ratio": 1.5, "goal_ms": 100, "met": met,
              "ratio_met": met},
             {"bench": "scaling", "n": n, "from_n": n // 10, "ratio": 1.1, "met": met},
             {"bench": "peak_memory", "n": 2000 if n == 1000 else 200000, "mb": 120.0,
              "baseline_mb": 30.0, "file_mb": 40.0, "met": met}):
    print(json.dumps(line))
"""
CLI_LINES = """import json, sys
print(json.dumps({"bench": "cli_help", "ms": 80.0, "baseline": "python -c pass",
                  "baseline_ms": 20.0, "ratio": 4.0, "goal_ms": 100, "met": None,
                  "quick": "--quick" in sys.argv}))
"""
QUALITY_LINES = """import json
for profile, recall in (("rover", 1.0), ("arm", 0.9)):
    print(json.dumps({"bench": "quality", "profile": profile, "days": 30, "period_s": 1.0,
                      "n": 100, "fault_recall": recall, "faults": 10, "false_entries": 1,
                      "false_entries_per_month": 1.0, "entries_per_cause": 1.0,
                      "by_cause": {"a": 1, "b": 1}, "labelled": 2, "conditions": 2,
                      "evidence_bytes_per_day": 3000000, "json_bytes_per_day": 6000000,
                      "ratio": 0.5, "dream_s": 0.5, "dream_s_max": 2.5, "baseline_s": 0.1,
                      "dream_ratio": 5.0}))
"""


def test_runs_of_some_scripts_merge_and_only_full_runs_are_judged(tmp_path):
    bench = tmp_path / 'bench'
    bench.mkdir()
    (bench / 'bench_memory_file.py').write_text('"""The memory file."""\n' + MEMORY_FILE_LINES)
    (bench / 'bench_cli.py').write_text(CLI_LINES)
    (bench / 'bench_quality.py').write_text(QUALITY_LINES)
    (bench / 'bench_node.py').write_text(  # prints no CPU share yet
        'import json\nprint(json.dumps({"bench": "rss_breakdown", "n": 1, "mb": 50.0}))\n')
    (bench / 'bench_web.py').write_text('raise SystemExit("never run here")\n')
    output = tmp_path / 'BENCHMARKS.md'

    def merge(*args) -> str:
        done = subprocess.run([sys.executable, str(RUN_ALL), '--bench-dir', bench, '--output',
                               output, '--no-plot', *map(str, args)], env=child_env(),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return output.read_text(encoding='utf-8')

    merge('--only', 'bench_memory_file.py', '--only', 'bench_quality', '--only', 'bench_node.py')
    merge('--quick', '--only', 'bench_cli.py')
    # A later quick run of a script with a full result is kept but does not replace it.
    markdown = merge('--quick', '--only', 'bench_memory_file.py')
    assert sorted(path.name for path in (bench / 'results').iterdir()) == [
        'bench_cli.quick.json', 'bench_memory_file.json', 'bench_memory_file.quick.json',
        'bench_node.json', 'bench_quality.json']
    assert merge('--render-only') == markdown
    found = sections(markdown)
    goals = {line.split(' | ')[0][2:]: line for line in found['Summary'].splitlines()
             if line.startswith('| ')}
    text = {}  # the first goal of each line
    for goal in GOALS:
        text.setdefault((goal['bench'], goal['script']), goal['goal'])
    load_save = goals[text['goal', 'bench_memory_file.py']]
    assert '| 40.0 ms | x1.5 of libyaml load + dump | yes | bench_memory_file.py | full, ' in \
        load_save and ', load ' in load_save
    assert '| 120.0 MB | 30.0 MB a child only reading the 40 MB file | yes |' in \
        goals[text['peak_memory', 'bench_memory_file.py']]
    help_line = goals[text['cli_help', 'bench_cli.py']]
    assert '| 80.0 ms (quick run) | 20.0 ms python -c pass (x4) | not run at full size | ' \
           'bench_cli.py | quick, ' in help_line
    assert '| — | — | not run at full size | bench_web.py | not run |' in \
        goals[text['first_page', 'bench_web.py']]
    assert '| not measured: the script prints no such line | bench_node.py | full, ' in \
        goals[text['cpu_1hz', 'bench_node.py']]
    quality = [line for key, line in goals.items() if 'bench_quality.py' in line]
    assert len(quality) == len({goal['goal'] for goal in GOALS
                                if goal['script'] == 'bench_quality.py'}) >= 7
    verdicts = {key: line.split(' | ')[3] for key, line in goals.items() if line in quality}
    assert verdicts == {
        'Memory quality: fault recall >= 0.95 on every profile': '**no**',
        'Memory quality: <= 1 false entry per profile-month': 'yes',
        'Memory quality: 1.0 entries per cause': 'yes',
        'Memory quality: every routine or constant condition labelled': 'yes',
        'Evidence <= 5 MB per robot-day at 1 Hz': 'yes',
        "A night's dream <= 2 s (median a profile)": 'yes',
        # The test's result file predates the learned conditions and the block's figures:
        # their goals are not judged.
        'Learned conditions: recall >= 0.9, no false condition, all advice safe': 'not judged',
        'Block lines: mean <= 200 characters on every profile': 'not judged',
        'Block at 400 tokens: every fault and condition, or names what it left out':
            'not judged',
        'No fault labelled normal by the dream': 'not judged'}
    assert 'min 0.9 over 2 profiles | 20 planted recurring faults' in \
        goals['Memory quality: fault recall >= 0.95 on every profile']
    # Every script has its row: how and when it ran, on which commit, the load.
    rows = [line for line in found['Scripts'].splitlines() if line.startswith('| ')][1:]
    scripts = {line.split(' | ')[0][2:]: line.split(' | ')[1:] for line in rows}
    assert set(scripts) == {'bench_cli.py', 'bench_memory_file.py', 'bench_node.py',
                            'bench_quality.py', 'bench_web.py'}
    mode, commit, started, seconds, load, status = scripts['bench_memory_file.py']
    assert mode == 'full' and re.fullmatch(r'[0-9a-f]{12}( \+modified)?', commit)
    assert re.fullmatch(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC', started) and float(seconds) >= 0
    assert re.fullmatch(r'[\d.]+/[\d.]+/[\d.]+ → [\d.]+/[\d.]+/[\d.]+', load)
    assert status == 'ok |' and scripts['bench_cli.py'][0] == 'quick'
    assert scripts['bench_web.py'] == ['not run', '—', '—', '—', '—', 'no result stored |']
    assert '`python bench/run_all.py --only bench_web.py` runs it.' in found['bench_web.py']
    assert 'The memory file.' in found['bench_memory_file.py']
    assert '(full run) on commit' in found['bench_memory_file.py']
    assert '| goal | 10,000 |' in found['bench_memory_file.py']
    stored = json.loads((bench / 'results' / 'bench_memory_file.json').read_text())
    assert stored['command'].endswith('bench_memory_file.py') and stored['mode'] == 'full'
    assert stored['ended'] >= stored['started'] and len(stored['load_end']) == 3
    assert stored['machine']['cores'] > 0 and stored['failure'] is None
    assert [record['bench'] for record in stored['records']] == ['goal', 'scaling',
                                                                 'peak_memory']


def test_plots_are_drawn_from_stored_results_and_survive_a_run_of_another_script(tmp_path):
    bench = tmp_path / 'bench'
    bench.mkdir()
    rows = [{'bench': 'load_save', 'n': n, 'ms': n / 200, 'baseline_ms': n / 4,
             'baseline': 'yaml.load + yaml.dump'} for n in (100, 1000, 10000)]
    (bench / 'bench_memory_file.py').write_text(
        'import json\n' + ''.join(f'print(json.dumps({row!r}))\n' for row in rows))
    (bench / 'bench_cli.py').write_text(CLI_LINES)
    output = tmp_path / 'BENCHMARKS.md'
    plot_dir = tmp_path / 'docs' / 'bench'

    def merge(*args) -> str:
        done = subprocess.run([sys.executable, str(RUN_ALL), '--bench-dir', bench, '--output',
                               output, '--plot', tmp_path / 'docs' / 'confidence.png',
                               '--plot-dir', plot_dir, *map(str, args)], env=child_env(),
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return output.read_text(encoding='utf-8')

    merge('--only', 'bench_memory_file.py')
    (plot_dir / 'memory-file-scaling.png').unlink()
    markdown = merge('--only', 'bench_cli.py')  # the memory file's plot is drawn again
    png = plot_dir / 'memory-file-scaling.png'
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    found = sections(markdown)
    assert '![Memory file: load + save](docs/bench/memory-file-scaling.png)' in \
        found['Plot: Memory file: load + save']
    # A plot that a run of some scripts cannot draw is said to be missing, never dropped.
    assert '**Not drawn:** no docs/confidence.png' in found['Confidence over time']
    assert merge('--render-only', '--no-plot').count('## Plot') == 0
