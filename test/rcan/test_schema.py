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

"""Schema rules of RCAN §3: entry constraints, IDs, peer blocks, header."""

import datetime as dt
import json
import sys

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import core_schema
from pydantic_core import SchemaValidator
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan import schema
from robot_memory.rcan import schema_models
from robot_memory.rcan.schema import COLUMN_FIELDS
from robot_memory.rcan.schema import DocumentHeader
from robot_memory.rcan.schema import entries_from_columns
from robot_memory.rcan.schema import make_entry_id
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.schema import PeerBlock
from robot_memory.rcan.schema import PeerEntry
from robot_memory.rcan.schema import validate_entries_fast
from robot_memory.rcan.schema import validate_entries_json

T0 = dt.datetime(2026, 3, 28, 14, 0, tzinfo=UTC)


def entry(**changes):
    data = {'id': 'mem-a3f9c1d2', 'type': 'hardware_observation', 'text': 'Left wheel encoder',
            'confidence': 0.92, 'first_seen': T0, 'last_reinforced': T0, 'observation_count': 14,
            'tags': ['wheel']}
    data.update(changes)
    return MemoryEntry(**data)


def test_valid_entry_has_every_field():
    made = entry()
    assert made.confidence == 0.92 and made.observation_count == 14 and made.tags == ['wheel']


@pytest.mark.parametrize('changes, fragment', [
    ({'text': 'x' * 501}, 'at most 500'),
    ({'text': '   '}, 'blank'),
    ({'text': 'two\nlines'}, 'U+000A'),
    ({'text': 'bell\x07'}, 'U+0007'),
    ({'confidence': 1.01}, 'less than or equal to 1'),
    ({'confidence': -0.01}, 'greater than or equal to 0'),
    ({'confidence': float('nan')}, 'finite'),
    ({'observation_count': 0}, 'greater than or equal to 1'),
    ({'observation_count': 2.5}, 'whole number'),
    ({'type': 'rumour'}, "'hardware_observation'"),
    ({'tags': 'wheel'}, 'valid list'),
    ({'tags': ['']}, 'tag'),
    ({'id': '../../etc/passwd'}, 'pattern'),
    ({'id': ''}, 'pattern'),
    ({'first_seen': 'yesterday'}, 'datetime'),
])
def test_invalid_entries_are_refused_with_a_reason(changes, fragment):
    with pytest.raises(ValidationError) as caught:
        entry(**changes)
    assert fragment in str(caught.value)


def test_text_of_exactly_500_characters_is_allowed():
    assert len(entry(text='y' * 500).text) == 500


def test_the_four_entry_types_are_accepted():
    for kind in ('hardware_observation', 'environment_note', 'behavior_pattern', 'resolved'):
        assert entry(type=kind).type == kind


def test_naive_and_offset_times_become_utc():
    made = entry(first_seen='2026-03-28T16:00:00+02:00', last_reinforced='2026-03-28T14:00:00')
    assert made.first_seen == T0 and made.first_seen.tzinfo == UTC
    assert made.last_reinforced == T0


def test_unknown_entry_keys_are_kept():
    made = entry(severity='high')
    assert made.extras == {'severity': 'high'}


def test_id_is_mem_plus_sha256_prefix():
    import hashlib
    digest = hashlib.sha256('hardware_observation:Left wheel'.encode()).hexdigest()
    assert make_entry_id('hardware_observation', 'Left wheel') == 'mem-' + digest[:8]


def test_id_is_lengthened_on_collision():
    first = make_entry_id('environment_note', 'door')
    second = make_entry_id('environment_note', 'door', taken={first})
    assert second.startswith(first) and len(second) == len(first) + 2
    third = make_entry_id('environment_note', 'door', taken={first, second})
    assert third not in (first, second) and third.startswith(first)


def test_id_is_stable_once_assigned():
    made = new_entry('environment_note', 'Kitchen doorway lip', 0.4, T0)
    edited = made.model_copy(update={'text': 'Kitchen doorway has a 3cm lip'})
    assert edited.id == made.id


def test_peer_entries_may_omit_timing_fields():
    peer = PeerEntry(id='mem-peer-b1c2', type='environment_note', text='corridor blocked',
                     confidence=0.75, tags=['navigation', 'peer'])
    assert peer.last_reinforced is None and peer.observation_count is None


def test_peer_block_needs_a_valid_rrn():
    with pytest.raises(ValidationError):
        PeerBlock(rrn='RRN 5; rm -rf', last_synced=T0)


