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
Rules of the one reader and writer of robot-memory.md (RCAN §3 and §8).

The spec's own example loads; ``---`` inside text is not a delimiter; one bad entry is
quarantined while the rest survive; legacy files migrate losing no text; nothing the
file holds (peer_context, body, unknown keys) is dropped on save; unreadable files are
never overwritten; writes are atomic, fsynced, locked and mode 0600; saving never
changes a confidence.
"""

import dataclasses
import datetime as dt
import errno
import json
import os
import stat
import threading

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import yaml

from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.errors import MemoryLockTimeout
from robot_memory.rcan import line_reader
from robot_memory.rcan import memory_file
from robot_memory.rcan import parse
from robot_memory.rcan import reader_fast
from robot_memory.rcan import reader_yaml
from robot_memory.rcan import schema
from robot_memory.rcan import writer
from robot_memory.rcan import yaml_rules
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.memory_file import FILE_MODE
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import new_entry
from support.paths import REPO
from support.samples import SPEC_EXAMPLE

T_UPDATED = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
HEADER = ['---', 'schema_version: "1.0"', 'rrn: RRN-000000000001',
          'last_updated: 2026-04-01T02:00:00Z', 'entries:']


def yaml_entry(index, confidence='0.5', text=None, entry_id=None):
    """Seven lines of a block-style YAML entry, as a person would write it."""
    return [f'  - id: {entry_id or f"mem-{index:04d}"}',
            '    type: environment_note',
            f'    text: "{text or f"note {index}"}"',
            f'    confidence: {confidence}',
            '    first_seen: 2026-03-28T14:00:00Z',
            '    last_reinforced: 2026-04-01T02:00:00Z',
            '    observation_count: 1']


def file_bytes(lines, body='\nbody\n'):
    return ('\n'.join(lines) + '\n---\n' + body).encode('utf-8')


# ------------------------------------------------------------------ the spec's example

def test_the_spec_example_loads_with_every_field_right(now):
    result = parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now)
    assert result.problems == [] and result.quarantined == []
    document = result.document
    assert document.schema_version == '1.0'
    assert document.rrn == 'RRN-000000000001'
    assert document.last_updated == T_UPDATED
    [entry] = document.entries
    assert entry.id == 'mem-a3f9c1d2'
    assert entry.type == 'hardware_observation'
    assert entry.text == ('Left wheel encoder intermittent under sustained load — '
                          'prefer speeds ≤0.3m/s')
    assert entry.confidence == 0.92
    assert entry.first_seen == dt.datetime(2026, 3, 28, 14, 0, tzinfo=UTC)
    assert entry.last_reinforced == T_UPDATED
    assert entry.observation_count == 14
    assert entry.tags == ['wheel', 'encoder', 'navigation']
    assert entry.extras == {}
    assert document.peer_context is None and document.extra == {} and document.body == b''


def test_the_shipped_example_file_loads_cleanly(now):
    result = MemoryFile(REPO / 'examples' / 'robot-memory.md').load(now)
    assert result.problems == []
    assert len(result.document.entries) == 4
    assert result.document.peer_context[0].rrn == 'RRN-000000000005'


# ----------------------------------------------------------------- '---' inside text

@pytest.mark.parametrize('text', ['Kitchen doorway has 3cm lip --- slow down', ' --- ',
                                  '---', '--- leading', 'trailing ---', '...'])
def test_text_containing_three_dashes_loads_and_round_trips(text, now, memory_path):
    escaped = text.replace('"', '\\"')
    data = file_bytes(HEADER + yaml_entry(1, text=escaped) + yaml_entry(2))
    result = parse_bytes(data, now)
    assert result.problems == []
    assert [entry.text for entry in result.document.entries] == [text, 'note 2']
    assert result.document.body == b'\nbody\n'
    rendered = render(result.document)
    again = parse_bytes(rendered, now)
    assert again.used_fast_path
    assert [entry.text for entry in again.document.entries] == [text, 'note 2']
    assert again.document.body == b'\nbody\n'


def test_an_indented_dash_line_inside_a_quoted_multiline_text_is_not_a_delimiter(now):
    lines = HEADER + ['  - id: mem-0001', '    type: environment_note',
                      '    text: "Kitchen doorway', '      ---', '      has a lip"',
                      '    confidence: 0.5', '    first_seen: 2026-03-28T14:00:00Z',
                      '    last_reinforced: 2026-04-01T02:00:00Z', '    observation_count: 1']
    result = parse_bytes(file_bytes(lines), now)
    assert result.problems == []
    assert result.document.entries[0].text == 'Kitchen doorway --- has a lip'
    assert result.document.body == b'\nbody\n'


# ------------------------------------------------------- one bad entry among good ones

def test_one_bad_entry_among_ten_good_ones_is_quarantined_and_the_ten_survive(now, memory_path):
    lines = list(HEADER)
    for index in range(11):
        lines += yaml_entry(index, confidence='1.5' if index == 6 else '0.5')
    memory_path.write_bytes(file_bytes(lines))
    memory = MemoryFile(memory_path)
    result = memory.load(now)
    assert [entry.id for entry in result.document.entries] == [
        f'mem-{index:04d}' for index in range(11) if index != 6]
    [problem] = result.problems
    bad_line = lines.index('  - id: mem-0006') + 1
    assert problem.line == bad_line
    assert 'entries[6]' in problem.message and 'confidence' in problem.message
    assert problem.format(memory_path) == f'{memory_path}:{bad_line}: {problem.message}'
    assert not memory_file.side_file(memory_path, '.quarantine.jsonl').exists()

    with memory.update(now) as update:
        assert len(update.document.entries) == 10
    records = memory_file.side_file(memory_path, '.quarantine.jsonl').read_text().splitlines()
    [record] = [json.loads(line) for line in records]
    assert record['section'] == 'entries' and record['line'] == bad_line
    assert record['raw']['id'] == 'mem-0006' and record['raw']['confidence'] == 1.5
    assert 'less than or equal to 1' in record['reason']
    reloaded = memory.load(now)
    assert reloaded.problems == [] and len(reloaded.document.entries) == 10


@pytest.mark.parametrize('stamp, words', [
    ('2026-13-20T09:12:00Z', 'month value is outside'),
    ('2026-02-30T09:12:00Z', 'day value is outside'),
    ('2026-03-20T25:12:00Z', 'valid datetime'),
    ('2026-02-30', 'day value is outside'),
    ('"2026-13-20T09:12:00Z"', 'month value is outside')])
def test_a_date_that_does_not_exist_quarantines_its_entry_only(now, memory_path, stamp, words):
    # YAML reads the form as a timestamp and PyYAML's constructor then raised a bare
    # "month must be in 1..12" that stopped every tool and memory_node. Now the entry is
    # refused with the field and the line, like any other hand-made mistake.
    lines = list(HEADER)
    for index in range(3):
        lines += yaml_entry(index)
    bad = lines.index('  - id: mem-0001')
    lines[bad + 4] = f'    first_seen: {stamp}'
    memory_path.write_bytes(file_bytes(lines))
    memory = MemoryFile(memory_path)
    result = memory.load(now)
    assert [entry.id for entry in result.document.entries] == ['mem-0000', 'mem-0002']
    [problem] = result.problems
    assert problem.line == bad + 1 and 'entries[1]' in problem.message
    assert 'first_seen' in problem.message and words in problem.message, problem.message
    with memory.update(now):
        pass
    [record] = memory_file.side_file(memory_path, '.quarantine.jsonl').read_text().splitlines()
    assert json.loads(record)['raw']['first_seen'] == stamp.strip('"')


def test_a_top_level_date_that_does_not_exist_is_refused_naming_the_field(now, memory_path):
    lines = [line.replace('2026-04-01T02', '2026-04-31T02') for line in HEADER] + yaml_entry(0)
    memory_path.write_bytes(file_bytes(lines))
    with pytest.raises(MemoryFileError, match='last_updated: .*day value is outside'):
        MemoryFile(memory_path).load(now)


def test_a_bad_entry_in_the_canonical_form_is_reported_on_its_own_line(now):
    entries = [new_entry('environment_note', f'note {index}', 0.5, now) for index in range(5)]
    document = parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now).document
    document.entries = entries
    lines = render(document).decode('utf-8').split('\n')
    bad_index = lines.index(f'  - id: "{entries[3].id}"')
    assert lines[bad_index + 3] == '    confidence: 0.5'
    lines[bad_index + 3] = '    confidence: "high"'
    result = parse_bytes('\n'.join(lines).encode('utf-8'), now)
    assert result.used_fast_path
    assert len(result.document.entries) == 4
    [problem] = result.problems
    assert problem.line == bad_index + 1 and 'entries[3]' in problem.message


def test_duplicate_ids_keep_the_first_and_quarantine_the_later_ones(now, memory_path):
    lines = HEADER + yaml_entry(1, entry_id='mem-same', text='first') + yaml_entry(2) + \
        yaml_entry(3, entry_id='mem-same', text='second')
    memory_path.write_bytes(file_bytes(lines))
    memory = MemoryFile(memory_path)
    result = memory.load(now)
    assert [(entry.id, entry.text) for entry in result.document.entries] == [
        ('mem-same', 'first'), ('mem-0002', 'note 2')]
    [problem] = result.problems
    assert 'duplicate id mem-same' in problem.message
    assert problem.line == len(HEADER) + 15
    with memory.update(now):
        pass
    quarantine = memory_file.side_file(memory_path, '.quarantine.jsonl').read_text()
    assert json.loads(quarantine)['raw']['text'] == 'second'


# ----------------------------------------------------------------------- legacy files

LEGACY = (b'# What Bob learned\n\nSome prose about the robot.\n'
          b'- Left wheel encoder slips on carpet\n* prefer slow speed near the stairs\n'
          b'1. Kitchen is dark at night\n\n'
          b'A closing remark in K\xc3\xbcche \xe2\x80\x94 with\ttab.\r\n')


def test_a_free_form_legacy_file_is_migrated_losing_no_text(now, memory_path):
    memory_path.write_bytes(LEGACY)
    memory = MemoryFile(memory_path)
    with memory.update(now, rrn='RRN-000000000007') as result:
        assert 'no schema_version' in result.problems[0].message
    archive = memory_file.side_file(memory_path, '.legacy-20260401T030000Z')
    assert archive.read_bytes() == LEGACY
    assert stat.S_IMODE(archive.stat().st_mode) == FILE_MODE
    migrated = memory.load(now)
    assert migrated.problems == []
    document = migrated.document
    assert document.rrn == 'RRN-000000000007'
    assert [entry.text for entry in document.entries] == [
        'Left wheel encoder slips on carpet', 'prefer slow speed near the stairs',
        'Kitchen is dark at night']
    assert all(entry.tags == ['migrated'] and entry.observation_count == 1
               for entry in document.entries)
    assert LEGACY in document.body


def test_a_legacy_file_without_bullets_keeps_its_lines_as_entries(now):
    data = b'# Notes\nThe dock is behind the sofa.\nThe lidar drifts when warm.\n'
    result = parse_bytes(data, now)
    assert [entry.text for entry in result.document.entries] == [
        'The dock is behind the sofa.', 'The lidar drifts when warm.']
    assert result.document.entries[1].type == 'hardware_observation'
    assert data in result.document.body and result.legacy_original == data


def test_front_matter_without_schema_version_is_legacy_too(now, memory_path):
    data = b'---\ntitle: notes\nrrn: RRN-000000000042\n---\n- The ramp is steep\n'
    memory_path.write_bytes(data)
    with MemoryFile(memory_path).update(now):
        pass
    document = MemoryFile(memory_path).load(now).document
    assert document.rrn == 'RRN-000000000042'
    assert [entry.text for entry in document.entries] == ['The ramp is steep']
    assert data in document.body
    assert memory_file.side_file(memory_path, '.legacy-20260401T030000Z').read_bytes() == data


# ------------------------------------------------------------------ nothing is dropped

RICH = """---
schema_version: "1.0"
rrn: RRN-000000000001
last_updated: 2026-04-01T02:00:00Z
fleet: warehouse-7
entries:
  - id: mem-a3f9c1d2
    type: hardware_observation
    text: "Left wheel encoder intermittent"
    confidence: 0.92
    first_seen: 2026-03-28T14:00:00Z
    last_reinforced: 2026-04-01T02:00:00Z
    observation_count: 14
    tags: [wheel]
    severity: high
    source: {topic: /diagnostics, count: 3}
