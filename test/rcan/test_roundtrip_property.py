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
Property tests of the one reader and the one writer of robot-memory.md.

(a) Any valid MemoryDocument survives ``parse_bytes(render(doc))`` unchanged, and a
    second render is byte-for-byte the first one.
(b) The JSON fast path of the reader means exactly what libyaml reads: for every
    rendered document the values agree, and parsing with the fast path disabled
    gives the same document.
(c) load -> save -> load of the spec example is the identity over 50 cycles and never
    changes a stored confidence (decay is applied at read time only).

Hypothesis runs are bounded (max_examples 150, no deadline) so the file takes seconds.
"""

import contextlib
import dataclasses
import datetime as dt
import json
import math
import pathlib
import shutil
from unittest import mock

from hypothesis import assume
from hypothesis import example
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import yaml

from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.rcan import line_reader
from robot_memory.rcan import memory_file
from robot_memory.rcan import parse
from robot_memory.rcan import reader_fast
from robot_memory.rcan import schema
from robot_memory.rcan import writer
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import check_printable
from robot_memory.rcan.schema import ENTRY_TYPES
from robot_memory.rcan.schema import ID_PATTERN
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.schema import PeerBlock
from robot_memory.rcan.schema import PeerEntry
from robot_memory.rcan.schema import RRN_PATTERN

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / 'examples' / 'robot-memory.md'
NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=UTC)
KNOWN_KEYS = {'schema_version', 'rrn', 'last_updated', 'entries', 'peer_context'}
ENTRY_FIELDS = set(MemoryEntry.model_fields)
BLOCK_FIELDS = set(PeerBlock.model_fields)
PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------ strategies

def _printable(text: str) -> bool:
    try:
        check_printable(text, 'text')
    except ValueError:
        return False
    return True


# Letters, digits, punctuation, symbols and spaces from the whole of Unicode, plus the
# characters that matter to YAML and JSON quoting.
_TEXT_CHARS = st.one_of(
    st.characters(blacklist_categories=('Cs', 'Cc')),
    st.sampled_from(list('"\'\\:#-{}[],&*!|>%@`≤—🔴 ') + ['\\U', '\\ud800', '---']),
)
entry_texts = st.lists(_TEXT_CHARS, min_size=1, max_size=120).map(''.join).map(
    lambda text: text[:500]).filter(lambda text: text.strip() and _printable(text))
long_texts = st.text(st.characters(blacklist_categories=('Cs', 'Cc')), min_size=400,
                     max_size=500).filter(lambda text: text.strip() and _printable(text))
tags = st.text(st.characters(blacklist_categories=('Cs', 'Cc', 'Zs', 'Zl', 'Zp')),
               min_size=1, max_size=20).filter(_printable)
confidences = st.one_of(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.sampled_from([0.0, 1.0, 1e-7, 5e-324, 2.2250738585072014e-308, 0.1, 0.92,
                     0.30000000000000004, 1 - 1e-16]),
)
datetimes = st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9998, 1, 1),
                         timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=5)),
                                                    dt.timezone(dt.timedelta(hours=-9,
                                                                             minutes=-30))]))
# Unknown keys are any printable-or-not strings; values are what JSON can carry.
any_strings = st.text(st.characters(blacklist_categories=('Cs',)), max_size=30)
keys = st.one_of(
    st.from_regex(r'[A-Za-z_][A-Za-z0-9_]{0,15}', fullmatch=True),
    st.sampled_from(['on', 'off', 'yes', 'No', 'true', 'NULL', 'y', '<<', '=', '~', '1',
                     '0x1F', '.inf', 'key with spaces', 'x-y', 'ключ', '']),
    any_strings,
)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
    st.floats(allow_nan=False, allow_infinity=False), any_strings,
    st.sampled_from(['1e5', '0x1F', 'yes', 'null', '~', '2026-04-01T02:00:00Z', '1.0', '-',
                     '---', '...', '= ', 'a: b', '#x', 'NaN', '.nan']),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(any_strings, children, max_size=4)),
    max_leaves=12,
)


def extras(reserved):
    """Unknown keys with JSON-ish values, none of them a known field name."""
    return st.dictionaries(keys.filter(lambda key: key not in reserved), json_values,
                           max_size=3)


@st.composite
def own_entries(draw, entry_id):
    """Return a MemoryEntry with every field drawn, sometimes with unknown keys."""
    return MemoryEntry(
        id=entry_id, type=draw(st.sampled_from(ENTRY_TYPES)),
        text=draw(st.one_of(entry_texts, long_texts)), confidence=draw(confidences),
        first_seen=draw(datetimes), last_reinforced=draw(datetimes),
        observation_count=draw(st.integers(min_value=1, max_value=2 ** 40)),
        tags=draw(st.lists(tags, max_size=5)),
        **draw(st.one_of(st.just({}), extras(ENTRY_FIELDS))),
    )


@st.composite
def peer_entries(draw, entry_id):
    """Return a PeerEntry whose timing fields may each be missing."""
    optional = {
        'first_seen': draw(st.one_of(st.none(), datetimes)),
        'last_reinforced': draw(st.one_of(st.none(), datetimes)),
        'observation_count': draw(st.one_of(st.none(), st.integers(min_value=1,
                                                                   max_value=10 ** 6))),
    }
    return PeerEntry(id=entry_id, type=draw(st.sampled_from(ENTRY_TYPES)),
                     text=draw(entry_texts), confidence=draw(confidences),
                     tags=draw(st.lists(tags, max_size=3)),
                     **{key: value for key, value in optional.items() if value is not None},
                     **draw(st.one_of(st.just({}), extras(ENTRY_FIELDS))))


entry_ids = st.from_regex(ID_PATTERN.replace('{0,127}', '{0,20}'), fullmatch=True)
rrns = st.from_regex(RRN_PATTERN.replace('{0,63}', '{0,20}'), fullmatch=True)
bodies = st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from([b'---', b'...', b'--- ', b'# Notes', b'- item', b'\xff\xfe',
                              b'\xe2\x89\xa4 0.3m/s', b'', b'\r', b'entries: []']),
             max_size=8).map(b'\n'.join),
)


@st.composite
def peer_blocks(draw):
    """Zero to three peer blocks with distinct rrns, each with a few entries."""
    block_rrns = draw(st.lists(rrns, max_size=3, unique=True))
    blocks = []
    for rrn in block_rrns:
        ids = draw(st.lists(entry_ids, max_size=3, unique=True))
        blocks.append(PeerBlock(rrn=rrn, last_synced=draw(datetimes),
                                entries=[draw(peer_entries(entry_id)) for entry_id in ids],
                                **draw(st.one_of(st.just({}), extras(BLOCK_FIELDS)))))
    return blocks


@st.composite
def documents(draw):
    """Any valid MemoryDocument, canonical or not."""
    ids = draw(st.lists(entry_ids, max_size=6, unique=True))
    return MemoryDocument(
        rrn=draw(rrns), last_updated=draw(datetimes),
        entries=[draw(own_entries(entry_id)) for entry_id in ids],
        peer_context=draw(st.one_of(st.none(), peer_blocks())),
        extra=draw(st.one_of(st.just({}), extras(KNOWN_KEYS))),
        body=draw(bodies),
    )


# --------------------------------------------------------------------------- helpers

def same(left, right) -> bool:
    """Deep equality that also tells 1, 1.0 and True apart and -0.0 from 0.0."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return (list(left) == list(right)
                and all(same(key_l, key_r) and same(left[key_l], right[key_r])
                        for key_l, key_r in zip(left, right)))
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, float):
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    return left == right


