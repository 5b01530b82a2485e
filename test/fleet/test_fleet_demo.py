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
The README's fleet demo, scripts/fleet_demo.sh, run for real in its short mode.

A PostgreSQL server, the fleet store, two sites' routers and four simulated robots: the
report must show the fault the rovers share, the robot that resolved it, and the lesson an
operator promoted; every server the demo started must be gone after it.
"""

import os
import pathlib
import re
import subprocess

from support.paths import REPO


def test_the_fleet_demo_prints_the_report_and_stops_what_it_started(tmp_path):
    env = dict(os.environ, ROBOT_MEMORY_SKIP_SETUP='1')
    done = subprocess.run(['bash', str(REPO / 'scripts' / 'fleet_demo.sh'), '--short', '--dir',
                           str(tmp_path / 'fleet')], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert 'fleet demo: store postgresql://' in out  # a real server: setup.sh installs it
    assert 'Fleet report at ' in out and '4 robots, 5 dreams kept' in out
    assert '2 robots  [' in out and 'Left wheel encoder intermittent' in out
    assert 'resolved by RRN-000000000101; still seen by RRN-000000000102, RRN-000000000103' \
        in out
    assert 'active   model rover-2  from RRN-000000000102 mem-00000001' in out
    assert 'promote  ops-demo: seen on most rovers' in out
    # the server stopped and its files removed (other runs on the machine may make or sweep
    # away servers of their own meanwhile: the demo names its own)
    server = re.search(r'\(its server in (\S+), removed at the end\)', out)
    assert server, out
    assert pathlib.Path(server.group(1)).name.startswith('robot-memory-pg-')
    assert not pathlib.Path(server.group(1)).exists()
    for log in ('store.log', 'router-depot-north.log', 'router-depot-south.log'):
        assert (tmp_path / 'fleet' / log).read_text()  # each child ran, and was stopped
