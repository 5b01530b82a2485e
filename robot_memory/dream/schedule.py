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
When memory_node dreams: the memory clock (optionally sped up) and the nightly time.

Plain code, no rclpy: the node asks :class:`MemoryClock` for now and
:func:`next_nightly` for the next nightly dream.
"""

import datetime as dt
import time

from robot_memory.common.timeutil import to_utc
from robot_memory.common.timeutil import UTC


class MemoryClock:
    """
    The memory's notion of now: the wall clock, optionally sped up for demos and tests.

    Sped up, memory time is ``origin + (wall - origin) * scale`` at start-up and then runs
    ``scale`` times faster on the monotonic clock. ``origin`` defaults to the start; peers
    given the same origin agree on the memory time. ``offset`` (seconds, changeable while
    running) is added to it: for a robot whose clock is known to be off; a change is a jump of
    the memory clock, as one of the wall clock would be.
    """

    def __init__(self, scale: float = 1.0, origin=None, offset_s: float = 0.0):
        self.scale = scale
        self.offset = dt.timedelta(seconds=offset_s)
        wall = dt.datetime.now(UTC)
        origin = wall if origin is None else to_utc(origin)
        self._memory0 = origin + (wall - origin) * scale
        self._mono0 = time.monotonic()

    def now(self) -> dt.datetime:
        """Return the current memory time (aware UTC)."""
        if self.scale == 1.0:
            return dt.datetime.now(UTC) + self.offset
        elapsed = (time.monotonic() - self._mono0) * self.scale
        return self._memory0 + dt.timedelta(seconds=elapsed) + self.offset


def next_nightly(now: dt.datetime, hour: int, minute: int) -> dt.datetime:
    """
    Return the next local ``hour:minute`` strictly after ``now`` (aware UTC in, UTC out).

    Local is the system's time zone with its daylight-saving rules on the night itself, not
    the offset in force at ``now``: 03:00 in Berlin is 01:00 UTC on the night clocks go
    forward. A time that a change skips is taken as the system's C library takes it; one
    that happens twice, at its first occurrence.
    """
    now = to_utc(now)
    day = now.astimezone().date()
    for offset in range(3):
        wall = dt.datetime.combine(day + dt.timedelta(days=offset), dt.time(hour, minute))
        candidate = wall.astimezone()  # a naive time read by the local rules of that date
        if candidate > now:
            return candidate.astimezone(UTC)
    raise ValueError(f'no local {hour:02d}:{minute:02d} in the three days after {now}')
