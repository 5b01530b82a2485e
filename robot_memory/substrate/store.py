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

import datetime as dt
from typing import Iterable
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.substrate import forgetting
from robot_memory.substrate import learning
from robot_memory.substrate import metrics
from robot_memory.substrate import recall as recalling
from robot_memory.substrate import revision
from robot_memory.substrate import text as textrules
from robot_memory.substrate import validation
from robot_memory.substrate.filters import SubstrateError
from robot_memory.substrate.learning import LearnRequest
from robot_memory.substrate.recall import RECALLABLE  # noqa: F401 - re-exported
from robot_memory.substrate.records import RecordTable
from robot_memory.substrate.results import ForgetResult
from robot_memory.substrate.results import LearnResult
from robot_memory.substrate.results import RecallResult
from robot_memory.substrate.results import RevisionResult
from robot_memory.substrate.results import SelectionResult
from robot_memory.substrate.salience import effective_salience  # noqa: F401 - re-exported
from robot_memory.substrate.salience import row_salience
from robot_memory.substrate.schema import MIGRATIONS  # noqa: F401 - re-exported

if TYPE_CHECKING:  # the models load with the first record written or returned whole
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
