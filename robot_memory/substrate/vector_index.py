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

Vectors are kept as int8 codes with one float scale per row (a quarter of float32's
memory; cosines move by about 0.003). Up to ``EXACT_LIMIT`` live rows every search scans
them all. Beyond it a search first ranks every row by a ``SKETCH_DIM``-dimensional sketch
(the rows projected on the principal directions of the stored vectors, computed at the
full load) and re-ranks the best ``POOL_PER_HIT`` x count (at least ``MIN_POOL``) by the
int8 vectors: a third of the memory read of a full scan. On MiniLM vectors of 20,000
robot memories it returns 99 % of the exact top 10.

Learn's near-duplicate check (:meth:`VectorIndex.near`) asks another question: every row
within a cosine threshold. Each row also keeps a ``SIGN_BITS``-bit signature, one bit per
random hyperplane (which side of it the vector lies). Two vectors at angle a differ in
each bit with probability a / pi, so a row at the threshold differs in about a tenth of
the bits (cosine 0.95) and is missed only when, by the draw of the hyperplanes, it differs
in more than :func:`sign_cutoff` of them: a chance under ``SIGN_MISS``. Counting differing
bits reads 32 bytes a row (a twelfth of the int8 vectors, a sixteenth of the sketch), and
only the rows within the cutoff are scored by their int8 vectors.
"""

from __future__ import annotations

import functools
import math
from typing import Optional

import numpy

from robot_memory.substrate.record_tables import LIVE_SQL as _LIVE_SQL

# Keep this many change rows; a reader that fell further behind reloads everything.
KEEP_CHANGES = 20_000
# Beyond this many changed records a full reload is cheaper than patching one by one.
PATCH_LIMIT = 5_000
# Dropped rows are compacted away once there are more than this many and a quarter.
COMPACT_AFTER = 1_024
# Up to this many rows a search is exact; beyond it the sketch pass picks the rows to score.
EXACT_LIMIT = 20_000
SKETCH_DIM = 128
# The sketch's principal directions come from at most this many rows.
SKETCH_SAMPLE = 8_192
MIN_POOL = 500
POOL_PER_HIT = 25
# Bits of a row's signature (random hyperplanes), the seed of the hyperplanes, and the
# chance that a row at the near-duplicate threshold has more differing bits than the cutoff.
SIGN_BITS = 256
SIGN_SEED = 20_260_501
SIGN_MISS = 1e-9
# Rows converted from int8 to float32 at once, and rows of a storage block.
CHUNK = 8_192
# Rows read from the database and converted at once by a full load: a small batch keeps the
# temporary buffers (and the heap they leave behind) small.
LOAD_ROWS = 1_024


# Two subqueries: SQLite reads max() or min() of a key from the b-tree's end only when it
# is the query's single aggregate; both in one SELECT scan the whole change log.
_ENDS_SQL = ('SELECT (SELECT max(change) FROM substrate_vector_changes), '
             '(SELECT min(change) FROM substrate_vector_changes)')


def trim_changes(conn) -> None:
    """Drop change rows older than the newest ``KEEP_CHANGES`` (call inside a write)."""
    latest, oldest = conn.execute(_ENDS_SQL).fetchone()
    if latest is not None and latest - oldest >= 2 * KEEP_CHANGES:
        conn.execute('DELETE FROM substrate_vector_changes WHERE change <= ?',
                     (latest - KEEP_CHANGES,))


class _Blocks:
    """
    A matrix that grows by whole blocks of ``CHUNK`` rows: growing never copies.

    One array resized by a quarter would need the old and the new copy at once (90 MB
    more at 100,000 MiniLM rows, exactly when a learn appends one vector).
    """

    def __init__(self, width: int, dtype, rows: int = 0):
        self.width = width
        self.dtype = dtype
        self.blocks: list = []
        self.reserve(rows)

    def __len__(self) -> int:
        return len(self.blocks) * CHUNK

    def reserve(self, rows: int) -> None:
        """Add blocks until ``rows`` rows fit."""
        while len(self) < rows:
            self.blocks.append(numpy.zeros((CHUNK, self.width), dtype=self.dtype))

    def _split(self, rows):
        """Yield (block, rows within it, positions in ``rows``) for an index array."""
        which = rows // CHUNK
        if not len(rows):
            return
        if which[0] == which[-1] and (which == which[0]).all():
            yield int(which[0]), rows - int(which[0]) * CHUNK, slice(None)
            return
        for block in numpy.unique(which):
            where = which == block
            yield int(block), rows[where] - int(block) * CHUNK, where

    def __getitem__(self, rows):
        """Rows of an index array, or of a slice (a view when it lies in one block)."""
        if isinstance(rows, slice):
            start, stop, _ = rows.indices(len(self))
            if stop > start and start // CHUNK == (stop - 1) // CHUNK:
                base = (start // CHUNK) * CHUNK
                return self.blocks[start // CHUNK][start - base:stop - base]
            rows = numpy.arange(start, stop)
        rows = numpy.asarray(rows, dtype=numpy.int64)
        out = numpy.empty((len(rows), self.width), dtype=self.dtype)
        for block, local, where in self._split(rows):
            out[where] = self.blocks[block][local]
        return out

    def __setitem__(self, rows, values) -> None:
        rows = numpy.atleast_1d(numpy.asarray(rows, dtype=numpy.int64))
        values = numpy.broadcast_to(values, (len(rows), self.width))
        for block, local, where in self._split(rows):
            self.blocks[block][local] = values[where]

    def product(self, count: int, vector):
        """Return the first ``count`` rows times ``vector``, block by block."""
        return numpy.concatenate([
            _times(self.blocks[start // CHUNK][:min(CHUNK, count - start)], vector)
            for start in range(0, count, CHUNK)])


def _times(matrix, vector):
    """
    Return ``matrix @ vector`` on this thread.

    A matrix-vector product is memory-bound: BLAS threads gain nothing on it, and on a
    busy CPU (a robot's, or a test machine's) waking them costs several times the product.
    """
    return numpy.einsum('ij,j->i', matrix, vector)


@functools.lru_cache(maxsize=64)
def sign_cutoff(threshold: float, bits: int = SIGN_BITS, miss: float = SIGN_MISS) -> int:
    """
    Return the most differing signature bits a row at cosine ``threshold`` is allowed.

    Each of ``bits`` random hyperplanes separates two vectors at angle a with probability
    a / pi; the cutoff is the least count that more bits exceed with a chance under
    ``miss`` (a binomial tail). The angle is taken 0.01 of cosine wider than ``threshold``:
    the rows are scored by int8 vectors, whose cosines move by about 0.003.
    """
    cosine = min(1.0, max(-1.0, threshold - 0.01))
    chance = math.acos(cosine) / math.pi
    tail = 1.0
    for count in range(bits + 1):
        tail -= math.comb(bits, count) * chance ** count * (1.0 - chance) ** (bits - count)
        if tail < miss:
            return count
    return bits


def _popcount(words):
    """Return the set bits of each uint64 of ``words`` (numpy < 2 has no bitwise_count)."""
    if hasattr(numpy, 'bitwise_count'):
        return numpy.bitwise_count(words)
    words = words - ((words >> numpy.uint64(1)) & numpy.uint64(0x5555555555555555))
    words = (words & numpy.uint64(0x3333333333333333)) + \
        ((words >> numpy.uint64(2)) & numpy.uint64(0x3333333333333333))
    words = (words + (words >> numpy.uint64(4))) & numpy.uint64(0x0F0F0F0F0F0F0F0F)
    return ((words * numpy.uint64(0x0101010101010101)) >> numpy.uint64(56)).astype(numpy.uint8)


class VectorIndex:
    """The (seq, vector) rows of the live records embedded by one model, in memory."""

    def __init__(self, model: str, dim: int):
        self.model = model
        self.dim = dim
        self.cursor: Optional[int] = None
        self.full_loads = 0
        self.patches = 0
        self._planes: Optional[numpy.ndarray] = None
        self._reset(0)

    def _reset(self, capacity: int) -> None:
        capacity = max(capacity, 16)
        self.count = 0
        self.seqs = numpy.zeros(capacity, dtype=numpy.int64)
        self.codes = _Blocks(self.dim, numpy.int8, capacity)
        self.scales = numpy.zeros(capacity, dtype=numpy.float32)
        self.basis: Optional[numpy.ndarray] = None
        self.sketch: Optional[_Blocks] = None
        # Signature words (SIGN_BITS / 64 arrays of uint64), made by the first near().
        self.signs: Optional[list[numpy.ndarray]] = None
        self.position: dict[int, int] = {}
        self.dead = 0

    def __len__(self) -> int:
        return self.count - self.dead

    def missing(self, seqs) -> frozenset:
        """Return those of ``seqs`` that have no vector here (encrypted, or not embedded)."""
        return frozenset(seq for seq in seqs
                         if seq not in self.position or self.seqs[self.position[seq]] < 0)

    def _grow(self, needed: int) -> None:
        if needed <= len(self.seqs):
            return
        capacity = max(needed, int(len(self.seqs) * 1.25) + 16)
        # Only the small per-row arrays are copied; the matrices add blocks.
        self.seqs.resize(capacity, refcheck=False)
        self.scales.resize(capacity, refcheck=False)
        self.codes.reserve(capacity)
        if self.sketch is not None:
            self.sketch.reserve(capacity)
        for word in self.signs or ():
            word.resize(capacity, refcheck=False)

    def _store(self, rows, vectors) -> None:
        """Quantise float32 ``vectors`` into ``rows`` (and their sketch when there is one)."""
        peak = numpy.abs(vectors).max(axis=1)
        scales = numpy.where(peak > 0, peak / 127.0, 1.0).astype(numpy.float32)
        self.codes[rows] = numpy.rint(vectors / scales[:, None]).astype(numpy.int8)
        self.scales[rows] = scales
        if self.sketch is not None:
            self.sketch[rows] = self._vectors(rows) @ self.basis
        if self.signs is not None:
            self._sign(rows)

    def _signature(self, vectors):
        """Return the signatures of float32 ``vectors``: one row of uint64 words per vector."""
        if self._planes is None:
            self._planes = numpy.random.default_rng(SIGN_SEED).standard_normal(
                (self.dim, SIGN_BITS)).astype(numpy.float32)
        return numpy.packbits(vectors @ self._planes > 0, axis=1).view(numpy.uint64)

    def _sign(self, rows) -> None:
        """Store the signatures of the stored vectors of ``rows`` (an index array)."""
        codes = self._signature(self._vectors(rows))
        assert self.signs is not None  # made by _build_signs before the first signature
        for number, word in enumerate(self.signs):
            word[rows] = codes[:, number]

    def _build_signs(self) -> None:
        self.signs = [numpy.zeros(len(self.seqs), dtype=numpy.uint64)
                      for _ in range(SIGN_BITS // 64)]
        for start in range(0, self.count, LOAD_ROWS):
            self._sign(numpy.arange(start, min(self.count, start + LOAD_ROWS)))

    def _vectors(self, rows):
        """Return the stored (dequantised) float32 vectors of ``rows``."""
        return self.codes[rows].astype(numpy.float32) * self.scales[rows, None]

    def _put(self, seq: int, blob: bytes) -> None:
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
        self._store(numpy.array([row]), vector[None, :])

    def _drop(self, seq: int) -> None:
        row = self.position.get(seq)
        if row is None or self.seqs[row] < 0:
            return
        self.seqs[row] = -1
        self.codes[row] = 0
        if self.sketch is not None:
            self.sketch[row] = 0.0
        self.dead += 1

    def _load_all(self, conn) -> None:
        live = conn.execute(
            'SELECT count(*) FROM substrate_records WHERE embedding IS NOT NULL AND '
            f'embedding_model = ? AND status IN {_LIVE_SQL}', (self.model,)).fetchone()[0]
        self._reset(live + 64)
        width = self.dim * 4
        seqs, blobs = [], []
        rows = conn.execute(
            'SELECT seq, embedding FROM substrate_records WHERE embedding IS NOT NULL AND '
            f'embedding_model = ? AND status IN {_LIVE_SQL} ORDER BY seq', (self.model,))
        for seq, blob in rows:
            if len(blob) == width:
                seqs.append(seq)
                blobs.append(blob)
            if len(seqs) == LOAD_ROWS:
                self._append(seqs, blobs)
                seqs, blobs = [], []
        if seqs:
            self._append(seqs, blobs)
        if self.count > EXACT_LIMIT:
            self._build_sketch()
        self.full_loads += 1

    def _append(self, seqs: list, blobs: list) -> None:
        vectors = numpy.frombuffer(b''.join(blobs), dtype=numpy.float32).reshape(-1, self.dim)
        self._grow(self.count + len(seqs))
        rows = numpy.arange(self.count, self.count + len(seqs))
        self.seqs[rows] = seqs
        self.position.update(zip(seqs, rows.tolist()))
        self.count += len(seqs)
        self._store(rows, vectors)

    def _build_sketch(self) -> None:
        """Project every row on the principal directions of a sample of the stored vectors."""
        live = numpy.flatnonzero(self.seqs[:self.count] >= 0)
        step = max(1, len(live) // SKETCH_SAMPLE)
        sample = self._vectors(live[::step])
        # Uncentred: the sketch keeps dot products, not distances from the mean.
        _, directions = numpy.linalg.eigh(sample.T @ sample)
        self.basis = numpy.ascontiguousarray(directions[:, ::-1][:, :SKETCH_DIM],
                                             dtype=numpy.float32)
        self.sketch = _Blocks(self.basis.shape[1], numpy.float32, len(self.seqs))
        for start in range(0, self.count, LOAD_ROWS):
            rows = numpy.arange(start, min(self.count, start + LOAD_ROWS))
            self.sketch[rows] = self._vectors(rows) @ self.basis

    def _compact(self) -> None:
        live = numpy.flatnonzero(self.seqs[:self.count] >= 0)
        codes = _Blocks(self.dim, numpy.int8, len(live) + 16)
        sketch = None if self.sketch is None else \
            _Blocks(self.sketch.width, numpy.float32, len(live) + 16)
        for start in range(0, len(live), LOAD_ROWS):
            rows = numpy.arange(start, min(len(live), start + LOAD_ROWS))
            codes[rows] = self.codes[live[rows]]
            if sketch is not None and self.sketch is not None:  # both or neither
                sketch[rows] = self.sketch[live[rows]]
        self.codes, self.sketch = codes, sketch
        if self.signs is not None:
            self.signs = [word[live].copy() for word in self.signs]
            for word in self.signs:
                word.resize(len(codes), refcheck=False)
        self.seqs = self.seqs[live].copy()
        self.scales = self.scales[live].copy()
        self.seqs.resize(len(codes), refcheck=False)
        self.scales.resize(len(codes), refcheck=False)
        self.count = len(live)
        self.dead = 0
        self.position = {int(seq): row for row, seq in enumerate(self.seqs)}

    def refresh(self, conn) -> None:
        """Apply the changes made (by any process) since the last refresh."""
        latest, oldest = conn.execute(_ENDS_SQL).fetchone()
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
            if self.dead > COMPACT_AFTER and self.dead * 4 > self.count:
                self._compact()
            if self.sketch is None and len(self) > EXACT_LIMIT:
                self._build_sketch()
        self.cursor = latest

    def _scores(self, rows, vector):
        """Cosines of ``vector`` with the stored rows ``rows`` (a slice or an index array)."""
        return _times(self.codes[rows].astype(numpy.float32), vector) * self.scales[rows]

    def search(self, vector: numpy.ndarray, count: int) -> list:
        """Return the ``count`` most similar live (seq, cosine) pairs, best first."""
        if not len(self):
            return []
        vector = numpy.asarray(vector, dtype=numpy.float32)
        pool = max(MIN_POOL, POOL_PER_HIT * count)
        if self.sketch is None or self.count <= pool:
            rows = numpy.arange(self.count)
            sims = numpy.concatenate([
                self._scores(slice(start, min(self.count, start + CHUNK)), vector)
                for start in range(0, self.count, CHUNK)])
        else:
            coarse = self.sketch.product(self.count, vector @ self.basis)
            rows = numpy.argpartition(-coarse, pool - 1)[:pool]
            sims = self._scores(rows, vector)
        live = self.seqs[rows] >= 0
        rows, sims = rows[live], sims[live]
        count = min(len(rows), count)
        if not count:
            return []
        top = numpy.argpartition(-sims, count - 1)[:count]
        top = top[numpy.argsort(-sims[top], kind='stable')]
        return [(int(self.seqs[rows[index]]), float(sims[index])) for index in top]

    def near(self, vector: numpy.ndarray, threshold: float, count: int = 10) -> list:
        """
        Return up to ``count`` live (seq, cosine) pairs at cosine >= ``threshold``, best first.

        Rows are scored by their int8 vectors, as in :meth:`search`, but only those whose
        signature differs from the vector's in at most :func:`sign_cutoff` bits.
        """
        if not len(self):
            return []
        vector = numpy.asarray(vector, dtype=numpy.float32)
        if self.signs is None:
            self._build_signs()
        code = self._signature(vector[None, :])[0]
        distance = numpy.zeros(self.count, dtype=numpy.uint16)
        assert self.signs is not None  # built above
        for number, word in enumerate(self.signs):
            distance += _popcount(word[:self.count] ^ code[number])
        rows = numpy.flatnonzero(distance <= sign_cutoff(float(threshold)))
        rows = rows[self.seqs[rows] >= 0]
        if not len(rows):
            return []
        sims = self._scores(rows, vector)
        close = sims >= threshold
        rows, sims = rows[close], sims[close]
        order = numpy.argsort(-sims, kind='stable')[:count]
        return [(int(self.seqs[rows[index]]), float(sims[index])) for index in order]
