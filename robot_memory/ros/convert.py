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
Conversions between ROS 2 messages and the core's plain data, at the edge of the node.

Only this package (``robot_memory.ros``) touches rclpy and message classes. Incoming
diagnostics (taken serialized, see :func:`diagnostic_statuses`), log records and telemetry
become observations through ``observations.from_statuses`` / ``log_record`` /
``telemetry``, duck-typed rules that ``robot-memory replay`` applies to the messages of a
recording too, and that reach the constructors ``robot-memory ingest`` uses, so a message,
a recorded message and a JSON line obey one set of rules. Outgoing entries and context
blocks become ``robot_memory.msg`` messages.
"""

import datetime as dt
import importlib
import json

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.serialization import deserialize_message

from robot_memory.common import cdr
from robot_memory.common.timeutil import UTC
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence import observations
from robot_memory.msg import ContextBlock
from robot_memory.msg import MemoryEntry as MemoryEntryMsg
from robot_memory.msg import MemoryRecord as MemoryRecordMsg
from robot_memory.msg import PeerContext
from robot_memory.rcan import context

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


class MessageTypeError(RobotMemoryError, ValueError):
    """A configured message type cannot be imported."""


def import_message_type(type_name: str):
    """Return the class of ``pkg/msg/Type``; MessageTypeError says what to install or fix."""
    package, _, name = type_name.partition('/msg/')
    if not package or not name:
        raise MessageTypeError(f'{type_name!r} is not of the form pkg/msg/Type')
    try:
        module = importlib.import_module(f'{package}.msg')
    except ImportError as error:
        raise MessageTypeError(
            f'message package {package!r} cannot be imported ({error}); install it '
            f'(e.g. apt install ros-$ROS_DISTRO-{package.replace("_", "-")}) or fix the '
            'type name') from None
    cls = getattr(module, name, None)
    if cls is None or not hasattr(cls, 'get_fields_and_field_types'):
        raise MessageTypeError(f'{package}.msg has no message type {name!r}; check the '
                               'spelling (types are CamelCase, e.g. BatteryState)')
    return cls


def time_to_datetime(stamp) -> dt.datetime:
    """Return a builtin_interfaces/Time as an aware UTC datetime (exact to the microsecond)."""
    return _EPOCH + dt.timedelta(seconds=int(stamp.sec), microseconds=int(stamp.nanosec) // 1000)


def datetime_to_time(value) -> Time:
    """
    Return an aware datetime (or None, as time zero) as builtin_interfaces/Time (exact).

    Exact both ways, so a signed peer payload's timestamps survive the message unchanged.
    """
    if value is None:
        return Time()
    delta = value - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    return Time(sec=int(seconds), nanosec=delta.microseconds * 1000)


class MessageDecodeError(RobotMemoryError, ValueError):
    """A serialized message that neither the CDR reader nor rclpy can read."""


def diagnostic_statuses(raw: bytes) -> list:
    """
    Return the statuses of a serialized DiagnosticArray as tuples.

    Each is (level, name, message, hardware_id, [(key, value), ...]).

    Read straight from the bytes (``robot_memory.common.cdr``, several times cheaper than
    building message objects); what that reader does not take is deserialized by rclpy.
    """
    try:
        return cdr.diagnostic_statuses(raw)
    except cdr.CdrError:
        pass
    try:
        array = deserialize_message(raw, DiagnosticArray)
    except Exception as error:  # noqa: B902 - rclpy raises RMWError, or others on garbage
        raise MessageDecodeError(f'a DiagnosticArray that cannot be deserialized ({error})') \
            from None
    return [(observations.byte_level(status.level), status.name, status.message, status.hardware_id,
             [(item.key, item.value) for item in status.values]) for status in array.status]


def entry_message(line) -> MemoryEntryMsg:
    """Return a context line (entry, effective confidence, source) as robot_memory/MemoryEntry."""
    entry = line.entry
    return MemoryEntryMsg(
        id=entry.id, type=entry.type, text=entry.text, confidence=float(entry.confidence),
        effective_confidence=float(line.effective_confidence),
        first_seen=datetime_to_time(entry.first_seen),
        last_reinforced=datetime_to_time(entry.last_reinforced),
        observation_count=int(entry.observation_count or 0), tags=list(entry.tags),
        source_rrn=line.source_rrn)


def context_message(block) -> ContextBlock:
    """Return a core ContextBlock as robot_memory/ContextBlock."""
    highest = block.below_threshold_entry
    return ContextBlock(
        rrn=block.rrn, stamp=datetime_to_time(block.at), text=block.text,
        entries=[entry_message(line) for line in block.entries],
        peer_entries=[entry_message(line) for line in block.peer_entries],
        token_estimate=int(block.token_estimate), omitted=int(block.omitted),
        recent_entries=[entry_message(line) for line in block.recent],
        below_threshold=int(block.below_threshold),
        below_threshold_max=float(block.below_threshold_max or 0.0),
        below_threshold_id=highest.id if highest is not None else '',
        summary=context.summary(block), framing=block.framing,
        relevant_ids=[line.entry.id for line in block.relevant],
        left_out_ids=[line.entry.id for line in block.left_out])


# --------------------------------------------------------------------------- federation

def peer_context_data(message) -> dict:
    """Return a robot_memory/PeerContext as the payload ``federation.validate_payload`` checks."""
    return {'rrn': message.rrn, 'sent_at': time_to_datetime(message.sent_at),
            'signature': message.signature,
            'entries': [{'id': entry.id, 'type': entry.type, 'text': entry.text,
                         'confidence': float(entry.confidence),
                         'first_seen': time_to_datetime(entry.first_seen),
                         'last_reinforced': time_to_datetime(entry.last_reinforced),
                         'observation_count': int(entry.observation_count),
                         'tags': list(entry.tags)}
                        for entry in message.entries]}


def peer_context_message(payload) -> PeerContext:
    """Return a ``federation.PeerPayload`` as robot_memory/PeerContext."""
    return PeerContext(
        rrn=payload.rrn, sent_at=datetime_to_time(payload.sent_at), signature=payload.signature,
        entries=[MemoryEntryMsg(
            id=entry.id, type=entry.type, text=entry.text, confidence=float(entry.confidence),
            effective_confidence=float(entry.confidence),
            first_seen=datetime_to_time(entry.first_seen),
            last_reinforced=datetime_to_time(entry.last_reinforced),
            observation_count=int(entry.observation_count), tags=list(entry.tags))
            for entry in payload.entries])


# --------------------------------------------------------------------------- substrate

def record_message(hit) -> MemoryRecordMsg:
    """Return a substrate ``RecallHit`` as robot_memory/MemoryRecord."""
    extra = {key: value for key, value in (('payload', hit.payload), ('context', hit.context))
             if value is not None}
    return MemoryRecordMsg(
        id=hit.id, type=hit.type, status=hit.status, text=hit.text, sensitivity=hit.sensitivity,
        confidence=float(hit.confidence or 0.0), salience=float(hit.salience or 0.0),
        score=float(hit.score), redacted=bool(hit.redacted), tags=list(hit.tags or ()),
        payload_json=json.dumps(extra, ensure_ascii=False, default=str) if extra else '')
