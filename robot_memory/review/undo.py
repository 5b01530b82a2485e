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
Undo: take back one dream's or one undo's own changes, or restore the memory at a time.

The evidence database keeps, for every change, the state it replaced: ``entry_versions``
(each entry of robot-memory.md before a dream, a prune or an undo changed it; written by
``EvidenceStore.commit_dream``) and ``substrate_versions`` (each typed record before a
change of what it holds; written by triggers of the typed memory).

Two kinds of undo:

* ``--dream N`` and ``--undo K`` take back only what that dream or undo changed itself (an
  undo of an undo re-applies exactly what it took back). An entry or record changed again
  since (a later dream, an edit by hand, an approved reword, another undo) is named and
  kept as it is now, unless the undo is forced (``--force``).
* ``--to TIME`` is the point-in-time restore: the current state with, for every entry or
  record changed since, the prior state of its first change after that time (changes at
  that instant kept).

A clock before the last dream refuses an undo, but for the way back from a dream at a
wrong time (a clock that had jumped ahead): taking back that last dream (``--dream``) or
restoring a time (``--to``) is allowed and moves the dream cursor back (``rewound``), so
dreams run again.

Nothing is deleted by an undo:

* an entry is restored, changed back or removed from the file; the audit log records each
  as action ``undo`` with the entry before and after, the actor and the reason;
* a typed record created after the point is archived (out of recall, still in ``get`` and
  ``history``), a changed one gets back the columns it had (its use counts stay); each is
  audited as ``undo`` in the typed memory's audit log. A hard-deleted record stays deleted
  (forgotten for good) and is reported as skipped;
* edits a person made to the file since the last dream are first taken in (audited as
  ``manual``, as a dream would) and count as made at the moment of the undo;
* the undo is logged in ``undos``; ``--undo`` of it takes back what it changed.

Crash safety is the dream's: under the file lock the undo's intent is recorded
(``pending_dream``, kind ``undo``), the file is written atomically, then one transaction
applies the entry history, audit, snapshot and the typed records. A crash in between is
completed (or discarded, if the file was never written) by the next dream or undo.

Signature links are left as they are: later evidence of a fault whose entry was removed
creates the entry afresh, as after a prune. Peer context and the Markdown body of the
file are not part of what is restored.

