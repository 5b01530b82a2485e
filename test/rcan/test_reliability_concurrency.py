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
Concurrency at the core: the CLI and an in-process writer never lose each other's updates.

While ``robot-memory dream`` and ``robot-memory prune`` run again and again in
subprocesses (the dreams consume evidence stored meanwhile, create entries and prune weak
ones), a thread of this process adds entries with ``MemoryFile.update`` and another
stores observations in the evidence database. At the end every entry the thread added is
in the file, every entry a dream created is in the file or in the prune archive (never
silently gone), the database agrees with the file, and the prune archive holds only
entries that really were below ``prune_min``.

About 10 s by default (8 CLI runs); ``--long`` runs 60 of them.
"""

import datetime as dt
import json
import subprocess
import sys
import threading
import time

import pytest

from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import side_file
from robot_memory.rcan.schema import MemoryEntry
from support.cli import command as cli_command
from support.dream_scenario import evening
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status
from support.modes import LONG
from support.processes import child_env

pytestmark = [pytest.mark.long, pytest.mark.slow]  # --long runs it at full length

CLI_RUNS = 30 if LONG else 4


def cli(*args) -> subprocess.Popen:
    return subprocess.Popen(cli_command(*args),
                            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_cli_loop(commands: list, failures: list) -> None:
    for command in commands:
        process = cli(*command)
        out, err = process.communicate(timeout=120)
        if process.returncode != 0:
            failures.append(f'{command[0]} exited {process.returncode}: {err.decode()}'
                            f'{out.decode()}')


@pytest.mark.timeout(600 if LONG else 180)
def test_cli_dream_and_prune_with_an_in_process_writer_lose_nothing(tmp_path):
    robot = Robot(tmp_path / 'robot')
    for source in range(6):
        robot.fault(0, source=(f'sensor {source}: status', f'hw{source}'))
    robot.dream(0)
    robot.close()
    memory_path = robot.memory.path
    created_by_dreams = set(robot.entries(0))

    # Entries the writer adds are fresh at the writer's moment (never prunable then);
    # the CLI dreams and prunes at later moments, when the day-0 entries have decayed.
    moment = morning(0)
    commands = []
    for run in range(CLI_RUNS):
        at = morning(1 + run * 3).isoformat()
        # Three days apart, maybe before the ingest thread's evidence: a leap, confirmed.
        commands.append(('dream', '--file', memory_path, '--at', at, '--confirm-leap'))
        commands.append(('prune', '--file', memory_path, '--at', at))
    failures = []
    cli_thread = threading.Thread(target=run_cli_loop, args=(commands, failures))

    def ingest():
        with EvidenceStore(robot.store.path, batch_size=50) as store:
            for day in range(1, 1 + CLI_RUNS * 3):
                for index in range(60):
                    at = evening(day) + dt.timedelta(minutes=index)
                    store.add(status(at, 1, 'overheating', ('motor: right', 'motor_right')))
                store.flush()
                time.sleep(0.3)

    ingest_thread = threading.Thread(target=ingest)
    cli_thread.start()
    ingest_thread.start()
    writer = MemoryFile(memory_path, lock_timeout_s=60.0)
    added = 0
    while cli_thread.is_alive() or added < 20:
        when = moment + dt.timedelta(hours=added * 2)
        with writer.update(when) as result:
            result.document.entries.append(MemoryEntry(
                id=f'mem-writer{added:04d}', type='behavior_pattern',
                text=f'operator note {added}: slow down near the loading bay', confidence=1.0,
                first_seen=when, last_reinforced=when, observation_count=1))
        added += 1
        time.sleep(0.005)
    ingest_thread.join()
    cli_thread.join()
    assert failures == []

    robot = Robot(tmp_path / 'robot')
    final_at = morning(3 * CLI_RUNS + 1)
    report = robot.dream(3 * CLI_RUNS)
    robot.close()
    assert report.recovered is None
    entries = {entry.id: entry for entry in MemoryFile(memory_path).load(final_at)
               .document.entries}
    archive = side_file(memory_path, '.archive.jsonl')
    archived = [json.loads(line) for line in archive.read_text().splitlines()] \
        if archive.exists() else []
    archived_ids = {record['entry']['id'] for record in archived}
    written = {f'mem-writer{index:04d}' for index in range(added)}
    assert added > 100
    assert written <= set(entries) | archived_ids
    assert created_by_dreams <= set(entries) | archived_ids
    motor = {entry.id for entry in entries.values() if 'overheating' in entry.text}
    motor |= {record['entry']['id'] for record in archived
              if 'overheating' in record['entry']['text']}
    assert len(motor) == 1
    for record in archived:
        assert record['effective_confidence'] < DEFAULT_CONFIG.prune_min
    with EvidenceStore(robot.store.path) as store:
        assert set(store.snapshot()) == set(entries)
        assert store.pending_dream() is None
        audited = {row['entry_id'] for row in store.db.query('SELECT entry_id FROM audit')}
    assert set(entries) <= audited


OPEN_AT_ONCE = """
import sys, time
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.substrate.substrate_store import Substrate
path, start = sys.argv[1], float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
order = sys.argv[3]
stores = [EvidenceStore(path), Substrate(path)] if order == 'e' else [Substrate(path),
                                                                       EvidenceStore(path)]
print(' '.join(stores[0].applied_migrations() + stores[1].applied_migrations()))
for store in stores:
    store.close()
"""


@pytest.mark.timeout(120)
def test_processes_opening_a_new_database_at_the_same_moment_all_start(tmp_path):
    """
    Two nodes started by one launch file create their database together: both must start.

    Each process opens the evidence store and the typed memory on one new file at the same
    instant (half of them in the other order); every one must come up with every migration
    applied exactly once, none refusing the database as unusable.
    """
    for attempt in range(5):
        path = tmp_path / f'race{attempt}' / 'robot-memory.db'
        path.parent.mkdir()
        start = time.time() + 2.0
        processes = [subprocess.Popen(
            [sys.executable, '-c', OPEN_AT_ONCE, str(path), str(start), 'es'[n % 2]],
            env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for n in range(6)]
        outputs = [process.communicate(timeout=90) for process in processes]
        for process, (out, err) in zip(processes, outputs):
            assert process.returncode == 0, err.decode()
        names = {frozenset(out.split()) for out, _ in outputs}
        assert len(names) == 1
        with EvidenceStore(path) as store:
            applied = store.applied_migrations()
        assert len(applied) == len(set(applied))
