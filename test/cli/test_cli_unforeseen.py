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

"""What no refusal foresaw (the file system's, SQLite's, a date out of range): one line."""

import errno
import io
import os
import sqlite3
import subprocess
import sys

import pytest

from robot_memory.cli.main import main
from robot_memory.common import fileio
from robot_memory.common.sqlite_db import create_private_file
from robot_memory.evidence.ingest import bounded_lines
from robot_memory.substrate import record_tables
from support.processes import child_env
from support.samples import SPEC_EXAMPLE


@pytest.fixture
def memory(tmp_path):
    path = tmp_path / 'robot-memory.md'
    path.write_text(SPEC_EXAMPLE, encoding='utf-8')
    return path


def test_a_lock_file_that_cannot_be_opened_is_one_line_not_a_traceback(memory, capsys):
    # after `sudo robot-memory dream` the lock is root's; here it is a directory
    (memory.parent / 'robot-memory.md.lock').mkdir()
    assert main(['dream', '--file', str(memory), '--at', '2026-04-01T12:00:00Z']) == 1
    err = capsys.readouterr().err
    assert err.startswith('robot-memory dream: cannot use ') and 'robot-memory.md.lock' in err
    assert 'check that path, its permissions and the free space on its disk' in err
    assert 'Traceback' not in err and err.count('\n') == 1


def test_a_time_out_of_range_is_one_line(memory, capsys):
    for command in (['show'], ['prune']):
        assert main([*command, '--file', str(memory), '--at', '0001-01-01T00:00:00Z']) == 1
        err = capsys.readouterr().err
        assert 'out of range' in err and 'Traceback' not in err and err.count('\n') == 1


def test_a_directory_that_cannot_be_synced_does_not_fail_a_write_already_made(
        tmp_path, monkeypatch):
    # mode 0300, or a file system without directory fsync: the file was replaced, then the
    # command failed and a dream was left "in progress"
    def refuse(fd):
        raise OSError(errno.EINVAL, 'Invalid argument')
    monkeypatch.setattr(os, 'fsync', refuse)
    fileio.fsync_directory(tmp_path)
    monkeypatch.undo()
    real_open = os.open

    def unreadable(path, flags, *rest):
        if flags & getattr(os, 'O_DIRECTORY', 0):
            raise PermissionError(errno.EACCES, 'Permission denied', str(path))
        return real_open(path, flags, *rest)
    monkeypatch.setattr(os, 'open', unreadable)
    fileio.write_atomic(tmp_path / 'kept.txt', b'kept')
    assert (tmp_path / 'kept.txt').read_bytes() == b'kept'


def test_a_full_disk_is_not_called_a_damaged_database():
    assert not record_tables._damaged(sqlite3.OperationalError('disk I/O error'))
    assert not record_tables._damaged(sqlite3.OperationalError('database or disk is full'))
    assert not record_tables._damaged(
        sqlite3.OperationalError('attempt to write a readonly database'))
    assert record_tables._damaged(sqlite3.DatabaseError('file is not a database'))


def test_a_line_without_an_end_is_read_in_pieces_and_cut():
    stream = io.StringIO('{"a": 1}\n' + '\0' * 50_000 + '\n{"b": 2}\n' + 'x' * 25)
    lines = list(bounded_lines(stream, most=1000))
    assert lines[0] == '{"a": 1}\n' and lines[1] == '\0' * 1001
    assert lines[2:] == ['{"b": 2}\n', 'x' * 25]


def test_wal_files_made_while_the_database_was_read_only_are_made_writable_again(tmp_path):
    # the damage check reads a 0400 database: SQLite made its -shm 0400 too, and every later
    # writer (the database 0600 again) failed with "attempt to write a readonly database"
    database = tmp_path / 'robot-memory.db'
    for path in (database, tmp_path / 'robot-memory.db-shm', tmp_path / 'robot-memory.db-wal'):
        path.write_bytes(b'')
        path.chmod(0o400)
    create_private_file(database)
    assert {path.name: path.stat().st_mode & 0o777 for path in tmp_path.iterdir()} == {
        'robot-memory.db': 0o600, 'robot-memory.db-shm': 0o600, 'robot-memory.db-wal': 0o600}


@pytest.mark.parametrize('option, what', [('--rules', 'rules'), ('--config', 'config')])
def test_a_rules_or_parameters_file_of_megabytes_is_refused_unread(memory, capsys, option,
                                                                   what):
    # --rules /dev/zero read until memory ran out (a hang without a limit)
    big = memory.parent / 'huge.yaml'
    with open(big, 'wb') as handle:
        handle.truncate(8 << 20)  # sparse: no disk used
    assert main(['dream', '--file', str(memory), option, str(big)]) == 1
    err = capsys.readouterr().err
    assert f'cannot read the {what} file: larger than 1024 KiB' in err


def test_a_write_over_the_file_size_limit_is_named_as_such(tmp_path):
    # EFBIG (ulimit -f, a FAT file system) was answered "check permissions"
    code = (
        'import resource, signal, sys\n'
        'signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n'
        'resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n'
        'from robot_memory.common.fileio import write_atomic\n'
        'from robot_memory.errors import MemoryFileError\n'
        'import pathlib\n'
        'try:\n'
        f'    write_atomic(pathlib.Path({str(tmp_path / "big.md")!r}), b"x" * 5000)\n'
        'except MemoryFileError as error:\n'
        '    print(error)\n')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=child_env(), timeout=60)
    assert 'larger than this process may write (ulimit -f)' in done.stdout, done
    assert 'check permissions' not in done.stdout


def test_another_applications_database_is_left_as_it_is(tmp_path, memory, capsys):
    # learn --db other-app.db added robot_memory's tables to it and made it mode 0600
    other = tmp_path / 'other-app.db'
    with sqlite3.connect(other) as conn:
        conn.execute('CREATE TABLE contacts (name TEXT)')
    other.chmod(0o644)
    before = other.read_bytes()
    assert main(['learn', '--file', str(memory), '--db', str(other), 'the dock is here']) == 1
    err = capsys.readouterr().err
    assert "holds another application's tables (contacts), none of robot_memory's" in err
    assert other.read_bytes() == before and other.stat().st_mode & 0o777 == 0o644
