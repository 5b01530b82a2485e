"""The RCAN Robot Memory Schema 1.0 as pydantic v2 models.

One home for what a valid memory entry, peer block and document are. Reading
and writing the file lives in ``memory_file``; confidence arithmetic lives in
``lifecycle``.
"""

import dataclasses
import datetime as dt
import hashlib
import re
import unicodedata
from typing import Any, Literal, Optional

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator

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


def _clean_tags(tags: list) -> list:
    if len(tags) > MAX_TAGS:
        raise ValueError(f'at most {MAX_TAGS} tags are allowed, got {len(tags)}')
    cleaned = []
    for tag in tags:
        tag = tag.strip()
        if not tag or len(tag) > MAX_TAG_CHARS:
            raise ValueError(f'each tag must be 1 to {MAX_TAG_CHARS} characters, got {tag!r}')
        check_printable(tag, 'tag')
        cleaned.append(tag)
    return cleaned


class _EntryBase(BaseModel):
    """Fields and rules shared by own entries and peer entries."""

    # Unknown keys inside an entry are kept and written back: the file is lossless.
    model_config = ConfigDict(extra='allow', frozen=True, str_strip_whitespace=False)

    id: str = Field(pattern=ID_PATTERN, description='Stable identifier, e.g. mem-a3f9c1d2')
    type: EntryType
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    tags: list[str] = Field(default_factory=list)

    @field_validator('text')
    @classmethod
    def _text_is_printable(cls, value: str) -> str:
        if not value.strip():
            raise ValueError('text must not be blank')
        return check_printable(value, 'text')

    @field_validator('tags')
    @classmethod
    def _tags_are_clean(cls, value: list) -> list:
        return _clean_tags(value)

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

    model_config = ConfigDict(extra='allow', frozen=True)

    rrn: str = Field(pattern=RRN_PATTERN)
    last_synced: dt.datetime
    entries: list[PeerEntry] = Field(default_factory=list)

    @field_validator('last_synced')
    @classmethod
    def _as_utc(cls, value: dt.datetime) -> dt.datetime:
        return to_utc(value)


class DocumentHeader(BaseModel):
    """The required top-level scalars of a robot-memory.md front matter (RCAN §3.3)."""

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

    def replace_entry(self, entry: MemoryEntry) -> None:
        """Replace the own entry having ``entry.id``; raise KeyError if absent."""
        for index, current in enumerate(self.entries):
            if current.id == entry.id:
                self.entries[index] = entry
                return
        raise KeyError(entry.id)


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
