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

"""Write safety of robot-memory.md (RCAN §8): atomic, fsynced, locked, mode 0600, appends whole."""

import datetime as dt
import errno
import json
import os
import stat
import threading

import pytest

from robot_memory.errors import MemoryFileError
from robot_memory.errors import MemoryLockTimeout
from robot_memory.rcan import memory_file
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import new_entry
from support.samples import file_bytes
from support.samples import HEADER
from support.samples import SPEC_EXAMPLE
from support.samples import yaml_entry


# ------------------------------------------------------------------------ write safety


def test_a_written_file_is_mode_0600(now, memory_path):
    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    os.chmod(memory_path, 0o644)
    old_umask = os.umask(0)
    try:
        with MemoryFile(memory_path).update(now) as result:
            result.document.entries.append(new_entry('environment_note', 'x', 0.5, now))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(memory_path.stat().st_mode) == 0o600


def test_a_new_file_and_its_quarantine_are_mode_0600(now, tmp_path):
    path = tmp_path / 'new' / 'robot-memory.md'
    with MemoryFile(path).update(now, rrn='RRN-000000000001'):
        pass
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_bytes(file_bytes(HEADER + yaml_entry(1, confidence='7')))
    with MemoryFile(path).update(now):
        pass
    quarantine = memory_file.side_file(path, '.quarantine.jsonl')
    assert stat.S_IMODE(quarantine.stat().st_mode) == 0o600


def _short_writes(monkeypatch, most=7):
    """os.write that writes at most ``most`` bytes a call, as on a nearly full disk."""
    real_write = os.write
    calls = []

    def short(fd, data):
        calls.append(len(data))
        return real_write(fd, bytes(data[:most]))
    monkeypatch.setattr(memory_file.os, 'write', short)
    return calls


def test_an_append_is_completed_when_the_disk_writes_only_part_of_it(tmp_path, monkeypatch):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    archive.write_bytes(b'{"old": 1}\n')
    calls = _short_writes(monkeypatch)
    records = [{'entry': f'mem-{index}', 'text': 'wheel ≤0.3m/s'} for index in range(5)]
    memory_file.append_durably(archive, records)
    assert len(calls) > 10
    lines = archive.read_text('utf-8').splitlines()
    assert [json.loads(line) for line in lines] == [{'old': 1}] + records


@pytest.mark.parametrize('error', [errno.ENOSPC, errno.EIO])
def test_a_failed_append_leaves_the_side_file_as_it_was_and_raises(tmp_path, monkeypatch,
                                                                   error):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    archive.write_bytes(b'{"old": 1}\n')
    real_write = os.write
    calls = []

    def write_then_fail(fd, data):
        calls.append(len(data))
        if len(calls) > 2:  # two short writes got through, then the disk is full
            raise OSError(error, os.strerror(error))
        return real_write(fd, bytes(data[:10]))
    monkeypatch.setattr(memory_file.os, 'write', write_then_fail)
    with pytest.raises(MemoryFileError) as caught:
        memory_file.append_durably(archive, [{'entry': 'mem-1'}, {'entry': 'mem-2'}])
    assert 'nothing was changed in the memory file' in str(caught.value)
    assert ('disk is full' in str(caught.value)) == (error == errno.ENOSPC)
    assert archive.read_bytes() == b'{"old": 1}\n'  # no torn line left behind


def test_a_write_that_makes_no_progress_is_an_error_not_a_loop(tmp_path, monkeypatch):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    monkeypatch.setattr(memory_file.os, 'write', lambda fd, data: 0)
    with pytest.raises(MemoryFileError):
        memory_file.append_durably(archive, [{'entry': 'mem-1'}])
    assert archive.read_bytes() == b''


def test_an_append_after_a_torn_last_line_starts_on_a_line_of_its_own(tmp_path):
    archive = tmp_path / 'robot-memory.md.archive.jsonl'
    archive.write_bytes(b'{"old": 1}\n{"torn": ')
    memory_file.append_durably(archive, [{'entry': 'mem-1'}])
    assert archive.read_bytes().splitlines()[-1] == b'{"entry": "mem-1"}'


