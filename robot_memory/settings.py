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
Every parameter of memory_node, declared in one place: type, default, description, rule.

The node declares a ROS 2 parameter for each :class:`ParameterSpec` returned by
:func:`parameter_specs` and validates candidate values with :func:`validate_parameters`
both at start-up and on ``ros2 param set``; an invalid value is refused with a reason
that names the parameter. The same specs document ``config/robot_memory.yaml`` (a test
checks that every parameter is there) and are pure Python (no rclpy). The CLI's
``--config`` reads that file with :func:`settings_from_file`: the same values through the
same validation, so a file the node would refuse is refused by the CLI with the same reason.

Five groups: the node's own settings (:class:`NodeSettings`), the RCAN lifecycle
constants (``lifecycle.LifecycleConfig``, top-level names such as ``decay_per_day``), the
dream settings (``DreamConfig``, names prefixed ``dream.``), the peer
federation policy (``federation.FederationPolicy``, names prefixed ``federation.``; ROS
parameters have no maps or nulls, so a key file path is a string, empty for none, and
``peer_public_keys`` is a list of ``"RRN=path"``) and which sources' changes wait for
approval (``ProposalSettings``, names prefixed ``proposals.``).
"""

import dataclasses
import json
import pathlib
import re
import textwrap
from typing import Any
from typing import Optional
import zoneinfo

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator
from pydantic import ValidationError
import yaml

from robot_memory.common import validation_text
from robot_memory.common.timeutil import parse_iso
from robot_memory.errors import MemoryFileError
from robot_memory.errors import SettingsConflict
from robot_memory.evidence.proposal_queue import MODES  # noqa: F401 - named here too
from robot_memory.evidence.proposal_queue import ProposalSettings
from robot_memory.evidence.proposal_queue import SOURCES  # noqa: F401 - named here too
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.rcan.schema import RRN_PATTERN
from robot_memory.substrate.vocabulary import SENSITIVITIES


class DreamConfig(BaseModel):
    """Settings of the dream; ``lifecycle`` holds the RCAN constants."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    lifecycle: LifecycleConfig = DEFAULT_CONFIG
    rrn: Optional[str] = Field(None, pattern=RRN_PATTERN,
                               description='RRN written into a new memory file')
    quiet_period_days: float = Field(3.0, gt=0.0, le=365.0,
                                     description='Days of OK reports that resolve an entry')
    min_reinforce_interval_hours: float = Field(
        20.0, ge=0.0, le=24.0 * 365,
        description='An entry is reinforced at most once in this many hours')
    # 0.15 is prune_min plus one day's decay: a new entry outlives its first day above the line.
    initial_min: float = Field(0.15, ge=0.10, le=1.0,
                               description='Initial confidence of the weakest evidence (above '
                                           'prune_min)')
    initial_max: float = Field(0.50, ge=0.10, le=1.0,
                               description='Initial confidence of the strongest evidence')
    initial_full_count: int = Field(64, ge=2, le=10_000_000,
                                    description='Observations (ERROR counts twice) for full '
                                                'count strength')
    initial_full_spread_minutes: float = Field(
        60.0, ge=0.0, le=7 * 24 * 60,
        description='Minutes between first and last observation for full spread strength')
    compact: bool = Field(True, description='Compact old observations after each dream')
    timezone: str = Field('UTC', min_length=1, max_length=64,
                          description="The robot's local time zone (IANA name such as "
                                      'America/Toronto), in which entries state the time of '
                                      'day a fault happens')
    summary_nights: int = Field(
        14, ge=0, le=3650,
        description='Days a dream summary for people (<memory file>.dream-<time>.md beside '
                    'the memory file) is kept; 0 writes none')
    max_leap_days: float = Field(
        2.0, gt=0.0, le=36500.0,
        description='A dream more than this many days after both the last dream and the '
                    'newest evidence is refused (a clock that jumped ahead) until a person '
                    'confirms the leap (robot-memory dream --confirm-leap)')

    @field_validator('timezone')
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f'{value!r} is not a time zone this system knows; give an IANA '
                             'name such as Europe/Berlin or UTC') from None
        return value

    @model_validator(mode='after')
    def _ordered(self):
        if self.initial_min > self.initial_max:
            raise SettingsConflict(f'initial_min ({self.initial_min}) must not exceed '
                                   f'initial_max ({self.initial_max})',
                                   ('initial_min', 'initial_max'))
        if self.initial_min <= self.lifecycle.prune_min:
            default = type(self).model_fields['initial_min'].default
            raise SettingsConflict(
                f'initial_min ({self.initial_min}) must be above prune_min '
                f'({self.lifecycle.prune_min}): a new entry would start at or under the prune '
                'line and be pruned once it is older than recent_hours; raise initial_min or '
                f'lower prune_min (the defaults are {default} and {DEFAULT_CONFIG.prune_min})',
                ('initial_min', 'lifecycle.prune_min'))
        return self


