"""The MCP server for real: ``robot-memory mcp`` as a subprocess, driven by the mcp client."""

import json
import os
import pathlib
import sys

import anyio
from mcp import ClientSession
from mcp import StdioServerParameters
from mcp import stdio_client

from conftest import SPEC_EXAMPLE

REPO = pathlib.Path(__file__).resolve().parents[1]


def _payload(result) -> dict:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def _session_run(memory_path: pathlib.Path) -> dict:
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    params = StdioServerParameters(
        command=sys.executable, args=['-m', 'robot_memory.cli', 'mcp', '--file',
                                      str(memory_path), '--trust', 'low',
                                      '--at', '2026-04-01T03:00:00Z'],
        cwd=str(REPO), env=env)
    seen = {}
    with open(os.devnull, 'w') as errors:
        async with stdio_client(params, errlog=errors) as (read, write):
            async with ClientSession(read, write) as session:
                seen['init'] = await session.initialize()
                seen['tools'] = await session.list_tools()
                seen['learn'] = _payload(await session.call_tool(
                    'learn', {'text': 'The mop is in the utility closet', 'tags': ['cleaning'],
                              'context': {'location': {'room': 'utility'}}}))
                seen['again'] = _payload(await session.call_tool(
                    'learn', {'text': 'the mop is in the utility closet'}))
                await session.call_tool('learn', {'text': 'Alarm code is 1234',
                                                  'sensitivity': 'medium'})
                seen['recall'] = _payload(await session.call_tool(
                    'recall', {'query': 'where is the mop',
                               'filters': {'context.location.room': 'utility'}}))
                seen['secret'] = _payload(await session.call_tool('recall',
                                                                  {'query': 'alarm code'}))
                seen['bad'] = await session.call_tool('recall', {'query': '   '})
                seen['context'] = _payload(await session.call_tool('get_context',
                                                                   {'token_budget': 200}))
                seen['forget'] = _payload(await session.call_tool(
                    'forget', {'target': seen['learn']['record_id'], 'reason': 'moved'}))
                seen['after'] = _payload(await session.call_tool('recall', {'query': 'mop'}))
    return seen


def test_mcp_server_over_stdio(tmp_path):
    memory_path = tmp_path / 'robot-memory.md'
    memory_path.write_text(SPEC_EXAMPLE, encoding='utf-8')
    seen = anyio.run(_session_run, memory_path)
    assert seen['init'].server_info.name == 'robot-memory'
    assert {tool.name for tool in seen['tools'].tools} == {'learn', 'recall', 'forget',
                                                           'get_context'}
    assert all(tool.description for tool in seen['tools'].tools)
    assert seen['learn']['action'] == 'created' and seen['learn']['type'] == 'semantic'
    assert seen['again']['action'] == 'reinforced'
    assert seen['again']['record_id'] == seen['learn']['record_id']
    hits = seen['recall']['hits']
    assert [hit['id'] for hit in hits] == [seen['learn']['record_id']]
    assert hits[0]['tags'] == ['cleaning']
    secret = seen['secret']['hits'][0]
    assert secret['redacted'] and secret['text'] == '[redacted: medium sensitivity]'
    assert seen['bad'].is_error and 'query is empty' in seen['bad'].content[0].text
    assert 'Left wheel encoder intermittent' in seen['context']['text']
    assert seen['context']['entries'] == 1
    assert seen['forget']['ids'] == [seen['learn']['record_id']]
    assert seen['after']['hits'] == []
    assert (tmp_path / 'robot-memory.db').exists()
