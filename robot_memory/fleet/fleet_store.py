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
The fleet store: every allowed robot's entries with their provenance, on PostgreSQL or SQLite.

:meth:`FleetStore.receive` takes one delivery (the envelope's bytes and the key it came on),
checks it (``fleet.envelope.open_envelope``), and keeps it in one transaction:

- ``fleet_dreams``: one row per (robot, dream) with site, model, firmware, the robot's time
  and both signatures; ``fleet_dream_entries``: the entries of that dream, keyed by (RRN,
  dream, entry). A dream is its id and its time (ids start again when a robot's damaged
  evidence database is set aside). A dream already kept is acknowledged as ``duplicate``
  and changes nothing, so redelivery never counts a dream twice.
- ``fleet_entries``: each robot's newest state of each entry, and when the store first heard
  of it, when its observation count last grew (reinforced) and when it left the robot's
  payload (resolved: a robot shares only what it still believes).
- ``fleet_fault_counts``: how many active entries each fault signature has, changed by each
  delivery, so the report finds the faults on several robots without reading every entry;
- ``fleet_refusals``: one counter per refusal reason, with the last message.

A delivery is one read and then its writes, a statement a table (multi-row: on PostgreSQL
by COPY, ``FleetDatabase.insert_many`` and ``insert_new``), not a round trip an entry; a batch
of deliveries shares them. A delivery older than
the robot's newest kept one is refused as ``replayed``. Dreams older than ``retention_days``
(by receipt) and entries resolved that long ago are deleted with a delivery, at most once a
minute; the robots and the current entries stay.
"""

import collections
import dataclasses
import datetime as dt
import functools
import json
import math
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import to_utc
from robot_memory.fleet.envelope import Envelope
from robot_memory.fleet.envelope import open_envelope
from robot_memory.fleet.envelope import Trust
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.refusals import REASONS
from robot_memory.fleet.refusals import Refused
from robot_memory.fleet.report import LABELS
from robot_memory.fleet.sql import connect
from robot_memory.fleet.sql import FleetDatabase
from robot_memory.fleet.sql import migrate
from robot_memory.substrate.textrules import content_hash

DEFAULT_RETENTION_DAYS = 90.0
FORGET_EVERY_S = 60.0  # retention runs with a delivery at most this often
MAX_BATCH = 64  # deliveries kept in one transaction by receive_many
MAX_TAKEN = 64  # deliveries fleet serve takes from its queue at once
_TIME = 'DOUBLE PRECISION'
# the SQL types of the ? of each multi-row write (on PostgreSQL: COPY, FleetDatabase)
_ROBOT_TYPES = ('TEXT',) * 4 + (_TIME,) * 3 + ('BIGINT', _TIME)
_DREAM_TYPES = ('TEXT', 'BIGINT', _TIME) + ('TEXT',) * 3 + (_TIME, _TIME, 'BIGINT', 'TEXT', 'TEXT')
_ENTRY_TYPES = ('TEXT',) * 5 + ('DOUBLE PRECISION', 'BIGINT', 'TEXT', _TIME, _TIME)
MIGRATIONS = (
    ('0001_tables', [
        f'CREATE TABLE fleet_robots (rrn TEXT PRIMARY KEY, site TEXT NOT NULL, model TEXT NOT '
        f'NULL, firmware TEXT NOT NULL, first_heard {_TIME} NOT NULL, last_heard {_TIME} NOT '
        f'NULL, last_sent_at {_TIME} NOT NULL, last_dream BIGINT NOT NULL, last_dream_at '
        f'{_TIME} NOT NULL)',
        f'CREATE TABLE fleet_dreams (rrn TEXT NOT NULL, dream_id BIGINT NOT NULL, dream_at '
        f'{_TIME} NOT NULL, site TEXT NOT NULL, model TEXT NOT NULL, firmware TEXT NOT NULL, '
        f'sent_at {_TIME} NOT NULL, received_at {_TIME} NOT NULL, entry_count BIGINT NOT NULL, '
        'payload_signature TEXT NOT NULL, provenance_signature TEXT NOT NULL, '
        'PRIMARY KEY (rrn, dream_id, dream_at))',
        'CREATE INDEX fleet_dreams_received ON fleet_dreams (received_at)',
        'CREATE TABLE fleet_dream_entries (rrn TEXT NOT NULL, dream_id BIGINT NOT NULL, '
        f'dream_at {_TIME} NOT NULL, entry_id TEXT NOT NULL, signature TEXT NOT NULL, type '
        'TEXT NOT NULL, text TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL, '
        'observation_count BIGINT NOT NULL, '
        f'first_seen {_TIME} NOT NULL, last_reinforced {_TIME} NOT NULL, tags TEXT NOT NULL, '
        'PRIMARY KEY (rrn, dream_id, dream_at, entry_id))',
        'CREATE TABLE fleet_entries (rrn TEXT NOT NULL, entry_id TEXT NOT NULL, signature TEXT '
        'NOT NULL, type TEXT NOT NULL, text TEXT NOT NULL, confidence DOUBLE PRECISION NOT '
        f'NULL, observation_count BIGINT NOT NULL, tags TEXT NOT NULL, first_seen {_TIME} NOT '
        f'NULL, last_reinforced {_TIME} NOT NULL, first_heard {_TIME} NOT NULL, reinforced_at '
        f'{_TIME}, resolved_at {_TIME}, last_dream BIGINT NOT NULL, last_dream_at {_TIME} NOT '
        'NULL, status TEXT NOT NULL, '
        'PRIMARY KEY (rrn, entry_id))',
        'CREATE INDEX fleet_entries_signature ON fleet_entries (signature)',
        'CREATE TABLE fleet_refusals (reason TEXT PRIMARY KEY, count BIGINT NOT NULL, '
        f'last_at {_TIME} NOT NULL, last_message TEXT NOT NULL)',
    ]),
    ('0002_lessons', [  # fleet.lesson_store: lessons promoted to robots, and their audit
        'CREATE TABLE fleet_lessons (lesson_id TEXT PRIMARY KEY, scope TEXT NOT NULL, '
        'scope_value TEXT NOT NULL, source_rrn TEXT NOT NULL, source_entry TEXT NOT NULL, '
        f'state TEXT NOT NULL, issued_at {_TIME} NOT NULL, revoked_at {_TIME}, '
        'message TEXT NOT NULL)',
        'CREATE INDEX fleet_lessons_scope ON fleet_lessons (scope, scope_value)',
        f'CREATE TABLE fleet_audit (at {_TIME} NOT NULL, lesson_id TEXT NOT NULL, action TEXT '
        'NOT NULL, actor TEXT NOT NULL, reason TEXT NOT NULL, detail TEXT NOT NULL)',
        'CREATE INDEX fleet_audit_lesson ON fleet_audit (lesson_id)',
    ]),
    ('0003_fault_counts', [  # active entries a signature, kept by receive: fault_entries
        'CREATE TABLE fleet_fault_counts (signature TEXT PRIMARY KEY, entries BIGINT NOT NULL)',
        'CREATE INDEX fleet_fault_counts_entries ON fleet_fault_counts (entries)',
        'INSERT INTO fleet_fault_counts (signature, entries) SELECT signature, count(*) FROM '
        "fleet_entries WHERE status = 'active' GROUP BY signature",
    ]),
)


def fault_signature(entry_type: str, text: str) -> str:
    """Return what makes two robots' entries the same fault: type and normalised text, hashed."""
    return content_hash(f'{entry_type} {text}')[:16]


@dataclasses.dataclass(frozen=True)
class Ack:
    """The store's answer to one delivery: stored, duplicate or refused (with the reason)."""

    status: str
    rrn: Optional[str]
    dream_id: Optional[int] = None
    reason: str = ''
    message: str = ''
    signature: str = ''  # base64 Ed25519 of fleet.acks.ack_bytes by the fleet key; '' unsigned

    @property
    def acknowledged(self) -> bool:
        """Return True when the robot may forget the delivery (stored, or kept before)."""
        return self.status in ('stored', 'duplicate')

    def to_data(self) -> dict:
        """Return the ack as JSON data (what the store's queryable answers)."""
        return dataclasses.asdict(self)


def _rounds(deliveries: list) -> list:
    """
    Return batches of ``(index, (raw, site, rrn))``: one delivery a robot, MAX_BATCH at most.

    A robot's n-th delivery goes in a batch after its (n-1)-th, so it is judged (duplicate,
    replayed) against what that one wrote, as if they had come one at a time.
    """
    rounds: list = []
    seen: collections.Counter = collections.Counter()
    for index, delivery in deliveries:
        number = seen[delivery[2]]
        seen[delivery[2]] += 1
        if number == len(rounds):
            rounds.append([])
        rounds[number].append((index, delivery))
    return [batch for found in rounds for batch in _chunks(found, MAX_BATCH)]


@functools.lru_cache(maxsize=1024)
def _tags_json(tags: tuple) -> str:
    """Return an entry's tags as the JSON list kept (a fleet's entries share few tag sets)."""
    return json.dumps(list(tags), ensure_ascii=False)


def _chunks(items: list, size: int) -> list:
    return [items[first:first + size] for first in range(0, len(items), size)]


def _epoch(moment: dt.datetime) -> float:
    return to_utc(moment).timestamp()


class FleetStore:
    """The fleet store at a URL: receive deliveries, answer what the report and reads need."""

    def __init__(self, url: str, trust: Trust, retention_days: float = DEFAULT_RETENTION_DAYS):
        if not 0 < retention_days <= 36_500:
            raise FleetError(f'retention of {retention_days!r} days: give more than 0 and at '
                             'most 36500')
        self.trust = trust
        self.retention_s = retention_days * 86_400.0
        self._forgot_at = -math.inf
        self.db: FleetDatabase = connect(url)
        try:
            migrate(self.db, MIGRATIONS)
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def __enter__(self) -> 'FleetStore':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    def receive(self, raw: bytes, key_site: str, key_rrn: str, now: dt.datetime) -> Ack:
        """Check and keep one delivery; a refusal is counted and answered, never raised."""
        # alone: a database error raises (the delivery is not acknowledged), as it always did
        return self._receive([(raw, key_site, key_rrn)], now, alone=True)[0]

    def receive_many(self, deliveries, now: dt.datetime) -> list:
        """
        Check and keep several deliveries ``(raw, key_site, key_rrn)``; return an ack each.

        Each delivery is checked on its own (``open_envelope``) and answered on its own; the
        ones that pass are kept together, a transaction for up to :data:`MAX_BATCH` of them
        (one read, then a statement a table), so a queue of deliveries costs a few round
        trips rather than four each. A robot's second delivery in the queue is judged after
        its first is kept. Refusals are counted as alone. When the database refuses a batch,
        its deliveries are kept again one by one: one bad delivery fails alone, answered
        ``failed`` (not acknowledged, so its robot sends it again), and the rest are kept.
        """
        return self._receive(list(deliveries), now, alone=False)

    def _receive(self, deliveries: list, now: dt.datetime, alone: bool) -> list:
        at = _epoch(now)
        acks: list = [None] * len(deliveries)
        refusals: list = []

        def check(batch: list) -> tuple:
            opened, refused = [], []
            for index, (raw, key_site, key_rrn) in batch:
                try:
                    opened.append((index, open_envelope(raw, key_site, key_rrn, self.trust, now)))
                except Refused as refusal:
                    refused.append((index, refusal))
            return opened, refused

        for batch in _rounds(list(enumerate(deliveries))):  # a robot's deliveries in order
            opened, refused = check(batch)
            refusals += refused
            if opened:
                for index, answer in self._keep_batch(opened, at, alone):
                    if isinstance(answer, Refused):
                        refusals.append((index, answer))
                    else:
                        acks[index] = answer
        if refusals:
            self._count_all([refused for _, refused in refusals], at)
        for index, refused in refusals:
            acks[index] = Ack('refused', refused.rrn, reason=refused.reason,
                              message=str(refused))
        return acks

    def _keep_batch(self, batch: list, now: float, alone: bool) -> list:
        """Keep a batch in one transaction; on an error, each delivery in one of its own."""
        try:
            with self.db.transaction():
                return self._keep(batch, now)
        except Exception as error:  # noqa: B902 - any database error: each alone, below
            if alone:
                raise
            if len(batch) == 1:
                index, envelope = batch[0]
                return [(index, Ack('failed', envelope.rrn, envelope.provenance.dream_id,
                                    message=f'the store could not keep dream '
                                    f'{envelope.provenance.dream_id} of {envelope.rrn}: '
                                    f'{type(error).__name__}: {error}'[:1000]))]
        return [answer for one in batch for answer in self._keep_batch([one], now, False)]

    def _keep(self, batch: list, now: float) -> list:
        """Keep the batch's deliveries (one a robot); return (index, Ack or Refused) each."""
        keys = [(envelope.rrn, envelope.provenance.dream_id,
                 _epoch(envelope.provenance.dream_at)) for _, envelope in batch]
        # one read: each robot's newest payload, whether its dream is kept, its active faults
        found = self.db.rows(
            'SELECT k.column1 AS rrn, r.last_sent_at, (SELECT count(*) FROM fleet_dreams d '
            'WHERE d.rrn = k.column1 AND d.dream_id = k.column2 AND d.dream_at = k.column3) AS '
            'kept, e.signature FROM (VALUES '
            + ', '.join(['(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION))']
                        * len(keys))
            + ') k LEFT JOIN fleet_robots r ON r.rrn = k.column1 LEFT JOIN fleet_entries e ON '
            "e.rrn = k.column1 AND e.status = 'active'", [value for key in keys for value in key])
        known = {row['rrn']: row for row in found}
        before = collections.defaultdict(list)
        for row in found:
            if row['signature']:
                before[row['rrn']].append(row['signature'])
        answers, keeping = [], []
        for index, envelope in batch:
            answer = self._judge(envelope, known[envelope.rrn], now)
            answers.append((index, answer))
            if isinstance(answer, Ack) and answer.status == 'stored':
                keeping.append(envelope)
        if keeping:
            # a robot never heard from has no entries yet (robots stay, entries go with them)
            heard = {envelope.rrn for envelope in keeping
                     if known[envelope.rrn]['last_sent_at'] is not None}
            self._write(keeping, before, heard, now)  # a statement a table (not in a batch)
        with self.db.batch():  # writes only: sent together, their errors raised at its end
            for index, answer in answers:
                if isinstance(answer, Ack) and answer.status == 'duplicate':
                    self.db.execute('UPDATE fleet_robots SET last_heard = ? WHERE rrn = ?',
                                    (now, answer.rrn))
            self._forget_old(now)
        return answers

    def _judge(self, envelope: Envelope, known: dict, now: float):
        """Return the Ack (stored, duplicate) or the Refused (replayed) of one delivery."""
        rrn, dream_id = envelope.rrn, envelope.provenance.dream_id
        if known['kept']:
            return Ack('duplicate', rrn, dream_id,
                       message=f'dream {dream_id} of {rrn} was kept before; nothing changed')
        if known['last_sent_at'] is not None \
                and _epoch(envelope.sent_at) <= known['last_sent_at']:
            kept = format_iso(from_epoch(known['last_sent_at']))
            return Refused('replayed', f'sent at {format_iso(envelope.sent_at)}, not after the '
                           f'newest payload kept ({kept})',
                           'an old or repeated payload is ignored; nothing changed', rrn)
        return Ack('stored', rrn, dream_id, message=f'dream {dream_id} of {rrn} kept: '
                   f'{len(envelope.payload.entries)} entries')

    def _write(self, envelopes: list, before: dict, heard: set, now: float) -> None:
        """Write the deliveries that are new (one a robot): a statement a table for them all."""
        robots, dreams = [], []
        for envelope in envelopes:
            provenance = envelope.provenance
            sent_at, dream_at = _epoch(envelope.sent_at), _epoch(provenance.dream_at)
            robots.append((envelope.rrn, provenance.site, provenance.model, provenance.firmware,
                           now, now, sent_at, provenance.dream_id, dream_at))
            dreams.append((envelope.rrn, provenance.dream_id, dream_at, provenance.site,
                           provenance.model, provenance.firmware, sent_at, now,
                           len(envelope.payload.entries), envelope.payload.signature,
                           envelope.provenance_signature))
        self.db.insert_many(
            'INSERT INTO fleet_robots (rrn, site, model, firmware, first_heard, last_heard, '
            'last_sent_at, last_dream, last_dream_at)', '(?, ?, ?, ?, ?, ?, ?, ?, ?)', robots,
            'ON CONFLICT (rrn) DO UPDATE SET site = excluded.site, model = excluded.model, '
            'firmware = excluded.firmware, last_heard = excluded.last_heard, last_sent_at = '
            'excluded.last_sent_at, last_dream = excluded.last_dream, last_dream_at = '
            'excluded.last_dream_at', _ROBOT_TYPES)
        # new dreams (judged in this transaction; a store keeping one meanwhile: an error)
        self.db.insert_new('fleet_dreams', (
            'rrn', 'dream_id', 'dream_at', 'site', 'model', 'firmware', 'sent_at', 'received_at',
            'entry_count', 'payload_signature', 'provenance_signature'), dreams, _DREAM_TYPES)
        signatures = {envelope.rrn: [fault_signature(entry.type, entry.text)
                                     for entry in envelope.payload.entries]
                      for envelope in envelopes}
        self._keep_entries(envelopes, signatures, heard, now)
        self._count_faults([value for envelope in envelopes for value in
                            signatures[envelope.rrn]],
                           [value for envelope in envelopes for value in before[envelope.rrn]])

    def _keep_entries(self, envelopes: list, signatures: dict, heard: set, at: float) -> None:
        """
        Write the dreams' entries and each entry's newest state: a statement a table.

        The entries of a robot never heard from (not in ``heard``) are new: inserted as they
        are, without a conflict clause (``insert_new``: a store keeping the robot's first
        dream meanwhile makes this one fail, and it comes again); the others are upserted.
        """
        rows, new_rows, dream_rows = [], [], []
        for envelope in envelopes:
            rrn, dream_id = envelope.rrn, envelope.provenance.dream_id
            dream_at = _epoch(envelope.provenance.dream_at)
            for entry, signature in zip(envelope.payload.entries, signatures[rrn]):
                row = (rrn, entry.id, signature, entry.type, entry.text, entry.confidence,
                       entry.observation_count, _tags_json(tuple(entry.tags)),
                       _epoch(entry.first_seen), _epoch(entry.last_reinforced))
                if rrn in heard:
                    rows.append(row + (at, dream_id, dream_at))
                else:
                    new_rows.append(row + (at, None, None, dream_id, dream_at, 'active'))
                dream_rows.append(row + (dream_id, dream_at))
        # (ids are unique within a payload, open_envelope checked them; one payload a robot)
        columns = ('rrn, entry_id, signature, type, text, confidence, observation_count, tags, '
                   'first_seen, last_reinforced')
        # the new dreams' entries: as their dreams, no conflict clause (insert_new)
        self.db.insert_new('fleet_dream_entries', tuple(columns.split(', ')) + (
            'dream_id', 'dream_at'), dream_rows, _ENTRY_TYPES + ('BIGINT', _TIME))
        self.db.insert_new('fleet_entries', tuple(columns.split(', ')) + (
            'first_heard', 'reinforced_at', 'resolved_at', 'last_dream', 'last_dream_at',
            'status'), new_rows, _ENTRY_TYPES + (_TIME, _TIME, _TIME, 'BIGINT', _TIME, 'TEXT'))
        # reinforced: when the observation count last grew (kept when this dream's is the same)
        self.db.insert_many(
            f'INSERT INTO fleet_entries ({columns}, first_heard, reinforced_at, resolved_at, '
            'last_dream, last_dream_at, status)',
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, 'active')", rows,
            'ON CONFLICT (rrn, entry_id) DO UPDATE SET signature = excluded.signature, '
            'type = excluded.type, text = excluded.text, confidence = excluded.confidence, '
            'observation_count = excluded.observation_count, tags = excluded.tags, '
            'first_seen = excluded.first_seen, last_reinforced = excluded.last_reinforced, '
            'reinforced_at = CASE WHEN excluded.observation_count > '
            'fleet_entries.observation_count THEN excluded.first_heard '
            'ELSE fleet_entries.reinforced_at END, '
            'resolved_at = NULL, last_dream = excluded.last_dream, '
            "last_dream_at = excluded.last_dream_at, status = 'active'",
            _ENTRY_TYPES + (_TIME, 'BIGINT', _TIME))
        # active before and not in this (new) dream: the robot resolved them
        dreams = [(envelope.rrn, envelope.provenance.dream_id,
                   _epoch(envelope.provenance.dream_at)) for envelope in envelopes
                  if envelope.rrn in heard]
        if not dreams:
            return
        self.db.execute(
            "UPDATE fleet_entries SET status = 'resolved', resolved_at = ?, last_dream = "
            'd.column2, last_dream_at = d.column3 FROM (VALUES '
            + ', '.join(['(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION))']
                        * len(dreams))
            + ") AS d WHERE fleet_entries.rrn = d.column1 AND fleet_entries.status = 'active' "
            'AND NOT (fleet_entries.last_dream = d.column2 AND fleet_entries.last_dream_at = '
            'd.column3)', [at] + [value for dream in dreams for value in dream])

    def _count_faults(self, after: list, before: list) -> None:
        """Add to each fault signature's count of active entries what this delivery changed."""
        # after a delivery, a robot's active entries are exactly the payload's
        change = collections.Counter(after)
        change.subtract(before)
        self.db.insert_many(
            'INSERT INTO fleet_fault_counts (signature, entries)', '(?, ?)',
            sorted((signature, delta) for signature, delta in change.items() if delta),
            'ON CONFLICT (signature) DO UPDATE SET entries = fleet_fault_counts.entries + '
            'excluded.entries', ('TEXT', 'BIGINT'))

    def _forget_old(self, now: float) -> None:
        if abs(now - self._forgot_at) < FORGET_EVERY_S:
            return  # done less than a minute ago (of the deliveries' clock)
        self._forgot_at = now
        limit = now - self.retention_s
        self.db.execute('DELETE FROM fleet_dream_entries WHERE EXISTS (SELECT 1 FROM fleet_dreams '
                        'd WHERE d.rrn = fleet_dream_entries.rrn AND d.dream_id = '
                        'fleet_dream_entries.dream_id AND d.dream_at = fleet_dream_entries.'
                        'dream_at AND d.received_at < ?)', (limit,))
        self.db.execute('DELETE FROM fleet_dreams WHERE received_at < ?', (limit,))
        self.db.execute("DELETE FROM fleet_entries WHERE status = 'resolved' AND resolved_at < ?",
                        (limit,))
        self.db.execute('DELETE FROM fleet_fault_counts WHERE entries <= 0')

    def count(self, refused: Refused, now: dt.datetime) -> None:
        """Count a refusal made outside :meth:`receive` (a lesson the fleet key did not sign)."""
        self._count(refused, _epoch(now))

    def _count(self, refused: Refused, now: float) -> None:
        self._count_all([refused], now)

    def _count_all(self, refusals: list, now: float) -> None:
        with self.db.transaction(), self.db.batch():
            for refused in refusals:
                self.db.execute(
                    'INSERT INTO fleet_refusals (reason, count, last_at, last_message) VALUES '
                    '(?, 1, ?, ?) ON CONFLICT (reason) DO UPDATE SET count = '
                    'fleet_refusals.count + 1, last_at = excluded.last_at, last_message = '
                    'excluded.last_message', (refused.reason, now, str(refused)[:1000]))

    # ------------------------------------------------------------------ reading

    def robots(self) -> list:
        """Return every robot heard from, by RRN."""
        return self.db.rows('SELECT * FROM fleet_robots ORDER BY rrn')

    def entries(self, rrn: Optional[str] = None) -> list:
        """Return the current entries, of one robot or of all, with their provenance."""
        where, parameters = ('WHERE e.rrn = ?', (rrn,)) if rrn is not None else ('', ())
        return self.db.rows(
            'SELECT e.*, d.site, d.model, d.firmware, d.sent_at, d.payload_signature '
            'FROM fleet_entries e LEFT JOIN fleet_dreams d ON d.rrn = e.rrn AND d.dream_id = '
            f'e.last_dream AND d.dream_at = e.last_dream_at {where} ORDER BY e.rrn, e.entry_id',
            parameters)

    def fault_entries(self) -> tuple:
        """
        Return the active entries of each fault signature that two or more active entries share.

        ``(groups, texts)``: ``groups`` maps each such signature to its rows ``(signature, rrn,
        entry_id, labels)`` sorted by RRN and entry: ``labels`` are the model, firmware and
        site of the entry's last dream (as :meth:`entries` gives them) in one text, None
        without that dream (``report.provenance`` splits them). ``texts`` maps each signature
        to ``(type, text)`` of its first row. The signatures come from ``fleet_fault_counts``
        (active entries a signature, kept by :meth:`receive`), so the cost grows with the
        shared faults' entries, not with every entry of the fleet. The rows are grouped as
        the server sends them (``FleetDatabase.grouped``), and the three labels come as one
        value: fewer values to read, and one to count.
        """
        signatures = [row[0] for row in self.db.tuples(
            'SELECT signature FROM fleet_fault_counts WHERE entries >= 2')]
        groups: dict = {}
        for chunk in _chunks(signatures, 500):
            groups.update(self.db.grouped(
                'SELECT e.signature, e.rrn, e.entry_id, d.model || ? || d.firmware || ? || '
                'd.site FROM fleet_entries e LEFT JOIN fleet_dreams d ON d.rrn = e.rrn AND '
                'd.dream_id = e.last_dream AND d.dream_at = e.last_dream_at WHERE e.status = '
                f"'active' AND e.signature IN ({', '.join('?' * len(chunk))})",
                [LABELS, LABELS] + chunk))
        for rows in groups.values():
            rows.sort()  # by RRN, entry (one signature): unique, so the labels never compare
        first = [rows[0][1:3] for rows in groups.values()]
        texts: dict = {}
        for chunk in _chunks(first, 400):
            texts.update((row[0], row[1:]) for row in self.db.tuples(
                'SELECT signature, type, text FROM fleet_entries WHERE (rrn, entry_id) IN '
                f'(VALUES {", ".join(["(?, ?)"] * len(chunk))})',
                [value for pair in chunk for value in pair]))
        return groups, texts

    def changed_since(self, since: float) -> list:
        """Return the entries first heard, reinforced (still active) or resolved since ``since``."""
        return self.db.rows(
            'SELECT rrn, entry_id, signature, type, text, status, first_heard, reinforced_at, '
            'resolved_at FROM fleet_entries WHERE first_heard >= ? OR resolved_at >= ? OR '
            "(reinforced_at >= ? AND status = 'active') ORDER BY rrn, entry_id",
            (since, since, since))

    def resolved_faults(self) -> list:
        """Return every entry, of any status, of the fault signatures some robot resolved."""
        return self.db.rows(
            'SELECT rrn, entry_id, signature, text, status FROM fleet_entries WHERE signature IN '
            "(SELECT signature FROM fleet_entries WHERE status = 'resolved') "
            'ORDER BY rrn, entry_id')

    def dream_count(self, rrn: Optional[str] = None) -> int:
        """Return how many dreams are kept (one robot's, or all)."""
        if rrn is None:
            return int(self.db.value('SELECT count(*) FROM fleet_dreams'))
        return int(self.db.value('SELECT count(*) FROM fleet_dreams WHERE rrn = ?', (rrn,)))

    def refusals(self) -> dict:
        """Return reason -> count for every reason (0 when never refused)."""
        counted = {row['reason']: int(row['count'])
                   for row in self.db.rows('SELECT reason, count FROM fleet_refusals')}
        return {reason: counted.get(reason, 0) for reason in REASONS}
