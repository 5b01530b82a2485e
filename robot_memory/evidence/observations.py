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

r"""
What the robot reports about itself, as plain records: diagnostics, error logs, telemetry.

The ROS layer converts ``diagnostic_msgs/msg/DiagnosticStatus``, ``rcl_interfaces/msg/Log``
(ERROR and FATAL only) and configured telemetry messages into these dataclasses; the
core never sees a ROS message. The same records have a JSON-lines form, one object a
line, used by ``robot-memory ingest`` and for recordings::

    {"stamp": "2026-05-01T01:12:00Z", "source": "diagnostic", "name": "base: left encoder",
     "hardware_id": "wheel_left", "level": 1, "message": "dropped 12 ticks",
     "values": {"ticks_dropped": "12"}}
    {"stamp": "...", "source": "log", "name": "nav2_controller", "level": 40,
     "msg": "Failed to make progress", "file": "controller.cpp", "function": "run", "line": 212}
    {"stamp": "...", "source": "telemetry", "topic": "/battery_state",
     "type": "sensor_msgs/msg/BatteryState", "fields": {"percentage": 0.18, "voltage": 11.1}}

Parsing validates everything and never lets one bad line stop the rest:

* a wrong type, a missing field or an unknown key refuses the line, with a message
  naming the line number and the field;
* strings longer than ``MAX_STRING_CHARS`` (4096) are truncated, not refused: they end
  with ``TRUNCATION_MARKER`` and the line gets a note saying how long the original was
  (a long log message is still evidence);
* NaN and infinite telemetry values are dropped from ``fields`` with a note
  (``sensor_msgs`` uses NaN for "not measured"); a rule on a dropped field simply does
  not fire. NaN or infinity anywhere else refuses the line;
* unpaired surrogate escapes (``"\ud800"``), which no UTF-8 store can hold, become
  U+FFFD with a note.
"""

import array
import dataclasses
import datetime as dt
import functools
import itertools
import json
import math
import re
from typing import Any
from typing import Iterable
from typing import Iterator
from typing import NoReturn
from typing import Optional
from typing import Union

from robot_memory.common import jsontext
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import to_utc
from robot_memory.errors import RobotMemoryError

SOURCES = ('diagnostic', 'log', 'telemetry')
MAX_STRING_CHARS = 4096
MAX_LINE_BYTES = 1 << 20
MAX_KEY_CHARS = 256
MAX_DEPTH = 16
TRUNCATION_MARKER = '…[truncated]'

DIAGNOSTIC_LEVELS = {0: 'OK', 1: 'WARN', 2: 'ERROR', 3: 'STALE'}
LOG_LEVELS = {40: 'ERROR', 50: 'FATAL'}
# ROS 1 rosgraph_msgs/Log levels (ERROR 8, FATAL 16) as their ROS 2 rcl_interfaces/Log ones.
ROS1_LOG_LEVELS = {1: 10, 2: 20, 4: 30, 8: 40, 16: 50}
# Telemetry messages can carry large arrays (point clouds, images): only this many
# items of any sequence are kept as evidence; numbers beyond are of no use to a rule.
MAX_SEQUENCE_ITEMS = 64
MAX_MESSAGE_DEPTH = 12
_TYPE_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9_]*/(?:msg/)?[A-Za-z][A-Za-z0-9_]*$')
_NUMBER = re.compile(r'0[xX][0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?')
_HEX = '[0-9a-fA-F]'
_IDS = tuple((re.compile(pattern), placeholder) for pattern, placeholder in (
    (rf'\b{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}\b', '<uuid>'),
    (rf'\b{_HEX}{{2}}(?::{_HEX}{{2}}){{5}}\b', '<mac>'),
    (r'\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?',
     '<time>'),
    (r'\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b', '<time>'),
    (r'\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b', '<ip>'),
    (r'\[[0-9a-fA-F:]*::[0-9a-fA-F:]*\](?::\d{1,5})?', '<ip>'),
    (r'\b0[xX][0-9a-fA-F]+\b', '#'),  # a hex literal was always a number
    (r'(?<![\w.+-])(?:\d+(?:\.\d+)?\s?(?:h|min|m|s|ms|us|µs|ns)){2,}\b', '<duration>'),
    (r'(?<![\w.+-])\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds|min|mins|minutes|'
     r'h|hrs|hours)\b', '<duration>'),
))
_TOKEN = re.compile(r'(?<![<A-Za-z0-9])[A-Za-z0-9]+(?![A-Za-z0-9>])')
_HEX_TOKEN = re.compile(r'^[0-9a-fA-F]+$')
_DIGIT_RUN = re.compile(r'\d+')
_LETTER_RUN = re.compile(r'[A-Za-z]+')
_NON_FINITE = {'NaN': math.nan, 'Infinity': math.inf, '-Infinity': -math.inf}
_DROPPED = object()
_SURROGATE = re.compile('[\ud800-\udfff]')


