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
Undo: the memory file and the typed records back to before a dream or a time, and redo.

Real files, a real SQLite database shared by the evidence store and the typed memory, and
real dreams over simulated nights with a moving clock.
"""

import datetime as dt
import json
import pathlib
import sqlite3
import subprocess
import sys
import threading

import pytest

from robot_memory.cli import main as cli
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import dream
from robot_memory.dream.autodream import DreamConfig
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.rules import Rules
from robot_memory.locations import default_db_path
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.review.undo import undo
from robot_memory.review.undo import UndoError
from robot_memory.substrate import Substrate
from support.processes import child_env

T0 = dt.datetime(2026, 5, 1, 0, 0, tzinfo=UTC)
CONFIG = DreamConfig(rrn='RRN-000000000001', initial_max=0.9)
ENCODER = ('base: left encoder', 'wheel_left')
LIDAR = ('base: lidar', 'lidar_front')


def night(day: int) -> dt.datetime:
    """02:00 after the evening of ``day``: when that night's dream runs."""
    return T0 + dt.timedelta(days=day + 1, hours=2)


class Robot:
    """A memory file, its evidence store and typed memory (one database file), a clock."""

    def __init__(self, directory):
        self.memory = MemoryFile(directory / 'robot-memory.md')
        self.db = default_db_path(self.memory.path)
        self.store = EvidenceStore(self.db, Rules.default())
        self.typed = Substrate(self.db)

    def fault(self, day, source=ENCODER, count=80):
        start = T0 + dt.timedelta(days=day, hours=20)
        for index in range(count):
            at = start + dt.timedelta(hours=3.0 * index / (count - 1))
            self.store.add(DiagnosticObservation(at, source[0], source[1], 1,
                                                 f'dropped {index % 17 + 1} ticks'))

    def dream(self, day):
        return dream(self.store, self.memory, night(day), config=CONFIG)

    def entries(self):
        return {entry.id: entry for entry in self.memory.load(night(30)).document.entries}

    def file(self):
        return self.memory.path.read_bytes()

    def close(self):
        self.typed.close()
        self.store.close()


@pytest.fixture
def robot(tmp_path):
    robot = Robot(tmp_path)
    yield robot
    robot.close()


def two_nights(robot):
    """Night 0 learns the encoder fault; night 1 reinforces it and learns a lidar fault."""
    robot.fault(0)
    first = robot.dream(0)
    robot.typed.learn('the charger is in the kitchen', type='semantic',
                      now=night(0) + dt.timedelta(hours=1))
    before_second = robot.file()
    robot.fault(1)
    robot.fault(1, LIDAR)
    robot.typed.learn('the charger is in the hallway', type='semantic',
                      now=night(1) + dt.timedelta(hours=1))
    second = robot.dream(1)
    return first, second, before_second


def test_undo_dream_takes_back_its_own_entry_changes_and_no_typed_record(robot):
    first, second, before_second = two_nights(robot)
    assert len(second.created) == 1 and second.reinforced == first.created
    moved_fact = robot.typed.recall('charger', now=night(2)).hits[0]
    assert 'hallway' in moved_fact.text

    report = undo(robot.store, robot.memory, night(2), 'cli', 'the lidar was being cleaned',
                  dream=second.dream_id)

    assert report.undo_id == 1 and not report.noop
    entries = robot.entries()
    assert set(entries) == set(first.created)  # the lidar entry is gone
    # The encoder entry is back to its state after night 0 (confidence, count, reinforced).
    before = {entry.id: entry for entry in
              MemoryFile(robot.memory.path).load(night(30)).document.entries}
    restored = before[first.created[0]]
    assert restored.observation_count == 1 and restored.last_reinforced == night(0)
    # Entries as before the second dream, byte for byte apart from last_updated.
    assert _entries_json(robot.file()) == _entries_json(before_second)
    # A dream changes no typed record: what was learned after it stays as it is.
    hits = robot.typed.recall('charger', now=night(2)).hits
    assert [hit.text for hit in hits] == ['the charger is in the hallway']
    assert report.records == [] and report.kept == []
    assert report.summary().startswith('undo 1: took back the changes of dream 2')


