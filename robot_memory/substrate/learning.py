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
Learning: a record from a :class:`LearnRequest` (checked, deduplicated, revised), many, an import.

The functions take the :class:`~robot_memory.substrate.substrate_store.Substrate` and use its public
interface (``transaction``, ``audit``, ``insert``, ``reinforce``, ``rows``, ``embed``,
``vector_index``, ``sealing``).
"""

import dataclasses
import datetime as dt
import math
from typing import Iterable
from typing import Optional
import uuid

from robot_memory.substrate import payloads
from robot_memory.substrate import revision
from robot_memory.substrate import textrules
from robot_memory.substrate import validation
from robot_memory.substrate.dedup import jaccard_candidates
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.filters import check_json
from robot_memory.substrate.record_tables import LIVE
from robot_memory.substrate.records import NewRecord
from robot_memory.substrate.results import LearnResult
from robot_memory.substrate.validation import first_error
from robot_memory.substrate.vocabulary import MAX_SCOPE

# The decay profile (``DecayProfile`` fields) of a record learned without one, by type.
DEFAULT_DECAY = {
    'episodic': {'half_life_seconds': 7 * 86400, 'min_salience': 0.0},
    'working': {'half_life_seconds': 86400, 'min_salience': 0.0},
    'semantic': {'half_life_seconds': 90 * 86400, 'min_salience': 0.1},
    'competence': {'half_life_seconds': 30 * 86400, 'min_salience': 0.1},
    'plan_graph': {'half_life_seconds': 60 * 86400, 'min_salience': 0.1},
}
CONFLICT_POLICIES = ('auto', 'supersede', 'contest', 'error')


@dataclasses.dataclass(frozen=True)
class LearnRequest:
    """What to learn and how: the arguments of ``Substrate.learn``, checked by ``learn``."""

    text: str
    type: Optional[str] = None
    tags: Optional[list] = None
    context: Optional[dict] = None
    now: Optional[dt.datetime] = None
    sensitivity: Optional[str] = None
    confidence: float = 0.7
    salience: float = 0.7
    payload: Optional[dict] = None
    provenance: Iterable = ()
    conditions: Optional[dict] = None
    scope: Optional[str] = None
    decay: Optional[dict] = None
    pinned: bool = False
    actor: str = 'api'
    dedup: bool = True
    on_conflict: str = 'auto'
    single_valued: Optional[bool] = None


def learn(store, request: LearnRequest) -> LearnResult:
    """
    Store a memory, or reinforce the existing one when it is a duplicate.

    Dedup: same type and normalised text (exact hash); then token Jaccard at least
    ``jaccard_threshold``; then cosine at least ``cosine_threshold`` when vectors are
    on. Episodic records (events) are deduplicated by exact text only.

    A semantic fact conflicts with a live one of the same subject and conditions only
    when both give a single-valued predicate (facet) another value, or one denies what
    the other states ("is" / "is not" the same object); many-valued facts ("Ben prefers
    tea", "Ben prefers the window seat") stay side by side. ``single_valued`` tells the
    predicate's cardinality when the vocabulary (``text.fact_facet``) does not know it.
    A genuine conflict: ``on_conflict`` ``auto`` supersedes the old fact when the new
    confidence is at least its, else contests both; ``supersede`` / ``contest`` force
    one; ``error`` refuses. An unsure pair (cardinality unknown) is contested under
    ``auto``: both stay recallable, flagged, linked by ``contradicts``. A new record of
    high sensitivity or above left in plaintext says so in its message, with the remedy.
    """
    record, now_s = prepare(store, request)
    kind, sources, tags, actor = record.type, record.provenance, record.tags, request.actor
    with store.transaction() as conn:
        if request.dedup:
            found = store.find_duplicate(kind, record.text, record.vector)
            if found is not None:
                row, match, similarity = found
                store.reinforce(conn, now_s, row, row['gain'], record.confidence, sources, tags)
                store.audit(conn, now_s, row['id'], 'reinforce', actor,
                            f'learned again ({match} duplicate)',
                            {'match': match, 'similarity': similarity})
                return LearnResult('reinforced', row['id'], kind, True, match, similarity,
                                   message=f'duplicate of {row["id"]} ({match} match); '
                                           'reinforced it instead of adding a record')
        superseded, contested, action = [], [], 'created'
        if kind == 'semantic':
            superseded, contested, same = revision.resolve_fact(
                store, conn, now_s, record.payload, record.confidence, request.on_conflict,
                record.id)
            action = 'contested' if contested else (
                'superseded' if superseded else 'created')
            if same is not None:
                store.reinforce(conn, now_s, same, same['gain'], record.confidence, sources,
                                tags)
                store.audit(conn, now_s, same['id'], 'reinforce', actor,
                            'learned the same fact again', {'match': 'same_fact'})
                return LearnResult('reinforced', same['id'], kind, True, 'same_fact', 1.0,
                                   message=f'same fact as {same["id"]}; reinforced it')
        store.insert(conn, now_s, record)
        store.audit(conn, now_s, record.id, 'create', actor, 'learned',
                    {'type': kind, 'sensitivity': record.sensitivity})
        revision.link_revision(store, conn, now_s, record.id, superseded, contested, actor,
                               f'conflicting fact learned: {record.id}')
    message = f'new {kind} record'
    if superseded:
        message += f' superseding {", ".join(superseded)}'
    if contested:
        message += (f'{" and" if superseded else ""} contesting {", ".join(contested)} '
                    '(both stay recallable, flagged contested)')
    notice = store.plaintext_notice(record.sensitivity)
    if notice:
        message += f'; {notice}'
    return LearnResult(action, record.id, kind, False, replaced=superseded + contested,
                       message=message)


def prepare(store, request: LearnRequest) -> tuple:
    """
    Return (the :class:`~.records.NewRecord`, the time in seconds) ``request`` asks to learn.

    Every field is checked here (a refusal says which and how to fix it); the text is
    embedded once, before the write lock, when vectors are on: the dedup check and the
    insert share the vector.
    """
    text = validation.check_text(request.text)
    kind = (validation.check_type(request.type) if request.type is not None
            else textrules.classify(text))
    tags = validation.check_tags(request.tags)
    context = {} if request.context is None else request.context
    if not isinstance(context, dict):
        raise SubstrateError('context must be an object, e.g. {"location": {"room": '
                             '"kitchen"}}')
    check_json(context, 'context')
    sensitivity = store.sensitivity_of(text, request.sensitivity)
    confidence = validation.check_unit(request.confidence, 'confidence')
    salience = validation.check_unit(request.salience, 'salience')
    if request.on_conflict not in CONFLICT_POLICIES:
        raise SubstrateError(f'on_conflict {request.on_conflict!r} is not one of '
                             f'{", ".join(CONFLICT_POLICIES)}')
    scope = request.scope
    if scope is not None and (not isinstance(scope, str) or len(scope) > MAX_SCOPE):
        raise SubstrateError(f'scope must be a string of at most {MAX_SCOPE} characters '
                             '(e.g. "robot", "site", "global")')
    # lazy: the record models and pydantic, 250 ms and 10 MB of robot-memory recall
    import pydantic
    from robot_memory.substrate import models
    try:
        profile = models.DecayProfile.model_validate(
            request.decay if request.decay is not None else DEFAULT_DECAY[kind])
    except pydantic.ValidationError as error:
        raise SubstrateError(f'decay profile is invalid: {first_error(error)}') from None
    sources = validation.check_provenance(request.provenance)
    now = request.now
    now_s = validation.epoch(now)
    assert now is not None  # epoch refuses anything but an aware datetime
    record_id = str(uuid.uuid4())
    data = payloads.build(kind, text, request.payload, context, request.conditions, now,
                          record_id)
    if request.single_valued is not None:
        if kind != 'semantic' or not isinstance(request.single_valued, bool):
            raise SubstrateError('single_valued is true or false, and only for semantic '
                                 'facts')
        data['single_valued'] = request.single_valued
    vector = store.embed([text])[0] if store.embedder is not None else None
    return NewRecord(record_id, kind, text, tags, context, data, sensitivity, confidence,
                     salience, profile, request.pinned, sources, scope, request.actor,
                     vector), now_s


def find_duplicate(store, kind: str, text: str, vector=None) -> Optional[tuple]:
    """(row, match, similarity) of a live duplicate of ``text`` of type ``kind``, or None."""
    rows = store.rows(f'content_hash IN (?, ?) AND +type = ? AND +status IN {LIVE}',
                      (textrules.content_hash(text), store.sealing.sealed_hash(text), kind))
    if rows:
        return rows[0], 'exact', 1.0
    if kind == 'episodic':
        return None
    # "The dock is not safe" is no duplicate of "the dock is safe", however similar; nor is
    # "marker 12 near shelf A12" of "marker 11 near shelf A11" (textrules.figures).
    negated = textrules.negated(text)
    figures = textrules.figures(text)
    words = textrules.content_tokens(text)
    seqs = jaccard_candidates(store.db.conn, text, words, store.jaccard_threshold,
                              store.common_words)
    # Sealed records are kept out of FTS5; their own index answers the same question.
    query = textrules.overlap_query(words, math.ceil(store.jaccard_threshold * len(words)
                                                     - 1e-9)) or textrules.fts_query(text)
    if query is not None:
        seqs += [seq for seq, _ in store.sealing.sealed_matches(query, 50)]
    if seqs:
        best = None
        for row in store.rows_by_seq(seqs):
            if row['type'] != kind or row['status'] not in LIVE or \
                    textrules.negated(row['text']) != negated or \
                    textrules.figures(row['text']) != figures:
                continue
            similarity = textrules.jaccard(words, textrules.content_tokens(row['text']))
            if similarity >= store.jaccard_threshold and (best is None or similarity > best[2]):
                best = (row, 'jaccard', round(similarity, 4))
        if best is not None:
            return best
    if store.embedder is not None:
        if vector is None:
            vector = store.embed([text])[0]
        for seq, similarity in store.vector_index().near(vector, store.cosine_threshold, 10):
            row = store.rows_by_seq([seq])
            if row and row[0]['type'] == kind and row[0]['status'] in LIVE and \
                    textrules.negated(row[0]['text']) == negated and \
                    textrules.figures(row[0]['text']) == figures:
                return row[0], 'cosine', round(similarity, 4)
    return None


def learn_many(store, texts: Iterable[str], now: dt.datetime, type: Optional[str] = None,
               sensitivity: Optional[str] = None, confidence: float = 0.7,
               actor: str = 'bulk') -> int:
    """Bulk-load texts in one transaction (exact-text dedup only); returns rows added."""
    now_s = validation.epoch(now)
    confidence = validation.check_unit(confidence, 'confidence')
    added = 0
    texts = [validation.check_text(text) for text in texts]
    # One batched embedding call before the write lock (far faster than one per text).
    vectors = store.embed(texts) if store.embedder is not None and texts else None
    from robot_memory.substrate import models  # lazy: 250 ms and 10 MB of robot-memory recall
    decays = {kind: models.DecayProfile(**fields) for kind, fields in DEFAULT_DECAY.items()}
    with store.transaction() as conn:
        for number, text in enumerate(texts):
            kind = validation.check_type(type) if type is not None else textrules.classify(text)
            level = sensitivity or store.default_sensitivity
            validation.level(level, 'sensitivity')
            if store.rows(f'content_hash IN (?, ?) AND +type = ? AND +status IN {LIVE}',
                          (textrules.content_hash(text), store.sealing.sealed_hash(text), kind)):
                continue
            record_id = str(uuid.uuid4())
            data = payloads.build(kind, text, None, {}, None, now, record_id)
            superseded, contested = [], []
            if kind == 'semantic':
                superseded, contested, same = revision.resolve_fact(store, conn, now_s, data,
                                                                    confidence, 'auto',
                                                                    record_id)
                if same is not None:
                    continue
            store.insert(conn, now_s, NewRecord(
                record_id, kind, text, [], {}, data, level, confidence, 0.7, decays[kind],
                created_by=actor, vector=vectors[number] if vectors is not None else None))
            store.audit(conn, now_s, record_id, 'create', actor, 'bulk load',
                        {'type': kind})
            revision.link_revision(store, conn, now_s, record_id, superseded, contested, actor,
                                   'bulk load')
            added += 1
    return added


def restore(store, record: dict, now: dt.datetime, actor: str = 'import',
            reason: str = 'imported') -> str:
    """
    Insert a full record (``MemoryRecord`` shape, id and times kept); returns its status.

    Relations are not inserted here (their targets may come later); add them with
    ``relate``. A semantic fact that states or may contradict a live one (see
    ``learn``) is stored contested, and so is the live one, linked by ``contradicts``.
    """
    # lazy: the record models and pydantic, 250 ms and 10 MB of robot-memory recall
    import pydantic
    from robot_memory.substrate import models
    try:
        model = models.MemoryRecord.model_validate(record)
    except pydantic.ValidationError as error:
        raise SubstrateError(f'record is invalid: {first_error(error)}') from None
    text = validation.check_text(model.text)
    tags = validation.check_tags(model.tags)
    check_json(model.context, 'context')
    now_s = validation.epoch(now)
    data = model.payload.to_dict()
    data.pop('performance', None)
    with store.transaction() as conn:
        if store.rows('id = ?', (model.id,)):
            raise SubstrateError(f'a record with id {model.id} already exists')
        colliding = []
        if model.type == 'semantic' and model.status == 'active':
            colliding = [row['id'] for group in revision.fact_conflicts(store, data)
                         for row in group]
            for other in colliding:
                store.set_status(conn, now_s, other, 'contested')
        store.insert(conn, model.created_at.timestamp(), NewRecord(
            model.id, model.type, text, tags, model.context, data, model.sensitivity,
            model.confidence, model.salience, model.lifecycle.decay, model.lifecycle.pinned,
            [source.to_dict() for source in model.provenance.sources], model.scope,
            model.provenance.created_by or actor, status=model.status))
        # Inserted with its own status: a superseded fact imported after its active
        # successor must never pass through 'active' (one active fact per subject).
        status = model.status
        if status == 'active' and colliding:
            status = 'contested'
            revision.link_revision(store, conn, now_s, model.id, [], colliding, actor, reason)
        conn.execute('UPDATE substrate_records SET updated_at = ?, last_reinforced_at = ?, '
                     'access_count = ?, last_accessed = ? WHERE id = ?',
                     (model.updated_at.timestamp(),
                      model.lifecycle.last_reinforced_at.timestamp(), model.access_count,
                      model.last_accessed.timestamp() if model.last_accessed else None,
                      model.id))
        store.audit(conn, now_s, model.id, 'import', actor, reason, {'status': status})
    return status
