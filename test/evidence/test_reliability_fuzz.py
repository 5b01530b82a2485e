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
Hostile input: fuzzing of every reader of outside data; a refusal always names the problem.

* ``memory_file.parse_bytes`` on random bytes, random YAML front matter, entries of random
  values and byte-level mutations of a valid file: the result is a LoadResult (whose
  quarantined items each carry a reason, and which renders and reads back) or a
  MemoryFileError with a non-empty problem. Nothing else is ever raised.
* ``observations.parse_line`` / ``parse_lines`` on random text, random JSON and mutated
  valid records: accepted (and then classified by the default rules without error) or
  refused with a reason; a stream gives exactly one outcome per non-blank line.
* ``rules.Rules.from_data`` on random documents and mutated valid rules: Rules, or a
  RulesError naming the origin and the problem.

The values include oversized strings, NaN and infinities, wrong types, deep nesting,
unpaired surrogates, right-to-left marks, emoji, NUL and path-like ids such as
``../../etc/passwd``. Hypothesis tries 100 examples per test by default and 3,000 with
``--long``.
"""

import dataclasses
import datetime as dt
import json
import math

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import yaml

from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.observations import MAX_STRING_CHARS
from robot_memory.evidence.observations import ObservationError
from robot_memory.evidence.observations import parse_line
from robot_memory.evidence.observations import parse_lines
from robot_memory.evidence.rules import Rules
from robot_memory.evidence.rules import RulesError
from robot_memory.rcan.memory_file import LoadResult
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from support.modes import LONG

pytestmark = pytest.mark.long  # --long runs it at full length

FUZZ = settings(max_examples=3000 if LONG else 100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NOW = dt.datetime(2026, 5, 1, 3, 0, tzinfo=UTC)

NASTY_STRINGS = [
    '', ' ', '../../etc/passwd', '/etc/shadow', 'C:\\Windows\\system32', 'mem-../../x',
    'a\x00b', '\ud800', '\udfff lone', '\u202eevil\u202c', '\u200f\u05e9\u05dc\u05d5\u05dd',
    '🤖🔥' * 50, 'x' * (MAX_STRING_CHARS + 10), 'y' * 70_000, '---', '...', '- {', '{{}}',
    '{hardware_id}', '%s%s%n', 'NaN', 'inf', '-Infinity', '\ufeff', '\u2028', '\t\r\n',
    'mem-a3f9c1d2', 'RRN-000000000001', '2026-05-01T02:00:00Z', 'null', 'true', '0x1F',
]
nasty_text = st.one_of(st.sampled_from(NASTY_STRINGS), st.text(max_size=60),
                       st.text(alphabet=st.characters(blacklist_categories=()), max_size=20))
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), nasty_text,
    st.datetimes(timezones=st.just(UTC)),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(nasty_text, inner, max_size=4)),
    max_leaves=20)


def deep(depth: int, leaf):
    for _ in range(depth):
        leaf = {'a': [leaf]}
    return leaf


VALID_FILE = b"""---
schema_version: "1.0"
rrn: "RRN-000000000001"
last_updated: "2026-04-01T02:00:00Z"
entries:
- {"id": "mem-a3f9c1d2", "type": "hardware_observation", "text": "Left wheel encoder \
intermittent \xe2\x80\x94 prefer speeds \xe2\x89\xa40.3m/s", "confidence": 0.92, \
"first_seen": "2026-03-28T14:00:00Z", "last_reinforced": "2026-04-01T02:00:00Z", \
"observation_count": 14, "tags": ["wheel", "encoder"]}
- {"id": "mem-00000001", "type": "resolved", "text": "Dock 2 misaligned", \
"confidence": 0.4, "first_seen": "2026-03-20T10:00:00Z", "last_reinforced": \
"2026-03-29T10:00:00Z", "observation_count": 3, "tags": [], "resolved_from": "environment_note"}
peer_context:
- {"rrn": "RRN-000000000002", "last_synced": "2026-04-01T01:00:00Z", "entries": [{"id": \
"mem-b1b1b1b1", "type": "environment_note", "text": "Ramp B is slippery when wet", \
"confidence": 0.7, "tags": ["ramp"]}]}
---

# Robot memory

