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
Where the files go: symlinked memory files and databases, and one database per memory file.

A memory file that is a symbolic link (onto a persistent partition, say) stays a link:
every writer (``robot-memory prune``, ``dream``, ``import-rlm``, the node) writes through
to the end of the chain of links, in the target's directory, and puts the lock and the
side files (archive, quarantine, ``.corrupt-`` copies) beside the target. A link to
nothing is refused, never replaced. A symlinked database is opened through to its target
(its ``-wal`` lies there). The default database is named after the memory file
(``robot-memory.db`` for ``robot-memory.md``, ``foo.db`` for ``foo.md``), so two memory
files in one directory never share evidence, and ``robot-memory stats`` says which
database a file uses. Real files, real SQLite, the CLI in this process.
"""

import datetime as dt
import json
import os
import sqlite3
import stat

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import to_json_line
from robot_memory.locations import default_db_path
from robot_memory.rcan.memory_file import ENV_VAR
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import side_file
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from support.cli import run
from support.dream_scenario import evening
from support.dream_scenario import status
from support.samples import AT
from support.samples import MEMORY

NIGHT = '2026-05-02T02:00:00Z'


@pytest.fixture(autouse=True)
def no_environment(tmp_path, monkeypatch):
    """No memory file from the environment; HOME inside the test's directory."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))


def persistent(tmp_path, name='robot-memory.md', text=MEMORY):
    """Return a memory file on a 'persistent partition' (another directory) and a link dir."""
    disk = tmp_path / 'persist'
    disk.mkdir()
    target = disk / name
    if text is not None:
        target.write_text(text, encoding='utf-8')
    links = tmp_path / 'opencastor'
    links.mkdir()
    return target, links


def evidence_file(tmp_path, count=30):
    """Return a JSON-lines file of ``count`` WARN reports of one encoder on the evening of day 0."""
    source = tmp_path / 'obs.jsonl'
    source.write_text(''.join(to_json_line(status(evening(0, 20 + i / 10), 1)) + '\n'
                              for i in range(count)))
    return source


def assert_link_kept(link, target):
    """``link`` is still a symbolic link that leads to ``target``."""
    assert link.is_symlink(), f'{link} was replaced by a regular file'
    assert os.path.realpath(link) == str(target)


def only_the_link(directory, link):
    """Nothing but ``link`` was written into the link's directory."""
    assert sorted(path.name for path in directory.iterdir()) == [link.name]


# ----------------------------------------------------------------- the memory file, linked

def test_prune_writes_through_a_link_into_another_directory_and_keeps_the_link(tmp_path, capsys):
    target, links = persistent(tmp_path)
    link = links / 'robot-memory.md'
    link.symlink_to(target)
    # A day after the sample's last reinforcement: a prune spares what was seen in the last
    # recent_hours (24 h), so mem-weak is due only then.
    code, out, err = run(capsys, 'prune', '--file', link, '--at', '2026-04-02T03:00:00Z')
    assert code == 0, err
    assert_link_kept(link, target)
    text = target.read_text(encoding='utf-8')
    assert 'mem-weak' not in text and 'mem-high' in text and text.endswith('\n# Notes\n')
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    # The archive, the lock and the database lie beside the target, with the data.
    [record] = [json.loads(line) for line in
                side_file(target, '.archive.jsonl').read_text().splitlines()]
    assert record['entry']['id'] == 'mem-weak'
    assert side_file(target, '.lock').exists()
    assert (target.parent / 'robot-memory.db').exists()
    only_the_link(links, link)
    assert not list(target.parent.glob('.*.tmp'))


def test_dream_and_ingest_write_through_a_chain_of_links(tmp_path, capsys):
    target, links = persistent(tmp_path, name='rover.md', text=None)
    middle = tmp_path / 'middle.md'
    middle.symlink_to(target)
    link = links / 'robot-memory.md'
    link.symlink_to(middle)
    target.write_text(MEMORY, encoding='utf-8')
    source = evidence_file(tmp_path)
    assert run(capsys, 'ingest', '--file', link, source)[0] == 0
    code, out, err = run(capsys, 'dream', '--file', link, '--at', NIGHT, '--json')
    assert code == 0, err
    report = json.loads(out)
    assert len(report['created']) == 1, report
    assert_link_kept(link, target)
    assert middle.is_symlink() and os.readlink(middle) == str(target)
    assert report['created'][0] in target.read_text(encoding='utf-8')
    # The database belongs to the target, named after it: rover.md -> rover.db.
    assert (target.parent / 'rover.db').exists()
    assert not (target.parent / 'robot-memory.db').exists()
    only_the_link(links, link)
    with sqlite3.connect(target.parent / 'rover.db') as db:
        assert db.execute('SELECT count(*) FROM dreams').fetchone()[0] == 1


