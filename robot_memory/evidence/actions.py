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
Evidence from what failed to happen: action goals that ended ABORTED.

Pure (no rclpy). Every ROS 2 action server publishes ``<action>/_action/status``
(``action_msgs/msg/GoalStatusArray``): each goal it knows with its state, again at every change.
That topic has the same type for every action, so it is read with no code on the robot's side
and without the action's own types. :class:`GoalTracker` follows one action's goals and turns
each goal that reaches an end into one observation, once:

* ABORTED (6): the server gave up on the goal (Nav2: planning or control failed, MoveIt: the
  plan or its execution failed). A ``DiagnosticObservation`` at ERROR, ``name`` the action,
  ``hardware_id`` ``action``, message ``goal aborted (status 6)``, the goal id in its values:
  the same rules, signatures and dream as any status, so repeated aborts become an entry.
* SUCCEEDED (4): an OK report of the same source: the dream's resolution and the live state's
  clearing read it as the action working again.
* CANCELED (5) is not a failure: a person, the behaviour tree or a newer goal asked the
  server to stop. It is counted (``canceled``), never evidence.

A status array carries no result: the action's own result code (Nav2's ``error_code``) needs
its result type and a ``get_result`` call, which this reader does not make; the code it gives
is the goal's status code.
"""

import collections
import datetime as dt

from robot_memory.evidence.observations import DiagnosticObservation

# action_msgs/msg/GoalStatus
STATUS_NAMES = {0: 'UNKNOWN', 1: 'ACCEPTED', 2: 'EXECUTING', 3: 'CANCELING', 4: 'SUCCEEDED',
                5: 'CANCELED', 6: 'ABORTED'}
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6
ENDED = (SUCCEEDED, CANCELED, ABORTED)
HARDWARE_ID = 'action'
ABORTED_MESSAGE = 'goal aborted (status 6)'
SUCCEEDED_MESSAGE = 'goal succeeded'
# Goals remembered as ended: a server lists an ended goal until its result expires (Nav2,
# MoveIt: 15 min) and publishes the list at every change; a goal is told once.
MAX_ENDED = 4096


def status_topic(action: str) -> str:
    """Return an action's status topic: ``/navigate_to_pose/_action/status``."""
    return action.rstrip('/') + '/_action/status'


def goal_id_text(uuid: bytes) -> str:
    """Return a goal's 16-byte UUID as the usual 8-4-4-4-12 hex text."""
    text = bytes(uuid).hex()
    return f'{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}'


class GoalTracker:
    """One action's goals: each goal that ends becomes at most one observation."""

    def __init__(self, action: str, max_ended: int = MAX_ENDED):
        self.action = action
        self.max_ended = max_ended
        self.counts = {'aborted': 0, 'succeeded': 0, 'canceled': 0}
        self._ended: collections.OrderedDict = collections.OrderedDict()

    def update(self, goals, now: dt.datetime) -> list:
        """
        Return the observations of the goals a status array shows ended for the first time.

        ``goals`` is the array as [(goal id bytes, status)]; ABORTED gives an ERROR status,
        SUCCEEDED an OK one.
        """
        found = []
        for uuid, status in goals:
            if status not in ENDED:
                continue
            key = bytes(uuid)
            if key in self._ended:
                continue
            self._ended[key] = status
            if len(self._ended) > self.max_ended:
                self._ended.popitem(last=False)
            if status == CANCELED:
                self.counts['canceled'] += 1
                continue
            aborted = status == ABORTED
            self.counts['aborted' if aborted else 'succeeded'] += 1
            found.append(DiagnosticObservation(
                now, self.action, HARDWARE_ID, 2 if aborted else 0,
                ABORTED_MESSAGE if aborted else SUCCEEDED_MESSAGE,
                (('goal_id', goal_id_text(key)), ('status', f'{STATUS_NAMES[status]} ({status})'),
                 ('aborted_so_far', str(self.counts['aborted'])))))
        return found
