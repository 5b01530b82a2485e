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
import json
import stat

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import yaml

from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.rcan import line_reader
from robot_memory.rcan import memory_file
from robot_memory.rcan import parse
from robot_memory.rcan import reader_fast
from robot_memory.rcan import writer
from robot_memory.rcan import yaml_rules
from robot_memory.rcan.memory_file import FILE_MODE
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import new_entry
from support.paths import REPO
from support.samples import file_bytes
from support.samples import HEADER
from support.samples import RICH
from support.samples import SPEC_EXAMPLE
from support.samples import yaml_entry

T_UPDATED = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
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
