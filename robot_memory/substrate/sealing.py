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
Encryption at rest of the records at or above ``encrypt_from`` (see :mod:`.crypto`).

A sealed row keeps its text, tags, context and payload as AES-GCM ciphertext bound to its
id, and keyed digests in place of its content hash and fact keys; it is kept out of FTS5
and searched through an in-memory index of the opened rows. The functions take the
:class:`~robot_memory.substrate.store.Substrate` as their first argument and are bound
as its methods (the private ones under their former names).
"""

import base64
import datetime as dt
import json
import math
import os
from typing import Optional

from robot_memory.common.fileio import fsync_directory
from robot_memory.substrate import crypto
from robot_memory.substrate import text as textrules
from robot_memory.substrate.filters import SubstrateError
from robot_memory.substrate.schema import condition_key
from robot_memory.substrate.schema import dumps
from robot_memory.substrate.schema import LIVE
from robot_memory.substrate.schema import object_key
from robot_memory.substrate.validation import epoch
from robot_memory.substrate.vocabulary import SENSITIVITIES

# Records at or above this sensitivity stored in plaintext are reported (learn, stats, health).
WARN_FROM = 'high'
HOW_TO_ENCRYPT = ('to encrypt them set substrate_encrypt_from: high (a memory_node parameter; '
                  'robot-memory and its mcp server read it from the --config file)')


def init_vault(store, encrypt_from, key_file) -> None:
    """Set the key of the sealed records (see :mod:`.crypto`); None for an in-memory db."""
    crypto.check_level(encrypt_from)
    store._vault = None
    store._sealed_search = None
    store._sealed_writes = 0  # this process's changes of sealed text or tags
    store._sealed_dirty = set()  # and the seqs of the existing records it changed
    if key_file is None and store.path is None:
        if encrypt_from:
            raise SubstrateError('an in-memory database needs key_file= to encrypt records')
        return
    store._vault = crypto.Vault(key_file if key_file is not None
                                else crypto.default_key_path(store.path), encrypt_from)


def seals(store, sensitivity: str) -> bool:
    """Return True when what is learned at ``sensitivity`` is stored encrypted."""
    return store._vault is not None and store._vault.seals(sensitivity)


def seal_fields(store, ref: str, fields: dict) -> dict:
    """
    ``fields`` encrypted for storage elsewhere in this database (a queued learn).

    Bound to ``ref`` like a record to its id; opened by :meth:`open_fields`, re-sealed
    by ``rotate_key`` wherever it is kept (see ``_reseal_queued``).
    """
    with store._lock:
        key = store._sealing_key(store.db.conn)
    return {'sealed': base64.b64encode(crypto.seal(key, ref, fields)).decode('ascii'),
            'key_id': crypto.key_id(key), 'ref': ref}


def open_fields(store, data: dict) -> dict:
    """Return what :meth:`seal_fields` sealed; KeyUnavailable saying why when it cannot."""
    if store._vault is None:
        raise crypto.KeyUnavailable(f'{data.get("ref")} is encrypted and no key file is set')
    key = store._vault.key(data['key_id'])
    return crypto.unseal(key, data['ref'], base64.b64decode(data['sealed']))


def reseal_queued(store, conn, old: bytes, key: bytes) -> int:
    """Re-seal the pending queued learns (the proposals table) under ``key``; how many."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                    "name = 'proposals'").fetchone() is None:
        return 0
    count = 0
    for proposal_id, text in conn.execute(
            "SELECT id, payload FROM proposals WHERE payload LIKE '{\"key_id\":%' "
            "AND status = 'pending'").fetchall():
        data = json.loads(text)
        if 'sealed' not in data or data['key_id'] != crypto.key_id(old):
            continue
        fields = crypto.unseal(old, data['ref'], base64.b64decode(data['sealed']))
        data.update(sealed=base64.b64encode(crypto.seal(key, data['ref'], fields))
                    .decode('ascii'), key_id=crypto.key_id(key))
        conn.execute('UPDATE proposals SET payload = ? WHERE id = ?',
                     (json.dumps(data, ensure_ascii=False, sort_keys=True), proposal_id))
        count += 1
    return count


