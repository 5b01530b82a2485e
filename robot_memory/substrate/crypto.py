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
Encryption at rest of sensitive typed records (selective-learning RFC §15.9).

A record whose sensitivity is at or above the configured level is *sealed*: its text,
tags, context and payload are one AES-256-GCM ciphertext (``sealed`` column; a random
96-bit nonce first), whose authenticated data is the record id, so a ciphertext copied onto
another row does not open. What stays in the clear is what the RFC names as a record's
metadata: id, type, sensitivity, status, confidence, salience, lifecycle times and decay,
provenance links and relations. The columns that would repeat the text (content hash,
and a semantic fact's subject, predicate, conditions and object keys) hold keyed HMAC
digests instead: equality look-ups (duplicate check, one active fact per subject) still
work with the key, and nothing can be guessed from them without it. The full-text index
gets empty text and the vector index no vector.

The key is 32 random bytes in a text file (``robot-memory-key-v1 <base64>``) of mode 0600,
created on the first sealed write, never logged; :func:`key_id` (a hash of it) is stored on
every sealed row so a wrong key file is told apart from a damaged record. ``cryptography``
is imported only when something is sealed or opened.
"""

import base64
import collections
import hashlib
import hmac
import json
import os
import pathlib
import sqlite3
import stat
from typing import Optional

from robot_memory.common.fileio import write_new
from robot_memory.substrate.errors import KeyUnavailable
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.vocabulary import SENSITIVITIES

KEY_HEADER = 'robot-memory-key-v1'
KEY_BYTES = 32
NONCE_BYTES = 12
KEY_FILE_NAME = 'memory-encryption.key'
_AAD = b'robot-memory/substrate-record/v1:'
_INDEX_LABEL = b'robot-memory/substrate-index/v1'
SEALED_FIELDS = ('text', 'tags', 'context', 'payload')


def default_key_path(db_path, federation_key=None) -> pathlib.Path:
    """
    Return the key file: beside the federation private key when one is set, else beside the db.

    ``memory-encryption.key`` in the federation key's directory; without a federation key,
    the database's name with ``.key`` (``robot-memory.key`` for ``robot-memory.db``).
    """
    if federation_key:
        return pathlib.Path(federation_key).expanduser().parent / KEY_FILE_NAME
    path = pathlib.Path(db_path).expanduser()
    return path.with_name(path.stem + '.key')


def check_level(value) -> Optional[str]:
    """Return an encrypt-from setting: '' or None is off, else one of SENSITIVITIES."""
    if value in (None, ''):
        return None
    if value not in SENSITIVITIES:
        raise SubstrateError(f'encrypt_from {value!r} is not one of {", ".join(SENSITIVITIES)} '
                             '(empty: encryption off)')
    return value


def key_id(key: bytes) -> str:
    """Return a short public name of a key (not the key): stored on the rows it sealed."""
    return hashlib.sha256(b'robot-memory key id\0' + key).hexdigest()[:16]


def new_key() -> bytes:
    """32 random bytes from the operating system."""
    return os.urandom(KEY_BYTES)


def write_key_file(path, key: bytes) -> None:
    """Write ``key`` to a new file of mode 0600 (never over an existing one), synced to disk."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = f'{KEY_HEADER} {base64.b64encode(key).decode("ascii")}\n'.encode('ascii')
    try:
        write_new(path, data)
    except FileExistsError:
        raise SubstrateError(f'{path} already exists; a key file is never overwritten') from None


def read_key_file(path) -> bytes:
    """Return the key in ``path``; a missing, group/world-readable or malformed file is refused."""
    path = pathlib.Path(path)
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding='ascii')
    except FileNotFoundError:
        raise KeyUnavailable(f'the key file {path} is missing') from None
    except (OSError, UnicodeDecodeError) as error:
        raise KeyUnavailable(f'the key file {path} cannot be read '
                             f'({getattr(error, "strerror", None) or error})') from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyUnavailable(f'the key file {path} is readable by others (mode '
                             f'{stat.S_IMODE(mode):o}); run chmod 600 on it')
    header, _, encoded = text.strip().partition(' ')
    try:
        key = base64.b64decode(encoded, validate=True)
    except ValueError:
        key = b''
    if header != KEY_HEADER or len(key) != KEY_BYTES:
        raise KeyUnavailable(f'the key file {path} is not a robot-memory key file (expected '
                             f'"{KEY_HEADER} <base64 of {KEY_BYTES} bytes>")')
    return key


_CIPHERS: dict = {}


