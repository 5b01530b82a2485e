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
``robot-memory replay``: recordings the tests write (MCAP, sqlite3, ROS 1) into real memories.

Every bag here is written by ``robot_memory.testing.bag_writer`` through rosbags; the command runs
as users run it (``bin/robot-memory`` in a process) or through the core with a real store.
"""

import contextlib
import datetime as dt
import io
import json
import sqlite3
import subprocess
import sys
import time

import pytest

from robot_memory.bags import replay
from robot_memory.cli import replay_command
from robot_memory.evidence import observations as obs
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.runs import RunBook
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.testing import bag_writer
from support.cli import run_process as run_cli
from support.cli import SCRIPT
from support.processes import child_env

UTC = dt.timezone.utc
START = dt.datetime(2026, 5, 1, 1, 0, tzinfo=UTC)
BATTERY = ('/battery_state', 'sensor_msgs/msg/BatteryState')


def robot_day(start=START, hours=72, every_min=10):
    """Return a robot's recording: a flaky encoder (WARN two in three), a nav2 error."""
    items = []
    for step in range(hours * 60 // every_min):
        at = start + dt.timedelta(minutes=every_min * step)
        items.append((at, None, obs.diagnostic(at, 'base: left encoder', 'wheel_left',
                                               1 if step % 3 else 0, 'dropped 12 ticks',
                                               [('ticks', '12')])))
        if step % 6 == 0:
            items.append((at, None, obs.log(at, 'nav2_controller', 40,
                                            'Failed to make progress', 'c.cpp', 'run', 212)))
            items.append((at, None, obs.LogObservation(at, 'nav2_controller', 20, 'all fine')))
        items.append((at, None, obs.TelemetryObservation(at, *BATTERY,
                                                         {'percentage': 0.5, 'voltage': 12.0})))
    return items


def replay_json(tmp_path, *paths, extra=()):
    """Replay ``paths`` into the memory at tmp_path; return (code, summary dict)."""
    code, out, err = run_cli('replay', *map(str, paths), '--file',
                             str(tmp_path / 'robot-memory.md'), '--json', *extra)
    assert out, err
    return code, json.loads(out)


def entries(tmp_path):
    """Return the texts and observation counts of the memory's entries."""
    document = MemoryFile(tmp_path / 'robot-memory.md').load(START).document
    return sorted((entry.text, entry.observation_count) for entry in document.entries)


@pytest.mark.parametrize('fmt', bag_writer.FORMATS)
def test_each_format_replays_into_entries_dreamed_at_the_recorded_nights(tmp_path, fmt):
    bag = bag_writer.write_bag(tmp_path / ('bag.bag' if fmt == 'ros1' else 'bag'), robot_day(), fmt)
    code, summary = replay_json(tmp_path, bag)
    assert code == 0, summary
    assert summary['taken'] == {'/diagnostics': 432, '/rosout': 144}
    # INFO records and memory_node's own are not evidence; telemetry without --config neither.
    assert summary['observations'] == 432 + 72
    assert summary['skipped'] == {'topics that are not evidence (not /diagnostics, /rosout or '
                                  'configured telemetry)': 432}
    nights = [report['at'] for report in summary['dreams']]
    local = [dt.datetime.fromisoformat(at.replace('Z', '+00:00')).astimezone() for at in nights]
    assert len(nights) == 3 and all((at.hour, at.minute) == (3, 0) for at in local)
    texts = [text for text, _ in entries(tmp_path)]
    assert any('left encoder' in text for text in texts)
    assert any('Failed to make progress' in text for text in texts)
    assert summary['created'] == 2
    # Each night's dream summary, as memory_node keeps it, named after the recorded night.
    kept = sorted(path.name for path in tmp_path.glob('robot-memory.md.dream-*.md'))
    assert len(kept) == 3 and all(report['summary_file'] for report in summary['dreams'])


def test_a_bag_and_the_same_messages_as_jsonl_give_the_same_memory(tmp_path):
    items = robot_day(hours=24)
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'mcap')
    night = tmp_path / 'night'
    night.mkdir()
    code, summary = replay_json(tmp_path, bag, extra=['--no-dream'])
    assert code == 0 and summary['dreams'] == []
    lines = [obs.to_json_line(message) for _, _, message in items
             if message.source == 'diagnostic' or (message.source == 'log' and
                                                   message.level >= 40)]
    jsonl = tmp_path / 'same.jsonl'
    jsonl.write_text('\n'.join(lines) + '\n', encoding='utf-8')
    other = ['--file', str(night / 'robot-memory.md')]
    assert run_cli('ingest', str(jsonl), *other)[0] == 0
    at = ['--at', '2026-05-02T12:00:00Z']
    for memory in (other, ['--file', str(tmp_path / 'robot-memory.md')]):
        assert run_cli('dream', *memory, *at)[0] == 0
    assert entries(tmp_path) == entries(night) != []


