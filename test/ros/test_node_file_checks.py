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
The files and folders of memory_node going wrong, on real files (issue 40, point 5).

``DocumentCache`` never raises for what the file system says and keeps the last copy it
read; ``ros.node_files.check`` names what is wrong with each file and folder the node
touches: the memory file, the database, the archive, the summaries' folder and the keys.
The cases: unreadable, read-only, deleted, replaced by a folder, on a full disk.

We run as root, whose CAP_DAC_OVERRIDE reads and writes through any permission: the
permission cases run in a child process with that capability (and DAC_READ_SEARCH) dropped
by util-linux ``setpriv``, as the node would run on a robot.
"""

import datetime as dt
import json
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.document_cache import DocumentCache
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.ros import node_files
from robot_memory.ros.node_files import Place
from support.disks import mounted_tmpfs
from support.processes import child_env
from support.samples import MEMORY

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
RRN = 'RRN-000000000042'
SETPRIV = shutil.which('setpriv')
DROP = ['--inh-caps=-dac_override,-dac_read_search',
        '--bounding-set=-dac_override,-dac_read_search']


def without_override(code: str) -> dict:
    """Run ``code`` (which prints one JSON line) in a child without root's file override."""
    if SETPRIV is None:
        pytest.skip('util-linux setpriv is not installed')
    done = subprocess.run([SETPRIV, *DROP, sys.executable, '-c', textwrap.dedent(code)],
                          capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def memory(tmp_path):
    folder = tmp_path / 'robot'
    folder.mkdir()
    path = folder / 'robot-memory.md'
    path.write_text(MEMORY, encoding='utf-8')
    yield path
    folder.chmod(0o755)


def test_a_folder_that_cannot_be_searched_is_reported_and_the_last_copy_served(memory):
    facts = without_override(f"""
        import datetime as dt, json, pathlib
        from robot_memory.rcan.document_cache import DocumentCache
        from robot_memory.rcan.memory_file import MemoryFile
        now = dt.datetime(2026, 4, 1, 12, tzinfo=dt.timezone.utc)
        path = pathlib.Path({str(memory)!r})
        cache = DocumentCache(MemoryFile(path), {RRN!r})
        facts = {{'before': len(cache.document(now).entries)}}
        path.parent.chmod(0)
        facts['during'] = len(cache.document(now).entries)
        facts['error'] = cache.error
        cache.invalidate()  # a dream wrote meanwhile: still no crash, still the last copy
        facts['after_invalidate'] = len(cache.document(now).entries)
        path.parent.chmod(0o755)
        facts['back'] = len(cache.document(now).entries)
        facts['error_back'] = cache.error
        print(json.dumps(facts))
    """)
    assert facts['before'] == facts['during'] == facts['after_invalidate'] == facts['back'] > 0
    assert 'Permission denied' in facts['error'] and 'last copy read is served' in \
        facts['error'], facts
    assert facts['error_back'] is None


def test_a_memory_file_deleted_after_it_was_read_is_reported_until_it_is_back(memory):
    cache = DocumentCache(MemoryFile(memory), RRN)
    entries = len(cache.document(NOW).entries)
    memory.unlink()
    document = cache.document(NOW)
    assert cache.deleted and len(document.entries) == entries
    assert 'deleted after it was read' in cache.error and 'next dream' in cache.error
    memory.write_text(MEMORY, encoding='utf-8')
    cache.document(NOW)
    assert not cache.deleted and cache.error is None


def test_a_memory_file_that_never_existed_is_not_reported_as_deleted(tmp_path):
    cache = DocumentCache(MemoryFile(tmp_path / 'robot-memory.md'), RRN)
    assert cache.document(NOW).entries == [] and cache.error is None and not cache.deleted


def test_a_memory_file_replaced_by_a_folder_is_reported_and_the_last_copy_served(memory):
    cache = DocumentCache(MemoryFile(memory), RRN)
    entries = len(cache.document(NOW).entries)
    memory.unlink()
    memory.mkdir()
    assert len(cache.document(NOW).entries) == entries
    assert 'Is a directory' in cache.error and not cache.deleted


# ------------------------------------------------------------------ node_files.check


def places(folder: pathlib.Path, key: pathlib.Path) -> list:
    return [Place('memory file', folder / 'robot-memory.md'),
            Place('database', folder / 'robot-memory.db', required=True),
            Place('archive', folder / 'robot-memory.md.archive.jsonl'),
            Place('summaries', folder, folder=True),
            Place('private key', key, write=False, required=True)]


@pytest.fixture
def robot(tmp_path):
    folder = tmp_path / 'robot'
    folder.mkdir()
    for name in ('robot-memory.md', 'robot-memory.db', 'robot-memory.md.archive.jsonl'):
        (folder / name).write_text('x')
    keys = tmp_path / 'keys'
    keys.mkdir()
    (keys / 'robot.pem').write_text('key')
    yield folder, keys / 'robot.pem'
    for path in (folder, keys):
        if path.exists():
            path.chmod(0o755)


def test_every_place_in_order_is_ok_when_nothing_is_wrong(robot):
    assert node_files.check_all(places(*robot)) == {
        'memory file': 'ok', 'database': 'ok', 'archive': 'ok', 'summaries': 'ok',
        'private key': 'ok'}


def test_a_file_not_written_yet_is_ok_but_a_required_one_missing_is_not(robot):
    folder, key = robot
    (folder / 'robot-memory.md.archive.jsonl').unlink()
    (folder / 'robot-memory.md').unlink()
    (folder / 'robot-memory.db').unlink()
    key.unlink()
    states = node_files.check_all(places(folder, key))
    assert states['archive'] == states['memory file'] == 'ok'
    missing = ' is missing (deleted or moved): put it back, or set the parameter that names it ' \
        'to where it is now'
    assert states['database'] == f'{folder}/robot-memory.db{missing}', states
    assert states['private key'] == f'{key}{missing}', states


@pytest.mark.parametrize('what', ['memory file', 'database', 'archive', 'private key'])
def test_a_file_replaced_by_a_folder_is_named(robot, what):
    place = {place.what: place for place in places(*robot)}[what]
    place.path.unlink()
    place.path.mkdir()
    assert node_files.check(place) == f'{place.path} is a folder, not a file: move it aside'


def test_a_deleted_folder_is_named_for_each_file_in_it(robot, tmp_path):
    folder, key = robot
    shutil.rmtree(folder)
    states = node_files.check_all(places(folder, key))
    gone = f'its folder {folder} does not exist (deleted, moved or not mounted): put it back ' \
        'or mount it'
    assert [states[what] for what in ('memory file', 'database', 'archive')] == [gone] * 3
    assert states['summaries'] == 'ok'  # made again by the next write: its parent takes it
    assert states['private key'] == 'ok'


def test_unreadable_and_read_only_places_are_named_without_root_override(robot):
    folder, key = robot
    facts = without_override(f"""
        import json, os, pathlib
        from robot_memory.ros import node_files
        from robot_memory.ros.node_files import Place
        folder, key = pathlib.Path({str(folder)!r}), pathlib.Path({str(key)!r})
        places = [Place('memory file', folder / 'robot-memory.md'),
                  Place('database', folder / 'robot-memory.db', required=True),
                  Place('archive', folder / 'robot-memory.md.archive.jsonl'),
                  Place('summaries', folder, folder=True),
                  Place('private key', key, write=False, required=True)]
        facts = {{}}
        (folder / 'robot-memory.db').chmod(0o444)
        (folder / 'robot-memory.md.archive.jsonl').chmod(0)
        key.chmod(0)
        facts['files'] = node_files.check_all(places)
        for path in (folder / 'robot-memory.db', folder / 'robot-memory.md.archive.jsonl', key):
            path.chmod(0o644)
        folder.chmod(0o555)
        facts['read_only_folder'] = node_files.check_all(places)
        folder.chmod(0)
        facts['unreadable_folder'] = node_files.check_all(places)
        facts['size'] = node_files.size_of(folder / 'robot-memory.md')
        folder.chmod(0o755)
        facts['back'] = node_files.check_all(places)
        print(json.dumps(facts))
    """)
    files = facts['files']
    cannot_read = " cannot be read (permissions): give the node's user read permission"
    assert files['database'] == \
        f"{folder}/robot-memory.db is read-only: give the node's user write permission on it"
    assert files['archive'] == f'{folder}/robot-memory.md.archive.jsonl{cannot_read}', files
    assert files['private key'] == f'{key}{cannot_read}', files
    assert files['memory file'] == files['summaries'] == 'ok', files
    read_only = facts['read_only_folder']
    assert {read_only[what] for what in ('memory file', 'database', 'archive', 'summaries')} \
        == {f"its folder {folder} is read-only: give the node's user write permission on it, "
            'or mount its disk read-write'}, read_only
    unreadable = facts['unreadable_folder']
    assert {unreadable[what] for what in ('memory file', 'database', 'archive')} == \
        {f"its folder {folder} cannot be searched (permissions): give the node's user read "
         'and search (r-x) permission on it'}, unreadable
    assert facts['size'] == 0  # cannot be looked at: no exception
    assert set(facts['back'].values()) == {'ok'}, facts['back']


@pytest.fixture
def small_disk(tmp_path):
    """Mount a real 1 MiB tmpfs for the test; unmount it at the end."""
    with mounted_tmpfs(tmp_path / 'disk') as disk:
        yield disk


def test_files_moved_to_a_full_disk_are_named_and_space_coming_back_is_seen(robot, small_disk):
    folder, key = robot
    for path in folder.iterdir():
        shutil.move(str(path), str(small_disk / path.name))
    assert set(node_files.check_all(places(small_disk, key)).values()) == {'ok'}
    filler = small_disk / 'filler'
    with open(filler, 'wb') as handle:
        try:
            while True:
                handle.write(b'\0' * 65536)
                handle.flush()
        except OSError:
            pass
    states = node_files.check_all(places(small_disk, key))
    full = {states[what] for what in ('memory file', 'database', 'archive', 'summaries')}
    [said] = full
    assert said.startswith(f'{small_disk}: the disk is full (') and said.endswith(
        ' bytes free): free space on it'), states
    assert states['private key'] == 'ok'  # only read: a full disk does not matter
    filler.unlink()
    assert set(node_files.check_all(places(small_disk, key)).values()) == {'ok'}