class ObservationError(RobotMemoryError, ValueError):
    """A JSON line that cannot become an observation; says which line and field."""

    def __init__(self, message: str, line: Optional[int] = None, field: Optional[str] = None):
        self.line = line
        self.field = field
        self.problem = message
        where = f'line {line}: ' if line is not None else ''
        what = f'{field}: ' if field else ''
        super().__init__(where + what + message)


@dataclasses.dataclass(frozen=True, slots=True)
class DiagnosticObservation:
    """One ``diagnostic_msgs/msg/DiagnosticStatus`` (level 0 OK, 1 WARN, 2 ERROR, 3 STALE)."""

    stamp: dt.datetime
    name: str
    hardware_id: str
    level: int
    message: str
    values: tuple = ()

    source = 'diagnostic'


@dataclasses.dataclass(frozen=True, slots=True)
class LogObservation:
    """One ``rcl_interfaces/msg/Log`` record at ERROR (40) or FATAL (50)."""

    stamp: dt.datetime
    name: str
    level: int
    msg: str
    file: str = ''
    function: str = ''
    line: int = 0

    source = 'log'


@dataclasses.dataclass(frozen=True, slots=True)
class TelemetryObservation:
    """One message from a configured telemetry topic, as a dict of its fields."""

    stamp: dt.datetime
    topic: str
    type: str
    fields: dict = dataclasses.field(default_factory=dict)

    source = 'telemetry'


Observation = Union[DiagnosticObservation, LogObservation, TelemetryObservation]


@dataclasses.dataclass
class ParsedLine:
    """An accepted observation plus notes on what parsing changed (truncation, dropped NaN)."""

    observation: Observation
    notes: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Refusal:
    """A refused line: its number and why."""

    line: int
    message: str


@dataclasses.dataclass
class ParseReport:
    """Everything read from a JSON-lines stream: accepted, refused, and notes by line."""

    accepted: list = dataclasses.field(default_factory=list)
    refused: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)


@functools.lru_cache(maxsize=4096)  # a status's state is compared every report
def message_pattern(text: str) -> str:
    """
    Return ``text`` with what changes from one report of a fault to the next masked.

    Ids become placeholders (``<uuid>``, ``<mac>``, ``<ip>``, ``<time>``, ``<duration>``,
    ``<hex>``, ``<id>`` for serial-like tokens), then every remaining number becomes ``#``;
    whitespace is squeezed. Words and the shape of the message stay, so two faults that
    read differently stay different.
    """
    for pattern, placeholder in _IDS:
        text = pattern.sub(placeholder, text)
    text = _TOKEN.sub(_mask_token, text)
    return ' '.join(_NUMBER.sub('#', text).split())


# What never reaches an entry's text (issue 38, point 5): the ids of _IDS a brain cannot act
# on, a full date and time stamped into a message, and pointers; a clock time, a duration or
# a number stays (they say when and how much).
_TEXT_IDS = tuple((pattern, placeholder) for pattern, placeholder in _IDS
                  if placeholder in ('<uuid>', '<mac>', '<ip>')
                  or pattern.pattern.startswith(r'\b\d{4}-')) + (
    (re.compile(r'\b0[xX][0-9a-fA-F]{6,}\b'), '<ptr>'),)


def identifiers_masked(text: str) -> str:
    """
    Return ``text`` with raw identifiers as placeholders: UUIDs, addresses, stamps, pointers.

    Also serial-like tokens and long hex runs (``<id>``), as ``message_pattern`` finds them;
    words, names with one number (``ttyUSB0``), times and values stay.
    """
    for pattern, placeholder in _TEXT_IDS:
        text = pattern.sub(placeholder, text)
    return _TOKEN.sub(_serial_masked, text)


def identifiers_masked_in(payload: dict) -> dict:
    """Return a copy of ``payload`` whose texts an entry is worded from have their ids masked."""
    return {key: identifiers_masked(value) if key in _NAMED_TEXTS and isinstance(value, str)
            else value for key, value in payload.items()}


