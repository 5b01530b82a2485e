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
``robot-memory serve``: the operator's page in the foreground.

``add_commands(subparsers, common_parents)`` adds it; nothing of the web extra is imported
until it runs.
"""

import argparse
import pathlib

from robot_memory.cli.command_options import db_path
from robot_memory.cli.command_options import encryption
from robot_memory.cli.command_options import settings
from robot_memory.ros.diagnostics_watch import DiagnosticsWatch


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a port number') from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError('must be between 1 and 65535')
    return value


def add_commands(subparsers, common_parents) -> None:
    """Add serve to ``subparsers``."""
    serve = subparsers.add_parser(
        'serve', parents=list(common_parents),
        help="serve the operator's page: see, approve and undo what the robot learned "
             '(needs robot_memory[web])')
    serve.add_argument('--host', default='127.0.0.1',
                       help='address to listen on (default 127.0.0.1; any other needs an '
                            'access token)')
    serve.add_argument('--port', type=_port, default=8765, help='TCP port (default 8765)')
    serve.add_argument('--token-file', default='',
                       help='file holding the access token (default: '
                            '$ROBOT_MEMORY_WEB_TOKEN, else a new token each run, printed in '
                            'the link)')
    serve.add_argument('--read-only', action='store_true',
                       help='offer no change at all (no approve, reject, undo or edit)')
    serve.add_argument('--diagnostics', action='store_true',
                       help="show memory_node's /diagnostics statuses on the Now page (needs "
                            'ROS 2 sourced; beside the node with web_port it is always so)')
    fleet = serve.add_argument_group('the Fleet view (docs/fleet.md)')
    fleet.add_argument('--fleet-store', metavar='URL',
                       help="show the fleet store's roll-ups and lessons on a Fleet view: "
                            'postgresql://user@host:port/database, or a SQLite file')
    fleet.add_argument('--fleet-key', metavar='PEM',
                       help="the fleet's Ed25519 private key: promote and revoke lessons from "
                            'the page (fleet keygen makes it)')
    fleet.add_argument('--fleet-connect', action='append', default=[], metavar='ENDPOINT',
                       help='a router to publish lessons through at once (repeatable); robots '
                            'also get them when they next ask the store')
    for name in ('ca', 'cert', 'key'):
        fleet.add_argument(f'--fleet-tls-{name}', metavar='PEM',
                           help=f"with tls/ routers: the page's mutual-TLS {name} (as fleet "
                                f"promote's --tls-{name})")


def _fleet(args):
    """Return the Fleet view's settings, checked now: a bad store or key is said at start."""
    if not args.fleet_store:
        if args.fleet_key or args.fleet_connect:
            raise ValueError('--fleet-key and --fleet-connect go with --fleet-store URL')
        return None
    # lazy: the fleet, 110 ms and 10 MB of a page without one
    from robot_memory.fleet.transport import tls_files
    from robot_memory.web.fleet_view import FleetSettings
    from robot_memory.web.fleet_view import open_store
    key = pathlib.Path(args.fleet_key) if args.fleet_key else None
    if key is not None and not key.is_file():
        raise ValueError(f"--fleet-key {key} is not a file; give the fleet's private key "
                         '(robot-memory fleet keygen makes it)')
    try:
        tls = tls_files(args.fleet_tls_ca, args.fleet_tls_cert, args.fleet_tls_key)
    except ValueError as error:  # said with fleet promote's names: say them as serve has them
        raise ValueError(str(error).replace('--tls-', '--fleet-tls-')) from None
    fleet = FleetSettings(args.fleet_store, key, tuple(args.fleet_connect), tls)
    with open_store(fleet):  # migrated now, so the first view does not wait for it
        pass
    return fleet


def cmd_serve(args, memory) -> int:
    """Serve the page until interrupted; print the link that carries the token."""
    # lazy: the page's server and guards, 4 MB of robot-memory --help
    from robot_memory.web.page_server import bind
    from robot_memory.web.page_server import make_server
    from robot_memory.web.page_server import missing_extra
    from robot_memory.web.page_server import read_token
    try:
        # lazy: Starlette and the page, 235 ms and 22 MB of every other command
        from robot_memory.web.app import create_app
        from robot_memory.web.app import page_config
        import uvicorn  # noqa: F401 - refused early, with the advice, when missing
    except ImportError as error:
        raise missing_extra(error) from None
    token = read_token(args.token_file, args.host)
    configured = settings(args) if args.config else None
    path = db_path(args, memory)
    watch = None
    if args.diagnostics:
        try:
            watch = DiagnosticsWatch()
        except ImportError as error:
            raise ValueError(f'--diagnostics needs ROS 2 ({error.name} is missing): source '
                             'scripts/env.sh or /opt/ros/<distro>/setup.bash first') from None
    config = page_config(memory, path, configured, token, args.host, args.read_only,
                         health=watch.rows if watch is not None else None,
                         encryption=encryption(args, path), fleet=_fleet(args))
    # Parsed before the first request, as memory_node has its file parsed when the page starts.
    cache = config.source.cache
    assert cache is not None  # made by Source.__post_init__
    cache.document(config.clock())
    server = make_server(create_app(config), args.host, args.port)
    try:  # before the link is shown: a port in use would show one to another server
        listening = bind(args.host, args.port)
    except OSError as error:
        raise ValueError(f'{error}; choose another --port, or stop what serves there') from None
    shown = f'[{args.host}]' if ':' in args.host else args.host
    link = f'http://{shown}:{args.port}/'
    if args.read_only:
        print(f'robot-memory serve: {link} (read-only); Ctrl-C stops', flush=True)
    else:
        print(f'robot-memory serve: {link}?token={config.token} (open this link once to '
              'make changes); Ctrl-C stops', flush=True)
    try:
        server.run(sockets=[listening])  # stops gracefully on Ctrl-C, then raises it again
    except KeyboardInterrupt:
        pass
    finally:
        if watch is not None:
            watch.close()
    return 0


HANDLERS = {'serve': cmd_serve}
