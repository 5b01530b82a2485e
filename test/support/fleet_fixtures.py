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

The server is the OS's PostgreSQL (scripts/setup.sh installs it): ``initdb`` and ``pg_ctl``
run as the ``postgres`` user when the tests run as root (initdb refuses root), on a data
directory and a Unix-socket directory in a temporary directory, with no TCP listener
(``listen_addresses=''``) on a port found free. Missing binaries fail the tests, never skip.

A test module names this plugin (``pytest_plugins = ('support.fleet_fixtures',)``), so the fixtures,
registered once, are shared by every module: one server for the session. Not a conftest.py:
a second module named ``conftest`` would replace test/conftest.py's for the modules that
import from it.
"""

import dataclasses
import glob
import os
import pathlib
import shutil
import subprocess
import tempfile
import uuid

import pytest

from support.fleet import make_robots
from support.processes import free_port


@dataclasses.dataclass(frozen=True)
class PostgresServer:
    """A running server: its socket directory and port."""

    socket_dir: pathlib.Path
    port: int

    def url(self, database: str) -> str:
        """Return the psycopg URL of ``database`` on this server."""
        return f'postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}'


def _binaries() -> pathlib.Path:
    found = sorted(glob.glob('/usr/lib/postgresql/*/bin/initdb'))
    if found:
        return pathlib.Path(found[-1]).parent
    initdb = shutil.which('initdb')
    if initdb:
        return pathlib.Path(initdb).parent
    pytest.fail("PostgreSQL's initdb and pg_ctl are missing: run scripts/setup.sh as root (it "
                'installs postgresql), or apt-get install postgresql')


def _run(command: list) -> None:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f'{command[-1]} failed: {done.stdout}{done.stderr}'


class PostgresControl:
    """A server of the tests in its own temporary directory: start, stop (as a crash), remove."""

    def __init__(self, synchronous_commit: str = 'off'):
        self.synchronous_commit = synchronous_commit
        self.binaries = _binaries()
        self.base = pathlib.Path(tempfile.mkdtemp(prefix='robot-memory-pg-'))
        self.data, sockets = self.base / 'data', self.base / 'sock'
        sockets.mkdir()
        self.as_postgres = []
        if os.geteuid() == 0:  # initdb refuses root: run the server as postgres, in its own dirs
            self.as_postgres = ['runuser', '-u', 'postgres', '--']
            for path in (self.base, sockets):
                shutil.chown(path, 'postgres', 'postgres')
        self.server = PostgresServer(sockets, free_port())
        self.running = False
        _run(self.as_postgres + [self.binaries / 'initdb', '-D', self.data, '-A', 'trust', '-U',
                                 'postgres', '-E', 'UTF8', '--no-sync'])

    def start(self) -> PostgresServer:
        """Start the server (on the same socket and port each time); return it."""
        _run(self.as_postgres + [
            self.binaries / 'pg_ctl', '-D', self.data, '-l', self.base / 'server.log', '-w',
            '-t', '60', '-o', f"-c listen_addresses='' -k {self.server.socket_dir} -p "
            f'{self.server.port} -c fsync=off -c synchronous_commit={self.synchronous_commit}',
            'start'])
        self.running = True
        return self.server

    def stop(self) -> None:
        """Stop the server at once, as a crash or a restart of the host does."""
        _run(self.as_postgres + [self.binaries / 'pg_ctl', '-D', self.data, '-m', 'immediate',
                                 '-w', 'stop'])
        self.running = False

    def new_database(self) -> str:
        """Create an empty database on the server; return its URL."""
        return new_database(self.server)

    def remove(self) -> None:
        """Stop the server if it runs, and remove its files."""
        if self.running:
            self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


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


def new_database(server: PostgresServer) -> str:
    """Create an empty database on ``server``; return its URL."""
    import psycopg  # the fleet extra's: imported by the tests that use the server
    name = f'fleet_{uuid.uuid4().hex[:12]}'
    with psycopg.connect(server.url('postgres'), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE {name}')
    return server.url(name)


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