# ROS 2 topic names cannot contain ':', so 'TOPIC:pkg/msg/Type' is unambiguous.
_TELEMETRY = re.compile(r'^(?P<topic>~?/?[A-Za-z_{][A-Za-z0-9_/{}~]*):'
                        r'(?P<type>[A-Za-z][A-Za-z0-9_]*/msg/[A-Za-z][A-Za-z0-9_]*)$')
_CLOCK = re.compile(r'^([01][0-9]|2[0-3]):([0-5][0-9])$')
# A fully qualified node name, e.g. /robot_b/robot_memory.
_NODE_NAME = re.compile(r'^(/[A-Za-z_][A-Za-z0-9_]*)+$')
_ENDPOINT = re.compile(r'^(tcp|udp|tls|quic|ws|unixsock-stream)/\S+$')
_SITE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')  # as fleet.keys.SITE_PATTERN


def _frozen(**kwargs) -> Any:
    """Return a Field the node will not change after start-up (declared read-only)."""
    return Field(json_schema_extra={'read_only': True}, **kwargs)


class NodeSettings(BaseModel):
    """memory_node's own parameters (the lifecycle and dream constants are separate)."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    rrn: str = _frozen(default='RRN-UNSET', pattern=RRN_PATTERN,
                       description='Robot Resource Name written into robot-memory.md and '
                                   'shared with peers, e.g. RRN-000000000001')
    memory_file: str = _frozen(default='', description='Path of robot-memory.md; empty: '
                               '$CASTOR_ROBOT_MEMORY_FILE; else robot-memory.md in '
                               '$CASTOR_OPENCASTOR_DIR (default ~/.opencastor) if it exists; '
                               'else $ROBOT_HOME/robot-memory.md; else the former')
    database_file: str = _frozen(default='', description='Path of the evidence database (a '
                                 'symbolic link is used through to its target); empty: beside '
                                 'the memory file, named after it (robot-memory.db for '
                                 'robot-memory.md)')
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
    max_backlog: int = _frozen(default=10_000, ge=100, le=10_000_000,
                               description='Observations waiting for the database at most '
                                           '(about 190 bytes each); beyond it new ones are '
                                           'dropped and counted')
    retention_days: float = _frozen(default=14.0, gt=0.0, le=3650.0,
                                    description='Days raw observations are kept before they '
                                                'are folded into daily counts')
    ok_heartbeat_s: float = _frozen(default=900.0, ge=0.0, le=86400.0,
                                    description='OK reports of a source are stored at most '
                                                'once per this many seconds, and when its '
                                                'state changes')
    diagnostics_period_s: float = _frozen(default=1.0, ge=0.1, le=60.0,
                                          description='Seconds between health reports on '
                                                      '/diagnostics')
    time_scale: float = _frozen(default=1.0, ge=1.0, le=1_000_000.0,
                                description='Memory time runs this many times faster than '
                                            'the wall clock (demos and tests only; 1 on a '
                                            'robot)')
    time_origin: str = _frozen(default='', description='With time_scale > 1: the wall-clock '
                               'moment (ISO-8601, e.g. 2026-01-01T00:00:00Z) at which memory '
                               'time equals wall time, so sped-up peers agree on the time; '
                               "empty: the node's start")
    clock_jump_s: float = Field(
        10.0, ge=1.0, le=86400.0,
        description='A wall clock that moves this many seconds more (or less) than the '
                    'monotonic clock between two looks has jumped: reported as WARN on the '
                    '"clock" status, and scheduled dreams wait after a jump forward')
    clock_steady_s: float = Field(
        600.0, ge=0.0, le=7 * 86400.0,
        description='After a jump forward, scheduled dreams wait until the clock has been '
                    'steady this many seconds (a dream asked on ~/dream runs at once and '
                    'confirms the new time)')
    clock_offset_s: float = Field(
        0.0, ge=-10 * 365 * 86400.0, le=10 * 365 * 86400.0,
        description='Seconds added to the wall clock the memory reads (a robot whose clock '
                    'is known to be off, and tests); a change is a clock jump')
    peer_nodes: list[str] = Field(
        default_factory=list,
        description='Peer robots to sync memory with: the fully qualified names of their '
                    'robot_memory nodes, e.g. "/robot_b/robot_memory"; their RRNs must also be '
                    'in federation.allowed_peers')
    peer_sync_period_s: float = Field(
        300.0, ge=0.0, le=7 * 86400.0,
        description='Seconds between syncs with peer_nodes (also on demand: ~/sync_peers); '
                    '0: on demand only. At least 1 when set')
    service_max_trust: str = Field(
        'medium', description='Highest trust level a ~/recall caller may ask for, and what an '
                              'empty trust means (public | low | medium | high | hyper); '
                              'records above it are redacted or withheld')
    substrate_vectors: bool = _frozen(
        default=False, description='Also search the typed memory by vector similarity with '
                                   'the small local hashing embedder. Needless with '
                                   'robot_memory[semantic] installed: its offline model is '
                                   'then used always (ROBOT_MEMORY_EMBEDDER=off turns it off)')
    substrate_metrics_period_s: float = _frozen(
        default=30.0, ge=1.0, le=86400.0,
        description='Seconds between recomputing the typed memory metrics shown in diagnostics')
    substrate_encrypt_from: str = _frozen(
        default='', description='Store typed records of this sensitivity or above encrypted '
                                '(AES-GCM; public | low | medium | high | hyper); empty: '
                                'nothing is encrypted (records encrypted earlier still open '
                                'with the key)')
    substrate_key_file: str = _frozen(
        default='', description='Key file of the encrypted typed records (mode 0600, created '
                                'on first use); empty: memory-encryption.key beside '
                                'federation.private_key_path when set, else beside the database '
                                '(robot-memory.key for robot-memory.db)')

    web_port: int = _frozen(
        default=0, ge=0, le=65535,
        description="Serve the operator's page (robot-memory serve) beside the node on this TCP "
                    'port; 0: off. Needs robot_memory[web]')
    web_host: str = _frozen(
        default='127.0.0.1', description="Address the operator's page listens on; any but a "
                                         'loopback address needs web_token_file')
    web_token_file: str = _frozen(
        default='', description="File holding the operator page's access token (at least 16 "
                                'characters); empty: $ROBOT_MEMORY_WEB_TOKEN, else a new token '
                                'each start, logged in the link')
    web_read_only: bool = _frozen(
        default=False, description="The operator's page offers no change (no approve, reject, "
                                   'undo or edit)')

    blackbox_topics: list[str] = _frozen(
        default_factory=list,
        description='Black box: topics kept raw in RAM and written as MCAP around each fault '
                    '(see docs/blackbox.md), each "TOPIC:pkg/msg/Type"; empty: no black box '
                    '(and no MCAP library loaded). Needs robot_memory[blackbox]')
    blackbox_freeze_topics: list[str] = _frozen(
        default_factory=list,
        description='Topics whose last value goes into the evidence as a JSON freeze frame '
                    'when a fault starts, each "TOPIC:pkg/msg/Type", e.g. '
                    '"/odom:nav_msgs/msg/Odometry"; used only with blackbox_topics')
    blackbox_folder: str = _frozen(
        default='', description='Folder of the black-box recordings (not a symbolic link); '
                                'empty: beside the database, named after it '
                                '(robot-memory.blackbox for robot-memory.db)')
    blackbox_before_s: float = _frozen(default=5.0, ge=0.0, le=600.0,
                                       description='Seconds kept before a fault')
    blackbox_after_s: float = _frozen(default=1.0, ge=0.0, le=600.0,
                                      description='Seconds recorded after a fault')
    blackbox_ram_mb: float = _frozen(default=256.0, ge=1.0, le=65536.0,
                                     description='RAM the black-box ring buffer holds at most '
                                                 '(MB); the oldest messages go first')
    blackbox_recording_mb: float = _frozen(default=50.0, ge=0.1, le=65536.0,
                                           description='Bytes of one recording at most (MB); '
                                                       'the messages nearest the end are kept')
    blackbox_total_mb: float = _frozen(default=500.0, ge=1.0, le=10_000_000.0,
                                       description='All recordings together at most (MB); the '
                                                   "oldest go first, but each entry's most "
                                                   'recent recording is kept')
    blackbox_cooldown_s: float = _frozen(default=60.0, ge=0.0, le=86400.0,
                                         description='One recording per fault signature per '
                                                     'this many seconds (a flapping fault '
                                                     'writes one, not hundreds)')

    fleet_connect: list[str] = _frozen(
        default_factory=list,
        description="The fleet over Zenoh (see docs/fleet.md): endpoints of the site's router "
                    'or the fleet store, e.g. "tcp/192.0.2.10:7447"; after each dream the node '
                    'publishes its signed payload there. Empty: off (and Zenoh never loaded). '
                    'Needs robot_memory[fleet], fleet_site and federation.private_key_path')
    fleet_site: str = _frozen(
        default='', description='The site the robot works at, in its fleet key expressions '
                                '(e.g. "depot-north"); needed with fleet_connect')
    fleet_model: str = _frozen(default='unknown', pattern=r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
                               description="The robot's model, as the fleet store groups it and "
                                           'lessons are promoted to it (e.g. "rover-2")')
    fleet_firmware: str = _frozen(default='unknown', min_length=1, max_length=64,
                                  description="The robot's firmware version, as the fleet store "
                                              'groups it')
    fleet_retry_s: float = _frozen(default=60.0, ge=1.0, le=86400.0,
                                   description='Seconds between deliveries of a payload the '
                                               'fleet store has not acknowledged yet')
    fleet_public_key: str = _frozen(
        default='', description="The fleet's Ed25519 public key (PEM): fleet lessons it signed "
                                'are taken in as peer entries from the fleet; empty: no lessons '
                                'are taken')
    fleet_tls_ca: str = _frozen(default='', description="With tls/ endpoints: the fleet CA's "
                                                        'certificate (PEM)')
    fleet_tls_cert: str = _frozen(default='', description="With tls/ endpoints: this robot's "
                                                          'certificate, signed by the fleet CA')
    fleet_tls_key: str = _frozen(default='', description="With tls/ endpoints: this robot's "
                                                         'private key (PEM)')

    @field_validator('fleet_connect')
    @classmethod
    def _endpoints_valid(cls, value: list) -> list:
        endpoints = [item.strip() for item in value]
        for endpoint in endpoints:
            if not _ENDPOINT.match(endpoint):
                raise ValueError(f'{endpoint!r} is not a Zenoh endpoint such as '
                                 '"tcp/192.0.2.10:7447" or "tls/router.example:7447"')
        return endpoints

    @field_validator('fleet_site')
    @classmethod
    def _site_valid(cls, value: str) -> str:
        if value.strip() and not _SITE.match(value.strip()):
            raise ValueError(f'{value!r} is not a site name: 1 to 64 letters, digits, "_", "." '
                             'or "-", starting with a letter or digit (e.g. "depot-north")')
        return value.strip()

    @model_validator(mode='after')
    def _fleet_complete(self) -> 'NodeSettings':
        if self.fleet_connect and not self.fleet_site:
            raise ValueError('fleet_site: give the site the robot works at (e.g. '
                             '"depot-north"): fleet_connect is set')
        return self

    action_names: list[str] = _frozen(
        default_factory=list,
        description="Actions whose aborted goals are evidence, read from each one's "
                    '<action>/_action/status (any action, no code on the robot; see '
                    'docs/blackbox.md), e.g. ["/navigate_to_pose", "/move_action"] for Nav2 '
                    'and MoveIt; empty: none')
    active_hold_s: float = _frozen(default=30.0, ge=0.0, le=86400.0,
                                   description='Active now: a fault is cleared after OK reports '
                                               'for this many seconds (an error log record or '
                                               'an aborted goal: after this long without one)')

    @field_validator('action_names')
    @classmethod
    def _actions_valid(cls, value: list) -> list:
        for item in value:
            if not _NODE_NAME.match(item.strip()):
                raise ValueError(f'{item!r} is not an action name: give its full name, e.g. '
                                 '"/navigate_to_pose" (letters, digits, _ and /)')
        if len(set(value)) != len(value):
            raise ValueError('an action is named twice; name each once')
        return [item.strip() for item in value]

    @field_validator('telemetry_topics', 'blackbox_topics', 'blackbox_freeze_topics')
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

    @field_validator('dream_period_s', 'peer_sync_period_s')
    @classmethod
    def _period_valid(cls, value: float) -> float:
        if 0.0 < value < 1.0:
            raise ValueError(f'{value} s is too short; use 0 (off) or at least 1 second')
        return value

    @field_validator('time_origin')
    @classmethod
    def _origin_valid(cls, value: str) -> str:
        if value.strip():
            try:
                parse_iso(value.strip())
            except (ValueError, OverflowError):
                raise ValueError(f'{value!r} is not an ISO-8601 time such as '
                                 '"2026-01-01T00:00:00Z" (empty: the node\'s start)') from None
        return value.strip()

    @field_validator('peer_nodes')
    @classmethod
    def _peers_valid(cls, value: list) -> list:
        names = [item.strip() for item in value]
        for name in names:
            if not _NODE_NAME.match(name):
                raise ValueError(f'{name!r} is not a fully qualified node name such as '
                                 '"/robot_b/robot_memory"')
        if len(set(names)) != len(names):
            raise ValueError('a peer node is listed twice')
        return names

    @field_validator('service_max_trust')
    @classmethod
    def _trust_valid(cls, value: str) -> str:
        if value not in SENSITIVITIES:
            raise ValueError(f'{value!r} is not one of {" | ".join(SENSITIVITIES)}')
        return value

    @field_validator('substrate_encrypt_from')
    @classmethod
    def _encrypt_from_valid(cls, value: str) -> str:
        if value.strip() and value.strip() not in SENSITIVITIES:
            raise ValueError(f'{value!r} is not one of {" | ".join(SENSITIVITIES)} (empty: '
                             'encryption off)')
        return value.strip()

    def telemetry(self) -> list:
        """Return the telemetry topics as (topic, 'pkg/msg/Type') pairs."""
        return [tuple(item.split(':', 1)) for item in self.telemetry_topics]

    def blackbox(self) -> tuple:
        """Return the black box's (kept, freeze-frame) topics, each as (topic, type) pairs."""
        return ([tuple(item.split(':', 1)) for item in self.blackbox_topics],
                [tuple(item.split(':', 1)) for item in self.blackbox_freeze_topics])

    def origin(self):
        """time_origin as an aware datetime, or None (the node's start)."""
        return parse_iso(self.time_origin) if self.time_origin else None

    def nightly_time(self):
        """(hour, minute) of the nightly dream, or None when it is off."""
        if not self.dream_time:
            return None
        hour, minute = self.dream_time.split(':')
        return int(hour), int(minute)


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """
    One ROS 2 parameter: its name, default, description and whether it may change.

    ``constraints`` says every rule in words; ``bounds`` is the inclusive (low, high)
    range when the value has one (published as a ROS floating_point_range /
    integer_range), and ``other_constraints`` the rules a range cannot say (exclusive
    bounds, patterns).
    """

    name: str
    default: Any
    description: str
    read_only: bool
    constraints: str
    bounds: Any = None
    other_constraints: str = ''