peer_context:
  - rrn: RRN-000000000005
    last_synced: 2026-04-01T01:00:00Z
    site: north
    entries:
      - id: mem-peer-b1c2
        type: environment_note
        text: "Alex reports east corridor blocked by construction barrier"
        confidence: 0.75
        tags: [navigation, peer]
        reporter: alex
operator_notes:
  - check wheels monthly
  - {owner: ops, ticket: 42}
---
"""
ODD_BODY = (b'\r\n# Notes \xe2\x80\x94 kept verbatim\r\n\r\ntrailing spaces   \r\n'
            b'\xff\xfe not UTF-8 \x00\x01\r\n---\r\nlooks like a delimiter\n\tno final newline')


def test_peer_context_body_and_unknown_keys_survive_a_write(now, memory_path):
    memory_path.write_bytes(RICH.encode('utf-8') + ODD_BODY)
    memory = MemoryFile(memory_path)
    with memory.update(now) as result:
        assert result.problems == []
        result.document.entries.append(new_entry('environment_note', 'new', 0.4, now))
    document = memory.load(now).document
    assert document.body == ODD_BODY
    assert memory_path.read_bytes().endswith(b'\n---\n' + ODD_BODY)
    assert document.extra == {'fleet': 'warehouse-7',
                              'operator_notes': ['check wheels monthly',
                                                 {'owner': 'ops', 'ticket': 42}]}
    assert list(document.extra) == ['fleet', 'operator_notes']
    own = document.entries[0]
    assert own.extras == {'severity': 'high', 'source': {'topic': '/diagnostics', 'count': 3}}
    [block] = document.peer_context
    assert block.rrn == 'RRN-000000000005'
    assert block.last_synced == dt.datetime(2026, 4, 1, 1, 0, tzinfo=UTC)
    assert block.__pydantic_extra__ == {'site': 'north'}
    [peer] = block.entries
    assert (peer.id, peer.text, peer.confidence, peer.tags) == (
        'mem-peer-b1c2', 'Alex reports east corridor blocked by construction barrier', 0.75,
        ['navigation', 'peer'])
    assert peer.extras == {'reporter': 'alex'}
    assert peer.last_reinforced is None and peer.observation_count is None
    assert [entry.text for entry in document.entries] == ['Left wheel encoder intermittent',
                                                          'new']


def test_unknown_top_level_keys_keep_the_canonical_form(now, memory_path):
    memory_path.write_bytes(RICH.encode('utf-8'))
    memory = MemoryFile(memory_path)
    with memory.update(now) as result:
        result.document.extra['on_call'] = 'ops'
    written = memory_path.read_text(encoding='utf-8')
    assert '\nfleet: "warehouse-7"\n' in written and '\non_call: "ops"\n' in written
    assert memory.load(now).used_fast_path


def test_a_yaml_keyword_as_top_level_key_keeps_the_meaning_libyaml_gives_it(now):
    text = SPEC_EXAMPLE[:-4] + 'on: 1\nyes_sir: 2\n---\n'
    document = parse_bytes(text.encode('utf-8'), now).document
    assert document.extra == {True: 1, 'yes_sir': 2}
    assert parse_bytes(render(document), now).document.extra == {True: 1, 'yes_sir': 2}
    document.extra = {'on': 1}
    again = parse_bytes(render(document), now)
    assert again.document.extra == {'on': 1}


def test_an_empty_peer_context_stays_and_an_absent_one_stays_absent(now):
    with_empty = SPEC_EXAMPLE[:-4] + 'peer_context: []\n---\n'
    assert parse_bytes(render(parse_bytes(with_empty.encode(), now).document),
                       now).document.peer_context == []
    assert parse_bytes(render(parse_bytes(SPEC_EXAMPLE.encode(), now).document),
                       now).document.peer_context is None


def test_bom_and_crlf_files_load(now):
    data = b'\xef\xbb\xbf' + SPEC_EXAMPLE.replace('\n', '\r\n').encode('utf-8') + b'body\r\n'
    result = parse_bytes(data, now)
    assert result.problems == []
    [entry] = result.document.entries
    assert entry.text.endswith('prefer speeds ≤0.3m/s') and entry.tags[-1] == 'navigation'
    assert result.document.body == b'body\r\n'
    again = parse_bytes(render(result.document), now).document
    assert again.entries == result.document.entries and again.body == b'body\r\n'


def _split_by_lines(data: bytes):
    """Return the front matter split as it was done before the regex: line by line."""
    if data.startswith(b'\xef\xbb\xbf'):
        data = data[3:]
    first_end = data.find(b'\n')
    first = data if first_end < 0 else data[:first_end]
    if first.rstrip(b' \t\r') != b'---':
        return None
    start = first_end + 1 if first_end >= 0 else len(data)
    position = start
    while position < len(data):
        end = data.find(b'\n', position)
        line_end = len(data) if end < 0 else end
        if data[position:line_end].rstrip(b' \t\r') in (b'---', b'...'):
            return data[start:position], 2, data[len(data) if end < 0 else end + 1:]
        position = line_end + 1
    return 'never closed'


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b'---', b'...', b'--- ', b'---\t', b'---\r', b'...\r ',
                                 b' ---', b'----', b'-- -', b'x', b'', b'- {"a": "---"}',
                                 b'\xef\xbb\xbf---', b'\r', b'a: ...']), max_size=8),
       st.sampled_from([b'\n', b'\r\n']), st.booleans())
def test_the_front_matter_is_split_where_the_first_delimiter_line_is(lines, newline, ending):
    data = newline.join(lines) + (newline if ending else b'')
    try:
        found = reader_fast.split_front_matter(data)
    except MemoryFileError as error:
        assert 'never closed' in str(error)
        found = 'never closed'
    assert found == _split_by_lines(data)


@pytest.mark.parametrize('front', [
    'schema_version: "1.0"\nnote: \u00a0\n',  # libyaml: the string '\xa0', not null
    'schema_version: "1.0"\n\u3000\nnote: 1\n',  # libyaml: not YAML at all
    'schema_version: "1.0"\nentries:\n\n- {"id": "x"}\n',
    'schema_version: "1.0"\nnote: 1\n- {"id": "x"}\n',
])
def test_the_fast_path_reads_unicode_blanks_as_libyaml_does_or_leaves_them_to_it(front):
    fast = reader_fast.fast_front_matter(front, 2)
    if fast is not None:
        assert fast[0] == yaml.load(front, Loader=yaml.CSafeLoader)


def test_the_garbage_collector_is_paused_while_parsing_and_left_as_it_was(now):
    import gc
    seen = []
    real = parse._parse_bytes

    def watching(*args):
        seen.append(gc.isenabled())
        return real(*args)
    assert gc.isenabled()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parse, '_parse_bytes', watching)
        parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now)
        assert gc.isenabled()
        with pytest.raises(MemoryFileError):
            parse_bytes(b'---\nentries: [\n---\n', now)
        assert gc.isenabled()
        gc.disable()
        try:
            parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now)
            assert not gc.isenabled()  # not switched on behind the caller's back
        finally:
            gc.enable()
    assert seen == [False, False, False]


def _entry_block_by_flow(entry) -> str:
    """Return the entry block as _flow writes each value (the writer before its shortcuts)."""
    flow, iso = writer._flow, memory_file.format_iso
    lines = [f'  - id: {flow(entry.id)}', f'    type: {flow(entry.type)}',
             f'    text: {flow(entry.text)}', f'    confidence: {flow(entry.confidence)}',
             f'    first_seen: "{iso(entry.first_seen)}"',
             f'    last_reinforced: "{iso(entry.last_reinforced)}"',
             f'    observation_count: {entry.observation_count}',
             f'    tags: [{", ".join(flow(tag) for tag in entry.tags)}]']
    lines += [f'    {key}: {flow(value)}' for key, value in entry.extras.items()]
    return ''.join(line + '\n' for line in lines)


@pytest.mark.parametrize('text, tags', [
    ('plain', []), ('say "hi" \\ ≤ — 🔴', ['a: b', '#x', '\\U']), ('x', ['\\ud800']),
    ('tab\there', []), ('ok', ['bell\x07']), ('ok', ['a', 'line\u2028sep']), ('\ufeffbom', []),
    ('ok', ['\x85']), ('\\ud83d', ['ok']), ('new\nline', ['cr\r']),
])
@pytest.mark.parametrize('when', [
    dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC), dt.datetime(2026, 4, 1, 2, 0, 0, 7, tzinfo=UTC),
    dt.datetime(2026, 4, 1, 4, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
])
def test_the_entry_writer_refuses_and_writes_exactly_what_flow_does(text, tags, when):
    # model_construct: strings the schema would refuse, as a bug elsewhere could make them.
    entry = MemoryEntry.model_construct(
        id='mem-1', type='resolved', text=text, confidence=0.25, first_seen=when,
        last_reinforced=when, observation_count=3, tags=tags)
    try:
        expected = _entry_block_by_flow(entry)
    except writer._NotCanonical:
        with pytest.raises(writer._NotCanonical):
            writer._entry_block(entry)
    else:
        assert writer._entry_block(entry) == expected


@pytest.mark.parametrize('change', ['one', 'several', 'swap_and_one', 'many', 'moved'])
def test_a_dream_that_replaces_a_few_entries_rewrites_only_their_lines(change, now):
    entries = [new_entry('environment_note', f'note {index} ≤ —', 0.5, now, tags=['t'])
               for index in range(64)]
    document = parse_bytes(SPEC_EXAMPLE.encode('utf-8'), now).document
    document.entries = entries
    data = render(document)
    # A person's edit the writer would not make: kept as it is while the entry is unchanged.
    edited = data.replace(b'    confidence: 0.5\n', b'    confidence: 5.0e-1\n', 1)
    loaded = parse_bytes(edited, now).document
    assert loaded.entries[0].confidence == 0.5
    targets = {'one': [5], 'several': [1, 9, 40, 63], 'swap_and_one': [7],
               'many': range(0, 64, 3), 'moved': [3]}[change]
    for index in targets:
        loaded.entries[index] = loaded.entries[index].model_copy(update={'confidence': 0.75})
    if change == 'swap_and_one':
        loaded.entries[10], loaded.entries[11] = loaded.entries[11], loaded.entries[10]
    if change == 'moved':  # the hand-edited entry moves: its line moves with it
        loaded.entries[0], loaded.entries[20] = loaded.entries[20], loaded.entries[0]
    written = render(loaded)
    fresh = render(dataclasses.replace(loaded, entries=list(loaded.entries)))
    assert parse_bytes(written, now).document.entries == loaded.entries
    kept_edit = change not in ('many',) or 0 not in targets
    assert (b'confidence: 5.0e-1' in written) == kept_edit
    assert written.replace(b'5.0e-1', b'0.5') == fresh


def _code_points():
    yield from range(0xD800)
    yield from range(0xE000, 0x10000)
    yield from range(0x10000, 0x110000, 97)
    yield from (0x10FFFE, 0x10FFFF)


def test_the_utf8_scan_finds_exactly_what_the_text_scan_finds():
    disagree = []
    for code in _code_points():
        text = f'a{chr(code)}b'
        if yaml_rules.yaml_unsafe_utf8(text.encode('utf-8')) != yaml_rules.yaml_unsafe(text):
            disagree.append(hex(code))
    for text in ('\\ud800', '\\uDBFF', '\\udc00', '\\u00e9', '\\U0001F600', '\\\\u', 'u\\',
                 '\\n', '"\\""', '\r\n', '\t'):
        if yaml_rules.yaml_unsafe_utf8(text.encode('utf-8')) != yaml_rules.yaml_unsafe(text):
            disagree.append(text)
    assert disagree == []


# Characters whose UTF-8 bytes the scan keeps (lead bytes C2, E2, EF and continuation
# bytes 80-9F, A8, A9, BB, BE, BF): side by side, the bytes it keeps of harmless ones can
# look like an unsafe sequence (° then ā keeps C2 81), which must not count.
_SCAN_ALPHABET = ('a', ' ', '\n', '°', 'ā', '—', '…', '©', 'é', '€', '≤', 'ﻻ', '\u2028',
                  '\u2029', '\x85', '\x9f', '\ufeff', '\ufffe', '\uffff', '\uffbf', '\t',
                  '\x7f', '\\', 'u', 'U', 'd', '8', '\U0001f600', '\u0100', '\u2008',
                  '\u0128', '\uf82b', '\u013b', '\u013f')


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_SCAN_ALPHABET), max_size=12).map(''.join))
def test_the_utf8_scan_agrees_with_the_text_scan_on_any_mixture(text):
    assert yaml_rules.yaml_unsafe_utf8(text.encode('utf-8')) == yaml_rules.yaml_unsafe(text)


def test_the_utf8_scan_is_not_fooled_by_bytes_it_keeps_of_harmless_characters():
    # Kept: C2 81; E2 80 A8; EF BB BF.
    for text in ('°ā', '°a\u0100', '\u2026\u0128', '\uf82b\u013b\u013f'):
        assert not yaml_rules.yaml_unsafe_utf8(text.encode('utf-8')), text


_PLAIN_SCALARS = ['0', '-0', '12', '-12', '0.75', '-0.0', '1.0e+5', '1.0e5', '1e5', '1E+5',
                  '-Infinity', '1.5', '1.10', '10000000000000000000000', '0.1e-3', '5.0e-1',
                  'rrn', 'yes', 'No', 'null', 'NULL', 'on', 'Off', 'true', 'abc_1', '_x', 'y',
                  'n', '00', '012', '1_0', '0x1f', '0b11', '1:30', '.5', '-.inf', '2026-04-01',
                  '1.', '-', '+1', '~', '<<', '=']


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(_PLAIN_SCALARS) | st.from_regex(
    r'-?[0-9_]{1,4}(\.[0-9_]{0,3})?([eE][-+]?[0-9]{1,3})?|[A-Za-z_][A-Za-z0-9_]{0,5}',
    fullmatch=True))
def test_a_plain_scalar_of_the_line_reader_is_what_libyaml_reads(value):
    """Words and JSON numbers are read without libyaml's resolvers: they must agree."""
    try:
        got = line_reader.plain_scalar(value, {})
    except line_reader.NotSimple:
        return
    expected = yaml.load(f'key: {value}', Loader=yaml.CSafeLoader)['key']
    assert got == expected and type(got) is type(expected), (value, got, expected)


