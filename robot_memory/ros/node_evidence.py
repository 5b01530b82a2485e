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
How memory_node takes evidence in: its topics, their messages as observations, what is lost.

``EvidenceIntake`` is a part of ``MemoryNode`` (robot_memory.ros.node): the subscriptions to
``/diagnostics``, ``/rosout`` and the telemetry topics (taken by the ingest thread,
``robot_memory.ros.ingest``), each message turned into observations for the store worker, or
held while a jump forward of the clock is pending (``evidence.clock.HeldEvidence``), and the
count of what was refused or lost on the way (``evidence.sequence_gaps``).
"""

from typing import Any
from typing import Callable
from typing import Optional

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import Log
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import qos_profile_sensor_data
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

from robot_memory.evidence import observations
from robot_memory.evidence.clock import HeldEvidence
from robot_memory.evidence.sequence_gaps import SequenceGaps
from robot_memory.ros import convert
from robot_memory.ros.ingest import IngestThread
from robot_memory.ros.parameters import StartupError

EVIDENCE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                          reliability=ReliabilityPolicy.RELIABLE,
                          durability=DurabilityPolicy.VOLATILE)


class EvidenceIntake:
    """The node's evidence in: subscriptions, observations, refusals and losses (a mixin)."""

    # What MemoryNode holds, which these methods read and change.
    settings: Any
    rules: Any
    clock_: Any
    worker: Any
    schedule: Any
    blackbox: Any
    active: Any
    held: HeldEvidence
    ingest: IngestThread
    refused: int
    loss_events: int
    gaps_counted: Optional[bool]
    _gaps: SequenceGaps
    _own_gids: set
    _own_prefix: str
    _own_logger: str
    get_logger: Callable[..., Any]
    get_name: Callable[[], str]

    def _init_intake(self) -> None:
        """Start the counts of what is refused and lost, and the book of held evidence."""
        self._own_prefix = f'{self.get_name()}: '
        self._own_logger = self.get_logger().name
        self.refused = self.loss_events = 0
        self._gaps = SequenceGaps()  # messages of /diagnostics and /rosout publishers lost
        self.gaps_counted = None  # unknown until a message arrives: does rclpy give GIDs?
        self.held = HeldEvidence()  # taken in after a jump forward of the clock not confirmed

    def _telemetry_types(self) -> list:
        """Return (topic, type name, message type) of each configured telemetry topic."""
        node_settings = self.settings.node
        telemetry_types = []
        for topic, type_name in node_settings.telemetry():
            try:
                telemetry_types.append((topic, type_name, convert.import_message_type(type_name)))
            except convert.MessageTypeError as error:
                raise StartupError(f'telemetry topic {topic} with type {type_name}: {error}') \
                    from None
        for topic, type_name, _ in telemetry_types:
            if not self.rules.telemetry_rules_for(topic, type_name):
                self.get_logger().warning(
                    f'telemetry topic {topic} ({type_name}): no rule in '
                    f'{node_settings.rules_file or "the built-in defaults"} reads it, so its '
                    'numbers are context signals only, never evidence; add a telemetry rule for '
                    'it (see '
                    'config/observation_rules.yaml) and set rules_file')
        return telemetry_types

    def _subscribe(self, telemetry_types) -> None:
        """
        Subscribe to the evidence topics: /diagnostics, /rosout and telemetry.

        Their messages are taken by the ingest thread, not the executor (see ros/ingest.py).
        """
        self.ingest = IngestThread(self, on_error=self._ingest_error)
        events = SubscriptionEventCallbacks(message_lost=self.message_lost_callback)
        # Taken serialized: robot_memory.common.cdr reads the few fields we need far cheaper
        # than rclpy builds message objects (the cost that matters in a flood).
        self.ingest.subscribe(DiagnosticArray, '/diagnostics', self._ingest_diagnostics,
                              EVIDENCE_QOS, event_callbacks=events, raw=True)
        self.ingest.subscribe(Log, '/rosout', self._ingest_log, EVIDENCE_QOS,
                              event_callbacks=events)
        for topic, type_name, message_type in telemetry_types:
            self.ingest.subscribe(
                message_type, topic,
                lambda message, _info, t=topic, n=type_name: self.telemetry_callback(
                    t, n, message),
                qos_profile_sensor_data)

    def _ingest_error(self, error: Exception) -> None:
        """Log that a handler of the ingest thread failed on one message (the thread goes on)."""
        self.get_logger().error(f'ingestion: {type(error).__name__}: {error}',
                                throttle_duration_sec=10.0)

    def _refuse(self, error: ValueError) -> None:
        self.refused += 1
        self.get_logger().warning(f'observation refused: {error}', throttle_duration_sec=10.0)

    def _note_sequence(self, info) -> bool:
        """Count the messages of this message's publisher that never reached us; True: ours."""
        if 'publisher_gid' not in info:  # rclpy < 9 (Jazzy): no publisher, no gaps to count
            self.gaps_counted = False
            return False
        self.gaps_counted = True
        gid = info['publisher_gid']
        if gid is not None and gid['data'] not in self._own_gids:
            self._gaps.observe(gid['data'], info['publication_sequence_number'])
        return gid is not None and gid['data'] in self._own_gids

    def _ingest_diagnostics(self, raw: bytes, info) -> None:
        """Each status of a serialized DiagnosticArray (but our own) becomes an observation."""
        if self._note_sequence(info):
            return  # our own health, every period: not decoded (its statuses would be left out)
        try:
            statuses = convert.diagnostic_statuses(raw)
        except convert.MessageDecodeError as error:
            self._refuse(error)
            return
        for item in observations.from_statuses(self.clock_.now(), statuses, self._own_prefix):
            if isinstance(item, observations.ObservationError):
                self._refuse(item)
            else:
                self._take(item)
                if self.blackbox is not None:
                    self.blackbox.observe(item)

    def _ingest_log(self, record: Log, info) -> None:
        """ERROR and FATAL log records of other nodes become observations."""
        self._note_sequence(info)
        try:
            observation = observations.log_record(record, self.clock_.now(), self._own_logger)
        except observations.ObservationError as error:
            self._refuse(error)
            return
        if observation is not None:
            self._take(observation)
            if self.blackbox is not None:
                self.blackbox.observe(observation)

    def telemetry_callback(self, topic: str, type_name: str, message) -> None:
        """Turn a message of a configured telemetry topic into an observation."""
        try:
            parsed = observations.telemetry(topic, type_name, message, self.clock_.now())
        except observations.ObservationError as error:
            self._refuse(error)
            return
        self._take(parsed.observation)

    def _take(self, observation) -> bool:
        """Store one observation, or hold it while a jump forward of the clock is pending."""
        self.active.observe(observation)
        if self.schedule.clock_watch.pending is not None:  # its stamp may be in the future
            return self.held.hold(observation)
        return self.worker.submit(observation)

    def release_held(self, jump=None) -> int:
        """
        Store what was held once the clock is settled; return how many.

        As stamped when the jump forward was confirmed; moved back by the step when the clock
        stepped back (``jump``, as seen by the watch at this look).
        """
        if not self.held.items:
            return 0
        if jump is not None and jump.seconds < 0:
            items = self.held.release(-jump.seconds)
        elif self.schedule.clock_watch.pending is None:
            items = self.held.release()
        else:
            return 0
        for item in items:
            self.worker.submit(item)
        return len(items)

    def message_lost_callback(self, info) -> None:
        """
        Count the samples the middleware reported lost: kept apart from the counted gaps.

        Samples it reports are gaps in a publisher's sequence numbers too, so adding them
        to ``lost_in_middleware`` would count them twice; they are shown on their own.
        """
        self.loss_events += int(getattr(info, 'total_count_change', 1) or 1)