_BOUNDS = (('ge', '>='), ('gt', '>'), ('le', '<='), ('lt', '<'))


def _limits(field) -> dict:
    """Return the field's numeric limits and pattern: {'ge': 0.0, 'le': 1.0, 'pattern': ...}."""
    limits = {}
    for item in field.metadata:
        for attribute in ('ge', 'gt', 'le', 'lt', 'pattern'):
            value = getattr(item, attribute, None)
            if value is not None:
                limits[attribute] = value
    return limits


def _describe(limits: dict, names=('ge', 'gt', 'le', 'lt', 'pattern')) -> str:
    parts = [f'{symbol} {limits[name]}' for name, symbol in _BOUNDS
             if name in limits and name in names]
    if 'pattern' in limits and 'pattern' in names:
        parts.append(f'matches {limits["pattern"]}')
    return ', '.join(parts)


def _bounds(limits: dict):
    """(low, high) when both bounds are inclusive (a ROS range has no exclusive bounds)."""
    if 'ge' in limits and 'le' in limits and 'gt' not in limits and 'lt' not in limits:
        return limits['ge'], limits['le']
    return None


def allowed(spec: ParameterSpec) -> str:
    """Return the allowed values of a parameter in words, e.g. 'from 0.0 to 1.0'."""
    if spec.bounds is not None:
        text = f'from {spec.bounds[0]} to {spec.bounds[1]}'
        return f'{text}, {spec.other_constraints}' if spec.other_constraints else text
    return spec.constraints


