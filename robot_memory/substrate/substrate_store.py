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
The substrate store: typed records in SQLite with FTS5, optional vectors, revision and audit.

:class:`Substrate` is the entry point: it holds the connection, the lock and the
embedder, and offers its collaborators a small public interface (``lock``,
``transaction``, ``audit``, ``rows`` / ``row``, ``insert``, ``set_status``, ``link``,
``vector_index``, ``embed``). The rest lives in modules of one job each, whose functions
take the store and use only that interface; ``Substrate``'s methods call them:

- :mod:`.schema`: the tables, how values are stored in them, the migrations;
- :mod:`.validation`: the checks of what callers pass;
- :mod:`.payloads`: a record's payload, derived from its text or checked;
- :mod:`.salience`: decay at read time;
- :mod:`.learning`: learn (a :class:`~.learning.LearnRequest`), bulk learn, import;
- :mod:`.recall`: recall and selection (:func:`.recall.rank` is the pure scoring);
- :mod:`.revision`: supersede, fork, contest, retract, affirm, merge, relate and the
  resolution of a new fact against the live ones;
- :mod:`.forgetting`: archive, delete, restore;
- :mod:`.metrics`: the metrics, as a dataclass;
- :mod:`.sealing`: encryption at rest, whose state (key, index of the sealed records) is a
  :class:`~.sealing.Sealing` object of its own (``Substrate.sealing``).

Salience decays at read time from the stored value ("salience as of last reinforcement")
with the record's profile; pinned records never decay. Every revision (supersede, fork,
contest, retract, merge, affirm) is one ``BEGIN IMMEDIATE`` transaction: nothing partial
is ever visible.

