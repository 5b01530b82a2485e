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
and through ``cdr.StatusCache`` (which reads each distinct status once), whatever the
header stamp, whichever statuses repeat, change or move to another alignment; cut or
garbled bytes are refused with CdrError only, and in a replay they are counted as
unreadable while the good messages around them are taken. What replay stores through its
reader (statuses kept, patched and renumbered) is what adding each observation stores.
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
from robot_memory.common import cdr
from robot_memory.evidence import observations
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer

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
    message = bag_writer.build(STORE, KIND, fields)
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


def kept_statuses(cache: cdr.StatusCache) -> list:
    """Return the bytes of every status ``cache`` keeps."""
    return [raw for slots in cache._kept.values() for slot in slots for raw, *_ in slot.values()]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays, st.booleans())
def test_reads_what_rosbags_serialized_exactly(fields, little_endian):
    raw = serialized(fields, little_endian)
    expected = as_rosbags_reads(raw)
    assert cdr.diagnostic_statuses(raw) == expected
    cache = cdr.StatusCache()
    first = cache.get(raw)
    assert first == expected
    # Kept (unless longer than max_bytes), and handed out again for the same statuses under
    # another stamp, exactly.
    again = restamped(raw, 7, 8)
    assert cache.get(again) == as_rosbags_reads(again)
    kept = kept_statuses(cache)
    assert all(len(item) <= 512 for item in kept)
    assert any(a is b for a, b in zip(cache.get(again), first)) == bool(kept)


# Arrays built from a few statuses, each repeated as it was or with one string changed,
# behind frame ids of 0-3 characters (so a status comes back at another alignment).
changes = st.lists(st.tuples(st.integers(0, 5), st.sampled_from(
    ['', 'name', 'message', 'hardware_id', 'value', 'same_length', 'level', 'longer']), st.text(
        st.characters(blacklist_categories=('Cs',), blacklist_characters='\0'), max_size=6)),
    max_size=12)
sequences = st.tuples(st.lists(status, min_size=1, max_size=6),
                      st.lists(st.tuples(st.integers(0, 3), changes), min_size=1, max_size=8))


def changed(item: dict, what: str, new: str) -> dict:
    """Return the status ``item`` with one of its fields changed to ``new``."""
    item = dict(item, values=[dict(pair) for pair in item['values']])
    if what in ('name', 'message', 'hardware_id'):
        item[what] = new
    elif what == 'value' and item['values']:
        item['values'][0]['value'] = new
    elif what == 'same_length' and item['values']:  # a voltage's next reading
        last = item['values'][-1]
        last['value'] = (new * len(last['value']))[:len(last['value'])] or last['value']
    elif what == 'level':
        item['level'] = (item['level'] + 1) % 128
    elif what == 'longer':
        item['values'].append({'key': new, 'value': new})
    return item


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(sequences, st.integers(1, 6), st.sampled_from([24, 64, 512]), st.booleans())
def test_repeated_and_changed_statuses_read_exactly_and_bounded(
        sequence, entries, max_bytes, little_endian):
    pool, plan = sequence
    cache = cdr.StatusCache(entries=entries, max_bytes=max_bytes)
    for frame, picks in plan:
        statuses = [changed(pool[index % len(pool)], what, new) for index, what, new in picks]
        raw = serialized({'header': {'frame_id': 'f' * frame}, 'status': statuses},
                         little_endian)
        assert cache.get(raw) == as_rosbags_reads(raw)
        kept = kept_statuses(cache)
        assert len(kept) <= entries and all(len(item) <= max_bytes for item in kept)


def test_each_status_is_derived_once_and_left_out_when_derive_says_none():
    derived = []

    def derive(item):
        derived.append(item[1])
        return None if item[1].startswith('memory_node: ') else item[1].upper()

    def array(volts: str) -> bytes:
        return serialized({'status': [
            {'name': 'base: battery', 'values': [{'key': 'voltage', 'value': volts}]},
            {'name': 'memory_node: health'}, {'name': 'base: motors', 'message': 'ok'}]})

    cache = cdr.StatusCache(derive)
    assert cache.get(array('25.8')) == ['BASE: BATTERY', 'BASE: MOTORS']
    assert cache.get(array('25.8')) == cache.get(array('25.7')) == ['BASE: BATTERY',
                                                                    'BASE: MOTORS']
    assert derived == ['base: battery', 'memory_node: health', 'base: motors', 'base: battery']


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(arrays, st.data())
def test_cut_bytes_are_refused_with_cdr_error(fields, data):
    raw = serialized(fields)
    cut = data.draw(st.integers(0, len(raw) - 1))
    cache = cdr.StatusCache()
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
def test_garbled_bytes_read_as_the_reader_reads_them_or_give_cdr_error(fields, data):
    good = serialized(fields)
    raw = bytearray(good)
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cache = cdr.StatusCache()
    cache.get(good)  # what the garbled statuses were is kept: they must not be taken for it
    try:
        read = cache.get(bytes(raw))
    except cdr.CdrError:
        read = None
    try:
        reread = cdr.diagnostic_statuses(bytes(raw))
    except cdr.CdrError:
        reread = None
    assert read == reread
    for level, name, message, hardware_id, values in read or ():
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


