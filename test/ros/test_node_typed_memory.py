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
~/learn, ~/recall and ~/forget on a real memory_node, probed over DDS from this process.

The node is the installed executable in its own process; the substrate it serves is the
same SQLite database as its evidence. Requests are also fuzzed with hypothesis: whatever
a caller sends, the node answers (success, or a refusal that names the field or rule at
fault) and stays up. Hostile values (oversized, NaN/inf, bidi marks, NULs, path-like ids,
JSON-like and deeply nested text, huge k) are sent one field at a time, so a refusal must
name that very field; NULs are cut by the middleware, so the node sees what precedes one.
"""

import json
import re
import sqlite3
import time
import uuid

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.srv import Forget
from robot_memory.srv import Learn
from robot_memory.srv import Recall
from robot_memory.substrate.embedding import semantic_model_files
from support.ros_harness import NodeProcess
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import wait_gone
from support.ros_probe import wait_ready


@pytest.fixture(scope='module')
def node(tmp_path_factory, probe):
    """One memory_node serving the typed memory; recall callers capped at 'medium'."""
    tmp_path = tmp_path_factory.mktemp('typed')
    process = NodeProcess(tmp_path, 'it_typed', substrate_metrics_period_s=1.0,
                          service_max_trust='medium').start()
    try:
        wait_ready(probe, process)
        yield process
    finally:
        assert process.stop() == 0, process.log()


def learn(probe, node, text, **fields):
    """Call ~/learn."""
    if 'context' in fields:
        fields['context_json'] = json.dumps(fields.pop('context'))
    return call(probe, Learn, f'{node.prefix}/learn', Learn.Request(text=text, **fields))


def recall(probe, node, query, **fields):
    """Call ~/recall."""
    if 'filters' in fields:
        fields['filters_json'] = json.dumps(fields.pop('filters'))
    return call(probe, Recall, f'{node.prefix}/recall', Recall.Request(query=query, **fields))


def test_learn_recall_and_a_duplicate_reinforces(node, probe):
    first = learn(probe, node, 'The charging dock is behind the kitchen door', type='semantic',
                  tags=['dock'], context={'location': {'room': 'kitchen'}})
    assert first.success and first.id and first.type == 'semantic' and not first.duplicate, \
        first.message
    again = learn(probe, node, 'The charging dock is behind the kitchen door', type='semantic')
    assert again.success and again.duplicate and again.id == first.id, again.message
    found = recall(probe, node, 'where is the charging dock', k=3)
    assert found.success, found.message
    assert found.records and found.records[0].id == first.id
    record = found.records[0]
    assert record.type == 'semantic' and 'dock' in record.tags and not record.redacted
    assert 0.0 < record.confidence <= 1.0 and 0.0 < record.salience <= 1.0 and record.score > 0
    assert json.loads(record.payload_json)['context'] == {'location': {'room': 'kitchen'}}


def test_recall_filters_on_context_fields(node, probe):
    learn(probe, node, 'Battery sags on the ramp', type='episodic', context={'battery': 0.15})
    learn(probe, node, 'Battery fine on the ramp today', type='episodic', context={'battery': 0.9})
    low = recall(probe, node, 'battery ramp', filters={'context.battery': {'$lt': 0.2}})
    assert low.success, low.message
    assert [record.text for record in low.records] == ['Battery sags on the ramp']
    bad = recall(probe, node, 'battery', filters={'context.battery': {'$near': 1}})
    assert not bad.success and '$near' in bad.message


def test_a_caller_cannot_raise_its_own_trust_and_sensitive_records_are_gated(node, probe):
    secret = learn(probe, node, 'The maintenance door code is 4711', type='semantic',
                   sensitivity='high')
    assert secret.success, secret.message
    refused = recall(probe, node, 'maintenance door code', trust='hyper')
    assert not refused.success and 'service_max_trust' in refused.message
    gated = recall(probe, node, 'maintenance door code', trust='medium')
    assert gated.success, gated.message
    assert all('4711' not in record.text for record in gated.records)
    assert 'withheld' in gated.message and 'redacted' in gated.message
    bogus = recall(probe, node, 'door', trust='root')
    assert not bogus.success and 'root' in bogus.message


def test_forget_archives_by_id_and_refuses_what_it_cannot_do(node, probe):
    learned = learn(probe, node, 'Cleaning cart parks in hallway B', type='semantic')
    name = f'{node.prefix}/forget'
    no_reason = call(probe, Forget, name, Forget.Request(id=learned.id))
    assert not no_reason.success and 'reason' in no_reason.message
    unknown = call(probe, Forget, name, Forget.Request(id='no-such-id', reason='test'))
    assert not unknown.success and 'no-such-id' in unknown.message
    both = call(probe, Forget, name, Forget.Request(id=learned.id, query='cart', reason='x'))
    assert not both.success and 'either' in both.message
    done = call(probe, Forget, name, Forget.Request(id=learned.id, reason='cart moved'))
    assert done.success and list(done.ids) == [learned.id], done.message
    after = recall(probe, node, 'cleaning cart hallway')
    assert learned.id not in [record.id for record in after.records]
    with sqlite3.connect(node.memory_file.with_name('robot-memory.db')) as db:
        status, = db.execute('SELECT status FROM substrate_records WHERE id = ?',
                             (learned.id,)).fetchone()
        actions = [row[0] for row in db.execute(
            'SELECT action FROM substrate_audit WHERE record_id = ? ORDER BY id', (learned.id,))]
        tables = {row[0] for row in db.execute('SELECT name FROM sqlite_master')}
    assert status == 'archived' and actions[-1] == 'archive'
    assert 'observations' in tables, 'the typed memory shares the evidence database'


def forget(probe, node, **fields):
    """Call ~/forget."""
    return call(probe, Forget, f'{node.prefix}/forget', Forget.Request(**fields))


def test_forget_by_query_takes_the_best_match_and_can_be_undone(node, probe):
    dock = learn(probe, node, 'The wash bay dock is beside the north wall', type='semantic')
    warning = learn(probe, node, 'Keep the fire exit by the wash bay dock clear',
                    type='semantic')
    assert dock.success and warning.success, (dock.message, warning.message)
    preview = forget(probe, node, query='wash bay dock north wall', reason='moving it',
                     dry_run=True)
    assert preview.success and list(preview.ids) == [dock.id], preview.message
    assert 'would archive' in preview.message and 'north wall' in preview.message
    assert dock.id in [record.id for record in recall(probe, node, 'wash bay dock north wall',
                                                      k=5).records], 'a dry run changes nothing'
    best = forget(probe, node, query='wash bay dock', reason='moved')
    assert best.success and len(best.ids) == 1, best.message
    assert 'best of 2 matches' in best.message
    left = forget(probe, node, query='wash bay dock', reason='clear the rest', all=True)
    assert left.success and len(left.ids) == 1 and set(best.ids) | set(left.ids) == {
        dock.id, warning.id}, left.message
    none = forget(probe, node, query='wash bay dock', reason='again')
    assert not none.success and 'no live record matches query' in none.message
    assert not none.ids
    back = forget(probe, node, id=warning.id, reason='archived by mistake', restore=True)
    assert back.success and list(back.ids) == [warning.id], back.message
    found = recall(probe, node, 'fire exit wash bay', k=3)
    assert found.records and found.records[0].id == warning.id
    assert found.records[0].status == 'active'
    deleted = forget(probe, node, id=dock.id, reason='gone', hard=True)
    assert deleted.success, deleted.message
    never = forget(probe, node, id=dock.id, reason='undo', restore=True)
    assert not never.success and 'hard-deleted' in never.message
    both = forget(probe, node, id=warning.id, reason='x', restore=True, hard=True)
    assert not both.success and 'hard' in both.message


def test_forget_is_trust_gated_like_recall(node, probe):
    high = learn(probe, node, 'The cellar safe code is 2718', type='semantic',
                 sensitivity='high')
    hyper = learn(probe, node, 'The cellar vault phrase is plover', type='semantic',
                  sensitivity='hyper')
    assert high.success and hyper.success
    preview = forget(probe, node, query='cellar safe code', reason='x', dry_run=True)
    assert preview.success and list(preview.ids) == [high.id], preview.message
    # Not the bare number: a record id (hex) may hold those four digits by chance.
    assert 'code is 2718' not in preview.message and 'redacted' in preview.message
    hidden = forget(probe, node, query='cellar vault phrase plover', reason='x')
    assert not hidden.success and not hidden.ids, hidden.message


def test_compatible_facts_stay_and_an_unsure_pair_is_recalled_flagged(node, probe):
    tea = learn(probe, node, 'Gwen prefers mint tea', type='semantic')
    seat = learn(probe, node, 'Gwen prefers the aisle seat', type='semantic')
    slow = learn(probe, node, 'The freight lift is slow', type='semantic')
    fast = learn(probe, node, 'The freight lift is fast', type='semantic')
    assert all(reply.success for reply in (tea, seat, slow, fast))
    assert 'contesting' in fast.message
    dana = learn(probe, node, 'The porter is Dana', type='semantic', cardinality='one')
    sam = learn(probe, node, 'The porter is Sam', type='semantic', cardinality='one')
    assert dana.success and sam.success and 'superseding' in sam.message, sam.message
    bad = learn(probe, node, 'The porter is Ali', type='semantic', cardinality='several')
    assert not bad.success and 'cardinality' in bad.message
    prefers = {record.id: record.status for record in recall(probe, node, 'Gwen prefers',
                                                             k=5).records}
    assert prefers.get(tea.id) == 'active' and prefers.get(seat.id) == 'active', prefers
    lift = {record.id: record.status for record in recall(probe, node, 'freight lift',
                                                          k=5).records}
    assert lift.get(slow.id) == 'contested' and lift.get(fast.id) == 'contested', lift


def test_one_text_limit_per_field_over_ros(node, probe):
    long_fact = learn(probe, node, 'w' * 3000, type='semantic')
    assert long_fact.success, long_fact.message
    too_long = learn(probe, node, 'w' * 4001)
    assert not too_long.success
    assert 'text is 4001 characters; the limit is 4000' in too_long.message
    query = recall(probe, node, 'q' * 4001)
    assert not query.success and 'query is 4001 characters; the limit is 4000' in query.message
    reason = forget(probe, node, id=long_fact.id, reason='r' * 1001)
    assert not reason.success and 'reason is 1001 characters; the limit is 1000' in \
        reason.message
    record_id = forget(probe, node, id='i' * 201, reason='x')
    assert not record_id.success and 'id is 201 characters; the limit is 200' in \
        record_id.message


@pytest.mark.parametrize('fields, named', [
    ({'text': ''}, 'text'),
    ({'text': 'x' * 100_000}, 'characters'),
    ({'text': 'ok', 'type': 'gossip'}, 'gossip'),
    ({'text': 'ok', 'context_json': '{not json'}, 'not JSON'),
    ({'text': 'ok', 'context_json': '[1, 2]'}, 'object'),
    ({'text': 'ok', 'context_json': '{"a": NaN}'}, 'nan'),
    ({'text': 'ok', 'context_json': '[' * 5000 + ']' * 5000}, 'deep'),
    ({'text': 'ok', 'sensitivity': 'top-secret'}, 'top-secret'),
    ({'text': 'ok', 'tags': ['x' * 1000]}, 'tag'),
])
def test_bad_learn_requests_are_refused_with_the_reason(node, probe, fields, named):
    reply = call(probe, Learn, f'{node.prefix}/learn', Learn.Request(**fields))
    assert not reply.success
    assert named.lower() in reply.message.lower(), reply.message
    assert node.process.poll() is None


@pytest.mark.parametrize('fields, named', [
    ({'query': ''}, 'empty'),
    ({'query': 'dock', 'k': 1000}, 'k must'),
    ({'query': 'dock', 'filters_json': '{"context.x": {"$lt": "a", "$gt": []}}'}, ''),
])
def test_bad_recall_requests_are_refused_with_the_reason(node, probe, fields, named):
    reply = call(probe, Recall, f'{node.prefix}/recall', Recall.Request(**fields))
    assert not reply.success and reply.message
    assert named.lower() in reply.message.lower(), reply.message


_TEXT = st.text(st.characters(blacklist_categories=('Cs',), blacklist_characters='\x00'),
                max_size=3000)
_JSONISH = st.one_of(_TEXT, st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | _TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children,
                                                                      max_size=4),
    max_leaves=20).map(lambda value: json.dumps(value)))


# What a refusal must contain when this request field is at fault (the field's name, as the
# caller wrote it; a tag may be named singly).
_NAMES = {
    Learn: {'text': r'\btext\b', 'type': r'\btype\b', 'tags': r'\btags?\b',
            'context_json': r'\bcontext_json\b', 'sensitivity': r'\bsensitivity\b'},
    Recall: {'query': r'\bquery\b', 'k': r'\bk\b', 'filters_json': r'\bfilters_json\b',
             'trust': r'\btrust\b'},
    Forget: {'id': r'\bid\b', 'query': r'\bquery\b', 'reason': r'\breason\b'},
}


def _names(service, fields, message) -> bool:
    """Whether ``message`` names one of ``fields`` of ``service``'s request."""
    return any(re.search(_NAMES[service][field], message) for field in fields)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_TEXT, kind=st.sampled_from(['', 'semantic', 'episodic', 'plan_graph', 'x', '../']),
       tags=st.lists(_TEXT, max_size=5), context=_JSONISH,
       sensitivity=st.sampled_from(['', 'public', 'hyper', 'NaN']), query=_TEXT,
       k=st.integers(0, 2 ** 32 - 1), filters=_JSONISH, trust=st.sampled_from(['', 'low', '∞']),
       forget_by=st.sampled_from(['id', 'query', 'both', 'neither']), hard=st.booleans())