def test_header_accepts_unquoted_version_and_refuses_future_major():
    assert DocumentHeader(schema_version=1.0, rrn='RRN-1', last_updated=T0).schema_version == '1.0'
    with pytest.raises(ValidationError) as caught:
        DocumentHeader(schema_version='2.0', rrn='RRN-1', last_updated=T0)
    assert 'not supported' in str(caught.value)


# ------------------------------------------------- the fast list validator (loading)
#
# schema.validate_entries_fast may only say yes where MemoryEntry says yes, and must then
# build exactly what MemoryEntry builds; everything else falls back to MemoryEntry.

RAW = {'id': 'mem-a3f9c1d2', 'type': 'hardware_observation', 'text': 'Left wheel encoder',
       'confidence': 0.92, 'first_seen': '2026-03-28T14:00:00Z',
       'last_reinforced': '2026-04-01T02:00:00.000001Z', 'observation_count': 14,
       'tags': ['wheel', 'encoder']}


def slow(raw):
    """Return what MemoryEntry makes of ``raw``, or None when it refuses it."""
    try:
        return MemoryEntry.model_validate(raw)
    except ValidationError:
        return None


def assert_identical(fast, slow_entry):
    assert type(fast) is MemoryEntry and slow_entry is not None
    assert fast == slow_entry
    for name in ('__dict__', '__pydantic_extra__', '__pydantic_fields_set__',
                 '__pydantic_private__'):
        assert getattr(fast, name) == getattr(slow_entry, name), name
    for name, value in fast.__dict__.items():
        assert type(value) is type(slow_entry.__dict__[name]), name
    assert list(fast.__pydantic_extra__) == list(slow_entry.__pydantic_extra__)
    for name in ('first_seen', 'last_reinforced'):
        assert getattr(fast, name).tzinfo is getattr(slow_entry, name).tzinfo is UTC


def test_the_fast_validator_is_on_for_the_model_as_it_is():
    # Off (None) would mean MemoryEntry changed and _build_fast_entries must follow it.
    assert schema_models._fast_entries() is not None
    [fast] = validate_entries_fast([RAW])
    assert_identical(fast, slow(RAW))


def test_the_fast_validator_switches_off_when_the_model_gains_a_validator(monkeypatch):
    changed = dict(MemoryEntry.__pydantic_core_schema__)
    changed['schema'] = dict(changed['schema'], fields=dict(changed['schema']['fields']))
    field = dict(changed['schema']['fields']['confidence'])
    field['schema'] = {'type': 'function-after', 'schema': field['schema'],
                       'function': {'type': 'no-info', 'function': lambda value: value}}
    changed['schema']['fields']['confidence'] = field
    monkeypatch.setattr(MemoryEntry, '__pydantic_core_schema__', changed)
    assert schema_models._build_fast_entries() is None


def test_space_ranges_are_exactly_what_strip_removes_from_printable_text():
    listed = {code for low, high in schema.SPACE_RANGES for code in range(low, high + 1)}
    stripped = {code for code in range(sys.maxunicode + 1)
                if chr(code).isspace() and not schema._UNSAFE_CHARS.search(chr(code))}
    assert listed == stripped


def _code_points():
    # Every BMP code point (all the classes live there) and a spread of the others.
    yield from range(0x10000)
    yield from range(0x10000, sys.maxunicode + 1, 251)
    yield from (0x1FFFE, 0x1FFFF, 0xE0001, 0xEFFFF, 0x10FFFE, 0x10FFFF)


def _refuses(check, value) -> bool:
    try:
        return check(value) != value
    except ValueError:
        return True


def test_text_and_tag_patterns_classify_every_character_like_the_model():
    text = SchemaValidator(core_schema.str_schema(pattern=schema.FAST_TEXT_PATTERN))
    tag = SchemaValidator(core_schema.str_schema(pattern=schema.FAST_TAG_PATTERN))
    check_text = MemoryEntry._text_is_printable
    check_tag = schema.clean_tags
    disagree = []
    for code in _code_points():
        char = chr(code)
        for candidate in (char, 'a' + char, char + 'b', 'a' + char + 'b'):
            if text.isinstance_python(candidate) == _refuses(check_text, candidate):
                disagree.append(('text', hex(code), candidate))
            tag_fast = tag.isinstance_python(candidate)
            if tag_fast == _refuses(lambda value: check_tag([value])[0], candidate):
                disagree.append(('tag', hex(code), candidate))
    assert disagree == []


