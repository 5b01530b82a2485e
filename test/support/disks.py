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
A tiny disk of the test's own: a 1 MiB tmpfs (root only), and filling it to the last byte.

A pytest plugin (conftest.py names it), so any test can ask for ``tiny_disk``.
"""

import contextlib
import errno
import os
import pathlib
import shutil
import subprocess

import pytest


@contextlib.contextmanager
def mounted_tmpfs(directory: pathlib.Path, size: str = '1m'):
    """
    Mount a tmpfs of ``size`` at ``directory`` (made if missing); unmount it on leaving.

    Skips the test where it cannot be done: not root, no mount command, or mounting refused.
    """
    if os.geteuid() != 0:
        pytest.skip(f'mounting a tmpfs needs root; these tests run as uid {os.geteuid()}')
    mount = shutil.which('mount')
    umount = shutil.which('umount')
    if mount is None or umount is None:
        pytest.skip('the mount and umount commands are not installed')
    directory.mkdir(exist_ok=True)
    done = subprocess.run([mount, '-t', 'tmpfs', '-o', f'size={size},mode=0700', 'tmpfs',
                           str(directory)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f'mount -t tmpfs failed (no permission to mount here?): '
                    f'{done.stderr.strip()}')
    try:
        yield directory
    finally:
        if subprocess.run([umount, str(directory)], capture_output=True).returncode != 0:
            subprocess.run([umount, '-l', str(directory)], check=True)


@pytest.fixture
def tiny_disk(tmp_path):
    """Return a 1 MiB tmpfs mounted at ``tmp_path / 'disk'``; unmounted afterwards."""
    with mounted_tmpfs(tmp_path / 'disk') as directory:
        yield directory


def fill(directory) -> 'os.PathLike':
    """Fill the file system of ``directory`` to the last byte; returns the filler file."""
    filler = directory / 'filler'
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            while True:
                try:
                    written = os.write(fd, b'\0' * size)
                except OSError as error:
                    assert error.errno == errno.ENOSPC
                    break
                if written < size:
                    break
    finally:
        os.close(fd)
    assert shutil.disk_usage(directory).free == 0
    return filler
