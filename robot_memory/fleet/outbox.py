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
The robot's fleet outbox: sealed payloads wait on disk until the fleet store acknowledges them.

A SQLite file beside the memory file (``robot-memory.md.fleet-outbox.db``), one row per dream
(its id and its time: ids start again when a damaged evidence database is set aside):
``pending`` until acknowledged, then ``acked``; a pending payload a newer one replaces is
``superseded``. Each payload carries the robot's whole shareable state at its dream, so a
delivery sends only the newest pending one (the newest state of each entry) and the older
pending ones are superseded by its ack: a robot back after a week sends one payload, not a
week of them. Bounded: at most ``max_pending`` wait (the oldest are superseded first, their
state being in the newer ones), and finished rows are kept ``keep_days`` for the record.
"""

import dataclasses
import datetime as dt
import pathlib
import sqlite3
from typing import Optional

from robot_memory.common.fileio import side_file
from robot_memory.common.sqlite_db import create_private_file
from robot_memory.common.sqlite_db import MigrationSet
from robot_memory.common.sqlite_db import open_database
from robot_memory.common.timeutil import to_utc
from robot_memory.fleet.refusals import FleetError

SUFFIX = '.fleet-outbox.db'
DEFAULT_MAX_PENDING = 64
DEFAULT_KEEP_DAYS = 30.0
BUSY_TIMEOUT_S = 10.0
# the newest dream first: by its time, since ids start again after a set-aside database
_NEWEST_FIRST = 'ORDER BY dream_at DESC, dream_id DESC'
MIGRATIONS = MigrationSet('robot_memory.fleet.outbox', 'fleet_outbox_migrations')


@MIGRATIONS(name='0001_outbox')
def _create_outbox(db) -> None:
    db.execute('CREATE TABLE IF NOT EXISTS outbox (dream_id INTEGER NOT NULL, dream_at REAL NOT '
               'NULL, rrn TEXT NOT NULL, site TEXT NOT NULL, made_at REAL NOT NULL, envelope '
               "BLOB NOT NULL, state TEXT NOT NULL DEFAULT 'pending', done_at REAL, answer TEXT "
               "NOT NULL DEFAULT '', PRIMARY KEY (dream_id, dream_at))")


@dataclasses.dataclass(frozen=True)
class Waiting:
    """The delivery to make now: the newest pending payload and the older ones it replaces."""

    dream_id: int
    dream_at: float  # Unix seconds
    rrn: str
    site: str
    envelope: bytes
    older: tuple  # (dream_id, dream_at) of each, newest first


def outbox_path(memory_path) -> pathlib.Path:
    """Return the outbox file beside the memory file."""
    return side_file(pathlib.Path(memory_path), SUFFIX)


class Outbox:
    """One robot's outbox file."""

    def __init__(self, path, max_pending: int = DEFAULT_MAX_PENDING,
                 keep_days: float = DEFAULT_KEEP_DAYS):
        self.path = pathlib.Path(path)
        self.max_pending = max_pending
        self.keep_s = keep_days * 86_400.0
        try:
            create_private_file(self.path)
            self.db = open_database(str(self.path), BUSY_TIMEOUT_S, MIGRATIONS)
        except (OSError, sqlite3.DatabaseError) as error:
            raise FleetError(f'cannot use the fleet outbox {self.path} ({error}); check that its '
                             'directory is writable, or move a damaged file aside') from None

    def close(self) -> None:
        """Close the file."""
        self.db.close()

    def __enter__(self) -> 'Outbox':
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, dream_id: int, dream_at: dt.datetime, rrn: str, site: str, envelope: bytes,
            now: dt.datetime) -> str:
        """
        Queue the payload of the dream ``dream_id`` made at ``dream_at``; say what happened.

        A dream already acknowledged is not queued again (the store has it); a pending one
        is replaced by this newer payload of the same dream.
        """
        at, made = to_utc(now).timestamp(), to_utc(dream_at).timestamp()
        with self.db.atomic(immediate=True):
            row = self.db.execute('SELECT state FROM outbox WHERE dream_id = ? AND dream_at = ?',
                                  (dream_id, made)).fetchone()
            if row is not None and row[0] == 'acked':
                return f'dream {dream_id} was delivered before; nothing new to send'
            self.db.execute(
                'INSERT INTO outbox (dream_id, dream_at, rrn, site, made_at, envelope) VALUES '
                '(?, ?, ?, ?, ?, ?) ON CONFLICT (dream_id, dream_at) DO UPDATE SET rrn = '
                'excluded.rrn, site = excluded.site, made_at = excluded.made_at, envelope = '
                "excluded.envelope, state = 'pending', done_at = NULL, answer = ''",
                (dream_id, made, rrn, site, at, envelope))
            self._bound(at)
        return f'dream {dream_id} queued'

    def _bound(self, at: float) -> None:
        over = self.db.execute(
            f"SELECT dream_id, dream_at FROM outbox WHERE state = 'pending' {_NEWEST_FIRST} "
            'LIMIT -1 OFFSET ?', (self.max_pending,)).fetchall()
        for dream_id, dream_at in over:
            self.db.execute("UPDATE outbox SET state = 'superseded', done_at = ?, answer = "
                            "'outbox full: a newer payload holds its state' WHERE dream_id = ? "
                            'AND dream_at = ?', (at, dream_id, dream_at))
        self.db.execute("DELETE FROM outbox WHERE state != 'pending' AND done_at < ?",
                        (at - self.keep_s,))

    def next(self) -> Optional[Waiting]:
        """Return the delivery to make (the newest pending payload), or None."""
        rows = self.db.execute('SELECT dream_id, dream_at, rrn, site, envelope FROM outbox '
                               f"WHERE state = 'pending' {_NEWEST_FIRST}").fetchall()
        if not rows:
            return None
        dream_id, dream_at, rrn, site, envelope = rows[0]
        return Waiting(dream_id, dream_at, rrn, site, bytes(envelope),
                       tuple((row[0], row[1]) for row in rows[1:]))

    def latest(self) -> Optional[bytes]:
        """Return the newest payload, delivered or not (what a query for it gets), or None."""
        row = self.db.execute(f'SELECT envelope FROM outbox {_NEWEST_FIRST} LIMIT 1').fetchone()
        return bytes(row[0]) if row else None

    def acknowledge(self, waiting: Waiting, answer: str, now: dt.datetime) -> None:
        """Mark a delivery acknowledged, and the older pending payloads superseded by it."""
        at = to_utc(now).timestamp()
        with self.db.atomic(immediate=True):
            self.db.execute("UPDATE outbox SET state = 'acked', done_at = ?, answer = ? "
                            'WHERE dream_id = ? AND dream_at = ?',
                            (at, answer[:500], waiting.dream_id, waiting.dream_at))
            for dream_id, dream_at in waiting.older:
                self.db.execute(
                    "UPDATE outbox SET state = 'superseded', done_at = ?, answer = ? WHERE "
                    "dream_id = ? AND dream_at = ? AND state = 'pending'",
                    (at, f'delivered with dream {waiting.dream_id}', dream_id, dream_at))

    def note(self, waiting: Waiting, answer: str) -> None:
        """Keep the last answer of a delivery that stays pending (a refusal, a timeout)."""
        self.db.execute('UPDATE outbox SET answer = ? WHERE dream_id = ? AND dream_at = ?',
                        (answer[:500], waiting.dream_id, waiting.dream_at))

    def counts(self) -> dict:
        """Return state -> number of rows."""
        counted = dict(self.db.execute('SELECT state, count(*) FROM outbox GROUP BY state')
                       .fetchall())
        return {state: counted.get(state, 0) for state in ('pending', 'acked', 'superseded')}