def test_every_link_to_one_file_shares_its_lock(tmp_path):
    target, links = persistent(tmp_path)
    first = links / 'a.md'
    second = tmp_path / 'b.md'
    first.symlink_to(target)
    second.symlink_to(target)
    assert MemoryFile(first).lock_path == MemoryFile(second).lock_path == \
        side_file(target, '.lock')
    holder = MemoryFile(first)
    waiter = MemoryFile(second, lock_timeout_s=0.2)
    with holder.lock():
        with pytest.raises(MemoryFileError, match='another writer held robot-memory.md.lock'):
            with waiter.lock():
                pass


def test_a_corrupt_target_is_set_aside_beside_it_and_the_link_kept(tmp_path, capsys):
    target, links = persistent(tmp_path)
    link = links / 'robot-memory.md'
    link.symlink_to(target)
    # Damaged after a dream wrote it (one no dream wrote is left where it is: the dream is
    # refused, with nothing to restore its entries from).
    assert run(capsys, 'dream', '--file', link, '--at', '2026-05-01T02:00:00Z')[0] == 0
    target.write_text('---\nschema_version: "1.0"\nentries: [\n---\n', encoding='utf-8')
    damaged = target.read_bytes()
    source = evidence_file(tmp_path)
    assert run(capsys, 'ingest', '--file', link, source)[0] == 0
    code, out, err = run(capsys, 'dream', '--file', link, '--at', NIGHT)
    assert code == 0, err
    assert_link_kept(link, target)
    [kept] = target.parent.glob('robot-memory.md.corrupt-*')
    assert kept.read_bytes() == damaged
    assert 'schema_version: "1.0"' in target.read_text(encoding='utf-8')
    only_the_link(links, link)


def test_a_link_to_nothing_is_refused_by_every_writer_and_stays_as_it_was(tmp_path, capsys):
    links = tmp_path / 'opencastor'
    links.mkdir()
    link = links / 'robot-memory.md'
    link.symlink_to(tmp_path / 'unmounted' / 'robot-memory.md')
    source = evidence_file(tmp_path)
    for argv in (['prune', '--at', AT], ['dream', '--at', NIGHT], ['show'], ['stats'],
                 ['ingest', source]):
        code, out, err = run(capsys, *argv[:1], '--file', link, *argv[1:])
        assert code == 1, (argv, out, err)
        assert 'is a symbolic link to' in err and 'which does not exist' in err, (argv, err)
        assert str(tmp_path / 'unmounted' / 'robot-memory.md') in err
    assert link.is_symlink() and not link.exists()
    only_the_link(links, link)
    assert not (tmp_path / 'unmounted').exists()


def test_a_loop_of_links_and_a_link_to_a_directory_are_refused(tmp_path):
    loop_a, loop_b = tmp_path / 'a.md', tmp_path / 'b.md'
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    with pytest.raises(MemoryFileError, match='cannot be followed'):
        with MemoryFile(loop_a).update(dt.datetime.now(UTC)):
            pass
    folder = tmp_path / 'folder.md'
    folder.symlink_to(tmp_path)
    with pytest.raises(MemoryFileError, match='not a regular file'):
        MemoryFile(folder).exists()
    assert loop_a.is_symlink() and loop_b.is_symlink() and folder.is_symlink()


# ---------------------------------------------------------------------- the database, linked

