"""The typed, revisable, auditable memory substrate (pure core: no rclpy, clock passed in).

Use :class:`Substrate` (a context manager) for ``learn`` / ``recall`` / ``forget``,
revision (``supersede``, ``fork``, ``contest``, ``retract``, ``merge``, ``affirm``),
``pin`` / ``unpin``, ``feedback``, ``record_outcome``, ``select`` and ``metrics``. Record
shapes and their JSON Schemas are in :mod:`robot_memory.substrate.models`.
"""

from robot_memory.evidence import default_db_path
from robot_memory.substrate.embedding import default_embedder
from robot_memory.substrate.embedding import describe_embedder
from robot_memory.substrate.embedding import Embedder
from robot_memory.substrate.embedding import HashingEmbedder
from robot_memory.substrate.embedding import SemanticEmbedder
from robot_memory.substrate.filters import SubstrateError
from robot_memory.substrate.models import json_schema
from robot_memory.substrate.models import MEMORY_TYPES
from robot_memory.substrate.models import MemoryRecord
from robot_memory.substrate.models import SENSITIVITIES
from robot_memory.substrate.store import effective_salience
from robot_memory.substrate.store import Substrate

__all__ = ['Embedder', 'HashingEmbedder', 'MEMORY_TYPES', 'MemoryRecord', 'SENSITIVITIES',
           'SemanticEmbedder', 'Substrate', 'SubstrateError', 'default_db_path',
           'default_embedder', 'describe_embedder', 'effective_salience', 'json_schema']
