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

"""Context signals are kept per minute from every path, and the dream learns conditions."""

import datetime as dt
import json
import random

from robot_memory.cli import main as cli
from robot_memory.dream.autodream import dream
from robot_memory.dream.summary import build_summary
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import TelemetryObservation
from robot_memory.evidence.rules import Rules
from robot_memory.evidence.signals import SignalRules
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.settings import DreamConfig
from robot_memory.testing import bag_writer

UTC = dt.timezone.utc
DAY0 = dt.datetime(2026, 6, 1, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001')
TWIST = 'geometry_msgs/msg/Twist'


def _twist(stamp, speed):
    return TelemetryObservation(stamp, '/cmd_vel', TWIST, {
        'linear': {'x': speed, 'y': 0.0, 'z': 0.0}, 'angular': {'x': 0.0, 'y': 0.0, 'z': 0.1}})


def test_numbers_are_summed_per_minute_and_identifiers_are_not_signals(tmp_path):
    with EvidenceStore(tmp_path / 'e.db') as store:
        for second in range(0, 180, 2):
            stamp = DAY0 + dt.timedelta(seconds=second)
            store.add(_twist(stamp, 0.1 + (second % 60) / 100))
            store.add(DiagnosticObservation(stamp, 'motors: left', 'base', 0, 'OK', (
                ('Temp (C)', str(40 + second / 60)), ('serial', '1234'), ('seq', str(second)),
                ('mode', 'run'))))
        series = store.signal_series(DAY0.timestamp(), DAY0.timestamp() + 3600)
    assert sorted(series) == ['/cmd_vel angular.x', '/cmd_vel angular.y', '/cmd_vel angular.z',
                              '/cmd_vel linear.x', '/cmd_vel linear.y', '/cmd_vel linear.z',
                              'motors: left: Temp (C)']
    speed = series['/cmd_vel linear.x']
    assert list(speed.starts) == [DAY0.timestamp() + minute * 60 for minute in range(3)]
    assert list(speed.counts) == [30, 30, 30]
    assert abs(speed.mins[0] - 0.1) < 1e-6 and abs(speed.maxs[0] - 0.68) < 1e-6
    assert abs(speed.means[0] - 0.39) < 1e-6
    temp = series['motors: left: Temp (C)']
    assert abs(temp.mins[2] - 42) < 1e-4 and abs(temp.maxs[2] - (42 + 58 / 60)) < 1e-4


def test_a_minute_split_over_two_flushes_is_merged(tmp_path):
    with EvidenceStore(tmp_path / 'e.db') as store:
        store.add(_twist(DAY0, 1.0))
        store.flush()
        store.add(_twist(DAY0 + dt.timedelta(seconds=30), 3.0))
        series = store.signal_series(DAY0.timestamp(), DAY0.timestamp() + 60)
    speed = series['/cmd_vel linear.x']
    assert list(speed.counts) == [2] and speed.means[0] == 2.0
    assert (speed.mins[0], speed.maxs[0]) == (1.0, 3.0)


def test_rules_choose_the_signals_and_the_controllable_ones(tmp_path):
    rules = Rules.from_data({'signals': {'exclude': ['*angular*'],
                                         'controllable': ['*payload*']}})
    with EvidenceStore(tmp_path / 'e.db', rules=rules) as store:
        store.add(_twist(DAY0, 0.2))
        names = sorted(store.signal_series(DAY0.timestamp(), DAY0.timestamp() + 60))
    assert names == ['/cmd_vel linear.x', '/cmd_vel linear.y', '/cmd_vel linear.z']
    assert rules.spec.signals.is_controllable('arm: payload (kg)')
    assert not rules.spec.signals.is_controllable('/cmd_vel linear.x')
    assert SignalRules().is_controllable('/cmd_vel linear.x')  # speed, by default


def test_ingest_keeps_the_signals_of_its_lines(tmp_path):
    source = tmp_path / 'telemetry.jsonl'
    lines = [json.dumps({'stamp': (DAY0 + dt.timedelta(seconds=second)).isoformat(),
                         'source': 'telemetry', 'topic': '/battery_state',
                         'type': 'sensor_msgs/msg/BatteryState',
                         'fields': {'voltage': 12.0 - second / 1000, 'temperature': 30.0,
                                    'header': {'stamp': {'sec': second}}}})
             for second in range(0, 120, 5)]
    source.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    memory = tmp_path / 'robot-memory.md'
    assert cli.main(['ingest', '--file', str(memory), str(source)]) == 0
    assert cli.main(['ingest', '--file', str(memory), str(source)]) == 0  # taken once
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        series = store.signal_series(DAY0.timestamp(), DAY0.timestamp() + 3600)
    assert sorted(series) == ['/battery_state temperature', '/battery_state voltage']
    assert list(series['/battery_state voltage'].counts) == [12, 12]


def _drive(store, day, rng, threshold=0.45):
    """Drive a day: a speed each 10 min, /cmd_vel every 30 s; a slip fault when fast."""
    for segment in range(144):
        start = DAY0 + dt.timedelta(days=day, minutes=10 * segment)
        speed = rng.uniform(0.05, 0.7)
        slips = speed >= threshold and rng.random() < 0.3
        for second in range(0, 600, 30):
            stamp = start + dt.timedelta(seconds=second)
            store.add(_twist(stamp, speed))
            bad = slips and 60 <= second < 180
            store.add(DiagnosticObservation(stamp, 'wheels: slip', 'base', 1 if bad else 0,
                                            'Wheel slip detected' if bad else 'OK'))


def test_a_dream_states_the_condition_a_fault_happens_in_and_the_advice(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    rng = random.Random(5)
    reports = []
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        for day in range(6):
            _drive(store, day, rng)
            reports.append(dream(store, memory, DAY0 + dt.timedelta(days=day + 1, hours=3),
                                 config=CONFIG))
    entries = memory.load(DAY0 + dt.timedelta(days=7)).document.entries
    texts = [entry.text for entry in entries if 'Wheel slip' in entry.text]
    assert len(texts) == 1, [entry.text for entry in entries]
    assert 'when linear speed ≥ 0.4' in texts[0], texts[0]
    assert '; prefer linear speed ≤ 0.' in texts[0] and 'none in ' in texts[0]
    learned = [item for report in reports for item in report.conditions]
    assert len(learned) == 1 and learned[0]['signal'] == '/cmd_vel linear.x'
    summary = build_summary(next(report for report in reports if report.conditions))
    assert '## Conditions learned (and advice) (1)' in summary
    assert 'advice: prefer linear speed ≤ 0.' in summary and 'episodes on that side' in summary


def test_a_rule_template_still_wins_over_a_learned_condition(tmp_path):
    rules = Rules.from_data({'rules': [{'name': 'slip', 'source': 'diagnostic',
                                        'match': {'name': 'wheels: slip'},
                                        'text': 'Wheels slip; slow down'}]})
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    rng = random.Random(5)
    with EvidenceStore(tmp_path / 'robot-memory.db', rules=rules) as store:
        for day in range(6):
            _drive(store, day, rng)
            dream(store, memory, DAY0 + dt.timedelta(days=day + 1, hours=3), rules,
                  config=CONFIG)
    texts = [entry.text for entry in memory.load(DAY0 + dt.timedelta(days=7)).document.entries]
    assert texts == ['Wheels slip; slow down']


def test_replay_keeps_the_signals_of_a_recording(tmp_path):
    """A bag's telemetry (configured topics) and its statuses' values, as the node keeps them."""
    items = []
    for step in range(60):
        at = DAY0 + dt.timedelta(seconds=10 * step)
        items.append((at, None, DiagnosticObservation(at, 'base: left encoder', 'wheel_left',
                                                      0, 'OK', (('ticks', str(step % 5)),))))
        items.append((at, None, TelemetryObservation(at, '/battery_state',
                                                     'sensor_msgs/msg/BatteryState',
                                                     {'percentage': 0.5, 'voltage': 12.0})))
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'sqlite3')
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    telemetry_topics: '
                      '["/battery_state:sensor_msgs/msg/BatteryState"]\n', encoding='utf-8')
    memory = tmp_path / 'robot-memory.md'
    assert cli.main(['replay', str(bag), '--file', str(memory), '--config', str(config),
                     '--no-dream']) == 0
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        series = store.signal_series(DAY0.timestamp(), DAY0.timestamp() + 3600)
    assert {'/battery_state voltage', '/battery_state percentage',
            'base: left encoder: ticks'} <= set(series)
    assert sum(series['base: left encoder: ticks'].counts) == 60
    assert list(series['/battery_state voltage'].means) == [12.0] * 10


