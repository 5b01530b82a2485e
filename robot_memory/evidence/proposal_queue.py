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
The proposals queue: the ``proposals`` table of the evidence database and its audit trail.

What the queue is for, and how each kind is applied, is told in ``review.proposing``; this
module is the storage below the dream (which queues the distiller's rewords) and the review.
"""

import dataclasses
import datetime as dt
import json
import sqlite3
from typing import Optional

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator


from robot_memory.common.sqlite_db import apply_migrations
from robot_memory.common.sqlite_db import create_private_file
from robot_memory.common.sqlite_db import MigrationSet
from robot_memory.common.sqlite_db import open_database
from robot_memory.common.sqlite_db import PlainDatabase
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import require_aware
from robot_memory.common.timeutil import to_utc
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence.evidence_audit import write_audit
from robot_memory.rcan import untrusted

# Per source of changes (proposals.*): apply at once, or propose for a person's approval.
MODES = ('apply', 'propose')
SOURCES = ('distiller', 'agents', 'peers')


class ProposalSettings(BaseModel):
    """Per source: apply its changes at once, or propose them for approval."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    distiller: str = Field('apply', description="The LLM distiller's wording of new entries "
                                                'during a dream: apply (write at once) or '
                                                'propose (the entry keeps the rule text until '
                                                'a person approves the new wording)')
    agents: str = Field('apply', description="Agents' typed-memory writes (~/learn, MCP "
                                             'learn, robot-memory learn): apply or propose '
                                             '(queued until approved)')
    peers: str = Field('apply', description="Peer robots' payloads that would change "
                                            'peer_context: apply or propose (queued until '
                                            'approved; a newer payload replaces a pending one)')
    expire_after_hours: float = Field(168.0, gt=0.0, le=24.0 * 3650,
                                      description='Hours a proposal waits for a decision '
                                                  'before it expires (the change is not made)')

    @field_validator('distiller', 'agents', 'peers')
    @classmethod
    def _mode_valid(cls, value):
        if value not in MODES:
            raise ValueError(f'{value!r} is not a mode; use apply (write at once, the default) '
                             'or propose (queue for robot-memory approve)')
        return value

    def mode(self, source: str) -> str:
        """Return the mode of ``source`` (one of SOURCES)."""
        if source not in SOURCES:
            raise ValueError(f'source {source!r} is not one of {", ".join(SOURCES)}')
        return getattr(self, source)

    @property
    def expire_after_s(self) -> float:
        """How long a proposal waits, in seconds."""
        return self.expire_after_hours * 3600.0


KINDS = {'reword': 'distiller', 'learn': 'agents', 'peer_context': 'peers'}
STATUSES = ('pending', 'approved', 'rejected', 'expired', 'replaced')
DECISIONS = ('approve', 'reject')
PREFIX = 'proposal:'
MAX_REASON = 500
MAX_ACTOR = 64
# Where a refusal sends the caller: the command line, or ~/proposals' request fields.
CLI_HINTS = {'list': 'robot-memory proposals lists the pending ones',
             'decided': 'robot-memory proposals --all shows how'}
REQUEST_HINTS = {'list': 'action list on ~/proposals shows the pending ones',
                 'decided': 'action list on ~/proposals shows what is still pending'}
WOULD = '; now this would: '


class ProposalError(RobotMemoryError, ValueError):
    """A proposal cannot be made or decided; the message says what to do."""


DEFAULT_SETTINGS = ProposalSettings()