def entry_data(entry) -> dict:
    """Return an entry as plain data (declared fields, then unknown keys), for ``same``."""
    data = {name: getattr(entry, name) for name in type(entry).model_fields}
    data.update(entry.extras)
    return data


def document_data(document: MemoryDocument) -> dict:
    """Everything a document holds, as plain data for ``same``."""
    peers = None
    if document.peer_context is not None:
        peers = [{'rrn': block.rrn, 'last_synced': block.last_synced,
                  'extra': dict(block.__pydantic_extra__ or {}),
                  'entries': [entry_data(entry) for entry in block.entries]}
                 for block in document.peer_context]
    return {'schema_version': document.schema_version, 'rrn': document.rrn,
            'last_updated': document.last_updated,
            'entries': [entry_data(entry) for entry in document.entries],
            'peer_context': peers, 'extra': dict(document.extra), 'body': document.body}


def is_canonical(document: MemoryDocument) -> bool:
    """Whether the writer can use the one-line-per-entry form for ``document``."""
    try:
        writer._canonical_front(document)
    except writer._NotCanonical:
        return False
    return True


def front_matter(data: bytes) -> str:
    """Return the text between the two delimiter lines of a rendered file."""
    front, _, _ = reader_fast.split_front_matter(data)
    return front.decode('utf-8')


