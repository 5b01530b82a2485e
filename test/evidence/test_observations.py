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

"""Observations (JSON-lines parsing and validation) and the rules that classify them."""

import datetime as dt
import json
import re

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import from_dict
from robot_memory.evidence.observations import from_statuses
from robot_memory.evidence.observations import LogObservation
from robot_memory.evidence.observations import MAX_STRING_CHARS
from robot_memory.evidence.observations import message_pattern
from robot_memory.evidence.observations import ObservationError
from robot_memory.evidence.observations import parse_line
from robot_memory.evidence.observations import parse_lines
from robot_memory.evidence.observations import TelemetryObservation
from robot_memory.evidence.observations import to_json_line
from robot_memory.evidence.observations import TRUNCATION_MARKER
from robot_memory.evidence.rules import clean_text
from robot_memory.evidence.rules import DEFAULT_SIGNATURES
from robot_memory.evidence.rules import parse_when
from robot_memory.evidence.rules import render_template
from robot_memory.evidence.rules import Rules
from robot_memory.evidence.rules import RulesError
from support.paths import REPO

T = dt.datetime(2026, 5, 1, 1, 0, tzinfo=UTC)


def diag(level=1, message='dropped 12 ticks', name='base: left encoder', hardware_id='wheel_left',
         values=()):
    return DiagnosticObservation(T, name, hardware_id, level, message, values)


def line(**data):
    base = {'stamp': '2026-05-01T01:00:00Z'}
    base.update(data)
    return json.dumps(base)


# --------------------------------------------------------------------------- JSON lines

@pytest.mark.parametrize('observation', [
    diag(values=(('ticks', '12'), ('speed', '0.4'))),
    LogObservation(T, 'controller_server', 40, 'Failed 3 times', 'c.cpp', 'run', 212),
    TelemetryObservation(T, '/battery_state', 'sensor_msgs/msg/BatteryState',
                         {'percentage': 0.18, 'cell_voltage': [3.7, 3.6], 'header': {'x': 1}}),
])
def test_json_line_round_trip(observation):
    parsed = parse_line(to_json_line(observation), 1)
    assert parsed.observation == observation
    assert parsed.notes == []


def test_diagnostic_values_accept_the_ros_key_value_list():
    text = line(source='diagnostic', name='n', hardware_id='h', level=2, message='m',
                values=[{'key': 'temp', 'value': '71'}])
    assert parse_line(text).observation.values == (('temp', '71'),)


@pytest.mark.parametrize('data, field, words', [
    ({'source': 'diagnostic', 'name': 'n', 'hardware_id': 'h', 'level': '1'}, 'level',
     'whole number'),
    ({'source': 'diagnostic', 'name': 'n', 'hardware_id': 'h', 'level': True}, 'level',
     'whole number'),
    ({'source': 'diagnostic', 'name': 'n', 'hardware_id': 'h', 'level': 7}, 'level',
     '0 (OK)'),
    ({'source': 'diagnostic', 'hardware_id': 'h', 'level': 1}, 'name', 'missing'),
    ({'source': 'diagnostic', 'name': 'n', 'hardware_id': 'h', 'level': 1,
      'values': {'t': 71}}, 'values.t', 'string'),
    ({'source': 'diagnostic', 'name': 'n', 'hardware_id': 'h', 'level': 1, 'hardwareid': 'x'},
     'hardwareid', 'unknown field'),
    ({'source': 'log', 'name': 'n', 'level': 20, 'msg': 'm'}, 'level', '40 (ERROR)'),
    ({'source': 'log', 'name': 'n', 'level': 40, 'msg': 5}, 'msg', 'string'),
    ({'source': 'log', 'name': 'n', 'level': 40, 'msg': 'm', 'line': -1}, 'line', 'negative'),
    ({'source': 'telemetry', 'topic': '/b', 'type': 'BatteryState', 'fields': {}}, 'type',
     'ROS message type'),
    ({'source': 'telemetry', 'topic': '/b', 'type': 'sensor_msgs/msg/BatteryState',
      'fields': [1]}, 'fields', 'object'),
    ({'source': 'radio'}, 'source', 'diagnostic, log, telemetry'),
])
def test_refusals_name_the_line_and_the_field(data, field, words):
    with pytest.raises(ObservationError) as caught:
        parse_line(line(**data), 7)
    assert caught.value.line == 7 and caught.value.field == field
    assert str(caught.value).startswith(f'line 7: {field}: ')
    assert words in str(caught.value)


