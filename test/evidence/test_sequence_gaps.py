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

"""SequenceGaps: messages lost between two received ones of a publisher are counted, once."""

import random

from hypothesis import given
from hypothesis import strategies as st
import pytest

from robot_memory.evidence.sequence_gaps import SequenceGaps
from robot_memory.evidence.sequence_gaps import UNSUPPORTED


def test_consecutive_numbers_lose_nothing():
    gaps = SequenceGaps()
    assert [gaps.observe(b'a', n) for n in range(1, 6)] == [0] * 5
    assert gaps.lost == 0


def test_a_gap_is_counted_as_the_numbers_skipped():
    gaps = SequenceGaps()
    assert gaps.observe(b'a', 1) == 0
    assert gaps.observe(b'a', 5) == 3
    assert gaps.observe(b'a', 6) == 0
    assert gaps.lost == 3


def test_publishers_are_counted_apart():
    gaps = SequenceGaps()
    for publisher, sequence in ((b'a', 1), (b'b', 1), (b'a', 2), (b'b', 4), (b'a', 3)):
        gaps.observe(publisher, sequence)
    assert gaps.lost == 2


def test_what_came_before_the_first_message_received_is_not_a_loss():
    gaps = SequenceGaps()
    assert gaps.observe(b'late-joiner', 1_000_000) == 0
    assert gaps.lost == 0


@pytest.mark.parametrize('sequence', [None, 0, -3, UNSUPPORTED, UNSUPPORTED + 1])
def test_unreported_sequence_numbers_are_ignored(sequence):
    gaps = SequenceGaps()
    gaps.observe(b'a', 1)
    assert gaps.observe(b'a', sequence) == 0
    assert gaps.observe(b'a', 2) == 0
    assert gaps.lost == 0


def test_duplicates_and_late_samples_never_count_twice_or_go_back():
    gaps = SequenceGaps()
    gaps.observe(b'a', 1)
    assert gaps.observe(b'a', 4) == 2
    assert gaps.observe(b'a', 3) == 0   # late: nothing new skipped
    assert gaps.observe(b'a', 4) == 0   # duplicate
    assert gaps.observe(b'a', 5) == 0   # continues from the highest seen
    assert gaps.lost == 2


def test_memory_is_bounded_and_the_least_recently_heard_goes_first():
    gaps = SequenceGaps(max_publishers=3)
    for publisher in (b'a', b'b', b'c'):
        gaps.observe(publisher, 1)
    gaps.observe(b'a', 2)            # a heard again: b is now the least recent
    gaps.observe(b'd', 1)            # forgets b
    assert len(gaps) == 3
    assert gaps.observe(b'a', 10) == 7   # a was kept
    assert gaps.observe(b'b', 10) == 0   # b was forgotten: new again


def test_max_publishers_must_be_positive():
    with pytest.raises(ValueError, match='max_publishers'):
        SequenceGaps(max_publishers=0)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 500), st.floats(0, 1)),
                min_size=1, max_size=30),
       st.randoms(use_true_random=False))
def test_lost_is_what_each_publisher_sent_after_its_first_received_and_never_arrived(
        publishers, rng):
    """Each publisher sends 1..n; some are dropped; the rest arrive in order, interleaved."""
    gaps = SequenceGaps()
    streams, expected = {}, 0
    for key, count, drop in publishers:
        if key in streams:
            continue
        kept = [n for n in range(1, count + 1) if n == count or rng.random() >= drop]
        streams[key] = kept
        expected += count - kept[0] + 1 - len(kept)   # missing after the first received
    pending = {key: list(stream) for key, stream in streams.items()}
    while pending:
        key = rng.choice(sorted(pending))
        gaps.observe(key, pending[key].pop(0))
        if not pending[key]:
            del pending[key]
    assert gaps.lost == expected


def test_a_long_stream_with_random_drops():
    rng = random.Random(3)
    gaps = SequenceGaps()
    dropped = 0
    gaps.observe(b'x', 1)
    for n in range(2, 100_001):
        if rng.random() < 0.3 and n != 100_000:
            dropped += 1
            continue
        gaps.observe(b'x', n)
    assert gaps.lost == dropped
