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
The substrate's tables: their columns, how values are stored in them, and their migrations.

The records live in the same database file as the evidence (by default beside the memory
file and named after it: ``robot_memory.locations.default_db_path``) in tables of their own,
created by their own named migrations (set ``robot_memory.substrate``, recorded in
``substrate_migrations``):

``substrate_records``
    One row per record: type, sensitivity, status (active, contested, retracted,
    superseded, archived), text, tags, confidence, stored salience and its decay profile,
    pinning, use counts, outcome counts, context / payload / provenance JSON, the
    (subject, predicate, condition set) key of semantic facts and an optional float32
    embedding. A partial unique index allows at most one *active* semantic record per
    key. A trigger refuses edits of an episodic record's text, payload or context.
``substrate_fts``
    FTS5 index (porter stemming) of text and tags, kept in step by triggers.
``substrate_relations`` / ``substrate_provenance``
    Graph edges (supports, contradicts, derived_from, supersedes, related_to, follows)
    and evidence links (e.g. ``observation:42``, ``audit:7``, ``entry:mem-a3f9c1d2``).
``substrate_audit``
    Append-only (UPDATE and DELETE refused): every create, reinforce, revision, archive,
    delete, pin and feedback with time, actor and reason.
``substrate_recalls``
    One row per recalled hit, later marked useful or not by ``feedback``.
``substrate_versions``
    The prior state of a record at each change of what it holds (not of its use counts),
    for ``robot_memory.review.undo``; a hard delete removes them with the record.
``substrate_requests``
    The replies to the last ``REQUEST_WINDOW`` requests that carried a caller's request id
    (``once``): a retried learn or forget gets the first reply again, never a second effect.
