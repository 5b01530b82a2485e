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


"""A demo memory for the operator page's tests and screenshots: a week of a robot's faults."""

import contextlib
import datetime as dt
import subprocess
import sys
import time
import urllib.error
import urllib.request

from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.review.proposing import ProposalSettings
from robot_memory.substrate.substrate_store import Substrate
from support.paths import REPO
from support.processes import free_port

RRN = 'RRN-000000000042'
REWORD = 'The right wheel encoder drops ticks near the kitchen door; slow to 0.3 m/s there'


class Wording:
    """A distiller that words the encoder fault as a person would (as an LLM would)."""

    def rewrite(self, candidates):
        return {candidate.signature: REWORD for candidate in candidates
                if 'encoder' in candidate.text}


# (name, hardware id, level, message, hours of the day it happens, first night)
FAULTS = [
    ('base: left encoder', 'wheel_left', 1, 'dropped ticks', (9, 10, 17), 0),
    ('power: battery', 'battery', 2, 'cell 3 voltage low', (14,), 1),
    ('lidar: front', 'lidar_front', 1, 'dirty window, range reduced', (6, 7), 3),
    ('arm: gripper', 'gripper', 2, 'overcurrent on close', (12,), 5),
    ('base: right encoder', 'wheel_right', 1, 'dropped ticks', (9, 10), 6),
]


def build(directory, now: dt.datetime, nights: int = 7) -> MemoryFile:
    """Write robot-memory.md and its database under ``directory``: ``nights`` dreams to ``now``."""
    memory = MemoryFile(directory / 'robot-memory.md')
    config = DreamConfig(rrn=RRN)
    settings = ProposalSettings(distiller='propose', agents='apply', peers='apply')
    store = EvidenceStore(directory / 'robot-memory.db')
    start = (now - dt.timedelta(days=nights)).replace(hour=0, minute=0, second=0, microsecond=0)
    for night in range(nights):
        day = start + dt.timedelta(days=night)
        for name, hardware_id, level, message, hours, first in FAULTS:
            if night < first:
                continue
            for hour in hours:
                for minute in range(0, 50, 10 + night):
                    store.add(DiagnosticObservation(
                        day + dt.timedelta(hours=hour, minutes=minute), name, hardware_id,
                        level, message, (('dropped', str(minute + night)),)))
        at = min(day + dt.timedelta(hours=23, minutes=30), now)
        distiller = Wording() if night == nights - 1 else None
        dream(store, memory, at, store.rules, config, distiller, proposals=settings)
    store.close()
    with Substrate(directory / 'robot-memory.db') as substrate:
        substrate.learn('The charging dock is behind the kitchen door', type='semantic',
                        tags=['dock'], context={'room': 'kitchen'}, now=now, actor='demo')
        substrate.learn('Ben prefers the robot to stay out of the office after 18:00',
                        type='semantic', sensitivity='high', now=now, actor='demo')
    return memory


def wait_for(url: str, process, timeout_s: float = 30.0) -> None:
    """Wait until ``url`` answers while ``process`` runs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f'robot-memory serve exited with {process.returncode}'
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except urllib.error.HTTPError:
            return  # it answers, if only with a refusal
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise AssertionError(f'{url} did not answer within {timeout_s} s')


@contextlib.contextmanager
def serving(memory: MemoryFile, token: str, *options: str):
    """Run ``robot-memory serve`` on ``memory`` in its own process; yield its base URL."""
    token_file = memory.path.parent / 'token'
    token_file.write_text(token + '\n')
    port = free_port()
    log = open(memory.path.parent / 'serve.log', 'w')  # a file: a pipe nobody reads could fill
    process = subprocess.Popen(
        [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'serve', '--file',
         str(memory.path), '--port', str(port), '--token-file', str(token_file), *options],
        stdout=log, stderr=subprocess.STDOUT, text=True)
    base = f'http://127.0.0.1:{port}'
    try:
        wait_for(base + '/static/style.css', process)
        yield base
    finally:
        process.terminate()
        process.wait(10)
        log.close()
