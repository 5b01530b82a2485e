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

"""The operator page in a test: a real server on a thread and an HTTP client with its token."""

import datetime as dt
import time
import urllib.error
import urllib.parse
import urllib.request

from robot_memory.common.timeutil import UTC
from robot_memory.web.app import create_app
from robot_memory.web.app import csrf_mark
from robot_memory.web.app import page_config
from robot_memory.web.app import token_cookie
from robot_memory.web.page_server import make_server
from robot_memory.web.page_server import ServerThread
from support.processes import free_port

TOKEN = 'core-token-0123456789abcdef'


class Client:
    """HTTP against the page; ``token`` sends the access cookie."""

    def __init__(self, base: str):
        self.base = base

    def request(self, path: str, form=None, token: str = '', headers=None, body=None):
        data = body if body is not None else (
            urllib.parse.urlencode(form).encode() if form is not None else None)
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {})
        if token:
            request.add_header('Cookie', f'{token_cookie(TOKEN)}={token}')
        try:
            with urllib.request.urlopen(request, timeout=20) as response:
                return response.status, response.read().decode('utf-8')
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode('utf-8')

    def change(self, path: str, token: str = TOKEN, **form):
        form.setdefault('csrf', csrf_mark(TOKEN))
        form.setdefault('actor', 'bob')
        return self.request(path, form, token)


def serve(memory, host='127.0.0.1', read_only=False, clock=None, fleet=None):
    config = page_config(memory, memory.path.with_suffix('.db'), None, TOKEN, host, read_only,
                         fleet=fleet)
    if clock is not None:
        config.clock = clock
    port = free_port()
    thread = ServerThread(make_server(create_app(config), host, port)).start()
    deadline = time.monotonic() + 10
    while not thread.server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return thread, Client(f'http://127.0.0.1:{port}')


def entry_ids(memory):
    """Return the ids of the memory's entries, in file order."""
    return [entry.id for entry in memory.load(dt.datetime.now(UTC)).document.entries]


def fetch(url: str, timeout_s: float = 30.0) -> str:
    """Return the page at ``url``, retrying until a server answers (``timeout_s`` at most)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return urllib.request.urlopen(url, timeout=2).read().decode('utf-8')
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
