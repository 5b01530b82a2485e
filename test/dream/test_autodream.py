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

"""Autodream over simulated weeks with a moving clock, crash safety, the CLI and the benchmark."""

import datetime as dt
import hashlib
import json
import pathlib
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from robot_memory.cli import main as cli
from robot_memory.common.timeutil import parse_iso
from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.dream.autodream import initial_confidence
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import LogObservation
from robot_memory.evidence.observations import TelemetryObservation
from robot_memory.evidence.observations import to_json_line
from robot_memory.evidence.rules import Rules
from robot_memory.rcan import lifecycle
from robot_memory.rcan.context import build_context
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import side_file
from support.dream_scenario import CONFIG
from support.dream_scenario import evening
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status
from support.dream_scenario import T0
from support.paths import REPO
from support.processes import child_env


@pytest.fixture
def robot(tmp_path):
    made = Robot(tmp_path / 'robot')
    yield made
    made.close()


def effective(entry, day):
    return lifecycle.effective_confidence(entry, morning(day), CONFIG.lifecycle)


# --------------------------------------------------------------------------- scenarios

def test_intermittent_encoder_fault_on_14_of_20_nights_ends_high(robot):
    missed = {2, 5, 8, 11, 14, 17}
    for day in range(20):
        robot.healthy(day)
        if day not in missed:
            robot.fault(day, count=64 + 3 * day)
        report = robot.dream(day)
        assert len(report.reinforced) + len(report.created) == (0 if day in missed else 1)
    entry, = robot.entries(19).values()
    assert entry.type == 'hardware_observation'
    assert entry.observation_count == 14
    assert entry.confidence >= 0.8
    block = build_context(robot.memory.load(morning(19)).document, morning(19))
    # The entry states its pattern: intermittent, on how many nights, at what time.
    assert block.text.split('\n', 1)[1].startswith(
        '🔴 [85%] Intermittent: base: left encoder (wheel_left) reports WARN: dropped')
    assert ' - on 14 of the last 21 days, usually 20:00-' in block.text
    actions = [record.action for record in robot.store.history(entry.id)]
    assert actions == ['create'] + ['reinforce'] * 13


def test_a_fault_that_stops_is_resolved_leaves_the_context_and_is_pruned(robot):
    for day in range(5):
        robot.fault(day)
        robot.healthy(day)
        robot.dream(day)
    entry, = robot.entries(4).values()
    assert entry.confidence == pytest.approx(0.7)
    resolved_on = pruned_on = None
    for day in range(5, 30):
        robot.healthy(day)
        report = robot.dream(day)
        if report.resolved:
            resolved_on = day
            resolved = robot.entries(day)[entry.id]
            assert resolved.type == 'resolved'
            assert resolved.extras['resolved_from'] == 'hardware_observation'
            assert effective(resolved, day) > CONFIG.lifecycle.inject_min
            assert build_context(robot.memory.load(morning(day)).document, morning(day)).text == ''
        if report.pruned:
            pruned_on = day
            break
    assert resolved_on == 7
    # 0.7 last reinforced on day 4: on day 16 it is exactly 0.10 (not below prune_min, so
    # kept), on day 17 0.05 and pruned.
    assert pruned_on == 17 and robot.entries(pruned_on) == {}
    archived = [json.loads(line) for line in
                side_file(robot.memory.path, '.archive.jsonl').read_text().splitlines()]
    assert [record['entry']['id'] for record in archived] == [entry.id]
    assert archived[0]['entry']['type'] == 'resolved'
    history = robot.store.history(entry.id)
    assert [record.action for record in history] == \
        ['create'] + ['reinforce'] * 4 + ['resolve', 'prune']
    assert 'has reported OK since 2026-05-05T23:30:00Z' in history[5].reason


def test_a_recurring_fault_reopens_with_its_original_type(robot):
    for day in range(3):
        robot.fault(day)
        robot.dream(day)
    for day in range(3, 8):
        robot.healthy(day)
        robot.dream(day)
    entry, = robot.entries(7).values()
    assert entry.type == 'resolved'
    before = effective(entry, 8)
    robot.fault(8)
    report = robot.dream(8)
    assert report.reopened == [entry.id] and report.reinforced == []
    reopened = robot.entries(8)[entry.id]
    assert reopened.type == 'hardware_observation' and 'resolved_from' not in reopened.extras
    assert reopened.confidence == pytest.approx(before + 0.1)
    assert robot.store.history(entry.id)[-1].action == 'reopen'


