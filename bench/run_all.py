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
Run the benchmarks under bench/, keep each script's results, and write BENCHMARKS.md.

Every ``bench/bench_*.py`` is found by glob and run with this interpreter (``--quick`` is
passed through), or only those named by ``--only`` (repeatable). Each prints one JSON object
a line with at least ``bench`` and its figures (``n``, ``ms``, ``rate``...), usually
``baseline_*``, ``ratio`` and goal fields. Each run is stored in ``<bench-dir>/results/``
(``<script>.json`` for a full run, ``<script>.quick.json`` for a quick one): its lines with
the command, start and end time, duration, the load average at start and end, the git
commit and the machine. The report is then rendered from every stored result, so scripts
run in different sittings merge into one report (``--render-only`` runs nothing), and a
script's full result is preferred to its quick one.

The report opens with the goals of the project's issues, each with its figure, the baseline
measured in the same run and whether it was met (``GOALS`` below, the one place they are
declared), judged per script from its full result only; a script with no full result says
so. Then the machine(s), one row a script (when, on which commit, quick or full, the load),
and one table per script: every figure, the ratio to its baseline and the goals, as printed.
A script that prints summary lines (``*_summary``) or more than ``DETAIL_ROWS`` lines gets
only those summary lines (or its first ``DETAIL_ROWS``) in the report, and lines of a whole
distribution (``*_distribution``, drawn by plots.py) are left out of its table; its results
file keeps every line. A script that fails (non-zero exit, timeout, or a line that is not a JSON
object) gets a row saying so with the tail of its stderr; nothing is hidden. ``TIMEOUTS``
gives the scripts that need more than ``--timeout``'s default. ``bench_node.py`` runs the
installed ``memory_node`` over ROS 2, so run this after ``source scripts/env.sh`` (and
``scripts/setup.sh`` after editing sources); without ``memory_node`` on PATH it fails and
says so. A run of every script also draws the confidence plot
(``bench/plot_confidence.py``), which is embedded unless ``--no-plot`` (a report without it
says so). Every write of the report also draws, from the stored results, the plots of the
scripts whose shape matters (``bench/plots.py``, into ``--plot-dir``) and links them.

Usage: ``python bench/run_all.py [--quick] [--only SCRIPT]... [--render-only]
[--output BENCHMARKS.md] [--plot PNG] [--plot-dir DIR] [--no-plot] [--bench-dir DIR]
[--results-dir DIR] [--timeout SECONDS]``. Exit status 1 when a script run now failed.
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

import plots  # bench/plots.py, beside this script

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
# a line of a whole distribution (for a plot) stays in the results file, out of the table
DETAIL_SUFFIXES = ('_summary', '_distribution')


def _ms(value) -> str:
    return '—' if value is None else f'{value:,.1f} ms' if value < 1000 else f'{value:,.0f} ms'


def _mb(value) -> str:
    return '—' if value is None else f'{value:,.1f} MB'


def _goal(text, script, bench, where=None, figure=None, baseline=None, met=None,
          every=False) -> dict:
    return {'goal': text, 'script': script, 'bench': bench, 'where': where or {},
            'figure': figure, 'baseline': baseline,
            'met': met or (lambda record: record.get('met')), 'every': every}


def _cli(text, bench, where=None) -> dict:
    return _goal(text, 'bench_cli.py', bench, where, lambda r: _ms(r['ms']),
                 lambda r: f'{_ms(r["baseline_ms"])} {r["baseline"]} (x{r["ratio"]:g})')


def _quality(text, figure, baseline, met) -> dict:
    """Declare a goal of every profile's line at full size (30 days at 1 Hz), judged on all."""
    return _goal(text, 'bench_quality.py', 'quality', {'days': 30, 'period_s': 1.0},
                 figure, baseline, met, every=True)


