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
Recordings of the same hours: overlap decided by content, never by time span (issue 35, 1).

Bags are written by ``robot_memory.testing.bag_writer`` and replayed through ``replay.replay``
into real stores: a lidar's recording of hours already taken from the wheels' is taken
whole; the same messages in a second recording count once.
"""

import contextlib
import datetime as dt
import fcntl
import os
import sqlite3

import pytest

from robot_memory.bags import replay
from robot_memory.evidence import observations as obs
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer

UTC = dt.timezone.utc
START = dt.datetime(2026, 5, 1, 1, 0, tzinfo=UTC)


def device(name: str, hardware_id: str, message: str, hours: int = 24, offset_s: int = 0):
    """Return a device's statuses every 10 minutes (ERROR), and its driver's error log."""
    items = []
    for step in range(hours * 6):
        at = START + dt.timedelta(minutes=10 * step, seconds=offset_s)
        items.append((at, None, obs.diagnostic(at, name, hardware_id, 2, message)))
        items.append((at, None, obs.log(at, f'{hardware_id}_driver', 40, message, 'd.cpp',
                                        'run', 7)))
    return items


def run(tmp_path, *bags, nightly=None):
    """Replay ``bags`` into the memory at tmp_path; return the summary."""
    options = replay.ReplayOptions(nightly=nightly)
    with EvidenceStore(tmp_path / 'robot-memory.db', batch_size=10**9) as store:
        return replay.replay(list(bags), store, MemoryFile(tmp_path / 'robot-memory.md'),
                             options)


def stored(tmp_path) -> int:
    """Return the pieces of evidence the memory's database holds."""
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        return store.observation_count()


WHEELS = device('base: left encoder', 'wheel_left', 'dropped 12 ticks')
LIDAR = device('lidar: scan', 'lidar_front', 'no scan received')


