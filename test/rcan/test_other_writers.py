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
Files written by OpenCastor (PyYAML) and by people take the fast path, and read the same.

Each form is read three ways: by the fast path, with the fast path switched off (the line
reader, else libyaml) and by libyaml itself; the entries must be equal.
"""

import datetime as dt
import json
from unittest import mock

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import yaml

from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.rcan import parse
from robot_memory.rcan import reader_fast
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.reader_fast import ValidatedEntries
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import new_entry

NOW = dt.datetime(2026, 4, 2, 3, 0, tzinfo=UTC)
BODY = '\n# Robot memory\n\nNotes kept by hand.\n'


def make_entries(count: int = 12) -> list:
    """Return entries with texts that need quoting, folding or nothing at all in YAML."""
    texts = ['Left wheel encoder intermittent under sustained load',
             "doorway 3 has a 3 cm lip: slow to ≤0.1 m/s, it's 'tight' #3",
             'charging dock contacts need cleaning — ' * 4 + 'then recheck #12',
             'Küche: Tür klemmt; "quoted" words and {braces} [brackets]',
             'yes', '0.5', 'null', '2026-04-01', 'a # not a comment', 'ends with colon:']
    entries, taken = [], set()
    for index in range(count):
        entry = new_entry(('hardware_observation', 'environment_note')[index % 2],
                          f'{texts[index % len(texts)]} #{index}', 0.05 + index / 20,
                          NOW - dt.timedelta(days=index, microseconds=index * 7919),
                          tags=[['wheel', 'encoder'], [], ['door-3'], ['kitchen']][index % 4],
                          taken=taken)
        taken.add(entry.id)
        entries.append(entry)
    return entries


def opencastor_form(entries: list) -> bytes:
    """Return a memory file as OpenCastor's save_memory writes it (PyYAML, isoformat times)."""
    data = {'schema_version': '1.0', 'rrn': 'RRN-000000000001',
            'last_updated': NOW.isoformat(),
            'entries': [{'id': entry.id, 'type': entry.type, 'text': entry.text,
                         'confidence': entry.confidence,
                         'first_seen': entry.first_seen.isoformat(),
                         'last_reinforced': entry.last_reinforced.isoformat(),
                         'observation_count': entry.observation_count,
                         'tags': list(entry.tags)} for entry in entries]}
    front = yaml.dump(data, default_flow_style=False, allow_unicode=True, sort_keys=False)
    return ('---\n' + front + '---\n' + BODY).encode('utf-8')


def hand_form(entries: list, block_tags: bool = False) -> bytes:
    """Return a memory file as people write one: plain ids, quoted times, tags unquoted."""
    lines = ['schema_version: "1.0"', 'rrn: RRN-000000000001',
             f"last_updated: '{NOW.isoformat()}'", 'entries:']
    for entry in entries:
        lines += [f'  - id: {entry.id}', f'    type: {entry.type}',
                  f'    text: {json.dumps(entry.text, ensure_ascii=False)}',
                  f'    confidence: {entry.confidence}',
                  f'    first_seen: "{entry.first_seen.isoformat().replace("+00:00", "Z")}"',
                  f"    last_reinforced: '{entry.last_reinforced.isoformat()}'",
                  f'    observation_count: {entry.observation_count}']
        if block_tags and entry.tags:
            lines += ['    tags:'] + [f'      - {tag}' for tag in entry.tags]
        else:
            lines.append(f'    tags: [{", ".join(entry.tags)}]')
    return ('---\n' + '\n'.join(lines) + '\n---\n' + BODY).encode('utf-8')


def read_three_ways(data: bytes):
    """Return the entries read by the fast path, without it, and by libyaml (as dicts)."""
    fast = parse_bytes(data, NOW)
    with mock.patch.object(parse, 'fast_front_matter', return_value=None):
        slow = parse_bytes(data, NOW)
    front = data.split(b'---\n', 2)[1].decode('utf-8')
    raw = yaml.load(front, Loader=yaml.CSafeLoader)['entries']
    by_libyaml = [MemoryEntry.model_validate(item).model_dump() for item in raw]
    assert fast.problems == slow.problems == []
    header = (fast.document.schema_version, fast.document.rrn, fast.document.last_updated)
    assert header == (slow.document.schema_version, slow.document.rrn,
                      slow.document.last_updated)
    assert fast.document.last_updated.tzinfo is slow.document.last_updated.tzinfo is UTC
    return ([entry.model_dump() for entry in fast.document.entries],
            [entry.model_dump() for entry in slow.document.entries], by_libyaml, fast)


