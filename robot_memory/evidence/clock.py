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
Evidence from the future: a stamp later than the clock that takes it in, beyond a tolerance.

No observation can be stamped after the moment it is taken in: one that is was stamped by
a clock running ahead (a robot whose clock jumped to 2030), or the clock taking it in is
behind. Taken, it would make an entry "constant since 2030" and move the dream's time
ahead of every later dream. So it is **refused, with a count and a reason**, by every
input: ``robot-memory ingest`` (the line stays in its file: fix the clock and ingest the
file again), ``robot-memory replay`` (against the wall clock of the machine replaying; the
message is not marked as taken, so replaying the recording again takes it) and
memory_node (against its own clock). ``FUTURE_TOLERANCE_S`` (one hour) allows for clocks
a little apart (a robot and the machine reading its file).

Pure: ``now`` is always passed in. :class:`FutureCheck` counts what it refused and says
why in one line, for the summaries and the node's diagnostics.
"""

import dataclasses
import datetime as dt
import threading
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import require_aware

FUTURE_TOLERANCE_S = 3600.0  # how far ahead of the clock taking it in a stamp may be


def latest_allowed(now: dt.datetime, tolerance_s: float = FUTURE_TOLERANCE_S) -> dt.datetime:
    """Return the latest stamp evidence taken in at ``now`` may carry."""
    if not tolerance_s >= 0:  # NaN too
        raise ValueError(f'the tolerance must be zero or more seconds, got {tolerance_s!r}')
    return require_aware(now) + dt.timedelta(seconds=tolerance_s)


def is_future(stamp: dt.datetime, now: dt.datetime,
              tolerance_s: float = FUTURE_TOLERANCE_S) -> bool:
    """Whether ``stamp`` is from the future: later than ``now`` by more than the tolerance."""
    return require_aware(stamp, what='stamp') > latest_allowed(now, tolerance_s)


@dataclasses.dataclass
class FutureCheck:
    """Refuses stamps from the future of ``now``, counting them; ``reason()`` says why."""

    now: dt.datetime
    tolerance_s: float = FUTURE_TOLERANCE_S
    count: int = 0
    newest: Optional[dt.datetime] = None

    def refuses(self, stamp: dt.datetime) -> bool:
        """Whether ``stamp`` is from the future (then it is counted)."""
        if not is_future(stamp, self.now, self.tolerance_s):
            return False
        self.count += 1
        self.newest = stamp if self.newest is None else max(self.newest, stamp)
        return True

    def reason(self, again: str = 'take it in again') -> str:
        """One line: how many were refused, how far ahead, and what to do ('' if none)."""
        if not self.count:
            return ''
        assert self.newest is not None  # set with the first refusal
        return (f'{self.count} observation{"" if self.count == 1 else "s"} stamped in the '
                f'future were refused (up to {format_iso(self.newest)}, more than '
                f'{_span(self.tolerance_s)} after this clock, {format_iso(self.now)}): the '
                'clock that stamped them ran ahead, or this one is behind; fix the clock and '
                f'{again}')


def _span(seconds: float) -> str:
    if seconds >= 3600 and not seconds % 3600:
        hours = int(seconds // 3600)
        return f'{hours} hour{"" if hours == 1 else "s"}'
    return f'{seconds:g} s'


class HeldEvidence:
    """
    Evidence taken in while the clock that stamps it jumped forward and is not yet confirmed.

    memory_node stamps each observation with its own clock as it arrives; after a jump forward
    that nobody confirmed (``dream.clock_watch``), those stamps may be in the future of the
    real time. They are held here, bounded (``limit``; beyond it the newest are refused and
    counted), not stored. When the jump is confirmed they are stored as stamped; when the
    clock steps back (NTP corrects it), each stamp is moved back by the step, so evidence is
    neither lost nor dated in the future. Thread-safe: one thread holds, another releases.
    """

    def __init__(self, limit: int = 10_000):
        self.limit = limit
        self._lock = threading.Lock()
        self.items: list = []
        self.refused = 0  # held beyond the limit: lost, and counted
        self.held = 0  # every observation ever held
        self.moved = 0  # released with its stamp moved back

    def hold(self, observation) -> bool:
        """Hold one observation; False (counted) when the limit is reached."""
        with self._lock:
            if len(self.items) >= self.limit:
                self.refused += 1
                return False
            self.items.append(observation)
            self.held += 1
            return True

    def release(self, step_back_s: float = 0.0) -> list:
        """Return what was held, stamps moved back by ``step_back_s`` (> 0), and hold nothing."""
        with self._lock:
            items, self.items = self.items, []
        if step_back_s > 0:
            shift = dt.timedelta(seconds=step_back_s)
            items = [dataclasses.replace(item, stamp=item.stamp - shift) for item in items]
            self.moved += len(items)
        return items
