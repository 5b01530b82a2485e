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
Imports sit at the top of the module, unless ``# lazy:`` says what waiting saves.

Every function-local import in robot_memory/ counts: of the package's own modules, of the
standard library and of third-party libraries alike. One idiom for what must stay lazy
(docs/architecture.md, Lazy imports): a plain import inside the function that needs it, whose
line, the line above, or the first line of its group of imports says ``# lazy: <what, its
cost, whose start it spares>``. It is kept only for start-up time and memory (``robot-memory
--help`` and ``show``, recall and forget, MCP's initialize, memory_node without a dream:
test/ros/test_cli_imports.py, test/ros/test_node_footprint.py); a module the importers load
anyway, or one under 5 ms and 1 MB, goes to the top. The import-linter contract sees these
imports too, so no module names another by a string (``importlib.import_module``) to hide an
edge from it.
"""

import ast
import pathlib

import robot_memory

PACKAGE = pathlib.Path(robot_memory.__file__).parent
GENERATED = ('msg', 'srv')  # rosidl's, in the install tree
# The one module that imports by name: the message class of a topic's type, chosen at run time.
BY_NAME = {'robot_memory/ros/convert.py'}


def _lazy(line: str) -> bool:
    return 'lazy:' in line.partition('#')[2]


def uncommented(path: pathlib.Path) -> list:
    """Return the line numbers of the uncommented function-local imports (of any module)."""
    text = path.read_text(encoding='utf-8')
    lines = text.split('\n')
    found = []
    for function in ast.walk(ast.parse(text)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = [node for node in ast.walk(function)
                if isinstance(node, (ast.Import, ast.ImportFrom))]
        for node in body:
            row = node.lineno
            while row > 1 and not _lazy(lines[row - 1]) and \
                    lines[row - 2].lstrip().startswith(('from ', 'import ')):
                row -= 1  # the first line of its group of imports
            if _lazy(lines[row - 1]) or (lines[row - 2].lstrip().startswith('#')
                                         and _lazy(lines[row - 2])):
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


def test_every_function_local_import_says_what_it_saves():
    found = _counts()
    assert not found, ('move these imports to the top of the module (a module its importers '
                       'load anyway, or one under 5 ms and 1 MB), or say in a "# lazy: <cost>" '
                       'comment what their start-up saves (measured: docs/architecture.md, '
                       f'Lazy imports): {found}')


def test_no_module_imports_another_by_a_string():
    """A module named in a string is an edge the layers check cannot see."""
    found = []
    for path in sorted(PACKAGE.rglob('*.py')):
        name = path.relative_to(PACKAGE.parent).as_posix()
        if path.relative_to(PACKAGE).parts[0] in GENERATED or name in BY_NAME:
            continue
        text = path.read_text(encoding='utf-8')
        if 'import_module(' in text or '__import__(' in text:
            found.append(name)
    assert not found, f'import these modules with an import statement instead: {found}'


def test_the_check_finds_an_uncommented_one(tmp_path):
    """The check itself can fail: an import inside a function without its cost is found."""
    module = tmp_path / 'sample.py'
    module.write_text('import json\n\n\n'
                      'def run():\n    import os\n    from robot_memory import errors\n'
                      '    from robot_memory.common import cdr  # lazy: 5 ms of the node\n'
                      '    from robot_memory.common import fileio\n'
                      '    return errors, cdr, fileio, os, json\n\n\n'
                      'def other():\n'
                      '    from robot_memory import locations  # start-up, but no cost\n'
                      '    # lazy: 9 ms of --help\n'
                      '    from robot_memory import settings\n'
                      '    return locations, settings\n\n\n'
                      'def third():\n'
                      '    import numpy  # numpy, but no cost\n'
                      '    import numpy.linalg  # lazy: 120 ms and 13 MB of recall\n'
                      '    from cryptography import fernet\n'
                      '    return numpy, fernet\n', encoding='utf-8')
    # The standard library's os, a third-party numpy and robot_memory's own are all found.
    assert uncommented(module) == [5, 6, 13, 20]