"""

import json
import sqlite3

from robot_memory.common.sqlite_db import create_private_file
from robot_memory.common.sqlite_db import MigrationSet
from robot_memory.common.sqlite_db import open_database
from robot_memory.common.sqlite_db import PlainDatabase
from robot_memory.common.sqlite_db import refuse_changes
from robot_memory.common.timeutil import from_epoch as when  # noqa: F401 - a stored time, read back
from robot_memory.evidence.restore import UNVERSIONED
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.vocabulary import MEMORY_TYPES
from robot_memory.substrate.vocabulary import SENSITIVITIES

LIVE = ('active', 'contested')
# The change log a VectorIndex reads (vector_index.py): every change of a record's vector or
# live status appends the record's seq, in whichever process made it.
LIVE_SQL = "('active', 'contested')"
VECTOR_TRIGGERS = (
    'CREATE TABLE IF NOT EXISTS substrate_vector_changes (change INTEGER PRIMARY KEY '
    'AUTOINCREMENT, seq INTEGER NOT NULL)',
    'CREATE TRIGGER IF NOT EXISTS substrate_vector_insert AFTER INSERT ON substrate_records '
    'WHEN new.embedding IS NOT NULL BEGIN '
    'INSERT INTO substrate_vector_changes (seq) VALUES (new.seq); END',
    'CREATE TRIGGER IF NOT EXISTS substrate_vector_update AFTER UPDATE OF status, embedding, '
    'embedding_model ON substrate_records WHEN '
    f'(old.status IN {LIVE_SQL}) IS NOT (new.status IN {LIVE_SQL}) OR '
    'old.embedding IS NOT new.embedding OR old.embedding_model IS NOT new.embedding_model '
    'BEGIN INSERT INTO substrate_vector_changes (seq) VALUES (new.seq); END',
    'CREATE TRIGGER IF NOT EXISTS substrate_vector_delete AFTER DELETE ON substrate_records '
    'WHEN old.embedding IS NOT NULL BEGIN '
    'INSERT INTO substrate_vector_changes (seq) VALUES (old.seq); END',
)

COLUMNS = ('seq', 'id', 'type', 'sensitivity', 'status', 'text', 'tags', 'scope', 'confidence',
           'salience', 'created_at', 'updated_at', 'last_reinforced_at', 'decay_curve',
           'half_life_s', 'decay_floor', 'max_age_s', 'gain', 'pinned', 'deletion_policy',
           'access_count', 'last_accessed', 'useful_count', 'unused_count', 'successes',
           'failures', 'content_hash', 'context', 'payload', 'provenance', 'subject',
           'predicate', 'condition_key', 'archived_at', 'archive_reason', 'facet', 'object_key',
           'sealed', 'key_id')
SELECT = f'SELECT {", ".join(COLUMNS)} FROM substrate_records'


# The substrate's migrations, recorded apart from the evidence store's.
MIGRATIONS = MigrationSet('robot_memory.substrate', 'substrate_migrations')


@MIGRATIONS(name='0001_substrate_tables')
def _create_tables(db: PlainDatabase) -> None:
    types = ', '.join(f"'{name}'" for name in MEMORY_TYPES)
    levels = ', '.join(f"'{name}'" for name in SENSITIVITIES)
    statements = [
        'CREATE TABLE IF NOT EXISTS substrate_records (seq INTEGER PRIMARY KEY AUTOINCREMENT, '
        f'id TEXT NOT NULL UNIQUE, type TEXT NOT NULL CHECK (type IN ({types})), '
        f'sensitivity TEXT NOT NULL CHECK (sensitivity IN ({levels})), '
        "status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'contested', "
        "'retracted', 'superseded', 'archived')), text TEXT NOT NULL, "
        "tags TEXT NOT NULL DEFAULT '', scope TEXT, "
        'confidence REAL NOT NULL CHECK (confidence BETWEEN 0 AND 1), '
        'salience REAL NOT NULL CHECK (salience BETWEEN 0 AND 1), created_at REAL NOT NULL, '
        'updated_at REAL NOT NULL, last_reinforced_at REAL NOT NULL, '
        'decay_curve TEXT NOT NULL, half_life_s REAL NOT NULL, decay_floor REAL NOT NULL, '
        'max_age_s REAL, gain REAL NOT NULL, pinned INTEGER NOT NULL DEFAULT 0, '
        "deletion_policy TEXT NOT NULL DEFAULT 'auto_prune', "
        'access_count INTEGER NOT NULL DEFAULT 0, last_accessed REAL, '
        'useful_count INTEGER NOT NULL DEFAULT 0, unused_count INTEGER NOT NULL DEFAULT 0, '
        'successes INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0, '
        "content_hash TEXT NOT NULL, context TEXT NOT NULL DEFAULT '{}', "
        'payload TEXT NOT NULL, provenance TEXT NOT NULL, subject TEXT, predicate TEXT, '
        'condition_key TEXT, embedding BLOB, embedding_model TEXT, archived_at REAL, '
        'archive_reason TEXT, '
        "CHECK (type != 'semantic' OR (subject IS NOT NULL AND predicate IS NOT NULL "
        'AND condition_key IS NOT NULL)))',
        'CREATE INDEX IF NOT EXISTS substrate_records_hash ON substrate_records '
        '(content_hash, type)',
        'CREATE INDEX IF NOT EXISTS substrate_records_type ON substrate_records (type, status)',
        'CREATE INDEX IF NOT EXISTS substrate_records_fact ON substrate_records '
        '(subject, predicate, condition_key)',
        'CREATE UNIQUE INDEX IF NOT EXISTS substrate_one_active_fact ON substrate_records '
        "(subject, predicate, condition_key) WHERE type = 'semantic' AND status = 'active'",
        'CREATE VIRTUAL TABLE IF NOT EXISTS substrate_fts USING fts5(text, tags, '
        "content='substrate_records', content_rowid='seq', "
        "tokenize='porter unicode61 remove_diacritics 2')",
        'CREATE TRIGGER IF NOT EXISTS substrate_fts_insert AFTER INSERT ON substrate_records '
        'BEGIN INSERT INTO substrate_fts (rowid, text, tags) '
        'VALUES (new.seq, new.text, new.tags); END',
        'CREATE TRIGGER IF NOT EXISTS substrate_fts_delete AFTER DELETE ON substrate_records '
        'BEGIN INSERT INTO substrate_fts (substrate_fts, rowid, text, tags) '
        "VALUES ('delete', old.seq, old.text, old.tags); END",
        'CREATE TRIGGER IF NOT EXISTS substrate_fts_update AFTER UPDATE OF text, tags '
        'ON substrate_records BEGIN INSERT INTO substrate_fts (substrate_fts, rowid, text, tags) '
        "VALUES ('delete', old.seq, old.text, old.tags); "
        'INSERT INTO substrate_fts (rowid, text, tags) VALUES (new.seq, new.text, new.tags); END',
        'CREATE TRIGGER IF NOT EXISTS substrate_episodic_append_only BEFORE UPDATE OF text, '
        'payload, context, type, subject, predicate ON substrate_records '
        "WHEN old.type = 'episodic' BEGIN SELECT RAISE(ABORT, "
        "'episodic records are append-only'); END",
        'CREATE TABLE IF NOT EXISTS substrate_relations (source_id TEXT NOT NULL, '
        'predicate TEXT NOT NULL, target_id TEXT NOT NULL, weight REAL, '
        'created_at REAL NOT NULL, PRIMARY KEY (source_id, predicate, target_id))',
        'CREATE INDEX IF NOT EXISTS substrate_relations_target ON substrate_relations '
        '(target_id)',
        'CREATE TABLE IF NOT EXISTS substrate_provenance (record_id TEXT NOT NULL, '
        'kind TEXT NOT NULL, ref TEXT NOT NULL, hash TEXT, PRIMARY KEY (record_id, kind, ref))',
        'CREATE INDEX IF NOT EXISTS substrate_provenance_ref ON substrate_provenance (ref)',
        'CREATE TABLE IF NOT EXISTS substrate_audit (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'at REAL NOT NULL, record_id TEXT NOT NULL, action TEXT NOT NULL, '
        "actor TEXT NOT NULL, reason TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}')",
        'CREATE INDEX IF NOT EXISTS substrate_audit_record ON substrate_audit (record_id, id)',
        'CREATE TABLE IF NOT EXISTS substrate_recalls (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'recall_id INTEGER NOT NULL, at REAL NOT NULL, record_id TEXT NOT NULL, '
        'rank INTEGER NOT NULL, useful INTEGER)',
        'CREATE INDEX IF NOT EXISTS substrate_recalls_record ON substrate_recalls '
        '(record_id, id)',
    ]
    for statement in statements:
        db.execute(statement)
    refuse_changes(db, 'substrate_audit', ('UPDATE', 'DELETE'),
                   'the substrate audit log is append-only')


@MIGRATIONS(name='0002_substrate_requests')
def _create_requests(db: PlainDatabase) -> None:
    db.execute('CREATE TABLE IF NOT EXISTS substrate_requests (seq INTEGER PRIMARY KEY '
               'AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, '
               'fingerprint TEXT NOT NULL, reply TEXT NOT NULL, at REAL NOT NULL)')


@MIGRATIONS(name='0003_fact_cardinality')
def _fact_cardinality(db: PlainDatabase) -> None:
    """
    Facts conflict only within a single-valued facet; many-valued facts live side by side.

    ``facet`` is set on semantic records whose predicate holds one value at a time (see
    ``text.fact_facet``); the one-active-fact rule now covers only those. ``object_key`` is
    the object as compared (``object_key``), so a learn finds an equal fact without reading
    every value of its subject.
    """
    db.execute('ALTER TABLE substrate_records ADD COLUMN facet TEXT')
    db.execute('ALTER TABLE substrate_records ADD COLUMN object_key TEXT')
    rows = db.execute("SELECT id, payload FROM substrate_records WHERE type = 'semantic'"
                      ).fetchall()
    for record_id, payload in rows:
        fact = json.loads(payload)
        _, facet = textrules.fact_facet(fact['predicate'], fact.get('object'),
                                        fact.get('single_valued'))
        db.execute('UPDATE substrate_records SET facet = ?, object_key = ? WHERE id = ?',
                   (facet, object_key(fact.get('object')), record_id))
    db.execute('DROP INDEX IF EXISTS substrate_one_active_fact')
    db.execute('DROP INDEX IF EXISTS substrate_records_fact')
    db.execute('CREATE INDEX IF NOT EXISTS substrate_records_fact_value ON substrate_records '
               '(subject, predicate, condition_key, object_key)')
    db.execute('CREATE UNIQUE INDEX IF NOT EXISTS substrate_one_active_value ON '
               'substrate_records (subject, predicate, condition_key, facet) '
               "WHERE type = 'semantic' AND status = 'active' AND facet IS NOT NULL")


@MIGRATIONS(name='0004_vector_change_log')
def _vector_change_log(db: PlainDatabase) -> None:
    for statement in VECTOR_TRIGGERS:
        db.execute(statement)


@MIGRATIONS(name='0005_encryption_at_rest')
def _encryption_at_rest(db: PlainDatabase) -> None:
    """Sealed records: the AES-GCM ciphertext of text, tags, context and payload, and its key id."""
    db.execute('ALTER TABLE substrate_records ADD COLUMN sealed BLOB')
    db.execute('ALTER TABLE substrate_records ADD COLUMN key_id TEXT')
    db.execute('CREATE INDEX IF NOT EXISTS substrate_records_sealed ON substrate_records '
               '(key_id, updated_at) WHERE key_id IS NOT NULL')


# A sealed record's ciphertext stays in one place: no copy under a key rotated away.
NOT_IN_HISTORY = ('seq', 'sealed', 'key_id')


@MIGRATIONS(name='0006_record_versions')
def _record_versions(db: PlainDatabase) -> None:
    """
    Return the prior state of every record at each change, for ``robot_memory.review.undo``.

    ``substrate_versions`` holds the row as it was before (JSON of its columns but the
    vector; NULL: the record was created) and when (``at``, UNIX seconds). A hard delete
    removes the record's versions too: what was forgotten for good is never restored.
    Only ``record_id`` is indexed (the purge): an undo is rare and may scan, a learn is not.
    """
    # UNVERSIONED (evidence.restore, which reads this history): use counts, salience.
    versioned = [name for name in COLUMNS if name not in UNVERSIONED + NOT_IN_HISTORY]
    image = 'json_object(' + ', '.join(f"'{name}', old.{name}" for name in COLUMNS
                                       if name not in NOT_IN_HISTORY) + ')'
    changed = ' OR '.join(f'old.{name} IS NOT new.{name}' for name in versioned)
    # The time of a change: the row's updated_at, or the last audit entry for writes that
    # leave updated_at alone (never later than the writer's now).
    at = ('max(old.updated_at, new.updated_at, coalesce((SELECT at FROM substrate_audit '
          'ORDER BY id DESC LIMIT 1), 0))')
    statements = [
        'CREATE TABLE IF NOT EXISTS substrate_versions (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'record_id TEXT NOT NULL, at REAL NOT NULL, prior TEXT)',
        'CREATE INDEX IF NOT EXISTS substrate_versions_record ON substrate_versions '
        '(record_id, id)',
        'CREATE TRIGGER IF NOT EXISTS substrate_version_insert AFTER INSERT ON '
        'substrate_records BEGIN INSERT INTO substrate_versions (record_id, at, prior) '
        'VALUES (new.id, new.updated_at, NULL); END',
        f'CREATE TRIGGER IF NOT EXISTS substrate_version_update AFTER UPDATE OF '
        f'{", ".join(versioned)} ON substrate_records WHEN {changed} BEGIN '
        f'INSERT INTO substrate_versions (record_id, at, prior) VALUES (old.id, {at}, '
        f'{image}); END',
        'CREATE TRIGGER IF NOT EXISTS substrate_version_delete AFTER DELETE ON '
        'substrate_records BEGIN DELETE FROM substrate_versions WHERE record_id = old.id; END',
    ]
    for statement in statements:
        db.execute(statement)


def dumps(value) -> str:
    """Return ``value`` as the canonical JSON the tables store (sorted keys, no spaces)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(',', ':'))