def test_another_devices_recording_of_the_same_hours_is_taken_whole(tmp_path):
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    lidar = bag_writer.write_bag(tmp_path / 'lidar', LIDAR, 'sqlite3')
    first = run(tmp_path, wheels)
    assert first.observations == len(WHEELS) and first.skipped == {}
    second = run(tmp_path, lidar, nightly=(3, 0))
    # Before: every message skipped as "recorded also in another recording already taken".
    assert second.skipped == {}, second.skipped
    assert second.taken == {'/diagnostics': len(LIDAR) // 2, '/rosout': len(LIDAR) // 2}
    assert second.observations == len(LIDAR)
    assert stored(tmp_path) == len(WHEELS) + len(LIDAR)
    texts = [entry.text for entry in
             MemoryFile(tmp_path / 'robot-memory.md').load(START).document.entries]
    assert any('no scan received' in text for text in texts), texts


def test_both_devices_in_one_replay_are_taken_and_replaying_again_adds_nothing(tmp_path):
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    lidar = bag_writer.write_bag(tmp_path / 'lidar', LIDAR, 'mcap')
    once = run(tmp_path, lidar, wheels)
    assert once.skipped == {} and once.observations == len(WHEELS) + len(LIDAR)
    again = run(tmp_path, wheels, lidar)
    assert again.observations == 0
    assert again.skipped == {replay.OWN: len(WHEELS) + len(LIDAR)}
    assert stored(tmp_path) == len(WHEELS) + len(LIDAR)


def test_a_recording_sharing_hours_and_sources_counts_the_shared_messages_once(tmp_path):
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    # A second recorder on the same robot: the wheels' messages again (received 3 ms
    # later, so recorded at other times; their own stamps are the same), and the lidar.
    later = [(at + dt.timedelta(milliseconds=3), topic, message)
             for at, topic, message in WHEELS]
    both = bag_writer.write_bag(tmp_path / 'both', sorted(later + LIDAR, key=lambda item: item[0]),
                                'sqlite3')
    run(tmp_path, wheels)
    summary = run(tmp_path, both)
    assert summary.skipped == {replay.OTHER: len(WHEELS)}
    assert summary.observations == len(LIDAR)
    assert stored(tmp_path) == len(WHEELS) + len(LIDAR)


def test_the_same_device_at_other_stamps_of_the_same_hours_is_other_evidence(tmp_path):
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    shifted = device('base: left encoder', 'wheel_left', 'dropped 12 ticks', offset_s=300)
    between = bag_writer.write_bag(tmp_path / 'between', shifted, 'mcap')
    run(tmp_path, wheels)
    summary = run(tmp_path, between)
    assert summary.skipped == {} and summary.observations == len(shifted)


def test_recordings_of_overlapping_hours_in_one_replay_take_each_message_once(tmp_path):
    items = WHEELS + LIDAR
    items.sort(key=lambda item: item[0])
    first = bag_writer.write_bag(tmp_path / 'first', items[:len(items) * 2 // 3], 'mcap')
    second = bag_writer.write_bag(tmp_path / 'second', items[len(items) // 3:], 'sqlite3')
    summary = run(tmp_path, second, first)
    shared = len(items) * 2 // 3 - len(items) // 3
    assert summary.skipped == {replay.OTHER: shared}
    assert summary.observations == len(items) == stored(tmp_path)


def test_what_is_kept_of_each_message_is_small(tmp_path):
    items = device('base: motor', 'motor', 'current high', hours=24 * 14)  # 4,032 messages
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'mcap')
    run(tmp_path, bag)
    with contextlib.closing(sqlite3.connect(tmp_path / 'robot-memory.db')) as conn:
        [(rows,)] = conn.execute('SELECT count(*) FROM replay_seen').fetchall()
        [(size,)] = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'replay_seen'")
    assert rows == len(items)
    assert size / rows < 32, f'{size / rows:.1f} bytes a message'


def test_a_database_replayed_into_before_content_keys_still_resumes_its_recordings(tmp_path):
    """What a replay took before migration 0008 is known by its time span, as it was then."""
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    cut = bag_writer.write_bag(tmp_path / 'cut', WHEELS[:len(WHEELS) // 2], 'mcap')
    run(tmp_path, cut)
    with contextlib.closing(sqlite3.connect(tmp_path / 'robot-memory.db')) as conn, conn:
        conn.execute('DELETE FROM replay_seen')  # as the replay before the migration left it
        conn.execute('UPDATE replay_taken SET legacy_last_ns = last_ns, '
                     'legacy_at_last = at_last')
    again = run(tmp_path, cut)
    assert again.observations == 0 and again.skipped == {replay.OWN: len(WHEELS) // 2}
    whole = run(tmp_path, wheels)  # another recording: its first half in the cut's hours
    assert whole.skipped == {replay.LEGACY: len(WHEELS) // 2}
    assert stored(tmp_path) == len(WHEELS)


STUCK = [(START + dt.timedelta(seconds=20 * step), None,
          obs.diagnostic(START, 'motor: left', 'hw0', 2, 'overcurrent'))
         for step in range(9000)]  # a driver whose header stamp never moves: 50 hours


def test_a_message_repeated_in_one_recording_is_taken_each_time_whatever_flushes_between(
        tmp_path):
    # Each repeat is evidence. After a flush (a dream, every 20,000 messages) a repeat was
    # taken for a message an earlier replay took: 12 of 600 were kept with dreams on.
    bag = bag_writer.write_bag(tmp_path / 'stuck', STUCK, 'mcap')
    first = run(tmp_path, bag, nightly=(3, 0))
    assert len(first.dreams) == 2 and first.skipped == {}
    assert first.observations == len(STUCK)
    again = run(tmp_path, bag)
    assert again.observations == 0 and again.skipped == {replay.OWN: len(STUCK)}


def test_a_replay_cut_short_resumes_with_exactly_the_repeats_it_had_not_taken(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'stuck', STUCK, 'mcap')
    ticks = iter(range(10**6))

    def stop(state):
        if state['messages'] >= replay.PROGRESS_EVERY and not state.get('final'):
            raise replay.Interrupted()
    options = replay.ReplayOptions(nightly=None)
    with EvidenceStore(tmp_path / 'robot-memory.db', batch_size=10**9) as store:
        cut = replay.replay([bag], store, MemoryFile(tmp_path / 'robot-memory.md'), options,
                            progress=stop, clock=lambda: next(ticks) * 100.0)
    assert cut.interrupted and cut.observations == replay.PROGRESS_EVERY
    rest = run(tmp_path, bag)
    assert rest.observations == len(STUCK) - replay.PROGRESS_EVERY
    assert rest.skipped == {replay.OWN: replay.PROGRESS_EVERY}
    assert run(tmp_path, bag).observations == 0


def test_the_same_recording_given_twice_in_one_replay_is_taken_once(tmp_path):
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    copy = tmp_path / 'copy'
    copy.mkdir()
    for part in wheels.iterdir():
        (copy / part.name).write_bytes(part.read_bytes())
    summary = run(tmp_path, wheels, copy, wheels)
    assert summary.observations == len(WHEELS) and stored(tmp_path) == len(WHEELS)
    assert summary.skipped == {replay.TWICE: len(WHEELS)}  # the spelling twice: found once
    assert any('the same recording as' in note and 'taken once' in note
               for note in summary.notes), summary.notes


def test_a_second_replay_into_the_same_memory_waits_its_turn_and_takes_nothing(tmp_path):
    # Two replays at once each found a message not yet taken and took it: what both
    # recordings hold was counted twice (3,000 of 1,500), both exiting 0.
    wheels = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    run(tmp_path, bag_writer.write_bag(tmp_path / 'lidar', LIDAR, 'mcap'))
    before = stored(tmp_path)
    fd = os.open(tmp_path / 'robot-memory.db.replay.lock', os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the other replay holds it
        with pytest.raises(replay.ReplayBusy, match='another replay into robot-memory.db is '
                                                    'running'):
            run(tmp_path, wheels)
        assert stored(tmp_path) == before
    finally:
        os.close(fd)
    assert run(tmp_path, wheels).observations == len(WHEELS)


def test_ctrl_c_stops_a_recording_of_a_few_hundred_messages(tmp_path):
    # progress (and so Ctrl-C) was looked at every 4096 messages: a smaller recording ran on
    bag = bag_writer.write_bag(tmp_path / 'wheels', WHEELS, 'mcap')
    asked = []

    def stop(state):
        if state['messages'] and not state.get('final'):
            asked.append(state['messages'])
            raise replay.Interrupted()
    options = replay.ReplayOptions(nightly=None)
    with EvidenceStore(tmp_path / 'robot-memory.db', batch_size=10**9) as store:
        cut = replay.replay([bag], store, MemoryFile(tmp_path / 'robot-memory.md'), options,
                            progress=stop, clock=iter(range(10**6)).__next__)
    assert len(WHEELS) < 4096 and cut.interrupted and asked == [replay.PROGRESS_EVERY]
    assert run(tmp_path, bag).observations == len(WHEELS) - replay.PROGRESS_EVERY
