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

"""Every refusal derives from RobotMemoryError and keeps the base callers catch it by."""

import ast
import importlib

import pytest

from robot_memory.errors import RobotMemoryError
from support.paths import REPO

BUILTIN = {'Exception', 'ValueError', 'RuntimeError', 'OSError', 'KeyError', 'TypeError'}
# Not refusals, never shown to a user: the worker thread's own stop signal, and the line
# reader's "not in my subset" that hands a text to libyaml.
NOT_REFUSALS = {'WorkerStopped', 'NotSimple', 'Interrupted'}  # control flow, not refusals


def exception_classes() -> dict:
    """Map every public exception class of the package to (module path, base names)."""
    classes = {}
    for path in sorted((REPO / 'robot_memory').rglob('*.py')):
        tree = ast.parse(path.read_text(encoding='utf-8'))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = [base.id if isinstance(base, ast.Name) else ast.unparse(base)
                         for base in node.bases]
                classes[node.name] = (path, bases)
    errors = {}

    def is_exception(name, seen=()):
        if name in BUILTIN:
            return True
        if name not in classes or name in seen:
            return False
        return any(is_exception(base, seen + (name,)) for base in classes[name][1])
    for name, (path, bases) in classes.items():
        if not name.startswith('_') and name not in NOT_REFUSALS and is_exception(name):
            errors[name] = (path, bases)
    return errors


def reaches(classes: dict, name: str, target: str) -> bool:
    """Whether ``name``'s bases, followed by name through the package, reach ``target``."""
    if name == target:
        return True
    return any(reaches(classes, base, target) for base in classes.get(name, ((), ()))[1])


def test_every_refusal_derives_from_the_base_class():
    """Read from the sources, the ROS edge's too: no public error class stands alone."""
    errors = exception_classes()
    assert {'MemoryFileError', 'EvidenceError', 'SubstrateError', 'FederationError',
            'ProposalError', 'UndoError', 'RulesError', 'CdrError'} <= set(errors)
    alone = sorted(name for name in errors if name != 'RobotMemoryError'
                   and not reaches(errors, name, 'RobotMemoryError'))
    assert not alone, f'error classes outside RobotMemoryError: {alone}'


@pytest.mark.parametrize('module, name, kept', [
    ('robot_memory.errors', 'MemoryFileError', Exception),
    ('robot_memory.errors', 'MemoryLockTimeout', Exception),
    ('robot_memory.errors', 'SettingsConflict', ValueError),
    ('robot_memory.evidence.evidence_store', 'EvidenceError', ValueError),
    ('robot_memory.evidence.evidence_store', 'EvidenceDamaged', ValueError),
    ('robot_memory.evidence.rules', 'RulesError', ValueError),
    ('robot_memory.evidence.observations', 'ObservationError', ValueError),
    ('robot_memory.evidence.proposal_queue', 'ProposalError', ValueError),
    ('robot_memory.review.proposing', 'ProposalError', ValueError),
    ('robot_memory.review.undo', 'UndoError', ValueError),
    ('robot_memory.substrate.errors', 'SubstrateError', ValueError),
    ('robot_memory.substrate.errors', 'KeyUnavailable', ValueError),
    ('robot_memory.federation.peer_context', 'FederationError', ValueError),
    ('robot_memory.federation.peer_context', 'PeerRejected', ValueError),
    ('robot_memory.mcp.mcp_server', 'ToolError', ValueError),
])
def test_a_refusal_is_caught_by_the_base_and_by_its_old_base(module, name, kept):
    """``except RobotMemoryError`` and the callers' old ``except ValueError`` both catch it."""
    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, RobotMemoryError) and issubclass(error, kept)
