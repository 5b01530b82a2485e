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

"""Aborted action goals: each ended goal told once, ABORTED as an ERROR, CANCELED not at all."""

import datetime as dt

from robot_memory.common.timeutil import UTC
from robot_memory.evidence import actions
from robot_memory.evidence.rules import Rules

T0 = dt.datetime(2026, 3, 1, 3, 0, tzinfo=UTC)


def goal(number: int) -> bytes:
    return bytes([number]) * 16


def test_each_goal_that_ends_is_told_once_aborted_as_error_succeeded_as_ok():
    tracker = actions.GoalTracker('/navigate_to_pose')
    assert tracker.update([(goal(1), 1), (goal(2), 2)], T0) == []
    found = tracker.update([(goal(1), 6), (goal(2), 2)], T0)
    [aborted] = found
    assert (aborted.name, aborted.hardware_id, aborted.level) == ('/navigate_to_pose', 'action',
                                                                  2)
    assert aborted.message == 'goal aborted (status 6)'
    assert dict(aborted.values)['goal_id'] == '01010101-0101-0101-0101-010101010101'
    assert dict(aborted.values)['status'] == 'ABORTED (6)'
    # The server lists the ended goal again with every change: not told twice.
    [succeeded] = tracker.update([(goal(1), 6), (goal(2), 4)], T0)
    assert (succeeded.level, succeeded.message) == (0, 'goal succeeded')
    assert tracker.update([(goal(1), 6), (goal(2), 4), (goal(3), 5)], T0) == []
    assert tracker.counts == {'aborted': 1, 'succeeded': 1, 'canceled': 1}


def test_repeated_aborts_share_one_signature_so_the_dream_counts_them():
    tracker = actions.GoalTracker('/move_action')
    rules = Rules.default()
    found = [tracker.update([(goal(n), 6)], T0)[0] for n in range(3)]
    signatures = {rules.classify(item)[0].signature for item in found}
    assert len(signatures) == 1 and None not in signatures
    [item] = rules.classify(found[0])
    assert item.source_key == 'diagnostic|action|/move_action' and item.severity == 2


def test_the_ended_goals_remembered_are_bounded():
    tracker = actions.GoalTracker('/a', max_ended=10)
    for number in range(100):
        tracker.update([(number.to_bytes(16, 'big'), 6)], T0)
    assert len(tracker._ended) == 10 and tracker.counts['aborted'] == 100


def test_the_status_topic_of_an_action():
    assert actions.status_topic('/navigate_to_pose') == '/navigate_to_pose/_action/status'
    assert actions.status_topic('/ns/move_action/') == '/ns/move_action/_action/status'
