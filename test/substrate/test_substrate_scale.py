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
Recall and learn at scale: rare-word dedup, negation, the int8 sketch index, batch embedding.

Speed itself is measured by ``bench/bench_recall.py``; these tests check that the faster
paths find what the exhaustive ones find.
"""

import datetime as dt
import json
import math
import random
import sqlite3

import numpy
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.substrate import dedup
from robot_memory.substrate import HashingEmbedder
from robot_memory.substrate import lexical
from robot_memory.substrate import record_tables
from robot_memory.substrate import SemanticEmbedder
from robot_memory.substrate import Substrate
from robot_memory.substrate import textrules
from robot_memory.substrate import vector_index
from robot_memory.substrate.rlm import import_chunks

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
COMMON = ['dock', 'kitchen', 'lidar', 'blocked', 'wheel', 'garage']
RARE = [f'rare{number}' for number in range(24)]


def _texts(count: int, seed: int) -> list:
    rng = random.Random(seed)
    texts = []
    for number in range(count):
        words = rng.sample(COMMON, 4) + rng.sample(RARE, rng.randrange(0, 3))
        texts.append(' '.join(words) + f' item{number % 7}')
    return texts


def test_rare_word_candidates_hold_every_record_that_can_reach_the_overlap(tmp_path):
    texts = _texts(300, seed=5)
    with Substrate(tmp_path / 'robot-memory.db') as store:
        store.learn_many(texts, NOW, type='semantic')
        conn = store.db.conn
        stored = dict(conn.execute('SELECT seq, text FROM substrate_records').fetchall())
        rng = random.Random(9)
        decided = 0
        for _ in range(60):
            words = set(rng.sample(COMMON, 3) + rng.sample(RARE, 3) + [f'item{rng.randrange(7)}'])
            for shared in (4, 5, 6):
                # A small probe: the COMMON words and item0..item6 are common, rareN rare.
                found = dedup.rare_word_candidates(conn, words, shared, probe=40)
                if found is None:
                    continue
                decided += 1
                truth = {seq for seq, text in stored.items()
                         if len(words & textrules.content_tokens(text)) >= shared}
                assert truth <= set(found), (words, shared)
        assert decided > 50, 'the rare-word path was hardly ever taken'
        assert dedup.rare_word_candidates(conn, set(COMMON), 5, probe=40) is None


def test_words_found_common_are_not_probed_again_and_the_candidates_stay_whole(tmp_path):
    texts = _texts(300, seed=5)
    with Substrate(tmp_path / 'robot-memory.db') as store:
        store.learn_many(texts, NOW, type='semantic')
        conn = store.db.conn
        probes = []
        conn.set_trace_callback(lambda sql: probes.append(sql) if sql.startswith('SELECT') and
                                'substrate_fts MATCH' in sql else None)
        common = set()
        rng = random.Random(9)
        for round_number in range(40):
            if round_number == 20:
                # Records deleted: "dock" may turn rare again; taken for common, it only
                # widens the candidates.
                conn.execute("DELETE FROM substrate_records WHERE text LIKE '%dock%' AND "
                             'seq % 3 = 0')
            stored = dict(conn.execute('SELECT seq, text FROM substrate_records').fetchall())
            words = set(rng.sample(COMMON, 3) + rng.sample(RARE, 3) + [f'item{rng.randrange(7)}'])
            for shared in (4, 5, 6):
                probes.clear()
                unknown = words - common
                found = dedup.rare_word_candidates(conn, words, shared, probe=40,
                                                   common_words=common)
                # Only words not yet known as common are probed.
                assert len(probes) == len(unknown)
                if found is None:
                    continue
                truth = {seq for seq, text in stored.items()
                         if len(words & textrules.content_tokens(text)) >= shared}
                assert truth <= set(found), (words, shared)
        conn.set_trace_callback(None)
        assert set(COMMON) <= common and not common & set(RARE)
        # The store keeps its own set, filled by its learns.
        store.learn_many([f'kitchen shelf {number}' for number in range(300)], NOW)
        store.learn('dock kitchen lidar rare1 rare2 rare3', now=NOW, type='semantic')
        assert 'kitchen' in store.common_words and 'rare1' not in store.common_words


def test_near_duplicate_is_found_among_many_records_sharing_its_common_words(tmp_path):
    with Substrate(tmp_path / 'robot-memory.db') as store:
        store.learn_many([f'The lidar in the kitchen is blocked by box {number}'
                          for number in range(600)], NOW, type='episodic')
        first = store.learn('The lidar near the kitchen door is blocked since the visit of '
                            'Tuesday', now=NOW, type='semantic')
        again = store.learn('the lidar near the kitchen door is blocked since visit of Tuesday '
                            'morning', now=NOW, type='semantic')
        assert again.duplicate and again.match == 'jaccard'
        assert again.record_id == first.record_id


@pytest.mark.parametrize('embedder', [None, HashingEmbedder()])
def test_a_negated_fact_is_no_duplicate_of_the_fact(tmp_path, embedder):
    with Substrate(tmp_path / 'robot-memory.db', embedder=embedder) as store:
        safe = store.learn('The charging dock in the hallway is safe to use', now=NOW)
        unsafe = store.learn('The charging dock in the hallway is not safe to use', now=NOW)
        # Not reinforcing the old fact: the denial supersedes it.
        assert not unsafe.duplicate and unsafe.replaced == [safe.record_id]
        again = store.learn('the charging dock in the hallway is not safe to use now', now=NOW)
        assert again.duplicate and again.record_id == unsafe.record_id


def test_a_negated_sentence_is_no_cosine_duplicate(tmp_path):
    with Substrate(tmp_path / 'robot-memory.db', embedder=SemanticEmbedder()) as store:
        safe = store.learn('the dock is safe', now=NOW, type='semantic')
        unsafe = store.learn('the dock is NOT safe', now=NOW, type='semantic')
        assert not unsafe.duplicate and unsafe.record_id != safe.record_id


def test_negated_reads_every_usual_negation():
    for text in ('The dock is not safe', "it isn't safe", 'never go there', 'No entry',
                 'the robot cannot climb stairs', 'it can’t climb'):
        assert textrules.negated(text), text
    for text in ('The dock is safe', 'Nothing' + 'ness', 'knot the rope', 'snow at night'):
        assert not textrules.negated(text), text


def _unit_rows(count: int, dim: int, seed: int) -> numpy.ndarray:
    # Like sentence vectors: most of their variance in a few dozen directions, plus noise.
    directions = numpy.random.default_rng(0).standard_normal((40, dim))
    rng = numpy.random.default_rng(seed)
    rows = rng.standard_normal((count, 40)) @ directions \
        + 2.0 * rng.standard_normal((count, dim))
    return (rows / numpy.linalg.norm(rows, axis=1, keepdims=True)).astype(numpy.float32)


def _index_of(rows: numpy.ndarray, tmp_path) -> tuple:
    conn = sqlite3.connect(tmp_path / 'vectors.db')
    conn.execute('CREATE TABLE substrate_records (seq INTEGER PRIMARY KEY, embedding BLOB, '
                 'embedding_model TEXT, status TEXT)')
    for statement in record_tables.VECTOR_TRIGGERS:
        conn.execute(statement)
    conn.executemany("INSERT INTO substrate_records VALUES (?, ?, 'm', 'active')",
                     [(number + 1, row.tobytes()) for number, row in enumerate(rows)])
    conn.commit()
    index = vector_index.VectorIndex('m', rows.shape[1])
    index.refresh(conn)
    return index, conn


def test_sketch_search_finds_the_exact_top_hits(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_index, 'EXACT_LIMIT', 500)
    monkeypatch.setattr(vector_index, 'MIN_POOL', 100)
    monkeypatch.setattr(vector_index, 'POOL_PER_HIT', 10)
    rows = _unit_rows(3000, 384, seed=1)
    index, conn = _index_of(rows, tmp_path)
    assert index.sketch is not None, 'beyond EXACT_LIMIT rows the index keeps a sketch'
    queries = _unit_rows(40, 384, seed=2)
    found = 0
    for query in queries:
        exact = numpy.argsort(-(rows @ query))[:10] + 1
        hits = index.search(query, 10)
        assert len(hits) == 10
        for seq, similarity in hits:  # int8 cosines stay within 0.01 of float32
            assert abs(similarity - float(rows[seq - 1] @ query)) < 0.01
        found += len(set(exact.tolist()) & {seq for seq, _ in hits})
    assert found >= 0.95 * 10 * len(queries), found
    # A stored vector finds itself first, appended after the sketch was made, or not at all
    # once its record is gone.
    fresh = _unit_rows(1, 384, seed=3)[0]
    conn.execute("INSERT INTO substrate_records VALUES (5000, ?, 'm', 'active')",
                 (fresh.tobytes(),))
    conn.execute("UPDATE substrate_records SET status = 'archived' WHERE seq = 7")
    conn.commit()
    index.refresh(conn)
    assert index.full_loads == 1 and index.patches == 1
    assert index.search(fresh, 1)[0][0] == 5000
    assert 7 not in [seq for seq, _ in index.search(rows[6], 5)]
    assert all(index.search(rows[seq - 1], 1)[0][0] == seq for seq in (1, 2999))


def test_the_index_grows_by_blocks_and_compacts_without_losing_a_row(tmp_path, monkeypatch):
    # Blocks of 64 rows: growing adds blocks (the stored ones are kept, never copied), and
    # rows spread over many blocks are found, dropped and compacted like rows of one array.
    monkeypatch.setattr(vector_index, 'CHUNK', 64)
    monkeypatch.setattr(vector_index, 'LOAD_ROWS', 48)
    monkeypatch.setattr(vector_index, 'EXACT_LIMIT', 200)
    monkeypatch.setattr(vector_index, 'MIN_POOL', 400)
    rows = _unit_rows(700, 32, seed=6)
    index, conn = _index_of(rows[:500], tmp_path)
    assert index.sketch is not None
    blocks = list(index.codes.blocks) + list(index.sketch.blocks)
    conn.executemany("INSERT INTO substrate_records VALUES (?, ?, 'm', 'active')",
                     [(number + 1, rows[number].tobytes()) for number in range(500, 700)])
    conn.commit()
    index.refresh(conn)
    assert index.full_loads == 1 and len(index) == 700
    kept = list(index.codes.blocks) + list(index.sketch.blocks)
    assert all(any(block is old for block in kept) for old in blocks)
    for seq in (1, 64, 65, 500, 501, 700):
        assert index.search(rows[seq - 1], 1)[0][0] == seq
    # Archive every other record: more dead rows than a quarter, so the index compacts.
    monkeypatch.setattr(vector_index, 'PATCH_LIMIT', 10_000)
    conn.execute("UPDATE substrate_records SET status = 'archived' WHERE seq % 2 = 0")
    conn.commit()
    monkeypatch.setattr(vector_index, 'COMPACT_AFTER', 100)
    index.refresh(conn)
    assert index.dead == 0 and index.count == 350 and len(index) == 350
    assert index.full_loads == 1
    for seq in (1, 63, 65, 499, 501, 699):
        hits = index.search(rows[seq - 1], 3)
        assert hits[0][0] == seq and all(found % 2 == 1 for found, _ in hits)
    for query in _unit_rows(10, 32, seed=7):
        assert all(found % 2 == 1 for found, _ in index.search(query, 20))


def _near_rows(base: numpy.ndarray, cosines, seed: int) -> numpy.ndarray:
    """Return unit vectors at exactly the given cosines to the unit vector ``base``."""
    rng = numpy.random.default_rng(seed)
    rows = []
    for cosine in cosines:
        other = rng.standard_normal(base.shape[0])
        other -= (other @ base) * base
        other /= numpy.linalg.norm(other)
        rows.append(cosine * base + numpy.sqrt(1.0 - cosine ** 2) * other)
    return numpy.array(rows, dtype=numpy.float32)


def _within(index, vector, threshold: float) -> set:
    """Return every live row at (int8) cosine >= ``threshold``, by scoring them all."""
    sims = index._scores(slice(0, index.count), vector)
    return {int(index.seqs[row]) for row in numpy.flatnonzero(sims >= threshold)
            if index.seqs[row] >= 0}


def test_near_finds_every_row_within_the_duplicate_threshold(tmp_path, monkeypatch):
    # Near duplicates just above the threshold (the hardest to find) hidden among rows
    # just below it and thousands of others: near() returns exactly the rows a full scan
    # finds at or above the threshold, before and after rows are added, dropped, compacted.
    monkeypatch.setattr(vector_index, 'CHUNK', 512)
    queries = _unit_rows(30, 384, seed=11)
    rows = [_unit_rows(4000, 384, seed=12)]
    for number, query in enumerate(queries):
        rows.append(_near_rows(query, [0.951, 0.96, 0.975, 0.99, 0.93, 0.94, 0.945, 0.9],
                               seed=100 + number))
    rows = numpy.concatenate(rows)
    index, conn = _index_of(rows, tmp_path)
    assert index.signs is None, 'signatures are made by the first near(), not by a load'
    checked = 0
    for query in queries:
        hits = index.near(query, 0.95, 10)
        truth = _within(index, query, 0.95)
        assert len(truth) >= 3 and {seq for seq, _ in hits} == truth
        assert [similarity for _, similarity in hits] == sorted(
            (similarity for _, similarity in hits), reverse=True)
        checked += len(truth)
    assert checked >= 90
    # Rows learned after the signatures were made, rows archived, then a compaction.
    extra = numpy.concatenate([_near_rows(query, [0.955, 0.97], seed=500 + number)
                               for number, query in enumerate(queries)])
    first = len(rows) + 1
    conn.executemany("INSERT INTO substrate_records VALUES (?, ?, 'm', 'active')",
                     [(first + number, row.tobytes()) for number, row in enumerate(extra)])
    conn.execute("UPDATE substrate_records SET status = 'archived' WHERE seq % 2 = 0")
    conn.commit()
    monkeypatch.setattr(vector_index, 'COMPACT_AFTER', 50)
    index.refresh(conn)
    assert index.dead == 0 and index.full_loads == 1
    for query in queries:
        truth = _within(index, query, 0.95)
        assert truth and all(seq % 2 == 1 for seq in truth)
        assert {seq for seq, _ in index.near(query, 0.95, 20)} == truth


def test_the_signature_cutoff_misses_a_row_at_the_threshold_rarely():
    # The binomial tail beyond the cutoff, for a row exactly at the threshold: < SIGN_MISS.
    for threshold in (0.8, 0.9, 0.95, 0.99):
        cutoff = vector_index.sign_cutoff(threshold)
        chance = numpy.arccos(threshold - 0.01) / numpy.pi
        bits = vector_index.SIGN_BITS
        beyond = sum(math.comb(bits, count) * chance ** count * (1 - chance) ** (bits - count)
                     for count in range(cutoff + 1, bits + 1))
        assert beyond < vector_index.SIGN_MISS
        # And not wastefully wide: one bit fewer would miss more often.
        assert beyond + math.comb(bits, cutoff) * chance ** cutoff * \
            (1 - chance) ** (bits - cutoff) >= vector_index.SIGN_MISS
    assert vector_index.sign_cutoff(0.95) < vector_index.SIGN_BITS // 3


class _TableEmbedder:
    """Vectors looked up by text (unknown texts get a random one): near duplicates by design."""

    name = 'table'

    def __init__(self, table: dict, dim: int):
        self.table = table
        self.dim = dim

    def embed(self, texts):
        """Return the table's vector of each text."""
        rng = numpy.random.default_rng(len(texts))
        return numpy.stack([self.table[text] if text in self.table else
                            _unit_rows(1, self.dim, int(rng.integers(1 << 30)))[0]
                            for text in texts])


