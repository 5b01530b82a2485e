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
Child process of test_crash_safety: writes robot-memory.md until it is killed.

``python crash_child.py flip PATH PHASE``  alternates the file between the two
    states built by ``state_entries``/``state_body`` of 'A' and 'B' with locked
    ``MemoryFile.update`` calls, forever (the parent ends it with SIGKILL). Once one
    update has completed (so the file exists) it prints ``ready``: with PHASE ``load``
    right after that update, with PHASE ``save`` inside the next update just before
    it renders and writes, so that the parent's kill lands in the read or the write
    half of the cycle.
``python crash_child.py add PATH NAME COUNT``  does COUNT locked read-modify-write
    updates, each adding one entry whose id is ``mem-NAME-<i>``, then exits; it prints
    ``ready`` and waits for a line on stdin first, so that two writers start together.

The parent imports this module too, to know exactly what states A and B contain.
"""

import datetime as dt
import sys

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import MemoryEntry

NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=UTC)
RRN = 'RRN-000000000001'
STATE_ENTRIES = 2000


def state_entries(label: str) -> list:
    """Return the 2,000 entries of state ``label``: every text starts with ``state <label>``."""
    return [
        MemoryEntry(
            id=f'mem-{label.lower()}{index:05d}', type='environment_note',
            text=f'state {label} entry {index}: doorway {index % 17} has a lip, '
                 f'navigate at ≤0.{index % 9 + 1}m/s',
            confidence=round(0.3 + (index % 70) / 100, 2), first_seen=NOW, last_reinforced=NOW,
            observation_count=index % 50 + 1, tags=['state', label.lower()])
        for index in range(STATE_ENTRIES)
    ]


def state_body(label: str) -> bytes:
    """Return the Markdown body of state ``label``."""
    return f'\n# Robot memory, state {label}\n\n---\n\nNotes of state {label}.\n'.encode()


def flip(path: str, phase: str) -> None:
    """Alternate the file between states A and B until killed."""
    states = {label: (state_entries(label), state_body(label)) for label in 'AB'}
    memory = MemoryFile(path)
    updates = 0
    while True:
        with memory.update(NOW, rrn=RRN) as result:
            document = result.document
            current = 'A' if document.body == states['A'][1] else 'B'
            target = 'B' if current == 'A' else 'A'
            document.entries = list(states[target][0])
            document.body = states[target][1]
            if phase == 'save' and updates == 1:
                print('ready', flush=True)
        updates += 1
        if phase == 'load' and updates == 1:
            print('ready', flush=True)


def add(path: str, name: str, count: int) -> None:
    """Add ``count`` uniquely named entries, one locked update each."""
    memory = MemoryFile(path, lock_timeout_s=60.0)
    print('ready', flush=True)
    sys.stdin.readline()
    for index in range(count):
        with memory.update(NOW, rrn=RRN) as result:
            result.document.entries.append(MemoryEntry(
                id=f'mem-{name}-{index:03d}', type='behavior_pattern',
                text=f'writer {name} update {index}', confidence=0.5, first_seen=NOW,
                last_reinforced=NOW, observation_count=1))


if __name__ == '__main__':
    if sys.argv[1] == 'flip':
        flip(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == 'add':
        add(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit(f'unknown mode {sys.argv[1]!r}; use flip or add')
