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
Block YAML read line by line: files written by hand, by OpenCastor or by older tools.

PyYAML's block style holds plain and single-quoted scalars folded over lines and block
lists of tags. The subset read here is block mappings and sequences of scalars and one-line
flow lists; anything else (anchors, tags, block scalars, flow over lines, a blank line
inside a scalar) gives None and is read by libyaml. Plain scalars are resolved by libyaml's
own resolver table and constructors, so they mean what they mean to libyaml.
"""

import functools
import json
import re
from typing import Optional

from robot_memory.rcan.yaml_rules import PLAIN_KEY
from robot_memory.rcan.yaml_rules import pyyaml
from robot_memory.rcan.yaml_rules import yaml_classes
from robot_memory.rcan.yaml_rules import yaml_float
from robot_memory.rcan.yaml_rules import YAML_KEYWORDS
from robot_memory.rcan.yaml_rules import yaml_unsafe

_STR_TAG = 'tag:yaml.org,2002:str'


@functools.cache
def _resolution() -> tuple:
    """Return libyaml's implicit resolvers (by first character) and a safe constructor."""
    return yaml_classes()[0].yaml_implicit_resolvers, pyyaml().constructor.SafeConstructor()


_PLAIN_START_REFUSED = frozenset('[]{},#&*!|>\'"%@`')
_LINE_KEY = re.compile(r'([A-Za-z_][A-Za-z0-9_]*):(?: +|$)')
_JSON_DECODER = json.JSONDecoder(parse_float=yaml_float, parse_constant=str)


class NotSimple(Exception):
    """The text leaves the subset the line reader knows; libyaml reads it instead."""


_NUMBER_START = frozenset('-0123456789')


def _json_number(value: str):
    """
    Return ``value`` as a number when it is a whole JSON number, else None.

    A JSON number means the same to YAML 1.1: an integer is an int, a float with a '.'
    a float, and one with an exponent is read by ``yaml_float`` (a string where YAML's
    float rule wants a '.' and a signed exponent).
    """
    try:
        number, end = _JSON_DECODER.raw_decode(value)
    except ValueError:
        return None
    return number if end == len(value) and type(number) in (int, float, str) else None


def plain_scalar(value: str, cache: dict):
    """Return a plain scalar as libyaml resolves and constructs it."""
    found = cache.get(value)
    if found is not None or value in cache:
        return found
    if value[:1] in _PLAIN_START_REFUSED or ': ' in value or value.endswith(':') \
            or ' #' in value or value.startswith(('- ', '? ', ': ')) or value in ('-', '?'):
        raise NotSimple(value)
    if PLAIN_KEY.match(value) and value not in YAML_KEYWORDS:
        return value  # a word: no resolver takes it (they want digits, signs, dots, keywords)
    if value[:1] in _NUMBER_START:
        number = _json_number(value)
        if number is not None:
            return number
    resolvers, constructor_of = _resolution()
    tag = _STR_TAG
    for candidate, pattern in resolvers.get(value[:1], ()):
        if pattern.match(value):
            tag = candidate
            break
    if tag == _STR_TAG:
        result = value
    else:
        constructor = constructor_of.yaml_constructors.get(tag)
        if constructor is None:
            raise NotSimple(tag)
        result = constructor(constructor_of, pyyaml().ScalarNode(tag, value))
    if len(cache) < 65536:
        cache[value] = result
    return result


