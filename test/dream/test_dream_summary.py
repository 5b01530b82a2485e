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
The dream summary a person reads.

Built from real dreams (pure), kept beside the memory file for ``summary_nights`` days,
and printed by ``robot-memory dream``.

Every scenario runs real dreams over a real evidence database and memory file
(``test_autodream.Robot``) and reads the Markdown the way a person would: by section.
"""

import datetime as dt
import json
import os
import pathlib

import pytest

from robot_memory.cli import main as cli
from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import DreamConfig
from robot_memory.dream.summary import build_summary
from robot_memory.dream.summary import expired_summaries
from robot_memory.dream.summary import latest_summary
from robot_memory.dream.summary import MAX_ITEMS
from robot_memory.evidence.observations import to_json_line
from robot_memory.rcan.memory_file import MemoryFile
from support.dream_scenario import CONFIG
from support.dream_scenario import evening
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status


@pytest.fixture
def robot(tmp_path):
    """Return a simulated robot: memory file, evidence database, clock."""
    made = Robot(tmp_path / 'robot')
    yield made
    made.close()


def section(summary: str, title: str) -> list:
    """Return the lines of one ``## title`` section, without the heading and blank lines."""
    lines, inside = [], False
    for line in summary.splitlines():
        if line.startswith('## '):
            inside = line[3:].split(' (')[0] == title
            continue
        if inside and line:
            lines.append(line)
    return lines


def summaries(robot) -> list:
    """Names of the summary files beside the robot's memory file, oldest first."""
    return sorted(path.name for path in robot.memory.path.parent.glob('robot-memory.md.dream-*'))


def test_a_summary_says_what_was_learned_then_reinforced(robot):
    robot.fault(0)
    first = robot.dream(0)
    text = build_summary(first)
    assert text.startswith('# Dream of 2026-05-02T02:00:00Z\n')
    [learned] = section(text, 'Learned')
    [entry_id] = first.created
    assert learned.startswith('- 🟡 [50%] base: left encoder (wheel_left) reports WARN: '
                              f'dropped 12 ticks (`{entry_id}`, hardware_observation): '
                              '80 observations from 2026-05-01T20:00:00Z'), learned
    assert section(text, 'Reinforced') == ['none'] and section(text, 'Pruned') == ['none']
    assert section(text, 'Contradictions') == ['none']
    assert section(text, 'Waiting for approval') == [
        'none: every change above was applied directly']
    robot.fault(1)
    second = build_summary(robot.dream(1))
    assert section(second, 'Learned') == ['none']
    [reinforced] = section(second, 'Reinforced')
    assert reinforced.startswith(f'- `{entry_id}` base: left encoder') and \
        ': 45% → 55%; 80 new observations' in reinforced, reinforced  # decayed a day


def test_resolved_pruned_and_a_fault_that_came_back_are_told(robot):
    for day in range(3):
        robot.fault(day)
        robot.dream(day)
    resolved = None
    for day in range(3, 8):
        robot.healthy(day)
        report = robot.dream(day)
        if report.resolved:
            resolved = build_summary(report)
    [line] = section(resolved, 'Resolved')
    assert 'has reported OK since' in line and 'with no new bad evidence' in line
    robot.fault(8)
    report = robot.dream(8)
    [contradiction] = section(build_summary(report), 'Contradictions')
    # Seen on four days now: the entry states it is intermittent.
    assert contradiction.startswith(f'- `{report.reopened[0]}` Intermittent: base: left encoder')
    assert 'was resolved, but the fault came back (80 observations); re-opened as ' \
           'hardware_observation: check the repair' in contradiction
    assert report.to_dict()['contradictions'][0]['kind'] == 'resolved_recurred'
    pruned = None
    for day in range(9, 40):
        robot.healthy(day)
        report = robot.dream(day)
        if report.pruned:
            pruned = build_summary(report)
            break
    [line] = section(pruned, 'Pruned')
    assert 'below prune_min 0.10; archived' in line and 'base: left encoder' in line


def test_an_entry_deleted_by_hand_whose_fault_returns_is_a_contradiction(robot):
    robot.fault(0)
    [entry_id] = robot.dream(0).created
    path = robot.memory.path
    text = path.read_text(encoding='utf-8')
    kept = [line for line in text.splitlines() if entry_id not in line]
    path.write_text('\n'.join(kept).replace('entries:\n---', 'entries: []\n---') + '\n',
                    encoding='utf-8')
    assert robot.entries(0) == {}
    robot.fault(1, count=20)
    report = robot.dream(1)
    summary = build_summary(report)
    [contradiction] = section(summary, 'Contradictions')
    assert contradiction.startswith(f'- `{entry_id}` base: left encoder') and \
        'deleted by hand, but its fault was reported 20 more times' in contradiction
    [manual] = section(summary, 'Taken in from edits by hand')
    assert 'entry deleted by hand' in manual


