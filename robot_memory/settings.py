"""Every parameter of memory_node, declared in one place: type, default, description, rule.

The node declares a ROS 2 parameter for each :class:`ParameterSpec` returned by
:func:`parameter_specs` and validates candidate values with :func:`validate_parameters`
both at start-up and on ``ros2 param set``; an invalid value is refused with a reason
that names the parameter. The same specs document ``config/robot_memory.yaml`` (a test
checks that every parameter is there) and are pure Python (no rclpy).

Three groups: the node's own settings (:class:`NodeSettings`), the RCAN lifecycle
constants (``lifecycle.LifecycleConfig``, top-level names such as ``decay_per_day``) and
the dream settings (``autodream.DreamConfig``, names prefixed ``dream.``).
"""

import dataclasses
import re
from typing import Any

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic import field_validator

from robot_memory.autodream import DreamConfig
from robot_memory.lifecycle import LifecycleConfig
from robot_memory.schema import RRN_PATTERN

# ROS 2 topic names cannot contain ':', so 'TOPIC:pkg/msg/Type' is unambiguous.
_TELEMETRY = re.compile(r'^(?P<topic>~?/?[A-Za-z_{][A-Za-z0-9_/{}~]*):'
                        r'(?P<type>[A-Za-z][A-Za-z0-9_]*/msg/[A-Za-z][A-Za-z0-9_]*)$')
_CLOCK = re.compile(r'^([01][0-9]|2[0-3]):([0-5][0-9])$')


def _frozen(**kwargs) -> Any:
    """A Field the node will not change after start-up (declared read-only)."""
    return Field(json_schema_extra={'read_only': True}, **kwargs)


class NodeSettings(BaseModel):
    """memory_node's own parameters (the lifecycle and dream constants are separate)."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    rrn: str = _frozen(default='RRN-UNSET', pattern=RRN_PATTERN,
                       description='Robot Resource Name written into robot-memory.md and '
                                   'shared with peers, e.g. RRN-000000000001')
    memory_file: str = _frozen(default='', description='Path of robot-memory.md; empty: '
                               '$CASTOR_ROBOT_MEMORY_FILE, else ~/.opencastor/robot-memory.md')
    database_file: str = _frozen(default='', description='Path of the evidence database; '
                                 'empty: robot-memory.db beside the memory file')
    rules_file: str = _frozen(default='', description='Observation rules file (see '
                              'config/observation_rules.yaml); empty: the built-in defaults')
    telemetry_topics: list[str] = _frozen(
        default_factory=list,
        description='Telemetry topics to watch, each "TOPIC:pkg/msg/Type", e.g. '
                    '"/battery_state:sensor_msgs/msg/BatteryState"; rules decide what is evidence')
    dream_time: str = Field('03:00', description='Local time of the nightly dream, "HH:MM" '
                                                 '(24 h); empty: no nightly dream')
    dream_period_s: float = Field(0.0, ge=0.0, le=7 * 86400.0,
                                  description='Also dream every this many seconds (for tests '
                                              'and demos); 0: off. At least 1 when set')
    flush_period_s: float = _frozen(default=0.5, ge=0.01, le=60.0,
                                    description='Seconds between evidence flushes to the '
                                                'database (one transaction each)')
    batch_size: int = _frozen(default=500, ge=1, le=100_000,
                              description='Observations that trigger a flush before the period')
    max_backlog: int = _frozen(default=200_000, ge=100, le=10_000_000,
                               description='Observations waiting for the database at most; '
                                           'beyond it new ones are dropped and counted')
    retention_days: float = _frozen(default=14.0, gt=0.0, le=3650.0,
                                    description='Days raw observations are kept before they '
                                                'are folded into daily counts')
    ok_heartbeat_s: float = _frozen(default=900.0, ge=0.0, le=86400.0,
                                    description='At most one OK report per source is stored '
                                                'per this many seconds')
    diagnostics_period_s: float = _frozen(default=1.0, ge=0.1, le=60.0,
                                          description='Seconds between health reports on '
                                                      '/diagnostics')
    time_scale: float = _frozen(default=1.0, ge=1.0, le=1_000_000.0,
                                description='Memory time runs this many times faster than '
                                            'the wall clock (demos and tests only; 1 on a '
                                            'robot)')

    @field_validator('telemetry_topics')
    @classmethod
    def _topics_valid(cls, value: list) -> list:
        topics = set()
        for item in value:
            match = _TELEMETRY.match(item.strip())
            if match is None:
                raise ValueError(f'{item!r} is not "TOPIC:pkg/msg/Type", e.g. '
                                 '"/battery_state:sensor_msgs/msg/BatteryState"')
            if match.group('topic') in topics:
                raise ValueError(f'topic {match.group("topic")} is listed twice')
            topics.add(match.group('topic'))
        return [item.strip() for item in value]

    @field_validator('dream_time')
    @classmethod
    def _clock_valid(cls, value: str) -> str:
        if value.strip() and not _CLOCK.match(value.strip()):
            raise ValueError(f'{value!r} is not a 24-hour "HH:MM" time such as "03:00" '
                             '(empty disables the nightly dream)')
        return value.strip()

    @field_validator('dream_period_s')
    @classmethod
    def _period_valid(cls, value: float) -> float:
        if 0.0 < value < 1.0:
            raise ValueError(f'{value} s is too short; use 0 (off) or at least 1 second')
        return value

    def telemetry(self) -> list:
        """The telemetry topics as (topic, 'pkg/msg/Type') pairs."""
        return [tuple(item.split(':', 1)) for item in self.telemetry_topics]

    def nightly_time(self):
        """(hour, minute) of the nightly dream, or None when it is off."""
        if not self.dream_time:
            return None
        hour, minute = self.dream_time.split(':')
        return int(hour), int(minute)


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One ROS 2 parameter: its name, default, description and whether it may change."""

    name: str
    default: Any
    description: str
    read_only: bool
    constraints: str


