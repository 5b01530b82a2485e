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
``robot-memory ingest``: observations from JSON lines into the evidence store, each once.

What was taken is recorded as ``robot-memory replay`` records it (``robot_memory.bags.replay``):
by file and stream (a status by hardware id and name, a log by logger, telemetry by topic),
the first and last stamp taken, in the transaction of the observations (``ingest_files``,
``ingest_taken``: migration ``0007_ingest_progress``; a few rows a file, nothing a row of
evidence). A file is known by its first line, so a copy or a file that grew is the same
file. So:

* ingesting a file again, or after a kill, skips the lines an earlier ingest handled (by line
  number, each one's stamp checked against what was taken of its stream), and a file that
  grew adds only its new lines;
* an observation another file already gave (its stamp within what that file gave of the same
  stream) is skipped: the same observations in another file count once;
* a write that fails (a full disk) stores nothing of the lines since the last write and
  says which lines were stored; the same command again takes up after them.
"""

import dataclasses
import datetime as dt
import hashlib
import itertools
import sqlite3
from typing import Callable
from typing import Iterator
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.evidence import observations
from robot_memory.evidence.clock import FutureCheck
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import EvidenceStore

FLUSH_LINES = 5_000  # lines between two writes of observations and progress
THIS_FILE = 'taken by an earlier ingest of this file'


@dataclasses.dataclass
class IngestSummary:
    """What an ingest read, took, refused and skipped; what it stored and what it could not."""

    name: str
    accepted: int = 0
    refused: int = 0
    taken: int = 0  # pieces of evidence the rules gave
    skipped: dict = dataclasses.field(default_factory=dict)  # why -> lines
    stored_lines: int = 0  # lines 1..stored_lines are stored with the progress
    stored_pieces: int = 0
    failed: Optional[tuple] = None  # (first line, last line, pieces) not stored
    error: str = ''
    future: Optional[FutureCheck] = None  # what was refused as stamped in the future

    def lines(self) -> list:
        """Return the summary for people: counts, what was skipped, what a failure left."""
        refused = self.refused + (self.future.count if self.future is not None else 0)
        out = [f'accepted {self.accepted}, refused {refused}; {self.stored_pieces} '
               f'piece{"" if self.stored_pieces == 1 else "s"} of evidence kept']
        if self.future is not None and self.future.count:
            out.append(self.future.reason('ingest the file again'))
        for why, count in sorted(self.skipped.items()):
            out.append(f'skipped {count} line{"" if count == 1 else "s"} already taken: {why}')
        if self.failed is not None:
            first, last, pieces = self.failed
            kept = (f'lines 1-{self.stored_lines} are stored' if self.stored_lines
                    else 'no line was stored')
            out.append(f'not stored: lines {first}-{last} ({pieces} pieces of evidence) and the '
                       f'lines after them ({self.error}). {kept}: run the same command again, '
                       f'it takes up after line {self.stored_lines} and counts nothing twice')
        return out


def stream_of(observation) -> str:
    """Return the stream of an observation: its status, logger or telemetry topic."""
    if isinstance(observation, observations.DiagnosticObservation):
        return f'diagnostic|{observation.hardware_id}|{observation.name}'
    if isinstance(observation, observations.LogObservation):
        return f'log|{observation.name}'
    return f'telemetry|{observation.topic}'


def file_identity(first_line: str) -> str:
    """Return a file's identity: a hash of its first line (a copy or the file grown keep it)."""
    data = first_line.rstrip('\r\n').encode('utf-8', 'surrogateescape')
    return hashlib.sha256(data).hexdigest()[:32]


class Progress:
    """What ingests took, by file and stream, as stored in ``ingest_taken``."""

    def __init__(self, conn: sqlite3.Connection, file: str, path: str, now: dt.datetime):
        self.file, self.path, self.at = file, path, format_iso(now)
        row = conn.execute('SELECT lines FROM ingest_files WHERE file = ?', (file,)).fetchone()
        self.resume = row[0] if row else 0  # lines an earlier ingest of this file handled
        self.lines = self.resume
        paths = dict(conn.execute('SELECT file, path FROM ingest_files'))
        self.own: dict = {}  # stream -> [first, last, observations]
        self.before: dict = {}  # this file's streams as an earlier ingest left them
        self.others: dict = {}  # stream -> [(path, first, last)] of other files
        for other, stream, first, last, count in conn.execute(
                'SELECT file, stream, first, last, observations FROM ingest_taken'):
            if other == file:
                self.own[stream] = [first, last, count]
                self.before[stream] = (first, last)
            else:
                self.others.setdefault(stream, []).append((paths.get(other, other), first, last))
        self.dirty: set = set()

    def seen(self, line: int, stream: str, stamp: float) -> Optional[str]:
        """Why the observation of ``line`` was taken before (None if it was not)."""
        if line <= self.resume:
            own = self.before.get(stream)
            if own is not None and own[0] <= stamp <= own[1]:
                return THIS_FILE
        for path, first, last in self.others.get(stream, ()):
            if first <= stamp <= last:
                return f'also in {path}, taken by an earlier ingest'
        return None

    def take(self, stream: str, stamp: float) -> None:
        """Record one observation taken."""
        state = self.own.get(stream)
        if state is None:
            self.own[stream] = [stamp, stamp, 1]
        else:
            state[0], state[1] = min(state[0], stamp), max(state[1], stamp)
            state[2] += 1
        self.dirty.add(stream)

    def write(self, conn: sqlite3.Connection) -> None:
        """Store the lines handled and what changed since the last write; in its transaction."""
        conn.execute('INSERT INTO ingest_files (file, path, lines, first_at) VALUES (?, ?, ?, ?) '
                     'ON CONFLICT (file) DO UPDATE SET path = excluded.path, '
                     'lines = max(lines, excluded.lines)',
                     (self.file, self.path, self.lines, self.at))
        conn.executemany('INSERT INTO ingest_taken (file, stream, first, last, observations) '
                         'VALUES (?, ?, ?, ?, ?) ON CONFLICT (file, stream) DO UPDATE SET '
                         'first = excluded.first, last = excluded.last, '
                         'observations = excluded.observations',
                         [(self.file, stream, *self.own[stream]) for stream in self.dirty])
        self.dirty = set()


def bounded_lines(handle, most: int = observations.MAX_LINE_BYTES) -> Iterator[str]:
    """
    Yield the lines of a text stream, each read at most ``most`` + 1 characters at a time.

    A line longer than ``most`` is yielded cut there (refused as too long) and the rest of it
    read past in pieces: a file without line ends (a NUL-filled card, a stray binary) read
    as one line filled memory until the process died.
    """
    while True:
        line = handle.readline(most + 1)
        if not line:
            return
        rest = line
        while len(rest) > most and not rest.endswith('\n'):
            rest = handle.readline(most + 1)
        yield line


def ingest(store: EvidenceStore, lines: Iterator[str], name: str, now: dt.datetime,
           say: Callable[[str], None]) -> IngestSummary:
    """
    Take the observations of ``lines`` (a JSON-lines stream) into ``store``, each once.

    ``store`` must write only when told (``batch_size`` above ``FLUSH_LINES`` pieces a line
    can give; ``robot-memory ingest`` opens it so): observations and progress are written
    together every ``FLUSH_LINES`` lines and at the end. ``say`` gets each refusal and note.
    A line stamped in the future of ``now`` (``evidence.clock``) is refused and counted; it
    is not taken, so the same file ingested again once the clock is right takes it.
    """
    future = FutureCheck(now)
    summary = IngestSummary(name, future=future)
    first = next(lines, None)
    if first is None:
        return summary
    progress = Progress(store.db.conn, file_identity(first), name, now)
    summary.stored_lines = progress.resume
    if progress.resume:
        store.resume_heartbeats()  # OK reports thinned as the interrupted ingest thinned them
    number = 0
    for number, parsed in observations.iter_lines(itertools.chain([first], lines)):
        if isinstance(parsed, observations.Refusal):
            summary.refused += 1
            say(f'{name}:{number}: refused: {parsed.message}')
        elif future.refuses(parsed.observation.stamp):
            _say_future(say, name, number, parsed.observation.stamp, future)
        else:
            summary.accepted += 1
            _take(store, progress, summary, number, parsed)
            for note in parsed.notes:
                say(f'{name}:{number}: note: {note}')
        if number - summary.stored_lines >= FLUSH_LINES and not _write(store, progress,
                                                                       summary, number):
            return summary
    _write(store, progress, summary, max(number, progress.lines))
    return summary


def _say_future(say: Callable[[str], None], name: str, number: int, stamp: dt.datetime,
                future: FutureCheck) -> None:
    """Say a line was refused as stamped in the future (the first ten such lines only)."""
    if future.count <= 10:
        more = '; more such lines are not listed' if future.count == 10 else ''
        say(f'{name}:{number}: refused: stamped {format_iso(stamp)}, in the future of this '
            f'clock ({format_iso(future.now)}){more}')


def _take(store: EvidenceStore, progress: Progress, summary: IngestSummary, number: int,
          parsed: observations.ParsedLine) -> None:
    observation = parsed.observation
    stream, stamp = stream_of(observation), observation.stamp.timestamp()
    why = progress.seen(number, stream, stamp)
    if why is not None:
        summary.skipped[why] = summary.skipped.get(why, 0) + 1
        return
    summary.taken += store.add(observation)
    progress.take(stream, stamp)


def _write(store: EvidenceStore, progress: Progress, summary: IngestSummary,
           upto: int) -> bool:
    """Write the evidence and the progress up to line ``upto`` together; False if it failed."""
    progress.lines = max(progress.lines, upto)
    try:
        store.flush(then=progress.write)
    except EvidenceError as error:
        # Nothing of these lines is stored: forget them here too, so that closing the store
        # does not write them without their progress (the next ingest takes them again).
        summary.failed = (summary.stored_lines + 1, upto, store.discard_buffered())
        summary.error = error.cause or str(error)
        return False
    summary.stored_lines, summary.stored_pieces = upto, summary.taken
    return True
