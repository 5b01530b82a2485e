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

Nothing of the web extra is imported unless ``web_port`` is set.
"""

from robot_memory.substrate.crypto import default_key_path


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
    is logged as an error; the node runs on without it.
    """
    try:
        return _start(node)
    except (ValueError, OSError, SystemExit) as error:
        node.get_logger().error(f"operator's page not started: {error}")
        return None


def _start(node):
    settings = node.settings
    web = settings.node
    if not web.web_port:
        return None
    from robot_memory.web.server import missing_extra
    from robot_memory.web.server import read_token
    try:
        from robot_memory.web.app import create_app
        from robot_memory.web.app import page_config
        from robot_memory.web.server import make_server
        from robot_memory.web.server import ServerThread
    except ImportError as error:
        raise missing_extra(error) from None
    token = read_token(web.web_token_file, web.web_host)
    key_file = web.substrate_key_file or default_key_path(
        node.db_path, settings.federation.private_key_path)
    config = page_config(node.memory, node.db_path, settings, token, web.web_host,
                         web.web_read_only, health=lambda: _health_rows(node),
                         encryption={'encrypt_from': web.substrate_encrypt_from or None,
                                     'key_file': key_file}, cache=node.cache)
    config.clock = node.clock_.now
    server = make_server(create_app(config), web.web_host, web.web_port)
    served = ServerThread(server).start()
    shown = f'[{web.web_host}]' if ':' in web.web_host else web.web_host
    tail = ' (read-only)' if web.web_read_only else f'?token={config.token}'
    node.get_logger().info(f"operator's page: http://{shown}:{web.web_port}/{tail}")
    return served


def stop(served) -> None:
    """Stop the page's server thread, if one runs."""
    if served is not None:
        served.stop()