def test_undo_dream_keeps_what_later_dreams_and_people_changed(robot):
    """Issue 26.2: --dream N is not the state before N; a later change is named and kept."""
    first, second, _ = two_nights(robot)
    encoder, lidar = first.created[0], second.created[0]
    # Night 2: the lidar fault is seen again (reinforced) and a new fault is learned.
    robot.fault(2, LIDAR)
    robot.fault(2, ('base: imu', 'imu'))
    third = robot.dream(2)
    assert third.reinforced == [lidar] and len(third.created) == 1
    # A person deletes the encoder entry (changed by dream 2) after dream 2.
    text = robot.memory.path.read_text()
    document = robot.memory.load(night(3)).document
    document.entries = [entry for entry in document.entries if entry.id != encoder]
    from robot_memory.rcan.memory_file import render
    robot.memory.path.write_bytes(render(document))
    assert encoder not in robot.memory.path.read_text() and text != robot.file().decode()

    report = undo(robot.store, robot.memory, night(3), 'cli', 'false lidar fault',
                  dream=second.dream_id)
    kept = {item['id']: item['why'] for item in report.kept}
    assert kept == {lidar: 'changed since by dream 3; kept as it is now',
                    encoder: 'changed since by an edit by hand since the last dream; kept as '
                             'it is now'}
    assert report.noop and 'nothing to undo' in report.summary() and '2 kept' in \
        report.summary()
    entries = robot.entries()
    # Dream 3's new entry and its reinforcement stay; the deleted entry stays deleted.
    assert set(entries) == {lidar, third.created[0]}
    assert entries[lidar].observation_count == 2

    forced = undo(robot.store, robot.memory, night(3) + dt.timedelta(minutes=1), 'cli',
                  'false lidar fault, for good', dream=second.dream_id, force=True)
    assert forced.kept == [] and forced.force
    assert {change['id']: change['change'] for change in forced.entries} == {
        lidar: 'removed', encoder: 'restored'}
    entries = robot.entries()
    assert set(entries) == {encoder, third.created[0]}
    assert entries[encoder].observation_count == 1  # as it was before dream 2


def test_undo_of_an_undo_reapplies_only_what_it_took_back(robot):
    """Issue 26.2: --undo K leaves what was learned and dreamt after K alone."""
    first, second, _ = two_nights(robot)
    between = night(1) - dt.timedelta(hours=12)
    back = undo(robot.store, robot.memory, night(2), 'cli', 'back to yesterday', to=between)
    assert [hit.text for hit in robot.typed.recall('charger', now=night(2)).hits] == \
        ['the charger is in the kitchen']
    # After the undo: a new fact, a new fault learned by a dream.
    robot.typed.learn('the dock is by the door', type='semantic',
                      now=night(2) + dt.timedelta(hours=1))
    robot.fault(2, ('base: imu', 'imu'))
    third = robot.dream(2)
    assert len(third.created) == 1

    redo = undo(robot.store, robot.memory, night(3), 'cli', 'it was real', undo_id=back.undo_id)
    assert redo.kept == []
    assert sorted(change['id'] for change in redo.entries) == sorted(
        change['id'] for change in back.entries)
    assert sorted(change['id'] for change in redo.records) == sorted(
        change['id'] for change in back.records)
    assert set(robot.entries()) == set(first.created + second.created + third.created)
    texts = {hit.text for hit in robot.typed.recall('charger dock', now=night(3), k=5).hits}
    assert 'the charger is in the hallway' in texts and 'the dock is by the door' in texts
    assert 'the charger is in the kitchen' not in texts


def _entries_json(data: bytes):
    from robot_memory.rcan.memory_file import parse_bytes
    document = parse_bytes(data, night(30)).document
    return [entry.model_dump(mode='json') for entry in document.entries]


def test_the_undo_is_audited_and_undoing_it_reapplies_what_it_undid(robot):
    first, second, _ = two_nights(robot)
    after_second = robot.file()
    hallway = robot.typed.recall('charger', now=night(2)).hits[0].id
    report = undo(robot.store, robot.memory, night(2), 'operator-anna', 'bad night',
                  dream=second.dream_id)
    lidar = second.created[0]
    history = robot.store.history(lidar)
    assert [record.action for record in history] == ['create', 'undo']
    last = history[-1]
    assert last.actor == 'operator-anna' and 'bad night' in last.reason
    assert last.detail['undo'] == report.undo_id
    assert last.detail['restore_point'] == {'dream': second.dream_id}
    assert last.detail['before']['text'] and last.detail['after'] is None
    assert robot.typed.history(hallway)[-1].action != 'undo'  # not the dream's change
    # Nothing of the second dream left the logs.
    assert [row['id'] for row in robot.store.dreams()] == [first.dream_id, second.dream_id]

    redo = undo(robot.store, robot.memory, night(2) + dt.timedelta(minutes=5), 'operator-anna',
                'it was real after all', undo_id=report.undo_id)
    assert redo.undo_id == 2
    assert _entries_json(robot.file()) == _entries_json(after_second)
    hits = robot.typed.recall('charger', now=night(2)).hits
    assert [hit.text for hit in hits] == ['the charger is in the hallway']
    assert [record.action for record in robot.store.history(lidar)] == ['create', 'undo', 'undo']


