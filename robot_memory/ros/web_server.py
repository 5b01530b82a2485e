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
The operator's page beside memory_node.

With ``web_port`` set, the node serves it on a thread, over the node's memory file,
database, settings, memory clock and health.

Nothing of the web extra is imported unless ``web_port`` is set. Whether the page runs is
the node's ``operator page`` status (:class:`PageHealth`).
"""

from robot_memory.ros.health import ERROR
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import OK
from robot_memory.substrate.crypto import default_key_path
from robot_memory.web.page_server import bind
from robot_memory.web.page_server import make_server
from robot_memory.web.page_server import missing_extra
from robot_memory.web.page_server import read_token
from robot_memory.web.page_server import ServerThread


class PageHealth:
    """The "operator page" health task: where the page serves, or why it does not."""

    def __init__(self, node):
        self._node = node
        self.address = None
        self.error = None

    def __call__(self) -> HealthStatus:
        """Return the HealthStatus of the "operator page" status."""
        web = self._node.settings.node
        values = {'host': web.web_host, 'port': web.web_port, 'read_only': web.web_read_only}
        if self.error is not None:
            return HealthStatus(ERROR, f'not started: {self.error}', values)
        if self.address is None:
            return HealthStatus(OK, 'starting', values)
        return HealthStatus(OK, f'serving {self.address}', values)


def _health_rows(node) -> list:
    rows = []
    for status in node.health_statuses():
        level = status.level
        rows.append({'name': status.name, 'message': status.message,
                     'level': level[0] if isinstance(level, (bytes, bytearray)) else int(level),
                     'values': {item.key: item.value for item in status.values}})
    return rows


def start(node):
    """
    Start the page when ``web_port`` is set; return its ServerThread, or None.

    A page that cannot start (no web extra, no token for a public address, the port taken)
    is logged as an error and shown on ``health``, the node's "operator page" status; the
    node runs on without it.
    """
    health = getattr(node, 'page_health', None)
    try:
        served, address = _start(node)
    except (ValueError, OSError, SystemExit) as error:
        node.get_logger().error(f"operator's page not started: {error}")
        if health is not None:
            health.error = str(error)
        return None
    if health is not None:
        health.address = address
    return served


def _start(node):
    settings = node.settings
    web = settings.node
    if not web.web_port:
        return None, None
    try:
        # lazy: Starlette and the page, 60 ms and 7 MB of a node without web_port
        from robot_memory.web.app import create_app
        from robot_memory.web.app import page_config
    except ImportError as error:
        raise missing_extra(error) from None
    token = read_token(web.web_token_file, web.web_host)
    key_file = web.substrate_key_file or default_key_path(
        node.db_path, settings.federation.private_key_path)
    config = page_config(node.memory, node.db_path, settings, token, web.web_host,
                         web.web_read_only, health=lambda: _health_rows(node),
                         encryption={'encrypt_from': web.substrate_encrypt_from or None,
                                     'key_file': key_file}, cache=node.cache,
                         live=getattr(node, 'active', None))
    config.clock = node.clock_.now
    server = make_server(create_app(config), web.web_host, web.web_port)
    # Bound here, not on the server's thread, so that a port already taken is an error the
    # node can report (uvicorn would only log it and end its thread).
    listening = bind(web.web_host, web.web_port)
    served = ServerThread(server, sockets=[listening]).start()
    shown = f'[{web.web_host}]' if ':' in web.web_host else web.web_host
    tail = ' (read-only)' if web.web_read_only else f'?token={config.token}'
    node.get_logger().info(f"operator's page: http://{shown}:{web.web_port}/{tail}")
    return served, f'http://{shown}:{web.web_port}/'