def object_key(value) -> str:
    """Return a fact's object as compared: normalised text, or canonical JSON of anything else."""
    if isinstance(value, str):
        return 's:' + textrules.normalise(value)
    return 'j:' + dumps(value)


def condition_key(validity: dict) -> str:
    """Return the conditions, start and end of a fact's validity as its stored key."""
    key = {name: validity[name] for name in ('conditions', 'start', 'end')
           if validity.get(name) not in (None, {})}
    return dumps(key)


def connect(path, busy_timeout_s: float) -> PlainDatabase:
    """Return the database at ``path`` (None: in memory) with the migrations applied."""
    target = ':memory:'
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Never open (and close) an existing database: that would drop the SQLite
            # locks of the evidence store's connection in this process.
            create_private_file(path)
        except OSError as error:
            raise SubstrateError(f'cannot create the memory database {path}: '
                                 f'{error.strerror}; check the directory is writable') from None
        target = str(path)
    try:
        return open_database(target, busy_timeout_s, MIGRATIONS)
    except sqlite3.DatabaseError as error:
        if 'locked' in str(error):   # held too long by another process: not damage
            raise SubstrateError(f'cannot open the memory database {target} ({error}); '
                                 'it was left as it is: retry when the process holding '
                                 'it is done') from None
        if not _damaged(error):  # a full disk, a read-only file: not damage either
            raise SubstrateError(f'cannot write the memory database {target} ({error}); it '
                                 'was left as it is: check the free space on its disk and its '
                                 'permissions, then retry') from None
        raise SubstrateError(f'{target} is not a usable memory database ({error}); move it '
                             'aside and a new one is created') from None


def _damaged(error: sqlite3.DatabaseError) -> bool:
    """Whether SQLite's error says the file is damaged or not a database (else: the disk)."""
    name = getattr(error, 'sqlite_errorname', '')
    if name:
        return name.startswith(('SQLITE_CORRUPT', 'SQLITE_NOTADB'))
    words = ('disk I/O', 'disk is full', 'readonly', 'unable to open')
    return not any(word in str(error) for word in words)


def audit_rows(conn, record_id: str) -> list:
    """Return (id, at, record_id, action, actor, reason, detail) rows of one record's trail."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                    "name = 'substrate_audit'").fetchone() is None:
        return []  # a database the typed memory never opened
    return conn.execute('SELECT id, at, record_id, action, actor, reason, detail FROM '
                        'substrate_audit WHERE record_id = ? ORDER BY id',
                        (record_id,)).fetchall()
