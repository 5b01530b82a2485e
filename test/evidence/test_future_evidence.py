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
Evidence from the future is refused with a count and a reason (issue 40, point 2).

The one pure check (``robot_memory.evidence.clock``), then ``robot-memory ingest`` of a real
file and ``robot-memory replay`` of a real recording (written with rosbags) into a real
database: stamps after the clock taking them in are not taken, and nothing "constant since
2030" is learned.
"""

import datetime as dt
import json
import math

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.evidence import observations as obs
from robot_memory.evidence.clock import FUTURE_TOLERANCE_S
from robot_memory.evidence.clock import FutureCheck
from robot_memory.evidence.clock import HeldEvidence
from robot_memory.evidence.clock import is_future
from robot_memory.evidence.clock import latest_allowed
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import ENV_VAR
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer
from support.cli import run

NOW = dt.datetime(2026, 6, 8, 3, 0, tzinfo=UTC)
AHEAD = dt.datetime(2030, 6, 8, 20, 0, tzinfo=UTC)


def test_a_stamp_is_from_the_future_beyond_the_tolerance_only():
    assert FUTURE_TOLERANCE_S == 3600.0
    assert not is_future(NOW, NOW)
    assert not is_future(NOW + dt.timedelta(seconds=3600), NOW)
    assert is_future(NOW + dt.timedelta(seconds=3600.5), NOW)
    assert is_future(NOW + dt.timedelta(seconds=1), NOW, tolerance_s=0)
    assert not is_future(NOW - dt.timedelta(days=3650), NOW)
    assert latest_allowed(NOW, 60) == NOW + dt.timedelta(minutes=1)
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match='zero or more seconds'):
            is_future(NOW, NOW, bad)
    with pytest.raises(ValueError, match='stamp'):
        is_future(dt.datetime(2030, 1, 1), NOW)  # naive: refused, never guessed


def test_the_check_counts_what_it_refuses_and_says_why_and_what_to_do():
    check = FutureCheck(NOW)
    assert check.reason() == ''
    taken = [stamp for stamp in (NOW, AHEAD, NOW - dt.timedelta(hours=1),
                                 AHEAD + dt.timedelta(days=1)) if not check.refuses(stamp)]
    assert taken == [NOW, NOW - dt.timedelta(hours=1)]
    assert check.count == 2 and check.newest == AHEAD + dt.timedelta(days=1)
    assert check.reason('ingest the file again') == (
        '2 observations stamped in the future were refused (up to 2030-06-09T20:00:00Z, more '
        'than 1 hour after this clock, 2026-06-08T03:00:00Z): the clock that stamped them ran '
        'ahead, or this one is behind; fix the clock and ingest the file again')


def encoder_lines(start: dt.datetime, count: int = 40) -> list:
    """Return an encoder dropping ticks (WARN every 3 minutes from ``start``) as JSON lines."""
    return [json.dumps(obs.to_dict(obs.diagnostic(start + dt.timedelta(minutes=3 * index),
                                                  'base: left encoder', 'wheel_left', 1,
                                                  'dropped 12 ticks')))
            for index in range(count)]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    return tmp_path


def test_ingest_refuses_lines_from_the_future_with_a_count_and_keeps_the_rest(home, capsys):
    now = dt.datetime.now(UTC)
    past = encoder_lines(now - dt.timedelta(days=1), 20)
    future = encoder_lines(AHEAD, 30)
    source = home / 'day.jsonl'
    source.write_text('\n'.join(past + future) + '\n', encoding='utf-8')
    memory = home / 'robot-memory.md'
    code, out, err = run(capsys, 'ingest', source, '--file', memory)
    assert code == 1
    assert out.splitlines()[0] == 'accepted 20, refused 30; 20 pieces of evidence kept'
    assert out.splitlines()[1].startswith('30 observations stamped in the future were refused '
                                          '(up to 2030-06-08T21:27:00Z, more than 1 hour after')
    assert out.splitlines()[1].endswith('fix the clock and ingest the file again')
    refusals = err.splitlines()
    assert refusals[0] == (f'{source}:21: refused: stamped 2030-06-08T20:00:00Z, in the future '
                           f'of this clock ({refusals[0].split("clock (")[1]}')
    assert len(refusals) == 10 and refusals[-1].endswith('; more such lines are not listed')
    with EvidenceStore(home / 'robot-memory.db') as store:
        assert store.observation_count() == 20
    # The dream learns from the day before only: nothing "since 2030".
    assert run(capsys, 'dream', '--file', memory)[0] == 0
    entries = MemoryFile(memory).load(now).document.entries
    assert len(entries) == 1 and entries[0].first_seen < now + dt.timedelta(minutes=5)
    assert '2030' not in memory.read_text(encoding='utf-8')


def test_ingest_at_takes_evidence_in_on_a_given_clock(home, capsys):
    """A memory on a sped-up clock (memory_node's time_scale): ``--at`` is its clock."""
    source = home / 'day.jsonl'
    source.write_text('\n'.join(encoder_lines(AHEAD, 10)) + '\n', encoding='utf-8')
    memory = home / 'robot-memory.md'
    code, out, _ = run(capsys, 'ingest', source, '--file', memory, '--at', '2030-06-08T19:00Z')
    assert code == 1 and out.startswith('accepted 1, refused 9;')  # 20:00 to 20:27 > 20:00
    # Again on a later clock: the nine refused are taken now, the one taken is not twice.
    code, out, _ = run(capsys, 'ingest', source, '--file', memory, '--at', '2030-06-08T21:00Z')
    assert (code, out) == (0, 'accepted 10, refused 0; 9 pieces of evidence kept\n'
                              'skipped 1 line already taken: taken by an earlier ingest of '
                              'this file\n')


def test_a_file_of_the_past_only_is_taken_whole(home, capsys):
    source = home / 'day.jsonl'
    source.write_text('\n'.join(encoder_lines(NOW)) + '\n', encoding='utf-8')
    code, out, err = run(capsys, 'ingest', source, '--file', home / 'robot-memory.md')
    assert (code, out, err) == (0, 'accepted 40, refused 0; 40 pieces of evidence kept\n', '')


def recording(start: dt.datetime, minutes: int) -> list:
    """Return a recording's messages: an encoder WARN each minute from ``start``."""
    return [(at, None, obs.diagnostic(at, 'base: left encoder', 'wheel_left', 1,
                                      'dropped 12 ticks'))
            for at in (start + dt.timedelta(minutes=step) for step in range(minutes))]


def test_replay_skips_messages_recorded_after_this_machines_clock(home, capsys):
    """A recording whose clock jumped to 2030 halfway: the past half is taken, no 2030 dream."""
    start = dt.datetime.now(UTC).replace(microsecond=0) - dt.timedelta(days=2)
    bag = bag_writer.write_bag(home / 'bag', recording(start, 60) + recording(AHEAD, 45), 'mcap')
    memory = home / 'robot-memory.md'
    code, out, err = run(capsys, 'replay', bag, '--file', memory, '--json')
    summary = json.loads(out)
    assert code == 0, err
    assert summary['observations'] == 60
    why, = [key for key in summary['skipped'] if 'evidence from the future' in key]
    assert summary['skipped'][why] == 45
    assert 'fix the clock and replay again' in why
    assert all(report['at'] < '2030' for report in summary['dreams'])
    with EvidenceStore(home / 'robot-memory.db') as store:
        last = store.dream_cursor().last_dream_at
        assert last is None or last < dt.datetime.now(UTC)
    # Skipped, not marked as taken: replayed again they are refused again for the same
    # reason (not as already taken), so a replay after the clock is right takes them.
    code, out, err = run(capsys, 'replay', bag, '--file', memory, '--json', '--no-dream')
    again = json.loads(out)
    assert again['observations'] == 0 and again['skipped'][why] == 45


def _status(stamp: dt.datetime, name: str = 'base: motor'):
    return obs.DiagnosticObservation(stamp=stamp, name=name, hardware_id='m', level=1,
                                     message='hot', values=())


def test_held_evidence_is_released_as_stamped_or_moved_back_by_the_step():
    held = HeldEvidence(limit=3)
    jumped = NOW + dt.timedelta(hours=2)
    assert all(held.hold(_status(jumped)) for _ in range(3))
    assert not held.hold(_status(jumped)) and held.refused == 1  # bounded, and counted
    moved = held.release(7200.0)
    assert [item.stamp for item in moved] == [NOW] * 3 and held.moved == 3
    assert held.items == [] and held.release() == []
    held.hold(_status(jumped))
    assert [item.stamp for item in held.release()] == [jumped]  # a confirmed jump: as stamped
