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

"""The evidence store's schema: named migrations, each applied once in its own transaction."""

from robot_memory.common.sqlite_db import MigrationSet
from robot_memory.common.sqlite_db import PlainDatabase
from robot_memory.common.sqlite_db import refuse_changes

# The evidence store's migrations, recorded (as sqlite-utils records them) in ``migrations``.
# The set's name is stored in every database: it keeps the module's former name.
MIGRATIONS = MigrationSet('robot_memory.evidence.store', 'migrations')


@MIGRATIONS(name='0001_evidence_tables')
def _create_tables(db: PlainDatabase) -> None:
    statements = [
        'CREATE TABLE IF NOT EXISTS observations (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'stamp REAL NOT NULL, source TEXT NOT NULL, signature TEXT, source_key TEXT NOT NULL, '
        "severity INTEGER NOT NULL, payload TEXT NOT NULL DEFAULT '')",
        'CREATE TABLE IF NOT EXISTS daily_counts (day TEXT NOT NULL, source TEXT NOT NULL, '
        'source_key TEXT NOT NULL, signature TEXT NOT NULL, severity INTEGER NOT NULL, '
        'count INTEGER NOT NULL, first_stamp REAL NOT NULL, last_stamp REAL NOT NULL, '
        'PRIMARY KEY (day, source_key, signature, severity))',
        'CREATE TABLE IF NOT EXISTS signatures (signature TEXT PRIMARY KEY, source TEXT NOT NULL, '
        "source_key TEXT NOT NULL, rule TEXT NOT NULL DEFAULT '', entry_id TEXT, "
        'entry_type TEXT, first_seen REAL, last_bad REAL, bad_total INTEGER NOT NULL DEFAULT 0, '
        "held INTEGER NOT NULL DEFAULT 0, payload TEXT NOT NULL DEFAULT '')",
        'CREATE INDEX IF NOT EXISTS signatures_entry ON signatures (entry_id)',
        'CREATE TABLE IF NOT EXISTS sources (source_key TEXT PRIMARY KEY, last_bad REAL, '
        'ok_since REAL, last_ok REAL)',
        'CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'at TEXT NOT NULL, entry_id TEXT NOT NULL, action TEXT NOT NULL, actor TEXT NOT NULL, '
        "reason TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}', dream_id INTEGER)",
        'CREATE INDEX IF NOT EXISTS audit_entry ON audit (entry_id, id)',
        'CREATE TABLE IF NOT EXISTS dreams (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'at TEXT NOT NULL, actor TEXT NOT NULL, first_id INTEGER NOT NULL, '
        'last_id INTEGER NOT NULL, report TEXT NOT NULL)',
        'CREATE TABLE IF NOT EXISTS dream_state (id INTEGER PRIMARY KEY CHECK (id = 1), '
        'last_id INTEGER NOT NULL DEFAULT 0, last_dream_at TEXT, file_hash TEXT)',
        'INSERT OR IGNORE INTO dream_state (id, last_id) VALUES (1, 0)',
        'CREATE TABLE IF NOT EXISTS snapshot (entry_id TEXT PRIMARY KEY, data TEXT NOT NULL)',
        'CREATE TABLE IF NOT EXISTS pending_dream (id INTEGER PRIMARY KEY CHECK (id = 1), '
        'token TEXT NOT NULL, at TEXT NOT NULL, file_hash TEXT NOT NULL, payload TEXT NOT NULL)',
    ]
    for statement in statements:
        db.execute(statement)


@MIGRATIONS(name='0002_append_only_triggers')
def _append_only(db: PlainDatabase) -> None:
    refuse_changes(db, 'audit', ('UPDATE', 'DELETE'), 'the audit log is append-only')
    refuse_changes(db, 'dreams', ('UPDATE', 'DELETE'), 'the dream log is append-only')
    refuse_changes(db, 'observations', ('UPDATE',), 'observations are append-only')


