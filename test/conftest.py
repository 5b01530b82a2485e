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

"""Shared fixtures for the plain-pytest core tests (no rclpy anywhere near them)."""

import datetime as dt
import os
import pathlib
import shutil
import tempfile

import hypothesis
import pytest

from robot_memory.common.timeutil import UTC
from support import modes
from support.paths import REPO

# Fixtures any test can ask for: tiny_disk (a 1 MiB tmpfs).
pytest_plugins = ('support.disks',)

# No deadline for any property test: Hypothesis's default (200 ms an example) is a timed
# assertion, and the suite makes none. These machines are shared: under load an example that
# takes 20 ms took 253 ms and failed a run (test_sequence_gaps) for nothing it tested.
hypothesis.settings.register_profile('robot_memory', deadline=None)
hypothesis.settings.load_profile('robot_memory')


def pytest_addoption(parser):
    """Add ``--long``: run the tests marked ``long`` in their long torture mode."""
    parser.addoption('--long', action='store_true', default=False,
                     help='run the torture tests (marked long) at full length: thousands of '
                          'kills, fuzz examples and clock jumps; tens of minutes')


def pytest_configure(config):
    """
    Register the markers, set the run's length and send the product's caches aside.

    The embedding model's optimised graph goes to a temporary directory of this run, not to
    ~/.cache; the processes tests start inherit it.
    """
    config.addinivalue_line('markers', 'ros: starts ROS 2 (rclpy, memory_node, colcon); every '
                                       'test under test/ros')
    config.addinivalue_line('markers', 'slow: takes more than about 15 s on its own '
                                       '(-m "not slow" for a quick run)')
    config.addinivalue_line('markers', 'long: a torture test with a long mode (--long)')
    modes.LONG = config.getoption('--long')
    config._robot_memory_cache = tempfile.mkdtemp(prefix='robot-memory-cache-')
    os.environ['XDG_CACHE_HOME'] = config._robot_memory_cache


def pytest_unconfigure(config):
    """Remove the run's cache directory."""
    shutil.rmtree(getattr(config, '_robot_memory_cache', ''), ignore_errors=True)


@pytest.fixture
def now():
    """Return a fixed moment: the spec example's last_updated plus one hour."""
    return dt.datetime(2026, 4, 1, 3, 0, tzinfo=UTC)


@pytest.fixture
def memory_path(tmp_path):
    """Where a test's robot-memory.md lives."""
    return tmp_path / 'robot-memory.md'


@pytest.fixture(autouse=True)
def _no_node_outlives_its_test():
    """End any memory_node a test started and left running (module fixtures' nodes stay)."""
    from support import ros_harness  # no rclpy: the harness only starts processes
    mark = ros_harness.started_count()
    yield
    ros_harness.stop_started_since(mark)


def pytest_collection_modifyitems(config, items):
    """Mark every test under test/ros ``ros``, so ``-m 'not ros'`` runs the pure core alone."""
    ros_dir = REPO / 'test' / 'ros'
    for item in items:
        if ros_dir in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.ros)


@pytest.fixture(scope='module')
def probe(request):
    """Return an rclpy node in the test process, one per test module (ROS tests only)."""
    from support.ros_probe import make_probe  # rclpy is imported only by the tests that ask for it
    name = request.module.__name__.rsplit('.', 1)[-1].removeprefix('test_')
    yield from make_probe(f'{name}_probe')
