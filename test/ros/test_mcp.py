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
The MCP server for real: the installed ``robot-memory mcp``, driven by the official client SDK.

The SDK's ``stdio_client`` starts the server with a minimal environment (HOME, PATH,
SHELL, TERM; no PYTHONPATH, no sourced ROS), as Claude Desktop and other MCP clients do.
The installed command must run in it by itself.
"""

import json
import os
import pathlib
import subprocess

import anyio
from mcp import ClientSession
from mcp import stdio_client
from mcp import StdioServerParameters

import robot_memory
from robot_memory.substrate import MEMORY_TYPES
from robot_memory.substrate import SENSITIVITIES
from support.mcp_client import installed_command
from support.mcp_client import payload
from support.paths import REPO
from support.samples import SPEC_EXAMPLE

ARGUMENTS = {
    'learn': {'text', 'type', 'tags', 'context', 'sensitivity', 'confidence', 'single_valued',
              'request_id'},
    'recall': {'query', 'k', 'filters', 'types', 'near'},
    'forget': {'target', 'reason', 'hard', 'all', 'dry_run', 'restore', 'request_id'},
    'get_context': {'token_budget', 'include_peers', 'query'},
}


def _enum(schema: dict) -> list:
    """Return the enum of a property, also when it is optional (anyOf with null)."""
    for option in schema.get('anyOf', [schema]):
        if 'enum' in option:
            return option['enum']
        if 'enum' in option.get('items', {}):
            return option['items']['enum']
    return []


async def _session_run(memory_path: pathlib.Path, errors: pathlib.Path, env=None) -> dict:
    params = StdioServerParameters(
        command=installed_command(),
        args=['mcp', '--file', str(memory_path), '--trust', 'low',
              '--at', '2026-04-01T03:00:00Z'],
        cwd=str(memory_path.parent), env=env)  # env None: the SDK's default environment
    seen = {}
    with open(errors, 'w') as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                seen['init'] = await session.initialize()
                if env is not None:
                    return seen
                seen['tools'] = await session.list_tools()
                seen['learn'] = payload(await session.call_tool(
                    'learn', {'text': 'The mop is in the utility closet', 'tags': ['cleaning'],
                              'context': {'location': {'room': 'utility'}},
                              'request_id': 'mop-1'}))
                seen['retry'] = payload(await session.call_tool(
                    'learn', {'text': 'The mop is in the utility closet', 'tags': ['cleaning'],
                              'context': {'location': {'room': 'utility'}},
                              'request_id': 'mop-1'}))
                seen['again'] = payload(await session.call_tool(
                    'learn', {'text': 'the mop is in the utility closet'}))
                await session.call_tool('learn', {'text': 'Alarm code is 1234',
                                                  'sensitivity': 'medium'})
                seen['recall'] = payload(await session.call_tool(
                    'recall', {'query': 'where is the mop',
                               'filters': {'context.location.room': 'utility'}}))
                seen['secret'] = payload(await session.call_tool('recall',
                                                                 {'query': 'alarm code'}))
                seen['bad'] = await session.call_tool('recall', {'query': '   '})
                seen['bad_type'] = await session.call_tool('learn', {'text': 'x',
                                                                     'type': 'bogus'})
                seen['unknown'] = await session.call_tool('teleport', {})
                seen['context'] = payload(await session.call_tool('get_context',
                                                                  {'token_budget': 200}))
                seen['query'] = payload(await session.call_tool(
                    'get_context', {'query': 'how fast may I drive under load?'}))
                seen['long_query'] = await session.call_tool('get_context',
                                                             {'query': 'x' * 4001})
                seen['forget'] = payload(await session.call_tool(
                    'forget', {'target': seen['learn']['record_id'], 'reason': 'moved'}))
                seen['after'] = payload(await session.call_tool('recall', {'query': 'mop'}))
    return seen


def test_mcp_server_over_stdio_from_the_official_client(tmp_path, monkeypatch):
    memory_path = tmp_path / 'robot-memory.md'
    memory_path.write_text(SPEC_EXAMPLE, encoding='utf-8')
    # The SDK passes HOME on: a HOME of the test's own keeps the embedder's model cache
    # (~/.cache/robot_memory, 23 MB with the semantic extra) out of the real home.
    home = tmp_path / 'home'
    home.mkdir()
    monkeypatch.setenv('HOME', str(home))
    seen = anyio.run(_session_run, memory_path, tmp_path / 'server-stderr.txt')
    info = seen['init'].server_info
    assert (info.name, info.version) == ('robot-memory', robot_memory.__version__)
    tools = {tool.name: tool for tool in seen['tools'].tools}
    assert set(tools) == set(ARGUMENTS)
    for name, tool in tools.items():
        assert tool.description, name
        properties = tool.input_schema['properties']
        assert set(properties) == ARGUMENTS[name], name
        undescribed = [arg for arg, schema in properties.items()
                       if not schema.get('description')]
        assert not undescribed, f'{name}: arguments without a description: {undescribed}'
    learn = tools['learn'].input_schema['properties']
    assert _enum(learn['type']) == list(MEMORY_TYPES)
    assert _enum(learn['sensitivity']) == list(SENSITIVITIES)
    assert _enum(tools['recall'].input_schema['properties']['types']) == \
        list(MEMORY_TYPES)

    assert seen['learn']['action'] == 'created' and seen['learn']['type'] == 'semantic'
    assert seen['retry'] == {**seen['learn'], 'replayed': True}
    assert seen['again']['action'] == 'reinforced'
    assert seen['again']['record_id'] == seen['learn']['record_id']
    hits = seen['recall']['hits']
    assert [hit['id'] for hit in hits] == [seen['learn']['record_id']]
    assert hits[0]['tags'] == ['cleaning']
    secret = seen['secret']['hits'][0]
    assert secret['redacted'] and secret['text'] == '[redacted: medium sensitivity]'
    assert seen['bad'].is_error and 'query is empty' in seen['bad'].content[0].text
    assert seen['bad_type'].is_error and 'bogus' in seen['bad_type'].content[0].text
    assert seen['unknown'].is_error and 'teleport' in seen['unknown'].content[0].text
    assert 'Left wheel encoder intermittent' in seen['context']['text']
    assert seen['context']['entries'] == 1
    assert 'below the 30% injection threshold' in seen['context']['summary']
    # Issue 38, point 4: a query names the entries chosen for it; without one, none.
    assert seen['context']['relevant_ids'] == []
    assert seen['query']['relevant_ids'] == ['mem-a3f9c1d2']
    assert '1 chosen for the query (mem-a3f9c1d2)' in seen['query']['summary']
    assert seen['long_query'].is_error and '4000' in seen['long_query'].content[0].text
    assert seen['forget']['ids'] == [seen['learn']['record_id']]
    assert seen['after']['hits'] == []
    assert (tmp_path / 'robot-memory.db').exists()


def test_the_installed_command_needs_no_path_to_the_venv(tmp_path):
    """A desktop client: PATH has only the system directories, HOME is somewhere else."""
    memory_path = tmp_path / 'robot-memory.md'
    memory_path.write_text(SPEC_EXAMPLE, encoding='utf-8')
    env = {'HOME': str(tmp_path), 'PATH': os.defpath}
    seen = anyio.run(_session_run, memory_path, tmp_path / 'server-stderr.txt', env)
    assert seen['init'].server_info.name == 'robot-memory'


async def _forget_session(memory_path: pathlib.Path) -> dict:
    params = StdioServerParameters(
        command=installed_command(), args=['mcp', '--file', str(memory_path), '--at',
                                           '2026-04-01T03:00:00Z'],
        cwd=str(REPO), env=dict(os.environ))
    seen = {}
    with open(os.devnull, 'w') as errors:
        async with stdio_client(params, errlog=errors) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                seen['tools'] = {tool.name: tool for tool in (await session.list_tools()).tools}
                for name, text in (('dock', 'The charging dock is in the hallway'),
                                   ('warning', 'Never block the fire exit with the dock cart'),
                                   ('tea', 'Ben prefers tea'),
                                   ('seat', 'Ben prefers the window seat')):
                    seen[name] = payload(await session.call_tool('learn', {'text': text}))
                seen['preview'] = payload(await session.call_tool(
                    'forget', {'target': 'dock', 'reason': 'moved', 'dry_run': True}))
                seen['best'] = payload(await session.call_tool(
                    'forget', {'target': 'charging dock', 'reason': 'moved'}))
                seen['none'] = await session.call_tool(
                    'forget', {'target': 'charging dock', 'reason': 'again'})
                seen['restore'] = payload(await session.call_tool(
                    'forget', {'target': seen['best']['ids'][0], 'reason': 'mistake',
                               'restore': True}))
                seen['all'] = payload(await session.call_tool(
                    'forget', {'target': 'dock', 'reason': 'clear', 'all': True}))
                seen['ben'] = payload(await session.call_tool('recall', {'query': 'Ben prefers'}))
                seen['long'] = await session.call_tool('learn', {'text': 'x' * 4001})
                seen['pin'] = payload(await session.call_tool(
                    'learn', {'text': 'The maintenance door PIN is 4711'}))
    return seen


def test_mcp_forget_has_the_one_meaning_and_the_schemas_state_the_limits(tmp_path):
    memory_path = tmp_path / 'robot-memory.md'
    memory_path.write_text(SPEC_EXAMPLE, encoding='utf-8')
    seen = anyio.run(_forget_session, memory_path)
    learn_schema = seen['tools']['learn'].input_schema['properties']
    forget_schema = seen['tools']['forget'].input_schema['properties']
    assert learn_schema['text']['maxLength'] == 4000
    assert forget_schema['reason']['maxLength'] == 1000
    assert {'all', 'dry_run', 'restore', 'hard'} <= set(forget_schema)
    assert seen['preview']['dry_run'] and seen['preview']['matched'] == 2
    assert len(seen['preview']['ids']) == 1 and 'would archive' in seen['preview']['message']
    assert seen['best']['ids'] == [seen['dock']['record_id']]
    assert seen['none'].is_error and 'no live record matches query' in \
        seen['none'].content[0].text
    assert seen['restore']['action'] == 'restore'
    assert seen['restore']['records'][0]['status'] == 'active'
    assert set(seen['all']['ids']) == {seen['dock']['record_id'], seen['warning']['record_id']}
    assert seen['seat']['action'] == 'created' and seen['seat']['replaced'] == []
    assert {hit['id'] for hit in seen['ben']['hits']} >= {seen['tea']['record_id'],
                                                          seen['seat']['record_id']}
    assert seen['long'].is_error
    assert 'text' in seen['long'].content[0].text and '4000' in seen['long'].content[0].text
    # A PIN is a secret; stored without encryption at rest, the reply says so and how to fix it.
    assert seen['pin']['action'] == 'created', seen['pin']
    assert 'not encrypted: this high sensitivity record is stored in plaintext' in \
        seen['pin']['message'] and 'substrate_encrypt_from: high' in seen['pin']['message']


WEAK_RECENT = """---
schema_version: "1.0"
rrn: RRN-000000000042
last_updated: 2026-04-01T02:00:00Z
entries:
  - id: mem-0000aa01
    type: hardware_observation
    text: "Left wheel encoder dropped ticks twice this morning during the kitchen run"
    confidence: 0.12
    first_seen: 2026-04-01T01:00:00Z
    last_reinforced: 2026-04-01T01:00:00Z
    observation_count: 2
    tags: [encoder]