# The payload's texts an entry's words come from (the rule templates' fields).
_NAMED_TEXTS = ('name', 'hardware_id', 'message', 'node', 'topic')


def _serial_masked(match: re.Match) -> str:
    token = match.group(0)
    if token.isdigit():
        return token
    masked = _mask_token(match)
    return '<id>' if masked in ('<id>', '<hex>') else masked


def _mask_token(match: re.Match) -> str:
    token = match.group(0)
    if len(token) < 4 or token.isalpha() or token.isdigit():
        return token
    runs = len(_DIGIT_RUN.findall(token))
    if _HEX_TOKEN.match(token) and (len(token) >= 6 or
                                    (runs >= 2 and len(_LETTER_RUN.findall(token)) >= 2)):
        # Letters a-f among digits: an address, a hash, a goal id printed as hex bytes
        # (a short model name such as D435 stays a name with a number).
        return '<hex>'
    if len(token) >= 6 and (runs >= 2 or (runs == 1 and not token[-1].isdigit()
                                          and not token[0].isdigit() and len(token) >= 8)):
        # Digits inside letters more than once (14442C10D13EABCE00, x7k2m9q1): a serial or
        # a random suffix. One trailing number (ttyUSB0, nav2) is a name plus a number.
        return '<id>'
    return token


def level_name(observation: Observation) -> str:
    """Return the level as a word: OK/WARN/ERROR/STALE for diagnostics, ERROR/FATAL for logs."""
    if isinstance(observation, DiagnosticObservation):
        return DIAGNOSTIC_LEVELS[observation.level]
    if isinstance(observation, LogObservation):
        return LOG_LEVELS[observation.level]
    return 'VALUE'


# --------------------------------------------------------------------------- parsing

class _Reader:
    """Field access for one JSON object, with errors that name the line and field."""

    def __init__(self, data: dict, line: Optional[int]):
        self.data = data
        self.line = line
        self.notes: list[str] = []

    def fail(self, field: str, message: str) -> NoReturn:
        raise ObservationError(message, self.line, field)

    def string(self, field: str, required: bool = True, default: str = '',
               clip: bool = True) -> str:
        if field not in self.data:
            if required:
                self.fail(field, 'missing; every observation of this source needs it')
            return default
        value = self.data[field]
        if not isinstance(value, str):
            self.fail(field, f'expected a string, got {_json_type(value)}')
        return self.clip(value, field) if clip else value

    def clip(self, value: str, field: str) -> str:
        return _clip(value, field, self.notes)

    def integer(self, field: str, allowed=None, required: bool = True, default: int = 0) -> int:
        if field not in self.data:
            if required:
                self.fail(field, 'missing; every observation of this source needs it')
            return default
        value = self.data[field]
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f'expected a whole number, got {_json_type(value)}')
        if allowed is not None and value not in allowed:
            self.fail(field, _not_one_of(value, allowed))
        if value < 0:
            self.fail(field, f'must not be negative, got {value}')
        return value