# Values as robots send them: numbers that change (some at the same length, some not),
# numbers that are not finite, words, percentages, keys that repeat.
value_text = st.one_of(st.sampled_from(['26.10', '26.11', '9.9', '10.0', '-0', '1e400', 'nan',
                                        'inf', '42%', 'OK', '', '1_000', '７']),
                       st.floats(-1e6, 1e6).map(lambda number: f'{number:.2f}'))
robot_status = st.fixed_dictionaries({
    'level': st.sampled_from([0, 1, 2, 3]),
    'name': st.sampled_from(['base: battery', 'base: motors', 'lidar: scan rate',
                             'memory_node: health']),
    'message': st.sampled_from(['OK', 'OK', 'Voltage low', 'Motor 2 hot']),
    'hardware_id': st.just('a200'),
    'values': st.lists(st.fixed_dictionaries({
        'key': st.sampled_from(['voltage', 'current', 'rate', 'state']), 'value': value_text}),
        max_size=4)})


# Each second: (status, value, new text) changes, and a status whose level flips.
robot_seconds = st.lists(st.tuples(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), value_text), max_size=3),
    st.one_of(st.none(), st.integers(0, 3)), st.integers(1, 90)), min_size=1, max_size=60)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(robot_status, min_size=1, max_size=4), robot_seconds)
def test_replay_reading_stores_what_adding_each_observation_stores(
        tmp_path_factory, statuses, seconds):
    """status_reader + add_prepared (statuses kept, patched, renumbered) == add one by one."""
    directory = tmp_path_factory.mktemp('same')
    stamp = START_NS / 1e9
    with EvidenceStore(directory / 'one.db') as one, EvidenceStore(directory / 'two.db') as two:
        reader = replay.status_reader(two, 'memory_node: ')
        for changes, flip, step in seconds:
            for index, value, text in changes:
                values = statuses[index % len(statuses)]['values']
                if values:
                    values[value % len(values)] = dict(values[value % len(values)], value=text)
            if flip is not None:
                item = statuses[flip % len(statuses)]
                item['level'] = (item['level'] + 1) % 4
            stamp += step
            raw = serialized({'status': statuses})
            at = dt.datetime.fromtimestamp(stamp, dt.timezone.utc)
            for level, name, message, hardware_id, values in as_rosbags_reads(raw):
                if not name.startswith('memory_node: '):
                    one.add(observations.diagnostic(at, name, hardware_id, level, message,
                                                    values))
            two.add_prepared(at.timestamp(), reader.get(raw))
        one.flush()
        two.flush()
        query = 'SELECT * FROM observations ORDER BY id'
        assert one.db.execute(query).fetchall() == two.db.execute(query).fetchall()


def test_a_changed_value_is_read_alone_and_renumbered(tmp_path, monkeypatch):
    """A voltage's next reading: no status read whole, the evidence's numbers follow it."""
    def array(volts: str, state: str = 'charging') -> bytes:
        return serialized({'status': [{'name': 'base: battery', 'level': 1, 'message': 'low',
                                       'values': [{'key': 'voltage', 'value': volts},
                                                  {'key': 'state', 'value': state}]}]})

    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        reader = replay.status_reader(store, 'memory_node: ')
        [(first, evidence)] = reader.get(array('25.80'))
        whole = []
        status = cdr._status
        monkeypatch.setattr(cdr, '_status', lambda *args: whole.append(args) or status(*args))
        [(kept, renumbered)] = reader.get(array('25.71'))
        assert not whole and kept is first
        assert [numbers for _, _, numbers in renumbered] == [{'voltage': 25.71}]
        assert renumbered[0][1] == evidence[0][1]  # the same identity
        # A word that changes is a new identity: the status is derived whole (no re-read).
        [(other, _)] = reader.get(array('25.72', 'floating'))
        assert not whole and other is not first and other.values[1] == ('state', 'floating')
        # Another length: read from the voltage on, still renumbered.
        [(again, renumbered)] = reader.get(array('25.7', 'floating'))
        assert not whole and again is other
        assert [numbers for _, _, numbers in renumbered] == [{'voltage': 25.7}]
        reader.get(serialized({'status': [{'name': 'base: motors', 'level': 1}]}))
        assert len(whole) == 1  # a status not seen before is read whole