@pytest.mark.parametrize('changes', [
    {'first_seen': '0001-01-01T00:00:00Z'}, {'first_seen': '9999-12-31T23:59:59.999999Z'},
    {'first_seen': '2024-02-29T12:00:00Z'}, {'tags': []}, {'tags': ['ünïcödé', 'a b']},
    {'text': 'x' * 500}, {'text': ' padded text '}, {'text': '≤ — 🔴\u00a0ok'},
    {'confidence': 0}, {'confidence': 1}, {'confidence': '0.5'}, {'confidence': True},
    {'tags': ('wheel',)},
    {'observation_count': 2 ** 80},
    {'severity': 'high', 'seen_by': [{'at': None}]},
])
def test_the_fast_validator_builds_what_the_model_builds(changes):
    raw = dict(RAW, **changes)
    [fast] = validate_entries_fast([raw])
    assert_identical(fast, slow(raw))


def test_the_fast_validator_leaves_a_missing_tags_field_unset_like_the_model():
    raw = {key: value for key, value in RAW.items() if key != 'tags'}
    [fast] = validate_entries_fast([raw])
    assert_identical(fast, slow(raw))
    assert 'tags' not in fast.model_fields_set


@pytest.mark.parametrize('changes', [
    # Refused by the model too.
    {'text': ''}, {'text': '   '}, {'text': '\u3000\u00a0'}, {'text': 'bell\x07'},
    {'text': 'x' * 501}, {'text': 'a\u2028b'}, {'text': 'lone \ud800'}, {'tags': ['']},
    {'tags': [' ']}, {'tags': ['x' * 65]}, {'tags': ['t'] * 33}, {'tags': 'wheel'},
    {'tags': ['a\x00']}, {'confidence': 1.01}, {'confidence': float('nan')},
    {'observation_count': 0}, {'observation_count': 2.5},
    {'observation_count': True}, {'type': 'rumour'}, {'id': '../x'}, {'id': 5},
    {'first_seen': '2026-02-30T00:00:00Z'}, {'first_seen': '2026-03-28T24:00:00Z'},
    {'first_seen': 'yesterday'}, {'first_seen': None}, {'observation_count': None},
    # Accepted by the model, but changed by it (stripped, converted): left to the model.
    {'tags': [' wheel']}, {'tags': ['wheel\u00a0']},
    {'first_seen': '2026-03-28T16:00:00+02:00'}, {'first_seen': '2026-03-28T14:00:00'},
    {'first_seen': '2026-03-28T14:00:00.5Z'}, {'first_seen': '2026-03-28 14:00:00Z'},
    {'first_seen': '2026-03-28T14:00:00z'}, {'first_seen': 1774706400},
    {'first_seen': dt.datetime(2026, 3, 28, 14, 0, tzinfo=UTC)},
    {'first_seen': '２０２６-03-28T14:00:00Z'}, {'observation_count': 3.0},
    {'observation_count': '3'},
])
def test_the_fast_validator_says_no_and_leaves_the_answer_to_the_model(changes):
    raw = dict(RAW, **changes)
    assert validate_entries_fast([raw]) is None
    assert validate_entries_fast([RAW, raw, RAW]) is None


