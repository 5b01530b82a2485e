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
chosen (OpenCastor's brain recalls at most 5 per turn). Pure: the clock is an argument.

The FTS5 table of the candidates' texts lives in memory and is kept for the next call while
the candidates' texts are the same (:func:`keyword_index`): a brain asks for the block every
turn, and building the table of 10,000 entries cost five times the block itself. The key
is the texts themselves (hashed, then compared whole), so a changed document — an entry
added, reworded, resolved or decayed below the threshold — is never served from a stale
table, whichever copy of the file it was read from.
"""

import collections
import datetime as dt
import re
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
# FTS5 tables of candidate texts (keyword_index), newest last: one a document the process
# serves is plenty; a few let the CLI's and a bench's documents take turns.
_INDEX_CACHE_SIZE = 4
_SURROGATES = re.compile('[\ud800-\udfff]')
_indexes: collections.OrderedDict = collections.OrderedDict()
_indexes_lock = threading.Lock()


def check_query(query) -> str:
    """Return the query stripped ('' for none); refuse a non-string or an over-long one."""
    if query is None:
        return ''
    if not isinstance(query, str):
        raise SubstrateError(f'query must be text (the task or utterance), got {query!r}')
    if len(query) > MAX_QUERY:
        raise SubstrateError(f'query is {len(query)} characters; the limit is {MAX_QUERY} '
                             '(say the task in a sentence)')
    # a lone surrogate (bytes that were not UTF-8 on a command line, "\\ud800" in JSON) is
    # no character a tokenizer or SQLite takes: read as the replacement character
    return _SURROGATES.sub('\ufffd', query).strip()


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


class KeywordIndex:
    """An in-memory FTS5 table of some texts (rowid = position), safe across threads."""

    def __init__(self, texts: tuple):
        self.texts = texts
        self.lock = threading.Lock()
        self.closed = False
        self.connection = sqlite3.connect(':memory:', check_same_thread=False)
        self.connection.execute(
            f"CREATE VIRTUAL TABLE block USING fts5(text, tokenize='{TOKENIZE}')")
        self.connection.executemany('INSERT INTO block (rowid, text) VALUES (?, ?)',
                                    enumerate(texts))

    def search(self, passes: list) -> list:
        """(position, BM25 score) of the texts matching the passes, best first, each once."""
        ranking: list = []
        seen: set = set()
        with self.lock:
            if self.closed:  # dropped from the cache by another thread since it was found
                return KeywordIndex(self.texts).search(passes)
            for fts in passes:
                rows = self.connection.execute(
                    'SELECT rowid, -bm25(block) FROM block WHERE block MATCH ? '
                    'ORDER BY bm25(block)', (fts,)).fetchall()
                for rowid, score in rows:
                    if rowid not in seen:
                        seen.add(rowid)
                        ranking.append((rowid, score))
        return ranking

    def close(self) -> None:
        """Drop the table (under the lock, so no search is cut off)."""
        with self.lock:
            self.closed = True
            self.connection.close()


def keyword_index(texts) -> KeywordIndex:
    """
    Return the FTS5 table of ``texts``: the one built for equal texts before, or a new one.

    Equal means the same texts in the same order (compared whole, not by their hash alone),
    so a changed document gets a table of its own. At most ``_INDEX_CACHE_SIZE`` are kept,
    the least recently used dropped first.
    """
    texts = tuple(texts)
    key = hash(texts)
    with _indexes_lock:
        found = _indexes.get(key)
        if found is not None and found.texts == texts:
            _indexes.move_to_end(key)
            return found
    index = KeywordIndex(texts)
    with _indexes_lock:
        old = _indexes.pop(key, None)
        _indexes[key] = index
        dropped = [_indexes.popitem(last=False)[1]
                   for _ in range(len(_indexes) - _INDEX_CACHE_SIZE)]
    for stale in dropped + ([old] if old is not None and old is not index else []):
        stale.close()
    return index


def forget_keyword_indexes() -> None:
    """Drop every cached FTS5 table (the next call builds its own)."""
    with _indexes_lock:
        dropped = list(_indexes.values())
        _indexes.clear()
    for index in dropped:
        index.close()


def _keyword_ranking(texts: list, query: str) -> list:
    """(position, BM25 score) of the texts holding the query's words, best first."""
    passes = keyword_passes(query)
    if not passes:
        return []
    return keyword_index(texts).search(passes)


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
