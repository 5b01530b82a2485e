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
Hostile and damaged memory files never exhaust the machine, and binary data is never migrated.

Each hostile file is run through every command that reads the memory file (``show``,
``export``, ``prune``, ``dream``) in a child process whose address space is limited to
1 GiB (``RLIMIT_AS``): a pass means the command refused the file with a message, inside
that bound. The child's peak RSS and wall time are printed as figures (``-s`` shows
them); no timing is asserted.
"""

import json
import os
import random
import resource
import subprocess
import time

import pytest

from robot_memory.cli import main as cli
from robot_memory.common.timeutil import parse_iso
from robot_memory.dream import archive as dream_archive
from robot_memory.errors import MemoryFileError
from robot_memory.rcan import memory_file
from robot_memory.rcan.context import plural
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import parse_bytes
from support.cli import command as cli_command
from support.processes import child_env
from support.samples import SPEC_EXAMPLE

HEADER = ('---\nschema_version: "1.0"\nrrn: RRN-000000000001\n'
          'last_updated: 2026-04-01T02:00:00Z\n')
ENTRY = ('  - id: mem-{index:04d}\n    type: environment_note\n    text: "note {index}"\n'
         '    confidence: 0.5\n    first_seen: "2026-03-28T14:00:00Z"\n'
         '    last_reinforced: "2026-04-01T02:00:00Z"\n    observation_count: 1\n')
AT = '2026-04-01T03:00:00Z'
ADDRESS_SPACE = 1 << 30


def billion_laughs() -> bytes:
    """Nine levels of ten aliases under ``entries:``: 10^9 entries once written out."""
    lines = [HEADER.rstrip('\n'), 'lol0: &a0 {id: mem-lol, type: resolved, text: lol, '
             'confidence: 2, first_seen: x, last_reinforced: x, observation_count: 1}']
    for level in range(1, 10):
        lines.append(f'lol{level}: &a{level} [' + ', '.join([f'*a{level - 1}'] * 10) + ']')
    lines.append('entries: [' + ', '.join(['*a9'] * 10) + ']')
    return ('\n'.join(lines) + '\n---\n').encode('utf-8')


def deep_nesting(depth: int = 100_000) -> bytes:
    """One unknown key nested ``depth`` lists deep (libyaml's composer recurses per level)."""
    return (HEADER + 'entries: []\nnested: ' + '[' * depth + ']' * depth
            + '\n---\n').encode('utf-8')


def _limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_cli(*args, env_extra=None):
    """Run ``robot-memory`` in a child limited to 1 GiB; return (completed, its seconds)."""
    env = child_env()
    env.update(env_extra or {})
    start = time.perf_counter()
    process = subprocess.Popen(cli_command(*args),
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=_limit_address_space)
    out, err = process.communicate(timeout=300)
    seconds = time.perf_counter() - start
    completed = subprocess.CompletedProcess(process.args, process.returncode, out.decode(),
                                            err.decode())
    return completed, {'s': round(seconds, 3)}


def child_peak_rss_mb() -> float:
    """Return the largest peak RSS of any child waited for so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def figure(name: str, command: str, seconds: float) -> None:
    """Print the measured figure of one hostile run (seen with ``pytest -s``)."""
    print(f'\n[hostile] {name} {command}: {seconds:.3f} s, children peak RSS so far '
          f'{child_peak_rss_mb():.0f} MiB')


HOSTILE = {
    'billion laughs': (billion_laughs, 'YAML anchor (&a0); anchors and aliases are not allowed', 5),
    'deep nesting': (deep_nesting, 'more than 64 levels', 6),
}


@pytest.mark.parametrize('name', list(HOSTILE))
def test_the_reader_refuses_a_hostile_front_matter_naming_the_line(name, now):
    make, fragment, line = HOSTILE[name]
    with pytest.raises(MemoryFileError) as caught:
        parse_bytes(make(), now)
    assert fragment in caught.value.problem and caught.value.line == line


@pytest.mark.parametrize('name', list(HOSTILE))
def test_every_command_refuses_a_hostile_file_within_a_gigabyte(name, tmp_path):
    make, fragment, line = HOSTILE[name]
    path = tmp_path / 'robot-memory.md'
    data = make()
    path.write_bytes(data)
    # No dream of this database wrote the file, so none replaces it either: a dream too is
    # refused and leaves it where it is (there is no snapshot to restore from).
    for command in ('show', 'export', 'prune', 'dream'):
        completed, measured = run_cli(command, '--file', path, '--at', AT)
        figure(name, command, measured['s'])
        assert completed.returncode == 1, completed.stderr
        assert f'robot-memory.md:{line}: ' in completed.stderr and fragment in completed.stderr
        assert completed.stdout == ''
        assert path.read_bytes() == data
    # A file the dreams wrote, found replaced by the hostile one: set aside, the dream goes on.
    path.unlink()
    completed, _ = run_cli('dream', '--file', path, '--at', '2026-03-31T03:00:00Z')
    assert completed.returncode == 0, completed.stderr
    path.write_bytes(data)
    completed, measured = run_cli('dream', '--file', path, '--at', AT)
    figure(name, 'dream', measured['s'])
    assert completed.returncode == 0, completed.stderr
    assert 'set aside as robot-memory.md.corrupt-' in completed.stdout + completed.stderr
    [kept] = tmp_path.glob('robot-memory.md.corrupt-*')
    assert kept.read_bytes() == data
    assert not memory_file.side_file(path, '.quarantine.jsonl').exists()
    assert sum(item.stat().st_size for item in tmp_path.iterdir() if item.is_file()) < (
        len(data) + (4 << 20))


def test_a_gigabyte_file_is_refused_unread(tmp_path, now):
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(SPEC_EXAMPLE.encode('utf-8'))
    with open(path, 'r+b') as handle:  # a sparse 1 GiB body: no disk used
        handle.truncate(1 << 30)
    with pytest.raises(MemoryFileError) as caught:
        MemoryFile(path).load(now)
    assert '1024.0 MiB, above the 128.0 MiB limit' in caught.value.problem
    assert 'CASTOR_ROBOT_MEMORY_MAX_MB' in caught.value.problem
    for command in ('show', 'export', 'prune', 'dream'):
        completed, measured = run_cli(command, '--file', path, '--at', AT)
        figure('1 GiB body', command, measured['s'])
        assert completed.returncode == 1 and 'above the 128.0 MiB limit' in completed.stderr
    assert path.stat().st_size == 1 << 30
    assert sorted(item.name for item in tmp_path.iterdir() if '.corrupt-' in item.name) == []


def test_a_fifo_or_a_directory_in_the_files_place_is_refused_not_waited_on(tmp_path, now):
    # open() of a FIFO waits for a writer: a dream waited for ever holding the writers'
    # lock, and the node's writes behind it timed out
    fifo = tmp_path / 'fifo' / 'robot-memory.md'
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    folder = tmp_path / 'folder' / 'robot-memory.md'
    folder.mkdir(parents=True)
    for path, kind in ((fifo, 'a FIFO'), (folder, 'a directory')):
        with pytest.raises(MemoryFileError, match='not a regular file|Is a directory'):
            MemoryFile(path).load(now)
        for command in ('show', 'dream'):
            completed = subprocess.run(cli_command(command, '--file', path, '--at', AT),
                                       capture_output=True, text=True, timeout=60,
                                       env=child_env())
            assert completed.returncode == 1, completed.stderr
            assert 'Traceback' not in completed.stderr
        with MemoryFile(path).lock():  # nothing left holding it
            pass
    with pytest.raises(MemoryFileError, match=r'not a regular file \(a FIFO\)'):
        MemoryFile(fifo).load(now)
    assert fifo.is_fifo()


def test_the_size_limit_is_configurable(tmp_path, now, monkeypatch):
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(SPEC_EXAMPLE.encode('utf-8') + b'x' * 2000)
    assert MemoryFile(path).load(now).document.entries
    assert MemoryFile(path, max_bytes=1000).max_bytes == 1000
    with pytest.raises(MemoryFileError, match='2,406 bytes, above the 1,024 bytes limit'):
        MemoryFile(path, max_bytes=1024).load(now)
    monkeypatch.setenv('CASTOR_ROBOT_MEMORY_MAX_MB', '0.002')
    with pytest.raises(MemoryFileError, match='above the 2,097 bytes limit'):
        MemoryFile(path).load(now)
    monkeypatch.setenv('CASTOR_ROBOT_MEMORY_MAX_MB', 'lots')
    with pytest.raises(MemoryFileError, match='must be a positive number of MiB'):
        MemoryFile(path)


def test_a_file_grown_since_its_size_was_read_is_read_whole_or_refused(tmp_path, now,
                                                                       monkeypatch):
    """The read is sized by fstat; what was appended after it is read too, up to the limit."""
    path = tmp_path / 'robot-memory.md'
    data = SPEC_EXAMPLE.encode('utf-8')
    path.write_bytes(data)
    real_fstat = os.fstat

    def fstat_of_a_smaller_file(fd):  # as if the file grew between fstat and read
        result = real_fstat(fd)
        return os.stat_result((*result[:6], 100, *result[7:]))

    monkeypatch.setattr(memory_file.os, 'fstat', fstat_of_a_smaller_file)
    assert MemoryFile(path).read_bytes() == data
    with pytest.raises(MemoryFileError, match='above the 300 bytes limit'):
        MemoryFile(path, max_bytes=300).read_bytes()  # grown past the limit: never half-read


def test_a_huge_quarantined_entry_is_kept_beside_not_copied_into_the_quarantine(
        memory_path, now):
    huge = 'x' * 300_000
    text = HEADER + 'entries:\n' + ENTRY.format(index=1) + ENTRY.format(index=2).replace(
        'confidence: 0.5', 'confidence: 7') + f'    notes: "{huge}"\n---\n'
    memory_path.write_bytes(text.encode('utf-8'))
    memory = MemoryFile(memory_path)
    with memory.update(now) as result:
        assert len(result.quarantined) == 1
    quarantine = memory_file.side_file(memory_path, '.quarantine.jsonl')
    assert quarantine.stat().st_size < 2000
    record = json.loads(quarantine.read_text())
    assert record['raw_bytes'] > 300_000 and 'raw' not in record
    assert record['raw_excerpt'].startswith('{"id": "mem-0002"')
    kept = memory_path.parent / record['raw_kept_in']
    assert kept.read_bytes() == text.encode('utf-8')
    assert [entry.id for entry in memory.load(now).document.entries] == ['mem-0001']


def test_a_run_of_quarantined_entries_is_capped_in_size(memory_path, now):
    bad = ''.join(ENTRY.format(index=index).replace('confidence: 0.5', 'confidence: 9')
                  .replace(f'"note {index}"', f'"{"n" * 480} {index}"') for index in range(4000))
    data = (HEADER + 'entries:\n' + bad + '---\n').encode('utf-8')
    memory_path.write_bytes(data)
    with MemoryFile(memory_path).update(now) as result:
        assert len(result.quarantined) == 4000
    quarantine = memory_file.side_file(memory_path, '.quarantine.jsonl')
    lines = quarantine.read_text().splitlines()
    assert len(lines) == 4000
    assert quarantine.stat().st_size < memory_file.QUARANTINE_RUN_BYTES + 4000 * 600
    [kept] = memory_path.parent.glob('robot-memory.md.quarantined-*')
    assert kept.read_bytes() == data


# ------------------------------------------------------------------- the prune archive

def weak_and_huge(huge_bytes: int, weak: int = 1, strong: int = 6) -> bytes:
    """Return a file whose first entry is weak and carries ``huge_bytes`` of an unknown key."""
    # The weak ones were last seen two days before AT: older than the recent_hours a prune
    # spares, so they are due.
    stale = ENTRY.replace('last_reinforced: "2026-04-01T02:00:00Z"',
                          'last_reinforced: "2026-03-30T02:00:00Z"')
    entries = [stale.format(index=0).replace('confidence: 0.5', 'confidence: 0.01')
               + f'    notes: "{"x" * huge_bytes}"\n']
    entries += [stale.format(index=index).replace('confidence: 0.5', 'confidence: 0.02')
                for index in range(1, weak + 1)]
    entries += [ENTRY.format(index=index).replace('confidence: 0.5', 'confidence: 0.9')
                for index in range(weak + 1, weak + strong + 1)]
    return (HEADER + 'entries:\n' + ''.join(entries) + '---\n').encode('utf-8')


def test_prune_holds_back_an_entry_too_large_to_archive(tmp_path):
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(weak_and_huge(8 << 20))
    archive = memory_file.side_file(path, '.archive.jsonl')
    for attempt in range(2):  # held back, not archived again and again
        completed, measured = run_cli('prune', '--file', path, '--at', AT)
        figure('an 8 MiB entry', 'prune', measured['s'])
        assert completed.returncode == 0, completed.stderr
        out = completed.stdout
        assert out.splitlines()[-1].endswith(
            '1 too large to archive (over 64 KiB each) held back in the file: trim their '
            'unknown keys by hand, then prune again'), out
        assert (['pruned 1 entry', 'pruned 0 entries'][attempt] in out) and '7 remain' in out
        assert archive.stat().st_size < dream_archive.ARCHIVE_ENTRY_BYTES
        assert [json.loads(line)['entry']['id'] for line in archive.read_text().splitlines()] \
            == ['mem-0001']
    entries = MemoryFile(path).load(parse_iso(AT)).document.entries
    assert entries[0].id == 'mem-0000' and entries[0].extras['notes'] == 'x' * (8 << 20)


def test_a_dream_holds_back_an_entry_too_large_to_archive(tmp_path):
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(weak_and_huge(1 << 20))
    completed, measured = run_cli('dream', '--file', path, '--at', AT)
    figure('a 1 MiB entry', 'dream', measured['s'])
    assert completed.returncode == 0, completed.stderr
    assert 'pruned 1 (1 held back)' in completed.stdout
    assert '1 too large to archive' in completed.stderr
    archive = memory_file.side_file(path, '.archive.jsonl')
    assert archive.stat().st_size < dream_archive.ARCHIVE_ENTRY_BYTES
    ids = [entry.id for entry in MemoryFile(path).load(parse_iso(AT)).document.entries]
    assert 'mem-0000' in ids and 'mem-0001' not in ids


def test_one_prune_archives_at_most_the_run_limit_and_holds_the_rest_back(
        tmp_path, monkeypatch, capsys):
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(weak_and_huge(10, weak=40, strong=60))
    monkeypatch.setattr(dream_archive, 'ARCHIVE_RUN_BYTES', 8000)
    archive = memory_file.side_file(path, '.archive.jsonl')
    pruned = []
    while len(pruned) < 41:
        assert cli.main(['prune', '--file', str(path), '--at', AT]) == 0
        out = capsys.readouterr().out
        records = [json.loads(line) for line in archive.read_text().splitlines()]
        added, pruned = records[len(pruned):], records
        assert 0 < sum(len(json.dumps(record, ensure_ascii=False)) + 1 for record in added) \
            <= 8000
        remaining = 101 - len(pruned)
        expected = f'pruned {plural(len(added), "entry", "entries")} (archived in ' \
                   f'robot-memory.md.archive.jsonl); {remaining} remain'
        assert out.startswith(expected), out
        assert ('held back for the next prune (the archive takes at most' in out) == (
            len(pruned) < 41)
    assert sorted(record['entry']['id'] for record in pruned) == [
        f'mem-{index:04d}' for index in range(41)]


# ------------------------------------------------------------------------ binary garbage

def random_bytes(size=4096, seed=13) -> bytes:
    """Random bytes as a damaged SD card gives them."""
    return random.Random(seed).randbytes(size)


@pytest.mark.parametrize('data, fragment', [
    (random_bytes(), 'is not UTF-8'),
    (b'- the dock is behind the sofa\n- lidar \x00\x00\x00 drifts\n', 'control byte 0x00'),
    (b'Notizen\n- K\xfcche: T\xfcr klemmt\n', 'byte 0xfc is not UTF-8'),
    (b'---\ntitle: notes\n---\n- the ramp\x1b[31m is steep\n', 'control byte 0x1b'),
])
def test_binary_data_is_set_aside_as_corrupt_and_never_migrated(data, fragment, memory_path,
                                                                now):
    memory_path.write_bytes(data)
    memory = MemoryFile(memory_path)
    with pytest.raises(MemoryFileError) as caught:
        memory.load(now)
    assert fragment in caught.value.problem and 'not a text file' in caught.value.problem
    with memory.update(now, rrn='RRN-000000000001', on_corrupt='set_aside') as result:
        assert 'set aside as robot-memory.md.corrupt-' in result.problems[0].message
        assert result.document.entries == [] and result.legacy_original is None
    [kept] = memory_path.parent.glob('robot-memory.md.corrupt-*')
    assert kept.read_bytes() == data
    assert list(memory_path.parent.glob('robot-memory.md.legacy-*')) == []
    assert memory.load(now).document.entries == []


def test_show_never_hands_random_bytes_to_the_brain(memory_path):
    memory_path.write_bytes(random_bytes())
    completed, _ = run_cli('show', '--file', memory_path, '--at', AT)
    assert completed.returncode == 1 and completed.stdout == ''
    assert 'not a text file' in completed.stderr


def test_free_form_text_with_tabs_and_crlf_still_migrates(now):
    data = '# Notes\r\n\t- Küche: the door sticks — push hard\r\n- lidar drifts\r\n'.encode()
    result = parse_bytes(data, now)
    assert [entry.text for entry in result.document.entries] == [
        'Küche: the door sticks — push hard', 'lidar drifts']
    assert result.legacy_original == data