def test_a_fault_that_returns_after_its_deletion_was_taken_in_is_a_contradiction(robot):
    """Delete, dream, then the fault returns: the later dream says so, once."""
    robot.fault(0)
    [entry_id] = robot.dream(0).created
    path = robot.memory.path
    kept = [line for line in path.read_text(encoding='utf-8').splitlines()
            if entry_id not in line]
    path.write_text('\n'.join(kept).replace('entries:\n---', 'entries: []\n---') + '\n',
                    encoding='utf-8')
    taken_in = robot.dream(1)  # no evidence that night: it takes in the deletion only
    assert entry_id in taken_in.manual and not taken_in.contradictions
    robot.fault(2, count=20)
    [contradiction] = section(build_summary(robot.dream(2)), 'Contradictions')
    assert contradiction.startswith(f'- `{entry_id}` base: left encoder') and \
        'deleted by hand, but its fault was reported 20 more times since' in contradiction
    robot.fault(3, count=20)
    assert not robot.dream(3).contradictions  # told once


def test_long_sections_are_cut_and_bidi_controls_are_shown_escaped(robot):
    entries = ('  - {id: mem-evil0001, type: environment_note, '
               'text: "fine \\u202elive\\u2066 evil", confidence: 0.9, '
               'first_seen: 2026-04-01T00:00:00Z, last_reinforced: 2026-04-30T00:00:00Z, '
               'observation_count: 1}\n')
    entries += ''.join(
        f'  - {{id: mem-{index:08x}, type: environment_note, text: "note {index}", '
        'confidence: 0.09, first_seen: 2026-04-01T00:00:00Z, '
        'last_reinforced: 2026-04-30T00:00:00Z, observation_count: 1}\n'
        for index in range(120))
    robot.memory.path.write_text('---\nschema_version: "1.0"\nrrn: RRN-000000000001\n'
                                 'last_updated: 2026-04-30T00:00:00Z\nentries:\n' + entries
                                 + '---\n', encoding='utf-8')
    report = robot.dream(0, config=DreamConfig(rrn='RRN-000000000001',
                                               lifecycle=CONFIG.lifecycle.model_copy(
                                                   update={'max_prune_fraction': 1.0})))
    assert len(report.pruned) == 120
    text = build_summary(report)
    pruned = section(text, 'Pruned')
    assert len(pruned) == MAX_ITEMS + 1
    assert pruned[-1] == f'- ... and {120 - MAX_ITEMS} more (robot-memory history ENTRY_ID ' \
                         "shows any entry's record)"
    [evil] = [line for line in section(text, 'Taken in from edits by hand')
              if 'mem-evil0001' in line]
    assert 'fine \\u202elive\\u2066 evil' in evil
    assert '\u202e' not in text and '\u2066' not in text
    # The file itself keeps what the person wrote.
    [entry] = [entry for entry in robot.memory.load(morning(0)).document.entries
               if entry.id == 'mem-evil0001']
    assert entry.text == 'fine \u202elive\u2066 evil'


# ------------------------------------------------------------------------------ the files

def test_a_summary_is_kept_beside_the_memory_file_for_summary_nights(tmp_path):
    robot = Robot(tmp_path / 'robot', config=DreamConfig(rrn='RRN-000000000001',
                                                         summary_nights=3))
    try:
        for day in range(6):
            robot.fault(day)
            report = robot.dream(day)
            assert report.summary_file == str(robot.memory.path.parent / (
                f'robot-memory.md.dream-{morning(day).strftime("%Y%m%dT%H%M%SZ")}.md'))
            assert open(report.summary_file, encoding='utf-8').read() == build_summary(report)
        # Day 5's dream keeps the summaries of the last three nights (and its own).
        assert summaries(robot) == [f'robot-memory.md.dream-202605{day:02d}T020000Z.md'
                                    for day in (4, 5, 6, 7)]
        assert latest_summary(robot.memory).startswith('# Dream of 2026-05-07T02:00:00Z')
        # A dream that finds nothing new writes no summary: again at the same moment (a
        # no-op), or a night later without evidence (recorded, but nothing changed).
        assert robot.dream(5).noop and robot.dream(5).summary_file is None
        quiet = robot.dream(6)
        assert not quiet.noop and quiet.dream_id is not None and quiet.summary_file is None
        assert 'Nothing in the memory changed.' in build_summary(quiet)
        assert len(summaries(robot)) == 4
    finally:
        robot.close()