def _specs_of(model, prefix: str = '', skip=()) -> list:
    specs = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        default = field.get_default(call_default_factory=True)
        extra = field.json_schema_extra or {}
        limits = _limits(field)
        bounds = _bounds(limits)
        other = _describe(limits, ('pattern',) if bounds else ('ge', 'gt', 'le', 'lt', 'pattern'))
        specs.append(ParameterSpec(prefix + name, default, field.description or '',
                                   bool(extra.get('read_only')), _describe(limits), bounds,
                                   other))
    return specs


FEDERATION = 'federation.'
PROPOSALS = 'proposals.'
# FederationPolicy fields whose Python type has no ROS parameter form: their ROS default
# and description.
_FEDERATION_ROS = {
    'allowed_peers': ([], 'RRNs of the peers whose memory is accepted, e.g. '
                          '["RRN-000000000002"]; empty: accept none'),
    'private_key_path': ('', "Path of this robot's Ed25519 private key (PEM, mode 0600) that "
                             'signs what it shares; empty: payloads are not signed'),
    'peer_public_keys': ([], 'Public keys of peers, each "RRN=path of its Ed25519 public key '
                             '(PEM)", e.g. "RRN-000000000002=/etc/robot_memory/b.pub"'),
}


def _federation_specs() -> list:
    specs = []
    for spec in _specs_of(FederationPolicy, FEDERATION):
        ros = _FEDERATION_ROS.get(spec.name[len(FEDERATION):])
        if ros is not None:
            spec = dataclasses.replace(spec, default=ros[0], description=ros[1])
        specs.append(spec)
    return specs


