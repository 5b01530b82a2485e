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
The writer of robot-memory.md: the block style of RCAN §3.2, one key a line, values as JSON.

Every value is written as JSON, so it is plain YAML any YAML library reads, and OpenCastor's
loader too::

    entries:
      - id: "mem-a3f9c1d2"
        type: "hardware_observation"
        text: "..."
        confidence: 0.92

Peer blocks are written in the same block style. Entries nobody changed are written back as
the text they were read from, comments included. A value this form cannot carry exactly is
written by libyaml's dumper instead.
"""

import datetime as dt
import decimal
import itertools
from json.encoder import encode_basestring as _quote
import operator
from typing import Any
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC as _UTC
from robot_memory.rcan import schema
from robot_memory.rcan.reader_fast import ITEM_PATTERNS
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.yaml_rules import PLAIN_KEY
from robot_memory.rcan.yaml_rules import pyyaml
from robot_memory.rcan.yaml_rules import yaml_classes
from robot_memory.rcan.yaml_rules import YAML_KEYWORDS
from robot_memory.rcan.yaml_rules import yaml_unsafe


class SourceLines:
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
        self._chunks: Optional[tuple[bytes, list[tuple[bytes, bytes]]]] = None
        self._by_id: Optional[dict[int, tuple]] = None
        self._id_set: Optional[set[int]] = None

    def _ids(self) -> set:
        if self._id_set is None:
            self._id_set = set(map(id, self.entries))
        return self._id_set

    def chunks(self) -> tuple:
        """(text before the first item, [(comments above, item text) for each item])."""
        if self._chunks is None:
            block = b''.join((self.block, b'\n'))  # the block may be a view into the file
            plain, with_comments = ITEM_PATTERNS[self.indent]
            pattern = with_comments if b'#' in block or b'\n\n' in block else plain
            starts = [match.start() for match in pattern.finditer(block)]
            items = []
            for index, start in enumerate(starts):
                stop = starts[index + 1] if index + 1 < len(starts) else len(block)
                chunk = block[start:stop]
                found = plain.search(chunk)
                assert found is not None  # each chunk starts with an item's line
                item = found.start()
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
    """Render a value as one-line YAML flow that ``fast_loads`` reads back identically."""
    if isinstance(value, str):
        if yaml_unsafe(value):
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
        if yaml_unsafe('\n'.join((text, *tags)) if tags else text):
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
    lines.extend(_extra_lines(entry))
    return ''.join(lines)


def _extra_lines(model) -> list:
    """Return the lines of a model's keys of its own (kept verbatim), in file order."""
    lines = []
    for key, value in (model.__pydantic_extra__ or {}).items():
        if not isinstance(key, str) or not PLAIN_KEY.match(key) or key in YAML_KEYWORDS:
            raise _NotCanonical('unusual key')
        lines.append(f'    {key}: {_flow(value)}\n')
    return lines


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
    lines.extend(_extra_lines(block))
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
        if not isinstance(key, str) or not PLAIN_KEY.match(key) or key in YAML_KEYWORDS:
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
    return pyyaml().dump(mapping, Dumper=yaml_classes()[1], sort_keys=False,
                         allow_unicode=True, default_flow_style=False, width=1 << 30)


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
