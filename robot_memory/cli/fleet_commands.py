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
``robot-memory fleet``: push this robot's payload, serve the fleet store, report on the fleet.

``add_commands(subparsers, common_parents)`` adds ``fleet push``, ``fleet serve`` and ``fleet
report``. Nothing of the fleet extra (zenoh, psycopg) is imported until one of them runs.
"""

import argparse
import datetime as dt
import json
import pathlib
import signal
import sqlite3
import sys
import threading
from typing import Optional

from robot_memory.cli.command_options import db_path
from robot_memory.cli.command_options import settings
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import parse_iso_argument
from robot_memory.common.timeutil import UTC
from robot_memory.fleet.options import add_tls_options
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.report import build_report
from robot_memory.fleet.report import format_report


def _above_zero(most: float):
    """Return an argparse type: a number more than 0 and at most ``most``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
        if not 0 < value <= most:
            raise argparse.ArgumentTypeError(f'must be more than 0 and at most {most:g}')
        return value
    return parse


_seconds = _above_zero(3600)
_amount = _above_zero(36_500)


def _count(text: str) -> int:
    """Return a whole number from 0 to 1,000,000 (an argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
    if not 0 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError('must be from 0 to 1000000')
    return value


def _tls(args):
    from robot_memory.fleet.transport import tls_files  # lazy: the fleet, 250-500 ms of --help
    return tls_files(args.tls_ca, args.tls_cert, args.tls_key)


def add_commands(subparsers, common_parents) -> None:
    """Add ``fleet`` and its actions to ``subparsers``."""
    fleet = subparsers.add_parser(
        'fleet', help="the fleet over Zenoh: push this robot's signed payload, serve the fleet "
                      'store, report on the fleet (needs robot_memory[fleet])')
    actions = fleet.add_subparsers(dest='fleet_command', required=True, metavar='ACTION')
    push = actions.add_parser(
        'push', parents=list(common_parents),
        help="queue this robot's signed payload (its RRN and key from --config) and deliver "
             'the newest waiting one to the fleet store')
    push.add_argument('--connect', action='append', required=True, metavar='ENDPOINT',
                      help="the site's router or the store, e.g. tcp/192.0.2.10:7447 "
                           '(repeatable)')
    push.add_argument('--site', required=True, help='the site the robot works at (e.g. depot-n)')
    push.add_argument('--model', default='unknown', help="the robot's model (default unknown)")
    push.add_argument('--firmware', default='unknown',
                      help="the robot's firmware version (default unknown)")
    push.add_argument('--timeout', type=_seconds, default=10.0,
                      help='seconds to wait for the store to acknowledge (default 10)')
    push.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                      help='make the payload as of this moment instead of now')
    serve = actions.add_parser('serve', help='run the fleet store: take, check and keep every '
                                             "robot's payloads; answer queries")
    serve.add_argument('--store', required=True, metavar='URL',
                       help='postgresql://user@host:port/database, or a SQLite file')
    serve.add_argument('--listen', action='append', required=True, metavar='ENDPOINT',
                       help='endpoint the store listens on, e.g. tcp/0.0.0.0:7447 (repeatable)')
    serve.add_argument('--connect', action='append', default=[], metavar='ENDPOINT',
                       help="sites' routers to connect to (repeatable)")
    serve.add_argument('--robots', required=True, metavar='FILE',
                       help='allowed robots: lines "RRN=path of its Ed25519 public key (PEM)"')
    serve.add_argument('--retention-days', type=_amount, default=90.0,
                       help="days a robot's dreams are kept (default 90); current entries stay")
    serve.add_argument('--max-bytes', type=int, default=1024 * 1024,
                       help='largest payload accepted, in bytes (default 1048576)')
    report = actions.add_parser('report', help="the fleet's roll-ups: the same fault on many "
                                               'robots, silent robots, the week, disagreements')
    report.add_argument('--store', required=True, metavar='URL',
                        help='postgresql://user@host:port/database, or a SQLite file')
    report.add_argument('--json', action='store_true', help='print the report as JSON')
    report.add_argument('--days', type=_amount, default=7.0,
                        help='what was learned, reinforced and resolved in these days '
                             '(default 7)')
    report.add_argument('--silent-hours', type=_amount, default=36.0,
                        help='a robot not heard from for longer is silent (default 36)')
    report.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                        help='report as of this moment instead of now')
    report.add_argument('--most', type=_count, default=20, metavar='N',
                        help='as text, list at most N items a section, silent robots and the '
                             'faults on the most robots first (default 20; 0: all; --json '
                             'gives all)')
    serve.add_argument('--fleet-public-key', metavar='PEM',
                       help="the fleet's Ed25519 public key: answer robots' lesson queries, "
                            'and refuse and count lessons it did not sign')
    serve.add_argument('--fleet-key', metavar='PEM',
                       help="the fleet's Ed25519 private key (fleet keygen): sign every ack, "
                            'which robots with fleet_public_key require before they forget a '
                            'payload')
    lessons = _add_lesson_commands(actions)
    for parser in (serve, report, *lessons):
        parser.set_defaults(file=None, config=None)
    add_tls_options(push, 'robot')
    add_tls_options(serve, 'store')


def _add_lesson_commands(actions) -> tuple:
    """Add ``fleet keygen``, ``promote``, ``revoke`` and ``lessons``; return their parsers."""
    keygen = actions.add_parser('keygen', help="make the fleet's Ed25519 key pair, which signs "
                                               'its lessons')
    keygen.add_argument('private', help='the private key file to write (PEM, mode 0600)')
    keygen.add_argument('public', help='the public key file to write (PEM), for the robots')
    promote = actions.add_parser('promote', help="promote a robot's entry to every robot of "
                                                 'a model or site, as a signed fleet lesson')
    promote.add_argument('--rrn', required=True, help='the robot the entry comes from')
    promote.add_argument('--entry', required=True, metavar='ID', help="that robot's entry id")
    scope = promote.add_mutually_exclusive_group(required=True)
    scope.add_argument('--model', help='to every robot of this model')
    scope.add_argument('--site', help='to every robot of this site')
    revoke = actions.add_parser('revoke', help='revoke a fleet lesson on every robot')
    revoke.add_argument('--lesson', required=True, metavar='ID', help='the lesson (les-...)')
    for parser in (promote, revoke):
        parser.add_argument('--store', required=True, metavar='URL',
                            help='postgresql://user@host:port/database, or a SQLite file')
        parser.add_argument('--fleet-key', required=True, metavar='PEM',
                            help="the fleet's Ed25519 private key (fleet keygen makes it)")
        parser.add_argument('--operator', required=True, help='who decides (audited)')
        parser.add_argument('--reason', required=True, help='why (audited, shown to robots)')
        parser.add_argument('--connect', action='append', default=[], metavar='ENDPOINT',
                            help='a router to publish the lesson through now (repeatable); '
                                 'robots also get it when they next ask the store')
        parser.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                            help='as of this moment instead of now')
        add_tls_options(parser, 'operator')
    listed = actions.add_parser('lessons', help='list the fleet lessons with their audit')
    listed.add_argument('--store', required=True, metavar='URL',
                        help='postgresql://user@host:port/database, or a SQLite file')
    listed.add_argument('--json', action='store_true', help='print the lessons as JSON')
    return keygen, promote, revoke, listed


def _now(args) -> dt.datetime:
    return getattr(args, 'at', None) or dt.datetime.now(UTC)


def _last_dream(path: pathlib.Path) -> Optional[tuple]:
    """Return (id, time) of the last dream in the evidence database, None when there is none."""
    if not path.exists():
        return None
    try:  # read-only: a push never changes the evidence database
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True, timeout=10.0)
        try:
            row = conn.execute('SELECT id, at FROM dreams ORDER BY id DESC LIMIT 1').fetchone()
        finally:
            conn.close()
    except sqlite3.Error as error:
        raise ValueError(f'cannot read the dreams of {path} ({error}); run robot-memory dream '
                         'there first') from None
    if not row:
        return None
    return row[0], parse_iso(row[1])


def cmd_push(args, memory) -> int:
    """Queue this robot's payload in its outbox, then deliver the newest waiting one."""
    # lazy: the fleet, its crypto and pydantic, 250-500 ms and 24 MB of robot-memory --help
    from robot_memory.fleet.envelope import envelope_for
    from robot_memory.fleet.envelope import Provenance
    from robot_memory.fleet.outbox import Outbox
    from robot_memory.fleet.outbox import outbox_path
    from robot_memory.fleet.transport import deliver
    from robot_memory.fleet.transport import open_session
    if not args.config:
        raise ValueError("give --config: the robot's RRN and signing key come from memory_node's "
                         'parameters file')
    configured = settings(args)
    now = _now(args)
    document = memory.load(now).document
    if document.rrn != configured.node.rrn:
        raise ValueError(f'{memory.path} belongs to {document.rrn}, but --config names '
                         f'{configured.node.rrn}; push with the parameters of the same robot')
    dream = _last_dream(db_path(args, memory))
    if dream is None:
        raise ValueError(f"no dream is recorded for {memory.path}: the store keeps a robot's "
                         'state by dream; run robot-memory dream (or memory_node) first')
    dream_id, dream_at = dream
    provenance = Provenance(args.site, args.model, args.firmware, dream_id, dream_at)
    envelope = envelope_for(document, now, configured.federation, provenance,
                            configured.lifecycle)
    with Outbox(outbox_path(memory.path)) as outbox:
        print(f'fleet push: '
              f'{outbox.add(dream_id, dream_at, document.rrn, args.site, envelope, now)}')
        try:
            session = open_session('client', connect=args.connect, tls=_tls(args))
        except FleetError as error:
            raise FleetError(f'{error}; {outbox.counts()["pending"]} payloads wait in '
                             f'{outbox.path} and go with the next push') from None
        try:
            done = deliver(session, outbox, now, args.timeout,
                           configured.node.fleet_public_key or None)
        finally:
            session.close()
    return _said(done, outbox.path)