def test_a_canonical_crlf_file_is_read_fast_and_written_back_with_plain_newlines(now):
    document = parse_bytes(RICH.encode('utf-8'), now).document
    data = render(document)
    front, _, body = reader_fast.split_front_matter(data)
    crlf = b'---\r\n' + front.replace(b'\n', b'\r\n') + b'---\r\n' + body
    result = parse_bytes(crlf, now)
    assert result.used_fast_path and result.problems == []
    assert render(result.document) == data
    result.document.entries.append(new_entry('environment_note', 'new', 0.5, now))
    assert render(result.document).startswith(data[:data.index(b'\npeer_context')])


# ---------------------------------------------------------------- unreadable files

CORRUPT = {
    'bad YAML': (b'---\nschema_version: "1.0"\nrrn: RRN-1\nlast_updated: a: b\nentries: []\n'
                 b'---\n', 4, 'not valid YAML'),
    'unclosed front matter': (b'---\nschema_version: "1.0"\nrrn: RRN-1\nentries: []\n', 1,
                              'never closed'),
    'bad UTF-8': (b'---\nschema_version: "1.0"\nrrn: RRN-1\nlast_updated: 2026-04-01T02:00:00Z\n'
                  b'entries: []\nnote: "caf\xe9"\n---\n', 6, 'UTF-8'),
    'wrong schema_version': (b'---\nschema_version: "2.0"\nrrn: RRN-1\n'
                             b'last_updated: 2026-04-01T02:00:00Z\nentries: []\n---\n', 2,
                             'not supported'),
    'not a mapping': (b'---\n- just\n- a list\n---\n', 2, 'mapping'),
    'missing rrn': (b'---\nschema_version: "1.0"\nlast_updated: 2026-04-01T02:00:00Z\n'
                    b'entries: []\n---\n', None, 'rrn'),
}


