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
Fixtures of the fleet tests: one PostgreSQL server per session, and a store URL of each dialect.

The server is the OS's PostgreSQL, started by ``robot_memory.testing.fleet_servers`` (the
benchmarks start theirs with it too): missing binaries fail the tests, never skip.

A test module names this plugin (``pytest_plugins = ('support.fleet_fixtures',)``), so the fixtures,
registered once, are shared by every module: one server for the session. Not a conftest.py:
a second module named ``conftest`` would replace test/conftest.py's for the modules that
import from it.
"""

import pytest

from robot_memory.testing.fleet_servers import new_database
from robot_memory.testing.fleet_servers import PostgresControl
from support.fleet import make_robots


@pytest.fixture(scope='session')
def postgres():
    """Start one PostgreSQL server for the session; stop it and remove its files after."""
    control = PostgresControl()
    try:
        yield control.start()
    finally:
        control.remove()


@pytest.fixture
def own_postgres():
    """
    Return a PostgreSQL server of one test, to stop and start; stopped and removed after.

    Commits are synchronous: a stop is a crash, and what was committed before it must be there
    after the start, as on a production server.
    """
    control = PostgresControl(synchronous_commit='on')
    try:
        control.start()
        yield control
    finally:
        control.remove()


@pytest.fixture(params=['sqlite', 'postgresql'])
def store_url(request, tmp_path):
    """Return the URL of an empty fleet store: a SQLite file, then a PostgreSQL database."""
    if request.param == 'sqlite':
        return str(tmp_path / 'fleet.db')
    return new_database(request.getfixturevalue('postgres'))


@pytest.fixture
def robots(tmp_path):
    """Return three robots with key pairs, and the store's trust of them."""
    return make_robots(tmp_path / 'keys')
