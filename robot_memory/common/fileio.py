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
Durable files: atomic replacement, all-or-nothing appends, and the names of side files.

What every writer of robot_memory (the memory file, its archive and quarantine, the dream
summaries, a damaged database set aside) uses so that a crash or a full disk never leaves a
torn file: write a temporary file, fsync it, rename it over the old one and fsync the
directory. Files are created private (mode 0600). A file kept beside another is named
``<name><suffix>`` (``robot-memory.md.quarantine.jsonl``, ``robot-memory.db.corrupt-<time>``).
"""

import contextlib
import datetime as dt
import errno
import json
import os
import pathlib
import tempfile

from robot_memory.common.timeutil import file_stamp
from robot_memory.errors import MemoryFileError
from robot_memory.locations import link_target

FILE_MODE = 0o600


def side_file(path: pathlib.Path, suffix: str) -> pathlib.Path:
    """Return a file kept beside ``path``, e.g. ``robot-memory.md.archive.jsonl``."""
    return path.with_name(path.name + suffix)


SETTINGS_MAX_BYTES = 1 << 20  # a rules or parameters file is a few kilobytes


def read_settings_text(path, most: int = SETTINGS_MAX_BYTES) -> str:
    """
    Return a small text file (rules, parameters), reading at most ``most`` + 1 bytes of it.

    OSError (EFBIG) when it is larger: ``--rules /dev/zero`` read until memory ran out.
    """
    with open(path, 'rb') as handle:
        data = handle.read(most + 1)
    if len(data) > most:
        raise OSError(errno.EFBIG, f'larger than {most // 1024} KiB, so not a settings file '
                                   'this could be')
    return data.decode('utf-8')


def fsync_directory(directory: pathlib.Path) -> None:
    """
    Make a rename or a new file in ``directory`` durable (fsync of the directory).

    Best effort once the rename is done: a directory this user may write but not read
    (mode 0300), or a file system that cannot sync a directory (EINVAL), made a command fail
    after its file was already replaced, the dream left "in progress".
    """
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    except PermissionError:
        return
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write only part of the data (a nearly full disk): repeat until all is.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def write_new(path: pathlib.Path, data: bytes, mode: int = FILE_MODE) -> None:
    """
    Write ``data`` to a new file of ``mode``, synced to disk, never over an existing one.

    For keys: an existing ``path`` raises FileExistsError and is left as it is.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(path.parent)


def _hint(error: OSError, full: str) -> str:
    """Return what to do about a failed write: ``full`` for a full disk or quota, else why."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return full
    if error.errno == errno.EFBIG:
        return ('the file would be larger than this process may write (ulimit -f) or the file '
                'system allows; raise the limit or free space')
    return 'check permissions'


def write_atomic(path: pathlib.Path, data: bytes, mode: int = FILE_MODE) -> None:
    """
    Replace ``path`` with ``data``: temp file, fsync, rename, fsync of the directory.

    A symbolic link is written through: its target is replaced and the link kept.
    """
    path = link_target(path)
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp_name = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=directory)
    except OSError as error:
        raise MemoryFileError(f'cannot create a file in {directory}: {error.strerror}; '
                              'check the directory exists and is writable', path) from None
    try:
        with os.fdopen(fd, 'wb') as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        if isinstance(error, OSError):
            hint = _hint(error, 'the disk is full; free space and the write will succeed')
            raise MemoryFileError(f'write failed ({error.strerror}); the previous file is '
                                  f'intact; {hint}', path) from None
        raise
    fsync_directory(directory)


def append_durably(path: pathlib.Path, lines: list) -> None:
    """
    Append JSON-serialisable records to a JSON-lines side file and fsync it.

    All or nothing: ``os.write`` may write only part of the data (a nearly full disk),
    so it is repeated until everything is written; on any error the file is truncated
    back to its size before the call and MemoryFileError is raised, so the caller keeps
    the records (e.g. does not remove archived entries from the memory file). Callers
    hold the memory file's lock, so no other writer appends meanwhile.
    """
    if not lines:
        return
    payload = ''.join(json.dumps(line, ensure_ascii=False, default=str) + '\n'
                      for line in lines).encode('utf-8')
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
    except OSError as error:
        raise MemoryFileError(f'cannot append to {path.name} ({error.strerror}); nothing was '
                              'changed in the memory file', path) from None
    try:
        original_size = os.fstat(fd).st_size
        try:
            if original_size and os.pread(fd, 1, original_size - 1) != b'\n':
                payload = b'\n' + payload  # a torn last line stays apart from these records
            _write_all(fd, payload)
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, original_size)
                os.fsync(fd)
            raise
    except OSError as error:
        hint = _hint(error, 'the disk is full; free space and retry')
        raise MemoryFileError(f'cannot append to {path.name} ({error.strerror}); nothing was '
                              f'changed in the memory file; {hint}', path) from None
    finally:
        os.close(fd)


def unused_name(path: pathlib.Path, suffix: str) -> pathlib.Path:
    """Return ``side_file(path, suffix)``, or with ``-2``, ``-3``... the first name not taken."""
    candidate = side_file(path, suffix)
    counter = 2
    while candidate.exists():
        candidate = side_file(path, f'{suffix}-{counter}')
        counter += 1
    return candidate


def kept_name(path: pathlib.Path, label: str, now: dt.datetime) -> pathlib.Path:
    """Return a free name ``<path>.<label>-<time>`` beside ``path`` for a copy kept there."""
    return unused_name(path, f'.{label}-{file_stamp(now)}')