@pytest.mark.parametrize('text, words', [
    ('not json', 'not valid JSON'),
    ('[1, 2]', 'expected a JSON object'),
    ('{"source": "log", "name": "n", "level": 40, "msg": "m"}', 'stamp: missing'),
    ('{"stamp": "yesterday", "source": "log", "name": "n", "level": 40, "msg": "m"}',
     'not an ISO-8601 timestamp'),
    ('{"stamp": "2026-05-01T01:00:00Z", "source": "diagnostic", "name": "n", '
     '"hardware_id": "h", "level": NaN}', 'level: expected a whole number'),
])
def test_malformed_lines_are_refused_with_a_reason(text, words):
    with pytest.raises(ObservationError, match=words):
        parse_line(text, 3)


def test_long_strings_are_truncated_with_a_marker_and_a_note():
    parsed = parse_line(line(source='log', name='n', level=50, msg='x' * 5000), 1)
    msg = parsed.observation.msg
    assert len(msg) == MAX_STRING_CHARS and msg.endswith(TRUNCATION_MARKER)
    assert parsed.notes == [f'msg: 5000 characters truncated to {MAX_STRING_CHARS}']


def test_non_finite_telemetry_values_are_dropped_with_a_reason():
    text = ('{"stamp": "2026-05-01T01:00:00Z", "source": "telemetry", "topic": "/b", '
            '"type": "sensor_msgs/msg/BatteryState", "fields": {"percentage": NaN, '
            '"voltage": 11.1, "cells": [3.7, Infinity]}}')
    parsed = parse_line(text, 1)
    assert parsed.observation.fields == {'voltage': 11.1, 'cells': [3.7, None]}
    assert parsed.notes == ['fields.percentage: nan dropped (not a finite number)',
                            'fields.cells[1]: inf dropped (not a finite number)']


def test_unpaired_surrogates_are_replaced_with_a_note():
    parsed = parse_line('{"stamp": "2026-05-01T01:00:00Z", "source": "log", "name": "n", '
                        '"level": 40, "msg": "bad \\ud800 byte"}', 1)
    assert parsed.observation.msg == 'bad \ufffd byte'
    assert parsed.notes == ['msg: unpaired surrogate escapes replaced by U+FFFD']


def test_a_refused_line_never_stops_the_rest():
    lines = [line(source='log', name='n', level=40, msg='one'), '', '{broken',
             line(source='log', name='n', level=10, msg='debug'),
             line(source='log', name='n', level=40, msg='two')]
    report = parse_lines(lines)
    assert [obs.msg for obs in report.accepted] == ['one', 'two']
    assert [(refusal.line, refusal.message.split(':')[0]) for refusal in report.refused] == \
        [(3, 'not valid JSON'), (4, 'level')]


def test_a_status_array_gives_each_status_or_its_refusal_and_leaves_out_its_own():
    # What the node and a bag's replay read from a DiagnosticArray: one result per status,
    # a refused status never stops the others, memory_node's own health reports left out.
    stamp = dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
    statuses = [(2, 'motor: left', 'stalled', 'motor_left', [('current', '9.1')]),
                (7, 'lidar', 'odd level', 'lidar_front', []),
                (1, 'memory_node: evidence', 'backlog', 'RRN-1', []),
                (0, 'battery', 'OK', 'bms', [])]
    results = list(from_statuses(stamp, statuses, skip_prefix='memory_node: '))
    assert [type(result) for result in results] == \
        [DiagnosticObservation, ObservationError, DiagnosticObservation]
    assert results[0] == DiagnosticObservation(stamp, 'motor: left', 'motor_left', 2, 'stalled',
                                               (('current', '9.1'),))
    assert results[1].field == 'level'
    assert [result.name for result in list(from_statuses(stamp, statuses))[2:]] == \
        ['memory_node: evidence', 'battery']


def test_from_dict_rejects_non_objects():
    with pytest.raises(ObservationError, match='expected a JSON object'):
        from_dict('text', 1)


