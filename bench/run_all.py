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
Run every benchmark under bench/ and write BENCHMARKS.md: one command, one report.

Every ``bench/bench_*.py`` is found by glob and run with this interpreter (``--quick`` is
passed through). Each prints one JSON object a line with at least ``bench`` and its
figures (``n``, ``ms``, ``rate``...), usually ``baseline_*``, ``ratio`` and goal fields.
The report opens with the goals of the project's issues, each with its figure, the baseline
measured in the same run and whether it was met (``GOALS`` below, the one place they are
declared), then the machine (CPU model, cores, RAM, Python, OS, date), then one table per
script: every figure, the ratio to its baseline and the goals, as printed. A script that
prints summary lines (``*_summary``) or more than ``DETAIL_ROWS`` lines gets only those
summary lines (or its first ``DETAIL_ROWS``) in the report and every line in
``<report>.<script>.json`` beside it. A script that
fails (non-zero exit, or a line that is not a JSON object) gets a row saying so with the
tail of its stderr; nothing is hidden. ``bench_node.py`` runs the installed
``memory_node`` over ROS 2, so run this after ``source scripts/env.sh`` (and
``scripts/setup.sh`` after editing sources); without ``memory_node`` on PATH it fails and
says so. The confidence plot (``bench/plot_confidence.py``)
is drawn and embedded unless ``--no-plot``.