def test_telemetry_topics_of_the_config_are_taken_through_the_nodes_rules(tmp_path):
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    telemetry_topics: '
                      '["/battery_state:sensor_msgs/msg/BatteryState"]\n', encoding='utf-8')
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), 'sqlite3')
    code, summary = replay_json(tmp_path, bag, extra=['--config', str(config), '--no-dream'])
    assert code == 0, summary
    assert summary['taken']['/battery_state'] == 12


def test_remapped_topics_are_read_under_their_recorded_names(tmp_path):
    names = {'diagnostic': '/robot1/diagnostics', 'log': '/robot1/rosout'}
    items = [(at, names[message.source], message)
             for at, _, message in robot_day(hours=2) if message.source != 'telemetry']
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'mcap')
    code, summary = replay_json(tmp_path, bag, extra=[
        '--remap', '/diagnostics:=/robot1/diagnostics', '--remap', '/rosout:=/robot1/rosout',
        '--no-dream'])
    assert code == 0 and summary['taken'] == {'/robot1/diagnostics': 12, '/robot1/rosout': 4}
    assert not any('--remap' in note for note in summary['notes']), summary['notes']


def test_a_remap_to_a_topic_the_recording_lacks_says_so(tmp_path):
    # The messages are on /diagnostics; a remap naming /robot1/diagnostics took nothing,
    # and "not evidence" alone named the wrong cause.
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), 'mcap')
    code, summary = replay_json(tmp_path, bag, extra=[
        '--remap', '/diagnostics:=/robot1/diagnostics', '--no-dream'])
    assert code == 0 and '/diagnostics' not in summary['taken'], summary['taken']
    [note] = [note for note in summary['notes'] if '--remap' in note]
    assert note.startswith(f'{bag}: --remap /diagnostics:=/robot1/diagnostics: the recording '
                           'has no /robot1/diagnostics, so nothing was taken as /diagnostics '
                           '(its topics: /battery_state, /diagnostics, /rosout'), note


# --------------------------------------------------------------------------- safe to repeat

