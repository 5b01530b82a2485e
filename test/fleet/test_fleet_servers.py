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

"""The tests' PostgreSQL: a run killed before it removed its server leaves nothing for long."""

import os
import pathlib
import subprocess
import time

from robot_memory.testing.fleet_servers import OWNER
from robot_memory.testing.fleet_servers import PostgresControl
from robot_memory.testing.fleet_servers import PREFIX
from robot_memory.testing.fleet_servers import remove_abandoned


def _gone_pid() -> int:
    """Return the PID of a process that has ended."""
    child = subprocess.Popen(['true'])
    child.wait()
    return child.pid


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_runs_server_is_stopped_and_its_files_removed_by_the_next():
    abandoned = PostgresControl()
    abandoned.start()
    postmaster = int((abandoned.data / 'postmaster.pid').read_text().split()[0])
    (abandoned.base / OWNER).write_text(f'{_gone_pid()}\n')  # its test process was killed
    mine = PostgresControl()
    try:
        assert not abandoned.base.exists()
        deadline = time.monotonic() + 30.0
        while _running(postmaster) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(postmaster)
        assert (mine.base / OWNER).read_text().strip() == str(os.getpid())
    finally:
        mine.remove()
        abandoned.running = False
        abandoned.remove()


def test_a_live_owners_directory_and_one_without_an_owner_stay(tmp_path):
    binaries = pathlib.Path('/nonexistent')  # nothing to stop: pg_ctl is never run here
    live = tmp_path / (PREFIX + 'live')
    live.mkdir()
    (live / OWNER).write_text(f'{os.getpid()}\n')
    unknown = tmp_path / (PREFIX + 'unknown')  # being made this moment, or from before owners
    unknown.mkdir()
    gone = tmp_path / (PREFIX + 'gone')
    gone.mkdir()
    (gone / OWNER).write_text(f'{_gone_pid()}\n')
    other = tmp_path / 'somebody-else'
    other.mkdir()
    (other / OWNER).write_text(f'{_gone_pid()}\n')
    assert remove_abandoned(tmp_path, binaries) == [gone]
    assert live.exists() and unknown.exists() and other.exists() and not gone.exists()
