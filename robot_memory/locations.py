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
Where the memory file is, resolved as OpenCastor's runtime resolves it, so both read one file.

``--file``, else :func:`default_memory_file`: ``$CASTOR_ROBOT_MEMORY_FILE``; else the state
directory's ``robot-memory.md`` if it exists (``$CASTOR_OPENCASTOR_DIR``, else
``~/.opencastor``); else ``$ROBOT_HOME/robot-memory.md``; else the state directory's file.
Also where a symlinked file really is, and where its database lies. A module of its own so
that a command needing only paths (the typed memory's learn, recall and forget, the MCP
server) imports neither the file's reader and writer nor the database library.
"""

import os
import pathlib

from robot_memory.errors import MemoryFileError

MEMORY_FILENAME = 'robot-memory.md'
DEFAULT_STATE_DIR = pathlib.Path('~/.opencastor')
DEFAULT_PATH = DEFAULT_STATE_DIR / MEMORY_FILENAME  # with no variable set and no ROBOT_HOME
ENV_VAR = 'CASTOR_ROBOT_MEMORY_FILE'
STATE_DIR_VAR = 'CASTOR_OPENCASTOR_DIR'
ROBOT_HOME_VAR = 'ROBOT_HOME'
DB_SUFFIX = '.db'
MEMORY_SUFFIX = '.md'


def state_dir(environ=None) -> pathlib.Path:
    """Return OpenCastor's state directory: ``$CASTOR_OPENCASTOR_DIR``, else ~/.opencastor."""
    environ = os.environ if environ is None else environ
    return pathlib.Path(environ.get(STATE_DIR_VAR) or DEFAULT_STATE_DIR).expanduser()


def default_memory_file(environ=None) -> pathlib.Path:
    """
    Return the memory file when none is named, in OpenCastor's order (``memory_paths.py``).

    1. ``$CASTOR_ROBOT_MEMORY_FILE``; 2. the state directory's ``robot-memory.md`` if it
    exists (an existing memory is never stranded by a newer variable); 3.
    ``$ROBOT_HOME/robot-memory.md``; 4. the state directory's file. Read at each call, so a
    variable set after import counts.
    """
    environ = os.environ if environ is None else environ
    explicit = environ.get(ENV_VAR)
    if explicit:
        return pathlib.Path(explicit).expanduser()
    legacy = state_dir(environ) / MEMORY_FILENAME
    if os.path.lexists(legacy):
        return legacy
    robot_home = environ.get(ROBOT_HOME_VAR)
    if robot_home:
        return pathlib.Path(robot_home).expanduser() / MEMORY_FILENAME
    return legacy


def default_source(environ=None) -> str:
    """Return what chose :func:`default_memory_file`: the variable's name, or the default."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV_VAR):
        return f'${ENV_VAR}'
    if not os.path.lexists(state_dir(environ) / MEMORY_FILENAME) and environ.get(ROBOT_HOME_VAR):
        return f'${ROBOT_HOME_VAR}'
    return f'${STATE_DIR_VAR}' if environ.get(STATE_DIR_VAR) else 'the default'


def resolve_path(path=None) -> pathlib.Path:
    """Return the memory file: ``path``, else :func:`default_memory_file`."""
    return pathlib.Path(path).expanduser() if path else default_memory_file()


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