def test_a_one_off_glitch_never_reaches_the_injection_threshold(robot):
    glitch = ('imu: gyro', 'imu0')
    robot.store.add(status(evening(0), 2, 'spike 9000 deg/s', glitch))
    for second in range(50):
        robot.store.add(status(evening(3) + dt.timedelta(seconds=second), 1, 'bus reset 3',
                               ('can: bus', 'can0')))
    seen = set()
    for day in range(12):
        report = robot.dream(day)
        seen.update(report.created)
        document = robot.memory.load(morning(day)).document
        assert all(not lifecycle.is_injectable(entry, morning(day)) for entry in document.entries)
    assert len(seen) == 2
    assert robot.entries(11) == {}
    pruned = [json.loads(line)['entry'] for line in
              side_file(robot.memory.path, '.archive.jsonl').read_text().splitlines()]
    assert sorted(entry['id'] for entry in pruned) == sorted(seen)
    assert max(entry['confidence'] for entry in pruned) < CONFIG.initial_min + 0.01


def test_a_flood_within_one_night_counts_once(robot):
    robot.fault(0, count=10_000, hours=4)
    report = robot.dream(0)
    entry, = robot.entries(0).values()
    assert report.consumed == 10_000
    assert entry.confidence == CONFIG.initial_max and entry.observation_count == 1
    robot.fault(1, count=10_000, hours=4)
    robot.dream(1)
    entry = robot.entries(1)[entry.id]
    assert entry.confidence == pytest.approx(0.55) and entry.observation_count == 2
    assert robot.store.history(entry.id)[-1].detail['observations'] == 10_000


def test_dreaming_hourly_reinforces_at_most_once_per_interval(robot):
    start = T0 + dt.timedelta(hours=20)
    reinforced = []
    for hour in range(30):
        if hour <= 10:
            robot.store.add(status(start + dt.timedelta(hours=hour, minutes=30), 1))
        report = dream(robot.store, robot.memory, start + dt.timedelta(hours=hour + 1),
                       robot.rules, CONFIG)
        reinforced.extend((hour + 1, entry_id) for entry_id in report.reinforced)
    entry, = robot.entries(3).values()
    assert [hour for hour, _ in reinforced] == [21]
    assert entry.observation_count == 2
    assert robot.store.history(entry.id)[-1].reason == \
        '0 new observations plus 10 held from an earlier cycle of 1 signature(s)'


def test_initial_confidence_grows_with_count_and_spread_and_is_capped():
    def start(count, minutes, errors=0):
        return initial_confidence(count, errors, minutes * 60, CONFIG)

    assert start(1, 0) == 0.15
    assert start(10_000, 0.5) < 0.16
    assert start(64, 60) == 0.5 and start(10 ** 6, 600) == 0.5
    assert start(8, 60) == pytest.approx(0.325) and start(8, 60, errors=8) > start(8, 60)
    assert start(8, 30) < start(8, 60)


def test_repeated_error_logs_become_an_entry_and_single_ones_do_not(robot):
    robot.store.add(LogObservation(evening(0), 'nav2', 40, 'Goal 17 failed'))
    robot.store.add(LogObservation(evening(0), 'amcl', 40, 'Pose jump of 3.2 m'))
    assert robot.dream(0).created == []
    robot.store.add(LogObservation(evening(1), 'nav2', 40, 'Goal 18 failed'))
    report = robot.dream(1)
    entry, = robot.entries(1).values()
    assert report.created == [entry.id]
    assert entry.text == 'nav2 logs ERROR repeatedly: Goal 18 failed'


def test_telemetry_threshold_rule_builds_and_resolves_an_entry(tmp_path):
    robot = Robot(tmp_path, Rules.load(REPO / 'config' / 'observation_rules.yaml'))
    battery = 'sensor_msgs/msg/BatteryState'
    for day in range(4):
        for minute in range(0, 120, 5):
            level = 0.3 - minute / 300 if day < 2 else 0.9
            robot.store.add(TelemetryObservation(evening(day) + dt.timedelta(minutes=minute),
                                                 '/battery_state', battery,
                                                 {'percentage': level, 'temperature': 25.0}))
        robot.dream(day)
    entry, = robot.entries(3).values()
    assert entry.text.startswith('Battery on /battery_state runs below 20% (seen ')
    assert entry.tags == ['battery', 'power'] and entry.observation_count == 2
    for day in (4, 5):
        robot.store.add(TelemetryObservation(evening(day), '/battery_state', battery,
                                             {'percentage': 0.8}))
        robot.dream(day)
    assert robot.store.history(entry.id)[-1].reason.startswith(
        'telemetry|battery-low|/battery_state has reported OK since 2026-05-03T20:00:00Z')
    assert robot.entries(5)[entry.id].type == 'resolved'
    robot.close()