def test_fuzzed_requests_always_get_an_answer_that_says_why(node, probe, text, kind, tags,
                                                            context, sensitivity, query, k,
                                                            filters, trust, forget_by, hard):
    learned = call(probe, Learn, f'{node.prefix}/learn', Learn.Request(
        text=text, type=kind, tags=tags, context_json=context, sensitivity=sensitivity))
    assert learned.success or _names(Learn, _NAMES[Learn], learned.message), learned.message
    found = call(probe, Recall, f'{node.prefix}/recall', Recall.Request(
        query=query, k=k, filters_json=filters, trust=trust))
    assert found.success or _names(Recall, _NAMES[Recall], found.message), found.message
    forgot = call(probe, Forget, f'{node.prefix}/forget', Forget.Request(
        id=text[:200] if forget_by in ('id', 'both') else '',
        query=query if forget_by in ('query', 'both') else '', reason='fuzz', hard=hard))
    assert forgot.success or _names(Forget, _NAMES[Forget], forgot.message), forgot.message
    assert node.process.poll() is None, node.log()


# ------------------------------------------------------------------ hostile fields, one at a time

_ANY_CHAR = st.characters(blacklist_categories=('Cs',))  # NULs, controls, bidi marks included
_NASTY = ['NaN', 'nan', 'inf', '-inf', 'Infinity', '1e309', '-0', ' ', '\t\n', '\x00',
          'a\x00b', '\u202eevil\u202c', '\u200f\u2066x\u2069', '\ufeff', '\u2028', '🤖' * 3,
          '../../etc/passwd', '/etc/passwd', 'C:\\Windows\\system32', '~/.ssh/id_rsa',
          'file:///etc/passwd', "'; DROP TABLE substrate_records; --", 'NEAR(a b)', '"open',
          'a OR', '*', 'text:x', '{}', '[]', 'null', '"s"', '{"a": NaN}', '{"a": Infinity}',
          '{"a": -Infinity}', '{"a": 1e999}', '{"$where": "1"}', '{"context.a": {"$lt": []}}',
          '{"context.a": {"$regex": "x"}}', '{"context.a": {"$lt": NaN}}', '{"context.": 1}',
          '{"context.a b": 1}', '{"context.a": {"$eq": {"x": [1]}}}', '{"task": {"x": 1}}',
          json.dumps({'task': 'y' * 3000}), json.dumps({'blob': 'z' * 20_000}),
          json.dumps({'context.a': 'q' * 5000})]
