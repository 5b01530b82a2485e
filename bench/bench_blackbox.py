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
The black box's RAM under a 10 MB/s flood on a kept topic, and a recording written in it.

Runs, each in its own process on a private ROS_DOMAIN_ID: a publisher of 100 kB
``std_msgs/UInt8MultiArray`` messages at 100 Hz (10 MB/s, sensor-data QoS); a bare rclpy
subscriber taking them raw (``raw=True``) and dropping them, the baseline; and the installed
``memory_node`` keeping the topic in its black box (``blackbox_ram_mb``, default 64, with
``blackbox_before_s`` 30: 300 MB of messages, so the RAM bound, not the age, is what holds).
Prints one JSON object a line:

``blackbox_rss``        VmRSS of the node (``mb``: its maximum over the flood; ``start_mb``
                        before it) and of the bare subscriber (``baseline_mb``, maximum), with
                        ``bound_mb``; ``growth_mb`` = mb - start_mb, to hold under bound_mb
                        (``ratio`` = growth_mb / bound_mb, at most 1), the MCAP write
                        included (``while_writing_mb``: what the peak gained after the
                        fault); the bare subscriber's own growth is ``baseline_growth_mb``.
``blackbox_recording``  a fault published during the flood (a status going ERROR): ``mb``
                        the recording's size, ``messages`` in it, ``latency_s`` from the fault
                        to its row in the database (``blackbox_after_s`` included).

Needs the ROS environment (``source scripts/env.sh``; ``memory_node`` on PATH). Usage:
``python bench/bench_blackbox.py [--seconds 20] [--ram-mb 64] [--quick]``.
"""

import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import yaml

PUBLISHER = """
import sys, time, rclpy
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import UInt8MultiArray
rclpy.init()
node = rclpy.create_node('bb_flood')
pub = node.create_publisher(UInt8MultiArray, '/bb_flood', qos_profile_sensor_data)
msg = UInt8MultiArray(data=bytes(int(sys.argv[1])))
end = time.monotonic() + float(sys.argv[2])
period = 1.0 / float(sys.argv[3])
tick = time.monotonic()
while time.monotonic() < end:
    pub.publish(msg)
    tick += period
    time.sleep(max(0.0, tick - time.monotonic()))
"""
BARE = """
import rclpy
from rclpy.qos import qos_profile_sensor_data
from std_msgs.msg import UInt8MultiArray
rclpy.init()
node = rclpy.create_node('bb_bare')
node.create_subscription(UInt8MultiArray, '/bb_flood', lambda data: None,
                         qos_profile_sensor_data, raw=True)
rclpy.spin(node)
"""
FAULT = """
import sys, time, rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
rclpy.init()
node = rclpy.create_node('bb_fault')
pub = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
time.sleep(2.0)
for level in (0, 2):
    pub.publish(DiagnosticArray(status=[DiagnosticStatus(
        level=bytes([level]), name='bench: motor', hardware_id='bench', message='stalled')]))
    time.sleep(0.5)