def _worst(records, key, pick=max):
    return pick(record[key] for record in records if record[key] is not None)


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
    _quality('Memory quality: fault recall >= 0.95 on every profile',
             lambda rs: f'min {_worst(rs, "fault_recall", min):g} over {len(rs)} profiles',
             lambda rs: f'{sum(r["faults"] for r in rs)} planted recurring faults',
             lambda rs: all(r['fault_recall'] is None or r['fault_recall'] >= 0.95 for r in rs)),
    _quality('Memory quality: <= 1 false entry per profile-month',
             lambda rs: f'max {_worst(rs, "false_entries_per_month"):g} a month '
                        f'({sum(r["false_entries"] for r in rs)} in all)',
             lambda rs: f'{len(rs)} profiles x {rs[0]["days"]} days',
             lambda rs: all(r['false_entries_per_month'] <= 1 for r in rs)),
    _quality('Memory quality: 1.0 entries per cause',
             lambda rs: f'max {_worst(rs, "entries_per_cause"):g}',
             lambda rs: f'{sum(len(r["by_cause"]) for r in rs)} causes that made an entry',
             lambda rs: all(r['entries_per_cause'] in (None, 1.0) for r in rs)),
    _quality('Memory quality: every routine or constant condition labelled',
             lambda rs: f'{sum(r["labelled"] for r in rs)} of '
                        f'{sum(r["conditions"] for r in rs)} labelled',
             lambda rs: 'the planted routine and constant conditions',
             lambda rs: all(r['labelled'] == r['conditions'] for r in rs)),
    _quality('Evidence <= 5 MB per robot-day at 1 Hz',
             lambda rs: f'max {_mb(_worst(rs, "evidence_bytes_per_day") / 1e6)} a day',
             lambda rs: f'max {_mb(_worst(rs, "json_bytes_per_day") / 1e6)} the same day as '
                        f'JSON lines (x{_worst(rs, "ratio"):g} max)',
             lambda rs: all(r['evidence_bytes_per_day'] <= 5_000_000 for r in rs)),
    _quality("A night's dream <= 2 s (median a profile)",
             lambda rs: f'max {_worst(rs, "dream_s") * 1000:,.0f} ms (worst night '
                        f'{_worst(rs, "dream_s_max") * 1000:,.0f} ms)',
             lambda rs: f'max {_worst(rs, "baseline_s") * 1000:,.0f} ms one GROUP BY '
                        f'signature (x{_worst(rs, "dream_ratio"):g} max)',
             lambda rs: all(r['dream_s'] <= 2.0 for r in rs)),
    _quality('Learned conditions: recall >= 0.9, no false condition, all advice safe',
             lambda rs: f'min {_worst(rs, "condition_recall", min):g} recall, '
                        f'{sum(r["false_conditions"] for r in rs)} false, advice safe '
                        + ', '.join(r['advice_safe'] for r in rs),
             lambda rs: 'speed, motor temperature, voltage, payload faults planted; two '
                        'independent ones a profile',
             lambda rs: all(r['condition_recall'] >= 0.9 and r['false_conditions'] == 0
                            and r['advice_safe'].split('/')[0] == r['advice_safe'].split('/')[1]
                            for r in rs)),
    _quality('Block lines: mean <= 200 characters on every profile',
             lambda rs: f'max {_worst(rs, "chars_per_line"):g} characters '
                        f'({_worst(rs, "tokens_per_line"):g} tokens) a line',
             lambda rs: 'entry lines of the final 400-token block, band and percentage '
                        'left out',
             lambda rs: all(r['chars_per_line'] is None or r['chars_per_line'] <= 200
                            for r in rs)),
    _quality('Block at 400 tokens: every fault and condition, or names what it left out',
             lambda rs: f'min {_worst(rs, "coverage_400", min):g} shown; '
                        f'{sum(len(r["left_out_named"]) for r in rs)} of '
                        f'{sum(len(r["left_out"]) for r in rs)} left out named',
             lambda rs: 'planted recurring faults and routine/constant conditions with an '
                        'entry in the block without a budget',
             lambda rs: all(r['left_out_named'] == r['left_out'] for r in rs)),
    _quality('No fault labelled normal by the dream',
             lambda rs: f'{sum(len(r["filed_normal"]) for r in rs)} filed as normal',
             lambda rs: 'planted faults, every night, after the bench plays the person '
                        'reviewing proposals',
             lambda rs: all(not r['filed_normal'] for r in rs)),
    _goal('Context signals <= 1 MB per robot-day, 30 signals at 10 Hz', 'bench_signals.py',
          'signals_size', {}, lambda r: f'{_mb(r["bytes_per_day"] / 1e6)} a day',
          lambda r: f'{_mb(r["baseline_bytes_per_day"] / 1e6)} as raw floats (x{r["ratio"]:g})',
          lambda r: r['bytes_per_day'] <= 1_000_000 and r['hours'] >= 24),
    _goal('Evidence <= 5 MB per robot-day at 1 Hz x 30 statuses, three constant faults',
          'bench_evidence_size.py', 'evidence_size', {},
          lambda r: f'{_mb(r["bytes_per_day"] / 1e6)} a day ({r["rows"]:,} rows)',
          lambda r: f'{_mb(r["baseline_bytes_per_day"] / 1e6)} row by row (x{r["ratio"]:g})',
          lambda r: r['bytes_per_day'] <= 5_000_000),
    _goal('memory_node <= 1.0% of a core at 1 Hz x 30 statuses', 'bench_node.py', 'cpu_1hz',
          {}, lambda r: f'{r["share"]:g}% of a core (x{r["ratio"]:g})',
          lambda r: f'{r["baseline_share"]:g}% bare rclpy subscriber',
          lambda r: r['share'] <= 1.0),
    _goal('memory_node takes in >= 0.9x what a bare rclpy subscriber takes', 'bench_node.py',
          'ingest', {}, lambda r: f'{r["rate"]:,.0f} msgs/s (x{r["ratio"]:g})',
          lambda r: f'{r["baseline_rate"]:,.0f} msgs/s bare subscriber',
          lambda r: r['ratio'] >= 0.9),  # judged here: a stored line may hold an older goal
    _goal('~/get_context callback p99 < 5 ms (10,000 entries)', 'bench_node.py',
          'get_context_in_node', {}, lambda r: f'p99 {_ms(r["p99_ms"])}',
          lambda r: f'p99 {_ms(r["baseline_p99_ms"])} scan without the index'),
    _goal('memory_node resident memory under a sustained flood <= 90 MB and flat',
          'bench_node.py', 'rss', {},
          lambda r: f'max {_mb(r["max_mb"])}, {r["slope_mb_per_min"]:+g} MB/min',
          lambda r: f'max {_mb(r["baseline_max_mb"])} bare rclpy subscriber',
          lambda r: r['max_mb'] <= 90.0 and abs(r['slope_mb_per_min']) < 2.0),
    _goal('Black box: RAM growth under a 10 MB/s flood within blackbox_ram_mb (64 MB)',
          'bench_blackbox.py', 'blackbox_rss', {},
          lambda r: f'+{_mb(r["growth_mb"])} ({_mb(r["mb"])} memory_node, bound '
                    f'{_mb(r["bound_mb"])})',
          lambda r: f'+{_mb(r["baseline_growth_mb"])} bare raw rclpy subscriber',
          lambda r: r['growth_mb'] <= r['bound_mb']),
    _goal('Black box: a fault during the flood gets its recording', 'bench_blackbox.py',
          'blackbox_recording', {},
          lambda r: f'{r["messages"]:,} messages, {_mb(r["mb"])} on disk, linked '
                    f'{r["latency_s"]:g} s after the fault',
          lambda r: '—', lambda r: r['messages'] > 0),
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
    _goal("Fleet: a dream's payload reaches the store <= 2 s at p99 (200 robots, 3 sites)",
          'bench_fleet.py', 'fleet_latency', {'robots': 200},
          lambda r: f'p99 {"at least " * r["p99_is_lower_bound"]}{_ms(r["p99_s"] * 1000)} '
                    f'(p50 {_ms(r["p50_s"] * 1000)}; {r["not_acked"]} of {r["n"]} not acked '
                    'in time)',
          lambda r: f'p99 {_ms(r["baseline_p99_s"] * 1000)} bare Zenoh get (x{r["ratio"]:g})'),
    _goal('Fleet: <= 50 KB per robot-day on the wire when nothing changes', 'bench_fleet.py',
          'fleet_bytes', {}, lambda r: f'{r["kb_per_robot_day"]:g} KB (max '
                                       f'{r["kb_per_robot_day_max"]:g} KB)',
          lambda r: f'{r["baseline_kb_per_robot_day"]:g} KB the whole robot-memory.md '
                    f'(x{r["ratio"]:g})'),
    _goal('Fleet store ingest >= 0.5x a bare batched INSERT of the same rows (PostgreSQL)',
          'bench_fleet.py', 'fleet_ingest', {},
          lambda r: f'{r["rows_per_s"]:,} rows/s, {r["payloads_per_s"]:g} payloads/s',
          lambda r: f'{r["baseline_rows_per_s"]:,} rows/s bare executemany (x{r["ratio"]:g})'),
    _goal('Fleet roll-up "same fault on N robots", 5,000 robots x 50 entries <= 200 ms',
          'bench_fleet.py', 'fleet_rollup', {'n': 5000}, lambda r: _ms(r['ms']),
          lambda r: f'{_ms(r["baseline_ms"])} one SQL GROUP BY (x{r["ratio"]:g})'),
    _goal('Fleet: a router killed, a link down an hour: nothing lost, nothing counted twice',
          'bench_fleet.py', 'fleet_delivery', {},
          lambda r: f'{r["dreams_stored"]:,} stored + {r["superseded_by_newer"]} superseded of '
                    f'{r["dreams_made"]:,} made; lost {r["lost"]}, twice {r["counted_twice"]}',
          lambda r: f'{r["payloads_sent"]:,} payloads sent, {r["duplicate_acks"]:,} '
                    'redeliveries acknowledged as duplicates'),
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


