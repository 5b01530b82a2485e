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
Candidates for learn's near-duplicate check: the records that may share enough words.

A record whose token-set Jaccard with a new text reaches ``t`` shares at least
``m = ceil(t x |words|)`` of the new text's words, so it misses at most ``|words| - m`` of
them and holds at least one of any ``|words| - m + 1`` (prefix filtering, as in
set-similarity joins). Each word's FTS5 posting list is read up to ``PROBE`` rows: a list
that ends before that is complete and its word rare. With enough rare words, the union of
the rarest lists holds every possible duplicate, and a record is kept only when its rare
words plus every common one could still reach ``m``. Long posting lists (common words) are
never read in full, so the check costs the same at 100,000 records as at 1,000. A caller
may keep the words found common in a set and pass it again: a posting list only shortens
when records are deleted, and a rare word taken for common only widens the candidates, so
those words need no probe on the next learn.
Otherwise an FTS5 query asks for the records holding ``m`` of the words (an OR of ANDs),
or, when that query would be too long, the 20 best BM25 matches.
"""

import collections
import itertools
import math
from typing import Optional
import unicodedata

from robot_memory.substrate import textrules

# Posting rows read per word; a word with more is common.
PROBE = 256
# Beyond this many words the probes cost more than they save.
MAX_PROBED_WORDS = 48
# A set of known common words is cleared when it grows past this many.
MAX_COMMON_WORDS = 65_536


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def rare_word_candidates(conn, words: set, min_shared: int, probe: int = PROBE,
                         common_words: Optional[set] = None) -> Optional[list]:
    """
    Seqs of every record that may share ``min_shared`` of ``words``; None if too few are rare.

    ``common_words`` (kept by the caller between calls) holds the words found common so far:
    they are not probed again, and the ones found now are added.
    """
    min_shared = max(1, min_shared)
    missing = len(words) - min_shared
    if missing < 0:
        return []
    if len(words) > MAX_PROBED_WORDS:
        return None
    known = common_words if common_words is not None else set()
    postings, common = {}, 0
    for word in sorted(words):
        if word in known:
            common += 1
            continue
        # One string of rowids: far cheaper than a Python row per posting.
        listed = conn.execute(
            'SELECT group_concat(rowid) FROM (SELECT rowid FROM substrate_fts WHERE '
            'substrate_fts MATCH ? LIMIT ?)', (_quoted(word), probe + 1)).fetchone()[0]
        seqs = list(map(int, listed.split(','))) if listed else []
        if len(seqs) > probe:
            common += 1
            if common_words is not None:
                if len(common_words) >= MAX_COMMON_WORDS:
                    common_words.clear()
                common_words.add(word)
        else:
            postings[word] = seqs
    if len(postings) <= missing:
        return None
    rarest = sorted(postings, key=lambda word: len(postings[word]))[:missing + 1]
    hits = collections.Counter(itertools.chain.from_iterable(postings.values()))
    candidates = {seq for word in rarest for seq in postings[word]}
    return sorted(seq for seq in candidates if hits[seq] + common >= min_shared)


def similar_enough(conn, seqs: list, words: set, threshold: float) -> list:
    """
    Return the ``seqs`` whose stored text has a token Jaccard with ``words`` >= ``threshold``.

    Reads only each candidate's text (not the whole record), so a learn can weigh hundreds
    of candidates for the price of a few full rows. Sealed records (no plain text stored)
    are kept for the caller, which opens them.
    """
    shared = math.ceil(threshold * len(words) - 1e-9)
    kept = []
    for start in range(0, len(seqs), 500):
        chunk = seqs[start:start + 500]
        for seq, text, key_id in conn.execute(
                'SELECT seq, text, key_id FROM substrate_records WHERE seq IN '
                f'({", ".join("?" * len(chunk))})', chunk):
            if key_id is not None:
                kept.append(seq)
                continue
            # A token of the text is a substring of the folded text: too few words there
            # rules the record out before the (dearer) tokenising. ASCII text is its own
            # NFKC form and its casefold is its lower().
            folded = text.lower() if text.isascii() else \
                unicodedata.normalize('NFKC', text).casefold()
            if sum(map(folded.__contains__, words)) >= shared and \
                    textrules.jaccard(words, textrules.content_tokens(text)) >= threshold:
                kept.append(seq)
    return kept


def jaccard_candidates(conn, text: str, words: set, threshold: float,
                       common_words: Optional[set] = None) -> list:
    """Seqs of the records that may be Jaccard duplicates of ``text`` (content ``words``)."""
    return similar_enough(conn, _candidates(conn, text, words, threshold, common_words), words,
                          threshold)


def _candidates(conn, text: str, words: set, threshold: float, common_words=None) -> list:
    shared = math.ceil(threshold * len(words) - 1e-9)
    seqs = rare_word_candidates(conn, words, shared, common_words=common_words)
    if seqs is not None:
        return seqs
    # Jaccard >= t needs at least t x |words| shared words: ask FTS5 only for those
    # records (no BM25 over every record sharing one common word).
    query = textrules.overlap_query(words, shared)
    if query is not None:
        # Every match reaches the overlap, so any 50 will do (no ordering to pay for).
        return [seq for seq, in conn.execute(
            'SELECT rowid FROM substrate_fts WHERE substrate_fts MATCH ? LIMIT 50', (query,))]
    query = textrules.fts_query(text)
    if query is None:
        return []
    return [seq for seq, in conn.execute(
        'SELECT rowid FROM substrate_fts WHERE substrate_fts MATCH ? '
        'ORDER BY bm25(substrate_fts) LIMIT 20', (query,))]