_FILTERISH = st.dictionaries(
    st.sampled_from(['context.a', 'context.b.c', 'context', 'x', 'context.$x', '']),
    st.one_of(st.integers(), st.floats(), _TEXT.map(lambda text: text[:20]),
              st.dictionaries(st.sampled_from(['$lt', '$gte', '$eq', '$ne', '$in', '$regex']),
                              st.one_of(st.integers(), st.floats(), st.text(max_size=5),
                                        st.lists(st.integers(), max_size=3)), max_size=3)),
    max_size=3).map(json.dumps)
_SHORT_HOSTILE = st.one_of(st.text(_ANY_CHAR, max_size=40), st.sampled_from(_NASTY),
                           st.integers(60, 200).map(lambda n: 't' * n))
_HOSTILE = st.one_of(
    _SHORT_HOSTILE, _TEXT, _JSONISH, _FILTERISH,
    st.integers(2_001, 120_000).map(lambda n: 'x' * n),
    st.integers(1, 3_000).map(lambda n: 'ü🤖 ' * n),
    st.integers(1, 50_000).map(lambda n: '[' * n + ']' * n),
    st.integers(1, 3_000).map(lambda n: '{"a": ' * n + '1' + '}' * n))
_HOSTILE_K = st.one_of(st.integers(0, 2 ** 32 - 1), st.sampled_from([101, 2 ** 31, 2 ** 32 - 1]))
_FUZZ = settings(max_examples=50, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow, HealthCheck.data_too_large])


