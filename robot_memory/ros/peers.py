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

The rules live in ``robot_memory.federation`` (pure); this mixin of ``MemoryNode`` only
converts messages to plain data and back, holds the file lock while a payload is merged,
and writes the audit rows through the store worker.

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
nothing are counted and written as one row per peer per hour of memory time, so a
periodic sync neither escapes the log nor floods it.
"""

import datetime as dt
import threading
import time

from rclpy.callback_groups import ReentrantCallbackGroup
from std_srvs.srv import Trigger

from robot_memory import federation
from robot_memory.errors import MemoryFileError
from robot_memory.evidence import AuditRecord
from robot_memory.ros import convert
from robot_memory.srv import ExchangePeerContext
from robot_memory.timeutil import format_iso

SYNC_TIMEOUT_S = 10.0         # a peer that has not answered by then counts as failed
EXPIRY_CHECK_S = 2.0          # how often silent peers are looked for (wall seconds)
UNCHANGED_AUDIT_S = 3600.0    # one "nothing changed" audit row per peer per this (memory s)


class PeerFederation:
    """Mixin of MemoryNode: ``~/exchange_peer_context``, ``~/sync_peers``, periodic sync."""

    def _init_federation(self, services_group) -> None:
        policy = self.settings.federation
        try:
            if policy.private_key_path is not None:
                federation.load_private_key(policy.private_key_path)
            for rrn, path in policy.peer_public_keys.items():
                federation.load_public_key(path)
        except (federation.FederationError, OSError) as error:
            raise self.startup_error(f'federation keys: {error}') from None
        self._federation_lock = threading.Lock()
        self._peer_clients = {}
        self._in_flight = {}        # peer node name -> (rclpy Future, monotonic start)
        self.peer_status = {}       # peer node name -> dict shown in diagnostics
        self._unchanged = {}        # peer rrn -> [count, since]
        self.exchanges = {'accepted': 0, 'refused': 0}
        self._client_group = ReentrantCallbackGroup()
        period = self.settings.node.peer_sync_period_s
        self._next_peer_sync = time.monotonic() + 1.0 if period else None
        self._next_expiry_check = time.monotonic() + EXPIRY_CHECK_S
        self.create_service(ExchangePeerContext, '~/exchange_peer_context',
                            self.exchange_callback, callback_group=services_group)
        self.create_service(Trigger, '~/sync_peers', self.sync_peers_callback,
                            callback_group=services_group)

    # ------------------------------------------------------------------ payloads

    def own_payload(self, now: dt.datetime) -> federation.PeerPayload:
        """Return what this robot shares at ``now`` (signed when a private key is configured)."""
        document = self.cache.document(now)
        return federation.build_payload(document, now, self.settings.federation,
                                        self.settings.lifecycle)

    def accept_payload(self, data: dict, now: dt.datetime, actor: str):
        """Validate and merge a peer payload; audit it; raise PeerRejected when refused."""
        policy = self.settings.federation
        try:
            payload = federation.validate_payload(data, policy, now, self.rrn)
            if self.settings.proposals.peers == 'propose':
                held = self.propose_payload(payload, now, actor)
                self.exchanges['accepted'] += 1
                return held
            with self.memory.update(now, self.rrn) as result:
                outcome = federation.merge_peer_payload(result.document, payload, now, policy)
        except federation.PeerRejected as error:
            self.exchanges['refused'] += 1
            self._audit(federation.audit_records(error, now, actor))
            self.get_logger().warning(str(error), throttle_duration_sec=10.0)
            raise
        self.exchanges['accepted'] += 1
        records = federation.audit_records(outcome, now, actor)
        with self._federation_lock:
            count, since = self._unchanged.pop(outcome.rrn, (0, now))
            if records:
                if count:
                    records.insert(0, self._unchanged_record(outcome.rrn, count, since, now,
                                                             actor))
            else:
                count += 1
                if (now - since).total_seconds() >= UNCHANGED_AUDIT_S:
                    records = [self._unchanged_record(outcome.rrn, count, since, now, actor)]
                else:
                    self._unchanged[outcome.rrn] = [count, since]
        self._audit(records)
        if records:
            self.cache.invalidate()
            self.publish_context()
        return outcome

    @staticmethod
    def _unchanged_record(rrn, count, since, now, actor) -> AuditRecord:
        return AuditRecord(now, f'peer:{rrn}', federation.AUDIT_ACTION, actor,
                           f'{count} exchanges accepted with nothing changed since '
                           f'{format_iso(since)}', {'outcome': 'accepted', 'unchanged': count,
                                                    'since': format_iso(since)})

    def _audit(self, records) -> None:
        if not records:
            return
        future = self.worker.call_async(lambda store: store.record_audit(records))
        future.add_done_callback(self._audit_done)

    def _audit_done(self, future) -> None:
        error = future.exception()
        if error is not None:
            self.get_logger().error(f'audit log not written: {error}')

    def flush_unchanged_audit(self) -> None:
        """Write the pending "nothing changed" counts (at shutdown)."""
        now = self.clock_.now()
        with self._federation_lock:
            pending, self._unchanged = self._unchanged, {}
        records = [self._unchanged_record(rrn, count, since, now, 'federation')
                   for rrn, (count, since) in pending.items()]
        if records:
            self.worker.call(lambda store: store.record_audit(records), timeout=10.0)

    # ------------------------------------------------------------------ serving

    def exchange_callback(self, request, response):
        """Answer ~/exchange_peer_context: merge the caller's payload, return ours."""
        now = self.clock_.now()
        try:
            data = convert.peer_context_data(request.request)
            outcome = self.accept_payload(data, now, 'exchange_service')
            payload = self.own_payload(now)
        except federation.PeerRejected as error:
            response.success = False
            response.message = str(error)
            return response
        except (MemoryFileError, federation.FederationError, OSError, ValueError) as error:
            response.success = False
            response.message = f'exchange failed on this robot: {error}'
            return response
        response.success = True
        response.message = outcome.summary()
        response.response = convert.peer_context_message(payload)
        return response

    # ------------------------------------------------------------------ calling peers

    def _client(self, name: str):
        client = self._peer_clients.get(name)
        if client is None:
            client = self.create_client(ExchangePeerContext, f'{name}/exchange_peer_context',
                                        callback_group=self._client_group)
            self._peer_clients[name] = client
        return client

    def _peer_result(self, name: str, ok: bool, message: str) -> None:
        now = self.clock_.now()
        with self._federation_lock:
            status = self.peer_status.setdefault(name, {'ok': 0, 'failed': 0})
            status['ok' if ok else 'failed'] += 1
            status['last_ok'] = ok
            status['last_attempt'] = format_iso(now)
            status['last_message'] = message[:300]
            done = status.pop('done', None)
        if not ok:
            self.get_logger().warning(f'peer sync with {name}: {message}',
                                      throttle_duration_sec=30.0)
        if done is not None:
            done.set()

    def sync_peers(self) -> list:
        """Start an exchange with every peer node; the threading.Events that end with them."""
        names = list(self.settings.node.peer_nodes)
        if not names:
            return []
        now = self.clock_.now()
        try:
            payload = self.own_payload(now)
        except (MemoryFileError, federation.FederationError, OSError, ValueError) as error:
            for name in names:
                self._peer_result(name, False, f'cannot build our payload: {error}')
            return []
        request = ExchangePeerContext.Request(request=convert.peer_context_message(payload))
        events = []
        for name in names:
            done = threading.Event()
            with self._federation_lock:
                flight = self._in_flight.get(name)
                if flight is not None and not flight[0].done():
                    if time.monotonic() - flight[1] < SYNC_TIMEOUT_S:
                        continue
                    flight[0].cancel()
                    self._in_flight.pop(name, None)
                    timed_out = True
                else:
                    timed_out = False
                self.peer_status.setdefault(name, {'ok': 0, 'failed': 0})['done'] = done
            events.append(done)
            if timed_out:
                self._peer_result(name, False, f'no reply within {SYNC_TIMEOUT_S:g} s')
                continue
            client = self._client(name)
            if not client.service_is_ready():
                self._peer_result(name, False, 'not available (is the peer running and on this '
                                               'ROS_DOMAIN_ID?)')
                continue
            future = client.call_async(request)
            with self._federation_lock:
                self._in_flight[name] = (future, time.monotonic())
            future.add_done_callback(lambda done_future, n=name: self._sync_done(n, done_future))
        return events

    def _sync_done(self, name: str, future) -> None:
        with self._federation_lock:
            self._in_flight.pop(name, None)
        try:
            if future.cancelled():
                return
            response = future.result()
            if not response.success:
                self._peer_result(name, False, f'the peer refused our payload: {response.message}')
                return
            outcome = self.accept_payload(convert.peer_context_data(response.response),
                                          self.clock_.now(), 'peer_sync')
            self._peer_result(name, True, outcome.summary())
        except federation.PeerRejected as error:
            self._peer_result(name, False, f'its payload was refused: {error}')
        except Exception as error:  # noqa: B902 - a peer must never take the node down
            self._peer_result(name, False, f'exchange failed: {error}')

    def sync_peers_callback(self, request, response):
        """Answer ~/sync_peers: exchange with every peer node now, wait for their replies."""
        names = list(self.settings.node.peer_nodes)
        if not names:
            response.success = False
            response.message = 'no peer_nodes configured; set peer_nodes (and ' \
                               'federation.allowed_peers) to sync'
            return response
        deadline = time.monotonic() + SYNC_TIMEOUT_S + 1.0
        for event in self.sync_peers():
            event.wait(max(0.0, deadline - time.monotonic()))
        with self._federation_lock:
            results = {name: dict(self.peer_status.get(name, {})) for name in names}
        failed = [name for name, status in results.items() if not status.get('last_ok')]
        response.success = not failed
        response.message = '; '.join(
            f'{name}: {status.get("last_message", "no reply yet")}'
            for name, status in results.items())
        return response

    def federation_tick(self) -> None:
        """Sync with peers and expire silent ones (called by the scheduler)."""
        period = self.settings.node.peer_sync_period_s
        monotonic = time.monotonic()
        if period and (self._next_peer_sync is None or monotonic >= self._next_peer_sync):
            self._next_peer_sync = monotonic + period
            self.sync_peers()
        elif not period:
            self._next_peer_sync = None
        if monotonic >= self._next_expiry_check:
            self._next_expiry_check = monotonic + EXPIRY_CHECK_S
            self.expire_silent_peers()

    def expire_silent_peers(self) -> list:
        """Drop the blocks of peers silent longer than federation.peer_expiry_s."""
        now = self.clock_.now()
        policy = self.settings.federation
        document = self.cache.document(now)
        limit = dt.timedelta(seconds=policy.peer_expiry_s)
        if not any(now - block.last_synced > limit for block in document.peer_context or ()):
            return []
        try:
            with self.memory.update(now, self.rrn) as result:
                dropped = federation.expire_peers(result.document, now, policy)
        except (MemoryFileError, OSError) as error:
            self.get_logger().warning(f'cannot expire silent peers: {error}',
                                      throttle_duration_sec=60.0)
            return []
        if dropped:
            self._audit(federation.audit_records(dropped, now, 'federation'))
            self.get_logger().info(f'peers silent for more than {policy.peer_expiry_s:g} s '
                                   f'expired: {", ".join(dropped)}')
            self.cache.invalidate()
            self.publish_context()
        return dropped

    def peer_health(self) -> tuple:
        """(level, message, values) for the node's "peers" diagnostic status."""
        document = self.cache.document(self.clock_.now())
        blocks = document.peer_context or []
        values = {'allowed_peers': len(self.settings.federation.allowed_peers),
                  'peer_nodes': len(self.settings.node.peer_nodes),
                  'peer_blocks': len(blocks),
                  'exchanges_accepted': self.exchanges['accepted'],
                  'exchanges_refused': self.exchanges['refused'],
                  'signing': 'required' if self.settings.federation.require_signatures
                  else ('signed' if self.settings.federation.private_key_path else 'off')}
        for block in blocks:
            values[f'block {block.rrn}'] = (f'{len(block.entries)} entries, last synced '
                                            f'{format_iso(block.last_synced)}')
        with self._federation_lock:
            statuses = {name: dict(status) for name, status in self.peer_status.items()}
        failing = []
        for name, status in statuses.items():
            values[f'sync {name}'] = (f'{"ok" if status.get("last_ok") else "FAILED"} at '
                                      f'{status.get("last_attempt", "-")}: '
                                      f'{status.get("last_message", "")}')
            if not status.get('last_ok') and 'last_attempt' in status:
                failing.append(name)
        if failing:
            return 1, f'sync failing with {", ".join(failing)}', values
        return 0, f'{len(blocks)} peer blocks', values
