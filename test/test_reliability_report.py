"""The benchmark report: ``bench/run_all.py --quick`` writes a table per script, never hides
a failure, and embeds the confidence plot.

No timing is asserted: the numbers belong to the machine, the shape belongs to the report.
By default a directory of two tiny scripts is reported, one of which fails, plus the plot.
``ROBOT_MEMORY_LONG=1`` also runs every real ``bench/bench_*.py`` in quick mode (found by
glob, as run_all does; over a minute, which is why it is not in the default run).
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from test_crash_safety import child_env

REPO = pathlib.Path(__file__).resolve().parents[1]
RUN_ALL = REPO / 'bench' / 'run_all.py'


def run_all(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN_ALL), '--quick', *map(str, args)],
                          env=dict(child_env(), MPLBACKEND='Agg'), capture_output=True,
                          text=True, timeout=1200)


def sections(markdown: str) -> dict:
    """``## title`` -> the text under it."""
    parts = re.split(r'^## (.+)$', markdown, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.skipif(os.environ.get('ROBOT_MEMORY_LONG') != '1',
                    reason='runs every real benchmark script (over a minute); set '
                           'ROBOT_MEMORY_LONG=1')
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
    assert set(found) == {'Machine', 'Summary', 'bench_bad.py', 'bench_good.py',
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
    assert '| bench_bad.py | 1 |' in found['Summary'] and 'FAILED: exit status 3' in \
        found['Summary']