def test_a_dream_that_only_holds_evidence_writes_no_summary(robot):
    """Evidence held for a later dream changes nothing: no file, and the last one stays."""
    from robot_memory.dream.autodream import dream
    robot.fault(0)
    learned = robot.dream(0)
    assert learned.created and learned.summary_file
    # The fault again an hour later: its entry was reinforced too recently, so the dream
    # holds the evidence for a later one and changes nothing a person should read about.
    later = morning(0) + dt.timedelta(hours=1)
    for minute in range(20):
        robot.store.add(status(later - dt.timedelta(minutes=minute), 1, 'dropped 3 ticks'))
    quiet = dream(robot.store, robot.memory, later, robot.rules, config=robot.config)
    assert quiet.held and not (quiet.created or quiet.reinforced)
    assert quiet.summary_file is None
    assert summaries(robot) == [pathlib.Path(learned.summary_file).name]
    assert latest_summary(robot.memory) == open(learned.summary_file, encoding='utf-8').read()


def test_no_summary_file_with_summary_nights_0(tmp_path):
    robot = Robot(tmp_path / 'robot', config=DreamConfig(rrn='RRN-000000000001',
                                                         summary_nights=0))
    try:
        robot.fault(0)
        report = robot.dream(0)
        assert report.created and report.summary_file is None and summaries(robot) == []
        assert latest_summary(robot.memory) is None
    finally:
        robot.close()


def test_the_summary_of_a_linked_memory_file_lies_beside_its_target(tmp_path):
    disk = tmp_path / 'persist'
    disk.mkdir()
    link = tmp_path / 'robot-memory.md'
    source = tmp_path / 'obs.jsonl'
    source.write_text(''.join(to_json_line(status(evening(0, 20 + i / 10), 1)) + '\n'
                              for i in range(30)))
    (disk / 'robot-memory.md').write_text(
        '---\nschema_version: "1.0"\nrrn: RRN-000000000001\n'
        'last_updated: 2026-05-01T00:00:00Z\nentries: []\n---\n', encoding='utf-8')
    link.symlink_to(disk / 'robot-memory.md')
    assert cli.main(['ingest', '--file', str(link), str(source)]) == 0
    assert cli.main(['dream', '--file', str(link), '--at', '2026-05-02T02:00:00Z']) == 0
    assert [path.name for path in disk.glob('*.dream-*')] == [
        'robot-memory.md.dream-20260502T020000Z.md']
    assert sorted(os.listdir(tmp_path)) == ['obs.jsonl', 'persist', 'robot-memory.md']
    assert latest_summary(MemoryFile(link)).startswith('# Dream of 2026-05-02T02:00:00Z')


def test_expired_summaries_are_only_ours_and_older_than_the_nights():
    now = dt.datetime(2026, 5, 10, 2, 0, tzinfo=UTC)
    names = ['robot-memory.md.dream-20260501T020000Z.md',
             'robot-memory.md.dream-20260503T015959Z-2.md',
             'robot-memory.md.dream-20260503T020001Z.md',
             'robot-memory.md.dream-20260509T020000Z.md',
             'arm.md.dream-20260101T020000Z.md',
             'robot-memory.md.dream-notes.md',
             'robot-memory.md.archive.jsonl']
    assert expired_summaries(names, 'robot-memory.md', now, 7) == [
        'robot-memory.md.dream-20260501T020000Z.md',
        'robot-memory.md.dream-20260503T015959Z-2.md']


# ------------------------------------------------------------------------------- the CLI

def test_robot_memory_dream_prints_the_summary(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    source = tmp_path / 'obs.jsonl'
    source.write_text(''.join(to_json_line(status(evening(0, 20 + i / 10), 1)) + '\n'
                              for i in range(30)))
    assert cli.main(['ingest', '--file', str(memory), str(source)]) == 0
    capsys.readouterr()
    assert cli.main(['dream', '--file', str(memory), '--at', '2026-05-02T02:00:00Z']) == 0
    out = capsys.readouterr().out
    kept = tmp_path / 'robot-memory.md.dream-20260502T020000Z.md'
    assert out.startswith('dream at 2026-05-02T02:00:00Z: created 1')
    assert '\n# Dream of 2026-05-02T02:00:00Z\n' in out
    assert kept.read_text(encoding='utf-8') in out
    assert out.endswith(f'\n(kept as {kept})\n')
    assert len(section(out, 'Learned')) == 1
    assert cli.main(['dream', '--file', str(memory), '--at', '2026-05-02T02:00:00Z',
                     '--json']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data['noop'] and data['summary_file'] is None and 'changes' not in data
