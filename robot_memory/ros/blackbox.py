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
The black box's ROS edge: raw subscriptions into the ring buffer, a thread that writes.

Each kept topic is subscribed with ``raw=True`` by a node of the recorder's own, spun by one
thread of its own: the serialized bytes go into the ring buffer as they came (no
deserialization on the hot path), and a flood on them takes no thread from the node's
executor. The node hands each ingested
observation to :meth:`BlackboxRecorder.observe`; a fault's window is written by a thread
of its own once its seconds after are over, and linked in the database on the store's
worker. The pure logic is ``robot_memory.evidence.blackbox``.
"""

import pathlib
import threading
import time
from typing import Callable
from typing import Optional

from ament_index_python.packages import get_package_share_directory
from ament_index_python.packages import PackageNotFoundError
from rclpy.executors import ExternalShutdownException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from robot_memory.evidence import blackbox
from robot_memory.ros import convert
from robot_memory.ros.health import HealthStatus
from robot_memory.ros.health import OK
from robot_memory.ros.health import WARN
from robot_memory.ros.heap import HeapTrimmer
from robot_memory.ros.parameters import StartupError

MB = 2**20
TICK_S = 0.2


def find_msg(type_name: str) -> Optional[str]:
    """Return the text of ``pkg/msg/Type``'s .msg file from its installed share, or None."""
    package, _, name = type_name.partition('/msg/')
    try:
        path = pathlib.Path(get_package_share_directory(package)) / 'msg' / f'{name}.msg'
        return path.read_text(encoding='utf-8')
    except (PackageNotFoundError, OSError, ValueError):
        return None


def folder_of(settings, db_path: pathlib.Path) -> pathlib.Path:
    """Return the recordings folder: blackbox_folder, or beside the database."""
    if settings.blackbox_folder:
        return pathlib.Path(settings.blackbox_folder).expanduser()
    return db_path.with_suffix('.blackbox')


def policy_of(settings) -> blackbox.Policy:
    """Return the black box's Policy from the node's settings."""
    return blackbox.Policy(settings.blackbox_before_s, settings.blackbox_after_s,
                           int(settings.blackbox_ram_mb * MB),
                           int(settings.blackbox_recording_mb * MB),
                           int(settings.blackbox_total_mb * MB), settings.blackbox_cooldown_s)


def start(node) -> Optional['BlackboxRecorder']:
    """Return the node's black box, started; None when no blackbox_topics are set."""
    settings = node.settings.node
    if not settings.blackbox_topics:
        return None
    try:
        return BlackboxRecorder(node, settings)
    except (blackbox.BlackboxError, convert.MessageTypeError) as error:
        raise StartupError(f'black box: {error}') from None


def _taker(topic: str, add: Callable[[str, int, bytes], None]) -> Callable[[bytes], None]:
    """Return the callback of one raw subscription: its message into the ring, stamped now."""
    def take(data: bytes) -> None:
        add(topic, time.time_ns(), data)
    return take


