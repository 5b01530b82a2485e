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
Command-line options the fleet's commands share (``robot-memory fleet`` and the router).

Light on purpose: ``robot-memory --help`` imports it, and nothing of the fleet extra.
"""


def add_tls_options(parser, who: str = 'node') -> None:
    """Add the mutual-TLS options of tls/ endpoints (``fleet.transport.TlsFiles``)."""
    parser.add_argument('--tls-ca', metavar='PEM',
                        help="with tls/ endpoints: the fleet CA's certificate")
    parser.add_argument('--tls-cert', metavar='PEM',
                        help=f"with tls/ endpoints: this {who}'s certificate, signed by the CA")
    parser.add_argument('--tls-key', metavar='PEM',
                        help=f"with tls/ endpoints: this {who}'s private key")
