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
What is failing right now: each source's live state, from the observations as they come.

Pure (no rclpy); time is passed in (seconds on the node's clock). The memory says what failed
over days; this says what is failing at this moment, so the brain can tell "the lidar is failing
now" from "the lidar failed on 12 of 30 days".

* A source (its classification's ``source_key``) becomes active with its first bad report
  (severity > 0) after OK: ``active_since``, ``last_seen``, how many bad reports.
* It is cleared once OK reports have come for ``hold_s`` without a bad one in between: one OK
  report between two errors does not clear a flapping fault.
* A source whose bad reports are events, not states (an ERROR log record, an aborted action
  goal), is also cleared after ``hold_s`` with no bad report at all.
* A person may acknowledge an active fault (:meth:`LiveState.acknowledge`); it stays listed,
  marked with who and when, until it is cleared. A worse severity takes the mark away: the
  person saw a warning, not the error it became.
"""

import dataclasses
import threading
from typing import Iterable
from typing import Optional

from robot_memory.errors import RobotMemoryError

# Sources kept at most: a flood of new names cannot grow the state without bound.
MAX_SOURCES = 512
MAX_TEXT = 200
# Sources whose bad reports are events, not states (an ERROR log record, an aborted action
# goal): cleared after hold_s without a bad report, as well as by OK reports.
NO_OK_SOURCES = ('log|', 'diagnostic|action|')


class ActiveNowError(RobotMemoryError, ValueError):
    """A change of the live state that cannot be made: the message says why and what to do."""


@dataclasses.dataclass
class ActiveFault:
    """One source failing now: what, since when, last seen, acknowledged by whom."""

    source_key: str
    text: str
    severity: int
    signature: str
    active_since: float
    last_seen: float
    count: int = 1
    ok_since: Optional[float] = None  # OK reports came from then on, no bad one since
    acknowledged_by: str = ''
    acknowledged_at: Optional[float] = None

    @property
    def acknowledged(self) -> bool:
        """Whether a person acknowledged it."""
        return bool(self.acknowledged_by)

    def to_dict(self) -> dict:
        """Plain JSON data (times in seconds)."""
        return {'source_key': self.source_key, 'text': self.text, 'severity': self.severity,
                'signature': self.signature, 'active_since': self.active_since,
                'last_seen': self.last_seen, 'count': self.count,
                'acknowledged_by': self.acknowledged_by,
                'acknowledged_at': self.acknowledged_at}


def describe(observation) -> str:
    """Return what an observation says is wrong, in a few words (the fault's text)."""
    source = getattr(observation, 'source', '')
    if source == 'diagnostic':
        where = (f'{observation.name} ({observation.hardware_id})' if observation.hardware_id
                 else observation.name)
        text = f'{where}: {observation.message}' if observation.message else where
    elif source == 'log':
        text = f'{observation.name} logs: {observation.msg}'
    elif source == 'telemetry':
        text = f'{observation.topic} ({observation.type})'
    else:
        text = str(observation)
    text = ' '.join(text.split())
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + '…'


class LiveState:
    """Each source's live state; thread-safe. ``version`` changes with every change."""

    def __init__(self, hold_s: float, max_sources: int = MAX_SOURCES):
        if not hold_s >= 0:
            raise ActiveNowError(f'the hold time must be 0 s or more, got {hold_s!r}')
        self.hold_s = float(hold_s)
        self.max_sources = max_sources
        self.version = 0
        self._faults: dict = {}  # source key -> ActiveFault
        self._lock = threading.Lock()

    def observe(self, observation, classifications: Iterable, now_s: float) -> bool:
        """Take one observation's classifications; return True when the live state changed."""
        changed = False
        with self._lock:
            for item in classifications:
                changed |= self._take(item, observation, now_s)
            changed |= self._expire(now_s)
            if changed:
                self.version += 1
        return changed

    def _take(self, item, observation, now_s: float) -> bool:
        fault = self._faults.get(item.source_key)
        if item.severity <= 0:
            if fault is None or fault.ok_since is not None:
                return False
            fault.ok_since = now_s
            return False  # cleared only after hold_s: seen by _expire
        if fault is None:
            if len(self._faults) >= self.max_sources:
                oldest = min(self._faults.values(), key=lambda f: f.last_seen)
                del self._faults[oldest.source_key]
            self._faults[item.source_key] = ActiveFault(
                item.source_key, describe(observation), item.severity, item.signature or '',
                now_s, now_s)
            return True
        changed = item.severity != fault.severity or fault.ok_since is not None
        if item.severity > fault.severity and fault.acknowledged:
            fault.acknowledged_by, fault.acknowledged_at = '', None
        fault.severity = item.severity
        fault.text = describe(observation)
        fault.signature = item.signature or fault.signature
        fault.last_seen = now_s
        fault.count += 1
        fault.ok_since = None
        return changed

    def _expire(self, now_s: float) -> bool:
        gone = [key for key, fault in self._faults.items() if self._cleared(fault, now_s)]
        for key in gone:
            del self._faults[key]
        return bool(gone)

    def _cleared(self, fault: ActiveFault, now_s: float) -> bool:
        if fault.ok_since is not None:
            return now_s - fault.ok_since >= self.hold_s
        if fault.source_key.startswith(NO_OK_SOURCES):
            return now_s - fault.last_seen >= self.hold_s
        return False

    def expire(self, now_s: float) -> bool:
        """Clear what has been OK (or quiet, for sources without OK reports) for ``hold_s``."""
        with self._lock:
            changed = self._expire(now_s)
            if changed:
                self.version += 1
        return changed

    def faults(self) -> list:
        """Return copies of the active faults: most severe first, then the most recent."""
        with self._lock:
            found = [dataclasses.replace(fault) for fault in self._faults.values()]
        return sorted(found, key=lambda f: (-f.severity, -f.active_since, f.source_key))

    def acknowledge(self, source_key: str, actor: str, now_s: float) -> ActiveFault:
        """Mark an active fault as seen by ``actor``; return it. Refused if it is not active."""
        actor = actor.strip()
        if not actor:
            raise ActiveNowError('say who acknowledges the fault (the audit log names them); '
                                 'nothing was changed')
        with self._lock:
            fault = self._faults.get(source_key)
            if fault is None:
                raise ActiveNowError(
                    f'{source_key[:120]!r} is not active now (it may have cleared since the '
                    'page was shown); reload the page to see what is active; nothing was '
                    'changed')
            fault.acknowledged_by, fault.acknowledged_at = actor, now_s
            self.version += 1
            return dataclasses.replace(fault)
