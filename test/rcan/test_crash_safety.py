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
Crash safety of MemoryFile: SIGKILL at any moment leaves state A or state B, never a mix.

A child process (``test/support/crash_child.py flip``) alternates robot-memory.md between two
documents of 2,000 entries each with locked ``MemoryFile.update`` calls; the parent kills
it with SIGKILL 0-80 ms after it reports ready (which it does, at random, either after
a completed update or inside one just before it renders and writes) and checks that the
file parses cleanly and holds exactly one of the two states, that the next update removes
any temporary file the kill left behind, and that the file stays mode 0600.

It runs 30 kills by default (about 20 s); run with ``--long`` for the opt-in
long mode of 1,000 kills (about 10 minutes; the pytest timeout is raised to match).

The last test runs two writer processes of 50 locked read-modify-write updates each and
checks that none of the 100 updates is lost.
"""

import importlib.util
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest

from robot_memory.rcan.memory_file import FILE_MODE
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from support.modes import LONG
from support.processes import child_env
from support.processes import stray_temp_files

pytestmark = [pytest.mark.long, pytest.mark.slow]  # --long runs it at full length

HERE = pathlib.Path(__file__).resolve().parents[1]
CHILD = HERE / 'support' / 'crash_child.py'
ITERATIONS = 1000 if LONG else 30
MAX_DELAY_S = 0.080


def _load_child_module():
    spec = importlib.util.spec_from_file_location('crash_child', CHILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


child_module = _load_child_module()


def start_child(*args) -> subprocess.Popen:
    """Start ``crash_child.py`` with this interpreter; its stdout is a pipe."""
    return subprocess.Popen([sys.executable, str(CHILD), *map(str, args)], env=child_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def wait_ready(child: subprocess.Popen) -> None:
    """Block until the child prints ``ready``; fail with its stderr if it died instead."""
    line = child.stdout.readline()
    if line != b'ready\n':
        child.kill()
        child.wait()
        raise AssertionError(f'child did not get ready: {line!r}\n{child.stderr.read().decode()}')


@pytest.mark.timeout(ITERATIONS * 5 + 120)
def test_sigkill_at_any_moment_leaves_exactly_state_a_or_state_b(tmp_path):
    path = tmp_path / 'robot-memory.md'
    states = {label: (child_module.state_entries(label), child_module.state_body(label))
              for label in 'AB'}
    memory = MemoryFile(path)
    seed = int.from_bytes(os.urandom(8), 'big')
    rng = random.Random(seed)
    seen = {'A': 0, 'B': 0}
    temp_left = 0
    for iteration in range(ITERATIONS):
        phase = rng.choice(['load', 'save'])
        child = start_child('flip', path, phase)
        try:
            wait_ready(child)
            time.sleep(rng.uniform(0.0, MAX_DELAY_S))
        finally:
            child.send_signal(signal.SIGKILL)
            child.communicate()
        assert child.returncode == -signal.SIGKILL

        result = parse_bytes(path.read_bytes(), child_module.NOW)
        where = f'seed {seed}, iteration {iteration}, phase {phase}'
        assert result.problems == [] and result.quarantined == [], where
        document = result.document
        label = 'A' if document.body == states['A'][1] else 'B'
        entries, body = states[label]
        assert document.body == body, f'{where}: body of neither state'
        assert document.rrn == child_module.RRN
        assert document.entries == entries, f'{where}: entries mix the states'
        seen[label] += 1

        temp_left += bool(stray_temp_files(path))
        with memory.update(child_module.NOW) as after:  # next successful update
            assert after.document.entries == entries
        assert stray_temp_files(path) == [], f'{where}: stale temp file kept'
        assert path.stat().st_mode & 0o777 == FILE_MODE
    # Each child flips the state at least once, so a run of kills sees both states.
    assert seen['A'] and seen['B'], seen
    print(f'{ITERATIONS} kills: {seen}, temp file left behind in {temp_left}')


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_update(tmp_path):
    path = tmp_path / 'robot-memory.md'
    memory = MemoryFile(path)
    with memory.update(child_module.NOW, rrn=child_module.RRN) as result:
        result.document.entries = child_module.state_entries('A')[:3]
    stale = tmp_path / f'.{path.name}.k1ll3d.tmp'
    stale.write_bytes(b'---\nhalf a file')
    unrelated = tmp_path / 'notes.tmp'
    unrelated.write_bytes(b'not ours')
    with memory.update(child_module.NOW):
        pass
    assert not stale.exists() and unrelated.exists()
    assert path.stat().st_mode & 0o777 == FILE_MODE


def test_two_writers_lose_no_update(tmp_path):
    path = tmp_path / 'robot-memory.md'
    writers = [start_child('add', path, name, 50) for name in ('left', 'right')]
    try:
        for writer in writers:
            wait_ready(writer)
        for writer in writers:
            writer.stdin.write(b'go\n')
            writer.stdin.flush()
        for writer in writers:
            _, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err.decode()
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
    result = MemoryFile(path).load(child_module.NOW)
    assert result.problems == [] and result.quarantined == []
    ids = [entry.id for entry in result.document.entries]
    expected = {f'mem-{name}-{index:03d}' for name in ('left', 'right') for index in range(50)}
    assert len(ids) == 100 and set(ids) == expected
    assert path.stat().st_mode & 0o777 == FILE_MODE
