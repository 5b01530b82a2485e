"""Context injection rules of RCAN §4.4 and §5: the emoji-banded block the brain receives.

Line format ``🔴 [92%] text``; own entries first, by effective confidence; resolved and
below-threshold entries never shown; peers in labelled sections after; a token budget.
"""

import datetime as dt
import re

import pytest

from robot_memory.context import build_context
from robot_memory.context import estimate_tokens
from robot_memory.context import format_line
from robot_memory.context import peer_header
from robot_memory.context import percent
from robot_memory.lifecycle import LifecycleConfig
from robot_memory.schema import MemoryDocument
from robot_memory.schema import MemoryEntry
from robot_memory.schema import PeerBlock
from robot_memory.schema import PeerEntry
from robot_memory.timeutil import UTC

T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)
LINE = re.compile(r'^(🔴|🟡|🟢) \[(\d{1,3})%\] (.+)$')


def entry(entry_id, confidence, text=None, entry_type='environment_note', last_reinforced=T0):
    return MemoryEntry(id=entry_id, type=entry_type, text=text or f'note {entry_id}',
                       confidence=confidence, first_seen=T0 - 10 * DAY,
                       last_reinforced=last_reinforced, observation_count=1)


def peer(entry_id, confidence, text=None):
    return PeerEntry(id=entry_id, type='environment_note', text=text or f'peer {entry_id}',
                     confidence=confidence, tags=['peer'])


def document(entries, peers=None):
    return MemoryDocument(rrn='RRN-000000000001', last_updated=T0, entries=entries,
                          peer_context=peers)


def test_line_format_is_band_percent_text():
    assert format_line('Left wheel encoder intermittent', 0.92) == (
        '🔴 [92%] Left wheel encoder intermittent')
    assert format_line('Kitchen doorway has 3cm lip', 0.65) == '🟡 [65%] Kitchen doorway has 3cm lip'
    assert format_line('Right camera auto-focus', 0.35) == '🟢 [35%] Right camera auto-focus'


@pytest.mark.parametrize('confidence, expected', [
    (0.92, 92), (0.924, 92), (0.925, 93), (0.575, 58), (0.285, 29), (0.005, 1), (0.004, 0),
    (1.0, 100), (0.0, 0), (0.995, 100),
])
def test_percent_is_rounded_half_up(confidence, expected):
    assert percent(confidence) == expected


def test_block_lines_match_the_spec_format_and_show_decayed_confidence():
    block = build_context(document([entry('mem-a', 0.92)]), T0 + DAY)
    assert block.text == '🔴 [87%] note mem-a'
    assert all(LINE.match(line) for line in block.text.splitlines())


def test_own_entries_are_sorted_by_effective_confidence_descending():
    stale = entry('mem-stale', 0.95, last_reinforced=T0 - 6 * DAY)   # 0.65 at T0
    fresh = entry('mem-fresh', 0.7)
    top = entry('mem-top', 0.9)
    block = build_context(document([stale, fresh, top]), T0)
    assert [item.entry.id for item in block.entries] == ['mem-top', 'mem-fresh', 'mem-stale']
    assert block.text.splitlines() == ['🔴 [90%] note mem-top', '🟡 [70%] note mem-fresh',
                                       '🟡 [65%] note mem-stale']


def test_resolved_entries_are_never_shown():
    block = build_context(document([entry('mem-done', 1.0, entry_type='resolved'),
                                    entry('mem-open', 0.5)]), T0)
    assert [item.entry.id for item in block.entries] == ['mem-open']
    assert 'mem-done' not in block.text


def test_entries_below_the_injection_threshold_are_not_shown():
    block = build_context(document([entry('mem-low', 0.29), entry('mem-edge', 0.30),
                                    entry('mem-decayed', 0.5, last_reinforced=T0 - 5 * DAY)]),
                          T0)
    assert [item.entry.id for item in block.entries] == ['mem-edge']
    assert block.omitted == 0


def test_peer_entries_follow_own_entries_in_a_labelled_section_per_peer():
    peers = [PeerBlock(rrn='RRN-000000000005', last_synced=T0, entries=[peer('mem-p1', 0.75)]),
             PeerBlock(rrn='RRN-000000000009', last_synced=T0,
                       entries=[peer('mem-p2', 0.4), peer('mem-p3', 0.9)])]
    block = build_context(document([entry('mem-own', 0.35)], peers), T0)
    assert block.text.split('\n') == [
        '🟢 [35%] note mem-own',
        '',
        peer_header('RRN-000000000005', T0),
        '🟡 [75%] peer mem-p1',
        '',
        peer_header('RRN-000000000009', T0),
        '🔴 [90%] peer mem-p3',
        '🟢 [40%] peer mem-p2',
    ]
    assert 'RRN-000000000005' in peer_header('RRN-000000000005', T0)
    assert [(item.source_rrn, item.entry.id) for item in block.peer_entries] == [
        ('RRN-000000000005', 'mem-p1'), ('RRN-000000000009', 'mem-p3'),
        ('RRN-000000000009', 'mem-p2')]