def _said(done, path) -> int:
    waiting = done.counts['pending']
    if done.dream_id is None:
        print('fleet push: nothing waits in the outbox')
        return 0
    if done.ack is not None and done.ack.acknowledged:
        older = f'; {len(done.superseded)} older payloads superseded by it' * bool(done.superseded)
        print(f'fleet push: dream {done.dream_id} acknowledged ({done.ack.status}){older}')
        return 0
    why = (f'refused ({done.ack.reason}): {done.ack.message}' if done.ack is not None
           else 'no fleet store answered')
    print(f'fleet push: dream {done.dream_id} not delivered, {why}; {waiting} payloads wait '
          f'in {path} and go with the next push', file=sys.stderr)
    return 1


def _trust(args):
    from robot_memory.fleet.envelope import read_robots  # lazy: the fleet, 250-500 ms of --help
    from robot_memory.fleet.envelope import Trust
    try:
        lines = pathlib.Path(args.robots).read_text(encoding='utf-8').splitlines()
    except OSError as error:
        raise ValueError(f'cannot read --robots {args.robots}: {error.strerror}') from None
    return Trust(read_robots(lines, args.robots), max_bytes=args.max_bytes)


def _ack_key(args):
    """Return the fleet's private key that signs acks (None without --fleet-key), checked."""
    if not args.fleet_key:
        return None
    # lazy: the fleet's crypto, 150 ms of --help
    from cryptography.exceptions import InvalidSignature
    from robot_memory.federation.peer_context import load_private_key
    from robot_memory.federation.peer_context import load_public_key
    key = load_private_key(args.fleet_key)
    if args.fleet_public_key:
        probe = b'robot-memory fleet serve: the two keys make a pair'
        try:
            load_public_key(args.fleet_public_key).verify(key.sign(probe), probe)
        except InvalidSignature:
            raise ValueError(f'--fleet-key {args.fleet_key} and --fleet-public-key '
                             f'{args.fleet_public_key} are not one key pair: robots would '
                             "refuse this store's acks or its lessons; give the fleet's pair "
                             '(fleet keygen made both)') from None
    return key


