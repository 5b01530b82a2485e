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
The pydantic models of the RCAN Robot Memory Schema 1.0, and what builds them in bulk.

``robot_memory.rcan.schema`` is the schema's one home and names everything here
(``schema.MemoryEntry``); this module is imported the first time one of these names is
used, so a command that only reads a file of the writer's own form (``robot-memory show``)
never imports pydantic (~50 ms of its start). The bulk checks of ``schema`` stand in for
these models' validators; ``test_schema`` proves that they agree.
"""

import collections
import datetime as dt
import functools
import itertools
import operator
from typing import Any
from typing import Optional

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import ValidationError
from pydantic_core import core_schema
from pydantic_core import SchemaValidator

from robot_memory.common.timeutil import to_utc
from robot_memory.rcan.schema_fields import _parse_utc_z
from robot_memory.rcan.schema_fields import clean_tags
from robot_memory.rcan.schema_fields import clean_text
from robot_memory.rcan.schema_fields import COLUMN_FIELDS
from robot_memory.rcan.schema_fields import EntryType
from robot_memory.rcan.schema_fields import FAST_TAG_PATTERN
from robot_memory.rcan.schema_fields import FAST_TEXT_PATTERN
from robot_memory.rcan.schema_fields import FAST_TIME_PATTERN
from robot_memory.rcan.schema_fields import header_fields
from robot_memory.rcan.schema_fields import ID_PATTERN
from robot_memory.rcan.schema_fields import MAX_TAG_CHARS
from robot_memory.rcan.schema_fields import MAX_TAGS
from robot_memory.rcan.schema_fields import MAX_TEXT_CHARS
from robot_memory.rcan.schema_fields import peer_block_fields
from robot_memory.rcan.schema_fields import peer_columns
from robot_memory.rcan.schema_fields import PEER_KEYS
from robot_memory.rcan.schema_fields import PEER_UNSET
from robot_memory.rcan.schema_fields import RRN_PATTERN
from robot_memory.rcan.schema_fields import SCHEMA_VERSION


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
    entries: list = []
    append = entries.append
    # Entries are frozen, so nothing changes a fields set in place (model_copy copies it):
    # entries with the same fields share one set, saving ~0.7 KB an entry in the node.
    shared: set = set()
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


def entries_of_columns(ids, types, texts, confidences, first_seen, last_reinforced, counts,
                       tags) -> Optional[list]:
    """Return MemoryEntry objects of columns ``schema.entries_from_columns`` checked."""
    if not _columns_fit_the_model():
        return None
    count = len(ids)
    names = tuple(MemoryEntry.model_fields)
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


def _header_fits() -> bool:
    """Whether DocumentHeader is the model ``schema.header_fields`` checks for."""
    return _fits(DocumentHeader, {'_version_supported': (('schema_version',), 'before'),
                                  '_as_utc': (('last_updated',), 'after')},
                 {'rrn': (str, f"[_PydanticGeneralMetadata(pattern='{RRN_PATTERN}')]")})


def document_header(values: dict) -> DocumentHeader:
    """
    Return ``values`` (schema_version, rrn, last_updated) validated as a DocumentHeader.

    The writer's own form is checked by ``schema.header_fields`` without building the
    validator; anything else is validated by DocumentHeader, whose ValidationError names
    the field.
    """
    fields = header_fields(values)
    if fields is not None and _header_fits():
        schema_version, rrn, last_updated = fields
        return DocumentHeader.model_construct(schema_version=schema_version, rrn=rrn,
                                              last_updated=last_updated)
    return DocumentHeader.model_validate(values)


def _peer_block_fits() -> bool:
    """Whether PeerBlock is the model ``schema.peer_block_fields`` checks for."""
    return (_fits(PeerBlock, {'_as_utc': (('last_synced',), 'after')},
                  {'rrn': (str, f"[_PydanticGeneralMetadata(pattern='{RRN_PATTERN}')]"),
                   'last_synced': (dt.datetime, '[]')})
            and PeerBlock.model_config.get('extra') == 'allow')


def peer_block_header(values: dict) -> PeerBlock:
    """
    Return a peer block's ``rrn`` and ``last_synced`` (``values``) validated as a PeerBlock.

    Its ``entries`` are left empty (validated apart). The writer's own form is checked by
    ``schema.peer_block_fields``; anything else (another key too) is validated by PeerBlock.
    """
    fields = peer_block_fields(values)
    if fields is not None and _peer_block_fits():
        rrn, last_synced = fields
        return PeerBlock.model_construct(rrn=rrn, last_synced=last_synced)
    return PeerBlock.model_validate(values)


@functools.cache
def _peer_entries_fit_the_model() -> bool:
    fields = PeerEntry.model_fields
    return (_fits(PeerEntry, {name: _COLUMN_VALIDATORS[name] for name in
                              ('_text_is_printable', '_tags_are_clean', '_as_utc')},
                  {name: _COLUMN_CONSTRAINTS[name] for name in PEER_KEYS})
            and tuple(fields) == PEER_KEYS + PEER_UNSET
            and all(fields[name].default is None and not fields[name].validate_default
                    for name in PEER_UNSET)
            and PeerEntry.model_config.get('extra') == 'allow')


def peer_entries_fast(items) -> Optional[list]:
    """
    Return ``items`` as PeerEntry objects, or None: then validate with PeerEntry itself.

    For items of exactly the writer's keys (id, type, text, confidence, tags), checked in
    bulk by ``schema.peer_columns``; the contract is validate_entries_fast's.
    """
    columns = peer_columns(items)
    if columns is None or not _peer_entries_fit_the_model():
        return None
    fields_set = set(PEER_KEYS)
    entries = []
    for values in zip(*columns):
        entry = object.__new__(PeerEntry)
        object.__setattr__(entry, '__dict__', dict(zip(PEER_KEYS, values),
                                                   **dict.fromkeys(PEER_UNSET)))
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
