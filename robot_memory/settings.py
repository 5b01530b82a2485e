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

Five groups: the node's own settings (:class:`NodeSettings`), the RCAN lifecycle
constants (``lifecycle.LifecycleConfig``, top-level names such as ``decay_per_day``), the
dream settings (``DreamConfig``, names prefixed ``dream.``), the peer
federation policy (``federation.FederationPolicy``, names prefixed ``federation.``; ROS
parameters have no maps or nulls, so a key file path is a string, empty for none, and
``peer_public_keys`` is a list of ``"RRN=path"``) and which sources' changes wait for
approval (``ProposalSettings``, names prefixed ``proposals.``). These are pydantic models;
``robot_memory.settings_file`` makes them ROS 2 parameter specs, validates values as a whole,
reads a parameters file and writes ``config/robot_memory.yaml``.
"""

import re
from typing import Any
from typing import Optional
import zoneinfo

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator

from robot_memory.common.timeutil import parse_iso
from robot_memory.errors import SettingsConflict
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
                                "are taken in as peer entries from the fleet, and the store's "
                                'acks must carry its signature (fleet serve --fleet-key); empty: '
                                'no lessons are taken and unsigned acks are believed')
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
