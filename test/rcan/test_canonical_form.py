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
The canonical form of robot-memory.md: plain YAML, read a column at a time, never drifting.

It means what libyaml reads, and saving never changes a confidence.
"""

import datetime as dt
import json

import pytest
import yaml

from robot_memory.errors import MemoryFileError
from robot_memory.rcan import memory_file
from robot_memory.rcan import parse
from robot_memory.rcan import reader_fast
from robot_memory.rcan import reader_yaml
from robot_memory.rcan import schema
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import new_entry
from support.samples import RICH
from support.samples import SPEC_EXAMPLE


# ------------------------------------------------------------------- canonical form


def test_the_canonical_form_is_plain_yaml_with_the_same_meaning(now):
    document = parse_bytes(RICH.encode('utf-8'), now).document
    document.entries.append(new_entry('behavior_pattern', 'Say "hi" — then: go {fast}?', 0.3,
                                      now, tags=['a: b', '#x']))
    data = render(document)
    front, _, _ = reader_fast.split_front_matter(data)
    front_text = front.decode('utf-8')
    plain = yaml.safe_load(front_text)
    fast, _, _ = reader_fast.fast_front_matter(front_text, 2)
    assert plain == fast
    assert plain['schema_version'] == '1.0' and plain['rrn'] == 'RRN-000000000001'
    assert plain['fleet'] == 'warehouse-7'
    assert plain['last_updated'] == '2026-04-01T02:00:00Z'
    for raw, entry in zip(plain['entries'], document.entries):
        assert raw['id'] == entry.id and raw['text'] == entry.text
        assert raw['confidence'] == entry.confidence and raw['tags'] == entry.tags
        assert raw['observation_count'] == entry.observation_count
        assert memory_file.format_iso(entry.last_reinforced) == raw['last_reinforced']
    assert plain['entries'][0]['severity'] == 'high'
    assert plain['peer_context'][0]['entries'][0]['reporter'] == 'alex'
    assert all(line.startswith('- {') for line in front_text.splitlines()
               if line.startswith('-'))


@pytest.mark.parametrize('number, meaning', [
    ('0.92', 0.92), ('9.2e-1', 0.92), ('9.2E-1', 0.92), ('92e-2', '92e-2'), ('1e0', '1e0'),
])
def test_a_hand_edited_canonical_line_means_what_libyaml_reads(number, meaning, now):
    # YAML 1.1 (libyaml) reads 92e-2 as a string, not a float; the fast path must agree.
    document = parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now).document
    document.entries = [entry.model_copy() for entry in document.entries]  # written anew
    data = render(document).replace(b'confidence: 0.92', b'confidence: ' + number.encode())
    front = reader_fast.split_front_matter(data)[0].decode('utf-8')
    fast = reader_fast.fast_front_matter(front, 2)
    assert fast is not None
    assert fast[0] == reader_yaml.yaml_front_matter(front, 2)
    raw = fast[0]['entries'][0]['confidence']
    assert raw == meaning and type(raw) is type(meaning)
    # A numeric string is then taken as the number it spells (lax validation).
    assert parse_bytes(data, now).document.entries[0].confidence == float(number)


def test_saving_never_changes_a_confidence_over_many_cycles(now, memory_path):
    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    memory = MemoryFile(memory_path)
    with memory.update(now) as result:
        result.document.entries.append(new_entry('environment_note', 'odd', 0.1 + 0.2, now))
        result.document.entries.append(new_entry('environment_note', 'tiny', 5e-324, now))
    expected = [(entry.id, entry.confidence, entry.last_reinforced)
                for entry in memory.load(now).document.entries]
    for cycle in range(40):
        at = now + dt.timedelta(days=cycle, hours=cycle)
        with memory.update(at) as result:
            # Something else changes each time, so the file really is rewritten.
            result.document.extra['cycle'] = cycle
        loaded = memory.load(at).document
        assert [(e.id, e.confidence, e.last_reinforced) for e in loaded.entries] == expected
    decayed = memory.load(at).document.entries[0]
    assert decayed.confidence == 0.92
    assert effective_confidence(decayed, at) == 0.0


def test_a_document_written_through_the_yaml_fallback_keeps_its_confidences(now, memory_path):
    text = SPEC_EXAMPLE[:-4] + 'seen_by:\n  2026-04-01: [bob]\n---\n'
    memory_path.write_bytes(text.encode('utf-8'))
    memory = MemoryFile(memory_path)
    for cycle in range(5):
        with memory.update(now + dt.timedelta(days=cycle)) as result:
            result.document.extra['cycle'] = cycle
        loaded = memory.load(now).document
        assert not memory.load(now).used_fast_path
        assert loaded.entries[0].confidence == 0.92
        assert loaded.extra['seen_by'] == {dt.date(2026, 4, 1): ['bob']}


@pytest.mark.parametrize('line', [
    '    text: "note", "confidence": 0.9',  # a second pair smuggled into a value
    '    text: "note", "zz": 1',
    '    text: "note\\\\", "id": "mem-evil"',
    '    source: {"a": 1',  # an unclosed mapping taking in the next line's pair
])
def test_a_block_line_holding_more_than_its_value_is_read_as_libyaml_reads_it(line, now):
    document = parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now).document
    document.entries = [new_entry('environment_note', 'note', 0.5, now),
                        new_entry('environment_note', 'other', 0.5, now)]
    lines = render(document).decode('utf-8').split('\n')
    at = lines.index('    text: "note"')
    lines[at] = line
    if line.startswith('    source'):
        lines[at + 1] += '}'
    data = '\n'.join(lines).encode('utf-8')
    front = reader_fast.split_front_matter(data)[0]
    assert reader_fast.fast_front_matter(front, 2) is None
    with pytest.raises(MemoryFileError, match='not valid YAML'):
        parse_bytes(data, now)


# ------------------------------------------------------- entries read a column at a time

COLUMN_ENTRY = ('  - id: "mem-{index}"\n    type: "environment_note"\n    text: {text}\n'
                '    confidence: {confidence}\n    first_seen: "2026-03-28T14:00:00Z"\n'
                '    last_reinforced: "2026-04-01T02:00:00Z"\n    observation_count: 3\n'
                '    tags: {tags}\n')


def column_file(*fields) -> bytes:
    """Return a file of entries in the writer's eight-line shape, one per (text, conf., tags)."""
    entries = ''.join(COLUMN_ENTRY.format(index=index, text=text, confidence=confidence,
                                          tags=tags)
                      for index, (text, confidence, tags) in enumerate(fields))
    return ('---\nschema_version: "1.0"\nrrn: "RRN-000000000001"\n'
            'last_updated: "2026-04-01T02:00:00Z"\nentries:\n' + entries + '---\n'
            ).encode('utf-8')