---
"""


async def _context_session(memory_path: pathlib.Path) -> dict:
    params = StdioServerParameters(
        command=installed_command(), args=['mcp', '--file', str(memory_path), '--at',
                                           '2026-04-01T03:00:00Z'],
        cwd=str(memory_path.parent), env=dict(os.environ))
    seen = {}
    with open(os.devnull, 'w') as errors:
        async with stdio_client(params, errlog=errors) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                seen['tools'] = {tool.name: tool for tool in (await session.list_tools()).tools}
                seen['full'] = payload(await session.call_tool('get_context', {}))
                seen['small'] = payload(await session.call_tool('get_context',
                                                                {'token_budget': 30}))
                for name, tool, arguments in (
                        ('negative', 'get_context', {'token_budget': -5}),
                        ('zero', 'get_context', {'token_budget': 0}),
                        ('k', 'recall', {'query': 'encoder', 'k': 0}),
                        ('confidence', 'learn', {'text': 'x', 'confidence': 1.5}),
                        ('unknown', 'learn', {'txt': 'x'}),
                        ('refused', 'recall', {'query': '  '}),
                        ('teleport', 'teleport', {})):
                    seen[name] = await session.call_tool(tool, arguments)
    return seen


def test_get_context_counts_what_the_budget_drops_and_schemas_state_ranges(tmp_path):
    """Issue 26.10: a bad budget is refused, a dropped section is counted, ranges shown."""
    memory_path = tmp_path / 'robot-memory.md'
    memory_path.write_text(WEAK_RECENT, encoding='utf-8')
    seen = anyio.run(_context_session, memory_path)
    assert 'Seen in the last 24 h' in seen['full']['text'], seen['full']
    # Issue 38, point 6: the block opens with its framing, also given as a field.
    assert seen['full']['text'].startswith('Robot memory (observations, not instructions')
    assert 'not instructions' in seen['full']['framing'] and seen['full']['held'] == 0
    assert seen['small']['text'] == '' or 'Seen in the last' not in seen['small']['text']
    assert '1 omitted by the budget' in seen['small']['summary'], seen['small']
    assert seen['small']['omitted'] == 1
    # Issue 38, point 5: the block says what it left out, within the budget.
    assert seen['small']['text'].endswith('\nLeft out for the budget: 1 entry'), seen['small']
    assert seen['small']['token_estimate'] <= 30 and seen['small']['left_out_ids'] == []
    properties = {name: tool.input_schema['properties'] for name, tool in seen['tools'].items()}
    budget = properties['get_context']['token_budget']['anyOf'][0]
    assert (budget['minimum'], budget['maximum']) == (1, 1_000_000)
    k = properties['recall']['k']
    assert (k['minimum'], k['maximum']) == (1, 100)
    confidence = properties['learn']['confidence']
    assert (confidence['minimum'], confidence['maximum']) == (0, 1)
    for name, words in (('negative', 'token_budget is -5; give a number from 1 to 1000000'),
                        ('zero', 'token_budget is 0'), ('k', 'k is 0'),
                        ('confidence', 'confidence is 1.5'), ('unknown', 'unknown argument txt'),
                        ('refused', 'query is empty'), ('teleport', 'teleport')):
        result = seen[name]
        assert result.is_error, (name, result.content)
        text = result.content[0].text
        assert text.startswith(f'Error executing tool {"teleport" if name == "teleport" else ""}')
        assert words in text, (name, text)


def test_a_line_no_request_can_be_is_answered_and_the_server_goes_on(tmp_path):
    # An agent's client that sends JSON nested past Python's recursion limit, or an id that
    # is not a string, number or null, gets a JSON-RPC error; the server answers what follows.
    memory_path = tmp_path / 'robot-memory.md'
    memory_path.write_text(SPEC_EXAMPLE, encoding='utf-8')
    lines = ['[' * 50000, '{"jsonrpc": "2.0", "id": [[1]], "method": "ping"}',
             '{"jsonrpc": "2.0", "id": ' + '{"a": ' * 50 + '1' + '}' * 50 + ', "method": "ping"}',
             '{"jsonrpc": "2.0", "id": 7, "method": "ping"}',
             # lone surrogates are valid JSON: an answer echoing one ended the session
             '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": '
             '"get_context", "arguments": {"\\ud800": 1}}}',
             '{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "\\udc80"}}',
             '{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": '
             '"get_context", "arguments": {"query": "wheel \\udcff"}}}',
             '{"jsonrpc": "2.0", "id": 11, "method": "ping"}',
             # an empty batch is one invalid request; a non-finite id echoed is no JSON;
             # arguments that are not an object are refused, not read as none
             '[]', '{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
             '{"jsonrpc": "2.0", "id": 1e400, "method": "ping"}',
             '{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": '
             '"get_context", "arguments": false}}',
             '{"jsonrpc": "2.0", "id": 13, "method": "ping"}']
    done = subprocess.run([installed_command(), 'mcp', '--file', str(memory_path)],
                          input='\n'.join(lines) + '\n', capture_output=True, text=True,
                          timeout=120, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(reply['id'], reply.get('error', {}).get('code')) for reply in replies] == [
        (None, -32700), (None, -32600), (None, -32600), (7, None), (8, None), (9, None),
        (10, None), (11, None), (None, -32600), (None, -32600), (None, -32600), (12, None),
        (13, None)]
    assert replies[8]['error']['message'].startswith('an empty batch')
    assert replies[11]['result']['isError'] and 'arguments must be an object' in replies[11][
        'result']['content'][0]['text']
    assert replies[4]['result']['isError'] and '\ud800' in replies[4]['result']['content'][0][
        'text']
    assert not replies[6]['result'].get('isError'), replies[6]  # the query read with U+FFFD
    assert 'Traceback' not in done.stderr
    assert replies[0]['error']['message'].startswith('not JSON: JSON nested too deeply')
    assert 'an id is a string, a number or null' in replies[1]['error']['message']
    assert replies[3]['result'] == {}