@contextlib.contextmanager
def libyaml_only():
    """Within: the reader reads every front matter with libyaml (both faster readers off)."""
    with mock.patch.object(parse, 'fast_front_matter', return_value=None), \
            mock.patch.object(parse, 'line_front_matter', return_value=None):
        yield


def clean_parse(data: bytes):
    """parse_bytes that must report no problem at all."""
    result = parse_bytes(data, NOW)
    assert result.problems == [] and result.quarantined == []
    return result


# ---------------------------------------------------------------------------- tests

@PROPERTY
@given(documents())
def test_any_valid_document_round_trips_exactly(document):
    data = render(document)
    result = clean_parse(data)
    assert same(document_data(result.document), document_data(document))
    assert render(result.document) == data
    # A document rebuilt entry by entry (no cached lines) renders the same bytes too.
    rebuilt = result.document
    rebuilt.entries = [entry.model_copy() for entry in rebuilt.entries]
    assert render(rebuilt) == data


@PROPERTY
@given(documents())
def test_fast_path_reads_what_libyaml_reads(document):
    data = render(document)
    front = front_matter(data)
    by_libyaml = yaml.load(front, Loader=yaml.CSafeLoader)
    fast = reader_fast.fast_front_matter(front, 2)
    canonical = is_canonical(document)
    if canonical:
        assert fast is not None, 'the reader refused the canonical form the writer produced'
    if fast is not None:
        assert same(fast[0], by_libyaml)
    result = clean_parse(data)
    if canonical:
        assert result.used_fast_path
    with libyaml_only():
        slow = clean_parse(data)
    assert slow.used_fast_path is False
    assert same(document_data(slow.document), document_data(result.document))


# What a person might type into one field of a canonical entry line: valid values, values
# the schema refuses, and values it accepts only after converting them.
hand_edits = st.one_of(
    st.tuples(st.just('confidence'), st.one_of(
        st.sampled_from([1.5, -0.1, 'high', None, True, 0, 1, '0.5', [0.5]]),
        st.floats(allow_nan=False, allow_infinity=False), st.floats(1e-9, 1e-3))),
    st.tuples(st.just('text'), st.one_of(entry_texts, st.sampled_from(
        ['', '   ', '\u3000', 'bell\x07', 'tab\there', 'two\nlines', 'x' * 501, ' padded ',
         7, None]))),
    st.tuples(st.just('tags'), st.one_of(
        st.lists(tags, max_size=3),
        st.sampled_from([[' wheel'], ['wheel '], [''], ['x' * 65], ['t'] * 33, 'wheel', [1],
                         None, ['a\u00a0']]))),
    st.tuples(st.sampled_from(['first_seen', 'last_reinforced']), st.sampled_from(
        ['2026-03-28T14:00:00Z', '2026-03-28T16:00:00+02:00', '2026-03-28T14:00:00',
         '2026-03-28T14:00:00.5Z', '2026-02-30T00:00:00Z', '2026-03-28t14:00:00z', 'yesterday',
         '0001-01-01T00:00:00Z', 1774706400, None])),
    st.tuples(st.just('observation_count'), st.sampled_from(
        [0, 1, 2 ** 70, 2.5, 3.0, '3', True, None, -1])),
    st.tuples(st.just('type'), st.sampled_from(['rumour', 'resolved', None, ''])),
    st.tuples(st.just('id'), st.one_of(entry_ids, st.sampled_from(['../x', '', 5]))),
    st.tuples(st.sampled_from(['severity', 'seen_by']), json_values),
    st.tuples(st.sampled_from(['drop_tags', 'drop_text']), st.none()),
)