# Values of every kind for every field: valid ones, ones the model refuses and ones it
# accepts only after changing them.
_texts = st.one_of(
    st.text(max_size=12),
    st.text(st.sampled_from(' \t\n\r\x00\x07\x85\xa0\u1680\u2000\u200b\u2028\u202f\u3000'
                            '\ufeff\ufffe\ud800xé≤—🔴'), max_size=6),
    st.sampled_from(['x' * 500, 'x' * 501, ' x', 'x ', 'ok']),
)
_times = st.one_of(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31),
                 timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=2))])
                 ).map(lambda value: value.isoformat().replace('+00:00', 'Z')),
    st.from_regex(r'[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?[Zz]?',
                  fullmatch=True),
    st.datetimes(timezones=st.none() | st.just(UTC)), st.integers(-10 ** 10, 10 ** 10),
    st.sampled_from(['', 'now', None, '2026-04-01T02:00:00Z']),
)
_fields = {
    'id': st.one_of(st.from_regex(r'[A-Za-z0-9][A-Za-z0-9_.:-]{0,8}', fullmatch=True),
                    st.text(max_size=5), st.integers()),
    'type': st.one_of(st.sampled_from(schema.ENTRY_TYPES), st.text(max_size=4)),
    'text': _texts,
    'confidence': st.one_of(st.floats(), st.integers(-2, 2), st.booleans(),
                            st.sampled_from(['0.5', '5e-1', 'high', None])),
    'tags': st.one_of(st.lists(_texts, max_size=4), st.lists(st.just('t'), min_size=30,
                                                             max_size=34),
                      st.tuples(st.just('t')), st.just('tag'), st.none()),
    'first_seen': _times,
    'last_reinforced': _times,
    'observation_count': st.one_of(st.integers(-2, 2 ** 70), st.floats(0, 5), st.booleans(),
                                   st.sampled_from(['4', None])),
    'severity': st.one_of(st.none(), st.integers(), st.text(max_size=3),
                          st.lists(st.floats(), max_size=2)),
}
_raw_entries = st.one_of(
    st.fixed_dictionaries({}, optional=_fields),  # anything, fields missing
    st.fixed_dictionaries({}, optional=_fields).map(lambda change: dict(RAW, **change)),
    # One field changed: about half of these are valid.
    st.one_of([st.fixed_dictionaries({name: values}) for name, values in _fields.items()])
    .map(lambda change: dict(RAW, **change)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_raw_entries, min_size=1, max_size=3))
def test_fast_and_model_validation_agree_on_any_entries(items):
    fast = validate_entries_fast(items)
    slow_entries = [slow(item) for item in items]
    if fast is not None:
        assert len(fast) == len(items)
        for fast_entry, slow_entry in zip(fast, slow_entries):
            assert_identical(fast_entry, slow_entry)
    # Whatever the fast validator says, all-valid input is what it must mostly accept.
    if all(entry is not None for entry in slow_entries) and all(
            entry.tags == list(item.get('tags', [])) and isinstance(item.get('tags', []), list)
            and all(isinstance(item[name], str) and item[name].endswith('Z')
                    and '+' not in item[name] and ' ' not in item[name]
                    and (len(item[name]) in (20, 27)) and item[name].isascii()
                    for name in ('first_seen', 'last_reinforced'))
            and type(item['observation_count']) is int
            for entry, item in zip(slow_entries, items)):
        assert fast is not None


# The two bulk readers of memory_file (a column per field; JSON checked in one pass) keep
# validate_entries_fast's contract: a list only where MemoryEntry builds the same entries.

def columns_of(items):
    """One list per field of COLUMN_FIELDS, or None when an item has other keys."""
    if any(set(item) != set(COLUMN_FIELDS) for item in items):
        return None
    return [[item[name] for item in items] for name in COLUMN_FIELDS]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_raw_entries, min_size=1, max_size=3))
def test_column_and_json_readers_agree_with_the_model_on_any_entries(items):
    slow_entries = [slow(item) for item in items]
    columns = columns_of(items)
    for checked in (False, True):
        if columns is None or (checked and not all(
                isinstance(value, str) and not schema._UNSAFE_CHARS.search(value)
                for item in items for value in [item['text'], *(
                    item['tags'] if isinstance(item['tags'], list) else [])])):
            continue
        by_columns = entries_from_columns(columns_of(items), len(items), strings_checked=checked)
        if by_columns is not None:
            for entry, slow_entry in zip(by_columns, slow_entries):
                assert_identical(entry, slow_entry)
    try:
        data = json.dumps(items, allow_nan=True).encode('utf-8')
    except (TypeError, ValueError):
        return
    by_json = validate_entries_json(data, sum(map(len, items)))
    if by_json is not None:
        for entry, slow_entry in zip(by_json, slow_entries):
            assert_identical(entry, slow_entry)


def test_the_column_reader_accepts_what_the_writer_writes_and_frees_the_columns():
    items = [RAW, dict(RAW, id='mem-2', tags=[], confidence=1, text='x — ≤')]
    columns = columns_of(items)
    entries = entries_from_columns(columns, 2)
    assert columns == []
    for entry, item in zip(entries, items):
        assert_identical(entry, slow(item))
    assert entries_from_columns(columns_of(items), 3) is None  # a column too short
    assert entries_from_columns(columns_of([dict(RAW, text='bell\x07')]), 1) is None