def _refusal_names(service, field, reply) -> None:
    assert reply.success or _names(service, [field], reply.message), \
        f'a refusal caused by {field} does not name it: {reply.message[:500]!r}'


def _still_serving(node, probe) -> None:
    assert node.process.poll() is None, node.log()
    reply = recall(probe, node, 'charging dock', k=3)
    assert reply.success, reply.message


@_FUZZ
@given(field=st.sampled_from(sorted(_NAMES[Learn])), value=_HOSTILE,
       tags=st.lists(_SHORT_HOSTILE, max_size=25),
       kind=st.sampled_from(['', 'semantic', 'episodic', 'working', 'competence', 'plan_graph']))
def test_a_hostile_learn_field_is_refused_naming_that_field(node, probe, field, value, tags, kind):
    request = Learn.Request(text='The fuzzing robot parks by the loading bay', type=kind)
    if field == 'tags':
        request.tags = tags
    else:
        setattr(request, field, value)
    _refusal_names(Learn, field, call(probe, Learn, f'{node.prefix}/learn', request))
    _still_serving(node, probe)


@_FUZZ
@given(field=st.sampled_from(sorted(_NAMES[Recall])), value=_HOSTILE, k=_HOSTILE_K)
def test_a_hostile_recall_field_is_refused_naming_that_field(node, probe, field, value, k):
    request = Recall.Request(query='loading bay', k=3)
    if field == 'k':
        request.k = k
    else:
        setattr(request, field, value)
    _refusal_names(Recall, field, call(probe, Recall, f'{node.prefix}/recall', request))
    _still_serving(node, probe)