def test_dream_twice_at_the_same_moment_changes_nothing(robot):
    robot.fault(0)
    robot.fault(0, source=('motor: left', 'motor_left'), level=2)
    robot.dream(0)
    robot.fault(1)
    first = robot.dream(1)
    data = robot.memory.path.read_bytes()
    audit, dreams = robot.store.audit_count(), len(robot.store.dreams())
    second = robot.dream(1)
    assert not first.noop and second.noop
    assert robot.memory.path.read_bytes() == data
    assert (robot.store.audit_count(), len(robot.store.dreams())) == (audit, dreams)


def test_a_clock_that_went_backwards_changes_nothing(robot):
    robot.fault(0)
    robot.dream(3)
    data = robot.memory.path.read_bytes()
    cursor, audit = robot.store.dream_cursor(), robot.store.audit_count()
    robot.fault(4)
    report = robot.dream(1)
    assert report.clock_backwards and not report.noop
    assert 'the clock went backwards' in report.problems[0]
    assert robot.memory.path.read_bytes() == data
    assert (robot.store.dream_cursor(), robot.store.audit_count()) == (cursor, audit)
    assert robot.dream(4).reinforced


def test_retention_keeps_the_database_bounded_with_daily_counts(robot):
    for day in range(20):
        robot.fault(day, count=10)
        robot.dream(day)
    days = {row['day'] for row in robot.store.daily_counts()}
    oldest = robot.store.db.execute('SELECT min(stamp) FROM observations').fetchone()[0]
    assert oldest >= (morning(19) - dt.timedelta(days=14)).timestamp()
    assert len(days) == 6 and robot.store.observation_count() == 140
    assert sum(row['count'] for row in robot.store.daily_counts()) == 60


# --------------------------------------------------------------------------- manual edits

def edit(path, old, new):
    data = path.read_text(encoding='utf-8')
    assert old in data
    path.write_text(data.replace(old, new), encoding='utf-8')


def test_a_manual_edit_of_text_and_confidence_survives_a_dream(robot):
    robot.fault(0)
    robot.dream(0)
    entry, = robot.entries(0).values()
    edit(robot.memory.path, f'    text: "{entry.text}"\n    confidence: 0.5\n',
         '    text: "Left encoder flaky - keep to 0.3 m/s"\n    confidence: 0.9\n')
    robot.fault(1)
    report = robot.dream(1)
    assert report.manual == [entry.id] and report.reinforced == [entry.id]
    kept = robot.entries(1)[entry.id]
    assert kept.text == 'Left encoder flaky - keep to 0.3 m/s'
    assert kept.confidence == pytest.approx(0.95)
    manual, reinforce = robot.store.history(entry.id)[1:]
    assert manual.action == 'manual' and manual.actor == 'autodream'
    assert 'confidence: 0.5 -> 0.9' in manual.reason and 'text: ' in manual.reason
    assert reinforce.detail['confidence'] == [0.85, 0.95]
    assert robot.dream(2).manual == []


def test_a_manual_deletion_is_respected_and_later_evidence_starts_over(robot):
    robot.fault(0)
    robot.fault(0, source=('motor: left', 'motor_left'))
    robot.dream(0)
    doomed = next(entry for entry in robot.entries(0).values() if 'encoder' in entry.text)
    text = robot.memory.path.read_text()
    entry_lines = re.compile(f'  - id: "{doomed.id}"\n(?:    [^\n]*\n)*')
    assert entry_lines.search(text)
    robot.memory.path.write_text(entry_lines.sub('', text))  # the entry's block, one key a line
    robot.fault(1)
    report = robot.dream(1)
    assert report.manual == [doomed.id] and report.created == []
    assert doomed.id not in robot.entries(1)
    assert robot.store.history(doomed.id)[-1].reason == \
        'entry deleted by hand; its evidence starts over'
    robot.fault(2, count=1)
    report = robot.dream(2)
    reborn = robot.entries(2)[report.created[0]]
    assert reborn.text == 'base: left encoder (wheel_left) reports WARN: dropped 1 ticks'
    assert reborn.confidence == 0.15 and reborn.observation_count == 1