def _hand_edit(item: str, field: str, value) -> str:
    """One block-style entry (``  - id: ...`` and its key lines) with one field edited."""
    lines = item.rstrip('\n').split('\n')
    pairs = [line[4:].split(': ', 1) for line in lines]
    entry = {key: json.loads(text) for key, text in pairs}
    if field.startswith('drop_'):
        entry.pop(field[len('drop_'):], None)
    else:
        entry[field] = value
    out = [f'    {key}: {json.dumps(text, ensure_ascii=False)}' for key, text in entry.items()]
    if out:
        out[0] = '  - ' + out[0][4:]
    return '\n'.join(out) + '\n'


def _outcome(data: bytes):
    """Return what parse_bytes makes of ``data``: entries, problems, quarantine, file rewritten."""
    try:
        result = parse_bytes(data, NOW)
    except MemoryFileError as error:  # e.g. a raw control character: libyaml refuses it
        return ('unreadable', error.problem, error.line)
    return (result.used_fast_path, document_data(result.document),
            [(problem.message, problem.line) for problem in result.problems],
            [(item.section, item.raw, item.reason, item.line) for item in result.quarantined],
            render(result.document))


@st.composite
def canonical_documents(draw):
    """Return a document with at least one own entry that the writer puts in block style."""
    ids = draw(st.lists(entry_ids, min_size=1, max_size=6, unique=True))
    entries = []
    for entry_id in ids:
        entry = draw(own_entries(entry_id))
        try:
            writer._entry_block(entry)
        except writer._NotCanonical:  # an unknown key the block form cannot carry
            entry = MemoryEntry(**{name: getattr(entry, name) for name in ENTRY_FIELDS})
        entries.append(entry)
    document = MemoryDocument(rrn=draw(rrns), last_updated=draw(datetimes), entries=entries,
                              peer_context=draw(st.one_of(st.none(), peer_blocks())),
                              body=draw(bodies))
    if not is_canonical(document):
        document.peer_context = None
    assume(is_canonical(document))  # always true by now; a guard, not a filter
    return document


@PROPERTY
@given(canonical_documents(), st.lists(st.tuples(st.integers(0, 5), hand_edits), min_size=1,
                                       max_size=4), st.booleans())