def test_replaying_the_same_bag_or_an_overlapping_one_adds_nothing_twice(tmp_path):
    items = robot_day(hours=48)
    fleet = tmp_path / 'fleet'
    fleet.mkdir()
    first = bag_writer.write_bag(fleet / 'first', items[:len(items) * 2 // 3], 'mcap')
    second = bag_writer.write_bag(fleet / 'second', items[len(items) // 3:], 'sqlite3')
    code, once = replay_json(tmp_path, first, second)
    assert code == 0
    code, again = replay_json(tmp_path, fleet)  # the directory holding both
    assert [item['path'] for item in again['recordings']] == [str(first), str(second)]
    assert code == 0 and again['observations'] == 0 and again['dreams'] == []
    assert again['dreams_skipped'] == len(once['dreams']) == 2
    # Each message was taken once: the overlap of the two recordings once, not twice.
    total = sum(1 for _, _, message in items if message.source == 'diagnostic')
    assert once['taken']['/diagnostics'] == total
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        assert store.observation_count() == once['rows'] == once['evidence_kept']


def test_an_interrupted_replay_resumes_after_the_last_message_written(tmp_path, monkeypatch):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=24), 'mcap')
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    monkeypatch.setattr(replay, 'FLUSH_MESSAGES', 50)
    monkeypatch.setattr(replay, 'PROGRESS_EVERY', 1)
    monkeypatch.setattr(replay, 'PROGRESS_S', 0.0)

    class PowerCut(Exception):
        pass

    def cut_at_120(state):
        if state['messages'] >= 120:
            raise PowerCut()

    options = replay.ReplayOptions(nightly=None)
    with EvidenceStore(tmp_path / 'robot-memory.db', batch_size=10**9) as store:
        with pytest.raises(PowerCut):
            replay.replay([bag], store, memory, options, cut_at_120)
        store._runs = RunBook()  # what was not written dies with the process
        written = store.observation_count()
    assert 0 < written < 144 + 24
    with EvidenceStore(tmp_path / 'robot-memory.db', batch_size=10**9) as store:
        summary = replay.replay([bag], store, memory, options)
        assert store.observation_count() == 144 + 24  # every one exactly once
    assert summary.skipped['taken by an earlier replay of the same recording'] >= 50


def test_a_killed_replay_process_resumes_and_takes_each_message_once(tmp_path):
    """SIGKILL once some progress is committed; the second run takes exactly the rest."""
    at = START
    items = [(at + dt.timedelta(seconds=step), None,
              obs.diagnostic(at + dt.timedelta(seconds=step), 'base: motor', 'motor',
                             1, f'current {step}')) for step in range(60_000)]
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'mcap')
    db = tmp_path / 'robot-memory.db'
    argv = [sys.executable, str(SCRIPT), 'replay', str(bag), '--no-dream', '--json',
            '--file', str(tmp_path / 'robot-memory.md')]
    env = child_env()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        while process.poll() is None:
            if db.exists():
                with contextlib.suppress(sqlite3.Error), \
                        contextlib.closing(sqlite3.connect(db, timeout=0.1)) as conn:
                    if conn.execute('SELECT count(*) FROM replay_taken').fetchone()[0]:
                        process.kill()
                        break
            time.sleep(0.01)
    finally:
        process.kill()
        process.communicate()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        [(first,)] = conn.execute('SELECT coalesce(sum(count), 0) FROM observations').fetchall()
    assert 0 < first < 60_000, 'killed before or after any progress: make the bag larger'
    code, out, err = run_cli(*argv[2:], env=env)
    assert code == 0, err
    summary = json.loads(out)
    assert summary['observations'] == 60_000 - first
    assert summary['skipped'] == {'taken by an earlier replay of the same recording': first}
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute('SELECT sum(count) FROM observations').fetchone()[0] == 60_000


def test_dry_run_prints_what_would_be_learned_and_writes_nothing(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=30), 'mcap')
    code, summary = replay_json(tmp_path, bag, extra=['--dry-run'])
    assert code == 0 and summary['dry_run'] and summary['created'] == 2
    assert not (tmp_path / 'robot-memory.md').exists()
    assert not (tmp_path / 'robot-memory.db').exists()


def test_replaying_beside_a_writer_of_the_same_database_waits_for_its_lock(tmp_path):
    """Another connection holding the write lock (as memory_node's flush does) is waited for."""
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), 'mcap')
    with EvidenceStore(tmp_path / 'robot-memory.db'):
        pass
    holder = sqlite3.connect(tmp_path / 'robot-memory.db', isolation_level=None)
    holder.execute('BEGIN IMMEDIATE')
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), 'replay', str(bag), '--file',
         str(tmp_path / 'robot-memory.md'), '--json', '--no-dream'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env())
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(timeout=1.5)  # blocked on the lock, not failed
    finally:
        holder.execute('COMMIT')
        holder.close()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert json.loads(out)['observations'] == 14


# --------------------------------------------------------------------------- bad recordings

