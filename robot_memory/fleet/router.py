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
A Zenoh router for a site gateway or a test: ``python -m robot_memory.fleet.router``.

    python -m robot_memory.fleet.router --listen tcp/0.0.0.0:7447 [--connect tcp/HOST:7447]
        [--tls-ca CA.pem --tls-cert ROUTER.pem --tls-key ROUTER.key]   (tls/ endpoints)

It routes between the robots of a site (clients that connect to it), other sites' routers
and the fleet store, until SIGINT or SIGTERM. ``zenohd`` does the same where it is installed;
this one needs only the ``fleet`` extra.
"""

import argparse
import signal
import sys
import threading

from robot_memory.errors import MissingExtra
from robot_memory.fleet.options import add_tls_options
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.transport import open_session
from robot_memory.fleet.transport import tls_files
from robot_memory.fleet.transport import wait_for_stop


def build_parser() -> argparse.ArgumentParser:
    """Return the router's argument parser."""
    parser = argparse.ArgumentParser(prog='python -m robot_memory.fleet.router',
                                     description='A Zenoh router for the robot_memory fleet.')
    parser.add_argument('--listen', action='append', required=True, metavar='ENDPOINT',
                        help='endpoint to listen on, e.g. tcp/0.0.0.0:7447 (repeatable)')
    parser.add_argument('--connect', action='append', default=[], metavar='ENDPOINT',
                        help="another router to connect to, e.g. the fleet store's "
                             'tcp/store.example:7447 (repeatable)')
    add_tls_options(parser, 'router')
    return parser


def main(argv=None) -> int:
    """Run the router until SIGINT or SIGTERM."""
    args = build_parser().parse_args(argv)
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        session = open_session('router', args.listen, args.connect,
                               tls_files(args.tls_ca, args.tls_cert, args.tls_key))
    except (FleetError, MissingExtra) as error:
        print(f'robot_memory.fleet.router: {error}', file=sys.stderr)
        return 1
    print(f'router listening on {", ".join(args.listen)}', flush=True)
    try:
        wait_for_stop(stop)
    finally:
        session.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
