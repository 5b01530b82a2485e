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

"""The same fault under changing ids is one signature; different faults stay apart."""

import datetime as dt
import json
import sqlite3
import uuid

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import LogObservation
from robot_memory.evidence.observations import message_pattern
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001')

# (message, another report of the same fault): each pair must share a pattern.
SAME = [
    ('Goal 3f2a9c1e-7b4d-4e2a-9c1f-0a1b2c3d4e5f aborted: Collision Ahead',
     'Goal 0c9e2b17-aa31-4f0e-8d2b-7e6f5a4b3c2d aborted: Collision Ahead'),
    ('goal a1b2c3d4e5f60718293a4b5c6d7e8f90 was aborted',
     'goal 0f9e8d7c6b5a49382716d5c4b3a29180 was aborted'),
    ('No device with serial 14442C10D13EABCE00 found',
     'No device with serial 18443010A1F4B30F00 found'),
    ('segfault at 0x7ffd1234abcd in libfoo.so', 'segfault at 0x55d0c0ffee00 in libfoo.so'),
    ('Cannot connect to 192.168.131.1:11311', 'Cannot connect to 10.0.0.7:5000'),
    ('[device mac aa:bb:cc:01:02:03] link down', '[device mac 7c:10:c9:9f:aa:01] link down'),
    ('process has died [pid 4242, exit code -11, cmd /opt/ros/jazzy/lib/x/y]',
     'process has died [pid 97, exit code -6, cmd /opt/ros/jazzy/lib/x/y]'),
    ('cannot read /proc/4242/status', 'cannot read /proc/17/status'),
    ('could not load /tmp/launch_params_x7k2m9q1', 'could not load /tmp/launch_params_p0z8w3e5'),
    ('timeout after 5.2s waiting for odom', 'timeout after 30 s waiting for odom'),
    ('controller took 1m30s to start', 'controller took 12s to start'),
    ('stale since 2026-06-01T12:00:00.123Z', 'stale since 2026-07-14 03:04:05+02:00'),
    ('frame late at 12:03:44.120', 'frame late at 07:59:01.007'),
    ('dropped 12 ticks', 'dropped 7 ticks'),
    ('Message Filter dropping message: frame laser at time 1717000000.123 for reason '
     "'discarding message because the queue is full'",
     'Message Filter dropping message: frame laser at time 1717000042.981 for reason '
     "'discarding message because the queue is full'"),
]

# Distinct faults of one node: each message must keep a pattern of its own.
DISTINCT = [
    'Goal 3f2a9c1e-7b4d-4e2a-9c1f-0a1b2c3d4e5f aborted: Collision Ahead',
    'Goal 3f2a9c1e-7b4d-4e2a-9c1f-0a1b2c3d4e5f aborted: No valid path',
    'Goal 3f2a9c1e-7b4d-4e2a-9c1f-0a1b2c3d4e5f succeeded',
    'Failed to open /dev/ttyUSB0',
    'Failed to open /dev/video0',
    'Failed to open /dev/input/js0',
    'Motor driver fault flags: overcurrent',
    'Motor driver fault flags: overheat',
    'Motor driver fault flags: undervoltage',
    'RealSense D435 not found',
    'Battery Critical',
    'Battery Low',
    'facade of deadbeef',
    'controller_manager: Switch controller timed out',
    'controller_manager: Could not configure controller',
    'Cannot connect to 192.168.131.1:11311',
    'Cannot resolve host robot.local',
]

_HEX = '0123456789abcdef'


def test_changing_ids_make_one_pattern():
    for first, second in SAME:
        assert message_pattern(first) == message_pattern(second), (first, second)


def test_distinct_faults_keep_distinct_patterns():
    patterns = [message_pattern(text) for text in DISTINCT]
    assert len(set(patterns)) == len(DISTINCT), patterns


def test_patterns_name_what_was_masked():
    assert message_pattern(SAME[0][0]) == 'Goal <uuid> aborted: Collision Ahead'
    assert message_pattern('Cannot connect to 192.168.131.1:11311') == 'Cannot connect to <ip>'
    assert message_pattern('dropped 12 ticks at 0x1F') == 'dropped # ticks at #'
    assert message_pattern('lost 9c1f0a1b2c3d') == 'lost <hex>'
    assert message_pattern('Failed to open /dev/ttyUSB0') == 'Failed to open /dev/ttyUSB#'
    assert message_pattern('no numbers  here') == 'no numbers here'


