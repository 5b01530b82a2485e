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
The indexed context block is the scan's block exactly, for any document, time and budget.

``build_context(..., index=ContextIndex(document, config))`` walks entries in the
decay-invariant order ``K = c + r × days(since)`` and stops early; ``build_context_scan``
decays and sorts every entry. Every field of the block (text, shown entries with their
effective confidences and lines, peer entries, omitted count, token estimate) must be
equal. The strategies aim at the places where an index could go wrong: ties in
confidence and in time, keys equal up to float noise, entries stamped after ``now``,
decay to exactly 0, thresholds hit exactly, resolved entries, peers without timing, a
rate of 0, budgets from nothing to everything, multi-byte text.
"""

import datetime as dt

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.context import build_context
from robot_memory.rcan.context import build_context_scan
from robot_memory.rcan.context import ContextIndex
from robot_memory.rcan.document_cache import DocumentCache
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import PeerBlock
from robot_memory.rcan.schema import PeerEntry
from robot_memory.rcan.untrusted import HEADER

T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)
HEAD = HEADER + '\n'  # every non-empty block opens with it (issue 38, point 6)

# Offsets from T0 in hours: whole days (ties after decay), fractions, the future, far past.
OFFSETS = st.one_of(
    st.sampled_from([0, -24, -48, -72, -120, -240, 24, 1, -1, -12, -36, -0.5, -24 * 400]),
    st.floats(-24 * 60, 24 * 3, allow_nan=False),
)
CONFIDENCES = st.one_of(
    st.sampled_from([0.0, 0.1, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.8, 0.85, 0.9, 1.0,
                     0.575, 0.285, 0.30000000001, 0.2999999999]),
    st.floats(0.0, 1.0, allow_nan=False),
)
TEXTS = st.one_of(
    st.sampled_from(['a', 'left wheel', 'x' * 40, 'kitchen doorway lip 3 cm', '🔴🔴 emoji',
                     'ünïcödé text', 'y' * 200]),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x2fff,
                                   blacklist_categories=('Cs', 'Zl', 'Zp', 'Cc')),
            min_size=1, max_size=60).filter(lambda text: text.strip()),
)
TYPES = st.sampled_from(['hardware_observation', 'environment_note', 'behavior_pattern',
                         'resolved'])


def at(hours: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=hours)


@st.composite
def own_entries(draw, max_size=40):
    count = draw(st.integers(0, max_size))
    entries = []
    for index in range(count):
        entry_id = draw(st.sampled_from([f'mem-{index:04d}', 'mem-dup', f'mem-{index % 3}']))
        entries.append(MemoryEntry(
            id=entry_id, type=draw(TYPES), text=draw(TEXTS), confidence=draw(CONFIDENCES),
            first_seen=at(-24 * 500), last_reinforced=at(draw(OFFSETS)),
            observation_count=1))
    return entries


@st.composite
def peer_blocks(draw):
    blocks = []
    for number in range(draw(st.integers(0, 3))):
        entries = []
        for index in range(draw(st.integers(0, 8))):
            reinforced = draw(st.one_of(st.none(), OFFSETS))
            entries.append(PeerEntry(
                id=f'mem-p{number}{index}', type=draw(TYPES), text=draw(TEXTS),
                confidence=draw(CONFIDENCES),
                last_reinforced=None if reinforced is None else at(reinforced)))
        blocks.append(PeerBlock(rrn=f'RRN-00000000000{number}', last_synced=at(draw(OFFSETS)),
                                entries=entries))
    return draw(st.sampled_from([None, blocks]))


@st.composite
def configs(draw):
    rate = draw(st.sampled_from([0.0, 0.05, 0.1, 0.01, 1.0, 0.0333]))
    levels = sorted(draw(st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.3, 0.5, 0.8, 0.9]),
                                  min_size=4, max_size=4)))
    if draw(st.booleans()):
        levels = [0.1, 0.3, 0.5, 0.8]
    return LifecycleConfig(decay_per_day=rate, prune_min=levels[0], inject_min=levels[1],
                           band_medium=levels[2], band_high=levels[3],
                           token_budget=draw(st.sampled_from([400, 1, 50, 100000])),
                           recent_hours=draw(st.sampled_from([24.0, 0.0, 1.0, 240.0])))


BUDGETS = st.one_of(st.none(), st.sampled_from([0, 1, 3, 4, 5, 8, 12, 20, 40, 100, 400, 10**6]),
                    st.integers(-5, 800))
MIN_CONFIDENCES = st.one_of(st.none(), st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0, 0.45]),
                            st.floats(0.0, 1.0, allow_nan=False))
NOWS = st.one_of(st.sampled_from([0, 24, 48, 0.5, -1, 240]),
                 st.floats(-24 * 3, 24 * 30, allow_nan=False))


def assert_same(document, now, config, budget, include_peers, min_confidence):
    expected = build_context_scan(document, now, config, budget, include_peers, min_confidence)
    index = ContextIndex(document, config)
    got = build_context(document, now, config, budget, include_peers, min_confidence,
                        index=index)
    assert got.text == expected.text
    assert got.entries == expected.entries
    assert got.peer_entries == expected.peer_entries
    assert got.omitted == expected.omitted
    assert got.token_estimate == expected.token_estimate
    assert (got.rrn, got.at) == (expected.rrn, expected.at)
    assert got.recent == expected.recent
    assert got.truncated == expected.truncated
    assert (got.threshold, got.below_threshold, got.below_threshold_max) == (
        expected.threshold, expected.below_threshold, expected.below_threshold_max)
    assert got.below_threshold_entry is expected.below_threshold_entry
    # the same index answers again, at another time, unchanged
    later = now + dt.timedelta(hours=7)
    again = build_context(document, later, config, budget, include_peers, min_confidence,
                          index=index)
    reference = build_context_scan(document, later, config, budget, include_peers,
                                   min_confidence)
    assert (again.text, again.entries, again.peer_entries, again.omitted, again.recent,
            again.below_threshold, again.below_threshold_max) == (
        reference.text, reference.entries, reference.peer_entries, reference.omitted,
        reference.recent, reference.below_threshold, reference.below_threshold_max)
    assert again.below_threshold_entry is reference.below_threshold_entry


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=own_entries(), peers=peer_blocks(), config=configs(), now=NOWS,
       budget=BUDGETS, include_peers=st.booleans(), min_confidence=MIN_CONFIDENCES)
def test_indexed_block_equals_the_scan(entries, peers, config, now, budget, include_peers,
                                       min_confidence):
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries,
                              peer_context=peers)
    assert_same(document, at(now), config, budget, include_peers, min_confidence)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=own_entries(max_size=400), config=configs(), now=NOWS, budget=BUDGETS,
       min_confidence=MIN_CONFIDENCES)
def test_indexed_block_equals_the_scan_on_larger_documents(entries, config, now, budget,
                                                           min_confidence):
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries)
    assert_same(document, at(now), config, budget, True, min_confidence)


def entry(entry_id, confidence, hours, text=None):
    return MemoryEntry(id=entry_id, type='environment_note', text=text or f'note {entry_id}',
                       confidence=confidence, first_seen=at(-24 * 30),
                       last_reinforced=at(hours), observation_count=1)


def test_keys_equal_up_to_float_noise_are_ordered_like_the_scan():
    # 0.55 reinforced a day earlier and 0.5 now have the same key; after decay they tie at
    # 0.45 one day on, and the newer one comes first.
    entries = [entry('mem-old', 0.55, -24), entry('mem-new', 0.5, 0),
               entry('mem-older', 0.6, -48), entry('mem-b', 0.5, 0), entry('mem-a', 0.5, 0)]
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries)
    block = build_context(document, at(24), index=ContextIndex(document))
    assert [item.entry.id for item in block.entries] == [
        'mem-a', 'mem-b', 'mem-new', 'mem-old', 'mem-older']
    assert_same(document, at(24), LifecycleConfig(), None, True, None)


def test_entries_stamped_after_now_count_with_their_stored_confidence():
    # A clock that went back: these have huge keys but no decay.
    entries = [entry('mem-future', 0.4, 24 * 30), entry('mem-now', 0.9, 0),
               entry('mem-past', 0.95, -24)]
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries)
    block = build_context(document, T0, index=ContextIndex(document))
    assert [item.entry.id for item in block.entries] == ['mem-now', 'mem-past', 'mem-future']
    assert_same(document, T0, LifecycleConfig(), None, True, None)


@pytest.mark.parametrize('future', [0, 5, 300])
def test_many_entries_after_now_fall_back_to_the_scan_and_agree(future):
    entries = [entry(f'mem-f{index:03d}', 0.3 + index % 7 / 10, 1 + index) for index in
               range(future)]
    entries += [entry(f'mem-p{index:03d}', 0.3 + index % 7 / 10, -index) for index in range(50)]
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries)
    for budget in (5, 40, 400, 10**5):
        assert_same(document, T0, LifecycleConfig(), budget, True, None)


def test_a_zero_threshold_shows_the_decayed_away_entries_like_the_scan():
    config = LifecycleConfig(prune_min=0.0, inject_min=0.0)
    entries = [entry(f'mem-{index}', 0.2, -24 * (10 + index)) for index in range(5)]
    entries.append(entry('mem-live', 0.9, 0))
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries)
    block = build_context(document, T0, config, index=ContextIndex(document, config))
    assert [item.entry.id for item in block.entries] == ['mem-live'] + [
        f'mem-{index}' for index in range(5)]
    assert_same(document, T0, config, 12, True, None)


def test_an_index_of_another_document_or_rate_is_not_used():
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0,
                              entries=[entry('mem-a', 0.9, -24)])
    other = MemoryDocument(rrn='RRN-000000000001', last_updated=T0,
                           entries=[entry('mem-b', 0.9, -24)])
    index = ContextIndex(other)
    assert build_context(document, T0, index=index).text == HEAD + '🔴 [85%] note mem-a'
    slow = LifecycleConfig(decay_per_day=0.01)
    assert not ContextIndex(document).serves(document, slow)
    assert build_context(document, T0, slow, index=ContextIndex(document)).text == (
        HEAD + '🔴 [89%] note mem-a')


def test_ten_thousand_entries_agree_at_default_budget():
    entries = [entry(f'mem-{index:05d}', round(0.3 + (index * 7919 % 700) / 1000, 2),
                     -(index * 104729 % (24 * 20)), f'observation {index} ' + 'z' * (index % 50))
               for index in range(10_000)]
    document = MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries)
    for hours in (0, 12, 24 * 3, 24 * 9):
        for budget in (None, 40, 2000):
            assert_same(document, at(hours), LifecycleConfig(), budget, True, None)


def test_the_document_cache_builds_the_index_once_per_file_version(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    cache = DocumentCache(memory, 'RRN-000000000001')
    document = cache.document(T0)
    assert cache.context_index(document, LifecycleConfig()) is cache.context_index(
        document, LifecycleConfig())
    with memory.lock():
        memory.save(MemoryDocument(rrn='RRN-000000000001', last_updated=T0,
                                   entries=[entry('mem-a', 0.9, -24)]))
    block = cache.build_context(T0, LifecycleConfig())
    assert block.text == HEAD + '🔴 [85%] note mem-a'
    first = cache.context_index(cache.document(T0), LifecycleConfig())
    assert first is not None and first.serves(cache.document(T0), LifecycleConfig())
    slow = LifecycleConfig(decay_per_day=0.01)
    assert cache.build_context(T0, slow).text == HEAD + '🔴 [89%] note mem-a'
    # a document the cache no longer holds gets no index
    assert cache.context_index(document, LifecycleConfig()) is None