def parameter_specs() -> list:
    """Every memory_node parameter: node settings, lifecycle, dream, then federation."""
    return (_specs_of(NodeSettings) + _specs_of(LifecycleConfig)
            + _specs_of(DreamConfig, 'dream.', skip=('lifecycle', 'rrn'))
            + _federation_specs() + _specs_of(ProposalSettings, PROPOSALS))


@dataclasses.dataclass(frozen=True)
class Settings:
    """The validated settings of one node."""

    node: NodeSettings
    dream: DreamConfig
    federation: FederationPolicy = FederationPolicy()
    proposals: ProposalSettings = ProposalSettings()

    @property
    def lifecycle(self) -> LifecycleConfig:
        """Return the RCAN lifecycle constants."""
        return self.dream.lifecycle


def _reason(error: ValidationError, prefix: str = '') -> str:
    detail = error.errors()[0]
    where = ', '.join(_parameter(path) for path in validation_text.places(detail, prefix)) \
        or prefix + 'settings'
    message = validation_text.message(detail, validation_text.VALIDATOR_LEADS)
    spec = _spec_named(where)
    if spec is not None and detail['type'] in _RANGE_ERRORS:
        return (f'{where}: {detail["input"]!r} is out of range ({message[:1].lower()}'
                f'{message[1:]}); allowed: {allowed(spec)}')
    return f'{where}: {message}'


