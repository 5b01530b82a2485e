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
A clock that jumps ahead must not lock the memory (issue 40, point 1).

Real files and a real SQLite database, driven through ``robot-memory`` (in this process,
as test_cli does) and the library: a dream far ahead of the last dream and of the newest
evidence is refused until a person confirms it; a memory that already holds such a dream
gets back with one ``undo --dream N``, after which dreams run again.
"""

import datetime as dt
import json

import pytest

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.dream.clock import leap_days
from robot_memory.evidence import observations as obs
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.rcan.memory_file import ENV_VAR
from robot_memory.rcan.memory_file import MemoryFile
from support.cli import run

LAST = '2026-06-08T03:00:00Z'  # the memory's last dream in the issue
FUTURE = '2030-01-01T03:00:00Z'
SOURCES = [(f'base: sensor {index}', f'hw{index}') for index in range(5)]


def evening(day: dt.date, hour: int = 20) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def day_lines(day: dt.date, sources=SOURCES, level: int = 1, count: int = 30) -> list:
    """One evening's JSON lines: ``count`` reports of each source, 3 minutes apart."""
    lines = []
    for name, hardware in sources:
        for index in range(count):
            at = evening(day) + dt.timedelta(minutes=3 * index)
            lines.append(json.dumps(obs.to_dict(obs.diagnostic(
                at, name, hardware, level, 'dropped ticks' if level else 'ok'))))
    return lines


class Memory:
    """A memory file and its database in a directory, driven through the command line."""

    def __init__(self, directory, capsys):
        self.directory = directory
        self.path = directory / 'robot-memory.md'
        self.capsys = capsys

    def cli(self, *argv):
        return run(self.capsys, *argv, '--file', self.path)

    def ingest(self, lines: list, name: str = 'day.jsonl'):
        source = self.directory / name
        source.write_text('\n'.join(lines) + '\n', encoding='utf-8')
        return self.cli('ingest', source)

    def dream(self, at: str, *extra):
        return self.cli('dream', '--at', at, *extra)

    def entries(self) -> dict:
        document = MemoryFile(self.path).load(parse_iso(LAST)).document
        return {entry.id: entry for entry in document.entries}

    def dreams(self) -> list:
        with EvidenceStore(self.directory / 'robot-memory.db') as store:
            return store.dreams()

    def audit_count(self) -> int:
        with EvidenceStore(self.directory / 'robot-memory.db') as store:
            return store.audit_count()


@pytest.fixture
def memory(tmp_path, monkeypatch, capsys):
    """Return a memory of five sensors' faults seen three evenings, last dreamed 2026-06-08."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    robot = Memory(tmp_path, capsys)
    for day in (5, 6, 7):
        assert robot.ingest(day_lines(dt.date(2026, 6, day)))[0] == 0
        assert robot.dream(f'2026-06-0{day + 1}T03:00:00Z')[0] == 0
    assert len(robot.entries()) == 5
    return robot


def test_a_dream_years_ahead_is_refused_saying_why_and_changes_nothing(memory):
    before, audit, dreams = memory.path.read_bytes(), memory.audit_count(), len(memory.dreams())
    code, out, err = memory.dream(FUTURE)
    assert code == 1
    assert 'nothing done, the clock leapt ahead' in out
    assert f'the clock leapt ahead: {FUTURE} is 1303.0 days after the last dream ({LAST})' in err
    assert 'dream.max_leap_days (2)' in err and 'robot-memory dream --confirm-leap' in err
    assert memory.path.read_bytes() == before
    assert memory.audit_count() == audit and len(memory.dreams()) == dreams
    # Nothing was locked: the next dream at the right time runs.
    code, out, err = memory.dream('2026-06-09T03:00:00Z')
    assert code == 0 and 'clock' not in err, err


def test_the_json_report_carries_a_machine_readable_reason(memory):
    code, out, _ = memory.dream(FUTURE, '--json')
    report = json.loads(out)
    assert code == 1
    assert report['clock_leap'] is True and report['clock_backwards'] is False
    assert report['noop'] is False and report['leap_confirmed'] is None


def test_a_leap_within_max_leap_days_or_with_new_evidence_is_no_leap(memory):
    assert memory.dream('2026-06-10T02:59:00Z')[0] == 0  # 1.99 days after the last dream
    # Switched off for a month: the first dream after it has new evidence stamped "now".
    assert memory.ingest(day_lines(dt.date(2026, 7, 10)))[0] == 0
    code, out, err = memory.dream('2026-07-11T03:00:00Z')
    assert code == 0 and 'leapt' not in err, err
    # A month later without any evidence since: a leap.
    code, out, err = memory.dream('2026-08-11T03:00:00Z')
    assert code == 1 and 'no evidence came since it' in err


def test_a_confirmed_leap_is_taken_and_kept_in_the_dream_log(memory):
    code, out, err = memory.dream(FUTURE, '--confirm-leap')
    assert code == 0, err
    assert '; the leap of the clock was confirmed' in out.splitlines()[0]
    report = memory.dreams()[-1]['report']
    assert report['leap_confirmed'].endswith('; confirmed by cli')
    assert 'dream.max_leap_days (2)' in report['leap_confirmed']
    assert report['pruned'] and not report['clock_leap']  # it decayed 3.5 years, as asked


def test_max_leap_days_is_a_setting(memory, tmp_path):
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    dream:\n      max_leap_days: 5000.0\n',
                      encoding='utf-8')
    assert memory.dream(FUTURE, '--config', config)[0] == 0


def test_a_memory_holding_a_future_dream_gets_back_with_one_undo(memory):
    """The issue's memory: a dream at 2030 was taken; every later dream was refused."""
    assert memory.dream(FUTURE, '--confirm-leap')[0] == 0
    future_id = memory.dreams()[-1]['id']
    damaged = memory.entries()
    code, out, err = memory.dream('2026-06-09T03:00:00Z')
    assert code == 1 and 'the clock went backwards' in err
    assert f'robot-memory undo --dream {future_id} --reason' in err  # the way back, named
    assert f'~/undo with dream_id {future_id}' in err
    # Taking back another dream is refused, naming that one.
    code, out, err = memory.cli('undo', '--dream', '1', '--reason', 'x', '--at',
                                '2026-06-09T03:00:00Z')
    assert code == 1 and f'take back that dream first (--dream {future_id})' in err
    code, out, err = memory.cli('undo', '--dream', future_id, '--reason', 'the clock jumped',
                                '--at', '2026-06-09T03:00:00Z')
    assert code == 0, err
    assert f'the dream cursor went back to {LAST}, so dreams run again' in out
    restored = memory.entries()
    assert len(restored) == 5 and len(damaged) < 5
    assert all(entry.type != 'resolved' for entry in restored.values())
    # Audited: the undo log names the dream and the reason; each entry's history the undo.
    code, out, _ = memory.cli('undo', '--list')
    assert f'took back the changes of dream {future_id} ({FUTURE})' in out
    assert 'reason: the clock jumped' in out
    pruned = next(key for key in restored if key not in damaged)
    code, out, _ = memory.cli('history', pruned)
    assert any(' undo ' in line and 'the clock jumped' in line for line in out.splitlines())
    # Dreams run again, at the right time.
    assert memory.ingest(day_lines(dt.date(2026, 6, 8)), 'next.jsonl')[0] == 0
    code, out, err = memory.dream('2026-06-09T03:00:00Z')
    assert code == 0 and 'clock' not in err, err
    assert 'reinforced 5' in out


