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

"""flake8 with ament_flake8's rules (setup.cfg [flake8]), as ROS 2 packages lint their Python."""

import ast

from ament_flake8.main import main_with_errors
import pytest

from support.paths import python_files
from support.paths import REPO


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8(tmp_path, monkeypatch):
    """Check every Python file of the repository with flake8 and its ament plugins."""
    # ament_flake8 walks the working directory for folders to exclude: give it an empty one
    # (the checkout holds virtual environments and build trees).
    monkeypatch.chdir(tmp_path)
    rc, errors = main_with_errors(
        argv=['--config', str(REPO / 'setup.cfg')] + [str(path) for path in python_files()])
    assert rc == 0, f'Found {len(errors)} code style errors / warnings:\n' + '\n'.join(errors)


@pytest.mark.linter
def test_one_import_per_line():
    """Check that every import statement imports one name, as ros2/demos writes them."""
    found = []
    for path in python_files():
        tree = ast.parse(path.read_text(encoding='utf-8'), str(path))
        found += [f'{path.relative_to(REPO)}:{node.lineno}' for node in ast.walk(tree)
                  if isinstance(node, (ast.Import, ast.ImportFrom)) and len(node.names) > 1]
    assert not found, 'import one name per line: ' + ', '.join(found)