def _letters(number: int) -> str:
    """Return ``number`` written in letters (0 is a, 26 is ba): a name without a digit."""
    word = ''
    while True:
        number, digit = divmod(number, 26)
        word = chr(ord('a') + digit) + word
        if not number:
            return word


def test_a_learn_finds_its_cosine_duplicate_among_thousands(tmp_path):
    # No word in common with any stored text, so only the vector check can find the
    # duplicate; the stored ones just below the threshold must not be taken for it.
    # words without digits: texts whose numbers differ are never duplicates (figures)
    stored = [f'zone{_letters(number)} sample{_letters(number * 7)} reading'
              for number in range(3000)]
    vectors = _unit_rows(len(stored), 64, seed=21)
    table = dict(zip(stored, vectors))
    probes = {}
    for number, target in enumerate(range(17, 3000, 150)):
        probe = f'fresh probe {_letters(number)} unlike anything'
        table[probe] = _near_rows(vectors[target], [0.952], seed=40 + number)[0]
        probes[probe] = target
    # Just below: 0.94 to the probes' vectors, yet not duplicates.
    table['decoy text alpha'] = _near_rows(table['fresh probe a unlike anything'], [0.94],
                                           seed=60)[0]
    with Substrate(tmp_path / 'robot-memory.db', embedder=_TableEmbedder(table, 64)) as store:
        store.learn_many(stored + ['decoy text alpha'], NOW, type='semantic')
        ids = dict(store.db.conn.execute('SELECT text, id FROM substrate_records'))
        for probe, target in probes.items():
            result = store.learn(probe, now=NOW, type='semantic')
            assert result.duplicate and result.match == 'cosine', (probe, result)
            assert result.record_id == ids[stored[target]]
            assert result.similarity >= 0.95
        fresh = store.learn('nothing near this one at all', now=NOW, type='semantic')
        assert not fresh.duplicate


