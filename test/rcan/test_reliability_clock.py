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
Clock jumps: time going backwards (an NTP correction) or years forward breaks nothing.

Dream sequences over a robot with a dozen entries move the clock back by minutes, hours
and days, then forward by years, then back again, with evidence stamped on either side
of each jump. After every step: no exception; every stored and effective confidence and
every context percentage lies within [0, 1] (0-100 %); a dream before the last one changes
nothing and says so; so does a jump of years without evidence until a person confirms it
(``clock_leap``); a confirmed one prunes at most ``max_prune_fraction`` of the entries
(never everything at once) and the rest go in later dreams; the context block of any
moment, past or future, is well formed. Hypothesis checks the lifecycle functions
themselves at arbitrary moments.

A seeded sequence of 30 random jumps runs by default; ``--long`` runs 300
and lets Hypothesis try 2,000 examples instead of 200.
"""

import datetime as dt
import math
import random
import re

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import dream
from robot_memory.rcan import lifecycle
from robot_memory.rcan.context import build_context
from robot_memory.rcan.context import recent_header
from robot_memory.rcan.context_fill import LEFT_OUT
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.untrusted import HEADER
from support.dream_scenario import CONFIG
from support.dream_scenario import evening
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status
from support.modes import LONG

pytestmark = pytest.mark.long  # --long runs it at full length

RANDOM_JUMPS = 300 if LONG else 30
EXAMPLES = 2000 if LONG else 200
LC = CONFIG.lifecycle
PERCENT = re.compile(r'^(?:🔴|🟡|🟢) \[(\d+)%\] ')


def sources(count: int) -> list:
    return [(f'sensor {index}: status', f'hw{index}') for index in range(count)]


def warnings_at(robot, when: dt.datetime, source, count: int = 40) -> None:
    for index in range(count):
        robot.store.add(status(when + dt.timedelta(minutes=3 * index), 1, 'dropped ticks',
                               source))


def check(robot, now: dt.datetime) -> list:
    """Check the invariants of one moment; return the entries of the file."""
    document = robot.memory.load(now).document
    for entry in document.entries:
        assert 0.0 <= entry.confidence <= 1.0, entry
        effective = lifecycle.effective_confidence(entry, now, LC)
        assert 0.0 <= effective <= entry.confidence
        assert (entry.observation_count or 0) >= 1
    for moment in (now, now - dt.timedelta(days=400), now + dt.timedelta(days=4000)):
        block = build_context(document, moment, LC)
        for line in filter(None, block.text.splitlines()):
            if line in (recent_header(LC), HEADER):  # HEADER: issue 38, point 6
                continue
            if line.startswith(LEFT_OUT):  # what the budget left out: issue 38, point 5
                assert block.omitted, block.text
                continue
            match = PERCENT.match(line)
            assert match and 0 <= int(match.group(1)) <= 100, line
        assert block.token_estimate <= LC.token_budget
    return document.entries


@pytest.fixture
def fleet(tmp_path):
    robot = Robot(tmp_path / 'robot')
    for day in range(3):
        for source in sources(12):
            warnings_at(robot, evening(day), source)
        robot.dream(day)
    assert len(robot.entries(2)) == 12
    yield robot
    robot.close()


def test_ntp_corrections_backwards_change_nothing_and_say_so(fleet):
    before = fleet.memory.path.read_bytes()
    audit = fleet.store.audit_count()
    for back in (dt.timedelta(seconds=1), dt.timedelta(hours=3), dt.timedelta(days=2),
                 dt.timedelta(days=365 * 30)):
        now = morning(2) - back
        warnings_at(fleet, now - dt.timedelta(hours=4), sources(1)[0])
        report = dream(fleet.store, fleet.memory, now, fleet.rules, CONFIG)
        assert report.clock_backwards and not report.noop
        assert 'the clock went backwards' in report.problems[0]
        assert fleet.memory.path.read_bytes() == before
        assert fleet.store.audit_count() == audit
        check(fleet, now)
    report = fleet.dream(3)
    assert not report.clock_backwards and report.consumed >= 4 * 40
    check(fleet, morning(3))


def test_a_jump_of_years_prunes_at_most_half_at_once(fleet):
    entries = check(fleet, morning(2))
    future = morning(2) + dt.timedelta(days=365 * 7)
    before = fleet.memory.path.read_bytes()
    report = dream(fleet.store, fleet.memory, future, fleet.rules, CONFIG)
    assert report.clock_leap and not report.noop and not report.pruned  # not confirmed
    assert fleet.memory.path.read_bytes() == before
    remaining = [len(entries)]
    moment = future
    while remaining[-1] and moment < future + dt.timedelta(days=1):
        report = dream(fleet.store, fleet.memory, moment, fleet.rules, CONFIG,
                       confirm_leap=moment == future)
        assert not report.clock_backwards and not report.clock_leap
        left = len(check(fleet, moment))
        allowed = max(1, int(remaining[-1] * LC.max_prune_fraction))
        assert remaining[-1] - left <= allowed
        assert left == remaining[-1] - len(report.pruned)
        remaining.append(left)
        moment += dt.timedelta(hours=1)
    assert remaining == [12, 6, 3, 2, 1, 0]
    archived = fleet.memory.path.with_name('robot-memory.md.archive.jsonl').read_text()
    assert len(archived.splitlines()) == 12


def test_evidence_from_the_future_then_a_correction_back(fleet):
    source = sources(1)[0]
    ahead = morning(2) + dt.timedelta(days=365 * 5)
    warnings_at(fleet, ahead - dt.timedelta(hours=5), source)
    report = dream(fleet.store, fleet.memory, ahead, fleet.rules, CONFIG)
    assert len(report.reinforced) == 1
    reinforced = {entry.id: entry for entry in check(fleet, ahead)}
    corrected = morning(3)
    warnings_at(fleet, evening(3), source)
    report = dream(fleet.store, fleet.memory, corrected, fleet.rules, CONFIG)
    assert report.clock_backwards
    future = [entry for entry in check(fleet, corrected) if entry.last_reinforced > corrected]
    assert [entry.id for entry in future] == report_ids(fleet, ahead)
    for entry in future:
        assert entry.last_reinforced == ahead
        assert lifecycle.effective_confidence(entry, corrected, LC) == entry.confidence
    assert {entry.id for entry in check(fleet, corrected)} == set(reinforced)


def report_ids(robot, at) -> list:
    """Ids of the entries last reinforced exactly at ``at``."""
    return [entry.id for entry in robot.memory.load(at).document.entries
            if entry.last_reinforced == at]


def test_a_random_walk_of_the_clock(fleet):
    chance = random.Random(20260507)
    now = morning(2)
    steps = [dt.timedelta(minutes=-5), dt.timedelta(hours=-6), dt.timedelta(days=-3),
             dt.timedelta(hours=1), dt.timedelta(days=1), dt.timedelta(days=9),
             dt.timedelta(days=365 * 3), dt.timedelta(days=-365 * 2)]
    last_dream = now
    for _ in range(RANDOM_JUMPS):
        now = now + chance.choice(steps)
        for source in chance.sample(sources(12), 4):
            warnings_at(fleet, now - dt.timedelta(hours=chance.uniform(1, 30)), source, 20)
        size = len(check(fleet, now))
        report = dream(fleet.store, fleet.memory, now, fleet.rules, CONFIG)
        assert report.clock_backwards == (now < last_dream)
        if not report.clock_backwards:
            last_dream = now
            assert len(report.pruned) <= max(1, int(size * LC.max_prune_fraction))
        check(fleet, now)
    history = [record for entry in check(fleet, now) for record in fleet.store.history(entry.id)]
    assert all(record.action in ('manual', 'create', 'reinforce', 'resolve', 'reopen', 'prune')
               for record in history)


moments = st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2400, 1, 1),
                       timezones=st.just(UTC))
confidences = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=EXAMPLES, deadline=None)
@given(first=moments, reinforced=moments, now=moments, confidence=confidences,
       steps=st.integers(min_value=0, max_value=30))
def test_lifecycle_at_any_moment(first, reinforced, now, confidence, steps):
    entry = new_entry('hardware_observation', 'encoder drops ticks', confidence, first)
    entry = entry.model_copy(update={'last_reinforced': reinforced})
    effective = lifecycle.effective_confidence(entry, now, LC)
    assert 0.0 <= effective <= confidence and not math.isnan(effective)
    current = entry
    for step in range(steps):
        moment = now + dt.timedelta(days=step * 37 - 400)
        updated = lifecycle.reinforce(current, moment, LC)
        assert 0.0 <= updated.confidence <= 1.0
        assert updated.last_reinforced >= current.last_reinforced
        current = updated


@settings(max_examples=EXAMPLES // 4, deadline=None)
@given(stamps=st.lists(moments, min_size=1, max_size=40), now=moments,
       fraction=st.floats(min_value=0.01, max_value=1.0))
def test_prune_never_takes_more_than_its_share(stamps, now, fraction):
    config = LC.model_copy(update={'max_prune_fraction': fraction})
    entries = [new_entry('environment_note', f'note {index}', 0.5, stamp)
               for index, stamp in enumerate(stamps)]
    outcome = lifecycle.prune(entries, now, config)
    assert len(outcome.pruned) <= max(1, int(len(entries) * fraction))
    assert len(outcome.kept) + len(outcome.pruned) == len(entries)
    assert all(0.0 <= item.effective_confidence < config.prune_min for item in outcome.pruned)