@_FUZZ
@given(field=st.sampled_from(sorted(_NAMES[Forget])), value=_HOSTILE, hard=st.booleans())
def test_a_hostile_forget_field_is_refused_naming_that_field(node, probe, field, value, hard):
    if field == 'reason':  # forget a record of its own, by id: only the reason can be wrong
        target = learn(probe, node, f'Fuzz record {uuid.uuid4().hex}', type='episodic')
        assert target.success, target.message
        request = Forget.Request(id=target.id, reason=value, hard=hard)
    else:
        request = Forget.Request(reason='fuzz', hard=hard, **{field: value})
    reply = call(probe, Forget, f'{node.prefix}/forget', request)
    _refusal_names(Forget, field, reply)
    if field == 'reason' and reply.success:
        assert list(reply.ids) == [request.id], reply.message
    _still_serving(node, probe)


def test_typed_memory_metrics_are_in_the_node_diagnostics(node, probe):
    learn(probe, node, 'The lift to floor 2 is out of service on Mondays', type='semantic')
    # Metrics are recomputed every substrate_metrics_period_s: the first status heard may
    # predate the learn, so wait for one that counts it.
    deadline = time.monotonic() + 15.0
    values = health(probe, 'typed memory', timeout=15.0)
    while int(values['records']) < 1 and time.monotonic() < deadline:
        values = health(probe, 'typed memory', timeout=15.0)
    assert values['_level'] == 0, values
    assert int(values['records']) >= 1 and int(values['type semantic']) >= 1
    for key in ('salience_mean', 'usefulness', 'contradiction_rate', 'revisions_per_day',
                'created_per_day'):
        assert key in values, sorted(values)
    # The search the node runs is reported: the semantic model, which setup.sh installs.
    expected = 'semantic' if semantic_model_files() is not None else 'keyword only'
    assert values['search'] == expected and values['embedder'], values


