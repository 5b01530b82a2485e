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
A memory file's bytes to a document: the readers tried in turn, what is wrong quarantined.

The writer's own form is read by ``reader_fast``, block YAML written by hand or by OpenCastor
by ``line_reader``, anything else by libyaml (``reader_yaml``). Binary data is refused, never
migrated or half-read. One invalid entry is quarantined (kept in ``<file>.quarantine.jsonl``
by the writer) and the valid entries survive. A free-form file (no schema_version) is
migrated to a 1.0 document, losing no text.
"""

import contextlib
import dataclasses
import datetime as dt
import functools
import gc
import re
from typing import Any
from typing import Iterator
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC as _UTC
from robot_memory.common.validation_text import first_errors
from robot_memory.errors import MemoryFileError
from robot_memory.rcan import schema  # its pydantic models: schema.MemoryEntry, at first use
from robot_memory.rcan.line_reader import line_front_matter
from robot_memory.rcan.reader_fast import ANY_ITEM
from robot_memory.rcan.reader_fast import fast_front_matter
from robot_memory.rcan.reader_fast import ItemLines
from robot_memory.rcan.reader_fast import split_front_matter
from robot_memory.rcan.reader_fast import ValidatedEntries
from robot_memory.rcan.reader_yaml import yaml_front_matter
from robot_memory.rcan.reader_yaml import yaml_positions
from robot_memory.rcan.schema import header_fields
from robot_memory.rcan.schema import make_entry_id
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.schema import peer_block_fields
from robot_memory.rcan.schema import peer_records
from robot_memory.rcan.schema import PeerBlockRecord
from robot_memory.rcan.schema import RRN_PATTERN
from robot_memory.rcan.schema import SCHEMA_VERSION
from robot_memory.rcan.writer import SourceLines
from robot_memory.rcan.yaml_rules import pyyaml
from robot_memory.rcan.yaml_rules import yaml_classes
from robot_memory.rcan.yaml_rules import yaml_unsafe_utf8

UNSET_RRN = 'RRN-UNSET'

_KNOWN_KEYS = ('schema_version', 'rrn', 'last_updated', 'entries', 'peer_context')


@functools.cache
def _entries_adapter():
    """Return the validator (a TypeAdapter) of a list of MemoryEntry, built at its first use."""
    import pydantic  # lazy: 34 ms and 4 MB of robot-memory show (a file of the writer's form)
    return pydantic.TypeAdapter(list[schema.MemoryEntry])


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


# Said after the reason when YAML made a boolean or no value of what should be text: a
# person who writes ``tags: [on]`` by hand meant the word.
UNQUOTED_WORD = ('; unquoted, yes, no, on, off, true and false are booleans to YAML and null, '
                 '~ or nothing at all is no value: put the text in quotes (tags: ["on"])')


def _reason(error) -> str:
    """Return why an entry or peer block was refused, with what to do about a YAML word."""
    reason = first_errors(error)
    if any(detail.get('type') == 'string_type' and
           (detail.get('input') is None or isinstance(detail.get('input'), bool))
           for detail in error.errors()):
        reason += UNQUOTED_WORD
    return reason


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
    if type(raw_items) is ValidatedEntries:
        valid = list(raw_items)
    elif peer:
        valid = (records and peer_records(raw_items)) or schema.peer_entries_fast(raw_items)
    else:
        valid = schema.validate_entries_fast(raw_items)
    bad: list = []
    if valid is None:
        model = schema.PeerEntry if peer else schema.MemoryEntry
        try:
            if not peer:
                valid = _entries_adapter().validate_python(raw_items)
            else:
                valid = [model.model_validate(item) for item in raw_items]
        except schema.ValidationError:
            valid = []
            for index, item in enumerate(raw_items):
                try:
                    valid.append(model.model_validate(item))
                except schema.ValidationError as error:
                    bad.append((index, item, _reason(error)))
    if not bad and (type(raw_items) is ValidatedEntries  # ids checked by _validated
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
    if not data.strip():
        # Not a free-form file to migrate (that would read as every entry deleted by hand):
        # a crash or a power cut while the file was written leaves it so.
        raise MemoryFileError('the file is empty: a new one, or one cut by a crash or a power '
                              'cut while it was written; the next dream starts it, or sets it '
                              "aside and restores the entries from the last dream's snapshot")
    if b'\n' not in data and b'\r' in data:  # an editor's old Mac line ends: one line, else
        data = data.replace(b'\r', b'\n')
    with _collector_paused():
        result = _parse_bytes(data, now, default_rrn, read_only)
    if result.quarantined:
        result.source = data
    return result


def _header(mapping: dict, key_lines: dict, first_line: int) -> tuple:
    """Return (schema_version, rrn, last_updated) of the front matter, or refuse the field."""
    header = {key: mapping.get(key) for key in ('schema_version', 'rrn', 'last_updated')}
    try:
        fields = header_fields(header)  # the writer's own form, checked without pydantic
        if fields is None:
            checked = schema.document_header(header)
            fields = checked.schema_version, checked.rrn, checked.last_updated
    except schema.ValidationError as error:
        detail = error.errors()[0]
        key = str(detail['loc'][0]) if detail['loc'] else 'schema_version'
        raise MemoryFileError(
            f'{key}: {detail["msg"]} (got {mapping.get(key)!r}); fix this top-level field',
            line=key_lines.get(key, first_line),
        ) from None
    return fields


def _parse_bytes(data: bytes, now: dt.datetime, default_rrn: str,
                 read_only: bool = False) -> LoadResult:
    split = split_front_matter(data)
    if split is None:
        return migrate_legacy(data, now, default_rrn)
    front_bytes, first_line, body = split
    fast = lines_read = None
    if not yaml_unsafe_utf8(front_bytes):
        fast = fast_front_matter(front_bytes, first_line, checked=True,
                                 validate_entries=True, source=(data, data.find(b'\n') + 1),
                                 records=read_only)
    if fast is not None:
        mapping, key_lines, item_blocks = fast
        comments = item_blocks.pop(None)
        item_lines = {key: ItemLines(start, block) for key, (start, block) in item_blocks.items()}
    else:
        try:
            front = front_bytes.decode('utf-8')
        except UnicodeDecodeError as error:
            line = first_line + front_bytes[:error.start].count(b'\n')
            raise MemoryFileError('front matter is not valid UTF-8 text', line=line) from None
        item_blocks, comments = {}, {}
        lines_read = line_front_matter(front, first_line)
        if lines_read is not None:
            mapping, key_lines, item_lines = lines_read
            entries_block = _items_text(front, key_lines, item_lines, first_line, 'entries')
            if entries_block is not None:
                item_blocks['entries'] = (None, entries_block)
            comments = _comments_above(front, key_lines, first_line)
        else:
            mapping = yaml_front_matter(front, first_line)
            key_lines, item_lines = yaml_positions(front, first_line)
    if 'schema_version' not in mapping:
        return migrate_legacy(data, now, default_rrn, mapping)
    schema_version, rrn, last_updated = _header(mapping, key_lines, first_line)
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
    first_item = ANY_ITEM.search(block)
    if read_only:
        object.__setattr__(document, '_read_only', True)
    elif document.entries and first_item and first_item.group() in (b'  - ', b'- '):
        # Unchanged entries are written back as the very lines they were read from (the
        # one-line form of older files is rewritten in block style instead).
        object.__setattr__(document, '_source_lines', SourceLines(
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
        except schema.ValidationError as error:
            reason = _reason(error)
            result.problems.append(Problem(f'peer_context[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem('peer_context', item, reason, where))
            continue
        if block is None:
            assert fields is not None  # the writer's form, read without pydantic
            rrn, last_synced = fields
        else:
            rrn = block.rrn
        if rrn in seen:
            reason = f'a second block for peer {rrn} (the first one is kept)'
            result.problems.append(Problem(f'peer_context[{index}] quarantined: {reason}', where))
            result.quarantined.append(QuarantinedItem('peer_context', item, reason, where))
            continue
        seen.add(rrn)
        kept, _ = _validate_entries(item.get('entries'), f'peer_context[{rrn}].entries',
                                    lambda _index, where=where: where, True, result, records)
        blocks.append(PeerBlockRecord(rrn, last_synced, kept) if block is None
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
        split = split_front_matter(data)
    except MemoryFileError:
        return None
    match = _LAST_UPDATED_LINE.search(split[0]) if split is not None else None
    if match is None:
        return None
    import pydantic  # lazy: 34 ms and 4 MB of robot-memory show, which never reads this
    yaml = pyyaml()
    try:  # one YAML scalar: quoted as written here, or plain or commented by hand
        value = pydantic.TypeAdapter(dt.datetime).validate_python(
            yaml.load(b'last_updated: ' + match.group(1),
                      Loader=yaml_classes()[0])['last_updated'])
    except (yaml.YAMLError, ValueError, TypeError):
        return None
    return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)


# An RRN as the schema allows it (RRN_PATTERN), alone on its line, maybe quoted.
_RRN_LINE = re.compile(rb'^rrn:[ \t]*(["\']?)(' + RRN_PATTERN[1:-1].encode() + rb')\1[ \t\r]*$',
                       re.M)


def salvage(data: bytes) -> tuple:
    """
    Return (rrn, body) of a memory file that cannot be read as a whole; each None if lost.

    What a writer keeps when it sets such a file aside: the Markdown body is the person's
    and needs no front matter to be read, and the robot's RRN is one plain line.
    """
    try:
        split = split_front_matter(data)
    except MemoryFileError:
        return None, None
    if split is None:
        return None, None
    match = _RRN_LINE.search(split[0])
    return (match.group(2).decode('ascii') if match is not None else None), split[2]


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
    except schema.ValidationError:
        rrn = default_rrn
    candidates = [m.group(1) for m in map(_BULLET.match, text.splitlines()) if m]
    if not candidates:
        candidates = [line.strip() for line in text.splitlines()
                      if line.strip() and not line.lstrip().startswith(('#', '---', '```'))]
    entries: list = []
    taken: set[str] = set()
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
        except schema.ValidationError:
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
