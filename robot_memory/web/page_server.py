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
Run the operator's page with uvicorn.

In the foreground (``robot-memory serve``) or on a thread beside memory_node
(``robot_memory.ros.web_server``).
"""

import os
import pathlib
import socket
import threading
from typing import Optional

from robot_memory.errors import MissingExtra
from robot_memory.web.guards import is_loopback

TOKEN_ENV = 'ROBOT_MEMORY_WEB_TOKEN'
MIN_TOKEN_CHARS = 16


def missing_extra(error: ImportError) -> MissingExtra:
    """Return the refusal when the web extra is not installed."""
    return MissingExtra('the operator page', 'web', error.name or str(error))


def read_token(token_file: str, host: str) -> Optional[str]:
    """
    Return the access token: from ``token_file``, else ``$ROBOT_MEMORY_WEB_TOKEN``, else None.

    None (a fresh token per run is made) only on a loopback address; any other address
    needs a token given on purpose, of at least MIN_TOKEN_CHARS characters.
    """
    token = None
    if token_file:
        path = pathlib.Path(token_file).expanduser()
        try:
            token = path.read_text(encoding='utf-8').strip()
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f'cannot read the token file {path} ({error}); write a long '
                             f'random line into it, e.g. python3 -c "import secrets; '
                             f'print(secrets.token_urlsafe(24))" > {path}') from None
    elif os.environ.get(TOKEN_ENV, '').strip():
        token = os.environ[TOKEN_ENV].strip()
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f'the access token has {len(token)} characters; give at least '
                         f'{MIN_TOKEN_CHARS} (a long random line)')
    if token is None and not is_loopback(host):
        raise ValueError(f'serving on {host} reaches beyond this machine, so it needs an '
                         f'access token: --token-file FILE or ${TOKEN_ENV}; or serve on '
                         '127.0.0.1 and open it through an SSH tunnel (docs/operator-page.md)')
    return token


def make_server(app, host: str, port: int):
    """Return a uvicorn server for ``app`` (quiet: the page reports its own refusals)."""
    import uvicorn  # lazy: 29 ms and 5 MB of memory_node's start (ros.web_server imports this)
    config = uvicorn.Config(app, host=host, port=port, log_level='warning', lifespan='off',
                            access_log=False, server_header=False,
                            timeout_graceful_shutdown=2)  # open live pages do not hold a stop
    return uvicorn.Server(config)


def bind(host: str, port: int) -> socket.socket:
    """
    Return a socket bound to ``host:port`` as uvicorn binds it; OSError when taken.

    Bound before the server runs, so that a port already taken is refused where the caller
    can say so (uvicorn would only log it, after the page's link was shown).
    """
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        raise OSError(f'cannot listen on {host}:{port}: {error.strerror or error}') from None
    listening.set_inheritable(True)
    return listening


class ServerThread:
    """A uvicorn server on a daemon thread, stopped by ``stop()``."""

    def __init__(self, server, sockets: Optional[list] = None):
        self.server = server
        self.thread = threading.Thread(target=server.run, kwargs={'sockets': sockets},
                                       name='robot_memory web', daemon=True)

    def start(self) -> 'ServerThread':
        """Start serving."""
        self.thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Ask the server to exit; return whether it did within ``timeout_s``."""
        self.server.should_exit = True
        self.thread.join(timeout_s)
        return not self.thread.is_alive()
