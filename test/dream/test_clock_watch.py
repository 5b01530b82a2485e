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

"""A wall clock that jumps is seen against the monotonic clock (issue 40, point 1, the node)."""

import datetime as dt
import time

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.dream.clock_watch import ClockWatch
from robot_memory.dream.schedule import MemoryClock

T0 = dt.datetime(2026, 4, 1, 2, 0, tzinfo=UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def ticks(watch, pairs):
    """Observe (wall seconds, monotonic seconds) pairs; return the jumps seen."""
    return [jump for wall, mono in pairs if (jump := watch.observe(at(wall), mono)) is not None]


def test_a_steady_clock_and_small_corrections_are_no_jump():
    watch = ClockWatch(tolerance_s=10.0)
    assert ticks(watch, [(0, 100), (5, 105), (10, 110), (19, 115), (20, 120)]) == []
    report = watch.report(120)
    assert (report.level, report.message) == ('OK', 'steady') and watch.dream_held() is None


def test_a_forward_jump_is_reported_with_its_size_direction_and_when_and_holds_dreams():
    watch = ClockWatch(tolerance_s=10.0, steady_s=600.0)
    [jump] = ticks(watch, [(0, 100), (5, 105), (3605, 110)])
    assert (jump.seconds, jump.direction, jump.at) == (3595.0, 'forward', at(3605))
    report = watch.report(111)
    assert report.level == 'WARN', report
    assert report.message.startswith('clock jumped forward by 3595 s, seen at '
                                     '2026-04-01T03:00:05'), report.message
    assert report.values['last_jump_s'] == '+3595' and report.values['dreams_held'] is True
    assert 'scheduled dreams wait until it has been steady for 600 s' in watch.dream_held()


def test_a_pending_jump_is_confirmed_by_a_steady_clock_and_then_reported_ok():
    watch = ClockWatch(tolerance_s=10.0, steady_s=60.0)
    ticks(watch, [(0, 0), (1000, 5)])
    ticks(watch, [(1000 + k * 5, 5 + k * 5) for k in range(1, 12)])  # 55 s steady
    assert watch.dream_held() is not None
    ticks(watch, [(1060, 65)])  # 60 s steady since the jump
    assert watch.dream_held() is None
    assert watch.report(65).level == 'WARN'  # a recent jump is still told
    report = watch.report(5 + 600)
    assert report.level == 'OK' and report.message.startswith('steady; the last jump forward')


def test_a_person_confirms_a_pending_jump():
    watch = ClockWatch(tolerance_s=10.0, steady_s=600.0)
    ticks(watch, [(0, 0), (86400, 5)])
    assert watch.confirm().seconds == 86395.0
    assert watch.dream_held() is None and watch.confirm() is None
    assert watch.report(6).values['dreams_held'] is False


def test_two_jumps_forward_before_a_confirmation_add_up_and_a_new_jump_restarts_the_wait():
    watch = ClockWatch(tolerance_s=10.0, steady_s=60.0)
    ticks(watch, [(0, 0), (100, 5), (105, 10), (50 + 105 + 5, 15)])
    assert watch.pending.seconds == pytest.approx(95.0 + 50.0) and watch.jumps == 2
    ticks(watch, [(160 + 50, 65)])  # 50 s steady after the second jump: still held
    assert watch.dream_held() is not None


def test_a_backward_jump_is_warned_but_holds_no_dream():
    watch = ClockWatch(tolerance_s=10.0, steady_s=600.0)
    [jump] = ticks(watch, [(0, 100), (-3595, 105)])
    assert (jump.direction, jump.seconds) == ('backward', -3600.0)
    report = watch.report(106)
    assert report.level == 'WARN' and 'backward by 3600 s' in report.message
    assert watch.dream_held() is None


def test_a_sped_up_memory_clock_is_no_jump():
    watch = ClockWatch(tolerance_s=10.0, scale=1800.0)
    assert ticks(watch, [(0, 0), (1800, 1), (3600, 2)]) == []
    assert len(ticks(watch, [(3600 + 1800 + 600, 3)])) == 1


def test_the_memory_clock_offset_moves_now_and_is_seen_as_a_jump():
    clock = MemoryClock()
    watch = ClockWatch(tolerance_s=10.0)
    watch.observe(clock.now(), time.monotonic())
    clock.offset = dt.timedelta(hours=2)
    jump = watch.observe(clock.now(), time.monotonic())
    assert jump is not None and jump.seconds == pytest.approx(7200.0, abs=1.0)
    sped = MemoryClock(scale=60.0, offset_s=-3600.0)
    assert abs((sped.now() - dt.datetime.now(UTC)).total_seconds() + 3600.0) < 5.0


def test_a_step_back_corrects_the_pending_jump_forward():
    watch = ClockWatch(tolerance_s=10.0, steady_s=600.0)
    watch.observe(T0, 0.0)
    watch.observe(T0 + dt.timedelta(seconds=7201), 1.0)
    assert watch.pending is not None and watch.pending.seconds == pytest.approx(7200)
    back = watch.observe(T0 + dt.timedelta(seconds=2), 2.0)  # NTP steps it back
    assert back is not None and back.seconds == pytest.approx(-7200)
    assert watch.pending is None and watch.dream_held() is None


def test_a_partial_step_back_leaves_the_rest_pending():
    watch = ClockWatch(tolerance_s=10.0, steady_s=600.0)
    watch.observe(T0, 0.0)
    watch.observe(T0 + dt.timedelta(seconds=7201), 1.0)
    watch.observe(T0 + dt.timedelta(seconds=3602), 2.0)
    assert watch.pending is not None and watch.pending.seconds == pytest.approx(3600)
