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

"""How the operator page refuses: the status and a message that says what to do."""

from robot_memory.errors import RobotMemoryError


class Refused(RobotMemoryError):
    """A request the page refuses: the status and a message saying what to do."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def refused(error: Exception) -> Refused:
    """
    Return the page's refusal of ``error``: a Refused as it is, any other one a 409.

    The one conversion of the page: ``Page.guarded`` answers every ``RobotMemoryError``
    (and ``ValueError``) of a handler with it. The page says "Refused." before the message,
    and that nothing was changed.
    """
    if isinstance(error, Refused):
        return error
    said = str(error)
    if 'nothing was changed' not in said:
        said += '; nothing was changed'
    return Refused(409, said)