Notes kept by hand.
"""


def check_memory_bytes(data: bytes) -> None:
    """Check the contract of parse_bytes on any input."""
    try:
        result = parse_bytes(data, NOW)
    except MemoryFileError as error:
        assert error.problem.strip(), f'a MemoryFileError without a problem for {data[:80]!r}'
        return
    assert isinstance(result, LoadResult)
    for item in result.quarantined:
        assert item.reason.strip()
    for problem in result.problems:
        assert problem.message.strip()
    again = parse_bytes(render(result.document), NOW)
    assert [entry.id for entry in again.document.entries] == \
        [entry.id for entry in result.document.entries]
    assert all(0.0 <= entry.confidence <= 1.0 for entry in result.document.entries)


def test_the_valid_file_is_valid():
    result = parse_bytes(VALID_FILE, NOW)
    assert result.problems == [] and len(result.document.entries) == 2


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes(data):
    check_memory_bytes(data)
    check_memory_bytes(b'---\n' + data)
    check_memory_bytes(b'---\n' + data + b'\n---\n')


@FUZZ
@given(values)
def test_random_yaml_front_matter(value):
    try:
        text = yaml.safe_dump(value, allow_unicode=True)
    except (yaml.YAMLError, UnicodeEncodeError):
        text = json.dumps(value, default=str)
    check_memory_bytes(b'---\n' + text.encode('utf-8', 'surrogatepass') + b'---\n')


entry_fields = st.fixed_dictionaries({}, optional={
    'id': nasty_text, 'type': st.one_of(nasty_text, st.sampled_from(
        ['hardware_observation', 'environment_note', 'behavior_pattern', 'resolved'])),
    'text': nasty_text, 'confidence': scalars, 'first_seen': scalars,
    'last_reinforced': scalars, 'observation_count': scalars, 'tags': values,
    'extra': values,
})


@FUZZ
@given(st.lists(st.one_of(entry_fields, values), max_size=6), values,
       st.integers(min_value=0, max_value=200))
def test_entries_of_random_values(entries, peers, depth):
    document = {'schema_version': '1.0', 'rrn': 'RRN-000000000001',
                'last_updated': '2026-04-01T02:00:00Z', 'entries': entries,
                'peer_context': peers, 'nested': deep(depth, 'leaf')}
    for dump in (lambda: yaml.safe_dump(document, allow_unicode=True),
                 lambda: json.dumps(document, default=str, ensure_ascii=False)):
        try:
            text = dump()
        except (yaml.YAMLError, UnicodeEncodeError, ValueError, RecursionError):
            continue
        check_memory_bytes(b'---\n' + text.encode('utf-8', 'surrogatepass') + b'---\n')


mutations = st.lists(st.tuples(st.sampled_from(['flip', 'insert', 'delete', 'truncate']),
                               st.integers(min_value=0, max_value=len(VALID_FILE) - 1),
                               st.binary(min_size=1, max_size=8)), min_size=1, max_size=8)


@FUZZ
@given(mutations)
def test_mutated_valid_files(edits):
    data = bytearray(VALID_FILE)
    for kind, position, chunk in edits:
        position = min(position, max(0, len(data) - 1))
        if kind == 'flip' and data:
            data[position] ^= chunk[0] or 0x20
        elif kind == 'insert':
            data[position:position] = chunk
        elif kind == 'delete':
            del data[position:position + len(chunk)]
        else:
            del data[position:]
    check_memory_bytes(bytes(data))


# --------------------------------------------------------------------------- observations

def check_line(text, line=7):
    """Check the contract of parse_line on any input."""
    try:
        parsed = parse_line(text, line)
    except ObservationError as error:
        assert error.problem.strip()
        assert error.line == line and str(error).startswith(f'line {line}: ')
        return None
    Rules.default().classify(parsed.observation)
    return parsed


VALID_RECORDS = [
    {'stamp': '2026-05-01T01:12:00Z', 'source': 'diagnostic', 'name': 'base: left encoder',
     'hardware_id': 'wheel_left', 'level': 1, 'message': 'dropped 12 ticks',
     'values': {'ticks_dropped': '12'}},
    {'stamp': '2026-05-01T01:12:00Z', 'source': 'log', 'name': 'nav2_controller', 'level': 40,
     'msg': 'Failed to make progress', 'file': 'controller.cpp', 'function': 'run',
     'line': 212},
    {'stamp': '2026-05-01T01:12:00Z', 'source': 'telemetry', 'topic': '/battery_state',
     'type': 'sensor_msgs/msg/BatteryState', 'fields': {'percentage': 0.18, 'voltage': 11.1}},
]


@FUZZ
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300)))
def test_random_observation_lines(text):
    check_line(text)


@FUZZ
@given(st.sampled_from(VALID_RECORDS), st.dictionaries(
    st.sampled_from(['stamp', 'source', 'name', 'hardware_id', 'level', 'message', 'values',
                     'msg', 'file', 'function', 'line', 'topic', 'type', 'fields', 'extra']),
    values, max_size=3), st.lists(st.sampled_from(['stamp', 'source', 'name', 'level']),
                                  max_size=2), st.integers(min_value=0, max_value=40))
def test_mutated_observation_records(record, changes, removed, depth):
    data = dict(record)
    data.update(changes)
    for key in removed:
        data.pop(key, None)
    if data.get('source') == 'telemetry' and depth:
        data['fields'] = {'deep': deep(depth, float('nan'))}
    try:
        text = json.dumps(data, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        return
    parsed = check_line(text)
    if parsed is not None:
        for field in dataclasses.fields(parsed.observation):
            key, value = field.name, getattr(parsed.observation, field.name)
            if isinstance(value, str):
                assert len(value) <= MAX_STRING_CHARS, key
        fields = getattr(parsed.observation, 'fields', {})
        assert not any(isinstance(value, float) and not math.isfinite(value)
                       for value in _leaves(fields))


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


@FUZZ
@given(st.lists(st.one_of(st.text(max_size=80), st.sampled_from(
    [json.dumps(record) for record in VALID_RECORDS] + ['', '   ', '{}', '[]', 'NaN'])),
    max_size=30))
def test_a_stream_gives_one_outcome_per_line(lines):
    report = parse_lines(lines)
    meaningful = sum(1 for text in lines if text.strip())
    assert len(report.accepted) + len(report.refused) == meaningful
    for refusal in report.refused:
        assert refusal.message.strip() and 1 <= refusal.line <= len(lines)


def test_hostile_observations_are_refused_with_a_reason():
    base = VALID_RECORDS[0]
    cases = {
        'stamp': {**base, 'stamp': 'yesterday'},
        'level': {**base, 'level': 1e308},
        'source': {**base, 'source': '../../etc/passwd'},
        'hardware_id': {**base, 'hardware_id': ['wheel']},
        'extra': {**base, 'extra': 1},
    }
    for field, record in cases.items():
        try:
            parse_line(json.dumps(record), 3)
        except ObservationError as error:
            assert error.field == field and error.problem.strip()
        else:
            raise AssertionError(f'{field}: accepted {record}')
    deep_fields = dict(VALID_RECORDS[2], fields=deep(50, 1.0))
    try:
        parse_line(json.dumps(deep_fields), 4)
    except ObservationError as error:
        assert 'nested deeper than' in error.problem
    else:
        raise AssertionError('a 50-level telemetry message was accepted')
    long_message = dict(base, message='x' * 100_000, name='../../etc/passwd')
    parsed = parse_line(json.dumps(long_message), 5)
    assert len(parsed.observation.message) == MAX_STRING_CHARS
    assert any('truncated' in note for note in parsed.notes)


# --------------------------------------------------------------------------- rules

VALID_RULES = {
    'version': 1,
    'defaults': {'diagnostics': True, 'diagnostic_levels': [1, 2], 'logs': True,
                 'log_min_count': 2},
    'rules': [
        {'name': 'battery-low', 'source': 'telemetry', 'type': 'sensor_msgs/msg/BatteryState',
         'topic': '/battery*', 'when': 'percentage < 0.2', 'severity': 'warn',
         'tags': ['battery'], 'text': '{topic} {field} {op} {threshold} (was {value})'},
        {'name': 'encoder', 'source': 'diagnostic',
         'match': {'name': '*encoder*', 'levels': [1, 2]}, 'tags': ['wheel']},
        {'name': 'nav', 'source': 'log', 'match': {'node': 'nav2_*'}, 'min_count': 3},
    ],
}


def check_rules(data) -> None:
    try:
        rules = Rules.from_data(data, origin='fuzz.yaml')
    except RulesError as error:
        message = str(error)
        assert message.startswith('fuzz.yaml: ') and message[len('fuzz.yaml: '):].strip()
        return
    for record in VALID_RECORDS:
        rules.classify(parse_line(json.dumps(record)).observation)


def test_the_valid_rules_are_valid():
    assert len(Rules.from_data(VALID_RULES).spec.rules) == 3


@FUZZ
@given(values)
def test_random_rules_documents(data):
    check_rules(data)
    check_rules({'rules': data})
    check_rules({'rules': [data]})


@FUZZ
@given(st.integers(min_value=0, max_value=2), st.sampled_from(
    ['name', 'source', 'match', 'type', 'topic', 'when', 'severity', 'entry_type', 'tags',
     'signature', 'text', 'min_count', 'ignore', 'bogus']), values)
def test_mutated_rules(index, field, value):
    data = json.loads(json.dumps(VALID_RULES))
    data['rules'][index][field] = value
    check_rules(data)
    data = json.loads(json.dumps(VALID_RULES))
    data['defaults'][field] = value
    check_rules(data)