def test_fast_and_slow_paths_agree_on_hand_edited_canonical_files(document, edits, dup):
    """
    Check that the three readers read any hand edit of a canonical file identically.

    The fast reader + fast validation, the fast reader + MemoryEntry, and libyaml +
    MemoryEntry: same entries, same quarantined entries with the same reasons and lines,
    same file written back.
    """
    front, _, body = reader_fast.split_front_matter(render(document))
    head, rest = front.decode('utf-8').split('entries:\n', 1)
    tail = ''
    if '\npeer_context' in rest:  # peer blocks are block style too: split them off first
        rest, tail = rest.split('\npeer_context', 1)
        tail = 'peer_context' + tail
    items = rest.split('\n  - ')
    items = [item if index == 0 else '  - ' + item for index, item in enumerate(items)]
    items = [item if item.endswith('\n') else item + '\n' for item in items]
    for index, (field, value) in edits:
        where = index % len(document.entries)
        items[where] = _hand_edit(items[where], field, value)
    if dup:  # the same id twice: the later one is quarantined
        items.insert(1, items[0])
    data = (b'---\n' + (head + 'entries:\n' + ''.join(items) + tail).encode('utf-8')
            + b'---\n' + body)
    fast = _outcome(data)
    with mock.patch.object(schema, 'validate_entries_fast', return_value=None), \
            mock.patch.object(reader_fast, 'entries_from_columns', return_value=None), \
            mock.patch.object(schema, 'validate_entries_json', return_value=None):
        model = _outcome(data)
        with libyaml_only():
            libyaml = _outcome(data)
    assert same(fast, model)
    if fast[0] is True:  # read by the fast path: libyaml reads the same, but not fast
        assert libyaml[0] is False and same(fast[1:-1], libyaml[1:-1])
    else:
        assert same(fast, libyaml)


@PROPERTY
@given(documents(), st.lists(st.tuples(
    st.sampled_from(['delete', 'swap', 'repeat', 'change', 'add', 'reverse']),
    st.integers(0, 10)), max_size=4))
def test_a_loaded_document_renders_as_if_every_entry_were_written_anew(document, changes):
    """Reusing the lines of unchanged entries never changes what is written."""
    if not is_canonical(document):
        return
    loaded = clean_parse(render(document)).document
    entries = loaded.entries
    for change, index in changes:
        at = index % len(entries) if entries else 0
        if change == 'delete' and entries:
            del entries[at]
        elif change == 'swap' and len(entries) > 1:
            entries[0], entries[at] = entries[at], entries[0]
        elif change == 'repeat' and entries:
            entries.append(entries[at])
        elif change == 'change' and entries:
            entries[at] = entries[at].model_copy(update={'confidence': 0.5,
                                                         'observation_count': index + 1})
        elif change == 'add':
            entries.insert(at, new_entry('environment_note', f'added {index}', 0.4, NOW,
                                         taken={entry.id for entry in entries}))
        elif change == 'reverse':
            entries.reverse()
    fresh = dataclasses.replace(loaded, entries=list(entries))
    assert not hasattr(fresh, '_source_lines')
    assert render(loaded) == render(fresh)


