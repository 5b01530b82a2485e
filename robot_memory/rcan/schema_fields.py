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
The RCAN schema's plain parts, without pydantic: limits, patterns, text and tag checks.

Also the bulk checks of columns, headers and peer blocks a writer's own file passes. Both
``schema`` (which names all of these) and ``schema_models`` (the pydantic models) build on
this module, so neither imports the other's half.
"""

import datetime as dt
import itertools
import operator
import re
import sys
from typing import Literal
from typing import Optional
import unicodedata

SCHEMA_VERSION = '1.0'
ENTRY_TYPES = ('hardware_observation', 'environment_note', 'behavior_pattern', 'resolved')
EntryType = Literal['hardware_observation', 'environment_note', 'behavior_pattern', 'resolved']

MAX_TEXT_CHARS = 500
MAX_TAGS = 32
MAX_TAG_CHARS = 64
ID_PATTERN = r'^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'
RRN_PATTERN = r'^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$'

# Characters a YAML stream cannot carry as they are, or that would break the
# one-line-per-entry context block: control characters, surrogates, Unicode line
# and paragraph separators, and the non-characters U+FFFE / U+FFFF.
_UNSAFE_CHARS = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]')


def check_printable(value: str, what: str) -> str:
    """Refuse strings holding control characters or characters YAML cannot carry."""
    match = _UNSAFE_CHARS.search(value)
    if match:
        char = match.group()
        name = unicodedata.name(char, 'control character')
        raise ValueError(
            f'{what} contains U+{ord(char):04X} ({name}) at position {match.start()}; '
            'use a single line of printable text'
        )
    return value


def clean_text(value: str, check=check_printable) -> str:
    """Return an entry's ``value`` checked: not blank, and ``check(value, 'text')`` (printable)."""
    if not value.strip():
        raise ValueError('text must not be blank')
    return check(value, 'text')


def clean_tags(tags: list, strip: bool = True, max_tags: Optional[int] = MAX_TAGS,
               check=check_printable) -> list:
    """
    Return ``tags`` checked: 1 to MAX_TAG_CHARS printable characters each (ValueError if not).

    ``strip`` trims each tag (an entry keeps them trimmed); without it a tag is checked and
    kept as given. ``max_tags`` None leaves the count to the caller's field. ``check(tag,
    'tag')`` returns the tag or raises: printable text by default.
    """
    if max_tags is not None and len(tags) > max_tags:
        raise ValueError(f'at most {max_tags} tags are allowed, got {len(tags)}')
    cleaned = []
    for tag in tags:
        kept = tag.strip() if strip else tag
        if not tag.strip() or len(kept) > MAX_TAG_CHARS:
            raise ValueError(f'each tag must be 1 to {MAX_TAG_CHARS} characters, got {kept!r}')
        cleaned.append(check(kept, 'tag'))
    return cleaned


# MemoryEntry's fields in the writer's order (one line each, see memory_file._entry_block).
COLUMN_FIELDS = ('id', 'type', 'text', 'confidence', 'first_seen', 'last_reinforced',
                 'observation_count', 'tags')


# ------------------------------------------------------------------ bulk checks
#
# Loading a 10,000-entry file checks 10,000 entries. Through ``MemoryEntry`` that costs six
# Python-level validator calls per entry. For the inputs a writer produces, the checks
# below (and ``schema_models.validate_entries_fast`` inside pydantic-core) apply the same
# rules a column at a time, and answer None for anything they are not sure of; the caller
# then validates with the model itself. So they only ever say yes to what the model says
# yes to, with the same result; every "no", and every error message, comes from the model.
# ``test_schema`` proves it, and that the models are still the ones these checks were made
# for (``schema_models._columns_fit_the_model`` and its kin).

def _rust_class_without(ranges) -> str:
    """Return a Rust regex class of every character outside ``ranges`` (pairs of code points)."""
    body = ''.join(f'\\x{{{low:X}}}' if low == high else f'\\x{{{low:X}}}-\\x{{{high:X}}}'
                   for low, high in ranges)
    return f'[^{body}]'


