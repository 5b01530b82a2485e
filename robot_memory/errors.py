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
Exceptions raised by the robot_memory core.

Each error says what was wrong and what to do about it; the ROS layer and the
CLI turn them into service replies, diagnostics and exit codes.
"""


class RobotMemoryError(Exception):
    """
    A refusal of robot_memory: the message says what was wrong and what to do.

    Every refusal derives from it (and keeps its own base, ValueError for most), so a
    caller can catch ``RobotMemoryError`` instead of a tuple of each module's errors.
    """


class MemoryFileError(RobotMemoryError):
    """A robot-memory.md file could not be read or written."""

    def __init__(self, message, path=None, line=None, set_aside_to=None):
        self.path = str(path) if path is not None else None
        self.line = line
        self.set_aside_to = str(set_aside_to) if set_aside_to is not None else None
        location = ''
        if self.path is not None:
            location = self.path + (f':{line}' if line is not None else '') + ': '
        super().__init__(location + message)
        self.problem = message


class MemoryLockTimeout(MemoryFileError):
    """Another writer held the memory file lock for too long."""


class SettingsConflict(RobotMemoryError, ValueError):
    """
    Settings each valid alone that do not fit together; ``fields`` names those to change.

    A model's cross-field validator raises it: pydantic keeps it with the error, and
    ``common.validation_text`` names these fields where a single field's refusal names its own.
    """

    def __init__(self, message: str, fields):
        super().__init__(message)
        self.fields = tuple(fields)


class MissingExtra(RobotMemoryError, ValueError):
    """
    An optional extra (``bags``, ``web``, ``semantic``) that a command needs is not installed.

    robot_memory is not on PyPI, so the fix installs the extra from a checkout; the CLI exits
    with code 2 for it, as for a missing required package.
    """

    def __init__(self, what: str, extra: str, missing: str):
        missing = missing.partition('.')[0]  # the package a person installs, not its module
        super().__init__(
            f'{what} needs the {extra} extra ({missing} is missing). robot_memory is not on '
            'PyPI: install the extra from the robot_memory checkout with pip install '
            f"'.[{extra}]' (or run scripts/setup.sh there)")
        self.extra = extra
        self.missing = missing