# Scripts whose full run needs longer than ``--timeout``'s default, in seconds: bench_quality
# replays 30 days at 1 Hz of every profile (tens of millions of statuses each).
TIMEOUTS = {'bench_quality.py': 12 * 3600.0}
DEFAULT_TIMEOUT = 3600.0
MACHINE_KEYS = ('cpu', 'cores', 'ram', 'python', 'os')


def machine() -> dict:
    """CPU model, cores, RAM, Python and OS of this run."""
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
    }


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')


def _load():
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return None


def git_commit() -> str:
    """Return the commit, ``+modified`` when tracked files differ (results and report aside)."""
    try:
        head = subprocess.run(['git', 'rev-parse', '--short=12', 'HEAD'], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        changed = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no', '--',
                                  '.', ':(exclude)bench/results', ':(exclude)BENCHMARKS.md'],
                                 cwd=REPO, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return 'unknown'
    if head.returncode != 0:
        return 'unknown'
    return head.stdout.strip() + (' +modified' if changed.stdout.strip() else '')


def _relative(path: pathlib.Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _parse(stdout: str) -> tuple:
    records, bad = [], []
    for number, line in enumerate(stdout.splitlines(), start=1):
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
    return records, bad


def _tail(text) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors='replace')
    return '\n'.join((text or '').strip().splitlines()[-STDERR_TAIL_LINES:])


