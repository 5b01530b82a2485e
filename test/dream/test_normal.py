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
Issue 38, point 7: "normal" is a person's call, not the dream's.

An ERROR at the same minute every morning, or a value clearly off its OK range every
afternoon, is stated as a fact ("Recurring: ...") and shown among the faults; a condition
that began after OK reports is a change ("Since: ..."); the dream proposes the routine or
constant text once, and only a person's approval moves the entry to the conditions section.
Or an operator's rule declares it normal up front (``normal: true``).
"""

import datetime as dt

from robot_memory.dream.autodream import dream
from robot_memory.dream.normal import judged
from robot_memory.dream.pattern import Description
from robot_memory.dream.pattern import rule_text
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.proposal_queue import ProposalQueue
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.context import build_context
from robot_memory.rcan.context import CONDITIONS_HEADER
from robot_memory.rcan.context import is_condition
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.review.proposing import decide_proposal
from robot_memory.settings import DreamConfig

UTC = dt.timezone.utc
DAY0 = dt.datetime(2026, 6, 1, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001', timezone='America/Toronto')
ROUTINE = Description('routine', 'daily 08:00-08:20 UTC-4, on 8 of the last 8 days, brief')
CONSTANT = Description('constant', 'constant since 2026-06-03 00:00 UTC-4')


def test_only_a_fault_free_looking_pattern_is_the_dreams_to_call_normal():
    warn, error = {'level': 1}, {'level': 2}
    assert judged(ROUTINE, warn, 'diagnostic', '', False) == (ROUTINE, None)
    stated, held = judged(ROUTINE, error, 'diagnostic', '', False)
    assert (stated.label, stated.phrase, held) == ('recurring', ROUTINE.phrase, ROUTINE)
    stated, held = judged(ROUTINE, warn, 'diagnostic', 'percentage 0.12-0.18 against 0.35-0.95',
                          False)
    assert stated.label == 'recurring' and held == ROUTINE
    assert judged(ROUTINE, {'level': 40}, 'log', '', False)[0].label == 'recurring'
    # A constant since the first report, never OK (no gamepad fitted), stays constant,
    # even at ERROR; one that began after OK reports is a change.
    assert judged(CONSTANT, error, 'diagnostic', '', False) == (CONSTANT, None)
    assert judged(CONSTANT, warn, 'diagnostic', '', True) == (
        Description('since', CONSTANT.phrase), None)  # a change: nothing to propose
    intermittent = Description('intermittent', '3 times')
    assert judged(intermittent, error, 'diagnostic', 'x', True) == (intermittent, None)
    assert judged(None, error, 'diagnostic', '', True) == (None, None)


def test_a_fact_label_is_taken_off_like_the_others():
    assert rule_text('Recurring: motor (base) reports ERROR: Overcurrent - daily 08:00') == \
        'motor (base) reports ERROR: Overcurrent'
    assert rule_text('Since: cam (base) reports ERROR: dead - constant since x') == \
        'cam (base) reports ERROR: dead'


class Robot:
    """A memory file and its evidence (the dream's own store), fed reports minute by minute."""

    def __init__(self, path, rules=None):
        self.memory = MemoryFile(path / 'robot-memory.md')
        self.store = EvidenceStore(path / 'robot-memory.db', rules=rules)

    def report(self, day, hour, minutes, name, level, message, every_s=60):
        start = DAY0 + dt.timedelta(days=day, hours=hour)
        for second in range(0, int(minutes * 60), every_s):
            self.store.add(DiagnosticObservation(start + dt.timedelta(seconds=second), name,
                                                 'base', level, message))

    def dream(self, day):
        return dream(self.store, self.memory, DAY0 + dt.timedelta(days=day + 1, hours=7),
                     config=CONFIG)

    def entries(self, day):
        return self.memory.load(DAY0 + dt.timedelta(days=day + 1, hours=8)).document.entries


def _mission_starts(robot, level, days=9):
    for day in range(days):
        robot.report(day, 12, 20, 'motor_driver: Current', level, 'Overcurrent')  # 08:00 UTC-4
        robot.report(day, 12 + 20 / 60, 1, 'motor_driver: Current', 0, 'OK')
        robot.dream(day)
    return robot.entries(days - 1)


def test_an_error_at_every_mission_start_is_a_recurring_fault_until_a_person_says(tmp_path):
    control = Robot(tmp_path / 'warn')
    [entry] = _mission_starts(control, 1)
    assert entry.text.startswith('Routine: ')  # a WARN at a fixed minute: the dream's call
    control.store.close()
    robot = Robot(tmp_path / 'error')
    [entry] = _mission_starts(robot, 2)
    assert entry.text.startswith('Recurring: motor_driver: Current (base) reports ERROR: '
                                 'Overcurrent - daily 08:00'), entry.text
    now = DAY0 + dt.timedelta(days=9, hours=8)
    block = build_context(robot.memory.load(now).document, now)
    assert CONDITIONS_HEADER not in block.text and not is_condition(block.entries[0].entry.text)
    queue = ProposalQueue(robot.store.db)
    [proposal] = [item for item in queue.pending(now) if item.target == entry.id]
    assert proposal.kind == 'reword'
    assert proposal.payload['after'].startswith('Routine: motor_driver: Current')
    # Proposed once, not every night.
    robot.dream(9)
    assert len([item for item in queue.pending(now) if item.target == entry.id]) == 1
    # A person approves: the entry moves to the conditions section and keeps those words.
    later = DAY0 + dt.timedelta(days=10, hours=8)
    decide_proposal(queue, proposal.id, 'approve', 'operator', 'mission start inrush', later,
                    memory_file=robot.memory)
    robot.report(10, 12, 20, 'motor_driver: Current', 2, 'Overcurrent')
    robot.dream(10)
    [entry] = robot.entries(10)
    assert entry.text == proposal.payload['after']
    block = build_context(robot.memory.load(later).document, later)
    assert CONDITIONS_HEADER in block.text
    robot.store.close()


def _judgements(queue, entry_id, status=None):
    rows = queue.db.conn.execute('SELECT id FROM proposals WHERE target = ? ORDER BY id',
                                 (entry_id,)).fetchall()
    found = [queue.get(row[0]) for row in rows]
    return [item for item in found if status is None or item.status == status]


def test_a_judgement_left_to_expire_is_proposed_again_and_a_rejected_one_is_not(tmp_path):
    # A week away from the page must not lose the call: the entry would stay a fault for
    # good, and approving the expired proposal only says "propose it again", which is the
    # dream's to do.
    robot = Robot(tmp_path)
    [entry] = _mission_starts(robot, 2)
    queue = ProposalQueue(robot.store.db)
    [first] = _judgements(queue, entry.id)
    seen = []
    for day in range(9, 19):  # past the week a proposal waits
        robot.report(day, 12, 20, 'motor_driver: Current', 2, 'Overcurrent')
        robot.dream(day)
        seen.append([item.status for item in _judgements(queue, entry.id)])
    assert ['expired'] in seen  # the night it expired: nothing new yet
    assert seen[-1] == ['expired', 'pending']  # the next night: asked again, once
    [expired, again] = _judgements(queue, entry.id)
    assert (expired.id, expired.status) == (first.id, 'expired')
    assert again.payload['after'].startswith('Routine: motor_driver: Current')
    later = DAY0 + dt.timedelta(days=19, hours=8)
    decide_proposal(queue, again.id, 'reject', 'operator', 'a fault, not a routine', later,
                    memory_file=robot.memory)
    for day in range(19, 30):
        robot.report(day, 12, 20, 'motor_driver: Current', 2, 'Overcurrent')
        robot.dream(day)
    assert [item.status for item in _judgements(queue, entry.id)] == ['expired', 'rejected']
    [entry] = robot.entries(29)
    assert entry.text.startswith('Recurring: motor_driver: Current'), entry.text
    robot.store.close()


def test_a_camera_that_died_after_ok_reports_is_a_change_shown_as_a_fault(tmp_path):
    robot = Robot(tmp_path)
    for day in range(2):
        robot.report(day, 0, 24 * 60, 'camera: Status', 0, 'OK', every_s=600)
        robot.dream(day)
    for day in range(2, 4):
        robot.report(day, 0, 24 * 60, 'camera: Status', 2, 'Camera not detected', every_s=300)
    robot.report(4, 0, 7 * 60, 'camera: Status', 2, 'Camera not detected', every_s=300)
    robot.dream(3)  # still going at the dream
    [entry] = robot.entries(3)
    assert entry.text.startswith('Since: camera: Status (base) reports ERROR: Camera not '
                                 'detected - constant since 2026-06-02 20:00 UTC-4'), entry.text
    assert not is_condition(entry.text)
    now = DAY0 + dt.timedelta(days=4, hours=8)
    assert [item for item in ProposalQueue(robot.store.db).pending(now)
            if item.target == entry.id] == []
    robot.store.close()


def _declaring(text=None, normal=True):
    rule = {'name': 'mission-start-inrush', 'source': 'diagnostic', 'normal': normal,
            'match': {'name': 'motor_driver: Current', 'message': 'Overcurrent'}}
    return Rules.from_data({'rules': [dict(rule, text=text) if text else rule]})


def test_a_rule_declares_a_condition_normal_up_front_and_nothing_is_proposed(tmp_path):
    robot = Robot(tmp_path, _declaring())
    # From its first night, before any pattern shows: filed as a condition, the rule named.
    robot.report(0, 12, 20, 'motor_driver: Current', 2, 'Overcurrent')
    robot.report(0, 12 + 20 / 60, 1, 'motor_driver: Current', 0, 'OK')
    robot.dream(0)
    [entry] = robot.entries(0)
    assert entry.text == ('Routine: motor_driver: Current (base) reports ERROR: Overcurrent - '
                          'normal by rule mission-start-inrush'), entry.text
    # An ERROR at every mission start, which the dream alone states as "Recurring:".
    [entry] = _mission_starts(robot, 2)
    assert entry.text.startswith('Routine: motor_driver: Current (base) reports ERROR: '
                                 'Overcurrent - daily 08:00'), entry.text
    assert entry.text.endswith(', normal by rule mission-start-inrush'), entry.text
    now = DAY0 + dt.timedelta(days=9, hours=8)
    block = build_context(robot.memory.load(now).document, now)
    assert CONDITIONS_HEADER in block.text and is_condition(block.entries[0].entry.text)
    assert ProposalQueue(robot.store.db).pending(now) == []
    robot.store.close()


def test_a_declared_rule_keeps_its_template_and_a_change_it_declares_stays_constant(tmp_path):
    robot = Robot(tmp_path, _declaring('Motor inrush at mission start ({message})'))
    [entry] = _mission_starts(robot, 2)
    assert entry.text.startswith('Routine: Motor inrush at mission start (Overcurrent) - '
                                 'daily 08:00'), entry.text
    robot.store.close()
    # Without normal: the rule's template wins, as before; the entry is a fault.
    plain = Robot(tmp_path / 'plain', _declaring('Motor inrush ({message})', normal=False))
    [entry] = _mission_starts(plain, 2)
    assert entry.text == 'Motor inrush (Overcurrent)' and not is_condition(entry.text)
    plain.store.close()
    camera = Robot(tmp_path / 'camera', Rules.from_data({'rules': [
        {'name': 'camera-removed', 'source': 'diagnostic', 'normal': True,
         'match': {'name': 'camera: Status'}}]}))
    for day in range(2):
        camera.report(day, 0, 24 * 60, 'camera: Status', 0, 'OK', every_s=600)
        camera.dream(day)
    for day in range(2, 4):
        camera.report(day, 0, 24 * 60, 'camera: Status', 2, 'Camera not detected', every_s=300)
    camera.report(4, 0, 7 * 60, 'camera: Status', 2, 'Camera not detected', every_s=300)
    camera.dream(3)
    [entry] = camera.entries(3)
    assert entry.text.startswith('Constant: camera: Status (base) reports ERROR: Camera not '
                                 'detected - constant since 2026-06-02 20:00 UTC-4, normal by '
                                 'rule camera-removed'), entry.text
    camera.store.close()
