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
The fast path of reading robot-memory.md: the writer's own form, read by the C ``json`` module.

The front matter is found by its delimiter lines only (a line that is exactly ``---``), so
entry text may contain ``---``. Reading the writer's block form (and the older one-line
``- {...}`` form) turns the lines into JSON arrays for the C ``json`` module, with YAML 1.1
number rules, so it means exactly what libyaml would read. Entries of exactly the shape
written here (eight lines each) are read a column at a time and checked in bulk
(``schema.entries_from_columns``), and their lines are kept as a view into the file's bytes,
not a copy. Anything else gives None, and a slower reader takes over.
"""

import itertools
import json
import re
from typing import Optional

from robot_memory.errors import MemoryFileError
from robot_memory.rcan import schema
from robot_memory.rcan.line_reader import line_items
from robot_memory.rcan.reader_block import block_items_json
from robot_memory.rcan.reader_block import entry_columns_json
from robot_memory.rcan.reader_block import scalar_json
from robot_memory.rcan.schema import COLUMN_FIELDS
from robot_memory.rcan.schema import entries_from_columns
from robot_memory.rcan.yaml_rules import fast_loads
from robot_memory.rcan.yaml_rules import yaml_float
from robot_memory.rcan.yaml_rules import YAML_KEYWORDS
from robot_memory.rcan.yaml_rules import yaml_unsafe
from robot_memory.rcan.yaml_rules import yaml_unsafe_utf8

_KEY_LINE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?\r?$')

# The closing delimiter: a line that is ``---`` or ``...`` (trailing blanks allowed).
_CLOSING_LINE = re.compile(rb'\n(?:---|\.\.\.)[ \t\r]*(?:\n|\Z)')


def split_front_matter(data: bytes):
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
# an indented line or an item at the margin (``- {``, the one-line form written before block
# style, or ``- id:`` as PyYAML writes a list).
_TOP_LEVEL_LINE = re.compile(rb'\n(?![ #\n\r]|- )')
_COMMENT_OR_BLANK = re.compile(rb'^[ ]*(?:#[^\n]*)?\n', re.M)
_HAS_COMMENT_OR_BLANK = re.compile(rb'\n[ ]*(?:#|\n)')  # led by a literal: a quick search
_ITEM_START = re.compile(rb'^(?:- \{|  - )', re.M)
# An item with the comment and blank lines above it (they belong to the item below them).
_ITEM_WITH_COMMENTS = re.compile(rb'^(?:[ ]*(?:#[^\n]*)?\n)*(?:- \{|  - )', re.M)
ANY_ITEM = re.compile(rb'^(?:- \{|  - |- )', re.M)
ITEM_PATTERNS = {  # by the column of the items' dashes: (items, items with comments above)
    2: (_ITEM_START, _ITEM_WITH_COMMENTS),
    0: (re.compile(rb'^- ', re.M), re.compile(rb'^(?:[ ]*(?:#[^\n]*)?\n)*- ', re.M)),
}
_ENTRY_KEYS = (b'type', b'text', b'confidence', b'first_seen', b'last_reinforced',
               b'observation_count', b'tags')
_OTHER_BLOCK_KEY = re.compile(rb'\n    ([A-Za-z_][A-Za-z0-9_]*): ')
_OTHER_FIRST_KEY = re.compile(rb'\}, \{([A-Za-z_][A-Za-z0-9_]*): ')


def _quote_key(match) -> bytes:
    key = match.group(1)
    if key.decode('ascii') in YAML_KEYWORDS:
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


class ValidatedEntries(list):
    """Entries ``_block_items`` read and validated as MemoryEntry in one pass."""


def _validated(entries: Optional[list]) -> Optional[ValidatedEntries]:
    """
    Return ``entries`` as ValidatedEntries, or None when two share an id.

    A duplicate is quarantined as it was written, so its raw item must be read.
    """
    if entries is None or len({entry.id for entry in entries}) != len(entries):
        return None
    return ValidatedEntries(entries)


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
    back as a ``ValidatedEntries`` list of MemoryEntry (``schema.validate_entries_json``).
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
        entries = json.loads(array, parse_float=yaml_float, parse_constant=str)
        if len(entries) != items_count or sum(map(len, entries)) != lines_count:
            return None
        return entries
    items = json.loads(b'[' + text[3:] + b'}]', parse_float=yaml_float, parse_constant=str,
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


def _other_columns(block: bytes, records: bool) -> Optional[ValidatedEntries]:
    """Return entries another writer wrote with the writer's keys, read by columns, or None."""
    converted = entry_columns_json(block.decode('utf-8'))
    if converted is None:
        return None
    texts, rows = converted
    try:
        columns = [json.loads(text) for text in texts]
    except ValueError:
        return None
    del texts
    # The front matter was scanned for unsafe characters; only an escape can make one.
    entries = entries_from_columns(columns, rows, strings_checked=b'\\' not in block,
                                   records=records)
    return _validated(entries)


