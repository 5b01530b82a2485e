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
standard error after the command's name, and the exit code. What no refusal foresaw (a
file system's or SQLite's error, a date out of range) is said in one line too
(:func:`refuse_unforeseen`), never as a traceback.
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


def unforeseen(error: BaseException) -> bool:
    """Whether ``error`` is one :func:`refuse_unforeseen` says: OSError, OverflowError, SQLite's."""
    sqlite3 = sys.modules.get('sqlite3')  # not imported: none of its errors can be raised
    return isinstance(error, (OSError, OverflowError)) or (
        sqlite3 is not None and isinstance(error, sqlite3.Error))


def refuse_unforeseen(command: str, error: BaseException) -> int:
    """
    Say an error no refusal foresaw (the file system's, SQLite's, a date out of range).

    One line, as a refusal, never a traceback: what failed and the system's words for it,
    then what to look at. Exit code 1.
    """
    if isinstance(error, OSError):
        where = f' {error.filename}' if error.filename else ''
        what = f'cannot use{where}: {error.strerror or error}'
        advice = 'check that path, its permissions and the free space on its disk'
    elif isinstance(error, OverflowError):
        what = f'a date or number out of range ({error})'
        advice = 'give a smaller number, or a time between the years 1900 and 9000'
    else:  # sqlite3.Error
        what = f'the database refused: {error}'
        advice = ('check the free space and permissions of the memory database (a full disk, a '
                  'read-only file); what was not written is written by the next run')
    print(f'robot-memory {command}: {what}; {advice}', file=sys.stderr)
    return 1