@pytest.mark.parametrize('text, pattern', [
    ('dropped 12 ticks', 'dropped # ticks'),
    ('voltage 11.73 V at 0x1F3A', 'voltage # V at #'),
    ('error -5 after 1e-3 s', 'error # after # s'),
    ('no numbers  here', 'no numbers here'),
])
def test_message_pattern_strips_numbers(text, pattern):
    assert message_pattern(text) == pattern


# --------------------------------------------------------------------------- rules

def test_defaults_make_warn_and_error_diagnostics_evidence():
    rules = Rules.default()
    first, = rules.classify(diag(message='dropped 12 ticks'))
    second, = rules.classify(diag(message='dropped 7 ticks', level=2))
    assert first.signature == 'diagnostic|wheel_left|base: left encoder|dropped # ticks'
    assert second.signature == first.signature and (first.severity, second.severity) == (1, 2)
    assert first.source_key == 'diagnostic|wheel_left|base: left encoder'
    view = rules.view('diagnostic', first.rule)
    assert view.entry_type == 'hardware_observation'
    assert rules.candidate_text('diagnostic', json.loads(first.payload)) == \
        'base: left encoder (wheel_left) reports WARN: dropped 12 ticks'


def test_default_signatures_are_the_documented_templates():
    rules = Rules.default()
    for observation, source in ((diag(), 'diagnostic'),
                                (LogObservation(T, 'nav2', 40, 'Failed 3 times'), 'log')):
        item, = rules.classify(observation)
        payload = json.loads(item.payload)
        values = dict(payload, message_pattern=message_pattern(payload['message']))
        expected = render_template(DEFAULT_SIGNATURES[source], values)
        assert item.signature == f'{source}|{expected}'


def test_classification_survives_strings_sqlite_cannot_store():
    item, = Rules.default().classify(diag(message='bad \udc80 byte', hardware_id='w\ud800'))
    for text in (item.signature, item.source_key, item.payload):
        text.encode('utf-8')
    assert 'bad ? byte' in item.payload


def test_defaults_ok_is_a_report_of_the_source_and_stale_is_ignored():
    rules = Rules.default()
    ok, = rules.classify(diag(level=0, message='OK'))
    assert ok.signature is None and ok.severity == 0
    assert ok.source_key == 'diagnostic|wheel_left|base: left encoder'
    assert rules.classify(diag(level=3)) == []


def test_defaults_sign_logs_by_node_and_stripped_message():
    rules = Rules.default()
    one, = rules.classify(LogObservation(T, 'nav2', 40, 'Failed 3 times'))
    two, = rules.classify(LogObservation(T, 'nav2', 50, 'Failed 4 times'))
    other, = rules.classify(LogObservation(T, 'amcl', 40, 'Failed 4 times'))
    assert one.signature == two.signature == 'log|nav2|Failed # times'
    assert other.signature != one.signature
    assert rules.view('log', '').min_count == 2


def test_telemetry_needs_a_rule():
    obs = TelemetryObservation(T, '/battery', 'sensor_msgs/msg/BatteryState', {'percentage': 0.1})
    assert Rules.default().classify(obs) == []


def test_shipped_rules_file_is_valid_and_its_examples_fire():
    rules = Rules.load(REPO / 'config' / 'observation_rules.yaml')
    low = TelemetryObservation(T, '/battery_state', 'sensor_msgs/BatteryState',
                               {'percentage': 0.15, 'temperature': 30.0})
    found = {item.rule: item for item in rules.classify(low)}
    assert found['battery-low'].severity == 1 and found['battery-hot'].severity == 0
    assert rules.candidate_text('telemetry', json.loads(found['battery-low'].payload)) == \
        'Battery on /battery_state runs below 20% (seen 15%); plan charging earlier'
    unmeasured = TelemetryObservation(T, '/battery_state', 'sensor_msgs/msg/BatteryState', {})
    assert rules.classify(unmeasured) == []
    left, = rules.classify(diag(message='dropped 12 ticks'))
    again, = rules.classify(diag(message='checksum error'))
    assert left.signature == again.signature == 'diagnostic|wheel_left|encoder'
    assert rules.view('diagnostic', left.rule).tags == ('wheel', 'encoder', 'navigation')
    assert rules.classify(diag(name='cpu0 frequency', hardware_id='soc')) == []
    assert rules.classify(diag(level=0, name='cpu0 frequency', hardware_id='soc')) == []
    stuck = LogObservation(T, 'controller_server', 40, 'Failed to make progress')
    item, = rules.classify(stuck)
    assert item.rule == 'nav2-no-progress'
    assert rules.view('log', item.rule).entry_type == 'environment_note'