Usage: ``python bench/run_all.py [--quick] [--output BENCHMARKS.md] [--plot PNG]
[--no-plot] [--bench-dir DIR] [--timeout SECONDS]``. Exit status 1 when a script failed.
"""

import argparse
import datetime as dt
import importlib.util
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
HERE = REPO / 'bench'


def child_pythonpath(env: dict) -> str:
    """
    PYTHONPATH for a benchmark: the checkout only when no robot_memory is installed.

    An installed package (after ``source scripts/env.sh``) carries the generated
    ``robot_memory.msg`` / ``.srv``, which the bare source tree lacks, so it must win.
    """
    if importlib.util.find_spec('robot_memory') is not None:
        return env.get('PYTHONPATH', '')
    return os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))


STDERR_TAIL_LINES = 15
# Column order: identity first, then figures, then the comparison with baseline and goals.
FIRST = ('bench', 'n')
LAST_PREFIXES = ('baseline', 'ratio', 'goal', 'met')
DETAIL_ROWS = 20


def _ms(value) -> str:
    return '—' if value is None else f'{value:,.1f} ms' if value < 1000 else f'{value:,.0f} ms'


def _mb(value) -> str:
    return '—' if value is None else f'{value:,.1f} MB'


def _goal(text, script, bench, where=None, figure=None, baseline=None, met=None) -> dict:
    return {'goal': text, 'script': script, 'bench': bench, 'where': where or {},
            'figure': figure, 'baseline': baseline,
            'met': met or (lambda record: record.get('met'))}


def _cli(text, bench, where=None) -> dict:
    return _goal(text, 'bench_cli.py', bench, where, lambda r: _ms(r['ms']),
                 lambda r: f'{_ms(r["baseline_ms"])} {r["baseline"]} (x{r["ratio"]:g})')


def _federation(topology) -> dict:
    return _goal(f'Peer context stays bounded as the fleet exchanges ({topology}, 50 robots)',
                 'bench_federation.py', 'federation_summary',
                 {'topology': topology, 'robots': 50},
                 lambda r: f'{r["peer_entries_max"]:,} peer entries a robot max',
                 lambda r: f'bound {r["peer_entries_bound"]:,}; bytes sent x'
                           f'{r["ratio_last_round"]:g} of sending the whole file',
                 lambda r: r['peer_entries_max'] <= r['peer_entries_bound'])


# Every goal the project's issues set, declared once: the summary at the top of BENCHMARKS.md
# is computed from these and the scripts' lines on every run. ``bench`` (and ``n`` when the
# goal is for one size) picks the line; ``figure`` and ``baseline`` say how to show it;
# ``met`` reads the verdict (by default the line's own ``met``, the script owning the bar).
GOALS = [
    _cli('`robot-memory --help` < 100 ms, whole process', 'cli_help'),
    _cli('`robot-memory show` on 10,000 entries < 250 ms, whole process', 'cli_show',
         {'n': 10_000}),
    *[_goal(f'`robot-memory show` of a file {who} <= 2x our own form, 10,000 entries',
            'bench_cli.py', 'cli_show_other_form', {'n': 10_000, 'form': form},
            lambda r: f'{_ms(r["ms"])} (x{r["ratio"]:g})',
            lambda r: f'{_ms(r["baseline_ms"])} {r["baseline"]}')
      for who, form in (('OpenCastor wrote', 'opencastor'), ('written by hand', 'by_hand'),
                        ('OpenCastor wrote, after one of our writes', 'opencastor_written'))],
    _cli('`robot-memory recall` over 10,000 typed records < 200 ms, whole process',
         'cli_recall', {'n': 10_000}),
    _cli('`robot-memory mcp` answers `initialize` < 300 ms from start', 'cli_mcp_initialize'),
    _goal('Load + save of 10,000 entries, whole process, >= 10x faster than OpenCastor',
          'bench_cli.py', 'load_save_process', {'n': 10_000},
          lambda r: f'{_ms(r["ms"])}' + (f' ({r["speedup"]:g}x faster)' if r.get('speedup')
                                         else ''),
          lambda r: (f'{_ms(r["baseline_ms"])} OpenCastor load_memory + save_memory'
                     if r.get('baseline_ms') else r.get('note', 'not measured'))),
    _goal('Load + save of 10,000 entries in-process < 100 ms', 'bench_memory_file.py', 'goal',
          {'n': 10_000}, lambda r: _ms(r['ms']),
          lambda r: f'x{r["ratio"]:g} of libyaml load + dump'),
    _goal('... and at most 2x bare libyaml load + dump', 'bench_memory_file.py', 'goal',
          {'n': 10_000},
          lambda r: f'x{r["ratio"]:g}', lambda r: 'libyaml CSafeLoader + CSafeDumper',
          lambda r: r.get('ratio_met')),
    _goal('... and at most 2x the time per entry at 10x the entries (linear)',
          'bench_memory_file.py', 'scaling', {}, lambda r: f'x{r["ratio"]:g} per entry',
          lambda r: f'load + save per entry at {r["from_n"]:,} entries'),
    _goal('Peak memory of load + save of 200,000 entries < 500 MB', 'bench_memory_file.py',
          'peak_memory', {'n': 200_000}, lambda r: _mb(r['mb']),
          lambda r: f'{_mb(r["baseline_mb"])} a child only reading the {r["file_mb"]:g} MB file'),
    _goal('Evidence ingestion >= 50,000 observations/s', 'bench_autodream.py', 'ingest',
          {'n': 200_000}, lambda r: f'{r["rate"]:,.0f}/s',
          lambda r: f'{_ms(r["baseline_ms"])} bare sqlite3 executemany (x{r["ratio"]:g})',
          lambda r: r['rate'] >= 50_000),
    _goal('robot-memory replay takes >= 200,000 DiagnosticStatus/s from an MCAP',
          'bench_replay.py', 'replay_mcap', {}, lambda r: f'{r["statuses_per_s"]:,.0f}/s',
          lambda r: f'{r["baseline_per_s"]:,.0f}/s rosbags bare read + decode (x{r["ratio"]:g})',
          lambda r: r['statuses_per_s'] >= 200_000),
    _goal("... and >= 0.5x the library's bare read-and-decode of the same bag",
          'bench_replay.py', 'replay_mcap', {}, lambda r: f'x{r["ratio"]:g}',
          lambda r: f'{r["baseline_per_s"]:,.0f}/s rosbags Reader + deserialize_cdr',
          lambda r: r['ratio'] >= 0.5),
    _goal('robot-memory replay resident memory flat as the bag grows', 'bench_replay.py',
          'replay_rss', {}, lambda r: f'{r["large_mb"]:g} MB on {r["large_bag_mb"]:g} MB '
          f'(x{r["ratio"]:g})', lambda r: f'{r["mb"]:g} MB on a bag {r["large_n"] // r["n"]}x '
          'smaller', lambda r: r['ratio'] <= 1.1),
    _goal('A dream over 1,000,000 observations < 10 s', 'bench_autodream.py', 'dream',
          {'n': 1_000_000}, lambda r: _ms(r['ms']),
          lambda r: f'{_ms(r["baseline_ms"])} one GROUP BY (x{r["ratio"]:g})',
          lambda r: r['ms'] < 10_000),
    _goal('memory_node takes in >= 0.8x what a bare rclpy subscriber takes', 'bench_node.py',
          'ingest', {}, lambda r: f'{r["rate"]:,.0f} msgs/s (x{r["ratio"]:g})',
          lambda r: f'{r["baseline_rate"]:,.0f} msgs/s bare subscriber'),
    _goal('~/get_context callback p99 < 5 ms (10,000 entries)', 'bench_node.py',
          'get_context_in_node', {}, lambda r: f'p99 {_ms(r["p99_ms"])}',
          lambda r: f'p99 {_ms(r["baseline_p99_ms"])} scan without the index'),
    _goal('memory_node resident memory under a sustained flood < 100 MB and flat',
          'bench_node.py', 'rss', {},
          lambda r: f'max {_mb(r["max_mb"])}, {r["slope_mb_per_min"]:+g} MB/min',
          lambda r: f'max {_mb(r["baseline_max_mb"])} bare rclpy subscriber'),
    _goal('Keyword recall p50 < 10 ms over 100,000 records', 'bench_recall.py',
          'recall_keyword', {'n': 100_000}, lambda r: f'p50 {_ms(r["p50_ms"])}',
          lambda r: f'p50 {_ms(r["baseline_p50_ms"])} bare FTS5 query (x{r["ratio"]:g})'),
    _goal('Per-item learn >= 500/s keyword only, over 100,000 records', 'bench_recall.py',
          'learn_rate', {'n': 100_000, 'embedder': 'none'}, lambda r: f'{r["per_s"]:,.0f}/s',
          lambda r: f'{r["baseline_per_s"]:,.0f}/s bare FTS5 insert + commit '
                    f'(x{r["ratio"]:g} slower)'),
    _goal('Per-item learn >= 100/s with the semantic model, over 100,000 records',
          'bench_recall.py', 'learn_rate', {'n': 100_000, 'embedder': 'minilm-l6-v2-int8'},
          lambda r: f'{r["per_s"]:,.0f}/s',
          lambda r: f'{r["baseline_per_s"]:,.0f}/s bare FTS5 insert + commit '
                    f'(x{r["ratio"]:g} slower)'),
    _goal('Keyword recall with 1,000 of 10,000 records encrypted p50 <= 2x unencrypted',
          'bench_encryption.py', 'recall_sealed', {'n': 10_000},
          lambda r: f'p50 {_ms(r["p50_ms"])} (x{r["ratio"]:g})',
          lambda r: f'p50 {_ms(r["baseline_p50_ms"])} the same records unencrypted'),
    _federation('random'),
    _federation('mesh'),
    _goal('Operator page: first Entries page of 10,000 entries <= 300 ms server time',
          'bench_web.py', 'first_page', {'n': 10_000},
          lambda r: f'{_ms(r["ms"])} (after the file changed {_ms(r["reparse_ms"])})',
          lambda r: f'{_ms(r["baseline_ms"])} the same bytes from python -m http.server'),
    _goal('Operator page: resident memory beside the node <= 40 MB', 'bench_web.py',
          'node_rss', {'n': 10_000},
          lambda r: f'+{_mb(r.get("added_mb"))} ({_mb(r["mb"])} memory_node with the page)',
          lambda r: f'{_mb(r["baseline_mb"])} memory_node without it'),
    _goal('Operator page: page weight <= 300 KB', 'bench_web.py', 'page_weight', {'n': 10_000},
          lambda r: f'{r["kb"]:,.1f} KB',
          lambda r: f'{r["baseline_kb"]:,.1f} KB the memory file bytes of the same rows'),
]


def machine() -> dict:
    """CPU model, cores, RAM, Python, OS and date of this run."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        ram = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    except (ValueError, OSError, AttributeError):
        pass
    return {
        'cpu': cpu,
        'cores': os.cpu_count(),
        'ram': f'{ram / (1 << 30):.1f} GiB' if ram else 'unknown',
        'python': f'{platform.python_implementation()} {platform.python_version()}',
        'os': f'{platform.system()} {platform.release()} ({platform.machine()})',
        'date': dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
    }