def test_a_truncated_mcap_is_read_up_to_the_damage(tmp_path):
    # Ten days a minute apart: several of the writer's 1 MiB chunks, as ros2 bag writes them.
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=240, every_min=1), 'mcap')
    [mcap] = bag.glob('*.mcap')
    data = mcap.read_bytes()
    cut = tmp_path / 'cut.mcap'
    cut.write_bytes(data[:len(data) * 2 // 3])
    code, summary = replay_json(tmp_path, cut, extra=['--no-dream'])
    assert code == 1
    assert 0 < summary['taken']['/diagnostics'] < 14400
    [note] = [note for note in summary['notes'] if 'cut short' in note]
    assert 'bytes could not be read' in note


def test_a_custom_type_without_definition_is_named_with_how_to_supply_it(tmp_path):
    definition = 'float32 torque\nstring joint\n'
    from rosbags.typesys import get_types_from_msg
    types = get_types_from_msg(definition, 'acme_msgs/msg/Joint')
    at = START
    bag = bag_writer.write_bag(tmp_path / 'bag', [
        (at, '/joint', ('acme_msgs/msg/Joint', {'torque': 3.5, 'joint': 'elbow'}))],
        'sqlite3', types=types)
    [db3] = bag.glob('*.db3')
    with sqlite3.connect(db3) as conn:  # as a Humble bag: no definitions inside
        conn.execute("DELETE FROM message_definitions WHERE topic_type = 'acme_msgs/msg/Joint'")
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    telemetry_topics: '
                      '["/joint:acme_msgs/msg/Joint"]\n', encoding='utf-8')
    code, summary = replay_json(tmp_path, bag, extra=['--config', str(config), '--no-dream'])
    [why] = [why for why in summary['skipped'] if 'acme_msgs/msg/Joint' in why]
    assert '--msg-dir' in why and 'acme_msgs/msg/Joint.msg' in why
    msg_dir = tmp_path / 'src' / 'acme_msgs' / 'msg'
    msg_dir.mkdir(parents=True)
    (msg_dir / 'Joint.msg').write_text(definition, encoding='utf-8')
    code, summary = replay_json(tmp_path, bag, extra=['--config', str(config), '--no-dream',
                                                      '--msg-dir', str(tmp_path / 'src')])
    assert summary['taken'] == {'/joint': 1}, summary


def test_a_db3_without_its_metadata_is_read_from_the_database_alone(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), 'sqlite3')
    (bag / 'metadata.yaml').unlink()
    code, summary = replay_json(tmp_path, bag, extra=['--no-dream'])
    assert code == 0 and summary['taken']['/diagnostics'] == 12, summary


@pytest.mark.parametrize('fmt, mode', [('mcap', 'file'), ('mcap', 'message'),
                                       ('mcap', 'storage'), ('sqlite3', 'file'),
                                       ('sqlite3', 'message')])
def test_compressed_recordings_are_read(tmp_path, fmt, mode):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), fmt, compress=mode)
    code, summary = replay_json(tmp_path, bag, extra=['--no-dream'])
    assert code == 0 and summary['taken']['/diagnostics'] == 12, summary


def test_a_compressed_storage_file_without_its_metadata_says_what_to_do(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), 'mcap', compress='file')
    [storage] = bag.glob('*.zstd')
    alone = tmp_path / storage.name
    storage.rename(alone)
    code, summary = replay_json(tmp_path, alone, extra=['--no-dream'])
    assert code == 1 and 'metadata.yaml' in summary['refused'][0]['why']


def test_a_path_that_is_not_a_recording_is_refused_with_a_reason(tmp_path):
    text = tmp_path / 'notes.txt'
    text.write_text('hello', encoding='utf-8')
    empty_dir = tmp_path / 'nothing'
    empty_dir.mkdir()
    code, summary = replay_json(tmp_path, text, empty_dir, tmp_path / 'missing')
    assert code == 1
    reasons = {item['path']: item['why'] for item in summary['refused']}
    assert 'not a recording' in reasons[str(text)]
    assert 'no recording in this directory' in reasons[str(empty_dir)]
    assert 'no such file' in reasons[str(tmp_path / 'missing')]


def test_a_bag_stamped_in_1970_is_refused_as_sim_time(tmp_path):
    epoch = dt.datetime(1970, 1, 1, 0, 0, 12, tzinfo=UTC)
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(start=epoch, hours=1), 'mcap')
    code, summary = replay_json(tmp_path, bag)
    assert code == 1 and summary['observations'] == 0
    assert 'simulation time' in summary['refused'][0]['why']


def test_one_message_before_2000_is_skipped_alone_not_the_whole_recording(tmp_path):
    # A latched /robot_description at log time 0, or one status sent before the clock was
    # set, had the whole recording refused as simulation time: nothing taken
    epoch = dt.datetime(1970, 1, 1, 0, 0, 5, tzinfo=UTC)
    day = robot_day(hours=2)
    items = day + [(0, '/robot_description', ('std_msgs/msg/String', {'data': '<robot/>'})),
                   (epoch, None, obs.diagnostic(epoch, 'base: left encoder', 'wheel_left', 2,
                                                'dropped 12 ticks'))]
    bag = bag_writer.write_bag(tmp_path / 'bag', items, 'mcap')
    code, summary = replay_json(tmp_path, bag)
    assert code == 0 and summary['refused'] == [], summary['refused']
    evidence = [item for item in day if item[2].source != 'telemetry']
    assert sum(summary['taken'].values()) == len(evidence)
    assert summary['skipped'][replay.SIM_TIME_WHY] == 1


