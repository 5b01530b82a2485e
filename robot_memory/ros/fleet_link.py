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
memory_node on the fleet: its signed payload after each dream, its presence, fleet lessons.

Started only when ``fleet_connect`` is set (the node imports this module then, and Zenoh
with it). A thread of its own does the network's work, never the executor: after each dream
it seals the robot's payload (``fleet.envelope``) into the outbox beside the memory file,
publishes it under ``robot-memory/fleet/SITE/RRN/payload`` and delivers the newest waiting
one to the fleet store (``fleet.transport.deliver``), again every ``fleet_retry_s`` until
the store acknowledges it. The node answers queries for its newest payload on the same key
and declares its liveliness token on ``.../alive``, so the fleet sees it is there. A router
that does not answer at start does not stop the node: the thread opens the session when it
can (every ``fleet_retry_s``), and the dreams' payloads wait in the outbox meanwhile.

With ``fleet_public_key`` set it takes fleet lessons (``fleet.lessons``): those published
for its model or site, and those the store answers when asked (once linked, until the store
answers, and after each dream, so a robot back from an outage catches up). A lesson the
fleet key signed goes into the memory's ``fleet`` peer block, or out of it when revoked; one
it did not sign is refused and counted. Each is audited (``fleet_lesson``) on the lesson's
entry id, so ``robot-memory history peer:fleet:<lesson>`` shows where it came from.
"""

import dataclasses
import datetime as dt
import threading
from typing import Any
from typing import Optional

from robot_memory.errors import MissingExtra
from robot_memory.evidence.evidence_audit import AuditRecord
from robot_memory.federation.peer_context import FederationError
from robot_memory.federation.peer_context import load_public_key
from robot_memory.fleet import keys
from robot_memory.fleet.envelope import envelope_for
from robot_memory.fleet.envelope import Provenance
from robot_memory.fleet.lessons import apply_lesson
from robot_memory.fleet.lessons import Lesson
from robot_memory.fleet.lessons import open_lesson
from robot_memory.fleet.outbox import Outbox
from robot_memory.fleet.outbox import outbox_path
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.refusals import json_of
from robot_memory.fleet.refusals import Refused
from robot_memory.fleet.transport import answer_payload
from robot_memory.fleet.transport import declare_presence
from robot_memory.fleet.transport import deliver
from robot_memory.fleet.transport import open_session
from robot_memory.fleet.transport import session_config
from robot_memory.fleet.transport import tls_files
from robot_memory.fleet.transport import zenoh_module
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN
from robot_memory.ros.parameters import StartupError


@dataclasses.dataclass(frozen=True)
class Dreamt:
    """A dream to send: its id and time."""

    dream_id: int
    at: dt.datetime


def start(node) -> Optional['FleetLink']:
    """Return the node's link to the fleet, started; None when fleet_connect is empty."""
    settings = node.settings.node
    if not settings.fleet_connect:
        return None
    if node.settings.federation.private_key_path is None:
        raise StartupError('fleet_connect: fleet payloads are signed end to end; set '
                           'federation.private_key_path (robot-memory keygen makes a pair)')
    try:
        if settings.fleet_public_key:
            load_public_key(settings.fleet_public_key)
        return FleetLink(node)
    except (FleetError, FederationError, MissingExtra, ValueError) as error:
        raise StartupError(f'fleet: {error}') from None


