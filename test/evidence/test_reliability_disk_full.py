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
Full disk: writes on a tiny tmpfs fail with a message that says so and lose nothing.

Each test mounts its own 1 MiB tmpfs (``mount -t tmpfs -o size=1m``), sets up a robot on
it, fills the rest with a filler file and checks that:

* ``MemoryFile.update`` raises MemoryFileError saying the disk is full, and the previous
  file stays byte for byte, with no temporary file left behind;
* storing observations and dreaming raise EvidenceError or MemoryFileError saying the disk
  is full, and the memory file stays byte for byte;
* ``robot-memory dream`` and ``robot-memory ingest`` exit with status 1 and print that the
  disk is full;
* once the filler is deleted, every one of those writes succeeds and nothing is missing.

Mounting needs root; without it (or without a working ``mount``) the tests are skipped
with the reason. Every mount is unmounted when its test ends, whatever the outcome.
"""

import os
import subprocess

import pytest

from robot_memory.errors import MemoryFileError
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import to_json_line
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import new_entry
from support.cli import command
from support.disks import fill
from support.dream_scenario import CONFIG
from support.dream_scenario import evening
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status
from support.ingest import evidence
from support.ingest import report_lines
from support.processes import child_env
from support.processes import stray_temp_files

FULL = 'disk is full'


def grown(directory, day: int) -> Robot:
    """Return a robot with one dreamt fault and the evidence of the next day stored."""
    robot = Robot(directory)
    robot.fault(day - 1)
    robot.dream(day - 1)
    robot.fault(day, source=('motor: right', 'motor_right'))
    robot.store.flush()
    return robot


def extra_entry(name: str):
    return new_entry('environment_note', f'door {name} sticks in the morning', 0.6,
                     morning(1), tags=['door'])


def test_writing_the_memory_file_on_a_full_disk_keeps_the_old_file(tiny_disk):
    memory = MemoryFile(tiny_disk / 'robot-memory.md')
    with memory.update(morning(0), rrn=CONFIG.rrn) as result:
        result.document.entries.append(extra_entry('a'))
    before = memory.path.read_bytes()
    filler = fill(tiny_disk)
    with pytest.raises(MemoryFileError, match=FULL) as raised:
        with memory.update(morning(1)) as result:
            result.document.entries.append(extra_entry('b'))
    assert 'the previous file is intact' in raised.value.problem
    assert memory.path.read_bytes() == before
    assert stray_temp_files(memory.path) == []

    filler.unlink()
    with memory.update(morning(1)) as result:
        result.document.entries.append(extra_entry('b'))
    texts = [entry.text for entry in memory.load(morning(1)).document.entries]
    assert texts == ['door a sticks in the morning', 'door b sticks in the morning']


def test_a_dream_on_a_full_disk_fails_clearly_and_succeeds_once_space_returns(tiny_disk):
    robot = grown(tiny_disk / 'robot', 1)
    before = robot.memory.path.read_bytes()
    filler = fill(tiny_disk)
    with pytest.raises((EvidenceError, MemoryFileError), match=FULL):
        robot.dream(1)
    assert robot.memory.path.read_bytes() == before
    with pytest.raises((EvidenceError, MemoryFileError), match=FULL):
        robot.dream(1)
    assert robot.memory.path.read_bytes() == before

    filler.unlink()
    report = robot.dream(1)
    assert len(report.created) == 1 and report.problems == []
    assert len(robot.entries(1)) == 2
    robot.close()


def test_the_memory_file_alone_on_a_full_disk(tiny_disk, tmp_path):
    memory = MemoryFile(tiny_disk / 'robot-memory.md')
    robot = Robot(tmp_path / 'db')
    robot.memory = memory
    robot.fault(0)
    robot.dream(0)
    before = memory.path.read_bytes()
    robot.fault(1, source=('motor: right', 'motor_right'))
    filler = fill(tiny_disk)
    with pytest.raises(MemoryFileError, match=FULL):
        robot.dream(1)
    assert memory.path.read_bytes() == before
    assert robot.store.pending_dream() is not None

    filler.unlink()
    report = robot.dream(1)
    assert report.recovered == 'discarded'
    assert len(report.created) == 1 and report.problems == []
    assert robot.store.pending_dream() is None
    robot.close()


def test_observations_on_a_full_disk_stay_buffered_until_space_returns(tiny_disk):
    robot = grown(tiny_disk / 'robot', 1)
    stored = robot.store.observation_count()
    filler = fill(tiny_disk)
    robot.fault(2, count=400)
    with pytest.raises(EvidenceError, match=FULL):
        robot.store.flush()
    assert robot.store.buffered == 400

    filler.unlink()
    assert robot.store.flush() == 400
    assert robot.store.observation_count() == stored + 400
    robot.close()


def test_adding_on_a_full_disk_accepts_each_observation_once(tiny_disk):
    # The automatic flush of add() fails on the full disk: add neither raises nor loses the
    # observation, so a caller never has a reason to add it again; it is stored exactly once
    # when space returns.
    robot = grown(tiny_disk / 'robot', 1)
    robot.store.batch_size = 50
    stored = robot.store.observation_count()
    filler = fill(tiny_disk)
    robot.fault(2, count=400)
    assert robot.store.buffered == 400
    assert FULL in str(robot.store.write_error)
    with pytest.raises(EvidenceError, match=FULL):
        robot.store.flush()

    filler.unlink()
    robot.fault(3, count=10)
    assert robot.store.flush() == 410
    assert robot.store.observation_count() == stored + 410
    assert robot.store.write_error is None
    robot.close()


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(command(*args),
                          env=child_env(), capture_output=True, text=True, timeout=120)


def test_the_cli_exits_1_and_says_the_disk_is_full(tiny_disk):
    robot = grown(tiny_disk / 'robot', 1)
    robot.close()
    memory = robot.memory.path
    before = memory.read_bytes()
    source = tiny_disk.parent / 'day2.jsonl'
    source.write_text(''.join(to_json_line(status(evening(2, 20 + index / 60), 1)) + '\n'
                              for index in range(120)))
    filler = fill(tiny_disk)

    dreamt = cli('dream', '--file', memory, '--at', morning(1).isoformat())
    assert dreamt.returncode == 1, dreamt.stdout + dreamt.stderr
    assert dreamt.stderr.startswith('robot-memory dream: ') and FULL in dreamt.stderr
    ingested = cli('ingest', '--file', memory, source)
    assert ingested.returncode == 1, ingested.stdout + ingested.stderr
    assert ingested.stderr.startswith('robot-memory ingest: ') and FULL in ingested.stderr
    assert memory.read_bytes() == before

    filler.unlink()
    assert cli('ingest', '--file', memory, source).returncode == 0
    dreamt = cli('dream', '--file', memory, '--at', morning(2).isoformat())
    assert dreamt.returncode == 0, dreamt.stderr
    assert 'created 1, reinforced 1' in dreamt.stdout
    with EvidenceStore(memory.with_name('robot-memory.db')) as store:
        assert store.pending_dream() is None
        assert store.db.execute('PRAGMA integrity_check').fetchone() == ('ok',)


def test_ingest_on_a_full_disk_says_what_was_kept_and_finishes_when_rerun(tiny_disk, tmp_path):
    # issue 40 point 4: the disk fills after some writes of a long file. Ingest says which
    # lines were stored and which were not; after space returns the same command finishes
    # the file, and the evidence is that of one clean run.
    source = tmp_path / 'days.jsonl'
    lines = report_lines(3)
    source.write_text(''.join(lines))
    clean = tmp_path / 'clean'
    clean.mkdir()
    assert cli('ingest', '--file', clean / 'robot-memory.md', source).returncode == 0

    robot = tiny_disk / 'robot'
    robot.mkdir()
    assert cli('ingest', '--file', robot / 'robot-memory.md', os.devnull).returncode == 0
    filler = fill(tiny_disk)
    os.truncate(filler, os.path.getsize(filler) - 160 * 1024)  # room for a few writes
    failed = cli('ingest', '--file', robot / 'robot-memory.md', source)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert failed.stderr.startswith('robot-memory ingest: not stored: lines ')
    assert FULL in failed.stderr and 'stay buffered' not in failed.stderr
    stored = int(failed.stderr.split('it takes up after line ')[1].split()[0])
    assert 0 < stored < len(lines), failed.stderr
    assert f'lines 1-{stored} are stored' in failed.stderr
    assert 'run the same command again' in failed.stderr and 'counts nothing twice' in failed.stderr

    filler.unlink()
    again = cli('ingest', '--file', robot / 'robot-memory.md', source)
    assert again.returncode == 0, again.stderr
    assert f'skipped {stored} lines already taken' in again.stdout
    assert evidence(robot) == evidence(clean)


class FillingMemoryFile(MemoryFile):
    """A memory file whose save succeeds, then the disk it is on fills to the last byte."""

    fillers: list = []

    def save(self, *args, **kwargs):
        saved = super().save(*args, **kwargs)
        self.fillers.append(fill(self.path.parent.parent))
        return saved


def test_a_dream_that_fills_the_disk_after_writing_the_file_says_the_file_changed(tiny_disk):
    # issue 40 point 4: it said "nothing already stored was changed" of a rewritten file.
    robot = grown(tiny_disk / 'robot', 1)
    before = robot.memory.path.read_bytes()
    robot.memory = FillingMemoryFile(robot.memory.path)
    with pytest.raises(EvidenceError, match=FULL) as raised:
        robot.dream(1)
    message = str(raised.value)
    assert 'nothing already stored was changed' not in message
    assert 'memory file was already rewritten' in message and 'next dream records' in message
    assert robot.memory.path.read_bytes() != before
    assert robot.store.pending_dream() is not None

    robot.memory.fillers.pop().unlink()
    robot.memory = MemoryFile(robot.memory.path)
    report = robot.dream(1)
    assert report.recovered == 'completed' and report.problems == []
    assert len(robot.entries(1)) == 2
    robot.close()
