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
Jumps of the wall clock, seen against the monotonic clock: plain code, no rclpy.

A robot without a real-time clock boots in 1970 or in last month and is stepped to the real
time by NTP minutes later; a person sets the date by hand; a battery-backed clock resets.
Decay and pruning read the wall clock, so a dream right after a jump forward would age every
entry by the size of the jump. :class:`ClockWatch` is told the memory time ``now`` and a
monotonic reading at each tick (the caller reads both: nothing here reads a clock) and compares
how far each moved. When the wall clock moved more than ``tolerance_s`` further (or less far)
than the monotonic clock, that is a jump: its size, direction and when it was seen are kept.

A forward jump is *pending* until it is confirmed: by the clock staying steady (no new jump)
for ``steady_s`` of monotonic time, or by a person (:meth:`ClockWatch.confirm`, which
memory_node calls when a dream is asked on ``~/dream``). memory_node runs no scheduled dream
while a jump is pending. A backward jump is reported the same way; the dream itself refuses
to run on a clock earlier than its last dream.
"""

import dataclasses
import datetime as dt
import threading
from typing import Optional

from robot_memory.common.timeutil import format_iso

JUMP_WARN_S = 600.0  # a jump stays WARN on the clock status this long after it was seen


@dataclasses.dataclass(frozen=True)
class ClockJump:
    """One jump: ``seconds`` the wall clock moved beyond the monotonic one (> 0: forward)."""

    seconds: float
    at: dt.datetime  # the memory time at which it was seen (after the jump)
    monotonic: float  # the monotonic reading at which it was seen

    @property
    def direction(self) -> str:
        """Return 'forward' or 'backward'."""
        return 'forward' if self.seconds > 0 else 'backward'

    def text(self) -> str:
        """Return e.g. 'forward by 3600 s, seen at 2026-01-01T00:00:00Z'."""
        return f'{self.direction} by {abs(self.seconds):.0f} s, seen at {format_iso(self.at)}'


@dataclasses.dataclass(frozen=True)
class ClockReport:
    """What the watch says now: a level name ('OK' or 'WARN'), a line, and key/values."""

    level: str
    message: str
    values: dict


class ClockWatch:
    """Compares wall-clock progress with monotonic progress between ticks (thread-safe)."""

    def __init__(self, tolerance_s: float = 10.0, steady_s: float = 600.0, scale: float = 1.0):
        self.tolerance_s = tolerance_s
        self.steady_s = steady_s
        self.scale = scale  # memory seconds per monotonic second (a sped-up memory clock)
        self._lock = threading.Lock()
        self._last: Optional[tuple] = None  # (now, monotonic) of the previous tick
        self.last_jump: Optional[ClockJump] = None
        self.pending: Optional[ClockJump] = None  # an unconfirmed forward jump
        self.jumps = 0

    def observe(self, now: dt.datetime, monotonic: float) -> Optional[ClockJump]:
        """Take one tick; return the jump seen since the previous tick, if any."""
        with self._lock:
            last = self._last
            if last is not None and monotonic < last[1]:
                return None  # read before the last tick, by another thread: already seen
            self._last = (now, monotonic)
            if last is None:
                return None
            expected = (monotonic - last[1]) * self.scale
            drift = (now - last[0]).total_seconds() - expected
            if abs(drift) <= self.tolerance_s:
                self._settle(monotonic)
                return None
            jump = ClockJump(drift, now, monotonic)
            self.last_jump, self.jumps = jump, self.jumps + 1
            held = self.pending.seconds if self.pending is not None else 0.0
            if drift > 0:  # two jumps forward before a confirmation add up
                self.pending = ClockJump(held + drift, now, monotonic)
            elif held:  # a step back corrects (part of) the pending step forward
                left = held + drift
                self.pending = ClockJump(left, now, monotonic) if left > self.tolerance_s \
                    else None
            return jump

    def _settle(self, monotonic: float) -> None:
        last = self.last_jump  # the latest jump, forward or back: steady since then
        if self.pending is not None and last is not None and \
                monotonic - last.monotonic >= self.steady_s:
            self.pending = None  # steady long enough: the new time is taken as right

    def confirm(self) -> Optional[ClockJump]:
        """Take the current time as right (a person said so); return the jump that was pending."""
        with self._lock:
            pending, self.pending = self.pending, None
            return pending

    def dream_held(self) -> Optional[str]:
        """Return why a scheduled dream must wait (a pending forward jump), or None."""
        with self._lock:
            pending = self.pending
        return None if pending is None else self._held(pending)

    def _held(self, pending: ClockJump) -> str:
        return (f'clock jumped {pending.text()}; scheduled dreams wait until it has been '
                f'steady for {self.steady_s:g} s, or a dream is asked on ~/dream')

    def report(self, monotonic: float) -> ClockReport:
        """Return the clock's status: WARN while a jump is pending or seen < 600 s ago, else OK."""
        with self._lock:
            pending, last = self.pending, self.last_jump
        values = {'jumps': self.jumps, 'tolerance_s': self.tolerance_s,
                  'steady_s': self.steady_s,
                  'last_jump_s': f'{last.seconds:+.0f}' if last else '',
                  'last_jump_at': format_iso(last.at) if last else '',
                  'dreams_held': pending is not None}
        if pending is not None:
            return ClockReport('WARN', self._held(pending), values)
        if last is not None and monotonic - last.monotonic < JUMP_WARN_S:
            return ClockReport('WARN', f'clock jumped {last.text()}', values)
        return ClockReport('OK', 'steady' if last is None
                           else f'steady; the last jump {last.text()}', values)
