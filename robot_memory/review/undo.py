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
Undo: put the memory file and the typed records back as they were before a dream or at a time.

The evidence database keeps, for every change, the state it replaced: ``entry_versions``
(each entry of robot-memory.md before a dream, a prune or an undo changed it; written by
``EvidenceStore.commit_dream``) and ``substrate_versions`` (each typed record before a
change of what it holds; written by triggers of the typed memory). The state at a restore
point is the current state with, for every entry or record changed since, the prior state
of its first change after that point.

Restore points: ``before dream N`` (``--dream N``), ``at TIME`` (``--to TIME``, changes at
that instant kept) and ``before undo N`` (``--undo N``: undoes an undo, re-applying what it
undid). Nothing is deleted by an undo:

* an entry is restored, changed back or removed from the file; the audit log records each
  as action ``undo`` with the entry before and after, the actor and the reason;
* a typed record created after the point is archived (out of recall, still in ``get`` and
  ``history``), a changed one gets back the columns it had (its use counts stay); each is
  audited as ``undo`` in the typed memory's audit log. A hard-deleted record stays deleted
  (forgotten for good) and is reported as skipped;
* edits a person made to the file since the last dream are first taken in (audited as
  ``manual``, as a dream would) and count as made at the moment of the undo;
* the undo is logged in ``undos``; ``--undo`` of it restores the state just before it.

Crash safety is the dream's: under the file lock the undo's intent is recorded
(``pending_dream``, kind ``undo``), the file is written atomically, then one transaction
applies the entry history, audit, snapshot and the typed records. A crash in between is
completed (or discarded, if the file was never written) by the next dream or undo.

Signature links are left as they are: later evidence of a fault whose entry was removed
creates the entry afresh, as after a prune. Peer context and the Markdown body of the
file are not part of what is restored.
"""

import dataclasses
import datetime as dt
import json
import math
from typing import Optional
import uuid

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import require_aware
from robot_memory.dream.intent import DreamIntent

ACTION = 'undo'
MAX_REASON = 500
# Columns an undo leaves as they are now: how often a record was used is not what it learned.
KEPT_COLUMNS = ('id', 'updated_at', 'access_count', 'last_accessed', 'useful_count',
                'unused_count')
LIVE = ('active', 'contested')


class UndoError(ValueError):
    """An undo that cannot be done; the message says what was wrong and what to do."""


@dataclasses.dataclass(frozen=True)
class RestorePoint:
    """
    Where an undo goes back to.

    Entry versions with ``id >= entry_from`` are rolled back; typed-record versions with
    ``id >= record_from`` or, when it is None, made after ``at`` (at ``at`` too unless
    ``inclusive``).
    """

    label: str
    target: dict
    at: float
    inclusive: bool
    entry_from: int
    record_from: Optional[int] = None


@dataclasses.dataclass
class UndoReport:
    """What an undo changed (or, for a dry run, would change)."""

    at: dt.datetime
    actor: str
    reason: str
    label: str
    target: dict
    dry_run: bool = False
    undo_id: Optional[int] = None
    entries: list = dataclasses.field(default_factory=list)
    records: list = dataclasses.field(default_factory=list)
    manual: list = dataclasses.field(default_factory=list)
    skipped: list = dataclasses.field(default_factory=list)
    recovered: Optional[str] = None

    @property
    def noop(self) -> bool:
        """Whether there was nothing to change."""
        return not (self.entries or self.records)

    def to_dict(self) -> dict:
        """Plain JSON data."""
        data = dataclasses.asdict(self)
        data['at'] = format_iso(self.at)
        data['noop'] = self.noop
        return data

    def summary(self) -> str:
        """One line for people."""
        verb = 'would restore' if self.dry_run else 'restored'
        if self.noop:
            return (f'nothing to undo: the memory file and the typed records are already as '
                    f'they were {self.label}')
        head = f'undo {self.undo_id}: ' if self.undo_id is not None else ''
        return (f'{head}{verb} the memory as it was {self.label}: {len(self.entries)} '
                f'entries, {len(self.records)} typed records'
                + (f'; {len(self.skipped)} skipped' if self.skipped else ''))

    def lines(self) -> list:
        """One line per change, for people."""
        out = []
        for change in self.entries:
            text = (change['after'] or change['before'] or {}).get('text', '')
            out.append(f'entry {change["id"]}: {change["change"]}  {text}')
        for change in self.records:
            out.append(f'record {change["id"]}: {change["change"]}')
        out.extend(f'skipped: {note}' for note in self.skipped)
        return out


def _aware(now: dt.datetime) -> dt.datetime:
    return require_aware(now, UndoError)


def check_reason(reason) -> str:
    """Return the reason of an undo, stripped; refused when empty or too long."""
    if not isinstance(reason, str) or not reason.strip():
        raise UndoError('say why in a reason (e.g. --reason "learned a false fault last '
                        'night"); the audit log keeps it')
    if len(reason) > MAX_REASON:
        raise UndoError(f'the reason is {len(reason)} characters; the limit is {MAX_REASON}')
    return reason.strip()


def parse_time(text: str) -> dt.datetime:
    """Return an ISO 8601 time for ``--to``; refused with an example when it is not one."""
    try:
        return parse_iso(text)
    except ValueError:
        raise UndoError(f'{text!r} is not an ISO 8601 time; give e.g. 2026-04-01T03:00:00Z '
                        '(a time without an offset is taken as UTC)') from None


def point_options(dream: int = 0, undo_id: int = 0, to: str = '') -> dict:
    """Keyword arguments of ``undo`` from a request's fields (0 and '' mean not given)."""
    return {'dream': dream or None, 'undo_id': undo_id or None,
            'to': parse_time(to) if to.strip() else None}


