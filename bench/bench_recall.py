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
Benchmark of substrate recall and learn; prints one JSON object a line. Figures are medians.

``recall_keyword``  ``Substrate.recall`` (keyword only, k=10, access counts and salience
                    updated as in real use) over n robot-like records: p50 / p99 in ms, and
                    the ratio of the p50 to a bare ``SELECT rowid FROM substrate_fts WHERE
                    substrate_fts MATCH ? ORDER BY bm25(substrate_fts) LIMIT 10`` with the
                    same sanitised query on the same data in the same run.
                    Goal: p50 < 10 ms at n = 100,000.
``recall_hybrid``   the same with vectors (hashing, and the semantic model when installed),
                    every recall writing its recall log as in real use: p50 / p99, and the
                    ratio to the baseline measured in the same run: the query's embedding,
                    an exhaustive product of every stored vector with it (chunk by chunk,
                    the scan the index's sketch avoids) and the bare FTS5 query.
                    Goal: p50 < 20 ms and peak RSS < 300 MB at n = 100,000. For the
                    semantic model the 100,000 stored vectors are random unit vectors under
                    the model's name (embedding them for real would take minutes); queries
                    are embedded by the model, so every step of a recall runs for real.
``learn_rate``      per-item ``Substrate.learn`` (dedup on) into n records: learns per
                    second, against a bare one-row INSERT + COMMIT into an FTS5 table.
                    Goal at n = 100,000: >= 500/s keyword only, >= 100/s semantic.
                    Each scenario runs in its own process; ``peak_rss_mb`` is that
                    process's peak (goal < 300 MB).
``recall_quality``  R@1 and R@5 of keyword, vector and hybrid search on
                    ``bench/data/recall_quality.jsonl`` per embedder: overall, for the
                    paraphrases (queries with under a quarter of their content words in the
                    answer), and for the even (``dev``, where the fusion weights were chosen)
                    and odd (``test``, held out) halves of the queries.
``context_query``   the context block for a query (``GetContext.query``) over an n-entry
                    memory file, as memory_node builds it (the document's context index,
                    keywords only): p50 ms of ``context_relevance.relevant_ids`` + the block
                    with the FTS5 table of the entries kept from the previous call
                    (``p50_ms``) and built anew each call as before issue 38's point 8
                    (``cold_p50_ms``), against the block without a query
                    (``baseline_p50_ms``); ``ratio`` and ``cold_ratio`` to it.
``embed_speed``     each installed carrier's model (embedding.CARRIERS; setup.sh installs
                    both on x86-64 Linux) on its own, one thread: the first embed (the
                    optimised graph cached), p50 / p99 ms to embed one query of the quality
                    set, texts per second embedding its memories in batches, and the
                    resident memory the loaded model adds.

