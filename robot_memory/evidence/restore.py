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
The database half of an undo, applied inside the evidence store's transaction.

Restore points, the typed records to restore, and ``apply_recorded``.

``review.undo`` plans an undo and writes the memory file; what it records in ``pending_dream``
(an intent of kind ``undo``) is applied here by ``EvidenceStore.commit_dream``, so the store
never imports the review layer above it.
"""

import dataclasses
import json
import math
from typing import Optional

from robot_memory.evidence.evidence_audit import write_audit
from robot_memory.evidence.evidence_audit import write_record_audit
from robot_memory.evidence.intent import DreamIntent

ACTION = 'undo'
MAX_REASON = 500
# Columns an undo leaves as they are now: how often a record was used is not what it learned.
KEPT_COLUMNS = ('id', 'updated_at', 'access_count', 'last_accessed', 'useful_count',
                'unused_count')
LIVE = ('active', 'contested')
# Columns of a typed record whose change is not kept in substrate_versions (its triggers, in
# substrate.record_tables, watch the others): use counts, salience and vectors change with every
# recall and feedback; an undo restores what was learned, and compares only that.
UNVERSIONED = ('seq', 'updated_at', 'salience', 'last_reinforced_at', 'access_count',
               'last_accessed', 'useful_count', 'unused_count')


@dataclasses.dataclass(frozen=True)
class RestorePoint:
    """
    Where an undo goes back to.

    A point in time (``own`` empty): entry versions with ``id >= entry_from`` are rolled
    back; typed-record versions with ``id >= record_from`` or, when it is None, made after
    ``at`` (at ``at`` too unless ``inclusive``). ``own`` 'dream' or 'undo': only the changes
    that dream or undo (``own_id``) made are taken back; ``force`` also those changed since.
    """

    label: str
    target: dict
    at: float
    inclusive: bool
    entry_from: int
    record_from: Optional[int] = None
    own: str = ''
    own_id: int = 0
    force: bool = False
    # Taking back a dream at a wrong time (a clock that had jumped ahead) moves the dream
    # cursor back to ``rewind_to`` (ISO time; None: no dream before), so dreams run again.
    rewind: bool = False
    rewind_to: Optional[str] = None


def max_id(conn, table: str) -> int:
    """Return the highest id of ``table``, 0 when it is empty."""
    return conn.execute(f'SELECT coalesce(max(id), 0) FROM {table}').fetchone()[0]


def entry_change(before: Optional[str], after: Optional[str]) -> str:
    """Name what an undo does to an entry: restored, removed or changed back."""
    if before is None:
        return 'restored'
    if after is None:
        return 'removed'
    return 'changed back'


def has_records(conn) -> bool:
    """Whether the typed memory's history exists in this database."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'substrate_versions'").fetchone() is not None


def _same(old, new) -> bool:
    if isinstance(old, float) or isinstance(new, float):
        # json_object keeps 15 significant digits
        return (old is not None and new is not None
                and math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-12))
    return old == new


def _own_record_targets(conn, point: RestorePoint) -> tuple:
    """Return (targets, kept): what an undo changed in the typed records, if not since."""
    if point.own != 'undo':
        return {}, []  # a dream changes the memory file only
    record_from, report = conn.execute('SELECT record_from, report FROM undos WHERE id = ?',
                                       (point.own_id,)).fetchone()
    targets: dict = {}
    kept = []
    for record_id in json.loads(report)['records']:
        mine = conn.execute('SELECT id, prior FROM substrate_versions WHERE record_id = ? AND '
                            'id >= ? ORDER BY id LIMIT 1', (record_id, record_from)).fetchone()
        if mine is None:
            targets[record_id] = None  # deleted for good since: reported as skipped
            continue
        later = conn.execute('SELECT prior FROM substrate_versions WHERE record_id = ? AND '
                             'id > ? ORDER BY id LIMIT 1', (record_id, mine[0])).fetchone()
        before = json.loads(mine[1]) if mine[1] else None
        cursor = conn.execute('SELECT * FROM substrate_records WHERE id = ?', (record_id,))
        names = [column[0] for column in cursor.description]
        row = cursor.fetchone()
        # As the undo left it: the prior state of the next change, if there was one.
        left = json.loads(later[0]) if later is not None and later[0] else None
        if (point.force or row is None or left is None
                or _same_record(left, dict(zip(names, row)))):
            targets[record_id] = before
        else:
            kept.append({'kind': 'record', 'id': record_id,
                         'why': 'changed since (learned, revised, forgotten or restored '
                                'again); kept as it is now'})
    return targets, kept


