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
Import and export of RLM-MEM chunks (JSON files with typed links) both ways.

Export writes ``chunks/YYYY-MM/<id>.json`` (live records), ``archive/<id>.json``
(archived ones) and ``index/{metadata_index,tag_index,link_graph}.json``, UTF-8, indent 2.
Each chunk has the RLM-MEM fields (id ``chunk-YYYY-MM-DD-xxxxxxxx``, content, tokens,
type, metadata, links, tags) and keeps the full substrate record under
``metadata.substrate`` so a round trip is lossless. Links: ``supports``, ``contradicts``,
``follows``, ``related_to`` between chunks, ``context_of`` the conversation id; the
substrate's ``supersedes`` / ``derived_from`` travel inside ``metadata.substrate``.

Import reads such a directory (or one chunk file). Chunks without ``metadata.substrate``
are mapped by type: fact, decision → semantic; preference → semantic (predicate
``prefers`` when the text says so); pattern → competence; note → episodic. Every chunk id
is checked before it is used in a path or a record id: ``..``, absolute paths, path
separators, NUL and anything outside ``[A-Za-z0-9._-]`` are refused with a message.
"""

import dataclasses
import datetime as dt
import json
import os
import pathlib
import re
from typing import Optional
import uuid

from robot_memory.common import jsontext
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.results import _Plain

CHUNK_TYPES = ('fact', 'preference', 'pattern', 'note', 'decision')
LINK_TYPES = ('context_of', 'follows', 'related_to', 'supports', 'contradicts')
_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')
_TO_CHUNK = {'semantic': 'fact', 'competence': 'pattern', 'plan_graph': 'pattern',
             'episodic': 'note', 'working': 'note'}
_FROM_CHUNK = {'fact': 'semantic', 'decision': 'semantic', 'preference': 'semantic',
               'pattern': 'competence', 'note': 'episodic'}
_MAX_FILE = 1_000_000
# Chunks whose texts are embedded in one batch (the model costs far less per text so).
_EMBED_BATCH = 256
_NAMESPACE = uuid.UUID('6f1c3a52-1f0e-4a8e-9d3b-2b7e5c8a9d10')


def check_chunk_id(value) -> str:
    """Return a chunk id safe to use as a file name; raises SubstrateError saying what is wrong."""
    if not isinstance(value, str) or not value:
        raise SubstrateError(f'chunk id must be a non-empty string, got {value!r}')
    if '\x00' in value:
        raise SubstrateError(f'chunk id {value!r} contains a NUL character')
    if '/' in value or '\\' in value or os.sep in value:
        raise SubstrateError(f'chunk id {value!r} contains a path separator; ids are file '
                             'names, not paths')
    if '..' in value:
        raise SubstrateError(f'chunk id {value!r} contains "..", which could escape the '
                             'memory directory')
    if os.path.isabs(value) or re.match(r'^[A-Za-z]:', value):
        raise SubstrateError(f'chunk id {value!r} is an absolute path')
    if not _ID.match(value):
        raise SubstrateError(f'chunk id {value!r} has characters outside letters, digits, '
                             '. _ - (or is longer than 128)')
    return value


@dataclasses.dataclass
class ExportReport(_Plain):
    """Files written by ``export_chunks``."""

    written: list
    archived: int


@dataclasses.dataclass
class ImportReport(_Plain):
    """What ``import_chunks`` did with each chunk."""

    imported: list
    duplicates: list
    refused: list
    links: int
    contested: list = dataclasses.field(default_factory=list)


def _tokens(content: str) -> int:
    return max(1, -(-len(content.encode('utf-8')) // 4))


def chunk_id_for(record) -> str:
    """Return the chunk id of a record: the one it was imported under, else date + id digits."""
    for source in record.provenance.sources:
        if source.kind == 'import' and source.ref.startswith('rlm:'):
            return source.ref[4:]
    digits = record.id.replace('-', '')
    return f'chunk-{record.created_at.strftime("%Y-%m-%d")}-{digits[:8]}'


def export_chunks(substrate, target, now: dt.datetime) -> ExportReport:
    """Write every record as an RLM-MEM chunk under ``target``."""
    root = pathlib.Path(target).expanduser()
    records = substrate.all_records(now)
    ids, used = {}, set()
    for record in records:
        chunk_id = check_chunk_id(chunk_id_for(record))
        if chunk_id in used:
            chunk_id = f'{chunk_id[:-8]}{record.id.replace("-", "")[8:16]}'
        used.add(chunk_id)
        ids[record.id] = chunk_id
    written, archived = [], 0
    metadata_index: dict = {}
    tag_index: dict[str, list] = {}
    link_graph: dict = {}
    for record in records:
        chunk_id = ids[record.id]
        links: dict[str, list] = {name: [] for name in LINK_TYPES}
        conversation = record.context.get('conversation_id')
        if isinstance(conversation, str) and conversation:
            links['context_of'].append(conversation)
        for relation in record.relations:
            if relation.predicate in links and relation.target_id in ids:
                links[relation.predicate].append(ids[relation.target_id])
        chunk_type = _TO_CHUNK[record.type]
        if record.type == 'semantic' and 'prefer' in record.payload.predicate:
            chunk_type = 'preference'
        chunk = {
            'id': chunk_id,
            'content': record.text,
            'tokens': _tokens(record.text),
            'type': chunk_type,
            'metadata': {
                'created': format_iso(record.created_at),
                'conversation_id': conversation if isinstance(conversation, str) else '',
                'source': 'interaction',
                'confidence': record.confidence,
                'access_count': record.access_count,
                'last_accessed': (format_iso(record.last_accessed) if record.last_accessed
                                  else None),
                'substrate': record.model_dump(mode='json', exclude_none=True, by_alias=True,
                                               exclude={'effective_salience'}),
            },
            'links': links,
            'tags': list(record.tags),
        }
        if record.status == 'archived':
            path = root / 'archive' / f'{chunk_id}.json'
            archived += 1
        else:
            path = root / 'chunks' / record.created_at.strftime('%Y-%m') / f'{chunk_id}.json'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(chunk, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')
        written.append(str(path))
        metadata_index[chunk_id] = {'type': chunk_type, 'created': chunk['metadata']['created'],
                                    'confidence': record.confidence, 'tags': chunk['tags'],
                                    'archived': record.status == 'archived'}
        for tag in record.tags:
            tag_index.setdefault(tag, []).append(chunk_id)
        link_graph[chunk_id] = {name: value for name, value in links.items() if value}
    index = root / 'index'
    index.mkdir(parents=True, exist_ok=True)
    for name, data in (('metadata_index', metadata_index), ('tag_index', tag_index),
                       ('link_graph', link_graph)):
        (index / f'{name}.json').write_text(json.dumps(data, indent=2, ensure_ascii=False) + '\n',
                                            encoding='utf-8')
    return ExportReport(written, archived)


def _chunk_files(source: pathlib.Path) -> list:
    if source.is_file():
        return [(source, False)]
    if not source.is_dir():
        raise SubstrateError(f'{source} is neither an RLM-MEM memory directory nor a chunk '
                             'file')
    files = [(path, False) for path in sorted((source / 'chunks').glob('*/*.json'))]
    files += [(path, False) for path in sorted((source / 'chunks').glob('*.json'))]
    files += [(path, True) for path in sorted((source / 'archive').glob('*.json'))]
    if not files:
        files = [(path, False) for path in sorted(source.glob('chunk-*.json'))]
    return files


def _record_from_chunk(chunk: dict, archived: bool, now: dt.datetime) -> dict:
    chunk_id = check_chunk_id(chunk.get('id'))
    content = chunk.get('content')
    if not isinstance(content, str) or not content.strip():
        raise SubstrateError(f'{chunk_id}: content must be non-empty text')
    chunk_type = chunk.get('type')
    if chunk_type not in CHUNK_TYPES:
        raise SubstrateError(f'{chunk_id}: type {chunk_type!r} is not one of '
                             f'{", ".join(CHUNK_TYPES)}')
    metadata = chunk.get('metadata')
    links = chunk.get('links', {})
    if not isinstance(metadata, dict) or not isinstance(links, dict):
        raise SubstrateError(f'{chunk_id}: metadata and links must be objects')
    tokens = chunk.get('tokens')
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise SubstrateError(f'{chunk_id}: tokens must be a whole number, got {tokens!r}')
    provenance = {'kind': 'import', 'ref': f'rlm:{chunk_id}'}
    if isinstance(metadata.get('substrate'), dict):
        record = dict(metadata['substrate'])
        record['relations'] = []
        sources = record.setdefault('provenance', {'sources': []}).setdefault('sources', [])
        if provenance not in sources:
            sources.append(provenance)
        if archived:
            record['status'] = 'archived'
        check_chunk_id(str(record.get('id', '')))
        return record
    created = parse_iso(metadata['created']) if metadata.get('created') else now
    kind = _FROM_CHUNK[chunk_type]
    if kind == 'semantic':
        fact = textrules.parse_fact(content)
        subject, predicate, value = fact or (textrules.normalise(content)[:200], 'holds', True)
        payload = {'kind': 'semantic', 'subject': subject, 'predicate': predicate,
                   'object': value, 'validity': {'mode': 'global'}}
    elif kind == 'competence':
        procedure = textrules.parse_procedure(content)
        skill, steps = procedure or (' '.join(textrules.tokens(content)[:6]), [content])
        payload = {'kind': 'competence', 'skill_name': skill or 'pattern',
                   'triggers': [{'signal': skill or 'pattern'}],
                   'recipe': [{'step': step} for step in steps]}
    else:
        payload = {'kind': 'episodic', 'timeline': [{'t': format_iso(created),
                                                     'event_kind': 'note',
                                                     'ref': f'rlm:{chunk_id}',
                                                     'summary': content}]}
    confidence = metadata.get('confidence', 0.7)
    context = {}
    conversation = metadata.get('conversation_id')
    if isinstance(conversation, str) and conversation:
        context['conversation_id'] = conversation
    last_accessed = metadata.get('last_accessed')
    decay = {'curve': 'exponential', 'half_life_seconds': 30 * 86400, 'min_salience': 0.1}
    return {
        'id': str(uuid.uuid5(_NAMESPACE, chunk_id)),
        'type': kind, 'sensitivity': 'low', 'confidence': confidence, 'salience': 0.7,
        'tags': [tag.casefold() for tag in chunk.get('tags', []) if isinstance(tag, str)],
        'created_at': format_iso(created), 'updated_at': format_iso(created),
        'lifecycle': {'decay': decay, 'last_reinforced_at': format_iso(created)},
        'provenance': {'sources': [provenance], 'created_by': 'rlm-import'},
        'payload': payload, 'text': content.strip(), 'context': context,
        'status': 'archived' if archived else 'active',
        'access_count': metadata.get('access_count', 0),
        'last_accessed': last_accessed,
    }


def import_chunks(substrate, source, now: dt.datetime) -> ImportReport:
    """Import RLM-MEM chunks from a directory or one file, then their links."""
    root = pathlib.Path(source).expanduser()
    report = ImportReport([], [], [], 0)
    chunk_to_record: dict = {}
    pending_links: list = []
    parsed: list = []
    for path, archived in _chunk_files(root):
        try:
            if path.stat().st_size > _MAX_FILE:
                raise SubstrateError(f'larger than {_MAX_FILE} bytes')
            chunk = jsontext.loads(path.read_text(encoding='utf-8'))
            if not isinstance(chunk, dict):
                raise SubstrateError('a chunk file holds one JSON object')
            record = _record_from_chunk(chunk, archived, now)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, SubstrateError,
                ValueError) as error:
            report.refused.append(f'{path}: {error}')
            continue
        parsed.append((path, chunk, record))
    for start in range(0, len(parsed), _EMBED_BATCH):
        batch = parsed[start:start + _EMBED_BATCH]
        with substrate.embedding_ahead([record.get('text') for _, _, record in batch]):
            for path, chunk, record in batch:
                _import_one(substrate, path, chunk, record, now, report, chunk_to_record,
                            pending_links)
    predicates = {'supports': 'supports', 'contradicts': 'contradicts', 'follows': 'follows',
                  'related_to': 'related_to'}
    for chunk_id, record_id, links in pending_links:
        if chunk_id not in chunk_to_record:
            continue
        for name, predicate in predicates.items():
            targets = links.get(name) or []
            if not isinstance(targets, list):
                continue
            for target in targets:
                target_record = chunk_to_record.get(target) if isinstance(target, str) else None
                if target_record is None or not _exists(substrate, target_record):
                    continue
                substrate.relate(record_id, predicate, target_record, now, actor='rlm-import')
                report.links += 1
    return report


def _import_one(substrate, path, chunk: dict, record: dict, now: dt.datetime,
                report: ImportReport, chunk_to_record: dict, pending_links: list) -> None:
    chunk_to_record[chunk['id']] = record['id']
    pending_links.append((chunk['id'], record['id'], chunk.get('links') or {}))
    if _exists(substrate, record['id']) or _same_text(substrate, record):
        report.duplicates.append(chunk['id'])
        return
    try:
        status = substrate.restore(record, now, actor='rlm-import',
                                   reason=f'imported from {path.name}')
    except SubstrateError as error:
        report.refused.append(f'{path}: {error}')
        chunk_to_record.pop(chunk['id'], None)
        return
    report.imported.append(chunk['id'])
    if status == 'contested':
        report.contested.append(chunk['id'])


def _exists(substrate, record_id: str) -> bool:
    try:
        substrate.get(record_id)
    except SubstrateError:
        return False
    return True


def _same_text(substrate, record: dict) -> Optional[bool]:
    return bool(substrate.db.conn.execute(
        'SELECT 1 FROM substrate_records WHERE content_hash = ? AND +type = ? LIMIT 1',
        (textrules.content_hash(record.get('text', '')), record.get('type'))).fetchone())