def test_generated_documents_cover_both_writer_forms():
    """Guard for the properties above: the strategy reaches the canonical and libyaml forms."""
    seen = set()

    @settings(max_examples=50, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(documents())
    def collect(document):
        seen.add(is_canonical(document))

    collect()
    assert seen == {True, False}


def test_fifty_load_save_cycles_of_the_spec_example_change_nothing(tmp_path):
    path = tmp_path / 'robot-memory.md'
    shutil.copyfile(EXAMPLE, path)
    memory = MemoryFile(path)
    original = parse_bytes(EXAMPLE.read_bytes(), NOW)
    assert original.problems == [] and original.used_fast_path is True  # the line reader
    stored = {entry.id: entry.confidence for entry in original.document.entries}
    assert stored == {'mem-a3f9c1d2': 0.92, 'mem-5b21e0c4': 0.65, 'mem-77c0a9e1': 0.35,
                      'mem-0d9e4f12': 0.80}
    expected = document_data(original.document)
    first_save = None
    for cycle in range(50):
        now = NOW + dt.timedelta(days=cycle)  # decay is read-time only: moving clock
        with memory.lock():
            loaded = memory.load(now)
            assert loaded.problems == [] and loaded.quarantined == []
            memory.save(loaded.document, loaded, now)
        data = path.read_bytes()
        first_save = first_save or data
        assert data == first_save
        again = memory.load(now)
        assert again.used_fast_path is True
        assert same(document_data(again.document), expected)
        assert {entry.id: entry.confidence for entry in again.document.entries} == stored
        assert again.document.peer_context[0].entries[0].confidence == 0.75
    assert path.stat().st_mode & 0o777 == 0o600


# ------------------------------------------------------ block YAML written by others

LIGHT = settings(max_examples=60, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _plain_or_quoted(value, style):
    """Return a scalar as a person might type it: plain, single-quoted or double-quoted."""
    if isinstance(value, str):
        if style == 'plain':
            return value
        if style == 'single':
            return "'" + value.replace("'", "''") + "'"
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        if style == 'plain':
            return '[' + ', '.join(value) + ']'
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


STYLES = st.sampled_from(['plain', 'single', 'double'])


@st.composite
def hand_written_fronts(draw):
    """
    Return a front matter in the spec's block style, written by a person.

    Plain, single- and double-quoted values, unquoted timestamps, comments, block or flow
    tag lists, items at the margin or indented.
    """
    ids = draw(st.lists(entry_ids, min_size=1, max_size=4, unique=True))
    entries = [MemoryEntry(**{name: getattr(entry, name) for name in ENTRY_FIELDS})
               for entry in (draw(own_entries(entry_id)) for entry_id in ids)]
    margin = draw(st.sampled_from(['', '  ']))
    out = ['# memory of the robot', 'schema_version: "1.0"',
           f'rrn: {draw(rrns)}', 'last_updated: 2026-04-01T02:00:00Z', 'entries:']
    for entry in entries:
        if draw(st.booleans()):
            out.append(f'{margin}# {draw(st.sampled_from(["seen twice", "# odd", "x: y"]))}')
        fields = [('id', entry.id), ('type', entry.type), ('text', entry.text),
                  ('confidence', entry.confidence),
                  ('first_seen', memory_file.format_iso(entry.first_seen)),
                  ('last_reinforced', memory_file.format_iso(entry.last_reinforced)),
                  ('observation_count', entry.observation_count), ('tags', entry.tags)]
        for index, (key, value) in enumerate(fields):
            lead = f'{margin}- ' if index == 0 else f'{margin}  '
            if key == 'tags' and value and draw(st.booleans()):
                out.append(f'{lead}tags:')
                for tag in value:
                    quoted = _plain_or_quoted(tag, draw(STYLES))
                    out.append(f'{margin}  {draw(st.sampled_from(["", "  "]))}- {quoted}')
                continue
            style = draw(STYLES)
            line = f'{lead}{key}: {_plain_or_quoted(value, style)}'
            if draw(st.integers(0, 9)) == 0:
                line += '  # ' + draw(st.sampled_from(['checked', 'why: see log', '#']))
            out.append(line)
    return '\n'.join(out) + '\n'


FLOW_FRONT = ('schema_version: "1.0"\nrrn: R\nlast_updated: 2026-04-01T02:00:00Z\nentries:\n'
              '- id: a\n  type: hardware_observation\n  text: t\n  confidence: 0.5\n'
              '  first_seen: 2000-01-01T00:00:00Z\n  last_reinforced: 2000-01-01T00:00:00Z\n'
              '  observation_count: 1\n  tags: {tags}\n')


@LIGHT
@given(hand_written_fronts())
@example(FLOW_FRONT.format(tags='[:0]'))  # found by this test: libyaml refuses it
@example(FLOW_FRONT.format(tags='[a:?]'))
@example(FLOW_FRONT.format(tags='[?0]'))  # a mapping to libyaml, not the string '?0'
@example(FLOW_FRONT.format(tags='[a:0, -:0]'))
def test_the_line_reader_reads_hand_written_block_yaml_as_libyaml_does(front):
    try:
        by_libyaml = yaml.load(front, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        by_libyaml = 'invalid'
    by_lines = line_reader.line_front_matter(front, 2)
    if by_lines is not None:
        assert by_libyaml != 'invalid', 'the line reader read what libyaml refuses'
        assert same(by_lines[0], by_libyaml)
    data = b'---\n' + front.encode('utf-8') + b'---\n'
    fast = _outcome(data)
    with mock.patch.object(parse, 'line_front_matter', return_value=None):
        slow = _outcome(data)
    assert same(fast[1:-1], slow[1:-1])


@LIGHT
@given(documents(), st.integers(20, 200), st.booleans(), st.sampled_from([2, 4]))
def test_the_line_reader_reads_pyyaml_block_output_as_libyaml_does(document, width, unicode,
                                                                   indent):
    front = yaml.dump(yaml.load(writer._yaml_front(document), Loader=yaml.CSafeLoader),
                      Dumper=yaml.CSafeDumper, default_flow_style=False, sort_keys=False,
                      allow_unicode=unicode, width=width, indent=indent)
    by_lines = line_reader.line_front_matter(front, 2)
    if by_lines is not None:
        assert same(by_lines[0], yaml.load(front, Loader=yaml.CSafeLoader))


def test_the_line_reader_takes_opencastor_style_files():
    """
    Guard: the line reader, not libyaml, reads PyYAML's block output of ordinary entries.

    That is OpenCastor's writer.
    """
    entries = [{'id': f'mem-{index}', 'type': 'environment_note',
                'text': f'doorway {index} has a 3 cm lip — slow to ≤0.1 m/s, "quoted": '
                        f'{{braces}} #{index} ' + 'long words ' * (index % 20),
                'confidence': round(0.1 + index / 400, 4),
                'first_seen': '2026-03-01T00:00:00+00:00',
                'last_reinforced': '2026-04-01T00:00:00+00:00', 'observation_count': index + 1,
                'tags': ['kitchen', f'door-{index}'][:index % 3]} for index in range(200)]
    front = yaml.dump({'schema_version': '1.0', 'rrn': 'RRN-1',
                       'last_updated': '2026-04-01T02:00:00+00:00', 'entries': entries},
                      default_flow_style=False, allow_unicode=True, sort_keys=False)
    by_lines = line_reader.line_front_matter(front, 2)
    assert by_lines is not None
    assert same(by_lines[0], yaml.load(front, Loader=yaml.CSafeLoader))


@LIGHT
@given(hand_written_fronts(), st.lists(st.integers(0, 5), max_size=3))
def test_a_hand_written_file_keeps_its_text_and_comments_where_entries_did_not_change(
        front, changed):
    data = b'---\n' + front.encode('utf-8') + b'---\n'
    try:
        result = parse_bytes(data, NOW)
    except MemoryFileError:
        return
    # Comments are kept when the file was read without libyaml (libyaml drops them).
    assume(result.problems == [] and result.document.entries and result.used_fast_path)
    document = result.document
    for index in changed:
        at = index % len(document.entries)
        document.entries[at] = document.entries[at].model_copy(update={'confidence': 0.5})
    written = render(document)
    again = clean_parse(written)
    assert same(document_data(again.document)['entries'], document_data(document)['entries'])
    assert written.startswith(b'---\n# memory of the robot\n')
    if not changed:
        entries_text = front[front.index('entries:\n'):].encode('utf-8')
        assert entries_text in written


def test_hand_written_fronts_reach_the_line_reader_and_libyaml_errors():
    """
    Guard for the property above: many valid fronts are read line by line, some are invalid.

    The share depends on the draws (from 41% to 97% of the valid fronts in runs of 60), so
    the examples are derandomized (the same ones every run of a Hypothesis release) and the
    guard asks for a quarter: a line reader that read nothing would fail it, a run of
    unlucky draws would not.
    """
    seen = {'lines': 0, 'libyaml': 0, 'invalid': 0}

    @settings(max_examples=100, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(hand_written_fronts())
    def collect(front):
        try:
            yaml.load(front, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            seen['invalid'] += 1
            return
        read = line_reader.line_front_matter(front, 2) is not None
        seen['lines' if read else 'libyaml'] += 1

    collect()
    assert 4 * seen['lines'] >= seen['lines'] + seen['libyaml'] and seen['invalid'] > 0, seen