class _LineReader:
    """Block YAML read line by line (see above); raises NotSimple outside the subset."""

    def __init__(self, text: str, first_line: int):
        self.first_line = first_line
        # (line number, column, content) of lines holding something; a line starting with
        # '#' is a comment between nodes but text inside a quoted scalar.
        self.rows = []
        for number, line in enumerate(text.split('\n')):
            content = line.lstrip(' ')
            if content:
                self.rows.append((number, len(line) - len(content), content.rstrip(' ')))
        self.at = 0
        self.cache: dict = {}
        self.key_lines: dict[str, int] = {}
        self.item_lines: dict[str, list[int]] = {}

    def _skip_comments(self) -> None:
        rows = self.rows
        while self.at < len(rows) and rows[self.at][2].startswith('#'):
            self.at += 1

    def document(self) -> dict:
        """Return the top-level mapping."""
        self._skip_comments()
        if self.at == len(self.rows):
            return {}
        if self.rows[self.at][1] != 0:
            raise NotSimple('indented first line')
        mapping = self.mapping(0, top=True)
        if self.at != len(self.rows):
            raise NotSimple('trailing lines')
        return mapping

    def _next_row(self):
        """Skip comment rows; return the next row (number, column, content), None at the end."""
        self._skip_comments()
        return self.rows[self.at] if self.at < len(self.rows) else None

    def mapping(self, column: int, top: bool = False) -> dict:
        """Keys at ``column`` from the current row on."""
        result = {}
        rows = self.rows
        while (row := self._next_row()) is not None:
            number, col, content = row
            if col != column or content.startswith('- ') or content == '-':
                break
            match = _LINE_KEY.match(content)
            if match is None:
                raise NotSimple(content)
            key = match.group(1)
            if key in result or plain_scalar(key, self.cache) != key:
                raise NotSimple('duplicate or non-string key')
            if top:
                self.key_lines[key] = self.first_line + number
            rest = content[match.end():]
            self.at += 1
            if rest and not rest.startswith('#'):
                result[key] = self.scalar(rest, number, column)
                continue
            self._skip_comments()
            following = rows[self.at] if self.at < len(rows) else None
            if following is not None and following[1] > column:
                if following[2].startswith('- ') or following[2] == '-':
                    result[key] = self.sequence(following[1], key if top else None)
                else:
                    result[key] = self.mapping(following[1])
            elif (following is not None and following[1] == column
                  and following[2].startswith('- ')):
                result[key] = self.sequence(column, key if top else None)
            else:
                result[key] = None
        return result

    def sequence(self, column: int, key: Optional[str]) -> list:
        """Items ``- ...`` at ``column`` from the current row on."""
        result = []
        lines: Optional[list[int]] = [] if key is not None else None
        rows = self.rows
        while (row := self._next_row()) is not None:
            number, col, content = row
            if col != column or not content.startswith('- '):
                break
            if lines is not None:
                lines.append(self.first_line + number)
            rest = content[2:].lstrip(' ')
            inner = column + len(content) - len(rest)
            if _LINE_KEY.match(rest) and not rest.startswith(('"', "'")):
                rows[self.at] = (number, inner, rest)  # the item's first key
                result.append(self.mapping(inner))
            elif rest.startswith('- ') or not rest or rest.startswith('#'):
                raise NotSimple('nested or empty item')
            else:
                self.at += 1
                result.append(self.scalar(rest, number, column))
        if key is not None and lines is not None:  # lines are kept for a key's items only
            self.item_lines[key] = lines
        return result

    def _continuation(self, number: int, column: int) -> list:
        """Lines folded into a scalar that starts on line ``number``."""
        out = []
        rows = self.rows
        while self.at < len(rows) and rows[self.at][1] > column:
            following, _, content = rows[self.at]
            if following != number + 1 or content.startswith('#'):
                raise NotSimple('a blank or comment line inside a scalar')
            out.append(content)
            number = following
            self.at += 1
        return out

    def scalar(self, text: str, number: int, column: int):
        """Return the value starting with ``text`` on line ``number`` (continuing below it)."""
        first = text[0]
        if first == '"':
            try:
                value, end = _JSON_DECODER.raw_decode(text)
            except ValueError:
                raise NotSimple('double-quoted scalar') from None
            self._end(text[end:])
            if type(value) is not str:
                raise NotSimple(text)
            return value
        if first == "'":
            rows = self.rows
            end = 1
            while True:
                end = text.find("'", end)
                if end < 0:  # folded onto the next line, if that one belongs to the scalar
                    if (self.at == len(rows) or rows[self.at][1] <= column
                            or rows[self.at][0] != number + 1):
                        raise NotSimple('unclosed single quote')
                    end = len(text) + 1
                    number, _, more = rows[self.at]
                    text = text + ' ' + more
                    self.at += 1
                    continue
                if text.startswith("''", end):
                    end += 2
                    continue
                break
            self._end(text[end + 1:])
            return text[1:end].replace("''", "'")
        if first in '[{':
            if (self.at < len(self.rows) and self.rows[self.at][1] > column
                    and not self.rows[self.at][2].startswith('#')):
                raise NotSimple('flow collection over lines')
            return self.flow(text)
        comment = text.find(' #')
        if comment >= 0:  # the value ends where its comment starts, and cannot go on below
            text = text[:comment].rstrip(' ')
            if (self.at < len(self.rows) and self.rows[self.at][1] > column
                    and not self.rows[self.at][2].startswith('#')):
                raise NotSimple('lines after a commented plain scalar')
            return plain_scalar(text, self.cache)
        return plain_scalar(' '.join([text] + self._continuation(number, column)), self.cache)

    @staticmethod
    def _end(rest: str) -> None:
        stripped = rest.lstrip(' ')
        if stripped and not (stripped.startswith('#') and len(stripped) < len(rest)):
            raise NotSimple('text after a quoted scalar')

    def flow(self, text: str):
        """Return a one-line flow list of plain scalars, or any JSON value."""
        try:
            value, end = _JSON_DECODER.raw_decode(text)
        except ValueError:
            value, end = None, -1
        if end >= 0:
            self._end(text[end:])
            return value
        if not text.startswith('[') or not text.endswith(']'):
            raise NotSimple(text)
        inner = text[1:-1]
        if any(char in inner for char in '[]{}"\'#'):
            raise NotSimple(text)
        if not inner.strip(' '):
            return []
        items = [item.strip(' ') for item in inner.split(',')]
        # In a flow sequence ':' and '?' can be indicators, not text: libyaml refuses
        # ``[:0]`` and ``[a:?]`` and reads ``[?0]`` as a mapping, so such items are left to it.
        if not all(items) or any(item[0] in ':?' or ':?' in item for item in items):
            raise NotSimple(text)
        return [plain_scalar(item, self.cache) for item in items]


def line_items(key: str, items: bytes):
    """Return the items of one top-level list in block YAML (``_LineReader``), or None."""
    try:
        reader = _LineReader(key + ':\n' + items.decode('utf-8'), 0)
        return reader.document()[key]
    except (NotSimple, ValueError, RecursionError, pyyaml().YAMLError):
        return None


def line_front_matter(front: str, first_line: int):
    """Return (mapping, key lines, item lines) of block YAML in the subset, or None."""
    if yaml_unsafe(front):
        return None
    reader = _LineReader(front.replace('\r\n', '\n'), first_line)
    if '\r' in front.replace('\r\n', ''):
        return None
    try:
        mapping = reader.document()
    except (NotSimple, ValueError, RecursionError, pyyaml().YAMLError):
        return None
    return mapping, reader.key_lines, reader.item_lines