def test_undo_to_a_time_and_dreams_after_it_go_on_normally(robot):
    first, second, before_second = two_nights(robot)
    between = night(1) - dt.timedelta(hours=12)  # after night 0, before night 1
    report = undo(robot.store, robot.memory, night(2), 'cli', 'back to yesterday', to=between)
    assert report.label == f'at {format_iso(between)}'
    assert _entries_json(robot.file()) == _entries_json(before_second)
    # The kitchen fact was learned at night(0) + 1 h, before the time: kept; hallway after.
    assert [hit.text for hit in robot.typed.recall('charger', now=night(2)).hits] == \
        ['the charger is in the kitchen']
    # The next dream sees no edit by hand (the undo recorded what it wrote) and goes on.
    robot.fault(2)
    third = robot.dream(2)
    assert third.manual == [] and third.reinforced == first.created


def test_an_edit_by_hand_since_the_last_dream_is_taken_in_and_comes_back_on_redo(robot):
    _, second, _ = two_nights(robot)
    lidar = second.created[0]
    entry = robot.entries()[lidar]
    text = robot.memory.path.read_text()
    robot.memory.path.write_text(text.replace(entry.text,
                                              'Lidar smudged: wipe the window weekly'))
    kept = undo(robot.store, robot.memory, night(2), 'cli', 'undo night 1',
                dream=second.dream_id)
    assert kept.manual == [lidar] and [item['id'] for item in kept.kept] == [lidar]
    assert robot.entries()[lidar].text == 'Lidar smudged: wipe the window weekly'
    report = undo(robot.store, robot.memory, night(2), 'cli', 'undo night 1',
                  dream=second.dream_id, force=True)
    assert lidar not in robot.entries()
    assert [record.action for record in robot.store.history(lidar)] == \
        ['create', 'manual', 'undo']
    undo(robot.store, robot.memory, night(2) + dt.timedelta(minutes=1), 'cli', 'redo',
         undo_id=report.undo_id)
    assert robot.entries()[lidar].text == 'Lidar smudged: wipe the window weekly'


def test_dry_run_changes_nothing_and_says_what_would_change(robot):
    _, second, _ = two_nights(robot)
    data, audit = robot.file(), robot.store.audit_count()
    report = undo(robot.store, robot.memory, night(2), 'cli', dream=second.dream_id,
                  dry_run=True)
    assert report.dry_run and report.undo_id is None
    assert {change['id']: change['change'] for change in report.entries} == {
        second.created[0]: 'removed', second.reinforced[0]: 'changed back'}
    assert report.records == []
    assert 'would take back the changes of dream 2' in report.summary()
    point = undo(robot.store, robot.memory, night(2), 'cli', to=night(1) - dt.timedelta(hours=1),
                 dry_run=True)
    assert [change['change'] for change in point.records] == [
        'archived (learned after the restore point)', 'restored (status superseded -> active)']
    assert 'would restore the memory as it was at' in point.summary()
    assert '(point in time)' in point.summary()
    assert robot.file() == data and robot.store.audit_count() == audit


@pytest.mark.parametrize('options, message', [
    ({'dream': 9}, 'there is no dream 9'),
    ({'undo_id': 4}, 'there is no undo 4'),
    ({'to': T0 + dt.timedelta(days=90)}, 'is in the future'),
    ({}, 'name one restore point'),
    ({'dream': 1, 'to': T0}, 'name one restore point'),
])
def test_bad_restore_points_are_refused_with_what_to_do(robot, options, message):
    two_nights(robot)
    data = robot.file()
    with pytest.raises(UndoError, match=message):
        undo(robot.store, robot.memory, night(2), 'cli', 'why', **options)
    assert robot.file() == data


