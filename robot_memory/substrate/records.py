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
The records table of the substrate: connection, lock, reads, write primitives, retries, vectors.

:class:`RecordTable` is the base of :class:`~robot_memory.substrate.substrate_store.Substrate`: it
holds the connection, the lock and the embedder, and offers the modules of one job each
(learning, recall, revision, forgetting, sealing, metrics) the small interface they build
on (``lock``, ``transaction``, ``audit``, ``rows`` / ``row``, ``insert``, ``reinforce``,
``set_status``, ``link``, ``once``, ``vector_index``, ``embed``). The operations callers
use (learn, recall, forget, revision, ...) are ``Substrate``'s.
"""

import base64
import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import threading
from typing import Any
from typing import cast
from typing import Iterable
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.evidence.evidence_audit import write_record_audit
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import open_target
from robot_memory.substrate import crypto
from robot_memory.substrate import record_tables
from robot_memory.substrate import textrules
from robot_memory.substrate import validation
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.record_tables import COLUMNS
from robot_memory.substrate.record_tables import dumps
from robot_memory.substrate.record_tables import MIGRATIONS
from robot_memory.substrate.record_tables import SELECT
from robot_memory.substrate.record_tables import when
from robot_memory.substrate.salience import row_salience
from robot_memory.substrate.sealing import Sealing
from robot_memory.substrate.vocabulary import MAX_TAGS
from robot_memory.substrate.vocabulary import RELATION_PREDICATES

if TYPE_CHECKING:  # the models load with the first record written or returned whole
    from numpy import ndarray

    from robot_memory.substrate.models import DecayProfile
    from robot_memory.substrate.models import MemoryRecord
    from robot_memory.substrate.vector_index import VectorIndex


# Replies kept for retries (``Substrate.once``): a caller retries within seconds, so a
# window of this many requests (and at most REQUEST_WINDOW_S of memory time) is plenty.
REQUEST_WINDOW = 10_000
REQUEST_WINDOW_S = 86_400.0
MAX_REQUEST_ID = 128


@dataclasses.dataclass(frozen=True)
class NewRecord:
    """
    A record to insert with :meth:`RecordTable.insert`, its fields checked by the caller.

    :param id: the record id (a UUID string)
    :param type: the memory type (``episodic``, ``semantic``, ...)
    :param text: the text, as recall shows and searches it
    :param tags: the tags, at most ``MAX_TAGS``
    :param context: the context object (e.g. ``{"location": {"room": "kitchen"}}``)
    :param payload: the payload of the type, as its model dumps it
    :param sensitivity: the sensitivity level (``low`` ... ``critical``)
    :param confidence: the confidence, 0 to 1
    :param salience: the salience now, 0 to 1
    :param decay: the decay profile
    :param pinned: True: the salience never decays
    :param provenance: the sources, ``{"kind", "ref"[, "hash"]}`` objects
    :param scope: the scope (``robot``, ``site``, ``global``), or None
    :param created_by: the actor that created it
    :param vector: its vector, when already embedded (None: embedded on insert if vectors
        are on)
    :param seal: True: stored encrypted whatever its sensitivity
    :param status: its status (``active``; an import keeps the record's own)
    """

    id: str
    type: str
    text: str
    tags: list
    context: dict
    payload: dict
    sensitivity: str
    confidence: float
    salience: float
    decay: 'DecayProfile'
    pinned: bool = False
    provenance: list = dataclasses.field(default_factory=list)
    scope: Optional[str] = None
    created_by: str = 'api'
    vector: Any = None
    seal: bool = False
    status: str = 'active'


class RecordTable:
    """The records table and its primitives; the base of ``Substrate`` (see there)."""

    def __init__(self, path, embedder=None, busy_timeout_s: float = 10.0,
                 jaccard_threshold: float = 0.8, cosine_threshold: float = 0.95,
                 recall_gain: float = 0.05, default_sensitivity: str = 'low',
                 encrypt_from: Optional[str] = None, key_file=None):
        if not 0.0 < jaccard_threshold <= 1.0 or not 0.0 < cosine_threshold <= 1.0:
            raise SubstrateError('dedup thresholds must be in (0, 1]')
        validation.level(default_sensitivity, 'default_sensitivity')
        self.path = None
        if str(path) != ':memory:':
            try:  # a symlinked database is used through to its target, the link kept
                self.path = open_target(path)
            except EvidenceError as error:
                raise SubstrateError(str(error)) from None
        self.embedder = embedder
        self.jaccard_threshold = jaccard_threshold
        self.cosine_threshold = cosine_threshold
        self.recall_gain = recall_gain
        self.default_sensitivity = default_sensitivity
        self._lock = threading.RLock()
        self._writes = 0
        self._index: Optional[VectorIndex] = None
        # Words the duplicate check found common (see dedup.rare_word_candidates).
        self.common_words: set[str] = set()
        self.sealing = Sealing(self, encrypt_from, key_file)
        self._ahead: dict = {}
        self.db = record_tables.connect(self.path, busy_timeout_s)

    def applied_migrations(self) -> list:
        """Names of the substrate's schema migrations applied to this database, in order."""
        return MIGRATIONS.applied_names(self.db.conn)

    def close(self) -> None:
        """Close the database."""
        with self.lock:
            self.db.close()

    @contextlib.contextmanager
    def _write(self):
        """One ``BEGIN IMMEDIATE`` transaction: all of it is committed or none of it."""
        with self._lock:
            conn = self.db.conn
            nested = conn.in_transaction  # inside once(): a savepoint in the caller's
            with self.db.atomic(immediate=True):
                yield conn
            if not nested:
                self._writes += 1

    @property
    def lock(self) -> threading.RLock:
        """Return the lock every use of the connection holds (re-entrant)."""
        return self._lock

    def transaction(self):
        """Return a context manager: one ``BEGIN IMMEDIATE`` transaction, giving the connection."""
        return self._write()

    # ------------------------------------------------------------------ reads

    def rows(self, where: str, params=()) -> list:
        """Return the records matching an SQL ``where`` clause as dicts, sealed ones opened."""
        cursor = self.db.conn.execute(f'{SELECT} WHERE {where}', params)
        return self.sealing.open_sealed([dict(zip(COLUMNS, row)) for row in cursor.fetchall()])

    def row(self, record_id: str) -> dict:
        """Return one record as a dict (sealed ones opened); refuse an unknown id."""
        if not isinstance(record_id, str) or not record_id:
            raise SubstrateError(f'record id must be a non-empty string, got {record_id!r}')
        rows = self.rows('id = ?', (record_id,))
        if not rows:
            raise SubstrateError(f'no record with id {record_id!r}; recall to find ids')
        return rows[0]

    def payload_of(self, row: dict) -> dict:
        """
        Return the payload of record ``row`` as its ``MemoryRecord`` carries it, as plain data.

        The stored payload was validated and dumped by its model when written; this adds what
        lives in columns (a fact's revision status, a procedure's or plan's outcomes) without
        the models, so recall returns payloads without importing pydantic.
        """
        self.sealing.check_open(row)
        payload = json.loads(row['payload'])
        status = row['status']
        if row['type'] == 'semantic':
            revision = payload.setdefault('revision', {})
            revision['status'] = {'contested': 'contested', 'active': 'active'}.get(
                status, 'retracted')
        elif row['type'] == 'competence' and (row['successes'] or row['failures']):
            payload['performance'] = {'successes': row['successes'], 'failures': row['failures']}
        elif row['type'] == 'plan_graph' and (row['successes'] or row['failures']):
            runs = row['successes'] + row['failures']
            metrics = payload.setdefault('metrics', {})
            metrics['runs'] = runs
            metrics['failure_rate'] = row['failures'] / runs
        return payload

    @staticmethod
    def decay_of(row: dict) -> 'DecayProfile':
        """Return the decay profile record ``row`` stores in its columns."""
        from robot_memory.substrate import models  # lazy: pydantic, 250 ms and 10 MB of recall
        return models.DecayProfile(curve=row['decay_curve'],
                                   half_life_seconds=int(row['half_life_s']),
                                   min_salience=row['decay_floor'],
                                   max_age_seconds=(int(row['max_age_s'])
                                                    if row['max_age_s'] is not None else None),
                                   reinforcement_gain=row['gain'])

    def _record(self, row: dict, now_s: Optional[float] = None) -> 'MemoryRecord':
        from robot_memory.substrate import models  # lazy: pydantic, 250 ms and 10 MB of recall
        payload = self.payload_of(row)
        relations = [models.Relation(predicate=predicate, target_id=target, weight=weight)
                     for predicate, target, weight in self.db.conn.execute(
                         'SELECT predicate, target_id, weight FROM substrate_relations '
                         'WHERE source_id = ? ORDER BY created_at, predicate, target_id',
                         (row['id'],))]
        decay = self.decay_of(row)
        return models.MemoryRecord(
            id=row['id'], type=row['type'], sensitivity=row['sensitivity'],
            confidence=row['confidence'], salience=row['salience'], scope=row['scope'],
            tags=row['tags'].split() if row['tags'] else [],
            created_at=when(row['created_at']), updated_at=when(row['updated_at']),
            lifecycle=models.Lifecycle(decay=decay,
                                       last_reinforced_at=when(row['last_reinforced_at']),
                                       pinned=bool(row['pinned']),
                                       deletion_policy=row['deletion_policy']),
            provenance=models.Provenance.model_validate(json.loads(row['provenance'])),
            relations=relations, payload=payload, text=row['text'],
            context=json.loads(row['context']), status=row['status'],
            access_count=row['access_count'], last_accessed=when(row['last_accessed']),
            effective_salience=(round(row_salience(row, now_s), 6)
                                if now_s is not None else None))

    def get(self, record_id: str, now: Optional[dt.datetime] = None) -> 'MemoryRecord':
        """One record, archived or not, with its effective salience at ``now`` if given."""
        with self.lock:
            return self._record(self.row(record_id), validation.epoch(now) if now else None)

    def history(self, record_id: str) -> list:
        """Return the audit trail of one record, oldest first (also after a hard delete)."""
        with self.lock:
            rows = record_tables.audit_rows(self.db.conn, record_id)
        from robot_memory.substrate import models  # lazy: pydantic, 250 ms and 10 MB of recall
        return [models.AuditEntry(id=row[0], timestamp=when(row[1]), record_id=row[2],
                                  action=row[3], actor=row[4], rationale=row[5],
                                  detail=json.loads(row[6]))
                for row in rows]

    def count(self, status: Optional[str] = 'active', type: Optional[str] = None) -> int:
        """Return the number of records, optionally of one status and type."""
        clauses, params = [], []
        if status is not None:
            clauses.append('status = ?')
            params.append(status)
        if type is not None:
            clauses.append('type = ?')
            params.append(validation.check_type(type))
        where = ' WHERE ' + ' AND '.join(clauses) if clauses else ''
        with self.lock:
            return self.db.conn.execute(f'SELECT count(*) FROM substrate_records{where}',
                                        params).fetchone()[0]

    # ------------------------------------------------------------------ writes (helpers)

    def audit(self, conn, now_s: float, record_id: str, action: str, actor: str, reason: str,
              detail: Optional[dict] = None) -> None:
        """Write one row of the audit log (``substrate_audit``) inside transaction ``conn``."""
        write_record_audit(conn, [(now_s, record_id, action, actor, reason, dumps(detail or {}))])

    def link(self, conn, now_s: float, source: str, predicate: str, target: str,
             weight: Optional[float] = None) -> None:
        """Link ``source`` to ``target`` by a relation predicate inside transaction ``conn``."""
        if predicate not in RELATION_PREDICATES:
            raise SubstrateError(f'relation {predicate!r} is not one of '
                                 f'{", ".join(RELATION_PREDICATES)}')
        conn.execute('INSERT OR REPLACE INTO substrate_relations (source_id, predicate, '
                     'target_id, weight, created_at) VALUES (?, ?, ?, ?, ?)',
                     (source, predicate, target, weight, now_s))

    def set_status(self, conn, now_s: float, record_id: str, status: str) -> None:
        """Set a record's status inside transaction ``conn``."""
        conn.execute('UPDATE substrate_records SET status = ?, updated_at = ? WHERE id = ?',
                     (status, now_s, record_id))

    def insert(self, conn, now_s: float, record: NewRecord) -> None:
        """
        Insert a new record (sealed when its sensitivity is encrypted) inside ``conn``.

        :param conn: the connection of the open transaction (``transaction()``)
        :param now_s: the time of the insert, seconds since the epoch (created, updated,
            last reinforced)
        :param record: what to insert, checked by the caller
        """
        record_id, kind, text, tags = record.id, record.type, record.text, record.tags
        context, payload, sensitivity = record.context, record.payload, record.sensitivity
        provenance, vector, decay = record.provenance, record.vector, record.decay
        subject = predicate = condition_key = facet = object_key = None
        if kind == 'semantic':
            object_key = record_tables.object_key(payload['object'])
            subject = textrules.normalise(payload['subject'])
            predicate = textrules.normalise(payload['predicate'])
            condition_key = record_tables.condition_key(payload.get('validity') or {})
            _, facet = textrules.fact_facet(payload['predicate'], payload['object'],
                                            payload.get('single_valued'))
        content_hash, sealed, key_name = textrules.content_hash(text), None, None
        if record.seal or self.sealing.seals(sensitivity):
            sealed, key_name, digests = self.sealing.seal_row(
                conn, record_id, {'text': text, 'tags': tags, 'context': context,
                                  'payload': payload},
                {'content': content_hash, 'subject': subject, 'predicate': predicate,
                 'condition': condition_key, 'facet': facet, 'object': object_key})
            content_hash, subject, predicate, condition_key, facet, object_key = (
                digests[name] for name in ('content', 'subject', 'predicate', 'condition',
                                           'facet', 'object'))
            text, tags, context, payload, vector = '', [], {}, {}, None
        model = None
        if self.embedder is not None and sealed is None:
            if vector is None:
                vector = self.embed([text])[0]
            import numpy  # lazy: numpy, 100-130 ms and 11 MB of a recall that keywords settle
            vector = vector.astype(numpy.float32).tobytes()
            model = self.embedder.name
        conn.execute(
            'INSERT INTO substrate_records (id, type, sensitivity, status, text, tags, scope, '
            'confidence, salience, created_at, updated_at, last_reinforced_at, decay_curve, '
            'half_life_s, decay_floor, max_age_s, gain, pinned, content_hash, context, payload, '
            'provenance, subject, predicate, condition_key, embedding, embedding_model, facet, '
            'object_key, sealed, key_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '
            '?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (record_id, kind, sensitivity, record.status, text, ' '.join(tags), record.scope,
             record.confidence, record.salience, now_s, now_s, now_s, decay.curve,
             float(decay.half_life_seconds), decay.min_salience, decay.max_age_seconds,
             decay.reinforcement_gain, int(record.pinned), content_hash, dumps(context),
             dumps(payload), dumps({'sources': provenance, 'created_by': record.created_by}),
             subject, predicate,
             condition_key, vector, model, facet, object_key, sealed, key_name))
        if vector is not None:
            # lazy: the vector index (numpy at its top), 120 ms and 13 MB of recall and forget
            from robot_memory.substrate.vector_index import trim_changes
            trim_changes(conn)
        conn.executemany('INSERT OR IGNORE INTO substrate_provenance (record_id, kind, ref, hash) '
                         'VALUES (?, ?, ?, ?)',
                         [(record_id, source['kind'], source['ref'], source.get('hash'))
                          for source in provenance])

    def reinforce(self, conn, now_s: float, row: dict, gain: float,
                  confidence: Optional[float] = None, provenance: Iterable = (),
                  tags: Iterable = ()) -> float:
        """Reinforce a record learned again (salience, tags, sources); its new salience."""
        salience = min(1.0, row_salience(row, now_s) + gain)
        merged_tags = row['tags'].split() if row['tags'] else []
        merged_tags += [tag for tag in tags if tag not in merged_tags]
        sources = json.loads(row['provenance'])
        known = {(source['kind'], source['ref']) for source in sources['sources']}
        new_sources = [source for source in provenance
                       if (source['kind'], source['ref']) not in known]
        sources['sources'].extend(new_sources)
        conn.execute('UPDATE substrate_records SET salience = ?, last_reinforced_at = ?, '
                     'updated_at = ?, confidence = max(confidence, ?), tags = ?, '
                     'provenance = ? WHERE id = ?',
                     (salience, now_s, now_s, confidence if confidence is not None else 0.0,
                      self.sealing.clear_tags(conn, row, merged_tags[:MAX_TAGS]), dumps(sources),
                      row['id']))
        conn.executemany('INSERT OR IGNORE INTO substrate_provenance (record_id, kind, ref, hash) '
                         'VALUES (?, ?, ?, ?)',
                         [(row['id'], source['kind'], source['ref'], source.get('hash'))
                          for source in new_sources])
        return salience

    # ------------------------------------------------------------------ retries

    def once(self, request_id: str, kind: str, request: dict, now: dt.datetime, act) -> dict:
        """
        ``act()`` (a JSON reply) at most once per ``request_id``; a retry gets the same reply.

        ``act`` runs in the transaction that stores its reply, so an effect is never
        committed without the reply a retry will get. A request id used again for another
        kind of request or other fields is refused. Refusals (``SubstrateError``) are not
        kept: a corrected retry with the same id runs.
        """
        if not isinstance(request_id, str) or not request_id.strip():
            raise SubstrateError('request_id is empty; give a unique string per request')
        request_id = request_id.strip()
        if len(request_id) > MAX_REQUEST_ID or not request_id.isprintable():
            raise SubstrateError(f'request_id must be printable and at most {MAX_REQUEST_ID} '
                                 'characters (e.g. a UUID)')
        now_s = validation.epoch(now)
        fingerprint = hashlib.sha256(dumps([kind, request]).encode('utf-8')).hexdigest()
        with self.transaction() as conn:
            key = self.sealing.request_key(conn)
            if key is not None:  # the request holds the text: no plain hash of it on disk
                # the digest of a string is a string (only None stays None)
                fingerprint = cast(str, crypto.digest(key, 'request', fingerprint))
            seen = conn.execute('SELECT kind, fingerprint, reply FROM substrate_requests '
                                'WHERE request_id = ?', (request_id,)).fetchone()
            if seen is not None:
                if (seen[0], seen[1]) != (kind, fingerprint):
                    raise SubstrateError(f'request_id {request_id!r} was already used for '
                                         f'another {seen[0]} request; use a new request_id for '
                                         'a new request')
                return {**self.sealing.stored_reply(request_id, seen[2]), 'replayed': True}
            reply = act()
            stored = dumps(reply)
            if key is not None:  # a forget reply quotes the records' text
                stored = 'sealed:' + base64.b64encode(crypto.seal(
                    key, f'request:{request_id}', reply)).decode('ascii')
            conn.execute('INSERT INTO substrate_requests (request_id, kind, fingerprint, '
                         'reply, at) VALUES (?, ?, ?, ?, ?)',
                         (request_id, kind, fingerprint, stored, now_s))
            conn.execute('DELETE FROM substrate_requests WHERE at < ? OR seq <= '
                         '(SELECT MAX(seq) FROM substrate_requests) - ?',
                         (now_s - REQUEST_WINDOW_S, REQUEST_WINDOW))
        return {**reply, 'replayed': False}

    @contextlib.contextmanager
    def exclusive(self):
        """Return this store's connection (``db``) for this thread alone while the block runs."""
        with self.lock:
            yield self.db

    def rows_by_id(self, ids: list) -> list:
        """Return the records of these ids (in chunks of 500), sealed ones opened."""
        rows = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows += self.rows(f'id IN ({", ".join("?" * len(chunk))})', chunk)
        return rows

    def rows_by_seq(self, seqs: list) -> list:
        """Return the records of these seqs (in chunks of 500), sealed ones opened."""
        rows = []
        for start in range(0, len(seqs), 500):
            chunk = seqs[start:start + 500]
            rows += self.rows(f'seq IN ({", ".join("?" * len(chunk))})', chunk)
        return rows

    def all_records(self, now: Optional[dt.datetime] = None) -> list:
        """Every record (archived too), oldest first."""
        now_s = validation.epoch(now) if now is not None else None
        with self.lock:
            return [self._record(row, now_s) for row in self.rows('1 ORDER BY seq')
                    if not row.get('locked')]

    # ------------------------------------------------------------------ vectors

    def embed(self, texts: list) -> 'ndarray':
        """Return the vectors of ``texts`` (those embedded ahead reused)."""
        ahead = self._ahead
        if ahead and all(text in ahead for text in texts):
            import numpy  # lazy: numpy, 100-130 ms and 11 MB of a recall that keywords settle
            return numpy.stack([ahead[text] for text in texts])
        return self.embedder.embed(texts)

    @contextlib.contextmanager
    def embedding_ahead(self, texts: Iterable[str]):
        """
        Embed ``texts`` in batches now; ``learn`` / ``restore`` of them inside reuse it.

        For imports that add records one by one: a batch costs the model far less per
        text than single calls. Texts not given are embedded as usual.
        """
        if self.embedder is None:
            yield
            return
        texts = list(dict.fromkeys(text.strip() for text in texts if isinstance(text, str)))
        vectors = self.embedder.embed(texts) if texts else ()
        self._ahead = dict(zip(texts, vectors))
        try:
            yield
        finally:
            self._ahead = {}

    def vector_index(self) -> 'VectorIndex':
        """Return the live records' vectors of the current backend, brought up to date."""
        if self._index is None or self._index.model != self.embedder.name:
            # lazy: numpy, 120 ms and 13 MB of recall and forget until a vector is compared
            from robot_memory.substrate.vector_index import VectorIndex
            self._index = VectorIndex(self.embedder.name, self.embedder.dim)
        self._index.refresh(self.db.conn)
        return self._index

    def reindex_vectors(self, batch: int = 1000) -> int:
        """Embed records that have no vector from the current backend; returns how many."""
        if self.embedder is None:
            raise SubstrateError('vectors are off; create the Substrate with an embedder')
        done = 0
        while True:
            with self.lock:
                rows = self.db.conn.execute(
                    'SELECT seq, text FROM substrate_records WHERE key_id IS NULL AND '
                    '(embedding IS NULL OR embedding_model IS NOT ?) LIMIT ?',
                    (self.embedder.name, batch)).fetchall()
            if not rows:
                return done
            vectors = self.embedder.embed([row[1] for row in rows])
            import numpy  # lazy: numpy, 100-130 ms and 11 MB of a recall that keywords settle
            with self.transaction() as conn:
                conn.executemany('UPDATE substrate_records SET embedding = ?, embedding_model = ? '
                                 'WHERE seq = ?',
                                 [(vectors[index].astype(numpy.float32).tobytes(),
                                   self.embedder.name, row[0]) for index, row in enumerate(rows)])
            done += len(rows)