def _clip(value: str, field: str, notes: list) -> str:
    """``value`` storable: unpaired surrogates replaced, cut to MAX_STRING_CHARS (noted)."""
    if len(value) <= MAX_STRING_CHARS and value.isascii():
        return value  # the common case: ASCII holds no surrogates
    if _SURROGATE.search(value):
        notes.append(f'{field}: unpaired surrogate escapes replaced by U+FFFD')
        value = _SURROGATE.sub('\ufffd', value)
    if len(value) <= MAX_STRING_CHARS:
        return value
    notes.append(f'{field}: {len(value)} characters truncated to {MAX_STRING_CHARS}')
    return value[:MAX_STRING_CHARS - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


def _not_one_of(value: int, allowed: dict) -> str:
    choices = ', '.join(f'{key} ({name})' for key, name in allowed.items())
    return f'{value} is not one of {choices}'


def diagnostic(stamp: dt.datetime, name: str, hardware_id: str, level: int, message: str = '',
               values: Iterable = (), notes: Optional[list] = None) -> DiagnosticObservation:
    """
    Return a DiagnosticObservation from fields of the right types, strings made storable.

    The ROS edge calls this with a message's fields (already strings and a byte level);
    ``from_dict`` calls it once a JSON object's types are checked. ``stamp`` is an aware
    UTC datetime; ``values`` are (key, value) string pairs; what clipping changed is
    appended to ``notes``. ObservationError names a level that is not 0-3.
    """
    if level not in DIAGNOSTIC_LEVELS:
        raise ObservationError(_not_one_of(level, DIAGNOSTIC_LEVELS), field='level')
    values = tuple(values)
    everything = ''.join((name, hardware_id, message, *itertools.chain.from_iterable(values)))
    if len(everything) <= MAX_STRING_CHARS and everything.isascii():
        # The common case, checked at once: every string short and free of surrogates.
        return DiagnosticObservation(stamp, name, hardware_id, level, message,
                                     tuple(map(tuple, values)))
    notes = [] if notes is None else notes
    return DiagnosticObservation(
        stamp, _clip(name, 'name', notes), _clip(hardware_id, 'hardware_id', notes), level,
        _clip(message, 'message', notes),
        tuple((_clip(key, 'values', notes), _clip(value, f'values.{key}', notes))
              for key, value in values))


def log(stamp: dt.datetime, name: str, level: int, msg: str, file: str = '',
        function: str = '', line: int = 0, notes: Optional[list] = None) -> LogObservation:
    """
    Return a LogObservation from fields of the right types, strings made storable.

    As :func:`diagnostic`: for the ROS edge and ``from_dict``. ObservationError names a
    level that is not ERROR (40) or FATAL (50), or a negative line.
    """
    if level not in LOG_LEVELS:
        raise ObservationError(_not_one_of(level, LOG_LEVELS), field='level')
    if line < 0:
        raise ObservationError(f'must not be negative, got {line}', field='line')
    notes = [] if notes is None else notes
    return LogObservation(stamp, _clip(name, 'name', notes), level, _clip(msg, 'msg', notes),
                          _clip(file, 'file', notes), _clip(function, 'function', notes), line)


def _json_type(value: Any) -> str:
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return f'the number {value}'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, list):
        return 'a list'
    if isinstance(value, dict):
        return 'an object'
    return type(value).__name__


_ALLOWED_KEYS = {
    'diagnostic': {'stamp', 'source', 'name', 'hardware_id', 'level', 'message', 'values'},
    'log': {'stamp', 'source', 'name', 'level', 'msg', 'file', 'function', 'line'},
    'telemetry': {'stamp', 'source', 'topic', 'type', 'fields'},
}


def _values(reader: _Reader) -> list:
    raw = reader.data.get('values', {})
    pairs = []
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        items = []
        for index, item in enumerate(raw):
            if not isinstance(item, dict) or set(item) != {'key', 'value'}:
                reader.fail(f'values[{index}]', 'expected an object {"key": ..., "value": ...}')
            items.append((item['key'], item['value']))
    else:
        reader.fail('values', f'expected an object of strings, got {_json_type(raw)}')
    for key, value in items:
        if not isinstance(key, str):
            reader.fail('values', f'keys must be strings, got {_json_type(key)}')
        if not isinstance(value, str):
            reader.fail(f'values.{key}', 'expected a string (diagnostic key/values are strings), '
                                         f'got {_json_type(value)}')
        pairs.append((key, value))
    return pairs


def _clean_fields(reader: _Reader, value: Any, path: str, depth: int) -> Any:
    """Validate telemetry fields; drop non-finite numbers (with a note), truncate strings."""
    if depth > MAX_DEPTH:
        reader.fail(path, f'nested deeper than {MAX_DEPTH} levels')
    if isinstance(value, dict):
        cleaned = {}
        for key, item in value.items():
            if not key or len(key) > MAX_KEY_CHARS:
                reader.fail(path, f'field names must be 1 to {MAX_KEY_CHARS} characters')
            key = reader.clip(key, path)
            child = f'{path}.{key}'
            result = _clean_fields(reader, item, child, depth + 1)
            if result is not _DROPPED:
                cleaned[key] = result
        return cleaned
    if isinstance(value, list):
        items = [_clean_fields(reader, item, f'{path}[{index}]', depth + 1)
                 for index, item in enumerate(value)]
        return [None if item is _DROPPED else item for item in items]
    if isinstance(value, float) and not math.isfinite(value):
        reader.notes.append(f'{path}: {value} dropped (not a finite number)')
        return _DROPPED
    if isinstance(value, str):
        return reader.clip(value, path)
    return value