def _aesgcm(key: bytes):
    cipher = _CIPHERS.get(key)
    if cipher is None:
        # lazy: cryptography, 10 ms and 6.5 MB of a recall or forget that unseals nothing
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        _CIPHERS.clear()  # the key of this process's database(s): rarely more than one
        cipher = _CIPHERS[key] = AESGCM(key)
    return cipher


def seal(key: bytes, record_id: str, fields: dict) -> bytes:
    """Nonce + AES-GCM ciphertext of ``fields`` (JSON), bound to ``record_id``."""
    nonce = os.urandom(NONCE_BYTES)
    data = json.dumps(fields, ensure_ascii=False, sort_keys=True,
                      separators=(',', ':')).encode('utf-8')
    return nonce + _aesgcm(key).encrypt(nonce, data, _AAD + record_id.encode('utf-8'))


def unseal(key: bytes, record_id: str, blob: bytes) -> dict:
    """Return the fields sealed for ``record_id``; a ciphertext altered or moved is refused."""
    from cryptography.exceptions import InvalidTag  # lazy: as _aesgcm, which loads it
    try:
        data = _aesgcm(key).decrypt(bytes(blob[:NONCE_BYTES]), bytes(blob[NONCE_BYTES:]),
                                    _AAD + record_id.encode('utf-8'))
    except (InvalidTag, ValueError):
        raise KeyUnavailable(f'record {record_id} failed authentication: its ciphertext was '
                             'altered or belongs to another record') from None
    return json.loads(data)


def digest(key: bytes, label: str, value) -> Optional[str]:
    """Keyed HMAC-SHA256 of ``value`` under ``label`` (None stays None): an opaque equal key."""
    if value is None:
        return None
    index_key = hmac.new(key, _INDEX_LABEL, hashlib.sha256).digest()
    return 'k:' + hmac.new(index_key, f'{label}\0{value}'.encode('utf-8'),
                           hashlib.sha256).hexdigest()


class Vault:
    """The key of one database's sealed records: loaded on demand, created on first seal."""

    def __init__(self, key_path, encrypt_from: Optional[str] = None):
        self.key_path = pathlib.Path(key_path).expanduser()
        self.encrypt_from = check_level(encrypt_from)
        self._key: Optional[bytes] = None
        self._error: Optional[KeyUnavailable] = None
        self._stamp: Optional[tuple] = None

    def seals(self, sensitivity: str) -> bool:
        """Return True when records of ``sensitivity`` are stored encrypted."""
        return self.encrypt_from is not None and (
            SENSITIVITIES.index(sensitivity) >= SENSITIVITIES.index(self.encrypt_from))

    def current(self) -> bytes:
        """Return the key in the key file, read again only when the file changed (or failed)."""
        try:
            info = self.key_path.stat()
            stamp = (info.st_ino, info.st_mtime_ns, info.st_size, info.st_mode)
        except OSError:
            stamp = None
        if stamp != self._stamp or (self._key is None and self._error is None):
            self._stamp, self._key, self._error = stamp, None, None
            try:
                self._key = read_key_file(self.key_path)
            except KeyUnavailable as error:
                self._error = error
        if self._error is not None:
            raise KeyUnavailable(str(self._error))
        assert self._key is not None  # read, or its error raised above
        return self._key

    def key(self, wanted: str) -> bytes:
        """Return the key named ``wanted`` (a key id on a row), or KeyUnavailable saying why not."""
        key = self.current()
        if key_id(key) != wanted:
            raise KeyUnavailable(f'the key file {self.key_path} holds key {key_id(key)} but '
                                 f'these records were encrypted under key {wanted}: it is the '
                                 'wrong key file')
        return key

    def sealing_key(self, conn: sqlite3.Connection) -> bytes:
        """Return the key new records are sealed with; created when no sealed record exists yet."""
        # The lowest and highest key id in use: two index seeks, however many records.
        known = {conn.execute(f'SELECT {end}(key_id) FROM substrate_records WHERE key_id IS '
                              'NOT NULL').fetchone()[0] for end in ('min', 'max')} - {None}
        if not known and not self.key_path.exists():
            write_key_file(self.key_path, new_key())
        try:
            key = self.current()
        except KeyUnavailable as error:
            raise KeyUnavailable(f'cannot store the record encrypted: {error}; '
                                 f'{self.advice()}') from None
        other = sorted(name for name in known if name != key_id(key))
        if other:
            raise KeyUnavailable(f'cannot store the record encrypted: the key file '
                                 f'{self.key_path} holds key {key_id(key)} but records are '
                                 f'encrypted under key {other[0]}; {self.advice()}')
        return key

    def forget(self) -> None:
        """Drop the key read from the file: the next use reads the file again."""
        self._key = None

    def advice(self) -> str:
        """Return what an operator does when the key cannot be used."""
        return (f'put the right key file back at {self.key_path} (mode 0600; after an '
                f'interrupted rotate-key it is {self.key_path.name}.new or '
                f'{self.key_path.name}.bak beside it), or name its path with substrate_key_file '
                '/ key_file; without it these records stay withheld, never shown')