How the parts hang together (docs/architecture.md, "Undo: how it hangs together"): this
module decides and writes the file; ``evidence.intent`` is the record of what it is about to
do; ``EvidenceStore.begin_dream`` and ``commit_dream`` (``evidence.dream_book``) store and
claim that record as they do a dream's; ``evidence.restore.apply_recorded`` is the database
half, run inside ``commit_dream``'s transaction so the evidence layer never imports this
one; ``dream.recovery`` completes an undo a crash interrupted. The CLI, ``~/undo`` and the
operator's page all call this module.
"""

import dataclasses
import datetime as dt
import json
from typing import Optional
import uuid

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import require_aware
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence.intent import DreamIntent
from robot_memory.evidence.restore import entry_change
from robot_memory.evidence.restore import max_id
from robot_memory.evidence.restore import MAX_REASON
from robot_memory.evidence.restore import plan_records
from robot_memory.evidence.restore import RestorePoint

# How a refusal names what to give: the command line's options, or ~/undo's request fields.
CLI_WORDS = {'reason': '--reason', 'dream': '--dream', 'to': '--to', 'undo': '--undo',
             'log': 'robot-memory undo --list shows them'}
REQUEST_WORDS = {'reason': 'the reason field', 'dream': 'dream_id', 'to': 'to',
                 'undo': 'undo_id',
                 'log': "dream ids are in each ~/dream reply's report_json, undo ids in each "
                        "~/undo reply's undo_id"}


class UndoError(RobotMemoryError, ValueError):
    """An undo that cannot be done; the message says what was wrong and what to do."""


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
    kept: list = dataclasses.field(default_factory=list)
    own: bool = False
    force: bool = False
    recovered: Optional[str] = None
    # Where the dream cursor went back to (a dream at a wrong time taken back), else None.
    rewind_to: Optional[str] = None

    @property
    def noop(self) -> bool:
        """Whether there was nothing to change."""
        return not (self.entries or self.records or self.rewind_to is not None)

    def to_dict(self) -> dict:
        """Plain JSON data."""
        data = dataclasses.asdict(self)
        data['at'] = format_iso(self.at)
        data['noop'] = self.noop
        return data

    def summary(self) -> str:
        """One line for people: which kind of undo, what it changed, what it kept."""
        kept = (f'; {len(self.kept)} kept because changed since (force to take them back '
                'too)' if self.kept else '')
        if self.rewind_to is not None:
            kept += (f'; the dream cursor {"would go" if self.dry_run else "went"} back to '
                     f'{self.rewind_to}, so dreams run again')
        if self.noop:
            if self.own:
                return f'nothing to undo: none of {self.label} is left to take back{kept}'
            return (f'nothing to undo: the memory file and the typed records are already as '
                    f'they were {self.label}')
        head = f'undo {self.undo_id}: ' if self.undo_id is not None else ''
        if self.own:
            verb = 'would take back' if self.dry_run else 'took back'
            what = f'{verb} {self.label}'
        else:
            verb = 'would restore' if self.dry_run else 'restored'
            what = f'{verb} the memory as it was {self.label} (point in time)'
        return (f'{head}{what}: {len(self.entries)} entries, {len(self.records)} typed '
                'records' + (f'; {len(self.skipped)} skipped' if self.skipped else '') + kept)

    def lines(self) -> list:
        """One line per change, for people."""
        out = []
        for change in self.entries:
            text = (change['after'] or change['before'] or {}).get('text', '')
            out.append(f'entry {change["id"]}: {change["change"]}  {text}')
        for change in self.records:
            out.append(f'record {change["id"]}: {change["change"]}')
        out.extend(f'skipped: {note}' for note in self.skipped)
        out.extend(f'kept: {item["kind"]} {item["id"]}: {item["why"]}' for item in self.kept)
        return out


def _aware(now: dt.datetime) -> dt.datetime:
    return require_aware(now, UndoError)


def check_reason(reason, words: dict = CLI_WORDS) -> str:
    """Return the reason of an undo, stripped; refused when empty or too long."""
    if not isinstance(reason, str) or not reason.strip():
        raise UndoError(f'say why in {words["reason"]} (e.g. "learned a false fault last '
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


def point_options(dream: int = 0, undo_id: int = 0, to: str = '', force: bool = False) -> dict:
    """Keyword arguments of ``undo`` from a request's fields (0 and '' mean not given)."""
    return {'dream': dream or None, 'undo_id': undo_id or None,
            'to': parse_time(to) if to.strip() else None, 'force': bool(force)}


def restore_point(conn, now: dt.datetime, dream: Optional[int] = None,
                  to: Optional[dt.datetime] = None, undo: Optional[int] = None,
                  force: bool = False, words: dict = CLI_WORDS) -> RestorePoint:
    """Return the restore point named by exactly one of ``dream``, ``to`` and ``undo``."""
    now = _aware(now)
    if sum(value is not None for value in (dream, to, undo)) != 1:
        raise UndoError(f'name one restore point: a dream id ({words["dream"]}), a time '
                        f'({words["to"]}) or an undo to undo ({words["undo"]})')
    horizon = conn.execute('SELECT first_dream FROM undo_horizon WHERE id = 1').fetchone()[0]
    if dream is not None:
        return dataclasses.replace(_before_dream(conn, dream, horizon, words),
                                   force=bool(force))
    if undo is not None:
        row = conn.execute('SELECT at, entry_from, record_from FROM undos WHERE id = ?',
                           (_whole(undo, 'undo id'),)).fetchone()
        if row is None:
            raise UndoError(f'there is no undo {undo}; {words["log"]}')
        return RestorePoint(f'what undo {undo} changed ({row[0]})', {'undo': undo},
                            parse_iso(row[0]).timestamp(), False, row[1], row[2], own='undo',
                            own_id=undo, force=bool(force))
    if force:
        raise UndoError(f'force is for taking back a dream or an undo ({words["dream"]}, '
                        f'{words["undo"]}); a restore to a time already puts back every '
                        'later change')
    assert to is not None  # exactly one was named
    to = _aware(to)
    if to > now:
        raise UndoError(f'{format_iso(to)} is in the future (now is {format_iso(now)}); '
                        'give a past time')
    # The first recorded state: after the last dream of an older version of this database,
    # or (a database that kept its history from the start) the first dream.
    earliest = conn.execute('SELECT id, at FROM dreams WHERE id >= ? ORDER BY id LIMIT 1',
                            (max(1, horizon - 1),)).fetchone()
    if earliest is not None and to < parse_iso(earliest[1]):
        hint = (f', or {words["dream"]} {earliest[0]} for the changes of that dream'
                if earliest[0] >= horizon else '')
        raise UndoError(f'{format_iso(to)} is before {earliest[1]}, since when this database '
                        f'keeps the history an undo needs; give a later time{hint}')
    at = to.timestamp()
    first = conn.execute('SELECT min(id) FROM entry_versions WHERE at > ?', (at,)).fetchone()[0]
    return RestorePoint(f'at {format_iso(to)}', {'to': format_iso(to)}, at, True,
                        first if first is not None else max_id(conn, 'entry_versions') + 1)