def test_peer_entries_decay_from_their_last_synced_time():
    peers = [PeerBlock(rrn='RRN-000000000005', last_synced=T0 - 2 * DAY,
                       entries=[peer('mem-p1', 0.75)])]
    block = build_context(document([], peers), T0)
    assert block.text.splitlines()[-1] == '🟡 [65%] peer mem-p1'


def test_a_peer_with_nothing_to_show_gets_no_section():
    peers = [PeerBlock(rrn='RRN-000000000005', last_synced=T0,
                       entries=[peer('mem-p1', 0.1)])]
    block = build_context(document([entry('mem-own', 0.5)], peers), T0)
    assert block.text == '🟡 [50%] note mem-own'


def test_include_peers_false_leaves_peers_out():
    peers = [PeerBlock(rrn='RRN-000000000005', last_synced=T0, entries=[peer('mem-p1', 0.75)])]
    block = build_context(document([entry('mem-own', 0.5)], peers), T0, include_peers=False)
    assert block.text == '🟡 [50%] note mem-own'
    assert block.peer_entries == []


def test_min_confidence_raises_the_threshold_but_never_lowers_it():
    entries = [entry('mem-a', 0.9), entry('mem-b', 0.6), entry('mem-c', 0.2)]
    raised = build_context(document(entries), T0, min_confidence=0.7)
    assert [item.entry.id for item in raised.entries] == ['mem-a']
    lowered = build_context(document(entries), T0, min_confidence=0.1)
    assert [item.entry.id for item in lowered.entries] == ['mem-a', 'mem-b']


@pytest.mark.parametrize('budget', [1, 5, 12, 20, 33, 50, 80, 150, 400])
def test_token_budget_is_respected_and_omitted_entries_are_counted(budget):
    entries = [entry(f'mem-{i:02d}', 0.3 + i / 50, text=f'observation number {i} ' + 'x' * i)
               for i in range(30)]
    peers = [PeerBlock(rrn='RRN-000000000005', last_synced=T0,
                       entries=[peer(f'mem-p{i}', 0.5 + i / 20) for i in range(8)])]
    block = build_context(document(entries, peers), T0, token_budget=budget)
    assert estimate_tokens(block.text) <= budget
    shown = len(block.entries) + len(block.peer_entries)
    assert shown + block.omitted == 38
    assert block.token_estimate == estimate_tokens(block.text)
    shown_lines = [line for line in block.text.splitlines() if LINE.match(line)]
    assert len(shown_lines) == shown


def test_the_most_confident_entries_are_kept_when_the_budget_is_short():
    entries = [entry('mem-low', 0.4, text='same length text'),
               entry('mem-high', 0.95, text='same length text'),
               entry('mem-mid', 0.7, text='same length text')]
    budget = estimate_tokens('🔴 [95%] same length text') + 1
    block = build_context(document(entries), T0, token_budget=budget)
    assert [item.entry.id for item in block.entries] == ['mem-high']
    assert block.omitted == 2


def test_default_budget_comes_from_the_config():
    entries = [entry(f'mem-{i:03d}', 0.9, text='y' * 200) for i in range(100)]
    block = build_context(document(entries), T0, LifecycleConfig(token_budget=120))
    assert 0 < estimate_tokens(block.text) <= 120
    assert block.omitted == 100 - len(block.entries)


def test_token_estimate_over_counts_rather_than_under_counts():
    assert estimate_tokens('') == 0
    assert estimate_tokens('abcd') == 1
    assert estimate_tokens('abcde') == 2
    assert estimate_tokens('🔴') == 1
    assert estimate_tokens('🔴 [92%]') == 3


def test_thresholds_of_the_block_follow_the_config():
    config = LifecycleConfig(inject_min=0.5, band_medium=0.6, band_high=0.9)
    block = build_context(document([entry('mem-a', 0.85), entry('mem-b', 0.55),
                                    entry('mem-c', 0.45)]), T0, config)
    assert block.text.splitlines() == ['🟡 [85%] note mem-a', '🟢 [55%] note mem-b']