def run_script(script: pathlib.Path, quick: bool, timeout: float, arguments=()) -> dict:
    """Run one benchmark; returns its records and how it ran, or why it failed."""
    env = dict(os.environ)
    env['PYTHONPATH'] = child_pythonpath(env)
    env.setdefault('MPLBACKEND', 'Agg')
    options = (['--quick'] if quick else []) + list(arguments)
    result = {'script': script.name, 'mode': 'quick' if quick else 'full',
              'command': ' '.join(['python', _relative(script)] + options),
              'commit': git_commit(), 'started': _now(), 'load_start': _load()}
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(script)] + options, cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout.decode(errors='replace') if isinstance(expired.stdout, bytes) \
            else (expired.stdout or '')
        records, _ = _parse(stdout)
        failure, stderr = f'timed out after {timeout:.0f} s', expired.stderr
    else:
        records, bad = _parse(done.stdout)
        failure, stderr = None, done.stderr
        if done.returncode != 0:
            failure = f'exit status {done.returncode}'
        elif bad:
            failure = (f'stdout lines {", ".join(map(str, bad[:5]))} are not JSON objects '
                       'with "bench"')
        elif not records:
            failure = 'printed no result'
    result.update(ended=_now(), seconds=round(time.perf_counter() - started, 1),
                  load_end=_load(), machine=machine(), failure=failure,
                  stderr_tail=_tail(stderr) if failure else '', records=records)
    return result