def _parameter(path: str) -> str:
    """Return the parameter a model path names (DreamConfig holds the top-level lifecycle ones)."""
    return path.removeprefix('dream.lifecycle.')


# pydantic error types of a value outside its numeric bounds.
_RANGE_ERRORS = {'greater_than', 'greater_than_equal', 'less_than', 'less_than_equal'}


def _spec_named(name: str):
    for spec in parameter_specs():
        if spec.name == name:
            return spec
    return None


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
    federation_values = {key[len(FEDERATION):]: value for key, value in values.items()
                         if key.startswith(FEDERATION)}
    try:
        federation = FederationPolicy(**_federation_fields(federation_values))
    except ValidationError as error:
        raise ValueError(_reason(error, FEDERATION)) from None
    proposal_values = {key[len(PROPOSALS):]: value for key, value in values.items()
                       if key.startswith(PROPOSALS)}
    try:
        proposals = ProposalSettings(**proposal_values)
    except ValidationError as error:
        raise ValueError(_reason(error, PROPOSALS)) from None
    return Settings(node, dream, federation, proposals)


def read_parameters_file(path, node_name: str = 'robot_memory') -> dict:
    """
    Return the parameters a ROS 2 parameters file gives ``node_name``: flat, nested keys dotted.

    The ``ros__parameters`` of ``/**`` apply first, then those of ``node_name`` (or
    ``/node_name``), name by name, as rcl reads them at the node's start.
    """
    path = pathlib.Path(path).expanduser()
    try:
        data = yaml.load(path.read_text(encoding='utf-8'), Loader=yaml.CSafeLoader) or {}
    except OSError as error:
        raise MemoryFileError(f'cannot read the config file: {error.strerror}', path) from None
    except yaml.YAMLError as error:
        raise MemoryFileError(f'config file is not valid YAML: {error}', path) from None
    if not isinstance(data, dict):
        raise MemoryFileError('config file must map node names to ros__parameters', path)
    merged = {}
    for key in ('/**', node_name, '/' + node_name):
        section = data.get(key)
        if isinstance(section, dict) and isinstance(section.get('ros__parameters'), dict):
            merged.update(flat_parameters(section['ros__parameters']))
    return merged


