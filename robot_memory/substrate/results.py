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

"""Plain result objects of the substrate API, each with ``to_dict()`` for JSON replies."""

import dataclasses
import datetime as dt
from typing import Optional

from robot_memory.common.timeutil import format_iso


def _plain(value):
    if isinstance(value, dt.datetime):
        return format_iso(value)
    if dataclasses.is_dataclass(value):
        return {field.name: _plain(getattr(value, field.name))
                for field in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


class _Plain:

    def to_dict(self) -> dict:
        """Plain JSON data."""
        return _plain(self)


@dataclasses.dataclass
class LearnResult(_Plain):
    """What ``learn`` did: created a record, reinforced a duplicate, or revised a fact."""

    action: str
    record_id: str
    type: str
    duplicate: bool = False
    match: Optional[str] = None
    similarity: Optional[float] = None
    replaced: list = dataclasses.field(default_factory=list)
    message: str = ''


@dataclasses.dataclass
class RecallHit(_Plain):
    """One recalled record; ``redacted`` hits keep only id, type, sensitivity and score."""

    id: str
    type: str
    text: str
    score: float
    sensitivity: str
    status: str
    redacted: bool = False
    confidence: Optional[float] = None
    salience: Optional[float] = None
    tags: list = dataclasses.field(default_factory=list)
    context: Optional[dict] = None
    payload: Optional[dict] = None
    keyword_rank: Optional[int] = None
    vector_rank: Optional[int] = None
    distance: Optional[float] = None
    access_count: Optional[int] = None


@dataclasses.dataclass
class RecallResult(_Plain):
    """Hits best first, plus how many records the trust level withheld or redacted."""

    query: str
    hits: list
    withheld: int = 0
    redacted: int = 0
    mode: str = 'keyword'
    recall_id: Optional[int] = None
    sealed_withheld: int = 0
    notice: str = ''

    def ids(self) -> list:
        """Return the ids of the hits, best first."""
        return [hit.id for hit in self.hits]


@dataclasses.dataclass
class ForgetResult(_Plain):
    """
    Which records were archived, deleted (``hard``) or restored, and why.

    ``matched`` counts the records a query matched (only the best is acted on unless all
    were asked for); ``records`` gives each one's id, type, status (after the change, or
    as it is on a dry run) and text.
    """

    ids: list
    hard: bool
    reason: str
    dry_run: bool = False
    action: str = 'archive'
    matched: int = 0
    records: list = dataclasses.field(default_factory=list)
    message: str = ''


@dataclasses.dataclass
class RevisionResult(_Plain):
    """One revision: its kind, the records it created and the records it changed."""

    action: str
    created: list
    changed: list
    reason: str


@dataclasses.dataclass
class Candidate(_Plain):
    """A competence or plan record scored for a task (§15A.11)."""

    id: str
    type: str
    name: str
    score: float
    applicability: float
    success_rate: float
    recency: float
    relevance: float


@dataclasses.dataclass
class SelectionResult(_Plain):
    """The chosen record, or (``decided`` False) ranked candidates when scores are close."""

    task: str
    decided: bool
    winner: Optional[str]
    candidates: list
    margin: float
    message: str = ''
