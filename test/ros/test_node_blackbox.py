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

"""The black box in a real memory_node: raw subscriptions, a fault, an MCAP, its link."""

import json
import signal
import sqlite3
import subprocess
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from mcap.reader import make_reader
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import BatteryState

from robot_memory.evidence import blackbox
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import health
from support.ros_probe import spin
from support.ros_probe import wait_ready

BATTERY = '/bb_battery:sensor_msgs/msg/BatteryState'


def _rows(database) -> list:
    if not database.exists():
        return []
    conn = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
    try:
        return conn.execute('SELECT path, signature, bytes, topics, sha256, freeze_frame '
                            'FROM blackbox_recordings ORDER BY id').fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def _status(name: str, level: int) -> DiagnosticArray:
    return DiagnosticArray(status=[DiagnosticStatus(level=bytes([level]), name=name,
                                                    hardware_id='bb', message='motor stalled'
                                                    if level else 'ok')])


def test_a_fault_gets_its_window_as_mcap_linked_in_the_database(tmp_path, probe):
    node = NodeProcess(tmp_path, 'bb1', blackbox_topics=[BATTERY, '/bb_silent:std_msgs/msg/String'],
                       blackbox_freeze_topics=[BATTERY], blackbox_before_s=2.0,
                       blackbox_after_s=0.5, blackbox_cooldown_s=60.0).start()
    try:
        wait_ready(probe, node)
        battery = probe.create_publisher(BatteryState, '/bb_battery', qos_profile_sensor_data)
        diagnostics = probe.create_publisher(DiagnosticArray, '/diagnostics', 100)
        assert wait_for(lambda: battery.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for index in range(60):  # 3 s of battery at 20 Hz, a fault at 2 s
            battery.publish(BatteryState(percentage=1.0 - index / 100))
            if index == 0:
                diagnostics.publish(_status('bb: motor', 0))
                diagnostics.publish(_status('bb: lidar', 0))
            if index in (40, 44, 48, 52):  # a flapping motor: one recording, not four
                diagnostics.publish(_status('bb: motor', 2 if index % 8 == 0 else 0))
            if index == 42:  # a second fault close after the first gets its own window
                diagnostics.publish(_status('bb: lidar', 2))
            time.sleep(0.05)
        database = tmp_path / 'robot-memory.db'
        assert wait_for(lambda: len(_rows(database)) >= 2, 20.0, spin=spin(probe)), node.log()
        time.sleep(1.0)
        rows = _rows(database)
        assert len(rows) == 2, rows
        for path, _signature, size, topics, digest, frame in rows:
            assert json.loads(topics) == ['/bb_battery']
            assert blackbox.file_sha256(tmp_path / path) == digest
            with open(path, 'rb') as handle:
                summary = make_reader(handle).get_summary()
            assert summary.statistics.message_count >= 20  # 2.5 s at 20 Hz, lossy QoS
            [schema] = summary.schemas.values()
            assert schema.encoding == 'ros2msg' and b'MSG: std_msgs/Header' in schema.data
            value = json.loads(frame)['/bb_battery']['value']
            assert 0.0 < value['percentage'] < 0.7
        assert not list((tmp_path / 'robot-memory.blackbox').glob('*.partial'))
        status = health(probe, 'black box')
        assert '/bb_silent' in status['_message'] and status['_level'] == 1
        assert status['recordings_written'] == '2'
    finally:
        assert node.stop(signal.SIGINT) == 0, node.log()


def test_a_fault_just_before_a_shutdown_keeps_its_recording(tmp_path, probe):
    node = NodeProcess(tmp_path, 'bb3', blackbox_topics=[BATTERY], blackbox_after_s=60.0).start()
    try:
        wait_ready(probe, node)
        battery = probe.create_publisher(BatteryState, '/bb_battery', qos_profile_sensor_data)
        diagnostics = probe.create_publisher(DiagnosticArray, '/diagnostics', 100)
        assert wait_for(lambda: battery.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for index in range(20):
            battery.publish(BatteryState(percentage=0.5))
            if index == 10:
                diagnostics.publish(_status('bb: motor', 2))
            time.sleep(0.05)
        time.sleep(1.0)  # the fault is ingested; its 60 s after are far from over
    finally:
        assert node.stop(signal.SIGINT) == 0, node.log()
    [row] = _rows(tmp_path / 'robot-memory.db')
    assert blackbox.file_sha256(tmp_path / row[0]) == row[4]


def test_a_recordings_folder_that_is_a_symbolic_link_is_refused_at_start(tmp_path):
    (tmp_path / 'elsewhere').mkdir()
    (tmp_path / 'robot-memory.blackbox').symlink_to(tmp_path / 'elsewhere')
    node = NodeProcess(tmp_path, 'bb2', blackbox_topics=[BATTERY]).start()
    assert node.wait_exit(30.0) == 2
    assert 'symbolic link' in node.log() and 'blackbox_folder' in node.log()


def test_without_black_box_parameters_the_node_loads_no_mcap_library(tmp_path):
    code = ('import sys, robot_memory.ros.node; '
            "print(sorted(m for m in sys.modules if m.startswith(('mcap', 'rosbags'))))")
    # -P and another folder: robot_memory from the install tree, not the bare sources.
    done = subprocess.run([sys.executable, '-P', '-c', code], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '[]'