def results_file(results_dir: pathlib.Path, name: str, mode: str) -> pathlib.Path:
    """Where a script's last full (``<script>.json``) or quick run is kept."""
    stem = pathlib.Path(name).stem
    return results_dir / (f'{stem}.json' if mode == 'full' else f'{stem}.{mode}.json')


def store(result: dict, results_dir: pathlib.Path) -> pathlib.Path:
    """Write one run's result to its file in ``results_dir``; returns the path."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_file(results_dir, result['script'], result['mode'])
    about = {key: value for key, value in result.items() if key not in ('path', 'records')}
    # One line a record, so a re-run's diff shows which figures moved.
    lines = [json.dumps(record, ensure_ascii=False) for record in result['records']]
    text = json.dumps(about, indent=1, ensure_ascii=False)[:-2] + ',\n "records": [' + (
        '\n  ' + ',\n  '.join(lines) + '\n ' if lines else '') + ']\n}\n'
    temporary = path.with_name(path.name + '.tmp')
    temporary.write_text(text, encoding='utf-8')
    os.replace(temporary, path)
    return path


def load_result(results_dir: pathlib.Path, name: str):
    """Return one script's stored result, its full run preferred; None when never run."""
    for mode in ('full', 'quick'):
        path = results_file(results_dir, name, mode)
        if not path.exists():
            continue
        try:
            result = json.loads(path.read_text(encoding='utf-8'))
            if not isinstance(result.get('records'), list):
                raise ValueError('no "records" list')
        except (OSError, ValueError, AttributeError) as error:
            result = {'script': name, 'mode': mode, 'records': [],
                      'failure': f'{path.name} is unreadable ({error}); run the script again'}
        result['path'] = path
        return result
    return None


def stored_names(results_dir: pathlib.Path) -> list:
    """Scripts with a result in ``results_dir``, by name."""
    return sorted({path.name.split('.')[0] + '.py' for path in results_dir.glob('bench_*.json')})


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

    With ``detail`` (the link to the results file holding every line) only the summary lines
    are shown, with the columns they use.
    """
    records = result['records']
    if detail is not None:
        records = [record for record in records
                   if not str(record['bench']).endswith('_distribution')]
        records = [record for record in records if str(record['bench']).endswith('_summary')] \
            or records[:DETAIL_ROWS]
    columns = _columns(records) if records else ['bench', 'result']
    lines = ['| ' + ' | '.join(columns) + ' |', '|' + '---|' * len(columns)]
    for record in records:
        lines.append('| ' + ' | '.join(_cell(record.get(key)) for key in columns) + ' |')
    if detail is not None:
        lines += ['', f'{len(records)} summary lines of {len(result["records"])}; every line '
                  f'is in [{pathlib.PurePath(detail).name}]({detail}).']
    if result['failure']:
        row = ['**FAILED**'] + [''] * (len(columns) - 1)
        row[-1 if len(columns) > 1 else 0] += f'{result["failure"]}; see the stderr tail below'
        lines.append('| ' + ' | '.join(row) + ' |')
        lines += ['', f'**{result["script"]} failed: {result["failure"]}.** Last lines of '
                  'its stderr:', '', '```', result.get('stderr_tail') or '(stderr was empty)',
                  '```']
    return lines


def judge(goal: dict, result) -> list:
    """Return the figure, baseline and verdict of one goal from its script's stored result."""
    if result is None:
        return ['—', '—', 'not run at full size']
    candidates = [record for record in result['records']
                  if record.get('bench') == goal['bench']]
    exact = [record for record in candidates
             if all(record.get(key) == value for key, value in goal['where'].items())]
    chosen = exact or candidates
    if not chosen:
        return ['—', '—', f'not measured: {result["failure"] or "the script prints no such line"}']
    argument = chosen if goal['every'] else chosen[-1]
    try:
        figure, baseline = goal['figure'](argument), goal['baseline'](argument)
        verdict = goal['met'](argument)
    except KeyError as error:  # a result stored before the script measured this figure
        return [f'not in the stored run (no {error.args[0]!r}): run {goal["script"]} again',
                '—', 'not judged']
    except (TypeError, ValueError, IndexError) as error:
        return [f'unreadable line ({error!r})', '—', 'not judged']
    if not exact:
        shown = ', '.join(f'{key}={chosen[-1].get(key)!r}' for key in goal['where'])
        figure += f' (at {shown})'
    if result['mode'] != 'full':
        return [f'{figure} (quick run)', baseline, 'not run at full size']
    if not exact:
        return [figure, baseline, 'not judged: measured at another size']
    return [figure, baseline, {True: 'yes', False: '**no**'}.get(verdict, 'not judged')]