def from_dict(data: Any, line: Optional[int] = None) -> ParsedLine:
    """Validate one decoded JSON object (``stamp`` may also be an aware datetime) and build it."""
    if not isinstance(data, dict):
        raise ObservationError(f'expected a JSON object, got {_json_type(data)}', line)
    reader = _Reader(data, line)
    source = data.get('source')
    if source not in SOURCES:
        reader.fail('source', f'must be one of {", ".join(SOURCES)}, got {source!r}')
    unknown = sorted(set(data) - _ALLOWED_KEYS[source])
    if unknown:
        reader.fail(unknown[0], f'unknown field for a {source} observation (allowed: '
                                f'{", ".join(sorted(_ALLOWED_KEYS[source]))})')
    if 'stamp' not in data:
        reader.fail('stamp', 'missing; give an ISO-8601 time such as 2026-05-01T02:00:00Z')
    stamp = data['stamp']
    if isinstance(stamp, dt.datetime):
        # Built by the ROS edge from a message (JSON never yields a datetime).
        if stamp.tzinfo is None:
            reader.fail('stamp', 'a datetime stamp must be timezone-aware (UTC)')
        stamp = to_utc(stamp)
    elif not isinstance(stamp, str):
        reader.fail('stamp', f'expected an ISO-8601 string, got {_json_type(stamp)}')
    else:
        try:
            stamp = parse_iso(stamp)
        except ValueError as error:
            reader.fail('stamp', str(error))
    observation: Observation
    if source == 'diagnostic':
        observation = diagnostic(
            stamp, reader.string('name', clip=False), reader.string('hardware_id', clip=False),
            reader.integer('level', DIAGNOSTIC_LEVELS),
            reader.string('message', required=False, clip=False), _values(reader),
            reader.notes)
    elif source == 'log':
        observation = log(
            stamp, reader.string('name', clip=False), reader.integer('level', LOG_LEVELS),
            reader.string('msg', clip=False), reader.string('file', required=False, clip=False),
            reader.string('function', required=False, clip=False),
            reader.integer('line', required=False), reader.notes)
    else:
        type_name = reader.string('type')
        if not _TYPE_NAME.match(type_name):
            reader.fail('type', f'{type_name!r} is not a ROS message type such as '
                                'sensor_msgs/msg/BatteryState')
        topic = reader.string('topic')
        if not topic.strip():
            reader.fail('topic', 'must not be empty')
        fields = data.get('fields')
        if not isinstance(fields, dict):
            reader.fail('fields', f'expected an object of the message fields, got '
                                  f'{_json_type(fields)}')
        observation = TelemetryObservation(stamp=stamp, topic=topic, type=type_name,
                                           fields=_clean_fields(reader, fields, 'fields', 1))
    return ParsedLine(observation, reader.notes)


def parse_line(text: Union[str, bytes], line: Optional[int] = None) -> ParsedLine:
    """Parse and validate one JSON line; raise ObservationError naming line and field."""
    if len(text) > MAX_LINE_BYTES:
        raise ObservationError(f'longer than {MAX_LINE_BYTES} bytes; split the record', line)
    if isinstance(text, bytes):
        try:
            text = text.decode('utf-8')
        except UnicodeDecodeError as error:
            raise ObservationError(f'not valid UTF-8 at byte {error.start}', line) from None
    try:
        data = jsontext.loads(text, parse_constant=lambda name: _NON_FINITE[name])
    except ValueError as error:
        raise ObservationError(f'not valid JSON: {error}', line) from None
    return from_dict(data, line)


def iter_lines(lines: Iterable) -> Iterator:
    """
    Yield (line number, ParsedLine or Refusal) for each line of a JSON-lines stream.

    Blank lines are skipped; a refusal never stops the rest. One line at a time: what
    ``robot-memory ingest`` uses, so its memory stays flat whatever the file's size.
    """
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            yield number, parse_line(text, number)
        except ObservationError as error:
            message = f'{error.field}: {error.problem}' if error.field else error.problem
            yield number, Refusal(number, message)


def parse_lines(lines: Iterable) -> ParseReport:
    """Parse a JSON-lines stream (blank lines skipped); refusals never stop the rest."""
    report = ParseReport()
    for number, parsed in iter_lines(lines):
        if isinstance(parsed, Refusal):
            report.refused.append(parsed)
            continue
        report.accepted.append(parsed.observation)
        report.notes.extend((number, note) for note in parsed.notes)
    return report