class FleetLink:
    """The node's Zenoh session, outbox, presence and payload queryable, and their thread."""

    def __init__(self, node):
        settings = node.settings.node
        self.node = node
        self.site, self.rrn = keys.check_site(settings.fleet_site), keys.check_rrn(node.rrn)
        self.model, self.firmware = settings.fleet_model, settings.fleet_firmware
        self.retry_s = settings.fleet_retry_s
        self.outbox = Outbox(outbox_path(node.memory.path))
        self._lock = threading.Lock()
        self._latest = self.outbox.latest()  # what a query gets; from before a restart too
        self._dreams: list = []
        self._wake, self._stop = threading.Event(), threading.Event()
        self.sent = self.acknowledged = 0
        self.fleet_key = settings.fleet_public_key or None
        self.lessons = {'taken': 0, 'revoked': 0, 'refused': 0}
        self._heard: list = []  # lesson messages from Zenoh's threads, for ours
        self._ask = self.fleet_key is not None  # ask the store for the current lessons
        self.last_answer = 'no dream sent yet'
        self._unpublished = False
        self.pending = self.outbox.counts()['pending']
        self.connect = list(settings.fleet_connect)
        try:  # a wrong set-up stops the start; an unreachable router does not (see _link)
            zenoh_module()
            self.tls = tls_files(settings.fleet_tls_ca, settings.fleet_tls_cert,
                                 settings.fleet_tls_key)
            session_config('client', connect=self.connect, tls=self.tls)
        except BaseException:
            self.outbox.close()
            raise
        self.session: Any = None  # a Zenoh session, once a router answered
        self._declared: list = []
        self.thread = threading.Thread(target=self._run, name='fleet', daemon=True)
        self.thread.start()

    def _link(self) -> bool:
        """Open the session and declare what the node offers; False while no router answers."""
        if self.session is not None:
            return True
        try:
            session = open_session('client', connect=self.connect, tls=self.tls)
        except FleetError as error:
            self.last_answer = f'no link to the fleet yet, trying every {self.retry_s:g} s: {error}'
            self.node.get_logger().warning(f'fleet: {self.last_answer}',
                                           throttle_duration_sec=600.0)
            return False
        self._declared = [declare_presence(session, self.site, self.rrn),
                          answer_payload(session, self.site, self.rrn, self.latest)]
        if self.fleet_key is not None:
            self._declared += [
                session.declare_subscriber(keys.lesson_key(scope, value), self._on_lesson)
                for scope, value in (('model', self.model), ('site', self.site))]
        self.session = session
        self.last_answer = f'linked to {", ".join(self.connect)}'
        self.node.get_logger().info(f'fleet: {self.last_answer}')
        return True

    def latest(self) -> Optional[bytes]:
        """Return the newest sealed payload (None before the first dream)."""
        with self._lock:
            return self._latest

    def dreamt(self, dream_id: Optional[int], at: dt.datetime) -> None:
        """Send the payload of a dream that finished (the thread seals and delivers it)."""
        if dream_id is None:
            return
        with self._lock:
            self._dreams.append(Dreamt(dream_id, at))
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                dreams, self._dreams = self._dreams, []
                heard, self._heard = self._heard, []
            try:
                for dream in dreams:
                    self._seal(dream)
                if self._link():
                    self._exchange(bool(dreams), heard)
            except Exception as error:  # noqa: B902 - the thread reports and goes on
                self.last_answer = f'{type(error).__name__}: {error}'
                self.node.get_logger().warning(f'fleet: {self.last_answer}')
            waiting = self.pending or self._ask or self.session is None
            self._wake.wait(self.retry_s if waiting else None)
            self._wake.clear()

    def _exchange(self, dreamt: bool, heard: list) -> None:
        """Publish and deliver what waits; take the lessons heard and those the store has."""
        with self._lock:
            latest = self._latest
        if self._unpublished and latest is not None:
            self.session.put(keys.payload_key(self.site, self.rrn), latest)
            self._unpublished = False
        if self.outbox.next() is not None:
            self._deliver()
        if self._ask or dreamt:
            heard = heard + self._ask_store()
        for raw in heard:
            self._take(raw)

    def _seal(self, dream: Dreamt) -> None:
        federation = self.node.settings.federation
        document = self.node.memory.load(dream.at, default_rrn=self.rrn).document
        provenance = Provenance(self.site, self.model, self.firmware, dream.dream_id, dream.at)
        envelope = envelope_for(document, dream.at, federation, provenance,
                                self.node.settings.lifecycle)
        self.outbox.add(dream.dream_id, dream.at, self.rrn, self.site, envelope, dream.at)
        with self._lock:
            self._latest = envelope
        self._unpublished = True  # published once linked
        self.sent += 1

    def _deliver(self) -> None:
        now = self.node.clock_.now()
        done = deliver(self.session, self.outbox, now, fleet_public_key=self.fleet_key)
        self.pending = done.counts['pending']
        if done.ack is not None and done.ack.acknowledged:
            self.acknowledged += 1
            self.last_answer = f'dream {done.dream_id} acknowledged ({done.ack.status})'
            self.node.get_logger().info(f'fleet: {self.last_answer}')
        else:
            self.last_answer = (f'dream {done.dream_id} not delivered: '
                                + (done.ack.message if done.ack is not None
                                   else 'no fleet store answered'))
            self.node.get_logger().warning(f'fleet: {self.last_answer}; it waits in '
                                           f'{self.outbox.path}')

    def _on_lesson(self, sample) -> None:
        with self._lock:
            self._heard.append(sample.payload.to_bytes())
        self._wake.set()

    def _ask_store(self) -> list:
        """Return the store's current lesson messages; ask again later if it did not answer."""
        for reply in self.session.get(keys.store_lessons_key(self.site, self.model),
                                      timeout=10.0):
            if reply.ok is None:
                continue
            try:
                found = json_of(reply.ok.payload.to_bytes())
                messages = [str(message).encode('utf-8') for message in found]
            except (ValueError, TypeError):
                continue  # a malformed answer: as no answer
            self._ask = False
            return messages
        self._ask = True
        return []

    def _take(self, raw: bytes) -> None:
        """Take in, or refuse, one lesson message; audit what happened."""
        now = self.node.clock_.now()
        try:
            lesson = open_lesson(raw, self.fleet_key)
        except Refused as refused:
            self.lessons['refused'] += 1
            self.node.get_logger().warning(f'fleet: lesson refused: {refused}')
            self._audit(AuditRecord(now, 'peer:fleet', 'fleet_lesson', 'fleet',
                                    f'refused ({refused.reason}): {refused.detail}'[:500],
                                    {'outcome': 'refused', 'reason': refused.reason}))
            return
        if not lesson.applies_to(self.site, self.model):
            return  # signed by the fleet, for other robots
        with self.node.memory.update(now, self.rrn) as result:
            change = apply_lesson(result.document, lesson, now)
        if change is None:
            return
        self.lessons[change] += 1
        self._audit(AuditRecord(now, lesson.entry_id, 'fleet_lesson', 'fleet',
                                _said(lesson, change), _detail(lesson, change)))
        self.node.get_logger().info(f'fleet: {_said(lesson, change)}')
        self.node.memory_changed()

    def _audit(self, record: AuditRecord) -> None:
        self.node.worker.call(lambda store: store.record_audit([record]), timeout=10.0)

    def health(self) -> HealthStatus:
        """Return the "fleet" status: what was sent and acknowledged, what waits."""
        values = {'site': self.site, 'payloads_sent': self.sent,
                  'acknowledged': self.acknowledged, 'pending': self.pending,
                  'outbox': str(self.outbox.path), 'lessons_taken': self.lessons['taken'],
                  'lessons_revoked': self.lessons['revoked'],
                  'lessons_refused': self.lessons['refused']}
        values['linked'] = self.session is not None
        if self.pending or self.session is None:
            return HealthStatus(WARN, f'{self.pending} payloads wait for the fleet store; '
                                      f'last: {self.last_answer}', values)
        return HealthStatus(OK, f'site {self.site}: {self.last_answer}', values)

    def stop(self) -> None:
        """Stop the thread, withdraw the presence and the queryable, close the session."""
        self._stop.set()
        self._wake.set()
        self.thread.join(timeout=15.0)
        for declared in self._declared:
            declared.undeclare()
        if self.session is not None:
            self.session.close()
        self.outbox.close()


def _said(lesson: Lesson, change: str) -> str:
    if change == 'revoked':
        return f'lesson {lesson.lesson_id} revoked by {lesson.operator}: {lesson.reason}'
    return (f'lesson {lesson.lesson_id} from the fleet: {lesson.source_rrn} '
            f'{lesson.source_entry}, promoted by {lesson.operator} to every robot of '
            f'{lesson.scope} {lesson.scope_value}: {lesson.reason}')


def _detail(lesson: Lesson, change: str) -> dict:
    return {'outcome': change, 'lesson': lesson.lesson_id, 'source_rrn': lesson.source_rrn,
            'source_entry': lesson.source_entry, 'scope': lesson.scope,
            'scope_value': lesson.scope_value, 'operator': lesson.operator,
            'issued_at': lesson.issued_at.isoformat()}