@dataclasses.dataclass
class Proposal:
    """One proposed change: what, from whom, what it would change, and its decision."""

    id: int
    kind: str
    source: str
    proposer: str
    target: str
    summary: str
    payload: dict
    created_at: dt.datetime
    expires_at: dt.datetime
    status: str
    decided_at: Optional[dt.datetime] = None
    decided_by: Optional[str] = None
    reason: Optional[str] = None
    outcome: Optional[str] = None

    @property
    def shown_summary(self) -> str:
        """Return the summary; once decided, without what it would have done (see outcome)."""
        return self.summary if self.status == 'pending' else self.summary.split(WOULD)[0]

    def to_dict(self) -> dict:
        """Plain JSON data."""
        data = dataclasses.asdict(self)
        for key in ('created_at', 'expires_at', 'decided_at'):
            data[key] = format_iso(data[key]) if data[key] is not None else None
        data['summary'] = self.shown_summary
        return data

    def describe(self, now: dt.datetime) -> str:
        """Two lines for people: id, kind, source, age and expiry; then what would change."""
        age = _duration((to_utc(now) - self.created_at).total_seconds())
        left = _duration((self.expires_at - to_utc(now)).total_seconds())
        head = (f'#{self.id} {self.kind} from {self.source} ({self.proposer}), proposed '
                f'{age} ago, expires in {left}')
        return f'{head}\n    {self.shown_summary}'


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f'{seconds:.0f} s'
    if seconds < 7200:
        return f'{seconds / 60:.0f} min'
    if seconds < 172800:
        return f'{seconds / 3600:.1f} h'
    return f'{seconds / 86400:.1f} days'


def _epoch(now: dt.datetime) -> float:
    return require_aware(now).timestamp()


def _check_text(value, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ProposalError(f'{what} is empty; say {"who" if what == "actor" else "why"}')
    value = value.strip()
    if len(value) > limit or not value.isprintable():
        raise ProposalError(f'{what} must be printable and at most {limit} characters')
    return value


def proposal_number(text, hints: dict = CLI_HINTS) -> int:
    """Return a proposal id from ``7``, ``#7`` or ``proposal:7``; ProposalError otherwise."""
    raw = str(text).strip()
    for lead in ('#', PREFIX):
        raw = raw[len(lead):] if raw.startswith(lead) else raw
    if not raw.isdigit() or int(raw) < 1:
        raise ProposalError(f'{text!r} is not a proposal id (a number such as 7); '
                            f'{hints["list"]}')
    return int(raw)


# The queue's migrations, recorded apart from the evidence and substrate ones.
MIGRATIONS = MigrationSet('robot_memory.review.proposals', 'proposals_migrations')


@MIGRATIONS(name='0001_proposals_queue')
def _create_queue(db) -> None:
    db.execute(
        'CREATE TABLE IF NOT EXISTS proposals (id INTEGER PRIMARY KEY AUTOINCREMENT, '
        'kind TEXT NOT NULL, source TEXT NOT NULL, proposer TEXT NOT NULL, '
        'target TEXT NOT NULL, summary TEXT NOT NULL, payload TEXT NOT NULL, '
        'created_s REAL NOT NULL, expires_s REAL NOT NULL, '
        "status TEXT NOT NULL DEFAULT 'pending', decided_s REAL, decided_by TEXT, "
        'reason TEXT, outcome TEXT)')
    db.execute('CREATE INDEX IF NOT EXISTS proposals_status ON proposals (status, expires_s)')
    db.execute('CREATE INDEX IF NOT EXISTS proposals_target ON proposals (kind, target, status)')


_COLUMNS = ('id', 'kind', 'source', 'proposer', 'target', 'summary', 'payload', 'created_s',
            'expires_s', 'status', 'decided_s', 'decided_by', 'reason', 'outcome')


def _proposal(row) -> Proposal:
    data = dict(zip(_COLUMNS, row))
    return Proposal(data['id'], data['kind'], data['source'], data['proposer'], data['target'],
                    data['summary'], json.loads(data['payload']), from_epoch(data['created_s']),
                    from_epoch(data['expires_s']), data['status'],
                    from_epoch(data['decided_s']), data['decided_by'], data['reason'],
                    data['outcome'])


def waiting_or_answered(db, kind: str) -> list:
    """
    Return ``(target, payload)`` of each proposal of ``kind`` pending or decided by a person.

    Expired and replaced proposals are left out: nobody answered them, so what proposed them
    may ask again (the dream's judgements and releases, ``dream.incidents``). Only reads; a
    database without the queue yet has none.
    """
    conn = db.conn
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'proposals'"
                    ).fetchone() is None:
        return []
    return [(target, json.loads(payload)) for target, payload in conn.execute(
        "SELECT target, payload FROM proposals WHERE kind = ? AND status IN ('pending', "
        "'approved', 'rejected')", (kind,))]


