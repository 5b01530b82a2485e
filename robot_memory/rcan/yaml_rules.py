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
What libyaml reads differently from JSON: the YAML 1.1 rules every reader and the writer share.

The fast readers hand values to the C ``json`` module and the writer writes JSON values, so
a text holding a character libyaml refuses or folds, a key that is a YAML keyword or a number
YAML 1.1 reads another way is found here and left to libyaml.
"""

import functools
import json
import re
from typing import Any


def pyyaml():
    """Return the PyYAML module: a file of the writer's form is read without it."""
    import yaml  # lazy: PyYAML, 10-16 ms and 0.7 MB of robot-memory show
    return yaml


@functools.cache
def yaml_classes() -> tuple:
    """Return libyaml's C loader and dumper when present (5-10x faster), else PyYAML's."""
    yaml = pyyaml()
    if hasattr(yaml, 'CSafeLoader'):
        return yaml.CSafeLoader, yaml.CSafeDumper
    return yaml.SafeLoader, yaml.SafeDumper  # pragma: no cover - PyYAML without libyaml


@functools.cache
def tolerant_loader():
    """
    Return libyaml's loader, reading a plain scalar of timestamp form that is no date as text.

    YAML 1.1 reads ``2026-13-20T09:12:00Z`` as a timestamp and PyYAML's constructor then
    raises a bare ValueError (``month must be in 1..12``) that stops the whole file. As
    text, the entry holding it is refused by the schema with the field and the reason, and
    quarantined like any other invalid entry.
    """
    base = yaml_classes()[0]

    def timestamp(loader, node):
        try:
            return base.construct_yaml_timestamp(loader, node)
        except (ValueError, OverflowError):
            return loader.construct_scalar(node)

    loader: Any = type('TolerantLoader', (base,), {})
    loader.add_constructor('tag:yaml.org,2002:timestamp', timestamp)
    return loader


PLAIN_KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
# Plain words YAML 1.1 reads as booleans or null: such a key is not a string to libyaml.
YAML_KEYWORDS = frozenset(
    'yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF '
    'null Null NULL'.split())
# What libyaml refuses or folds; the fast path leaves such text to libyaml. A single
# character class (tab, controls, U+2028/U+2029, BOM, surrogates, U+FFFE/U+FFFF) scans a
# 4 MB front matter about four times faster than one alternation holding it and the escapes.
# Compiled at its first use (6 ms: reading a file's bytes never needs it, writing does).
_YAML_UNSAFE_CHAR = functools.cache(lambda: re.compile(
    '[^\x0a\x0d\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd'
    '\U00010000-\U0010ffff]'))
_YAML_UNSAFE_ESCAPE = re.compile(r'\\u[dD][89abAB]|\\U')


def yaml_unsafe(text: str) -> bool:
    """Whether ``text`` holds a character or escape libyaml reads differently from JSON."""
    return (_YAML_UNSAFE_CHAR().search(text) is not None
            or _YAML_UNSAFE_ESCAPE.search(text) is not None)


# The same set, found in UTF-8 bytes (no surrogates there: the bytes decoded strictly).
# Deleting every harmless single byte leaves the control bytes; the unsafe multi-byte
# characters (U+0080-U+009F, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF) are found by their
# sequences, each pattern led by a literal byte (a UTF-8 lead byte never occurs inside
# another character).
_UNSAFE_BYTES = bytes(range(0x0a)) + b'\x0b\x0c' + bytes(range(0x0e, 0x20)) + b'\x7f'
_HARMLESS_BYTES = bytes(byte for byte in range(256) if byte not in _UNSAFE_BYTES)
# Each sequence comes with its lead byte: a search only runs where that byte occurs at all.
_UNSAFE_SEQUENCES = ((b'\xc2', re.compile(rb'\xc2[\x80-\x9f]')),
                     (b'\xe2', re.compile(rb'\xe2\x80[\xa8\xa9]')),
                     (b'\xef', re.compile(rb'\xef(?:\xbb\xbf|\xbf[\xbe\xbf])')),
                     (b'\\', re.compile(rb'\\(?:u[dD][89abAB]|U)')))


# What a scan keeps of the bytes: the unsafe single bytes, and every byte of the unsafe
# sequences but the backslash's (ASCII letters). The few bytes kept of a text are searched
# for the sequences; one found there may join bytes that were apart, so it is confirmed in
# the whole text. One pass over the text instead of one per sequence.
_SEQUENCE_BYTES = b'\xc2\xe2\xef' + bytes(range(0x80, 0xa0)) + b'\xa8\xa9\xbb\xbe\xbf'
_NOT_KEPT = bytes(byte for byte in range(256)
                  if byte not in _UNSAFE_BYTES and byte not in _SEQUENCE_BYTES)


def yaml_unsafe_utf8(data: bytes) -> bool:
    """``yaml_unsafe(data.decode('utf-8'))`` for bytes that are valid UTF-8."""
    kept = data.translate(None, _NOT_KEPT)
    if kept.translate(None, _HARMLESS_BYTES):
        return True
    for lead, sequence in _UNSAFE_SEQUENCES:
        if lead == b'\\':
            if lead in data and sequence.search(data) is not None:
                return True
        elif lead in kept and sequence.search(kept) is not None \
                and sequence.search(data) is not None:
            return True
    return False


# PyYAML's YAML 1.1 float rule: 1e5 is a string there, 1.0e+5 a float.
_YAML_FLOAT = re.compile(r'[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?$')


def yaml_float(text: str):
    """Return a JSON float's text as YAML 1.1 reads it: a float, or a string (``1e5``)."""
    # A JSON float without an exponent has a '.', so YAML 1.1 reads it as a float too.
    if 'e' in text or 'E' in text:
        return float(text) if _YAML_FLOAT.match(text) else text
    return float(text)


def fast_loads(text: str) -> Any:
    """Return JSON text as libyaml reads the same text (YAML 1.1 floats, NaN as a string)."""
    return json.loads(text, parse_float=yaml_float, parse_constant=str)
