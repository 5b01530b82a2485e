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

"""``robot-memory blackbox list|export``, and ``replay`` of a black-box recording, as run."""

import json
import os

from rosbags.typesys import get_typestore
from rosbags.typesys import Stores

from robot_memory.evidence import blackbox
from robot_memory.evidence.evidence_store import EvidenceStore
from support.cli import run_process as run_cli

STORE = get_typestore(Stores.ROS2_KILTED)
S = 10**9
FAULT_NS = 1_780_000_000 * S  # 2026-05-28


def _diagnostic(level: int, second: int) -> bytes:
    types = STORE.types
    status = types['diagnostic_msgs/msg/DiagnosticStatus'](
        level=level, name='base: left motor', message='stalled' if level else 'ok',
        hardware_id='motor_left', values=[])
    header = types['std_msgs/msg/Header'](
        stamp=types['builtin_interfaces/msg/Time'](sec=second, nanosec=0), frame_id='')
    array = types['diagnostic_msgs/msg/DiagnosticArray'](header=header, status=[status])
    return bytes(STORE.serialize_cdr(array, 'diagnostic_msgs/msg/DiagnosticArray'))


def _recording(tmp_path) -> tuple:
    """Write two recordings as memory_node does and link them; return (db, paths)."""
    folder = blackbox.check_folder(tmp_path / 'robot-memory.blackbox')
    type_name = 'diagnostic_msgs/msg/DiagnosticArray'
    schema = blackbox.message_definition(type_name, lambda name: None)
    paths = []
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        for index, signature in enumerate(('sig-motor', 'sig-lidar')):
            fault = FAULT_NS + index * 60 * S
            window = blackbox.Window(signature, 'base: left motor', fault, fault - 5 * S,
                                     fault + S)
            messages = [(fault + (second - 5) * S, '/diagnostics',
                         _diagnostic(2 if second >= 5 else 0, fault // S + second - 5))
                        for second in range(7)]
            path = folder / blackbox.recording_name(signature, fault)
            size, digest = blackbox.write_recording(path, {'/diagnostics': (type_name, schema)},
                                                    messages)
            with store.db.atomic():
                blackbox.record(store.db.conn, path, window, size, ['/diagnostics'], digest,
                                {'/odom': {'value': {'x': 1.0}}})
            paths.append(path)
    return tmp_path / 'robot-memory.db', paths


def test_list_shows_time_signature_size_topics_and_a_recording_deleted_by_hand(tmp_path):
    database, paths = _recording(tmp_path)
    code, out, err = run_cli('blackbox', 'list', '--db', database)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert 'sig-motor' in lines[0] and '2026-05-28T' in lines[0] and '/diagnostics' in lines[0]
    assert 'MB' in lines[0] and 'GONE' not in out
    os.unlink(paths[0])
    code, out, err = run_cli('blackbox', 'list', '--db', database, '--json')
    assert code == 0, err
    rows = json.loads(out)
    assert [row['gone'] for row in rows] == [True, False]
    assert rows[1]['freeze_frame'] == {'/odom': {'value': {'x': 1.0}}}
    code, out, err = run_cli('blackbox', 'list', '--db', database)
    assert 'GONE: deleted by hand' in out.splitlines()[0]


def test_export_copies_a_recording_verified_by_its_sha256(tmp_path):
    database, paths = _recording(tmp_path)
    out_dir = tmp_path / 'out'
    out_dir.mkdir()
    code, out, err = run_cli('blackbox', 'export', '1', out_dir, '--db', database)
    assert code == 0, err
    assert 'verified' in out
    assert (out_dir / paths[0].name).read_bytes() == paths[0].read_bytes()
    # A recording changed since it was written is refused, and no copy is left.
    with open(paths[1], 'r+b') as handle:
        handle.seek(40)
        handle.write(b'\0\0\0\0')
    code, out, err = run_cli('blackbox', 'export', '2', out_dir / 'b.mcap', '--db', database)
    assert code == 1 and 'it changed since; the copy was removed' in err
    assert not (out_dir / 'b.mcap').exists()
    os.unlink(paths[0])
    code, out, err = run_cli('blackbox', 'export', '1', tmp_path / 'c.mcap', '--db', database)
    assert code == 1 and 'is gone from' in err and 'nothing was exported' in err
    code, out, err = run_cli('blackbox', 'export', '9', tmp_path / 'c.mcap', '--db', database)
    assert code == 1 and 'no recording 9' in err


def test_history_of_an_entry_shows_its_recordings_with_their_freeze_frames(tmp_path):
    database, paths = _recording(tmp_path)
    with EvidenceStore(database) as store:
        store.db.execute('INSERT INTO signatures (signature, source, source_key, entry_id) '
                         "VALUES ('sig-motor', 'diagnostic', 'base: left motor', 'mem-m1')")
    code, out, err = run_cli('history', 'mem-m1', '--db', database)
    assert code == 0, err
    [line] = out.splitlines()
    assert 'recorded' in line and f'recording 1: {paths[0]}' in line
    assert '"/odom": {"value": {"x": 1.0}}' in line
    code, out, err = run_cli('history', 'mem-m1', '--db', database, '--json')
    assert json.loads(out)['freeze_frame'] == {'/odom': {'value': {'x': 1.0}}}


def test_replay_reads_a_black_box_recording(tmp_path):
    _, paths = _recording(tmp_path)
    other = tmp_path / 'other'
    other.mkdir()
    code, out, err = run_cli('replay', paths[0], '--file', other / 'robot-memory.md', '--json',
                             '--no-dream')
    assert code == 0, err
    summary = json.loads(out)
    assert summary['observations'] >= 7, summary
