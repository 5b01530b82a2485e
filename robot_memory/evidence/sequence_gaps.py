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
Counting messages the middleware lost, from gaps in each publisher's sequence numbers.

A DDS writer numbers its samples 1, 2, 3, ... and every received message carries its
writer's id (the publisher GID) and that number. A subscriber that cannot keep up with a
burst loses samples without any error: its KEEP_LAST history drops the oldest waiting
ones, and the middleware's message-lost event does not fire for that. The numbers still
tell: when a publisher's message ``n`` follows its message ``m``, the ``n - m - 1`` in
between never arrived. :class:`SequenceGaps` counts exactly those.

What it cannot see, by design: messages a publisher sent before the first one we
received from it (published before discovery matched us, or before we started: not
losses of ours, and counting them would raise false alarms at every robot bring-up), and
messages lost after the last one we received from a publisher that then went silent.
A middleware that does not report sequence numbers (``None``, or the "unsupported"
value 2**64 - 1) is simply not counted.

Pure logic: no rclpy here; the node hands in the GID bytes and the number.
"""

from typing import Hashable
from typing import Optional

UNSUPPORTED = 2 ** 64 - 1  # RMW_MESSAGE_INFO_SEQUENCE_NUMBER_UNSUPPORTED


class SequenceGaps:
    """
    Per-publisher last sequence number seen, and the total of the gaps between them.

    Memory is bounded: at most ``max_publishers`` are remembered; the least recently
    heard is forgotten first (it then counts as new if it speaks again).
    """

    def __init__(self, max_publishers: int = 4096):
        if max_publishers < 1:
            raise ValueError(f'max_publishers must be at least 1, got {max_publishers}')
        self.max_publishers = max_publishers
        self._last: dict = {}
        self.lost = 0

    def __len__(self) -> int:
        return len(self._last)

    def observe(self, publisher: Hashable, sequence: Optional[int]) -> int:
        """Note one received message; return how many of the publisher's were skipped."""
        if sequence is None or sequence <= 0 or sequence >= UNSUPPORTED:
            return 0
        last = self._last.pop(publisher, None)
        if last is None:
            if len(self._last) >= self.max_publishers:
                del self._last[next(iter(self._last))]  # the least recently heard
            self._last[publisher] = sequence
            return 0
        if sequence <= last:
            # A duplicate or a late sample (best effort): nothing skipped; keep the highest.
            self._last[publisher] = last
            return 0
        self._last[publisher] = sequence
        gap = sequence - last - 1
        self.lost += gap
        return gap
