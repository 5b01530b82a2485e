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
Split, don't squeeze: no module over 700 lines, no function over 80, but the named exceptions.

The exceptions are the rows of the table in docs/architecture.md's section "Size limits",
each with why it stays: a module by its path (``robot_memory/x/y.py``), a function by its
path and qualified name (``robot_memory/x/y.py::Class.method``). A row that no longer
exceeds its limit fails too, so the table cannot go stale.
"""

import ast
import re

import pytest

from support.paths import REPO

PACKAGE = REPO / 'robot_memory'
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
SECTION = '\n## Size limits\n'


def named_exceptions() -> dict:
    """Return ``{name: why}`` of the exceptions table in docs/architecture.md."""
    text = (REPO / 'docs' / 'architecture.md').read_text(encoding='utf-8')
    assert SECTION in text, 'docs/architecture.md has no "## Size limits" section'
    section = text.split(SECTION, 1)[1].split('\n## ', 1)[0]
    found = {}
    for line in section.splitlines():
        match = re.match(r'\| `(robot_memory/[^`]+)` \| ([^|]+) \| (.+) \|$', line)
        if match:
            found[match.group(1)] = match.group(3).strip()
    return found


def _functions(tree: ast.AST, prefix: str = ''):
    """Yield (qualified name, lines) of every function in ``tree``, nested ones too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + '.')
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + '.')
        else:
            yield from _functions(node, prefix)


def measured() -> dict:
    """Return ``{name: lines}`` of every module and function over its limit."""
    over = {}
    for path in sorted(PACKAGE.rglob('*.py')):
        name = path.relative_to(REPO).as_posix()
        text = path.read_text(encoding='utf-8')
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            over[name] = lines
        for function, length in _functions(ast.parse(text)):
            if length > MAX_FUNCTION_LINES:
                over[f'{name}::{function}'] = length
    return over


@pytest.mark.linter
def test_no_module_or_function_is_over_its_limit_but_the_named_exceptions():
    """Every module at most 700 lines, every function at most 80, or named and explained."""
    named = named_exceptions()
    unnamed = {name: lines for name, lines in measured().items() if name not in named}
    assert not unnamed, (
        'over the limit (700 lines a module, 80 a function); split it by responsibility, or '
        'name it with the reason in the table of "## Size limits" in docs/architecture.md: '
        + ', '.join(f'{name} ({lines} lines)' for name, lines in unnamed.items()))


@pytest.mark.linter
def test_every_named_exception_still_exceeds_its_limit_and_says_why():
    """A row of the table whose module or function is gone or back under the limit fails."""
    named = named_exceptions()
    assert named, 'the "## Size limits" table of docs/architecture.md lists nothing'
    over = measured()
    stale = sorted(name for name in named if name not in over)
    assert not stale, ('no longer over its limit (or gone): remove its row from "## Size '
                       'limits" in docs/architecture.md: ' + ', '.join(stale))
    unexplained = sorted(name for name, why in named.items() if len(why) < 20)
    assert not unexplained, 'say why each exception stays: ' + ', '.join(unexplained)


def test_the_measure_counts_nested_functions_and_methods_by_qualified_name():
    """Guard for the check above: it sees a long method inside a class, and a nested one."""
    body = '\n'.join(f'        x{n} = {n}' for n in range(85))
    tree = ast.parse(f'class A:\n    def long(self):\n{body}\n        def inner():\n'
                     '            pass\n')
    found = dict(_functions(tree))
    assert found['A.long'] == 88 and found['A.long.inner'] == 2