@pytest.mark.parametrize('name', list(CORRUPT))
def test_an_unparseable_file_raises_naming_the_line_and_is_never_overwritten(name, now,
                                                                             memory_path):
    data, line, fragment = CORRUPT[name]
    memory_path.write_bytes(data)
    memory = MemoryFile(memory_path)
    with pytest.raises(MemoryFileError) as loaded:
        memory.load(now)
    if line is not None:
        assert loaded.value.line == line
        assert f'{memory_path}:{line}: ' in str(loaded.value)
    assert fragment in loaded.value.problem
    with pytest.raises(MemoryFileError) as updated:
        with memory.update(now) as result:
            result.document.entries.append(new_entry('environment_note', 'x', 0.5, now))
    assert 'left untouched' in str(updated.value)
    assert memory_path.read_bytes() == data
    assert sorted(path.name for path in memory_path.parent.iterdir()) == [
        'robot-memory.md', 'robot-memory.md.lock']


@pytest.mark.parametrize('name', list(CORRUPT))
def test_an_unparseable_file_is_set_aside_when_asked(name, now, memory_path):
    data = CORRUPT[name][0]
    memory_path.write_bytes(data)
    memory = MemoryFile(memory_path)
    with memory.update(now, rrn='RRN-000000000001', on_corrupt='set_aside') as result:
        assert 'set aside as robot-memory.md.corrupt-20260401T030000Z' in (
            result.problems[0].message)
        result.document.entries.append(new_entry('environment_note', 'fresh', 0.5, now))
    kept = memory_file.side_file(memory_path, '.corrupt-20260401T030000Z')
    assert kept.read_bytes() == data
    fresh = memory.load(now)
    assert fresh.problems == [] and [entry.text for entry in fresh.document.entries] == ['fresh']