def test_the_json_reader_refuses_what_yaml_reads_otherwise():
    one = json.dumps([RAW])
    assert validate_entries_json(one.encode(), 8) is not None
    assert validate_entries_json(one.encode(), 9) is None  # a pair too few: a duplicate key
    for extra in ('1e5', 'NaN', '[0.5]'):  # a string to YAML 1.1, or a float kept as it is
        data = one[:-2] + f', "severity": {extra}' + '}]'
        assert validate_entries_json(data.encode(), 9) is None
    assert validate_entries_json((one[:-2] + ', "severity": 5}]').encode(), 9) is not None


# The bulk checks stand in for pydantic's validators of MemoryEntry, PeerEntry, PeerBlock and
# DocumentHeader without building them (a reading command never does); a changed model
# switches them off, and whatever they accept is built exactly as the model builds it.

def test_the_bulk_checks_are_on_for_the_models_as_they_are():
    assert schema_models._columns_fit_the_model() and schema_models._peer_entries_fit_the_model()
    # What a read-only load checks without the models (header_fields, peer_block_fields).
    assert schema_models._header_fits() and schema_models._peer_block_fits()


def test_the_column_reader_switches_off_when_the_model_gains_a_validator():
    from pydantic import field_validator

    class Changed(MemoryEntry):

        @field_validator('confidence')
        @classmethod
        def _rounded(cls, value):
            return round(value, 1)

    assert not schema_models._columns_fit_the_model(Changed)