def to_dict(observation: Observation) -> dict:
    """Return the JSON-lines object of ``observation`` (what ``parse_line`` reads back)."""
    data: dict[str, Any] = {'stamp': format_iso(observation.stamp), 'source': observation.source}
    if isinstance(observation, DiagnosticObservation):
        data.update(name=observation.name, hardware_id=observation.hardware_id,
                    level=observation.level, message=observation.message,
                    values=dict(observation.values))
    elif isinstance(observation, LogObservation):
        data.update(name=observation.name, level=observation.level, msg=observation.msg,
                    file=observation.file, function=observation.function, line=observation.line)
    else:
        data.update(topic=observation.topic, type=observation.type, fields=observation.fields)
    return data


def to_json_line(observation: Observation) -> str:
    """One JSON line (no trailing newline) for ``observation``."""
    return json.dumps(to_dict(observation), ensure_ascii=False, separators=(',', ':'),
                      allow_nan=False)


# --------------------------------------------------------------------------- messages
# The rules that turn ROS messages into observations, shared by memory_node (rclpy
# messages) and ``robot-memory replay`` (rosbags messages): duck-typed, no ROS import.

def byte_level(value) -> int:
    """Return a message's byte level (rclpy gives ``bytes`` of length 1) as an int."""
    if isinstance(value, (bytes, bytearray)):
        return value[0] if value else 0
    return int(value)


def from_status(stamp: dt.datetime, status, skip_prefix: str = ''):
    """
    Return a diagnostic status's observation, or the ObservationError refusing it.

    ``status`` is a (level, name, message, hardware_id, [(key, value), ...]) tuple (as
    ``robot_memory.common.cdr`` reads it); None when its name starts with ``skip_prefix``
    (memory_node's own health reports are left out).
    """
    level, name, message, hardware_id, values = status
    if skip_prefix and name.startswith(skip_prefix):
        return None
    try:
        return diagnostic(stamp, name, hardware_id, level, message, values)
    except ObservationError as error:
        return error


def from_statuses(stamp: dt.datetime, statuses, skip_prefix: str = ''):
    """Yield :func:`from_status` of each status that is not left out."""
    for status in statuses:
        item = from_status(stamp, status, skip_prefix)
        if item is not None:
            yield item


def log_record(record, stamp: dt.datetime, skip_logger: str = '',
               ros1: bool = False) -> Optional[LogObservation]:
    """
    Return a ``/rosout`` record at ERROR or FATAL as an observation, else None.

    ``record`` has the fields of rcl_interfaces/Log (or, ``ros1``, of rosgraph_msgs/Log,
    whose levels are mapped to ROS 2's); records of ``skip_logger`` are left out.
    ObservationError when a field cannot be stored.
    """
    level = byte_level(record.level)
    if ros1:
        level = ROS1_LOG_LEVELS.get(level, level)
    if level < 40 or (skip_logger and record.name == skip_logger):
        return None
    return log(stamp, record.name, level, record.msg, record.file, record.function,
               int(record.line))


def message_fields(message, depth: int = 0):
    """Return a ROS message as plain dicts, lists, numbers and strings (sequences cut short)."""
    if depth > MAX_MESSAGE_DEPTH:
        return None
    if hasattr(message, 'get_fields_and_field_types'):  # rclpy
        return {name: message_fields(getattr(message, name), depth + 1)
                for name in message.get_fields_and_field_types()}
    if hasattr(message, '__msgtype__') and dataclasses.is_dataclass(message):  # rosbags
        # Its constants and type name are dataclass fields too; ROS field names are lower case.
        return {field.name: message_fields(getattr(message, field.name), depth + 1)
                for field in dataclasses.fields(message) if field.name[0].islower()}
    if isinstance(message, (bytes, bytearray)):
        return len(message)
    if isinstance(message, (list, tuple, array.array)) or type(message).__name__ == 'ndarray':
        return [message_fields(item, depth + 1) for item in list(message[:MAX_SEQUENCE_ITEMS])]
    if isinstance(message, (bool, int, float, str)) or message is None:
        return message
    if hasattr(message, 'item'):  # numpy scalars
        return message.item()
    return str(message)


def telemetry(topic: str, type_name: str, message, stamp: dt.datetime) -> ParsedLine:
    """Return a telemetry message as a validated observation (ObservationError if not)."""
    return from_dict({'stamp': stamp, 'source': 'telemetry', 'topic': topic, 'type': type_name,
                      'fields': message_fields(message)})