def _load_text(load) -> str:
    return '—' if not load else f'{load[0]:g}'


def _run_text(result) -> str:
    if result is None:
        return 'not run'
    return (f'{result["mode"]}, {result.get("started", "?")[:16]}, load '
            f'{_load_text(result.get("load_start"))} → {_load_text(result.get("load_end"))}')


def goal_lines(by_script: dict) -> list:
    """Markdown lines of the goals table: each goal, its figure, the baseline and the verdict."""
    lines = ['| goal | figure | baseline (same run) | met | script | run (UTC), 1-min load |',
             '|---|---|---|---|---|---|']
    for goal in GOALS:
        result = by_script.get(goal['script'])
        cells = judge(goal, result) + [goal['script'], _run_text(result)]
        lines.append('| ' + ' | '.join(_cell(cell) for cell in [goal['goal']] + cells) + ' |')
    return lines


def _has_detail(records: list) -> bool:
    return len(records) > DETAIL_ROWS or any(str(record['bench']).endswith(DETAIL_SUFFIXES)
                                             for record in records)


def _doc_line(script: pathlib.Path) -> str:
    try:
        text = script.read_text(encoding='utf-8')
    except OSError:
        return ''
    if text.startswith('"""'):
        return text[3:].split('\n', 1)[0].strip().rstrip('"').strip()
    return ''


def _machine_lines(results: list) -> list:
    machines = {}
    for result in results:
        if result.get('machine'):
            key = json.dumps(result['machine'], sort_keys=True)
            machines.setdefault(key, []).append(result['script'])
    lines = []
    for key, scripts in machines.items():
        info = json.loads(key)
        if len(machines) > 1:
            lines += [f'Ran {", ".join(scripts)}:', '']
        lines += ['| | |', '|---|---|']
        lines += [f'| {name} | {_cell(info.get(name))} |' for name in MACHINE_KEYS]
        lines.append('')
    return lines or ['No script has been run.', '']


