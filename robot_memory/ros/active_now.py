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
"Active now" at the node: the live state, its latched topic, the block's first section.

Every observation the node takes is handed to :meth:`ActiveNowEdge.observe` (the ingest thread;
cheap: the rules' cached classification and a dict update). A timer clears what has been OK for
``active_hold_s`` and publishes ``~/active_now`` (latched, ``ActiveNow``) when anything changed.
The pure logic is ``robot_memory.evidence.active_now`` (the state) and
``robot_memory.rcan.active_now`` (the section).
"""

import datetime as dt
import json

from builtin_interfaces.msg import Time
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

from robot_memory.common.timeutil import format_iso
from robot_memory.evidence import active_now
from robot_memory.evidence.evidence_audit import write_audit
from robot_memory.msg import ActiveFault
from robot_memory.msg import ActiveNow
from robot_memory.rcan import active_now as section

LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
TICK_S = 0.5


def stamp(seconds) -> Time:
    """Return seconds as a builtin_interfaces Time (0 for None)."""
    whole = int(seconds or 0)
    return Time(sec=whole, nanosec=int(round(((seconds or 0) - whole) * 1e9)) % 10**9)


def fault_message(fault) -> ActiveFault:
    """Return one active fault as an ActiveFault message."""
    return ActiveFault(
        source_key=fault.source_key, text=fault.text, severity=int(fault.severity),
        signature=fault.signature, active_since=stamp(fault.active_since),
        last_seen=stamp(fault.last_seen), count=min(int(fault.count), 2**32 - 1),
        acknowledged=fault.acknowledged, acknowledged_by=fault.acknowledged_by,
        acknowledged_at=stamp(fault.acknowledged_at))


class ActiveNowEdge:
    """The node's live state of its sources, published latched on ``~/active_now``."""

    def __init__(self, node):
        self.node = node
        self.state = active_now.LiveState(node.settings.node.active_hold_s)
        self.publisher = node.create_publisher(ActiveNow, '~/active_now', LATCHED_QOS)
        self._published = -1
        self.publish()
        self.timer = node.create_timer(TICK_S, self.tick,
                                       callback_group=MutuallyExclusiveCallbackGroup())

    def now_s(self) -> float:
        """Return the memory clock's now in seconds."""
        return self.node.clock_.now().timestamp()

    def observe(self, observation) -> None:
        """Take one observation the node stores (any source)."""
        self.state.observe(observation, self.node.rules.classify(observation),
                           observation.stamp.timestamp())

    def tick(self) -> None:
        """Clear what has been OK long enough; publish when anything changed."""
        self.state.expire(self.now_s())
        if self.state.version != self._published:
            self.publish()

    def publish(self) -> None:
        """Publish the live state as it is now."""
        version = self.state.version
        now = self.now_s()
        faults = self.state.faults()
        self.publisher.publish(ActiveNow(
            rrn=self.node.rrn, stamp=stamp(now), faults=[fault_message(f) for f in faults],
            text=section.section_text(faults, now), hold_s=self.state.hold_s))
        self._published = version
        if version:  # the latched block shows "Active now" as it is
            self.node.publish_context()

    def faults(self) -> list:
        """Return the faults active now (cleared ones gone)."""
        self.state.expire(self.now_s())
        return self.state.faults()

    def rows(self) -> list:
        """Return the active faults as plain data for the operator page (times as text)."""
        now = self.now_s()
        return [dict(fault.to_dict(), since=section.age(now - fault.active_since),
                     last=section.age(now - fault.last_seen),
                     severity_name=section.SEVERITIES.get(fault.severity, 'ERROR'),
                     acknowledged_when=(format_iso(_moment(fault.acknowledged_at))
                                        if fault.acknowledged_at else ''))
                for fault in self.faults()]

    def acknowledge(self, source_key: str, actor: str, reason: str) -> dict:
        """Mark an active fault as seen by ``actor``, audited; return it as plain data."""
        now = self.node.clock_.now()
        fault = self.state.acknowledge(source_key, actor, now.timestamp())

        def audit(store):
            conn = store.db.conn
            row = conn.execute('SELECT entry_id FROM signatures WHERE signature = ?',
                               (fault.signature,)).fetchone() if fault.signature else None
            with store.db.atomic(immediate=True):
                write_audit(conn, [(format_iso(now), (row[0] if row and row[0] else
                                                      fault.source_key),
                                    'acknowledge', actor, reason or 'acknowledged on the page',
                                    json.dumps({'source_key': fault.source_key,
                                                'text': fault.text,
                                                'severity': fault.severity,
                                                'active_since': fault.active_since},
                                               ensure_ascii=False, sort_keys=True), None)])
        self.node.worker.call(audit, timeout=10.0)
        self.publish()
        return fault.to_dict()


def block(node, build, now: dt.datetime, token_budget=None):
    """Return the node's block at ``now``: ``build(budget)``'s, "Active now" first."""
    edge = getattr(node, 'active', None)
    config = node.settings.lifecycle
    budget = token_budget or config.token_budget
    if edge is None:  # during start-up
        return build(budget)
    block, _ = section.with_active_now(build, edge.faults(), now.timestamp(), budget, config)
    return block


def reply(node, response) -> None:
    """Fill GetContext's active_now fields with the faults active now."""
    edge = node.active
    faults = edge.faults()
    response.active_now = [fault_message(fault) for fault in faults]
    response.active_now_text = section.section_text(faults, edge.now_s())


def _moment(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def start(node) -> ActiveNowEdge:
    """Return the node's live state, publishing (always on: it costs a dict and a timer)."""
    return ActiveNowEdge(node)