def settings_from_file(path, node_name: str = 'robot_memory') -> Settings:
    """
    Return the Settings a parameters file gives memory_node, validated as at its start-up.

    The CLI's ``--config`` reads the node's file this way. Keys that are not parameters of
    memory_node (``use_sim_time``, another node's under ``/**``) are left alone, as the node
    leaves them; an invalid value is refused with the parameter, the value and what is
    allowed.
    """
    known = {spec.name for spec in parameter_specs()}
    values = {name: value for name, value in read_parameters_file(path, node_name).items()
              if name in known}
    try:
        return validate_parameters(values)
    except ValueError as error:
        raise MemoryFileError(f'invalid setting {error}', pathlib.Path(path).expanduser()) \
            from None


def _federation_fields(values: dict) -> dict:
    """ROS parameter values of the federation policy as FederationPolicy fields."""
    fields = dict(values)
    if 'private_key_path' in fields:
        fields['private_key_path'] = fields['private_key_path'] or None
    if 'allowed_peers' in fields and isinstance(fields['allowed_peers'], list):
        fields['allowed_peers'] = tuple(item.strip() if isinstance(item, str) else item
                                        for item in fields['allowed_peers'])
    keys = fields.get('peer_public_keys')
    if isinstance(keys, list):
        mapping = {}
        for item in keys:
            rrn, separator, path = str(item).partition('=')
            if not separator or not rrn.strip() or not path.strip():
                raise ValueError(f'{FEDERATION}peer_public_keys: {item!r} is not "RRN=path", e.g. '
                                 '"RRN-000000000002=/etc/robot_memory/b.pub"')
            if rrn.strip() in mapping:
                raise ValueError(f'{FEDERATION}peer_public_keys: {rrn.strip()} is listed twice')
            mapping[rrn.strip()] = path.strip()
        fields['peer_public_keys'] = mapping
    return fields


