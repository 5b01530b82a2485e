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
A small simulated robot for the demo, and a stand-in brain that prints the context block.

The robot publishes, with time compressed to match memory_node's ``time_scale``:

* ``/diagnostics``: the left wheel encoder warns in bursts (intermittent), the right one
  and the lidar stay OK;
* ``/battery_state`` (``sensor_msgs/BatteryState``): a battery draining below 20% and
  recovering on the charger;
* ``/rosout``: an occasional ERROR from ``controller_server`` ("Failed to make progress").

The brain subscribes to ``/robot_memory/context`` (latched) and prints every new block,
which is what an LLM brain would receive at session start.

    demo_robot [--seconds 60]
"""

import argparse
import itertools
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from sensor_msgs.msg import BatteryState

from robot_memory.msg import ContextBlock

OK, WARN = bytes([0]), bytes([1])


class SimulatedRobot(Node):
    """Publishes a robot's self-reports at 10 Hz."""

    def __init__(self):
        super().__init__('demo_robot')
        self.diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 100)
        self.battery = self.create_publisher(BatteryState, '/battery_state', 10)
        # rcl publishes only the loggers of nodes on /rosout: the controller is a node.
        self.controller = Node('controller_server')
        self.tick = itertools.count()
        self.create_timer(0.1, self.step)

    def step(self) -> None:
        """One tick: diagnostics every tick, battery every tick, an error log now and then."""
        tick = next(self.tick)
        burst = (tick // 30) % 3 == 0  # warns 3 s out of every 9 s
        dropped = 7 + tick % 11
        left = DiagnosticStatus(
            level=WARN if burst else OK, name='base: left wheel encoder',
            hardware_id='wheel_left',
            message=f'dropped {dropped} ticks under load' if burst else 'OK',
            values=[KeyValue(key='ticks_dropped', value=str(dropped if burst else 0))])
        right = DiagnosticStatus(level=OK, name='base: right wheel encoder',
                                 hardware_id='wheel_right', message='OK')
        lidar = DiagnosticStatus(level=OK, name='sensors: lidar', hardware_id='lidar_front',
                                 message='OK', values=[KeyValue(key='scan_rate_hz',
                                                                value='10.0')])
        array = DiagnosticArray(status=[left, right, lidar])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics.publish(array)
        cycle = tick % 200  # drains over 15 s, charges over 5 s
        level = 0.55 - 0.45 * cycle / 150 if cycle < 150 else 0.10 + 0.45 * (cycle - 150) / 50
        self.battery.publish(BatteryState(percentage=float(level), voltage=11.1 + level,
                                          temperature=31.0))
        if tick % 40 == 20:
            self.controller.get_logger().error(
                'Failed to make progress: robot stuck near the kitchen doorway lip')


class Brain(Node):
    """Prints each context block memory_node publishes."""

    def __init__(self, topic: str):
        super().__init__('demo_brain')
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.last = None
        self.create_subscription(ContextBlock, topic, self.context_callback, qos)

    def context_callback(self, block: ContextBlock) -> None:
        """Print a block when it differs from the last one."""
        if block.text == self.last:
            return
        self.last = block.text
        print(f'\n=== context block for {block.rrn} ({len(block.entries)} entries) ===',
              flush=True)
        print(block.text or '(no entry reaches the injection threshold yet)', flush=True)


def main(argv=None) -> int:
    """Run the simulated robot and the brain for ``--seconds``."""
    parser = argparse.ArgumentParser(prog='demo_robot', description=__doc__.strip().splitlines()[0])
    parser.add_argument('--seconds', type=float, default=60.0, help='how long to run')
    parser.add_argument('--context-topic', default='/robot_memory/context',
                        help='where memory_node publishes the block')
    args, ros_args = parser.parse_known_args(argv)
    rclpy.init(args=ros_args)
    robot, brain = SimulatedRobot(), Brain(args.context_topic)
    executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(robot)
    executor.add_node(robot.controller)
    executor.add_node(brain)
    try:
        # Start reporting once memory_node listens, so the first dream sees a whole burst.
        waited = time.monotonic() + 30.0
        while robot.diagnostics.get_subscription_count() == 0 and time.monotonic() < waited:
            time.sleep(0.1)
        deadline = time.monotonic() + args.seconds
        while rclpy.ok() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        robot.controller.destroy_node()
        robot.destroy_node()
        brain.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
