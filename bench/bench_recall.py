"""Benchmark of substrate recall; prints one JSON object a line.

``recall_keyword``  ``Substrate.recall`` (keyword only, k=10, access counts and salience
                    updated as in real use) over n robot-like records: p50 / p99 in ms, and
                    the ratio of the p50 to a bare ``SELECT rowid FROM substrate_fts WHERE
                    substrate_fts MATCH ? ORDER BY bm25(substrate_fts) LIMIT 10`` with the
                    same sanitised query on the same data in the same run.
                    Goal: p50 < 10 ms at n = 100,000.
``recall_quality``  recall@5 of keyword, vector (local hashing embedder) and hybrid (RRF)
                    search on ``bench/data/recall_quality.jsonl``: memories plus
                    paraphrased queries with known answers.

Usage: ``python bench/bench_recall.py [--quick] [--n N] [--queries Q]``.
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

try:
    from robot_memory.substrate import Substrate
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from robot_memory.substrate import Substrate
from robot_memory.substrate import HashingEmbedder
from robot_memory.substrate.text import fts_query

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DATA = pathlib.Path(__file__).resolve().parent / 'data' / 'recall_quality.jsonl'
ROOMS = ['kitchen', 'hallway', 'garage', 'study', 'bedroom', 'lounge', 'bathroom', 'office',
         'basement', 'garden', 'patio', 'nursery', 'laundry', 'playroom', 'cellar', 'attic']
THINGS = ['charging dock', 'lidar', 'left wheel', 'right wheel', 'gripper', 'depth camera',
          'bumper', 'battery', 'arm joint', 'speaker', 'microphone', 'router', 'door',
          'window', 'carpet', 'stairs', 'ramp', 'elevator', 'thermostat', 'fridge', 'sofa',
          'table', 'chair', 'lamp', 'cat', 'dog', 'toys', 'boxes', 'plants', 'curtains']
STATES = ['is blocked', 'is slippery', 'needs cleaning', 'makes a clicking noise',
          'drifts', 'overheats', 'is out of reach', 'was moved', 'is fragile', 'is noisy',
          'fails intermittently', 'needs recalibration', 'is off limits', 'is wet',
          'has low signal', 'is locked', 'is open', 'sticks', 'is bright', 'is dark']
WHEN = ['in the morning', 'at night', 'after rain', 'on weekends', 'during calls',
        'after mopping', 'under load', 'at dusk', 'when cold', 'after updates', '']


def robot_texts(count: int, seed: int = 1) -> list:
    """``count`` distinct robot-like memory texts."""
    rng = random.Random(seed)
    texts = []
    for index in range(count):
        text = (f'The {rng.choice(THINGS)} in the {rng.choice(ROOMS)} {rng.choice(STATES)} '
                f'{rng.choice(WHEN)}').strip()
        texts.append(f'{text} (note {index})')
    return texts


def queries(count: int, seed: int = 2) -> list:
    """Keyword queries a robot would ask."""
    rng = random.Random(seed)
    return [f'{rng.choice(THINGS)} {rng.choice(ROOMS)} {rng.choice(STATES).split()[-1]}'
            for _ in range(count)]


def percentile(values: list, share: float) -> float:
    """The ``share`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(share * len(ordered))) - 1))]


def bench_keyword(n: int, query_count: int, directory: pathlib.Path) -> dict:
    """p50 / p99 of keyword recall over n records and the bare FTS5 baseline."""
    with Substrate(directory / f'recall-{n}.db') as substrate:
        texts = robot_texts(n)
        for start in range(0, n, 10_000):
            substrate.learn_many(texts[start:start + 10_000], NOW, type='episodic')
        asked = queries(query_count)
        for query in asked[:20]:
            substrate.recall(query, k=10, now=NOW)
        times, baseline = [], []
        conn = substrate.db.conn
        for query in asked:
            started = time.perf_counter()
            substrate.recall(query, k=10, now=NOW)
            times.append((time.perf_counter() - started) * 1000.0)
            started = time.perf_counter()
            conn.execute('SELECT rowid FROM substrate_fts WHERE substrate_fts MATCH ? '
                         'ORDER BY bm25(substrate_fts) LIMIT 10', (fts_query(query),)).fetchall()
            baseline.append((time.perf_counter() - started) * 1000.0)
    p50 = statistics.median(times)
    base = statistics.median(baseline)
    return {'bench': 'recall_keyword', 'n': n, 'queries': len(times),
            'p50_ms': round(p50, 3), 'p99_ms': round(percentile(times, 0.99), 3),
            'baseline_p50_ms': round(base, 3),
            'baseline_p99_ms': round(percentile(baseline, 0.99), 3),
            'ratio': round(p50 / base, 3) if base > 0 else None,
            'goal': 'p50 < 10 ms', 'met': p50 < 10.0 if n >= 100_000 else None}


def load_quality(path: pathlib.Path = DATA) -> tuple:
    """(memories, [(query, answer)]) of the retrieval-quality set."""
    memories, pairs = [], []
    for line in path.read_text(encoding='utf-8').splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        if 'memory' in item:
            memories.append(item['memory'])
        else:
            pairs.append((item['query'], item['answer']))
    return memories, pairs


def bench_quality(directory: pathlib.Path, limit=None) -> dict:
    """recall@5 of keyword, vector and hybrid search on the quality set."""
    memories, pairs = load_quality()
    pairs = pairs[:limit] if limit else pairs
    with Substrate(directory / 'quality.db', embedder=HashingEmbedder()) as substrate:
        substrate.learn_many(memories, NOW, type='semantic')
        modes = {'keyword': {'vectors': False}, 'vector': {'keywords': False},
                 'hybrid': {}}
        result = {'bench': 'recall_quality', 'n': len(memories), 'queries': len(pairs), 'k': 5}
        for name, options in modes.items():
            found = 0
            for query, answer in pairs:
                hits = substrate.recall(query, k=5, now=NOW, reinforce=False, **options).hits
                found += any(hit.text == answer for hit in hits)
            result[f'{name}_recall_at_5'] = round(found / len(pairs), 4)
    return result


def main(argv=None) -> int:
    """Run the benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small n for a smoke run')
    parser.add_argument('--n', type=int, action='append', help='record counts (repeatable)')
    parser.add_argument('--queries', type=int, default=200, help='timed queries per n')
    args = parser.parse_args(argv)
    sizes = args.n or ([1000] if args.quick else [10_000, 100_000])
    query_count = 30 if args.quick else args.queries
    with tempfile.TemporaryDirectory() as directory:
        for n in sizes:
            print(json.dumps(bench_keyword(n, query_count, pathlib.Path(directory))), flush=True)
        print(json.dumps(bench_quality(pathlib.Path(directory), 30 if args.quick else None)),
              flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