def run_script(script: pathlib.Path, quick: bool, timeout: float) -> dict:
    """Run one benchmark; returns its records, or why it failed with its stderr tail."""
    env = dict(os.environ)
    env['PYTHONPATH'] = child_pythonpath(env)
    env.setdefault('MPLBACKEND', 'Agg')
    command = [sys.executable, str(script)] + (['--quick'] if quick else [])
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode(errors='replace') if isinstance(expired.stderr, bytes) \
            else (expired.stderr or '')
        return {'records': [], 'seconds': timeout,
                'failure': f'timed out after {timeout:.0f} s', 'stderr': stderr}
    seconds = time.perf_counter() - started
    records, bad = [], []
    for number, line in enumerate(done.stdout.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(number)
            continue
        if isinstance(record, dict) and 'bench' in record:
            records.append(record)
        else:
            bad.append(number)
    failure = None
    if done.returncode != 0:
        failure = f'exit status {done.returncode}'
    elif bad:
        failure = f'stdout lines {", ".join(map(str, bad[:5]))} are not JSON objects with "bench"'
    elif not records:
        failure = 'printed no result'
    return {'records': records, 'seconds': seconds, 'failure': failure, 'stderr': done.stderr}


def _cell(value) -> str:
    if value is None:
        return '—'
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, float):
        text = f'{value:,.3f}'.rstrip('0').rstrip('.') if abs(value) < 1000 else f'{value:,.0f}'
        return text
    if isinstance(value, int):
        return f'{value:,}'
    if isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False)
    return str(value).replace('|', '\\|').replace('\n', ' ')


