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
# The light names are imported here. The others are imported at their first use (PEP 562),
# each by a plain import in _home, so importing one light submodule (``filters``,
# ``vocabulary``) does not import the store, pydantic or numpy, and the layers check sees
# every edge (docs/architecture.md, Lazy imports).

from typing import TYPE_CHECKING

from robot_memory.locations import default_db_path
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.salience import effective_salience
from robot_memory.substrate.vocabulary import MEMORY_TYPES
from robot_memory.substrate.vocabulary import SENSITIVITIES

if TYPE_CHECKING:  # the type checker sees the names and their signatures; Python imports lazily
    from robot_memory.substrate.learning import LearnRequest  # noqa: F401
    from robot_memory.substrate.substrate_store import Substrate  # noqa: F401

_EMBEDDING = frozenset(('Embedder', 'HashingEmbedder', 'SemanticEmbedder', 'default_embedder',
                        'describe_embedder'))

__all__ = ['Embedder', 'HashingEmbedder', 'LearnRequest', 'MEMORY_TYPES', 'MemoryRecord',
           'SENSITIVITIES', 'SemanticEmbedder', 'Substrate', 'SubstrateError', 'default_db_path',
           'default_embedder', 'describe_embedder', 'effective_salience', 'json_schema']


def __getattr__(name: str):
    value = getattr(_home(name), name)
    globals()[name] = value
    return value


def _home(name: str):
    """Return the module that defines ``name``, imported now (AttributeError if none does)."""
    if name in _EMBEDDING:
        from robot_memory.substrate import embedding  # lazy: 13 ms and 4 MB of --help
        return embedding
    if name in ('json_schema', 'MemoryRecord'):
        from robot_memory.substrate import models  # lazy: pydantic, 250 ms and 10 MB of recall
        return models
    if name == 'LearnRequest':
        from robot_memory.substrate import learning  # lazy: 100 ms and 7 MB of --help
        return learning
    if name == 'Substrate':
        from robot_memory.substrate import substrate_store  # lazy: 190 ms and 8 MB of --help
        return substrate_store
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
    return sorted(set(globals()) | set(__all__))