def test_setting_aside_twice_at_the_same_moment_never_overwrites(now, memory_path):
    memory = MemoryFile(memory_path)
    for data in CORRUPT['bad YAML'][0], CORRUPT['bad UTF-8'][0]:
        memory_path.write_bytes(data)
        with memory.update(now, on_corrupt='set_aside'):
            pass
    first = memory_file.side_file(memory_path, '.corrupt-20260401T030000Z')
    second = memory_file.side_file(memory_path, '.corrupt-20260401T030000Z-2')
    assert first.read_bytes() == CORRUPT['bad YAML'][0]
    assert second.read_bytes() == CORRUPT['bad UTF-8'][0]


# ------------------------------------------------------------------------ write safety

def test_a_written_file_is_mode_0600(now, memory_path):
    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    os.chmod(memory_path, 0o644)
    old_umask = os.umask(0)
    try:
        with MemoryFile(memory_path).update(now) as result:
            result.document.entries.append(new_entry('environment_note', 'x', 0.5, now))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(memory_path.stat().st_mode) == 0o600


def test_a_new_file_and_its_quarantine_are_mode_0600(now, tmp_path):
    path = tmp_path / 'new' / 'robot-memory.md'
    with MemoryFile(path).update(now, rrn='RRN-000000000001'):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_bytes(file_bytes(HEADER + yaml_entry(1, confidence='7')))
    with MemoryFile(path).update(now):
        pass
    quarantine = memory_file.side_file(path, '.quarantine.jsonl')
    assert stat.S_IMODE(quarantine.stat().st_mode) == 0o600