@settings(max_examples=200, deadline=None)
@given(st.uuids(), st.uuids(), st.sampled_from(['Collision Ahead', 'No valid path', 'Timeout']))
def test_any_uuid_in_a_message_is_masked(first, second, reason):
    template = 'Goal {} aborted: ' + reason
    assert message_pattern(template.format(first)) == message_pattern(template.format(second))
    assert message_pattern(template.format(first.hex)) == \
        message_pattern(template.format(second.hex))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 255), min_size=4, max_size=4),
       st.lists(st.integers(0, 255), min_size=4, max_size=4),
       st.integers(1, 65535), st.integers(1, 65535),
       st.text(_HEX, min_size=8, max_size=16), st.text(_HEX, min_size=8, max_size=16))
def test_addresses_ports_and_hex_are_masked(ip1, ip2, port1, port2, hex1, hex2):
    def message(ip, port, address):
        return (f'peer {".".join(map(str, ip))}:{port} closed while writing 0x{address}; '
                'retrying')
    assert message(ip1, port1, hex1) == message(ip1, port1, hex1)
    assert message_pattern(message(ip1, port1, hex1)) == message_pattern(message(ip2, port2, hex2))


_WORDS = st.sampled_from(['left', 'right', 'wheel', 'encoder', 'overcurrent', 'lidar', 'scan',
                          'timeout', 'battery', 'low', 'critical', 'dock', 'stale', 'camera',
                          'joystick', 'not', 'open', 'failed', 'motor', 'driver', 'e-stop'])


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=6), st.lists(_WORDS, min_size=1, max_size=6),
       st.uuids())
def test_messages_of_different_words_stay_apart(first, second, goal):
    one = f'{" ".join(first)} (goal {goal})'
    two = f'{" ".join(second)} (goal {goal})'
    assert (message_pattern(one) == message_pattern(two)) == (first == second)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_pattern_is_stable(text):
    pattern = message_pattern(text)
    assert message_pattern(pattern) == pattern
    assert '\n' not in pattern and pattern == pattern.strip()


def _goal_log(stamp, goal):
    return LogObservation(stamp, 'behavior_server', 40,
                          f'[spin] goal {goal} aborted: Collision Ahead', 'spin.cpp', 'run', 88)


def test_a_fault_with_a_new_goal_id_each_time_becomes_one_entry(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        for index in range(6):
            store.add(_goal_log(T0 + dt.timedelta(hours=index), uuid.UUID(int=index * 7919)))
        report = dream(store, memory, T0 + dt.timedelta(hours=12), config=CONFIG)
        assert len(report.created) == 1
        entry, = memory.load(T0).document.entries
        # Raw identifiers never reach the text (issue 38): the entry and history both show the
        # masked pattern; the example in history keeps a real message.
        assert 'goal <uuid> aborted' in entry.text and '00000000-' not in entry.text
        create, = store.history(entry.id)
        assert create.reason.endswith(
            'pattern log|behavior_server|[spin] goal <uuid> aborted: Collision Ahead')
        assert create.detail['example'].startswith('[spin] goal 00000000-')


def test_links_made_before_ids_were_masked_keep_their_entry(tmp_path):
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    path = tmp_path / 'robot-memory.db'
    with EvidenceStore(path) as store:
        for index in range(3):
            store.add(_goal_log(T0 + dt.timedelta(minutes=index), 'same-goal-1'))
        dream(store, memory, T0 + dt.timedelta(hours=1), config=CONFIG)
        entry, = memory.load(T0).document.entries
    # Rewrite the link as an older release stored it: the goal id unmasked.
    old = 'log|behavior_server|[spin] goal 3f2a9c1e-7b4d-4e2a-9c1f-0a1b2c3d4e5f aborted: ' \
          'Collision Ahead'
    payload = json.dumps({'rule': '', 'node': 'behavior_server', 'message': old.split('|')[2],
                          'level': 40, 'file': 'spin.cpp', 'function': 'run', 'line': 88})
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE signatures SET signature = ?, payload = ?', (old, payload))
    with EvidenceStore(path) as store:
        later = T0 + dt.timedelta(days=2)
        for index in range(3):
            store.add(_goal_log(later + dt.timedelta(minutes=index), uuid.uuid4()))
        report = dream(store, memory, later + dt.timedelta(hours=1), config=CONFIG)
        assert report.created == [] and report.reinforced == [entry.id]
        links = store.signature_rows()
    assert list(links) == ['log|behavior_server|[spin] goal <uuid> aborted: Collision Ahead']
    assert links[next(iter(links))]['entry_id'] == entry.id
    assert [item.id for item in memory.load(later).document.entries] == [entry.id]


@pytest.mark.parametrize('message, other', SAME[:6])
def test_diagnostics_with_changing_ids_share_a_signature(message, other):
    rules = Rules.default()
    first, = rules.classify(DiagnosticObservation(T0, 'camera: oak', 'oakd', 2, message))
    second, = rules.classify(DiagnosticObservation(T0, 'camera: oak', 'oakd', 2, other))
    assert first.signature == second.signature
    assert json.loads(first.payload)['message'] == message
