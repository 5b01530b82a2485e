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
The proposals queue's ``robot-memory`` subcommands: proposals, approve, reject.

``add_commands(subparsers, common_parents)`` adds them to the main parser and ``HANDLERS``
maps each name to its function ``(args, memory) -> exit code``. Nothing heavy is imported
until a command runs. Every decision is audited with ``--actor`` (default: the login name,
as ``cli:<name>``) and the reason.
"""

import argparse
import datetime as dt
import getpass
import json
import sys

from robot_memory.cli import refusal
from robot_memory.cli.command_options import db_path
from robot_memory.cli.command_options import encryption
from robot_memory.cli.command_options import settings
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso_argument
from robot_memory.common.timeutil import UTC
from robot_memory.errors import RobotMemoryError


def add_commands(subparsers, common_parents) -> None:
    """Add proposals, approve and reject to ``subparsers``."""
    clock = argparse.ArgumentParser(add_help=False)
    clock.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                       help='act as of this moment instead of the clock (e.g. '
                            '2026-05-01T03:00:00Z)')
    who = argparse.ArgumentParser(add_help=False)
    who.add_argument('--actor', help='who decides, for the audit log (default: cli:<login '
                                     'name>)')
    parents = list(common_parents) + [clock]

    listing = subparsers.add_parser('proposals', parents=parents,
                                    help='list the changes waiting for approval, with what '
                                         'each would change')
    listing.add_argument('--all', action='store_true', dest='everything',
                         help='also the 50 latest decided ones (approved, rejected, expired, '
                              'replaced)')
    listing.add_argument('--json', action='store_true', help='print the proposals as JSON')

    approve = subparsers.add_parser('approve', parents=parents + [who],
                                    help='approve a proposal (or --all): the change is made '
                                         'and audited')
    target = approve.add_mutually_exclusive_group(required=True)
    target.add_argument('proposal', nargs='?', metavar='ID', help='proposal id, e.g. 7')
    target.add_argument('--all', action='store_true', dest='everything',
                        help='approve every pending proposal, oldest first')
    approve.add_argument('--reason', default='approved by an operator',
                         help='why (recorded in the audit log)')
    approve.add_argument('--json', action='store_true', help='print the decisions as JSON')

    reject = subparsers.add_parser('reject', parents=parents + [who],
                                   help='reject a proposal: the change is not made; audited')
    reject.add_argument('proposal', metavar='ID', help='proposal id, e.g. 7')
    reject.add_argument('--reason', required=True, help='why (recorded in the audit log)')
    reject.add_argument('--json', action='store_true', help='print the decision as JSON')


def _now(args) -> dt.datetime:
    return getattr(args, 'at', None) or dt.datetime.now(UTC)


def _actor(args) -> str:
    if args.actor:
        return args.actor
    try:
        return f'cli:{getpass.getuser()}'
    except (KeyError, OSError):
        return 'cli'


def _queue(args, memory):
    """Return the queue of the memory file's database; a missing database is not created."""
    # lazy: review and pydantic, 170 ms and 19 MB of --help
    from robot_memory.review import proposing
    path = db_path(args, memory)
    if not path.exists():
        raise ValueError(f'no database at {path}, so no proposals; check --file or --db (it is '
                         'created by memory_node, robot-memory dream, ingest or learn)')
    return proposing.ProposalQueue.open(path)


def cmd_proposals(args, memory) -> int:
    """List pending proposals (``--all``: decided ones too); a listing writes nothing."""
    now = _now(args)
    with _queue(args, memory) as queue:
        # No expiry here: a listing --at a later time must not decide anything. A proposal
        # whose time is up at ``now`` is shown as such; a decision or the node records it.
        pending = queue.pending(now)
        decided = [item for item in queue.recent()
                   if item.status != 'pending' or item.expires_at <= now] \
            if args.everything else []
    if args.json:
        print(json.dumps({'pending': [item.to_dict() for item in pending],
                          'decided': [item.to_dict() for item in decided]},
                         ensure_ascii=False, indent=2))
        return 0
    if not pending:
        print('no proposals wait for approval')
    for item in pending:
        print(item.describe(now))
    if pending:
        print(f'\n{len(pending)} waiting: robot-memory approve ID | approve --all | '
              'reject ID --reason WHY')
    for item in decided:
        if item.status == 'pending':
            print(f'#{item.id} no decision by {format_iso(item.expires_at)} (expires unmade) '
                  f'— {item.shown_summary}')
        else:
            print(f'#{item.id} {item.status} by {item.decided_by}: {item.reason} — '
                  f'{item.shown_summary}')
    return 0


def _decide(args, memory, decision: str, ids) -> int:
    # lazy: review and pydantic, 170 ms and 19 MB of --help
    from robot_memory.review import proposing
    from robot_memory.substrate.substrate_store import Substrate
    now = _now(args)
    opened: list = []
    # The node refuses a peer that has left federation.allowed_peers since it sent; the CLI
    # can only when it is given the node's parameters file.
    allowed = settings(args).federation.allowed_peers if args.config else None

    def substrate():
        if not opened:
            path = db_path(args, memory)
            opened.append(Substrate(path, **encryption(args, path)))
        return opened[0]

    decided, failed = [], 0
    try:
        with _queue(args, memory) as queue:
            if ids is None:
                ids = [item.id for item in queue.pending(now)]
                if not ids:
                    print('no proposals wait for approval', file=sys.stderr)
            for proposal_id in ids:
                try:
                    decided.append(proposing.decide_proposal(
                        queue, proposal_id, decision, _actor(args), args.reason, now,
                        memory_file=memory, substrate_factory=substrate,
                        allowed_peers=allowed))
                except (RobotMemoryError, ValueError) as error:
                    failed += 1
                    refusal.refuse(args.command, error)
    finally:
        for resource in opened:
            resource.close()
    for item in decided:
        if args.json:
            print(json.dumps(item.to_dict(), ensure_ascii=False))
        else:
            done = f': {item.outcome}' if item.outcome else ''
            print(f'{item.status} #{item.id} ({item.kind} from {item.source}){done}')
    if allowed is None and any(item.kind == 'peer_context' and item.status == 'approved'
                               for item in decided):
        print("note: the peer allowlist was not checked; give --config with the node's "
              'parameters file to refuse peers no longer on federation.allowed_peers',
              file=sys.stderr)
    return 1 if failed else 0


def cmd_approve(args, memory) -> int:
    """Approve one proposal or every pending one; each change is made, then audited."""
    return _decide(args, memory, 'approve', None if args.everything else [args.proposal])


def cmd_reject(args, memory) -> int:
    """Reject one proposal with a reason; nothing changes but the queue and the audit log."""
    return _decide(args, memory, 'reject', [args.proposal])


HANDLERS = {
    'proposals': cmd_proposals,
    'approve': cmd_approve,
    'reject': cmd_reject,
}