def sealing_key(store, conn) -> bytes:
    """Return the key new sealed rows are written under; refuse when no key file is set."""
    if store._vault is None:
        raise SubstrateError('this record must be stored encrypted but no key file is set; '
                             'create the Substrate with key_file=')
    return store._vault.sealing_key(conn)


def open_sealed(store, rows: list) -> list:
    """Decrypt the sealed rows in place; one that cannot be opened gets ``locked`` (why)."""
    keys = {}
    for row in rows:
        if not row.get('key_id'):
            continue
        try:
            if store._vault is None:
                raise crypto.KeyUnavailable('no key file is set')
            if row['key_id'] not in keys:
                keys[row['key_id']] = store._vault.key(row['key_id'])
            fields = crypto.unseal(keys[row['key_id']], row['id'], row['sealed'])
        except crypto.KeyUnavailable as error:
            row['locked'] = str(error)
            row['text'] = '[encrypted: the key is not available]'
            continue
        row['text'] = fields['text']
        row['tags'] = ' '.join(fields['tags'])
        row['context'] = dumps(fields['context'])
        row['payload'] = dumps(fields['payload'])
        if row['type'] == 'semantic':
            row['subject'] = textrules.normalise(fields['payload']['subject'])
            row['predicate'] = textrules.normalise(fields['payload']['predicate'])
    return rows


def check_open(store, row: dict) -> None:
    """Refuse to show or revise a sealed record that could not be decrypted."""
    if row.get('locked'):
        advice = store._vault.advice() if store._vault is not None else 'pass key_file='
        raise crypto.KeyUnavailable(f'record {row["id"]} is encrypted and cannot be opened: '
                                    f'{row["locked"]}; {advice}')


def reseal(store, conn, row: dict, tags=None, payload=None) -> None:
    """Store an opened sealed record again with new tags or payload (fresh nonce)."""
    key = store._vault.key(row['key_id'])
    fields = {'text': row['text'],
              'tags': list(tags) if tags is not None else row['tags'].split(),
              'context': json.loads(row['context']),
              'payload': payload if payload is not None else json.loads(row['payload'])}
    conn.execute('UPDATE substrate_records SET sealed = ? WHERE id = ?',
                 (crypto.seal(key, row['id'], fields), row['id']))
    store._sealed_writes += 1
    store._sealed_dirty.add(row['seq'])


def clear_tags(store, conn, row: dict, tags: list) -> str:
    """Return the tags column of a row: the tags, or '' for a sealed row (resealed)."""
    if row.get('key_id'):
        store._reseal(conn, row, tags=tags)
        return ''
    return ' '.join(tags)


def request_key(store, conn) -> Optional[bytes]:
    """Return the key that seals kept request replies: encryption on and the key usable."""
    if store._vault is None or store._vault.encrypt_from is None:
        return None
    try:
        return store._vault.sealing_key(conn)
    except crypto.KeyUnavailable:
        return None


def stored_reply(store, request_id: str, stored: str) -> dict:
    """Return a kept reply, decrypted when it was stored sealed."""
    if not stored.startswith('sealed:'):
        return json.loads(stored)
    key = store._readable_key()
    try:
        if key is None:
            raise crypto.KeyUnavailable('the key is not available')
        return crypto.unseal(key, f'request:{request_id}',
                             base64.b64decode(stored[len('sealed:'):]))
    except crypto.KeyUnavailable as error:
        raise SubstrateError(f'request_id {request_id!r} was already used; its reply is '
                             f'encrypted and cannot be read ({error}); use a new '
                             'request_id') from None


def readable_key(store) -> Optional[bytes]:
    """Return the key in the key file when there is one that reads, else None (no error)."""
    if store._vault is None:
        return None
    try:
        return store._vault._load()
    except crypto.KeyUnavailable:
        return None


def sealed_hash(store, text: str) -> Optional[str]:
    """Return the content hash a sealed copy of ``text`` would carry (None without a key)."""
    key = store._readable_key()
    return crypto.digest(key, 'content', textrules.content_hash(text)) if key else None