@MIGRATIONS(name='0003_undo_history')
def _undo_history(db: PlainDatabase) -> None:
    """
    Return the prior state of every entry a dream, prune or undo changes, and the undo log.

    ``entry_versions``: one row per change of the snapshot, holding the entry as it was
    before (canonical JSON; NULL when it did not exist), when (UNIX seconds), and which
    dream or undo made it (``manual`` marks a person's edit taken in). ``undos``: one row
    per undo (robot_memory.review.undo). ``undo_horizon``: the first dream whose changes are
    recorded here (dreams before this migration cannot be undone).
    """
    statements = [
        'CREATE TABLE IF NOT EXISTS entry_versions (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'at REAL NOT NULL, entry_id TEXT NOT NULL, prior TEXT, dream_id INTEGER, '
        'undo_id INTEGER, manual INTEGER NOT NULL DEFAULT 0)',
        'CREATE INDEX IF NOT EXISTS entry_versions_at ON entry_versions (at)',
        'CREATE INDEX IF NOT EXISTS entry_versions_entry ON entry_versions (entry_id, id)',
        'CREATE TABLE IF NOT EXISTS undos (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'at TEXT NOT NULL, actor TEXT NOT NULL, reason TEXT NOT NULL, target TEXT NOT NULL, '
        'entry_from INTEGER NOT NULL, record_from INTEGER NOT NULL, report TEXT NOT NULL)',
        'CREATE TABLE IF NOT EXISTS undo_horizon (id INTEGER PRIMARY KEY CHECK (id = 1), '
        'first_dream INTEGER NOT NULL)',
        'INSERT OR IGNORE INTO undo_horizon (id, first_dream) '
        'SELECT 1, coalesce(max(id), 0) + 1 FROM dreams',
    ]
    for statement in statements:
        db.execute(statement)
    for table, what in (('entry_versions', 'entry history'), ('undos', 'undo log')):
        refuse_changes(db, table, ('UPDATE', 'DELETE'), f'the {what} is append-only')


@MIGRATIONS(name='0004_replay_progress')
def _replay_progress(db: PlainDatabase) -> None:
    """
    Return what ``robot-memory replay`` took from recordings, so none is taken twice.

    ``replay_bags``: one row per recording (identity: a hash of its head), where it was
    read and the robot it names. ``replay_taken``: per recording and topic, the recorded
    times taken (ns, first and last) and how many messages at the last time, so a
    replay resumes after the last message taken and skips what another recording of the
    same topic already gave.
    """
    db.execute('CREATE TABLE IF NOT EXISTS replay_bags (bag TEXT PRIMARY KEY, path TEXT NOT '
               "NULL, kind TEXT NOT NULL, robot TEXT NOT NULL DEFAULT '', first_at TEXT NOT NULL)")
    db.execute('CREATE TABLE IF NOT EXISTS replay_taken (bag TEXT NOT NULL, topic TEXT NOT NULL, '
               'first_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, at_last INTEGER NOT NULL, '
               'messages INTEGER NOT NULL, PRIMARY KEY (bag, topic))')


@MIGRATIONS(name='0005_signature_history')
def _signature_history(db: PlainDatabase) -> None:
    """Add each signature's recent episodes (robot_memory.dream.pattern.History, JSON)."""
    db.execute("ALTER TABLE signatures ADD COLUMN history TEXT NOT NULL DEFAULT ''")


# What an observation row never changes once written (a run's end, count and ranges may grow).
_FIXED_COLUMNS = ('id', 'stamp', 'source', 'signature', 'source_key', 'severity', 'payload')


@MIGRATIONS(name='0006_observation_runs')
def _observation_runs(db: PlainDatabase) -> None:
    """
    Store runs of identical consecutive observations as one row (issue 28 point 6).

    ``end_stamp`` (NULL: the row's own stamp), ``count`` and ``ranges`` (JSON ``{key: [min,
    max]}`` of the numeric values) make a row a run; a row written before is a run of one.
    ``dream_state.sealed_id``: the highest id a dream has taken its window up to; rows at or
    below it are closed. The trigger that refused every UPDATE now refuses any change but a
    run's growth (later end, higher count, its ranges) of a row no dream has taken.
    """
    for statement in ('ALTER TABLE observations ADD COLUMN end_stamp REAL',
                      'ALTER TABLE observations ADD COLUMN count INTEGER NOT NULL DEFAULT 1',
                      "ALTER TABLE observations ADD COLUMN ranges TEXT NOT NULL DEFAULT ''",
                      'ALTER TABLE dream_state ADD COLUMN sealed_id INTEGER NOT NULL DEFAULT 0',
                      'UPDATE dream_state SET sealed_id = (SELECT coalesce(max(id), 0) '
                      'FROM observations) WHERE id = 1',
                      'DROP TRIGGER IF EXISTS observations_no_update'):
        db.execute(statement)
    changed = ' OR '.join(f'NEW.{column} IS NOT OLD.{column}' for column in _FIXED_COLUMNS)
    db.execute(
        'CREATE TRIGGER IF NOT EXISTS observations_run_growth_only BEFORE UPDATE ON observations '
        f'WHEN {changed} OR NEW.count < OLD.count OR NEW.end_stamp IS NULL OR NEW.end_stamp < '
        'coalesce(OLD.end_stamp, OLD.stamp) OR OLD.id <= (SELECT sealed_id FROM dream_state '
        "WHERE id = 1) BEGIN SELECT RAISE(ABORT, 'observations are append-only: only an open "
        "run (end_stamp, count, ranges) not yet taken by a dream may grow'); END")