def test_the_entry_page_plots_the_conditions_signal_around_recent_episodes(tmp_path):
    from support.web import serve  # the page's test server
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    rng = random.Random(5)
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        for day in range(6):
            _drive(store, day, rng)
            dream(store, memory, DAY0 + dt.timedelta(days=day + 1, hours=3), config=CONFIG)
    entry = next(entry for entry in memory.load(DAY0 + dt.timedelta(days=7)).document.entries
                 if 'Wheel slip' in entry.text)
    thread, client = serve(memory)
    try:
        status, page = client.request(f'/entries/{entry.id}')
    finally:
        thread.stop()
    assert status == 200
    assert page.count('class="condition-chart"') == 3, page[-3000:]
    assert 'linear speed around the episode of 2026-06-06' in page
    assert page.count('<title>the fault</title>') == 3


def test_a_faults_own_status_values_are_not_its_condition(tmp_path):
    """A low battery is low: its own percentage restates the fault, it is no condition."""
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    rng = random.Random(8)
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        for day in range(6):
            for segment in range(144):
                start = DAY0 + dt.timedelta(days=day, minutes=10 * segment)
                level = rng.uniform(0.05, 0.95)
                for second in range(0, 600, 60):
                    stamp = start + dt.timedelta(seconds=second)
                    bad = level < 0.2 and second < 300
                    store.add(DiagnosticObservation(stamp, 'battery: charge', 'base',
                                                    1 if bad else 0, 'Low' if bad else 'OK',
                                                    (('percentage', f'{level:.3f}'),)))
            dream(store, memory, DAY0 + dt.timedelta(days=day + 1, hours=3), config=CONFIG)
    texts = [entry.text for entry in memory.load(DAY0 + dt.timedelta(days=7)).document.entries]
    assert len(texts) == 1 and 'Low' in texts[0] and ' when ' not in texts[0], texts
