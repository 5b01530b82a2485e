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
Servers of the fleet's tests and benchmarks as child processes: PostgreSQL, Zenoh, the store.

:class:`PostgresControl` is the OS's PostgreSQL (scripts/setup.sh installs it): ``initdb`` and
``pg_ctl`` run as the ``postgres`` user when run as root (initdb refuses root), on a data
directory and a Unix-socket directory in a temporary directory, with no TCP listener
(``listen_addresses=''``) on a port found free. Missing binaries raise, never skip. Each
directory names the process that made it (``owner.pid``); a new server first removes the
directories (and stops the servers) of owners that are gone, so a run killed before its
``remove()`` (a timeout, a Ctrl-C) leaves nothing behind for long.
:class:`Child` runs a Python child (a Zenoh router, ``robot-memory fleet serve``) and reads
its output line by line. ``test/support/fleet_fixtures.py`` and ``bench/bench_fleet.py``
both start their servers with these.
"""

import dataclasses
import glob
import os
import pathlib
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from robot_memory.testing.processes import end_process


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


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
    raise FileNotFoundError("PostgreSQL's initdb and pg_ctl are missing: run scripts/setup.sh "
                            'as root (it installs postgresql), or apt-get install postgresql')


PREFIX = 'robot-memory-pg-'
OWNER = 'owner.pid'


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_abandoned(folder: pathlib.Path, binaries: pathlib.Path) -> list:
    """
    Remove the test servers' directories in ``folder`` whose owner process is gone; return them.

    A server still running there (its owner was killed before ``remove()``) is stopped first.
    A directory without ``owner.pid`` (made before owners were written, or being made this
    moment) is left alone: whose it is cannot be told.
    """
    removed = []
    for base in sorted(folder.glob(PREFIX + '*')):
        try:
            owner = int((base / OWNER).read_text().strip())
        except (OSError, ValueError):
            continue
        if _alive(owner):
            continue
        if (base / 'data' / 'postmaster.pid').exists():
            as_postgres = ['runuser', '-u', 'postgres', '--'] if os.geteuid() == 0 else []
            subprocess.run(as_postgres + [str(binaries / 'pg_ctl'), '-D', str(base / 'data'),
                                          '-m', 'immediate', '-w', 'stop'],
                           capture_output=True, timeout=60)  # not running: pg_ctl says so
        shutil.rmtree(base, ignore_errors=True)
        removed.append(base)
    return removed


def _run(command: list) -> None:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f'{command[-1]} failed: {done.stdout}{done.stderr}'


class PostgresControl:
    """A server of the tests in its own temporary directory: start, stop (as a crash), remove."""

    def __init__(self, synchronous_commit: str = 'off'):
        self.synchronous_commit = synchronous_commit
        self.binaries = _binaries()
        remove_abandoned(pathlib.Path(tempfile.gettempdir()), self.binaries)
        self.base = pathlib.Path(tempfile.mkdtemp(prefix=PREFIX))
        (self.base / OWNER).write_text(f'{os.getpid()}\n')
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


def new_database(server: PostgresServer) -> str:
    """Create an empty database on ``server``; return its URL."""
    import psycopg  # lazy: the fleet extra, 94 ms and 20 MB, for the tests that use the server
    name = f'fleet_{uuid.uuid4().hex[:12]}'
    with psycopg.connect(server.url('postgres'), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE {name}')
    return server.url(name)


class Child:
    """A child process of the fleet (a router, a store), its output read line by line."""

    def __init__(self, arguments: list, env: dict, ready: str, timeout_s: float = 60.0):
        self.process = subprocess.Popen([sys.executable] + arguments, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list = []
        self.wait_for(ready, timeout_s)

    def wait_for(self, fragment: str, timeout_s: float = 30.0) -> str:
        """Return the first line (from the start) holding ``fragment``; fail after the time."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = [line for line in self.lines if fragment in line]
            if found:
                return found[0]
            left = deadline - time.monotonic()
            assert left > 0 and self.process.poll() is None, \
                f'no {fragment!r} from the child; it said: {"".join(self.lines)[-3000:]}'
            output = self.process.stdout
            assert output is not None  # started with stdout=PIPE
            readable, _, _ = select.select([output], [], [], min(left, 0.5))
            if readable:
                line = output.readline()
                if line:
                    self.lines.append(line)

    def stop(self) -> int:
        """Stop the child (SIGTERM, SIGKILL after 20 s); keep the rest of its output; its code."""
        output = self.process.stdout
        assert output is not None  # started with stdout=PIPE
        try:
            code = end_process(self.process)
            self.lines += output.readlines()  # what it said to the end
            return code
        finally:
            output.close()
