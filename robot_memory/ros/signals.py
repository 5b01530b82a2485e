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
Stop signals that repeat while memory_node flushes its evidence.

Ctrl-C in a terminal sends SIGINT to the whole process group, so under ``ros2 launch``
the node gets it from the terminal and again from launch, and then SIGTERM if it is still
flushing when launch's timeout runs out. Python's default SIGINT handler raises
``KeyboardInterrupt`` each time, and the second one cut the shutdown flush short.
:class:`StopSignals` lets the first stop the node as before and only counts the others.
"""

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """A handler for SIGINT and SIGTERM: the first SIGINT stops the node, every later one counts."""

    def __init__(self):
        self.received = []  # names of the stop signals received, in order
        self._stopping = False
        # No lock: Python runs signal handlers in the main thread between bytecodes, so one
        # would deadlock when a signal lands while the main thread holds it.

    def install(self) -> 'StopSignals':
        """Handle SIGINT and SIGTERM from now on (call before rclpy.init, which chains to it)."""
        for number in STOP_SIGNALS:
            signal.signal(number, self)
        return self

    def stopping(self) -> None:
        """Say the node is shutting down: from now on every signal is only counted."""
        self._stopping = True

    def __call__(self, number, frame) -> None:
        """Count the signal; raise KeyboardInterrupt for a first SIGINT, as Python does."""
        first = not self.received and not self._stopping
        self.received.append(signal.Signals(number).name)
        self._stopping = True
        # rclpy's own handler, which runs before this one, has already shut the context
        # down for SIGINT and SIGTERM; the KeyboardInterrupt only ends a spin that is not
        # waiting on that context.
        if first and number == signal.SIGINT:
            raise KeyboardInterrupt

    def ignore(self) -> None:
        """Ignore SIGINT and SIGTERM from now on (also while the interpreter exits)."""
        for number in STOP_SIGNALS:
            signal.signal(number, signal.SIG_IGN)

    def describe(self) -> str:
        """Return the signals received, e.g. 'SIGINT x2, SIGTERM', or '' for none."""
        names = list(self.received)
        counted = []
        for name in dict.fromkeys(names):
            count = names.count(name)
            counted.append(name if count == 1 else f'{name} x{count}')
        return ', '.join(counted)
