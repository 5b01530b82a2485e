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
``robot-memory ingest`` counts each observation once (issue 40 point 3).

The same file twice, a file that grew, the same observations in another file and a real
``robot-memory ingest`` process killed with SIGKILL mid-file, then run again: the evidence
and the entries a dream makes of it are exactly those of one clean run.
"""

import datetime as dt
import signal
import sqlite3
import subprocess
import sys
import time

from robot_memory.cli import main as cli
from robot_memory.evidence import ingest
from robot_memory.rcan.memory_file import MemoryFile
from support.ingest import evidence
from support.ingest import report_lines
from support.ingest import START
from support.processes import child_env


def write(path, lines) -> None:
    path.write_text(''.join(lines))


def run(capsys, directory, source):
    code = cli.main(['ingest', '--file', str(directory / 'robot-memory.md'), str(source)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def dreamt(directory, at) -> dict:
    """Dream once; return the entries as (text, confidence, count) by text."""
    code = cli.main(['dream', '--file', str(directory / 'robot-memory.md'), '--at',
                     at.isoformat()])
    assert code == 0
    document = MemoryFile(directory / 'robot-memory.md').load(at).document
    return {entry.text: (entry.confidence, entry.observation_count)
            for entry in document.entries}


def test_the_same_file_twice_counts_once_and_says_what_it_skipped(tmp_path, capsys):
    lines = report_lines(1)
    source = tmp_path / 'day.jsonl'
    write(source, lines)
    once, twice = tmp_path / 'once', tmp_path / 'twice'
    once.mkdir()
    twice.mkdir()
    code, out, err = run(capsys, once, source)
    assert code == 0, err
    kept = evidence(once)
    assert kept[0] > 0 and f'accepted {len(lines)}, refused 0; {kept[0]} pieces' in out

    assert run(capsys, twice, source)[0] == 0
    code, out, err = run(capsys, twice, source)
    assert code == 0, err
    assert f'accepted {len(lines)}, refused 0; 0 pieces of evidence kept' in out
    assert (f'skipped {len(lines)} lines already taken: {ingest.THIS_FILE}') in out
    assert evidence(twice) == kept
    night = START + dt.timedelta(days=1, hours=3)
    assert dreamt(twice, night) == dreamt(once, night)


def test_a_file_that_grew_adds_only_its_new_lines(tmp_path, capsys):
    lines = report_lines(2)
    source = tmp_path / 'robot.jsonl'
    whole, grown = tmp_path / 'whole', tmp_path / 'grown'
    whole.mkdir()
    grown.mkdir()
    write(source, lines)
    assert run(capsys, whole, source)[0] == 0

    half = len(lines) // 2
    write(source, lines[:half])
    assert run(capsys, grown, source)[0] == 0
    write(source, lines)
    code, out, err = run(capsys, grown, source)
    assert code == 0, err
    assert f'skipped {half} lines already taken: {ingest.THIS_FILE}' in out
    assert evidence(grown) == evidence(whole)


def test_the_same_observations_in_another_file_count_once(tmp_path, capsys):
    lines = report_lines(2)
    first, second = tmp_path / 'first.jsonl', tmp_path / 'second.jsonl'
    third = len(lines) // 3
    write(first, lines[:2 * third])
    write(second, lines[third:])  # its first third was in the first file
    whole, parts = tmp_path / 'whole', tmp_path / 'parts'
    whole.mkdir()
    parts.mkdir()
    write(tmp_path / 'all.jsonl', lines)
    assert run(capsys, whole, tmp_path / 'all.jsonl')[0] == 0

    assert run(capsys, parts, first)[0] == 0
    code, out, err = run(capsys, parts, second)
    assert code == 0, err
    assert f'also in {first}, taken by an earlier ingest' in out
    assert evidence(parts) == evidence(whole)


def test_refused_lines_are_refused_again_and_nothing_is_counted_twice(tmp_path, capsys):
    lines = report_lines(0.2)
    lines.insert(5, '{"stamp": "not a time"}\n')
    source = tmp_path / 'day.jsonl'
    write(source, lines)
    assert run(capsys, tmp_path, source)[0] == 1
    kept = evidence(tmp_path)
    code, out, err = run(capsys, tmp_path, source)
    assert code == 1 and f'{source}:6: refused' in err
    assert f'skipped {len(lines) - 1} lines already taken' in out
    assert evidence(tmp_path) == kept


def test_a_line_nested_too_deeply_is_refused_and_the_lines_after_it_are_kept(
        tmp_path, capsys):
    # json.loads raises RecursionError on it: the command died with a traceback and took
    # nothing of the lines that followed
    lines = report_lines(0.2)
    clean = tmp_path / 'clean'
    clean.mkdir()
    write(clean / 'day.jsonl', lines)
    assert run(capsys, clean, clean / 'day.jsonl')[0] == 0
    lines.insert(5, '[' * 100_000 + '\n')
    source = tmp_path / 'day.jsonl'
    write(source, lines)
    code, out, err = run(capsys, tmp_path, source)
    assert code == 1 and f'{source}:6: refused' in err and 'JSON nested too deeply' in err
    assert 'Traceback' not in err
    assert evidence(tmp_path) == evidence(clean)  # every other line, as without it


def database_lines(database) -> int:
    """Lines an ingest recorded as handled, read without writing (0 before the first)."""
    try:
        with sqlite3.connect(f'file:{database}?mode=ro', uri=True) as conn:
            row = conn.execute('SELECT max(lines) FROM ingest_files').fetchone()
    except sqlite3.OperationalError:  # not created, or its tables not yet
        return 0
    return row[0] or 0


def test_a_killed_ingest_run_again_counts_each_observation_once(tmp_path):
    lines = report_lines(4)
    source = tmp_path / 'four-days.jsonl'
    write(source, lines)
    clean, killed = tmp_path / 'clean', tmp_path / 'killed'
    clean.mkdir()
    killed.mkdir()
    command = [sys.executable, '-m', 'robot_memory.cli.main', 'ingest', '--file']
    done = subprocess.run([*command, str(clean / 'robot-memory.md'), str(source)],
                          env=child_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    child = subprocess.Popen([*command, str(killed / 'robot-memory.md'), str(source)],
                             env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while database_lines(killed / 'robot-memory.db') == 0:  # one write done: kill it
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == -signal.SIGKILL
    handled = database_lines(killed / 'robot-memory.db')
    assert 0 < handled < len(lines)

    again = subprocess.run([*command, str(killed / 'robot-memory.md'), str(source)],
                           env=child_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f'skipped {handled} lines already taken: {ingest.THIS_FILE}' in again.stdout
    assert evidence(killed) == evidence(clean)
    night = START + dt.timedelta(days=4, hours=3)
    assert dreamt(killed, night) == dreamt(clean, night)