def test_an_entry_added_or_resolved_by_hand_is_taken_in(robot):
    robot.fault(0)
    robot.dream(0)
    entry, = robot.entries(0).values()
    added = ('  - id: mem-byhand01\n    type: environment_note\n'
             '    text: "Kitchen doorway has a 3 cm lip"\n    confidence: 0.7\n'
             '    first_seen: 2026-05-02T09:00:00Z\n    last_reinforced: 2026-05-02T09:00:00Z\n'
             '    observation_count: 1\n    tags: []\n')  # as the spec writes an entry
    edit(robot.memory.path, 'type: "hardware_observation"', 'type: "resolved"')
    edit(robot.memory.path, '\n---\n\n# Robot memory', '\n' + added + '---\n\n# Robot memory')
    report = robot.dream(1)
    assert sorted(report.manual) == sorted([entry.id, 'mem-byhand01'])
    assert robot.store.history('mem-byhand01')[0].reason == 'entry added by hand'
    assert robot.entries(1)['mem-byhand01'].text == 'Kitchen doorway has a 3 cm lip'
    robot.fault(2)
    assert robot.dream(2).reopened == [entry.id]
    assert robot.entries(2)[entry.id].type == 'hardware_observation'


def test_an_unreadable_file_is_set_aside_and_restored_from_the_snapshot(robot):
    robot.fault(0)
    robot.dream(0)
    entry, = robot.entries(0).values()
    robot.memory.path.write_text('---\nentries: [oops\n---\n')
    report = robot.dream(1)
    assert any('restored from the last dream' in problem for problem in report.problems)
    assert robot.entries(1)[entry.id].text == entry.text
    assert len(list(robot.memory.path.parent.glob('robot-memory.md.corrupt-*'))) == 1
    # It had no text below its front matter: none is said to be kept.
    assert not any('text below the front matter' in problem for problem in report.problems)


@pytest.mark.parametrize('left', [b'', b'\n  \n'])
def test_an_empty_file_after_a_dream_is_restored_never_read_as_every_entry_deleted(robot, left):
    # A power cut while the file is written can leave it empty: it was read as a free-form
    # file of no entries, so every entry was recorded as deleted by hand.
    robot.fault(0)
    robot.dream(0)
    entry, = robot.entries(0).values()
    robot.memory.path.write_bytes(left)
    report = robot.dream(1)
    assert any('restored from the last dream' in problem for problem in report.problems)
    assert robot.entries(1)[entry.id].text == entry.text
    assert report.manual == [] and robot.store.history(entry.id)[-1].reason != \
        'entry deleted by hand; its evidence starts over'
    [aside] = robot.memory.path.parent.glob('robot-memory.md.corrupt-*')
    assert aside.read_bytes() == left


def test_an_empty_file_before_the_first_dream_is_a_new_memory(robot):
    robot.memory.path.write_bytes(b'')  # touch robot-memory.md
    robot.fault(0)
    report = robot.dream(0)
    assert len(report.created) == 1 and len(robot.entries(0)) == 1
    assert list(robot.memory.path.parent.glob('robot-memory.md.corrupt-*')) == []


def test_a_file_with_old_mac_line_ends_is_read_not_migrated_as_free_form(robot):
    robot.fault(0)
    robot.dream(0)
    before = robot.entries(0)
    robot.memory.path.write_bytes(robot.memory.path.read_bytes().replace(b'\n', b'\r'))
    report = robot.dream(1)
    assert report.manual == [] and set(robot.entries(1)) == set(before)
    assert list(robot.memory.path.parent.glob('robot-memory.md.legacy-*')) == []


HAND_WRITTEN = (
    '---\nschema_version: "1.0"\nrrn: RRN-000000000007\nlast_updated: 2026-05-01T00:00:00Z\n'
    'entries:\n  - id: mem-byhand01\n    type: environment_note\n'
    '    text: "Kitchen doorway has a 3 cm lip"\n    confidence: 0.7\n'
    '    first_seen: 2026-04-20T09:00:00Z\n    last_reinforced: 2026-05-01T00:00:00Z\n'
    '    observation_count: 5\n---\n\n# Our notes\n\nAsk Ann before touching the dock.\n')