def render(names: list, by_script: dict, bench_dir: pathlib.Path, results_dir: pathlib.Path,
           plot, output: pathlib.Path, figures=()) -> str:
    """Return the whole BENCHMARKS.md text from every script's stored result."""
    results = [by_script[name] for name in names if by_script.get(name)]
    where = os.path.relpath(results_dir, output.parent)
    full = [result for result in results if result['mode'] == 'full']
    lines = ['# Benchmarks', '',
             "Written by `python bench/run_all.py` from the results each script's last run "
             f'stored in `{where}/` (`--only SCRIPT` runs some scripts and merges: every run '
             'keeps its command, time, load and commit). Times are medians in milliseconds '
             'unless a column says otherwise; `ratio` is the figure divided by the baseline '
             'the script measured in the same run on the same data (for a time below 1 is '
             'faster than the baseline, for a rate such as `ingest` above 1 is); goal columns '
             'state the target.', '',
             '## Summary', '',
             f'{len(full)} of {len(names)} scripts have a full result; '
             f'{len(results) - len(full)} only a quick one (`--quick`: small sizes, few '
             'repeats, as the smoke tests run it), whose figures show the shape, not the '
             f"goals' conditions; {len(names) - len(results)} were never run.", '',
             "Each goal set in the project's issues: the figure, the baseline the script "
             'measured in the same run, and whether it was met (declared in '
             "`bench/run_all.py`, `GOALS`; judged only from a full run at the goal's size). "
             'Absolute times depend on the load beside them (the 1-minute load average at '
             'the start and end of the run; the machine has the cores below). The detail '
             'follows.', '']
    lines += goal_lines(by_script)
    lines += ['', '## Machine', ''] + _machine_lines(results)
    lines += ['## Scripts', '',
              '| script | mode | commit | started (UTC) | seconds | load avg 1/5/15 min, start '
              '→ end | status |', '|---|---|---|---|---|---|---|']
    for name in names:
        result = by_script.get(name)
        if result is None:
            lines.append(f'| {name} | not run | — | — | — | — | no result stored |')
            continue
        load = ' → '.join('/'.join(f'{value:g}' for value in load) if load else '—'
                          for load in (result.get('load_start'), result.get('load_end')))
        status = f'FAILED: {result["failure"]}' if result['failure'] else 'ok'
        lines.append('| ' + ' | '.join(_cell(cell) for cell in (
            name, result['mode'], result.get('commit'), result.get('started'),
            result.get('seconds'), load, status)) + ' |')
    for name in names:
        result = by_script.get(name)
        lines += ['', f'## {name}', '']
        about = _doc_line(bench_dir / name)
        if about:
            lines += [about, '']
        if result is None:
            lines.append(f'Not run: no result stored; `python bench/run_all.py --only {name}` '
                         'runs it.')
            continue
        if result.get('command'):
            lines += [f'`{result["command"]}` ({result["mode"]} run) on commit '
                      f'{result.get("commit")}, {result.get("started")}, '
                      f'{_cell(result.get("seconds"))} s.', '']
        detail = None
        if _has_detail(result['records']) and result.get('path'):
            detail = os.path.relpath(result['path'], output.parent)
        lines += table(result, detail)
    if plot is not None:
        lines += ['', '## Confidence over time', '',
                  'Computed by really ingesting simulated diagnostics and running autodream '
                  'every night with a moving clock (`python bench/plot_confidence.py`): an '
                  'intermittent fault climbs to the red band, a fault that stops is resolved '
                  'and decays away, a one-off glitch never reaches the injection threshold.', '']
        if plot.exists():
            relative = os.path.relpath(plot, output.parent)
            lines.append(f'![Confidence over simulated weeks]({relative})')
        else:
            lines.append(f'**Not drawn:** no {os.path.relpath(plot, output.parent)}; a run of '
                         'every script (no `--only`) draws it.')
    for title, caption, path in figures:
        lines += ['', f'## Plot: {title}', '', caption, '',
                  f'![{title}]({os.path.relpath(path, output.parent)})']
    failed = [name for name in names if by_script.get(name) and by_script[name]['failure']]
    if failed:
        lines += ['', f'**{len(failed)} script(s) failed: {", ".join(failed)}.**']
    return '\n'.join(lines) + '\n'


def _script_name(name: str) -> str:
    name = pathlib.PurePath(name).name
    return name if name.endswith('.py') else name + '.py'


