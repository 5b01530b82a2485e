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
and searched through an in-memory index of the opened rows. :class:`Sealing` holds that
state (the key, the index, what this process changed) for one store, and works through
the store's public interface (``rows``, ``transaction``, ``audit``, ``lock``).
"""

import base64
import json
import math
from typing import Optional

from robot_memory.substrate import crypto
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import KeyUnavailable
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.record_tables import dumps
from robot_memory.substrate.record_tables import LIVE
from robot_memory.substrate.record_tables import object_key
from robot_memory.substrate.sealing_keys import SealingKeys

# Words whose plain record counts recall keeps (see Sealing.corpus_scores).
MAX_WORD_COUNTS = 4096


def _idf(rows: int, hits: int) -> float:
    """FTS5's BM25 inverse document frequency of a word ``hits`` of ``rows`` rows hold."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


class Sealing(SealingKeys):
    """
    The sealing state of one store: its key, the index of its sealed records, its changes.

    It works through the store's public interface, never the store's private state.
    """

    def __init__(self, store, encrypt_from, key_file):
        """Set the key of the sealed records (see :mod:`.crypto`); None for an in-memory db."""
        crypto.check_level(encrypt_from)
        self.store = store
        self.vault = None
        self.search = None
        self.writes = 0  # this process's changes of sealed text or tags
        self.dirty = set()  # and the seqs of the existing records it changed
        self.word_counts = {}  # word: plain records holding it (see corpus_scores)
        self.counted_rows = 0
        if key_file is None and self.store.path is None:
            if encrypt_from:
                raise SubstrateError('an in-memory database needs key_file= to encrypt records')
            return
        self.vault = crypto.Vault(key_file if key_file is not None
                                  else crypto.default_key_path(self.store.path), encrypt_from)

    def seals(self, sensitivity: str) -> bool:
        """Return True when what is learned at ``sensitivity`` is stored encrypted."""
        return self.vault is not None and self.vault.seals(sensitivity)

    def seal_fields(self, ref: str, fields: dict) -> dict:
        """
        ``fields`` encrypted for storage elsewhere in this database (a queued learn).

        Bound to ``ref`` like a record to its id; opened by :meth:`open_fields`, re-sealed
        by ``rotate_key`` wherever it is kept (see ``_reseal_queued``).
        """
        with self.store.lock:
            key = self.sealing_key(self.store.db.conn)
        return {'sealed': base64.b64encode(crypto.seal(key, ref, fields)).decode('ascii'),
                'key_id': crypto.key_id(key), 'ref': ref}

    def open_fields(self, data: dict) -> dict:
        """Return what :meth:`seal_fields` sealed; KeyUnavailable saying why when it cannot."""
        if self.vault is None:
            raise KeyUnavailable(f'{data.get("ref")} is encrypted and no key file is set')
        key = self.vault.key(data['key_id'])
        return crypto.unseal(key, data['ref'], base64.b64decode(data['sealed']))

    def reseal_queued(self, conn, old: bytes, key: bytes) -> int:
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

    def sealing_key(self, conn) -> bytes:
        """Return the key new sealed rows are written under; refuse when no key file is set."""
        if self.vault is None:
            raise SubstrateError('this record must be stored encrypted but no key file is set; '
                                 'create the Substrate with key_file=')
        return self.vault.sealing_key(conn)

    def seal_row(self, conn, record_id: str, fields: dict, keys: dict) -> tuple:
        """
        Return (ciphertext, key id, keyed digests) of a new sealed row.

        ``fields`` (text, tags, context, payload) are sealed bound to ``record_id``; ``keys``
        (content hash and fact keys, by name) are replaced by their keyed digests.
        """
        key = self.sealing_key(conn)
        sealed = crypto.seal(key, record_id, fields)
        self.writes += 1
        return sealed, crypto.key_id(key), {name: crypto.digest(key, name, value)
                                            for name, value in keys.items()}

    def open_sealed(self, rows: list) -> list:
        """Decrypt the sealed rows in place; one that cannot be opened gets ``locked`` (why)."""
        keys = {}
        for row in rows:
            if not row.get('key_id'):
                continue
            try:
                if self.vault is None:
                    raise KeyUnavailable('no key file is set')
                if row['key_id'] not in keys:
                    keys[row['key_id']] = self.vault.key(row['key_id'])
                fields = crypto.unseal(keys[row['key_id']], row['id'], row['sealed'])
            except KeyUnavailable as error:
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

    def check_open(self, row: dict) -> None:
        """Refuse to show or revise a sealed record that could not be decrypted."""
        if row.get('locked'):
            advice = self.vault.advice() if self.vault is not None else 'pass key_file='
            raise KeyUnavailable(f'record {row["id"]} is encrypted and cannot be opened: '
                                 f'{row["locked"]}; {advice}')

    def reseal(self, conn, row: dict, tags=None, payload=None) -> None:
        """Store an opened sealed record again with new tags or payload (fresh nonce)."""
        assert self.vault is not None  # the record was opened with the vault's key
        key = self.vault.key(row['key_id'])
        fields = {'text': row['text'],
                  'tags': list(tags) if tags is not None else row['tags'].split(),
                  'context': json.loads(row['context']),
                  'payload': payload if payload is not None else json.loads(row['payload'])}
        conn.execute('UPDATE substrate_records SET sealed = ? WHERE id = ?',
                     (crypto.seal(key, row['id'], fields), row['id']))
        self.writes += 1
        self.dirty.add(row['seq'])

    def clear_tags(self, conn, row: dict, tags: list) -> str:
        """Return the tags column of a row: the tags, or '' for a sealed row (resealed)."""
        if row.get('key_id'):
            self.reseal(conn, row, tags=tags)
            return ''
        return ' '.join(tags)

    def request_key(self, conn) -> Optional[bytes]:
        """Return the key that seals kept request replies: encryption on and the key usable."""
        if self.vault is None or self.vault.encrypt_from is None:
            return None
        try:
            return self.vault.sealing_key(conn)
        except KeyUnavailable:
            return None

    def stored_reply(self, request_id: str, stored: str) -> dict:
        """Return a kept reply, decrypted when it was stored sealed."""
        if not stored.startswith('sealed:'):
            return json.loads(stored)
        key = self.readable_key()
        try:
            if key is None:
                raise KeyUnavailable('the key is not available')
            return crypto.unseal(key, f'request:{request_id}',
                                 base64.b64decode(stored[len('sealed:'):]))
        except KeyUnavailable as error:
            raise SubstrateError(f'request_id {request_id!r} was already used; its reply is '
                                 f'encrypted and cannot be read ({error}); use a new '
                                 'request_id') from None

    def readable_key(self) -> Optional[bytes]:
        """Return the key in the key file when there is one that reads, else None (no error)."""
        if self.vault is None:
            return None
        try:
            return self.vault.current()
        except KeyUnavailable:
            return None

    def sealed_hash(self, text: str) -> Optional[str]:
        """Return the content hash a sealed copy of ``text`` would carry (None without a key)."""
        key = self.readable_key()
        return crypto.digest(key, 'content', textrules.content_hash(text)) if key else None

    def sealed_index(self) -> Optional[crypto.SealedSearch]:
        """Return the in-memory index of the sealed records, rebuilt when they changed."""
        if self.vault is None:
            return None
        # No other connection committed and this one changed no sealed text: nothing to do.
        version = (self.store.db.conn.execute('PRAGMA data_version').fetchone()[0],
                   self.writes)
        index = self.search
        if index is not None and index.version == version:
            return index if index.entries else None
        signature = self.store.db.conn.execute(
            'SELECT count(*), max(seq), max(updated_at) FROM substrate_records '
            'WHERE key_id IS NOT NULL').fetchone() + (self.writes,)
        if index is None:
            index = self.search = crypto.SealedSearch()
        index.version = version
        if not signature[0]:
            if index.entries:
                index.clear()
            index.signature = None
            return None
        if index.signature == signature:
            return index
        if index.signature is not None:  # only what is new or changed since
            dirty, self.dirty = sorted(self.dirty), set()
            index.upsert(self.store.rows(
                'key_id IS NOT NULL AND (seq > ? OR updated_at > ? OR seq IN '
                f'({", ".join("?" * len(dirty))}))', (*index.signature[1:3], *dirty)))
        if len(index.entries) != signature[0]:  # rows went away: start again
            index.clear()
            index.upsert(self.store.rows('key_id IS NOT NULL'))
        index.signature = signature
        return index

    def sealed_matches(self, query: str, limit: int) -> list:
        """(seq, BM25) of sealed records matching an FTS5 query; [] when there are none."""
        index = self.sealed_index()
        return index.match(query, limit) if index is not None else []

    def sealed_facts(self, subject: str, condition: str, exclude) -> list:
        """Live sealed facts of ``subject`` under ``condition``, shaped as ``_fact_conflicts``'s."""
        key = self.readable_key()
        if key is None:
            return []
        facts = []
        for row in self.store.rows(f"subject = ? AND condition_key = ? AND type = 'semantic' AND "
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

    def sealed_candidates(self, query: str, keywords: bool, wanted: int, eligible,
                          keyword: list, rows: dict, statuses: tuple, types) -> tuple:
        """
        Recall's keyword ranking with the sealed matches merged in, and what was withheld.

        Returns ``(ranking, (withheld count, notice))``: the sealed records that could not be
        searched (no key, wrong key) are counted, never matched nor shown.
        """
        if self.vault is None or not self.store.db.conn.execute(
                'SELECT 1 FROM substrate_records WHERE key_id IS NOT NULL LIMIT 1').fetchone():
            return keyword, (0, '')
        found: list = []
        if keywords:
            passes = [textrules.fts_query(query, operator='AND'), textrules.fts_query(query)]
            seen = set()
            for fts in passes:
                if fts is None or len(found) >= wanted:
                    continue
                for seq, score in self.sealed_matches(fts, wanted):
                    if seq not in seen:
                        seen.add(seq)
                        found.append((seq, score))
        found = self.corpus_scores(query, found)
        fetched = {row['seq']: row for row in self.store.rows_by_seq([seq for seq, _ in found])}
        merged = list(keyword)
        for seq, score in found:
            row = fetched.get(seq)
            if row is not None and not row.get('locked') and eligible(row):
                merged.append((seq, score))
                rows[seq] = row
        if len(merged) > len(keyword):
            merged.sort(key=lambda item: -item[1])
        count, reason = self.locked_count(statuses, types)
        if not count:
            return merged, (0, '')
        return merged, (count, crypto.withheld_notice(count, reason, self.vault.advice()))

    def corpus_scores(self, query: str, found: list) -> list:
        """
        Return ``found`` (seq, BM25 among the sealed rows) rescored as ``substrate_fts`` scores.

        A word rare among a few sealed rows is common in their index, and scores next to
        nothing there; each word's part is rescaled from the sealed rows' inverse document
        frequency to that of every record, so a sealed record ranks where its words put it.
        How many records hold a word is kept until the records grow or shrink by a hundredth
        (an inverse document frequency barely moves by then).
        """
        if not found:
            return found
        index = self.sealed_index()
        assert index is not None  # found holds matches from it
        conn = self.store.db.conn
        everyone = conn.execute('SELECT count(*) FROM substrate_records').fetchone()[0]
        if abs(everyone - self.counted_rows) > everyone // 100 or \
                len(self.word_counts) > MAX_WORD_COUNTS:
            self.word_counts, self.counted_rows = {}, everyone
        scores = dict.fromkeys((seq for seq, _ in found), 0.0)
        for word in textrules.query_terms(query):
            parts, holding = index.word_part(word, scores)
            if not parts:
                continue
            plain = self.word_counts.get(word)
            if plain is None:
                plain = self.word_counts[word] = conn.execute(
                    'SELECT count(*) FROM substrate_fts WHERE substrate_fts MATCH ?',
                    ('"' + word.replace('"', '""') + '"',)).fetchone()[0]
            scale = _idf(everyone, plain + holding) / _idf(index.indexed, holding)
            for seq, part in parts.items():
                scores[seq] += part * scale
        return sorted(scores.items(), key=lambda item: -item[1])

    def locked_count(self, statuses: tuple, types=None) -> tuple:
        """How many sealed records of these statuses (and types) cannot be opened, and why."""
        count, reason = 0, ''
        types = sorted(types or ())
        where = f'status IN ({", ".join("?" * len(statuses))})'
        if types:
            where += f' AND type IN ({", ".join("?" * len(types))})'
        unusable = {}
        index = self.sealed_index()
        names = index.key_ids if index is not None else ()
        for name in names:
            assert self.vault is not None  # the sealed index is kept with a vault only
            try:
                self.vault.key(name)
            except KeyUnavailable as error:
                unusable[name] = str(error)
        if unusable:
            for name, records in self.store.db.conn.execute(
                    'SELECT key_id, count(*) FROM substrate_records WHERE key_id IS NOT NULL '
                    f'AND {where} GROUP BY key_id', (*statuses, *types)).fetchall():
                if name in unusable:
                    count += records
                    reason = reason or unusable[name]
        damaged = index.damaged if index is not None and len(unusable) < len(names) else ()
        for name, status, kind, why in damaged:
            if name not in unusable and status in statuses and (not types or kind in types):
                count += 1  # opened with the right key, yet refused: altered or moved
                reason = reason or why
        return count, reason