def sealed_index(store) -> Optional[crypto.SealedSearch]:
    """Return the in-memory index of the sealed records, rebuilt when they changed."""
    if store._vault is None:
        return None
    # No other connection committed and this one changed no sealed text: nothing to do.
    version = (store.db.conn.execute('PRAGMA data_version').fetchone()[0],
               store._sealed_writes)
    index = store._sealed_search
    if index is not None and index.version == version:
        return index if index.entries else None
    signature = store.db.conn.execute(
        'SELECT count(*), max(seq), max(updated_at) FROM substrate_records '
        'WHERE key_id IS NOT NULL').fetchone() + (store._sealed_writes,)
    if index is None:
        index = store._sealed_search = crypto.SealedSearch()
    index.version = version
    if not signature[0]:
        if index.entries:
            index.clear()
        index.signature = None
        return None
    if index.signature == signature:
        return index
    if index.signature is not None:  # only what is new or changed since
        dirty, store._sealed_dirty = sorted(store._sealed_dirty), set()
        index.upsert(store._rows('key_id IS NOT NULL AND (seq > ? OR updated_at > ? OR seq IN '
                                 f'({", ".join("?" * len(dirty))}))',
                                 (*index.signature[1:3], *dirty)))
    if len(index.entries) != signature[0]:  # rows went away: start again
        index.clear()
        index.upsert(store._rows('key_id IS NOT NULL'))
    index.signature = signature
    return index


def sealed_matches(store, query: str, limit: int) -> list:
    """(seq, BM25) of sealed records matching an FTS5 query; [] when there are none."""
    index = store._sealed_index()
    return index.match(query, limit) if index is not None else []


def sealed_facts(store, subject: str, condition: str, exclude) -> list:
    """Live sealed facts of ``subject`` under ``condition``, shaped as ``_fact_conflicts``'s."""
    key = store._readable_key()
    if key is None:
        return []
    facts = []
    for row in store._rows(f"subject = ? AND condition_key = ? AND type = 'semantic' AND "
                           f'status IN {LIVE} AND id IS NOT ?',
                           (crypto.digest(key, 'subject', subject),
                            crypto.digest(key, 'condition', condition), exclude)):
        if row.get('locked'):
            continue
        fact = json.loads(row['payload'])
        hint = fact.get('single_valued')
        facts.append({'id': row['id'], 'predicate': textrules.normalise(fact['predicate']),
                      'facet': textrules.fact_facet(fact['predicate'], fact['object'],
                                                    hint)[1],
                      'object_key': object_key(fact['object']), 'object': fact['object'],
                      'object_type': None, 'hint': hint})
    return facts


def sealed_candidates(store, query: str, keywords: bool, wanted: int, eligible,
                      keyword: list, rows: dict, statuses: tuple, types) -> tuple:
    """
    Recall's keyword ranking with the sealed matches merged in, and what was withheld.

    Returns ``(ranking, (withheld count, notice))``: the sealed records that could not be
    searched (no key, wrong key) are counted, never matched nor shown.
    """
    if store._vault is None or not store.db.conn.execute(
            'SELECT 1 FROM substrate_records WHERE key_id IS NOT NULL LIMIT 1').fetchone():
        return keyword, (0, '')
    found = []
    if keywords:
        passes = [textrules.fts_query(query, operator='AND'), textrules.fts_query(query)]
        seen = set()
        for fts in passes:
            if fts is None or len(found) >= wanted:
                continue
            for seq, score in store._sealed_matches(fts, wanted):
                if seq not in seen:
                    seen.add(seq)
                    found.append((seq, score))
    found = corpus_scores(store, query, found)
    fetched = {row['seq']: row for row in store._rows_by_seq([seq for seq, _ in found])}
    merged = list(keyword)
    for seq, score in found:
        row = fetched.get(seq)
        if row is not None and not row.get('locked') and eligible(row):
            merged.append((seq, score))
            rows[seq] = row
    if len(merged) > len(keyword):
        merged.sort(key=lambda item: -item[1])
    count, reason = store._locked_count(statuses, types)
    if not count:
        return merged, (0, '')
    return merged, (count, crypto.withheld_notice(count, reason, store._vault.advice()))


