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
Power loss: the robot-memory CLI killed with SIGKILL at random moments of ingest and dream.

A simulated robot with about a hundred devices lives in a temporary directory. Each round
is one day: the day's observations (intermittent faults, OK reports) are written as a
JSON-lines file and either ``python -m robot_memory.cli.main ingest`` is killed while it stores
them, or the ingest runs in-process and ``python -m robot_memory.cli.main dream --at`` is killed
while it consolidates them. The kill lands at a random moment between the end of the
interpreter's imports and the end of a normal run (calibrated on uninterrupted runs).
After every kill:

* robot-memory.md parses with no problem and no temporary file is left once the next
  writer has run;
* the database passes ``PRAGMA integrity_check``;
* nothing durably written before the kill is lost: every entry of the file before the
  kill is still in the file or in the prune archive, the observations stored (raw rows
  plus rows folded into daily counts) and the audit records never decrease;
* a following dream completes, leaves no intent record behind, and the database agrees
  with the file (the cursor holds the file's hash; the snapshot holds exactly its
  entries).

20 kills by default (about 25 s). ``--long`` runs 1,000 kills (about 20
minutes; the pytest timeout grows to match).
"""

import hashlib
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from robot_memory.dream.autodream import dream
from robot_memory.evidence.observations import to_json_line
from robot_memory.rcan.memory_file import side_file
from support.dream_scenario import CONFIG
from support.dream_scenario import evening
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status
from support.modes import LONG
from support.processes import child_env
from support.processes import stray_temp_files

pytestmark = [pytest.mark.long, pytest.mark.slow]  # --long runs it at full length

KILLS = 1000 if LONG else 20
DEVICES = 100
SEED = 20260507


def day_observations(day: int, chance: random.Random) -> list:
    """One day of a fleet of devices: some fault (WARN streams), the others report OK."""
    items = []
    for device in range(DEVICES):
        source = (f'sensor {device}: status', f'hw{device}')
        faulty = device % 3 != 0 and chance.random() < 0.6
        items.append(status(evening(day, 18.0), 0, 'OK', source))
        if faulty:
            count = chance.randint(8, 30)
            for index in range(count):
                at = evening(day, 19.0 + 3.0 * index / count)
                items.append(status(at, 1 + (index % 5 == 0), f'dropped {index} ticks', source))
        else:
            items.append(status(evening(day, 23.0), 0, 'OK', source))
    return items


def write_jsonl(path, items) -> None:
    path.write_text(''.join(to_json_line(item) + '\n' for item in items), encoding='utf-8')


def cli(*args) -> list:
    return [sys.executable, '-m', 'robot_memory.cli.main', *map(str, args)]


def durable_state(directory) -> dict:
    """Return what must survive a kill: entry ids (file and archive), stored evidence, audit."""
    memory = directory / 'robot-memory.md'
    archive = side_file(memory, '.archive.jsonl')
    connection = sqlite3.connect(directory / 'robot-memory.db')
    try:
        assert connection.execute('PRAGMA integrity_check').fetchone() == ('ok',)
        stored = connection.execute(
            'SELECT (SELECT coalesce(sum(count), 0) FROM observations) + '
            '(SELECT coalesce(sum(count), 0) FROM daily_counts)').fetchone()[0]
        audit = connection.execute('SELECT count(*) FROM audit').fetchone()[0]
        cursor = connection.execute(
            'SELECT file_hash FROM dream_state WHERE id = 1').fetchone()[0]
        pending = connection.execute('SELECT count(*) FROM pending_dream').fetchone()[0]
        snapshot = {row[0] for row in connection.execute('SELECT entry_id FROM snapshot')}
    finally:
        connection.close()
    archived = set()
    if archive.exists():
        for line in archive.read_text(encoding='utf-8').splitlines():
            archived.add(json.loads(line)['entry']['id'])
    data = memory.read_bytes() if memory.exists() else None
    return {'data': data, 'archived': archived, 'stored': stored, 'audit': audit,
            'cursor': cursor, 'pending': pending, 'snapshot': snapshot}


def file_entries(robot, at) -> set:
    result = robot.memory.load(at)
    assert result.problems == [], result.problems
    assert all(0.0 <= entry.confidence <= 1.0 for entry in result.document.entries)
    return {entry.id for entry in result.document.entries}


def run_to_end(command, env) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    return time.perf_counter() - started


@pytest.mark.timeout(KILLS * 8 + 180)
def test_sigkill_of_the_cli_never_loses_durable_data(tmp_path):
    directory = tmp_path / 'robot'
    memory = directory / 'robot-memory.md'
    env = child_env()
    chance = random.Random(SEED)
    robot = Robot(directory)
    robot.close()

    # Calibration: two uninterrupted days through the CLI, and the interpreter start-up.
    durations = []
    for day in (0, 1):
        source = tmp_path / f'day{day}.jsonl'
        write_jsonl(source, day_observations(day, chance))
        durations.append(run_to_end(cli('ingest', '--file', memory, source), env))
        durations.append(run_to_end(cli('dream', '--file', memory, '--at',
                                        morning(day).isoformat()), env))
    started = time.perf_counter()
    subprocess.run([sys.executable, '-c', 'import robot_memory.cli.main'], env=env, check=True)
    imports_s = time.perf_counter() - started
    longest_s = max(durations)

    kills = attempts = 0
    day = 2
    outcomes = {'ingest': 0, 'dream': 0}
    while kills < KILLS:
        attempts += 1
        assert attempts < KILLS * 10, f'only {kills} of {attempts} runs could be killed'
        items = day_observations(day, chance)
        source = tmp_path / 'today.jsonl'
        write_jsonl(source, items)
        target = chance.choice(('ingest', 'dream'))
        if target == 'ingest':
            command = cli('ingest', '--file', memory, source)
        else:
            robot = Robot(directory)
            for item in items:
                robot.store.add(item)
            robot.close()
            command = cli('dream', '--file', memory, '--at', morning(day).isoformat())

        robot = Robot(directory)
        before_ids = file_entries(robot, morning(day))
        robot.close()
        before = durable_state(directory)

        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        delay = chance.uniform(imports_s * 0.9, longest_s * 1.05)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        _, stderr = process.communicate()
        if process.returncode == -signal.SIGKILL:
            kills += 1
            outcomes[target] += 1
        else:
            assert process.returncode == 0, stderr.decode()
            # Finished first (the machine got faster than at calibration, or the calibration
            # ran under load): aim earlier, the whole window, start-up included.
            imports_s *= 0.8
            longest_s = max(imports_s * 1.2, longest_s * 0.8)
        where = f'{target} of day {day} killed after {delay:.3f} s'

        after = durable_state(directory)
        robot = Robot(directory)
        try:
            after_ids = file_entries(robot, morning(day))
            lost = before_ids - after_ids - after['archived']
            assert not lost, f'{where}: entries lost {sorted(lost)[:5]}'
            assert after['stored'] >= before['stored'], where
            assert after['audit'] >= before['audit'], where

            report = dream(robot.store, robot.memory, morning(day), robot.rules, CONFIG)
            assert report.recovered in (None, 'completed', 'discarded'), where
            final_ids = file_entries(robot, morning(day))
            assert not (after_ids - final_ids - durable_state(directory)['archived']), where
        finally:
            robot.close()
        final = durable_state(directory)
        assert final['pending'] == 0, where
        assert final['cursor'] == hashlib.sha256(final['data']).hexdigest(), where
        assert final['snapshot'] == final_ids, where
        assert stray_temp_files(memory) == [], where
        day += 1
    assert min(outcomes.values()) > 0, outcomes