def _same_record(before: dict, after: dict) -> bool:
    """Whether ``after`` holds, in what an undo restores, what ``before`` did."""
    return all(_same(after.get(name), value) for name, value in before.items()
               if name not in KEPT_COLUMNS + UNVERSIONED and name in after)


def plan_records(conn, point: RestorePoint) -> tuple:
    """Return (changes, skipped, kept) for the typed records: ``{'id', 'change', 'set'}``."""
    if not has_records(conn):
        return [], [], []
    if point.own:
        targets, kept = _own_record_targets(conn, point)
        return _record_changes(conn, targets, point) + (kept,)
    value: float
    if point.record_from is not None:
        where, value = 'id >= ?', point.record_from
    else:
        where, value = ('at > ?' if point.inclusive else 'at >= ?'), point.at
    rows = conn.execute(
        'SELECT v.record_id, v.prior FROM substrate_versions AS v JOIN (SELECT record_id, '
        f'min(id) AS first FROM substrate_versions WHERE {where} GROUP BY record_id) AS f '
        'ON v.id = f.first ORDER BY v.id', (value,)).fetchall()
    targets = {record_id: json.loads(prior) if prior else None for record_id, prior in rows}
    if point.record_from is None:
        # Records older than the history (no version at all) created after the point.
        later = 'created_at > ?' if point.inclusive else 'created_at >= ?'
        for record_id, in conn.execute(
                f'SELECT id FROM substrate_records WHERE {later} AND id NOT IN '
                '(SELECT record_id FROM substrate_versions)', (point.at,)):
            targets[record_id] = None
    return _record_changes(conn, targets, point) + ([],)


def _record_changes(conn, targets: dict, point: RestorePoint) -> tuple:
    """Return (changes, skipped): what setting each record to its target state changes."""
    cursor = conn.execute('SELECT * FROM substrate_records WHERE id IN '
                          '(SELECT value FROM json_each(?))', (json.dumps(list(targets)),))
    names = [column[0] for column in cursor.description]
    rows = {row[names.index('id')]: row for row in cursor.fetchall()}
    changes, skipped = [], []
    for record_id, prior in targets.items():
        row = rows.get(record_id)
        if row is None:
            skipped.append(f'typed record {record_id} was deleted for good (forget --hard); '
                           'it is not restored')
            continue
        row = dict(zip(names, row))
        if prior is None:
            if row['status'] != 'archived':
                why = 'learned by it' if point.own else 'learned after the restore point'
                changes.append({'id': record_id, 'change': f'archived ({why})', 'set': None,
                                'status': row['status']})
            continue
        update = {name: value for name, value in prior.items()
                  if name not in KEPT_COLUMNS and name in row and not _same(row[name], value)}
        if update:
            what = (f'status {row["status"]} -> {prior["status"]}'
                    if 'status' in update else ', '.join(sorted(update)))
            changes.append({'id': record_id, 'change': f'restored ({what})', 'set': update,
                            'status': row['status']})
    # Leave live states first, so a restored fact never meets the one that replaced it.
    changes.sort(key=lambda change: (change['set'] is not None,
                                     (change['set'] or {}).get('status') in LIVE))
    return changes, skipped


def _apply_records(conn, changes: list, at: float, undo_id: int, actor: str, reason: str,
                   label: str) -> None:
    note = f'undo {undo_id}: restored {label}'
    conn.executemany("UPDATE substrate_records SET status = 'archived', archived_at = ?, "
                     'archive_reason = ?, updated_at = ? WHERE id = ?',
                     [(at, f'{note}; {reason}'[:MAX_REASON], at, change['id'])
                      for change in changes if change['set'] is None])
    for change in changes:
        update = change['set']
        if update is None:
            continue
        names = sorted(update)
        assignments = ', '.join(f'{name} = ?' for name in names)
        if 'text' in update:  # its vector no longer matches; reindex_vectors renews it
            assignments += ', embedding = NULL, embedding_model = NULL'
        conn.execute(f'UPDATE substrate_records SET {assignments}, updated_at = ? WHERE id = ?',
                     [update[name] for name in names] + [at, change['id']])
    write_record_audit(conn, [(at, change['id'], ACTION, actor, reason,
                               json.dumps({'undo': undo_id, 'restore_point': label,
                                           'change': change['change'],
                                           'status_before': change['status']},
                                          sort_keys=True, ensure_ascii=False))
                              for change in changes])


