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

"""A simulated robot for dream tests: a memory file, an evidence store and its evenings."""

import datetime as dt
import pathlib

from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.rules import Rules
from robot_memory.locations import default_db_path
from robot_memory.rcan.memory_file import MemoryFile

T0 = dt.datetime(2026, 5, 1, 0, 0, tzinfo=UTC)
ENCODER = ('base: left encoder', 'wheel_left')
CONFIG = DreamConfig(rrn='RRN-000000000001')


def evening(day: int, hour: float = 20.0) -> dt.datetime:
    """Return a moment on the evening of ``day`` (the robot works; the dream is at 02:00 after)."""
    return T0 + dt.timedelta(days=day, hours=hour)


def morning(day: int) -> dt.datetime:
    """02:00 after the evening of ``day``: when that night's dream runs."""
    return T0 + dt.timedelta(days=day + 1, hours=2)


def status(at, level, message='dropped 12 ticks', source=ENCODER):
    """Return a diagnostic observation of ``source`` at ``at``."""
    return DiagnosticObservation(at, source[0], source[1], level, message)


class Robot:
    """A memory file, an evidence store and a clock for one simulated robot."""

    def __init__(self, directory: pathlib.Path, rules=None, config=CONFIG, **store_options):
        directory.mkdir(parents=True, exist_ok=True)
        self.memory = MemoryFile(directory / 'robot-memory.md')
        self.rules = rules or Rules.default()
        self.config = config
        self.store = EvidenceStore(default_db_path(self.memory.path), self.rules,
                                   **store_options)

    def fault(self, day, count=80, hours=3.0, source=ENCODER, level=1):
        """``count`` warnings spread over ``hours`` on the evening of ``day``."""
        for index in range(count):
            at = evening(day) + dt.timedelta(hours=hours * index / max(1, count - 1))
            self.store.add(status(at, level, f'dropped {index % 17 + 1} ticks', source))

    def healthy(self, day, source=ENCODER):
        """OK reports through the evening of ``day`` (after any fault)."""
        for hour in (19.0, 23.5):
            self.store.add(status(evening(day, hour), 0, 'OK', source))

    def dream(self, day, **options):
        options.setdefault('config', self.config)
        return dream(self.store, self.memory, morning(day), self.rules, **options)

    def entries(self, day=0) -> dict:
        return {entry.id: entry for entry in self.memory.load(morning(day)).document.entries}

    def close(self):
        self.store.close()
