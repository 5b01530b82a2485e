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

"""CHANGELOG.md stays true: every moved import path it names is gone, its new home imports."""

import importlib
import inspect
import re

import pytest

from support.paths import REPO

# A line of the list of moved modules: - `robot_memory.old` → `robot_memory.new`
MOVE = re.compile(r'^\s*- `(robot_memory[\w.]*)` → `(robot_memory[\w.]*)`', re.MULTILINE)
MOVES = MOVE.findall((REPO / 'CHANGELOG.md').read_text(encoding='utf-8'))


def test_the_changelog_names_every_module_the_re_layout_moved():
    """The 31 modules that left the package root or ros/ are listed, each once."""
    old = [path for path, _ in MOVES]
    assert len(old) == len(set(old)), 'a module is listed twice'
    assert len(old) >= 31, f'only {len(old)} moved modules are listed'


def test_the_readme_links_the_changelog():
    """A user finds the changelog from the README."""
    assert '(CHANGELOG.md)' in (REPO / 'README.md').read_text(encoding='utf-8')


@pytest.mark.parametrize(('old', 'new'), MOVES)
def test_an_old_path_is_gone_and_its_new_home_imports(old, new):
    """The new path imports; the old one does not, or is a folder that exports none of it."""
    module = importlib.import_module(new)
    defined = [name for name, value in vars(module).items()
               if not name.startswith('_') and (inspect.isfunction(value) or inspect.isclass(value))
               and value.__module__ == new]
    assert defined, f'{new} defines no public function or class'
    try:
        former = importlib.import_module(old)
    except ModuleNotFoundError:
        return
    assert hasattr(former, '__path__'), f'{old} still imports as a module: say so, not "moved"'
    shared = [name for name in defined if vars(former).get(name) is getattr(module, name)]
    assert not shared, f'{old} still exports {shared} of {new}'
