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
Recall and selection: keyword (FTS5 BM25) and vector candidates, fused, weighted, trust-gated.

The functions take the :class:`~robot_memory.substrate.substrate_store.Substrate` they search as
their first argument and use its public interface; ``Substrate.recall`` and
``Substrate.select`` call them.
:func:`rank` is the scoring and ordering of the candidates, a pure function.
"""

import datetime as dt
import json
from typing import cast
from typing import Optional

from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.filters import check_json
from robot_memory.substrate.filters import check_point
from robot_memory.substrate.filters import compile_filters
from robot_memory.substrate.filters import distance
from robot_memory.substrate.filters import matches
from robot_memory.substrate.filters import position_of
from robot_memory.substrate.fusion import fuse
from robot_memory.substrate.fusion import order_key
from robot_memory.substrate.lexical import keyword_passes
from robot_memory.substrate.results import Candidate
from robot_memory.substrate.results import RecallHit
from robot_memory.substrate.results import RecallResult
from robot_memory.substrate.results import SelectionResult
from robot_memory.substrate.salience import DAY
from robot_memory.substrate.salience import row_salience
from robot_memory.substrate.validation import check_tags
from robot_memory.substrate.validation import check_type
from robot_memory.substrate.validation import check_unit
from robot_memory.substrate.validation import epoch
from robot_memory.substrate.validation import level
from robot_memory.substrate.vocabulary import MAX_K
from robot_memory.substrate.vocabulary import MAX_QUERY
from robot_memory.substrate.vocabulary import SENSITIVITIES

RECALLABLE = ('active', 'contested')


def recall(store, query: str, k: int = 5, filters: Optional[dict] = None,
           trust: str = 'medium', now: Optional[dt.datetime] = None, types=None, tags=None,
           near=None, max_distance: Optional[float] = None,
           position_path: str = 'context.position', vectors: Optional[bool] = None,
           include_inactive: bool = False, reinforce: bool = True,
           min_confidence: float = 0.0, keywords: bool = True,
           record: bool = True) -> RecallResult:
    """
    Find records for ``query``: BM25 (+ vectors) fused, weighted, trust-gated.

    score = relevance x (0.5 + 0.5 x confidence) x (0.5 + 0.5 x effective salience);
    relevance is reciprocal rank (1 / (60 + rank)) of a single ranking, or the relative
    score fusion of keywords and vectors (see :mod:`robot_memory.substrate.fusion`).
    ``filters`` select on context fields; ``near`` (x, y[, z]) sorts the matches
    nearest first by ``position_path`` (records without a position go last, or are
    dropped when ``max_distance`` is given). ``keywords=False`` searches vectors only.
    Returned, unredacted hits get their access count incremented and their salience
    reinforced by ``recall_gain`` (``reinforce``).
    ``record=False`` is a look that writes nothing: no recall log (so no recall id for
    feedback) and no reinforcement (the operator page's GET).
    """
    check_query(query, k)
    eligible = Eligible(trust, filters, types, tags, near, max_distance, position_path,
                        min_confidence, include_inactive)
    use_vectors = store.embedder is not None if vectors is None else vectors
    if use_vectors and store.embedder is None:
        raise SubstrateError('vectors were requested but no embedding backend is set; '
                             'create the Substrate with embedder=HashingEmbedder()')
    now_s = epoch(now)
    if not keywords and not use_vectors:
        raise SubstrateError('keywords=False needs vectors; nothing would be searched')
    fts = textrules.fts_query(query) if keywords else None
    point, trust_level = eligible.point, eligible.trust_level
    wanted = k if point is None else max(k * 4, 50)
    with store.lock:
        keyword, rows = keyword_candidates(store, query, keywords, wanted, eligible)
        keyword, locked = store.sealing.sealed_candidates(query, keywords, wanted, eligible,
                                                          keyword, rows, eligible.statuses,
                                                          eligible.types)
        vector: list = []
        unseen: frozenset = frozenset()
        if use_vectors:
            vector = vector_candidates(store, query, max(2 * wanted, 10) if keyword
                                       else wanted, eligible, rows)
            unseen = store.vector_index().missing(seq for seq, _ in keyword)
    if keyword and vector:
        # Each side brings a pool twice the size wanted, so fusion can reorder them.
        pool = max(2 * wanted, 10)
        keyword, vector = keyword[:pool], vector[:pool]
    weight = getattr(store.embedder, 'fusion_weight', 0.5) if use_vectors else 0.0
    scored = rank(keyword, vector, rows, weight, now_s, point, eligible.position_path, k,
                  unseen)
    hits, used, redacted = [], [], 0
    for score, row, current, keyword_rank, vector_rank, where in scored:
        if SENSITIVITIES.index(row['sensitivity']) > trust_level:
            redacted += 1
            hits.append(RecallHit(row['id'], row['type'],
                                  f'[redacted: {row["sensitivity"]} sensitivity]',
                                  round(score, 8), row['sensitivity'], row['status'], True,
                                  keyword_rank=keyword_rank, vector_rank=vector_rank))
            continue
        used.append((row, current))
        hits.append(RecallHit(
            row['id'], row['type'], row['text'], round(score, 8), row['sensitivity'],
            row['status'], False, row['confidence'], round(current, 6),
            row['tags'].split() if row['tags'] else [], json.loads(row['context']),
            store.payload_of(row), keyword_rank, vector_rank,
            round(where, 6) if where is not None else None,
            row['access_count'] + (1 if reinforce and record else 0)))
    recall_id = log_recall(store, now_s, used, reinforce) if used and record else None
    mode = 'hybrid' if use_vectors and fts else ('vector' if use_vectors else 'keyword')
    return RecallResult(query, hits, len(eligible.withheld), redacted, mode, recall_id,
                        *locked)


def check_query(query: str, k: int) -> None:
    """Refuse an empty or overlong query, or a ``k`` out of range, saying the limits."""
    if not isinstance(query, str) or not query.strip():
        raise SubstrateError('the query is empty; say what to look for (e.g. "charging '
                             'dock")')
    if len(query) > MAX_QUERY:
        raise SubstrateError(f'query is {len(query)} characters; the limit is {MAX_QUERY} '
                             '(shorten it)')
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise SubstrateError(f'k must be a whole number from 1 to {MAX_K}, got {k!r}')


class Eligible:
    """
    Which rows a recall may return: the arguments checked once, then each row tested.

    A row two or more sensitivity levels above ``trust`` is not eligible and its seq is
    counted in ``withheld``.
    """

    def __init__(self, trust: str, filters: Optional[dict], types, tags, near,
                 max_distance: Optional[float], position_path: str, min_confidence: float,
                 include_inactive: bool):
        self.trust_level = level(trust)
        self.compiled = compile_filters(filters)
        self.types: Optional[set] = None
        if types is not None:
            self.types = {check_type(name) for name in
                          ([types] if isinstance(types, str) else types)}
        self.tags = set(check_tags(tags)) if tags else set()
        self.point = check_point(near) if near is not None else None
        if max_distance is not None and (self.point is None or not max_distance >= 0):
            raise SubstrateError('max_distance needs near=(x, y[, z]) and a distance >= 0')
        self.max_distance = max_distance
        parts = tuple(position_path.split('.'))
        if parts[0] != 'context' or len(parts) < 2:
            raise SubstrateError('position_path must start with "context." '
                                 '(e.g. "context.position")')
        self.position_path = parts[1:]
        self.min_confidence = check_unit(min_confidence, 'min_confidence')
        self.statuses = ('active', 'contested', 'retracted', 'superseded') \
            if include_inactive else RECALLABLE
        self.withheld: set = set()

    def __call__(self, row: dict) -> bool:
        """Return True when ``row`` may be returned (counting it when it is withheld)."""
        if row['status'] not in self.statuses:
            return False
        if self.types is not None and row['type'] not in self.types:
            return False
        if self.tags and not self.tags <= set(row['tags'].split()):
            return False
        if row['confidence'] < self.min_confidence:
            return False
        if self.compiled and not matches(json.loads(row['context']), self.compiled):
            return False
        if self.max_distance is not None:
            where = position_of(json.loads(row['context']), self.position_path)
            # max_distance is refused without a point
            if where is None or distance(cast(tuple, self.point), where) > self.max_distance:
                return False
        if SENSITIVITIES.index(row['sensitivity']) > self.trust_level + 1:
            self.withheld.add(row['seq'])
            return False
        return True


def rank(keyword: list, vector: list, rows: dict, weight: float, now_s: float, point,
         position_path: tuple, k: int, unseen=frozenset()) -> list:
    """
    Return the best ``k`` fused candidates as (score, row, salience, ranks, distance) tuples.

    score = relevance x (0.5 + 0.5 x confidence) x (0.5 + 0.5 x effective salience at
    ``now_s``), relevance as :func:`~robot_memory.substrate.fusion.fuse` gives it with
    ``weight`` on the vectors (``unseen``: the seqs without a vector); ties by
    :func:`~robot_memory.substrate.fusion.order_key`.
    With ``point``, the nearest first by the position at ``position_path`` of the context
    (records without one last). A pure function: ``rows`` maps each seq to its row.
    """
    scored = []
    fused = fuse(keyword, vector, weight, unseen)
    for seq, (relevance, keyword_rank, vector_rank) in fused.items():
        row = rows[seq]
        current = row_salience(row, now_s)
        score = relevance * (0.5 + 0.5 * row['confidence']) * (0.5 + 0.5 * current)
        where = None
        if point is not None:
            position = position_of(json.loads(row['context']), position_path)
            where = distance(point, position) if position is not None else None
        scored.append((score, row, current, keyword_rank, vector_rank, where))
    scored.sort(key=lambda item: order_key(item[1]['seq'], item[0], item[3], item[4]))
    if point is not None:
        scored.sort(key=lambda item: (item[5] is None, item[5] or 0.0))
    return scored[:k]


def keyword_candidates(store, query: str, keywords: bool, wanted: int, eligible) -> tuple:
    """(seq, BM25 score) candidates: records with every word first, then fewer words."""
    order: list = []
    rows: dict = {}
    seen: set = set()
    if not keywords:
        return order, rows
    for fts in keyword_passes(query):
        limit = max(wanted * 3, 30)
        offset = 0
        while len(order) < wanted:
            # bm25() is lower for better matches; negated it is a score.
            seqs = dict(store.db.conn.execute(
                'SELECT rowid, -bm25(substrate_fts, 1.0, 0.5) FROM substrate_fts WHERE '
                'substrate_fts MATCH ? ORDER BY bm25(substrate_fts, 1.0, 0.5) LIMIT ? OFFSET ?',
                (fts, limit, offset)).fetchall())
            fresh = [seq for seq in seqs if seq not in seen]
            seen.update(fresh)
            found = {row['seq']: row for row in store.rows_by_seq(fresh)}
            for seq in fresh:
                row = found.get(seq)
                if row is not None and eligible(row):
                    order.append((seq, seqs[seq]))
                    rows[seq] = row
            if len(seqs) < limit:
                break
            offset += limit
            limit *= 4
        if len(order) >= wanted:
            break
    return order, rows


def vector_candidates(store, query: str, wanted: int, eligible, rows: dict) -> list:
    """(seq, cosine) candidates from the vector index, best first, those ``eligible``."""
    index = store.vector_index()
    if not len(index):
        return []
    floor = getattr(store.embedder, 'min_similarity', 0.05)
    top = [(seq, similarity) for seq, similarity in
           index.search(store.embed([query])[0], max(wanted * 4, 40)) if similarity > floor]
    fetched = {row['seq']: row for row in store.rows_by_seq([seq for seq, _ in top])}
    order = []
    for seq, similarity in top:
        row = fetched.get(seq)
        if row is not None and eligible(row):
            order.append((seq, similarity))
            rows[seq] = row
        if len(order) >= wanted:
            break
    return order


def log_recall(store, now_s: float, used: list, reinforce: bool) -> int:
    """Log the hits of one recall (reinforcing them if asked); returns its recall id."""
    with store.transaction() as conn:
        # recall_id grows with id, so the newest row holds the largest (no table scan).
        recall_id = (conn.execute('SELECT coalesce((SELECT recall_id FROM substrate_recalls '
                                  'ORDER BY id DESC LIMIT 1), 0) + 1').fetchone()[0])
        conn.executemany('INSERT INTO substrate_recalls (recall_id, at, record_id, rank) '
                         'VALUES (?, ?, ?, ?)',
                         [(recall_id, now_s, row['id'], rank + 1)
                          for rank, (row, _) in enumerate(used)])
        if reinforce:
            conn.executemany(
                'UPDATE substrate_records SET access_count = access_count + 1, '
                'last_accessed = ?, salience = ?, last_reinforced_at = ? WHERE id = ?',
                [(now_s, min(1.0, current + store.recall_gain), now_s, row['id'])
                 for row, current in used])
    return recall_id


def select(store, task: str, now: dt.datetime, context: Optional[dict] = None,
           types=('competence', 'plan_graph'), trust: str = 'medium', margin: float = 0.1,
           k: int = 5) -> SelectionResult:
    """
    Choose among competence / plan records for a task (§15A.11).

    score = 0.4 applicability + 0.3 success rate + 0.15 recency + 0.15 relevance, where
    applicability is the share of the record's conditions the ``context`` satisfies (0
    when one contradicts it: such records are dropped), success rate is (successes + 1) /
    (runs + 2), recency is 0.5 ** (days since last reinforcement / 30) and relevance the
    record's rank in a recall of ``task``. When the best two are within ``margin`` the
    result is undecided and lists the ranked candidates instead of one winner.
    """
    context = context or {}
    if not isinstance(context, dict):
        raise SubstrateError('context must be an object of the current conditions')
    check_json(context, 'context')
    margin = check_unit(margin, 'margin')
    now_s = epoch(now)
    found = store.recall(task, k=max(k * 4, 20), trust=trust, now=now, types=types,
                         reinforce=False)
    candidates = []
    count = len(found.hits)
    for position, hit in enumerate(found.hits):
        if hit.redacted:
            continue
        row = store.row(hit.id)
        payload = json.loads(row['payload'])
        if row['type'] == 'competence':
            conditions: dict = {}
            for trigger in payload['triggers']:
                conditions.update(trigger.get('conditions') or {})
            name = payload['skill_name']
        else:
            conditions = dict(payload.get('constraints') or {})
            name = payload.get('intent') or payload['plan_id']
        applicability = _applicability(conditions, context)
        if applicability is None:
            continue
        runs = row['successes'] + row['failures']
        success = (row['successes'] + 1) / (runs + 2)
        recency = 0.5 ** (max(0.0, now_s - row['last_reinforced_at']) / (30 * DAY))
        relevance = 1.0 - position / max(count, 1)
        score = 0.4 * applicability + 0.3 * success + 0.15 * recency + 0.15 * relevance
        candidates.append(Candidate(row['id'], row['type'], name, round(score, 6),
                                    round(applicability, 6), round(success, 6),
                                    round(recency, 6), round(relevance, 6)))
    candidates.sort(key=lambda item: -item.score)
    candidates = candidates[:k]
    if not candidates:
        return SelectionResult(task, False, None, [], margin, 'no applicable competence or '
                               'plan record; learn one or relax the context')
    if len(candidates) > 1 and candidates[0].score - candidates[1].score < margin:
        return SelectionResult(task, False, None, candidates, margin,
                               f'top scores within {margin}: ranked candidates returned; '
                               'add context to disambiguate')
    return SelectionResult(task, True, candidates[0].id, candidates, margin,
                           f'selected {candidates[0].name}')


def _applicability(conditions: dict, context: dict) -> Optional[float]:
    """Return the share of conditions met by the context; None when one is contradicted."""
    if not conditions:
        return 0.5
    met = 0
    for key, expected in conditions.items():
        if key not in context:
            continue
        if context[key] != expected:
            return None
        met += 1
    return met / len(conditions)


def keywords_settle(store, query: str, k: int) -> bool:
    """
    Return True when at least ``k`` live records hold every word of ``query``.

    Then keyword recall answers the query by itself, and :func:`recall_as_asked` leaves the
    semantic model unloaded: loading it (numpy, onnxruntime, the model) costs a one-shot
    process most of a second, the search itself a millisecond. A query that keywords do not
    settle (a paraphrase, a rare word) is searched with vectors as before.
    """
    every = textrules.fts_query(query, operator='AND')
    if every is None:
        return False
    marks = ', '.join('?' for _ in RECALLABLE)
    found = store.db.conn.execute(
        'SELECT count(*) FROM (SELECT 1 FROM substrate_fts JOIN substrate_records ON '
        'substrate_records.seq = substrate_fts.rowid WHERE substrate_fts MATCH ? AND '
        f'substrate_records.status IN ({marks}) LIMIT ?)', (every, *RECALLABLE, k)).fetchone()[0]
    return found >= k


def recall_as_asked(store, query: str, k: int, embedder, vectors: bool = False,
                    index: bool = True, **options) -> RecallResult:
    """
    Recall as a person asks it: the one ranking of ``robot-memory recall`` and the page.

    Keyword-first: without ``vectors``, filters, types or ``near``, a query that at least
    ``k`` records match word for word is answered by keywords alone; otherwise ``embedder``
    (``default_embedder``'s choice; None for keywords only) adds vectors. ``index`` embeds
    the records without a vector first; a look that writes nothing (the operator page)
    passes False and is told in the result's notice how many records have none yet.
    """
    plain = not (vectors or options.get('filters') or options.get('types')
                 or options.get('near'))
    if embedder is not None and plain and keywords_settle(store, query, k):
        embedder = None
    store.embedder = embedder
    if embedder is not None and index:
        store.reindex_vectors()
    result = store.recall(query, k=k, vectors=vectors or None, **options)
    if embedder is not None and not index:
        marks = ', '.join('?' for _ in RECALLABLE)
        missing = store.db.conn.execute(
            'SELECT count(*) FROM substrate_records WHERE key_id IS NULL AND (embedding IS '
            f'NULL OR embedding_model IS NOT ?) AND status IN ({marks})',
            (embedder.name, *RECALLABLE)).fetchone()[0]
        if missing:
            note = (f'records without a vector from {embedder.name} yet: {missing}, found by '
                    'their words only; robot-memory recall (or memory_node) indexes them')
            result.notice = '; '.join(filter(None, (result.notice, note)))
    return result
