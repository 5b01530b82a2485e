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
Benchmark of whole-process start-up: the robot-memory command as a user runs it.

Every figure is the wall time of one process, start to exit (or, for ``mcp``, start to
its answer to ``initialize``), median of ``--repeats`` runs. The commands take turns
within each round so a busy moment of the machine falls on all of them alike, and each
line carries the ratio to ``python -c pass`` (``baseline_ms``) measured in the same
rounds with the interpreter the command runs on. Run it after ``source scripts/env.sh``:
``robot-memory`` is then the installed command on PATH (``command`` says which was run).

``cli_help``            ``robot-memory --help``.                        Goal < 100 ms.
``cli_show``            ``robot-memory show`` on a 10,000-entry file.    Goal < 250 ms.
``cli_show_other_form`` ``robot-memory show`` on the same entries as other writers write them:
                        ``opencastor`` (PyYAML: plain and single-quoted scalars folded over
                        lines, block lists of tags, ``+00:00`` times), ``by_hand`` (plain ids,
                        unquoted flow tags, quoted times) and ``opencastor_written`` (that file
                        after one of our writes: unchanged entries keep their text). ``ratio``
                        is to ``cli_show`` in the same rounds.        Goal ≤ 2x.
``cli_recall``          ``robot-memory recall`` over 10,000 typed records (rules-classified
                        texts, keyword search).                          Goal < 200 ms.
``cli_recall_vectors``  the same with a paraphrase that no record matches word for word, so
                        recall loads the embedding model (numpy, onnxruntime and the semantic
                        model when installed, else the hashing embedder): what the keyword-
                        first shortcut of ``cli_recall`` saves. Reported, no goal.
``cli_mcp_initialize``  ``robot-memory mcp`` until it answers a JSON-RPC ``initialize``
                        on stdin (the MCP handshake).                    Goal < 300 ms.
``load_save_process``   one process that loads and saves the 10,000-entry robot-memory.md
                        (``MemoryFile.load`` + ``save`` under the lock, as a script does)
                        vs OpenCastor's ``load_memory`` + ``save_memory`` (the RCAN reference,
                        ``pip install --no-deps opencastor``, benchmark-only) on a copy of
                        the same file, in the same rounds. Goal: ≥ 10x faster (``speedup``).
                        Without opencastor the line says so and is not counted as measured.
``python_start``        ``python -c pass`` without the ros-wheels-bootstrapper's guard variable
                        (its ``.pth`` hook then re-executes Python, as in a shell that did not
                        source scripts/env.sh) vs ``baseline_ms`` with it: ``reexec_ms`` is
                        what that hook adds to every command. The figures above run in this
                        process's environment (``reexec_in_figures`` says whether it lacks the
                        guard, i.e. whether they include the re-exec).

Usage: ``python bench/bench_cli.py [--quick] [--n N] [--repeats R]``. ``--quick`` (1,000
entries and records, one round after the warm-up) is what the smoke test runs; its goals are
not judged.
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
try:
    import robot_memory  # noqa: F401 - installed, or from the source checkout below
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(REPO))

from bench_memory_file import make_document  # noqa: E402 - after the path set-up
from bench_recall import robot_texts  # noqa: E402

from robot_memory.rcan.memory_file import MemoryFile  # noqa: E402
from robot_memory.rcan.memory_file import render  # noqa: E402
from robot_memory.rcan.schema import new_entry  # noqa: E402
from robot_memory.substrate.substrate_store import Substrate  # noqa: E402

NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=dt.timezone.utc)
AT = '2026-04-01T03:00:00Z'
GOALS_MS = {'cli_help': 100.0, 'cli_show': 250.0, 'cli_recall': 200.0,
            'cli_mcp_initialize': 300.0}
# Shares no word with any record, so keywords cannot settle it and recall loads the model.
PARAPHRASE = 'where does the robot go to refuel its power cell'
GOAL_SPEEDUP = 10.0
GOAL_OTHER_FORM_RATIO = 2.0
OTHER_FORMS = ('opencastor', 'by_hand', 'opencastor_written')
GOAL_N = 10_000
BOOTSTRAP_GUARD = '_ROS_WHEELS_BOOTSTRAP_COMPLETE'
INITIALIZE = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
              'params': {'protocolVersion': '2025-06-18', 'capabilities': {},
                         'clientInfo': {'name': 'bench_cli', 'version': '1'}}}

