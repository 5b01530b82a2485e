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
Issue 38, point 4: a query for the task at hand lifts the relevant entries to the front.

Relevance is the substrate's hybrid recall (keywords with its stemming tokenizer, vectors
when an embedder is given, decayed confidence); red lines are never dropped for it; without a
query the block is the same, by the scan and by the index.
"""

import datetime as dt

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.context import build_context
from robot_memory.rcan.context import ContextIndex
from robot_memory.rcan.context import estimate_tokens
from robot_memory.rcan.context import summary
from robot_memory.rcan.context_fill import LEFT_OUT_RESERVE
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.substrate.context_relevance import check_query
from robot_memory.substrate.context_relevance import relevant_ids
from robot_memory.substrate.embedding import HashingEmbedder
from robot_memory.substrate.errors import SubstrateError

T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)
TEXTS = {
    'e-red-1': (0.95, 'lidar reports stale scans after a reboot'),
    'e-red-2': (0.9, 'cpu load high during mapping'),
    'e-dock': (0.6, 'docking fails when the dock contacts are dusty'),
    'e-speed': (0.55, 'wheel_left encoder drops ticks at speeds above 0.45 m/s; prefer speeds '
                      '≤ 0.3 m/s'),
    'e-door': (0.5, 'kitchen doorway has a 3 cm lip'),
    'e-cam': (0.45, 'camera exposure hunts in bright sun'),
    'e-wifi': (0.4, 'wifi drops in the hallway near the lift'),
}


def entry(entry_id, confidence, text):
    return MemoryEntry(id=entry_id, type='hardware_observation', text=text,
                       confidence=confidence, first_seen=T0 - 10 * DAY, last_reinforced=T0,
                       observation_count=3)


def document():
    return MemoryDocument(rrn='RRN-000000000001', last_updated=T0,
                          entries=[entry(key, *value) for key, value in TEXTS.items()])


def ids(block):
    return [item.entry.id for item in block.entries]


def test_keywords_find_the_entries_of_the_task_stems_included():
    doc = document()
    assert relevant_ids(doc, 'drive fast to the kitchen', T0) == ['e-door']
    # "speed" finds "speeds": the substrate's Porter tokenizer.
    assert relevant_ids(doc, 'what speed is safe for the wheels?', T0)[0] == 'e-speed'
    assert relevant_ids(doc, 'go and dock to charge', T0)[0] == 'e-dock'
    assert relevant_ids(doc, 'unrelated words only', T0) == []
    assert relevant_ids(doc, '   ', T0) == [] and relevant_ids(doc, '?!', T0) == []


def test_relevance_is_weighed_by_decayed_confidence_as_recall_weighs_it():
    doc = document()
    # Both match; as in typed recall, 1/(60 + rank) x (0.5 + 0.5 x confidence): the 95%
    # lidar entry (one word) comes before the 40% wifi entry (two words).
    assert relevant_ids(doc, 'wifi hallway lidar', T0) == ['e-red-1', 'e-wifi']
    later = T0 + 40 * DAY  # decayed: the lidar entry is below the threshold, not a candidate
    assert 'e-red-1' not in relevant_ids(doc, 'wifi hallway lidar', later)


def test_vectors_fill_where_the_keywords_find_nothing():
    doc = document()
    # "doorways" is stemmed by FTS5; a typo is not, but character trigrams see it.
    assert relevant_ids(doc, 'kitchn doorwy', T0) == []
    assert 'e-door' in relevant_ids(doc, 'kitchn doorwy', T0, embedder=HashingEmbedder())


def test_a_query_is_checked():
    assert check_query(None) == '' and check_query('  dock  ') == 'dock'
    with pytest.raises(SubstrateError, match='limit is 4000'):
        check_query('x' * 4001)
    with pytest.raises(SubstrateError, match='must be text'):
        check_query(42)
    # bytes that were not UTF-8 on a command line arrive as lone surrogates: the tokenizer
    # raised TypeError on them (a traceback from show --query, an MCP tool error)
    assert check_query('wheel \udcff\ud800') == 'wheel \ufffd\ufffd'
    doc = document()
    assert relevant_ids(doc, 'kitchen \udcff', T0) == ['e-door']
    assert 'e-door' in relevant_ids(doc, 'kitchn doorwy \udcff', T0, embedder=HashingEmbedder())


def test_without_a_query_nothing_changes():
    doc = document()
    plain = build_context(doc, T0, token_budget=60)
    assert build_context(doc, T0, token_budget=60, relevant=[]).text == plain.text
    assert build_context(doc, T0, token_budget=60,
                         relevant=relevant_ids(doc, '', T0)).text == plain.text
    assert plain.relevant == [] and 'query' not in summary(plain)


@pytest.mark.parametrize('indexed', [False, True])
def test_relevant_entries_lead_and_are_named(indexed):
    doc = document()
    index = ContextIndex(doc) if indexed else None
    chosen = relevant_ids(doc, 'cross the kitchen doorway then dock', T0)
    assert chosen[:2] == ['e-door', 'e-dock'] or chosen[:2] == ['e-dock', 'e-door']
    block = build_context(doc, T0, token_budget=1000, relevant=chosen, index=index)
    assert ids(block)[:len(chosen)] == chosen
    assert [item.entry.id for item in block.relevant] == chosen
    assert f'{len(chosen)} chosen for the query ({", ".join(chosen)})' in summary(block)
    # The rest keeps its rank order, nothing lost.
    assert sorted(ids(block)) == sorted(TEXTS)
    rest = [key for key in ids(block) if key not in chosen]
    assert rest == [key for key in ids(build_context(doc, T0, token_budget=1000))
                    if key not in chosen]


@pytest.mark.parametrize('indexed', [False, True])
def test_red_entries_are_never_dropped_for_relevance(indexed):
    doc = document()
    index = ContextIndex(doc) if indexed else None
    plain = build_context(doc, T0, token_budget=1000)
    red_lines = plain.text.split('\n')[1:3]
    assert all(line.startswith('🔴') for line in red_lines)
    # Room for the header, both red lines and about one more short line (and the room kept
    # for the line that says what the budget left out).
    budget = (estimate_tokens(plain.text.split('\n')[0]) + 1
              + sum(estimate_tokens(line) + 1 for line in red_lines) + 12 + LEFT_OUT_RESERVE)
    block = build_context(doc, T0, token_budget=budget, index=index,
                          relevant=['e-speed', 'e-door', 'e-cam'])
    assert {'e-red-1', 'e-red-2'} <= set(ids(block))
    # The long speed line does not fit beside the red ones; the short doorway line does.
    assert [item.entry.id for item in block.relevant] == ['e-door']
    assert ids(block)[0] == 'e-door'


def test_a_relevant_red_entry_leads_too_and_unknown_or_resolved_ids_are_ignored():
    doc = document()
    doc.entries.append(MemoryEntry(id='e-old', type='resolved', text='kitchen lip fixed',
                                   confidence=0.9, first_seen=T0 - DAY, last_reinforced=T0,
                                   observation_count=1))
    block = build_context(doc, T0, token_budget=1000,
                          relevant=['e-red-2', 'no-such', 'e-old', 'e-wifi'])
    assert ids(block)[:2] == ['e-red-2', 'e-wifi']
    assert 'e-old' not in ids(block)