def read_by_columns(data: bytes) -> int:
    """Return how many entries of ``data`` the column reader took (all, or none)."""
    taken = []
    real = reader_fast.entries_from_columns

    def spy(*args, **kwargs):
        entries = real(*args, **kwargs)
        taken.append(0 if entries is None else len(entries))
        return entries
    front = data.split(b'---\n', 2)[1]
    with mock.patch.object(reader_fast, 'entries_from_columns', spy):
        read = reader_fast.fast_front_matter(front, 2, validate_entries=True)
    assert read is not None and type(read[0]['entries']) is ValidatedEntries
    return sum(taken)


@pytest.mark.parametrize('form', [opencastor_form, hand_form,
                                  lambda entries: hand_form(entries, block_tags=True)],
                         ids=['opencastor', 'by hand', 'by hand, block tags'])
def test_common_forms_take_the_fast_path_and_read_as_libyaml_does(form):
    entries = make_entries()
    data = form(entries)
    fast, slow, by_libyaml, result = read_three_ways(data)
    assert fast == slow == by_libyaml == [entry.model_dump() for entry in entries]
    assert read_by_columns(data) == len(entries)  # read by columns, checked in bulk
    assert result.used_fast_path


@pytest.mark.parametrize('form', [opencastor_form, hand_form], ids=['opencastor', 'by hand'])
def test_after_one_of_our_writes_the_file_still_takes_the_fast_path(form, tmp_path):
    path = tmp_path / 'robot-memory.md'
    entries = make_entries()
    path.write_bytes(form(entries))
    with MemoryFile(path).update(NOW) as update:
        document = update.document
        document.entries[3] = document.entries[3].model_copy(update={'confidence': 0.5})
        document.entries.append(new_entry('environment_note', 'seen today', 0.4, NOW,
                                          tags=['new']))
    data = path.read_bytes()
    original = form(entries)
    start = original.index(entries[0].id.encode())  # unchanged entries keep their text
    assert original[start:original.index(entries[3].id.encode()) - 8] in data
    fast, slow, by_libyaml, _ = read_three_ways(data)
    assert fast == slow == by_libyaml
    assert fast[3]['confidence'] == 0.5 and fast[-1]['text'] == 'seen today'
    assert read_by_columns(data) == len(entries) + 1


def outcome(data: bytes):
    """Return all a load gives: entries, quarantined items, problems, other keys; or refusal."""
    try:
        result = parse_bytes(data, NOW)
    except MemoryFileError as error:
        return 'refused', error.problem, error.line
    return ([entry.model_dump() for entry in result.document.entries],
            [(item.section, item.raw, item.reason, item.line) for item in result.quarantined],
            [(problem.message, problem.line) for problem in result.problems],
            result.document.extra)


@pytest.mark.parametrize('entries_text', [
    # A '#' line inside a folded single-quoted scalar is text, not a comment.
    "- id: mem-00000001\n  type: environment_note\n  text: 'slow down near\n    #3 door'\n",
    # A blank line inside a folded scalar is a line break.
    "- id: mem-00000001\n  type: environment_note\n  text: 'slow down near\n\n    door'\n",
    # A value smuggling a second item into the JSON the fast path builds.
    '  - id: mem-00000001\n    type: environment_note\n    text: "a"}, {"id": "mem-2"\n',
    # YAML 1.1 keywords and numbers are not strings.
    '  - id: mem-00000001\n    type: environment_note\n    text: yes\n',
    '  - id: mem-00000001\n    type: environment_note\n    text: 0x1F\n',
    # A key twice in one entry.
    '  - id: mem-00000001\n    type: environment_note\n    text: a\n    text: b\n',
    # A comment after a plain value, a list item after a value.
    '  - id: mem-00000001\n    type: environment_note\n    text: a # note\n',
    '  - id: mem-00000001\n    type: environment_note\n    text: a\n    - b\n',
    # The writer's keys, read by columns: blanks around values, a folded plain text.
    '- id:   mem-00000001\n  type: environment_note\n  text:   two  spaces \n  confidence: 012\n'
    "  first_seen: '2026-04-01T00:00:00+00:00'\n  last_reinforced: 2026-04-01T00:00:00Z\n"
    '  observation_count: 1\n  tags:   [a,  b]\n'
    '- id: mem-00000002\n  type: environment_note\n  text: folded\n    over: lines\n'
    "  confidence: 0.5\n  first_seen: '2026-04-01T00:00:00+00:00'\n"
    "  last_reinforced: '2026-04-01T00:00:00.5+00:00'\n  observation_count: 1\n"
    '  tags:\n  -   a\n  - b\n',
])
def test_what_the_shortcut_cannot_tell_is_read_as_without_it(entries_text):
    data = ('---\nschema_version: "1.0"\nrrn: "RRN-000000000001"\n'
            f'last_updated: "2026-04-01T00:00:00Z"\nentries:\n{entries_text}'
            'more: 1\n---\n').encode('utf-8')
    fast = outcome(data)
    with mock.patch.object(parse, 'fast_front_matter', return_value=None):
        slow = outcome(data)
    assert fast == slow