def withheld_notice(count: int, reason: str, advice: str) -> str:
    """Return the one sentence every edge prints for encrypted records it could not open."""
    noun = 'record' if count == 1 else 'records'
    return f'{count} encrypted {noun} withheld: {reason}; {advice}'


class SealedSearch:
    """
    An in-memory FTS5 index of the decrypted sealed records (never written to disk).

    Kept up to date from the sealed rows that are new or changed since it last looked
    (``seq`` and ``updated_at``), rebuilt when rows went away; matched with the same
    tokenizer and queries as ``substrate_fts``, so recall and the duplicate check find
    sealed records as they find the others. BM25 statistics are those of the sealed subset;
    :meth:`word_part` gives what recall needs to rescore them against every record.
    """

    def __init__(self):
        self.conn = sqlite3.connect(':memory:', check_same_thread=False)
        self.conn.execute('CREATE VIRTUAL TABLE sealed_fts USING fts5(text, tags, '
                          "tokenize='porter unicode61 remove_diacritics 2')")
        self.signature = None
        self.version = None
        self.builds = 0
        self.entries = {}  # seq: (key id, status, type, why it cannot be opened or None)
        self.key_counts: collections.Counter = collections.Counter()
        self._damaged = {}
        self.indexed = 0  # rows in sealed_fts (those opened)

    @property
    def damaged(self) -> list:
        """(key id, status, type, why) of the sealed rows that could not be opened."""
        return list(self._damaged.values())

    @property
    def key_ids(self) -> set:
        """Return the key ids of the indexed rows."""
        return set(self.key_counts)

    def clear(self) -> None:
        """Forget every row (before a full rebuild)."""
        self.conn.execute('DELETE FROM sealed_fts')
        self.indexed = 0
        self.entries = {}
        self.key_counts = collections.Counter()
        self._damaged = {}
        self.builds += 1

    def upsert(self, rows: list) -> None:
        """Index opened store rows (dicts), replacing what was indexed under their seq."""
        for row in rows:
            old = self.entries.get(row['seq'])
            if old is not None:
                self.conn.execute('DELETE FROM sealed_fts WHERE rowid = ?', (row['seq'],))
                if not old[3]:
                    self.indexed -= 1
                self.key_counts[old[0]] -= 1
                if not self.key_counts[old[0]]:
                    del self.key_counts[old[0]]
                self._damaged.pop(row['seq'], None)
            entry = (row['key_id'], row['status'], row['type'], row.get('locked'))
            self.entries[row['seq']] = entry
            self.key_counts[entry[0]] += 1
            if entry[3]:
                self._damaged[row['seq']] = entry
            if not row.get('locked'):
                self.conn.execute('INSERT INTO sealed_fts (rowid, text, tags) VALUES (?, ?, ?)',
                                  (row['seq'], row['text'], row['tags']))
                self.indexed += 1

    def word_part(self, word: str, seqs) -> tuple:
        """Return ({seq: BM25 of one word} for ``seqs``, rows holding it): sealed statistics."""
        query = '"' + word.replace('"', '""') + '"'
        try:
            holding = self.conn.execute('SELECT count(*) FROM sealed_fts WHERE sealed_fts '
                                        'MATCH ?', (query,)).fetchone()[0]
            if not holding:
                return {}, 0
            seqs = list(seqs)
            return dict(self.conn.execute(
                'SELECT rowid, -bm25(sealed_fts, 1.0, 0.5) FROM sealed_fts WHERE sealed_fts '
                f'MATCH ? AND rowid IN ({", ".join("?" * len(seqs))})',
                (query, *seqs))), holding
        except sqlite3.OperationalError:
            return {}, 0

    def match(self, query: str, limit: int) -> list:
        """(seq, BM25 score) of the sealed records matching an FTS5 query, best first."""
        try:
            return self.conn.execute(
                'SELECT rowid, -bm25(sealed_fts, 1.0, 0.5) FROM sealed_fts WHERE sealed_fts '
                'MATCH ? ORDER BY bm25(sealed_fts, 1.0, 0.5) LIMIT ?', (query, limit)).fetchall()
        except sqlite3.OperationalError:
            return []