def cmd_serve(args, memory) -> int:
    """Run the fleet store on Zenoh until SIGINT or SIGTERM."""
    from robot_memory.fleet.fleet_store import FleetStore  # lazy: the fleet, 250-500 ms of --help
    from robot_memory.fleet.transport import open_session
    from robot_memory.fleet.transport import StoreServer
    from robot_memory.fleet.transport import wait_for_stop
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    trust = _trust(args)  # the robots file, read once for both connections
    fleet_key = _ack_key(args)
    with FleetStore(args.store, trust, args.retention_days) as store, \
            FleetStore(args.store, trust, args.retention_days) as reader:
        session = open_session('router', args.listen, args.connect, _tls(args))
        try:
            server = StoreServer(session, store, lambda: dt.datetime.now(UTC),
                                 lambda line: print(line, flush=True), args.fleet_public_key,
                                 reader, fleet_key)
            print(f'fleet serve: store {store.db.where} ({store.db.dialect.name}), listening '
                  f'on {", ".join(args.listen)}', flush=True)
            wait_for_stop(stop)
            server.close()
        finally:
            session.close()
    return 0


def cmd_report(args, memory) -> int:
    """Print the fleet's roll-ups."""
    from robot_memory.fleet.envelope import Trust  # lazy: the fleet, 250-500 ms of --help
    from robot_memory.fleet.fleet_store import FleetStore
    with FleetStore(args.store, Trust({})) as store:
        report = build_report(store, _now(args), args.days, args.silent_hours * 3600.0)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(report, args.most or None), end='')
    return 0


