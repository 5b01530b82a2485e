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
How recall merges its keyword (BM25) and vector rankings into one relevance per record.

One ranking alone keeps its order: reciprocal rank, 1 / (60 + rank), as before. Both
together use relative score fusion (Weaviate's ``relativeScoreFusion``): each ranking's
scores are min-max normalised over its own candidates, a record missing from one counts 0
there, and relevance = ``vector_weight`` x vector + (1 - ``vector_weight``) x keyword.
Unlike reciprocal-rank fusion, a weak ranking cannot drag a strong one's clear winner down
to the middle, and the weight says how much the embedder is trusted: a semantic model
0.75 (Weaviate's default alpha), a lexical hashing embedder 0 (its vectors only fill
places the keywords left empty, since they know nothing BM25 does not).

A record the vectors cannot see (an encrypted record keeps no vector; one not embedded yet
by the current model) is no worse a match for that: it is judged by its keyword score
alone, so hybrid never ranks it below what its keywords earn.
"""

RRF_K = 60


def _normalised(ranking: list) -> dict:
    scores = [score for _, score in ranking]
    low, high = min(scores), max(scores)
    return {seq: (score - low) / (high - low) if high > low else 1.0 for seq, score in ranking}


def fuse(keyword: list, vector: list, vector_weight: float, unseen=frozenset()) -> dict:
    """
    {seq: [relevance, keyword rank, vector rank]}; rankings are (seq, score) best first.

    Keyword scores are BM25 (higher is better), vector scores cosines. ``unseen`` holds
    the seqs that have no vector to rank: their relevance is their keyword score alone.
    """
    fused = {}
    for rank, (seq, _) in enumerate(keyword):
        fused[seq] = [1.0 / (RRF_K + rank + 1), rank + 1, None]
    for rank, (seq, _) in enumerate(vector):
        entry = fused.setdefault(seq, [1.0 / (RRF_K + rank + 1), None, None])
        entry[2] = rank + 1
    if keyword and vector:
        lexical = _normalised(keyword)
        semantic = _normalised(vector)
        for seq, entry in fused.items():
            if seq in unseen:
                entry[0] = lexical.get(seq, 0.0)
                continue
            entry[0] = (vector_weight * semantic.get(seq, 0.0)
                        + (1.0 - vector_weight) * lexical.get(seq, 0.0))
    return fused


def order_key(seq: int, score: float, keyword_rank, vector_rank) -> tuple:
    """Sort key: higher score first, then the better keyword rank, vector rank, older record."""
    return (-score, keyword_rank or float('inf'), vector_rank or float('inf'), seq)