class BlackboxRecorder:
    """Raw subscriptions, the ring buffer and the writing thread of one node."""

    def __init__(self, node, settings):
        self.node = node
        self.folder = blackbox.check_folder(folder_of(settings, node.db_path))
        self.box = blackbox.BlackBox(policy_of(settings))
        kept, freeze = settings.blackbox()
        self.kept = dict(kept)
        self.freeze = dict(freeze)
        # The writer's library is loaded now (evidence.blackbox writes with it), not at the
        # first fault, when the ring is full and the flood goes on.
        # A node without a black box never loads the blackbox extra:
        # lazy: rosbags 16 ms and 5 MB, mcap with zstd and lz4 61 ms and 4 MB
        import mcap.writer  # noqa: F401 - loaded, not named
        from rosbags import typesys
        self.store = typesys.get_typestore(typesys.Stores.ROS2_KILTED)
        self.schemas = {topic: blackbox.message_definition(type_name, find_msg, self.store)
                        for topic, type_name in {**self.kept, **self.freeze}.items()}
        self.started = time.monotonic()
        self.written = 0
        self.last_problem: Optional[str] = None
        self.heap = HeapTrimmer()
        self._stop = threading.Event()
        # The kept topics have a node and a thread of their own: a flood on them is taken
        # by one thread, so its messages live in one malloc arena, and it takes no thread
        # from the node's executor (on the node's six, a bare raw subscriber held 6 MB more
        # under 10 MB/s than on one).
        self.receiver = Node(f'{node.get_name()}_blackbox', namespace=node.get_namespace(),
                             context=node.context, use_global_arguments=False,
                             start_parameter_services=False, enable_rosout=False)
        for topic, type_name in {**self.freeze, **self.kept}.items():
            keep = topic in self.kept
            add = self.box.buffer.add if keep else self.box.buffer.note_last
            self.receiver.create_subscription(
                convert.import_message_type(type_name), topic,
                _taker(topic, add),
                qos_profile_sensor_data, raw=True)
        self.executor = SingleThreadedExecutor(context=node.context)
        self.executor.add_node(self.receiver)
        self._receiving = threading.Thread(target=self._receive, name='blackbox-receive',
                                           daemon=True)
        self._receiving.start()
        for topic in self.no_definition():
            node.get_logger().warning(
                f'black box: no message definition found for {topic} ({self.kept[topic]}); '
                'it is recorded with an empty schema, so Foxglove lists it but cannot decode '
                "it: install the type's interface package (its share/ .msg files)")
        self._thread = threading.Thread(target=self._run, name='blackbox', daemon=True)
        self._thread.start()

    def no_definition(self) -> list:
        """Return the kept topics recorded without a message definition."""
        return sorted(topic for topic in self.kept if not self.schemas.get(topic))

    def observe(self, observation) -> None:
        """Note one ingested observation; a fault episode it starts gets its window."""
        self.box.observe(observation.source, self.node.rules.classify(observation),
                         time.time_ns())

    def stop(self, timeout: float = 10.0) -> None:
        """
        Stop the writing thread (a write under way finishes: whole or no file).

        A window still waiting for its seconds after the fault is written with what came
        so far: a fault just before a shutdown keeps its recording.
        """
        self._stop.set()
        self.executor.shutdown(timeout)
        self._receiving.join(timeout)
        self.receiver.destroy_node()
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._write_due(time.time_ns() + int(self.box.policy.after_s * 1e9) + 1)

    def _receive(self) -> None:
        try:
            self.executor.spin()
        except ExternalShutdownException:  # Ctrl-C: the context is shut down
            pass

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
            self._write_due(time.time_ns())

    def _write_due(self, now_ns: int) -> None:
        due = self.box.due(now_ns)
        for window, hold in due:
            try:
                self._write(window, hold)
            except Exception as error:  # noqa: B902 - said on diagnostics, next goes on
                self._problem(f'fault {window.signature}: {error}')
            finally:
                self.box.buffer.release(hold)
        if due:  # the writer's chunks go back to the system, not only to the C heap
            self.heap.maybe_trim(force=True)

    def _write(self, window: blackbox.Window, hold: blackbox.Hold) -> None:
        policy = self.box.policy
        if not hold.count:
            self._problem(f'fault {window.signature}: no message on the kept topics in the '
                          f'{policy.before_s + policy.after_s:g} s around it, so no recording; '
                          'check that blackbox_topics are published')
            return
        topics = hold.topics
        path = self.folder / blackbox.recording_name(window.signature, window.fault_ns)
        size, digest = blackbox.write_recording(
            path, {topic: (self.kept[topic], self.schemas.get(topic)) for topic in topics},
            self.box.buffer.stream(hold, policy.chunk_bytes),
            {'signature': window.signature, 'source_key': window.source_key,
             'rrn': self.node.rrn}, policy.chunk_bytes)
        frame = blackbox.freeze_frame(window.freeze, self.freeze, self.store)
        total = policy.total_bytes

        def link(store):
            with store.db.atomic(immediate=True):
                blackbox.record(store.db.conn, path, window, size, topics, digest, frame)
                return blackbox.prune(store.db.conn, total)

        self.node.worker.call(link, timeout=30.0)
        self.written += 1

    def _problem(self, text: str) -> None:
        self.last_problem = text
        self.node.get_logger().warning(f'black box: {text}')

    def health(self) -> HealthStatus:
        """Return the "black box" status: what is kept, and what is wrong with it."""
        buffer = self.box.buffer
        values = {'recordings_written': self.written, 'buffer_bytes': buffer.bytes,
                  'buffer_bound_bytes': buffer.ram_bytes,
                  'dropped_for_ram': buffer.dropped_for_ram, 'folder': str(self.folder)}
        problems = []
        policy = self.box.policy
        if time.monotonic() - self.started > policy.before_s + policy.after_s:
            silent = sorted((set(self.kept) | set(self.freeze)) - buffer.topics_seen())
            if silent:
                problems.append(f'no message yet on {", ".join(silent)}: check the topic '
                                'names and types (still subscribed)')
        if self.no_definition():
            problems.append(f'recorded without a message definition: '
                            f'{", ".join(self.no_definition())}')
        if self.last_problem:
            problems.append(f'last: {self.last_problem}')
        if problems:
            return HealthStatus(WARN, '; '.join(problems), values)
        return HealthStatus(OK, f'keeping {len(self.kept)} topics, {self.written} recordings '
                                'written', values)