def _other_items(items: bytes, validate_entries: bool):
    """Return the items of another writer's block list (``reader_block``), or None."""
    text = items.decode('utf-8')
    converted = block_items_json(text, entries=validate_entries)
    if converted is None:
        return None
    array, pairs = converted
    data = array.encode('utf-8')
    del array
    if validate_entries:
        validated = _validated(schema.validate_entries_json(data, pairs))
        if validated is not None:
            return validated
        # Read as written: a quarantined entry keeps its times as they were.
        again = block_items_json(text)
        assert again is not None  # converted above: only the form of the times differs
        data = again[0].encode('utf-8')
    entries = json.loads(data, parse_float=yaml_float, parse_constant=str)
    if sum(map(len, entries)) != pairs:
        return None  # a key twice in one item: libyaml says what that means
    return entries


class ItemLines:
    """Line numbers of the items of a list read by the fast path, found when first asked."""

    def __init__(self, first_line: int, block: bytes):
        self.first_line, self.block = first_line, block
        self._found: Optional[list[int]] = None

    def __len__(self):
        return len(self._lines())

    def __getitem__(self, index):
        return self._lines()[index]

    def _lines(self):
        if self._found is None:
            found, line, at = [], self.first_line, 0
            block = bytes(self.block)  # a view into the file, when read by columns
            first = ANY_ITEM.search(block)
            pattern = ITEM_PATTERNS[0][0] if first and first.group() == b'- ' else _ITEM_START
            for match in pattern.finditer(block):
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
    starts: list[int]
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


def fast_front_matter(front, first_line: int, checked: bool = False,
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
    differently (``yaml_unsafe_utf8``). Every byte is decoded here, so bytes that are
    not UTF-8 give None as well. ``validate_entries`` lets the block items of ``entries``
    come back validated (read by columns, or see ``_block_items``); ``source``, (the file's
    bytes, where ``front`` starts in them), lets the item block of entries read by columns
    be a view into the file instead of a copy: a large file is then not held twice.
    ``records``: entries read by columns come back as EntryRecords (a read-only load).
    """
    if isinstance(front, str):
        if yaml_unsafe(front):
            return None
        front = front.encode('utf-8')
    elif not checked and yaml_unsafe_utf8(front):
        return None
    if b'\r' in front:
        if front.count(b'\r') != front.count(b'\r\n'):
            return None  # a lone CR breaks a line for YAML
        front = front.replace(b'\r\n', b'\n')
        source = None  # the lines moved: no longer where they are in the file
    starts = _top_level_starts(front, validate_entries and skip_entries)
    mapping: dict = {}
    key_lines: dict[str, int] = {}
    item_blocks: dict = {}  # key: (first line, block); None: the comments above each key
    comments: dict[str, bytes] = {}
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
            if key in mapping or key in YAML_KEYWORDS:
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
                    return fast_front_matter(front, first_line, True, validate_entries,
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
            if block and validate_entries and key == 'entries' and not block.startswith(b'- {') \
                    and (rest is None or not rest.strip(' ')):
                value = _other_columns(block, records)
                if value is not None:
                    mapping[key] = value
                    item_blocks[key] = (line_number + 1, block)
                    continue
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
                    value = fast_loads((b'[' + items[2:].replace(b'\n- {', b',{') + b']')
                                       .decode('utf-8'))
                    if len(value) != items.count(b'\n') + 1:
                        return None
                else:
                    try:
                        value = _block_items(items, validate_entries and key == 'entries')
                    except ValueError:  # not JSON: perhaps another writer's block form
                        value = None
                    if value is None:
                        value = _other_items(block, validate_entries and key == 'entries')
                    if value is None and key != 'entries':
                        value = line_items(key, items)  # e.g. peer blocks holding entries
                if value is None or (type(value) is not ValidatedEntries
                                     and not set(map(type, value)) <= {dict}):
                    return None
                mapping[key] = value
                item_blocks[key] = (line_number + 1, block)
            else:
                if items or rest.lstrip().startswith(('&', '*', '!', '|', '>')):
                    return None
                if block:
                    pending += block + b'\n'
                try:
                    mapping[key] = fast_loads(rest)
                except ValueError:  # not JSON: a plain or single-quoted scalar, perhaps
                    converted = scalar_json(rest.strip(' '), [], {})
                    if converted is None:
                        return None
                    mapping[key] = fast_loads(converted)
    except (ValueError, RecursionError):  # JSON errors, UnicodeDecodeError, deep nesting
        return None
    if pending:
        comments[''] = pending  # after the last key
    item_blocks[None] = comments
    return mapping, key_lines, item_blocks