def _short_writes(monkeypatch, most=7):
    """os.write that writes at most ``most`` bytes a call, as on a nearly full disk."""
    real_write = os.write
    calls = []

    def short(fd, data):
        calls.append(len(data))
        return real_write(fd, bytes(data[:most]))
    monkeypatch.setattr(memory_file.os, 'write', short)
    return calls


def test_an_append_is_completed_when_the_disk_writes_only_part_of_it(tmp_path, monkeypatch):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    archive.write_bytes(b'{"old": 1}\n')
    calls = _short_writes(monkeypatch)
    records = [{'entry': f'mem-{index}', 'text': 'wheel ≤0.3m/s'} for index in range(5)]
    memory_file.append_durably(archive, records)
    assert len(calls) > 10
    lines = archive.read_text('utf-8').splitlines()
    assert [json.loads(line) for line in lines] == [{'old': 1}] + records


@pytest.mark.parametrize('error', [errno.ENOSPC, errno.EIO])
def test_a_failed_append_leaves_the_side_file_as_it_was_and_raises(tmp_path, monkeypatch,
                                                                   error):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    archive.write_bytes(b'{"old": 1}\n')
    real_write = os.write
    calls = []

    def write_then_fail(fd, data):
        calls.append(len(data))
        if len(calls) > 2:  # two short writes got through, then the disk is full
            raise OSError(error, os.strerror(error))
        return real_write(fd, bytes(data[:10]))
    monkeypatch.setattr(memory_file.os, 'write', write_then_fail)
    with pytest.raises(MemoryFileError) as caught:
        memory_file.append_durably(archive, [{'entry': 'mem-1'}, {'entry': 'mem-2'}])
    assert 'nothing was changed in the memory file' in str(caught.value)
    assert ('disk is full' in str(caught.value)) == (error == errno.ENOSPC)
    assert archive.read_bytes() == b'{"old": 1}\n'  # no torn line left behind


