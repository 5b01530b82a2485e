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
Typed memory records of the selective-learning substrate (RFC §4–§15A) as pydantic models.

A :class:`MemoryRecord` carries an id, one of five memory types, a sensitivity class,
confidence, salience with its decay profile (lifecycle), provenance links to evidence,
relations to other records and a payload whose schema depends on the type. The models
export JSON Schemas (``json_schema(name)``) whose required fields and enums follow the
normative appendix §15A; extra fields are extensions the appendix allows (e.g. competence
``performance`` from the second §15A.5, ``status`` of the record as a whole).
"""

import datetime as dt
from typing import Any
from typing import Dict
from typing import List
from typing import Literal
from typing import Optional
from typing import Union

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from robot_memory.substrate.vocabulary import DECAY_CURVES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import DELETION_POLICIES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import FIELD_LIMITS  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MAX_PREDICATE
from robot_memory.substrate.vocabulary import MAX_QUERY  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MAX_REASON  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MAX_RECORD_ID
from robot_memory.substrate.vocabulary import MAX_SCOPE  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MAX_SKILL_NAME
from robot_memory.substrate.vocabulary import MAX_SUBJECT
from robot_memory.substrate.vocabulary import MAX_TAG  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MAX_TAGS  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MAX_TEXT  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import MEMORY_TYPES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import PROVENANCE_KINDS  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import RECORD_STATUSES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import RELATION_PREDICATES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import REVISION_STATUSES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import SENSITIVITIES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import VALIDITY_MODES  # noqa: F401 - re-exported
from robot_memory.substrate.vocabulary import WORKING_STATES  # noqa: F401 - re-exported

MemoryType = Literal['episodic', 'working', 'semantic', 'competence', 'plan_graph']
Sensitivity = Literal['public', 'low', 'medium', 'high', 'hyper']


class _Model(BaseModel):
    """Strict about unknown fields so a typo is an error, not silently dropped data."""

    model_config = ConfigDict(extra='forbid')

    def to_dict(self) -> dict:
        """Plain JSON data (datetimes as ISO-8601 strings, unset optional fields left out)."""
        return self.model_dump(mode='json', exclude_none=True, by_alias=True)


class DecayProfile(_Model):
    """How salience decays: curve, half-life, floor, reinforcement gain (§15A.3, §15A.7)."""

    curve: Literal['exponential', 'linear', 'custom'] = 'exponential'
    half_life_seconds: int = Field(ge=1)
    min_salience: float = Field(0.0, ge=0.0, le=1.0, description='Floor: decay never goes '
                                'below it.')
    max_age_seconds: Optional[int] = Field(None, ge=1)
    reinforcement_gain: float = Field(0.1, ge=0.0, le=1.0)


class Lifecycle(_Model):
    """Decay profile, last reinforcement, pinning and deletion policy (§15A.3)."""

    decay: DecayProfile
    last_reinforced_at: dt.datetime
    pinned: bool = False
    deletion_policy: Literal['auto_prune', 'manual_only', 'never'] = 'auto_prune'


class ProvenanceSource(_Model):
    """One piece of evidence: kind and an opaque reference (e.g. ``observation:42``)."""

    kind: Literal['event', 'artifact', 'tool_call', 'observation', 'outcome', 'audit', 'entry',
                  'human', 'import']
    ref: str = Field(min_length=1, max_length=500)
    hash: Optional[str] = Field(None, max_length=200)


class Provenance(_Model):
    """Evidence links and who created the record (§15A.4)."""

    sources: List[ProvenanceSource] = Field(default_factory=list)
    created_by: Optional[str] = None


class Relation(_Model):
    """A graph edge to another record (§15A.5)."""

    predicate: Literal['supports', 'contradicts', 'derived_from', 'supersedes', 'related_to',
                       'follows']
    target_id: str = Field(min_length=1, max_length=MAX_RECORD_ID)
    weight: Optional[float] = Field(None, ge=0.0, le=1.0)


class TimelineEvent(_Model):
    """One event of an episode."""

    t: dt.datetime
    event_kind: str
    ref: str
    summary: Optional[str] = None


class EpisodicPayload(_Model):
    """What happened: an ordered timeline of events (§15A.6); append-only."""

    kind: Literal['episodic'] = 'episodic'
    timeline: List[TimelineEvent]
    artifacts: List[str] = Field(default_factory=list)
    tool_graph_ref: Optional[str] = None
    outcome: Optional[Literal['success', 'failure', 'partial']] = None
    environment: Optional[Dict[str, Any]] = None


class WorkingPayload(_Model):
    """What we are doing now: task thread and its state (§15A.7)."""

    kind: Literal['working'] = 'working'
    thread_id: str
    state: Literal['planning', 'executing', 'blocked', 'waiting', 'done']
    next_actions: List[str] = Field(default_factory=list)
    open_questions: List[str] = Field(default_factory=list)
    context_summary: Optional[str] = None


class Validity(_Model):
    """When a fact holds: globally, under conditions, or within a time box."""

    mode: Literal['global', 'conditional', 'timeboxed']
    conditions: Optional[Dict[str, Any]] = None
    start: Optional[dt.datetime] = None
    end: Optional[dt.datetime] = None


class Revision(_Model):
    """The revision chain of a fact."""

    supersedes: Optional[str] = None
    superseded_by: Optional[str] = None
    status: Literal['active', 'contested', 'retracted'] = 'active'


class SemanticPayload(_Model):
    """A revisable fact: subject, predicate, object and validity (§15A.8)."""

    kind: Literal['semantic'] = 'semantic'
    subject: str = Field(min_length=1, max_length=MAX_SUBJECT)
    predicate: str = Field(min_length=1, max_length=MAX_PREDICATE)
    object: Union[str, float, bool, Dict[str, Any], List[Any]]
    validity: Validity = Field(default_factory=lambda: Validity(mode='global'))
    revision: Revision = Field(default_factory=Revision)
    single_valued: Optional[bool] = Field(None, description='Cardinality of the predicate for '
                                          'this subject: true = one value at a time (a new '
                                          'value supersedes), false = many values side by '
                                          'side, absent = unknown (a different value is '
                                          'kept and both are marked contested).')


class Trigger(_Model):
    """When a procedure applies: a signal and optional conditions."""

    signal: str
    conditions: Optional[Dict[str, Any]] = None


class RecipeStep(_Model):
    """One step of a procedure."""

    step: str
    tool: Optional[str] = None
    args_schema: Optional[Dict[str, Any]] = None
    validation: Optional[str] = None


class Performance(_Model):
    """Outcome history of a procedure (the second §15A.5's ``performance``)."""

    successes: int = Field(0, ge=0)
    failures: int = Field(0, ge=0)


class CompetencePayload(_Model):
    """How to do something: triggers, recipe, failure modes, fallbacks (§15A.9)."""

    kind: Literal['competence'] = 'competence'
    skill_name: str = Field(min_length=1, max_length=MAX_SKILL_NAME)
    triggers: List[Trigger]
    recipe: List[RecipeStep]
    failure_modes: List[str] = Field(default_factory=list)
    fallbacks: List[str] = Field(default_factory=list)
    required_tools: List[str] = Field(default_factory=list)
    version: Optional[str] = None
    performance: Optional[Performance] = None


class PlanNode(_Model):
    """An action of a plan graph."""

    id: str
    op: str
    params: Optional[Dict[str, Any]] = None
    guards: Optional[Dict[str, Any]] = None


class PlanEdge(_Model):
    """A dependency between two plan nodes."""

    model_config = ConfigDict(extra='forbid', populate_by_name=True)

    source: str = Field(alias='from')
    to: str
    kind: Literal['data', 'control']


class PlanMetrics(_Model):
    """Observed performance of a plan."""

    avg_latency_ms: Optional[float] = None
    failure_rate: Optional[float] = Field(None, ge=0.0, le=1.0)
    runs: Optional[int] = Field(None, ge=0)


class PlanGraphPayload(_Model):
    """A reusable solution graph: nodes, edges, intent, constraints (§15A.10)."""

    kind: Literal['plan_graph'] = 'plan_graph'
    plan_id: str
    version: str
    intent: Optional[str] = None
    constraints: Optional[Dict[str, Any]] = None
    inputs_schema: Optional[Dict[str, Any]] = None
    outputs_schema: Optional[Dict[str, Any]] = None
    nodes: List[PlanNode]
    edges: List[PlanEdge]
    metrics: Optional[PlanMetrics] = None


PAYLOAD_MODELS: dict[str, type[_Model]] = {
    'episodic': EpisodicPayload,
    'working': WorkingPayload,
    'semantic': SemanticPayload,
    'competence': CompetencePayload,
    'plan_graph': PlanGraphPayload,
}

Payload = Union[EpisodicPayload, WorkingPayload, SemanticPayload, CompetencePayload,
                PlanGraphPayload]


class AuditEntry(_Model):
    """One change to a record: action, actor, time, rationale (§15A.8)."""

    id: Optional[int] = None
    record_id: str
    action: str
    actor: str
    timestamp: dt.datetime
    rationale: str
    detail: Dict[str, Any] = Field(default_factory=dict)


class MemoryRecord(_Model):
    """The atomic unit of storage (§15A.2) plus the record's text, status and use counts."""

    id: str = Field(min_length=1, max_length=MAX_RECORD_ID)
    type: MemoryType
    sensitivity: Sensitivity
    confidence: float = Field(ge=0.0, le=1.0)
    salience: float = Field(ge=0.0, le=1.0, description='Stored salience as of '
                            'lifecycle.last_reinforced_at; decay is applied at read time.')
    scope: Optional[str] = None
    tags: List[str] = Field(default_factory=list)
    created_at: dt.datetime
    updated_at: dt.datetime
    lifecycle: Lifecycle
    provenance: Provenance
    relations: List[Relation] = Field(default_factory=list)
    payload: Payload = Field(discriminator='kind')
    text: str = Field(description='Human-readable content, indexed for keyword search.')
    context: Dict[str, Any] = Field(default_factory=dict)
    status: Literal['active', 'contested', 'retracted', 'superseded', 'archived'] = 'active'
    access_count: int = 0
    last_accessed: Optional[dt.datetime] = None
    effective_salience: Optional[float] = None


SCHEMA_MODELS: dict[str, type[BaseModel]] = {
    'MemoryRecord': MemoryRecord,
    'Lifecycle': Lifecycle,
    'DecayProfile': DecayProfile,
    'Provenance': Provenance,
    'Relation': Relation,
    'AuditEntry': AuditEntry,
    'EpisodicPayload': EpisodicPayload,
    'WorkingPayload': WorkingPayload,
    'SemanticPayload': SemanticPayload,
    'CompetencePayload': CompetencePayload,
    'PlanGraphPayload': PlanGraphPayload,
}


def json_schema(name: str) -> dict:
    """Return the JSON Schema of one record shape, e.g. of ``'SemanticPayload'``."""
    model = SCHEMA_MODELS.get(name)
    if model is None:
        raise ValueError(f'no schema named {name!r}; choose one of '
                         f'{", ".join(sorted(SCHEMA_MODELS))}')
    schema = model.model_json_schema(by_alias=True, mode='validation')
    schema['$id'] = f'mem://schemas/{name}'
    schema['$schema'] = 'https://json-schema.org/draft/2020-12/schema'
    return schema