Trust gating in ``recall``: a record whose sensitivity is at most the caller's trust
level is returned in full; one level above is *redacted* (id, type, sensitivity, status
and score only); two or more levels above is *withheld*: left out, and counted among the
candidates recall examined (``RecallResult.withheld``; not a census, so recall stays fast).
"""

import base64
import contextlib
import datetime as dt
import hashlib
import json
import threading
from typing import cast
from typing import Iterable
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.common import lazy_imports
from robot_memory.evidence.evidence_audit import write_record_audit
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import open_target
from robot_memory.substrate import crypto
from robot_memory.substrate import forgetting
from robot_memory.substrate import learning
from robot_memory.substrate import metrics
from robot_memory.substrate import recall as recalling
from robot_memory.substrate import record_tables
from robot_memory.substrate import revision
from robot_memory.substrate import textrules
from robot_memory.substrate import validation
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.learning import LearnRequest
from robot_memory.substrate.recall import RECALLABLE  # noqa: F401 - re-exported
from robot_memory.substrate.record_tables import COLUMNS
from robot_memory.substrate.record_tables import dumps
from robot_memory.substrate.record_tables import MIGRATIONS
from robot_memory.substrate.record_tables import SELECT
from robot_memory.substrate.record_tables import when
from robot_memory.substrate.results import ForgetResult
from robot_memory.substrate.results import LearnResult
from robot_memory.substrate.results import RecallResult
from robot_memory.substrate.results import RevisionResult
from robot_memory.substrate.results import SelectionResult
from robot_memory.substrate.salience import effective_salience  # noqa: F401 - re-exported
from robot_memory.substrate.salience import row_salience
from robot_memory.substrate.sealing import Sealing
from robot_memory.substrate.validation import models
from robot_memory.substrate.vector_index import trim_changes
from robot_memory.substrate.vector_index import VectorIndex
from robot_memory.substrate.vocabulary import MAX_TAGS
from robot_memory.substrate.vocabulary import RELATION_PREDICATES

if TYPE_CHECKING:  # the models load with the first record written or returned whole
    from numpy import ndarray

    from robot_memory.substrate.metrics import Metrics
    from robot_memory.substrate.models import DecayProfile
    from robot_memory.substrate.models import MemoryRecord

# Only vector search and metrics need numpy.
numpy = lazy_imports.deferred('numpy')


# Replies kept for retries (``Substrate.once``): a caller retries within seconds, so a
# window of this many requests (and at most REQUEST_WINDOW_S of memory time) is plenty.
REQUEST_WINDOW = 10_000
REQUEST_WINDOW_S = 86_400.0
MAX_REQUEST_ID = 128


class Substrate:
    """
    Typed, revisable, auditable memory in SQLite; a context manager (or call ``close``).

    ``embedder`` (e.g. :class:`~robot_memory.substrate.embedding.HashingEmbedder`) turns on
    vector search and cosine dedup; without it everything is keyword (FTS5 BM25) only.
    ``encrypt_from`` (a sensitivity, None: off) stores records at or above it encrypted
    under ``key_file`` (default: :func:`~robot_memory.substrate.crypto.default_key_path`);
    see :mod:`robot_memory.substrate.crypto`.
    """

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

    def __enter__(self) -> 'Substrate':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
        return models.DecayProfile(curve=row['decay_curve'],
                                   half_life_seconds=int(row['half_life_s']),
                                   min_salience=row['decay_floor'],
                                   max_age_seconds=(int(row['max_age_s'])
                                                    if row['max_age_s'] is not None else None),
                                   reinforcement_gain=row['gain'])

    def _record(self, row: dict, now_s: Optional[float] = None) -> 'MemoryRecord':
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

    def insert(self, conn, now_s: float, record_id: str, kind: str, text: str, tags: list,
               context: dict, payload: dict, sensitivity: str, confidence: float,
               salience: float, decay: 'DecayProfile', pinned: bool, provenance: list,
               scope: Optional[str], created_by: str, vector=None, seal: bool = False,
               status: str = 'active') -> None:
        """Insert a new record (sealed when its sensitivity is encrypted) inside ``conn``."""
        subject = predicate = condition_key = facet = object_key = None
        if kind == 'semantic':
            object_key = record_tables.object_key(payload['object'])
            subject = textrules.normalise(payload['subject'])
            predicate = textrules.normalise(payload['predicate'])
            condition_key = record_tables.condition_key(payload.get('validity') or {})
            _, facet = textrules.fact_facet(payload['predicate'], payload['object'],
                                            payload.get('single_valued'))
        content_hash, sealed, key_name = textrules.content_hash(text), None, None
        if seal or self.sealing.seals(sensitivity):
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
            vector = vector.astype(numpy.float32).tobytes()
            model = self.embedder.name
        conn.execute(
            'INSERT INTO substrate_records (id, type, sensitivity, status, text, tags, scope, '
            'confidence, salience, created_at, updated_at, last_reinforced_at, decay_curve, '
            'half_life_s, decay_floor, max_age_s, gain, pinned, content_hash, context, payload, '
            'provenance, subject, predicate, condition_key, embedding, embedding_model, facet, '
            'object_key, sealed, key_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '
            '?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
            (record_id, kind, sensitivity, status, text, ' '.join(tags), scope, confidence,
             salience, now_s, now_s, now_s, decay.curve, float(decay.half_life_seconds),
             decay.min_salience, decay.max_age_seconds, decay.reinforcement_gain, int(pinned),
             content_hash, dumps(context), dumps(payload),
             dumps({'sources': provenance, 'created_by': created_by}), subject, predicate,
             condition_key, vector, model, facet, object_key, sealed, key_name))
        if vector is not None:
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

    # ------------------------------------------------------------------ learn

    def learn(self, text, *args, **fields) -> LearnResult:
        """
        Store a memory, or reinforce the existing one when it is a duplicate.

        ``text`` is the text, with :class:`~.learning.LearnRequest`'s fields as keywords,
        or a ``LearnRequest`` itself; see :func:`.learning.learn` for dedup and revision.
        """
        if isinstance(text, LearnRequest) and not args and not fields:
            return learning.learn(self, text)
        return learning.learn(self, LearnRequest(text, *args, **fields))

    def learn_many(self, texts: Iterable[str], now: dt.datetime, *args, **kwargs) -> int:
        """Bulk-load texts in one transaction (see :func:`.learning.learn_many`); rows added."""
        return learning.learn_many(self, texts, now, *args, **kwargs)

    def restore(self, record: dict, now: dt.datetime, *args, **kwargs) -> str:
        """Insert a full record, id and times kept (see :func:`.learning.restore`); its status."""
        return learning.restore(self, record, now, *args, **kwargs)

    def find_duplicate(self, kind: str, text: str, vector=None) -> Optional[tuple]:
        """(row, match, similarity) of a live duplicate of ``text`` of type ``kind``, or None."""
        return learning.find_duplicate(self, kind, text, vector)

    def preview_learn(self, text: str, **kwargs) -> LearnResult:
        """
        Return what ``learn`` would do now (checked, deduplicated, revised), changing nothing.

        The learn runs in a transaction (a savepoint inside ``once``'s) that is rolled back
        (the proposals queue shows a person what an agent's learn would do before it is
        approved).
        """
        with self._lock, self.db.atomic(immediate=True, rollback=True):
            return self.learn(text, **kwargs)

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

    def vector_index(self) -> VectorIndex:
        """Return the live records' vectors of the current backend, brought up to date."""
        if self._index is None or self._index.model != self.embedder.name:
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
            with self.transaction() as conn:
                conn.executemany('UPDATE substrate_records SET embedding = ?, embedding_model = ? '
                                 'WHERE seq = ?',
                                 [(vectors[index].astype(numpy.float32).tobytes(),
                                   self.embedder.name, row[0]) for index, row in enumerate(rows)])
            done += len(rows)

    # ------------------------------------------------------------------ recall and selection

    def recall(self, query: str, *args, **kwargs) -> RecallResult:
        """Find records for ``query`` (see :func:`.recall.recall`)."""
        return recalling.recall(self, query, *args, **kwargs)

    def select(self, task: str, *args, **kwargs) -> SelectionResult:
        """Choose among competence / plan records for a task (see :func:`.recall.select`)."""
        return recalling.select(self, task, *args, **kwargs)

    # ------------------------------------------------------------------ feedback and outcomes

    def feedback(self, record_id: str, useful: bool, now: dt.datetime, actor: str = 'api',
                 recall_id: Optional[int] = None) -> float:
        """Mark a recalled record useful (reinforce) or not (penalise); returns its salience."""
        if not isinstance(useful, bool):
            raise SubstrateError('useful must be true or false')
        now_s = validation.epoch(now)
        with self.transaction() as conn:
            row = self.row(record_id)
            current = row_salience(row, now_s)
            salience = min(1.0, current + row['gain']) if useful else max(0.0,
                                                                          current - row['gain'])
            conn.execute('UPDATE substrate_records SET salience = ?, last_reinforced_at = ?, '
                         'useful_count = useful_count + ?, unused_count = unused_count + ? '
                         'WHERE id = ?', (salience, now_s, int(useful), int(not useful),
                                          record_id))
            clause = 'recall_id = ?' if recall_id is not None else (
                'id = (SELECT max(id) FROM substrate_recalls WHERE record_id = ?)')
            conn.execute(f'UPDATE substrate_recalls SET useful = ? WHERE record_id = ? AND '
                         f'{clause}', (int(useful), record_id,
                                       recall_id if recall_id is not None else record_id))
            self.audit(conn, now_s, record_id, 'feedback', actor,
                       'useful' if useful else 'not useful', {'salience': round(salience, 6)})
        return salience

    def record_outcome(self, record_id: str, success: bool, now: dt.datetime,
                       actor: str = 'api', note: str = '') -> None:
        """Count a success or failure of a competence or plan record (drives selection)."""
        if not isinstance(success, bool):
            raise SubstrateError('success must be true or false')
        now_s = validation.epoch(now)
        with self.transaction() as conn:
            row = self.row(record_id)
            if row['type'] not in ('competence', 'plan_graph'):
                raise SubstrateError(f'{record_id} is a {row["type"]} record; outcomes are for '
                                     'competence and plan_graph records')
            current = row_salience(row, now_s)
            salience = min(1.0, current + row['gain']) if success else max(
                0.0, current - row['gain'])
            conn.execute('UPDATE substrate_records SET successes = successes + ?, '
                         'failures = failures + ?, salience = ?, last_reinforced_at = ?, '
                         'updated_at = ? WHERE id = ?',
                         (int(success), int(not success), salience, now_s, now_s, record_id))
            self.audit(conn, now_s, record_id, 'outcome', actor, note or (
                'success' if success else 'failure'), {'success': success})

    # ------------------------------------------------------------------ forget and pin

    def forget(self, target: str, *args, **kwargs) -> ForgetResult:
        """Archive, delete or restore records by id or query (see :func:`.forgetting.forget`)."""
        return forgetting.forget(self, target, *args, **kwargs)

    def pin(self, record_id: str, now: dt.datetime, reason: str = 'pinned',
            actor: str = 'api') -> None:
        """Pin a record: its salience never decays until unpinned."""
        self._set_pinned(record_id, True, now, reason, actor)

    def unpin(self, record_id: str, now: dt.datetime, reason: str = 'unpinned',
              actor: str = 'api') -> None:
        """Unpin a record; decay restarts from now at its current salience."""
        self._set_pinned(record_id, False, now, reason, actor)

    def _set_pinned(self, record_id, pinned, now, reason, actor) -> None:
        now_s = validation.epoch(now)
        reason = validation.check_reason(reason)
        with self.transaction() as conn:
            row = self.row(record_id)
            conn.execute('UPDATE substrate_records SET pinned = ?, salience = ?, '
                         'last_reinforced_at = ?, updated_at = ? WHERE id = ?',
                         (int(pinned), row_salience(row, now_s), now_s, now_s, record_id))
            self.audit(conn, now_s, record_id, 'pin' if pinned else 'unpin', actor, reason)

    # ------------------------------------------------------------------ revision

    def supersede(self, record_id: str, *args, **kwargs) -> RevisionResult:
        """Replace a record by a new version (see :func:`.revision.supersede`)."""
        return revision.supersede(self, record_id, *args, **kwargs)

    def fork(self, record_id: str, *args, **kwargs) -> RevisionResult:
        """Split a fact by conditions (see :func:`.revision.fork`)."""
        return revision.fork(self, record_id, *args, **kwargs)

    def contest(self, record_id: str, *args, **kwargs) -> RevisionResult:
        """Flag a fact as disputed (see :func:`.revision.contest`)."""
        return revision.contest(self, record_id, *args, **kwargs)

    def retract(self, record_id: str, *args, **kwargs) -> RevisionResult:
        """Withdraw a fact (see :func:`.revision.retract`)."""
        return revision.retract(self, record_id, *args, **kwargs)

    def affirm(self, record_id: str, *args, **kwargs) -> RevisionResult:
        """Settle a contested fact as true (see :func:`.revision.affirm`)."""
        return revision.affirm(self, record_id, *args, **kwargs)

    def merge(self, record_ids: list, *args, **kwargs) -> RevisionResult:
        """Fold records of one type into one (see :func:`.revision.merge`)."""
        return revision.merge(self, record_ids, *args, **kwargs)

    def relate(self, source_id: str, *args, **kwargs) -> None:
        """Link two records by a predicate (see :func:`.revision.relate`)."""
        revision.relate(self, source_id, *args, **kwargs)

    # ------------------------------------------------------------------ metrics

    def metrics(self, now: dt.datetime, window_days: float = 30.0) -> dict:
        """Growth, salience distribution, usefulness, contradiction and revision rates (§15.10)."""
        return self.measure(now, window_days).to_dict()

    def measure(self, now: dt.datetime, window_days: float = 30.0) -> 'Metrics':
        """Return :meth:`metrics` as a :class:`~.metrics.Metrics` dataclass (typed fields)."""
        return metrics.measure(self, now, window_days)

    # ------------------------------------------------------------------ encryption at rest

    @property
    def key_file(self):
        """Return the path of the key file of the sealed records (None: no key file is used)."""
        return self.sealing.vault.key_path if self.sealing.vault is not None else None

    def sensitivity_of(self, text: str, sensitivity: Optional[str] = None) -> str:
        """Return the sensitivity a learn of ``text`` gets: as asked, else by its content."""
        if sensitivity is None:
            sensitivity = 'high' if textrules.looks_secret(text) else self.default_sensitivity
        validation.level(sensitivity, 'sensitivity')
        return sensitivity

    def seals(self, sensitivity: str) -> bool:
        """Return True when what is learned at ``sensitivity`` is stored encrypted."""
        return self.sealing.seals(sensitivity)

    def seal_fields(self, ref: str, fields: dict) -> dict:
        """Return ``fields`` encrypted for storage elsewhere in this database (a queued learn)."""
        return self.sealing.seal_fields(ref, fields)

    def open_fields(self, data: dict) -> dict:
        """Return what :meth:`seal_fields` sealed; KeyUnavailable saying why when it cannot."""
        return self.sealing.open_fields(data)

    def sealed_status(self) -> dict:
        """Encryption at rest: the key file, the sealed, withheld and plaintext counts, notices."""
        return self.sealing.sealed_status()

    def plaintext_notice(self, sensitivity: str) -> str:
        """Return what a learn says when its record of ``sensitivity`` is stored unencrypted."""
        return self.sealing.plaintext_notice(sensitivity)

    def rotate_key(self, now: dt.datetime, actor: str = 'api') -> dict:
        """Re-encrypt every sealed record under a new key, in one audited transaction."""
        return self.sealing.rotate_key(now, actor)
