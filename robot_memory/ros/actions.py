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
Aborted action goals as evidence: a subscription to each named action's status topic.

``<action>/_action/status`` (``action_msgs/msg/GoalStatusArray``) has one type for every
action, so the node reads Nav2's, MoveIt's or any action's goals with no code on the robot
and without the action's own types. The pure logic is ``robot_memory.evidence.actions``; each
goal that ends ABORTED is taken like a diagnostic status at ERROR (stored, the black box's
trigger, Active now), each that SUCCEEDED as its OK report.
"""

from action_msgs.msg import GoalStatusArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

from robot_memory.evidence import actions

# rcl_action's status QoS: the last array, latched, so a late reader gets the goals known.
STATUS_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ActionWatch:
    """One GoalTracker per named action, fed by its status topic."""

    def __init__(self, node, names: list):
        self.node = node
        self.trackers = {name: actions.GoalTracker(name) for name in names}
        group = MutuallyExclusiveCallbackGroup()
        for name in names:
            node.create_subscription(
                GoalStatusArray, actions.status_topic(name),
                lambda message, n=name: self.status(n, message), STATUS_QOS,
                callback_group=group)

    def status(self, name: str, message) -> None:
        """Take one status array of action ``name``: its newly ended goals become evidence."""
        goals = [(bytes(item.goal_info.goal_id.uuid), item.status)
                 for item in message.status_list]
        for observation in self.trackers[name].update(goals, self.node.clock_.now()):
            self.node._take(observation)
            recorder = getattr(self.node, 'blackbox', None)
            if recorder is not None:  # an aborted goal starts a recording like any fault
                recorder.observe(observation)

    def counts(self) -> dict:
        """Return each action's ended goals so far: aborted, succeeded, canceled."""
        return {name: dict(tracker.counts) for name, tracker in self.trackers.items()}


def start(node):
    """Return the node's ActionWatch; None when no action is named (action_names empty)."""
    names = node.settings.node.action_names
    return ActionWatch(node, names) if names else None