@pytest.mark.parametrize('stray_first', [False, True])
def test_a_stray_type_on_diagnostics_hides_none_of_the_diagnostics(tmp_path, stray_first):
    # The type registered last on a topic decided: a std_msgs/String publisher on
    # /diagnostics after the real one had every diagnostic skipped as "not evidence"
    day = [item for item in robot_day(hours=2) if item[2].source == 'diagnostic']
    stray = [(START + dt.timedelta(seconds=30), '/diagnostics',
              ('std_msgs/msg/String', {'data': 'hello'}))] * 3
    bag = bag_writer.write_bag(tmp_path / 'bag', stray + day if stray_first else day + stray,
                               'mcap')
    code, summary = replay_json(tmp_path, bag)
    assert code == 0 and summary['taken'] == {'/diagnostics': len(day)}
    assert summary['skipped'] == {
        '/diagnostics: messages of type std_msgs/msg/String, not '
        'diagnostic_msgs/msg/DiagnosticArray': 3}


def test_a_bag_of_another_robot_is_refused_unless_accepted(tmp_path):
    first = bag_writer.write_bag(tmp_path / 'mine', robot_day(hours=1), 'mcap',
                                 custom={'hostname': 'robot-a'})
    other = bag_writer.write_bag(tmp_path / 'other', robot_day(start=START + dt.timedelta(days=9),
                                                               hours=1), 'mcap',
                                 custom={'hostname': 'robot-b'})
    assert replay_json(tmp_path, first, extra=['--no-dream'])[0] == 0
    code, summary = replay_json(tmp_path, other, extra=['--no-dream'])
    assert code == 1 and 'robot-b' in summary['refused'][0]['why']
    assert '--accept-other-robot' in summary['refused'][0]['why']
    code, summary = replay_json(tmp_path, other, extra=['--no-dream', '--accept-other-robot'])
    assert code == 0 and summary['observations'] > 0
    rrn = bag_writer.write_bag(tmp_path / 'rrn', robot_day(start=START + dt.timedelta(days=20),
                                                           hours=1), 'mcap',
                               custom={'rrn': 'RRN-000000000042'})
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    rrn: "RRN-000000000001"\n', encoding='utf-8')
    code, summary = replay_json(tmp_path, rrn, extra=['--no-dream', '--config', str(config)])
    assert code == 1 and 'RRN-000000000042' in summary['refused'][0]['why']


def test_the_robot_named_in_mcap_metadata_records_is_checked_too(tmp_path):
    """A fleet's metadata record, or the recorder's copy of custom data in a lone .mcap."""
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    rrn: "RRN-000000000001"\n', encoding='utf-8')
    fleet = bag_writer.write_bag(tmp_path / 'fleet', robot_day(hours=1), 'mcap',
                                 metadata={'robot': {'rrn': 'RRN-000000000042', 'site': 'dock 3'}})
    (fleet / 'metadata.yaml').unlink()  # the record alone names the robot
    [alone] = fleet.glob('*.mcap')
    code, summary = replay_json(tmp_path, alone, extra=['--no-dream', '--config', str(config)])
    assert code == 1 and 'RRN-000000000042' in summary['refused'][0]['why']
    accept = ['--no-dream', '--config', str(config), '--accept-other-robot']
    code, summary = replay_json(tmp_path, alone, extra=accept)
    assert code == 0 and summary['observations'] > 0
    # ros2 bag record's own copy of custom data, inside an .mcap copied without its directory.
    mine = bag_writer.write_bag(tmp_path / 'mine', robot_day(start=START + dt.timedelta(days=9),
                                                             hours=1), 'mcap',
                                custom={'hostname': 'robot-a'})
    other = bag_writer.write_bag(tmp_path / 'other', robot_day(start=START + dt.timedelta(days=19),
                                                               hours=1), 'mcap',
                                 metadata={'robot': {'hostname': 'robot-b'}})
    lone = tmp_path / 'lone'
    lone.mkdir()
    for bag in (mine, other):
        [file] = bag.glob('*.mcap')
        file.rename(lone / f'{bag.name}.mcap')
    code, summary = replay_json(tmp_path, lone / 'mine.mcap', extra=['--no-dream'])
    assert code == 0 and summary['observations'] > 0
    code, summary = replay_json(tmp_path, lone / 'other.mcap', extra=['--no-dream'])
    assert code == 1 and 'robot-b' in summary['refused'][0]['why']
    assert 'robot-a' in summary['refused'][0]['why']


