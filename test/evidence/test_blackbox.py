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

"""The black box's pure core: ring buffer, trigger, MCAP writer, database links, pruning."""

import errno
import os
import pathlib

from mcap.reader import make_reader
import numpy
import pytest
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores

from robot_memory.bags import read
from robot_memory.evidence import blackbox
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.rules import Classification
from robot_memory.evidence.runs import MAX_OPEN_RUNS

S = 10**9
STORE = get_typestore(Stores.ROS2_KILTED)


def _battery(percentage: float) -> bytes:
    msg_type = STORE.types['sensor_msgs/msg/BatteryState']
    header = STORE.types['std_msgs/msg/Header'](
        stamp=STORE.types['builtin_interfaces/msg/Time'](sec=1, nanosec=0), frame_id='base')
    fields = {name: 0 for name, _ in STORE.fielddefs['sensor_msgs/msg/BatteryState'][1]}
    fields.update(header=header, percentage=percentage, power_supply_status=0,
                  present=True, cell_voltage=numpy.array([], dtype=numpy.float32),
                  cell_temperature=numpy.array([], dtype=numpy.float32),
                  location='', serial_number='')
    return bytes(STORE.serialize_cdr(msg_type(**fields), 'sensor_msgs/msg/BatteryState'))


def _status(key: str, severity: int, signature='sig-a') -> Classification:
    return Classification(signature if severity else None, key, severity, '', 'default')