def _idf(rows: int, hits: int) -> float:
    """FTS5's BM25 inverse document frequency of a word ``hits`` of ``rows`` rows hold."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def corpus_scores(store, query: str, found: list) -> list:
    """
    Return ``found`` (seq, BM25 among the sealed rows) rescored as ``substrate_fts`` scores.

    A word rare among a few sealed rows is common in their index, and scores next to
    nothing there; each word's part is rescaled from the sealed rows' inverse document
    frequency to that of every record, so a sealed record ranks where its words put it.
    """
    if not found:
        return found
    index = store._sealed_index()
    conn = store.db.conn
    everyone = conn.execute('SELECT count(*) FROM substrate_records').fetchone()[0]
    scores = dict.fromkeys((seq for seq, _ in found), 0.0)
    for word in textrules.query_terms(query):
        parts, sealed_rows = index.word_scores(word)
        if not parts:
            continue
        plain = conn.execute('SELECT count(*) FROM substrate_fts WHERE substrate_fts MATCH ?',
                             ('"' + word.replace('"', '""') + '"',)).fetchone()[0]
        scale = _idf(everyone, plain + len(parts)) / _idf(sealed_rows, len(parts))
        for seq, part in parts.items():
            if seq in scores:
                scores[seq] += part * scale
    return sorted(scores.items(), key=lambda item: -item[1])


def locked_count(store, statuses: tuple, types=None) -> tuple:
    """How many sealed records of these statuses (and types) cannot be opened, and why."""
    count, reason = 0, ''
    types = sorted(types or ())
    where = f'status IN ({", ".join("?" * len(statuses))})'
    if types:
        where += f' AND type IN ({", ".join("?" * len(types))})'
    unusable = {}
    index = store._sealed_index()
    names = index.key_ids if index is not None else ()
    for name in names:
        try:
            store._vault.key(name)
        except crypto.KeyUnavailable as error:
            unusable[name] = str(error)
    if unusable:
        for name, records in store.db.conn.execute(
                'SELECT key_id, count(*) FROM substrate_records WHERE key_id IS NOT NULL '
                f'AND {where} GROUP BY key_id', (*statuses, *types)).fetchall():
            if name in unusable:
                count += records
                reason = reason or unusable[name]
    for name, status, kind, why in (index.damaged if len(unusable) < len(names) else ()):
        if name not in unusable and status in statuses and (not types or kind in types):
            count += 1  # opened with the right key, yet refused: altered or moved
            reason = reason or why
    return count, reason


def plaintext_notice(store, sensitivity: str) -> str:
    """Return what a learn says when its record of ``sensitivity`` is stored unencrypted."""
    if SENSITIVITIES.index(sensitivity) < SENSITIVITIES.index(WARN_FROM) or \
            store.seals(sensitivity):
        return ''
    return (f'not encrypted: this {sensitivity} sensitivity record is stored in plaintext '
            f'because {_why_plain(store)}; {HOW_TO_ENCRYPT}')


def _why_plain(store) -> str:
    encrypt_from = store._vault.encrypt_from if store._vault is not None else None
    return (f'encryption at rest starts at {encrypt_from}' if encrypt_from
            else 'encryption at rest is off')


def plaintext_count(store) -> int:
    """Return how many records at or above ``WARN_FROM`` are stored unencrypted."""
    levels = SENSITIVITIES[SENSITIVITIES.index(WARN_FROM):]
    with store._lock:
        return store.db.conn.execute(
            'SELECT count(*) FROM substrate_records WHERE key_id IS NULL AND sensitivity IN '
            f'({", ".join("?" * len(levels))})', levels).fetchone()[0]


def sealed_status(store) -> dict:
    """Encryption at rest: the key file, the sealed, withheld and plaintext counts, notices."""
    counts = {'sealed': 0, 'withheld': 0, 'notice': ''}
    plain = plaintext_count(store)
    counts['plaintext_sensitive'] = plain
    counts['plaintext_notice'] = ''
    if plain:
        noun = 'record' if plain == 1 else 'records'
        counts['plaintext_notice'] = (
            f'{plain} {noun} of {WARN_FROM} sensitivity or above stored in plaintext: '
            + ('stored before encryption at rest was on (it applies to records learned '
               'after)' if store.seals(WARN_FROM) else f'{_why_plain(store)}; {HOW_TO_ENCRYPT}'))
    if store._vault is None:
        return {'key_file': None, 'encrypt_from': None, **counts}
    with store._lock:
        counts['sealed'] = store.db.conn.execute(
            'SELECT count(*) FROM substrate_records WHERE key_id IS NOT NULL').fetchone()[0]
        withheld, reason = store._locked_count(('active', 'contested', 'retracted',
                                               'superseded', 'archived'))
    counts['withheld'] = withheld
    if withheld:
        counts['notice'] = crypto.withheld_notice(withheld, reason, store._vault.advice())
    return {'key_file': str(store._vault.key_path), 'encrypt_from': store._vault.encrypt_from,
            **counts}


def rotate_key(store, now: dt.datetime, actor: str = 'api') -> dict:
    """
    Re-encrypt every sealed record under a new key, in one transaction, audited.

    The new key is written to ``<key file>.new`` and the old one copied to
    ``<key file>.bak`` first; the records are re-sealed (and their keyed digests
    recomputed) in one ``BEGIN IMMEDIATE`` transaction; only after it commits does the
    new key replace the old file, and the backup is removed. Interrupted anywhere, one
    of the three files still opens the records (the error names it).
    """
    now_s = epoch(now)
    if store._vault is None:
        raise SubstrateError('no key file is set; create the Substrate with key_file=')
    path = store._vault.key_path
    fresh, backup = path.with_name(path.name + '.new'), path.with_name(path.name + '.bak')
    for leftover in (fresh, backup):
        if leftover.exists():
            raise SubstrateError(f'{leftover} exists: an earlier rotate-key did not finish; '
                                 'check which key opens the records, keep it as '
                                 f'{path.name} and remove the other file, then retry')
    with store._lock:
        names = [name for name, in store.db.conn.execute(
            'SELECT DISTINCT key_id FROM substrate_records WHERE key_id IS NOT NULL')]
        if not names:
            raise SubstrateError('no record is encrypted; there is no key to rotate (records '
                                 'are encrypted once encrypt_from is set)')
        old = store._vault.key(names[0])
        for name in names[1:]:
            store._vault.key(name)  # raises: records under another key cannot be rotated
        key = crypto.new_key()
        crypto.write_key_file(backup, old)
        crypto.write_key_file(fresh, key)
        try:
            with store._write() as conn:
                rows = list(store._rows('key_id IS NOT NULL'))
                for row in rows:
                    store._check_open(row)
                    store._reseal_under(conn, row, key)
                queued = store._reseal_queued(conn, old, key)
                store._audit(conn, now_s, 'substrate:key', 'rotate-key', actor,
                             'encryption key rotated',
                             {'old_key_id': crypto.key_id(old), 'new_key_id':
                              crypto.key_id(key), 'records': len(rows),
                              'queued_learns': queued})
        except BaseException:
            fresh.unlink()
            backup.unlink()
            raise
        os.replace(fresh, path)
        fsync_directory(path.parent)
        backup.unlink()
        store._vault._key = None
        store._sealed_search = None
    return {'records': len(rows), 'old_key_id': crypto.key_id(old),
            'new_key_id': crypto.key_id(key), 'key_file': str(path)}


def reseal_under(store, conn, row: dict, key: bytes) -> None:
    """Seal an opened row under ``key`` and recompute its keyed digests."""
    payload = json.loads(row['payload'])
    digests = {'content_hash': crypto.digest(key, 'content',
                                             textrules.content_hash(row['text']))}
    if row['type'] == 'semantic':
        digests.update({
            'subject': crypto.digest(key, 'subject', textrules.normalise(
                payload['subject'])),
            'predicate': crypto.digest(key, 'predicate', textrules.normalise(
                payload['predicate'])),
            'condition_key': crypto.digest(key, 'condition', condition_key(
                payload.get('validity') or {})),
            'facet': crypto.digest(key, 'facet', textrules.fact_facet(
                payload['predicate'], payload['object'], payload.get('single_valued'))[1]),
            'object_key': crypto.digest(key, 'object', object_key(payload['object']))})
    sealed = crypto.seal(key, row['id'], {'text': row['text'], 'tags': row['tags'].split(),
                                          'context': json.loads(row['context']),
                                          'payload': payload})
    assignments = ', '.join(f'{name} = ?' for name in digests)
    conn.execute(f'UPDATE substrate_records SET sealed = ?, key_id = ?, {assignments} '
                 'WHERE id = ?', (sealed, crypto.key_id(key), *digests.values(), row['id']))
