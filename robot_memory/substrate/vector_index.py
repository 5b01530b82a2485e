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
The in-memory matrix of the live records' vectors, kept up to date incrementally.

Triggers on ``substrate_records`` (migration ``0004_vector_change_log``) append the ``seq``
of every record whose vector or live status changes to ``substrate_vector_changes``, in
whichever process made the change. :class:`VectorIndex` remembers the last change it
applied; :meth:`VectorIndex.refresh` reads only the newer changes (one indexed query when
nothing changed) and patches its matrix: a learned record is appended, an archived,
superseded or deleted one is dropped, a re-embedded one is overwritten. Writes that touch
no vector (the recall log, access counts, salience) cost nothing. The whole matrix is read
again only on first use, after many changes at once, or when the change log was trimmed
past this reader's position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where a vector is made, not at start-up
    import numpy

# Keep this many change rows; a reader that fell further behind reloads everything.
KEEP_CHANGES = 20_000
# Beyond this many changed records a full reload is cheaper than patching one by one.
PATCH_LIMIT = 5_000
_LIVE_SQL = "('active', 'contested')"
TRIGGERS = (
    'CREATE TABLE IF NOT EXISTS substrate_vector_changes (change INTEGER PRIMARY KEY '
    'AUTOINCREMENT, seq INTEGER NOT NULL)',
    'CREATE TRIGGER IF NOT EXISTS substrate_vector_insert AFTER INSERT ON substrate_records '
    'WHEN new.embedding IS NOT NULL BEGIN '
    'INSERT INTO substrate_vector_changes (seq) VALUES (new.seq); END',
    'CREATE TRIGGER IF NOT EXISTS substrate_vector_update AFTER UPDATE OF status, embedding, '
    'embedding_model ON substrate_records WHEN '
    f'(old.status IN {_LIVE_SQL}) IS NOT (new.status IN {_LIVE_SQL}) OR '
    'old.embedding IS NOT new.embedding OR old.embedding_model IS NOT new.embedding_model '
    'BEGIN INSERT INTO substrate_vector_changes (seq) VALUES (new.seq); END',
    'CREATE TRIGGER IF NOT EXISTS substrate_vector_delete AFTER DELETE ON substrate_records '
    'WHEN old.embedding IS NOT NULL BEGIN '
    'INSERT INTO substrate_vector_changes (seq) VALUES (old.seq); END',
)


def trim_changes(conn) -> None:
    """Drop change rows older than the newest ``KEEP_CHANGES`` (call inside a write)."""
    latest, oldest = conn.execute(
        'SELECT max(change), min(change) FROM substrate_vector_changes').fetchone()
    if latest is not None and latest - oldest >= 2 * KEEP_CHANGES:
        conn.execute('DELETE FROM substrate_vector_changes WHERE change <= ?',
                     (latest - KEEP_CHANGES,))


class VectorIndex:
    """The (seq, vector) rows of the live records embedded by one model, in memory."""

    def __init__(self, model: str, dim: int):
        self.model = model
        self.dim = dim
        self.cursor = None
        self.full_loads = 0
        self.patches = 0
        self._reset(0)

    def _reset(self, capacity: int) -> None:
        import numpy
        self.count = 0
        self.seqs = numpy.zeros(max(capacity, 16), dtype=numpy.int64)
        self.matrix = numpy.zeros((max(capacity, 16), self.dim), dtype=numpy.float32)
        self.position = {}
        self.dead = 0

    def __len__(self) -> int:
        return self.count - self.dead

    def _grow(self, needed: int) -> None:
        if needed <= len(self.seqs):
            return
        capacity = max(needed, int(len(self.seqs) * 1.25) + 16)
        # In-place resize: for large arrays realloc moves pages instead of copying them.
        self.seqs.resize(capacity, refcheck=False)
        self.matrix.resize((capacity, self.dim), refcheck=False)

    def _put(self, seq: int, blob: bytes) -> None:
        import numpy
        vector = numpy.frombuffer(blob, dtype=numpy.float32)
        if vector.shape[0] != self.dim:
            return
        row = self.position.get(seq)
        if row is None:
            self._grow(self.count + 1)
            row = self.count
            self.count += 1
            self.seqs[row] = seq
            self.position[seq] = row
        elif self.seqs[row] < 0:
            self.seqs[row] = seq
            self.dead -= 1
        self.matrix[row] = vector

    def _drop(self, seq: int) -> None:
        row = self.position.get(seq)
        if row is None or self.seqs[row] < 0:
            return
        self.seqs[row] = -1
        self.matrix[row] = 0.0
        self.dead += 1

    def _load_all(self, conn) -> None:
        live = conn.execute(
            'SELECT count(*) FROM substrate_records WHERE embedding IS NOT NULL AND '
            f'embedding_model = ? AND status IN {_LIVE_SQL}', (self.model,)).fetchone()[0]
        self._reset(live + 64)
        for seq, blob in conn.execute(
                'SELECT seq, embedding FROM substrate_records WHERE embedding IS NOT NULL AND '
                f'embedding_model = ? AND status IN {_LIVE_SQL} ORDER BY seq', (self.model,)):
            self._put(seq, blob)
        self.full_loads += 1

    def _compact(self) -> None:
        keep = self.seqs[:self.count] >= 0
        seqs = self.seqs[:self.count][keep].copy()
        matrix = self.matrix[:self.count][keep].copy()
        self.seqs, self.matrix = seqs, matrix
        self.count = len(seqs)
        self.dead = 0
        self.position = {int(seq): row for row, seq in enumerate(seqs)}

    def refresh(self, conn) -> None:
        """Apply the changes made (by any process) since the last refresh."""
        latest, oldest = conn.execute(
            'SELECT max(change), min(change) FROM substrate_vector_changes').fetchone()
        latest = latest or 0
        if self.cursor == latest:
            return
        behind = self.cursor is None or (oldest is not None and self.cursor < oldest - 1) \
            or self.cursor > latest
        changed = [] if behind else [seq for seq, in conn.execute(
            'SELECT DISTINCT seq FROM substrate_vector_changes WHERE change > ? AND change <= ?',
            (self.cursor, latest))]
        if behind or len(changed) > PATCH_LIMIT:
            self._load_all(conn)
        else:
            found = {}
            for start in range(0, len(changed), 500):
                chunk = changed[start:start + 500]
                found.update(conn.execute(
                    'SELECT seq, embedding FROM substrate_records WHERE embedding IS NOT NULL '
                    f'AND embedding_model = ? AND status IN {_LIVE_SQL} AND seq IN '
                    f'({", ".join("?" * len(chunk))})', (self.model, *chunk)).fetchall())
            for seq in changed:
                if seq in found:
                    self._put(seq, found[seq])
                else:
                    self._drop(seq)
            self.patches += 1
            if self.dead > 1024 and self.dead * 4 > self.count:
                self._compact()
        self.cursor = latest

    def search(self, vector: numpy.ndarray, count: int) -> list:
        """Return the ``count`` most similar live (seq, cosine) pairs, best first."""
        import numpy
        if not len(self):
            return []
        sims = self.matrix[:self.count] @ vector
        count = min(self.count, count)
        top = numpy.argpartition(-sims, count - 1)[:count]
        top = top[numpy.argsort(-sims[top], kind='stable')]
        return [(int(self.seqs[index]), float(sims[index])) for index in top
                if self.seqs[index] >= 0]
