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
Imports of the package's own modules sit at the top, unless a comment says what waiting saves.

A function-local ``import robot_memory...`` is kept only for start-up time (``robot-memory
--help`` and ``show``, memory_node without a dream: test/ros/test_cli_imports.py,
test/ros/test_node_footprint.py), and says so in a comment on its line, on the line above,
or on the first line of its group of imports. The modules that still hold uncommented ones
are listed with their count: the count may only fall (lower it here when it does).
"""

import ast
import pathlib

import robot_memory

PACKAGE = pathlib.Path(robot_memory.__file__).parent
GENERATED = ('msg', 'srv')  # rosidl's, in the install tree

# Uncommented function-local imports of robot_memory per module when this test was written
# (after the merges of issues 36-39); each may only go down.
KNOWN = {
}


def uncommented(path: pathlib.Path) -> list:
    """Return the line numbers of the uncommented function-local imports of robot_memory."""
    text = path.read_text(encoding='utf-8')
    lines = text.split('\n')
    found = []
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = [node for node in ast.walk(function)
                if isinstance(node, (ast.Import, ast.ImportFrom))]
        for node in body:
            names = [node.module or ''] if isinstance(node, ast.ImportFrom) else \
                [alias.name for alias in node.names]
            if not any(name.startswith('robot_memory') for name in names):
                continue
            row = node.lineno
            while row > 1 and '#' not in lines[row - 1] and \
                    lines[row - 2].lstrip().startswith(('from ', 'import ')):
                row -= 1  # the first line of its group of imports
            if '#' in lines[row - 1] or lines[row - 2].lstrip().startswith('#'):
                continue
            found.append(node.lineno)
    return sorted(set(found))


def _counts() -> dict:
    counts = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        if path.relative_to(PACKAGE).parts[0] in GENERATED:
            continue
        rows = uncommented(path)
        if rows:
            counts[path.relative_to(PACKAGE.parent).as_posix()] = rows
    return counts


def test_no_module_gains_an_uncommented_function_local_import():
    grown = {path: rows for path, rows in _counts().items() if len(rows) > KNOWN.get(path, 0)}
    assert not grown, ('move these imports of robot_memory to the top of the module, or say in '
                       f'a comment what their start-up saves: {grown}')


def test_the_list_of_known_ones_only_shrinks():
    counts = {path: len(rows) for path, rows in _counts().items()}
    stale = {path: (known, counts.get(path, 0)) for path, known in KNOWN.items()
             if counts.get(path, 0) < known}
    assert not stale, f'fewer uncommented local imports now (known, now): lower KNOWN: {stale}'


def test_the_check_finds_an_uncommented_one(tmp_path):
    """The check itself can fail: an uncommented import inside a function is found."""
    module = tmp_path / 'sample.py'
    module.write_text('def run():\n    import os\n    from robot_memory import errors\n'
                      '    from robot_memory.common import cdr  # start-up: the node never\n'
                      '    from robot_memory.common import fileio\n'
                      '    return errors, cdr, fileio, os\n', encoding='utf-8')
    assert uncommented(module) == [3]
