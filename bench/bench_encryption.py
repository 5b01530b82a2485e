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
Encryption at rest: what sealing sensitive typed records costs learn, recall and rotate-key.

``learn_sealed``: median per-learn time of high-sensitivity texts stored encrypted, against
the same texts learned into a store with encryption off (baseline, same run).
``recall_sealed``: keyword recall p50 over ``n`` records of which a tenth are encrypted (the
in-memory index of the encrypted subset already built), against the same records and
queries with encryption off. ``recall_first``: the first recall after an encrypted record
was learned (the in-memory index is patched with it), against a warm recall.
``rotate_key``: re-sealing every encrypted record under a new key in one transaction,
against reading them all. The stores compared take turns, so both see the same load.

Usage: ``python bench/bench_encryption.py [--quick]``; prints one JSON object a line.
"""

import argparse
import datetime as dt
import json
import pathlib
import random
import statistics
import sys
import tempfile
import time

from robot_memory.substrate import Substrate

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=dt.timezone.utc)
WORDS = ('dock charger hallway kitchen door lift floor wheel encoder battery sensor lidar '
         'camera bumper cliff ramp carpet tile stairs window garden office lab desk chair '
         'visitor badge nurse patient medicine room corridor elevator alarm fire exit').split()


def _texts(count: int, seed: int) -> list:
    rng = random.Random(seed)
    return [f'{" ".join(rng.choice(WORDS) for _ in range(7))} note {index}'
            for index in range(count)]


def _fill(path: pathlib.Path, n: int, encrypt: bool) -> Substrate:
    substrate = Substrate(path, encrypt_from='high' if encrypt else None)
    texts = _texts(n, 1)
    sealed = max(1, n // 10)
    substrate.learn_many(texts[sealed:], NOW, type='working', sensitivity='low')
    substrate.learn_many(texts[:sealed], NOW, type='working', sensitivity='high')
    return substrate


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


def bench_learn(root: pathlib.Path, n: int) -> dict:
    """Median per-learn time with encryption on and off, the two stores taking turns."""
    texts = _texts(n, 2)
    stores = {encrypt: Substrate(root / f'learn-{encrypt}.db',
                                 encrypt_from='high' if encrypt else None)
              for encrypt in (True, False)}
    times = {True: [], False: []}
    for number, text in enumerate(texts):
        for encrypt, substrate in stores.items():
            start = time.perf_counter()
            substrate.learn(text, now=NOW + dt.timedelta(seconds=number), sensitivity='high',
                            type='working')
            times[encrypt].append(time.perf_counter() - start)
    for substrate in stores.values():
        substrate.close()
    medians = {encrypt: statistics.median(values) for encrypt, values in times.items()}
    return {'bench': 'learn_sealed', 'n': n, 'ms': _ms(medians[True]),
            'baseline_ms': _ms(medians[False]), 'baseline': 'encryption off',
            'ratio': round(medians[True] / medians[False], 3)}


def bench_recall(root: pathlib.Path, n: int, queries: int) -> list:
    """
    Recall p50 with a tenth of the records encrypted, and a first (index-patching) recall.

    The two stores answer each query in turn, so both see the same load on the machine.
    """
    rng = random.Random(3)
    asked = [' '.join(rng.sample(WORDS, 2)) for _ in range(queries)]
    stores = {encrypt: _fill(root / f'recall-{encrypt}.db', n, encrypt)
              for encrypt in (True, False)}
    times = {True: [], False: []}
    for substrate in stores.values():
        substrate.recall(asked[0], now=NOW, trust='hyper', reinforce=False)
    for query in asked:
        for encrypt, substrate in stores.items():
            start = time.perf_counter()
            substrate.recall(query, now=NOW, trust='hyper', reinforce=False)
            times[encrypt].append(time.perf_counter() - start)
    p50 = {encrypt: statistics.median(values) for encrypt, values in times.items()}
    sealed = stores[True]
    sealed.learn('a fresh sealed note about the lidar', now=NOW + dt.timedelta(seconds=1),
                 sensitivity='high', type='working')
    start = time.perf_counter()
    sealed.recall(asked[0], now=NOW, trust='hyper', reinforce=False)
    first = time.perf_counter() - start
    start = time.perf_counter()
    sealed.recall(asked[0], now=NOW, trust='hyper', reinforce=False)
    warm = time.perf_counter() - start
    for substrate in stores.values():
        substrate.close()
    count = max(1, n // 10)
    return [{'bench': 'recall_sealed', 'n': n, 'sealed': count, 'p50_ms': _ms(p50[True]),
             'baseline_p50_ms': _ms(p50[False]), 'baseline': 'encryption off',
             'ratio': round(p50[True] / p50[False], 3), 'met': p50[True] <= 2 * p50[False]},
            {'bench': 'recall_first', 'n': n, 'sealed': count + 1, 'ms': _ms(first),
             'baseline_ms': _ms(warm), 'baseline': 'warm recall',
             'ratio': round(first / warm, 3)}]


def bench_rotate(root: pathlib.Path, n: int) -> dict:
    """rotate-key over the encrypted tenth of ``n`` records, against opening them all."""
    with _fill(root / 'rotate.db', n, True) as substrate:
        start = time.perf_counter()
        opened = substrate.rows('key_id IS NOT NULL')
        read = time.perf_counter() - start
        start = time.perf_counter()
        result = substrate.rotate_key(NOW, actor='bench')
        rotate = time.perf_counter() - start
    assert result['records'] == len(opened)
    return {'bench': 'rotate_key', 'n': result['records'], 'ms': _ms(rotate),
            'baseline_ms': _ms(read), 'baseline': 'decrypting them all',
            'ratio': round(rotate / read, 3)}


def main(argv=None) -> int:
    """Run the benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small sizes (smoke test)')
    args = parser.parse_args(argv)
    n, learns, queries = (500, 50, 20) if args.quick else (10_000, 500, 200)
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        records = [bench_learn(root, learns)] + bench_recall(root, n, queries)
        records.append(bench_rotate(root, n))
    for record in records:
        print(json.dumps(record))
    return 0


if __name__ == '__main__':
    sys.exit(main())
