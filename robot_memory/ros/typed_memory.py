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
The typed memory substrate at the edge of memory_node: ~/learn, ~/recall, ~/forget.

The substrate (``robot_memory.substrate.Substrate``) lives in the same SQLite database as
the evidence and is safe to call from the executor's threads (its own lock and
connection). :class:`TypedMemoryServices`, an object the node holds, converts requests to
plain values, calls it with the memory clock, and turns every refusal into
``success: false`` with the substrate's reason. A learn goes through the configured
proposals mode (``robot_memory.review.proposing.learn_or_propose``). A ~/recall caller's trust
is capped by ``service_max_trust``: the ROS graph is not an authentication, so a caller
cannot raise its own clearance.
Metrics (RFC §15.10) are recomputed every ``substrate_metrics_period_s`` for diagnostics.
"""

import time
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.errors import RobotMemoryError
from robot_memory.review import proposing
from robot_memory.ros import convert
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN
from robot_memory.ros.refusal import refuse
from robot_memory.srv import Forget
from robot_memory.srv import Learn
from robot_memory.srv import Recall
from robot_memory.substrate import default_embedder
from robot_memory.substrate import describe_embedder
from robot_memory.substrate import SENSITIVITIES
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from robot_memory.substrate.crypto import default_key_path
from robot_memory.substrate.filters import compile_filters
from robot_memory.substrate.filters import MAX_FILTERS_BYTES
from robot_memory.substrate.filters import parse_json_object

if TYPE_CHECKING:
    from robot_memory.substrate.metrics import Metrics

DEFAULT_K = 5
CARDINALITIES = {'': None, 'one': True, 'many': False}


class TypedMemoryServices:
    """The substrate of one node and its ``~/learn``, ``~/recall`` and ``~/forget``."""

    def __init__(self, node, *, settings, clock, db_path, group):
        """
        Open the substrate in ``db_path`` and create the services on ``node``.

        ``settings`` returns the node's current settings and ``clock`` is the memory
        clock. Raises SubstrateError or ValueError when the substrate cannot be opened.
        """
        self._settings = settings
        self._clock = clock
        current = settings()
        embedder = default_embedder(current.node.substrate_vectors)
        key_file = current.node.substrate_key_file or default_key_path(
            db_path, current.federation.private_key_path)
        self.substrate = Substrate(db_path, embedder=embedder,
                                   encrypt_from=current.node.substrate_encrypt_from or None,
                                   key_file=key_file)
        try:
            if embedder is not None:
                self.substrate.reindex_vectors()
        except BaseException:
            self.substrate.close()
            raise
        self._metrics: Optional['Metrics'] = None
        self._encryption: Optional[dict] = None
        self._search: dict = {}
        self._metrics_error: Optional[str] = None
        self._metrics_due = 0.0
        node.create_service(Learn, '~/learn', self.learn_callback, callback_group=group)
        node.create_service(Recall, '~/recall', self.recall_callback, callback_group=group)
        node.create_service(Forget, '~/forget', self.forget_callback, callback_group=group)

    def close(self) -> None:
        """Close the substrate."""
        self.substrate.close()

    def queue_learn(self, now, actor: str, **fields) -> dict:
        """
        Return an agent's learn through the configured mode (see proposals.learn_or_propose).

        A proposal is written on the typed memory's own connection, under its lock: with a
        request_id the learn runs inside the transaction that keeps its reply for retries,
        so the proposal and that reply are committed together.
        """
        settings = self._settings().proposals
        if settings.agents == 'apply':
            return proposing.learn_or_propose(self.substrate, None, settings, now, actor,
                                              **fields)
        with self.substrate.exclusive() as db:
            return proposing.learn_or_propose(self.substrate,
                                              lambda: proposing.ProposalQueue(db), settings,
                                              now, actor, **fields)

    def _once(self, request, kind: str, fields: dict, act) -> dict:
        """``act()`` directly, or through the substrate's retry window when a request_id is set."""
        request_id = request.request_id
        if not request_id.strip():
            return {**act(), 'replayed': False}
        return self.substrate.once(request_id, kind, fields, self._clock.now(), act)

    def learn_callback(self, request, response):
        """Answer ~/learn: store (or reinforce) a typed record."""
        def act():
            context = (parse_json_object(request.context_json, 'context_json')
                       if request.context_json.strip() else None)
            cardinality = request.cardinality.strip()
            if cardinality not in CARDINALITIES:
                raise SubstrateError(f'cardinality {cardinality!r} is not one, many or empty')
            result = self.queue_learn(
                self._clock.now(), 'ros:learn', text=request.text,
                type=request.type.strip() or None, tags=list(request.tags), context=context,
                sensitivity=request.sensitivity.strip() or None,
                single_valued=CARDINALITIES[cardinality])
            return {'message': result['message'] or f'{result["action"]} {result["record_id"]}',
                    'id': result['record_id'], 'type': result['type'],
                    'duplicate': bool(result['duplicate']),
                    'proposal_id': int(result.get('proposal') or 0)}

        fields = {'text': request.text, 'type': request.type, 'tags': list(request.tags),
                  'context_json': request.context_json, 'sensitivity': request.sensitivity,
                  'cardinality': request.cardinality}
        try:
            reply = self._once(request, 'learn', fields, act)
        except (RobotMemoryError, ValueError) as error:
            return refuse(response, error)
        response.success = True
        response.message = reply['message']
        response.id = reply['id']
        response.type = reply['type']
        response.duplicate = reply['duplicate']
        response.replayed = reply['replayed']
        response.proposal_id = reply.get('proposal_id', 0)  # absent from older stored replies
        return response

    def recall_callback(self, request, response):
        """Answer ~/recall: the best records for a query, trust-gated."""
        ceiling = self._settings().node.service_max_trust
        trust = request.trust.strip() or ceiling
        try:
            if trust not in SENSITIVITIES:
                raise SubstrateError(f'trust {trust!r} is not one of {" | ".join(SENSITIVITIES)}')
            if SENSITIVITIES.index(trust) > SENSITIVITIES.index(ceiling):
                raise SubstrateError(f'trust {trust!r} is above what this node grants service '
                                     f'callers ({ceiling!r}); ask for {ceiling!r} or lower, or '
                                     'have the operator raise service_max_trust')
            filters = (parse_json_object(request.filters_json, 'filters_json',
                                         MAX_FILTERS_BYTES)
                       if request.filters_json.strip() else None)
            try:
                compile_filters(filters)
            except SubstrateError as error:  # name the request field, not the Python argument
                raise SubstrateError(f'filters_json: {error}') from None
            result = self.substrate.recall(request.query, k=int(request.k) or DEFAULT_K,
                                           filters=filters, trust=trust, now=self._clock.now())
        except (RobotMemoryError, ValueError) as error:
            return refuse(response, error)
        response.success = True
        response.message = (f'{len(result.hits)} records ({result.mode}); {result.withheld} '
                            f'withheld and {result.redacted} redacted at trust {trust!r}')
        if result.notice:
            response.message += f'; {result.notice}'
        response.records = [convert.record_message(hit) for hit in result.hits]
        return response

    def forget_callback(self, request, response):
        """Answer ~/forget: archive, delete or restore a record by id or the best query match."""
        record_id, query = request.id.strip(), request.query.strip()

        def act():
            if record_id and query:
                raise SubstrateError('give either id or query, not both')
            if not record_id and not query:
                raise SubstrateError('say what to forget: an id, or a query')
            result = self.substrate.forget(
                record_id or query, request.reason, self._clock.now(), hard=request.hard,
                all_matches=request.all, dry_run=request.dry_run, restore=request.restore,
                by='id' if record_id else 'query', actor='ros:forget',
                trust=self._settings().node.service_max_trust)
            return {'ids': list(result.ids), 'success': True, 'message': result.message}

        fields = {'id': record_id, 'query': query, 'reason': request.reason,
                  'hard': bool(request.hard), 'all': bool(request.all),
                  'dry_run': bool(request.dry_run), 'restore': bool(request.restore)}
        try:
            reply = self._once(request, 'forget', fields, act)
        except (RobotMemoryError, ValueError) as error:
            return refuse(response, error)
        response.ids = reply['ids']
        response.success = reply['success']
        response.message = reply['message']
        response.replayed = reply['replayed']
        return response

    def health(self) -> HealthStatus:
        """Return the HealthStatus of the "typed memory" diagnostic status."""
        if time.monotonic() >= self._metrics_due:
            self._metrics_due = time.monotonic() + self._settings().node.substrate_metrics_period_s
            try:
                self._metrics = self.substrate.measure(self._clock.now())
                self._encryption = self.substrate.sealed_status()
                # Looked for with the metrics, not every second: finding the semantic
                # model's packages walks sys.path (about 90 stat calls).
                self._search = describe_embedder(self.substrate.embedder)
                self._metrics_error = None
            except (SubstrateError, ValueError, OSError) as error:
                self._metrics_error = str(error)
        if self._metrics_error:
            return HealthStatus(WARN, f'metrics unavailable: {self._metrics_error}', {})
        metrics, encryption = self._metrics, self._encryption
        # Measured once at least: the last measurement's error returned above.
        assert metrics is not None and encryption is not None
        search = self._search
        values = {'records': metrics.records, 'search': search['search'],
                  'embedder': search['embedder'],
                  **{f'type {name}': count for name, count in metrics.by_type.items()},
                  **{f'status {name}': count for name, count in metrics.by_status.items()},
                  'created_per_day': metrics.growth.rate_per_day,
                  'salience_mean': metrics.salience.mean,
                  'salience_median': metrics.salience.median,
                  'pinned': metrics.salience.pinned,
                  'recall_hits': metrics.retrieval.hits,
                  'usefulness': metrics.retrieval.usefulness,
                  'contradiction_rate': metrics.contradiction.rate,
                  'revisions_per_day': metrics.revision.rate_per_day,
                  'window_days': metrics.window_days,
                  'encrypted_records': encryption['sealed'],
                  'encrypted_withheld': encryption['withheld'],
                  'plaintext_sensitive_records': encryption['plaintext_sensitive']}
        if encryption['withheld']:  # the key is missing or wrong: say what to do
            return HealthStatus(WARN, encryption['notice'], values)
        message = f'{metrics.records} records'
        if encryption['plaintext_sensitive']:
            # Said, not raised to WARN: running without encryption may be the operator's choice.
            message += f'; {encryption["plaintext_notice"]}'
        return HealthStatus(OK, message, values)