def _columns(records: list) -> list:
    seen = []
    for record in records:
        for key in record:
            if key not in seen:
                seen.append(key)
    first = [key for key in FIRST if key in seen]
    last = [key for key in seen if key.startswith(LAST_PREFIXES) and key not in first]
    middle = [key for key in seen if key not in first and key not in last]
    return first + middle + last


def table(result: dict, detail: str = None) -> list:
    """
    Return the Markdown lines of one script's table; a failure row when it failed.

    With ``detail`` (the name of the JSON file holding every line) only the summary lines
    are shown, with the columns they use.
    """
    records = result['records']
    if detail is not None:
        records = [record for record in records if str(record['bench']).endswith('_summary')] \
            or records[:DETAIL_ROWS]
    columns = _columns(records) if records else ['bench', 'result']
    lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
    for record in records:
        lines.append('| ' + ' | '.join(_cell(record.get(key)) for key in columns) + ' |')
    if detail is not None:
        lines += ['', f'{len(records)} summary lines of {len(result["records"])}; every line '
                  f'is in [{detail}]({detail}).']
    if result['failure']:
        tail = '\n'.join(result['stderr'].strip().splitlines()[-STDERR_TAIL_LINES:])
        row = ['**FAILED**'] + [''] * (len(columns) - 1)
        row[-1 if len(columns) > 1 else 0] += f'{result["failure"]}; see the stderr tail below'
        lines.append('| ' + ' | '.join(row) + ' |')
        lines += ['', f'**{result["name"]} failed: {result["failure"]}.** Last lines of '
                  'its stderr:', '', '```', tail or '(stderr was empty)', '```']
    return lines


