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
The key of the sealed records over its life: what is stored plain or sealed, and rotation.

``SealingKeys`` is a part of :class:`~robot_memory.substrate.sealing.Sealing`: the notice a
learn gives when a sensitive record is stored in plaintext, the counts of ``stats`` and
health (sealed, withheld, plaintext), and ``rotate_key``, which re-seals every sealed record
under a new key in one audited transaction.
"""

import datetime as dt
import json
import os
from typing import Any
from typing import Callable

from robot_memory.common.fileio import fsync_directory
from robot_memory.substrate import crypto
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.record_tables import condition_key
from robot_memory.substrate.record_tables import object_key
from robot_memory.substrate.validation import epoch
from robot_memory.substrate.vocabulary import SENSITIVITIES

# Records at or above this sensitivity stored in plaintext are reported (learn, stats, health).
WARN_FROM = 'high'
HOW_TO_ENCRYPT = ('to encrypt them set substrate_encrypt_from: high (a memory_node parameter; '
                  'robot-memory and its mcp server read it from the --config file)')


class SealingKeys:
    """Plaintext notices, the sealed status and key rotation of one store (a mixin)."""

    # What Sealing holds, which these methods read and change.
    store: Any
    vault: Any
    search: Any
    seals: Callable[[str], bool]
    locked_count: Callable[..., tuple]
    check_open: Callable[[dict], None]
    reseal_queued: Callable[..., int]

    def plaintext_notice(self, sensitivity: str) -> str:
        """Return what a learn says when its record of ``sensitivity`` is stored unencrypted."""
        if SENSITIVITIES.index(sensitivity) < SENSITIVITIES.index(WARN_FROM) or \
                self.seals(sensitivity):
            return ''
        return (f'not encrypted: this {sensitivity} sensitivity record is stored in plaintext '
                f'because {self._why_plain()}; {HOW_TO_ENCRYPT}')

    def _why_plain(self) -> str:
        encrypt_from = self.vault.encrypt_from if self.vault is not None else None
        return (f'encryption at rest starts at {encrypt_from}' if encrypt_from
                else 'encryption at rest is off')

    def plaintext_count(self) -> int:
        """Return how many records at or above ``WARN_FROM`` are stored unencrypted."""
        levels = SENSITIVITIES[SENSITIVITIES.index(WARN_FROM):]
        with self.store.lock:
            return self.store.db.conn.execute(
                'SELECT count(*) FROM substrate_records WHERE key_id IS NULL AND sensitivity IN '
                f'({", ".join("?" * len(levels))})', levels).fetchone()[0]

    def sealed_status(self) -> dict:
        """Encryption at rest: the key file, the sealed, withheld and plaintext counts, notices."""
        counts = {'sealed': 0, 'withheld': 0, 'notice': ''}
        plain = self.plaintext_count()
        counts['plaintext_sensitive'] = plain
        counts['plaintext_notice'] = ''
        if plain:
            noun = 'record' if plain == 1 else 'records'
            counts['plaintext_notice'] = (
                f'{plain} {noun} of {WARN_FROM} sensitivity or above stored in plaintext: '
                + ('stored before encryption at rest was on (it applies to records learned '
                   'after)' if self.seals(WARN_FROM) else f'{self._why_plain()}; {HOW_TO_ENCRYPT}'))
        if self.vault is None:
            return {'key_file': None, 'encrypt_from': None, **counts}
        with self.store.lock:
            counts['sealed'] = self.store.db.conn.execute(
                'SELECT count(*) FROM substrate_records WHERE key_id IS NOT NULL').fetchone()[0]
            withheld, reason = self.locked_count(('active', 'contested', 'retracted',
                                                  'superseded', 'archived'))
        counts['withheld'] = withheld
        if withheld:
            counts['notice'] = crypto.withheld_notice(withheld, reason, self.vault.advice())
        return {'key_file': str(self.vault.key_path), 'encrypt_from': self.vault.encrypt_from,
                **counts}

    def rotate_key(self, now: dt.datetime, actor: str = 'api') -> dict:
        """
        Re-encrypt every sealed record under a new key, in one transaction, audited.

        The new key is written to ``<key file>.new`` and the old one copied to
        ``<key file>.bak`` first; the records are re-sealed (and their keyed digests
        recomputed) in one ``BEGIN IMMEDIATE`` transaction; only after it commits does the
        new key replace the old file, and the backup is removed. Interrupted anywhere, one
        of the three files still opens the records (the error names it).
        """
        now_s = epoch(now)
        if self.vault is None:
            raise SubstrateError('no key file is set; create the Substrate with key_file=')
        path = self.vault.key_path
        fresh, backup = path.with_name(path.name + '.new'), path.with_name(path.name + '.bak')
        for leftover in (fresh, backup):
            if leftover.exists():
                raise SubstrateError(f'{leftover} exists: an earlier rotate-key did not finish; '
                                     'check which key opens the records, keep it as '
                                     f'{path.name} and remove the other file, then retry')
        with self.store.lock:
            names = [name for name, in self.store.db.conn.execute(
                'SELECT DISTINCT key_id FROM substrate_records WHERE key_id IS NOT NULL')]
            if not names:
                raise SubstrateError('no record is encrypted; there is no key to rotate (records '
                                     'are encrypted once encrypt_from is set)')
            old = self.vault.key(names[0])
            for name in names[1:]:
                self.vault.key(name)  # raises: records under another key cannot be rotated
            key = crypto.new_key()
            crypto.write_key_file(backup, old)
            crypto.write_key_file(fresh, key)
            try:
                with self.store.transaction() as conn:
                    rows = list(self.store.rows('key_id IS NOT NULL'))
                    for row in rows:
                        self.check_open(row)
                        self.reseal_under(conn, row, key)
                    queued = self.reseal_queued(conn, old, key)
                    self.store.audit(conn, now_s, 'substrate:key', 'rotate-key', actor,
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
            self.vault.forget()
            self.search = None
        return {'records': len(rows), 'old_key_id': crypto.key_id(old),
                'new_key_id': crypto.key_id(key), 'key_file': str(path)}

    def reseal_under(self, conn, row: dict, key: bytes) -> None:
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
