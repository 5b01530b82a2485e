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
The rules file's schema: what a rule may say, and the defaults of each source.

``RulesFile`` is the validated form of ``config/observation_rules.yaml`` (which documents every
key): its ``defaults`` and its diagnostic, log and telemetry rules, each with the templates of
its signature and text checked against the placeholders of its source (``PLACEHOLDERS``), and a
telemetry rule's ``when`` parsed into a ``Threshold``. ``robot_memory.evidence.rules`` applies
them to observations.
"""

import dataclasses
import math
import re
import string
from typing import Annotated
from typing import Any
from typing import Literal
from typing import Optional
from typing import TYPE_CHECKING
from typing import Union

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator
from pydantic import StrictBool
import yaml

from robot_memory.evidence import signals
from robot_memory.rcan.schema import clean_tags

DEFAULT_SIGNATURES = {
    'diagnostic': '{hardware_id}|{name}|{message_pattern}',
    'log': '{node}|{message_pattern}',
    'telemetry': '{rule}|{topic}',
}
DEFAULT_TEXTS = {
    'diagnostic': '{name} ({hardware_id}) reports {level_name}: {message}',
    'log': '{node} logs {level_name} repeatedly: {message}',
    'telemetry': '{topic} {field} {op} {threshold} (was {value})',
}
PLACEHOLDERS = {
    'diagnostic': ('name', 'hardware_id', 'message', 'message_pattern', 'level', 'level_name',
                   'values', 'rule'),
    'log': ('node', 'message', 'message_pattern', 'level', 'level_name', 'file', 'function',
            'line', 'rule'),
    'telemetry': ('rule', 'topic', 'type', 'field', 'op', 'threshold', 'value'),
}
_NAME_PATTERN = r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'
_WHEN = re.compile(r'^\s*([A-Za-z_][A-Za-z0-9_]*(?:(?:\.[A-Za-z0-9_]+)|(?:\[\d+\]))*)\s*'
                   r'(<=|>=|==|!=|<|>)\s*(.+?)\s*$')


def _check_template(template: Optional[str], source: str) -> Optional[str]:
    if template is None:
        return None
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as error:
        raise ValueError(f'template {template!r} is malformed ({error}); '
                         'write placeholders as {name} and literal braces as {{ }}') from None
    for _, field, _, _ in parts:
        if field is None:
            continue
        root = re.split(r'[.\[]', field, maxsplit=1)[0]
        if root not in PLACEHOLDERS[source]:
            raise ValueError(f'unknown placeholder {{{field}}} in {template!r}; a {source} rule '
                             f'can use {", ".join(PLACEHOLDERS[source])}')
    return template


def _warn_and_error() -> list[Literal[1, 2, 3]]:
    return [1, 2]


def _error_and_fatal() -> list[Literal[40, 50]]:
    return [40, 50]


class _RuleBase(BaseModel):
    """Fields every rule has."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    name: str = Field(pattern=_NAME_PATTERN, description='Unique name of the rule')
    entry_type: Literal['hardware_observation', 'environment_note', 'behavior_pattern'] = \
        'hardware_observation'
    tags: list[str] = Field(default_factory=list, max_length=32)
    signature: Optional[str] = None
    text: Optional[str] = None
    min_count: int = Field(1, ge=1, le=1_000_000)
    ignore: bool = False
    # The operator declares what this rule matches normal on this robot (issue 38, point 7):
    # the dream files its entry under the routine and constant conditions, no proposal.
    normal: StrictBool = False
    if TYPE_CHECKING:  # each kind of rule declares its own, a Literal naming the kind
        source: str

    @field_validator('tags')
    @classmethod
    def _tags_valid(cls, value: list) -> list:
        return clean_tags(value, strip=False, max_tags=None)

    @model_validator(mode='after')
    def _normal_kept(self):
        if self.normal and self.ignore:
            raise ValueError('normal: true and ignore: true cannot both be set: an ignored '
                             'observation makes no entry to call normal (drop ignore to keep '
                             'the condition as normal, or normal to drop it)')
        return self

    @model_validator(mode='after')
    def _templates_valid(self):
        for field in ('signature', 'text'):
            try:
                _check_template(getattr(self, field), self.source)
            except ValueError as error:
                raise ValueError(f'field {field}: {error}') from None
        return self


class DiagnosticMatch(BaseModel):
    """Glob patterns (``*``, ``?``, ``[ab]``) on a diagnostic status, plus the levels."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    name: str = '*'
    hardware_id: str = '*'
    message: str = '*'
    levels: list[Literal[1, 2, 3]] = Field(default_factory=_warn_and_error, min_length=1)


class LogMatch(BaseModel):
    """Glob patterns on an ERROR/FATAL log record (node name and message)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    node: str = '*'
    message: str = '*'
    levels: list[Literal[40, 50]] = Field(default_factory=_error_and_fatal, min_length=1)