def apply_recorded(store, intent: DreamIntent) -> int:
    """Return the database half of an undo (inside ``commit_dream``'s transaction); its id."""
    conn = store.db.conn
    at_s = intent.at.timestamp()
    actor, reason, label = intent.actor, intent.reason, intent.label
    assert intent.point is not None  # an undo's intent always names its restore point
    point = RestorePoint(**intent.point)
    conn.executemany('INSERT INTO entry_versions (at, entry_id, prior, manual) '
                     'VALUES (?, ?, ?, 1)',
                     [(at_s, entry_id, before, ) for entry_id, before, _ in intent.manual])
    entry_from = max_id(conn, 'entry_versions') + 1
    records, skipped, _ = plan_records(conn, point)
    record_from = max_id(conn, 'substrate_versions') + 1 if has_records(conn) else 1
    summary = {'entries': [entry_id for entry_id, _, _ in intent.changes],
               'records': [change['id'] for change in records], 'skipped': skipped,
               'manual': [entry_id for entry_id, _, _ in intent.manual],
               'own': bool(point.own), 'force': point.force}
    if point.rewind:
        summary['dream_cursor_back_to'] = point.rewind_to
    undo_id = conn.execute(
        'INSERT INTO undos (at, actor, reason, target, entry_from, record_from, report) '
        'VALUES (?, ?, ?, ?, ?, ?, ?)',
        (intent.at_text, actor, reason, json.dumps(point.target, sort_keys=True), entry_from,
         record_from, json.dumps(dict(summary, label=label), sort_keys=True,
                                 ensure_ascii=False))).lastrowid
    conn.executemany('INSERT INTO entry_versions (at, entry_id, prior, undo_id) '
                     'VALUES (?, ?, ?, ?)',
                     [(at_s, entry_id, before, undo_id)
                      for entry_id, before, _ in intent.changes])
    audit = []
    for entry_id, before, after in intent.manual:
        change = 'added' if before is None else 'deleted' if after is None else 'edited'
        detail = {'change': change, 'taken_in_by_undo': undo_id}
        if before is not None:
            detail['before'] = json.loads(before)
        if after is not None:
            detail['after' if before is not None else 'entry'] = json.loads(after)
        audit.append((entry_id, 'manual', f'{change} by hand since the last dream; taken in '
                                          f'before undo {undo_id}', detail))
    for entry_id, before, after in intent.changes:
        audit.append((entry_id, ACTION, f'{reason} (undo {undo_id}: {label})',
                      {'undo': undo_id, 'restore_point': point.target,
                       'change': entry_change(before, after),
                       'before': json.loads(before) if before else None,
                       'after': json.loads(after) if after else None}))
    write_audit(conn, [(intent.at_text, entry_id, action, actor, text,
                        json.dumps(detail, sort_keys=True, ensure_ascii=False), None)
                       for entry_id, action, text, detail in audit])
    final = {entry_id: after for entry_id, _, after in intent.manual}
    final.update({entry_id: after for entry_id, _, after in intent.changes})
    conn.executemany('INSERT OR REPLACE INTO snapshot VALUES (?, ?)',
                     [(key, data) for key, data in final.items() if data is not None])
    conn.executemany('DELETE FROM snapshot WHERE entry_id = ?',
                     [(key,) for key, data in final.items() if data is None])
    conn.execute('UPDATE dream_state SET file_hash = ? WHERE id = 1', (intent.file_hash,))
    if point.rewind:
        conn.execute('UPDATE dream_state SET last_dream_at = ? WHERE id = 1', (point.rewind_to,))
    _apply_records(conn, records, at_s, undo_id, actor, reason, label)
    return undo_id