def test_an_entry_edited_on_the_page_after_a_dream_is_kept_and_said_so(robot):
    from robot_memory.review.edit import edit_entry
    _, second, _ = two_nights(robot)
    created = second.created[0]
    edit_entry(robot.store, robot.memory, created, night(1) + dt.timedelta(hours=1),
               'web:ann', 'clearer', text='Front lidar drops scans when the dock is near')
    report = undo(robot.store, robot.memory, night(2), 'cli', 'why', dream=second.dream_id,
                  dry_run=True)
    kept = {item['id']: item['why'] for item in report.kept}
    assert kept[created] == 'changed since by an edit by hand; kept as it is now', kept


def test_a_reason_is_required_and_nothing_happens_without_one(robot):
    _, second, _ = two_nights(robot)
    with pytest.raises(UndoError, match='reason'):
        undo(robot.store, robot.memory, night(2), 'cli', '  ', dream=second.dream_id)


def test_an_agents_learns_are_undone_before_any_dream_has_run(robot):
    # A memory used only through learn / recall / MCP never dreams; its operator must still
    # be able to take back a bad agent session (the undo said "no dream has run yet").
    kitchen = robot.typed.learn('the charger is in the kitchen', type='semantic',
                                now=T0 + dt.timedelta(hours=1))
    robot.typed.learn('the charger is in the hallway', type='semantic',
                      now=T0 + dt.timedelta(hours=3))
    assert [hit.text for hit in robot.typed.recall('charger', now=T0 + dt.timedelta(hours=4))
            .hits] == ['the charger is in the hallway']
    report = undo(robot.store, robot.memory, T0 + dt.timedelta(hours=4), 'cli',
                  'a bad agent session', to=T0 + dt.timedelta(hours=2))
    assert report.entries == [] and len(report.records) == 2, report.records
    hits = robot.typed.recall('charger', now=T0 + dt.timedelta(hours=5)).hits
    assert [hit.id for hit in hits] == [kitchen.record_id]
    # ... and the undo is itself undone like any other.
    undo(robot.store, robot.memory, T0 + dt.timedelta(hours=6), 'cli', 'it was right',
         undo_id=report.undo_id)
    hits = robot.typed.recall('charger', now=T0 + dt.timedelta(hours=7)).hits
    assert [hit.text for hit in hits] == ['the charger is in the hallway']
    with pytest.raises(UndoError, match='there is no dream 1'):
        undo(robot.store, robot.memory, T0 + dt.timedelta(hours=8), 'cli', 'why', dream=1)


def test_a_hard_deleted_record_is_never_restored(robot):
    _, second, _ = two_nights(robot)
    hallway = robot.typed.recall('hallway', now=night(2)).hits[0].id
    robot.typed.forget(hallway, 'privacy', night(2), hard=True)
    rows = sqlite3.connect(robot.db).execute(
        'SELECT count(*) FROM substrate_versions WHERE record_id = ?', (hallway,)).fetchone()
    assert rows == (0,)
    report = undo(robot.store, robot.memory, night(2) + dt.timedelta(hours=1), 'cli', 'why',
                  to=night(1) + dt.timedelta(hours=2))
    assert all(change['id'] != hallway for change in report.records)
    assert not any(record.id == hallway for record in robot.typed.all_records())


def test_a_crash_after_the_intent_is_completed_by_the_next_dream(robot, monkeypatch):
    _, second, before_second = two_nights(robot)
    real = EvidenceStore.commit_dream

    def crash(self, payload):
        raise KeyboardInterrupt('power lost')

    monkeypatch.setattr(EvidenceStore, 'commit_dream', crash)
    with pytest.raises(KeyboardInterrupt):
        undo(robot.store, robot.memory, night(2), 'cli', 'why', dream=second.dream_id)
    monkeypatch.setattr(EvidenceStore, 'commit_dream', real)
    assert _entries_json(robot.file()) == _entries_json(before_second)  # file was written
    report = robot.dream(2)
    assert report.recovered == 'completed' and report.manual == []
    assert robot.store.history(second.created[0])[-1].action == 'undo'