def goal_lines(results: list, quick: bool) -> list:
    """Markdown lines of the goals table: each goal, its figure, the baseline and the verdict."""
    by_script = {result['name']: result for result in results}
    lines = ['| goal | figure | baseline (same run) | met | script |', '|---|---|---|---|---|']
    for goal in GOALS:
        result = by_script.get(goal['script'])
        candidates = [record for record in (result or {}).get('records', [])
                      if record.get('bench') == goal['bench']]
        exact = [record for record in candidates
                 if all(record.get(key) == value for key, value in goal['where'].items())]
        record = (exact or candidates or [None])[-1]
        if record is None:
            why = ('not measured: the script was not run' if result is None else
                   f'not measured: {result["failure"] or "no such line"}')
            cells = ['—', '—', why]
        else:
            try:
                figure, baseline = goal['figure'](record), goal['baseline'](record)
                verdict = goal['met'](record)
            except (KeyError, TypeError, ValueError) as error:
                figure, baseline, verdict = f'unreadable line ({error!r})', '—', None
            if not exact:
                shown = ', '.join(f'{key}={record.get(key)!r}' for key in goal['where'])
                figure += f' (at {shown})'
                met = 'not judged: measured at another size'
            elif quick:
                met = 'not judged: quick run'
            else:
                met = {True: 'yes', False: '**no**'}.get(verdict, 'not judged')
            cells = [figure, baseline, met]
        lines.append('| ' + ' | '.join([_cell(goal['goal'])] + [_cell(cell) for cell in cells]
                                       + [goal['script']]) + ' |')
    return lines


def _has_detail(records: list) -> bool:
    return len(records) > DETAIL_ROWS or any(str(record['bench']).endswith('_summary')
                                             for record in records)


def detail_path(output: pathlib.Path, name: str) -> pathlib.Path:
    """Where every line of a long script's output is kept, beside the report."""
    return output.with_name(f'{output.stem}.{pathlib.Path(name).stem}.json')


def _doc_line(script: pathlib.Path) -> str:
    try:
        text = script.read_text(encoding='utf-8')
    except OSError:
        return ''
    if text.startswith('"""'):
        return text[3:].split('\n', 1)[0].strip().rstrip('"').strip()
    return ''


def render(results: list, info: dict, quick: bool, plot: pathlib.Path,
           output: pathlib.Path) -> str:
    """Return the whole BENCHMARKS.md text."""
    lines = ['# Benchmarks', '',
             'Written by `python bench/run_all.py' + (' --quick' if quick else '') + '`; '
             'every `bench/bench_*.py` was run on the machine below. Times are medians in '
             'milliseconds unless a column says otherwise; `ratio` is the figure divided '
             'by the baseline the script measured in the same run on the same data (for a '
             'time below 1 is faster than the baseline, for a rate such as `ingest` above 1 '
             'is); goal columns state the target.', '',
             '## Summary', '']
    if quick:
        lines += ['**Quick run** (`--quick`: small sizes, few repeats, as the smoke tests run '
                  "it): the figures show the shape of the report, not the goals' conditions, "
                  'and no goal is judged.', '']
    lines += ["Each goal set in the project's issues: the figure, the baseline the script "
              'measured in the same run, and whether it was met (declared in '
              "`bench/run_all.py`, `GOALS`; judged only in a full run at the goal's size). "
              'The detail follows.', '']
    lines += goal_lines(results, quick)
    lines += ['', '## Machine', '', '| | |', '|---|---|']
    for key in ('cpu', 'cores', 'ram', 'python', 'os', 'date'):
        lines.append(f'| {key} | {_cell(info[key])} |')
    lines.append(f'| mode | {"quick (--quick)" if quick else "full"} |')
    failed = [result['name'] for result in results if result['failure']]
    lines += ['', '## Scripts', '', '| script | records | seconds | status |',
              '|---|---|---|---|']
    for result in results:
        status = f'FAILED: {result["failure"]}' if result['failure'] else 'ok'
        lines.append(f'| {result["name"]} | {len(result["records"])} | '
                     f'{result["seconds"]:.1f} | {_cell(status)} |')
    for result in results:
        lines += ['', f'## {result["name"]}', '']
        about = _doc_line(result['script'])
        if about:
            lines += [about, '']
        long = _has_detail(result['records'])
        lines += table(result, detail_path(output, result['name']).name if long else None)
    if plot is not None:
        relative = os.path.relpath(plot, output.parent)
        lines += ['', '## Confidence over time', '',
                  'Computed by really ingesting simulated diagnostics and running autodream '
                  'every night with a moving clock (`python bench/plot_confidence.py`): an '
                  'intermittent fault climbs to the red band, a fault that stops is resolved '
                  'and decays away, a one-off glitch never reaches the injection threshold.', '',
                  f'![Confidence over simulated weeks]({relative})']
    if failed:
        lines += ['', f'**{len(failed)} script(s) failed: {", ".join(failed)}.**']
    return '\n'.join(lines) + '\n'


