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
The Python packages robot_memory needs at run time, checked before anything imports them.

A colcon workspace installs none of them: on a robot they come from the distribution
through rosdep (``package.xml``), and where the distribution's are missing or too old
(Ubuntu 24.04 and Debian 12 ship pydantic 1.10, 2.5 is needed) from pip.
An executable started with a python3 that lacks one would otherwise die deep inside an
import with a traceback; :func:`exit_if_unmet`, called first thing by ``memory_node``
and ``robot-memory``, stops at once with one line naming what is missing or too old and
the command that fixes it.

Cheap on purpose (the CLI starts in well under 100 ms): none of the packages is imported,
and not even ``importlib.metadata`` (its import alone, email and zipfile included, costs
more than the rest of a CLI start). The version is read from the name of the distribution's
``.dist-info`` / ``.egg-info`` entry on ``sys.path``, found as ``importlib.metadata`` finds
it (the first on the path wins); only when that says something is wrong, or a name holds
no version, does ``importlib.metadata`` decide, so its answer alone can stop a program.

``REQUIREMENTS`` is the one home of these facts: a test holds ``setup.cfg``'s
``install_requires`` and ``package.xml``'s rosdep keys to it.
"""

import os
import sys
import sysconfig
import types


class Requirement:
    """A distribution robot_memory needs, the oldest release that works, its rosdep key."""

    __slots__ = ('name', 'minimum', 'rosdep_key')  # a plain class: namedtuple costs a compile

    def __init__(self, name: str, minimum: str, rosdep_key: str):
        self.name, self.minimum, self.rosdep_key = name, minimum, rosdep_key

    def __repr__(self) -> str:
        return f'Requirement({self.name!r}, {self.minimum!r}, {self.rosdep_key!r})'


REQUIREMENTS = (
    Requirement('pydantic', '2.5', 'python3-pydantic'),
    Requirement('PyYAML', '6.0', 'python3-yaml'),
    Requirement('numpy', '1.24', 'python3-numpy'),
    # Ed25519 keys loaded without a backend argument: cryptography 3.1 and later; 38 is
    # Debian 12's, the oldest a supported robot has, and the test suite passes with it.
    Requirement('cryptography', '38', 'python3-cryptography'),
)
EXIT_UNMET = 2  # the exit code of an executable that cannot start (as memory_node's)


def release(version: str) -> tuple:
    """Return the numeric release of a version: '2.11.0rc1' -> (2, 11, 0), '1.10' -> (1, 10)."""
    parts = []
    for part in version.split('.'):
        digits = ''
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) < len(part):
            break
    return tuple(parts)


def _key(name: str) -> str:
    return name.lower().replace('_', '-').replace('.', '-')


def metadata_version(name: str):
    """Return the installed version of distribution ``name`` (None: not installed)."""
    # lazy: importlib.metadata, 15-18 ms and 1.8 MB of --help and memory_node's start
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def listed_versions(path) -> dict:
    """{name: version} as ``<name>-<version>.dist-info`` / egg-info entries in ``path`` say."""
    found: dict = {}
    for entry in path:
        try:
            items = os.listdir(entry or '.')
        except OSError:  # a zip file, a directory that went away
            continue
        for item in items:
            if item.endswith(('.dist-info', '.egg-info')):
                name, _, rest = item.rpartition('.')[0].partition('-')
                found.setdefault(_key(name), rest.split('-')[0])  # <version>[-py3.X]
    return found


def unmet(requirements=REQUIREMENTS, version=None) -> list:
    """
    Return (requirement, installed version or None) for each requirement missing or too old.

    ``version(name)`` gives the installed version or None; by default it is read from
    the names on ``sys.path`` (importlib.metadata where a name holds no version).
    """
    if version is None:
        versions = listed_versions(sys.path)

        def version(name):
            listed = versions.get(_key(name))
            return listed or (None if listed is None else metadata_version(name))

    found = []
    for requirement in requirements:
        installed = version(requirement.name)
        if installed is None or release(installed) < release(requirement.minimum):
            found.append((requirement, installed))
    return found


def pip_command(requirements, executable: str = sys.executable,
                in_venv: bool = sys.prefix != sys.base_prefix,
                externally_managed=None) -> str:
    """Return the pip command line that installs ``requirements`` for ``executable``."""
    specs = ' '.join(f"'{item.name}>={item.minimum}'" for item in requirements)
    if in_venv:
        return f'{executable} -m pip install {specs}'
    if externally_managed is None:
        externally_managed = os.path.exists(
            os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED'))
    # Debian/Ubuntu's python3 refuses pip outside a venv (PEP 668) unless told; --user
    # keeps the newer release to this user and leaves the apt-installed one in place.
    flags = '--user --break-system-packages' if externally_managed else '--user'
    return f'{executable} -m pip install {flags} {specs}'


def unmet_message(program: str, problems, command: str) -> str:
    """Return the one line an executable prints when it cannot start for want of ``problems``."""
    what = '; '.join(
        f'{requirement.name} is not installed' if installed is None
        else f'{requirement.name} {installed} is too old (need >= {requirement.minimum})'
        for requirement, installed in problems)
    return f'[robot_memory] {program} cannot start: {what}. Fix: {command}'


def exit_if_unmet(program: str) -> None:
    """Exit with one line on stderr if a required package is missing or too old."""
    problems = unmet()
    if problems:  # confirmed by importlib.metadata before it stops anything
        problems = unmet([requirement for requirement, _ in problems], metadata_version)
    if problems:
        command = pip_command([requirement for requirement, _ in problems])
        print(unmet_message(program, problems, command), file=sys.stderr, flush=True)
        sys.exit(EXIT_UNMET)


# The values by which PYDANTIC_DISABLE_PLUGINS turns every plugin off (pydantic.plugin._loader).
ALL_PLUGINS_OFF = ('__all__', '1', 'true')


def skip_pydantic_plugins(environ=None) -> bool:
    """
    Tell pydantic not to look for plugins, unless ``PYDANTIC_DISABLE_PLUGINS`` is set.

    robot_memory uses no pydantic plugin, and pydantic looks for them at its first model by
    reading the entry points of every distribution on ``sys.path``: on a ROS install, with
    hundreds of them, that costs tens of milliseconds of every command and about 1 MB of the
    node. ``memory_node`` and ``robot-memory`` call this first thing; an operator who wants a
    plugin (e.g. to trace validation) sets ``PYDANTIC_DISABLE_PLUGINS=`` (empty) and it stands.
    True when this set the variable. Set to turn every plugin off (by this function in a
    parent process, say ``robot-memory`` starting the node, or by the operator), the stand-in
    loader serves too.
    """
    environ = os.environ if environ is None else environ
    set_here = 'PYDANTIC_DISABLE_PLUGINS' not in environ
    if set_here:
        environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'
    if environ is os.environ and environ['PYDANTIC_DISABLE_PLUGINS'] in ALL_PLUGINS_OFF:
        _no_plugin_loader()
    return set_here


def _no_plugin_loader() -> None:
    """
    Stand in for ``pydantic.plugin._loader``, whose import brings ``importlib.metadata``.

    Asked for plugins at every model, pydantic imports its loader, and the loader imports
    ``importlib.metadata`` (email, zipfile, csv: 2.5 MB of memory_node, resident for good)
    before it reads ``PYDANTIC_DISABLE_PLUGINS`` and returns no plugin. With the variable at
    one of ALL_PLUGINS_OFF (as :func:`skip_pydantic_plugins` sets it) this stand-in answers
    the same: none.
    """
    name = 'pydantic.plugin._loader'
    if name in sys.modules:
        return
    loader = types.ModuleType(name, 'pydantic plugins disabled (robot_memory.dependencies)')
    setattr(loader, 'get_plugins', lambda: ())
    sys.modules[name] = loader