def test_first_matching_rule_decides_a_diagnostic():
    rules = Rules.from_data({'rules': [
        {'name': 'motors', 'source': 'diagnostic', 'match': {'hardware_id': 'motor*'},
         'entry_type': 'behavior_pattern', 'text': 'Motor {hardware_id}: {message}'},
        {'name': 'catch-all', 'source': 'diagnostic', 'entry_type': 'environment_note'},
    ]})
    item, = rules.classify(diag(hardware_id='motor_2', message='hot'))
    assert item.rule == 'motors'
    assert rules.candidate_text('diagnostic', json.loads(item.payload)) == 'Motor motor_2: hot'
    item, = rules.classify(diag())
    assert item.rule == 'catch-all'


def test_defaults_can_be_switched_off():
    rules = Rules.from_data({'defaults': {'diagnostics': False, 'logs': False}})
    assert rules.classify(diag()) == []
    assert rules.classify(LogObservation(T, 'n', 40, 'm')) == []


@pytest.mark.parametrize('rule, words', [
    ({'name': 'b', 'source': 'telemetry', 'type': 'sensor_msgs/msg/BatteryState',
      'when': 'percentage <'}, "rule 'b' (rules[0]), field when: 'percentage <' is not"),
    ({'name': 'b', 'source': 'telemetry', 'type': 'sensor_msgs/msg/BatteryState',
      'when': 'status < "full"'}, "rule 'b' (rules[0]), field when: < needs a number"),
    ({'name': 'b', 'source': 'telemetry', 'type': 'battery', 'when': 'x < 1'},
     "rule 'b' (rules[0]), field type: String should match pattern"),
    ({'name': 'd', 'source': 'diagnostic', 'text': '{voltage}'},
     "rule 'd' (rules[0]): field text: unknown placeholder {voltage}"),
    ({'name': 'd', 'source': 'diagnostic', 'signature': '{name'},
     "rule 'd' (rules[0]): field signature: template '{name' is malformed"),
    ({'name': 'd', 'source': 'diagnostic', 'entry_type': 'resolved'},
     "rule 'd' (rules[0]), field entry_type: Input should be"),
    ({'name': 'l', 'source': 'log', 'match': {'levels': [30]}},
     "rule 'l' (rules[0]), field match.levels.0: Input should be 40 or 50"),
    ({'name': 'l', 'source': 'log', 'when': 'x < 1'},
     "rule 'l' (rules[0]), field when: Extra inputs are not permitted"),
    ({'name': 'x', 'source': 'camera'}, "rule 'x' (rules[0]), field source: must be"),
    ({'source': 'log'}, 'rules[0], field name: Field required'),
    # Issue 38, point 7: a rule's "normal" is true or false, never a word that looks like one.
    ({'name': 'n', 'source': 'diagnostic', 'normal': 'yes'},
     "rule 'n' (rules[0]), field normal: Input should be a valid boolean"),
    ({'name': 'n', 'source': 'diagnostic', 'normal': 1},
     "rule 'n' (rules[0]), field normal: Input should be a valid boolean"),
    ({'name': 'n', 'source': 'log', 'normal': True, 'ignore': True},
     "rule 'n' (rules[0]): normal: true and ignore: true cannot both be set"),
])
def test_rule_errors_name_the_rule_and_the_field(rule, words):
    with pytest.raises(RulesError) as caught:
        Rules.from_data({'rules': [rule]}, 'rules.yaml')
    assert str(caught.value).startswith('rules.yaml: ')
    assert words in str(caught.value)


def test_rule_names_are_unique_and_the_file_is_a_mapping(tmp_path):
    with pytest.raises(RulesError, match="two rules are named 'a'"):
        Rules.from_data({'rules': [{'name': 'a', 'source': 'log'},
                                   {'name': 'a', 'source': 'log'}]})
    path = tmp_path / 'rules.yaml'
    path.write_text('- just a list\n')
    with pytest.raises(RulesError, match='a rules file is a mapping'):
        Rules.load(path)
    with pytest.raises(RulesError, match='cannot read the rules file'):
        Rules.load(tmp_path / 'missing.yaml')