def test_a_write_that_makes_no_progress_is_an_error_not_a_loop(tmp_path, monkeypatch):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    monkeypatch.setattr(memory_file.os, 'write', lambda fd, data: 0)
    with pytest.raises(MemoryFileError):
        memory_file.append_durably(archive, [{'entry': 'mem-1'}])
    assert archive.read_bytes() == b''


def test_an_append_after_a_torn_last_line_starts_on_a_line_of_its_own(tmp_path):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    archive.write_bytes(b'{"old": 1}\n{"torn": ')
    memory_file.append_durably(archive, [{'entry': 'mem-1'}])
    assert archive.read_bytes().splitlines()[-1] == b'{"entry": "mem-1"}'


def test_entries_stay_in_the_memory_file_when_archiving_them_fails(now, memory_path,
                                                                   monkeypatch):
    from robot_memory.dream.archive import archive_pruned
    from robot_memory.rcan.lifecycle import effective_confidence as effective

    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    memory = MemoryFile(memory_path)
    archive = memory_file.side_file(memory_path, '.archive.jsonl')
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data[:5]))
    before = memory_path.read_bytes()

    class Pruned:

        def __init__(self, entry):
            self.entry, self.effective_confidence = entry, effective(entry, now)
    with pytest.raises(MemoryFileError):
        with memory.update(now) as result:
            pruned = [Pruned(entry) for entry in result.document.entries]
            monkeypatch.setattr(memory_file.os, 'write', full_disk)
            archive_pruned(memory, pruned, now)  # raises: the removal below never runs
            result.document.entries = []
    assert memory_path.read_bytes() == before
    assert not archive.exists() or archive.read_bytes() == b''


