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
the confidence plot.

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

from conftest import REPO
from modes import LONG
from processes import child_env


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
    done = run_all('--output', output, '--plot', plot)
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
    for key in ('cpu', 'cores', 'ram', 'python', 'os', 'date'):
        assert re.search(rf'^\| {key} \| \S', machine, flags=re.M), key
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
    assert '| bench_bad.py | 1 |' in found['Scripts'] and 'FAILED: exit status 3' in \
        found['Scripts']
    # The goals come first, every one of them, and none is judged from a run that did not
    # measure it.
    assert markdown.index('## Summary') < markdown.index('## Machine')
    goals = [line for line in found['Summary'].splitlines() if line.startswith('| ')][1:]
    assert len(goals) == len(GOALS)
    for goal, line in zip(GOALS, goals):
        assert line.startswith(f'| {goal["goal"]} |'), line
        assert 'not measured: the script was not run' in line and '| yes |' not in line


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
    detail = tmp_path / 'BENCHMARKS.bench_federation.json'
    assert f'[{detail.name}]({detail.name})' in found['bench_federation.py']
    records = json.loads(detail.read_text(encoding='utf-8'))
    assert len(records) == 31 and records[0]['bench'] == 'federation_round'
    assert not (tmp_path / 'BENCHMARKS.bench_cli.json').exists()
