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
The one reader and the one writer of robot-memory.md (RCAN Robot Memory Schema 1.0).

The file is Markdown with a YAML front matter. The front matter is found by its
delimiter lines only (a line that is exactly ``---``), so entry text may contain
``---``. Everything after the closing delimiter is the Markdown body and is kept
byte for byte.

Writing produces the block style of RCAN §3.2, one key a line, with every value
as JSON (so it is plain YAML any YAML library reads, and OpenCastor's loader too)::

    entries:
      - id: "mem-a3f9c1d2"
        type: "hardware_observation"
        text: "..."
        confidence: 0.92

Reading that form (and the older one-line ``- {...}`` form) takes a fast path: the
lines are turned into JSON arrays for the C ``json`` module, with YAML 1.1 number
rules, so it means exactly what libyaml would read. Entries of exactly the shape written
here (eight lines each) are read a column at a time and checked in bulk
(``schema.entries_from_columns``), and their lines are kept as a view into the file's
bytes, not a copy. Peer blocks are written in the same block style. Block YAML written by hand or by
OpenCastor is read line by line (``_LineReader``); anything else is read with
libyaml's C loader, after anchors, aliases and deep nesting were refused. Entries
nobody changed are written back as the text they were read from, comments included.
Binary data and files above the size limit are refused, never migrated or half-read.

Safety: writes go to a temporary file in the same directory, are flushed and
fsynced, renamed over the old file and the directory is fsynced; the file is mode
0600; writers take an exclusive lock so the node and the CLI never lose each
other's updates. A file that cannot be parsed is never overwritten: writers set
it aside as ``<file>.corrupt-<time>``. One invalid entry is quarantined (kept in
``<file>.quarantine.jsonl``) and the valid entries survive.

A memory file that is a symbolic link (say onto a persistent partition) stays one:
every write goes through to the end of the chain of links, in that file's directory,
and the lock and the side files (archive, quarantine, ``.corrupt-`` and ``.legacy-``
copies) lie beside that target, on the same file system as the data they belong to,
so every link to one file shares one lock. A link to nothing is refused, never
replaced by a regular file.
"""

import contextlib
import dataclasses
import datetime as dt
import decimal
import fcntl
import functools
import gc
import glob
import itertools
import json
from json.encoder import encode_basestring as _quote
import operator
import os
import pathlib
import re
import time
from typing import Any
from typing import Iterator
from typing import Optional

from robot_memory.common.fileio import append_durably
from robot_memory.common.fileio import FILE_MODE
from robot_memory.common.fileio import fsync_directory
from robot_memory.common.fileio import kept_name
from robot_memory.common.fileio import side_file
from robot_memory.common.fileio import write_atomic
from robot_memory.common.lazy_imports import deferred
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC as _UTC
from robot_memory.common.validation_text import first_errors
from robot_memory.errors import MemoryFileError
from robot_memory.errors import MemoryLockTimeout
from robot_memory.locations import DEFAULT_PATH  # noqa: F401 - part of this API
from robot_memory.locations import ENV_VAR  # noqa: F401 - part of this API
from robot_memory.locations import link_target
from robot_memory.locations import resolve_path
from robot_memory.rcan import schema  # its pydantic models: schema.MemoryEntry, at first use
from robot_memory.rcan.schema import COLUMN_FIELDS
from robot_memory.rcan.schema import entries_from_columns
from robot_memory.rcan.schema import header_fields
from robot_memory.rcan.schema import make_entry_id
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.schema import peer_block_fields
from robot_memory.rcan.schema import peer_records
from robot_memory.rcan.schema import PeerBlockRecord
from robot_memory.rcan.schema import SCHEMA_VERSION

# Imported when first used: a file of the writer's form is read without it (robot-memory
# show then saves the ~20 ms of importing PyYAML).
yaml = deferred('yaml')
pydantic = deferred('pydantic')  # a file of the writer's own form is read without it


@functools.cache
def _yaml_classes() -> tuple:
    """Return libyaml's C loader and dumper when present (5-10x faster), else PyYAML's."""
    if hasattr(yaml, 'CSafeLoader'):
        return yaml.CSafeLoader, yaml.CSafeDumper
    return yaml.SafeLoader, yaml.SafeDumper  # pragma: no cover - PyYAML without libyaml


# A memory file larger than this is refused unread (the limit in MiB can be set in
# $CASTOR_ROBOT_MEMORY_MAX_MB): 200,000 entries take about 80 MiB.
MAX_FILE_ENV_VAR = 'CASTOR_ROBOT_MEMORY_MAX_MB'
DEFAULT_MAX_FILE_MB = 128
# Deepest nesting of collections a front matter may have (ours needs 6 plus unknown keys).
MAX_DEPTH = 64
# What one save may write to the quarantine: per item, and for all items together. An item
# over the limit is recorded by its reason, line and an excerpt, and the whole file it came
# from is kept beside it (``<file>.quarantined-<time>``), so nothing is lost.
QUARANTINE_ITEM_BYTES = 64 * 1024
QUARANTINE_RUN_BYTES = 1024 * 1024
UNSET_RRN = 'RRN-UNSET'

_KNOWN_KEYS = ('schema_version', 'rrn', 'last_updated', 'entries', 'peer_context')


@functools.cache
def _entries_adapter():
    """Return the validator (a TypeAdapter) of a list of MemoryEntry, built at its first use."""
    return pydantic.TypeAdapter(list[schema.MemoryEntry])


_KEY_LINE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?\r?$')
_PLAIN_KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
# Plain words YAML 1.1 reads as booleans or null: such a key is not a string to libyaml.
_YAML_KEYWORDS = frozenset(
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


def _yaml_unsafe(text: str) -> bool:
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


def _yaml_unsafe_utf8(data: bytes) -> bool:
    """``_yaml_unsafe(data.decode('utf-8'))`` for bytes that are valid UTF-8."""
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


def max_file_bytes() -> int:
    """Return the size limit of a memory file: ``$CASTOR_ROBOT_MEMORY_MAX_MB`` MiB, else 128 MiB."""
    text = os.environ.get(MAX_FILE_ENV_VAR, '').strip()
    if not text:
        return DEFAULT_MAX_FILE_MB * 2 ** 20
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = float('nan')
    if not 0 < megabytes < 2 ** 40:
        raise MemoryFileError(f'${MAX_FILE_ENV_VAR} must be a positive number of MiB, got '
                              f'{text!r}; unset it for the default {DEFAULT_MAX_FILE_MB} MiB')
    return int(megabytes * 2 ** 20)


def size_text(count: int) -> str:
    """Return a size for people: ``12.3 MiB`` from 1 MiB up, else ``1,234 bytes``."""
    return f'{count / 2 ** 20:.1f} MiB' if count >= 2 ** 20 else f'{count:,} bytes'


@dataclasses.dataclass
class Problem:
    """One thing wrong with a memory file, located by line when possible."""

    message: str
    line: Optional[int] = None

    def format(self, path=None) -> str:
        """``path:line: message`` as compilers print it."""
        where = str(path) if path is not None else '<memory>'
        return f'{where}:{self.line if self.line is not None else 1}: {self.message}'


@dataclasses.dataclass
class QuarantinedItem:
    """An entry (or peer block) that failed validation, kept verbatim with the reason."""

    section: str
    raw: Any
    reason: str
    line: Optional[int] = None


@dataclasses.dataclass
class LoadResult:
    """A parsed document plus what was wrong with the file it came from."""

    document: MemoryDocument
    problems: list = dataclasses.field(default_factory=list)
    quarantined: list = dataclasses.field(default_factory=list)
    # The whole original file when it was free-form (no schema_version) and migrated.
    legacy_original: Optional[bytes] = None
    # Read without libyaml: by the JSON fast path or the line reader (block YAML).
    used_fast_path: bool = False
    # The file's bytes, kept aside by a save whose quarantine would be too large to write.
    source: Optional[bytes] = dataclasses.field(default=None, repr=False)


# --------------------------------------------------------------------------- reading

def _yaml_float(text: str):
    # A JSON float without an exponent has a '.', so YAML 1.1 reads it as a float too.
    if 'e' in text or 'E' in text:
        return float(text) if _YAML_FLOAT.match(text) else text
    return float(text)


def _fast_loads(text: str) -> Any:
    return json.loads(text, parse_float=_yaml_float, parse_constant=str)


# The closing delimiter: a line that is ``---`` or ``...`` (trailing blanks allowed).
_CLOSING_LINE = re.compile(rb'\n(?:---|\.\.\.)[ \t\r]*(?:\n|\Z)')


def _split_front_matter(data: bytes):
    """Return (front matter bytes, line number of its first line, body bytes) or None."""
    if data.startswith(b'\xef\xbb\xbf'):
        data = data[3:]
    first_end = data.find(b'\n')
    first = data if first_end < 0 else data[:first_end]
    if first.rstrip(b' \t\r') != b'---':
        return None
    closing = _CLOSING_LINE.search(data, first_end) if first_end >= 0 else None
    if closing is None:
        raise MemoryFileError(
            'the front matter opened with --- on line 1 is never closed; add a line with just ---',
            line=1,
        )
    end = data.find(b'\n', closing.start() + 1)
    body_start = len(data) if end < 0 else end + 1
    return data[first_end + 1:closing.start() + 1], 2, data[body_start:]


# Where a top-level line starts: after a newline not followed by a blank line, a comment,
# an indented line or a one-line entry (``- {``, the form written before block style).
_TOP_LEVEL_LINE = re.compile(rb'\n(?![ #\n\r]|- \{)')
_COMMENT_OR_BLANK = re.compile(rb'^[ ]*(?:#[^\n]*)?\n', re.M)
_HAS_COMMENT_OR_BLANK = re.compile(rb'\n[ ]*(?:#|\n)')  # led by a literal: a quick search
_ITEM_START = re.compile(rb'^(?:- \{|  - )', re.M)
# An item with the comment and blank lines above it (they belong to the item below them).
_ITEM_WITH_COMMENTS = re.compile(rb'^(?:[ ]*(?:#[^\n]*)?\n)*(?:- \{|  - )', re.M)
_ANY_ITEM = re.compile(rb'^(?:- \{|  - |- )', re.M)
_ITEM_PATTERNS = {  # by the column of the items' dashes: (items, items with comments above)
    2: (_ITEM_START, _ITEM_WITH_COMMENTS),
    0: (re.compile(rb'^- ', re.M), re.compile(rb'^(?:[ ]*(?:#[^\n]*)?\n)*- ', re.M)),
}
_ENTRY_KEYS = (b'type', b'text', b'confidence', b'first_seen', b'last_reinforced',
               b'observation_count', b'tags')
_OTHER_BLOCK_KEY = re.compile(rb'\n    ([A-Za-z_][A-Za-z0-9_]*): ')
_OTHER_FIRST_KEY = re.compile(rb'\}, \{([A-Za-z_][A-Za-z0-9_]*): ')


def _quote_key(match) -> bytes:
    key = match.group(1)
    if key.decode('ascii') in _YAML_KEYWORDS:
        raise ValueError('a YAML keyword as a key')
    prefix = b', "' if match.group(0).startswith(b'\n') else b'}, {"'
    return prefix + key + b'": '


def _undo_pairs(value):
    """Return a value decoded with ``object_pairs_hook=tuple`` as the plain data it stands for."""
    kind = type(value)
    if kind is tuple:
        converted = {key: _undo_pairs(item) for key, item in value}
        if len(converted) != len(value):
            raise ValueError('a duplicate key')
        return converted
    if kind is list:
        return [_undo_pairs(item) for item in value]
    return value


class _ValidatedEntries(list):
    """Entries ``_block_items`` read and validated as MemoryEntry in one pass."""


def _validated(entries: Optional[list]) -> Optional[_ValidatedEntries]:
    """
    Return ``entries`` as _ValidatedEntries, or None when two share an id.

    A duplicate is quarantined as it was written, so its raw item must be read.
    """
    if entries is None or len({entry.id for entry in entries}) != len(entries):
        return None
    return _ValidatedEntries(entries)


# The lines of one entry exactly as the writer produces them (``_entry_block``).
_COLUMN_CHUNK_BYTES = 1 << 18  # 256 KiB: less alive at once, as fast (bench_memory_file)
_REPLACE_ROWS = 32
_COLUMN_PREFIXES = tuple((b'  - ' if index == 0 else b'    ') + name.encode('ascii') + b': '
                         for index, name in enumerate(COLUMN_FIELDS))


def _entry_columns(front: bytes, low: int, high: int, records: bool = False) -> Optional[list]:
    """
    Read entries of exactly the writer's shape (eight lines each) a column at a time.

    The n-th line of every entry is the same key, so line n, n+8, n+16... are the values
    of one field: each column becomes one JSON array (a line per value, so a value can
    neither spill into the next one nor hold two) for ``schema.entries_from_columns``.
    None when the block (``front[low:high]``) has another shape or a value is not what
    the writer writes. The block is read in pieces of about _COLUMN_CHUNK_BYTES, each
    turned into its entries before the next is read, so neither the lines nor the raw
    values of a large file ever exist as objects all at once. ``records``: EntryRecords.
    """
    width = len(_COLUMN_PREFIXES)
    # The front matter was scanned for unsafe characters; only an escape can make one.
    strings_checked = front.find(b'\\', low, high) < 0
    entries = []
    start = low
    while start < high:
        stop = (front.find(b'\n  - ', start + _COLUMN_CHUNK_BYTES, high)
                if start + _COLUMN_CHUNK_BYTES < high else -1)
        if stop < 0:
            stop = high
        lines = front[start:stop].split(b'\n')
        start = stop + 1
        rows, rest = divmod(len(lines), width)
        if rest or not rows:
            return None
        columns = []
        for index, prefix in enumerate(_COLUMN_PREFIXES):
            column = lines[index::width]
            # In pieces of a few KB: bytes.replace prepares its search anew for every
            # occurrence, which costs in proportion to what is left to search (CPython
            # 3.11 switches to a two-way search from 30,000 bytes on).
            pieces = [b',\n'.join([b'', *column[at:at + _REPLACE_ROWS]])
                      for at in range(0, rows, _REPLACE_ROWS)]
            del column
            values = list(map(bytes.replace, pieces, itertools.repeat(b'\n' + prefix),
                              itertools.repeat(b'\n')))
            # Every line starts with the prefix: the prefix was taken from after each
            # '\n' joining them (a line never holds a '\n'), once for every line.
            if sum(map(len, pieces)) - sum(map(len, values)) != rows * len(prefix):
                return None
            del pieces
            values[0] = b'[' + values[0][2:]  # the first line's ',\n'
            values.append(b']')
            try:
                # Plain json: a number with an exponent (a string to YAML 1.1) or NaN can
                # only pass as a confidence, where MemoryEntry reads that string as the
                # same number.
                columns.append(json.loads(b''.join(values)))
            except ValueError:  # not JSON (so not what the writer writes)
                return None
        del lines
        built = entries_from_columns(columns, rows, strings_checked=strings_checked,
                                     records=records)
        if built is None:
            return None
        entries += built
    return entries or None


def _block_items(block: bytes, validate_entries: bool = False):
    r"""
    Return entries written in block style, one key a line with JSON values, or None.

    ``block`` holds only item lines (``  - key: value`` and ``    key: value``). The
    lines become one JSON array: ``\n  - `` turns into ``}, {`` and ``\n    key: `` into
    ``, "key": ``. A line that smuggles in a second pair (``text: "a", "b": 1``, which
    libyaml refuses) needs a key inside a value; when a value holds one (or a mapping),
    objects are decoded as tuples of pairs, so such a line shows as an item with more
    pairs than lines and is left to libyaml. With ``validate_entries`` the items may come
    back as a ``_ValidatedEntries`` list of MemoryEntry (``schema.validate_entries_json``).
    """
    text = b'\n' + block
    items_count = text.count(b'\n  - ')
    lines_count = text.count(b'\n')
    if not text.startswith(b'\n  - '):
        return None
    text = text.replace(b'\n  - id: ', b'}, {"id": ').replace(b'\n  - ', b'}, {')
    for key in _ENTRY_KEYS:
        text = text.replace(b'\n    ' + key + b': ', b', "' + key + b'": ')
    if b'\n' in text:
        text = _OTHER_BLOCK_KEY.sub(_quote_key, text)
        if b'\n' in text:
            return None
    if text.count(b'}, {"') != items_count:
        text = _OTHER_FIRST_KEY.sub(_quote_key, text)
    if block.count(b'":') == block.count(b'\\":'):
        # No value holds a key (every '":' is an escaped quote in a string, and no line
        # key ends with a backslash): each line gave exactly its own pair.
        array = b'[' + text[3:] + b'}]'
        del text
        if validate_entries:
            entries = schema.validate_entries_json(array, lines_count)
            if entries is not None and len(entries) == items_count:
                validated = _validated(entries)
                if validated is not None:
                    return validated
        entries = json.loads(array, parse_float=_yaml_float, parse_constant=str)
        if len(entries) != items_count or sum(map(len, entries)) != lines_count:
            return None
        return entries
    items = json.loads(b'[' + text[3:] + b'}]', parse_float=_yaml_float, parse_constant=str,
                       object_pairs_hook=tuple)
    if len(items) != items_count or sum(map(len, items)) != lines_count:
        return None
    if text.count(b'{') == items_count:
        entries = list(map(dict, items))  # no nested mapping: each line gave one pair
        if sum(map(len, entries)) != lines_count:
            return None
        return entries
    # A nested mapping could take in the next line's pair: count each item's lines.
    starts = [match.start() for match in _ITEM_START.finditer(block)] + [len(block)]
    for index, pairs in enumerate(items):
        if len(pairs) != block.count(b'\n', starts[index], starts[index + 1]) + (
                index + 1 == len(items)):
            return None
    return [_undo_pairs(pairs) for pairs in items]


class _ItemLines:
    """Line numbers of the items of a list read by the fast path, found when first asked."""

    def __init__(self, first_line: int, block: bytes):
        self.first_line, self.block, self._found = first_line, block, None

    def __len__(self):
        return len(self._lines())

    def __getitem__(self, index):
        return self._lines()[index]

    def _lines(self):
        if self._found is None:
            found, line, at = [], self.first_line, 0
            block = bytes(self.block)  # a view into the file, when read by columns
            for match in _ITEM_START.finditer(block):
                line += block.count(b'\n', at, match.start())
                at = match.start()
                found.append(line)
            self._found = found
        return self._found


class _EntriesSkipped(list):
    """Top-level line starts found without scanning the entries' lines (see below)."""


def _top_level_starts(front: bytes, columns: bool) -> list:
    """
    Return where the top-level lines of ``front`` start, and ``len(front) + 1``.

    For ``columns`` (entries may be read by columns), the block of entries as the writer
    writes it (eight lines an entry, the last item the last ``  - id:`` line) is not
    scanned line by line: that is most of the front matter. The list is then an
    _EntriesSkipped; the column reader checks every line of the block, and when it
    does not take the block, the caller scans it all (``columns`` False).
    """
    entries = front.find(b'\nentries:\n') + 1 if not front.startswith(b'entries:\n') else 0
    last = front.rfind(b'\n  - id: ') + 1 if columns and entries else 0
    end = last
    for _ in range(8):
        if end <= 0:
            break
        end = front.find(b'\n', end) + 1
    if end > last > entries > 0 and front[end:end + 1] not in (b' ', b'#', b'\n', b'\r') \
            and not front.startswith(b'- {', end):
        starts = _EntriesSkipped([0])
        block_start = entries + len(b'entries:\n')
        # Up to the entries key's line, without its '\n' (at the end of the searched text a
        # lookahead would find nothing and take the first entry line for a top-level one).
        starts.extend(match.end() for match in _TOP_LEVEL_LINE.finditer(front, 0,
                                                                        block_start - 1))
        if end < len(front):
            starts.append(end)
            starts.extend(match.end() for match in _TOP_LEVEL_LINE.finditer(front, end))
    else:
        starts = [0]
        starts.extend(match.end() for match in _TOP_LEVEL_LINE.finditer(front))
    starts.append(len(front) + 1)
    return starts


def _fast_front_matter(front, first_line: int, checked: bool = False,
                       validate_entries: bool = False, source=None, skip_entries: bool = True,
                       records: bool = False):
    """
    Parse the canonical form; return (mapping, key lines, item blocks) or None to fall back.

    ``front`` is the front matter as UTF-8 bytes (or text). ``item blocks`` maps a key whose
    value is a list of entries to (line number of the line after the key, the raw lines
    as bytes, comments included). Entries are read in block style (``_block_items``) or
    as one-line ``- {...}`` mappings (the form written before). Comment lines are
    allowed between top-level keys and between entries; the leading comments of each
    top-level key are returned under the key ``None`` of ``item blocks`` as a dict.
    ``checked`` tells that the caller already found no character libyaml reads
    differently (``_yaml_unsafe_utf8``). Every byte is decoded here, so bytes that are
    not UTF-8 give None as well. ``validate_entries`` lets the block items of ``entries``
    come back validated (read by columns, or see ``_block_items``); ``source``, (the file's
    bytes, where ``front`` starts in them), lets the item block of entries read by columns
    be a view into the file instead of a copy: a large file is then not held twice.
    ``records``: entries read by columns come back as EntryRecords (a read-only load).
    """
    if isinstance(front, str):
        if _yaml_unsafe(front):
            return None
        front = front.encode('utf-8')
    elif not checked and _yaml_unsafe_utf8(front):
        return None
    if b'\r' in front:
        if front.count(b'\r') != front.count(b'\r\n'):
            return None  # a lone CR breaks a line for YAML
        front = front.replace(b'\r\n', b'\n')
        source = None  # the lines moved: no longer where they are in the file
    starts = _top_level_starts(front, validate_entries and skip_entries)
    mapping, key_lines, item_blocks, comments = {}, {}, {}, {}
    pending = b''  # comment lines waiting for the key below them
    line_number, counted_to = first_line, 0
    try:
        for index in range(len(starts) - 1):
            start, following = starts[index], starts[index + 1]
            line_number += front.count(b'\n', counted_to, start)
            counted_to = start
            end = front.find(b'\n', start)
            if end < 0:
                end = len(front)
            # The lines between this line and the next top-level one, if any (the entries
            # are copied only if they are not read by columns).
            columns_first = (validate_entries and end + 1 < following
                             and front.startswith(b'entries:', start))
            block = front[end + 1:following - 1] if end + 1 < following and not columns_first \
                else b''
            line = front[start:end].decode('utf-8')
            if not line.strip(' ') or line.startswith('#'):  # blank (spaces only) or comment
                if block and _COMMENT_OR_BLANK.sub(b'', block + b'\n'):
                    return None
                pending += front[start:following]
                continue
            match = _KEY_LINE.match(line)
            if match is None:
                return None
            key, rest = match.group(1), match.group(2)
            if key in mapping or key in _YAML_KEYWORDS:
                return None
            key_lines[key] = line_number
            if pending:
                comments[key], pending = pending, b''
            items = None
            if columns_first and key == 'entries' and (rest is None or not rest.strip(' ')):
                # Eight lines an entry: no comment among them.
                value = _validated(_entry_columns(front, end + 1, following - 1, records))
                if value is None and type(starts) is _EntriesSkipped:
                    # The entries were taken as the writer writes them, unscanned: they
                    # are not, so find the top-level lines anew.
                    return _fast_front_matter(front, first_line, True, validate_entries,
                                              source, skip_entries=False, records=records)
                if value is not None:
                    # Eight lines an entry, then the line ending the block: no count.
                    line_number += 8 * len(value) + 1
                    counted_to = following
                    mapping[key] = value
                    if source is not None:
                        data, offset = source
                        block = memoryview(data)[offset + end + 1:offset + following - 1]
                    else:
                        block = memoryview(front)[end + 1:following - 1]
                    item_blocks[key] = (line_number + 1, block)
                    continue
            if columns_first:
                block = front[end + 1:following - 1]
            if block:
                items = block
                if _HAS_COMMENT_OR_BLANK.search(b'\n' + block + b'\n') is not None:
                    items = _COMMENT_OR_BLANK.sub(b'', block + b'\n')[:-1]
            if rest is None or not rest.strip(' '):
                if not items:
                    if block:
                        pending += block + b'\n'
                    mapping[key] = None
                    continue
                if items.startswith(b'- {'):
                    value = _fast_loads((b'[' + items[2:].replace(b'\n- {', b',{') + b']')
                                        .decode('utf-8'))
                    if len(value) != items.count(b'\n') + 1:
                        return None
                else:
                    value = _block_items(items, validate_entries and key == 'entries')
                    if value is None and key != 'entries':
                        value = _line_items(key, items)  # e.g. peer blocks holding entries
                if value is None or (type(value) is not _ValidatedEntries
                                     and not set(map(type, value)) <= {dict}):
                    return None
                mapping[key] = value
                item_blocks[key] = (line_number + 1, block)
            else:
                if items or rest.lstrip().startswith(('&', '*', '!', '|', '>')):
                    return None
                if block:
                    pending += block + b'\n'
                mapping[key] = _fast_loads(rest)
    except (ValueError, RecursionError):  # JSON errors, UnicodeDecodeError, deep nesting
        return None
    if pending:
        comments[''] = pending  # after the last key
    item_blocks[None] = comments
    return mapping, key_lines, item_blocks


# Cheap signs that a front matter may hold an anchor, an alias or deep nesting; only then
# is it scanned event by event before libyaml builds anything.
_MAYBE_ANCHOR = re.compile(r'[&*]')
_DEEP_INDENT = re.compile(r'^ {%d,}' % MAX_DEPTH, re.M)
_COMPACT_NESTING = re.compile(r'(?:[-?:] +){%d,}' % (MAX_DEPTH // 4))
_FLOW_BRACKET = re.compile(r'[\[\]{}]')


def _may_be_hostile(front: str) -> bool:
    if (_MAYBE_ANCHOR.search(front) or _DEEP_INDENT.search(front)
            or _COMPACT_NESTING.search(front)):
        return True
    depth = 0
    for match in _FLOW_BRACKET.finditer(front):  # quoted brackets count too: an upper bound
        if match.group() in '[{':
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif depth:
            depth -= 1
    return False


def check_structure(front: str, first_line: int = 1) -> None:
    """
    Refuse YAML anchors, aliases and nesting deeper than MAX_DEPTH before anything is built.

    An alias repeats a whole subtree: nine lines of them ("billion laughs") stand for a
    thousand million entries once written out as JSON, quarantined or validated. Deep
    nesting crashes libyaml's recursive composer. The event scan stops at the first
    offence, so a hostile file costs microseconds, not the machine.
    """
    if not _may_be_hostile(front):
        return
    depth = 0
    collection_start = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    collection_end = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    try:
        for event in yaml.parse(front, Loader=_yaml_classes()[0]):
            anchor = getattr(event, 'anchor', None)
            if anchor is not None:
                line = first_line + event.start_mark.line
                kind, sign = (('alias', '*') if isinstance(event, yaml.AliasEvent)
                              else ('anchor', '&'))
                raise MemoryFileError(
                    f'front matter uses a YAML {kind} ({sign}{anchor}); anchors and aliases '
                    'are not allowed in a memory file (a few of them can stand for gigabytes '
                    'of entries): write each value out in full', line=line)
            if isinstance(event, collection_start):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(first_line + event.start_mark.line)
            elif isinstance(event, collection_end):
                depth -= 1
    except yaml.YAMLError as error:
        # libyaml 0.2.6 and later refuse 1,000 levels while scanning ahead, before the
        # events of the 65th level reach this loop: the same refusal, said the same way.
        mark = getattr(error, 'problem_mark', None)
        if mark is not None and 'nesting depth' in (getattr(error, 'problem', '') or ''):
            raise _too_deep(first_line + mark.line) from None
        return  # not YAML: the loader reports it, naming the line


def _too_deep(line: int) -> MemoryFileError:
    return MemoryFileError(
        f'front matter nests lists and mappings more than {MAX_DEPTH} levels deep; a memory '
        'file needs a few: this file is damaged or was not written for robot_memory', line=line)


# ------------------------------------------------------------- block YAML, line by line
#
# Files written by hand, by OpenCastor (PyYAML's block style: plain and single-quoted
# scalars folded over lines, block lists of tags) or by older tools. The subset read
# here is block mappings and sequences of scalars and one-line flow lists; anything
# else (anchors, tags, block scalars, flow over lines, a blank line inside a scalar)
# gives None and is read by libyaml. Plain scalars are resolved by libyaml's own
# resolver table and constructors, so they mean what they mean to libyaml.

_STR_TAG = 'tag:yaml.org,2002:str'


@functools.cache
def _resolution() -> tuple:
    """Return libyaml's implicit resolvers (by first character) and a safe constructor."""
    return _yaml_classes()[0].yaml_implicit_resolvers, yaml.constructor.SafeConstructor()


_PLAIN_START_REFUSED = frozenset('[]{},#&*!|>\'"%@`')
_LINE_KEY = re.compile(r'([A-Za-z_][A-Za-z0-9_]*):(?: +|$)')
_JSON_DECODER = json.JSONDecoder(parse_float=_yaml_float, parse_constant=str)


class _NotSimple(Exception):
    """The text leaves the subset the line reader knows; libyaml reads it instead."""


_NUMBER_START = frozenset('-0123456789')


def _json_number(value: str):
    """
    Return ``value`` as a number when it is a whole JSON number, else None.

    A JSON number means the same to YAML 1.1: an integer is an int, a float with a '.'
    a float, and one with an exponent is read by ``_yaml_float`` (a string where YAML's
    float rule wants a '.' and a signed exponent).
    """
    try:
        number, end = _JSON_DECODER.raw_decode(value)
    except ValueError:
        return None
    return number if end == len(value) and type(number) in (int, float, str) else None


def _plain(value: str, cache: dict):
    """Return a plain scalar as libyaml resolves and constructs it."""
    found = cache.get(value)
    if found is not None or value in cache:
        return found
    if value[:1] in _PLAIN_START_REFUSED or ': ' in value or value.endswith(':') \
            or ' #' in value or value.startswith(('- ', '? ', ': ')) or value in ('-', '?'):
        raise _NotSimple(value)
    if _PLAIN_KEY.match(value) and value not in _YAML_KEYWORDS:
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
            raise _NotSimple(tag)
        result = constructor(constructor_of, yaml.ScalarNode(tag, value))
    if len(cache) < 65536:
        cache[value] = result
    return result


class _LineReader:
    """Block YAML read line by line (see above); raises _NotSimple outside the subset."""

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
        self.cache = {}
        self.key_lines, self.item_lines = {}, {}

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
            raise _NotSimple('indented first line')
        mapping = self.mapping(0, top=True)
        if self.at != len(self.rows):
            raise _NotSimple('trailing lines')
        return mapping

    def mapping(self, column: int, top: bool = False) -> dict:
        """Keys at ``column`` from the current row on."""
        result = {}
        rows = self.rows
        while True:
            self._skip_comments()
            if self.at == len(rows):
                break
            number, col, content = rows[self.at]
            if col != column or content.startswith('- ') or content == '-':
                break
            match = _LINE_KEY.match(content)
            if match is None:
                raise _NotSimple(content)
            key = match.group(1)
            if key in result or _plain(key, self.cache) != key:
                raise _NotSimple('duplicate or non-string key')
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
        lines = [] if key is not None else None
        rows = self.rows
        while True:
            self._skip_comments()
            if self.at == len(rows):
                break
            number, col, content = rows[self.at]
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
                raise _NotSimple('nested or empty item')
            else:
                self.at += 1
                result.append(self.scalar(rest, number, column))
        if key is not None:
            self.item_lines[key] = lines
        return result

    def _continuation(self, number: int, column: int) -> list:
        """Lines folded into a scalar that starts on line ``number``."""
        out = []
        rows = self.rows
        while self.at < len(rows) and rows[self.at][1] > column:
            following, _, content = rows[self.at]
            if following != number + 1 or content.startswith('#'):
                raise _NotSimple('a blank or comment line inside a scalar')
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
                raise _NotSimple('double-quoted scalar') from None
            self._end(text[end:])
            if type(value) is not str:
                raise _NotSimple(text)
            return value
        if first == "'":
            rows = self.rows
            end = 1
            while True:
                end = text.find("'", end)
                if end < 0:  # folded onto the next line, if that one belongs to the scalar
                    if (self.at == len(rows) or rows[self.at][1] <= column
                            or rows[self.at][0] != number + 1):
                        raise _NotSimple('unclosed single quote')
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
                raise _NotSimple('flow collection over lines')
            return self.flow(text)
        comment = text.find(' #')
        if comment >= 0:  # the value ends where its comment starts, and cannot go on below
            text = text[:comment].rstrip(' ')
            if (self.at < len(self.rows) and self.rows[self.at][1] > column
                    and not self.rows[self.at][2].startswith('#')):
                raise _NotSimple('lines after a commented plain scalar')
            return _plain(text, self.cache)
        return _plain(' '.join([text] + self._continuation(number, column)), self.cache)

    @staticmethod
    def _end(rest: str) -> None:
        stripped = rest.lstrip(' ')
        if stripped and not (stripped.startswith('#') and len(stripped) < len(rest)):
            raise _NotSimple('text after a quoted scalar')

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
            raise _NotSimple(text)
        inner = text[1:-1]
        if any(char in inner for char in '[]{}"\'#'):
            raise _NotSimple(text)
        if not inner.strip(' '):
            return []
        items = [item.strip(' ') for item in inner.split(',')]
        # In a flow sequence ':' and '?' can be indicators, not text: libyaml refuses
        # ``[:0]`` and ``[a:?]`` and reads ``[?0]`` as a mapping, so such items are left to it.
        if not all(items) or any(item[0] in ':?' or ':?' in item for item in items):
            raise _NotSimple(text)
        return [_plain(item, self.cache) for item in items]


def _line_items(key: str, items: bytes):
    """Return the items of one top-level list in block YAML (``_LineReader``), or None."""
    try:
        reader = _LineReader(key + ':\n' + items.decode('utf-8'), 0)
        return reader.document()[key]
    except (_NotSimple, ValueError, RecursionError, yaml.YAMLError):
        return None


def _line_front_matter(front: str, first_line: int):
    """Return (mapping, key lines, item lines) of block YAML in the subset, or None."""
    if _yaml_unsafe(front):
        return None
    reader = _LineReader(front.replace('\r\n', '\n'), first_line)
    if '\r' in front.replace('\r\n', ''):
        return None
    try:
        mapping = reader.document()
    except (_NotSimple, ValueError, RecursionError, yaml.YAMLError):
        return None
    return mapping, reader.key_lines, reader.item_lines


def _yaml_front_matter(front: str, first_line: int):
    """Parse any YAML front matter with libyaml; errors name the file line."""
    check_structure(front, first_line)
    try:
        mapping = yaml.load(front, Loader=_yaml_classes()[0])
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = first_line + mark.line if mark is not None else None
        problem = error.problem or error.context or 'invalid YAML'
        raise MemoryFileError(f'front matter is not valid YAML: {problem}', line=line) from None
    except yaml.YAMLError as error:
        raise MemoryFileError(f'front matter is not valid YAML: {error}', line=first_line) from None
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, dict):
        raise MemoryFileError(
            f'front matter must be a YAML mapping of keys, found a {type(mapping).__name__}',
            line=first_line,
        )
    return mapping


def _yaml_positions(front: str, first_line: int):
    """Line numbers of top-level keys and of the items of top-level sequences."""
    key_lines, item_lines = {}, {}
    try:
        node = yaml.compose(front, Loader=_yaml_classes()[0])
    except yaml.YAMLError:
        return key_lines, item_lines
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            key_lines[key] = first_line + key_node.start_mark.line
            if isinstance(value_node, yaml.SequenceNode):
                item_lines[key] = [first_line + item.start_mark.line for item in value_node.value]
    return key_lines, item_lines


def _validate_entries(raw_items, section, lines_of, peer: bool, result, records: bool = False):
    """
    Validate a list of raw entries; quarantine the bad ones and later duplicates.

    They are PeerEntry with ``peer``, else MemoryEntry. ``records``: peer entries of the
    writer's own form come as EntryRecords (a read-only load; own entries come so from
    ``_entry_columns``).

    Returns (entries kept, their indices in ``raw_items`` or None when all were kept).
    """
    if raw_items is None:
        return [], None
    if not isinstance(raw_items, list):
        result.problems.append(Problem(f'{section} must be a list of entries', lines_of(None)))
        result.quarantined.append(QuarantinedItem(section, raw_items, 'not a list', lines_of(None)))
        return [], []
    if type(raw_items) is _ValidatedEntries:
        valid = list(raw_items)
    elif peer:
        valid = (records and peer_records(raw_items)) or schema.peer_entries_fast(raw_items)
    else:
        valid = schema.validate_entries_fast(raw_items)
    bad = []
    if valid is None:
        model = schema.PeerEntry if peer else schema.MemoryEntry
        try:
            if not peer:
                valid = _entries_adapter().validate_python(raw_items)
            else:
                valid = [model.model_validate(item) for item in raw_items]
        except pydantic.ValidationError:
            valid = []
            for index, item in enumerate(raw_items):
                try:
                    valid.append(model.model_validate(item))
                except pydantic.ValidationError as error:
                    bad.append((index, item, first_errors(error)))
    if not bad and (type(raw_items) is _ValidatedEntries  # ids checked by _validated
                    or len({entry.id for entry in valid}) == len(valid)):
        return valid, None
    kept, indices = [], []
    seen = set()
    valid_iter = iter(valid)
    bad_map = {index: (item, reason) for index, item, reason in bad}
    for index in range(len(raw_items)):
        if index in bad_map:
            item, reason = bad_map[index]
            where = lines_of(index)
            result.problems.append(Problem(f'{section}[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem(section, item, reason, where))
            continue
        entry = next(valid_iter)
        if entry.id in seen:
            where = lines_of(index)
            reason = f'duplicate id {entry.id} (the first one is kept)'
            result.problems.append(Problem(f'{section}[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem(section, raw_items[index], reason, where))
            continue
        seen.add(entry.id)
        kept.append(entry)
        indices.append(index)
    return kept, indices


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """
    Pause Python's cyclic garbage collector while a file's objects are built.

    Reading 10,000 entries allocates some 80,000 container objects, none of them in a
    reference cycle. With the collector on, that many allocations set off more than a
    hundred collections, some of them full ones that walk every object of the process:
    in a process holding much data that was a third of the load time and most of its
    variance. Reference counting frees everything as usual meanwhile; the collector
    resumes afterwards (only if it was on). The new objects then go straight to the
    oldest generation (``gc.freeze`` + ``gc.unfreeze``, unless the process froze objects
    itself): they are looked at by the next full collection only, instead of by a young
    one right away that walks all of them (a few ms for 10,000 entries).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def parse_bytes(data: bytes, now: dt.datetime, default_rrn: str = UNSET_RRN,
                read_only: bool = False) -> LoadResult:
    """
    Parse a whole robot-memory.md. Raise MemoryFileError when it cannot be read at all.

    ``read_only``: the document is for answering, never saved (``MemoryFile.save`` refuses
    it): own entries of the writer's form come as ``schema.EntryRecord`` and the file's
    lines are not kept for a fast save.
    """
    with _collector_paused():
        result = _parse_bytes(data, now, default_rrn, read_only)
    if result.quarantined:
        result.source = data
    return result


def _parse_bytes(data: bytes, now: dt.datetime, default_rrn: str,
                 read_only: bool = False) -> LoadResult:
    split = _split_front_matter(data)
    if split is None:
        return migrate_legacy(data, now, default_rrn)
    front_bytes, first_line, body = split
    fast = lines_read = None
    if not _yaml_unsafe_utf8(front_bytes):
        fast = _fast_front_matter(front_bytes, first_line, checked=True,
                                  validate_entries=True, source=(data, data.find(b'\n') + 1),
                                  records=read_only)
    if fast is not None:
        mapping, key_lines, item_blocks = fast
        comments = item_blocks.pop(None)
        item_lines = {key: _ItemLines(start, block) for key, (start, block) in item_blocks.items()}
    else:
        try:
            front = front_bytes.decode('utf-8')
        except UnicodeDecodeError as error:
            line = first_line + front_bytes[:error.start].count(b'\n')
            raise MemoryFileError('front matter is not valid UTF-8 text', line=line) from None
        item_blocks, comments = {}, {}
        lines_read = _line_front_matter(front, first_line)
        if lines_read is not None:
            mapping, key_lines, item_lines = lines_read
            entries_block = _items_text(front, key_lines, item_lines, first_line, 'entries')
            if entries_block is not None:
                item_blocks['entries'] = (None, entries_block)
            comments = _comments_above(front, key_lines, first_line)
        else:
            mapping = _yaml_front_matter(front, first_line)
            key_lines, item_lines = _yaml_positions(front, first_line)
    if 'schema_version' not in mapping:
        return migrate_legacy(data, now, default_rrn, mapping)
    header = {key: mapping.get(key) for key in ('schema_version', 'rrn', 'last_updated')}
    try:
        fields = header_fields(header)  # the writer's own form, checked without pydantic
        if fields is None:
            checked = schema.document_header(header)
            fields = checked.schema_version, checked.rrn, checked.last_updated
    except pydantic.ValidationError as error:
        detail = error.errors()[0]
        key = str(detail['loc'][0]) if detail['loc'] else 'schema_version'
        raise MemoryFileError(
            f'{key}: {detail["msg"]} (got {mapping.get(key)!r}); fix this top-level field',
            line=key_lines.get(key, first_line),
        ) from None

    schema_version, rrn, last_updated = fields
    result = LoadResult(MemoryDocument(rrn=rrn, last_updated=last_updated,
                                       schema_version=schema_version, body=body),
                        used_fast_path=fast is not None or lines_read is not None)
    document = result.document

    def lines_for(key):
        def lines_of(index):
            if index is None:
                return key_lines.get(key)
            found = item_lines.get(key)
            return found[index] if found and index < len(found) else key_lines.get(key)
        return lines_of

    document.entries, kept = _validate_entries(mapping.get('entries'), 'entries',
                                               lines_for('entries'), False, result)
    mapping['entries'] = None  # the raw entries go now, not after the whole document is read
    block = item_blocks.get('entries', (0, b''))[1]
    first_item = _ANY_ITEM.search(block)
    if read_only:
        object.__setattr__(document, '_read_only', True)
    elif document.entries and first_item and first_item.group() in (b'  - ', b'- '):
        # Unchanged entries are written back as the very lines they were read from (the
        # one-line form of older files is rewritten in block style instead).
        object.__setattr__(document, '_source_lines', _SourceLines(
            document.entries, block, kept, len(first_item.group()) - 2))
    if comments:
        object.__setattr__(document, '_comments', comments)

    if 'peer_context' in mapping:
        document.peer_context = _parse_peer_context(mapping['peer_context'],
                                                    lines_for('peer_context'), result, read_only)
    for key, value in mapping.items():
        if key not in _KNOWN_KEYS:
            document.extra[key] = value
    return result


def _items_text(front: str, key_lines: dict, item_lines: dict, first_line: int, key: str):
    """Return the lines of the items of list ``key`` (to write unchanged items back), or None."""
    lines = item_lines.get(key)
    if not lines:
        return None
    rows = front.replace('\r\n', '\n').split('\n')
    start = key_lines[key] - first_line + 1  # comments above the first item come along
    later = [line for line in key_lines.values() if line > lines[-1]]
    stop = (min(later) - first_line) if later else len(rows)
    while stop > start + 1 and (not rows[stop - 1].strip(' ')
                                or rows[stop - 1].startswith('#')):
        stop -= 1  # blank lines and comments at the margin belong to the next key
    first = lines[0] - first_line
    if rows[first].startswith('  - '):
        prefix = '  - '
    elif rows[first].startswith('- '):
        prefix = '- '
    else:
        return None
    if any(rows[line - first_line][:len(prefix)] != prefix for line in lines):
        return None
    return '\n'.join(rows[start:stop]).encode('utf-8')


def _comments_above(front: str, key_lines: dict, first_line: int) -> dict:
    """Return the comment lines (and blank lines among them) directly above each top-level key."""
    rows = front.replace('\r\n', '\n').split('\n')
    found = {}
    for key, line in key_lines.items():
        stop = start = line - first_line
        while start > 0 and (rows[start - 1].startswith('#') or not rows[start - 1].strip(' ')):
            start -= 1
        while start < stop and not rows[start].strip(' '):
            start += 1  # blank lines without a comment are not kept
        if start < stop:
            found[key] = ('\n'.join(rows[start:stop]) + '\n').encode('utf-8')
    end = len(rows)
    while end > 0 and not rows[end - 1].strip(' '):
        end -= 1
    start = end
    while start > 0 and (rows[start - 1].startswith('#') or not rows[start - 1].strip(' ')):
        start -= 1
    if start < end:
        found[''] = ('\n'.join(rows[start:end]) + '\n').encode('utf-8')  # after the last key
    return found


def _parse_peer_context(raw, lines_of, result, records: bool = False):
    """Return the peer blocks of ``raw``, quarantining what is wrong (``records``: read-only)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        where = lines_of(None)
        result.problems.append(Problem('peer_context must be a list of peer blocks', where))
        result.quarantined.append(QuarantinedItem('peer_context', raw, 'not a list', where))
        return []
    blocks, seen = [], set()
    for index, item in enumerate(raw):
        where = lines_of(index)
        if not isinstance(item, dict):
            reason = 'a peer block must be a mapping with rrn, last_synced and entries'
            result.problems.append(Problem(f'peer_context[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem('peer_context', item, reason, where))
            continue
        header = {key: value for key, value in item.items() if key != 'entries'}
        # (rrn, last_synced) of the writer's form, read-only; else a validated PeerBlock.
        fields = peer_block_fields(header) if records else None
        try:
            block = schema.peer_block_header(header) if fields is None else None
        except pydantic.ValidationError as error:
            reason = first_errors(error)
            result.problems.append(Problem(f'peer_context[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem('peer_context', item, reason, where))
            continue
        rrn = fields[0] if block is None else block.rrn
        if rrn in seen:
            reason = f'a second block for peer {rrn} (the first one is kept)'
            result.problems.append(Problem(f'peer_context[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem('peer_context', item, reason, where))
            continue
        seen.add(rrn)
        kept, _ = _validate_entries(item.get('entries'), f'peer_context[{rrn}].entries',
                                    lambda _index, where=where: where, True, result, records)
        blocks.append(PeerBlockRecord(*fields, kept) if block is None
                      else block.model_copy(update={'entries': kept}))
    return blocks


# ------------------------------------------------------------------------ migration

_BULLET = re.compile(r'^\s*(?:[-*+]|\d+[.)])\s+(.*\S)\s*$')
_HARDWARE_WORDS = re.compile(
    r'\b(motor|wheel|encoder|battery|sensor|camera|lidar|imu|gripper|arm|joint|servo|'
    r'temperature|overheat|voltage|current|calibrat\w*|drift|firmware)\b', re.I)
_BEHAVIOR_WORDS = re.compile(r'\b(prefer|avoid|always|never|slow|speed|route|limit)\b', re.I)


def _guess_type(text: str) -> str:
    if _HARDWARE_WORDS.search(text):
        return 'hardware_observation'
    if _BEHAVIOR_WORDS.search(text):
        return 'behavior_pattern'
    return 'environment_note'


_CONTROL_BYTE = re.compile(rb'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]')


def check_text(data: bytes) -> None:
    """
    Refuse bytes that are not UTF-8 text free of control bytes (tab, LF, CR allowed).

    Such a file is damage (a bad SD card, a wrong file), not notes to migrate: migrating
    random bytes makes entries of mojibake that reach the robot's brain.
    """
    where = None
    try:
        data.decode('utf-8')
    except UnicodeDecodeError as error:
        where, what = error.start, f'byte 0x{data[error.start]:02x} is not UTF-8'
    control = _CONTROL_BYTE.search(data)
    if control is not None and (where is None or control.start() < where):
        where = control.start()
        what = f'control byte 0x{data[where]:02x}'
    if where is None:
        return
    line = data.count(b'\n', 0, where) + 1
    raise MemoryFileError(
        f'not a text file ({what}): binary data is damage, not a memory file or '
        'notes to migrate; if it holds notes in another encoding, convert them to UTF-8 '
        '(e.g. iconv -f latin1 -t utf-8)', line=line)


# A top-level ``last_updated`` line of a front matter, as written here or by hand.
_LAST_UPDATED_LINE = re.compile(rb'^last_updated:[ \t]*(.*?)[ \t\r]*$', re.M)


def read_last_updated(data: bytes) -> Optional[dt.datetime]:
    """Return a memory file's ``last_updated`` from its bytes, entries unread; None if absent."""
    try:
        split = _split_front_matter(data)
    except MemoryFileError:
        return None
    match = _LAST_UPDATED_LINE.search(split[0]) if split is not None else None
    if match is None:
        return None
    try:  # one YAML scalar: quoted as written here, or plain or commented by hand
        value = pydantic.TypeAdapter(dt.datetime).validate_python(
            yaml.load(b'last_updated: ' + match.group(1),
                      Loader=_yaml_classes()[0])['last_updated'])
    except (yaml.YAMLError, ValueError, TypeError):
        return None
    return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)


def migrate_legacy(data: bytes, now: dt.datetime, default_rrn: str = UNSET_RRN,
                   mapping: Optional[dict] = None) -> LoadResult:
    """
    Turn a free-form file (no schema_version) into a 1.0 document, losing no text.

    Each bullet line becomes an entry (confidence 0.5, tag ``migrated``); the whole
    original file is kept verbatim in the body under a heading, and writers also
    archive it as ``<file>.legacy-<time>``.
    """
    check_text(data)
    text = data.decode('utf-8')
    rrn = default_rrn
    if mapping and isinstance(mapping.get('rrn'), str):
        rrn = mapping['rrn']
    try:
        schema.DocumentHeader(schema_version=SCHEMA_VERSION, rrn=rrn, last_updated=now)
    except pydantic.ValidationError:
        rrn = default_rrn
    candidates = [m.group(1) for m in map(_BULLET.match, text.splitlines()) if m]
    if not candidates:
        candidates = [line.strip() for line in text.splitlines()
                      if line.strip() and not line.lstrip().startswith(('#', '---', '```'))]
    entries, taken = [], set()
    for candidate in candidates:
        cleaned = ' '.join(re.sub(r'[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]', ' ',
                                  candidate).split())[:500].strip()
        if not cleaned:
            continue
        entry_type = _guess_type(cleaned)
        if make_entry_id(entry_type, cleaned) in taken:
            continue
        try:
            entry = new_entry(entry_type, cleaned, 0.5, now, tags=['migrated'], taken=taken)
        except pydantic.ValidationError:
            continue
        taken.add(entry.id)
        entries.append(entry)
    heading = (f'\n## Migrated from a free-form memory file on {format_iso(now)}\n\n'
               'The original text follows verbatim; each bullet above became an entry '
               'tagged `migrated`.\n\n').encode('utf-8')
    body = heading + data + (b'' if data.endswith(b'\n') else b'\n')
    document = MemoryDocument(rrn=rrn, last_updated=now, entries=entries, body=body)
    problem = Problem('no schema_version: free-form file migrated to schema 1.0 '
                      f'({len(entries)} entries); the original is kept in the body', 1)
    return LoadResult(document, problems=[problem], legacy_original=data)


# --------------------------------------------------------------------------- writing

class _SourceLines:
    """
    The block-style text a document's entries were read from, comments included.

    Entries are frozen, so an entry that is still the very object that was read is
    written back as its original text (the original bytes, with the comment lines above
    it) instead of being serialised again. The entries are held here so that their
    ``id()`` cannot be reused.
    """

    __slots__ = ('entries', 'block', 'indices', 'indent', '_chunks', '_by_id', '_id_set')

    def __init__(self, entries: list, block: bytes, indices: Optional[list], indent: int = 2):
        self.entries = tuple(entries)
        self.indent = indent  # column of the items' dashes: 2 (ours, the spec's) or 0 (PyYAML)
        self.block = block  # every item of the list, kept or quarantined, and comments
        self.indices = indices  # item of each kept entry in ``block``; None: all, in order
        self._chunks = None
        self._by_id = None
        self._id_set = None

    def _ids(self) -> set:
        if self._id_set is None:
            self._id_set = set(map(id, self.entries))
        return self._id_set

    def chunks(self) -> tuple:
        """(text before the first item, [(comments above, item text) for each item])."""
        if self._chunks is None:
            block = b''.join((self.block, b'\n'))  # the block may be a view into the file
            plain, with_comments = _ITEM_PATTERNS[self.indent]
            pattern = with_comments if b'#' in block or b'\n\n' in block else plain
            starts = [match.start() for match in pattern.finditer(block)]
            items = []
            for index, start in enumerate(starts):
                stop = starts[index + 1] if index + 1 < len(starts) else len(block)
                chunk = block[start:stop]
                item = plain.search(chunk).start()
                items.append((chunk[:item], chunk[item:]))
            self._chunks = (block[:starts[0]] if starts else b'', items)
        return self._chunks

    def render(self, entries: list) -> list:
        """Return the entry text for ``entries`` in pieces: the original where unchanged."""
        if self.indices is None and len(entries) == len(self.entries):
            same = list(map(operator.is_, entries, self.entries))
            changed = list(itertools.compress(range(len(same)), map(operator.not_, same)))
            if not changed:
                return [self.block, b'\n']  # nothing changed, added, removed or moved
            if len(changed) <= len(entries) // 8 and not any(
                    id(entries[index]) in self._ids() for index in changed):
                # A few entries replaced in place by new ones (as a dream does): their
                # comments stay, their text is written anew.
                head, items = self.chunks()
                out = [head]
                out.extend(comments + text for comments, text in items)
                for index in changed:
                    out[index + 1] = items[index][0] + self._new(entries[index])
                return out
        by_id = self._by_id
        if by_id is None:
            head, items = self.chunks()
            if self.indices is not None:
                items = [items[index] for index in self.indices]
            by_id = self._by_id = dict(zip(map(id, self.entries),
                                           zip(self.entries, (c + t for c, t in items))))
        out = [self.chunks()[0]]
        for entry in entries:
            cached = by_id.get(id(entry))
            out.append(cached[1] if cached is not None and cached[0] is entry
                       else self._new(entry))
        return out

    def _new(self, entry) -> bytes:
        text = _entry_block(entry)
        if self.indent == 0:  # items at the margin, as PyYAML writes them
            text = text[2:].replace('\n  ', '\n')
        return text.encode('utf-8')


class _NotCanonical(Exception):
    """A value the canonical one-line form cannot carry exactly; use libyaml instead."""


def _float(value: float) -> str:
    text = repr(value)
    if 'e' in text or 'E' in text:
        text = format(decimal.Decimal(text), 'f')
        if '.' not in text:
            text += '.0'
    if text in ('nan', 'inf', '-inf'):
        raise _NotCanonical(text)
    return text


def _flow(value: Any) -> str:
    """Render a value as one-line YAML flow that ``_fast_loads`` reads back identically."""
    if isinstance(value, str):
        if _yaml_unsafe(value):
            raise _NotCanonical('string needs YAML escaping')
        return _quote(value)
    if value is True:
        return 'true'
    if value is False:
        return 'false'
    if value is None:
        return 'null'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise _NotCanonical('non-string key')
        return '{' + ', '.join(f'{_flow(k)}: {_flow(v)}' for k, v in value.items()) + '}'
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(_flow(item) for item in value) + ']'
    raise _NotCanonical(type(value).__name__)


def _iso(value: dt.datetime) -> str:
    # format_iso without its calls for the usual case: already UTC (every loaded entry).
    if value.tzinfo is _UTC:
        return value.isoformat()[:-6] + 'Z'  # '+00:00' is always last
    return format_iso(value)


def _text_and_tags_json(entry) -> tuple:
    """Return an entry's text and its tags joined, as JSON, for both entry styles of the writer."""
    text, tags = entry.text, entry.tags
    if type(text) is str and all(type(tag) is str for tag in tags):
        # One scan for the text and every tag: joined by '\n', which the scan allows and
        # no unsafe escape can span, the strings are refused exactly when one of them is.
        if _yaml_unsafe('\n'.join((text, *tags)) if tags else text):
            raise _NotCanonical('string needs YAML escaping')
        return _quote(text), ', '.join(map(_quote, tags))
    # not reached by validated entries
    return _flow(text), ', '.join(_flow(tag) for tag in tags)


def _entry_block(entry) -> str:
    """Return an own entry in the block style of RCAN §3.2: one key a line, values as JSON."""
    text_json, tags_json = _text_and_tags_json(entry)
    lines = [f'  - id: {_quote(entry.id)}\n    type: {_quote(entry.type)}\n'
             f'    text: {text_json}\n    confidence: {_float(entry.confidence)}\n']
    if entry.first_seen is not None:
        lines.append(f'    first_seen: "{_iso(entry.first_seen)}"\n')
    if entry.last_reinforced is not None:
        lines.append(f'    last_reinforced: "{_iso(entry.last_reinforced)}"\n')
    if entry.observation_count is not None:
        lines.append(f'    observation_count: {entry.observation_count}\n')
    lines.append(f'    tags: [{tags_json}]\n')
    extra = entry.__pydantic_extra__
    if extra:
        for key, value in extra.items():
            if not isinstance(key, str) or not _PLAIN_KEY.match(key) or key in _YAML_KEYWORDS:
                raise _NotCanonical('unusual key')
            lines.append(f'    {key}: {_flow(value)}\n')
    return ''.join(lines)


def _entry_dict(entry) -> dict:
    # Declared fields first, then unknown keys verbatim and in file order (exclude_none
    # must not touch them: a None among them is data).
    extra = entry.__pydantic_extra__ or {}
    data = entry.model_dump(mode='json', exclude_none=isinstance(entry, schema.PeerEntry),
                            exclude=set(extra))
    for key in ('first_seen', 'last_reinforced'):
        value = getattr(entry, key)
        if value is not None:
            data[key] = format_iso(value)
    data.update(extra)
    return data


def _peer_block(block: 'schema.PeerBlock') -> str:
    """Return a peer block in the entries' block style: one key a line, values as JSON."""
    lines = [f'  - rrn: {_quote(block.rrn)}\n'
             f'    last_synced: "{format_iso(block.last_synced)}"\n']
    extra = block.__pydantic_extra__
    if extra:
        for key, value in extra.items():
            if not isinstance(key, str) or not _PLAIN_KEY.match(key) or key in _YAML_KEYWORDS:
                raise _NotCanonical('unusual key')
            lines.append(f'    {key}: {_flow(value)}\n')
    if block.entries:
        lines.append('    entries:\n')
        lines.extend('    ' + _entry_block(entry)[:-1].replace('\n', '\n    ') + '\n'
                     for entry in block.entries)
    else:
        lines.append('    entries: []\n')
    return ''.join(lines)


def _canonical_front(document: MemoryDocument) -> bytes:
    return b''.join(_canonical_front_parts(document))


def _canonical_front_parts(document: MemoryDocument) -> list:
    comments = getattr(document, '_comments', None) or {}
    parts = []

    def key_line(key: str, text: str) -> None:
        comment = comments.get(key)
        if comment:
            parts.append(comment)
        parts.append(text.encode('utf-8'))

    key_line('schema_version', f'schema_version: "{document.schema_version}"\n')
    key_line('rrn', f'rrn: {_quote(document.rrn)}\n')
    key_line('last_updated', f'last_updated: "{format_iso(document.last_updated)}"\n')
    if document.entries:
        key_line('entries', 'entries:\n')
        source = getattr(document, '_source_lines', None)
        if source is not None:
            parts.extend(source.render(document.entries))
        else:
            parts.append(''.join([_entry_block(entry) for entry in document.entries])
                         .encode('utf-8'))
    else:
        key_line('entries', 'entries: []\n')
    if document.peer_context is not None:
        if document.peer_context:
            key_line('peer_context', 'peer_context:\n' + ''.join(
                _peer_block(block) for block in document.peer_context))
        else:
            key_line('peer_context', 'peer_context: []\n')
    for key, value in document.extra.items():
        if not isinstance(key, str) or not _PLAIN_KEY.match(key) or key in _YAML_KEYWORDS:
            raise _NotCanonical('unusual top-level key')
        key_line(key, f'{key}: {_flow(value)}\n')
    if comments.get(''):
        parts.append(comments[''])
    return parts


def _yaml_front(document: MemoryDocument) -> str:
    mapping = {
        'schema_version': document.schema_version,
        'rrn': document.rrn,
        'last_updated': format_iso(document.last_updated),
        'entries': [_entry_dict(entry) for entry in document.entries],
    }
    if document.peer_context is not None:
        mapping['peer_context'] = [
            {'rrn': block.rrn, 'last_synced': format_iso(block.last_synced),
             **(block.__pydantic_extra__ or {}),
             'entries': [_entry_dict(entry) for entry in block.entries]}
            for block in document.peer_context
        ]
    mapping.update(document.extra)
    return yaml.dump(mapping, Dumper=_yaml_classes()[1], sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1 << 30)


def render(document: MemoryDocument) -> bytes:
    """Return the whole file for ``document``: front matter between --- lines, then the body."""
    if getattr(document, '_read_only', False):
        raise TypeError('a document loaded with read_only=True is for answering and is never '
                        'written; load it without read_only to change and save it')
    try:  # joined once: a large file is not copied piece by piece
        front = _canonical_front_parts(document)
    except _NotCanonical:
        front = [_yaml_front(document).encode('utf-8')]
    return b''.join([b'---\n', *front, b'---\n', document.body])


def new_document(rrn: str, now: dt.datetime) -> MemoryDocument:
    """Return an empty 1.0 document for ``rrn`` with a short explanatory body."""
    schema.DocumentHeader(schema_version=SCHEMA_VERSION, rrn=rrn, last_updated=now)
    body = (b'\n# Robot memory\n\nOperational memory kept by robot_memory (RCAN Robot Memory '
            b'Schema 1.0).\nThe front matter above is rewritten after each dream; text below '
            b'it is yours and is kept as it is.\n')
    return MemoryDocument(rrn=rrn, last_updated=now, body=body)


class MemoryFile:
    """robot-memory.md on disk: lock-free reads, locked read-modify-write updates."""

    def __init__(self, path=None, lock_timeout_s: float = 10.0,
                 max_bytes: Optional[int] = None):
        self.path = resolve_path(path)
        self.lock_timeout_s = lock_timeout_s
        self.max_bytes = max_bytes if max_bytes is not None else max_file_bytes()
        # The target resolved when the lock was taken: everything under one lock (a file
        # set aside, then the new one written) goes to the same file.
        self._locked_target = None

    def target(self) -> pathlib.Path:
        """Return the file writes replace: the end of ``path``'s links (see link_target)."""
        locked = self._locked_target
        return locked if locked is not None else link_target(self.path)

    def side_path(self, suffix: str) -> pathlib.Path:
        """Return a side file (``.archive.jsonl``, ``.lock``...) beside the target of ``path``."""
        return side_file(self.target(), suffix)

    @property
    def lock_path(self) -> pathlib.Path:
        """Return the writers' lock file, beside the target so every link shares it."""
        return self.side_path('.lock')

    def exists(self) -> bool:
        """Return whether the memory file exists; a link to nothing raises MemoryFileError."""
        return self.target().exists()

    def read_bytes(self) -> bytes:
        """Return the file's bytes; a missing file is a MemoryFileError with advice."""
        try:
            with open(self.path, 'rb') as handle:
                size = os.fstat(handle.fileno()).st_size
                data = b''
                if size <= self.max_bytes:
                    # As large as the file is: read(max_bytes + 1) would allocate the
                    # whole limit (128 MiB) for every load. A file grown since fstat
                    # gets the rest read, up to the limit.
                    data = handle.read(size + 1)
                    if len(data) > size:
                        data += handle.read(self.max_bytes + 1 - len(data))
        except FileNotFoundError:
            self.target()  # a link to nothing says so
            raise MemoryFileError('no memory file here yet; it is created by the first dream '
                                  '(robot-memory dream) or by memory_node', self.path) from None
        except OSError as error:
            raise MemoryFileError(f'cannot read: {error.strerror}', self.path) from None
        if size > self.max_bytes or len(data) > self.max_bytes:
            size = max(size, len(data))
            raise MemoryFileError(
                f'the file is {size_text(size)}, above the {size_text(self.max_bytes)} limit for a '
                'memory file, so it was not read and is left as it is; a '
                'memory file this large is damaged or not one of ours: move it aside, or '
                f'raise the limit with ${MAX_FILE_ENV_VAR}', self.path)
        return data

    def load(self, now: dt.datetime, default_rrn: str = UNSET_RRN,
             read_only: bool = False) -> LoadResult:
        """Parse the file without locking or writing anything (``read_only``: see parse_bytes)."""
        data = self.read_bytes()
        try:
            return parse_bytes(data, now, default_rrn, read_only)
        except MemoryFileError as error:
            raise MemoryFileError(error.problem, self.path, error.line) from None

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the exclusive writer lock, ``<file>.lock`` beside the target, for the duration."""
        target = link_target(self.path)
        lock_path = side_file(target, '.lock')
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise MemoryLockTimeout(
                            f'another writer held {lock_path.name} for more than '
                            f'{self.lock_timeout_s:g} s; retry, or find the stuck process',
                            self.path) from None
                    time.sleep(0.01)
            self._locked_target = target
            try:
                self._remove_stale_temp_files()
                yield
            finally:
                self._locked_target = None  # before the lock is released to the next writer
        finally:
            os.close(fd)

    def _remove_stale_temp_files(self) -> None:
        # Left by a writer killed between mkstemp and rename; safe under the lock.
        target = self.target()
        for stale in target.parent.glob(f'.{glob.escape(target.name)}.*.tmp'):
            with contextlib.suppress(OSError):
                stale.unlink()

    def set_aside(self, now: dt.datetime, reason: str = 'corrupt') -> pathlib.Path:
        """Rename the current file (a link's target) to ``<file>.<reason>-<time>``, beside it."""
        current = self.target()
        target = kept_name(current, reason, now)
        os.rename(current, target)
        fsync_directory(current.parent)
        return target

    def save(self, document: MemoryDocument, result: Optional[LoadResult] = None,
             now: Optional[dt.datetime] = None) -> None:
        """
        Write ``document`` atomically (call while holding ``lock()``).

        Quarantined items and a migrated legacy original are made durable first, so
        nothing that was in the old file is lost when it is replaced.
        """
        target = self.target()
        if result is not None:
            if result.quarantined:
                self._quarantine(result, now or document.last_updated)
            if result.legacy_original is not None:
                archive = kept_name(target, 'legacy', now or document.last_updated)
                write_atomic(archive, result.legacy_original)
                result.legacy_original = None
        write_atomic(target, render(document))

    def _quarantine(self, result: LoadResult, now: dt.datetime) -> None:
        """
        Append the quarantined items to ``<file>.quarantine.jsonl``, bounded in size.

        An item larger than QUARANTINE_ITEM_BYTES, and every item once the run has written
        QUARANTINE_RUN_BYTES, is recorded with its reason, line and an excerpt; the whole
        file it came from is then kept as ``<file>.quarantined-<time>`` (no larger than
        the file-size limit), so the quarantine never grows by more than the caps.
        """
        when = format_iso(now)
        records, total, kept_in = [], 0, None
        for item in result.quarantined:
            record = {'quarantined_at': when, 'section': item.section, 'line': item.line,
                      'reason': item.reason, 'raw': item.raw}
            text = json.dumps(item.raw, ensure_ascii=False, default=str)
            size = len(text.encode('utf-8'))
            if size > QUARANTINE_ITEM_BYTES or total + size > QUARANTINE_RUN_BYTES:
                if kept_in is None:
                    kept_in = kept_name(self.target(), 'quarantined', now)
                    write_atomic(kept_in, result.source or b'')
                del record['raw']
                record.update(raw_bytes=size, raw_excerpt=text[:256], raw_kept_in=kept_in.name)
                size = 512
            total += size
            records.append(record)
        append_durably(self.side_path('.quarantine.jsonl'), records)
        result.quarantined = []

    @contextlib.contextmanager
    def update(self, now: dt.datetime, rrn: Optional[str] = None,
               on_corrupt: str = 'raise') -> Iterator[LoadResult]:
        """
        Lock, load (or create), yield the LoadResult, then save if anything changed.

        ``on_corrupt='set_aside'`` moves an unparseable file to ``<file>.corrupt-<time>``
        and starts from an empty document; ``'raise'`` leaves it untouched and raises.
        ``last_updated`` is set to ``now`` only when the content changed.
        """
        with self.lock():
            original = self.read_bytes() if self.exists() else None
            try:
                if original is None:
                    result = LoadResult(new_document(rrn or UNSET_RRN, now))
                else:
                    result = parse_bytes(original, now, rrn or UNSET_RRN)
            except MemoryFileError as error:
                if on_corrupt != 'set_aside' or original is None:
                    raise MemoryFileError(
                        f'{error.problem}. The file was left untouched; fix it by hand '
                        '(robot-memory validate shows every problem)', self.path,
                        error.line) from None
                target = self.set_aside(now)
                result = LoadResult(new_document(rrn or UNSET_RRN, now))
                result.problems.append(Problem(
                    f'unreadable memory file set aside as {target.name}: {error.problem}',
                    error.line))
            yield result
            document = result.document
            rendered = render(document)
            needs_write = (original is None or rendered != original or result.quarantined
                           or result.legacy_original is not None)
            if needs_write:
                document.last_updated = now
                self.save(document, result, now)