Usage: ``python bench/bench_recall.py [--quick] [--n N] [--queries Q] [--learns L]
[--only SCENARIO] [--data DIR]``. ``--only`` (repeatable: keyword, hybrid, learn, quality,
embed, context)
runs some scenarios; ``--data`` keeps the n-record databases in DIR and reuses them in later
runs (loading 100,000 records takes minutes; each scenario still works on a fresh copy).
"""

import argparse
import concurrent.futures
import datetime as dt
import json
import multiprocessing
import pathlib
import random
import resource
import shutil
import sqlite3
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
from robot_memory.substrate.embedding import carrier_files
from robot_memory.substrate.embedding import CARRIERS
from robot_memory.substrate.embedding import semantic_model_files
from robot_memory.substrate.embedding import SemanticEmbedder
from robot_memory.substrate.textrules import content_tokens
from robot_memory.substrate.textrules import fts_query
from robot_memory.substrate.vector_index import CHUNK

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
SCENARIOS = ('keyword', 'hybrid', 'learn', 'quality', 'embed', 'context')
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
    """Return the ``share`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(share * len(ordered))) - 1))]


def bench_context_query(n: int, query_count: int) -> dict:
    """Time the block for a query over n entries: FTS5 table kept, rebuilt each call, none."""
    from robot_memory.rcan.context import build_context
    from robot_memory.rcan.context import ContextIndex
    from robot_memory.rcan.schema import MemoryDocument
    from robot_memory.rcan.schema import MemoryEntry
    from robot_memory.substrate import context_relevance
    rng = random.Random(3)
    entries = [MemoryEntry(id=f'mem-{index:08x}', type='hardware_observation', text=text,
                           confidence=round(0.3 + 0.7 * rng.random(), 3),
                           first_seen=NOW - dt.timedelta(days=30),
                           last_reinforced=NOW - dt.timedelta(hours=240 * rng.random()),
                           observation_count=3)
               for index, text in enumerate(robot_texts(n))]
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=NOW, entries=entries)
    index = ContextIndex(document)
    asked = queries(query_count, seed=4)

    def block(query):
        relevant = context_relevance.relevant_ids(document, query, NOW) if query else []
        return build_context(document, NOW, token_budget=400, index=index, relevant=relevant)

    def timed(call, *args) -> float:
        started = time.perf_counter()
        call(*args)
        return (time.perf_counter() - started) * 1000.0

    def cold(query):
        context_relevance.forget_keyword_indexes()
        return block(query)

    block('')  # the context index's first walk
    baseline = [timed(block, '') for _ in asked]
    cold_times = [timed(cold, query) for query in asked[:max(3, len(asked) // 5)]]
    block(asked[0])
    warm = [timed(block, query) for query in asked]
    p50, cold_p50, base_p50 = (statistics.median(values)
                               for values in (warm, cold_times, baseline))
    return {'bench': 'context_query', 'n': n, 'queries': len(asked),
            'p50_ms': round(p50, 2), 'p99_ms': round(percentile(warm, 0.99), 2),
            'cold_p50_ms': round(cold_p50, 2), 'baseline_p50_ms': round(base_p50, 2),
            'ratio': round(p50 / base_p50, 2), 'cold_ratio': round(cold_p50 / base_p50, 2),
            'baseline': 'the block without a query (context index)'}


def bench_keyword(n: int, query_count: int, directory: pathlib.Path) -> dict:
    """p50 / p99 of keyword recall over n records and the bare FTS5 baseline."""
    with Substrate(_loaded(directory, n, None, 'recall')) as substrate:
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


def make_embedder(name: str):
    """Return the embedder called ``name``: ``hashing`` or ``semantic``."""
    return SemanticEmbedder() if name == 'semantic' else HashingEmbedder()


def embedders() -> list:
    """Return the embedders this machine can run: hashing, and semantic when installed."""
    return ['hashing'] + (['semantic'] if semantic_model_files() is not None else [])


class RandomVectors:
    """Stand-in for bulk loading: random unit vectors under another embedder's name."""

    def __init__(self, name: str, dim: int, seed: int = 3):
        self.name = name
        self.dim = dim
        self.rng = random.Random(seed)

    def embed(self, texts):
        """One random unit vector per text."""
        import numpy
        matrix = numpy.random.default_rng(self.rng.randrange(1 << 30)).standard_normal(
            (len(texts), self.dim)).astype(numpy.float32)
        return matrix / numpy.linalg.norm(matrix, axis=1, keepdims=True)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def _load(substrate, n: int, embedder_name) -> None:
    texts = robot_texts(n)
    real = substrate.embedder
    if embedder_name == 'semantic':
        substrate.embedder = RandomVectors(real.name, real.dim)
    for start in range(0, n, 10_000):
        substrate.learn_many(texts[start:start + 10_000], NOW, type='episodic')
    substrate.embedder = real


def _loaded(directory, n: int, embedder_name, purpose: str) -> pathlib.Path:
    """Return a fresh copy of the n-record database of ``embedder_name`` (loaded once per run)."""
    directory = pathlib.Path(directory)
    source = directory / f'loaded-{embedder_name}-{n}.db'
    if not source.exists():
        embedder = make_embedder(embedder_name) if embedder_name else None
        _remove_database(directory / 'loading.db')  # left by an interrupted run
        with Substrate(directory / 'loading.db', embedder=embedder) as substrate:
            _load(substrate, n, embedder_name)
        (directory / 'loading.db').rename(source)
    target = directory / f'{purpose}-{embedder_name}-{n}.db'
    _remove_database(target)  # a WAL left by an earlier run must not meet the new copy
    shutil.copyfile(source, target)
    return target


def _remove_database(path: pathlib.Path) -> None:
    """Remove an SQLite database file with its WAL and shared-memory files."""
    for suffix in ('', '-wal', '-shm'):
        pathlib.Path(f'{path}{suffix}').unlink(missing_ok=True)


def exhaustive_scores(index, vector):
    """Cosines of ``vector`` with every row of ``index`` (the scan its sketch avoids)."""
    import numpy
    return numpy.concatenate([index._scores(slice(start, min(index.count, start + CHUNK)),
                                            vector)
                              for start in range(0, index.count, CHUNK)])


def bench_hybrid(n: int, query_count: int, directory: str, embedder_name: str) -> dict:
    """p50 / p99 of hybrid recall over n records, and the bare embed + matmul + FTS5 baseline."""
    import numpy
    embedder = make_embedder(embedder_name)
    with Substrate(_loaded(directory, n, embedder_name, 'hybrid'), embedder=embedder) as substrate:
        asked = queries(query_count)
        for query in asked[:10]:
            substrate.recall(query, k=10, now=NOW)
        conn = substrate.db.conn
        index = substrate.vector_index()
        times, baseline = [], []
        for query in asked:
            started = time.perf_counter()
            substrate.recall(query, k=10, now=NOW)
            times.append((time.perf_counter() - started) * 1000.0)
            started = time.perf_counter()
            sims = exhaustive_scores(index, embedder.embed([query])[0])
            numpy.argpartition(-sims, 40)[:40]
            conn.execute('SELECT rowid FROM substrate_fts WHERE substrate_fts MATCH ? '
                         'ORDER BY bm25(substrate_fts) LIMIT 10', (fts_query(query),)).fetchall()
            baseline.append((time.perf_counter() - started) * 1000.0)
        full_loads = substrate.vector_index().full_loads
    p50 = statistics.median(times)
    base = statistics.median(baseline)
    return {'bench': 'recall_hybrid', 'embedder': embedder.name, 'n': n, 'queries': len(times),
            'p50_ms': round(p50, 3), 'p99_ms': round(percentile(times, 0.99), 3),
            'baseline_p50_ms': round(base, 3), 'ratio': round(p50 / base, 3),
            'matrix_full_loads': full_loads, 'peak_rss_mb': _peak_rss_mb(),
            'goal': 'p50 < 20 ms, rss < 300 MB',
            'met': (p50 < 20.0 and _peak_rss_mb() < 300) if n >= 100_000 else None}


def bench_learn(n: int, count: int, directory: str, embedder_name) -> dict:
    """Per-item learns per second into n records, and a bare INSERT + COMMIT baseline."""
    embedder = make_embedder(embedder_name) if embedder_name else None
    with Substrate(_loaded(directory, n, embedder_name, 'learn'), embedder=embedder) as substrate:
        rng = random.Random(7)
        fresh = [f'The {rng.choice(THINGS)} near the {rng.choice(ROOMS)} '
                 f'{rng.choice(STATES)} since visit {index}' for index in range(count + 5)]
        for text in fresh[:5]:
            substrate.learn(text, now=NOW)
        times = []
        for text in fresh[5:]:
            started = time.perf_counter()
            substrate.learn(text, now=NOW)
            times.append(time.perf_counter() - started)
        full_loads = substrate.vector_index().full_loads if embedder is not None else None
    baseline_path = pathlib.Path(directory) / f'baseline-{embedder_name}-{n}.db'
    _remove_database(baseline_path)
    conn = sqlite3.connect(baseline_path, isolation_level=None)
    conn.execute('PRAGMA journal_mode = WAL')
    conn.execute('PRAGMA synchronous = NORMAL')
    conn.execute('CREATE VIRTUAL TABLE t USING fts5(text)')
    baseline = []
    for text in fresh[5:]:
        started = time.perf_counter()
        conn.execute('BEGIN IMMEDIATE')
        conn.execute('INSERT INTO t (text) VALUES (?)', (text,))
        conn.execute('COMMIT')
        baseline.append(time.perf_counter() - started)
    conn.close()
    rate = 1.0 / statistics.median(times)
    base = 1.0 / statistics.median(baseline)
    # The goals are for keyword-only learns and the semantic model; the hashing embedder is
    # a fallback without meaning (it adds nothing to recall), shown for reference.
    goal = {'semantic': 100, None: 500}.get(embedder_name)
    return {'bench': 'learn_rate', 'embedder': embedder.name if embedder else 'none', 'n': n,
            'learns': len(times), 'per_s': round(rate, 1), 'baseline_per_s': round(base, 1),
            'ratio': round(base / rate, 3), 'matrix_full_loads': full_loads,
            'peak_rss_mb': _peak_rss_mb(), 'goal': f'>= {goal}/s' if goal else None,
            'met': rate >= goal if goal and n >= 100_000 else None}


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


def is_paraphrase(query: str, answer: str) -> bool:
    """Under a quarter of the query's content words appear in the answer."""
    asked = content_tokens(query)
    return len(asked & content_tokens(answer)) < 0.25 * max(1, len(asked))


def bench_quality(directory: pathlib.Path, embedder_name: str, limit=None) -> dict:
    """R@1 and R@5 of keyword, vector and hybrid search on the quality set."""
    memories, pairs = load_quality()
    pairs = pairs[:limit] if limit else pairs
    groups = {'all': range(len(pairs)),
              'paraphrase': [index for index, pair in enumerate(pairs) if is_paraphrase(*pair)],
              'dev': range(0, len(pairs), 2), 'test': range(1, len(pairs), 2)}
    embedder = make_embedder(embedder_name)
    path = directory / f'quality-{embedder_name}.db'
    with Substrate(path, embedder=embedder) as substrate:
        substrate.learn_many(memories, NOW, type='semantic')
        result = {'bench': 'recall_quality', 'embedder': embedder.name, 'n': len(memories),
                  'live': substrate.count(), 'queries': len(pairs),
                  'paraphrases': len(groups['paraphrase'])}
        modes = {'keyword': {'vectors': False}, 'vector': {'keywords': False}, 'hybrid': {}}
        for name, options in modes.items():
            ranks = []
            for query, answer in pairs:
                hits = substrate.recall(query, k=5, now=NOW, reinforce=False, **options).hits
                texts = [hit.text for hit in hits]
                ranks.append(texts.index(answer) + 1 if answer in texts else None)
            for group, members in groups.items():
                members = list(members)
                for cut in (1, 5):
                    found = sum(1 for index in members
                                if ranks[index] is not None and ranks[index] <= cut)
                    key = f'{name}_r{cut}' + ('' if group == 'all' else f'_{group}')
                    result[key] = round(found / len(members), 4) if members else None
    best = {cut: max(result[f'keyword_r{cut}'], result[f'vector_r{cut}']) for cut in (1, 5)}
    result['hybrid_at_least_best_part'] = all(result[f'hybrid_r{cut}'] >= best[cut]
                                              for cut in (1, 5))
    return result


def bench_embed(carrier: int, limit=None) -> dict:
    """Speed and added memory of the model of ``CARRIERS[carrier]`` (see the docstring)."""
    memories, pairs = load_quality()
    queries = [query for query, _ in pairs][:limit]
    before = _peak_rss_mb()
    started = time.perf_counter()
    embedder = SemanticEmbedder(*carrier_files(CARRIERS[carrier]))
    embedder.embed(['warm up'])
    first_ms = (time.perf_counter() - started) * 1000.0
    single = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed([query])
        single.append((time.perf_counter() - started) * 1000.0)
    batches = []
    for _ in range(3):
        started = time.perf_counter()
        embedder.embed(memories)
        batches.append(time.perf_counter() - started)
    return {'bench': 'embed_speed', 'embedder': embedder.name,
            'carrier': CARRIERS[carrier].distributions, 'queries': len(queries),
            'first_embed_ms': round(first_ms, 1), 'p50_ms': round(percentile(single, 0.5), 3),
            'p99_ms': round(percentile(single, 0.99), 3),
            'batch_per_s': round(len(memories) / min(batches), 1),
            'model_rss_mb': round(_peak_rss_mb() - before, 1), 'peak_rss_mb': _peak_rss_mb()}


def _isolated(function, *args) -> dict:
    """Run one scenario in a fresh process, so its peak RSS is its own."""
    context = multiprocessing.get_context('spawn')
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(function, *args).result()


def main(argv=None) -> int:
    """Run the benchmarks and print their JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='small n for a smoke run')
    parser.add_argument('--n', type=int, action='append', help='record counts (repeatable)')
    parser.add_argument('--queries', type=int, default=200, help='timed queries per n')
    parser.add_argument('--learns', type=int, default=300, help='timed learns per n')
    parser.add_argument('--only', action='append', choices=SCENARIOS,
                        help='run only this scenario (repeatable; default: all)')
    parser.add_argument('--data', type=pathlib.Path,
                        help='keep the loaded databases in this directory and reuse them')
    args = parser.parse_args(argv)
    sizes = args.n or ([1000] if args.quick else [10_000, 100_000])
    query_count = 30 if args.quick else args.queries
    learn_count = 30 if args.quick else args.learns
    chosen = set(args.only or SCENARIOS)
    with tempfile.TemporaryDirectory() as scratch:
        directory = scratch
        if args.data is not None:
            args.data.mkdir(parents=True, exist_ok=True)
            directory = str(args.data)
        for n in sizes:
            if 'keyword' in chosen:
                print(json.dumps(bench_keyword(n, query_count, pathlib.Path(directory))),
                      flush=True)
            if 'context' in chosen and n <= 10_000:
                print(json.dumps(bench_context_query(n, min(query_count, 50))), flush=True)
            for name in embedders() if 'hybrid' in chosen else ():
                print(json.dumps(_isolated(bench_hybrid, n, query_count, directory, name)),
                      flush=True)
            for name in [None] + embedders() if 'learn' in chosen else ():
                print(json.dumps(_isolated(bench_learn, n, learn_count, directory, name)),
                      flush=True)
        for name in embedders() if 'quality' in chosen else ():
            print(json.dumps(bench_quality(pathlib.Path(scratch), name,
                                           30 if args.quick else None)), flush=True)
        for index in range(len(CARRIERS)) if 'embed' in chosen else ():
            if carrier_files(CARRIERS[index]) is not None:
                print(json.dumps(_isolated(bench_embed, index, 30 if args.quick else None)),
                      flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
