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
Which entries of robot-memory.md matter to the brain's task at hand (``GetContext.query``).

The same hybrid recall as typed memory, over the entries the block may show (own, not
resolved, at or above the injection threshold): keywords ranked by BM25 in an FTS5 table
with the substrate's own tokenizer (Porter stems, so "speeds" finds "speed") and its
passes (every word first, then all but one, ...: :func:`~robot_memory.substrate.lexical.
keyword_passes`), offline vectors when an embedder is given (the semantic model when it is
installed, see :func:`~robot_memory.substrate.embedding.default_embedder`), fused by
:func:`~robot_memory.substrate.fusion.fuse` and weighted by decayed confidence as
``recall.rank`` weighs a record: score = relevance x (0.5 + 0.5 x effective confidence).

An entry is a candidate only when it shares a word with the query or its vector is above
the embedder's ``min_similarity``: the relevance floor. At most :data:`MAX_RELEVANT` are
chosen (OpenCastor's brain recalls at most 5 per turn). Pure: the clock is an argument,
the FTS5 table lives in memory for the call.
"""

import collections
import datetime as dt
import sqlite3
import threading
from typing import Optional

from robot_memory.rcan.lifecycle import DEFAULTS
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.fusion import fuse
from robot_memory.substrate.fusion import order_key
from robot_memory.substrate.lexical import keyword_passes
from robot_memory.substrate.vocabulary import MAX_QUERY

MAX_RELEVANT = 5
# The substrate's substrate_fts tokenizer (substrate/record_tables.py), so both recalls stem alike.
TOKENIZE = 'porter unicode61 remove_diacritics 2'
# Vectors of entry texts already embedded, per embedder: a block asked for every turn
# embeds only what changed. Bounded; the oldest are dropped first.
_VECTOR_CACHE_SIZE = 20_000
_vectors: collections.OrderedDict = collections.OrderedDict()
_vectors_lock = threading.Lock()  # the node answers GetContext on several threads


def check_query(query) -> str:
    """Return the query stripped ('' for none); refuse a non-string or an over-long one."""
    if query is None:
        return ''
    if not isinstance(query, str):
        raise SubstrateError(f'query must be text (the task or utterance), got {query!r}')
    if len(query) > MAX_QUERY:
        raise SubstrateError(f'query is {len(query)} characters; the limit is {MAX_QUERY} '
                             '(say the task in a sentence)')
    return query.strip()


def relevant_ids(document, query: str, now: dt.datetime, config=DEFAULTS,
                 threshold: Optional[float] = None, embedder=None,
                 limit: int = MAX_RELEVANT) -> list:
    """
    Return the ids of the entries most relevant to ``query``, best first (at most ``limit``).

    Candidates are the own entries the block may show at ``now``: not resolved, effective
    confidence at or above ``threshold`` (default ``config.inject_min``). An empty query
    (or one without a word) chooses nothing.
    """
    query = check_query(query)
    if not query or limit < 1:
        return []
    floor = config.inject_min if threshold is None else threshold
    candidates = []
    for entry in document.entries:
        if entry.type == 'resolved':
            continue
        confidence = effective_confidence(entry, now, config)
        if confidence >= floor:
            candidates.append((entry, confidence))
    if not candidates:
        return []
    keyword = _keyword_ranking([entry.text for entry, _ in candidates], query)
    vector = _vector_ranking([entry.text for entry, _ in candidates], query, embedder)
    weight = getattr(embedder, 'fusion_weight', 0.5) if embedder is not None else 0.0
    scored = []
    for seq, (relevance, keyword_rank, vector_rank) in fuse(keyword, vector, weight).items():
        entry, confidence = candidates[seq]
        score = relevance * (0.5 + 0.5 * confidence)
        scored.append((order_key(seq, score, keyword_rank, vector_rank), entry.id))
    scored.sort()
    return [entry_id for _, entry_id in scored[:limit]]


def _keyword_ranking(texts: list, query: str) -> list:
    """(position, BM25 score) of the texts holding the query's words, best first."""
    passes = keyword_passes(query)
    if not passes:
        return []
    connection = sqlite3.connect(':memory:')
    try:
        connection.execute(f"CREATE VIRTUAL TABLE block USING fts5(text, tokenize='{TOKENIZE}')")
        connection.executemany('INSERT INTO block (rowid, text) VALUES (?, ?)',
                               enumerate(texts))
        ranking: list = []
        seen: set = set()
        for fts in passes:
            rows = connection.execute(
                'SELECT rowid, -bm25(block) FROM block WHERE block MATCH ? ORDER BY bm25(block)',
                (fts,)).fetchall()
            for rowid, score in rows:
                if rowid not in seen:
                    seen.add(rowid)
                    ranking.append((rowid, score))
        return ranking
    finally:
        connection.close()


def _vector_ranking(texts: list, query: str, embedder) -> list:
    """(position, cosine) of the texts above the embedder's floor, best first."""
    if embedder is None:
        return []
    import numpy  # lazy: 120 ms and 13 MB of a show --query or MCP context without vectors
    with _vectors_lock:
        missing = [text for text in dict.fromkeys(texts)
                   if (embedder.name, text) not in _vectors]
        if missing:
            for text, vector in zip(missing, embedder.embed(missing)):
                _vectors[(embedder.name, text)] = vector
        for text in texts:
            _vectors.move_to_end((embedder.name, text))
        while len(_vectors) > max(_VECTOR_CACHE_SIZE, len(texts)):
            _vectors.popitem(last=False)
        matrix = numpy.stack([_vectors[(embedder.name, text)] for text in texts])
    similarities = matrix @ embedder.embed([query])[0]
    floor = getattr(embedder, 'min_similarity', 0.05)
    ranking = [(position, float(similarity)) for position, similarity in
               enumerate(similarities) if similarity > floor]
    ranking.sort(key=lambda item: (-item[1], item[0]))
    return ranking
