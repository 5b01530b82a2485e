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
Writing recordings (MCAP, sqlite3, ROS 1) from observations: test and benchmark data.

:func:`write_bag` takes a plain iterable of (recorded time, topic, message). A message is
an observation (``robot_memory.evidence.observations``), written as the message the robot would
have published (a diagnostic as a one-status ``DiagnosticArray``, a log record as
``rcl_interfaces/Log`` or, in a ROS 1 bag, ``rosgraph_msgs/Log``, telemetry as its type
built from its fields), or a plain dict of fields with the type named, or a rosbags message.
"""

from io import BytesIO
import pathlib
from typing import Union

import numpy
from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer as Writer2
from rosbags.rosbag2.enums import CompressionFormat
from rosbags.rosbag2.enums import CompressionMode
from rosbags.rosbag2.storage_mcap import McapWriter
from rosbags.rosbag2.storage_mcap import write_record
from rosbags.rosbag2.storage_mcap import write_string
from rosbags.rosbag2.storage_mcap import write_uint32
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from rosbags.typesys.base import Nodetype

from robot_memory.bags import read
from robot_memory.evidence import observations

FORMATS = ('mcap', 'sqlite3', 'ros1')
_DTYPES = {'bool': numpy.bool_, 'byte': numpy.uint8, 'char': numpy.uint8, 'int8': numpy.int8,
           'uint8': numpy.uint8, 'int16': numpy.int16, 'uint16': numpy.uint16,
           'int32': numpy.int32, 'uint32': numpy.uint32, 'int64': numpy.int64,
           'uint64': numpy.uint64, 'float32': numpy.float32, 'float64': numpy.float64}
_ROS1_LEVELS = {ros2: ros1 for ros1, ros2 in observations.ROS1_LOG_LEVELS.items()}


def typestore(fmt: str, types=None):
    """Return the rosbags type store a bag of ``fmt`` is written with (plus ``types``)."""
    store = get_typestore(Stores.ROS1_NOETIC if fmt == 'ros1' else Stores.ROS2_KILTED)
    if types:
        store.register(types)
    return store


def _time(ns: int) -> dict:
    return {'sec': ns // 10**9, 'nanosec': ns % 10**9}


def message_data(observation, ros1: bool = False) -> tuple:
    """Return (default topic, type name, fields) of the message an observation came from."""
    stamp = _time(read.ns_of(observation.stamp))
    header = {'stamp': stamp, 'frame_id': ''}
    if isinstance(observation, observations.DiagnosticObservation):
        status = {'level': observation.level, 'name': observation.name,
                  'message': observation.message, 'hardware_id': observation.hardware_id,
                  'values': [{'key': key, 'value': value} for key, value in observation.values]}
        return ('/diagnostics', 'diagnostic_msgs/msg/DiagnosticArray',
                {'header': header, 'status': [status]})
    if isinstance(observation, observations.LogObservation):
        fields = {'level': observation.level, 'name': observation.name, 'msg': observation.msg,
                  'file': observation.file, 'function': observation.function,
                  'line': observation.line}
        if ros1:
            return ('/rosout', 'rosgraph_msgs/msg/Log',
                    dict(fields, header=header, level=_ROS1_LEVELS[observation.level]))
        return '/rosout', 'rcl_interfaces/msg/Log', dict(fields, stamp=stamp)
    return observation.topic, observation.type, observation.fields


def build(store, type_name: str, data):
    """Return a rosbags message of ``type_name`` from a dict of fields (missing ones zero)."""
    _, fields = store.fielddefs[type_name]
    data = data if isinstance(data, dict) else {}
    return store.types[type_name](**{name: _value(store, node, desc, data.get(name))
                                     for name, (node, desc) in fields})


def _value(store, node, desc, value):
    if node == Nodetype.NAME:
        return build(store, desc, value)
    if node == Nodetype.BASE:
        kind = desc[0]
        if kind == 'string':
            return '' if value is None else str(value)
        if kind.startswith('float'):
            return float(value or 0.0)
        if kind == 'bool':
            return bool(value)
        return int(value or 0)
    (inner, inner_desc), length = desc
    items = list(value or [])
    if node == Nodetype.ARRAY:
        items = (items + [None] * length)[:length]
    if inner == Nodetype.BASE and inner_desc[0] in _DTYPES:
        return numpy.array([item or 0 for item in items], dtype=_DTYPES[inner_desc[0]])
    return [_value(store, inner, inner_desc, item) for item in items]


class _McapWithMetadata(McapWriter):
    """rosbags' MCAP writer that also writes the metadata records given (a fleet's, say)."""

    records: dict = {}

    def close(self, version: int, metadata: str) -> None:
        if self.chunk.bio.tell():
            self.close_chunk()
        for name, values in self.records.items():
            body = BytesIO()
            write_string(body, name)
            entries = BytesIO()
            for key, value in values.items():
                write_string(entries, key)
                write_string(entries, value)
            write_uint32(body, entries.tell())
            body.write(entries.getbuffer())
            write_record(self.bio, 0x0C, body)
        super().close(version, metadata)


class _Writer2(Writer2):
    STORAGE_PLUGINS = {**Writer2.STORAGE_PLUGINS, StoragePlugin.MCAP: _McapWithMetadata}
    records: dict = {}

    def open(self) -> None:
        super().open()
        if isinstance(self.storage, _McapWithMetadata):
            self.storage.records = self.records


COMPRESSION = {'file': CompressionMode.FILE, 'message': CompressionMode.MESSAGE,
               'storage': CompressionMode.STORAGE}


def write_bag(path, items, fmt: str = 'mcap', custom=None, compress: str = '',
              types=None, metadata=None) -> pathlib.Path:
    """
    Write (time, topic, message) items as a recording of ``fmt``; return its path.

    ``time`` is an aware datetime or ns since the epoch; ``topic`` None takes the
    observation's own (/diagnostics, /rosout, its telemetry topic); ``message`` is an
    observation, a (type name, fields dict) pair, or a rosbags message. ``custom`` is
    rosbag2 custom data (e.g. ``{'rrn': ...}``); ``compress`` (file, message or, for MCAP,
    storage: its chunks) compresses a rosbag2 recording with zstd; ``types`` adds message
    definitions (custom types); ``metadata`` ({name: {key: value}}) adds MCAP metadata
    records.
    """
    if fmt not in FORMATS:
        raise ValueError(f'format must be one of {", ".join(FORMATS)}, got {fmt!r}')
    path = pathlib.Path(path)
    store = typestore(fmt, types)
    ros1 = fmt == 'ros1'
    writer: Union[Writer1, Writer2]
    if ros1:
        writer = Writer1(path)
    else:
        plugin = StoragePlugin.MCAP if fmt == 'mcap' else StoragePlugin.SQLITE3
        writer2 = _Writer2(path, version=9, storage_plugin=plugin)
        for key, value in (custom or {}).items():
            writer2.set_custom_data(key, str(value))
        if compress:
            writer2.set_compression(COMPRESSION[compress], CompressionFormat.ZSTD)
        writer2.records = dict(metadata or {})
        writer = writer2
    connections = {}
    serialize = store.serialize_ros1 if ros1 else store.serialize_cdr
    with writer:
        for time, topic, message in items:
            if isinstance(message, tuple):
                type_name, message = message[0], build(store, message[0], message[1])
            elif hasattr(message, '__msgtype__'):
                type_name = message.__msgtype__
            else:
                default, type_name, fields = message_data(message, ros1)
                topic = topic or default
                message = build(store, type_name, fields)
            key = (topic, type_name)
            if key not in connections:
                connections[key] = writer.add_connection(topic, type_name, typestore=store)
            writer.write(connections[key], read.ns_of(time), serialize(message, type_name))
    return path
