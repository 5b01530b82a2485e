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

:class:`Substrate` is the entry point. Its base,
:class:`~robot_memory.substrate.records.RecordTable`, holds the connection, the lock and
the embedder, and offers its collaborators a small public interface (``lock``,
``transaction``, ``audit``, ``rows`` / ``row``, ``insert``, ``set_status``, ``link``,
``vector_index``, ``embed``). The rest lives in modules of one job each, whose functions
take the store and use only that interface; ``Substrate``'s methods call them:

- :mod:`.records`: the records table: connection, reads, write primitives, retries, vectors;
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

import dataclasses
import datetime as dt
from typing import Any
from typing import Iterable
from typing import Optional
from typing import Sequence
from typing import TYPE_CHECKING
from typing import Union

from robot_memory.substrate import forgetting
from robot_memory.substrate import learning
from robot_memory.substrate import metrics
from robot_memory.substrate import recall as recalling
from robot_memory.substrate import revision
from robot_memory.substrate import textrules
from robot_memory.substrate import validation
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.learning import LearnRequest
from robot_memory.substrate.recall import RECALLABLE  # noqa: F401 - re-exported
from robot_memory.substrate.record_tables import MIGRATIONS  # noqa: F401 - re-exported
from robot_memory.substrate.records import RecordTable
from robot_memory.substrate.results import ForgetResult
from robot_memory.substrate.results import LearnResult
from robot_memory.substrate.results import RecallResult
from robot_memory.substrate.results import RevisionResult
from robot_memory.substrate.results import SelectionResult
from robot_memory.substrate.salience import effective_salience  # noqa: F401 - re-exported
from robot_memory.substrate.salience import row_salience

if TYPE_CHECKING:  # the models load with the first record written or returned whole
    from numpy import ndarray

    from robot_memory.substrate.metrics import Metrics


