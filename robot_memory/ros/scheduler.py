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
When memory_node dreams and syncs with peers: one timer on the executor.

The timer fires when the next dream (nightly at ``dream_time``, every ``dream_period_s``) or
peer task is due, and at least every ``SCHEDULE_SAFETY_S``, not on a fixed beat: every wake-up
of the executor rebuilds its wait set over all the node's entities. Before a scheduled dream
the clock is looked at (``dream.clock_watch``): after a jump forward not yet confirmed, the
dream waits. What is due when: ``dream.schedule``.
"""

import datetime as dt
import threading
import time

from rclpy.clock import Clock
from rclpy.clock import ClockType

from robot_memory.dream.clock_watch import ClockWatch
from robot_memory.dream.schedule import next_nightly

SCHEDULE_SAFETY_S = 5.0  # the scheduler looks at least this often (a wall clock that jumps)


class DreamScheduler:
    """The node's dream and peer schedule; ``node`` runs the dreams (``run_dream``)."""

    def __init__(self, node, group):
        self._node = node
        self._lock = threading.Lock()
        node_settings = node.settings.node
        self.clock_watch = ClockWatch(node_settings.clock_jump_s, node_settings.clock_steady_s,
                                      node_settings.time_scale)
        self.clock_watch.observe(node.clock_.now(), time.monotonic())
        self.last_held = None  # why the last scheduled dream was not run (a clock jump)
        self.next_period = None
        if node_settings.dream_period_s:
            self.next_period = time.monotonic() + node_settings.dream_period_s
        self.next_nightly = self._nightly()
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._timer = node.create_timer(SCHEDULE_SAFETY_S, self.tick, callback_group=group,
                                        clock=steady)
        self.reschedule()

    def _nightly(self):
        nightly = self._node.settings.node.nightly_time()
        return None if nightly is None else next_nightly(self._node.clock_.now(), *nightly)

    def settings_changed(self, old, new) -> None:
        """Take the node's new settings (``NodeSettings`` before and after) into the schedule."""
        with self._lock:
            if new.dream_period_s != old.dream_period_s:
                self.next_period = (time.monotonic() + new.dream_period_s
                                    if new.dream_period_s else None)
            self.clock_watch.tolerance_s = new.clock_jump_s
            self.clock_watch.steady_s = new.clock_steady_s
            if new.clock_offset_s != old.clock_offset_s:  # seen as a jump: tests
                self._node.clock_.offset = dt.timedelta(seconds=new.clock_offset_s)
            if new.dream_time != old.dream_time:
                self.next_nightly = self._nightly()
        self.reschedule()  # a new period or dream time may be due sooner

    def tick(self) -> None:
        """Dream when the nightly time or the period is due (not across an unconfirmed jump)."""
        node = self._node
        due = False
        node.release_held(self.clock_watch.observe(node.clock_.now(), time.monotonic()))
        with self._lock:
            if self.next_period is not None and time.monotonic() >= self.next_period:
                self.next_period = time.monotonic() + node.settings.node.dream_period_s
                due = True
            if self.next_nightly is not None and node.clock_.now() >= self.next_nightly:
                self.next_nightly = self._nightly()
                due = True
        held = self.clock_watch.dream_held() if due else None
        if held is not None:
            due = False
            self.last_held = held
            node.get_logger().warning(f'scheduled dream not run: {held}',
                                      throttle_duration_sec=60.0)
        if due:
            try:
                node.run_dream('memory_node')
            except Exception as error:  # noqa: B902 - reported in diagnostics; retried later
                node.get_logger().error(f'scheduled dream failed: {error}')
        try:
            node.federation.tick()
        except Exception as error:  # noqa: B902 - a peer problem must not stop the scheduler
            node.get_logger().error(f'peer sync failed: {error}', throttle_duration_sec=30.0)
        self.reschedule()

    def reschedule(self) -> None:
        """Set the schedule timer to fire when the next dream or peer task is due."""
        node = self._node
        delay = min(SCHEDULE_SAFETY_S, node.federation.seconds_until_due())
        with self._lock:
            if self.next_period is not None:
                delay = min(delay, self.next_period - time.monotonic())
            if self.next_nightly is not None:
                delay = min(delay, (self.next_nightly - node.clock_.now()).total_seconds()
                            / node.clock_.scale)
        self._timer.timer_period_ns = int(max(0.01, delay) * 1e9)
        self._timer.reset()
