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
A real memory_node keeps context signals: /cmd_vel's numbers and an OK status's values.

The node runs in its own process (``ros_harness.NodeProcess``); this process publishes a
Twist on a telemetry topic with no rule and an OK DiagnosticArray with a temperature and a
serial, then reads the node's evidence database read-only.
"""

import sqlite3
import struct
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from geometry_msgs.msg import Twist
import rclpy

from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import spin
from support.ros_probe import wait_ready


def _signals(path) -> dict:
    """{name: total count} of the node's signal_hours ({} before the table exists)."""
    if not path.exists():
        return {}
    db = sqlite3.connect(f'{path.resolve().as_uri()}?mode=ro', uri=True, timeout=30.0)
    try:
        rows = db.execute('SELECT name, data FROM signal_hours').fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        db.close()
    found: dict = {}
    for name, data in rows:
        found[name] = found.get(name, 0) + sum(struct.unpack('<60I', data[720:]))
    return found


def test_the_node_keeps_telemetry_fields_and_status_values_as_signals(tmp_path, probe):
    topic = '/it_signals/cmd_vel'
    node = NodeProcess(tmp_path, 'it_signals', rrn='RRN-000000000175', flush_period_s=0.1,
                       telemetry_topics=[f'{topic}:geometry_msgs/msg/Twist']).start()
    database = node.memory_file.with_name('robot-memory.db')
    twist = probe.create_publisher(Twist, topic, 10)
    diagnostics = probe.create_publisher(DiagnosticArray, '/diagnostics', 100)
    status = DiagnosticStatus(level=bytes([0]), name='it_signals: motor', hardware_id='base',
                              message='OK', values=[KeyValue(key='Motor Temp (C)', value='41.5'),
                                                    KeyValue(key='serial', value='A1B2C3')])
    want = {f'{topic} linear.x', 'it_signals: motor: Motor Temp (C)'}
    try:
        wait_ready(probe, node, topic=topic)
        wait_for(lambda: diagnostics.get_subscription_count() > 0, 10.0, spin=spin(probe))
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not want <= set(_signals(database)):
            message = Twist()
            message.linear.x = 0.42
            twist.publish(message)
            diagnostics.publish(DiagnosticArray(status=[status]))
            rclpy.spin_once(probe, timeout_sec=0.2)
        found = _signals(database)
        assert want <= set(found), (found, node.log())
        assert not any('serial' in name for name in found), found
        assert found[f'{topic} linear.x'] >= 1
    finally:
        probe.destroy_publisher(twist)
        probe.destroy_publisher(diagnostics)
        assert node.stop() == 0, node.log()