def test_an_empty_bag_gets_a_clear_answer(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', [], 'mcap')
    code, summary = replay_json(tmp_path, bag)
    assert code == 1 and summary['refused'][0]['why'] == 'the recording holds no messages'


# --------------------------------------------------------------------------- terminal

def test_the_closing_summary_and_plain_progress_lines_when_piped(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'day.bag', robot_day(hours=30), 'ros1')
    code, out, err = run_cli('replay', str(bag), '--file', str(tmp_path / 'robot-memory.md'))
    assert code == 0, err
    assert 'replay: 100% ' in err and '\r' not in err  # piped: plain lines, no bar
    assert '/diagnostics: 180 messages taken' in out
    assert 'dreams run: 2 (created 2' in out
    assert 'skipped 180: topics that are not evidence' in out
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        kept = store.observation_count()
    assert f' observations, {kept} pieces of evidence kept\n' in out, out


@pytest.mark.parametrize('observations, kept, line', [
    (3, 0, '3 observations, 0 pieces of evidence kept'),
    (3, 1, '3 observations, 1 piece of evidence kept'),
    (2, 5, '2 observations, 5 pieces of evidence kept'),  # telemetry: one a rule
])
def test_the_summary_counts_the_evidence_kept_not_storage_rows(observations, kept, line):
    summary = replay.ReplaySummary(observations=observations, rows=kept)
    assert line in summary.lines()
    assert summary.to_dict()['evidence_kept'] == summary.to_dict()['rows'] == kept


def test_on_a_terminal_progress_is_one_bar_redrawn_in_place():
    class Terminal(io.StringIO):

        def isatty(self):
            return True

    screen = Terminal()
    display = replay_command.Display(screen)
    at = START
    display({'messages': 250, 'total': 1000, 'bytes': 2_500_000, 'total_bytes': 10**7,
             'elapsed': 5.0, 'at': at})
    display({'messages': 1000, 'total': 1000, 'bytes': 10**7, 'total_bytes': 10**7,
             'elapsed': 20.0, 'at': at, 'final': True})
    first, last = screen.getvalue().split('\r')[1:]
    assert first.startswith('[#######' + ' ' * 23 + ']  25% 250/1,000 messages, 2.5 MB')
    assert 'ETA 0:00:15' in first and '\n' not in first
    assert last.startswith('[' + '#' * 30 + '] 100%') and last.endswith('\n')


def test_without_the_bags_extra_the_command_says_what_to_install(tmp_path):
    """A process where rosbags cannot be imported, as on a machine without the extra."""
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=1), 'mcap')
    code = ("import sys; sys.modules['rosbags'] = None; "
            'from robot_memory.cli.main import main; '
            f"sys.exit(main(['replay', {str(bag)!r}, '--file', "
            f"{str(tmp_path / 'robot-memory.md')!r}]))")
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr  # as a missing required package (README)
    assert "pip install '.[bags]'" in done.stderr and 'not on PyPI' in done.stderr
    assert not (tmp_path / 'robot-memory.db').exists()


def test_replay_into_a_hand_written_file_it_cannot_read_is_refused_before_reading(tmp_path):
    # No dream of this database wrote the file: nothing could restore its entries, so
    # replay refuses at once, naming the line, and writes nothing beside it.
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_day(hours=2), 'mcap')
    memory = tmp_path / 'robot-memory.md'
    typo = ('---\nschema_version: "1.0"\nrrn: RRN-000000000007\n'
            'last_updated: 2026-04-01T00:00:00Z\nentries:\n  - id: mem-x\n'
            '    type: environment_note\n      text: "lip"\n---\n\n# notes\n')
    memory.write_text(typo, encoding='utf-8')
    code, out, err = run_cli('replay', str(bag), '--file', str(memory))
    assert code == 1, (out, err)
    assert f'{memory}:8: front matter is not valid YAML' in err, err
    assert memory.read_text(encoding='utf-8') == typo
    assert sorted(path.name for path in tmp_path.iterdir()) == ['bag', 'robot-memory.md']