def outcome(data, now):
    """(entries as data, quarantined count) that parse_bytes reads, or the error it raises."""
    try:
        result = parse_bytes(data, now)
    except MemoryFileError as error:
        return error.problem
    return [entry.model_dump() for entry in result.document.entries], len(result.quarantined)


def read_by_libyaml(data, now):
    """``outcome`` with both faster readers off."""
    from unittest import mock
    with mock.patch.object(parse, 'fast_front_matter', return_value=None), \
            mock.patch.object(parse, 'line_front_matter', return_value=None):
        return outcome(data, now)


@pytest.mark.parametrize('fields', [
    [('"plain"', '0.5', '["a"]'), ('"b: \\"c\\" — ≤"', '1', '[]')],
    [('"a", "x": 1', '0.5', '[]'), ('"b"', '0.5', '["t"]')],  # a pair smuggled into a value
    [('"a', '0.5', '[]'), ('b"', '0.5', '[]')],  # a string spilling into the next entry
    [('"a"', '0.5', '["a"'), ('"b"', '0.5', '"b"]')],  # a list spilling over
    [('"a"', '0.5', '["a"], ["b"]'), ('"b"', '0.5', '[]')],
    [('"a"', '5e-1', '[]'), ('"b"', 'NaN', '[]'), ('1e5', '0.5', '[]')],
    [('"bell \\u0007"', '0.5', '[]'), ('"ok"', '0.5', '[" spaced"]')],
    [('"a"', '0.5', '[]  # a comment'), ('"b"', '0.5', '[]')],
])
def test_entries_read_by_columns_mean_what_libyaml_reads(fields, now):
    data = column_file(*fields)
    assert outcome(data, now) == read_by_libyaml(data, now)


def full_outcome(data, now):
    """``outcome`` with the unknown top-level keys and the problems, line numbers included."""
    try:
        result = parse_bytes(data, now)
    except MemoryFileError as error:
        return error.problem, error.line
    return ([entry.model_dump() for entry in result.document.entries], result.document.extra,
            result.document.peer_context, [(p.message, p.line) for p in result.problems])


def full_outcome_by_libyaml(data, now):
    """``full_outcome`` with both faster readers off."""
    from unittest import mock
    with mock.patch.object(parse, 'fast_front_matter', return_value=None), \
            mock.patch.object(parse, 'line_front_matter', return_value=None):
        return full_outcome(data, now)


ITEM = COLUMN_ENTRY.format(index=9, text='"x"', confidence='0.5', tags='[]')