def test_writes_fsync_the_file_before_the_rename_and_the_directory_after(now, memory_path,
                                                                         monkeypatch):
    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    before = memory_path.read_bytes()
    synced = []
    real_fsync = os.fsync

    def counting_fsync(fd):
        info = os.fstat(fd)
        synced.append((stat.S_ISDIR(info.st_mode), info.st_ino, memory_path.read_bytes()))
        real_fsync(fd)

    monkeypatch.setattr(memory_file.os, 'fsync', counting_fsync)
    with MemoryFile(memory_path).update(now) as result:
        result.document.entries.append(new_entry('environment_note', 'x', 0.5, now))
    after = memory_path.read_bytes()
    assert after != before
    assert len(synced) == 2
    (file_is_dir, file_inode, seen_at_file_sync), (dir_is_dir, dir_inode, seen_at_dir_sync) = synced
    assert not file_is_dir and file_inode == memory_path.stat().st_ino
    assert seen_at_file_sync == before
    assert dir_is_dir and dir_inode == memory_path.parent.stat().st_ino
    assert seen_at_dir_sync == after


def test_an_unchanged_document_is_not_rewritten(now, memory_path):
    memory = MemoryFile(memory_path)
    with memory.update(now, rrn='RRN-000000000001'):
        pass
    inode = memory_path.stat().st_ino
    with memory.update(now + dt.timedelta(days=3)):
        pass
    assert memory_path.stat().st_ino == inode
    assert memory.load(now).document.last_updated == now


def test_a_second_writer_waits_for_the_lock(now, memory_path):
    first = MemoryFile(memory_path, lock_timeout_s=30)
    second = MemoryFile(memory_path, lock_timeout_s=30)
    with first.update(now, rrn='RRN-000000000001') as result:
        result.document.entries.append(new_entry('environment_note', 'first', 0.5, now))

    entered = threading.Event()
    errors = []

    def second_writer():
        try:
            with second.update(now) as update:
                entered.set()
                update.document.entries.append(new_entry('environment_note', 'second', 0.5,
                                                         now))
        except Exception as error:  # reported to the main thread below
            errors.append(error)

    with first.lock():
        thread = threading.Thread(target=second_writer)
        thread.start()
        assert not entered.wait(0.3) and thread.is_alive()
    thread.join(30)
    assert errors == [] and entered.is_set()
    texts = [entry.text for entry in first.load(now).document.entries]
    assert texts == ['first', 'second']


def test_a_writer_gives_up_with_a_message_after_the_lock_timeout(now, memory_path):
    holder = MemoryFile(memory_path)
    waiter = MemoryFile(memory_path, lock_timeout_s=0.05)
    with holder.lock():
        with pytest.raises(MemoryLockTimeout) as caught:
            with waiter.update(now, rrn='RRN-000000000001'):
                pass
    message = str(caught.value)
    assert 'robot-memory.md.lock' in message and '0.05 s' in message
    assert 'another writer' in message and 'retry' in message
    assert isinstance(caught.value, MemoryFileError)
    assert not memory_path.exists()


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