def test_exact_search_below_the_limit_ranks_every_row(tmp_path):
    rows = _unit_rows(300, 32, seed=4)
    index, _ = _index_of(rows, tmp_path)
    assert index.sketch is None
    for query in _unit_rows(10, 32, seed=5):
        sims = sorted((rows @ query).tolist(), reverse=True)
        hits = index.search(query, 5)
        # Rows whose cosines differ by less than the int8 error may swap places.
        assert [round(similarity, 2) for _, similarity in hits] == \
            pytest.approx([round(similarity, 2) for similarity in sims[:5]], abs=0.011)


class _CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting its calls and the texts it was given."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def embed(self, texts):
        """Count, then embed as usual."""
        self.calls.append(len(texts))
        return super().embed(texts)


def test_an_rlm_import_embeds_its_chunks_in_batches(tmp_path):
    directory = tmp_path / 'brain' / 'chunks' / '2026-02'
    directory.mkdir(parents=True)
    for number in range(30):
        chunk = {'id': f'chunk-2026-02-10-{number:08x}', 'tokens': 9, 'type': 'note',
                 'content': f'Shelf {number} in aisle {number * 7} holds {number} spare fuses',
                 'metadata': {'created': '2026-02-10T21:40:00Z'}, 'links': {}}
        (directory / f'chunk-{number}.json').write_text(json.dumps(chunk))
    embedder = _CountingEmbedder()
    with Substrate(tmp_path / 'robot-memory.db', embedder=embedder) as store:
        report = import_chunks(store, tmp_path / 'brain', NOW)
        assert len(report.imported) == 30 and store.count(None) == 30
        assert embedder.calls == [30], embedder.calls
        hits = store.recall('spare fuses shelf 7', now=NOW, keywords=False).hits
        assert hits and hits[0].text.startswith('Shelf 7 ')
        # Outside the import, vectors are made as before: the query's, then one per learn.
        store.learn('The ramp by the back door is slippery when wet', now=NOW)
        assert embedder.calls == [30, 1, 1]