def test_a_hand_written_file_with_a_typo_is_left_as_it_is_and_nothing_learned_is_lost(robot):
    # No dream wrote this file: there is no snapshot to restore its entries from, so a
    # dream that cannot read it is refused, the file untouched, the evidence kept. Once the
    # person fixes the line, the dream takes everything in, the evidence included.
    typo = HAND_WRITTEN.replace('    text: "Kitchen', '      text: "Kitchen')
    robot.memory.path.write_text(typo)
    robot.fault(0)
    with pytest.raises(MemoryFileError, match='left untouched; fix it by hand') as refused:
        robot.dream(0)
    assert refused.value.line is not None and refused.value.path == str(robot.memory.path)
    assert robot.memory.path.read_text() == typo
    assert list(robot.memory.path.parent.glob('robot-memory.md.corrupt-*')) == []
    robot.memory.path.write_text(HAND_WRITTEN)
    report = robot.dream(0)
    assert len(report.created) == 1, report.problems
    entries = robot.entries(0)
    assert entries['mem-byhand01'].text == 'Kitchen doorway has a 3 cm lip'
    assert 'encoder' in entries[report.created[0]].text.lower()
    text = robot.memory.path.read_text()
    assert 'rrn: "RRN-000000000007"' in text or 'rrn: RRN-000000000007' in text
    assert text.endswith('# Our notes\n\nAsk Ann before touching the dock.\n')


def test_a_quarantined_entry_is_named_with_where_it_is_kept(robot):
    robot.memory.path.write_text(HAND_WRITTEN.replace('type: environment_note',
                                                      'type: enviroment_note'))
    robot.fault(0)
    report = robot.dream(0)
    assert any(problem.startswith('quarantined mem-byhand01: kept verbatim, with the reason, '
                                  'in robot-memory.md.quarantine.jsonl; fix it there')
               for problem in report.problems), report.problems
    assert 'mem-byhand01' in robot.memory.side_path('.quarantine.jsonl').read_text()


def test_a_file_the_dreams_wrote_broken_by_hand_keeps_its_text_and_rrn_when_set_aside(robot):
    robot.memory.path.write_text(HAND_WRITTEN)
    robot.fault(0)
    robot.dream(0)
    before = robot.entries(0)
    written = robot.memory.path.read_text()
    broken = written.replace('\n    text: ', '\n      text: ', 1)
    assert broken != written
    robot.memory.path.write_text(broken)
    report = robot.dream(1)
    [aside] = robot.memory.path.parent.glob('robot-memory.md.corrupt-*')
    assert aside.read_text() == broken
    assert any('the text below the front matter was kept' in problem
               for problem in report.problems), report.problems
    text = robot.memory.path.read_text()
    assert text.endswith('# Our notes\n\nAsk Ann before touching the dock.\n')
    assert 'RRN-000000000007' in text.split('---')[1]
    assert set(robot.entries(1)) == set(before)


# --------------------------------------------------------------------------- crash safety

def prepare(directory: pathlib.Path, extra_signatures: int = 300) -> dt.datetime:
    """
    Return a robot one dream before a busy one, and the moment of that dream.

    The busy dream creates ``extra_signatures`` entries, reinforces the encoder entry (whose
    text a person edited), resolves the motor entry, prunes a glitch and compacts.
    """
    robot = Robot(directory, retention_days=2)
    motor = ('motor: right', 'motor_right')
    robot.fault(0)
    robot.fault(0, source=motor, level=2)
    robot.dream(0)
    for day in (1, 2, 3):
        robot.fault(day)
        robot.healthy(day, motor)
        if day == 2:
            # Two days before the busy dream: it has decayed from 15% to 5% by then.
            robot.store.add(status(evening(2, 21), 1, 'glitch', ('lidar', 'lidar0')))
        robot.dream(day)
    robot.fault(4)
    robot.healthy(4, motor)
    for index in range(extra_signatures):
        robot.fault(4, count=10, hours=1, source=(f'sensor {index}', f'hw{index}'))
    entry = next(entry for entry in robot.entries(3).values() if 'left encoder' in entry.text)
    edit(robot.memory.path, entry.text, 'Left encoder drops ticks under load')
    robot.close()
    return morning(4)


