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
The RCAN Robot Memory Schema 1.0: what a valid memory entry, peer block and document are.

One home for the schema. Reading and writing the file lives in ``memory_file``; confidence
arithmetic lives in ``lifecycle``. The pydantic models (``MemoryEntry``, ``PeerEntry``,
``PeerBlock``, ``DocumentHeader``) are named here and defined in ``schema_models``, which
is imported the first time one of them is used: what this module checks by itself, in
bulk and without pydantic, is a file of the writer's own form, so a command that only
reads such a file (``robot-memory show``) never imports pydantic, about 50 ms of its start.
"""

import collections
import dataclasses
import datetime as dt
import hashlib
import itertools
import sys
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.rcan.schema_fields import _all_times
from robot_memory.rcan.schema_fields import _parse_utc_z
from robot_memory.rcan.schema_fields import _shared_columns
from robot_memory.rcan.schema_fields import _UNSAFE_CHARS  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import check_printable  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import clean_tags  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import clean_text  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import COLUMN_FIELDS
from robot_memory.rcan.schema_fields import ENTRY_TYPES  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import EntryType  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import FAST_TAG_PATTERN  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import FAST_TEXT_PATTERN  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import FAST_TIME_PATTERN  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import header_fields  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import ID_PATTERN  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import MAX_TAG_CHARS  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import MAX_TAGS  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import MAX_TEXT_CHARS  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import peer_block_fields  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import peer_columns
from robot_memory.rcan.schema_fields import PEER_KEYS  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import PEER_UNSET  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import RRN_PATTERN  # noqa: F401 - named here too
from robot_memory.rcan.schema_fields import SCHEMA_VERSION
from robot_memory.rcan.schema_fields import SPACE_RANGES  # noqa: F401 - named here too

if TYPE_CHECKING:  # pydantic, imported at first use (see __getattr__)
    from robot_memory.rcan.schema_models import MemoryEntry


# Names of ``schema_models``, read from there the first time they are used here.
_MODEL_NAMES = frozenset((
    'MemoryEntry', 'PeerEntry', 'PeerBlock', 'DocumentHeader', 'validate_entries_fast',
    'validate_entries_json', 'document_header', 'peer_block_header', 'peer_entries_fast',
    'ValidationError'))


def __getattr__(name: str):
    """``schema.MemoryEntry`` and the other names of ``schema_models``: imported at first use."""
    if name not in _MODEL_NAMES:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(_models(), name)
    globals()[name] = value  # looked up directly from now on
    return value


def _models():
    from robot_memory.rcan import schema_models  # noqa: I100 - lazy: pydantic, 100 ms, 7 MB of show
    return schema_models


def _is_model_entry(value) -> bool:
    """Whether ``value`` is a MemoryEntry or PeerEntry (none exists before the models load)."""
    models = sys.modules.get('robot_memory.rcan.schema_models')
    return models is not None and isinstance(value, models._EntryBase)


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
    id: str
    type: str
    text: str
    confidence: float
    first_seen: dt.datetime
    last_reinforced: Optional[dt.datetime]
    observation_count: int
    tags: tuple

    def __setattr__(self, name, value):
        raise AttributeError(f'a read-only entry cannot be changed ({name})')

    @property
    def extras(self) -> dict:
        """Unknown keys this entry carried: none (an entry with some is read as MemoryEntry)."""
        return {}

    def __eq__(self, other) -> bool:
        if not isinstance(other, EntryRecord) and not _is_model_entry(other):
            return NotImplemented
        return (all(getattr(self, name) == getattr(other, name) for name in COLUMN_FIELDS
                    if name != 'tags')
                and list(self.tags) == list(other.tags) and not other.extras)

    __hash__ = None  # type: ignore[assignment]  # equal to a MemoryEntry, so unhashable

    def __repr__(self) -> str:
        return 'EntryRecord(' + ', '.join(f'{name}={getattr(self, name)!r}'
                                          for name in COLUMN_FIELDS) + ')'


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

    def entry_by_id(self, entry_id: str) -> Optional['MemoryEntry']:
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
              tags=(), taken=()) -> 'MemoryEntry':
    """Create a validated entry first seen ``now`` with a fresh, collision-free ID."""
    return _models().MemoryEntry(
        id=make_entry_id(entry_type, text, taken),
        type=entry_type,
        text=text,
        confidence=confidence,
        first_seen=now,
        last_reinforced=now,
        observation_count=1,
        tags=list(tags),
    )


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
    if len(columns) != len(COLUMN_FIELDS):
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
    try:
        first_seen = list(map(_parse_utc_z, first_seen))
        last_reinforced = list(map(_parse_utc_z, last_reinforced))
    except ValueError:  # a date that does not exist (2026-02-30)
        return None
    types = list(map(sys.intern, types))  # four names, not one string an entry
    if records:
        return _records(ids, types, texts, confidences, first_seen, last_reinforced, counts,
                        tags)
    return _models().entries_of_columns(ids, types, texts, confidences, first_seen,
                                        last_reinforced, counts, tags)


def _records(*columns) -> list:
    """Return EntryRecords of checked columns (COLUMN_FIELDS order), equal values shared."""
    ids, types, texts, confidences, first_seen, last_reinforced, counts, tags = columns
    shared: dict = {}  # a timestamp, confidence, tag or set of tags that recurs is one object
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


def peer_records(items) -> Optional[list]:
    """Return peer entries of the writer's form as EntryRecords (read-only), or None."""
    columns = peer_columns(items)
    if columns is None:
        return None
    ids, types, texts, confidences, tags = columns
    unset = [None] * len(ids)
    return _records(ids, types, texts, confidences, unset, unset, unset, tags)


class PeerBlockRecord:
    """
    A peer block as read for answering: PeerBlock's fields, EntryRecords, no pydantic.

    Only a block of exactly the writer's keys is read so; one with keys of its own is read
    as a PeerBlock, which keeps them.
    """

    __slots__ = ('rrn', 'last_synced', 'entries')
    rrn: str
    last_synced: dt.datetime
    entries: list

    def __init__(self, rrn: str, last_synced: dt.datetime, entries: list):
        for name, value in (('rrn', rrn), ('last_synced', last_synced), ('entries', entries)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f'a read-only peer block cannot be changed ({name})')

    def __repr__(self) -> str:
        return (f'PeerBlockRecord(rrn={self.rrn!r}, last_synced={self.last_synced!r}, '
                f'entries={self.entries!r})')


def entry_index(entries, entry_id: str) -> Optional[int]:
    """Return the place of the entry with ``entry_id`` in ``entries``, or None."""
    return next((index for index, entry in enumerate(entries) if entry.id == entry_id), None)