class ProposalQueue:
    """
    The queue in the evidence database; ``db`` is an open ``sqlite_db.PlainDatabase``.

    Use ``ProposalQueue.open(path)`` for a connection of its own (the CLI), or pass the
    connection of a store whose thread will use the queue (the dream, the node's worker).
    """

    def __init__(self, db):
        # lazy: the evidence store, 23 ms and 2 MB of show --config
        from robot_memory.evidence import evidence_store
        self.db = db
        self._owned = False
        self.hints = CLI_HINTS  # the node sets REQUEST_HINTS
        apply_migrations(evidence_store.MIGRATIONS, db)   # the audit log the decisions go to
        apply_migrations(MIGRATIONS, db)

    @classmethod
    def open(cls, path, busy_timeout_s: float = 10.0) -> 'ProposalQueue':
        """Return a queue on its own connection to the database at ``path`` (0600 if new)."""
        # lazy: the evidence store, 23 ms and 2 MB of show --config
        from robot_memory.evidence import evidence_store
        target = evidence_store.open_target(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            create_private_file(target)
            db = open_database(str(target), busy_timeout_s, MIGRATIONS)
        except OSError as error:
            raise ProposalError(f'cannot open the database {target}: {error.strerror}; check '
                                'the directory is writable') from None
        except sqlite3.DatabaseError as error:
            raise ProposalError(f'cannot use the database {target} ({error}); robot-memory '
                                'dream sets a damaged database aside and starts a new one') \
                from None
        queue = cls(db)
        queue._owned = True
        return queue

    def __enter__(self) -> 'ProposalQueue':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection if the queue opened it."""
        if self._owned:
            self.db.close()

    def _transaction(self):
        # BEGIN IMMEDIATE, or a savepoint inside the caller's transaction (the dream's)
        return PlainDatabase(self.db.conn).atomic(immediate=True)

    def _audit(self, now_s: float, proposal_id: int, action: str, actor: str, reason: str,
               detail: dict) -> None:
        # lazy: the evidence store, 23 ms and 2 MB of show --config
        from robot_memory.evidence.evidence_store import AUDIT_ACTIONS
        if action not in AUDIT_ACTIONS:
            raise ValueError(f'audit action {action!r} is not one of {", ".join(AUDIT_ACTIONS)}')
        write_audit(self.db.conn, [(format_iso(from_epoch(now_s)), f'{PREFIX}{proposal_id}',
                                    action, actor, reason,
                                    json.dumps(detail, ensure_ascii=False, sort_keys=True),
                                    None)])

    def _audit_entry(self, now_s: float, proposal: Proposal, actor: str, reason: str) -> None:
        """Record the approved reword in the entry's own trail (``robot-memory history``)."""
        detail = {'proposal': proposal.id, 'before': proposal.payload['before'],
                  'after': proposal.payload['after']}
        write_audit(self.db.conn, [(format_iso(from_epoch(now_s)), proposal.target, 'approve',
                                    actor, f'text of proposal {proposal.id} approved: {reason}',
                                    json.dumps(detail, ensure_ascii=False, sort_keys=True),
                                    None)])

    # ------------------------------------------------------------------ proposing

    def propose(self, kind: str, proposer: str, target: str, summary: str, payload: dict,
                now: dt.datetime, expire_after_s: float, replace_pending: bool = False) -> Proposal:
        """
        Queue a change; audited as ``propose``.

        ``replace_pending`` replaces the pending proposals of the same kind and target (a
        peer's newer payload), audited ``replace``.
        """
        if kind not in KINDS:
            raise ValueError(f'kind {kind!r} is not one of {", ".join(KINDS)}')
        if not expire_after_s > 0:
            raise ValueError('expire_after_s must be positive')
        now_s = _epoch(now)
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        with self._transaction():
            replaced = []
            if replace_pending:
                replaced = [row[0] for row in self.db.conn.execute(
                    'SELECT id FROM proposals WHERE kind = ? AND target = ? AND '
                    "status = 'pending' ORDER BY id", (kind, target))]
            cursor = self.db.conn.execute(
                'INSERT INTO proposals (kind, source, proposer, target, summary, payload, '
                'created_s, expires_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                (kind, KINDS[kind], proposer, target, summary, text, now_s,
                 now_s + expire_after_s))
            new_id = cursor.lastrowid
            self._audit(now_s, new_id, 'propose', proposer,
                        f'{kind} proposed by {KINDS[kind]}: {summary}'[:MAX_REASON * 2],
                        {'kind': kind, 'source': KINDS[kind], 'target': target})
            for old in replaced:
                self.db.conn.execute(
                    "UPDATE proposals SET status = 'replaced', decided_s = ?, decided_by = ?, "
                    'reason = ? WHERE id = ?',
                    (now_s, 'proposals', f'replaced by proposal {new_id}', old))
                self._audit(now_s, old, 'replace', 'proposals',
                            f'replaced by the newer proposal {new_id} for {target}',
                            {'by': new_id, 'target': target})
        return self._written(new_id)

    # ------------------------------------------------------------------ reading

    def _written(self, proposal_id: int) -> Proposal:
        """Return a proposal this connection has written (so it exists)."""
        proposal = self.get(proposal_id)
        assert proposal is not None
        return proposal

    def get(self, proposal_id: int) -> Optional[Proposal]:
        """Return the proposal with this id, or None."""
        row = self.db.conn.execute(f'SELECT {", ".join(_COLUMNS)} FROM proposals WHERE id = ?',
                                   (proposal_id,)).fetchone()
        return _proposal(row) if row else None

    def pending(self, now: dt.datetime) -> list:
        """Return the proposals waiting for a decision at ``now`` (not expired), oldest first."""
        rows = self.db.conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM proposals WHERE status = 'pending' AND "
            'expires_s > ? ORDER BY id', (_epoch(now),))
        return [_proposal(row) for row in rows]

    def stats(self, now: dt.datetime) -> dict:
        """Pending count, the oldest one's age in seconds (0 when none), and by source."""
        now_s = _epoch(now)
        rows = self.db.conn.execute(
            "SELECT source, count(*), min(created_s) FROM proposals WHERE status = 'pending' "
            'AND expires_s > ? GROUP BY source', (now_s,)).fetchall()
        oldest = min((row[2] for row in rows), default=None)
        return {'pending': sum(row[1] for row in rows),
                'oldest_age_s': round(max(0.0, now_s - oldest), 1) if oldest is not None else 0.0,
                'by_source': dict.fromkeys(SOURCES, 0) | {row[0]: row[1] for row in rows}}

    # ------------------------------------------------------------------ deciding

    def expire(self, now: dt.datetime, actor: str = 'proposals') -> list:
        """Mark every pending proposal whose time is up as expired (audited); return them."""
        now_s = _epoch(now)
        due = "SELECT 1 FROM proposals WHERE status = 'pending' AND expires_s <= ? LIMIT 1"
        if not self.db.conn.in_transaction and \
                self.db.conn.execute(due, (now_s,)).fetchone() is None:
            return []   # the usual case: no write lock taken (the node asks every second)
        with self._transaction():
            rows = self.db.conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM proposals WHERE status = 'pending' AND "
                'expires_s <= ? ORDER BY id', (now_s,)).fetchall()
            expired = [_proposal(row) for row in rows]
            for proposal in expired:
                reason = (f'no decision before {format_iso(proposal.expires_at)}; the change '
                          'was not made')
                self.db.conn.execute(
                    "UPDATE proposals SET status = 'expired', decided_s = ?, decided_by = ?, "
                    'reason = ? WHERE id = ?', (now_s, actor, reason, proposal.id))
                self._audit(now_s, proposal.id, 'expire', actor, reason,
                            {'kind': proposal.kind, 'target': proposal.target})
        return [self.get(proposal.id) for proposal in expired]

    def decide(self, proposal_id, decision: str, actor: str, reason: str, now: dt.datetime,
               apply=None, also=None) -> Proposal:
        """
        Approve (``apply(proposal)`` makes the change, returns what it did) or reject.

        Refuses an unknown id, a proposal already decided, and one whose time is up (that
        one is marked expired first), each saying what to do. A failing ``apply`` raises
        ProposalError and leaves the proposal pending. ``also(conn, now_s)`` runs inside the
        transaction that records the decision (database rows that go with the change).
        """
        if decision not in DECISIONS:
            raise ValueError(f'decision {decision!r} is not approve or reject')
        proposal_id = proposal_number(proposal_id, self.hints)
        actor = _check_text(actor, 'actor', MAX_ACTOR)
        reason = _check_text(reason, 'reason', MAX_REASON)
        now_s = _epoch(now)
        proposal = self.get(proposal_id)
        if proposal is None:
            raise ProposalError(f'there is no proposal {proposal_id}; {self.hints["list"]}')
        if now_s < proposal.created_at.timestamp():
            raise ProposalError(f'the decision time {format_iso(to_utc(now))} is before proposal '
                                f'{proposal_id} was made ({format_iso(proposal.created_at)}); '
                                'decide at or after that time (a decision dated earlier '
                                'would escape an undo to a time after it)')
        if proposal.status == 'pending' and proposal.expires_at.timestamp() <= now_s:
            self.expire(now)
            proposal = self._written(proposal_id)
        if proposal.status != 'pending':
            when = format_iso(proposal.decided_at) if proposal.decided_at else '?'
            advice = ('it was not applied; if the change is still wanted, have its source '
                      'propose it again' if proposal.status in ('expired', 'replaced')
                      else 'nothing to do')
            raise ProposalError(f'proposal {proposal_id} was already {proposal.status} at '
                                f'{when} by {proposal.decided_by} ({proposal.reason}); {advice}')
        outcome = None
        if decision == 'approve':
            if apply is None:
                raise ValueError('approving needs apply')
            outcome = apply(proposal)
        status = 'approved' if decision == 'approve' else 'rejected'
        with self._transaction():
            changed = self.db.conn.execute(
                'UPDATE proposals SET status = ?, decided_s = ?, decided_by = ?, reason = ?, '
                "outcome = ? WHERE id = ? AND status = 'pending'",
                (status, now_s, actor, reason, outcome, proposal_id)).rowcount
            if not changed:
                raise ProposalError(f'proposal {proposal_id} was decided by someone else at '
                                    f'the same moment; {self.hints["decided"]}')
            if also is not None:
                also(self.db.conn, now_s)
            self._audit(now_s, proposal_id, decision, actor, reason,
                        {'kind': proposal.kind, 'source': proposal.source,
                         'target': proposal.target, 'summary': proposal.summary,
                         'outcome': outcome})
        return self._written(proposal_id)

    def recent(self, limit: int = 50) -> list:
        """Return the latest proposals whatever their status, newest first."""
        rows = self.db.conn.execute(f'SELECT {", ".join(_COLUMNS)} FROM proposals '
                                    'ORDER BY id DESC LIMIT ?', (limit,))
        return [_proposal(row) for row in rows]


def reword_summary(entry_id: str, before: str, after: str) -> str:
    """
    Return what a reword would change, on one line.

    A reword to the entry's own text is a release: the entry is held from the brain for
    instruction-like text (``rcan.untrusted``) until it is approved.
    """
    if before == after:
        found = untrusted.findings(after)
        return (f'entry {entry_id}: release "{after}" to the brain (held: it reads like an '
                f'instruction to a model: {untrusted.describe(found) or "nothing now"})')
    return f'entry {entry_id}: text "{before}" -> "{after}"'