def snapshot_state(directory: pathlib.Path) -> dict:
    """Everything a dream writes, for comparing two runs."""
    connection = sqlite3.connect(directory / 'robot-memory.db')
    try:
        def rows(sql):
            return connection.execute(sql).fetchall()
        archive = side_file(directory / 'robot-memory.md', '.archive.jsonl')
        return {
            'file': (directory / 'robot-memory.md').read_bytes(),
            'archive': archive.read_bytes() if archive.exists() else b'',
            'audit': rows('SELECT * FROM audit ORDER BY id'),
            'dreams': rows('SELECT id, at, actor, first_id, last_id FROM dreams ORDER BY id'),
            # Not sealed_id: a killed dream may have closed its window's runs (harmless).
            'state': rows('SELECT id, last_id, last_dream_at, file_hash FROM dream_state'),
            'signatures': rows('SELECT * FROM signatures ORDER BY signature'),
            'sources': rows('SELECT * FROM sources ORDER BY source_key'),
            'snapshot': rows('SELECT * FROM snapshot ORDER BY entry_id'),
            'pending': rows('SELECT count(*) FROM pending_dream'),
            'observations': rows('SELECT count(*), min(id), max(id) FROM observations'),
            'daily': rows('SELECT * FROM daily_counts ORDER BY 1, 3, 4, 5'),
        }
    finally:
        connection.close()


def dream_in(directory: pathlib.Path, now: dt.datetime):
    robot = Robot(directory, retention_days=2)
    try:
        return dream(robot.store, robot.memory, now, robot.rules, CONFIG)
    finally:
        robot.close()


@pytest.fixture(scope='module')
def prepared(tmp_path_factory):
    """Return the prepared state, and the state after an uninterrupted dream from it."""
    base = tmp_path_factory.mktemp('crash')
    now = prepare(base / 'before')
    shutil.copytree(base / 'before', base / 'reference')
    started = time.perf_counter()
    report = dream_in(base / 'reference', now)
    elapsed = time.perf_counter() - started
    assert len(report.created) == 300 and report.resolved and report.pruned
    assert report.reinforced and report.manual and report.compacted
    return base, now, snapshot_state(base / 'before'), snapshot_state(base / 'reference'), elapsed


def fresh_copy(base, name):
    target = base / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base / 'before', target)
    return target


def test_a_crash_between_file_write_and_db_commit_is_completed_on_rerun(prepared, monkeypatch):
    base, now, _, reference, _ = prepared
    directory = fresh_copy(base, 'crash-after-write')

    def crash(self, payload):
        raise RuntimeError('power cut')

    monkeypatch.setattr(EvidenceStore, 'commit_dream', crash)
    with pytest.raises(RuntimeError, match='power cut'):
        dream_in(directory, now)
    monkeypatch.undo()
    midway = snapshot_state(directory)
    assert midway['file'] == reference['file'] and midway['pending'] == [(1,)]
    report = dream_in(directory, now)
    assert report.recovered == 'completed' and report.noop
    assert snapshot_state(directory) == reference


def test_a_crash_before_the_file_write_is_discarded_and_redone(prepared, monkeypatch):
    base, now, _, reference, _ = prepared
    directory = fresh_copy(base, 'crash-before-write')
    before = (directory / 'robot-memory.md').read_bytes()

    def crash(self, document, result=None, now=None, rendered=None):
        raise RuntimeError('killed while writing')

    monkeypatch.setattr(MemoryFile, 'save', crash)
    with pytest.raises(RuntimeError, match='killed while writing'):
        dream_in(directory, now)
    monkeypatch.undo()
    assert (directory / 'robot-memory.md').read_bytes() == before
    report = dream_in(directory, now)
    assert report.recovered == 'discarded' and not report.noop
    assert snapshot_state(directory) == reference


_DREAMER = """
import datetime as dt, sys
from robot_memory.dream.autodream import DreamConfig, dream
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile
memory = MemoryFile(sys.argv[1] + '/robot-memory.md')
store = EvidenceStore(sys.argv[1] + '/robot-memory.db', Rules.default(), retention_days=2)
now = dt.datetime.fromisoformat(sys.argv[2])
print('ready', flush=True)
sys.stdin.readline()
dream(store, memory, now, Rules.default(), DreamConfig(rrn='RRN-000000000001'))
store.close()
print('done', flush=True)
"""