def _max_id(conn, table: str) -> int:
    return conn.execute(f'SELECT coalesce(max(id), 0) FROM {table}').fetchone()[0]


def restore_point(conn, now: dt.datetime, dream: Optional[int] = None,
                  to: Optional[dt.datetime] = None, undo: Optional[int] = None) -> RestorePoint:
    """Return the restore point named by exactly one of ``dream``, ``to`` and ``undo``."""
    now = _aware(now)
    if sum(value is not None for value in (dream, to, undo)) != 1:
        raise UndoError('name one restore point: a dream id (--dream), a time (--to) or an '
                        'undo to undo (--undo)')
    horizon = conn.execute('SELECT first_dream FROM undo_horizon WHERE id = 1').fetchone()[0]
    if dream is not None:
        return _before_dream(conn, dream, horizon)
    if undo is not None:
        row = conn.execute('SELECT at, entry_from, record_from FROM undos WHERE id = ?',
                           (_whole(undo, 'undo id'),)).fetchone()
        if row is None:
            raise UndoError(f'there is no undo {undo}; robot-memory undo --list shows them')
        return RestorePoint(f'before undo {undo} ({row[0]})', {'undo': undo},
                            parse_iso(row[0]).timestamp(), False, row[1], row[2])
    to = _aware(to)
    if to > now:
        raise UndoError(f'{format_iso(to)} is in the future (now is {format_iso(now)}); '
                        'give a past time')
    # The first recorded state: after the last dream of an older version of this database,
    # or (a database that kept its history from the start) the first dream.
    earliest = conn.execute('SELECT id, at FROM dreams WHERE id >= ? ORDER BY id LIMIT 1',
                            (max(1, horizon - 1),)).fetchone()
    if earliest is not None and to < parse_iso(earliest[1]):
        hint = (f', or --dream {earliest[0]} for the state before that dream'
                if earliest[0] >= horizon else '')
        raise UndoError(f'{format_iso(to)} is before {earliest[1]}, since when this database '
                        f'keeps the history an undo needs; give a later time{hint}')
    at = to.timestamp()
    first = conn.execute('SELECT min(id) FROM entry_versions WHERE at > ?', (at,)).fetchone()[0]
    return RestorePoint(f'at {format_iso(to)}', {'to': format_iso(to)}, at, True,
                        first if first is not None else _max_id(conn, 'entry_versions') + 1)