def test_a_pin_learned_without_encryption_is_high_and_the_reply_and_health_say_so(node, probe):
    stored = learn(probe, node, 'Door PIN 5523')
    assert stored.success, stored.message
    assert 'not encrypted: this high sensitivity record is stored in plaintext' in \
        stored.message and 'substrate_encrypt_from: high' in stored.message
    deadline = time.monotonic() + 15.0
    values = health(probe, 'typed memory', timeout=15.0)
    while 'plaintext' not in values['_message'] and time.monotonic() < deadline:
        values = health(probe, 'typed memory', timeout=15.0)
    assert int(values['plaintext_sensitive_records']) >= 1, values
    assert 'stored in plaintext: encryption at rest is off' in values['_message'], values
    assert 'substrate_encrypt_from: high' in values['_message'], values


def test_the_typed_memory_survives_a_restart(tmp_path, probe):
    first = NodeProcess(tmp_path, 'it_typed_restart').start()
    try:
        wait_ready(probe, first)
        stored = learn(probe, first, 'Door 3 sticks when it is cold', type='semantic')
        assert stored.success, stored.message
    finally:
        assert first.stop() == 0, first.log()
    wait_gone(probe, first)
    second = NodeProcess(tmp_path, 'it_typed_restart').start()
    try:
        wait_ready(probe, second)
        found = recall(probe, second, 'door sticks cold')
        assert [record.id for record in found.records][:1] == [stored.id], found.message
    finally:
        assert second.stop() == 0, second.log()


def test_the_node_stores_sensitive_records_encrypted_and_withholds_them_without_key(tmp_path,
                                                                                    probe):
    key = tmp_path / 'keys' / 'memory.key'
    params = {'substrate_encrypt_from': 'high', 'substrate_key_file': str(key),
              'service_max_trust': 'high', 'substrate_metrics_period_s': 1.0}
    first = NodeProcess(tmp_path, 'it_typed_sealed', **params).start()
    try:
        wait_ready(probe, first)
        stored = learn(probe, first, 'Ben Okafor takes warfarin every evening',
                       sensitivity='high')
        assert stored.success, stored.message
        found = recall(probe, first, 'warfarin evening', trust='high')
        assert [record.text for record in found.records] == [
            'Ben Okafor takes warfarin every evening'], found.message
        on_disk = b''.join(path.read_bytes() for path in tmp_path.glob('robot-memory.db*'))
        assert b'warfarin' not in on_disk and b'Okafor' not in on_disk
    finally:
        assert first.stop() == 0, first.log()
    wait_gone(probe, first)
    key.rename(tmp_path / 'elsewhere.key')
    second = NodeProcess(tmp_path, 'it_typed_sealed', **params).start()
    try:
        wait_ready(probe, second)
        found = recall(probe, second, 'warfarin evening', trust='high')
        assert found.success and not found.records, found.message
        assert '1 encrypted record withheld' in found.message and str(key) in found.message
        # The diagnostic is recomputed every second: wait for one computed after the start.
        deadline = time.monotonic() + 15.0
        values = health(probe, 'typed memory', timeout=15.0)
        while values.get('encrypted_withheld') != '1' and time.monotonic() < deadline:
            values = health(probe, 'typed memory', timeout=15.0)
        assert values['_level'] == 1 and values['encrypted_withheld'] == '1', values
        assert 'is missing' in values['_message'], values
    finally:
        assert second.stop() == 0, second.log()