@MIGRATIONS(name='0007_ingest_progress')
def _ingest_progress(db: PlainDatabase) -> None:
    """
    Return what ``robot-memory ingest`` took from JSON-lines files, so none is taken twice.

    ``ingest_files``: one row per file (identity: a hash of its first line), where it was read
    and how many of its lines were handled. ``ingest_taken``: per file and stream (a status,
    a logger, a telemetry topic), the first and last stamp taken (UNIX seconds) and how many
    observations (robot_memory.evidence.ingest).
    """
    db.execute('CREATE TABLE IF NOT EXISTS ingest_files (file TEXT PRIMARY KEY, path TEXT NOT '
               'NULL, lines INTEGER NOT NULL, first_at TEXT NOT NULL)')
    db.execute('CREATE TABLE IF NOT EXISTS ingest_taken (file TEXT NOT NULL, stream TEXT NOT '
               'NULL, first REAL NOT NULL, last REAL NOT NULL, observations INTEGER NOT NULL, '
               'PRIMARY KEY (file, stream))')


@MIGRATIONS(name='0008_replay_content')
def _replay_content(db: PlainDatabase) -> None:
    """
    Decide a replay's overlap by what each message was, not by time span (issue 35 point 1).

    ``replay_seen``: one row per message a replay took: its own stamp (ns: the header's or
    the log record's, else its recorded time), a 32-bit tag (CRC-32) of its topic, length
    and first bytes, which hold its source (a status's name and hardware id, a log
    record's node), and its recording (the ``replay_bags`` rowid); about 20 bytes a
    message, no text. A message of
    another recording with the same stamp and tag is the same message; one of its own
    recording was taken by an earlier replay of it. What was taken before this migration
    has no such rows: ``replay_taken.legacy_last_ns`` / ``legacy_at_last`` keep where
    those replays stopped, so they are still resumed, and not taken twice.
    """
    for statement in (
            'CREATE TABLE IF NOT EXISTS replay_seen (stamp INTEGER NOT NULL, tag INTEGER NOT '
            'NULL, bag INTEGER NOT NULL, PRIMARY KEY (stamp, tag, bag)) WITHOUT ROWID',
            'ALTER TABLE replay_taken ADD COLUMN legacy_last_ns INTEGER',
            'ALTER TABLE replay_taken ADD COLUMN legacy_at_last INTEGER',
            'UPDATE replay_taken SET legacy_last_ns = last_ns, legacy_at_last = at_last'):
        db.execute(statement)


@MIGRATIONS(name='0009_blackbox')
def _blackbox(db: PlainDatabase) -> None:
    # Self-contained: 0008 (replay) may be applied before or after it.
    db.execute('CREATE TABLE IF NOT EXISTS blackbox_recordings (id INTEGER PRIMARY KEY '
               'AUTOINCREMENT, path TEXT NOT NULL, signature TEXT NOT NULL, '
               "source_key TEXT NOT NULL DEFAULT '', started REAL NOT NULL, "
               'ended REAL NOT NULL, bytes INTEGER NOT NULL, topics TEXT NOT NULL, '
               "sha256 TEXT NOT NULL, freeze_frame TEXT NOT NULL DEFAULT '{}')")
    db.execute('CREATE INDEX IF NOT EXISTS blackbox_recordings_signature '
               'ON blackbox_recordings (signature, started)')


@MIGRATIONS(name='0010_signals')
def _signals(db: PlainDatabase) -> None:
    """
    Keep context signals as summaries per minute (issue 38 point 1, evidence.signals).

    ``signal_hours``: one row per signal and hour; ``data`` holds the hour's 60 intervals
    as float32 min, max, mean and a uint32 count each (960 bytes). Keyed by hour first, so
    rows are appended in time order and pages stay full.
    """
    db.execute('CREATE TABLE IF NOT EXISTS signal_hours (name TEXT NOT NULL, hour INTEGER NOT '
               'NULL, data BLOB NOT NULL, PRIMARY KEY (hour, name)) WITHOUT ROWID')


@MIGRATIONS(name='0011_replay_repeats')
def _replay_repeats(db: PlainDatabase) -> None:
    """
    Count how many times a recording gave one message (stamp and tag): ``replay_seen.times``.

    A recording may hold the same message more than once (a header stamp stuck on one
    value, the same status again): each is evidence. Without the count, a later part of one
    replay (after a flush or a dream) took a repeat for a message "taken by an earlier
    replay" and left it out. ``run`` (the replay that last met the row: a ``replay_runs``
    id, small, so a row stays about 25 bytes) and ``consumed`` (how many of its repeats that
    replay has met) let a resumed replay skip exactly the repeats taken before and take the
    rest (robot_memory.bags.replay).
    """
    for column in ('times INTEGER NOT NULL DEFAULT 1', 'run INTEGER NOT NULL DEFAULT 0',
                   'consumed INTEGER NOT NULL DEFAULT 0'):
        db.execute(f'ALTER TABLE replay_seen ADD COLUMN {column}')
    db.execute('CREATE TABLE IF NOT EXISTS replay_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, '
               'started TEXT NOT NULL)')
