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


"""The shape of the ROS edge, read from the source: a composed node, public rclpy only."""

import ast

import pytest

from support.paths import REPO

PACKAGE = REPO / 'robot_memory'


def _imports(path) -> set:
    """Return every module name ``path`` imports (``from a import b`` gives ``a`` and ``a.b``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f'{node.module}.{alias.name}' for alias in node.names)
    return names


def _sources():
    return sorted([*PACKAGE.rglob('*.py'), *(REPO / 'bench').glob('*.py'),
                   *(REPO / 'test').rglob('*.py')])


@pytest.mark.parametrize('path', _sources(), ids=lambda path: str(path.relative_to(REPO)))
def test_no_private_rclpy_module_is_imported(path):
    private = {name for name in _imports(path)
               if name.startswith('rclpy.') and any(part.startswith('_')
                                                    for part in name.split('.')[1:])}
    assert not private, f'{path.name} imports {sorted(private)}: use the public rclpy API'


@pytest.mark.parametrize('module', ['dream/schedule', 'federation/peer_context'])
def test_the_scheduling_and_federation_rules_never_import_rclpy(module):
    names = _imports(PACKAGE / f'{module}.py')
    assert not {name for name in names if name.split('.')[0] in ('rclpy', 'rcl_interfaces')}


def test_the_node_holds_its_services_rather_than_inheriting_them():
    tree = ast.parse((PACKAGE / 'ros' / 'node.py').read_text(encoding='utf-8'))
    node_class = next(item for item in tree.body
                      if isinstance(item, ast.ClassDef) and item.name == 'MemoryNode')
    # EvidenceIntake is the node's own intake of evidence (its handlers and counts), moved out
    # of node.py to keep it to one responsibility; the services are held, never inherited.
    assert [ast.unparse(base) for base in node_class.bases] == ['EvidenceIntake', 'Node']
    for module in ('peers', 'typed_memory', 'proposal_services'):
        tree = ast.parse((PACKAGE / 'ros' / f'{module}.py').read_text(encoding='utf-8'))
        classes = [item for item in tree.body if isinstance(item, ast.ClassDef)]
        assert classes and all(not item.bases for item in classes), module
        source = ast.unparse(tree)
        for host_attribute in ('self.settings', 'self.clock_', 'self.cache', 'self.worker',
                               'self.startup_error', 'self.get_logger', 'self.create_'):
            assert host_attribute not in source, (module, host_attribute)