def _whole(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UndoError(f'{what} must be a whole number of at least 1, got {value!r}')
    return value


def _before_dream(conn, dream: int, horizon: int) -> RestorePoint:
    row = conn.execute('SELECT at FROM dreams WHERE id = ?',
                       (_whole(dream, 'dream id'),)).fetchone()
    if row is None:
        raise UndoError(f'there is no dream {dream}; robot-memory undo --list shows the dreams')
    if dream < horizon:
        raise UndoError(f'dream {dream} ran before this database kept the history an undo '
                        f'needs (dreams from {horizon} on can be undone); undo with --to a '
                        'later time, or edit the memory file by hand')
    at = parse_iso(row[0]).timestamp()
    # The dream's own changes, not the edits by hand it took in (those came before it).
    first = conn.execute(
        'SELECT min(id) FROM entry_versions WHERE (dream_id = ? AND manual = 0) OR '
        'dream_id > ? OR (dream_id IS NULL AND at > ?)', (dream, dream, at)).fetchone()[0]
    if first is None:
        first = _max_id(conn, 'entry_versions') + 1
    return RestorePoint(f'before dream {dream} ({row[0]})', {'dream': dream}, at, False, first)


# ---------------------------------------------------------------------- the memory file

def _entry_targets(conn, point: RestorePoint) -> dict:
    """Entry id -> its canonical JSON at the restore point (None: absent), for changed ones."""
    rows = conn.execute(
        'SELECT v.entry_id, v.prior FROM entry_versions AS v JOIN (SELECT entry_id, min(id) '
        'AS first FROM entry_versions WHERE id >= ? GROUP BY entry_id) AS f '
        'ON v.id = f.first', (point.entry_from,)).fetchall()
    return dict(rows)


def plan_entries(store, document, point: RestorePoint) -> tuple:
    """
    (manual, changes): edits by hand since the last dream, and the undo's entry changes.

    Each is a list of ``[entry_id, before, after]`` (canonical JSON or None).
    """
    from robot_memory.dream.autodream import canonical
    snapshot = store.snapshot()
    current = {entry.id: canonical(entry) for entry in document.entries}
    manual = [[entry_id, snapshot.get(entry_id), current.get(entry_id)]
              for entry_id in sorted(set(snapshot) | set(current))
              if snapshot.get(entry_id) != current.get(entry_id)]
    targets = _entry_targets(store.db.conn, point)
    changes = []
    for entry_id in sorted(set(current) | set(snapshot) | set(targets)):
        after = targets[entry_id] if entry_id in targets else snapshot.get(entry_id)
        if current.get(entry_id) != after:
            changes.append([entry_id, current.get(entry_id), after])
    return manual, changes


def restored_entries(document, changes: list) -> list:
    """Return the document's entries with ``changes`` applied (restored ones by first seen)."""
    from robot_memory.rcan.schema import MemoryEntry
    after = {entry_id: new for entry_id, _, new in changes}
    entries = []
    for entry in document.entries:
        if entry.id not in after:
            entries.append(entry)
        elif after[entry.id] is not None:
            entries.append(MemoryEntry.model_validate(json.loads(after.pop(entry.id))))
        else:
            after.pop(entry.id)
    back = [MemoryEntry.model_validate(json.loads(data)) for data in after.values()
            if data is not None]
    return entries + sorted(back, key=lambda entry: (entry.first_seen, entry.id))


def _entry_change(before: Optional[str], after: Optional[str]) -> str:
    if before is None:
        return 'restored'
    if after is None:
        return 'removed'
    return 'changed back'


# ---------------------------------------------------------------------- typed records

def _has_records(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'substrate_versions'").fetchone() is not None


def _same(old, new) -> bool:
    if isinstance(old, float) or isinstance(new, float):
        # json_object keeps 15 significant digits
        return (old is not None and new is not None
                and math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-12))
    return old == new


def plan_records(conn, point: RestorePoint) -> tuple:
    """Return (changes, skipped) for the typed records: ``{'id', 'change', 'set'}`` each."""
    if not _has_records(conn):
        return [], []
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
                changes.append({'id': record_id, 'change': 'archived (learned after the '
                                'restore point)', 'set': None, 'status': row['status']})
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
    conn.executemany('INSERT INTO substrate_audit (at, record_id, action, actor, reason, detail) '
                     'VALUES (?, ?, ?, ?, ?, ?)',
                     [(at, change['id'], ACTION, actor, reason,
                       json.dumps({'undo': undo_id, 'restore_point': label,
                                   'change': change['change'],
                                   'status_before': change['status']},
                                  sort_keys=True, ensure_ascii=False))
                      for change in changes])


# ---------------------------------------------------------------------- the undo

def _records_for_report(changes: list) -> list:
    # Ids and what changes only: a record's text stays in the typed memory (trust gating).
    return [{'id': change['id'], 'change': change['change']} for change in changes]


def _changes_for_report(changes: list) -> list:
    return [{'id': entry_id, 'change': _entry_change(before, after),
             'before': json.loads(before) if before else None,
             'after': json.loads(after) if after else None}
            for entry_id, before, after in changes]


def undo(store, memory_file, now: dt.datetime, actor: str, reason: str = '',
         dream: Optional[int] = None, to: Optional[dt.datetime] = None,
         undo_id: Optional[int] = None, dry_run: bool = False) -> UndoReport:
    """Restore the memory file and the typed records to a restore point; see the module."""
    from robot_memory.common.sqlite_db import apply_migrations
    from robot_memory.dream import autodream
    from robot_memory.rcan.memory_file import render
    from robot_memory.substrate.store import MIGRATIONS as RECORD_MIGRATIONS
    now = _aware(now)
    reason = check_reason(reason) if not dry_run or reason else ''
    conn = store.db.conn
    if not dry_run:
        apply_migrations(RECORD_MIGRATIONS, store.db)  # the typed records' history exists
    store.flush()
    cursor = store.dream_cursor()
    if cursor.last_dream_at is None:
        raise UndoError('nothing to undo: no dream has run yet, so the database holds no '
                        'earlier state of the memory')
    if now < cursor.last_dream_at:
        raise UndoError(f'the clock went backwards: {format_iso(now)} is before the last '
                        f'dream at {format_iso(cursor.last_dream_at)}; check the system clock')
    if dry_run:
        document = memory_file.load(now).document if memory_file.exists() else None
        point = restore_point(conn, now, dream, to, undo_id)
        report = UndoReport(now, actor, reason, point.label, point.target, dry_run=True)
        manual, changes = plan_entries(store, _or_empty(document, now), point)
        report.manual = [item[0] for item in manual]
        report.entries = _changes_for_report(changes)
        records, report.skipped = plan_records(conn, point)
        report.records = _records_for_report(records)
        return report
    payload = None
    with memory_file.update(now, on_corrupt='raise') as result:
        recovered = autodream.recover(store, memory_file)
        point = restore_point(conn, now, dream, to, undo_id)
        report = UndoReport(now, actor, reason, point.label, point.target)
        report.recovered = recovered
        document = result.document
        original = memory_file.path.read_bytes() if memory_file.path.exists() else None
        manual, changes = plan_entries(store, document, point)
        records, report.skipped = plan_records(conn, point)
        report.manual = [item[0] for item in manual]
        report.entries = _changes_for_report(changes)
        report.records = _records_for_report(records)
        if changes or records:
            document.entries = restored_entries(document, changes)
            rendered = render(document)
            if (original is None or rendered != original or result.quarantined
                    or result.legacy_original is not None):
                document.last_updated = now  # what MemoryFile.update does on writing
                rendered = render(document)
            payload = DreamIntent(
                kind='undo', token=uuid.uuid4().hex, at=now, actor=actor, reason=reason,
                label=point.label, point=dataclasses.asdict(point), manual=tuple(manual),
                changes=tuple(changes), file_hash=autodream.file_hash(rendered),
                prior_hash=autodream.file_hash(original) if original is not None else None,
                file_changed=rendered != original)
            store.begin_dream(payload)
    if payload is not None:
        report.undo_id = store.commit_dream(payload)
    return report


def _or_empty(document, now):
    if document is not None:
        return document
    from robot_memory.rcan.memory_file import new_document
    from robot_memory.rcan.memory_file import UNSET_RRN
    return new_document(UNSET_RRN, now)


def apply_recorded(store, intent: DreamIntent) -> int:
    """Return the database half of an undo (inside ``commit_dream``'s transaction); its id."""
    conn = store.db.conn
    at_s = intent.at.timestamp()
    actor, reason, label = intent.actor, intent.reason, intent.label
    point = RestorePoint(**intent.point)
    conn.executemany('INSERT INTO entry_versions (at, entry_id, prior, manual) '
                     'VALUES (?, ?, ?, 1)',
                     [(at_s, entry_id, before, ) for entry_id, before, _ in intent.manual])
    entry_from = _max_id(conn, 'entry_versions') + 1
    records, skipped = plan_records(conn, point)
    record_from = _max_id(conn, 'substrate_versions') + 1 if _has_records(conn) else 1
    summary = {'entries': [entry_id for entry_id, _, _ in intent.changes],
               'records': [change['id'] for change in records], 'skipped': skipped,
               'manual': [entry_id for entry_id, _, _ in intent.manual]}
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
                       'change': _entry_change(before, after),
                       'before': json.loads(before) if before else None,
                       'after': json.loads(after) if after else None}))
    conn.executemany(
        'INSERT INTO audit (at, entry_id, action, actor, reason, detail) '
        'VALUES (?, ?, ?, ?, ?, ?)',
        [(intent.at_text, entry_id, action, actor, text,
          json.dumps(detail, sort_keys=True, ensure_ascii=False))
         for entry_id, action, text, detail in audit])
    final = {entry_id: after for entry_id, _, after in intent.manual}
    final.update({entry_id: after for entry_id, _, after in intent.changes})
    conn.executemany('INSERT OR REPLACE INTO snapshot VALUES (?, ?)',
                     [(key, data) for key, data in final.items() if data is not None])
    conn.executemany('DELETE FROM snapshot WHERE entry_id = ?',
                     [(key,) for key, data in final.items() if data is None])
    conn.execute('UPDATE dream_state SET file_hash = ? WHERE id = 1', (intent.file_hash,))
    _apply_records(conn, records, at_s, undo_id, actor, reason, label)
    return undo_id


def log(conn) -> list:
    """Return the dreams and undos, oldest first, as plain dicts for a listing."""
    items = []
    for row in conn.execute('SELECT id, at, actor, report FROM dreams ORDER BY id'):
        report = json.loads(row[3])
        counts = ', '.join(f'{name} {len(report.get(name) or ())}' for name in
                           ('created', 'reinforced', 'resolved', 'reopened', 'pruned', 'manual')
                           if report.get(name))
        items.append({'kind': 'dream', 'id': row[0], 'at': row[1], 'actor': row[2],
                      'what': counts or 'no entry changed'})
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'undos'").fetchone():
        for row in conn.execute('SELECT id, at, actor, reason, report FROM undos ORDER BY id'):
            report = json.loads(row[4])
            items.append({'kind': 'undo', 'id': row[0], 'at': row[1], 'actor': row[2],
                          'what': f'restored {report["label"]}: {len(report["entries"])} '
                                  f'entries, {len(report["records"])} typed records; '
                                  f'reason: {row[3]}'})
    return sorted(items, key=lambda item: (item['at'], item['kind'] == 'undo', item['id']))
