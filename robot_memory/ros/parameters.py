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
memory_node's parameters: declared from ``settings.parameter_specs``, read back as plain values.

Each parameter gets its description, default and range from the one table in
``robot_memory.settings``; ``settings.validate_parameters`` checks the values as a whole.
"""

from rcl_interfaces.msg import FloatingPointRange
from rcl_interfaces.msg import IntegerRange
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterValueException

from robot_memory.errors import RobotMemoryError
from robot_memory.settings_file import allowed
from robot_memory.settings_file import parameter_specs


class StartupError(RobotMemoryError, RuntimeError):
    """The node cannot start with this configuration; the message says why and what to do."""


def declare_parameters(node, overrides: dict) -> None:
    """Declare every parameter of ``settings.parameter_specs`` on ``node`` with its range."""
    for spec in parameter_specs():
        descriptor = ParameterDescriptor(
            description=spec.description, read_only=spec.read_only,
            additional_constraints=spec.other_constraints)
        default = spec.default
        if spec.bounds is not None:
            # A range tools can show (ros2 param describe, rqt_reconfigure sliders);
            # rclpy refuses a value outside it before parameters_callback runs.
            low, high = spec.bounds
            if isinstance(default, float):
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(low), to_value=float(high), step=0.0)]
            elif isinstance(default, int) and not isinstance(default, bool):
                descriptor.integer_range = [IntegerRange(
                    from_value=int(low), to_value=int(high), step=1)]
        if isinstance(default, list) and not default:
            # rclpy cannot hold an empty string array (it takes [] for a byte array),
            # and a typed parameter declared without a value stays unset, which makes
            # ~/get_parameters answer nothing for any request naming it (ros2 param
            # dump). Declared not set instead; validate_parameters checks the type.
            descriptor.dynamic_typing = True
            default = None
        try:
            node.declare_parameter(spec.name, default, descriptor)
        except InvalidParameterValueException:
            # rclpy refused the start-up value (--params-file, -p) against the range.
            override = overrides.get(spec.name)
            value = override.value if override is not None else default
            raise StartupError(f'invalid parameter {spec.name}: {value!r} is out of range; '
                               f'allowed: {allowed(spec)}') from None


def parameter_values(node, overrides=()) -> dict:
    """Return every parameter's value as plain data, with ``overrides`` (Parameters) applied."""
    values = {}
    for spec in parameter_specs():
        value = node.get_parameter(spec.name).value  # None: declared not set
        values[spec.name] = spec.default if value is None else value
    for parameter in overrides:
        values[parameter.name] = parameter.value
    for name, value in values.items():
        if isinstance(value, tuple) or type(value).__name__ == 'array':
            values[name] = list(value)
    return values


USAGE = """usage: memory_node [--ros-args -p NAME:=VALUE ... --params-file FILE]

Operational memory for this robot: takes in /diagnostics, ERROR logs on /rosout and the
telemetry topics named, keeps the evidence in SQLite and dreams it into robot-memory.md.
Started as ros2 launch robot_memory robot_memory_launch.py (or ros2 run robot_memory
memory_node); ros2 param describe /robot_memory NAME tells more about a parameter.

example: memory_node --ros-args -p memory_file:=/var/lib/robot/robot-memory.md \\
             -p rrn:=RRN-000000000001

parameters:
"""


def help_asked(argv) -> bool:
    """Whether ``argv`` (the process's arguments) asks for help before any ``--ros-args``."""
    own = list(argv[1:])
    if '--ros-args' in own:
        own = own[:own.index('--ros-args')]
    return any(arg in ('-h', '--help') for arg in own)


def usage() -> str:
    """Return memory_node's usage: how to start it and every parameter with its default."""
    lines = [USAGE]
    for spec in parameter_specs():
        default = spec.default if spec.default not in ('', []) else 'unset'
        lines.append(f'  {spec.name} (default {default}): {spec.description}')
    return '\n'.join(lines)
