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
Every MCAP layout real writers produce, whole or cut short, in any order (issue 35, point 2).

The files are written by Foxglove's ``mcap`` writer (the PyPI package ``mcap``): chunked
with zstd, lz4 or no compression, small chunks, no chunks (rosbag2's fastwrite), no
summary; messages in time order or in any order (MCAP allows it). Each is replayed
through ``replay.replay`` into a real memory and compared with the same messages in time
order; a cut one against what ``mcap``'s own ``StreamReader`` reads of it.
"""

import datetime as dt
import io
import json
import pathlib
import random
import subprocess
import sys

from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType
from mcap.writer import IndexType
from mcap.writer import Writer
import pytest

from robot_memory.bags import read
from robot_memory.bags import replay
from robot_memory.common import cdr
from robot_memory.evidence import observations as obs
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer
from support.paths import REPO
from support.processes import child_env

UTC = dt.timezone.utc
START = dt.datetime(2026, 5, 1, 1, 0, tzinfo=UTC)
LAYOUTS = {
    'chunked zstd': {'compression': CompressionType.ZSTD},
    'chunked lz4': {'compression': CompressionType.LZ4},
    'chunked plain': {'compression': CompressionType.NONE},
    'small chunks': {'chunk_size': 4096},
    'fastwrite': {'use_chunking': False},
    'no summary': {'repeat_channels': False, 'repeat_schemas': False, 'use_statistics': False,
                   'use_summary_offsets': False, 'index_types': IndexType.NONE},
}
STORE = bag_writer.typestore('mcap')


def robot(minutes: int = 3000) -> list:
    """Return (recorded time, observation): a flaky encoder each minute, a nav2 error."""
    items = []
    for step in range(minutes):
        at = START + dt.timedelta(minutes=step)
        items.append((at, obs.diagnostic(at, 'base: left encoder', 'wheel_left',
                                         1 + step % 2, 'dropped 12 ticks')))
        if step % 3 == 0:
            items.append((at, obs.log(at, 'nav2_controller', 40, 'Failed to make progress',
                                      'c.cpp', 'run', 212)))
    return items


ITEMS = robot()


def write_mcap(path: pathlib.Path, layout: str, order: str) -> pathlib.Path:
    """Write ITEMS with the ``mcap`` writer in ``layout``; ``order`` 'any' shuffles them."""
    items = list(ITEMS)
    if order == 'any':
        random.Random(7).shuffle(items)
    with open(path, 'wb') as handle:
        writer = Writer(handle, **LAYOUTS[layout])
        writer.start(profile='ros2', library='robot_memory tests')
        channels = {}
        for at, message in items:
            topic, type_name, fields = bag_writer.message_data(message)
            if topic not in channels:
                text, _ = STORE.generate_msgdef(type_name, ros_version=2)
                schema = writer.register_schema(type_name, 'ros2msg', text.encode())
                channels[topic] = writer.register_channel(topic, 'cdr', schema)
            raw = bytes(STORE.serialize_cdr(bag_writer.build(STORE, type_name, fields), type_name))
            writer.add_message(channels[topic], read.ns_of(at), raw, read.ns_of(at))
        writer.finish()
    return path


def replayed(tmp_path, name: str, bag):
    """Replay ``bag`` into the memory ``name``; return (summary, entries)."""
    memory = MemoryFile(tmp_path / f'{name}.md')
    with EvidenceStore(tmp_path / f'{name}.db', batch_size=10**9) as store:
        summary = replay.replay([bag], store, memory, replay.ReplayOptions(nightly=(3, 0)))
    document = memory.load(START).document if memory.exists() else None
    kept = sorted((entry.text, entry.observation_count, str(entry.last_reinforced))
                  for entry in document.entries) if document else []
    return summary, kept


def whole_messages(data: bytes) -> int:
    """Return the messages in the whole records of ``data``, as ``mcap`` reads them."""
    count = 0
    try:
        for record in StreamReader(io.BytesIO(data)).records:
            count += type(record).__name__ == 'Message'
    except Exception:  # noqa: B902 - the cut: EndOfFile, struct.error, a bad chunk
        pass
    return count


@pytest.fixture(scope='module')
def reference(tmp_path_factory):
    """Return the memory the messages make, read in time order from rosbags' indexed MCAP."""
    directory = tmp_path_factory.mktemp('reference')
    bag = bag_writer.write_bag(directory / 'bag', [(at, None, item) for at, item in ITEMS], 'mcap')
    summary, kept = replayed(directory, 'reference', bag)
    assert summary.taken == {'/diagnostics': 3000, '/rosout': 1000} and kept
    return [report.at for report in summary.dreams], kept


@pytest.mark.parametrize('order', ['time', 'any'])
@pytest.mark.parametrize('layout', list(LAYOUTS))
def test_a_whole_file_of_every_layout_is_read_whole_in_time_order(tmp_path, reference,
                                                                  layout, order):
    bag = write_mcap(tmp_path / 'bag.mcap', layout, order)
    summary, kept = replayed(tmp_path, 'memory', bag)
    # Before: fastwrite and no summary in any order stopped at the first message older
    # than the one before, as damage, with 2 of 4,000 messages taken.
    assert summary.refused == [] and summary.notes == [], summary.notes
    assert summary.taken == {'/diagnostics': 3000, '/rosout': 1000}
    assert summary.skipped == {}
    # Every night dreamed at its time over the messages of its day: the same memory.
    assert ([report.at for report in summary.dreams], kept) == reference


@pytest.mark.parametrize('order', ['time', 'any'])
@pytest.mark.parametrize('layout', list(LAYOUTS))
def test_a_file_cut_at_60_percent_keeps_every_whole_chunk_and_message(tmp_path, layout, order):
    data = write_mcap(tmp_path / 'whole.mcap', layout, order).read_bytes()
    cut = tmp_path / 'cut.mcap'
    cut.write_bytes(data[:len(data) * 6 // 10])
    expected = whole_messages(cut.read_bytes())
    summary, _ = replayed(tmp_path, 'memory', cut)
    if not expected:  # cut inside its first chunk: said so, not "holds no messages"
        [(path, why)] = summary.refused
        assert path == str(cut) and why.startswith('the recording was cut short (a power '
                                                   'cut?) inside its first chunk'), why
        return
    assert summary.refused == []
    assert sum(summary.taken.values()) == expected
    [note] = [note for note in summary.notes if 'cut short' in note]
    assert f'the {expected:,} messages in the whole records of its first ' in note, note
    assert 'bytes could not be read' in note and ('lost' in note or 'every message' in note)
    [item] = summary.recordings
    assert item['messages'] == expected and 0 < item['unread_bytes'] < len(data) // 2


def test_a_cut_chunk_says_about_how_many_messages_it_took_with_it(tmp_path):
    data = write_mcap(tmp_path / 'whole.mcap', 'small chunks', 'any').read_bytes()
    cut = tmp_path / 'cut.mcap'
    # Cut inside the data section, half-way through a chunk (its opcode 0x06, then length).
    starts = [index for index in range(len(data) // 2, len(data)) if data[index] == 0x06 and
              int.from_bytes(data[index + 1:index + 9], 'little') in range(100, 8192)]
    length = int.from_bytes(data[starts[0] + 1:starts[0] + 9], 'little')
    cut.write_bytes(data[:starts[0] + length // 2])
    summary, _ = replayed(tmp_path, 'memory', cut)
    [note] = [note for note in summary.notes if 'cut short' in note]
    assert f'the cut went through a chunk or message of {length + 9:,} bytes: about ' in note
    assert sum(summary.taken.values()) == whole_messages(cut.read_bytes())


def test_a_whole_fastwrite_file_out_of_order_is_not_reported_as_damage(tmp_path):
    bag = write_mcap(tmp_path / 'fast.mcap', 'fastwrite', 'any')
    done = subprocess.run(
        [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'replay', str(bag), '--file',
         str(tmp_path / 'robot-memory.md'), '--json', '--no-dream'], capture_output=True,
        text=True, env=child_env(), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary['taken'] == {'/diagnostics': 3000, '/rosout': 1000}
    assert summary['notes'] == []


def test_ordering_holds_back_only_what_a_later_block_can_precede():
    rng = random.Random(3)
    times = [step * 10 + rng.randint(-25, 25) for step in range(20_000)]  # jitter, no order
    messages = [(None, ns, index) for index, ns in enumerate(times)]
    passes = []

    def scan():
        passes.append(1)
        return iter(messages)

    out = list(read.in_time_order(scan, block=256))
    assert len(passes) == 2 and None not in out
    assert [ns for _, ns, _ in out] == sorted(times)
    assert sorted(index for _, _, index in out) == list(range(len(times)))


def test_a_file_in_reverse_order_beyond_what_is_held_is_read_whole_and_counted():
    messages = [(None, ns, ns) for ns in range(5000, 0, -1)]
    out = list(read.in_time_order(lambda: iter(messages), block=100, held=1000))
    late = out.count(None)
    taken = [item for item in out if item is not None]
    assert sorted(ns for _, ns, _ in taken) == list(range(1, 5001))
    assert 0 < late < 5000  # what could not be held was yielded, each announced


def test_a_replay_says_when_messages_were_too_far_out_of_order_to_hold(tmp_path, monkeypatch):
    bag = write_mcap(tmp_path / 'bag.mcap', 'fastwrite', 'any')
    monkeypatch.setattr(read, 'ORDER_HELD', 100)
    monkeypatch.setattr(read.in_time_order, '__defaults__', (read.ORDER_BLOCK, 100))
    summary, _ = replayed(tmp_path, 'memory', bag)
    assert summary.taken == {'/diagnostics': 3000, '/rosout': 1000}
    [note] = [note for note in summary.notes if 'out of time order' in note]
    assert 'more than 100 held back' in note


def one_topic_mcap(path: pathlib.Path, topic: str, type_name: str, messages) -> pathlib.Path:
    """Write ``messages`` ((recorded time, raw CDR bytes)) on one topic; return ``path``."""
    text, _ = STORE.generate_msgdef(type_name, ros_version=2)
    with open(path, 'wb') as handle:
        writer = Writer(handle)
        writer.start(profile='ros2', library='robot_memory tests')
        channel = writer.register_channel(
            topic, 'cdr', writer.register_schema(type_name, 'ros2msg', text.encode()))
        for at, raw in messages:
            writer.add_message(channel, read.ns_of(at), raw, read.ns_of(at))
        writer.finish()
    return path


def serialized(message) -> bytes:
    """Return an observation's message as CDR bytes, as a ROS 2 recorder writes it."""
    _, type_name, fields = bag_writer.message_data(message)
    return bytes(STORE.serialize_cdr(bag_writer.build(STORE, type_name, fields), type_name))


def test_a_log_whose_text_is_not_utf8_is_taken_as_memory_node_takes_it(tmp_path):
    # rosbags refuses a string that is not UTF-8; rclpy (memory_node) reads it with U+FFFD.
    # Every such /rosout message was skipped as "cannot be deserialized".
    messages = []
    for step in range(40):
        at = START + dt.timedelta(hours=step)  # over a night: a dream writes the entry
        raw = serialized(obs.log(at, 'motor_driver', 40, 'motor at 80 XC, stopping', 'm.cpp',
                                 'run', 7))
        assert cdr.log_record(raw) == cdr.LogRecord(40, 'motor_driver',
                                                    'motor at 80 XC, stopping', 'm.cpp', 'run',
                                                    7)  # as rosbags reads it
        messages.append((at, raw.replace(b'80 XC', b'80 \xb0C')))
    path = one_topic_mcap(tmp_path / 'latin1.mcap', '/rosout', 'rcl_interfaces/msg/Log',
                          messages)
    summary, kept = replayed(tmp_path, 'latin1', path)
    assert summary.taken == {'/rosout': 40} and summary.skipped == {}
    assert summary.observations == 40
    assert any('motor at 80 \ufffdC, stopping' in entry[0] for entry in kept), kept


def test_a_message_that_cannot_be_read_is_counted_skipped_not_also_taken(tmp_path):
    # the summary said 200 taken and 100 skipped of 200 messages
    diagnostics = [(at, serialized(message)) for at, message in ITEMS[:300]
                   if message.source == 'diagnostic']
    messages = [(at, raw[:13] if step % 2 else raw) for step, (at, raw) in enumerate(diagnostics)]
    path = one_topic_mcap(tmp_path / 'garbled.mcap', '/diagnostics',
                          'diagnostic_msgs/msg/DiagnosticArray', messages)
    summary, _ = replayed(tmp_path, 'garbled', path)
    garbled = len(diagnostics) // 2
    assert summary.recordings[0]['messages'] == len(diagnostics)
    assert summary.taken == {'/diagnostics': len(diagnostics) - garbled}
    assert summary.skipped == {
        '/diagnostics: a message that cannot be deserialized (SerdeError)': garbled}
    # not recorded as taken: a replay again (a later version that reads them) meets them again
    again, _ = replayed(tmp_path, 'garbled', path)
    assert again.skipped == {
        '/diagnostics: a message that cannot be deserialized (SerdeError)': garbled,
        replay.OWN: len(diagnostics) - garbled}
