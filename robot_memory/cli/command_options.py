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
What every ``robot-memory`` command resolves from its options, in one place.

The memory file's location alone (``MemoryLocation``), the database (``--db``, else the
memory file's own), the validated settings of ``--config`` (read once per command), the
typed memory's encryption at rest and the check that a named file's directory exists.
``cli/main.py`` and each command module (substrate, proposals, serve, blackbox, fleet,
replay) import them from here.
"""

import pathlib
from typing import TYPE_CHECKING
from typing import Union

from robot_memory import locations
from robot_memory.locations import default_db_path
from robot_memory.locations import resolve_path

if TYPE_CHECKING:
    from robot_memory.evidence.rules import Rules


class MemoryLocation:
    """The memory file's path alone, which is all these commands need of it."""

    def __init__(self, path=None):
        self.path = resolve_path(path)


def rules(args) -> 'Rules':
    """Return the observation rules: ``--rules``, else the built-in ones."""
    # lazy: the rules and pydantic, 275 ms and 18 MB of robot-memory --help
    from robot_memory.evidence.rules import Rules
    return Rules.load(args.rules) if args.rules else Rules.default()


def db_path(args, memory) -> pathlib.Path:
    """Return the database: ``--db``, else the memory file's own (``default_db_path``)."""
    db = getattr(args, 'db', None)
    return pathlib.Path(db).expanduser() if db else default_db_path(memory.path)


def encryption(args, db) -> dict:
    """
    ``encrypt_from`` and ``key_file`` for the Substrate, from ``--config`` (else defaults).

    The node's parameters ``substrate_encrypt_from`` and ``substrate_key_file``; an empty key
    file means beside ``federation.private_key_path`` when that is set, else beside the
    database (:func:`robot_memory.substrate.crypto.default_key_path`).
    """
    # lazy: cryptography's names, 11 ms and 4 MB of --help
    from robot_memory.substrate.crypto import default_key_path
    encrypt_from, federation_key = None, None
    key_file: Union[str, pathlib.Path] = ''
    if getattr(args, 'config', None):
        configured = settings(args)
        encrypt_from = configured.node.substrate_encrypt_from or None
        key_file = configured.node.substrate_key_file
        federation_key = configured.federation.private_key_path
    key_file = key_file or default_key_path(db, federation_key)
    return {'encrypt_from': encrypt_from, 'key_file': pathlib.Path(key_file).expanduser()}


def settings(args):
    """
    Return the validated settings of ``--config``, read as memory_node reads its parameters.

    Read once per command (the encryption, the proposals and the lifecycle settings all
    come from it).
    """
    cached = getattr(args, '_settings', None)
    if cached is None:
        # lazy: the settings and pydantic, 366 ms and 19 MB of --help
        from robot_memory.settings_file import settings_from_file
        cached = args._settings = settings_from_file(args.config)
    return cached


def proposal_settings(args):
    """
    Return the ``proposals.*`` settings of ``--config``; None without it (every source applies).

    Nothing is imported without ``--config``: ``mcp`` must answer ``initialize`` without
    pydantic or the store.
    """
    if not getattr(args, 'config', None):
        return None
    return settings(args).proposals


def check_directories(args, memory) -> None:
    """
    Refuse a memory file or database a person named in a directory that does not exist.

    A typo would otherwise build directories (as root, perhaps) and keep evidence in a
    memory nobody reads. Only the state directory (``~/.opencastor`` or
    ``$CASTOR_OPENCASTOR_DIR``) is made when missing.
    """
    if getattr(args, 'file', None):
        named = [(memory.path, '--file')]
    elif memory.path == locations.state_dir() / locations.MEMORY_FILENAME:
        named = []
    else:
        named = [(memory.path, locations.default_source())]
    named += [(db_path(args, memory), '--db')] if getattr(args, 'db', None) else []
    for chosen, option in named:
        if not chosen.parent.is_dir():
            raise ValueError(f'{chosen.parent} does not exist, so {chosen.name} cannot be '
                             f'used; check {option}, or create the directory first')
