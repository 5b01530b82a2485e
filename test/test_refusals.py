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

"""Each edge turns any RobotMemoryError into its refusal, by its one conversion function."""

import ast
import datetime as dt
import io
import json
import types
import urllib.error
import urllib.request

import pytest

from robot_memory.cli import main as cli_main
from robot_memory.cli import refusal as cli_refusal
from robot_memory.common.timeutil import UTC
from robot_memory.dependencies import EXIT_UNMET
from robot_memory.errors import MissingExtra
from robot_memory.errors import RobotMemoryError
from robot_memory.mcp import mcp_server
from robot_memory.ros.refusal import refuse
from robot_memory.web import app as web_app
from robot_memory.web.page_server import make_server
from robot_memory.web.page_server import ServerThread
from support import web_demo
from support.paths import REPO
from support.processes import free_port

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SAID = 'the widget is bent; straighten it and ask again'


class Arbitrary(RobotMemoryError):
    """A refusal no edge names: not a ValueError, defined here and nowhere else."""


def test_a_service_reply_says_the_refusal_with_what_was_refused():
    """ros.refusal.refuse: success False, the message after what was refused."""
    response = types.SimpleNamespace(success=True, message='')
    assert refuse(response, Arbitrary(SAID), 'undo refused: ') is response
    assert (response.success, response.message) == (False, f'undo refused: {SAID}')
    assert refuse(response, 'no peer_nodes configured').message == 'no peer_nodes configured'


def _callbacks():
    for path in sorted((REPO / 'robot_memory' / 'ros').glob('*.py')):
        tree = ast.parse(path.read_text(encoding='utf-8'))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.endswith('_callback') and \
                    [arg.arg for arg in node.args.args] == ['self', 'request', 'response']:
                yield path.name, node


def test_every_service_refuses_through_refuse_and_catches_the_base():
    """No service fills a refusal by hand, and each handler that answers catches the base."""
    found = list(_callbacks())
    assert len(found) >= 9, [name for _, name in found]
    for module, callback in found:
        where = f'{module} {callback.name}'
        for node in ast.walk(callback):
            if isinstance(node, ast.Assign) and any(
                    ast.unparse(target) == 'response.success' for target in node.targets):
                assert ast.unparse(node.value) != 'False', f'{where}: use refuse()'
            if isinstance(node, ast.ExceptHandler) and any(
                    isinstance(inner, ast.Call) and ast.unparse(inner.func) == 'refuse'
                    for inner in ast.walk(node)):
                caught = ast.unparse(node.type)
                assert 'RobotMemoryError' in caught or caught == 'Exception' or \
                    caught.endswith('PeerRejected'), f'{where} catches {caught}'


@pytest.mark.parametrize('error, code', [(Arbitrary(SAID), 1),
                                         (MissingExtra('replay', 'bags', 'rosbags'), EXIT_UNMET)])
def test_a_command_refused_exits_with_its_code_and_says_why(error, code, monkeypatch, capsys,
                                                            tmp_path):
    """robot-memory's main: any RobotMemoryError is said after the command, exit 1 (extra: 2)."""
    def command(args, memory):
        raise error
    monkeypatch.setitem(cli_main.COMMANDS, 'show', command)
    assert cli_main.main(['show', '--file', str(tmp_path / 'robot-memory.md')]) == code
    assert capsys.readouterr().err == f'robot-memory show: {error}\n'
    assert cli_refusal.exit_code(error) == code


@pytest.mark.parametrize('error, logged', [(Arbitrary(SAID), False),
                                           (RuntimeError(SAID), True)])
def test_an_mcp_tool_refused_is_a_tool_error_with_the_message(error, logged, monkeypatch,
                                                              tmp_path, capsys):
    """Any RobotMemoryError of a tool is isError in the SDK's form; a failure too, logged."""
    def recall(self, **arguments):
        raise error
    monkeypatch.setattr(mcp_server.RobotMemoryTools, 'tool_recall', recall)
    tools = mcp_server.RobotMemoryTools(tmp_path / 'robot-memory.md', tmp_path / 'records.db',
                                        clock=lambda: NOW)
    call = {'jsonrpc': '2.0', 'id': 7, 'method': 'tools/call',
            'params': {'name': 'recall', 'arguments': {'query': 'dock'}}}
    written = io.BytesIO()
    mcp_server.Server(tools).run(io.BytesIO(json.dumps(call).encode() + b'\n'), written)
    reply = json.loads(written.getvalue())
    assert reply['id'] == 7
    assert reply['result'] == {'content': [{'type': 'text', 'text': 'Error executing tool '
                                            f'recall: {SAID}'}], 'isError': True}
    assert ('Traceback' in capsys.readouterr().err) is logged  # a failure, not a refusal


def test_the_page_refuses_any_robot_memory_error_with_409(monkeypatch, tmp_path):
    """The operator page: a handler's RobotMemoryError is the refusal page, nothing changed."""
    async def now(self, request):
        raise Arbitrary(SAID)
    monkeypatch.setattr(web_app.Page, 'now', now)
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC))
    config = web_app.page_config(memory, memory.path.with_suffix('.db'))
    port = free_port()
    thread = ServerThread(make_server(web_app.create_app(config), '127.0.0.1', port)).start()
    try:
        web_demo.wait_for(f'http://127.0.0.1:{port}/', _Running())
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f'http://127.0.0.1:{port}/', timeout=10)
        assert refused.value.code == 409
        page = refused.value.read().decode('utf-8')
    finally:
        thread.stop()
    assert f'{SAID}; nothing was changed' in page
    said = web_app.refused(Arbitrary(SAID))
    assert (said.status, said.message) == (409, f'{SAID}; nothing was changed')
    kept = web_app.Refused(403, 'trust high is above what this page may show')
    assert web_app.refused(kept) is kept


class _Running:
    """The process web_demo.wait_for watches: here the server is a thread, always running."""

    returncode = None

    def poll(self):
        return None