time.sleep(1.0)
"""


def vm_rss_mb(pid: int) -> float:
    """Return the VmRSS of process ``pid`` in MB (0 once it is gone)."""
    try:
        for line in pathlib.Path(f'/proc/{pid}/status').read_text().splitlines():
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _python(code: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-c', code, *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _start_node(scratch: pathlib.Path, ram_mb: float) -> subprocess.Popen:
    params = scratch / 'params.yaml'
    params.write_text(yaml.safe_dump({'/**': {'ros__parameters': {
        'memory_file': str(scratch / 'robot-memory.md'), 'dream_time': '',
        'blackbox_topics': ['/bb_flood:std_msgs/msg/UInt8MultiArray'],
        'blackbox_ram_mb': ram_mb, 'blackbox_before_s': 30.0, 'blackbox_after_s': 1.0}}}))
    executable = shutil.which('memory_node')
    if executable is None:
        raise SystemExit('memory_node is not on PATH: source scripts/env.sh first')
    return subprocess.Popen([executable, '--ros-args', '--params-file', str(params)],
                            stdout=open(scratch / 'node.log', 'wb'), stderr=subprocess.STDOUT,
                            cwd=scratch)


def _recordings(database: pathlib.Path) -> list:
    try:
        conn = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
        try:
            return conn.execute('SELECT bytes, path FROM blackbox_recordings').fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


def _messages(path: str) -> int:
    from mcap.reader import make_reader  # only once a recording exists
    with open(path, 'rb') as handle:
        return make_reader(handle).get_summary().statistics.message_count


def run(args) -> list:
    """Run the flood against the node and the bare subscriber; return the JSON records."""
    scratch = pathlib.Path(tempfile.mkdtemp(prefix='bench_blackbox_'))
    node = _start_node(scratch, args.ram_mb)
    bare = _python(BARE)
    time.sleep(args.settle_s)
    start = {'node': vm_rss_mb(node.pid), 'bare': vm_rss_mb(bare.pid)}
    peak = dict(start, before_fault=0.0)
    flood = _python(PUBLISHER, args.size, args.seconds, args.rate)
    fault_at = None
    began = time.monotonic()
    samples = 0
    try:
        while flood.poll() is None:
            time.sleep(0.25)
            samples += 1
            for name, process in (('node', node), ('bare', bare)):
                peak[name] = max(peak[name], vm_rss_mb(process.pid))
            if fault_at is None and time.monotonic() - began > args.seconds / 2:
                _python(FAULT).wait(30)
                fault_at = time.monotonic() - 1.0  # FAULT ends 1 s after its ERROR
                peak['before_fault'] = peak['node']
        rows, latency = [], None
        while time.monotonic() - began < args.seconds + 30 and not rows:
            rows = _recordings(scratch / 'robot-memory.db')
            if rows and fault_at is not None:
                latency = time.monotonic() - fault_at
            time.sleep(0.2)
    finally:
        for process in (flood, bare, node):
            if process.poll() is None:
                process.terminate()
                process.wait(30)
    records = [{'bench': 'blackbox_rss', 'n': samples, 'mb': round(peak['node'], 1),
                'start_mb': round(start['node'], 1),
                'growth_mb': round(peak['node'] - start['node'], 1),
                'before_fault_mb': round(peak['before_fault'], 1),
                'while_writing_mb': round(peak['node'] - peak['before_fault'], 1),
                'bound_mb': args.ram_mb,
                'ratio': round((peak['node'] - start['node']) / args.ram_mb, 2),
                'baseline_mb': round(peak['bare'], 1),
                'baseline_growth_mb': round(peak['bare'] - start['bare'], 1),
                'flood_mb_per_s': round(args.size * args.rate / 1e6, 1),
                'seconds': args.seconds}]
    if rows:
        records.append({'bench': 'blackbox_recording', 'n': len(rows),
                        'mb': round(rows[0][0] / 2**20, 2), 'messages': _messages(rows[0][1]),
                        'latency_s': round(latency or 0.0, 2)})
    shutil.rmtree(scratch, ignore_errors=True)
    return records


def main() -> None:
    """Parse the arguments, run, print one JSON object a line."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='flood length')
    parser.add_argument('--ram-mb', type=float, default=64.0, help='blackbox_ram_mb')
    parser.add_argument('--size', type=int, default=100_000, help='bytes a message')
    parser.add_argument('--rate', type=float, default=100.0, help='messages a second')
    parser.add_argument('--settle-s', type=float, default=5.0, help='wait before the flood')
    parser.add_argument('--quick', action='store_true', help='8 s of flood')
    args = parser.parse_args()
    if args.quick:
        args.seconds = 8.0
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    for record in run(args):
        print(json.dumps(record), flush=True)


if __name__ == '__main__':
    main()
