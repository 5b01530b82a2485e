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
The fleet over Zenoh: sessions, a robot's delivery, and the fleet store's subscriber and queryables.

``zenoh`` (the ``eclipse-zenoh`` package of the ``fleet`` extra) is imported only here, and
only when a fleet command runs. Multicast scouting is off: a session reaches exactly the
endpoints it is given (a site's router, the store), never whatever answers on the LAN.
"""

import dataclasses
import datetime as dt
import json
import pathlib
import queue
import threading
from typing import Any
from typing import Callable
from typing import Optional

from robot_memory.errors import MissingExtra
from robot_memory.fleet import acks
from robot_memory.fleet import keys
from robot_memory.fleet import lesson_store
from robot_memory.fleet.fleet_store import Ack
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.fleet_store import MAX_TAKEN
from robot_memory.fleet.lessons import open_lesson
from robot_memory.fleet.outbox import Outbox
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.refusals import json_of
from robot_memory.fleet.refusals import Refused
from robot_memory.fleet.report import build_report

DEFAULT_TIMEOUT_S = 10.0
QUEUED = 4 * MAX_TAKEN  # deliveries waiting for fleet serve at most


def zenoh_module():
    """Return the zenoh module, or raise MissingExtra saying how to install it."""
    try:
        import zenoh  # lazy: an optional extra, 2 ms and 3.6 MB; only a fleet command
    except ImportError as error:
        raise MissingExtra('robot-memory fleet', 'fleet', error.name or 'zenoh') from None
    return zenoh


@dataclasses.dataclass(frozen=True)
class TlsFiles:
    """
    Mutual TLS on ``tls/`` endpoints: the fleet's CA, and this node's certificate and key (PEM).

    Every router, store and robot presents a certificate the fleet's CA signed and accepts
    only peers that do; a listener's certificate must name the host the others connect to.
    """

    ca: pathlib.Path
    certificate: pathlib.Path
    key: pathlib.Path

    def __post_init__(self):
        for path, option in ((self.ca, '--tls-ca'), (self.certificate, '--tls-cert'),
                             (self.key, '--tls-key')):
            if not pathlib.Path(path).is_file():
                raise FleetError(f'{option} {path} is not a file; give the PEM file')

    def config(self) -> dict:
        """Return Zenoh's ``transport.link.tls`` settings for these files."""
        key, certificate = str(self.key), str(self.certificate)
        return {'root_ca_certificate': str(self.ca), 'enable_mtls': True,
                'listen_private_key': key, 'listen_certificate': certificate,
                'connect_private_key': key, 'connect_certificate': certificate}


def tls_files(ca, certificate, key) -> Optional[TlsFiles]:
    """Return the TLS files given, or None when none is; a partial set is refused."""
    given = [value for value in (ca, certificate, key) if value]
    if not given:
        return None
    if len(given) < 3:
        raise FleetError('give --tls-ca, --tls-cert and --tls-key together: the fleet uses '
                         "mutual TLS (the fleet CA's certificate, this node's certificate and "
                         'its key)')
    return TlsFiles(pathlib.Path(ca), pathlib.Path(certificate), pathlib.Path(key))


def session_config(mode: str, listen=(), connect=(), tls: Optional[TlsFiles] = None) -> dict:
    """Return a Zenoh session's configuration: mode, endpoints, TLS, no multicast scouting."""
    config: dict = {'mode': mode, 'scouting': {'multicast': {'enabled': False}}}
    if listen:
        config['listen'] = {'endpoints': list(listen)}
    if connect:
        config['connect'] = {'endpoints': list(connect)}
    if tls is not None:
        config['transport'] = {'link': {'tls': tls.config()}}
    elif any(str(endpoint).startswith('tls/') for endpoint in (*listen, *connect)):
        raise FleetError('a tls/ endpoint needs --tls-ca, --tls-cert and --tls-key (the fleet '
                         "CA's certificate, this node's certificate and its key)")
    return config


def open_session(mode: str, listen=(), connect=(), tls: Optional[TlsFiles] = None):
    """Open a Zenoh session; a bad endpoint or an unreachable router is a FleetError."""
    zenoh = zenoh_module()
    config = session_config(mode, listen, connect, tls)
    try:
        return zenoh.open(zenoh.Config.from_json5(json.dumps(config)))
    except zenoh.ZError as error:
        where = ', '.join([f'listen on {", ".join(listen)}'] * bool(listen)
                          + [f'connect to {", ".join(connect)}'] * bool(connect))
        raise FleetError(f'cannot open a Zenoh {mode} session ({where}): {error}; check the '
                         'endpoints (e.g. tcp/192.0.2.10:7447), that a router listens '
                         'there, and with TLS that both sides have certificates of the fleet '
                         'CA') from None


def _answer(reply) -> Optional[Ack]:
    sample = reply.ok
    data = sample.payload.to_bytes() if sample is not None else reply.err.payload.to_bytes()
    try:
        fields = json_of(data)
        return Ack(fields['status'], fields.get('rrn'), fields.get('dream_id'),
                   reason=str(fields.get('reason') or ''),
                   message=str(fields.get('message') or ''),
                   signature=str(fields.get('signature') or ''))
    except (ValueError, TypeError, AttributeError, KeyError):
        return Ack('refused', None, reason='malformed',
                   message=f'the store answered something that is not an ack: {data[:200]!r}')


def _for_delivery(ack: Ack, rrn: str, dream_id: int) -> Ack:
    """
    Return ``ack``, or a refusal when it acknowledges another robot's or another dream's payload.

    The store names the dream it kept or had; an answer about another one (a second store
    of another fleet on the same key, a program answering on it by mistake) must not make
    the robot forget the payload that is waiting.
    """
    if ack.acknowledged and (ack.rrn, ack.dream_id) != (rrn, dream_id):
        return Ack('refused', ack.rrn, ack.dream_id, reason='malformed',
                   message=f'the store answered {ack.status} for dream {ack.dream_id!r:.20} of '
                           f'{ack.rrn!r:.40}, not for this delivery (dream {dream_id} of {rrn})')
    return ack


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What one push achieved: the ack (None: no store answered) and the outbox after it."""

    dream_id: Optional[int]
    superseded: tuple
    ack: Optional[Ack]
    counts: dict


def deliver(session, outbox: Outbox, now: dt.datetime,
            timeout_s: float = DEFAULT_TIMEOUT_S, fleet_public_key=None) -> Delivery:
    """
    Deliver the newest pending payload to the fleet store and record its answer.

    The store's ingest queryable answers an ack; the payload stays pending when no store
    answers or the store refuses it (nothing learned is lost), and is acknowledged, with the
    older pending ones it supersedes, when the store kept it now or before: an answer that
    names another robot or dream is taken as a refusal (:func:`_for_delivery`). With the
    fleet's public key (a PEM path), so is one the fleet key did not sign (:mod:`.acks`).
    """
    waiting = outbox.next()
    if waiting is None:
        return Delivery(None, (), None, outbox.counts())
    ack = None
    for reply in session.get(keys.ingest_key(waiting.site, waiting.rrn),
                             payload=waiting.envelope, timeout=timeout_s):
        ack = _answer(reply)
        if ack is not None:
            ack = _for_delivery(ack, waiting.rrn, waiting.dream_id)
            if fleet_public_key is not None:
                ack = acks.checked(ack, waiting.envelope, fleet_public_key)
            break
    if ack is not None and ack.acknowledged:
        outbox.acknowledge(waiting, f'{ack.status}: {ack.message}', now)
    else:
        outbox.note(waiting, ack.message if ack is not None else
                    f'no fleet store answered within {timeout_s:g} s')
    return Delivery(waiting.dream_id, waiting.older, ack, outbox.counts())


def declare_presence(session, site: str, rrn: str):
    """Declare the robot's liveliness token; keep the returned token while the robot runs."""
    return session.liveliness().declare_token(keys.alive_key(site, rrn))


def answer_payload(session, site: str, rrn: str, latest: Callable[[], Optional[bytes]]):
    """
    Answer queries on the robot's payload key with ``latest()`` (its newest sealed envelope).

    Nothing is answered while ``latest()`` returns None (no dream yet). Keep the returned
    queryable while the robot runs.
    """
    key = keys.payload_key(site, rrn)

    def answer(query) -> None:
        envelope = latest()
        if envelope is not None:
            query.reply(key, envelope)
    return session.declare_queryable(key, answer)


class StoreServer:
    """
    The fleet store on Zenoh: the payload subscriber and the ingest, report, robot queryables.

    Deliveries (published payloads and ingest queries) wait in a queue that one serving
    thread drains: what came while the store wrote the last ones is kept together
    (``FleetStore.receive_many``, up to ``MAX_TAKEN``), each delivery still checked, logged
    and answered on its own. With the fleet's public key: the lessons queryable too, and a
    subscriber that refuses and counts every lesson on the fleet's key space that the fleet
    key did not sign.

    ``fleet_key``: the fleet's Ed25519 private key (loaded): every ack answered is signed with
    it (:mod:`.acks`), so robots that know the fleet's public key can tell it came from here.

    ``reader``: a second FleetStore on the same database (its own connection) that answers
    the queries (the report, a robot's entries, lessons). A report over thousands of robots
    takes seconds; on the ingest's connection every delivery waited for it. Without one, the
    queries share the ingest's connection and wait for it, and it for them.
    """

    def __init__(self, session, store: FleetStore, clock: Callable[[], dt.datetime],
                 log: Callable[[str], Any] = print, fleet_public_key=None,
                 reader: Optional[FleetStore] = None, fleet_key=None):
        self.session = session
        self.store = store
        self.clock = clock
        self.log = log
        self.fleet_public_key = fleet_public_key
        self.fleet_key = fleet_key
        self._lock = threading.Lock()  # one user at a time of the store's connection
        self.reader = reader if reader is not None else store
        self._read_lock = threading.Lock() if reader is not None else self._lock
        # (key, raw, query or None); None: stop. Bounded: when the store falls behind, Zenoh's
        # callback waits here, as it waited for the store before there was a queue.
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUED)
        self._serving = threading.Thread(target=self._serve, name='fleet-store-ingest',
                                         daemon=True)
        self._serving.start()
        self._declared = [
            session.declare_subscriber(keys.ALL_PAYLOADS, self._on_sample),
            session.declare_queryable(keys.ALL_INGEST, self._on_ingest),
            session.declare_queryable(keys.REPORT, self._on_report),
            session.declare_queryable(keys.ROBOTS, self._on_robot),
        ]
        if fleet_public_key is not None:
            self._declared += [
                session.declare_queryable(keys.STORE_LESSONS, self._on_lessons),
                session.declare_subscriber(keys.ALL_LESSONS, self._on_lesson),
            ]

    def close(self) -> None:
        """Undeclare the subscriber and the queryables; answer what waits, then stop serving."""
        for declared in self._declared:
            declared.undeclare()
        self._declared = []
        self._queue.put(None)
        self._serving.join()

    def receive(self, key: str, raw: bytes) -> Ack:
        """Keep one delivery that came on ``key``; log and return the ack."""
        return self.receive_many([(key, raw)])[0]

    def receive_many(self, deliveries: list) -> list:
        """Keep deliveries ``(key, raw)`` together; log and return each one's ack."""
        checked = []
        for key, raw in deliveries:
            found = keys.site_and_rrn(key)  # the subscriptions' key expressions make None rare
            site, rrn = found if found is not None else ('', '')
            checked.append((raw, site, rrn))
        with self._lock:
            answers = self.store.receive_many(checked, self.clock())
        if len(deliveries) > 1:
            self.log(f'fleet serve: {len(deliveries)} deliveries kept together')
        for (key, _), ack in zip(deliveries, answers):
            self.log(f'fleet serve: {key}: {ack.status}'
                     + (f' ({ack.reason})' if ack.reason else '') + f': {ack.message}')
        return answers

    def _serve(self) -> None:
        """Keep what waits in the queue, up to MAX_TAKEN at once, until close()."""
        stopping = False
        while not stopping:
            waiting = [self._queue.get()]
            while len(waiting) < MAX_TAKEN and not self._queue.empty():
                waiting.append(self._queue.get())
            stopping = None in waiting
            waiting = [item for item in waiting if item is not None]
            if waiting:
                self._guarded(f'{len(waiting)} deliveries', lambda: self._answer(waiting))

    def _answer(self, waiting: list) -> None:
        try:
            answered = self.receive_many([(key, raw) for key, raw, _ in waiting])
            for (_, raw, query), ack in zip(waiting, answered):
                if query is None:
                    continue
                if self.fleet_key is not None:
                    ack = acks.sign(ack, raw, self.fleet_key)
                body = json.dumps(ack.to_data(), ensure_ascii=False).encode('utf-8')
                if ack.acknowledged:
                    query.reply(query.key_expr, body)
                else:
                    query.reply_err(body)
        finally:
            for _, _, query in waiting:
                if query is not None:
                    query.drop()  # answered (or not, on an error): the querier stops waiting

    def _guarded(self, what: str, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as error:  # noqa: B902 - a Zenoh callback must not die silently
            self.log(f'fleet serve: {what} failed: {type(error).__name__}: {error}')

    def _on_sample(self, sample) -> None:
        self._queue.put((str(sample.key_expr), sample.payload.to_bytes(), None))

    def _on_ingest(self, query) -> None:
        raw = query.payload.to_bytes() if query.payload is not None else b''
        self._queue.put((str(query.key_expr), raw, query))

    def _on_report(self, query) -> None:
        def answer():
            with self._read_lock:
                report = build_report(self.reader, self.clock())
            query.reply(keys.REPORT, json.dumps(report, ensure_ascii=False).encode('utf-8'))
        self._guarded('a report query', answer)

    def _on_robot(self, query) -> None:
        def answer():
            rrn = str(query.key_expr).rsplit('/', 1)[-1]
            with self._read_lock:
                entries = self.reader.entries(keys.check_rrn(rrn))
            query.reply(keys.robot_key(rrn), json.dumps(
                {'rrn': rrn, 'entries': entries}, ensure_ascii=False).encode('utf-8'))
        self._guarded('a robot query', answer)

    def _on_lessons(self, query) -> None:
        def answer():
            site, model = str(query.key_expr).split('/')[-2:]
            with self._read_lock:
                found = lesson_store.messages_for(self.reader, site, model)
            # one reply, even with no lesson: the robot knows the store answered
            query.reply(query.key_expr, json.dumps(
                [message.decode('utf-8') for message in found]).encode('utf-8'))
        self._guarded('a lessons query', answer)

    def _on_lesson(self, sample) -> None:
        def check():
            try:
                open_lesson(sample.payload.to_bytes(), self.fleet_public_key)
            except Refused as refused:
                with self._lock:
                    self.store.count(refused, self.clock())
                    lesson_store.audit(self.store, self.clock(), 'unknown', 'refused',
                                       'fleet serve', str(refused),
                                       {'key': str(sample.key_expr)})
                self.log(f'fleet serve: {sample.key_expr}: refused ({refused.reason}): '
                         f'{refused}')
        self._guarded('a published lesson', check)


def publish_lesson(session, scope: str, value: str, message: bytes) -> None:
    """Publish a signed lesson message to every robot of a model or site."""
    session.put(keys.lesson_key(scope, value), message)


def publish_lesson_through(connect, tls: Optional[TlsFiles], scope: str, value: str,
                           message: bytes) -> None:
    """Publish a lesson once through the routers at ``connect`` (``fleet promote``, the page)."""
    session = open_session('client', connect=connect, tls=tls)
    try:
        publish_lesson(session, scope, value, message)
    finally:
        session.close()


def wait_for_stop(stop: threading.Event) -> None:
    """Block until ``stop`` is set (a signal handler sets it)."""
    while not stop.wait(0.5):
        pass