def cmd_keygen(args, memory) -> int:
    """Write the fleet's key pair."""
    from robot_memory.federation.peer_context import generate_keypair  # lazy: 150 ms of --help
    for path in (args.private, args.public):
        if pathlib.Path(path).exists():
            raise ValueError(f'{path} exists; the fleet key is never overwritten (robots trust '
                             'it): choose another name, or move the old one aside')
    generate_keypair(args.private, args.public)
    print(f'fleet keygen: wrote {args.private} (keep it with the store) and {args.public} '
          "(set it as fleet_public_key in the robots' parameters)")
    return 0


def _publish(args, scope: str, value: str, message: bytes) -> None:
    # lazy: the fleet, 500 ms of --help
    from robot_memory.fleet.transport import publish_lesson_through
    if not args.connect:
        return
    publish_lesson_through(args.connect, _tls(args), scope, value, message)
    print(f'fleet {args.fleet_command}: published to every robot of {scope} {value}')


def cmd_promote(args, memory) -> int:
    """Promote a robot's entry to a model's or a site's robots."""
    from robot_memory.fleet import lesson_store  # lazy: the fleet, 250-500 ms of --help
    from robot_memory.fleet.envelope import Trust
    from robot_memory.fleet.fleet_store import FleetStore
    scope, value = ('model', args.model) if args.model else ('site', args.site)
    with FleetStore(args.store, Trust({})) as store:
        lesson_id, message = lesson_store.promote(store, args.fleet_key, args.rrn, args.entry,
                                                  scope, value, args.operator, args.reason,
                                                  _now(args))
    print(f'fleet promote: lesson {lesson_id}: {args.rrn} {args.entry} to every robot of '
          f'{scope} {value}')
    _publish(args, scope, value, message)
    return 0


def cmd_revoke(args, memory) -> int:
    """Revoke a lesson."""
    from robot_memory.fleet import lesson_store  # lazy: the fleet, 250-500 ms of --help
    from robot_memory.fleet.envelope import Trust
    from robot_memory.fleet.fleet_store import FleetStore
    with FleetStore(args.store, Trust({})) as store:
        lesson, message = lesson_store.revoke(store, args.fleet_key, args.lesson,
                                              args.operator, args.reason, _now(args))
    print(f'fleet revoke: lesson {args.lesson} revoked')
    _publish(args, lesson.scope, lesson.scope_value, message)
    return 0


def cmd_lessons(args, memory) -> int:
    """List the fleet's lessons with their audit."""
    from robot_memory.fleet import lesson_store  # lazy: the fleet, 250-500 ms of --help
    from robot_memory.fleet.envelope import Trust
    from robot_memory.fleet.fleet_store import FleetStore
    with FleetStore(args.store, Trust({})) as store:
        found = lesson_store.lessons(store)
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return 0
    for lesson in found:
        print(f'{lesson["lesson_id"]}  {lesson["state"]:<8} {lesson["scope"]} '
              f'{lesson["scope_value"]}  from {lesson["source_rrn"]} {lesson["source_entry"]}')
        for step in lesson['audit']:
            print(f'    {step["at"]}  {step["action"]:<8} {step["actor"]}: {step["reason"]}')
    if not found:
        print('no fleet lessons yet (robot-memory fleet promote makes one)')
    return 0


def cmd_fleet(args, memory) -> int:
    """Run the fleet action asked for."""
    return {'push': cmd_push, 'serve': cmd_serve, 'report': cmd_report, 'keygen': cmd_keygen,
            'promote': cmd_promote, 'revoke': cmd_revoke,
            'lessons': cmd_lessons}[args.fleet_command](args, memory)


HANDLERS = {'fleet': cmd_fleet}
