"""How recall merges its keyword (BM25) and vector rankings into one score per record."""

RRF_K = 60


def fuse(keyword: list, vector: list) -> dict:
    """{seq: [score, keyword rank, vector rank]} of reciprocal-rank fusion (k = 60).

    ``keyword`` is seqs best first; ``vector`` is (seq, cosine) pairs best first.
    """
    fused = {}
    for rank, seq in enumerate(keyword):
        entry = fused.setdefault(seq, [0.0, None, None])
        entry[0] += 1.0 / (RRF_K + rank + 1)
        entry[1] = rank + 1
    for rank, (seq, _) in enumerate(vector):
        entry = fused.setdefault(seq, [0.0, None, None])
        entry[0] += 1.0 / (RRF_K + rank + 1)
        entry[2] = rank + 1
    return fused
