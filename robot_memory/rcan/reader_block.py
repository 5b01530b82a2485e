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
The entries of other writers turned into JSON for the fast path, by columns or line by line.

OpenCastor (PyYAML) and people write the block form with plain and single-quoted scalars
(folded over lines), flow lists of plain words (``tags: [wheel, encoder]``), block lists
(``tags:`` then ``- wheel``) and quoted timestamps. Each value becomes the JSON text of what
libyaml reads (plain scalars through ``line_reader.plain_scalar``, libyaml's own resolvers),
so the C ``json`` module and the bulk validation read them: a column at a time when the
entries have the writer's keys in its order (``entry_columns_json``), else a line at a time
(``block_items_json``). Anything else gives None and the line reader takes over.
"""

import functools
import itertools
import json
import re
from typing import cast
from typing import Optional
from typing import Sequence

from robot_memory.rcan.line_reader import NotSimple
from robot_memory.rcan.line_reader import plain_scalar
from robot_memory.rcan.yaml_rules import YAML_KEYWORDS

_LINE = re.compile(r'( *)(- )?([A-Za-z_][A-Za-z0-9_]*):(?: +(.*))?\Z')
_DOUBLE_QUOTED = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"\Z')
_SINGLE_QUOTED = re.compile(r"'[^']*(?:''[^']*)*'\Z")
_JSON_DECODER = json.JSONDecoder()
_TIME_KEYS = ('first_seen', 'last_reinforced')
_UTC_OFFSET_TIME = re.compile(r'"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}'
                              r'(?:\.[0-9]{6})?\+00:00"\Z')
_ASCII_LETTERS = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ')


def _string_json(text: str) -> str:
    """Return ``text`` as a JSON string (the front matter holds no control character)."""
    if '"' in text or '\\' in text:
        return json.dumps(text, ensure_ascii=False)
    return f'"{text}"'


def _plain_json(text: str, cache: dict) -> Optional[str]:
    """Return a plain scalar as the JSON text of what libyaml makes of it, or None."""
    if text[0] in _ASCII_LETTERS and text not in YAML_KEYWORDS and ': ' not in text \
            and ' #' not in text and text[-1] != ':':
        # No resolver of YAML 1.1 takes a text led by a letter but the keywords.
        return _string_json(text)
    try:
        value = plain_scalar(text, cache)
    except NotSimple:
        return None
    kind = type(value)
    if kind is str:
        return _string_json(value)
    if value is None:
        return 'null'
    if kind is bool:
        return 'true' if value else 'false'
    if kind is int:
        return str(value)
    if kind is float:
        # A float without an exponent is read back as that float (yaml_rules.yaml_float).
        text = repr(value)
        return text if 'e' not in text and 'n' not in text else None
    return None  # a timestamp, binary data...: libyaml's own types stay with libyaml


def _flow_json(text: str, cache: dict) -> Optional[str]:
    """Return a one-line flow list (JSON, or plain words) as JSON text, or None."""
    end = -1
    if '"' in text:  # plain words and numbers are read the same either way
        try:
            _, end = _JSON_DECODER.raw_decode(text)
        except ValueError:
            pass
    if end == len(text):
        return text
    if not text.startswith('[') or not text.endswith(']'):
        return None
    inner = text[1:-1]
    if any(char in inner for char in '[]{}"\'#'):
        return None
    if not inner.strip(' '):
        return '[]'
    items = [item.strip(' ') for item in inner.split(',')]
    # As in line_reader: ':' and '?' can be indicators in a flow sequence.
    if not all(items) or any(item[0] in ':?' or ':?' in item for item in items):
        return None
    converted = [_plain_json(item, cache) for item in items]
    if None in converted:
        return None
    return '[' + ', '.join(cast('list[str]', converted)) + ']'


def scalar_json(text: str, more: Sequence[str], cache: dict) -> Optional[str]:
    """
    Return the JSON text of a block scalar value, or None when it is not one read here.

    ``text`` is the value on the key's line (trailing blanks removed), ``more`` the lines
    folded into it (stripped), as libyaml folds a plain or single-quoted scalar.
    """
    first = text[:1]
    if not first:
        return None  # an empty item is null, and needs no shortcut
    if first == '"':
        return text if not more and _DOUBLE_QUOTED.match(text) else None
    if first == "'":
        joined = ' '.join([text, *more]) if more else text
        if _SINGLE_QUOTED.match(joined) is None:
            return None
        return _string_json(joined[1:-1].replace("''", "'"))
    if first in '[{':
        if more:
            return None
        found = cache.get(text)
        if found is None:
            found = _flow_json(text, cache)
            if found is not None and len(cache) < 65536:
                cache[text] = found
        return found
    return _plain_json(' '.join([text, *more]) if more else text, cache)


def _is_comment_or_blank(line: str) -> bool:
    """Whether ``line`` holds nothing but blanks, or a comment."""
    content = line.lstrip(' ')
    return not content or content[0] == '#'


def block_items_json(items: str, entries: bool = False) -> Optional[tuple]:
    """
    Return (a JSON array of the mappings of a block list, how many keys they hold), or None.

    ``items`` holds the lines of the list, comments and blank lines included, the items'
    dashes at column 0 (as PyYAML writes them) or 2 (as the writer and the spec do). Each
    item is a mapping of plain keys to one-line or folded scalars, flow lists, or block
    lists of one-line scalars. ``entries``: the times of MemoryEntry written ``+00:00``
    are written ``Z``, the one form the bulk check of entries takes: the same instant, and
    MemoryEntry keeps nothing else of them.
    """
    lines = items.split('\n')
    first = next((line for line in lines if not _is_comment_or_blank(line)), '')
    dash_column = 0 if first.startswith('- ') else 2
    key_column = dash_column + 2
    deeper = ' ' * (key_column + 1)
    match_line = _LINE.match
    out: list = []
    cache: dict = {}
    append = out.append
    index, count = 0, len(lines)
    while index < count:
        line = lines[index]
        match = match_line(line)
        if match is None:
            if _is_comment_or_blank(line):
                index += 1
                continue
            return None
        indent, dash, key, value = match.groups()
        if dash is not None:
            if len(indent) != dash_column:
                return None
            append('}, {"' if out else '[{"')
        elif len(indent) != key_column or not out:
            return None
        else:
            append(', "')
        if key in YAML_KEYWORDS:
            return None
        index += 1
        value = value.rstrip(' ') if value is not None else ''
        if value:
            more = []
            while index < count and lines[index].startswith(deeper):
                content = lines[index].strip(' ')
                if not content or (content[0] == '#' and value[0] != "'") \
                        or content.startswith('- '):
                    # A blank line is a line break, a comment ends a plain scalar, and a
                    # list item after a value is an error: libyaml says what each means.
                    return None
                more.append(content)
                index += 1
            if more:
                converted = scalar_json(value, more, cache)
            elif value[0] == '"':
                converted = value if _DOUBLE_QUOTED.match(value) else None
            else:
                converted = scalar_json(value, (), cache)
        else:
            converted = 'null'
            following = lines[index] if index < count else ''
            if following[:key_column].isspace() and following[key_column:key_column + 2] in (
                    '- ', '  '):
                item_dash = ' ' * key_column + '- '
                if not following.startswith(item_dash):
                    item_dash = ' ' * (key_column + 2) + '- '
                values = []
                while index < count and lines[index].startswith(item_dash):
                    values.append(scalar_json(lines[index][len(item_dash):].strip(' '), (),
                                              cache))
                    index += 1
                following = lines[index] if index < count else ''
                if not values or None in values or following.startswith(deeper):
                    return None  # a nested mapping, or an item going on over lines
                converted = '[' + ', '.join(cast('list[str]', values)) + ']'
        if converted is None:
            return None
        if entries and key in _TIME_KEYS and converted.endswith('+00:00"') \
                and _UTC_OFFSET_TIME.match(converted):
            converted = converted[:-7] + 'Z"'
        append(key)
        append('": ')
        append(converted)
    if not out:
        return None
    append('}]')
    return ''.join(out), (len(out) - 1) // 4


# Entries with the writer's keys in the writer's order, each value on its line (the text
# may be folded over deeper lines, the tags a flow or a block list): read by columns.
_COLUMN_KEYS = ('id', 'type', 'text', 'confidence', 'first_seen', 'last_reinforced',
                'observation_count')


@functools.cache
def _entry_pattern(dash_column: int):
    key = '\n' + ' ' * (dash_column + 2)
    value = r' ([^\n]*)'
    folded = r' ([^\n]*(?:' + key + r' +[^ \n][^\n]*)*)'
    parts = [' ' * dash_column + '- id:' + value]
    parts += [key + name + ':' + (folded if name == 'text' else value)
              for name in _COLUMN_KEYS[1:]]
    parts.append(key + r'tags:(?: ([^\n]*)|((?:' + key + r'(?:  )?- [^\n]*)+))\n')
    return re.compile('(?m)^' + ''.join(parts))


_ALL_DOUBLE_QUOTED = re.compile(r'(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"\n)*\Z')
# A text led by a letter, without what could make it more than a string to libyaml.
_WORD = r'[A-Za-z][^\n"\\#:]*(?<! )'
_SIMPLE_SINGLE_QUOTED = r"'([^'\"\\\n]*)'"
_ALL_MIXED = re.compile(r'(?:(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"|' + _SIMPLE_SINGLE_QUOTED + '|'
                        + _WORD + r'|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?)\n)*\Z')
_ALL_WORDS = re.compile('(?:' + _WORD + r'\n)*\Z')
_ALL_SINGLE_QUOTED = re.compile('(?:' + _SIMPLE_SINGLE_QUOTED + r'\n)*\Z')
_MIXED_VALUE = re.compile('(?m)^(?:' + _SIMPLE_SINGLE_QUOTED + '|(' + _WORD + '))$')
_ALL_NUMBERS = re.compile(r'(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?\n)*\Z')


def _quoted(match) -> str:
    single, word = match.groups()
    return '"' + (single if single is not None else word) + '"'


def _column_json(values: Sequence[str], cache: dict, times: bool = False) -> Optional[str]:
    """Return one column of raw values as a JSON array, in bulk when they share a form."""
    folded = [index for index, value in enumerate(values) if '\n' in value]
    if folded:
        values = list(values)
        for index in folded:
            first, *more = values[index].split('\n')
            first = first.strip(' ')
            more = [line.strip(' ') for line in more]
            if first[:1] in ('"', '[', '{', '') or any(
                    line.startswith('- ') or (line[0] == '#' and first[0] != "'")
                    for line in more):
                return None  # what scalar_json leaves to libyaml, line_reader as well
            values[index] = ' '.join([first, *more])
    joined = '\n'.join(values) + '\n' if values else ''
    if _ALL_DOUBLE_QUOTED.match(joined):
        text = '[' + ','.join(values) + ']'
    elif _ALL_NUMBERS.match(joined):
        text = '[' + ','.join(values) + ']'
    elif _ALL_WORDS.match(joined) and YAML_KEYWORDS.isdisjoint(values):
        text = '["' + '","'.join(values) + '"]'
    elif _ALL_SINGLE_QUOTED.match(joined):
        text = '["' + '","'.join([value[1:-1] for value in values]) + '"]'
    elif _ALL_MIXED.match(joined) and YAML_KEYWORDS.isdisjoint(values):
        text = '[' + _MIXED_VALUE.sub(_quoted, joined)[:-1].replace('\n', ',') + ']'
    else:
        converted: list[str] = []
        append = converted.append
        match_double = _DOUBLE_QUOTED.match
        for value in values:
            if value[:1] == '"' and match_double(value):
                append(value)
                continue
            found = cache.get(value)
            if found is None:
                found = scalar_json(value.strip(' '), (), cache)
                if found is None:
                    return None
                if len(cache) < 65536 and len(value) < 64:
                    cache[value] = found
            append(found)
        text = '[' + ','.join(converted) + ']'
    # The bulk check of entries takes times written with Z only: the same instant (any
    # other text ending so fails that check, as it would have before).
    return text.replace('+00:00"', 'Z"') if times else text


def _tags_json(flow: Optional[str], block: str, cache: dict) -> Optional[str]:
    """Return the tags of one entry, a flow list or the lines of a block list, as JSON."""
    if flow:
        return scalar_json(flow.strip(' '), (), cache)
    found = cache.get(block)
    if found is None:
        lines = block[1:].split('\n')
        dash = lines[0][:len(lines[0]) - len(lines[0].lstrip(' '))] + '- '
        if not all(line.startswith(dash) for line in lines):
            return None  # the items of one list share their column
        items = [line[len(dash):].strip(' ') for line in lines]
        if _ALL_WORDS.match('\n'.join(items) + '\n') and YAML_KEYWORDS.isdisjoint(items):
            found = '["' + '","'.join(items) + '"]'
        else:
            values = [scalar_json(item, (), cache) for item in items]
            if None in values:
                return None
            found = '[' + ', '.join(cast('list[str]', values)) + ']'
        cache[block] = found
    return found


def entry_columns_json(items: str) -> Optional[tuple]:
    """
    Return (a JSON array a column for ``schema.entries_from_columns``, rows), or None.

    For entries another writer wrote with the writer's keys in its order; None for any
    other shape (comments between them included), which ``block_items_json`` then reads.
    """
    first = items.lstrip('\n')[:2]
    pattern = _entry_pattern(0 if first == '- ' else 2)
    text = items + '\n'
    rows, at = [], 0
    for match in pattern.finditer(text):
        if match.start() != at:
            return None  # a line no entry holds
        at = match.end()
        rows.append(match.groups())
    if not rows or at != len(text):
        return None
    cache: dict = {}
    columns = []
    count = len(rows)
    raw = list(zip(*rows))
    del rows
    for index, name in enumerate(_COLUMN_KEYS):
        column = _column_json(raw[index], cache, times=name in _TIME_KEYS)
        if column is None:
            return None
        columns.append(column)
    tags = list(map(_tags_json, raw[7], raw[8], itertools.repeat(cache)))
    if None in tags:
        return None
    columns.append('[' + ','.join(cast('list[str]', tags)) + ']')
    return columns, count
