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

"""Where the memory file is when none is named: OpenCastor's order, everywhere."""

import os
import subprocess

import pytest

from robot_memory import locations
from robot_memory.rcan.memory_file import MemoryFile
from support.cli import command
from support.processes import child_env

VARIABLES = (locations.ENV_VAR, locations.STATE_DIR_VAR, locations.ROBOT_HOME_VAR)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """Give the test a HOME of its own, with none of OpenCastor's variables set."""
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / 'home').mkdir()
    return tmp_path / 'home'


def test_nothing_set_is_the_state_directory_under_home(home):
    assert locations.default_memory_file() == home / '.opencastor' / 'robot-memory.md'
    assert locations.resolve_path() == home / '.opencastor' / 'robot-memory.md'


def test_the_explicit_variable_wins_over_everything(home, tmp_path, monkeypatch):
    (home / '.opencastor').mkdir()
    (home / '.opencastor' / 'robot-memory.md').write_text('x')
    monkeypatch.setenv(locations.ROBOT_HOME_VAR, str(tmp_path / 'robot'))
    monkeypatch.setenv(locations.ENV_VAR, str(tmp_path / 'chosen.md'))
    assert locations.default_memory_file() == tmp_path / 'chosen.md'
    assert locations.default_source() == '$CASTOR_ROBOT_MEMORY_FILE'


def test_robot_home_is_used_only_while_the_state_directory_holds_no_memory(home, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv(locations.ROBOT_HOME_VAR, str(tmp_path / 'robot'))
    assert locations.default_memory_file() == tmp_path / 'robot' / 'robot-memory.md'
    assert locations.default_source() == '$ROBOT_HOME'
    # An existing memory in the state directory is never stranded by the newer variable.
    (home / '.opencastor').mkdir()
    (home / '.opencastor' / 'robot-memory.md').write_text('x')
    assert locations.default_memory_file() == home / '.opencastor' / 'robot-memory.md'
    assert locations.default_source() == 'the default'


def test_the_state_directory_variable_moves_the_state_directory(home, tmp_path, monkeypatch):
    monkeypatch.setenv(locations.STATE_DIR_VAR, str(tmp_path / 'state'))
    monkeypatch.setenv(locations.ROBOT_HOME_VAR, str(tmp_path / 'robot'))
    (tmp_path / 'state').mkdir()
    assert locations.default_memory_file() == tmp_path / 'robot' / 'robot-memory.md'
    (tmp_path / 'state' / 'robot-memory.md').write_text('x')
    assert locations.default_memory_file() == tmp_path / 'state' / 'robot-memory.md'
    assert locations.state_dir() == tmp_path / 'state'


def test_a_dangling_link_in_the_state_directory_is_still_its_memory(home, tmp_path,
                                                                    monkeypatch):
    # The link is the operator's choice of file; writers then say what is wrong with it.
    (home / '.opencastor').mkdir()
    (home / '.opencastor' / 'robot-memory.md').symlink_to(tmp_path / 'gone.md')
    monkeypatch.setenv(locations.ROBOT_HOME_VAR, str(tmp_path / 'robot'))
    assert locations.default_memory_file() == home / '.opencastor' / 'robot-memory.md'


def test_variables_are_read_at_each_call_not_at_import(home, tmp_path, monkeypatch):
    first = MemoryFile().path
    monkeypatch.setenv(locations.ROBOT_HOME_VAR, str(tmp_path / 'robot'))
    assert MemoryFile().path == tmp_path / 'robot' / 'robot-memory.md' != first


def _cli(env, *argv):
    return subprocess.run(command(*argv), env=env,
                          capture_output=True, text=True, timeout=60)


def _env(home, **extra):
    env = child_env()
    for name in VARIABLES:
        env.pop(name, None)
    env.update(HOME=str(home), **extra)
    return env


def test_the_cli_learns_into_robot_home_on_a_host_without_a_state_memory(home, tmp_path):
    robot = tmp_path / 'robot'
    robot.mkdir()
    env = _env(home, ROBOT_HOME=str(robot))
    done = _cli(env, 'learn', 'The dock is in the hallway', '--at', '2026-06-01T12:00:00Z')
    assert done.returncode == 0, done.stderr
    assert (robot / 'robot-memory.db').exists()
    assert not (home / '.opencastor').exists()
    found = _cli(env, 'recall', 'dock', '--at', '2026-06-01T12:00:00Z')
    assert found.returncode == 0 and 'hallway' in found.stdout, found


def test_the_cli_names_the_variable_when_robot_home_does_not_exist(home, tmp_path):
    env = _env(home, ROBOT_HOME=str(tmp_path / 'no-such-dir'))
    done = _cli(env, 'learn', 'The dock is in the hallway')
    assert done.returncode != 0
    assert '$ROBOT_HOME' in done.stderr and 'no-such-dir' in done.stderr, done.stderr
    assert not (tmp_path / 'no-such-dir').exists()


def test_an_existing_state_memory_wins_in_the_cli_too(home, tmp_path):
    state = home / '.opencastor'
    state.mkdir()
    robot = tmp_path / 'robot'
    robot.mkdir()
    env = _env(home, ROBOT_HOME=str(robot))
    first = _cli(env, 'learn', 'The dock is in the hallway', '--at', '2026-06-01T12:00:00Z')
    assert first.returncode == 0, first.stderr
    # no memory yet in the state directory: the robot home took it
    assert (robot / 'robot-memory.db').exists()
    (state / 'robot-memory.md').touch()  # OpenCastor made its store: it is the memory now
    done = _cli(env, 'learn', 'The charger is in room 4', '--at', '2026-06-01T12:00:00Z')
    assert done.returncode == 0, done.stderr
    assert (state / 'robot-memory.db').exists()
    assert os.path.getsize(state / 'robot-memory.db') > 0
