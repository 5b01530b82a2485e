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
What replay reads of a recorded DiagnosticArray is what rosbags' own serializer wrote.

rosbags (the recordings' library) is the reference here, as rclpy is in test/ros/test_cdr.py:
random arrays (any unicode but NUL, empty strings, empty values, many statuses, both byte
orders) serialized by rosbags read back field for field through ``cdr.diagnostic_statuses``
and through ``cdr.ArrayCache`` (which reads each distinct array once), whatever the header
stamp; cut or garbled bytes are refused with CdrError only, and in a replay they are
counted as unreadable while the good messages around them are taken.
"""

import datetime as dt
import struct

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from rosbags.rosbag2 import StoragePlugin
from rosbags.rosbag2 import Writer
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores

from robot_memory.bags import replay
from robot_memory.bags import write
from robot_memory.common import cdr
from robot_memory.evidence.store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile

STORE = get_typestore(Stores.ROS2_KILTED)
KIND = 'diagnostic_msgs/msg/DiagnosticArray'
START_NS = int(dt.datetime(2026, 5, 1, 1, 0, tzinfo=dt.timezone.utc).timestamp()) * 10**9
# NUL is left out: rclpy (whose reading cdr follows) cuts a string at it, rosbags does not;
# levels over 127 too: rosbags writes a byte as a signed int8.
text = st.text(st.characters(blacklist_categories=('Cs',), blacklist_characters='\0'),
               max_size=30)
status = st.fixed_dictionaries({
    'level': st.integers(0, 127), 'name': text, 'message': text, 'hardware_id': text,
    'values': st.lists(st.fixed_dictionaries({'key': text, 'value': text}), max_size=5)})
arrays = st.fixed_dictionaries({
    'header': st.fixed_dictionaries({'stamp': st.fixed_dictionaries({
        'sec': st.integers(-2**31, 2**31 - 1), 'nanosec': st.integers(0, 999_999_999)}),
        'frame_id': text}),
    'status': st.one_of(st.lists(status, max_size=6),
                        st.lists(status, min_size=30, max_size=40))})


def serialized(fields: dict, little_endian: bool = True) -> bytes:
    """Return the array serialized by rosbags."""
    message = write.build(STORE, KIND, fields)
    return bytes(STORE.serialize_cdr(message, KIND, little_endian=little_endian))


def as_rosbags_reads(raw: bytes) -> list:
    """Return what rosbags makes of ``raw``, in cdr's form."""
    array = STORE.deserialize_cdr(raw, KIND)
    return [(int(item.level), item.name, item.message, item.hardware_id,
             [(pair.key, pair.value) for pair in item.values]) for item in array.status]


def restamped(raw: bytes, sec: int, nanosec: int) -> bytes:
    """Return ``raw`` with another header stamp."""
    order = '<' if raw[1] else '>'
    return raw[:4] + struct.pack(order + 'iI', sec, nanosec) + raw[12:]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays, st.booleans())
def test_reads_what_rosbags_serialized_exactly(fields, little_endian):
    raw = serialized(fields, little_endian)
    expected = as_rosbags_reads(raw)
    assert cdr.diagnostic_statuses(raw) == expected
    cache = cdr.ArrayCache()
    assert list(cache.get(raw)) == expected
    # Kept (unless longer than max_bytes), and handed out again for the same array under
    # another stamp, exactly.
    again = restamped(raw, 7, 8)
    assert (cache.get(again) is cache.get(raw)) == (len(raw) - 10 <= 4096)
    assert list(cache.get(again)) == as_rosbags_reads(again)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(arrays, min_size=2, max_size=12), st.integers(1, 4))
def test_the_cache_stays_exact_and_bounded_over_many_arrays(many, entries):
    cache = cdr.ArrayCache(entries=entries, max_bytes=400)
    raws = [serialized(fields) for fields in many]
    for raw in raws + raws[::-1]:
        assert list(cache.get(raw)) == as_rosbags_reads(raw)
        assert len(cache._kept) <= entries
        assert all(len(key) <= 400 for key in cache._kept)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays, st.data())
def test_cut_bytes_are_refused_with_cdr_error(fields, data):
    raw = serialized(fields)
    cut = data.draw(st.integers(0, len(raw) - 1))
    cache = cdr.ArrayCache()
    cache.get(raw)
    for reader in (cdr.diagnostic_statuses, cache.get):
        try:
            read = reader(raw[:cut])
        except cdr.CdrError:
            continue
        # Only trailing alignment can go without changing what the array says.
        assert list(read) == as_rosbags_reads(raw)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays, st.data())
def test_garbled_bytes_give_cdr_error_or_well_formed_statuses(fields, data):
    raw = bytearray(serialized(fields))
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        read = cdr.ArrayCache().get(bytes(raw))
    except cdr.CdrError:
        return
    for level, name, message, hardware_id, values in read:
        assert 0 <= level <= 255
        assert all(isinstance(item, str) for item in (name, message, hardware_id))
        assert all(isinstance(key, str) and isinstance(value, str) for key, value in values)


def test_a_replay_counts_cut_arrays_as_unreadable_and_takes_the_rest(tmp_path):
    good = [{'level': 1, 'name': 'base: motor', 'hardware_id': 'motor', 'message': 'hot',
             'values': [{'key': 'temperature', 'value': '71'}]}]
    raw = serialized({'status': good})
    path = tmp_path / 'bag'
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection('/diagnostics', KIND, typestore=STORE)
        for index in range(30):
            message = raw if index % 3 else raw[:len(raw) - 1 - index % 7]
            writer.write(connection, START_NS + index * 10**9, message)
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        summary = replay.replay([path], store, MemoryFile(tmp_path / 'robot-memory.md'),
                                replay.ReplayOptions(nightly=None))
    assert summary.observations == 20
    [(why, count)] = summary.skipped.items()
    assert why.startswith('/diagnostics: a message that cannot be deserialized') and count == 10
