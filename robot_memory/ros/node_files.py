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
The files and folders memory_node touches, and what is wrong with each: plain code, no rclpy.

The node's ``robot_memory: files`` status runs :func:`check_all` every report. Each check
only looks (``stat``, ``access``, ``statvfs``): it never opens, creates or writes, and it
never raises for what the file system says, so a folder made unreadable, a file deleted or
replaced by a folder, or a full disk is a line of the report, not a crash. Permissions are
checked with the process's effective ids, so a node run without root's override
(CAP_DAC_OVERRIDE) is told what it really may do.
"""

import dataclasses
import errno
import os
import pathlib
import stat
from typing import Optional

MIN_FREE_BYTES = 64 * 1024  # less free space than this where the node writes: the disk is full
_EFFECTIVE = os.access in os.supports_effective_ids


@dataclasses.dataclass(frozen=True)
class Place:
    """One file or folder of the node: what it is, where, and what the node does with it."""

    what: str  # 'memory file', 'database', 'archive', 'summaries', 'private key', ...
    path: pathlib.Path
    folder: bool = False  # a folder the node writes files into, not a file
    write: bool = True  # the node writes it (else it only reads it)
    required: bool = False  # must exist now (else the node's first write creates it)
    if_missing: str = 'put it back, or set the parameter that names it to where it is now'


def _may(path: pathlib.Path, mode: int) -> bool:
    try:
        return os.access(path, mode, effective_ids=_EFFECTIVE)
    except OSError:  # pragma: no cover - access reports through its result
        return False


def _reason(error: OSError) -> str:
    return error.strerror or errno.errorcode.get(error.errno or 0, str(error))


def _folder_problem(folder: pathlib.Path, write: bool) -> Optional[str]:
    """Return what stops the node finding (with ``write``: making) files in ``folder``."""
    try:
        if not stat.S_ISDIR(folder.stat().st_mode):
            return f'its folder {folder} is not a folder: move it aside'
    except FileNotFoundError:
        return (f'its folder {folder} does not exist (deleted, moved or not mounted): put it '
                'back or mount it')
    except OSError as error:
        return f'its folder {folder} cannot be looked at ({_reason(error)}): check its path'
    if not _may(folder, os.X_OK):
        return (f"its folder {folder} cannot be searched (permissions): give the node's user "
                'read and search (r-x) permission on it')
    if write and not _may(folder, os.W_OK | os.X_OK):
        return (f"its folder {folder} is read-only: give the node's user write permission on "
                'it, or mount its disk read-write')
    return None


def _full(folder: pathlib.Path, min_free: int) -> Optional[str]:
    try:
        space = os.statvfs(folder)
    except OSError:
        return None  # said by the folder's own check
    free = space.f_bavail * space.f_frsize
    if free >= min_free:
        return None
    return f'{folder}: the disk is full ({free} bytes free): free space on it'


def check(place: Place, min_free: int = MIN_FREE_BYTES) -> Optional[str]:
    """Return what is wrong with ``place`` (one phrase, with what to do), or None."""
    folder = place.path if place.folder else place.path.parent
    if place.folder and not place.required:
        try:
            if not place.path.exists():
                folder = place.path.parent  # made by the first write: its parent must take it
        except OSError:
            pass  # said below
    problem = _folder_problem(folder, place.write)
    if problem is None and not place.folder:
        problem = _file_problem(place)
    if problem is None and place.write:
        problem = _full(folder, min_free)
    return problem


def _file_problem(place: Place) -> Optional[str]:
    path = place.path
    try:
        if path.is_dir():
            return f'{path} is a folder, not a file: move it aside'
        present = path.exists()
    except OSError as error:
        return f'{path} cannot be looked at ({_reason(error)}): check its path'
    if not present:
        return f'{path} is missing (deleted or moved): {place.if_missing}' if place.required \
            else None
    if not _may(path, os.R_OK):
        return f"{path} cannot be read (permissions): give the node's user read permission"
    if place.write and not _may(path, os.W_OK):
        return f"{path} is read-only: give the node's user write permission on it"
    return None


def check_all(places, min_free: int = MIN_FREE_BYTES) -> dict:
    """Return {what: problem or 'ok'} for each place, in order."""
    return {place.what: check(place, min_free) or 'ok' for place in places}


def size_of(path: pathlib.Path) -> int:
    """Return the size of ``path`` in bytes; 0 when it is missing or cannot be looked at."""
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0