def main(argv=None) -> int:
    """Run the benchmarks, draw the plot and write the report; 1 when a script failed."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split('\n', 1)[0])
    parser.add_argument('--quick', action='store_true', help='pass --quick to every script')
    parser.add_argument('--output', default=str(REPO / 'BENCHMARKS.md'),
                        help='markdown report to write (default: BENCHMARKS.md at the root)')
    parser.add_argument('--plot', default=str(REPO / 'docs' / 'confidence-over-time.png'),
                        help='where plot_confidence.py draws its PNG')
    parser.add_argument('--no-plot', action='store_true', help='do not draw or embed the plot')
    parser.add_argument('--bench-dir', default=str(HERE),
                        help='directory whose bench_*.py scripts are run (default: bench/)')
    parser.add_argument('--timeout', type=float, default=3600.0,
                        help='seconds one script may run before it counts as failed')
    args = parser.parse_args(argv)
    output = pathlib.Path(args.output).resolve()
    scripts = sorted(pathlib.Path(args.bench_dir).glob('bench_*.py'))
    results = []
    for script in scripts:
        print(f'running {script.name}...', file=sys.stderr, flush=True)
        result = run_script(script, args.quick, args.timeout)
        result.update(name=script.name, script=script)
        if result['failure']:
            print(f'{script.name} FAILED: {result["failure"]}', file=sys.stderr)
        results.append(result)
    plot = None
    if not args.no_plot:
        plot = pathlib.Path(args.plot).resolve()
        drawn = _draw(plot, args.timeout)
        if drawn is not None:
            drawn.update(name='plot_confidence.py', script=HERE / 'plot_confidence.py')
            results.append(drawn)
            plot = None
    output.parent.mkdir(parents=True, exist_ok=True)
    for result in results:
        if _has_detail(result['records']):
            detail_path(output, result['name']).write_text(
                json.dumps(result['records'], indent=1, ensure_ascii=False) + '\n',
                encoding='utf-8')
    output.write_text(render(results, machine(), args.quick, plot, output), encoding='utf-8')
    print(f'wrote {output}', file=sys.stderr)
    return 1 if any(result['failure'] for result in results) else 0


def _draw(plot: pathlib.Path, timeout: float):
    """Run plot_confidence.py; None when it drew the PNG, else a failed result."""
    env = dict(os.environ, MPLBACKEND='Agg')
    env['PYTHONPATH'] = child_pythonpath(env)
    command = [sys.executable, str(HERE / 'plot_confidence.py'), '--output', str(plot)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {'records': [], 'seconds': timeout, 'failure': f'timed out after {timeout} s',
                'stderr': ''}
    if done.returncode == 0 and plot.exists():
        return None
    return {'records': [], 'seconds': time.perf_counter() - started,
            'failure': f'exit status {done.returncode}', 'stderr': done.stderr}


if __name__ == '__main__':
    sys.exit(main())