class Substrate(RecordTable):
    """
    Typed, revisable, auditable memory in SQLite; a context manager (or call ``close``).

    ``embedder`` (e.g. :class:`~robot_memory.substrate.embedding.HashingEmbedder`) turns on
    vector search and cosine dedup; without it everything is keyword (FTS5 BM25) only.
    ``encrypt_from`` (a sensitivity, None: off) stores records at or above it encrypted
    under ``key_file`` (default: :func:`~robot_memory.substrate.crypto.default_key_path`);
    see :mod:`robot_memory.substrate.crypto`.
    """

    def __enter__(self) -> 'Substrate':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ learn

    def learn(self, text: Union[str, LearnRequest], *, type: Optional[str] = None,
              tags: Optional[list] = None, context: Optional[dict] = None,
              now: Optional[dt.datetime] = None, sensitivity: Optional[str] = None,
              confidence: float = 0.7, salience: float = 0.7, payload: Optional[dict] = None,
              provenance: Iterable = (), conditions: Optional[dict] = None,
              scope: Optional[str] = None, decay: Optional[dict] = None, pinned: bool = False,
              actor: str = 'api', dedup: bool = True, on_conflict: str = 'auto',
              single_valued: Optional[bool] = None) -> LearnResult:
        """
        Store a memory, or reinforce the existing one when it is a duplicate.

        See :func:`.learning.learn` for dedup and the revision of conflicting facts.

        :param text: the text to remember; or a whole :class:`~.learning.LearnRequest`,
            and then no other argument
        :param type: the memory type (``episodic``, ``semantic``, ``competence``,
            ``plan_graph``, ``working``); None: classified from the text
        :param tags: words to find it by, at most ``MAX_TAGS``
        :param context: where and when it holds, e.g. ``{"location": {"room": "kitchen"}}``
        :param now: the time of the learn, an aware datetime (required)
        :param sensitivity: ``low`` ... ``critical``; None: ``high`` for text that looks
            secret, else the store's ``default_sensitivity``
        :param confidence: how sure the source is, 0 to 1
        :param salience: how much it matters now, 0 to 1 (decays with time)
        :param payload: the type's payload; None: derived from the text
        :param provenance: the sources, ``{"kind", "ref"[, "hash"]}`` objects
        :param conditions: when a fact holds (its validity), e.g. ``{"floor": 2}``
        :param scope: who it is for (``robot``, ``site``, ``global``), or None
        :param decay: a ``DecayProfile`` object; None: the type's default
        :param pinned: True: its salience never decays
        :param actor: who learns it, for the audit log
        :param dedup: False: store it even when a duplicate exists
        :param on_conflict: a conflicting fact: ``auto``, ``supersede``, ``contest`` or
            ``error``
        :param single_valued: whether the fact's predicate takes one value, when the
            vocabulary does not know it
        """
        fields = LearnRequest(
            '', type=type, tags=tags, context=context, now=now, sensitivity=sensitivity,
            confidence=confidence, salience=salience, payload=payload, provenance=provenance,
            conditions=conditions, scope=scope, decay=decay, pinned=pinned, actor=actor,
            dedup=dedup, on_conflict=on_conflict, single_valued=single_valued)
        if isinstance(text, LearnRequest):
            if fields != LearnRequest(''):
                raise SubstrateError('give a LearnRequest or the fields as keywords, not both')
            return learning.learn(self, text)
        return learning.learn(self, dataclasses.replace(fields, text=text))

    def learn_many(self, texts: Iterable[str], now: dt.datetime, *, type: Optional[str] = None,
                   sensitivity: Optional[str] = None, confidence: float = 0.7,
                   actor: str = 'bulk') -> int:
        """
        Bulk-load texts in one transaction (exact-text dedup only); returns the rows added.

        :param texts: the texts, one record each
        :param now: the time of the load, an aware datetime
        :param type: the memory type of all of them; None: each classified from its text
        :param sensitivity: the sensitivity of all; None: the store's default
        :param confidence: the confidence of all, 0 to 1
        :param actor: who loads them, for the audit log
        """
        return learning.learn_many(self, texts, now, type=type, sensitivity=sensitivity,
                                   confidence=confidence, actor=actor)

    def restore(self, record: dict, now: dt.datetime, *, actor: str = 'import',
                reason: str = 'imported') -> str:
        """
        Insert a full record, id and times kept (see :func:`.learning.restore`); its status.

        :param record: the record, in ``MemoryRecord`` shape (as ``get(...).to_dict()``)
        :param now: the time of the import, an aware datetime
        :param actor: who imports it, for the audit log
        :param reason: why, for the audit log
        """
        return learning.restore(self, record, now, actor=actor, reason=reason)

    def find_duplicate(self, kind: str, text: str,
                       vector: Optional['ndarray'] = None) -> Optional[tuple]:
        """
        Return (row, match, similarity) of a live duplicate of ``text`` of type ``kind``, or None.

        :param kind: the memory type the duplicate must have
        :param text: the text to match (exact, then Jaccard, then cosine)
        :param vector: the text's vector, when already embedded
        """
        return learning.find_duplicate(self, kind, text, vector)

    def preview_learn(self, request: LearnRequest) -> LearnResult:
        """
        Return what ``learn`` of ``request`` would do now (checked, deduplicated, revised).

        Nothing changes: the learn runs in a transaction (a savepoint inside ``once``'s)
        that is rolled back (the proposals queue shows a person what an agent's learn
        would do before it is approved).
        """
        with self.lock, self.db.atomic(immediate=True, rollback=True):
            return learning.learn(self, request)

    # ------------------------------------------------------------------ recall and selection

    def recall(self, query: str, *, k: int = 5, filters: Optional[dict] = None,
               trust: str = 'medium', now: Optional[dt.datetime] = None,
               types: Union[str, Iterable[str], None] = None,
               tags: Optional[Iterable[str]] = None, near: Optional[Sequence[float]] = None,
               max_distance: Optional[float] = None,
               position_path: str = 'context.position', vectors: Optional[bool] = None,
               include_inactive: bool = False, reinforce: bool = True,
               min_confidence: float = 0.0, keywords: bool = True,
               record: bool = True) -> RecallResult:
        """
        Find records for ``query``: BM25 (+ vectors) fused, weighted, trust-gated.

        See :func:`.recall.recall` for the scoring.

        :param query: what to look for, in words
        :param k: how many hits at most, 1 to ``MAX_K``
        :param filters: conditions on context fields (see :mod:`.filters`)
        :param trust: the caller's trust level (``low`` ... ``critical``): records one
            level above are redacted, two or more withheld
        :param now: the time of the recall, an aware datetime (salience decays to it)
        :param types: a memory type or a list of them; None: all
        :param tags: tags every hit must carry
        :param near: a point (x, y[, z]): hits nearest first
        :param max_distance: with ``near``, leave out records farther away (or without
            a position)
        :param position_path: where the context holds a position (``context.``...)
        :param vectors: True / False: search vectors or not; None: when an embedder is set
        :param include_inactive: True: retracted and superseded records too
        :param reinforce: False: the hits are not reinforced
        :param min_confidence: leave out records less confident than this
        :param keywords: False: vectors only
        :param record: False: a look that writes nothing (no recall log, no reinforcement)
        """
        return recalling.recall(
            self, query, k=k, filters=filters, trust=trust, now=now, types=types, tags=tags,
            near=near, max_distance=max_distance, position_path=position_path,
            vectors=vectors, include_inactive=include_inactive, reinforce=reinforce,
            min_confidence=min_confidence, keywords=keywords, record=record)

    def select(self, task: str, now: dt.datetime, *, context: Optional[dict] = None,
               types: Iterable[str] = ('competence', 'plan_graph'), trust: str = 'medium',
               margin: float = 0.1, k: int = 5) -> SelectionResult:
        """
        Choose among competence / plan records for a task (see :func:`.recall.select`).

        :param task: the task, in words
        :param now: the time of the choice, an aware datetime
        :param context: the current conditions, matched against the records' conditions
        :param types: the memory types to choose among
        :param trust: the caller's trust level, as in ``recall``
        :param margin: best two closer than this: undecided, candidates ranked
        :param k: how many candidates at most
        """
        return recalling.select(self, task, now, context=context, types=types, trust=trust,
                                margin=margin, k=k)

    # ------------------------------------------------------------------ feedback and outcomes

    def feedback(self, record_id: str, useful: bool, now: dt.datetime, actor: str = 'api',
                 recall_id: Optional[int] = None) -> float:
        """
        Mark a recalled record useful (reinforce) or not (penalise); returns its salience.

        :param record_id: the record recalled
        :param useful: True: it helped (salience up by its gain); False: it did not (down)
        :param now: the time of the feedback, an aware datetime
        :param actor: who says so, for the audit log
        :param recall_id: the recall it came from; None: its latest recall
        """
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
        """
        Count a success or failure of a competence or plan record (drives selection).

        :param record_id: the competence or plan_graph record used
        :param success: True: it worked; False: it failed
        :param now: the time of the outcome, an aware datetime
        :param actor: who reports it, for the audit log
        :param note: what happened, for the audit log (empty: success / failure)
        """
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

    def forget(self, target: str, reason: str, now: dt.datetime, *, hard: bool = False,
               actor: str = 'api', limit: int = 10, dry_run: bool = False,
               all_matches: bool = False, restore: bool = False, by: str = 'auto',
               trust: Optional[str] = None) -> ForgetResult:
        """
        Archive, delete or restore records by id or query (see :func:`.forgetting.forget`).

        :param target: a record id, or words the records hold
        :param reason: why, for the audit log
        :param now: the time of the forget, an aware datetime
        :param hard: True: delete for good (the audit entry stays)
        :param actor: who forgets, for the audit log
        :param limit: with ``all_matches``, at most this many records
        :param dry_run: True: change nothing, report what would go
        :param all_matches: True: every match of a query, not only the best
        :param restore: True: bring archived records back
        :param by: ``id``, ``query`` or ``auto`` (an id if one exists)
        :param trust: the caller's trust level, as in ``recall``; None: every record
        """
        return forgetting.forget(self, target, reason, now, hard=hard, actor=actor,
                                 limit=limit, dry_run=dry_run, all_matches=all_matches,
                                 restore=restore, by=by, trust=trust)

    def pin(self, record_id: str, now: dt.datetime, reason: str = 'pinned',
            actor: str = 'api') -> None:
        """
        Pin a record: its salience never decays until unpinned.

        :param record_id: the record to pin
        :param now: the time of the pin, an aware datetime
        :param reason: why, for the audit log
        :param actor: who pins it, for the audit log
        """
        self._set_pinned(record_id, True, now, reason, actor)

    def unpin(self, record_id: str, now: dt.datetime, reason: str = 'unpinned',
              actor: str = 'api') -> None:
        """
        Unpin a record; decay restarts from now at its current salience.

        :param record_id: the record to unpin
        :param now: the time of the unpin, an aware datetime
        :param reason: why, for the audit log
        :param actor: who unpins it, for the audit log
        """
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

    def supersede(self, record_id: str, now: dt.datetime, reason: str, *,
                  text: Optional[str] = None, payload: Optional[dict] = None,
                  object: Any = None,
                  confidence: Optional[float] = None, tags: Optional[list] = None,
                  context: Optional[dict] = None, provenance: Iterable = (),
                  actor: str = 'api') -> RevisionResult:
        """
        Replace a record by a new version; the old one becomes ``superseded``, atomically.

        :param record_id: the record to replace
        :param now: the time of the revision, an aware datetime
        :param reason: why, for the audit log
        :param text: the new text; None: the old one
        :param payload: the new payload; None: derived from the old one and ``text``
        :param object: a fact's new object (value); None: unchanged
        :param confidence: the new confidence; None: the old one
        :param tags: the new tags; None: the old ones
        :param context: the new context; None: the old one
        :param provenance: sources added to the old ones
        :param actor: who revises, for the audit log
        """
        return revision.supersede(self, record_id, now, reason, text=text, payload=payload,
                                  object=object, confidence=confidence, tags=tags,
                                  context=context, provenance=provenance, actor=actor)

    def fork(self, record_id: str, conditions: dict, now: dt.datetime, reason: str, *,
             text: Optional[str] = None, object: Any = None, payload: Optional[dict] = None,
             confidence: Optional[float] = None, original_conditions: Optional[dict] = None,
             actor: str = 'api') -> RevisionResult:
        """
        Add a variant of a fact valid under ``conditions``; both stay active.

        :param record_id: the fact to fork
        :param conditions: when the variant holds, e.g. ``{"floor": 2}``
        :param now: the time of the revision, an aware datetime
        :param reason: why, for the audit log
        :param text: the variant's text; None: the original's
        :param object: the variant's object (value); None: the original's
        :param payload: the variant's payload; None: derived
        :param confidence: the variant's confidence; None: the original's
        :param original_conditions: narrow the original to these, so the two are disjoint
        :param actor: who revises, for the audit log
        """
        return revision.fork(self, record_id, conditions, now, reason, text=text,
                             object=object, payload=payload, confidence=confidence,
                             original_conditions=original_conditions, actor=actor)

    def contest(self, record_id: str, now: dt.datetime, reason: str, *,
                against: Optional[str] = None, actor: str = 'api') -> RevisionResult:
        """
        Flag a fact as disputed (and ``against``, linked by ``contradicts``).

        :param record_id: the disputed record
        :param now: the time of the revision, an aware datetime
        :param reason: why, for the audit log
        :param against: the record it contradicts, contested too; None: none
        :param actor: who revises, for the audit log
        """
        return revision.contest(self, record_id, now, reason, against=against, actor=actor)

    def retract(self, record_id: str, now: dt.datetime, reason: str, *,
                actor: str = 'api') -> RevisionResult:
        """
        Withdraw a fact: kept for history, out of recall.

        :param record_id: the record to withdraw
        :param now: the time of the revision, an aware datetime
        :param reason: why, for the audit log
        :param actor: who revises, for the audit log
        """
        return revision.retract(self, record_id, now, reason, actor=actor)

    def affirm(self, record_id: str, now: dt.datetime, reason: str, *,
               actor: str = 'api') -> RevisionResult:
        """
        Settle a contested fact as true: contested becomes active again.

        :param record_id: the contested record
        :param now: the time of the revision, an aware datetime
        :param reason: why, for the audit log
        :param actor: who revises, for the audit log
        """
        return revision.affirm(self, record_id, now, reason, actor=actor)

    def merge(self, record_ids: list, now: dt.datetime, reason: str, *,
              into: Optional[str] = None, actor: str = 'api') -> RevisionResult:
        """
        Fold records of one type into one keeper; the others become ``superseded``.

        :param record_ids: the records, at least two
        :param now: the time of the revision, an aware datetime
        :param reason: why, for the audit log
        :param into: the keeper; None: the most confident
        :param actor: who revises, for the audit log
        """
        return revision.merge(self, record_ids, now, reason, into=into, actor=actor)

    def relate(self, source_id: str, predicate: str, target_id: str, now: dt.datetime, *,
               weight: Optional[float] = None, actor: str = 'api') -> None:
        """
        Link two records by a predicate (supports, contradicts, derived_from, ...).

        :param source_id: the record the link starts from
        :param predicate: one of ``RELATION_PREDICATES``
        :param target_id: the record it points to
        :param now: the time of the link, an aware datetime
        :param weight: how strong, 0 to 1; None: unweighted
        :param actor: who links them, for the audit log
        """
        revision.relate(self, source_id, predicate, target_id, now, weight=weight, actor=actor)

    # ------------------------------------------------------------------ metrics

    def metrics(self, now: dt.datetime, window_days: float = 30.0) -> dict:
        """
        Growth, salience distribution, usefulness, contradiction and revision rates (§15.10).

        :param now: the time measured at, an aware datetime
        :param window_days: the window of the rates, in days
        """
        return self.measure(now, window_days).to_dict()

    def measure(self, now: dt.datetime, window_days: float = 30.0) -> 'Metrics':
        """
        Return :meth:`metrics` as a :class:`~.metrics.Metrics` dataclass (typed fields).

        :param now: the time measured at, an aware datetime
        :param window_days: the window of the rates, in days
        """
        return metrics.measure(self, now, window_days)

    # ------------------------------------------------------------------ encryption at rest

    @property
    def key_file(self):
        """Return the path of the key file of the sealed records (None: no key file is used)."""
        return self.sealing.vault.key_path if self.sealing.vault is not None else None

    def sensitivity_of(self, text: str, sensitivity: Optional[str] = None) -> str:
        """
        Return the sensitivity a learn of ``text`` gets: as asked, else by its content.

        :param text: the text to learn
        :param sensitivity: the level asked for; None: ``high`` for text that looks secret,
            else the store's ``default_sensitivity``
        """
        if sensitivity is None:
            sensitivity = 'high' if textrules.looks_secret(text) else self.default_sensitivity
        validation.level(sensitivity, 'sensitivity')
        return sensitivity

    def seals(self, sensitivity: str) -> bool:
        """Return True when what is learned at ``sensitivity`` is stored encrypted."""
        return self.sealing.seals(sensitivity)

    def seal_fields(self, ref: str, fields: dict) -> dict:
        """
        Return ``fields`` encrypted for storage elsewhere in this database (a queued learn).

        :param ref: what the fields belong to (e.g. ``proposal-<id>``), bound into the seal
        :param fields: the fields to seal, plain JSON data
        """
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
        """
        Re-encrypt every sealed record under a new key, in one audited transaction.

        :param now: the time of the rotation, an aware datetime
        :param actor: who rotates it, for the audit log
        """
        return self.sealing.rotate_key(now, actor)