def main(argv=None) -> int:
    """Run the chosen benchmarks, store their results and write the report from all stored."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split('\n', 1)[0])
    parser.add_argument('--quick', action='store_true', help='pass --quick to every script')
    parser.add_argument('--only', action='append', metavar='SCRIPT',
                        help='run only this script, e.g. bench_cli.py (repeatable); the '
                             'report still shows every stored result')
    parser.add_argument('--render-only', action='store_true',
                        help='run nothing: write the report from the stored results')
    parser.add_argument('--output', default=str(REPO / 'BENCHMARKS.md'),
                        help='markdown report to write (default: BENCHMARKS.md at the root)')
    parser.add_argument('--plot', default=str(REPO / 'docs' / 'confidence-over-time.png'),
                        help='where plot_confidence.py draws its PNG')
    parser.add_argument('--plot-dir', default=str(REPO / 'docs' / 'bench'),
                        help="where the benchmarks' own plots are drawn (bench/plots.py)")
    parser.add_argument('--no-plot', action='store_true', help='do not draw or embed any plot')
    parser.add_argument('--bench-dir', default=str(HERE),
                        help='directory whose bench_*.py scripts are run (default: bench/)')
    parser.add_argument('--results-dir', default=None,
                        help="where each script's result is kept (default: <bench-dir>/results)")
    parser.add_argument('--timeout', type=float, default=None,
                        help='seconds one script may run before it counts as failed (default: '
                             f'{DEFAULT_TIMEOUT:.0f}, more for the scripts in TIMEOUTS)')
    args = parser.parse_args(argv)
    output = pathlib.Path(args.output).resolve()
    bench_dir = pathlib.Path(args.bench_dir).resolve()
    results_dir = pathlib.Path(args.results_dir).resolve() if args.results_dir \
        else bench_dir / 'results'
    available = {path.name: path for path in sorted(bench_dir.glob('bench_*.py'))}
    only = [_script_name(name) for name in args.only or ()]
    unknown = [name for name in only if name not in available]
    if unknown:
        parser.error(f'no {", ".join(unknown)} in {bench_dir}; the scripts are: '
                     f'{", ".join(available) or "none"}')
    chosen = [] if args.render_only else [available[name] for name in only or available]
    failed_now = []
    for script in chosen:
        print(f'running {script.name}...', file=sys.stderr, flush=True)
        timeout = args.timeout or TIMEOUTS.get(script.name, DEFAULT_TIMEOUT)
        result = run_script(script, args.quick, timeout)
        path = store(result, results_dir)
        print(f'{script.name}: {result["failure"] or "ok"} in {result["seconds"]:.0f} s, '
              f'stored in {path}', file=sys.stderr, flush=True)
        if result['failure']:
            failed_now.append(script.name)
    plot = None if args.no_plot else pathlib.Path(args.plot).resolve()
    drawn = None
    if plot is not None and not only and not args.render_only:
        drawn = _draw(plot, args.timeout or DEFAULT_TIMEOUT)
    names = sorted(set(available) | set(stored_names(results_dir)))
    by_script = {name: load_result(results_dir, name) for name in names}
    if drawn is not None:
        names.append(drawn['script'])
        by_script[drawn['script']] = drawn
        failed_now.append(drawn['script'])
    # Drawn from the stored results at every write, so a run of some scripts keeps them all.
    figures = [] if args.no_plot else plots.draw_all(by_script, pathlib.Path(args.plot_dir))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(render(names, by_script, bench_dir, results_dir, plot, output, figures),
                      encoding='utf-8')
    print(f'wrote {output}', file=sys.stderr)
    return 1 if failed_now else 0


def _draw(plot: pathlib.Path, timeout: float):
    """Run plot_confidence.py; None when it drew the PNG, else a failed result."""
    env = dict(os.environ, MPLBACKEND='Agg')
    env['PYTHONPATH'] = child_pythonpath(env)
    command = [sys.executable, str(HERE / 'plot_confidence.py'), '--output', str(plot)]
    result = {'script': 'plot_confidence.py', 'mode': 'full', 'records': [],
              'command': f'python bench/plot_confidence.py --output {plot}',
              'commit': git_commit(), 'started': _now(), 'load_start': _load()}
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        result.update(failure=f'timed out after {timeout:.0f} s', stderr_tail=_tail(expired.stderr))
    else:
        if done.returncode == 0 and plot.exists():
            return None
        result.update(failure=f'exit status {done.returncode}', stderr_tail=_tail(done.stderr))
    result.update(seconds=round(time.perf_counter() - started, 1), load_end=_load())
    return result


if __name__ == '__main__':
    sys.exit(main())
