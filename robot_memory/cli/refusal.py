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
How ``robot-memory`` refuses: the one conversion of an error into a message and exit code.

A command raises; ``main`` (and a command that goes on past one failure, as ``approve
all``) catches ``RobotMemoryError`` (every refusal of the core derives from it) and the
standard library's ``ValueError``, and answers with :func:`refuse`: the message on
standard error after the command's name, and the exit code.
"""

import sys

from robot_memory.dependencies import EXIT_UNMET
from robot_memory.errors import MissingExtra


def exit_code(error: BaseException) -> int:
    """Return the exit code of a refusal: 2 for a missing extra (as for a package), else 1."""
    return EXIT_UNMET if isinstance(error, MissingExtra) else 1


def refuse(command: str, error: BaseException) -> int:
    """
    Say the refusal of ``robot-memory command`` on standard error; return its exit code.

    :param command: the command refused (``learn``, ``dream``, ...)
    :param error: what was wrong; its message says what to do
    """
    print(f'robot-memory {command}: {error}', file=sys.stderr)
    return exit_code(error)
