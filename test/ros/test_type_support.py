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

"""Message type support without ROS's code generator: a real publisher, no lark nor empy."""

import os
import subprocess
import sys

from support.processes import child_env

_SCRIPT = """
import sys
from robot_memory.ros.type_support import skip_code_generator
assert skip_code_generator()
assert not skip_code_generator()  # once is enough
import rclpy
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message
from std_msgs.msg import String
rclpy.init()
node = rclpy.create_node('type_support_%d')
node.create_publisher(String, '/type_support_check', 10).publish(String(data='kept'))
assert deserialize_message(serialize_message(String(data='kept')), String).data == 'kept'
before = sorted(name for name in ('lark', 'em', 'rosidl_parser.parser') if name in sys.modules)
from rosidl_generator_py import generate_py  # still there when asked for
node.destroy_node()
rclpy.shutdown()
print(before, callable(generate_py), 'lark' in sys.modules)
""" % os.getpid()


def test_messages_work_and_the_generator_loads_only_when_asked_for():
    run = subprocess.run([sys.executable, '-P', '-c', _SCRIPT], capture_output=True, text=True,
                         env=child_env(), timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split('\n')[-2] == '[] True True'