def test_embedding_ahead_gives_the_same_vectors_as_one_by_one(tmp_path):
    texts = ['The lidar in the study needs cleaning', 'The dog sleeps under the stairs']
    with Substrate(tmp_path / 'a.db', embedder=HashingEmbedder()) as store:
        with store.embedding_ahead(texts + [None]):
            ahead = store.embed([texts[1]])
        assert numpy.array_equal(ahead[0], HashingEmbedder().embed([texts[1]])[0])
        assert store._ahead == {}


def test_the_change_log_ends_are_read_without_a_scan(tmp_path):
    with Substrate(tmp_path / 'robot-memory.db', embedder=HashingEmbedder()) as store:
        plan = ' '.join(str(step[3]) for step in store.db.conn.execute(
            'EXPLAIN QUERY PLAN ' + vector_index._ENDS_SQL))
        assert 'SCAN substrate_vector_changes' not in plan and 'SEARCH' in plan, plan
        store.learn_many(['The ramp is slippery', 'The fridge hums at night'], NOW)
        latest, oldest = store.db.conn.execute(vector_index._ENDS_SQL).fetchone()
        assert (oldest, latest) == (1, 2)


def test_keyword_recall_puts_records_with_more_of_the_words_first(tmp_path):
    # Every record names the kitchen; a few the lidar too; one only the rare word "zebra".
    # BM25 over an OR of the words ranks "zebra" first (kitchen and lidar carry no weight);
    # the passes put the records holding two of the three words before it.
    texts = [f'The kitchen shelf {number} is dusty' for number in range(60)]
    texts += [f'The lidar in the kitchen drifts ({number})' for number in range(3)]
    texts += ['A zebra toy lies in the kitchen', 'The zebra is striped']
    with Substrate(tmp_path / 'robot-memory.db') as store:
        store.learn_many(texts, NOW)
        hits = store.recall('lidar kitchen zebra', k=5, now=NOW, reinforce=False).hits
    assert {hit.text for hit in hits[:4]} == {'A zebra toy lies in the kitchen'} | {
        f'The lidar in the kitchen drifts ({number})' for number in range(3)}
    assert hits[4].text == 'The zebra is striped'