def test_two_future_dreams_are_taken_back_newest_first(memory):
    assert memory.dream(FUTURE, '--confirm-leap')[0] == 0
    assert memory.dream('2030-01-02T03:00:00Z')[0] == 0  # the node dreamed on, a day later
    first, second = [item['id'] for item in memory.dreams()[-2:]]
    at = ('--at', '2026-06-09T03:00:00Z')
    code, _, err = memory.cli('undo', '--dream', first, '--reason', 'clock', *at)
    assert code == 1 and f'--dream {second}' in err  # the newest first
    code, out, _ = memory.cli('undo', '--dream', second, '--reason', 'clock', *at)
    assert code == 0 and f'went back to {FUTURE}' in out
    code, _, err = memory.dream(at[1])
    assert code == 1 and f'undo --dream {first}' in err
    code, out, _ = memory.cli('undo', '--dream', first, '--reason', 'clock', *at)
    assert code == 0 and f'went back to {LAST}' in out
    assert memory.dream(at[1])[0] == 0 and len(memory.entries()) == 5


def test_a_restore_to_a_time_before_the_future_dream_also_gets_back(memory):
    assert memory.dream(FUTURE, '--confirm-leap')[0] == 0
    code, out, err = memory.cli('undo', '--to', LAST, '--reason', 'clock jumped', '--at',
                                '2026-06-09T03:00:00Z', '--dry-run')
    assert code == 0 and 'the dream cursor would go back' in out, err
    assert memory.dream('2026-06-09T03:00:00Z')[0] == 1  # the dry run changed nothing
    code, out, err = memory.cli('undo', '--to', LAST, '--reason', 'clock jumped', '--at',
                                '2026-06-09T03:00:00Z')
    assert code == 0 and f'went back to {LAST}' in out, err
    assert len(memory.entries()) == 5
    assert memory.dream('2026-06-09T03:00:00Z')[0] == 0


def test_the_library_dream_never_decays_across_an_unconfirmed_leap(tmp_path):
    """What memory_node calls: its own dreams are protected, with report.clock_leap."""
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        for day in (5, 6, 7):
            for line in day_lines(dt.date(2026, 6, day)):
                store.add(obs.parse_line(line, 1).observation)
            dream(store, memory, evening(dt.date(2026, 6, day + 1), 3), config=DreamConfig())
        before = memory.path.read_bytes()
        report = dream(store, memory, parse_iso(FUTURE), config=DreamConfig())
        assert report.clock_leap and not report.noop and not report.pruned
        assert report.to_dict()['clock_leap'] is True
        assert 'leapt ahead' in report.summary()
        assert memory.path.read_bytes() == before
        assert store.dream_cursor().last_dream_at == parse_iso(LAST)


def test_leap_days_counts_from_the_later_of_the_last_dream_and_the_newest_evidence():
    last = parse_iso(LAST)
    assert leap_days(last + dt.timedelta(days=3), last, None) == 3.0
    assert leap_days(last + dt.timedelta(days=3), last, last + dt.timedelta(days=2)) == 1.0
    assert leap_days(last + dt.timedelta(days=3), last, last - dt.timedelta(days=9)) == 3.0
    assert leap_days(last + dt.timedelta(days=300), None, None) is None  # a first dream
    assert format_iso(last) == LAST
