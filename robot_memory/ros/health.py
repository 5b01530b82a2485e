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
The health of memory_node as named tasks, the way ``diagnostic_updater`` does it.

Each task is a function returning a :class:`HealthStatus`; :class:`HealthTasks` keeps
them in the order they were added and turns each into one ``DiagnosticStatus`` named
``"<node name>: <task>"`` so an aggregator can group them by prefix. :class:`HealthThread`
publishes them every period on a thread of its own.
"""

import dataclasses
import threading
import time
from typing import Callable

from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue

OK = DiagnosticStatus.OK
WARN = DiagnosticStatus.WARN
ERROR = DiagnosticStatus.ERROR
LEVELS = (OK, WARN, ERROR, DiagnosticStatus.STALE)


@dataclasses.dataclass(frozen=True)
class HealthStatus:
    """What one health task says: a DiagnosticStatus level, one line, and key/values."""

    level: bytes
    message: str
    values: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f'health level {self.level!r} is not one of OK, WARN, ERROR, '
                             'STALE (diagnostic_msgs/DiagnosticStatus)')
        if not isinstance(self.message, str):
            raise ValueError(f'a health message is text, not {type(self.message).__name__}')


class HealthTasks:
    """The registry of named health tasks of one node."""

    def __init__(self, node_name: str, hardware_id: str):
        self.prefix = f'{node_name}: '
        self.hardware_id = hardware_id
        self._tasks: list = []
        # What each task said last, with the message made of it: a report that did not
        # change since the last period is published again without making it anew (most
        # tasks' do not, and a message of a dozen KeyValues costs more than the task).
        self._made: dict = {}

    def add(self, name: str, task) -> None:
        """Add ``task``, a function returning a HealthStatus, as ``name``."""
        self._tasks.append((name, task))

    def names(self) -> list:
        """Return the names of the tasks, in order."""
        return [name for name, _ in self._tasks]

    def statuses(self) -> list:
        """Run every task; return one DiagnosticStatus each (ERROR for a task that failed)."""
        return [self.status(name, self._run(task)) for name, task in self._tasks]

    @staticmethod
    def _run(task) -> HealthStatus:
        # One task failing (a file system error it did not expect) must not silence the
        # others: it reports ERROR with what went wrong, and the rest report as usual.
        try:
            return task()
        except Exception as error:  # noqa: B902 - reported as the task's status
            return HealthStatus(ERROR, f'this status could not be made: '
                                f'{type(error).__name__}: {error}')

    def status(self, name: str, health: HealthStatus) -> DiagnosticStatus:
        """Return the DiagnosticStatus of task ``name``."""
        said = (health.level, health.message,
                tuple((key, str(value)) for key, value in health.values.items()))
        made = self._made.get(name)
        if made is not None and made[0] == said:
            return made[1]
        message = DiagnosticStatus(
            level=health.level, name=f'{self.prefix}{name}', message=health.message,
            hardware_id=self.hardware_id,
            values=[KeyValue(key=key, value=value) for key, value in said[2]])
        self._made[name] = (said, message)
        return message


class HealthThread:
    """
    Calls ``publish()`` every ``period_s`` on a thread of its own, off rclpy's executor.

    Why: each timer callback on rclpy's MultiThreadedExecutor costs three rebuilds of its
    wait set over every entity of the node, in Python; a thread waiting on an event costs
    one wake-up. At a fixed rate, as a timer: a late report is not followed by a burst.
    """

    def __init__(self, node, publish: Callable[[], None], period_s: float,
                 name: str = 'robot_memory-health'):
        self._node = node
        self._publish = publish
        self.period_s = period_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> 'HealthThread':
        """Start publishing (the first report one period from now)."""
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop publishing (a report being published finishes first); True when it stopped."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        due = time.monotonic() + self.period_s
        while not self._stopping.wait(max(0.0, due - time.monotonic())):
            due = max(due + self.period_s, time.monotonic())
            try:
                self._publish()
            except Exception as error:  # noqa: B902 - logged; the next report comes anyway
                if self._node.context.ok():  # after a stop signal the publisher is gone
                    self._node.get_logger().error(f'health not published: {error}',
                                                  throttle_duration_sec=30.0)
