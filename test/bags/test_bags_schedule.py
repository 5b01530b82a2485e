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
Replay's dream schedule, cross-checked against one uninterrupted replay of everything.

Every nightly dream the recordings cross runs once, at its own time, oldest first across
recordings: whether the recordings come in one replay or one a day, overlap, or the replay
is cut (between messages or inside a dream) and run again. Bags are written by
``robot_memory.testing.bag_writer`` and replayed through ``replay.replay`` into real stores.
"""

import datetime as dt

import pytest

from robot_memory.bags import replay
from robot_memory.dream import autodream
from robot_memory.evidence import observations as obs
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer

UTC = dt.timezone.utc
NIGHTLY = (3, 0)


def local(day: int, hour: int, minute: int = 0) -> dt.datetime:
    """Return a time of May 2026 on the system's clock (as the schedule reads it), in UTC."""
    return dt.datetime(2026, 5, day, hour, minute).astimezone().astimezone(UTC)


def daytime(day: int, first_hour: int = 8, last_hour: int = 18) -> list:
    """Return a day's recording: a motor hot every 10 minutes from first to last hour."""
    items = []
    at = local(day, first_hour)
    while at <= local(day, last_hour):
        items.append((at, None, obs.diagnostic(at, 'base: motor', 'motor', 1, 'too hot',
                                               [('temperature', '71')])))
        items.append((at, None, obs.log(at, 'nav2_controller', 40, 'Failed to make progress',
                                        'c.cpp', 'run', 212)))
        at += dt.timedelta(minutes=10)
    return items


def run(tmp_path, name: str, *bags, cut=None):
    """Replay ``bags`` into the memory ``name``; return its summary (or the exception)."""
    options = replay.ReplayOptions(nightly=NIGHTLY)
    memory = MemoryFile(tmp_path / f'{name}.md')
    store = EvidenceStore(tmp_path / f'{name}.db', batch_size=10**9)
    try:
        summary = replay.replay(list(bags), store, memory, options, cut)
    except Interrupted as error:
        store.db.close()  # what was not written dies with the process
        return error
    store.close()
    return summary


def dreamed(tmp_path, name: str) -> list:
    """Return the times of the dreams the memory ``name`` holds, oldest first."""
    with EvidenceStore(tmp_path / f'{name}.db') as store:
        return sorted(dream['at'] for dream in store.dreams())


def entries(tmp_path, name: str) -> list:
    """Return the memory's entries as (text, type, observations, last reinforced)."""
    document = MemoryFile(tmp_path / f'{name}.md').load(local(28, 12)).document
    return sorted((entry.text, entry.type, entry.observation_count,
                   str(entry.last_reinforced)) for entry in document.entries)


class Interrupted(Exception):
    """A power cut, as the replay sees it."""


def test_daily_replays_of_daytime_recordings_dream_the_nights_between(tmp_path):
    bags = [bag_writer.write_bag(tmp_path / f'day{day}', daytime(day), 'mcap') for day in (1, 2, 3)]
    for bag in bags:  # each day's recording replayed as it comes, none crossing 03:00
        run(tmp_path, 'daily', bag)
    run(tmp_path, 'once', *bags)
    nights = [local(2, 3), local(3, 3)]
    assert [report.at for report in run(tmp_path, 'check', *bags).dreams] == nights
    assert dreamed(tmp_path, 'daily') == dreamed(tmp_path, 'once') != []
    assert entries(tmp_path, 'daily') == entries(tmp_path, 'once') != []


def test_overlapping_recordings_in_any_order_dream_each_night_once_oldest_first(tmp_path):
    items = daytime(1, 6, 23) + daytime(2, 6, 23) + daytime(3, 6, 23)
    late = bag_writer.write_bag(tmp_path / 'late', items[len(items) // 3:], 'sqlite3')
    early = bag_writer.write_bag(tmp_path / 'early', items[:len(items) * 2 // 3], 'mcap')
    summary = run(tmp_path, 'both', late, early)  # the later one named first
    assert [report.at for report in summary.dreams] == [local(2, 3), local(3, 3)]
    assert summary.taken['/diagnostics'] == len(items) // 2
    whole = bag_writer.write_bag(tmp_path / 'whole', items, 'mcap')
    run(tmp_path, 'whole', whole)
    assert entries(tmp_path, 'both') == entries(tmp_path, 'whole') != []


@pytest.mark.parametrize('where', ['between messages', 'inside a dream'])
def test_a_cut_replay_resumes_without_a_dream_twice_or_one_skipped(tmp_path, monkeypatch,
                                                                   where):
    items = [item for day in (1, 2, 3, 4) for item in daytime(day, 6, 23)]
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'mcap')
    run(tmp_path, 'whole', bag)
    monkeypatch.setattr(replay, 'FLUSH_MESSAGES', 40)
    monkeypatch.setattr(replay, 'PROGRESS_EVERY', 1)
    monkeypatch.setattr(replay, 'PROGRESS_S', 0.0)

    def cut(state):
        if where == 'between messages' and state['at'] >= local(2, 12):
            raise Interrupted()
    if where == 'inside a dream':
        real = autodream.dream

        def failing(store, memory, now, *args, **kwargs):
            if now == local(3, 3):
                raise Interrupted()
            return real(store, memory, now, *args, **kwargs)
        monkeypatch.setattr(autodream, 'dream', failing)
    assert isinstance(run(tmp_path, 'cut', bag, cut=cut), Interrupted)
    assert dreamed(tmp_path, 'cut') == dreamed(tmp_path, 'whole')[:1]
    monkeypatch.undo()
    again = run(tmp_path, 'cut', bag)
    assert [report.at for report in again.dreams] == [local(3, 3), local(4, 3)]
    assert again.dreams_skipped == 1
    assert dreamed(tmp_path, 'cut') == dreamed(tmp_path, 'whole')
    assert entries(tmp_path, 'cut') == entries(tmp_path, 'whole') != []


def test_messages_recorded_before_the_memorys_last_dream_are_said_to_go_to_its_next(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', daytime(1, 6, 23) + daytime(2, 6, 23), 'mcap')
    late = bag_writer.write_bag(tmp_path / 'late', daytime(20, 6, 23) + daytime(21, 6, 23), 'mcap')
    run(tmp_path, 'memory', late)  # the memory has dreamed on May 21, not before
    assert dreamed(tmp_path, 'memory') == [local(21, 3).strftime('%Y-%m-%dT%H:%M:%SZ')]
    summary = run(tmp_path, 'memory', bag)
    assert summary.dreams == [] and summary.dreams_skipped == 1
    assert summary.early == len(daytime(1, 6, 23) + daytime(2, 6, 23)) > 0
    last = local(21, 3).strftime('%Y-%m-%dT%H:%M:%S')
    [line] = [line for line in summary.lines() if 'next dream, not' in line]
    assert line.startswith(f"{summary.early} messages taken were recorded before this memory's "
                           f'last dream ({last}')
    again = run(tmp_path, 'memory', late)  # nothing new: nothing to say of it
    assert (again.dreams_skipped, again.early, again.observations) == (1, 0, 0)
    assert not [line for line in again.lines() if 'next dream, not' in line]
