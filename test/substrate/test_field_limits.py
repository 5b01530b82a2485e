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
One limit per text field, from robot_memory.substrate.models, on every edge.

The .srv comments state each limit (a caller of the ROS services reads them), the MCP tool
schemas carry it as maxLength, and the core's refusal names the field and its limit.
"""

import datetime as dt
import pathlib
import re

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from robot_memory.substrate.models import FIELD_LIMITS
from robot_memory.substrate.models import MAX_QUERY
from robot_memory.substrate.models import MAX_REASON
from robot_memory.substrate.models import MAX_RECORD_ID
from robot_memory.substrate.models import MAX_TAG
from robot_memory.substrate.models import MAX_TAGS
from robot_memory.substrate.models import MAX_TEXT

SRV = pathlib.Path(__file__).resolve().parents[2] / 'srv'
NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)


def _comment_of(service: str, field: str) -> str:
    """Return the comment lines just above ``string <field>`` in srv/<service>.srv."""
    lines = (SRV / f'{service}.srv').read_text(encoding='utf-8').splitlines()
    for index, line in enumerate(lines):
        if re.fullmatch(rf'string(\[\])? {field}', line.strip()):
            comment = []
            for above in reversed(lines[:index]):
                if not above.startswith('#'):
                    break
                comment.insert(0, above)
            return ' '.join(comment)
    raise AssertionError(f'{service}.srv has no field {field}')


@pytest.mark.parametrize('service, field, limit', [
    ('Learn', 'text', MAX_TEXT), ('Learn', 'tags', MAX_TAGS), ('Learn', 'tags', MAX_TAG),
    ('Recall', 'query', MAX_QUERY), ('Forget', 'id', MAX_RECORD_ID),
    ('Forget', 'query', MAX_QUERY), ('Forget', 'reason', MAX_REASON)])
def test_the_service_interfaces_state_the_limits_of_models(service, field, limit):
    assert f'{limit:,}' in _comment_of(service, field), (service, field, limit)


@pytest.mark.parametrize('call, field, limit', [
    (lambda store: store.learn('t' * (MAX_TEXT + 1), now=NOW), 'text', MAX_TEXT),
    (lambda store: store.recall('q' * (MAX_QUERY + 1), now=NOW), 'query', MAX_QUERY),
    (lambda store: store.forget('x', 'r' * (MAX_REASON + 1), NOW), 'reason', MAX_REASON),
    (lambda store: store.forget('i' * (MAX_RECORD_ID + 1), 'r', NOW, by='id'), 'id',
     MAX_RECORD_ID),
    (lambda store: store.forget('q' * (MAX_QUERY + 1), 'r', NOW, by='query'), 'query',
     MAX_QUERY)])
def test_a_refusal_names_the_field_and_its_limit(call, field, limit):
    with Substrate(':memory:') as store, pytest.raises(SubstrateError) as refused:
        call(store)
    assert re.search(rf'\b{field}\b.*\blimit is {limit}\b', str(refused.value)), refused.value
    assert FIELD_LIMITS[field] == limit


def test_a_text_up_to_the_limit_is_learned_whatever_its_type():
    with Substrate(':memory:') as store:
        for kind in ('semantic', 'episodic', 'working', 'competence', 'plan_graph'):
            text = f'{kind} ' + 'w' * (MAX_TEXT - len(kind) - 1)
            assert store.learn(text, type=kind, now=NOW).action == 'created', kind


def test_the_mcp_tool_schemas_carry_the_limits():
    from robot_memory.mcp.mcp_server import check_arguments
    from robot_memory.mcp.mcp_server import ToolError
    from robot_memory.mcp.mcp_server import TOOLS
    tools = {tool['name']: tool['inputSchema']['properties'] for tool in TOOLS}
    assert tools['learn']['text']['maxLength'] == MAX_TEXT
    tags = tools['learn']['tags']['anyOf'][0]
    assert tags['maxItems'] == MAX_TAGS and tags['items']['maxLength'] == MAX_TAG
    assert tools['recall']['query']['maxLength'] == MAX_QUERY
    assert tools['forget']['target']['maxLength'] == MAX_QUERY
    assert tools['forget']['reason']['maxLength'] == MAX_REASON
    # The server holds a call to its schemas before the substrate sees it.
    learn = next(tool for tool in TOOLS if tool['name'] == 'learn')
    assert check_arguments(learn, {'text': 'w' * MAX_TEXT})['confidence'] == 0.7
    for arguments, message in (({'text': 'w' * (MAX_TEXT + 1)}, f'limit is {MAX_TEXT}'),
                               ({'text': 'x', 'tags': ['t'] * (MAX_TAGS + 1)},
                                f'limit is {MAX_TAGS}'),
                               ({'text': 'x', 'tags': ['t' * (MAX_TAG + 1)]},
                                rf'tags\[0\] is {MAX_TAG + 1} characters'),
                               ({'text': 'x', 'confidence': True}, 'must be number'),
                               ({'text': 'x', 'colour': 'red'}, 'unknown argument colour'),
                               ({}, 'missing argument text')):
        with pytest.raises(ToolError, match=message):
            check_arguments(learn, arguments)


def test_an_imported_record_id_has_the_same_limit():
    with Substrate(':memory:') as store:
        record = store.get(store.learn('The ramp is steep', now=NOW).record_id).to_dict()
        record['id'] = 'i' * (MAX_RECORD_ID + 1)
        with pytest.raises(SubstrateError, match=rf'\bid\b.*at most {MAX_RECORD_ID}'):
            store.restore(record, NOW)