def _whole(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UndoError(f'{what} must be a whole number of at least 1, got {value!r}')
    return value


def _before_dream(conn, dream: int, horizon: int, words: dict) -> RestorePoint:
    row = conn.execute('SELECT at FROM dreams WHERE id = ?',
                       (_whole(dream, 'dream id'),)).fetchone()
    if row is None:
        raise UndoError(f'there is no dream {dream}; {words["log"]}')
    if dream < horizon:
        raise UndoError(f'dream {dream} ran before this database kept the history an undo '
                        f'needs (dreams from {horizon} on can be undone); undo with '
                        f'{words["to"]} a later time, or edit the memory file by hand')
    at = parse_iso(row[0]).timestamp()
    # The dream's own changes, not the edits by hand it took in (those came before it).
    first = conn.execute(
        'SELECT min(id) FROM entry_versions WHERE (dream_id = ? AND manual = 0) OR '
        'dream_id > ? OR (dream_id IS NULL AND at > ?)', (dream, dream, at)).fetchone()[0]
    if first is None:
        first = max_id(conn, 'entry_versions') + 1
    return RestorePoint(f'the changes of dream {dream} ({row[0]})', {'dream': dream}, at, False,
                        first, own='dream', own_id=dream)


# ---------------------------------------------------------------------- the memory file

def _entry_targets(conn, point: RestorePoint) -> dict:
    """Entry id -> its canonical JSON at the restore point (None: absent), for changed ones."""
    rows = conn.execute(
        'SELECT v.entry_id, v.prior FROM entry_versions AS v JOIN (SELECT entry_id, min(id) '
        'AS first FROM entry_versions WHERE id >= ? GROUP BY entry_id) AS f '
        'ON v.id = f.first', (point.entry_from,)).fetchall()
    return dict(rows)


def _changed_by(dream_id, undo_id, manual) -> str:
    if dream_id is not None:
        return (f'an edit by hand taken in by dream {dream_id}' if manual
                else f'dream {dream_id}')
    if undo_id is not None:
        return f'undo {undo_id}'
    # Neither a dream's nor an undo's: an edit made on the operator page, or a reword approved.
    return 'an edit by hand' if manual else 'an approved proposal'


def _own_entry_targets(conn, point: RestorePoint, snapshot: dict, current: dict) -> tuple:
    """Return (targets, kept) for taking back one dream's or undo's own entry changes."""
    mine = ('dream_id = ? AND manual = 0' if point.own == 'dream' else 'undo_id = ?')
    rows = conn.execute(f'SELECT min(id), entry_id FROM entry_versions WHERE {mine} '
                        'GROUP BY entry_id ORDER BY entry_id', (point.own_id,)).fetchall()
    targets, kept = {}, []
    for row_id, entry_id in rows:
        before, = conn.execute('SELECT prior FROM entry_versions WHERE id = ?',
                               (row_id,)).fetchone()
        later = conn.execute('SELECT prior, dream_id, undo_id, manual FROM entry_versions '
                             'WHERE entry_id = ? AND id > ? ORDER BY id LIMIT 1',
                             (entry_id, row_id)).fetchone()
        after = later[0] if later is not None else snapshot.get(entry_id)
        if current.get(entry_id) == after or point.force:
            targets[entry_id] = before
            continue
        # Name what made it as it is now: the last change since.
        last = conn.execute('SELECT dream_id, undo_id, manual FROM entry_versions WHERE '
                            'entry_id = ? AND id > ? ORDER BY id DESC LIMIT 1',
                            (entry_id, row_id)).fetchone()
        by = (_changed_by(*last) if last is not None and
              current.get(entry_id) == snapshot.get(entry_id)
              else 'an edit by hand since the last dream')
        kept.append({'kind': 'entry', 'id': entry_id,
                     'why': f'changed since by {by}; kept as it is now'})
    return targets, kept


def plan_entries(store, document, point: RestorePoint) -> tuple:
    """
    (manual, changes, kept): edits by hand since the last dream, the undo's entry changes.

    Each of the first two is a list of ``[entry_id, before, after]`` (canonical JSON or
    None); ``kept`` names the entries changed since that the undo leaves as they are.
    """
    # lazy: the dream, 210 ms and 22 MB of robot-memory undo --list
    from robot_memory.dream.autodream import canonical
    snapshot = store.snapshot()
    current = {entry.id: canonical(entry) for entry in document.entries}
    manual = [[entry_id, snapshot.get(entry_id), current.get(entry_id)]
              for entry_id in sorted(set(snapshot) | set(current))
              if snapshot.get(entry_id) != current.get(entry_id)]
    if point.own:
        targets, kept = _own_entry_targets(store.db.conn, point, snapshot, current)
        changes = [[entry_id, current.get(entry_id), after]
                   for entry_id, after in targets.items() if current.get(entry_id) != after]
        return manual, changes, kept
    targets = _entry_targets(store.db.conn, point)
    changes = []
    for entry_id in sorted(set(current) | set(snapshot) | set(targets)):
        after = targets[entry_id] if entry_id in targets else snapshot.get(entry_id)
        if current.get(entry_id) != after:
            changes.append([entry_id, current.get(entry_id), after])
    return manual, changes, []


def restored_entries(document, changes: list) -> list:
    """Return the document's entries with ``changes`` applied (restored ones by first seen)."""
    # lazy: pydantic's models, 15 ms and 4 MB of undo --list
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


# ---------------------------------------------------------------------- the undo

def _records_for_report(changes: list) -> list:
    # Ids and what changes only: a record's text stays in the typed memory (trust gating).
    return [{'id': change['id'], 'change': change['change']} for change in changes]


def _changes_for_report(changes: list) -> list:
    return [{'id': entry_id, 'change': entry_change(before, after),
             'before': json.loads(before) if before else None,
             'after': json.loads(after) if after else None}
            for entry_id, before, after in changes]


def undo(store, memory_file, now: dt.datetime, actor: str, reason: str = '',
         dream: Optional[int] = None, to: Optional[dt.datetime] = None,
         undo_id: Optional[int] = None, dry_run: bool = False,
         force: bool = False, words: dict = CLI_WORDS) -> UndoReport:
    """Take back a dream's or an undo's changes, or restore a time; see the module."""
    # lazy: the dream and the stores, 290 ms and 30 MB of undo --list
    from robot_memory.common.sqlite_db import apply_migrations
    from robot_memory.dream import autodream
    from robot_memory.rcan.memory_file import render
    from robot_memory.substrate.substrate_store import MIGRATIONS as RECORD_MIGRATIONS
    now = _aware(now)
    reason = check_reason(reason, words) if not dry_run or reason else ''
    conn = store.db.conn
    if not dry_run:
        apply_migrations(RECORD_MIGRATIONS, store.db)  # the typed records' history exists
    store.flush()
    cursor = store.dream_cursor()
    # No dream yet: no entry has an earlier state, but typed records (an agent's learns) do,
    # and an undo of them, or a restore to a time, must not wait for a dream.
    if dry_run:
        document = memory_file.load(now).document if memory_file.exists() else None
        point = rewound(conn, restore_point(conn, now, dream, to, undo_id, force, words),
                        cursor.last_dream_at, now, words)
        report = _report(now, actor, reason, point, dry_run=True)
        manual, changes, kept = plan_entries(store, _or_empty(document, now), point)
        report.manual = [item[0] for item in manual]
        report.entries = _changes_for_report(changes)
        records, report.skipped, kept_records = plan_records(conn, point)
        report.records = _records_for_report(records)
        report.kept = kept + kept_records
        return report
    payload = None
    with memory_file.update(now, on_corrupt='raise') as result:
        recovered = autodream.recover(store, memory_file)
        point = rewound(conn, restore_point(conn, now, dream, to, undo_id, force, words),
                        store.dream_cursor().last_dream_at, now, words)
        report = _report(now, actor, reason, point)
        report.recovered = recovered
        document = result.document
        original = memory_file.path.read_bytes() if memory_file.path.exists() else None
        manual, changes, kept = plan_entries(store, document, point)
        records, report.skipped, kept_records = plan_records(conn, point)
        report.kept = kept + kept_records
        report.manual = [item[0] for item in manual]
        report.entries = _changes_for_report(changes)
        report.records = _records_for_report(records)
        if changes or records or point.rewind:
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


def _report(now, actor, reason, point: RestorePoint, dry_run: bool = False) -> UndoReport:
    return UndoReport(now, actor, reason, point.label, point.target, dry_run=dry_run,
                      own=bool(point.own), force=point.force,
                      rewind_to=(point.rewind_to or 'before the first dream')
                      if point.rewind else None)


def _dream_times(conn) -> list:
    """(id, time) of every dream, oldest first."""
    return [(row[0], parse_iso(row[1]))
            for row in conn.execute('SELECT id, at FROM dreams ORDER BY id')]


def rewound(conn, point: RestorePoint, last_dream: Optional[dt.datetime], now: dt.datetime,
            words: dict = CLI_WORDS) -> RestorePoint:
    """
    Return ``point``, allowed when ``now`` is before the last dream (a clock that jumped ahead).

    Then only taking back the last dream (``--dream``) or restoring a time (``--to``) is
    allowed, and it moves the dream cursor back (to the dream before, or the last dream at
    or before that time), so dreams at the right time run again; anything else is refused.
    """
    if last_dream is None or now >= last_dream:
        return point
    times = _dream_times(conn)
    last = max((dream_id for dream_id, at in times if at == last_dream), default=None)
    if point.own == 'dream' and point.own_id == last:
        earlier = [at for dream_id, at in times if dream_id < point.own_id]
    elif not point.own:
        earlier = [at for _, at in times if at.timestamp() <= point.at]
    else:
        how = (f'take back that dream first ({words["dream"]} {last}), or restore a time before '
               f'it ({words["to"]})' if last is not None else 'check the system clock')
        raise UndoError(f'the clock went backwards: {format_iso(now)} is before the last '
                        f'dream at {format_iso(last_dream)}; check the system clock. If that '
                        f'dream ran at a wrong time (a clock that had jumped ahead): {how}; '
                        'dreams then run again')
    back = format_iso(earlier[-1]) if earlier else None
    return dataclasses.replace(point, rewind=True, rewind_to=back)


def _or_empty(document, now):
    if document is not None:
        return document
    # lazy: the memory file, 37 ms and 6 MB of undo --list
    from robot_memory.rcan.memory_file import new_document
    from robot_memory.rcan.memory_file import UNSET_RRN
    return new_document(UNSET_RRN, now)


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
            verb = 'took back' if report.get('own') else 'restored the memory as it was'
            items.append({'kind': 'undo', 'id': row[0], 'at': row[1], 'actor': row[2],
                          'what': f'{verb} {report["label"]}: {len(report["entries"])} '
                                  f'entries, {len(report["records"])} typed records; '
                                  f'reason: {row[3]}'})
    return sorted(items, key=lambda item: (item['at'], item['kind'] == 'undo', item['id']))
