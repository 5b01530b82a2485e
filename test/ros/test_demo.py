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
The README's first command, scripts/demo.sh, run for real: entries form, nothing in the home.

The real script runs the installed memory_node beside the simulated robot and brain, shortened
with ROBOT_MEMORY_DEMO_SECONDS (memory_node dreams every 8 s, one real second being 48
memory-minutes, so the first entries form within it) and writing into a directory of the
test's own (ROBOT_MEMORY_DEMO_DIR). It skips set-up (ROBOT_MEMORY_SKIP_SETUP=1):
scripts/test.sh has just run it, and a second colcon build beside the suite is not wanted.

HOME is an empty directory and must still be empty afterwards: rcl writes its log files to
~/.ros/log and the robot-memory command line defaults to ~/.opencastor/ unless told
otherwise. The demo runs on this run's ROS_DOMAIN_ID (scripts/test.sh picks one per run and
keeps discovery on localhost); nothing else of the suite runs meanwhile.
"""

import datetime as dt
import os
import re
import subprocess
import time

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import MemoryFile
from support.paths import REPO

pytestmark = pytest.mark.slow  # the whole demo: set-up, node and simulated robot

DEMO_SCRIPT = REPO / 'scripts' / 'demo.sh'
DEMO_SECONDS = 25
BANDED_LINE = re.compile(r'^[🔴🟡🟢] \[\d+%\] \S', re.MULTILINE)
# Anything that would otherwise default to a place under HOME must fall back to HOME itself.
UNSET = ('ROS_HOME', 'ROS_LOG_DIR', 'CASTOR_ROBOT_MEMORY_FILE', 'XDG_CACHE_HOME',
         'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME')


@pytest.fixture(scope='module')
def demo(tmp_path_factory):
    """scripts/demo.sh run once: (completed process, its seconds, the empty HOME, its dir)."""
    home = tmp_path_factory.mktemp('home')
    directory = tmp_path_factory.mktemp('checkout') / 'demo'
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env.update(HOME=str(home), ROBOT_MEMORY_SKIP_SETUP='1',
               ROBOT_MEMORY_DEMO_SECONDS=str(DEMO_SECONDS), ROBOT_MEMORY_DEMO_DIR=str(directory),
               ROS_DOMAIN_ID=os.environ.get('ROS_DOMAIN_ID', '0'))
    env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    started = time.monotonic()
    run = subprocess.run(['bash', str(DEMO_SCRIPT)], cwd=home, env=env, capture_output=True,
                         timeout=DEMO_SECONDS + 120)
    seconds = time.monotonic() - started
    return run, seconds, home, directory


def _output(run) -> str:
    return (run.stdout.decode('utf-8', 'replace') + '\n--- stderr ---\n'
            + run.stderr.decode('utf-8', 'replace'))


def test_the_demo_exits_zero(demo):
    run, seconds, _, _ = demo
    assert run.returncode == 0, _output(run)
    assert seconds < DEMO_SECONDS + 60, f'the demo took {seconds:.0f} s'


def test_the_demo_writes_a_valid_memory_file_with_the_wheel_encoder_entry(demo):
    run, _, _, directory = demo
    path = directory / 'robot-memory.md'
    assert path.is_file(), _output(run)
    result = MemoryFile(path).load(dt.datetime.now(UTC))
    assert not result.problems and not result.quarantined, result.problems
    entries = result.document.entries
    assert entries, path.read_text(encoding='utf-8')
    assert result.document.rrn == 'RRN-000000000001'
    wheel = [entry for entry in entries if 'wheel_left encoder intermittent' in entry.text]
    assert wheel and wheel[0].type == 'hardware_observation', [e.text for e in entries]
    assert f'[demo] {path}:' in run.stdout.decode('utf-8'), 'the file is printed at the end'


def test_the_brain_prints_a_banded_context_block(demo):
    run, _, _, _ = demo
    out = run.stdout.decode('utf-8')
    assert '=== context block for RRN-000000000001' in out, _output(run)
    assert BANDED_LINE.search(out), _output(run)
    assert re.search(r'^  dream at .*created [1-9]', out, re.MULTILINE), _output(run)


def test_nothing_is_written_to_the_home_only_to_the_demo_directory(demo):
    run, _, home, directory = demo
    assert sorted(os.listdir(home)) == [], _output(run)
    # rcl's log files went to the demo directory instead of ~/.ros/log.
    logs = list((directory / 'log').glob('*.log'))
    assert logs, sorted(os.listdir(directory))
    assert (directory / 'memory_node.log').is_file()
