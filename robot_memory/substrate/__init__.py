"""The typed, revisable, auditable memory substrate (pure core: no rclpy, clock passed in)."""
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

# Use Substrate (a context manager) for ``learn`` (keywords, or a
# LearnRequest) / ``recall`` / ``forget``, revision (``supersede``, ``fork``,
# ``contest``, ``retract``, ``merge``, ``affirm``), ``pin`` / ``unpin``, ``feedback``,
# ``record_outcome``, ``select`` and ``metrics``. Record shapes and their JSON Schemas are
# in robot_memory.substrate.models.
#
# The names below are imported on first use (PEP 562), so importing one light submodule
# (``filters``, ``text``) does not import the store, pydantic or numpy.

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the type checker sees the names and their signatures; Python imports lazily
    from robot_memory.substrate.learning import LearnRequest  # noqa: F401
    from robot_memory.substrate.substrate_store import Substrate  # noqa: F401

_HOMES = {
    'Embedder': 'robot_memory.substrate.embedding',
    'HashingEmbedder': 'robot_memory.substrate.embedding',
    'SemanticEmbedder': 'robot_memory.substrate.embedding',
    'default_embedder': 'robot_memory.substrate.embedding',
    'describe_embedder': 'robot_memory.substrate.embedding',
    'SubstrateError': 'robot_memory.substrate.errors',
    'json_schema': 'robot_memory.substrate.models',
    'LearnRequest': 'robot_memory.substrate.learning',
    'MEMORY_TYPES': 'robot_memory.substrate.vocabulary',
    'MemoryRecord': 'robot_memory.substrate.models',
    'SENSITIVITIES': 'robot_memory.substrate.vocabulary',
    'default_db_path': 'robot_memory.evidence.evidence_store',
    'effective_salience': 'robot_memory.substrate.salience',
    'Substrate': 'robot_memory.substrate.substrate_store',
}

__all__ = ['Embedder', 'HashingEmbedder', 'LearnRequest', 'MEMORY_TYPES', 'MemoryRecord',
           'SENSITIVITIES', 'SemanticEmbedder', 'Substrate', 'SubstrateError', 'default_db_path',
           'default_embedder', 'describe_embedder', 'effective_salience', 'json_schema']


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
