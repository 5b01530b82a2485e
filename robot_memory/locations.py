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
Where the memory file is: ``--file``, else ``$CASTOR_ROBOT_MEMORY_FILE``, else ~/.opencastor/.

Also where a symlinked file really is, and where its database lies. A module of its own so
that a command needing only paths (the typed memory's learn, recall and forget, the MCP
server) imports neither the file's reader and writer nor the database library.
"""

import os
import pathlib

from robot_memory.errors import MemoryFileError

DEFAULT_PATH = pathlib.Path('~/.opencastor/robot-memory.md')
ENV_VAR = 'CASTOR_ROBOT_MEMORY_FILE'
DB_SUFFIX = '.db'
MEMORY_SUFFIX = '.md'


def resolve_path(path=None) -> pathlib.Path:
    """Return the memory file: ``path``, else ``$CASTOR_ROBOT_MEMORY_FILE``, else ~/.opencastor/."""
    chosen = path or os.environ.get(ENV_VAR) or DEFAULT_PATH
    return pathlib.Path(chosen).expanduser()


def link_target(path) -> pathlib.Path:
    """
    Return the file that ``path`` names: the end of its chain of symbolic links, else ``path``.

    Writers replace this file (in its own directory) so a symlinked memory file or database
    stays a link. A link that ends nowhere or goes round in a loop is refused with a
    MemoryFileError that says so: writing there would replace the link with a regular file.
    """
    path = pathlib.Path(path).expanduser()
    if not path.is_symlink():
        return path
    try:
        target = pathlib.Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise MemoryFileError(
            f'is a symbolic link to {os.path.realpath(path)}, which does not exist; create that '
            'file (or its directory), point the link at an existing file, or remove the link',
            path) from None
    except OSError as error:
        raise MemoryFileError(f'is a symbolic link that cannot be followed ({error.strerror}); '
                              'fix or remove the link', path) from None
    if not target.is_file():
        raise MemoryFileError(f'is a symbolic link to {target}, which is not a regular file; '
                              'point the link at a file', path)
    return target


def default_db_path(memory_path) -> pathlib.Path:
    """
    Return the database of a memory file: beside it (beside a link's target), named after it.

    ``robot-memory.md`` -> ``robot-memory.db`` (so existing robots keep their evidence),
    ``foo.md`` -> ``foo.db``, ``notes`` -> ``notes.db``, ``x.db`` -> ``x.db.db`` (never the
    memory file itself). Every place that needs the default database calls this.
    """
    path = link_target(memory_path)
    name = path.name
    stem = name[:-len(MEMORY_SUFFIX)] if name.endswith(MEMORY_SUFFIX) and name != MEMORY_SUFFIX \
        else name
    return path.with_name(stem + DB_SUFFIX)
