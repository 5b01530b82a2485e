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
Fact revision: which pairs supersede, stay side by side or are contested; learn cost per fact.

``fact_pairs``: every pair of ``test/data/fact_pairs.jsonl`` learned into a fresh substrate;
a decision is correct when the first fact is superseded, kept active or contested as the
file expects. The baseline is the former rule, in the same run: any other object under the
same subject, predicate and conditions supersedes (what the one-active-fact key did), so
its ``lost`` counts the compatible or unsure facts that rule made unrecallable.
``learn_one_subject``: per-learn time of semantic facts that all share one subject (the
conflict check reads that subject's live facts), median over the run, against the same
number of facts with distinct subjects.

Usage: ``python bench/bench_revision.py [--quick]``; prints one JSON object a line.
"""

import argparse
import datetime as dt
import json
import pathlib
import statistics
import sys
import tempfile
import time

from robot_memory.substrate import Substrate
from robot_memory.substrate import textrules

REPO = pathlib.Path(__file__).resolve().parents[1]
PAIRS = REPO / 'test' / 'data' / 'fact_pairs.jsonl'
NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=dt.timezone.utc)


def _fields(fact) -> dict:
    fields = {'text': fact} if isinstance(fact, str) else dict(fact)
    fields.setdefault('type', 'semantic')
    return fields


def _key(fields) -> tuple:
    """(subject, predicate, conditions, object) as the former rule keyed a fact."""
    payload = fields.get('payload')
    if payload is None:
        subject, predicate, value = textrules.parse_fact(fields['text']) or (
            textrules.normalise(fields['text']), 'holds', True)
    else:
        subject, predicate, value = payload['subject'], payload['predicate'], payload['object']
    conditions = json.dumps(fields.get('conditions') or {}, sort_keys=True)
    return (textrules.normalise(subject), textrules.normalise(predicate), conditions,
            textrules.normalise(value) if isinstance(value, str) else value)


def bench_pairs() -> dict:
    """Share of pairs decided as expected, by this code and by the former rule."""
    pairs = [json.loads(line) for line in PAIRS.read_text(encoding='utf-8').splitlines()
             if line.strip()]
    correct = {'supersede': 0, 'keep': 0, 'contest': 0}
    baseline = dict.fromkeys(correct, 0)
    total = dict.fromkeys(correct, 0)
    lost = baseline_lost = 0
    for pair in pairs:
        expect = pair['expect']
        total[expect] += 1
        first, second = _fields(pair['first']), _fields(pair['second'])
        with Substrate(':memory:') as store:
            old = store.learn(now=NOW, **first).record_id
            store.learn(now=NOW + dt.timedelta(hours=1), **second)
            status = store.get(old).status
        decided = {'superseded': 'supersede', 'active': 'keep', 'contested': 'contest'}[status]
        correct[expect] += decided == expect
        lost += status == 'superseded' and expect != 'supersede'
        old_key, new_key = _key(first), _key(second)
        former = 'supersede' if old_key[:3] == new_key[:3] and old_key[3] != new_key[3] \
            else 'keep'
        baseline[expect] += former == expect
        baseline_lost += former == 'supersede' and expect != 'supersede'
    result = {'bench': 'fact_pairs', 'n': len(pairs), 'pairs': total,
              'correct': sum(correct.values()), 'baseline_correct': sum(baseline.values()),
              'lost': lost, 'baseline_lost': baseline_lost,
              'baseline': 'former rule: another object under subject + predicate supersedes'}
    for name in total:
        result[f'{name}_accuracy'] = round(correct[name] / total[name], 4)
        result[f'baseline_{name}_accuracy'] = round(baseline[name] / total[name], 4)
    result['ratio'] = round(result['correct'] / max(result['baseline_correct'], 1), 3)
    return result


def _learn_ms(directory: pathlib.Path, name: str, texts: list) -> float:
    times = []
    with Substrate(directory / f'{name}.db') as store:
        for text in texts:
            start = time.perf_counter()
            store.learn(text, type='semantic', now=NOW)
            times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def bench_one_subject(n: int, directory: pathlib.Path) -> dict:
    """Median ms per learn: n facts of one subject vs n facts of n subjects."""
    shared = [f'The robot has tool number {index}' for index in range(n)]
    distinct = [f'Robot {index} has a tool' for index in range(n)]
    ms = _learn_ms(directory, 'shared', shared)
    base = _learn_ms(directory, 'distinct', distinct)
    return {'bench': 'learn_one_subject', 'n': n, 'ms': round(ms, 4),
            'baseline_ms': round(base, 4), 'ratio': round(ms / base, 3),
            'baseline': 'the same number of facts, each of its own subject'}


def main(argv=None) -> int:
    """Run the benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small n for a smoke run')
    args = parser.parse_args(argv)
    print(json.dumps(bench_pairs()), flush=True)
    with tempfile.TemporaryDirectory() as directory:
        for n in ([200] if args.quick else [1000, 5000]):
            print(json.dumps(bench_one_subject(n, pathlib.Path(directory))), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
