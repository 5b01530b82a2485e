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
The RCAN Robot Memory Schema 1.0 as pydantic v2 models.

One home for what a valid memory entry, peer block and document are. Reading
and writing the file lives in ``memory_file``; confidence arithmetic lives in
``lifecycle``.
"""

import collections
import dataclasses
import datetime as dt
import functools
import hashlib
import itertools
import operator
import re
import sys
from typing import Any
from typing import Literal
from typing import Optional
import unicodedata

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import ValidationError
from pydantic_core import core_schema
from pydantic_core import SchemaValidator

from robot_memory.timeutil import to_utc

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


class _EntryBase(BaseModel):
    """Fields and rules shared by own entries and peer entries."""

    # Unknown keys inside an entry are kept and written back: the file is lossless. The
    # validator is built when first used: a command that reads a file of the writer's own
    # entries (robot-memory show) never builds it, nor scans the installed packages for
    # pydantic plugins, as building the first validator of a process does (~50 ms).
    model_config = ConfigDict(extra='allow', frozen=True, str_strip_whitespace=False,
                              defer_build=True)

    id: str = Field(pattern=ID_PATTERN, description='Stable identifier, e.g. mem-a3f9c1d2')
    type: EntryType
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    tags: list[str] = Field(default_factory=list)

    @field_validator('text')
    @classmethod
    def _text_is_printable(cls, value: str) -> str:
        return clean_text(value)

    @field_validator('tags')
    @classmethod
    def _tags_are_clean(cls, value: list) -> list:
        return clean_tags(value)

    @property
    def extras(self) -> dict:
        """Unknown keys this entry carried, in their original order."""
        return dict(self.__pydantic_extra__ or {})


class MemoryEntry(_EntryBase):
    """One of the robot's own operational observations (RCAN §3.4)."""

    first_seen: dt.datetime
    last_reinforced: dt.datetime
    observation_count: int = Field(ge=1, strict=False)

    @field_validator('first_seen', 'last_reinforced')
    @classmethod
    def _as_utc(cls, value: dt.datetime) -> dt.datetime:
        return to_utc(value)

    @field_validator('observation_count', mode='before')
    @classmethod
    def _count_is_whole(cls, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError('observation_count must be a whole number ≥ 1')
        return value


# MemoryEntry's fields in the writer's order (one line each, see memory_file._entry_block).
COLUMN_FIELDS = ('id', 'type', 'text', 'confidence', 'first_seen', 'last_reinforced',
                 'observation_count', 'tags')


class EntryRecord:
    """
    An own entry as read for answering, not for changing: MemoryEntry's fields, no pydantic.

    ``MemoryFile.load(read_only=True)`` (memory_node's cached document) gives these for
    entries of the writer's own form, checked in bulk as ``entries_from_columns`` checks
    them. A record takes about 100 bytes against about 420 for a MemoryEntry (its field
    dict, its extras dict), equal timestamps, confidences, tags and sets of tags are one
    object each, and ``tags`` is a tuple: at 10,000 entries the cached document holds
    3.5 MB instead of 8 MB.
    Whatever changes entries (a dream, a prune, a merge) loads them as MemoryEntry.
    """

    __slots__ = COLUMN_FIELDS  # set once, by schema._records

    def __setattr__(self, name, value):
        raise AttributeError(f'a read-only entry cannot be changed ({name})')

    @property
    def extras(self) -> dict:
        """Unknown keys this entry carried: none (an entry with some is read as MemoryEntry)."""
        return {}

    def __eq__(self, other) -> bool:
        if not isinstance(other, (EntryRecord, MemoryEntry)):
            return NotImplemented
        return (all(getattr(self, name) == getattr(other, name) for name in COLUMN_FIELDS
                    if name != 'tags')
                and list(self.tags) == list(other.tags) and not other.extras)

    __hash__ = None

    def __repr__(self) -> str:
        return 'EntryRecord(' + ', '.join(f'{name}={getattr(self, name)!r}'
                                          for name in COLUMN_FIELDS) + ')'


class PeerEntry(_EntryBase):
    """An entry received from a peer robot (RCAN §6); timing fields are optional."""

    first_seen: Optional[dt.datetime] = None
    last_reinforced: Optional[dt.datetime] = None
    observation_count: Optional[int] = Field(default=None, ge=1)

    @field_validator('first_seen', 'last_reinforced')
    @classmethod
    def _as_utc(cls, value: Optional[dt.datetime]) -> Optional[dt.datetime]:
        return None if value is None else to_utc(value)


class PeerBlock(BaseModel):
    """What one peer robot shared, as of ``last_synced``."""

    model_config = ConfigDict(extra='allow', frozen=True, defer_build=True)

    rrn: str = Field(pattern=RRN_PATTERN)
    last_synced: dt.datetime
    entries: list[PeerEntry] = Field(default_factory=list)

    @field_validator('last_synced')
    @classmethod
    def _as_utc(cls, value: dt.datetime) -> dt.datetime:
        return to_utc(value)


class DocumentHeader(BaseModel):
    """The required top-level scalars of a robot-memory.md front matter (RCAN §3.3)."""

    model_config = ConfigDict(defer_build=True)

    schema_version: str
    rrn: str = Field(pattern=RRN_PATTERN)
    last_updated: dt.datetime

    @field_validator('schema_version', mode='before')
    @classmethod
    def _version_supported(cls, value: Any) -> str:
        text = str(value).strip()
        if text in ('1', '1.0'):
            return SCHEMA_VERSION
        raise ValueError(
            f'schema_version {value!r} is not supported (this reader understands "1.0"); '
            'upgrade robot_memory or convert the file'
        )

    @field_validator('last_updated')
    @classmethod
    def _as_utc(cls, value: dt.datetime) -> dt.datetime:
        return to_utc(value)


@dataclasses.dataclass
class MemoryDocument:
    """A whole robot-memory.md: front matter plus the Markdown body, byte for byte."""

    rrn: str
    last_updated: dt.datetime
    entries: list = dataclasses.field(default_factory=list)
    # None means the file had no peer_context key; it is then not written either.
    peer_context: Optional[list] = None
    schema_version: str = SCHEMA_VERSION
    # Unknown top-level keys, in file order; written back after the known keys.
    extra: dict = dataclasses.field(default_factory=dict)
    body: bytes = b''

    def entry_by_id(self, entry_id: str) -> Optional[MemoryEntry]:
        """Return the own entry with ``entry_id``, or None."""
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        return None


def make_entry_id(entry_type: str, text: str, taken=()) -> str:
    """Return ``mem-`` + sha256(type:text)[:8], lengthened while it collides with ``taken``."""
    digest = hashlib.sha256(f'{entry_type}:{text}'.encode('utf-8')).hexdigest()
    for length in range(8, len(digest) + 1, 2):
        candidate = 'mem-' + digest[:length]
        if candidate not in taken:
            return candidate
    suffix = 2
    while f'mem-{digest}-{suffix}' in taken:
        suffix += 1
    return f'mem-{digest}-{suffix}'


def new_entry(entry_type: str, text: str, confidence: float, now: dt.datetime,
              tags=(), taken=()) -> MemoryEntry:
    """Create a validated entry first seen ``now`` with a fresh, collision-free ID."""
    return MemoryEntry(
        id=make_entry_id(entry_type, text, taken),
        type=entry_type,
        text=text,
        confidence=confidence,
        first_seen=now,
        last_reinforced=now,
        observation_count=1,
        tags=list(tags),
    )


# ------------------------------------------------------------------ fast list validation
#
# Loading a 10,000-entry file validates 10,000 entries. Through ``MemoryEntry`` that
# costs six Python-level validator calls per entry. ``validate_entries_fast`` checks the
# same rules inside pydantic-core (Rust regular expressions, strict types) for the
# inputs a writer produces, and answers None for anything it is not sure of; the caller
# then validates with ``MemoryEntry`` itself. Its contract, proven by the tests:
#
#   whenever it returns a list, ``[MemoryEntry.model_validate(item) for item in items]``
#   succeeds and returns equal entries (same field values and types, UTC as
#   ``datetime.timezone.utc``, the same unknown keys and the same fields set).
#
# So it only ever says yes to what ``MemoryEntry`` says yes to, with the same result;
# every "no", and every error message, comes from ``MemoryEntry``.

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


def _walk(schema):
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _walk(value)
    elif isinstance(schema, (list, tuple)):
        for value in schema:
            yield from _walk(value)


def _after(function, inner: dict) -> dict:
    return {'type': 'function-after', 'function': {'type': 'no-info', 'function': function},
            'schema': inner}


def _build_fast_entries():
    """Return the fast list validator, or None when MemoryEntry is not the model it was made for."""
    schema = MemoryEntry.__pydantic_core_schema__
    if schema.get('type') != 'model' or schema['schema'].get('type') != 'model-fields':
        return None
    fields = schema['schema']['fields']
    dt_schema = {'type': 'datetime', 'microseconds_precision': 'truncate'}
    # What MemoryEntry's Python-level validators sit on, exactly; any change to the model
    # (another validator, another limit) switches the fast validator off rather than
    # letting it disagree.
    expected = {
        'text': _after(MemoryEntry._text_is_printable,
                       {'type': 'str', 'min_length': 1, 'max_length': MAX_TEXT_CHARS}),
        'first_seen': _after(MemoryEntry._as_utc, dt_schema),
        'last_reinforced': _after(MemoryEntry._as_utc, dt_schema),
        'observation_count': {'type': 'function-before',
                              'function': {'type': 'no-info',
                                           'function': MemoryEntry._count_is_whole},
                              'schema': {'type': 'int', 'ge': 1, 'strict': False}},
        'tags': {'type': 'default', 'default_factory': list,
                 'default_factory_takes_data': False,
                 'schema': _after(MemoryEntry._tags_are_clean,
                                  {'type': 'list', 'items_schema': {'type': 'str'}})},
    }
    fast_time = core_schema.chain_schema([
        core_schema.str_schema(strict=True, pattern=FAST_TIME_PATTERN),
        core_schema.no_info_plain_validator_function(_parse_utc_z),
    ])
    replacement = {
        'text': core_schema.str_schema(min_length=1, max_length=MAX_TEXT_CHARS,
                                       pattern=FAST_TEXT_PATTERN),
        'first_seen': fast_time,
        'last_reinforced': fast_time,
        'observation_count': core_schema.int_schema(ge=1, strict=True),
        'tags': core_schema.with_default_schema(
            core_schema.list_schema(core_schema.str_schema(
                min_length=1, max_length=MAX_TAG_CHARS, pattern=FAST_TAG_PATTERN),
                max_length=MAX_TAGS),
            default_factory=list),
    }
    new_fields = {}
    for name, field in fields.items():
        if name in expected:
            if field.get('schema') != expected[name]:
                return None
            new_fields[name] = dict(field, schema=replacement[name])
        elif any(str(node.get('type', '')).startswith('function') for node in _walk(field)):
            return None  # a validator this module does not know about
        else:
            new_fields[name] = field
    if set(new_fields) != set(expected) | {'id', 'type', 'confidence'}:
        return None
    if MemoryEntry.__private_attributes__ or MemoryEntry.__pydantic_post_init__:
        return None
    inner = dict(schema['schema'], fields=new_fields)
    # Fields only: a 'model' schema naming MemoryEntry would make pydantic-core reuse the
    # model's own validator. The instances are made below as model_construct makes them.
    return SchemaValidator(core_schema.list_schema(inner), schema.get('config'))


@functools.cache
def _fast_entries():
    """Return the fast list validator, built at its first use (None: it is off)."""
    validator = _build_fast_entries()
    if validator is not None and not _fast_entries_agree(validator):  # pragma: no cover
        return None
    return validator


def _make_entries(validated) -> list:
    new = object.__new__
    set_attribute = object.__setattr__
    entries = []
    append = entries.append
    # Entries are frozen, so nothing changes a fields set in place (model_copy copies it):
    # entries with the same fields share one set, saving ~0.7 KB an entry in the node.
    shared = set()
    for values, extra, fields_set in validated:
        if fields_set == shared:
            fields_set = shared
        else:
            shared = fields_set
        entry = new(MemoryEntry)
        set_attribute(entry, '__dict__', values)
        set_attribute(entry, '__pydantic_extra__', extra)
        set_attribute(entry, '__pydantic_fields_set__', fields_set)
        set_attribute(entry, '__pydantic_private__', None)
        append(entry)
    return entries


def validate_entries_fast(items) -> Optional[list]:
    """``items`` as MemoryEntry objects, or None: then validate with MemoryEntry itself."""
    validator = _fast_entries() if isinstance(items, list) else None
    if validator is None:
        return None
    try:
        validated = validator.validate_python(items)
    except (ValidationError, ValueError, TypeError):
        return None
    return _make_entries(validated)


def _holds_float(value) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is list:
        return any(map(_holds_float, value))
    if kind is dict:
        return any(map(_holds_float, value.values()))
    return False


def validate_entries_json(data: bytes, pairs: int) -> Optional[list]:
    """
    Return entries of a JSON array parsed and checked in one pass, or None: then use ``json``.

    No Python object is made for the raw items, which halves the peak memory of a large
    load. None unless the items hold ``pairs`` keys in all (a duplicate key is one fewer)
    and no unknown key holds a float (JSON's ``1e5`` and ``NaN`` are strings to YAML 1.1;
    the declared fields check their own types).
    """
    validator = _fast_entries()
    if validator is None:
        return None
    try:
        validated = validator.validate_json(data)
    except (ValidationError, ValueError, TypeError):
        return None
    if sum(len(fields_set) for _, _, fields_set in validated) != pairs or any(
            extra and _holds_float(extra) for _, extra, _ in validated):
        return None
    return _make_entries(validated)


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


def _slot_setter(name: str):
    """Return the ``__set__`` of the attribute descriptor ``name`` of MemoryEntry's class."""
    for klass in MemoryEntry.__mro__:
        if name in vars(klass):
            return vars(klass)[name].__set__
    raise AttributeError(name)


# Setting an instance's __dict__ and pydantic's slots through their descriptors, as
# object.__setattr__ does, without looking each name up again.
_ENTRY_SETTERS = tuple(_slot_setter(name) for name in (
    '__dict__', '__pydantic_extra__', '__pydantic_fields_set__', '__pydantic_private__'))


# What entries_from_columns checks in bulk stands in for these validators of MemoryEntry
# ((fields, mode) by name) and these constraints of its fields: any change to the model
# switches the bulk checks off rather than letting them disagree. Read from the class as
# declared, so nothing is built (building the validator is what a reading command saves).
_COLUMN_VALIDATORS = {'_text_is_printable': (('text',), 'after'),
                      '_tags_are_clean': (('tags',), 'after'),
                      '_as_utc': (('first_seen', 'last_reinforced'), 'after'),
                      '_count_is_whole': (('observation_count',), 'before')}
_COLUMN_CONSTRAINTS = {
    'id': (str, f"[_PydanticGeneralMetadata(pattern='{ID_PATTERN}')]"),
    'type': (EntryType, '[]'),
    'text': (str, f'[MinLen(min_length=1), MaxLen(max_length={MAX_TEXT_CHARS})]'),
    'confidence': (float, '[Ge(ge=0.0), Le(le=1.0), AllowInfNan(allow_inf_nan=False)]'),
    'tags': (list[str], '[]'),
    'first_seen': (dt.datetime, '[]'),
    'last_reinforced': (dt.datetime, '[]'),
    'observation_count': (int, '[Strict(strict=False), Ge(ge=1)]'),
}


@functools.cache
def _columns_fit_the_model(model=None) -> bool:
    """Whether ``model`` (MemoryEntry) is the model entries_from_columns was made for."""
    model = model or MemoryEntry
    return (_fits(model, _COLUMN_VALIDATORS, _COLUMN_CONSTRAINTS)
            and sorted(model.model_fields) == sorted(COLUMN_FIELDS)
            and model.model_config.get('extra') == 'allow')


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
            return None  # NaN compares false, so it does not pass either
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


def entries_from_columns(columns, count: int, strings_checked: bool = False,
                         records: bool = False) -> Optional[list]:
    """
    Build ``count`` entries from one list per field (COLUMN_FIELDS order), checked in bulk.

    For entries with exactly the eight fields and the values the writer produces, this
    checks MemoryEntry's rules a column at a time (a regular expression or a ``min`` over
    10,000 values instead of 10,000 validator calls) and builds the entries as
    ``validate_entries_fast`` does. Anything else (an unknown key, a timestamp in another
    form, a value of another type) gives None: then validate with MemoryEntry. Its
    contract is ``validate_entries_fast``'s, proven by the same tests. ``strings_checked``
    tells that the caller already found none of the characters ``check_printable`` refuses
    in the texts and tags (memory_file does, for a front matter with no escape in them).
    With ``records`` the entries are EntryRecords (read-only, no pydantic) instead.
    ``columns`` is emptied: the values move into the entries.
    """
    if not _columns_fit_the_model() or len(columns) != len(COLUMN_FIELDS):
        return None
    ids, types, texts, confidences, first_seen, last_reinforced, counts, tags = columns
    columns[:] = ()  # each column is freed as soon as it is turned into the entries' values
    if any(type(column) is not list or len(column) != count for column in
           (ids, types, texts, confidences, first_seen, last_reinforced, counts, tags)) \
            or not count:
        return None
    confidences = _shared_columns(ids, types, texts, confidences, tags, strings_checked)
    try:
        if confidences is None or not (_all_times(first_seen) and _all_times(last_reinforced)):
            return None
        if set(map(type, counts)) != {int} or min(counts) < 1:
            return None
    except (TypeError, UnicodeEncodeError):
        return None
    names = tuple(MemoryEntry.model_fields)
    if sorted(names) != sorted(COLUMN_FIELDS):
        return None
    try:
        first_seen = list(map(_parse_utc_z, first_seen))
        last_reinforced = list(map(_parse_utc_z, last_reinforced))
    except ValueError:  # a date that does not exist (2026-02-30)
        return None
    types = list(map(sys.intern, types))  # four names, not one string an entry
    if records:
        return _records(ids, types, texts, confidences, first_seen, last_reinforced, counts,
                        tags)
    by_name = dict(zip(COLUMN_FIELDS, (ids, types, texts, confidences, first_seen,
                                       last_reinforced, counts, tags)))
    del ids, types, texts, confidences, first_seen, last_reinforced, counts, tags
    # Each step a C loop: copies of one dict of the field names (in the model's order),
    # filled a column at a time; then the entries, made as _make_entries makes them
    # (one fields set shared by all).
    values = list(map(dict.copy, itertools.repeat(dict.fromkeys(names), count)))
    for name in names:
        collections.deque(map(operator.setitem, values, itertools.repeat(name),
                              by_name.pop(name)), maxlen=0)
    entries = list(map(object.__new__, itertools.repeat(MemoryEntry, count)))
    set_dict, set_extra, set_fields_set, set_private = _ENTRY_SETTERS
    for setter, items in ((set_dict, values),
                          (set_extra, itertools.starmap(dict, itertools.repeat((), count))),
                          (set_fields_set, itertools.repeat(set(names), count)),
                          (set_private, itertools.repeat(None, count))):
        collections.deque(map(setter, entries, items), maxlen=0)
    return entries


def _records(*columns) -> list:
    """Return EntryRecords of checked columns (COLUMN_FIELDS order), equal values shared."""
    ids, types, texts, confidences, first_seen, last_reinforced, counts, tags = columns
    shared = {}  # a timestamp, confidence, tag or set of tags that recurs is one object
    first_seen = list(map(shared.setdefault, first_seen, first_seen))
    last_reinforced = list(map(shared.setdefault, last_reinforced, last_reinforced))
    confidences = list(map(shared.setdefault, confidences, confidences))
    # A file's tags are a few words over and over: 20,000 tag strings are 1 MB, 16 are 1 KB.
    tags = [shared.setdefault(key, key) for key in
            (tuple(map(shared.setdefault, value, value)) if value else () for value in tags)]
    entries = list(map(object.__new__, itertools.repeat(EntryRecord, len(ids))))
    for name, column in zip(COLUMN_FIELDS, (ids, types, texts, confidences, first_seen,
                                            last_reinforced, counts, tags)):
        collections.deque(map(object.__setattr__, entries, itertools.repeat(name), column),
                          maxlen=0)
    return entries


_RRN = re.compile(RRN_PATTERN[1:-1])


def _writer_time(value) -> Optional[dt.datetime]:
    """Return a timestamp of the writer's form (FAST_TIME_PATTERN) as UTC, else None."""
    if type(value) is not str:
        return None
    try:
        return _parse_utc_z(value) if _all_times([value]) else None
    except ValueError:  # not ASCII, or a date that does not exist
        return None


def _fits(model, validators: dict, constraints: dict) -> bool:
    """Whether ``model`` declares exactly ``validators`` and, for its fields, ``constraints``."""
    decorators = model.__pydantic_decorators__
    declared = {name: (tuple(found.info.fields), found.info.mode)
                for name, found in decorators.field_validators.items()}
    fields = {name: (field.annotation, repr(field.metadata))
              for name, field in model.model_fields.items() if name in constraints}
    return (declared == validators and fields == constraints
            and not (decorators.model_validators or decorators.validators
                     or decorators.root_validators or model.__private_attributes__
                     or model.__pydantic_post_init__))


def document_header(values: dict) -> DocumentHeader:
    """
    Return ``values`` (schema_version, rrn, last_updated) validated as a DocumentHeader.

    The writer's own form (``"1.0"``, an RRN, a UTC time as ``format_iso`` writes it) is
    checked here, as DocumentHeader checks it, without building its validator; anything
    else is validated by DocumentHeader, whose ValidationError names the field.
    """
    version, rrn = values.get('schema_version'), values.get('rrn')
    stamp = _writer_time(values.get('last_updated'))
    if type(version) is str and version.strip() in ('1', '1.0') and type(rrn) is str \
            and _RRN.fullmatch(rrn) and stamp is not None and _fits(
                DocumentHeader, {'_version_supported': (('schema_version',), 'before'),
                                 '_as_utc': (('last_updated',), 'after')},
                {'rrn': (str, f"[_PydanticGeneralMetadata(pattern='{RRN_PATTERN}')]")}):
        return DocumentHeader.model_construct(schema_version=SCHEMA_VERSION, rrn=rrn,
                                              last_updated=stamp)
    return DocumentHeader.model_validate(values)


def peer_block_header(values: dict) -> PeerBlock:
    """
    Return a peer block's ``rrn`` and ``last_synced`` (``values``) validated as a PeerBlock.

    Its ``entries`` are left empty (validated apart). The writer's own form is checked here
    as PeerBlock checks it; anything else (another key too) is validated by PeerBlock.
    """
    rrn, stamp = values.get('rrn'), _writer_time(values.get('last_synced'))
    if values.keys() == {'rrn', 'last_synced'} and type(rrn) is str and _RRN.fullmatch(rrn) \
            and stamp is not None and _fits(
                PeerBlock, {'_as_utc': (('last_synced',), 'after')},
                {'rrn': (str, f"[_PydanticGeneralMetadata(pattern='{RRN_PATTERN}')]"),
                 'last_synced': (dt.datetime, '[]')}) \
            and PeerBlock.model_config.get('extra') == 'allow':
        return PeerBlock.model_construct(rrn=rrn, last_synced=stamp)
    return PeerBlock.model_validate(values)


# A peer entry as the writer writes it: no timing fields (they are None, left out).
_PEER_KEYS = ('id', 'type', 'text', 'confidence', 'tags')
_PEER_UNSET = ('first_seen', 'last_reinforced', 'observation_count')


@functools.cache
def _peer_entries_fit_the_model() -> bool:
    fields = PeerEntry.model_fields
    return (_fits(PeerEntry, {name: _COLUMN_VALIDATORS[name] for name in
                              ('_text_is_printable', '_tags_are_clean', '_as_utc')},
                  {name: _COLUMN_CONSTRAINTS[name] for name in _PEER_KEYS})
            and tuple(fields) == _PEER_KEYS + _PEER_UNSET
            and all(fields[name].default is None and not fields[name].validate_default
                    for name in _PEER_UNSET)
            and PeerEntry.model_config.get('extra') == 'allow')


def peer_entries_fast(items) -> Optional[list]:
    """
    Return ``items`` as PeerEntry objects, or None: then validate with PeerEntry itself.

    For items of exactly the writer's keys (id, type, text, confidence, tags), checked in
    bulk as entries_from_columns checks them; the contract is validate_entries_fast's.
    """
    if type(items) is not list or not items or not _peer_entries_fit_the_model():
        return None
    keys = set(_PEER_KEYS)
    if any(type(item) is not dict or item.keys() != keys for item in items):
        return None
    ids, types, texts, confidences, tags = (list(map(operator.itemgetter(name), items))
                                            for name in _PEER_KEYS)
    confidences = _shared_columns(ids, types, texts, confidences, tags, False)
    if confidences is None:
        return None
    fields_set = set(_PEER_KEYS)
    entries = []
    for values in zip(ids, map(sys.intern, types), texts, confidences, tags):
        entry = object.__new__(PeerEntry)
        object.__setattr__(entry, '__dict__', dict(zip(_PEER_KEYS, values),
                                                   **dict.fromkeys(_PEER_UNSET)))
        object.__setattr__(entry, '__pydantic_extra__', {})
        object.__setattr__(entry, '__pydantic_fields_set__', fields_set)
        object.__setattr__(entry, '__pydantic_private__', None)
        entries.append(entry)
    return entries


def _fast_entries_agree(validator) -> bool:
    """Self-check when it is built: the fast ``validator`` builds what MemoryEntry builds."""
    sample = {'id': 'mem-0', 'type': 'resolved', 'text': 'a — b', 'confidence': 0.5,
              'first_seen': '2026-01-02T03:04:05.000006Z',
              'last_reinforced': '2026-01-02T03:04:05Z', 'observation_count': 2,
              'tags': ['x'], 'unknown': [1]}
    try:
        [fast] = _make_entries(validator.validate_python([sample]))
    except (TypeError, ValueError):
        return False
    slow = MemoryEntry.model_validate(sample)
    return all(getattr(fast, name, None) == getattr(slow, name)
               for name in ('__dict__', '__pydantic_extra__', '__pydantic_fields_set__',
                            '__pydantic_private__')) and \
        fast.first_seen.tzinfo is slow.first_seen.tzinfo