OURS_LOAD_SAVE = """
import datetime as dt, sys
from robot_memory.rcan.memory_file import MemoryFile
memory = MemoryFile(sys.argv[1])
now = dt.datetime.now(dt.timezone.utc)
with memory.lock():
    result = memory.load(now)
    result.document.last_updated = now
    memory.save(result.document, result, now)
"""
REFERENCE_LOAD_SAVE = """
import sys
from castor.brain.memory_schema import load_memory, save_memory
memory = load_memory(sys.argv[1])
if len(memory.entries) != int(sys.argv[2]):
    sys.exit(f'OpenCastor loaded {len(memory.entries)} entries, not {sys.argv[2]}')
save_memory(memory, sys.argv[1])
"""


def command_prefix() -> tuple:
    """How ``robot-memory`` is started here: the installed command, else the module."""
    found = shutil.which('robot-memory')
    if found:
        return [found], 'robot-memory'
    return [sys.executable, '-m', 'robot_memory.cli.main'], 'python -m robot_memory.cli.main'


def interpreter(prefix: list) -> str:
    """Return the Python the command runs on (its ``#!`` line), for baselines."""
    if prefix[0] == sys.executable:
        return sys.executable
    try:
        first = pathlib.Path(prefix[0]).read_text(errors='replace').split('\n', 1)[0]
    except OSError:
        first = ''
    if first.startswith('#!'):
        parts = first[2:].split()
        name = parts[-1] if parts and parts[0].endswith('/env') else (parts[0] if parts else '')
        found = shutil.which(name) if name else None
        if found:
            return found
    return sys.executable


def run_once(argv: list, env: dict) -> float:
    """Seconds from start to exit of one process; a failing command is an error."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f'{" ".join(argv)} exited {done.returncode}: '
                           f'{done.stderr.decode(errors="replace")[-2000:]}')
    return elapsed


def mcp_once(argv: list, env: dict) -> float:
    """Seconds from start until the server's answer to ``initialize`` is read."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    try:
        process.stdin.write((json.dumps(INITIALIZE) + '\n').encode())
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError('robot-memory mcp closed its output without answering '
                                   f'initialize: {process.stderr.read().decode()[-2000:]}')
            reply = json.loads(line)
            if reply.get('id') == 1:
                elapsed = time.perf_counter() - start
                if 'result' not in reply:
                    raise RuntimeError(f'initialize failed: {reply}')
                return elapsed
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def opencastor_present(python: str, env: dict) -> bool:
    """Whether ``castor.brain.memory_schema`` imports with the command's interpreter."""
    done = subprocess.run([python, '-c', 'import castor.brain.memory_schema'], env=env,
                          capture_output=True)
    return done.returncode == 0


def prepare(directory: pathlib.Path, n: int) -> dict:
    """Return a memory file of ``n`` entries (two copies) and a database of ``n`` typed records."""
    document = make_document(n)
    data = render(document)
    paths = {'memory': directory / 'robot-memory.md',
             'ours': directory / 'ours' / 'robot-memory.md',
             'reference': directory / 'reference' / 'robot-memory.md',
             'db': directory / 'records.db'}
    for key in ('memory', 'ours', 'reference'):
        paths[key].parent.mkdir(parents=True, exist_ok=True)
        paths[key].write_bytes(data)
    for form, text in (('opencastor', opencastor_form(document)),
                       ('by_hand', by_hand_form(document)),
                       ('opencastor_written', opencastor_form(document))):
        paths[form] = directory / form / 'robot-memory.md'
        paths[form].parent.mkdir(parents=True, exist_ok=True)
        paths[form].write_bytes(text)
    written_by_us(paths['opencastor_written'])
    with Substrate(paths['db']) as substrate:
        substrate.learn_many(robot_texts(n), NOW)
    return paths


