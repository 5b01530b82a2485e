"""Property tests of the one reader and the one writer of robot-memory.md.

(a) Any valid MemoryDocument survives ``parse_bytes(render(doc))`` unchanged, and a
    second render is byte-for-byte the first one.
(b) The JSON fast path of the reader means exactly what libyaml reads: for every
    rendered document the values agree, and parsing with the fast path disabled
    gives the same document.
(c) load -> save -> load of the spec example is the identity over 50 cycles and never
    changes a stored confidence (decay is applied at read time only).

Hypothesis runs are bounded (max_examples 150, no deadline) so the file takes seconds.
"""

import datetime as dt
import math
import pathlib
import shutil
from unittest import mock

import yaml
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st

from robot_memory import memory_file
from robot_memory.memory_file import MemoryFile
from robot_memory.memory_file import parse_bytes
from robot_memory.memory_file import render
from robot_memory.schema import check_printable
from robot_memory.schema import ENTRY_TYPES
from robot_memory.schema import ID_PATTERN
from robot_memory.schema import MemoryDocument
from robot_memory.schema import MemoryEntry
from robot_memory.schema import PeerBlock
from robot_memory.schema import PeerEntry
from robot_memory.schema import RRN_PATTERN
from robot_memory.timeutil import UTC

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / 'examples' / 'robot-memory.md'
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
    """A MemoryEntry with every field drawn, sometimes with unknown keys."""
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
    """A PeerEntry whose timing fields may each be missing."""
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
    """An entry as plain data (declared fields, then unknown keys), for ``same``."""
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
        memory_file._canonical_front(document)
    except memory_file._NotCanonical:
        return False
    return True


def front_matter(data: bytes) -> str:
    """The text between the two delimiter lines of a rendered file."""
    front, _, _ = memory_file._split_front_matter(data)
    return front.decode('utf-8')


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
    fast = memory_file._fast_front_matter(front, 2)
    canonical = is_canonical(document)
    if canonical:
        assert fast is not None, 'the reader refused the canonical form the writer produced'
    if fast is not None:
        assert same(fast[0], by_libyaml)
    result = clean_parse(data)
    assert result.used_fast_path is canonical
    with mock.patch.object(memory_file, '_fast_front_matter', return_value=None):
        slow = clean_parse(data)
    assert slow.used_fast_path is False
    assert same(document_data(slow.document), document_data(result.document))


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
    assert original.problems == [] and original.used_fast_path is False
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