def _constraints(field) -> str:
    parts = []
    for item in field.metadata:
        for attribute, symbol in (('ge', '>='), ('gt', '>'), ('le', '<='), ('lt', '<')):
            value = getattr(item, attribute, None)
            if value is not None:
                parts.append(f'{symbol} {value}')
        pattern = getattr(item, 'pattern', None)
        if pattern:
            parts.append(f'matches {pattern}')
    return ', '.join(parts)


def _specs_of(model, prefix: str = '', skip=()) -> list:
    specs = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        default = field.get_default(call_default_factory=True)
        extra = field.json_schema_extra or {}
        specs.append(ParameterSpec(prefix + name, default, field.description or '',
                                   bool(extra.get('read_only')), _constraints(field)))
    return specs


def parameter_specs() -> list:
    """Every memory_node parameter, node settings first, then lifecycle, then dream."""
    return (_specs_of(NodeSettings) + _specs_of(LifecycleConfig)
            + _specs_of(DreamConfig, 'dream.', skip=('lifecycle', 'rrn')))


@dataclasses.dataclass(frozen=True)
class Settings:
    """The validated settings of one node."""

    node: NodeSettings
    dream: DreamConfig

    @property
    def lifecycle(self) -> LifecycleConfig:
        """The RCAN lifecycle constants."""
        return self.dream.lifecycle


def _reason(error: ValidationError, prefix: str = '') -> str:
    detail = error.errors()[0]
    where = prefix + ('.'.join(str(part) for part in detail['loc']) or 'settings')
    message = detail['msg']
    for lead in ('Value error, ', 'Assertion failed, '):
        message = message.replace(lead, '')
    return f'{where}: {message}'


def validate_parameters(values: dict) -> Settings:
    """Validate a flat {name: value} of parameters; raise ValueError naming the bad one."""
    known = {spec.name for spec in parameter_specs()}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f'{unknown[0]}: unknown parameter (see config/robot_memory.yaml for '
                         'the list)')
    node_values = {key: value for key, value in values.items() if key in NodeSettings.model_fields}
    life_values = {key: value for key, value in values.items()
                   if key in LifecycleConfig.model_fields}
    dream_values = {key[len('dream.'):]: value for key, value in values.items()
                    if key.startswith('dream.')}
    try:
        node = NodeSettings(**node_values)
    except ValidationError as error:
        raise ValueError(_reason(error)) from None
    try:
        lifecycle = LifecycleConfig(**life_values)
    except ValidationError as error:
        raise ValueError(_reason(error)) from None
    try:
        dream = DreamConfig(lifecycle=lifecycle, rrn=node.rrn, **dream_values)
    except ValidationError as error:
        raise ValueError(_reason(error, 'dream.')) from None
    return Settings(node, dream)