def test_each_keyword_pass_scores_a_record_as_the_or_of_the_words_does(tmp_path):
    texts = _texts(400, seed=9)
    with Substrate(tmp_path / 'robot-memory.db') as store:
        store.learn_many(texts, NOW)
        conn = store.db.conn
        query = 'dock kitchen rare3 rare7 wheel'
        passes = lexical.keyword_passes(query)
        assert passes[0] == '"dock" AND "kitchen" AND "rare3" AND "rare7" AND "wheel"'
        assert passes[-1] == textrules.fts_query(query)
        assert len(passes) == 5  # all five words, four, three, two, then any one

        def scores(fts):
            return dict(conn.execute(
                'SELECT rowid, bm25(substrate_fts, 1.0, 0.5) FROM substrate_fts '
                'WHERE substrate_fts MATCH ?', (fts,)).fetchall())

        plain = scores(passes[-1])
        seen = set()
        for shared, fts in zip(range(5, 1, -1), passes):
            fresh = {seq: score for seq, score in scores(fts).items() if seq not in seen}
            assert fresh, shared
            for seq, score in fresh.items():
                words = textrules.content_tokens(store.rows_by_seq([seq])[0]['text'])
                assert len(words & {'dock', 'kitchen', 'rare3', 'rare7', 'wheel'}) == shared
                assert score == pytest.approx(plain[seq], rel=1e-9)
            seen |= set(fresh)
        assert set(plain) - seen  # the records holding one word come from the last pass


def test_a_one_word_or_long_query_still_has_an_any_word_pass():
    assert lexical.keyword_passes('dock') == ['"dock"']
    assert lexical.keyword_passes('the of and')[-1] == '"the" OR "of" OR "and"'
    assert lexical.keyword_passes('?!') == []
    words = ' '.join(f'word{number}' for number in range(12))
    passes = lexical.keyword_passes(words)
    # 12 of 12, 11 of 12 (12 clauses), 10 of 12 (66 clauses: too many), so then any word.
    assert len(passes) == 3 and passes[-1] == textrules.fts_query(words)