def test_cli_undo_list_dry_run_undo_and_redo(robot, capsys):
    first, second, _ = two_nights(robot)
    robot.close()
    base = ['--file', str(robot.memory.path)]
    at = ['--at', format_iso(night(2))]
    assert cli.main(['undo', '--list'] + base) == 0
    listing = capsys.readouterr().out
    assert f'dream {second.dream_id}' in listing and 'created 1' in listing
    assert cli.main(['undo', '--list', '--json'] + base) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(item['kind'], item['id']) for item in listed] == [('dream', 1), ('dream', 2)]
    assert cli.main(['undo', '--dream', str(second.dream_id), '--dry-run'] + base + at) == 0
    out = capsys.readouterr().out
    assert 'would take back the changes of dream 2' in out and second.created[0] in out
    assert cli.main(['undo', '--dream', str(second.dream_id)] + base + at) == 1
    assert 'reason' in capsys.readouterr().err
    assert cli.main(['undo', '--dream', str(second.dream_id), '--reason', 'bad night']
                    + base + at) == 0
    out = capsys.readouterr().out
    assert 'undo 1: took back' in out and 'robot-memory undo --undo 1' in out
    assert second.created[0] not in robot.memory.path.read_text()
    assert cli.main(['undo', '--undo', '1', '--reason', 'redo'] + base + at + ['--json']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data['undo_id'] == 2 and data['target'] == {'undo': 1}
    assert second.created[0] in robot.memory.path.read_text()


def test_cli_undo_list_says_when_there_is_nothing_yet(tmp_path, capsys):
    base = ['--file', str(tmp_path / 'robot-memory.md')]
    assert cli.main(['undo', '--list'] + base) == 0
    assert capsys.readouterr().out == ('no dream or undo yet (typed records are restored with '
                                       '--to TIME)\n')
    assert cli.main(['undo', '--list', '--json'] + base) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize('value', ['yesterday', '2026-13-01T00:00:00Z'])
def test_cli_undo_to_refuses_a_time_that_is_not_iso(robot, capsys, value):
    two_nights(robot)
    robot.close()
    with pytest.raises(SystemExit) as exit_:
        cli.main(['undo', '--to', value, '--reason', 'x', '--file', str(robot.memory.path)])
    assert exit_.value.code == 2
    assert 'ISO 8601' in capsys.readouterr().err


def test_a_concurrent_dream_never_loses_its_update(robot):
    """An undo and a dream in two threads: both land, in one order or the other."""
    _, second, _ = two_nights(robot)
    robot.fault(2)
    other = EvidenceStore(robot.db, Rules.default())
    errors = []

    def dreamer():
        try:
            dream(other, MemoryFile(robot.memory.path), night(2), config=CONFIG)
        except Exception as error:  # noqa: B902 - reported by the assertion below
            errors.append(error)

    thread = threading.Thread(target=dreamer)
    thread.start()
    undo(robot.store, robot.memory, night(2), 'cli', 'why', dream=second.dream_id)
    thread.join()
    other.close()
    assert not errors
    actions = [record.action for record in robot.store.history(second.created[0])]
    assert 'undo' in actions
    # The encoder entry holds the third night's reinforcement or the undo's state, and the
    # database's snapshot matches the file either way (no edit by hand is seen next).
    robot.fault(3)
    assert robot.dream(3).manual == []


def test_the_migrations_are_named_and_history_is_append_only(robot):
    two_nights(robot)
    assert '0003_undo_history' in robot.store.applied_migrations()
    assert '0006_record_versions' in robot.typed.applied_migrations()
    with pytest.raises(sqlite3.DatabaseError, match='append-only'):
        robot.store.db.execute('DELETE FROM entry_versions')


def test_a_database_from_before_the_history_refuses_older_dreams_and_undoes_newer(robot):
    robot.fault(0)
    first = robot.dream(0)
    # Take the database back to the schema of the version before undo existed.
    robot.store.db.execute("DELETE FROM migrations WHERE name = '0003_undo_history'")
    for table in ('entry_versions', 'undos', 'undo_horizon'):
        robot.store.db.execute(f'DROP TABLE {table}')
    robot.store.db.conn.commit()
    robot.store.close()
    robot.store = EvidenceStore(robot.db, Rules.default())
    assert robot.store.applied_migrations()[-1] == '0003_undo_history'
    robot.fault(1, LIDAR)
    second = robot.dream(1)
    with pytest.raises(UndoError, match=f'dream {first.dream_id} ran before this database'):
        undo(robot.store, robot.memory, night(2), 'cli', 'why', dream=first.dream_id)
    with pytest.raises(UndoError, match='since when this database keeps the history'):
        undo(robot.store, robot.memory, night(2), 'cli', 'why', to=night(0) - dt.timedelta(1))
    report = undo(robot.store, robot.memory, night(2), 'cli', 'why', dream=second.dream_id)
    assert set(robot.entries()) == set(first.created)
    assert [change['id'] for change in report.entries] == second.created


def test_a_time_before_the_first_dream_is_refused_and_dream_one_is_offered(robot):
    robot.fault(0)
    first = robot.dream(0)
    with pytest.raises(UndoError, match='--dream 1 for the changes of that dream'):
        undo(robot.store, robot.memory, night(1), 'cli', 'why', to=night(0) - dt.timedelta(1))
    report = undo(robot.store, robot.memory, night(1), 'cli', 'why', dream=first.dream_id)
    assert robot.entries() == {} and [c['id'] for c in report.entries] == first.created


def test_the_undo_benchmark_quick_run_prints_json_lines():
    repo = pathlib.Path(__file__).resolve().parents[2]
    env = child_env()
    run = subprocess.run([sys.executable, str(repo / 'bench' / 'bench_undo.py'), '--quick'],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [record['bench'] for record in records] == ['record_versions', 'undo_to']
    for record in records:
        assert record['ms'] > 0 and record['baseline_ms'] > 0 and record['ratio'] > 0, record
    assert records[1]['entries_changed'] == 20 and records[1]['records_archived'] == 200


def test_an_approved_reword_is_recorded_and_undone(robot):
    from robot_memory.review import proposing
    first, _, _ = two_nights(robot)
    entry_id = first.created[0]
    before = robot.entries()[entry_id].text
    approved_at = night(1) + dt.timedelta(hours=3)
    with proposing.ProposalQueue.open(robot.db) as queue:
        proposal = queue.propose('reword', 'distiller', entry_id,
                                 proposing.reword_summary(entry_id, before, 'Encoder drops ticks'),
                                 {'before': before, 'after': 'Encoder drops ticks'},
                                 approved_at, 3600)
        proposing.decide_proposal(queue, proposal.id, 'approve', 'ops', 'clearer', approved_at,
                                  memory_file=robot.memory)
    assert robot.entries()[entry_id].text == 'Encoder drops ticks'
    report = undo(robot.store, robot.memory, night(2), 'cli', 'keep the rule text',
                  to=approved_at - dt.timedelta(minutes=1))
    assert [change['id'] for change in report.entries] == [entry_id]
    assert robot.entries()[entry_id].text == before


def test_a_sealed_record_is_archived_by_an_undo_and_its_history_holds_no_text(robot):
    _, second, _ = two_nights(robot)
    with Substrate(robot.db, encrypt_from='high') as sealed:
        record_id = sealed.learn('Ben Okafor takes warfarin every evening', sensitivity='high',
                                 now=night(1) + dt.timedelta(hours=2)).record_id
    undo(robot.store, robot.memory, night(2) + dt.timedelta(hours=1), 'cli', 'why',
         to=night(1) + dt.timedelta(hours=1))
    status, = robot.store.db.execute('SELECT status FROM substrate_records WHERE id = ?',
                                     (record_id,)).fetchone()
    assert status == 'archived'
    history = ' '.join(row[0] or '' for row in robot.store.db.execute(
        'SELECT prior FROM substrate_versions WHERE record_id = ?', (record_id,)))
    assert 'warfarin' not in history and 'sealed' not in history


def test_undo_of_an_undo_keeps_a_record_changed_since_unless_forced(robot):
    two_nights(robot)
    back = undo(robot.store, robot.memory, night(2), 'cli', 'back to yesterday',
                to=night(1) - dt.timedelta(hours=12))
    kitchen = robot.typed.recall('charger', now=night(2)).hits[0]
    assert kitchen.text == 'the charger is in the kitchen'
    robot.typed.forget(kitchen.id, 'moved out', night(2) + dt.timedelta(hours=1))
    redo = undo(robot.store, robot.memory, night(3), 'cli', 'redo', undo_id=back.undo_id,
                dry_run=True)
    assert [(item['kind'], item['id']) for item in redo.kept] == [('record', kitchen.id)]
    assert kitchen.id not in [change['id'] for change in redo.records]
    forced = undo(robot.store, robot.memory, night(3), 'cli', 'redo', undo_id=back.undo_id,
                  force=True, dry_run=True)
    assert forced.kept == [] and kitchen.id in [change['id'] for change in forced.records]
