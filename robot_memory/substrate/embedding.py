"""Pluggable embedding backends for the substrate's optional vector search.

Vectors are off unless a backend is passed to ``Substrate(..., embedder=...)``. A backend
has a ``name``, a dimension ``dim`` and ``embed(texts)`` returning an L2-normalised
``float32`` matrix of shape ``(len(texts), dim)``. :class:`HashingEmbedder` is the local,
deterministic one shipped here: word unigrams, word bigrams and character trigrams hashed
(CRC-32, signed) into a fixed number of buckets. It downloads nothing, needs no model and
gives paraphrases that share words or word stems a positive cosine.
"""

import zlib
from typing import Protocol
from typing import Sequence

import numpy

from robot_memory.substrate.text import tokens


class Embedder(Protocol):
    """What the substrate needs of an embedding backend."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """L2-normalised float32 vectors, one row per text."""


class HashingEmbedder:
    """Feature hashing of words, word pairs and character trigrams into ``dim`` buckets."""

    def __init__(self, dim: int = 256, char_weight: float = 0.5, bigram_weight: float = 0.7):
        if not 16 <= dim <= 4096:
            raise ValueError(f'embedding dimension must be between 16 and 4096, got {dim}')
        self.dim = dim
        self.char_weight = char_weight
        self.bigram_weight = bigram_weight
        self.name = f'hashing-v1-{dim}'

    def _features(self, text: str):
        words = tokens(text)
        for word in words:
            yield 'w:' + word, 1.0
            padded = f'<{word}>'
            for start in range(len(padded) - 2):
                yield 'c:' + padded[start:start + 3], self.char_weight
        for left, right in zip(words, words[1:]):
            yield f'b:{left} {right}', self.bigram_weight

    def embed_one(self, text: str) -> numpy.ndarray:
        """The vector of one text."""
        vector = numpy.zeros(self.dim, dtype=numpy.float32)
        for feature, weight in self._features(text):
            code = zlib.crc32(feature.encode('utf-8'))
            vector[code % self.dim] += weight if code & 0x80000000 else -weight
        norm = float(numpy.linalg.norm(vector))
        if norm > 0.0:
            vector /= norm
        return vector

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        if not texts:
            return numpy.zeros((0, self.dim), dtype=numpy.float32)
        return numpy.stack([self.embed_one(text) for text in texts])