def test_a_symlinked_database_is_opened_through_to_its_target(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(MEMORY, encoding='utf-8')
    disk = tmp_path / 'persist'
    disk.mkdir()
    real = disk / 'evidence.db'
    EvidenceStore(real).close()
    link = tmp_path / 'robot-memory.db'
    link.symlink_to(real)
    source = evidence_file(tmp_path)
    assert run(capsys, 'ingest', '--file', memory, source)[0] == 0
    with EvidenceStore(link) as store:
        assert store.path == real
        assert store.observation_count() == 30
        assert (disk / 'evidence.db-wal').exists()
        assert not (tmp_path / 'robot-memory.db-wal').exists()
    assert run(capsys, 'dream', '--file', memory, '--at', NIGHT)[0] == 0
    assert link.is_symlink() and os.path.realpath(link) == str(real)
    with sqlite3.connect(real) as db:
        assert db.execute('SELECT count(*) FROM dreams').fetchone()[0] == 1


def test_import_rlm_writes_through_a_symlinked_database(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(MEMORY, encoding='utf-8')
    disk = tmp_path / 'persist'
    disk.mkdir()
    real = disk / 'records.db'
    link = tmp_path / 'records.db'
    with Substrate(real) as substrate:
        substrate.learn('The charging dock is behind the kitchen door', type='semantic',
                        now=dt.datetime(2026, 5, 1, tzinfo=UTC))
    link.symlink_to(real)
    chunks = tmp_path / 'chunks'
    assert run(capsys, 'export-rlm', '--file', memory, '--db', link, chunks)[0] == 0
    fresh_real = disk / 'fresh.db'
    Substrate(fresh_real).close()
    fresh = tmp_path / 'fresh.db'
    fresh.symlink_to(fresh_real)
    code, out, err = run(capsys, 'import-rlm', '--file', memory, '--db', fresh, chunks)
    assert code == 0, err
    assert out.startswith('imported 1,'), out
    assert fresh.is_symlink() and os.path.realpath(fresh) == str(fresh_real)
    with sqlite3.connect(fresh_real) as db:
        assert db.execute('SELECT count(*) FROM substrate_records').fetchone()[0] == 1
    assert sorted(path.name for path in tmp_path.glob('fresh.db*')) == ['fresh.db']


def test_a_damaged_symlinked_database_is_set_aside_beside_its_target(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(MEMORY, encoding='utf-8')
    disk = tmp_path / 'persist'
    disk.mkdir()
    real = disk / 'robot-memory.db'
    real.write_bytes(b'this is not a database' * 100)
    link = tmp_path / 'robot-memory.db'
    link.symlink_to(real)
    source = evidence_file(tmp_path)
    code, out, err = run(capsys, 'ingest', '--file', memory, source)
    assert code == 0 and 'was set aside as robot-memory.db.corrupt-' in err, err
    assert len(list(disk.glob('robot-memory.db.corrupt-*'))) == 1
    assert link.is_symlink() and os.path.realpath(link) == str(real)
    with EvidenceStore(link) as store:
        assert store.observation_count() == 30


def test_a_database_link_to_nothing_is_refused(tmp_path):
    link = tmp_path / 'robot-memory.db'
    link.symlink_to(tmp_path / 'unmounted' / 'robot-memory.db')
    with pytest.raises(EvidenceError, match='symbolic link to .* which does not exist'):
        EvidenceStore(link, on_corrupt='set_aside')
    with pytest.raises(SubstrateError, match='symbolic link to .* which does not exist'):
        Substrate(link)
    assert link.is_symlink() and not (tmp_path / 'unmounted').exists()


# ------------------------------------------------------------- one database per memory file

@pytest.mark.parametrize('name, database', [
    ('robot-memory.md', 'robot-memory.db'),
    ('foo.md', 'foo.db'),
    ('notes', 'notes.db'),
    ('x.db', 'x.db.db'),
    ('.md', '.md.db'),
    ('robot-memory.md.bak', 'robot-memory.md.bak.db'),
])
def test_the_database_is_named_after_the_memory_file(tmp_path, name, database):
    assert default_db_path(tmp_path / name) == tmp_path / database
    assert default_db_path(tmp_path / name) != tmp_path / name


def test_a_linked_memory_file_uses_the_database_of_its_target(tmp_path):
    target, links = persistent(tmp_path, name='rover.md')
    link = links / 'robot-memory.md'
    link.symlink_to(target)
    assert default_db_path(link) == target.parent / 'rover.db'
    assert default_db_path(str(link)) == target.parent / 'rover.db'


def test_two_memory_files_in_one_directory_keep_their_own_evidence(tmp_path, capsys):
    first = tmp_path / 'robot-memory.md'
    second = tmp_path / 'arm.md'
    source = evidence_file(tmp_path)
    assert run(capsys, 'ingest', '--file', first, source)[0] == 0
    code, out, err = run(capsys, 'dream', '--file', first, '--at', NIGHT, '--json')
    assert code == 0, err
    assert len(json.loads(out)['created']) == 1
    # The second file's dream finds no evidence of the first, and leaves its database alone.
    code, out, err = run(capsys, 'dream', '--file', second, '--at', NIGHT, '--json')
    assert code == 0, err
    report = json.loads(out)
    assert report['created'] == [] and report['consumed'] == 0, report
    assert (tmp_path / 'arm.db').exists()
    with sqlite3.connect(tmp_path / 'robot-memory.db') as db:
        assert db.execute('SELECT count(*) FROM dreams').fetchone()[0] == 1
    with sqlite3.connect(tmp_path / 'arm.db') as db:
        assert db.execute('SELECT count(*) FROM observations').fetchone()[0] == 0


def test_stats_says_which_database_the_file_uses(tmp_path, capsys):
    memory = tmp_path / 'rover.md'
    memory.write_text(MEMORY, encoding='utf-8')
    code, out, _ = run(capsys, 'stats', '--file', memory, '--at', AT)
    assert code == 0
    assert f'evidence database: {tmp_path / "rover.db"} (not created yet)' in out
    assert run(capsys, 'ingest', '--file', memory, evidence_file(tmp_path))[0] == 0
    code, out, _ = run(capsys, 'stats', '--file', memory, '--at', AT, '--json')
    stats = json.loads(out)
    assert stats['database'] == str(tmp_path / 'rover.db') and stats['database_exists']
    assert 'file_target' not in stats
    link = tmp_path / 'robot-memory.md'
    link.symlink_to(memory)
    code, out, _ = run(capsys, 'stats', '--file', link, '--at', AT)
    assert f'(a link to {memory})' in out
    assert f'evidence database: {tmp_path / "rover.db"}\n' in out
    code, out, _ = run(capsys, 'stats', '--file', link, '--at', AT, '--json')
    stats = json.loads(out)
    assert stats['file_target'] == str(memory) and stats['database'] == str(tmp_path / 'rover.db')
