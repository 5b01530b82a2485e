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
Peer federation at the edge of memory_node (RCAN §6): serving and calling peers.

The rules live in ``robot_memory.federation.peer_context`` (pure); :class:`PeerFederation`,
an object the node holds, only converts messages to plain data and back, holds the file lock while a
payload is merged, and writes the audit rows through the store worker.

* ``~/exchange_peer_context`` (robot_memory/srv/ExchangePeerContext): a peer sends its
  shareable entries and receives ours. Its payload is validated against the
  ``federation.*`` policy (allowlist, bounds, optional Ed25519 signature) and merged into
  its own block under ``peer_context``; own entries are never touched.
* ``~/sync_peers`` (std_srvs/srv/Trigger): exchange with every node in ``peer_nodes`` now
  and answer when all have replied (or timed out). The same exchange runs every
  ``peer_sync_period_s``.
* Silent peers: a block whose ``last_synced`` is older than ``federation.peer_expiry_s``
  is dropped (checked every few seconds) and the drop is audited.

Audit: every refused payload is one row. An accepted payload that changed something is
one row (plus one per own entry it newly corroborates); accepted payloads that changed
nothing are counted and written as one row per peer per hour of memory time
(``federation.federation_audit.UnchangedAudits``), so a periodic sync neither escapes the log
nor floods it.
"""

import datetime as dt
import math
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from std_srvs.srv import Trigger

from robot_memory.common.timeutil import format_iso
from robot_memory.errors import MemoryFileError
from robot_memory.errors import RobotMemoryError
from robot_memory.federation import federation_audit
from robot_memory.federation import peer_context
from robot_memory.rcan.memory_file import load_problems
from robot_memory.ros import convert
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN
from robot_memory.ros.refusal import refuse
from robot_memory.srv import ExchangePeerContext

SYNC_TIMEOUT_S = 10.0         # a peer that has not answered by then counts as failed
EXPIRY_CHECK_S = 2.0          # how often silent peers are looked for (wall seconds)


class PeerFederation:
    """``~/exchange_peer_context``, ``~/sync_peers`` and the periodic sync of one node."""

    def __init__(self, node, *, settings, clock, memory, cache, rrn: str, worker, on_change,
                 propose, services_group):
        """
        Load the configured keys and create the services on ``node``.

        ``settings`` returns the node's current settings, ``clock`` is the memory clock,
        ``worker`` writes the audit rows, ``on_change()`` is called when the peer blocks
        changed, ``propose(payload, now, actor)`` holds a payload for approval. Raises
        FederationError or OSError when a configured key cannot be read.
        """
        self._node = node
        self._settings = settings
        self._clock = clock
        self._memory = memory
        self._cache = cache
        self._rrn = rrn
        self._worker = worker
        self._on_change = on_change
        self._propose = propose
        policy = settings().federation
        if policy.private_key_path is not None:
            peer_context.load_private_key(policy.private_key_path)
        for path in policy.peer_public_keys.values():
            peer_context.load_public_key(path)
        self._lock = threading.Lock()
        self._peer_clients: dict = {}
        self._in_flight: dict[str, tuple] = {}  # peer node name -> (rclpy Future, start)
        self.peer_status: dict[str, dict] = {}  # peer node name -> dict shown in diagnostics
        self._unchanged = federation_audit.UnchangedAudits()
        self.exchanges = {'accepted': 0, 'refused': 0}
        self._client_group = ReentrantCallbackGroup()
        period = settings().node.peer_sync_period_s
        self._next_peer_sync = time.monotonic() + 1.0 if period else None
        self._next_expiry_check = time.monotonic() + EXPIRY_CHECK_S
        node.create_service(ExchangePeerContext, '~/exchange_peer_context',
                            self.exchange_callback, callback_group=services_group)
        node.create_service(Trigger, '~/sync_peers', self.sync_peers_callback,
                            callback_group=services_group)

    def _logger(self):
        return self._node.get_logger()

    # ------------------------------------------------------------------ payloads

    def own_payload(self, now: dt.datetime) -> peer_context.PeerPayload:
        """Return what this robot shares at ``now`` (signed when a private key is configured)."""
        settings = self._settings()
        return peer_context.build_payload(self._cache.document(now), now, settings.federation,
                                          settings.lifecycle)

    def accept_payload(self, data: dict, now: dt.datetime, actor: str):
        """Validate and merge a peer payload; audit it; raise PeerRejected when refused."""
        settings = self._settings()
        policy = settings.federation
        try:
            payload = peer_context.validate_payload(data, policy, now, self._rrn)
            if settings.proposals.peers == 'propose':
                held = self._propose(payload, now, actor)
                self.exchanges['accepted'] += 1
                return held
            with self._memory.update(now, self._rrn) as result:
                outcome = peer_context.merge_peer_payload(result.document, payload, now, policy)
        except peer_context.PeerRejected as error:
            self.exchanges['refused'] += 1
            self._audit(federation_audit.audit_records(error, now, actor))
            self._logger().warning(str(error), throttle_duration_sec=10.0)
            raise
        self.exchanges['accepted'] += 1
        with self._lock:
            records = self._unchanged.records(outcome, now, actor)
        self._audit(records)
        if records:
            self._on_change()
        return outcome

    def _audit(self, records) -> None:
        if not records:
            return
        future = self._worker.call_async(lambda store: store.record_audit(records))
        future.add_done_callback(self._audit_done)

    def _audit_done(self, future) -> None:
        error = future.exception()
        if error is not None:
            self._logger().error(f'audit log not written: {error}')

    def flush_unchanged_audit(self) -> None:
        """Write the pending "nothing changed" counts (at shutdown)."""
        with self._lock:
            if not self._unchanged:
                return
            records = self._unchanged.flush(self._clock.now())
        self._worker.call(lambda store: store.record_audit(records), timeout=10.0)

    # ------------------------------------------------------------------ serving

    def exchange_callback(self, request, response):
        """Answer ~/exchange_peer_context: merge the caller's payload, return ours."""
        now = self._clock.now()
        try:
            data = convert.peer_context_data(request.request)
            outcome = self.accept_payload(data, now, 'exchange_service')
            payload = self.own_payload(now)
        except peer_context.PeerRejected as error:
            return refuse(response, error)
        except (RobotMemoryError, OSError, ValueError) as error:
            return refuse(response, error, 'exchange failed on this robot: ')
        response.success = True
        response.message = outcome.summary()
        response.response = convert.peer_context_message(payload)
        return response

    # ------------------------------------------------------------------ calling peers

    def _client(self, name: str):
        client = self._peer_clients.get(name)
        if client is None:
            client = self._node.create_client(
                ExchangePeerContext, f'{name}/exchange_peer_context',
                callback_group=self._client_group)
            self._peer_clients[name] = client
        return client

    def _peer_result(self, name: str, ok: bool, message: str) -> None:
        now = self._clock.now()
        with self._lock:
            status = self.peer_status.setdefault(name, {'ok': 0, 'failed': 0})
            status['ok' if ok else 'failed'] += 1
            status['last_ok'] = ok
            status['last_attempt'] = format_iso(now)
            status['last_message'] = message[:300]
            done = status.pop('done', None)
        if not ok:
            self._logger().warning(f'peer sync with {name}: {message}',
                                   throttle_duration_sec=30.0)
        if done is not None:
            done.set()

    def sync_peers(self) -> list:
        """Start an exchange with every peer node; the threading.Events that end with them."""
        names = list(self._settings().node.peer_nodes)
        if not names:
            return []
        now = self._clock.now()
        try:
            payload = self.own_payload(now)
        except (MemoryFileError, peer_context.FederationError, OSError, ValueError) as error:
            for name in names:
                self._peer_result(name, False, f'cannot build our payload: {error}')
            return []
        request = ExchangePeerContext.Request(request=convert.peer_context_message(payload))
        events = []
        for name in names:
            done = threading.Event()
            client = self._client(name)
            ready = client.service_is_ready()
            with self._lock:
                flight = self._in_flight.get(name)
                if flight is not None and not flight[0].done():
                    # A peer that stopped while our request was in flight never answers:
                    # say so as soon as it has left the graph, not SYNC_TIMEOUT_S later.
                    if ready and time.monotonic() - flight[1] < SYNC_TIMEOUT_S:
                        continue
                    self._in_flight.pop(name, None)
                    unanswered = flight[0]
                else:
                    unanswered = None
                self.peer_status.setdefault(name, {'ok': 0, 'failed': 0})['done'] = done
            events.append(done)
            if unanswered is not None:
                # Outside the lock: a future without an executor runs its done callback
                # (_sync_done, which takes the lock) inside cancel().
                unanswered.cancel()
                self._peer_result(name, False, (
                    f'no reply within {SYNC_TIMEOUT_S:g} s' if ready else
                    'it left before replying (is the peer still running?)'))
                continue
            if not ready:
                self._peer_result(name, False, 'not available (is the peer running and on this '
                                               'ROS_DOMAIN_ID?)')
                continue
            future = client.call_async(request)
            with self._lock:
                self._in_flight[name] = (future, time.monotonic())
            future.add_done_callback(lambda done_future, n=name: self._sync_done(n, done_future))
        return events

    def _sync_done(self, name: str, future) -> None:
        with self._lock:
            if self._in_flight.get(name, (None,))[0] is future:
                del self._in_flight[name]
        try:
            if future.cancelled():
                return
            response = future.result()
            if not response.success:
                self._peer_result(name, False, f'the peer refused our payload: {response.message}')
                return
            outcome = self.accept_payload(convert.peer_context_data(response.response),
                                          self._clock.now(), 'peer_sync')
            self._peer_result(name, True, outcome.summary())
        except peer_context.PeerRejected as error:
            self._peer_result(name, False, f'its payload was refused: {error}')
        except Exception as error:  # noqa: B902 - a peer must never take the node down
            self._peer_result(name, False, f'exchange failed: {error}')

    def sync_peers_callback(self, request, response):
        """Answer ~/sync_peers: exchange with every peer node now, wait for their replies."""
        names = list(self._settings().node.peer_nodes)
        if not names:
            return refuse(response, 'no peer_nodes configured; set peer_nodes (and '
                                    'federation.allowed_peers) to sync')
        deadline = time.monotonic() + SYNC_TIMEOUT_S + 1.0
        for event in self.sync_peers():
            event.wait(max(0.0, deadline - time.monotonic()))
        with self._lock:
            results = {name: dict(self.peer_status.get(name, {})) for name in names}
        failed = [name for name, status in results.items() if not status.get('last_ok')]
        response.success = not failed
        response.message = '; '.join(
            f'{name}: {status.get("last_message", "no reply yet")}'
            for name, status in results.items())
        return response

    def tick(self) -> None:
        """Sync with peers and expire silent ones (called by the scheduler)."""
        period = self._settings().node.peer_sync_period_s
        monotonic = time.monotonic()
        if period and (self._next_peer_sync is None or monotonic >= self._next_peer_sync):
            self._next_peer_sync = monotonic + period
            self.sync_peers()
        elif not period:
            self._next_peer_sync = None
        if monotonic >= self._next_expiry_check:
            self._next_expiry_check = monotonic + EXPIRY_CHECK_S
            self.expire_silent_peers()

    def seconds_until_due(self) -> float:
        """Return the wall seconds until :meth:`tick` has work: a peer sync or the expiry check."""
        monotonic = time.monotonic()
        # No peer blocks, nothing to expire: no wake-up for it (the scheduler still looks
        # every few seconds, and a block that arrives is checked from then on).
        due = (self._next_expiry_check if self._cache.document(self._clock.now()).peer_context
               else math.inf)
        if self._settings().node.peer_sync_period_s:
            due = min(due, monotonic if self._next_peer_sync is None else self._next_peer_sync)
        return max(0.0, due - monotonic)

    def expire_silent_peers(self) -> list:
        """Drop the blocks of peers silent longer than federation.peer_expiry_s."""
        now = self._clock.now()
        policy = self._settings().federation
        document = self._cache.document(now)
        limit = dt.timedelta(seconds=policy.peer_expiry_s)
        if not any(now - block.last_synced > limit for block in document.peer_context or ()):
            return []
        try:
            with self._memory.update(now, self._rrn) as result:
                dropped = peer_context.expire_peers(result.document, now, policy)
                problems = load_problems(result, self._memory)  # before the save clears them
        except (MemoryFileError, OSError) as error:
            self._logger().warning(f'cannot expire silent peers: {error}',
                                   throttle_duration_sec=60.0)
            return []
        if problems:  # this write quarantined them: the next dream's report says so
            self._logger().warning(f'expiring silent peers: {"; ".join(problems)}')
            self._worker.call_async(lambda store: store.problems.extend(problems))
        if dropped:
            self._audit(federation_audit.audit_records(dropped, now, 'federation'))
            self._logger().info(f'peers silent for more than {policy.peer_expiry_s:g} s '
                                f'expired: {", ".join(dropped)}')
            self._on_change()
        return dropped

    def health(self) -> HealthStatus:
        """Return the HealthStatus of the node's "peers" diagnostic status."""
        settings = self._settings()
        document = self._cache.document(self._clock.now())
        blocks = document.peer_context or []
        values = {'allowed_peers': len(settings.federation.allowed_peers),
                  'peer_nodes': len(settings.node.peer_nodes),
                  'peer_blocks': len(blocks),
                  'exchanges_accepted': self.exchanges['accepted'],
                  'exchanges_refused': self.exchanges['refused'],
                  'signing': 'required' if settings.federation.require_signatures
                  else ('signed' if settings.federation.private_key_path else 'off')}
        for block in blocks:
            values[f'block {block.rrn}'] = (f'{len(block.entries)} entries, last synced '
                                            f'{format_iso(block.last_synced)}')
        with self._lock:
            statuses = {name: dict(status) for name, status in self.peer_status.items()}
        failing = []
        for name, status in statuses.items():
            values[f'sync {name}'] = (f'{"ok" if status.get("last_ok") else "FAILED"} at '
                                      f'{status.get("last_attempt", "-")}: '
                                      f'{status.get("last_message", "")}')
            if not status.get('last_ok') and 'last_attempt' in status:
                failing.append(name)
        if failing:
            return HealthStatus(WARN, f'sync failing with {", ".join(failing)}', values)
        return HealthStatus(OK, f'{len(blocks)} peer blocks', values)
