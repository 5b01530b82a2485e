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
Issue 38, point 8: the query path keeps its FTS5 table per document, never serving a stale one.

The table of the candidates' texts is kept while they are the same texts (another copy of the
same file included) and built anew when the document changed: an entry reworded, added,
resolved or decayed below the threshold. Real files, read as memory_node and the CLI read them.
"""

import concurrent.futures
import datetime as dt

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.substrate import context_relevance
from robot_memory.substrate.context_relevance import forget_keyword_indexes
from robot_memory.substrate.context_relevance import keyword_index
from robot_memory.substrate.context_relevance import relevant_ids

T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)
TEXTS = {
    'e-door': 'kitchen doorway has a 3 cm lip',
    'e-dock': 'docking fails when the dock contacts are dusty',
    'e-wifi': 'wifi drops in the hallway near the lift',
}


def entry(entry_id, text, confidence=0.8, last_reinforced=T0, entry_type='environment_note'):
    return MemoryEntry(id=entry_id, type=entry_type, text=text, confidence=confidence,
                       first_seen=T0 - 10 * DAY, last_reinforced=last_reinforced,
                       observation_count=3)


def saved(path, entries):
    """Write the entries as robot-memory.md and return the document read back from it."""
    memory = MemoryFile(path)
    memory.save(MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries))
    return memory.load(T0, read_only=True).document


@pytest.fixture(autouse=True)
def fresh_cache():
    forget_keyword_indexes()
    yield
    forget_keyword_indexes()


def test_the_table_is_kept_for_the_same_texts_even_from_another_copy_of_the_file(tmp_path):
    path = tmp_path / 'robot-memory.md'
    first = saved(path, [entry(key, text) for key, text in TEXTS.items()])
    assert relevant_ids(first, 'the kitchen doorway', T0) == ['e-door']
    table = keyword_index(entry.text for entry in first.entries)
    # Read again (new objects, as the MCP tool and the CLI read it each call): the same table.
    again = MemoryFile(path).load(T0, read_only=True).document
    assert again is not first
    assert relevant_ids(again, 'the kitchen doorway', T0) == ['e-door']
    assert keyword_index(entry.text for entry in again.entries) is table


def test_a_changed_document_is_never_served_from_the_stale_table(tmp_path):
    path = tmp_path / 'robot-memory.md'
    before = saved(path, [entry(key, text) for key, text in TEXTS.items()])
    assert relevant_ids(before, 'kitchen doorway', T0) == ['e-door']
    stale = keyword_index(entry.text for entry in before.entries)
    # A person rewords the doorway entry and a dream adds one about the kitchen door: the
    # same number of entries in the same places would answer wrongly from the old table.
    changed = dict(TEXTS, **{'e-door': 'garage ramp is steep',
                             'e-wifi': 'kitchen doorway sensor misreads the lip'})
    after = saved(path, [entry(key, text) for key, text in changed.items()])
    assert relevant_ids(after, 'kitchen doorway', T0) == ['e-wifi']
    assert relevant_ids(after, 'garage ramp', T0) == ['e-door']
    assert keyword_index(entry.text for entry in after.entries) is not stale
    # Resolved: no longer a candidate, so not in the table the query reads.
    resolved = saved(path, [entry('e-door', 'kitchen doorway has a 3 cm lip',
                                  entry_type='resolved'),
                            entry('e-dock', TEXTS['e-dock'])])
    assert relevant_ids(resolved, 'kitchen doorway', T0) == []


def test_an_entry_decayed_below_the_threshold_leaves_the_table_at_once():
    old = T0 - 60 * DAY
    doc = MemoryDocument(rrn='RRN-000000000001', last_updated=T0,
                         entries=[entry('e-door', TEXTS['e-door'], 0.4, last_reinforced=old),
                                  entry('e-dock', TEXTS['e-dock'])])
    # At the time it was last reinforced it is a candidate; 60 days later decayed away.
    assert relevant_ids(doc, 'kitchen doorway', old) == ['e-door']
    assert relevant_ids(doc, 'kitchen doorway', T0) == []
    assert relevant_ids(doc, 'dock contacts', T0) == ['e-dock']


def test_the_cache_is_bounded_and_a_dropped_table_still_answers():
    documents = [[f'note {index} about the lidar', f'note {index} about the wheels']
                 for index in range(context_relevance._INDEX_CACHE_SIZE + 3)]
    tables = [keyword_index(texts) for texts in documents]
    assert len(context_relevance._indexes) == context_relevance._INDEX_CACHE_SIZE
    assert tables[0].closed and not tables[-1].closed
    # A caller that found the table just before another thread dropped it gets its answer.
    assert [rowid for rowid, _ in tables[0].search(['lidar'])] == [0]


def test_threads_asking_at_once_get_the_same_answers():
    docs = [MemoryDocument(rrn='RRN-000000000001', last_updated=T0,
                           entries=[entry(f'e-{index}-{key}', f'{text} {index}')
                                    for key, text in TEXTS.items()])
            for index in range(8)]

    def ask(index):
        return relevant_ids(docs[index % len(docs)], 'kitchen doorway', T0)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, range(200)))
    assert all(answer == [f'e-{index % len(docs)}-e-door']
               for index, answer in enumerate(answers))
