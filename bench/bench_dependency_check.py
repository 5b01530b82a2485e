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
Benchmark of the start-up dependency check; prints one JSON object a line.

``memory_node`` and ``robot-memory`` call ``robot_memory.dependencies.exit_if_unmet``
before anything else, so its cost is paid by every CLI command (whose goal is to start
in under 100 ms). Each repeat is a fresh interpreter (what a user pays), timed from
outside:

``dependency_check``  ``python -c 'import robot_memory.dependencies as d;
                      d.exit_if_unmet("bench")'`` vs the baseline ``python -c 'import
                      robot_memory'`` (the interpreter and the package, no check):
                      ``ms - baseline_ms`` is what the check adds.
``dependency_check_in_process``  the same import and check timed inside the fresh
                      interpreter in CPU time (``process_time``: what the process spends,
                      not what a busy machine makes it wait), vs ``import argparse``
                      timed the same way (every CLI command imports it anyway).

Medians over the repeats. ``bytecode_cache`` says whether the interpreters could keep
compiled modules (no ``PYTHONDONTWRITEBYTECODE``): without, every start compiles.
Usage: ``python bench/bench_dependency_check.py [--quick] [--repeats N]``; run it with the
venv's python after ``source scripts/env.sh``.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
CHECK = 'import robot_memory.dependencies as d; d.exit_if_unmet("bench")'
BASELINE = 'import robot_memory'
TIMED = ('import time; t = time.process_time(); {code}; '
         'print((time.process_time() - t) * 1000.0)')
IN_PROCESS_BASELINE = 'import argparse'


def _environment() -> dict:
    env = dict(os.environ)
    try:
        import robot_memory  # noqa: F401 - installed (colcon or pip): use that
    except ImportError:  # a bare source checkout
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO),
                                                          env.get('PYTHONPATH')]))
    return env


def _time(code: str, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, '-c', code], env=env, check=True, cwd='/')
    return (time.perf_counter() - started) * 1000.0


def _time_inside(code: str, env: dict) -> float:
    run = subprocess.run([sys.executable, '-c', TIMED.format(code=code)], env=env, check=True,
                         cwd='/', capture_output=True, text=True)
    return float(run.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    """Run the benchmark and print its JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='5 repeats (smoke test)')
    parser.add_argument('--repeats', type=int, default=31, help='fresh interpreters each')
    args = parser.parse_args(argv)
    repeats = 5 if args.quick else args.repeats
    env = _environment()
    _time(CHECK, env)  # warm the file system cache (and write the bytecode cache)
    cache = not env.get('PYTHONDONTWRITEBYTECODE')
    checked, baseline, inside, inside_baseline = [], [], [], []
    for _ in range(repeats):  # interleaved, so a busy moment hits both alike
        baseline.append(_time(BASELINE, env))
        checked.append(_time(CHECK, env))
        inside_baseline.append(_time_inside(IN_PROCESS_BASELINE, env))
        inside.append(_time_inside(CHECK, env))
    ms, baseline_ms = statistics.median(checked), statistics.median(baseline)
    print(json.dumps({'bench': 'dependency_check', 'ms': round(ms, 2),
                      'baseline_ms': round(baseline_ms, 2), 'ratio': round(ms / baseline_ms, 3),
                      'added_ms': round(ms - baseline_ms, 2), 'repeats': repeats,
                      'bytecode_cache': cache}))
    ms, baseline_ms = statistics.median(inside), statistics.median(inside_baseline)
    print(json.dumps({'bench': 'dependency_check_in_process', 'ms': round(ms, 3),
                      'baseline_ms': round(baseline_ms, 3), 'baseline': IN_PROCESS_BASELINE,
                      'ratio': round(ms / baseline_ms, 3), 'repeats': repeats,
                      'bytecode_cache': cache}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