def opencastor_form(document) -> bytes:
    """Return ``document`` as OpenCastor's save_memory writes it (PyYAML, isoformat times)."""
    data = {'schema_version': '1.0', 'rrn': document.rrn,
            'last_updated': document.last_updated.isoformat(),
            'entries': [{'id': entry.id, 'type': entry.type, 'text': entry.text,
                         'confidence': entry.confidence,
                         'first_seen': entry.first_seen.isoformat(),
                         'last_reinforced': entry.last_reinforced.isoformat(),
                         'observation_count': entry.observation_count,
                         'tags': list(entry.tags)} for entry in document.entries]}
    front = yaml.dump(data, Dumper=getattr(yaml, 'CSafeDumper', yaml.SafeDumper),
                      default_flow_style=False, allow_unicode=True, sort_keys=False)
    return b'---\n' + front.encode('utf-8') + b'---\n' + document.body


def by_hand_form(document) -> bytes:
    """Return ``document`` as people write one: plain ids, unquoted flow tags, quoted times."""
    lines = ['schema_version: "1.0"', f'rrn: {document.rrn}',
             f"last_updated: '{document.last_updated.isoformat()}'", 'entries:']
    for entry in document.entries:
        lines += [f'  - id: {entry.id}', f'    type: {entry.type}',
                  f'    text: {json.dumps(entry.text, ensure_ascii=False)}',
                  f'    confidence: {entry.confidence}',
                  f'    first_seen: "{entry.first_seen.isoformat()}"',
                  f"    last_reinforced: '{entry.last_reinforced.isoformat()}'",
                  f'    observation_count: {entry.observation_count}',
                  f'    tags: [{", ".join(entry.tags)}]']
    return ('---\n' + '\n'.join(lines) + '\n---\n').encode('utf-8') + document.body


def written_by_us(path: pathlib.Path) -> None:
    """Change one entry and add one through MemoryFile, as a dream does."""
    with MemoryFile(path).update(NOW) as result:
        entries = result.document.entries
        entries[len(entries) // 2] = entries[len(entries) // 2].model_copy(
            update={'confidence': 0.5})
        entries.append(new_entry('environment_note', 'seen by the bench today', 0.4, NOW))


def median_ms(times: list) -> float:
    """Return the median of ``times`` (seconds) in milliseconds, rounded."""
    return round(statistics.median(times) * 1000.0, 1)


