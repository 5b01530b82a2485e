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
The house keeps its layers: import-linter's contracts (setup.cfg) and no import cycles.

Both read every import statement, function-local ones included, of the package as installed
(with the generated interfaces), and both are shown to fail on a copy given a back-import.
"""

import os
import pathlib
import shutil
import subprocess
import sys

import grimp

import robot_memory
from support.paths import REPO

PACKAGE = pathlib.Path(robot_memory.__file__).parent
# rosidl generates these into the installed package; their __init__ and modules import each
# other by design, and they are not ours to change.
GENERATED = ('robot_memory.msg', 'robot_memory.srv')


def lint_imports(cwd, pythonpath=None) -> subprocess.CompletedProcess:
    """Run import-linter's command on setup.cfg's contracts, robot_memory found as given."""
    env = dict(os.environ)
    if pythonpath is not None:
        env['PYTHONPATH'] = f'{pythonpath}{os.pathsep}{env.get("PYTHONPATH", "")}'
    return subprocess.run(
        [sys.executable, '-c', 'import sys; from importlinter.cli import lint_imports_command; '
                               'sys.exit(lint_imports_command())',
         str(REPO / 'setup.cfg'), '--no-cache'],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def import_cycles(graph) -> list:
    """Return the cycles of a grimp graph: its strongly connected sets of modules, sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == module:
                        break
                if len(members) > 1:
                    cycles.append(sorted(members))
    return sorted(cycles)


def describe(graph, cycle: list) -> str:
    """Name every import inside one cycle, with its line."""
    lines = []
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported in cycle:
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    lines.append(f'  {importer} -> {imported} (l.{detail["line_number"]})')
    return '\n'.join(lines)


def back_imported_copy(tmp_path) -> pathlib.Path:
    """Copy the installed package and give common.timeutil a function-local back-import."""
    copy = tmp_path / 'site' / 'robot_memory'
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns('__pycache__'))
    with open(copy / 'common' / 'timeutil.py', 'a', encoding='utf-8') as handle:
        handle.write('\n\ndef _back():\n    from robot_memory.review import undo\n'
                     '    return undo\n')
    return copy.parent


def test_the_layering_contracts_are_kept(tmp_path):
    """Layers, independent edges, a core without ROS: import-linter keeps every contract."""
    result = lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Contracts: 3 kept, 0 broken.' in result.stdout, result.stdout


def test_a_back_import_breaks_the_layers_contract(tmp_path):
    """A function-local import of review from common, in a copy, is reported as broken."""
    site = back_imported_copy(tmp_path)
    result = lint_imports(tmp_path, pythonpath=site)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'robot_memory.common.timeutil -> robot_memory.review.undo' in result.stdout, \
        result.stdout


def test_the_package_has_no_import_cycles():
    """No module reaches itself through imports, function-local and TYPE_CHECKING ones too."""
    graph = grimp.build_graph('robot_memory', cache_dir=None)
    cycles = [cycle for cycle in import_cycles(graph)
              if not all(module.startswith(GENERATED) for module in cycle)]
    assert any(module.startswith(GENERATED) for module in graph.modules)  # the installed tree
    assert not cycles, 'import cycles:\n' + '\n\n'.join(describe(graph, c) for c in cycles)


def test_a_function_local_back_import_is_found_as_a_cycle(tmp_path):
    """The cycle check sees through a function-local import (here in a copy of the package)."""
    site = back_imported_copy(tmp_path)
    script = ('import sys, grimp, test_layers; '
              "graph = grimp.build_graph('robot_memory', cache_dir=None); "
              'print(test_layers.import_cycles(graph))')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), str(pathlib.Path(__file__).parent), str(REPO / 'test'),
         os.environ.get('PYTHONPATH', '')]))
    result = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "'robot_memory.common.timeutil'" in result.stdout, result.stdout
    assert "'robot_memory.review.undo'" in result.stdout, result.stdout


def test_each_audit_table_has_one_writer():
    """Only evidence/evidence_audit.py inserts into audit and substrate_audit."""
    writers = {}
    for path in sorted((REPO / 'robot_memory').rglob('*.py')):
        text = ' '.join(path.read_text(encoding='utf-8').split())
        for table in ('audit', 'substrate_audit'):
            if f'INSERT INTO {table} ' in text:
                writers.setdefault(table, []).append(path.relative_to(REPO).as_posix())
    assert writers == {'audit': ['robot_memory/evidence/evidence_audit.py'],
                       'substrate_audit': ['robot_memory/evidence/evidence_audit.py']}
