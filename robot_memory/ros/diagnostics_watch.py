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
memory_node's ``/diagnostics`` statuses as plain rows, for ``robot-memory serve --diagnostics``.

A small rclpy node of its own context spins on a thread and keeps the latest status of
each name that starts with the node's prefix; a status not heard for ``stale_s`` is shown
as STALE, as rqt_robot_monitor shows it.
"""

import threading
import time

STALE = 3


class DiagnosticsWatch:
    """The latest ``/diagnostics`` statuses named ``<prefix>...``; ``close()`` stops it."""

    def __init__(self, prefix: str = 'robot_memory: ', stale_s: float = 10.0):
        # lazy: rclpy, 77 ms and 22 MB of robot-memory --help (cli.serve_command imports this)
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
        self.prefix = prefix
        self.stale_s = stale_s
        self._lock = threading.Lock()
        self._latest: dict = {}
        self._context = rclpy.Context()
        # The page's server owns Ctrl-C and SIGTERM: rclpy installs no handler of its own.
        rclpy.init(context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        self._node = rclpy.create_node('robot_memory_page', context=self._context)
        self._node.create_subscription(DiagnosticArray, '/diagnostics', self.diagnostics_callback,
                                       10)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self._node)
        self._thread = threading.Thread(target=self._spin, name='robot_memory diagnostics',
                                        daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self._executor.spin()
        except Exception:  # noqa: B902 - the context was shut down by close()
            pass

    def diagnostics_callback(self, message) -> None:
        """Keep each of the node's statuses as plain data, with when it was heard."""
        heard = time.monotonic()
        with self._lock:
            for status in message.status:
                if status.name.startswith(self.prefix):
                    level = status.level
                    self._latest[status.name] = (heard, {
                        'name': status.name, 'message': status.message,
                        'level': level[0] if isinstance(level, (bytes, bytearray)) else level,
                        'values': {item.key: item.value for item in status.values}})

    def rows(self) -> list:
        """Return the statuses, each STALE when not heard for ``stale_s``."""
        now = time.monotonic()
        with self._lock:
            items = sorted(self._latest.values(), key=lambda item: item[1]['name'])
        rows = []
        for heard, row in items:
            if now - heard > self.stale_s:
                row = dict(row, level=STALE,
                           message=f'not heard for {now - heard:.0f} s (was: {row["message"]})')
            rows.append(row)
        return rows

    def close(self) -> None:
        """Stop listening."""
        import rclpy  # lazy: as in __init__, which loaded it
        self._executor.shutdown()
        self._node.destroy_node()
        rclpy.try_shutdown(context=self._context)
        self._thread.join(5)
