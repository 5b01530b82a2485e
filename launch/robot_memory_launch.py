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
Launch memory_node: `ros2 launch robot_memory robot_memory_launch.py [arg:=value ...]`.

Launch arguments:
  namespace    namespace of the node (default: none), e.g. robot_b for a second robot
  rrn          Robot Resource Name written into robot-memory.md (overrides params_file)
  memory_file  path of robot-memory.md (default: found as OpenCastor finds it:
               $CASTOR_ROBOT_MEMORY_FILE; else ~/.opencastor/robot-memory.md if it
               exists; else $ROBOT_HOME/robot-memory.md; else the former)
  params_file  parameters file (default: the package's config/robot_memory.yaml)
  color        auto (default), always or never: colour codes in the node's log lines.
               auto colours only when this launch's own output is a terminal, so that
               `ros2 launch ... > launch.log` writes plain lines, no escape codes.

An empty rrn or memory_file leaves the value of params_file in force.
"""

import os
import sys

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.actions import OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def console_options(color: str, terminal: bool) -> dict:
    """Node keyword arguments for the node's console output: colour only if asked for."""
    if color not in ('auto', 'always', 'never'):
        raise ValueError(f"color must be 'auto', 'always' or 'never', not {color!r}")
    colored = color == 'always' or (color == 'auto' and terminal)
    # emulate_tty gives the node a pseudo-terminal, and rcutils colours what it logs to a
    # terminal; RCUTILS_COLORIZED_OUTPUT settles it whatever the caller's environment says.
    return {'emulate_tty': colored,
            'additional_env': {'RCUTILS_COLORIZED_OUTPUT': '1' if colored else '0'}}


def _node(context):
    overrides = {}
    for name in ('rrn', 'memory_file'):
        value = LaunchConfiguration(name).perform(context)
        if value:
            overrides[name] = value
    return [Node(
        package='robot_memory',
        executable='memory_node',
        name='robot_memory',
        namespace=LaunchConfiguration('namespace'),
        parameters=[LaunchConfiguration('params_file'), overrides],
        output='screen',
        **console_options(LaunchConfiguration('color').perform(context), sys.stdout.isatty()),
    )]


def generate_launch_description():
    """Return the launch description: five arguments and the node."""
    default_params = os.path.join(get_package_share_directory('robot_memory'), 'config',
                                  'robot_memory.yaml')
    return LaunchDescription([
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the node, e.g. robot_b'),
        DeclareLaunchArgument('rrn', default_value='',
                              description='Robot Resource Name (empty: from params_file)'),
        DeclareLaunchArgument('memory_file', default_value='',
                              description='Path of robot-memory.md (empty: from params_file, '
                                          'else as OpenCastor finds it: '
                                          '$CASTOR_ROBOT_MEMORY_FILE, ~/.opencastor/, '
                                          '$ROBOT_HOME)'),
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='Parameters file (see config/robot_memory.yaml)'),
        DeclareLaunchArgument('color', default_value='auto',
                              choices=['auto', 'always', 'never'],
                              description='Colour in the log lines: auto (only when the '
                                          'output is a terminal), always or never'),
        OpaqueFunction(function=_node),
    ])