def test_entries_stay_in_the_memory_file_when_archiving_them_fails(now, memory_path,
                                                                   monkeypatch):
    from robot_memory.dream.archive import archive_pruned
    from robot_memory.rcan.lifecycle import effective_confidence as effective

    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    memory = MemoryFile(memory_path)
    archive = memory_file.side_file(memory_path, '.archive.jsonl')
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data[:5]))
    before = memory_path.read_bytes()

    class Pruned:

        def __init__(self, entry):
            self.entry, self.effective_confidence = entry, effective(entry, now)
    with pytest.raises(MemoryFileError):
        with memory.update(now) as result:
            pruned = [Pruned(entry) for entry in result.document.entries]
            monkeypatch.setattr(memory_file.os, 'write', full_disk)
            archive_pruned(memory, pruned, now)  # raises: the removal below never runs
            result.document.entries = []
    assert memory_path.read_bytes() == before
    assert not archive.exists() or archive.read_bytes() == b''


def test_writes_fsync_the_file_before_the_rename_and_the_directory_after(now, memory_path,
                                                                         monkeypatch):
    memory_path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    before = memory_path.read_bytes()
    synced = []
    real_fsync = os.fsync

    def counting_fsync(fd):
        info = os.fstat(fd)
        synced.append((stat.S_ISDIR(info.st_mode), info.st_ino, memory_path.read_bytes()))
        real_fsync(fd)

    monkeypatch.setattr(memory_file.os, 'fsync', counting_fsync)
    with MemoryFile(memory_path).update(now) as result:
        result.document.entries.append(new_entry('environment_note', 'x', 0.5, now))
    after = memory_path.read_bytes()
    assert after != before
    assert len(synced) == 2
    (file_is_dir, file_inode, seen_at_file_sync), (dir_is_dir, dir_inode, seen_at_dir_sync) = synced
    assert not file_is_dir and file_inode == memory_path.stat().st_ino
    assert seen_at_file_sync == before
    assert dir_is_dir and dir_inode == memory_path.parent.stat().st_ino
    assert seen_at_dir_sync == after


def test_an_unchanged_document_is_not_rewritten(now, memory_path):
    memory = MemoryFile(memory_path)
    with memory.update(now, rrn='RRN-000000000001'):
        pass
    inode = memory_path.stat().st_ino
    with memory.update(now + dt.timedelta(days=3)):
        pass
    assert memory_path.stat().st_ino == inode
    assert memory.load(now).document.last_updated == now


def test_a_second_writer_waits_for_the_lock(now, memory_path):
    first = MemoryFile(memory_path, lock_timeout_s=30)
    second = MemoryFile(memory_path, lock_timeout_s=30)
    with first.update(now, rrn='RRN-000000000001') as result:
        result.document.entries.append(new_entry('environment_note', 'first', 0.5, now))

    entered = threading.Event()
    errors = []

    def second_writer():
        try:
            with second.update(now) as update:
                entered.set()
                update.document.entries.append(new_entry('environment_note', 'second', 0.5,
                                                         now))
        except Exception as error:  # reported to the main thread below
            errors.append(error)

    with first.lock():
        thread = threading.Thread(target=second_writer)
        thread.start()
        assert not entered.wait(0.3) and thread.is_alive()
    thread.join(30)
    assert errors == [] and entered.is_set()
    texts = [entry.text for entry in first.load(now).document.entries]
    assert texts == ['first', 'second']


def test_a_writer_gives_up_with_a_message_after_the_lock_timeout(now, memory_path):
    holder = MemoryFile(memory_path)
    waiter = MemoryFile(memory_path, lock_timeout_s=0.05)
    with holder.lock():
        with pytest.raises(MemoryLockTimeout) as caught:
            with waiter.update(now, rrn='RRN-000000000001'):
                pass
    message = str(caught.value)
    assert 'robot-memory.md.lock' in message and '0.05 s' in message
    assert 'another writer' in message and 'retry' in message
    assert isinstance(caught.value, MemoryFileError)
    assert not memory_path.exists()