@pytest.mark.parametrize('text, path, op, value', [
    ('percentage < 0.2', ('percentage',), '<', 0.2),
    ('linear.x>=1', ('linear', 'x'), '>=', 1),
    ('cell_voltage[2] <= 3.3', ('cell_voltage', 2), '<=', 3.3),
    ("status == 'charging'", ('status',), '==', 'charging'),
    ('present != true', ('present',), '!=', True),
])
def test_when_parses_field_paths(text, path, op, value):
    threshold = parse_when(text)
    assert (threshold.path, threshold.op, threshold.value) == (path, op, value)


def test_thresholds_on_nested_fields_and_lists():
    rules = Rules.from_data({'rules': [
        {'name': 'cell', 'source': 'telemetry', 'type': 'sensor_msgs/msg/BatteryState',
         'when': 'cell_voltage[1] < 3.3'},
        {'name': 'present', 'source': 'telemetry', 'type': 'sensor_msgs/msg/BatteryState',
         'when': 'present == false'}]})
    obs = TelemetryObservation(T, '/b', 'sensor_msgs/msg/BatteryState',
                               {'cell_voltage': [3.7, 3.1], 'present': True})
    severities = {item.rule: item.severity for item in rules.classify(obs)}
    assert severities == {'cell': 1, 'present': 0}
    short = TelemetryObservation(T, '/b', 'sensor_msgs/msg/BatteryState', {'cell_voltage': [3.7]})
    assert [item.rule for item in rules.classify(short)] == []


def test_templates_render_missing_values_as_question_marks_and_stay_one_line():
    rules = Rules.from_data({'rules': [
        {'name': 'v', 'source': 'diagnostic', 'text': '{name}: {values[temp]} / {values[x]}'}]})
    item, = rules.classify(diag(values=(('temp', '71'),), name='motor\nleft'))
    assert rules.candidate_text('diagnostic', json.loads(item.payload)) == 'motor left: 71 / ?'
    assert clean_text('a\x00b\u2028' + 'c' * 600) == 'a b ' + 'c' * 495 + '…'
    assert len(clean_text('x' * 900)) == 500


def test_signatures_stay_bounded():
    item, = Rules.default().classify(diag(message='word ' * 300))
    assert len(item.signature) == 512
    assert re.fullmatch(r'diagnostic\|wheel_left\|.*#[0-9a-f]{16}', item.signature)
    shorter, = Rules.default().classify(diag(message='word ' * 299))
    assert shorter.signature != item.signature


def test_rules_reading_values_see_each_observations_own_values():
    rules = Rules.from_data({'rules': [
        {'name': 'hot', 'source': 'diagnostic', 'match': {'name': 'motor*'},
         'text': 'Motor hot at {values[temp]} C', 'signature': '{hardware_id}|{values[zone]}'},
        {'name': 'sig-only', 'source': 'diagnostic', 'match': {'name': 'fan*'},
         'signature': '{values[zone]}'}]})
    first, = rules.classify(diag(name='motor', values=(('temp', '70'), ('zone', 'a'))))
    second, = rules.classify(diag(name='motor', values=(('temp', '99'), ('zone', 'b'))))
    assert json.loads(first.payload)['values'] == {'temp': '70', 'zone': 'a'}
    assert json.loads(second.payload)['values'] == {'temp': '99', 'zone': 'b'}
    assert rules.candidate_text('diagnostic', json.loads(second.payload)) == 'Motor hot at 99 C'
    assert first.signature != second.signature
    # A signature template alone also gets the values (not '?').
    fan_a, = rules.classify(diag(name='fan', values=(('zone', 'a'),)))
    fan_b, = rules.classify(diag(name='fan', values=(('zone', 'b'),)))
    assert fan_a.signature == 'diagnostic|a' and fan_b.signature == 'diagnostic|b'


def test_telemetry_rules_for_names_the_rules_that_read_a_topic():
    rules = Rules.load(REPO / 'config' / 'observation_rules.yaml')
    assert 'battery-low' in rules.telemetry_rules_for('/robot/battery_state',
                                                      'sensor_msgs/msg/BatteryState')
    assert rules.telemetry_rules_for('/odom', 'nav_msgs/msg/Odometry') == []
    assert Rules.default().telemetry_rules_for('/battery_state',
                                               'sensor_msgs/msg/BatteryState') == []
