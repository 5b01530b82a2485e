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

"""A dream states each entry's pattern, keeps its id, and leaves a person's words alone."""

import datetime as dt
import json

import pytest
import yaml

from robot_memory.dream.autodream import dream
from robot_memory.dream.pattern import without_node
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.context import build_context
from robot_memory.rcan.context import CONDITIONS_HEADER
from robot_memory.rcan.context import is_condition
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.settings import DreamConfig
from support.paths import REPO

UTC = dt.timezone.utc
DAY0 = dt.datetime(2026, 6, 1, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001', timezone='America/Toronto')


class Robot:
    """A memory file and its evidence, fed a fault pattern minute by minute."""

    def __init__(self, path, rules=None):
        self.memory = MemoryFile(path / 'robot-memory.md')
        self.store = EvidenceStore(path / 'robot-memory.db', rules=rules)

    def status(self, day, hour, minutes, name, message, level=1, every_s=60, values=(),
               ok_values=()):
        """Report ``name`` bad for ``minutes`` from ``hour`` UTC of ``day``, OK after."""
        start = DAY0 + dt.timedelta(days=day, hours=hour)
        for index, second in enumerate(range(0, int(minutes * 60), every_s)):
            self.store.add(DiagnosticObservation(start + dt.timedelta(seconds=second), name,
                                                 'base', level, message,
                                                 values[index % len(values)] if values else ()))
        self.store.add(DiagnosticObservation(start + dt.timedelta(minutes=minutes), name,
                                             'base', 0, 'OK', ok_values))

    def ok(self, day, hour, minutes, name, message, values=(), every_s=60):
        """Report ``name`` OK with ``message`` and ``values`` for ``minutes`` from ``hour``."""
        start = DAY0 + dt.timedelta(days=day, hours=hour)
        for second in range(0, int(minutes * 60), every_s):
            self.store.add(DiagnosticObservation(start + dt.timedelta(seconds=second), name,
                                                 'base', 0, message,
                                                 values(second) if callable(values) else values))

    def dream(self, day):
        """Dream at 07:00 UTC the morning after ``day``."""
        now = DAY0 + dt.timedelta(days=day + 1, hours=7)
        return dream(self.store, self.memory, now, config=CONFIG)

    def entries(self, day):
        return self.memory.load(DAY0 + dt.timedelta(days=day + 1, hours=8)).document.entries


@pytest.fixture
def robot(tmp_path):
    made = Robot(tmp_path)
    yield made
    made.store.close()


def test_an_afternoon_fault_is_restated_with_its_window_and_keeps_its_id(robot):
    ids = set()
    for day in range(5):
        robot.status(day, 20.5, 40, 'battery: percentage', 'Low')  # 16:30 in Toronto
        robot.dream(day)
        entry, = robot.entries(day)
        ids.add(entry.id)
    assert len(ids) == 1
    assert entry.text == ('Intermittent: battery: percentage (base) reports WARN: Low - '
                          'on 5 of the last 6 days, usually 16:30-17:09 UTC-4, '
                          'typically 39 min')
    reasons = [record.reason for record in robot.store.history(entry.id)]
    assert any(reason.endswith('restated as intermittent') for reason in reasons)


def test_a_constant_condition_is_labelled_and_shown_after_the_faults(robot):
    start = DAY0 + dt.timedelta(hours=1)
    for day in range(3):
        for minute in range(0, 24 * 60, 5):
            robot.store.add(DiagnosticObservation(
                start + dt.timedelta(days=day, minutes=minute), 'joy: Joystick Driver Status',
                'none', 2, 'Joystick not open.'))
        robot.status(day, 14, 30, 'lidar: scan rate', 'Frequency too low.')
        robot.dream(day)
    by_text = {entry.text.split(':')[0]: entry for entry in robot.entries(2)}
    constant = by_text['Constant']
    assert constant.text.endswith('constant since 2026-05-31 21:00 UTC-4')
    fault = by_text['Intermittent']
    assert fault.confidence < constant.confidence
    block = build_context(robot.memory.load(DAY0 + dt.timedelta(days=3)).document,
                          DAY0 + dt.timedelta(days=3, hours=8), token_budget=400)
    lines = block.text.splitlines()[1:]  # after the header (issue 38, point 6)
    assert 'Intermittent:' in lines[0] and lines[1:3] == ['', CONDITIONS_HEADER]
    assert 'Constant:' in lines[3] and len(lines) == 4


def test_a_persons_reword_is_never_restated(robot):
    for day in range(2):
        robot.status(day, 20.5, 40, 'battery: percentage', 'Low')
        robot.dream(day)
    entry, = robot.entries(1)
    text = robot.memory.path.read_text(encoding='utf-8')
    robot.memory.path.write_text(text.replace(entry.text, 'Battery runs low late afternoon'),
                                 encoding='utf-8')
    for day in range(2, 6):
        robot.status(day, 20.5, 40, 'battery: percentage', 'Low')
        robot.dream(day)
    edited, = robot.entries(5)
    assert (edited.id, edited.text) == (entry.id, 'Battery runs low late afternoon')


def test_a_rules_file_template_wins(tmp_path):
    rules = Rules.from_data({'rules': [{'name': 'battery', 'source': 'diagnostic',
                                        'match': {'name': 'battery*'},
                                        'text': 'Battery low: charge before the afternoon'}]})
    robot = Robot(tmp_path, rules)
    try:
        for day in range(5):
            robot.status(day, 20.5, 40, 'battery: percentage', 'Low')
            robot.dream(day)
        entry, = robot.entries(4)
        assert entry.text == 'Battery low: charge before the afternoon'
    finally:
        robot.store.close()


def test_the_documented_rules_for_normal_conditions_work():
    text = (REPO / 'docs' / 'entry-text.md').read_text(encoding='utf-8')
    block = text.split('```yaml\n', 1)[1].split('```', 1)[0]
    rules = Rules.from_data(yaml.safe_load(block))
    assert rules.classify(DiagnosticObservation(DAY0, 'joy_linux_node: Joystick Driver Status',
                                                'none', 2, 'Joystick not open.')) == []
    item, = rules.classify(DiagnosticObservation(DAY0, 'turtlebot4_diagnostics: Wheel Status',
                                                 'Turtlebot4', 1, 'Disabled'))
    text = rules.candidate_text('diagnostic', json.loads(item.payload))
    assert text == 'Routine: wheels disabled while docked (turtlebot4_diagnostics: Wheel Status)'
    assert is_condition(text)


def test_statuses_that_start_and_stop_together_are_one_entry_naming_the_others(robot):
    for day in range(4):
        for name, level, message in (('battery: percentage', 2, 'Critical'),
                                     ('battery: voltage', 1, 'Low voltage'),
                                     ('dock: status', 2, 'Battery critical')):
            robot.status(day, 17, 12, name, message, level=level, every_s=1)
        robot.status(day, 9, 5, 'lidar: scan rate', 'Frequency too low.', every_s=1)
        robot.dream(day)
    texts = sorted(entry.text for entry in robot.entries(3))
    assert len(texts) == 2, texts
    assert texts[0].startswith('Intermittent: battery: percentage (base) reports ERROR: Critical '
                               '(together with voltage: Low voltage; dock: status: Battery '
                               'critical) - on 4 of the last')
    assert texts[1].startswith('Intermittent: lidar: scan rate')
    assert not any('only while' in text for text in texts)  # a partner is no state


def test_an_incident_says_by_how_much_any_of_its_statuses_was_off(robot):
    for day in range(4):
        robot.status(day, 17, 12, 'battery: percentage', 'Critical', level=2, every_s=1)
        robot.status(day, 17, 12, 'battery: voltage', 'Low voltage', every_s=1,
                     values=[(('voltage', '13.6'),)], ok_values=(('voltage', '15.9'),))
        robot.dream(day)
    entry, = robot.entries(3)
    assert '(together with voltage: Low voltage)' in entry.text
    assert entry.text.endswith(', voltage 13.6 against 15.9'), entry.text


def test_two_conditions_present_since_boot_stay_two_entries(robot):
    for day in range(2):
        for name in ('joy: Joystick Driver Status', 'gps: NMEA driver'):
            robot.status(day, 0, 24 * 60, name, 'not open', level=2, every_s=30)
        robot.dream(day)
    assert len(robot.entries(1)) == 2


def test_a_fault_seen_only_while_charging_says_so(robot):
    for day in range(4):
        robot.status(day, 1, 9 * 60, 'charger: status', 'Charging', every_s=120)
        robot.status(day, 2 + day * 1.5, 30, 'wheels: status', 'Disabled')
        robot.status(day, 14 + day, 10, 'lidar: scan rate', 'Frequency too low.')
        robot.dream(day)
    by_name = {entry.text.split(' (base)')[0].split(': ', 1)[1]: entry.text
               for entry in robot.entries(3)}
    assert by_name['wheels: status'].endswith(', only while charger: status reports Charging')
    # The scan rate drops while the robot is away from the charger: no state to name.
    assert 'only while' not in by_name['lidar: scan rate']


def rate(actual: str) -> tuple:
    return (('Events in window', '40'), ('Actual frequency (Hz)', actual),
            ('Target frequency (Hz)', '8.0'))


def test_a_fault_states_by_how_much_its_values_were_off_over_every_night(robot):
    lows = ['4.6', '3.9', '3.1', '4.2']
    for day in range(4):
        robot.status(day, 18, 20, 'lidar: scan rate', 'Frequency too low.',
                     values=[rate(lows[day]), rate('4.0')], ok_values=rate('7.9'))
        robot.dream(day)
    entry, = robot.entries(3)
    # Every night's values, not only the last night's; the target is the same while bad.
    assert entry.text.endswith('typically 19 min, Actual frequency (Hz) 3.1-4.6 against 7.9')


def test_values_that_do_not_differ_while_bad_are_not_stated(robot):
    for day in range(4):
        robot.status(day, 18, 20, 'lidar: scan rate', 'Frequency too low.',
                     values=[rate('7.9')], ok_values=rate('7.9'))
        robot.dream(day)
    entry, = robot.entries(3)
    assert entry.text.endswith('typically 19 min')


def docked(value):
    return (('Is docked', value), ('Battery (%)', '87'))


def test_a_fault_seen_only_while_an_ok_status_says_docked_says_so(robot):
    for day in range(4):
        robot.ok(day, 0, 60, 'dock: status', 'OK', docked('False'))
        robot.ok(day, 1, 9 * 60, 'dock: status', 'OK', docked('True'))
        robot.ok(day, 10, 14 * 60, 'dock: status', 'OK', docked('False'))
        robot.status(day, 2 + day * 1.5, 30, 'lidar: scan rate', 'No events recorded.')
        robot.status(day, 14 + day, 10, 'camera: rate', 'Frequency too low.')
        robot.dream(day)
    by_name = {entry.text.split(' (base)')[0].split(': ', 1)[1]: entry.text
               for entry in robot.entries(3)}
    assert by_name['lidar: scan rate'].endswith(', only while dock: status reports Is docked: '
                                                'True'), by_name
    assert 'only while' not in by_name['camera: rate']  # away from the dock: no state


def test_an_ok_value_that_never_changes_or_flips_every_second_is_no_state(robot):
    for day in range(4):
        robot.ok(day, 0, 24 * 60, 'dock: status', 'OK', docked('True'))  # always the same
        robot.ok(day, 0, 24 * 60, 'power: status', 'OK', every_s=1,
                 values=lambda second: (('Charging', ('True', 'False')[second % 2]),))
        robot.status(day, 2 + day * 1.5, 30, 'lidar: scan rate', 'No events recorded.')
        robot.dream(day)
    entry, = robot.entries(3)
    assert entry.text.startswith('Intermittent: ') and 'only while' not in entry.text


def test_entries_of_one_incident_made_apart_are_merged_and_an_undo_takes_it_back(robot):
    from robot_memory.review.undo import undo
    robot.status(0, 17, 12, 'battery: percentage', 'Critical', level=2)
    robot.status(0, 9, 5, 'dock: status', 'Battery critical', level=2)
    robot.dream(0)
    assert len(robot.entries(0)) == 2
    for day in range(1, 5):
        robot.status(day, 17, 12, 'battery: percentage', 'Critical', level=2)
        robot.status(day, 17, 12, 'dock: status', 'Battery critical', level=2)
        report = robot.dream(day)
        if report.merged:
            break
    (kept_id, merged_id), = report.merged
    kept, = robot.entries(day)
    assert kept.id == kept_id == min(kept_id, merged_id)  # created together: the first id
    assert '(together with ' in kept.text and 'Battery critical' in kept.text
    merge, = [record for record in robot.store.history(kept_id) if record.action == 'merge']
    assert merge.detail['merged'] == merged_id and len(merge.detail['signatures']) == 1
    assert 'merged 1' in report.summary()
    links = robot.store.signature_rows()
    assert {link['entry_id'] for link in links.values()} == {kept_id}
    now = DAY0 + dt.timedelta(days=day + 1, hours=9)
    undone = undo(robot.store, robot.memory, now, 'test', 'take the merge back',
                  dream=report.dream_id)
    assert undone.undo_id is not None
    assert {entry.id for entry in robot.entries(day + 1)} == {kept_id, merged_id}


def test_statuses_that_overlap_once_stay_two_entries(robot):
    for day in range(6):
        robot.status(day, 17, 12, 'battery: percentage', 'Critical', level=2)
        robot.status(day, 17 if day == 3 else 9 + day, 5, 'dock: status', 'Battery critical',
                     level=2)
        report = robot.dream(day)
        assert not report.merged
    assert len(robot.entries(5)) == 2


def test_a_fault_pruned_between_rare_episodes_comes_back_under_its_id_restated(robot):
    pruned_at = None
    for day in range(22):
        if day < 4 or day == 21:
            robot.status(day, 20.5 + day / 10, 40, 'battery: percentage', 'Low')
        report = robot.dream(day)
        if day == 0:
            first, = robot.entries(0)
        if report.pruned:
            pruned_at = day
    assert pruned_at is not None and report.created == [first.id]
    entry, = robot.entries(21)
    assert entry.id == first.id
    assert entry.text.startswith('Intermittent: battery: percentage (base) reports WARN: Low - '
                                 'on 5 of the last 23 days')


def test_a_node_prefix_that_repeats_the_hardware_id_is_left_out_and_the_id_kept(robot):
    """Issue 38, point 5: 'base_diagnostics: battery (base)' says 'base' twice."""
    ids, texts = set(), []
    for day in range(5):
        robot.status(day, 20.5, 40, 'base_diagnostics: battery', 'Low')
        robot.dream(day)
        entry, = robot.entries(day)
        ids.add(entry.id)
        texts.append(entry.text)
    assert len(ids) == 1
    assert texts[0] == 'battery (base) reports WARN: Low'  # before a pattern shows, too
    assert texts[-1].startswith('Intermittent: battery (base) reports WARN: Low - on 5 of '
                                'the last 6 days'), texts[-1]


@pytest.mark.parametrize('text, said', [
    ('turtlebot4_diagnostics: Battery Percentage (Turtlebot4) reports WARN: Low',
     'Battery Percentage (Turtlebot4) reports WARN: Low'),
    ('a200_0000/platform: Temperature (a200-0000) reports WARN: hot',
     'Temperature (a200-0000) reports WARN: hot'),
    # A node that does not name the id, an id too short to tell, a log: kept as they are.
    ('ur_hardware_interface: Safety mode (ur5e) reports WARN: PROTECTIVE_STOP', None),
    ('io_board: Relay (io) reports ERROR: stuck', None),
    ('battery: percentage (base) reports WARN: Low', None),
    ('behavior_server logs ERROR repeatedly: Goal <uuid> aborted', None),
])
def test_without_node_drops_only_a_prefix_that_names_the_hardware_id(text, said):

    assert without_node(text) == (said or text)
