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
robot_memory.common.cdr reads a serialized DiagnosticArray exactly as rclpy does, or refuses.

rclpy's own serializer and deserializer are the reference: generated messages (any
unicode, embedded NULs, any level byte, many key/values) are serialized by rclpy and must
read back field for field as rclpy deserializes them; damaged buffers are either refused
with CdrError or read as rclpy reads them. A small independent encoder makes the
big-endian form, which rclpy does not produce.
"""

import struct

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
from rclpy.serialization import deserialize_message
from rclpy.serialization import serialize_message

from robot_memory.common.cdr import CdrError
from robot_memory.common.cdr import diagnostic_statuses

text = st.text(st.characters(blacklist_categories=('Cs',)), max_size=40)
statuses = st.builds(
    lambda level, name, message, hardware_id, values: DiagnosticStatus(
        level=bytes([level]), name=name, message=message, hardware_id=hardware_id,
        values=[KeyValue(key=key, value=value) for key, value in values]),
    st.integers(0, 255), text, text, text, st.lists(st.tuples(text, text), max_size=6))
arrays = st.builds(
    lambda items, frame, sec: _array(items, frame, sec),
    st.lists(statuses, max_size=8), text, st.integers(-2 ** 31, 2 ** 31 - 1))


def _array(items, frame_id, sec):
    array = DiagnosticArray(status=items)
    array.header.frame_id = frame_id
    array.header.stamp.sec = sec
    return array


def as_rclpy_reads(raw: bytes) -> list:
    """Return what rclpy makes of ``raw``, in the reader's form."""
    array = deserialize_message(raw, DiagnosticArray)
    return [(status.level[0], status.name, status.message, status.hardware_id,
             [(item.key, item.value) for item in status.values]) for status in array.status]


def encode(array: DiagnosticArray, big_endian: bool) -> bytes:
    """Return an independent XCDR1 encoder (strings NUL-terminated, 4-byte aligned lengths)."""
    order = '>' if big_endian else '<'
    body = bytearray()

    def align():
        body.extend(b'\0' * (-len(body) % 4))

    def u32(value):
        align()
        body.extend(struct.pack(order + 'I', value))

    def string(value):
        data = value.encode('utf-8') + b'\0'
        u32(len(data))
        body.extend(data)

    u32(array.header.stamp.sec & 0xFFFFFFFF)
    u32(array.header.stamp.nanosec)
    string(array.header.frame_id)
    u32(len(array.status))
    for status in array.status:
        body.extend(status.level)
        string(status.name)
        string(status.message)
        string(status.hardware_id)
        u32(len(status.values))
        for item in status.values:
            string(item.key)
            string(item.value)
    return (b'\0\0' if big_endian else b'\0\1') + b'\0\0' + bytes(body)


# deadline=None: the first example loads rclpy's type support for the message (340 ms seen
# on a loaded machine, Jazzy); timing is not what these tests check.
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays)
def test_reads_what_rclpy_serialized_exactly_as_rclpy_deserializes_it(array):
    raw = serialize_message(array)
    assert diagnostic_statuses(raw) == as_rclpy_reads(raw)


@settings(max_examples=100, deadline=None)
@given(arrays)
def test_the_independent_encoder_agrees_with_rclpy_and_big_endian_reads_the_same(array):
    little = encode(array, big_endian=False)
    assert diagnostic_statuses(little) == as_rclpy_reads(little)
    assert diagnostic_statuses(encode(array, big_endian=True)) == as_rclpy_reads(little)


def test_embedded_nul_and_invalid_utf8_mean_what_they_mean_to_rclpy():
    array = _array([DiagnosticStatus(level=b'\x01', name='wheel', message='xy',
                                     hardware_id='w')], '', 0)
    raw = bytearray(encode(array, big_endian=False))
    at = raw.index(b'wheel')
    raw[at + 2] = 0          # 'wh\0el': rclpy cuts at the NUL
    message_at = raw.index(b'xy')
    raw[message_at:message_at + 2] = b'\xff\xfe'   # not UTF-8: replaced
    (level, name, message, _, _), = diagnostic_statuses(bytes(raw))
    assert (level, name, message) == (1, 'wh', '\ufffd\ufffd')
    assert diagnostic_statuses(bytes(raw)) == as_rclpy_reads(bytes(raw))


@pytest.mark.parametrize('scheme', [b'\0\6', b'\0\7', b'\0\2', b'\1\1'])
def test_other_encapsulations_are_refused(scheme):
    raw = serialize_message(_array([DiagnosticStatus(name='a')], '', 0))
    with pytest.raises(CdrError, match='encapsulation'):
        diagnostic_statuses(scheme + raw[2:])


@pytest.mark.parametrize('raw', [b'', b'\0', b'\0\1\0\0', b'\0\1\0\0' + bytes(15)])
def test_too_short_a_buffer_is_refused(raw):
    with pytest.raises(CdrError):
        diagnostic_statuses(raw)


def test_every_truncation_is_refused_or_read_as_rclpy_reads_it():
    array = _array([DiagnosticStatus(level=b'\x02', name='base: left', message='dropped 12',
                                     hardware_id='wheel_left',
                                     values=[KeyValue(key='ticks', value='12')]),
                    DiagnosticStatus(name='imu', message='ok')], 'base', 7)
    raw = serialize_message(array)
    for end in range(len(raw)):
        check_refused_or_same(raw[:end])


def check_refused_or_same(raw: bytes) -> None:
    try:
        ours = diagnostic_statuses(raw)
    except CdrError:
        return
    assert ours == as_rclpy_reads(raw)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays, st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                        max_size=4))
def test_damaged_bytes_are_refused_or_read_as_rclpy_reads_them(array, edits):
    raw = bytearray(serialize_message(array))
    for where, value in edits:
        raw[4 + where % max(1, len(raw) - 4)] = value
    check_refused_or_same(bytes(raw))


def test_a_count_that_cannot_fit_is_refused_before_any_work():
    raw = bytearray(serialize_message(_array([], '', 0)))
    raw[-4:] = struct.pack('<I', 2 ** 32 - 1)   # four billion statuses in 0 bytes
    with pytest.raises(CdrError, match='cannot fit'):
        diagnostic_statuses(bytes(raw))


def test_repeated_strings_are_shared_and_the_caches_stay_bounded(monkeypatch):
    """A flood's repeated names and values become the same objects; long ones are not kept."""
    from robot_memory.common import cdr
    monkeypatch.setattr(cdr, '_TEXTS', {})
    monkeypatch.setattr(cdr, '_PAIRS', {})
    long_text = 'x' * (cdr._CACHE_BYTES + 1)

    def status(count):
        return DiagnosticStatus(level=b'\x02', name='lidar', message=long_text,
                                hardware_id='lidar-0',
                                values=[KeyValue(key='count', value=str(count)),
                                        KeyValue(key='state', value='stalled')])
    first, second = (diagnostic_statuses(encode(_array([status(count)], '', 0), False))[0]
                     for count in (1, 2))
    assert first[1] is second[1] and first[3] is second[3]            # name, hardware_id
    assert first[2] == second[2] == long_text and first[2] is not second[2]
    assert first[4][1] is second[4][1] and first[4][0] != second[4][0]  # the pairs
    for count in range(3 * cdr._CACHE_ENTRIES):
        diagnostic_statuses(encode(_array([status(count)], '', 0), False))
    assert len(cdr._TEXTS) <= cdr._CACHE_ENTRIES and len(cdr._PAIRS) <= cdr._CACHE_ENTRIES
    assert all(len(key) <= cdr._CACHE_BYTES for key in cdr._TEXTS)