# _UNSAFE_CHARS without the surrogates (a string holding one is refused by pydantic-core
# before any pattern runs, as it cannot be turned into Rust text).
_UNSAFE_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0x2028, 0x2029), (0xFEFF, 0xFEFF),
                  (0xFFFE, 0xFFFF))
# The characters ``str.strip`` removes that _UNSAFE_CHARS lets through (test_schema checks
# this list against ``str.isspace`` over every code point).
SPACE_RANGES = ((0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
_SAFE = _rust_class_without(_UNSAFE_RANGES)
_SAFE_NOT_SPACE = _rust_class_without(sorted(_UNSAFE_RANGES + SPACE_RANGES))
# Printable and not blank: what _text_is_printable accepts, unchanged.
FAST_TEXT_PATTERN = f'^{_SAFE}*{_SAFE_NOT_SPACE}{_SAFE}*$'
# Printable, not blank and nothing for strip() to remove: what clean_tags keeps as it is.
FAST_TAG_PATTERN = f'^{_SAFE_NOT_SPACE}(?:{_SAFE}*{_SAFE_NOT_SPACE})?$'
# The writer's own timestamps (timeutil.format_iso of a UTC datetime).
FAST_TIME_PATTERN = r'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{6})?Z$'

if sys.version_info >= (3, 11):
    # A C function: no Python frame per timestamp. 'Z' gives datetime.timezone.utc.
    _parse_utc_z = dt.datetime.fromisoformat
else:  # pragma: no cover - Python 3.10 (ROS 2 Humble) does not read 'Z'
    def _parse_utc_z(text: str) -> dt.datetime:
        return dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=dt.timezone.utc)


# The columns of ``entries_from_columns``, in the order the writer puts the keys.
_ID = re.compile(ID_PATTERN[1:-1])
_ENTRY_TYPE_SET = frozenset(ENTRY_TYPES)
# FAST_TIME_PATTERN with every digit made '0', as one line each: the two shapes a
# timestamp of the writer has (without and with microseconds).
_DIGITS_TO_ZERO = bytes.maketrans(b'123456789', b'000000000')
_TIME_SHAPES = (b'0000-00-00T00:00:00Z\n', b'0000-00-00T00:00:00.000000Z\n')


def _all_printable(texts) -> bool:
    return _UNSAFE_CHARS.search(' '.join(texts)) is None


if sys.version_info >= (3, 11):
    def _all_match(pattern, values: list) -> bool:
        # The column joined by '\n' is checked by one match (a value holding a '\n' is
        # caught by counting them). The repeat is possessive: a greedy one would keep a
        # backtracking point per value, 100 MB for 200,000 entries.
        joined = '\n'.join(values)
        return joined.count('\n') == len(values) - 1 and re.fullmatch(
            f'(?:{pattern.pattern}\n)*+{pattern.pattern}', joined) is not None
else:  # pragma: no cover - Python 3.10 (ROS 2 Humble) has no possessive repeat
    def _all_match(pattern, values: list) -> bool:
        return all(map(pattern.fullmatch, values))


def _all_times(values: list) -> bool:
    """
    Whether every value matches FAST_TIME_PATTERN, checked by C loops instead of a regex.

    With each digit made '0', the lines must be the two shapes and nothing else: the
    shapes cannot overlap (each has its '-' at offsets 4 and 7 and its first '0000-' only
    at its start), so when as many of them as there are values fill the text exactly,
    each line is one shape. A value that is not a str raises TypeError, one that is not
    ASCII UnicodeEncodeError.
    """
    shape = ''.join(['\n'.join(values), '\n']).encode('ascii').translate(_DIGITS_TO_ZERO)
    short, long = _TIME_SHAPES
    shorts, longs = shape.count(short), shape.count(long)
    return (shorts + longs == len(values)
            and shorts * len(short) + longs * len(long) == len(shape))


def _shared_columns(ids, types, texts, confidences, tags, strings_checked) -> Optional[list]:
    """
    Check the columns own and peer entries share; return the confidences as floats, or None.

    A value of another type than str in the string columns raises TypeError (in join, set
    or str.strip), so their types need no pass of their own.
    """
    try:
        if not (_all_match(_ID, ids) and set(types) <= _ENTRY_TYPE_SET):
            return None
        if (max(map(len, texts)) > MAX_TEXT_CHARS or not all(map(str.strip, texts))
                or not (strings_checked or _all_printable(texts))):
            return None
        kinds = set(map(type, confidences))
        if not kinds <= {float, int} or not 0.0 <= min(confidences) <= max(confidences) <= 1.0:
            return None
        total = sum(confidences)  # NaN after the first value escapes min and max, not a sum
        if total != total:
            return None
        if set(map(type, tags)) != {list} or max(map(len, tags)) > MAX_TAGS:
            return None
        flat = list(itertools.chain.from_iterable(tags))
        if flat and (list(map(str.strip, flat)) != flat or min(map(len, flat)) < 1
                     or max(map(len, flat)) > MAX_TAG_CHARS
                     or not (strings_checked or _all_printable(flat))):
            return None
    except (TypeError, UnicodeEncodeError):
        return None
    return list(map(float, confidences)) if int in kinds else confidences


_RRN = re.compile(RRN_PATTERN[1:-1])


def _writer_time(value) -> Optional[dt.datetime]:
    """Return a timestamp of the writer's form (FAST_TIME_PATTERN) as UTC, else None."""
    if type(value) is not str:
        return None
    if value.endswith('+00:00'):  # as OpenCastor writes UTC: the same instant
        value = value[:-6] + 'Z'
    try:
        return _parse_utc_z(value) if _all_times([value]) else None
    except ValueError:  # not ASCII, or a date that does not exist
        return None


def header_fields(values: dict) -> Optional[tuple]:
    """
    Return (schema_version, rrn, last_updated) of a front matter's header, or None.

    The writer's own form (``"1.0"``, an RRN, a UTC time as ``format_iso`` writes it) is
    checked here as DocumentHeader checks it; None for anything else: then validate with
    DocumentHeader (``document_header``), whose ValidationError names the field.
    """
    version, rrn = values.get('schema_version'), values.get('rrn')
    stamp = _writer_time(values.get('last_updated'))
    if type(version) is str and version.strip() in ('1', '1.0') and type(rrn) is str \
            and _RRN.fullmatch(rrn) and stamp is not None:
        return SCHEMA_VERSION, rrn, stamp
    return None


def peer_block_fields(values: dict) -> Optional[tuple]:
    """
    Return (rrn, last_synced) of a peer block's header (``values``, entries apart), or None.

    The writer's own form is checked here as PeerBlock checks it; None for anything else
    (another key too): then validate with PeerBlock (``peer_block_header``).
    """
    rrn, stamp = values.get('rrn'), _writer_time(values.get('last_synced'))
    if values.keys() == {'rrn', 'last_synced'} and type(rrn) is str and _RRN.fullmatch(rrn) \
            and stamp is not None:
        return rrn, stamp
    return None


# A peer entry as the writer writes it: no timing fields (they are None, left out).
PEER_KEYS = ('id', 'type', 'text', 'confidence', 'tags')
PEER_UNSET = ('first_seen', 'last_reinforced', 'observation_count')


def peer_columns(items) -> Optional[tuple]:
    """
    Return (ids, types, texts, confidences, tags) of peer entries checked in bulk, or None.

    For items of exactly the writer's keys (PEER_KEYS), checked as entries_from_columns
    checks them; None for anything else: then validate with PeerEntry.
    """
    if type(items) is not list or not items:
        return None
    keys = set(PEER_KEYS)
    if any(type(item) is not dict or item.keys() != keys for item in items):
        return None
    ids, types, texts, confidences, tags = (list(map(operator.itemgetter(name), items))
                                            for name in PEER_KEYS)
    checked = _shared_columns(ids, types, texts, confidences, tags, False)
    if checked is None:
        return None
    return ids, list(map(sys.intern, types)), texts, checked, tags
