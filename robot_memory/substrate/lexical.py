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
The FTS5 queries of recall's keyword side, asked in turn until enough records are found.

Records holding every word of the query come first, then those holding all words but one,
then all but two, and so on; each pass is ranked by BM25. A record holding exactly ``m``
of the words matches exactly one clause of the ``m``-of-``n`` query (an OR of ANDs), so its
BM25 there equals its BM25 under the plain OR of the words: the scores of all passes are
on one scale. An OR of every word makes FTS5 score every record holding any one of them
(14,000 of 100,000 robot memories for a three-word query, about 18 ms of CPU); the
all-but-one pass scores the few hundred that hold two of three (about 4 ms), and the
common case needs no further pass. The plain OR remains the last pass, and the only one
once an ``m``-of-``n`` query would take too many clauses.
"""

from robot_memory.substrate import textrules


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def keyword_passes(query: str) -> list:
    """Return the FTS5 queries for ``query``: every word, all but one, ..., any word."""
    terms = textrules.query_terms(query)
    if not terms:
        return []
    any_word = ' OR '.join(_quoted(word) for word in terms)
    if len(terms) == 1:
        return [any_word]
    passes = [' AND '.join(_quoted(word) for word in terms)]
    for shared in range(len(terms) - 1, 1, -1):
        overlap = textrules.overlap_query(set(terms), shared)
        if overlap is None:
            break
        passes.append(overlap)
    passes.append(any_word)
    return passes