_HEADER = """\
# Parameters of memory_node (robot_memory). Every parameter is listed here with what it
# means and its allowed values; an invalid value is refused at start-up or on `ros2 param set`
# with a reason. [read-only] parameters take effect at start-up only.
#
#   ros2 launch robot_memory robot_memory_launch.py params_file:=/path/to/this.yaml
#
# The lifecycle constants (reinforce_step ... max_prune_fraction) are RCAN Robot Memory Schema
# 1.0 defaults. robot-memory (the CLI) reads this file with --config, validated as here.
# (Generated from robot_memory/settings.py: python -m robot_memory.settings > this file.)
/**:
  ros__parameters:
"""
_SECTIONS = {'reinforce_step': '--- entry lifecycle (RCAN §4) and the context block (§5) ---',
             'dream.': '--- autodream ---',
             FEDERATION: '--- peer federation (RCAN §6) ---',
             PROPOSALS: "--- proposals: apply each source's changes, or queue them for "
                        'approval ---'}


def flat_parameters(mapping: dict, prefix: str = '') -> dict:
    """Return a parameters file's ``ros__parameters`` as rcl reads them, nested keys dotted."""
    flat = {}
    for key, value in mapping.items():
        if isinstance(value, dict):
            flat.update(flat_parameters(value, f'{prefix}{key}.'))
        else:
            flat[prefix + key] = value
    return flat


def _yaml_value(value) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def render_parameters_file() -> str:
    """Return the text of config/robot_memory.yaml: every parameter, its default and description."""
    lines = [_HEADER.rstrip('\n')]
    group = ''
    for spec in parameter_specs():
        prefix = spec.name.rpartition('.')[0]
        prefix = prefix + '.' if prefix else ''
        section = _SECTIONS.get(spec.name) or (_SECTIONS.get(prefix) if prefix != group else None)
        indent = '    ' + '  ' * bool(prefix)
        if section:
            lines += ['', f'    # {section}']
            if prefix:
                lines.append(f'    {prefix.rstrip(".")}:')
        group = prefix
        comment = spec.description.rstrip('.') + '.'
        if spec.constraints:
            comment += f' Allowed: {spec.constraints}.'
        if spec.read_only:
            comment += ' [read-only]'
        lines += textwrap.wrap(comment, width=99, initial_indent=indent + '# ',
                               subsequent_indent=indent + '# ')
        lines.append(f'{indent}{spec.name[len(prefix):]}: {_yaml_value(spec.default)}')
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    print(render_parameters_file(), end='')