def test_ring_buffer_stays_within_its_ram_bound_under_a_10_mb_per_s_flood():
    ring = blackbox.RingBuffer(keep_s=60.0, ram_bytes=4 * 2**20)
    piece = b'x' * 100_000  # 100 messages of 100 kB a second: 10 MB/s for 5 s
    high = 0
    for index in range(500):
        ring.add('/flood', index * S // 100, piece)
        high = max(high, ring.bytes)
    assert high <= 4 * 2**20
    assert ring.dropped_for_ram > 0
    # What is kept is the newest.
    kept = ring.window(0, 10 * S, 2**30)
    assert kept[-1][0] == 499 * S // 100


def test_each_message_counts_with_what_python_adds_to_it():
    # 10,000 messages of 8 bytes are not 80 kB in RAM: each costs its overhead too.
    ring = blackbox.RingBuffer(keep_s=60.0, ram_bytes=100 * (8 + blackbox.ITEM_OVERHEAD))
    for index in range(10_000):
        ring.add('/odom', index, b'12345678')
    assert len(ring.window(0, 10**6, 2**30)) == 100


def test_the_writer_s_share_is_kept_free_within_the_ram_bound():
    policy = blackbox.Policy(ram_bytes=64 * 2**20)
    box = blackbox.BlackBox(policy)
    assert policy.chunk_bytes == 512 * 2**10 and policy.writer_bytes == 5 * 2**20
    for index in range(1000):
        box.buffer.add('/flood', index * S // 100, b'x' * 100_000)
    assert box.buffer.bytes <= 59 * 2**20 and box.buffer.bound == 59 * 2**20
    small = blackbox.Policy(ram_bytes=4 * 2**20)
    assert small.chunk_bytes == 64 * 2**10 and small.writer_bytes < 4 * 2**20 // 6


def test_a_window_being_written_is_held_not_copied_and_counts_against_the_bound():
    unit = 100 + blackbox.ITEM_OVERHEAD
    ring = blackbox.RingBuffer(keep_s=60.0, ram_bytes=10 * unit)
    for index in range(10):
        ring.add('/odom', index * S, b'x' * 100)
    hold = ring.hold(0, 10 * S, 600)
    assert hold.count == 6 and hold.bytes == 600 and hold.topics == {'/odom'}
    assert ring.held() == 1
    # The flood goes on while the window waits: the 4 older messages go, the held 6 stay,
    # and what has no room is dropped, not added over the bound.
    dropped = ring.dropped_for_ram
    for index in range(10, 20):
        ring.add('/odom', index * S, b'y' * 100)
        assert ring.bytes <= 10 * unit
    assert ring.dropped_for_ram - dropped == 4 + 6  # 4 old ones let go, 6 new ones refused
    stream = ring.stream(hold, piece_bytes=200)
    written = [next(stream), next(stream)]  # the writer has taken its first piece
    assert [item[0] for item in written] == [4 * S, 5 * S]
    ring.add('/odom', 20 * S, b'z' * 100)  # room again: the written ones may go
    written.extend(stream)
    assert [item[0] for item in written] == [index * S for index in range(4, 10)]
    assert all(item[2] == b'x' * 100 for item in written)  # nothing of the window was lost
    ring.release(hold)
    assert ring.held() == 0
    for index in range(21, 40):  # released: the ring fills its whole bound again
        ring.add('/odom', index * S, b'x' * 100)
    assert ring.bytes == 10 * unit


def test_ring_buffer_lets_go_of_messages_older_than_its_window():
    ring = blackbox.RingBuffer(keep_s=2.0, ram_bytes=2**30)
    for second in range(10):
        ring.add('/odom', second * S, b'm')
    assert [item[0] for item in ring.window(0, 100 * S, 2**30)] == [7 * S, 8 * S, 9 * S]
    assert ring.dropped_for_ram == 0


def test_a_window_over_the_recording_bound_keeps_its_newest_messages():
    ring = blackbox.RingBuffer(keep_s=100.0, ram_bytes=2**30)
    for second in range(10):
        ring.add('/odom', second * S, b'x' * 100)
    assert [item[0] for item in ring.window(0, 9 * S, 350)] == [7 * S, 8 * S, 9 * S]
    assert ring.held() == 0  # a look does not hold


def test_an_episode_starts_when_a_status_goes_bad_after_ok_once_per_cooldown():
    trigger = blackbox.FaultTrigger(cooldown_s=60.0)
    assert trigger.observe('diagnostic', [_status('motor', 0)], 0.0) == []
    assert trigger.observe('diagnostic', [_status('motor', 2)], 1.0) == [('sig-a', 'motor')]
    assert trigger.observe('diagnostic', [_status('motor', 2)], 2.0) == []  # still bad
    # Flapping: OK, bad, OK, bad... within the cooldown writes nothing more.
    for second in range(3, 50):
        assert trigger.observe('diagnostic', [_status('motor', second % 2 * 2)], second) == []
    trigger.observe('diagnostic', [_status('motor', 0)], 70.0)
    assert trigger.observe('diagnostic', [_status('motor', 1)], 71.0) == [('sig-a', 'motor')]
    # Another signature is its own.
    assert trigger.observe('diagnostic', [_status('lidar', 2, 'sig-b')], 71.5) == [
        ('sig-b', 'lidar')]


def test_the_trigger_books_stay_bounded_under_a_flood_of_new_names():
    trigger = blackbox.FaultTrigger(cooldown_s=60.0)
    for index in range(3 * MAX_OPEN_RUNS):
        trigger.observe('diagnostic', [_status(f'k{index}', 2, f's{index}')], float(index))
    assert all(len(book) <= MAX_OPEN_RUNS
               for book in (trigger._status, trigger._log_last, trigger._fired))


def test_the_first_error_log_of_a_signature_starts_an_episode():
    trigger = blackbox.FaultTrigger(cooldown_s=10.0)
    record = Classification('log-sig', '/planner', 2, '', 'default')
    assert trigger.observe('log', [record], 0.0) == [('log-sig', '/planner')]
    assert trigger.observe('log', [record], 20.0) == []  # the same burst
    later = blackbox.LOG_EPISODE_GAP_S + 100.0
    assert trigger.observe('log', [record], later) == [('log-sig', '/planner')]


def test_two_faults_close_together_each_get_their_window_from_one_buffer():
    box = blackbox.BlackBox(blackbox.Policy(before_s=5.0, after_s=1.0, cooldown_s=60.0))
    for tenth in range(0, 100):
        box.buffer.add('/odom', tenth * S // 10, b'%d' % tenth)
    box.observe('diagnostic', [_status('a', 2, 'sig-a')], 8 * S)
    box.observe('diagnostic', [_status('b', 2, 'sig-b')], int(8.5 * S))
    assert box.due(int(8.9 * S)) == []
    ready = box.due(10 * S)
    assert [window.signature for window, _ in ready] == ['sig-a', 'sig-b']
    first, second = (list(box.buffer.stream(hold)) for _, hold in ready)
    assert first[0][0] == 3 * S and first[-1][0] == 9 * S
    assert second[0][0] == int(3.5 * S) and second[-1][0] == int(9.5 * S)
    assert box.pending() == 0


def test_a_recording_opens_with_full_definitions_in_mcap_and_in_replay(tmp_path):
    schema = blackbox.message_definition('sensor_msgs/msg/BatteryState', lambda name: None)
    assert 'MSG: std_msgs/Header' in schema and 'float32 percentage' in schema
    path = tmp_path / 'fault.mcap'
    messages = [(S + index, '/battery_state', _battery(0.5 - index / 100)) for index in range(5)]
    size, digest = blackbox.write_recording(
        path, {'/battery_state': ('sensor_msgs/msg/BatteryState', schema)}, messages,
        {'signature': 'sig-a'})
    assert size == path.stat().st_size and digest == blackbox.file_sha256(path)
    with open(path, 'rb') as handle:
        reader = make_reader(handle)
        summary = reader.get_summary()
        assert [s.encoding for s in summary.schemas.values()] == ['ros2msg']
        assert summary.statistics.message_count == 5
    bag = read.open_bag(path)
    assert bag is not None
    assert not list(tmp_path.glob('*.partial'))


def test_a_type_no_store_knows_is_read_from_its_msg_file():
    texts = {'my_pkg/msg/Blip': 'std_msgs/Header header\nmy_pkg/Inner inner\n',
             'my_pkg/msg/Inner': 'float64 value\n'}
    schema = blackbox.message_definition('my_pkg/msg/Blip', texts.get)
    assert 'MSG: my_pkg/Inner' in schema and 'float64 value' in schema
    assert blackbox.message_definition('nobody/msg/Knows', texts.get) is None


def test_ctrl_c_during_a_write_leaves_no_file(tmp_path, monkeypatch):
    def interrupted(handle, *args):
        handle.write(b'\x89MCAP0\r\n half a recording')
        raise KeyboardInterrupt

    monkeypatch.setattr(blackbox, '_write_mcap', interrupted)
    with pytest.raises(KeyboardInterrupt):
        blackbox.write_recording(tmp_path / 'fault.mcap', {}, [])
    assert list(tmp_path.iterdir()) == []


def test_a_disk_that_fills_during_a_write_leaves_no_file_and_says_so(tmp_path, monkeypatch):
    def full(handle, *args):
        handle.write(b'\x89MCAP0\r\n')
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(blackbox, '_write_mcap', full)
    with pytest.raises(blackbox.BlackboxError, match='disk is full.*blackbox_total_mb'):
        blackbox.write_recording(tmp_path / 'fault.mcap', {}, [])
    assert list(tmp_path.iterdir()) == []


def test_a_recording_too_large_for_a_real_full_disk_leaves_no_file(tiny_disk):
    messages = [(index * S, '/camera', os.urandom(100_000)) for index in range(20)]
    with pytest.raises(blackbox.BlackboxError, match='disk is full'):
        blackbox.write_recording(tiny_disk / 'fault.mcap', {'/camera': ('x/msg/Y', None)},
                                 messages)
    assert list(tiny_disk.iterdir()) == []


def test_a_type_with_no_definition_is_recorded_with_an_empty_schema(tmp_path):
    path = tmp_path / 'fault.mcap'
    blackbox.write_recording(path, {'/blob': ('my_pkg/msg/Blob', None)}, [(S, '/blob', b'ab')])
    with open(path, 'rb') as handle:
        summary = make_reader(handle).get_summary()
    [schema] = summary.schemas.values()
    assert (schema.name, schema.encoding, schema.data) == ('my_pkg/msg/Blob', '', b'')
    assert summary.statistics.message_count == 1


def test_a_folder_that_is_a_symbolic_link_is_refused(tmp_path):
    (tmp_path / 'elsewhere').mkdir()
    (tmp_path / 'blackbox').symlink_to(tmp_path / 'elsewhere')
    with pytest.raises(blackbox.BlackboxError, match='symbolic link.*blackbox_folder'):
        blackbox.check_folder(tmp_path / 'blackbox')
    assert blackbox.check_folder(tmp_path / 'real').is_dir()


def _recorded(store, folder: pathlib.Path, signature: str, second: int, size: int) -> str:
    window = blackbox.Window(signature, 'key', second * S, (second - 5) * S, (second + 1) * S)
    path = folder / blackbox.recording_name(signature, second * S)
    path.write_bytes(b'x' * size)
    with store.db.atomic():
        blackbox.record(store.db.conn, path, window, size, ['/odom'], 'digest', {})
    return str(path)


def test_oldest_go_first_but_an_entrys_latest_recording_stays(tmp_path):
    folder = blackbox.check_folder(tmp_path / 'blackbox')
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        store.db.execute('INSERT INTO signatures (signature, source, source_key, entry_id) '
                         "VALUES ('sig-a', 'diagnostic', 'key', 'e-1')")
        kept = _recorded(store, folder, 'sig-a', 100, 400)  # sig-a's only: kept
        old = _recorded(store, folder, 'sig-b', 200, 400)
        newer = _recorded(store, folder, 'sig-b', 300, 400)
        with store.db.atomic():
            assert blackbox.prune(store.db.conn, 900) == [old]
        assert [row.path for row in blackbox.recordings(store.db.conn)] == [kept, newer]
        assert blackbox.recordings(store.db.conn)[0].entry_id == 'e-1'


def test_a_recording_deleted_by_hand_is_listed_as_gone(tmp_path):
    folder = blackbox.check_folder(tmp_path / 'blackbox')
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        path = _recorded(store, folder, 'sig-a', 100, 10)
        os.unlink(path)
        with store.db.atomic():
            assert blackbox.prune(store.db.conn, 0) == []
        [row] = blackbox.recordings(store.db.conn)
        assert not row.exists()


def test_a_freeze_frame_holds_each_topics_last_value_as_json():
    ring = blackbox.RingBuffer(keep_s=10.0, ram_bytes=2**20)
    ring.add('/battery_state', 2 * S, _battery(0.25))
    frame = blackbox.freeze_frame(ring.last(), {'/battery_state': 'sensor_msgs/msg/BatteryState',
                                                '/odom': 'nav_msgs/msg/Odometry'}, STORE)
    assert frame['/battery_state']['value']['percentage'] == pytest.approx(0.25)
    assert frame['/battery_state']['stamp'] == 2.0
    assert 'no message' in frame['/odom']['missing']
    json_text = blackbox.json.dumps(frame)
    assert 'percentage' in json_text