_TEXT = st.text(st.characters(codec='utf-8', categories=('L', 'N', 'P', 'S', 'Zs'),
                              exclude_characters='\u2028\u2029\x85\ufeff'),
                min_size=1, max_size=160).map(str.strip).filter(bool)
# Tags a person writes unquoted and YAML reads as text: 'on' or 'yes' are booleans to YAML
# (see test_an_unquoted_yaml_word_in_tags_is_quarantined_saying_to_quote_it).
_TAG = st.from_regex(r'[a-z][a-z0-9-]{0,11}', fullmatch=True).filter(
    lambda tag: isinstance(yaml.safe_load(tag), str))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_TEXT, min_size=1, max_size=6),
       tags=st.lists(st.lists(_TAG, max_size=3, unique=True), min_size=6, max_size=6),
       block_tags=st.booleans(), castor=st.booleans())
def test_any_text_reads_the_same_fast_slow_and_by_libyaml(texts, tags, block_tags, castor):
    entries, taken = [], set()
    for index, text in enumerate(texts):
        try:
            entry = new_entry('environment_note', text, 0.5, NOW, tags=tags[index], taken=taken)
        except ValueError:
            continue  # a text the schema refuses: not what this test is about
        taken.add(entry.id)
        entries.append(entry)
    if not entries:
        return
    data = opencastor_form(entries) if castor else hand_form(entries, block_tags)
    fast, slow, by_libyaml, _ = read_three_ways(data)
    assert fast == slow == by_libyaml == [entry.model_dump() for entry in entries]


@pytest.mark.parametrize('written, meant', [
    ('[on]', ['on']), ('[docked, yes]', ['docked', 'yes']), ('[null]', ['null']),
    ('[~]', ['~']), ('\n      - "wheel"\n      - off', ['wheel', 'off'])])
def test_an_unquoted_yaml_word_in_tags_is_quarantined_saying_to_quote_it(written, meant):
    """A hand-written ``tags: [on]`` is a boolean to YAML: kept aside, with what to do."""
    def memory_file(tags: str) -> bytes:
        return ('---\nschema_version: "1.0"\nrrn: RRN-000000000001\n'
                'last_updated: "2026-04-01T00:00:00Z"\nentries:\n'
                '  - id: mem-00000001\n    type: environment_note\n    text: "Dock is left"\n'
                '    confidence: 0.5\n    first_seen: "2026-04-01T00:00:00Z"\n'
                '    last_reinforced: "2026-04-01T00:00:00Z"\n    observation_count: 1\n'
                f'    tags: {tags}\n---\n').encode('utf-8')

    data = memory_file(written)
    fast = parse_bytes(data, NOW)
    with mock.patch.object(parse, 'fast_front_matter', return_value=None):
        slow = parse_bytes(data, NOW)
    for result in (fast, slow):
        assert result.document.entries == []
        [problem] = result.problems
        assert problem.message.startswith('entries[0] quarantined: tags.') and \
            problem.message.endswith(parse.UNQUOTED_WORD), problem.message
        [kept] = result.quarantined
        assert kept.raw['text'] == 'Dock is left'
    assert [problem.message for problem in fast.problems] == \
        [problem.message for problem in slow.problems]
    quoted = parse_bytes(memory_file(json.dumps(meant)), NOW)
    assert [entry.tags for entry in quoted.document.entries] == [meant]
