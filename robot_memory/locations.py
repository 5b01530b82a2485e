"""Where the memory file is: ``--file``, else ``$CASTOR_ROBOT_MEMORY_FILE``, else ~/.opencastor/.

Also where a symlinked file really is. A module of its own so that a command needing only
paths (the typed memory's learn, recall and forget) does not import the file's reader
and writer.
"""

import os
import pathlib

from robot_memory.errors import MemoryFileError

DEFAULT_PATH = pathlib.Path('~/.opencastor/robot-memory.md')
ENV_VAR = 'CASTOR_ROBOT_MEMORY_FILE'


def resolve_path(path=None) -> pathlib.Path:
    """The memory file: ``path``, else ``$CASTOR_ROBOT_MEMORY_FILE``, else ~/.opencastor/."""
    chosen = path or os.environ.get(ENV_VAR) or DEFAULT_PATH
    return pathlib.Path(chosen).expanduser()


def link_target(path) -> pathlib.Path:
    """The file that ``path`` names: the end of its chain of symbolic links, else ``path``.

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
