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
The dream summary from memory_node.

In ``~/dream``'s reply, beside the memory file, and on the latched ``~/dream_summary``
topic (a subscriber that joins late, even after a restart of the node, still gets the last
one). The installed node runs in its own process.
"""

import datetime as dt

from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

from robot_memory.common.timeutil import UTC
from robot_memory.evidence import observations
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.rules import Rules
from robot_memory.srv import Dream
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import spin
from support.ros_probe import wait_gone
from support.ros_probe import wait_ready

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def latched_summary(probe, node, timeout: float = 10.0) -> str:
    """Return what a subscriber that joins now receives on the node's ~/dream_summary."""
    received = []
    subscription = probe.create_subscription(String, f'{node.prefix}/dream_summary',
                                             received.append, LATCHED)
    try:
        assert wait_for(lambda: received, timeout, spin=spin(probe)), 'no latched summary'
    finally:
        probe.destroy_subscription(subscription)
    return received[-1].data


def test_the_summary_is_replied_kept_and_latched_across_a_restart(tmp_path, probe):
    node = NodeProcess(tmp_path, 'it_summary')
    store = EvidenceStore(tmp_path / 'robot-memory.db', Rules.default())
    start = dt.datetime.now(UTC) - dt.timedelta(minutes=90)
    try:  # an hour of warnings: an entry that a dream a moment later does not prune
        for minute in range(64):
            store.add(observations.diagnostic(start + dt.timedelta(minutes=minute),
                                              'base: lidar', 'lidar_front', 1,
                                              'dropped 12 scans in the last second'))
    finally:
        store.close()
    node.start()
    try:
        wait_ready(probe, node)
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        [entry_id] = reply.created
        assert reply.summary.startswith('# Dream of ')
        assert f'(`{entry_id}`, hardware_observation)' in reply.summary
        assert 'lidar_front' in reply.summary and '## Learned (1)' in reply.summary
        [kept] = tmp_path.glob('robot-memory.md.dream-*.md')
        assert kept.read_text(encoding='utf-8') == reply.summary
        assert latched_summary(probe, node) == reply.summary
        # A dream that finds nothing new leaves the useful summary on the topic.
        again = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert again.success and again.created == [] and 'Nothing in the memory changed' \
            in again.summary, again.summary
        assert latched_summary(probe, node) == reply.summary
    finally:
        assert node.stop() == 0, node.log()
    wait_gone(probe, node)
    restarted = NodeProcess(tmp_path, 'it_summary').start()
    try:
        wait_ready(probe, restarted)
        assert latched_summary(probe, restarted) == reply.summary
    finally:
        assert restarted.stop() == 0, restarted.log()