@pytest.mark.parametrize('after', [
    'peer_context:\n  - rrn: "RRN-000000000002"\n    last_synced: "2026-04-01T00:00:00Z"\n'
    '    entries: []\n  - rrn: "bad rrn"\n    last_synced: "2026-04-01T00:00:00Z"\n',
    '# a comment\nextra: 1\nmore: [1, 2]\n',
    'tasks:\n' + ITEM,  # another list of items with ids: its last one is not an entry
    'tasks:\n' + ITEM + 'rrn: "RRN-000000000003"\n',  # and a duplicate key after it
    '  - id: "mem-9"\n    type: "resolved"\nextra: 2\n',  # an entry of two lines
    ITEM + 'extra: 3\n',  # a duplicate id
    ITEM.replace('    tags: []\n', '') + 'peer_context: []\n',  # an entry of seven lines
    ITEM.replace('\n', '\n\n', 1) + 'extra: 4\n',  # a blank line in an entry
])
def test_what_follows_the_entries_is_read_as_libyaml_reads_it(after, now):
    # The fast reader does not scan the entries' lines for top-level keys when they have
    # the writer's shape: whatever comes after them keeps its meaning and its line numbers.
    data = column_file(('"one"', '0.5', '["a"]'), ('"two"', '0.25', '[]'))
    data = data[:-len(b'---\n')] + after.encode('utf-8') + b'---\n'
    assert full_outcome(data, now) == full_outcome_by_libyaml(data, now)


def test_a_writer_shaped_file_is_read_by_columns_and_kept_as_a_view_of_the_file(now):
    data = column_file(('"one"', '0.5', '["a"]'), ('"two"', '0.25', '[]'))
    with mock_columns() as calls:
        document = parse_bytes(data, now).document
    assert calls == [2]
    source = document._source_lines
    assert isinstance(source.block, memoryview) and source.block.obj is data
    assert render(document) == data
    document.entries[1] = document.entries[1].model_copy(update={'confidence': 0.3})
    assert render(document) == data.replace(b'confidence: 0.25', b'confidence: 0.3')


def mock_columns():
    """Within: the counts of entries read by schema.entries_from_columns (a list)."""
    import contextlib
    from unittest import mock

    @contextlib.contextmanager
    def recording():
        calls = []
        real = reader_fast.entries_from_columns

        def spy(columns, count, **options):
            calls.append(count)
            return real(columns, count, **options)
        with mock.patch.object(reader_fast, 'entries_from_columns', spy):
            yield calls
    return recording()


def test_peer_blocks_are_written_in_block_style_like_the_entries_and_read_fast(now):
    document = parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now).document
    document.entries = [entry.model_copy() for entry in document.entries]  # written anew
    document.peer_context = [schema.PeerBlock(
        rrn='RRN-000000000005', last_synced=now, fleet='north',
        entries=[schema.PeerEntry(id='mem-peer-1', type='environment_note',
                                  text='East corridor: blocked', confidence=0.75,
                                  tags=['corridor'])]),
        schema.PeerBlock(rrn='RRN-000000000006', last_synced=now)]
    data = render(document)
    front = reader_fast.split_front_matter(data)[0].decode('utf-8')
    assert front.split('peer_context:\n')[1] == (
        '  - rrn: "RRN-000000000005"\n    last_synced: "2026-04-01T03:00:00Z"\n'
        '    fleet: "north"\n    entries:\n      - id: "mem-peer-1"\n'
        '        type: "environment_note"\n        text: "East corridor: blocked"\n'
        '        confidence: 0.75\n        tags: ["corridor"]\n'
        '  - rrn: "RRN-000000000006"\n    last_synced: "2026-04-01T03:00:00Z"\n'
        '    entries: []\n')
    assert not any(line.lstrip().startswith('- {') for line in front.splitlines())
    result = parse_bytes(data, now)
    assert result.used_fast_path and result.problems == []
    assert result.document.peer_context == document.peer_context
    assert reader_fast.fast_front_matter(front, 2)[0] == yaml.safe_load(front)
    assert render(result.document) == data


def test_a_duplicate_read_in_bulk_is_quarantined_as_it_was_written(now):
    for second in ('0.5', '"0.5"'):  # read by columns / in one pydantic-core pass
        data = column_file(('"first"', '0.5', '[]'), ('"second"', second, '[]')).replace(
            b'"mem-1"', b'"mem-0"')
        result = parse_bytes(data, now)
        assert [entry.text for entry in result.document.entries] == ['first']
        [item] = result.quarantined
        assert item.raw == {'id': 'mem-0', 'type': 'environment_note', 'text': 'second',
                            'confidence': json.loads(second),
                            'first_seen': '2026-03-28T14:00:00Z',
                            'last_reinforced': '2026-04-01T02:00:00Z',
                            'observation_count': 3, 'tags': []}
        assert outcome(data, now) == read_by_libyaml(data, now)
