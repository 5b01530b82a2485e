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


"""The memory clock and the nightly time of memory_node, tested without ROS."""

import datetime as dt
import time

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.dream.schedule import MemoryClock
from robot_memory.dream.schedule import next_nightly


@pytest.fixture
def berlin(monkeypatch):
    """Run the test in a local time zone an hour east of UTC in winter."""
    monkeypatch.setenv('TZ', 'Europe/Berlin')
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_next_nightly_is_later_today_when_the_time_has_not_come(berlin):
    now = dt.datetime(2026, 1, 10, 12, 0, tzinfo=UTC)  # 13:00 in Berlin (CET, UTC+1)
    assert next_nightly(now, 14, 30) == dt.datetime(2026, 1, 10, 13, 30, tzinfo=UTC)


def test_next_nightly_is_tomorrow_when_the_time_has_passed_or_is_now(berlin):
    now = dt.datetime(2026, 1, 10, 2, 0, tzinfo=UTC)  # 03:00 in Berlin
    assert next_nightly(now, 3, 0) == dt.datetime(2026, 1, 11, 2, 0, tzinfo=UTC)
    assert next_nightly(now, 2, 59) == dt.datetime(2026, 1, 11, 1, 59, tzinfo=UTC)


def test_next_nightly_follows_daylight_saving_on_the_night_itself(berlin):
    # Clocks go forward at 02:00 on 2026-03-29: 03:00 that night is CEST (UTC+2).
    spring = dt.datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    assert next_nightly(spring, 3, 0) == dt.datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    # And back at 03:00 on 2026-10-25: 04:00 that night is CET (UTC+1).
    autumn = dt.datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    assert next_nightly(autumn, 4, 0) == dt.datetime(2026, 10, 25, 3, 0, tzinfo=UTC)
    # 02:30 happens twice that night: the first time, still CEST.
    assert next_nightly(autumn, 2, 30) == dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


def test_the_memory_clock_at_scale_one_is_the_wall_clock():
    clock = MemoryClock()
    before = dt.datetime.now(UTC)
    now = clock.now()
    assert before <= now <= dt.datetime.now(UTC)
    assert now.tzinfo is not None


def test_a_sped_up_memory_clock_runs_scale_times_faster():
    clock = MemoryClock(3600.0)
    first = clock.now()
    time.sleep(0.05)
    elapsed = (clock.now() - first).total_seconds()
    assert elapsed >= 0.05 * 3600, elapsed  # at least three minutes of memory time
    assert elapsed < 3600 * 60, elapsed  # and not an hour of them


def test_sped_up_clocks_with_one_origin_agree():
    origin = dt.datetime.now(UTC) - dt.timedelta(seconds=10)
    first, second = MemoryClock(100.0, origin), MemoryClock(100.0, origin)
    # Ten wall seconds after the origin at a scale of 100: 1,000 s of memory time.
    gap = abs((first.now() - second.now()).total_seconds())
    assert gap < 5.0, gap
    assert first.now() - origin >= dt.timedelta(seconds=1000)


def test_a_naive_origin_is_taken_as_utc():
    origin = dt.datetime.now(UTC) - dt.timedelta(seconds=1)
    naive = MemoryClock(10.0, origin.replace(tzinfo=None)).now()
    aware = MemoryClock(10.0, origin).now()
    assert abs((naive - aware).total_seconds()) < 1.0