def test_sigkill_at_a_random_moment_leaves_file_and_db_consistent(prepared, tmp_path):
    base, now, before, reference, elapsed = prepared
    script = tmp_path / 'dreamer.py'
    script.write_text(_DREAMER)
    env = child_env()
    chance = random.Random(20260501)
    for iteration in range(16):
        directory = fresh_copy(base, 'killed')
        process = subprocess.Popen([sys.executable, str(script), str(directory), now.isoformat()],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert process.stdout.readline() == b'ready\n'
        delay = chance.uniform(0.0, elapsed * 2.0)
        process.stdin.write(b'go\n')
        process.stdin.flush()
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        state = snapshot_state(directory)
        connection = sqlite3.connect(directory / 'robot-memory.db')
        assert connection.execute('PRAGMA integrity_check').fetchone() == ('ok',)
        connection.close()
        written = state['file'] == reference['file']
        assert written or state['file'] == before['file'], f'torn file at {delay:.3f} s'
        if state['pending'] == [(0,)]:
            expected = reference if written else before
            assert (state['state'], state['audit'], state['snapshot']) == \
                (expected['state'], expected['audit'], expected['snapshot']), \
                f'file and database disagree after a kill at {delay:.3f} s'
        else:
            pending = sqlite3.connect(directory / 'robot-memory.db').execute(
                'SELECT file_hash FROM pending_dream').fetchone()[0]
            assert pending == hashlib.sha256(reference['file']).hexdigest()
            assert state['state'] == before['state']
        dream_in(directory, now)
        assert snapshot_state(directory) == reference, f'rerun differs after kill at {delay:.3f}'


# --------------------------------------------------------------------------- configuration

def test_dream_config_refuses_initial_min_above_initial_max():
    # Reading the dream settings from a parameters file: test_settings.py.
    with pytest.raises(ValueError, match='initial_min'):
        DreamConfig(initial_min=0.4, initial_max=0.2)


def test_now_must_be_aware(robot):
    with pytest.raises(ValueError, match='aware datetime'):
        dream(robot.store, robot.memory, dt.datetime(2026, 5, 1), robot.rules)


# --------------------------------------------------------------------------- CLI

def test_cli_ingest_reports_each_refusal_with_its_line(tmp_path, capsys):
    source = tmp_path / 'obs.jsonl'
    good = [to_json_line(status(evening(0, 20 + hour), 1)) for hour in range(3)]
    source.write_text('\n'.join([good[0], '{"stamp": "2026-05-01T20:00:00Z", "source": "log", '
                                 '"name": "n", "level": 30, "msg": "m"}', good[1], 'nope',
                                 good[2]]) + '\n')
    memory = tmp_path / 'robot-memory.md'
    code = cli.main(['ingest', '--file', str(memory), str(source)])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == 'accepted 3, refused 2; 3 pieces of evidence kept\n'
    assert f'{source}:2: refused: level: 30 is not one of 40 (ERROR), 50 (FATAL)' in err
    assert f'{source}:4: refused: not valid JSON' in err
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        assert store.observation_count() == 3


def test_cli_ingest_counts_the_evidence_kept_not_the_lines(tmp_path, capsys):
    """An OK report repeating within ok_heartbeat_s adds none; a reading no rule reads none."""
    memory = tmp_path / 'robot-memory.md'
    source = tmp_path / 'ok.jsonl'
    source.write_text(''.join(to_json_line(status(evening(0, 20 + i / 60), 0)) + '\n'
                              for i in range(5)))
    assert cli.main(['ingest', '--file', str(memory), str(source)]) == 0
    assert capsys.readouterr().out == 'accepted 5, refused 0; 1 piece of evidence kept\n'
    source.write_text('{"stamp": "2026-05-01T20:00:00Z", "source": "telemetry", "topic": '
                      '"/odd", "type": "std_msgs/msg/Float32", "fields": {"data": 1.0}}\n')
    assert cli.main(['ingest', '--file', str(memory), str(source)]) == 0
    assert capsys.readouterr().out == 'accepted 1, refused 0; 0 pieces of evidence kept\n'


def test_cli_dream_and_history(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    database = tmp_path / 'evidence.db'
    source = tmp_path / 'obs.jsonl'
    source.write_text(''.join(to_json_line(status(evening(0, 20 + i / 10), 1)) + '\n'
                              for i in range(30)))
    assert cli.main(['ingest', '--file', str(memory), '--db', str(database), str(source)]) == 0
    assert cli.main(['dream', '--file', str(memory), '--db', str(database),
                     '--at', '2026-05-02T02:00:00Z']) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'accepted 30, refused 0; 30 pieces of evidence kept'
    assert out[1].startswith('dream at 2026-05-02T02:00:00Z: created 1, reinforced 0')
    assert cli.main(['dream', '--file', str(memory), '--db', str(database), '--json',
                     '--at', '2026-05-02T02:00:00Z']) == 0
    assert json.loads(capsys.readouterr().out)['noop'] is True
    entry_id, = [entry.id for entry in MemoryFile(memory).load(T0).document.entries]
    rules = tmp_path / 'rules.yaml'
    rules.write_text('rules: []\n')
    assert cli.main(['dream', '--file', str(memory), '--db', str(database), '--rules',
                     str(rules), '--at', '2026-05-01T00:00:00Z']) == 1
    capsys.readouterr()
    assert cli.main(['history', '--file', str(memory), '--db', str(database), entry_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ['2026-05-02T02:00:00Z  create     cli        30 observations from '
                     '2026-05-01T20:00:00Z to 2026-05-01T22:54:00Z; initial confidence 0.44; '
                     'pattern diagnostic|wheel_left|base: left encoder|dropped # ticks']
    assert cli.main(['history', '--file', str(memory), '--db', str(database), '--json',
                     entry_id]) == 0
    assert json.loads(capsys.readouterr().out)['action'] == 'create'
    assert cli.main(['history', '--file', str(memory), '--db', str(database), 'mem-none']) == 1
    assert cli.main(['history', '--file', str(tmp_path / 'x' / 'm.md'), entry_id]) == 1
    assert 'no evidence database at' in capsys.readouterr().err


@pytest.mark.parametrize('recent_hours', [None, 0.0])
def test_cli_a_fault_seen_today_survives_tonights_dream(tmp_path, capsys, recent_hours):
    """Issue 26.6: two ERRORs at 10:00, a dream at noon; the nightly dream keeps the entry."""
    memory = tmp_path / 'robot-memory.md'
    source = tmp_path / 'obs.jsonl'
    ten = T0 + dt.timedelta(hours=10)
    source.write_text(''.join(to_json_line(LogObservation(
        ten + dt.timedelta(seconds=i), '/lidar_driver', 40, 'no scan received for 500 ms'))
        + '\n' for i in range(2)))
    options = ['--file', str(memory)]
    if recent_hours is not None:
        # Without the spare of what was seen within recent_hours: the default alone keeps it.
        config = tmp_path / 'robot_memory.yaml'
        config.write_text(f'/**:\n  ros__parameters:\n    recent_hours: {recent_hours}\n')
        options += ['--config', str(config)]
    assert cli.main(['ingest', *options, str(source)]) == 0
    capsys.readouterr()

    def dream_at(moment):
        assert cli.main(['dream', *options, '--at', moment]) == 0
        report = capsys.readouterr().out.splitlines()[0]
        return report, [(entry.id, round(lifecycle.effective_confidence(
            entry, parse_iso(moment)), 4))
            for entry in MemoryFile(memory).load(T0).document.entries]

    report, noon = dream_at('2026-05-01T12:00:00Z')
    assert 'created 1' in report and [c for _, c in noon] == [0.15], report
    report, night = dream_at('2026-05-02T02:00:00Z')
    assert 'pruned 0' in report and night == [(noon[0][0], 0.1209)], report
    report, after = dream_at('2026-05-03T02:00:00Z')
    assert 'pruned 1' in report and after == [], report


def test_cli_reports_a_bad_rules_file(tmp_path, capsys):
    rules = tmp_path / 'rules.yaml'
    rules.write_text('rules:\n- {name: b, source: telemetry, type: a/b, when: "x <"}\n')
    code = cli.main(['dream', '--file', str(tmp_path / 'm.md'), '--rules', str(rules)])
    assert code == 1
    assert "rule 'b' (rules[0]), field when:" in capsys.readouterr().err


def test_every_new_cli_option_has_help():
    parser = cli.build_parser()
    commands = next(action for action in parser._actions if action.dest == 'command')
    for name in ('ingest', 'dream', 'history'):
        assert cli.COMMANDS[name].__doc__
        for action in commands.choices[name]._actions:
            assert action.help, f'{name} {action.dest} has no help text'


# --------------------------------------------------------------------------- benchmark

def test_benchmark_quick_run_prints_json_lines():
    result = subprocess.run([sys.executable, str(REPO / 'bench' / 'bench_autodream.py'),
                             '--quick'], capture_output=True, text=True, timeout=120,
                            env=child_env())
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert {record['bench'] for record in records} >= {'ingest', 'dream'}
    for record in records:
        assert set(record) >= {'bench', 'n', 'ms', 'rate', 'baseline_ms', 'ratio'}
        assert record['ms'] > 0 and record['n'] > 0
