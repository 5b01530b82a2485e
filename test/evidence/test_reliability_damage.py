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
Damaged files.

A broken evidence database is set aside and rebuilt; a broken memory file is never
overwritten.

Evidence database (``EvidenceStore(path, on_corrupt='set_aside')``, what the node and the
CLI use): a truncated file, a file of garbage and a file whose pages were overwritten are
detected when the store opens, renamed to ``robot-memory.db.corrupt-<time>`` (with its WAL,
byte for byte, never deleted) and replaced by a fresh database. The next dream takes every
entry of robot-memory.md in again (audited, naming the set-aside copy) and new evidence of
an old fault reinforces its existing entry instead of doubling it. Without the option the
store still refuses the file and leaves it alone.

Memory file: garbage, a truncated file and a front matter that is never closed are set aside
as ``robot-memory.md.corrupt-<time>`` with their exact bytes by a dream (which restores the
entries from its snapshot), and left untouched by ``MemoryFile.update`` and by
``robot-memory prune`` (which exit with an error instead).
"""

import sqlite3
import subprocess
import sys

import pytest

from robot_memory.dream.autodream import dream
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import to_json_line
from robot_memory.rcan.memory_file import MemoryFile
from support.cli import run as run_cli
from support.dream_scenario import CONFIG
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.dream_scenario import status
from support.processes import child_env

MOTOR = ('motor: right', 'motor_right')


def grown_robot(directory) -> Robot:
    """Three nights of an encoder fault and one of a motor fault, dreamt; then closed."""
    robot = Robot(directory)
    for day in range(3):
        robot.fault(day)
        if day == 1:
            robot.fault(day, source=MOTOR, level=2)
        robot.dream(day)
    robot.close()
    return robot


def truncate_half(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def garbage(path) -> None:
    path.write_bytes(b'\x00\xffnot a database at all\n' * 500)


def scribble_pages(path) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 4096 * 3):
        data[offset:offset + 64] = b'\xa5' * 64
    path.write_bytes(bytes(data))


@pytest.mark.parametrize('damage', [truncate_half, garbage, scribble_pages])
def test_a_damaged_database_is_set_aside_and_rebuilt_from_the_memory_file(tmp_path, damage):
    robot = grown_robot(tmp_path / 'robot')
    database = robot.store.path
    entries = robot.entries(2)
    assert len(entries) == 2
    damage(database)
    damaged = database.read_bytes()

    with EvidenceStore(database, robot.rules, on_corrupt='set_aside') as store:
        assert store.set_aside_to is not None
        assert store.set_aside_to.name.startswith('robot-memory.db.corrupt-')
        assert store.set_aside_to.read_bytes() == damaged
        assert store.set_aside_copies() == [store.set_aside_to]
        assert store.db.execute('PRAGMA integrity_check').fetchone() == ('ok',)
        assert store.observation_count() == 0
        report = dream(store, robot.memory, morning(3), robot.rules, CONFIG)
        assert any('was set aside as robot-memory.db.corrupt-' in problem
                   for problem in report.problems), report.problems
        assert sorted(report.rebuilt) == sorted(entries) and report.manual == []
        for entry_id in entries:
            record, = store.history(entry_id)
            assert record.action == 'rebuild'
            assert store.set_aside_to.name in record.reason
            assert 'rebuilt from robot-memory.md' in record.reason
    assert robot.entries(3) == entries

    robot = Robot(tmp_path / 'robot')
    robot.fault(4)
    report = robot.dream(4)
    encoder = next(entry_id for entry_id, entry in entries.items()
                   if 'left encoder' in entry.text)
    assert report.created == [] and report.reinforced == [encoder]
    assert 'linked again to its existing entry' in robot.store.history(encoder)[-1].reason
    assert set(robot.entries(4)) == set(entries)
    assert robot.entries(4)[encoder].observation_count == entries[encoder].observation_count + 1
    robot.close()


def test_a_wal_beside_a_damaged_database_is_set_aside_with_it(tmp_path):
    database = tmp_path / 'robot-memory.db'
    garbage(database)
    wal = tmp_path / 'robot-memory.db-wal'
    wal.write_bytes(b'wal of the damaged database')
    with EvidenceStore(database, on_corrupt='set_aside') as store:
        moved = store.set_aside_to
    assert moved.with_name(moved.name + '-wal').read_bytes() == b'wal of the damaged database'
    assert sorted(path.name for path in tmp_path.glob('robot-memory.db.corrupt-*')) == \
        sorted([moved.name, moved.name + '-wal'])


def test_without_the_option_a_damaged_database_is_refused_and_left_alone(tmp_path):
    database = tmp_path / 'robot-memory.db'
    garbage(database)
    damaged = database.read_bytes()
    with pytest.raises(EvidenceError, match="move it aside.*on_corrupt='set_aside'"):
        EvidenceStore(database)
    assert database.read_bytes() == damaged
    assert list(tmp_path.glob('*.corrupt-*')) == []
    with pytest.raises(ValueError, match='on_corrupt must be one of raise, set_aside'):
        EvidenceStore(database, on_corrupt='delete')


def test_a_healthy_or_busy_database_is_never_set_aside(tmp_path):
    robot = grown_robot(tmp_path / 'robot')
    holder = sqlite3.connect(robot.store.path, isolation_level=None)
    holder.execute('PRAGMA locking_mode = EXCLUSIVE')
    holder.execute('BEGIN EXCLUSIVE')
    try:
        with pytest.raises(EvidenceError) as raised:
            EvidenceStore(robot.store.path, on_corrupt='set_aside', busy_timeout_s=0.2)
        assert 'locked' in str(raised.value)
    finally:
        holder.execute('ROLLBACK')
        holder.close()
    with EvidenceStore(robot.store.path, on_corrupt='set_aside') as store:
        assert store.set_aside_to is None and store.take_problems() == []
        assert store.audit_count() > 0
    assert list(robot.store.path.parent.glob('*.corrupt-*')) == []


def damaged_texts() -> dict:
    return {
        'garbage': b'---\n' + b'\x00\x01\x02 not text \xff\xfe' * 40,
        'unclosed': b'---\nschema_version: "1.0"\nentries:\n- {"id": "mem-1"\n',
        'bad_yaml': b'---\nschema_version: "1.0"\nentries: [oops\n---\nbody\n',
        'bad_header': b'---\nschema_version: "9.9"\nrrn: RRN-000000000001\n---\n',
        'truncated': None,
    }


@pytest.mark.parametrize('name', sorted(damaged_texts()))
def test_a_damaged_memory_file_is_kept_byte_for_byte(tmp_path, name):
    robot = grown_robot(tmp_path / 'robot')
    entries = robot.entries(2)
    path = robot.memory.path
    if name == 'truncated':
        path.write_bytes(path.read_bytes()[:200])
    else:
        path.write_bytes(damaged_texts()[name])
    damaged = path.read_bytes()

    with pytest.raises(MemoryFileError, match='left untouched'):
        with MemoryFile(path).update(morning(3)) as result:
            result.document.entries.clear()
    assert path.read_bytes() == damaged
    pruned = subprocess.run([sys.executable, '-m', 'robot_memory.cli.main', 'prune', '--file',
                             str(path)], env=child_env(), capture_output=True, text=True,
                            timeout=60)
    assert pruned.returncode == 1 and 'left untouched' in pruned.stderr
    assert path.read_bytes() == damaged

    robot = Robot(tmp_path / 'robot')
    report = robot.dream(3)
    robot.close()
    kept, = path.parent.glob('robot-memory.md.corrupt-*')
    assert kept.read_bytes() == damaged
    assert any('set aside as robot-memory.md.corrupt-' in problem for problem in report.problems)
    assert set(robot.entries(3)) == set(entries)


def test_both_files_damaged_lose_nothing_that_was_on_disk(tmp_path):
    robot = grown_robot(tmp_path / 'robot')
    memory, database = robot.memory.path, robot.store.path
    garbage(database)
    memory.write_bytes(b'---\nentries: [oops\n---\n')
    old_db, old_memory = database.read_bytes(), memory.read_bytes()
    with EvidenceStore(database, on_corrupt='set_aside') as store:
        # The rebuilt database has no snapshot to restore the file's entries from: the
        # dream refuses rather than write an empty memory over them; the file stays.
        with pytest.raises(MemoryFileError, match='left untouched; fix it by hand'):
            dream(store, robot.memory, morning(3), robot.rules, CONFIG)
    db_copy, = tmp_path.glob('robot/robot-memory.db.corrupt-*')
    assert db_copy.read_bytes() == old_db and memory.read_bytes() == old_memory
    assert list(tmp_path.glob('robot/robot-memory.md.corrupt-*')) == []


@pytest.mark.parametrize('damage', [truncate_half, garbage])
def test_robot_memory_dream_sets_a_damaged_database_aside_and_rebuilds_it(tmp_path, capsys,
                                                                          damage):
    robot = grown_robot(tmp_path / 'robot')
    entries = robot.entries(2)
    database = robot.store.path
    damage(database)
    damaged = database.read_bytes()

    code, out, err = run_cli(capsys, 'dream', '--file', robot.memory.path, '--at',
                             morning(3).isoformat())
    assert code == 0, err
    assert 'was set aside as robot-memory.db.corrupt-' in err and err.startswith('warning: ')
    assert f'manual edits 0, rebuilt {len(entries)}' in out
    assert 'Taken in again from the memory file (the evidence database was rebuilt)' in out
    assert 'Taken in from edits by hand' not in out
    kept, = (path for path in tmp_path.glob('robot/robot-memory.db.corrupt-*')
             if not path.name.endswith('-wal'))
    assert kept.read_bytes() == damaged
    assert set(robot.entries(3)) == set(entries)
    with EvidenceStore(database) as store:
        assert store.db.execute('PRAGMA integrity_check').fetchone() == ('ok',)
        for entry_id in entries:
            record, = store.history(entry_id)
            assert record.action == 'rebuild' and kept.name in record.reason


def test_robot_memory_ingest_sets_a_damaged_database_aside_and_stores(tmp_path, capsys):
    robot = grown_robot(tmp_path / 'robot')
    garbage(robot.store.path)
    source = tmp_path / 'day3.jsonl'
    source.write_text(''.join(to_json_line(status(morning(3), 1)) + '\n' for _ in range(7)))

    code, out, err = run_cli(capsys, 'ingest', '--file', robot.memory.path, source)
    assert code == 0, err
    assert 'accepted 7, refused 0; 7 pieces of evidence kept' in out
    assert 'was set aside as robot-memory.db.corrupt-' in err
    assert len([path for path in tmp_path.glob('robot/robot-memory.db.corrupt-*')
                if not path.name.endswith('-wal')]) == 1
    with EvidenceStore(robot.store.path) as store:
        assert store.observation_count() == 7

    # The next dream names the set-aside copy when it takes the file's entries in again.
    code, out, err = run_cli(capsys, 'dream', '--file', robot.memory.path, '--at',
                             morning(3).isoformat())
    assert code == 0, err
    with EvidenceStore(robot.store.path) as store:
        first = [store.history(entry_id)[0] for entry_id in robot.entries(3)]
    assert len(first) == 2
    assert all(record.action == 'rebuild' and 'robot-memory.db.corrupt-' in record.reason
               for record in first)


def test_robot_memory_history_leaves_a_damaged_database_alone_and_says_what_to_do(tmp_path,
                                                                                  capsys):
    robot = grown_robot(tmp_path / 'robot')
    garbage(robot.store.path)
    damaged = robot.store.path.read_bytes()
    code, out, err = run_cli(capsys, 'history', '--file', robot.memory.path, 'mem-00000000')
    assert code == 1 and out == ''
    assert 'not a usable evidence database' in err and 'robot-memory dream' in err
    assert 'on_corrupt' not in err
    assert robot.store.path.read_bytes() == damaged
    assert list(tmp_path.glob('robot/*.corrupt-*')) == []


@pytest.mark.parametrize('damage', [truncate_half, garbage])
@pytest.mark.parametrize('how', [['--list'], ['--list', '--json'],
                                 ['--dream', '1', '--dry-run']])
def test_robot_memory_undo_that_only_reads_leaves_a_damaged_database_alone(tmp_path, capsys,
                                                                           damage, how):
    robot = grown_robot(tmp_path / 'robot')
    damage(robot.store.path)
    damaged = robot.store.path.read_bytes()
    code, out, err = run_cli(capsys, 'undo', '--file', robot.memory.path, *how)
    assert code == 1 and out == ''
    assert 'not a usable evidence database' in err and 'left as it is' in err
    assert robot.store.path.read_bytes() == damaged
    assert list(tmp_path.glob('robot/*.corrupt-*')) == []


def test_robot_memory_undo_list_creates_no_database(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    code, out, err = run_cli(capsys, 'undo', '--file', memory, '--list')
    assert code == 0, err
    assert 'no dream or undo yet' in out
    assert list(tmp_path.iterdir()) == []


def scribble_observations(path) -> None:
    """Damage the observations table's root page only: the entries' links stay readable."""
    with sqlite3.connect(path) as conn:
        page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'observations'"
                            ).fetchone()[0]
        size = conn.execute('PRAGMA page_size').fetchone()[0]
        conn.execute('PRAGMA wal_checkpoint(TRUNCATE)')
    data = bytearray(path.read_bytes())
    offset = (page - 1) * size
    data[offset:offset + 64] = b'\xa5' * 64
    path.write_bytes(bytes(data))


def weeks_of_a_fault(directory, nights: range) -> Robot:
    """Return a robot with an encoder fault every evening of ``nights``, each dreamt."""
    robot = Robot(directory, on_corrupt='set_aside')
    for day in nights:
        robot.fault(day, count=4)
        robot.dream(day)
    return robot


def texts_after(directory, damage) -> tuple:
    """Eight nights, ``damage``, four more nights; (texts, first dream after, audit)."""
    weeks_of_a_fault(directory, range(8)).close()
    if damage is not None:
        damage(directory / 'robot-memory.db')
    robot = Robot(directory, on_corrupt='set_aside')
    robot.fault(8, count=4)
    first = robot.dream(8)
    audit = {entry_id: robot.store.history(entry_id) for entry_id in robot.entries(8)}
    robot.close()
    robot = weeks_of_a_fault(directory, range(9, 12))
    texts = sorted(entry.text for entry in robot.entries(11).values())
    robot.close()
    return texts, first, audit


@pytest.mark.parametrize('damage', [truncate_half, garbage])
def test_after_a_rebuild_entry_texts_state_the_evidence_there_is(tmp_path, damage):
    # issue 40 point 6: the text kept "on 8 of the last 9 days" for good; nothing of the
    # damaged database can be read, so the text states the four nights seen since.
    undamaged, _, _ = texts_after(tmp_path / 'undamaged', None)
    assert 'on 12 of the last 13 days' in undamaged[0]
    texts, first, audit = texts_after(tmp_path / 'damaged', damage)
    text, = texts
    assert 'on 8 of the last 9 days' not in text
    assert 'on 4 of the last 5 days' in text
    assert first.manual == [] and len(first.rebuilt) == 1
    assert 'rebuilt 1' in first.summary() and 'manual edits 0' in first.summary()
    (entry_id, (record, *_)), = audit.items()
    assert record.action == 'rebuild' and 'rebuilt from robot-memory.md' in record.reason


def test_after_a_rebuild_the_links_that_survive_keep_the_counts_of_an_undamaged_copy(tmp_path):
    undamaged, _, _ = texts_after(tmp_path / 'undamaged', None)
    texts, first, audit = texts_after(tmp_path / 'damaged', scribble_observations)
    assert any('was set aside' in problem for problem in first.problems)
    assert texts == undamaged
    assert 'on 12 of the last 13 days' in texts[0]
    assert all(records[0].action == 'rebuild' for records in audit.values())