class DiagnosticRule(_RuleBase):
    """Diagnostic statuses matching ``match`` at one of ``match.levels`` are evidence."""

    source: Literal['diagnostic']
    match: DiagnosticMatch = Field(default_factory=DiagnosticMatch)


class LogRule(_RuleBase):
    """Log records matching ``match`` are evidence (entry after ``min_count``, default 2)."""

    source: Literal['log']
    match: LogMatch = Field(default_factory=LogMatch)
    min_count: int = Field(2, ge=1, le=1_000_000)


@dataclasses.dataclass(frozen=True)
class Threshold:
    """A parsed ``when``: field path, operator, value."""

    path: tuple
    op: str
    value: Any

    @property
    def field(self) -> str:
        """Return the field path as written with dots."""
        return '.'.join(str(part) for part in self.path)


def parse_when(text: str) -> Threshold:
    """Parse ``'percentage < 0.2'`` (field path, one of < <= > >= == !=, a value)."""
    match = _WHEN.match(text)
    if not match:
        raise ValueError(f'{text!r} is not "FIELD OP VALUE" (e.g. "percentage < 0.2"; '
                         'OP is one of < <= > >= == !=; nested fields use dots: a.b, list '
                         'items [0])')
    path_text, op, raw = match.groups()
    path = tuple(int(part) if part.isdigit() else part
                 for part in re.split(r'\.|\[|\]', path_text) if part)
    try:
        value = yaml.load(raw, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        raise ValueError(f'value {raw!r} in {text!r} is not a number, true/false or a quoted '
                         'string') from None
    if isinstance(value, bool) or isinstance(value, str):
        if op not in ('==', '!='):
            raise ValueError(f'{op} needs a number, got {raw!r} in {text!r}')
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f'the threshold in {text!r} must be a finite number')
    else:
        raise ValueError(f'value {raw!r} in {text!r} is not a number, true/false or a '
                         'quoted string')
    return Threshold(path, op, value)


class TelemetryRule(_RuleBase):
    """A threshold on a field of a telemetry message type; the condition true is evidence."""

    source: Literal['telemetry']
    type: str = Field(pattern=r'^[A-Za-z][A-Za-z0-9_]*/(?:msg/)?[A-Za-z][A-Za-z0-9_]*$')
    topic: str = '*'
    when: str
    severity: Literal['warn', 'error'] = 'warn'

    @field_validator('when')
    @classmethod
    def _when_valid(cls, value: str) -> str:
        parse_when(value)
        return value


Rule = Annotated[Union[DiagnosticRule, LogRule, TelemetryRule], Field(discriminator='source')]


class Defaults(BaseModel):
    """What happens to observations no rule matched."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    diagnostics: bool = True
    diagnostic_levels: list[Literal[1, 2, 3]] = Field(default_factory=_warn_and_error,
                                                      min_length=1)
    diagnostic_entry_type: Literal['hardware_observation', 'environment_note',
                                   'behavior_pattern'] = 'hardware_observation'
    logs: bool = True
    log_min_count: int = Field(2, ge=1, le=1_000_000)
    log_entry_type: Literal['hardware_observation', 'environment_note',
                            'behavior_pattern'] = 'hardware_observation'


class SignalSection(BaseModel):
    """The ``signals:`` section of a rules file, validated (``evidence.signals`` reads it)."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    include: list[str] = Field(default_factory=lambda: ['*'], max_length=200)
    exclude: list[str] = Field(default_factory=list, max_length=200)
    controllable: list[str] = Field(
        default_factory=lambda: list(signals.DEFAULT_CONTROLLABLE), max_length=200)

    def keeps(self, name: str) -> bool:
        """Whether ``name`` is kept as a signal."""
        return signals.keeps(self, name)

    def is_controllable(self, name: str) -> bool:
        """Whether the robot controls the signal ``name`` (advice may state its safe side)."""
        return signals.is_controllable(self, name)


class RulesFile(BaseModel):
    """The whole rules file: ``version``, ``defaults`` and the ``rules`` list."""

    model_config = ConfigDict(extra='forbid', frozen=True)

    version: Literal[1] = 1
    defaults: Defaults = Field(default_factory=Defaults)
    rules: list[Rule] = Field(default_factory=list)
    signals: SignalSection = Field(default_factory=SignalSection)

    @model_validator(mode='after')
    def _names_unique(self):
        seen = set()
        for rule in self.rules:
            if rule.name in seen:
                raise ValueError(f'two rules are named {rule.name!r}; rule names must be unique')
            seen.add(rule.name)
        return self