def main(argv=None) -> int:
    """Run the rounds and print one JSON line a figure."""
    parser = argparse.ArgumentParser(description=__doc__.strip().split('\n\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='1,000 entries and records, one round (the smoke test)')
    parser.add_argument('--n', type=int, default=GOAL_N, help='entries and records (10,000)')
    parser.add_argument('--repeats', type=int, default=7, help='rounds (median of, >= 1)')
    args = parser.parse_args(argv)
    n = 1000 if args.quick else args.n
    repeats = 1 if args.quick else max(1, args.repeats)
    judged = n == GOAL_N and not args.quick
    prefix, shown = command_prefix()
    python = interpreter(prefix)
    env = dict(os.environ)
    bootstrapped = dict(env, **{BOOTSTRAP_GUARD: '1'})
    unbootstrapped = {key: value for key, value in env.items() if key != BOOTSTRAP_GUARD}
    # The semantic model when installed, else hashing vectors: never keyword search alone.
    vectors_env = dict(env, ROBOT_MEMORY_EMBEDDER=env.get('ROBOT_MEMORY_EMBEDDER') or 'auto')
    if vectors_env['ROBOT_MEMORY_EMBEDDER'] == 'off':
        vectors_env['ROBOT_MEMORY_EMBEDDER'] = 'hashing'
    with tempfile.TemporaryDirectory(prefix='bench-cli-') as name:
        directory = pathlib.Path(name)
        paths = prepare(directory, n)
        memory, db = str(paths['memory']), str(paths['db'])
        commands = {
            'baseline': lambda: run_once([python, '-c', 'pass'], env),
            'python_bootstrapped': lambda: run_once([python, '-c', 'pass'], bootstrapped),
            'python_reexec': lambda: run_once([python, '-c', 'pass'], unbootstrapped),
            'cli_help': lambda: run_once(prefix + ['--help'], env),
            'cli_show': lambda: run_once(prefix + ['show', '--file', memory, '--at', AT], env),
            **{form: lambda form=form: run_once(
                prefix + ['show', '--file', str(paths[form]), '--at', AT], env)
               for form in OTHER_FORMS},
            'cli_recall': lambda: run_once(prefix + ['recall', 'charging dock kitchen',
                                                     '--file', memory, '--db', db, '--at', AT],
                                           env),
            'cli_recall_vectors': lambda: run_once(prefix + ['recall', PARAPHRASE, '--file',
                                                             memory, '--db', db, '--at', AT],
                                                   vectors_env),
            'cli_mcp_initialize': lambda: mcp_once(
                prefix + ['mcp', '--file', memory, '--db', db], env),
            'load_save_ours': lambda: run_once([python, '-c', OURS_LOAD_SAVE,
                                                str(paths['ours'])], env),
        }
        reference = opencastor_present(python, env)
        if reference:
            commands['load_save_reference'] = lambda: run_once(
                [python, '-c', REFERENCE_LOAD_SAVE, str(paths['reference']), str(n)], env)
        times = {key: [] for key in commands}
        for key, run in commands.items():  # one warm-up each: page cache, .pyc files
            run()
        for _ in range(repeats):
            for key, run in commands.items():
                times[key].append(run())
    base = median_ms(times['baseline'])
    reported = {key: GOALS_MS[key] for key in ('cli_help', 'cli_show', 'cli_recall')}
    reported.update(cli_recall_vectors=None, cli_mcp_initialize=GOALS_MS['cli_mcp_initialize'])
    for bench, goal in reported.items():
        ms = median_ms(times[bench])
        line = {'bench': bench,
                'n': n if bench in ('cli_show', 'cli_recall', 'cli_recall_vectors') else None,
                'ms': ms, 'repeats': repeats, 'command': shown, 'baseline': 'python -c pass',
                'baseline_ms': base, 'ratio': round(ms / base, 2), 'goal_ms': goal,
                'met': (ms < goal) if judged and goal else None}
        if line['n'] is None:
            del line['n']
        if goal is None:
            del line['goal_ms'], line['met']
        print(json.dumps(line), flush=True)
    show = median_ms(times['cli_show'])
    for form in OTHER_FORMS:
        ms = median_ms(times[form])
        print(json.dumps({'bench': 'cli_show_other_form', 'form': form, 'n': n, 'ms': ms,
                          'repeats': repeats, 'command': shown,
                          'baseline': "robot-memory show, the writer's own form",
                          'baseline_ms': show, 'ratio': round(ms / show, 2),
                          'goal_ratio': GOAL_OTHER_FORM_RATIO,
                          'met': (ms / show <= GOAL_OTHER_FORM_RATIO) if judged else None}),
              flush=True)
    ours = median_ms(times['load_save_ours'])
    line = {'bench': 'load_save_process', 'n': n, 'ms': ours, 'repeats': repeats,
            'baseline': 'OpenCastor load_memory + save_memory, whole process',
            'goal_speedup': GOAL_SPEEDUP}
    if reference:
        theirs = median_ms(times['load_save_reference'])
        line.update(baseline_ms=theirs, ratio=round(ours / theirs, 3),
                    speedup=round(theirs / ours, 1),
                    met=(theirs / ours >= GOAL_SPEEDUP) if judged else None)
    else:
        line.update(baseline_ms=None, ratio=None, speedup=None, met=None,
                    note='opencastor is not installed, so the reference was not measured '
                         '(pip install --no-deps opencastor: a benchmark-only dependency, of '
                         'which only the memory schema is imported; its own dependencies pin '
                         'click below what the tests need)')
    print(json.dumps(line), flush=True)
    start = {'bench': 'python_start', 'ms': median_ms(times['python_reexec']),
             'repeats': repeats,
             'baseline': f'python -c pass with {BOOTSTRAP_GUARD}=1 (no re-exec)',
             'baseline_ms': median_ms(times['python_bootstrapped'])}
    start['ratio'] = round(start['ms'] / start['baseline_ms'], 2)
    start['reexec_ms'] = round(start['ms'] - start['baseline_ms'], 1)
    start['reexec_in_figures'] = BOOTSTRAP_GUARD not in os.environ
    print(json.dumps(start), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
