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

"""Issue 38, point 5: raw identifiers (UUIDs, pointers, serials, addresses) never reach a line."""

import datetime as dt

import pytest

from robot_memory.dream.autodream import dream
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import identifiers_masked
from robot_memory.evidence.observations import LogObservation
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.settings import DreamConfig

UTC = dt.timezone.utc
DAY0 = dt.datetime(2026, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize('raw, masked', [
    ('Goal 3f2a9c1e-7b4d-4e2a-9f1c-0a1b2c3d4e5f aborted: Collision Ahead',
     'Goal <uuid> aborted: Collision Ahead'),
    ('segfault at 0x7f3a9b2c4d10 in libfoo', 'segfault at <ptr> in libfoo'),
    ('peer 192.168.1.23:7447 lost', 'peer <ip> lost'),
    ('link 00:1A:2B:3C:4D:5E down', 'link <mac> down'),
    ('camera 14442C10D13EABCE00 timed out', 'camera <id> timed out'),
    ('Failed to open SPI (serial 27B5A0CA5B7D0FBBA2), retrying at 2024-08-26T01:38:13.372714Z',
     'Failed to open SPI (serial <id>), retrying at <time>'),
    # Names with a number, values, times and plain words stay what they are.
    ('Camera not detected (X_LINK_DEVICE_NOT_FOUND)', 'Camera not detected '
                                                      '(X_LINK_DEVICE_NOT_FOUND)'),
    ('ttyUSB0 at 12:03:11 after 3 s, register 0x10', 'ttyUSB0 at 12:03:11 after 3 s, '
                                                     'register 0x10'),
    ('RealSense D435 (Turtlebot4) 7.9 Hz', 'RealSense D435 (Turtlebot4) 7.9 Hz'),
])
def test_identifiers_are_masked_and_the_rest_kept(raw, masked):
    assert identifiers_masked(raw) == masked


def test_an_entry_made_from_evidence_carries_no_raw_identifier(tmp_path):
    store = EvidenceStore(tmp_path / 'robot-memory.db')
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    goals = ['3f2a9c1e-7b4d-4e2a-9f1c-0a1b2c3d4e5f', '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b']
    for index in range(6):
        stamp = DAY0 + dt.timedelta(hours=9, minutes=index)
        store.add(LogObservation(stamp, 'behavior_server', 40,
                                 f'[backup] Goal {goals[index % 2]} aborted: Collision Ahead'))
        store.add(DiagnosticObservation(stamp, 'realsense: status', '14442C10D13EABCE00', 2,
                                        'USB 0x7f3a9b2c4d10 reset from 10.0.0.7'))
    dream(store, memory, DAY0 + dt.timedelta(days=1, hours=3),
          config=DreamConfig(rrn='RRN-000000000001'))
    texts = [entry.text for entry in memory.load(DAY0 + dt.timedelta(days=1, hours=4))
             .document.entries]
    assert len(texts) == 2, texts
    for text in texts:
        for raw in goals + ['14442C10D13EABCE00', '0x7f3a9b2c4d10', '10.0.0.7']:
            assert raw not in text, text
    assert any('Goal <uuid> aborted: Collision Ahead' in text for text in texts), texts
    store.close()


def _daily(days, start_h, end_h):
    day = DAY0.timestamp()
    return [[day + index * 86400 + start_h * 3600, day + index * 86400 + end_h * 3600]
            for index in days]


def test_a_state_that_marks_working_hours_is_not_stated_one_that_tells_is():
    """Issue 38, point 7: "only while undocked" on a daytime fault says nothing."""
    from robot_memory.dream.cooccurrence import only_while
    now = DAY0.timestamp() + 14 * 86400
    undocked = _daily(range(14), 8, 18)  # every working day, fault or not
    # A short daytime fault on some days, at different hours: always while undocked.
    faults = [[start, start + 600, 5, 1] for start, _ in
              _daily((1, 3, 4, 6, 9, 11, 12), 10, 0)] + \
             [[start, start + 900, 5, 1] for start, _ in _daily((2, 5, 8, 13), 15, 0)]
    faults.sort()
    assert only_while(faults, {'dock reports Undocked': undocked}, now) is None
    # A rarer state that holds only around the faults is what the fault happens with.
    hot = [[start - 1800, end + 1800] for start, end, *_ in faults]
    assert only_while(faults, {'dock reports Undocked': undocked, 'motor reports Hot': hot},
                      now) == 'motor reports Hot'
    # A battery low every afternoon fills its hours, and "undocked" covers them and more.
    battery = [[start, end, 100, 1] for start, end in _daily(range(14), 11, 18)]
    assert only_while(battery, {'dock reports Undocked': undocked}, now) is None
    # The lidar off every night while docked fills its own hours: the state is kept.
    docked = _daily(range(14), 22, 31)
    lidar = [[start + 180, end - 180, 50, 1] for start, end in docked]
    assert only_while(lidar, {'dock reports Docked': docked}, now) == 'dock reports Docked'