def test_reading_a_file_builds_no_pydantic_validator(tmp_path):
    """A writer's file with peers is read without building a validator or scanning plugins."""
    import subprocess
    from robot_memory.rcan.memory_file import render
    from robot_memory.rcan.schema import MemoryDocument
    document = MemoryDocument(
        rrn='RRN-000000000001', last_updated=T0,
        entries=[new_entry('hardware_observation', 'Left wheel encoder', 0.9, T0, ['wheel'])],
        peer_context=[PeerBlock(rrn='RRN-000000000002', last_synced=T0, entries=[
            PeerEntry(id='mem-p1', type='environment_note', text='Wet floor', confidence=0.7,
                      tags=['floor'])])])
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(render(document))
    script = (
        'import datetime as dt, sys\n'
        'from robot_memory.rcan.memory_file import MemoryFile\n'
        'from robot_memory.rcan import context, lifecycle, schema\n'
        'now = dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc)\n'
        'result = MemoryFile(sys.argv[1]).load(now)\n'
        'assert not result.problems and len(result.document.peer_context[0].entries) == 1\n'
        'context.build_context(result.document, now, lifecycle.DEFAULT_CONFIG)\n'
        'from pydantic.plugin import _loader\n'
        'built = [model.__name__ for model in (schema.MemoryEntry, schema.PeerEntry,\n'
        '         schema.PeerBlock, schema.DocumentHeader, lifecycle.LifecycleConfig)\n'
        '         if model.__pydantic_complete__]\n'
        'print(built, _loader._plugins)\n')
    run = subprocess.run([sys.executable, '-c', script, str(path)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == '[] None'


def _validated_alike(model, check, values):
    """Return what ``model`` makes of ``values``, or None when both it and ``check`` refuse."""
    try:
        return model.model_validate(values)
    except ValidationError as error:
        with pytest.raises(ValidationError) as caught:
            check(values)
        assert caught.value.errors(include_context=False) == error.errors(include_context=False)
        return None


@pytest.mark.parametrize('values', [
    {'schema_version': '1.0', 'rrn': 'RRN-000000000001', 'last_updated': '2026-04-01T03:00:00Z'},
    {'schema_version': ' 1 ', 'rrn': 'RRN-1', 'last_updated': '2026-04-01T03:00:00.000001Z'},
    {'schema_version': 1.0, 'rrn': 'RRN-1', 'last_updated': '2026-04-01T03:00:00Z'},
    {'schema_version': '1.0', 'rrn': 'RRN-1', 'last_updated': '2026-04-01T03:00:00+02:00'},
    {'schema_version': '1.0', 'rrn': 'RRN-1', 'last_updated': T0},
    {'schema_version': '2.0', 'rrn': 'RRN-1', 'last_updated': '2026-04-01T03:00:00Z'},
    {'schema_version': '1.0', 'rrn': 'RRN-1\n', 'last_updated': '2026-04-01T03:00:00Z'},
    {'schema_version': '1.0', 'rrn': 'RRN 1', 'last_updated': '2026-04-01T03:00:00Z'},
    {'schema_version': '1.0', 'rrn': 5, 'last_updated': '2026-04-01T03:00:00Z'},
    {'schema_version': '1.0', 'rrn': 'RRN-1', 'last_updated': '2026-02-30T03:00:00Z'},
    {'schema_version': '1.0', 'rrn': 'RRN-1', 'last_updated': '2026-04-01T03:00:00z'},
    {'schema_version': None, 'rrn': None, 'last_updated': None},
])
def test_the_header_check_agrees_with_the_model(values):
    expected = _validated_alike(DocumentHeader, schema.document_header, values)
    if expected is None:
        return
    made = schema.document_header(values)
    assert made == expected and made.__pydantic_fields_set__ == expected.__pydantic_fields_set__
    assert made.last_updated.tzinfo is expected.last_updated.tzinfo


_peer_headers = st.fixed_dictionaries({}, optional={
    'rrn': st.one_of(st.sampled_from(['RRN-000000000002', 'RRN 2', 'RRN-2\n', '']),
                     st.integers()),
    'last_synced': _times, 'entries': st.just([]), 'note': st.integers()})
_peer_fields = {name: values for name, values in _fields.items()
                if name in ('id', 'type', 'text', 'confidence', 'tags')}
_raw_peer_entries = st.one_of(
    st.fixed_dictionaries(_peer_fields),  # the writer's keys, any values
    st.fixed_dictionaries({}, optional=_fields),
    st.one_of([st.fixed_dictionaries({name: values}) for name, values in _peer_fields.items()])
    .map(lambda change: dict({key: RAW[key] for key in _peer_fields}, **change)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_peer_headers, st.lists(_raw_peer_entries, min_size=1, max_size=3))
def test_peer_checks_agree_with_the_models_on_anything(header, items):
    expected = _validated_alike(PeerBlock, schema.peer_block_header, header)
    if expected is not None:
        made = schema.peer_block_header(header)
        for name in ('__dict__', '__pydantic_extra__', '__pydantic_fields_set__',
                     '__pydantic_private__'):
            assert getattr(made, name) == getattr(expected, name), name
        assert made.last_synced.tzinfo is expected.last_synced.tzinfo
    fast = schema.peer_entries_fast(items)
    if fast is None:
        return
    for made, item in zip(fast, items):
        expected = PeerEntry.model_validate(item)  # raises if the fast check said yes wrongly
        assert type(made) is PeerEntry
        for name in ('__dict__', '__pydantic_extra__', '__pydantic_fields_set__',
                     '__pydantic_private__'):
            assert getattr(made, name) == getattr(expected, name), name
        for name, value in made.__dict__.items():
            assert type(value) is type(expected.__dict__[name]), name


@pytest.mark.parametrize('position', [0, 1, 2])
def test_a_nan_confidence_anywhere_is_left_to_the_models(position):
    # min() and max() skip a NaN that is not first: the fast checks took [0.5, nan] as valid.
    items = [{'id': f'mem-p{index}', 'type': 'environment_note', 'text': 'Wet floor',
              'confidence': float('nan') if index == position else 0.5, 'tags': []}
             for index in range(3)]
    assert schema.peer_entries_fast(items) is None
    with pytest.raises(ValidationError, match='finite number'):
        PeerEntry.model_validate(items[position])


def test_the_peer_check_takes_what_the_writer_writes():
    items = [{'id': 'mem-p1', 'type': 'environment_note', 'text': 'Wet floor — ≤', 'confidence': 1,
              'tags': ['floor']}]
    [made] = schema.peer_entries_fast(items)
    assert made == PeerEntry.model_validate(items[0]) and type(made.confidence) is float
    assert schema.peer_entries_fast([dict(items[0], text='bell\x07')]) is None
    assert schema.peer_entries_fast([dict(items[0], first_seen='2026-04-01T00:00:00Z')]) is None


@pytest.mark.parametrize('stamp', ['0001-01-01T00:00:00+02:00', '9999-12-31T23:59:59-02:00'])
def test_a_time_out_of_range_in_utc_is_refused_not_a_crash(stamp):
    # Found by hypothesis: astimezone raised OverflowError, which pydantic does not turn into
    # a validation error, so a hostile memory file or peer payload stopped the reader.
    with pytest.raises(ValidationError, match='out of range in UTC'):
        PeerBlock.model_validate({'rrn': 'RRN-000000000002', 'last_synced': stamp,
                                  'entries': []})
