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
Why the fleet refuses something: the errors of the fleet and the reasons the store counts.

Every payload the fleet store refuses is a :class:`Refused` with one of :data:`REASONS`; the
store counts each reason and ``robot-memory fleet report`` shows the counts.
"""

from typing import Any
from typing import Optional

from robot_memory.common import jsontext
from robot_memory.errors import RobotMemoryError

# reason -> what it means, for people (docs/fleet.md lists the same)
REASONS = {
    'unsigned': 'the payload or its provenance carries no signature',
    'forged': "a signature does not match the robot's public key",
    'replayed': 'older than what the store already has from that robot, or too old to accept',
    'unknown_robot': "the robot is not in the store's allowed robots (public keys)",
    'wrong_key': 'published under a key expression naming another robot or site',
    'oversized': 'more bytes, entries or characters than the store accepts',
    'malformed': 'not a fleet envelope: bad JSON, missing or mistyped fields',
    'unsigned_lesson': 'a fleet lesson the fleet key did not sign',
}


class FleetError(RobotMemoryError, ValueError):
    """The fleet cannot do what was asked (bad site, store URL, outbox); the message says why."""


class Refused(FleetError):
    """A delivery the fleet store refused; ``reason`` is one of REASONS."""

    def __init__(self, reason: str, detail: str, advice: str, rrn: Optional[str] = None):
        if reason not in REASONS:
            raise ValueError(f'unknown refusal reason {reason!r}')
        self.reason = reason
        self.detail = detail
        self.advice = advice
        self.rrn = rrn
        sender = rrn if rrn is not None else 'an unidentified robot'
        super().__init__(f'payload from {sender} refused ({reason}): {detail}; {advice}')


def json_of(raw: bytes) -> Any:
    """
    Return the JSON value of bytes from the network; ValueError when they are not UTF-8 JSON.

    Nested too deeply is malformed like any other (:mod:`robot_memory.common.jsontext`), never
    an exception that stops the store's queue or the node's fleet thread.
    """
    return jsontext.loads(bytes(raw).decode('utf-8'))
