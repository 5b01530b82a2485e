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
Entry lifecycle rules of RCAN §4: decay at read time, reinforcement, eligibility, pruning.

Every constant is a LifecycleConfig field; the clock is always passed in.
"""

import datetime as dt

from pydantic import ValidationError
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.lifecycle import band
from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.lifecycle import is_injectable
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.rcan.lifecycle import prune
from robot_memory.rcan.lifecycle import reinforce
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import PeerEntry

T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)
DAY = dt.timedelta(days=1)
HOUR = dt.timedelta(hours=1)


def entry(confidence=0.92, last_reinforced=T0, entry_type='hardware_observation', count=14,
          entry_id='mem-a3f9c1d2'):
    return MemoryEntry(id=entry_id, type=entry_type, text='Left wheel encoder intermittent',
                       confidence=confidence, first_seen=T0 - 4 * DAY,
                       last_reinforced=last_reinforced, observation_count=count, tags=['wheel'])


# ---------------------------------------------------------------------------- decay

@pytest.mark.parametrize('days, expected', [
    (0, 0.92), (1, 0.87), (2, 0.82), (0.5, 0.895), (10, 0.42), (18.4, 0.0), (19, 0.0),
    (400, 0.0),
])
def test_effective_confidence_is_c_minus_five_hundredths_per_day_floored_at_zero(days, expected):
    at = T0 + dt.timedelta(days=days)
    assert effective_confidence(entry(), at) == pytest.approx(expected, abs=1e-9)


def test_decay_is_computed_at_read_time_and_never_stored():
    stored = entry()
    effective_confidence(stored, T0 + 10 * DAY)
    assert stored.confidence == 0.92
    assert effective_confidence(stored, T0 + DAY) == pytest.approx(0.87)


def test_decay_never_crosses_a_threshold_by_float_noise():
    # 0.85 - 0.05 is 0.7999999999999999 in binary floating point; one day later it is 0.80.
    assert effective_confidence(entry(0.85), T0 + DAY) == 0.8
    assert band(effective_confidence(entry(0.85), T0 + DAY)) == '🔴'
    assert is_injectable(entry(0.35), T0 + DAY)
    assert not prune([entry(0.15)] * 4, T0 + DAY).pruned


def test_a_clock_that_went_backwards_never_raises_confidence():
    for earlier in (T0 - dt.timedelta(seconds=1), T0 - DAY, T0 - 3650 * DAY):
        assert effective_confidence(entry(0.6), earlier) == 0.6


def test_decay_rate_is_configurable():
    slow = LifecycleConfig(decay_per_day=0.01)
    assert effective_confidence(entry(), T0 + 10 * DAY, slow) == pytest.approx(0.82)
    frozen = LifecycleConfig(decay_per_day=0.0)
    assert effective_confidence(entry(), T0 + 1000 * DAY, frozen) == 0.92


def test_peer_entries_without_last_reinforced_decay_from_their_reference_time():
    peer = PeerEntry(id='mem-peer-b1c2', type='environment_note', text='corridor blocked',
                     confidence=0.75)
    assert effective_confidence(peer, T0 + 2 * DAY, reference=T0) == pytest.approx(0.65)
    assert effective_confidence(peer, T0 + 2 * DAY) == 0.75


# ---------------------------------------------------------------------- reinforcement

def test_reinforcement_adds_a_tenth_counts_and_resets_the_clock():
    now = T0 + dt.timedelta(hours=3)
    stronger = reinforce(entry(0.5, count=3), T0)
    assert stronger.confidence == pytest.approx(0.6)
    assert stronger.observation_count == 4
    later = reinforce(entry(0.5, count=3), now)
    assert later.last_reinforced == now


def test_reinforcement_starts_from_the_effective_confidence():
    decayed = entry(0.9, last_reinforced=T0)
    now = T0 + 4 * DAY
    reinforced = reinforce(decayed, now)
    assert reinforced.confidence == pytest.approx(0.9 - 0.2 + 0.1)
    assert reinforced.last_reinforced == now
    assert effective_confidence(reinforced, now) == pytest.approx(0.8)


def test_reinforcement_caps_at_one():
    assert reinforce(entry(0.95), T0).confidence == 1.0
    assert reinforce(entry(1.0), T0).confidence == 1.0


def test_reinforcement_adds_every_observation_it_represents():
    assert reinforce(entry(0.5, count=3), T0, observations=5).observation_count == 8
    assert reinforce(entry(0.5, count=3), T0, observations=5).confidence == pytest.approx(0.6)


def test_reinforcement_step_is_configurable():
    config = LifecycleConfig(reinforce_step=0.25)
    assert reinforce(entry(0.5), T0, config).confidence == pytest.approx(0.75)


def test_reinforcement_leaves_the_original_entry_unchanged():
    original = entry(0.5, count=3)
    reinforce(original, T0 + DAY)
    assert (original.confidence, original.observation_count, original.last_reinforced) == (
        0.5, 3, T0)


# ---------------------------------------------------------------------- eligibility

@pytest.mark.parametrize('confidence, expected', [
    (0.30, True), (0.2999, False), (0.31, True), (0.0, False), (1.0, True),
])
def test_injectable_at_or_above_thirty_percent(confidence, expected):
    assert is_injectable(entry(confidence), T0) is expected


def test_resolved_entries_are_never_injectable():
    assert not is_injectable(entry(1.0, entry_type='resolved'), T0)


def test_injectability_uses_the_decayed_confidence():
    assert is_injectable(entry(0.5), T0 + 4 * DAY)
    assert not is_injectable(entry(0.5), T0 + 5 * DAY)


def test_inject_threshold_is_configurable():
    assert not is_injectable(entry(0.5), T0, LifecycleConfig(inject_min=0.6, band_medium=0.6))


@pytest.mark.parametrize('confidence, emoji', [
    (1.0, '🔴'), (0.80, '🔴'), (0.7999, '🟡'), (0.50, '🟡'), (0.4999, '🟢'), (0.30, '🟢'),
    (0.0, '🟢'),
])
def test_bands_red_from_eighty_yellow_from_fifty_green_below(confidence, emoji):
    assert band(confidence) == emoji


def test_band_thresholds_are_configurable():
    config = LifecycleConfig(band_high=0.9, band_medium=0.6)
    assert [band(c, config) for c in (0.9, 0.85, 0.6, 0.55)] == ['🔴', '🟡', '🟡', '🟢']


# --------------------------------------------------------------------------- pruning

# The threshold tests below prune entries reinforced at T0 at T0; the weak-recent guard
# (tested on its own) would keep them all, so it is off here.
UNGUARDED = LifecycleConfig(recent_hours=0)


def test_prune_removes_entries_below_ten_percent_and_keeps_the_rest():
    weak = entry(0.0999, entry_id='mem-weak')
    edge = entry(0.10, entry_id='mem-edge')
    strong = entry(0.9, entry_id='mem-strong')
    outcome = prune([strong, weak, edge, entry(0.5, entry_id='mem-mid')], T0, UNGUARDED)
    assert [item.entry.id for item in outcome.pruned] == ['mem-weak']
    assert outcome.pruned[0].effective_confidence == pytest.approx(0.0999)
    assert [kept.id for kept in outcome.kept] == ['mem-strong', 'mem-edge', 'mem-mid']
    assert outcome.held_back == 0


def test_no_entry_seen_within_recent_hours_is_pruned():
    """Issue 26.6: a fault seen today is promised in "Seen in the last 24 h"; it stays."""
    today = entry(0.09, last_reinforced=T0, entry_id='mem-today')
    outcome = prune([today, entry(0.9, entry_id='mem-strong')], T0 + 23 * HOUR)
    assert outcome.pruned == [] and outcome.held_back == 0
    later = prune([today], T0 + 25 * HOUR)
    assert [item.entry.id for item in later.pruned] == ['mem-today']


def test_prune_judges_by_the_decayed_confidence():
    outcome = prune([entry(0.5, entry_id='mem-a'), entry(0.9, entry_id='mem-b')], T0 + 9 * DAY)
    assert [item.entry.id for item in outcome.pruned] == ['mem-a']


def test_a_far_future_clock_never_empties_memory_at_once():
    entries = [entry(0.2 + i / 100, entry_id=f'mem-{i:02d}') for i in range(10)]
    far = T0 + 100_000 * DAY
    outcome = prune(entries, far)
    assert len(outcome.pruned) == 5 and len(outcome.kept) == 5 and outcome.held_back == 5
    sizes = [len(entries)]
    remaining = entries
    while len(remaining) > 1:
        remaining = prune(remaining, far).kept
        sizes.append(len(remaining))
    assert sizes == [10, 5, 3, 2, 1]


def test_prune_takes_the_weakest_first_when_it_must_hold_some_back():
    entries = [entry(0.02, entry_id='mem-b'), entry(0.05, entry_id='mem-c'),
               entry(0.01, entry_id='mem-a'), entry(0.9, entry_id='mem-d')]
    outcome = prune(entries, T0, LifecycleConfig(max_prune_fraction=0.5, recent_hours=0))
    assert [item.entry.id for item in outcome.pruned] == ['mem-a', 'mem-b']
    assert outcome.held_back == 1


def test_prune_fraction_and_threshold_are_configurable():
    entries = [entry(0.2, entry_id=f'mem-{i}') for i in range(4)]
    config = LifecycleConfig(prune_min=0.25, max_prune_fraction=1.0, recent_hours=0)
    assert len(prune(entries, T0, config).pruned) == 4
    assert len(prune(entries, T0, config.model_copy(update={'prune_min': 0.1})).pruned) == 0


# ---------------------------------------------------------------------- configuration

def test_defaults_are_the_spec_values():
    config = DEFAULT_CONFIG
    assert (config.reinforce_step, config.decay_per_day, config.inject_min, config.prune_min,
            config.band_high, config.band_medium) == (0.10, 0.05, 0.30, 0.10, 0.80, 0.50)


def test_every_constant_is_configurable():
    values = {'reinforce_step': 0.2, 'decay_per_day': 0.02, 'inject_min': 0.4,
              'prune_min': 0.05, 'band_high': 0.9, 'band_medium': 0.6, 'token_budget': 123,
              'max_prune_fraction': 0.25, 'recent_hours': 6.0}
    assert set(values) == set(LifecycleConfig.model_fields)
    config = LifecycleConfig(**values)
    assert {name: getattr(config, name) for name in values} == values


@pytest.mark.parametrize('values', [
    {'prune_min': 0.4, 'inject_min': 0.3},
    {'inject_min': 0.6, 'band_medium': 0.5},
    {'band_medium': 0.9, 'band_high': 0.8},
])
def test_unordered_thresholds_are_refused_with_a_reason(values):
    with pytest.raises(ValidationError) as caught:
        LifecycleConfig(**values)
    assert 'prune_min ≤ inject_min ≤ band_medium ≤ band_high' in str(caught.value)


@pytest.mark.parametrize('name, value, fragment', [
    ('reinforce_step', 0.0, 'greater than 0'),
    ('reinforce_step', 1.5, 'less than or equal to 1'),
    ('decay_per_day', -0.01, 'greater than or equal to 0'),
    ('inject_min', 1.2, 'less than or equal to 1'),
    ('prune_min', -0.1, 'greater than or equal to 0'),
    ('band_high', 2.0, 'less than or equal to 1'),
    ('token_budget', 0, 'greater than or equal to 1'),
    ('max_prune_fraction', 0.0, 'greater than 0'),
    ('max_prune_fraction', 1.01, 'less than or equal to 1'),
    ('decay_rate', 0.05, 'Extra inputs are not permitted'),
])
def test_out_of_range_values_are_refused_with_a_reason(name, value, fragment):
    with pytest.raises(ValidationError) as caught:
        LifecycleConfig(**{name: value})
    assert name in str(caught.value) and fragment in str(caught.value)


def test_the_default_config_is_what_validation_gives():
    # DEFAULT_CONFIG is made without validation (no validator is built for a command on
    # the defaults): it must be exactly the validated defaults.
    validated = LifecycleConfig()
    assert DEFAULT_CONFIG == validated
    assert DEFAULT_CONFIG.__pydantic_fields_set__ == validated.__pydantic_fields_set__
    assert LifecycleConfig.model_validate(DEFAULT_CONFIG.model_dump()) == DEFAULT_CONFIG


def test_the_plain_defaults_are_the_validated_ones_under_the_same_names():
    # lifecycle.DEFAULTS stands in for the model where nothing is configured (robot-memory
    # show reads on it without importing pydantic).
    from robot_memory.rcan.lifecycle import DEFAULTS
    assert DEFAULTS._asdict() == LifecycleConfig().model_dump()
    assert LifecycleConfig(**DEFAULTS._asdict()) == DEFAULT_CONFIG
