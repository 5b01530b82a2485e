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
``robot-memory replay`` as a person uses it (issue 35, point 3).

The command runs as users run it, ``bin/robot-memory`` in its own process: on a terminal
(a real pseudo-terminal), piped, with ``--dry-run``, ``--json``, and stopped with Ctrl-C
(a real SIGINT).
"""

import contextlib
import datetime as dt
import io
import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import time

from robot_memory.bags import replay
from robot_memory.cli import replay_command
from robot_memory.evidence import observations as obs
from robot_memory.testing import bag_writer
from support.paths import REPO
from support.processes import child_env

UTC = dt.timezone.utc
START = dt.datetime(2026, 5, 1, 1, 0, tzinfo=UTC)
SCRIPT = REPO / 'bin' / 'robot-memory'
ENV = child_env()


def motor(count: int, every_s: int = 1) -> list:
    """Return ``count`` statuses of a hot motor, each its own current."""
    return [(START + dt.timedelta(seconds=every_s * step), None,
             obs.diagnostic(START + dt.timedelta(seconds=every_s * step), 'base: motor',
                            'motor', 1, f'current {step}')) for step in range(count)]


def robot_days(hours: int = 30) -> list:
    """Return a flaky encoder and a nav2 error every 10 minutes, over ``hours``."""
    items = []
    for step in range(hours * 6):
        at = START + dt.timedelta(minutes=10 * step)
        items.append((at, None, obs.diagnostic(at, 'base: left encoder', 'wheel_left',
                                               1 if step % 3 else 0, 'dropped 12 ticks')))
        if step % 6 == 0:
            items.append((at, None, obs.log(at, 'nav2_controller', 40,
                                            'Failed to make progress', 'c.cpp', 'run', 212)))
    return items


def on_a_terminal(*argv) -> tuple:
    """Run ``robot-memory`` with stderr on a pseudo-terminal; return (code, stdout, stderr)."""
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, str(SCRIPT), *argv], stdout=subprocess.PIPE,
                               stderr=slave, env=ENV)
    os.close(slave)
    screen = b''
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the process closed its end
                    break
                if not data:
                    break
                screen += data
            elif process.poll() is not None:
                break
        out = process.stdout.read().decode()
        return process.wait(timeout=60), out, screen
    finally:
        os.close(master)
        process.kill()


def test_on_a_terminal_the_bar_redraws_in_place_and_says_how_long_it_took(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', motor(12_000), 'mcap')
    code, out, screen = on_a_terminal('replay', str(bag), '--file',
                                      str(tmp_path / 'robot-memory.md'), '--no-dream')
    assert code == 0, out + screen.decode(errors='replace')
    # Before: the CLI's stderr showed them as text, "\u001b[K\u000d[###...".
    assert b'\\u001b' not in screen and b'\\u000d' not in screen
    bars = screen.replace(b'\r\n', b'\n').split(b'\r')  # the terminal sends \n as \r\n
    assert len(bars) >= 3 and all(bar.endswith(b'\x1b[K') for bar in bars[1:-1])
    assert bars[-1].startswith(b'[' + b'#' * 30 + b'] 100% 12,000/12,000 messages')
    assert b', took 0:' in bars[-1] and bars[-1].endswith(b'\x1b[K\n')
    assert '12,000 diagnostic statuses in ' in out and ' statuses/s' in out


def test_the_eta_is_unknown_at_first_then_estimated_and_the_end_says_how_long():
    screen = io.StringIO()
    display = replay_command.Display(screen, clock=iter([0.0, 10.0, 20.0]).__next__)
    at = START
    display({'messages': 0, 'total': 1000, 'bytes': 0, 'total_bytes': 10**7, 'elapsed': 0.0,
             'at': None})
    display({'messages': 100, 'total': 1000, 'bytes': 10**6, 'total_bytes': 10**7,
             'elapsed': 0.4, 'at': at})
    display({'messages': 1000, 'total': 1000, 'bytes': 10**7, 'total_bytes': 10**7,
             'elapsed': 4.2, 'at': at, 'final': True})
    first, second, last = screen.getvalue().splitlines()
    # Piped: a line each (5 s apart). Before, the ETA read
    # 0:00:00 before anything was known, and at the end.
    assert first.endswith('ETA unknown yet') and 'ETA 0:00:04' in second
    assert last.endswith('took 0:00:04')


def test_the_summary_reports_statuses_a_second(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', motor(3000), 'mcap')
    done = subprocess.run([sys.executable, str(SCRIPT), 'replay', str(bag), '--file',
                           str(tmp_path / 'robot-memory.md'), '--json', '--no-dream'],
                          capture_output=True, text=True, env=ENV, timeout=300)
    summary = json.loads(done.stdout)
    assert summary['statuses'] == 3000 and summary['elapsed_s'] > 0.05
    # elapsed_s is rounded to the millisecond in JSON, statuses_per_s computed before.
    assert abs(summary['statuses_per_s'] * summary['elapsed_s'] / 3000 - 1) < 0.02


def test_dry_run_prints_each_entry_it_would_learn_with_its_band(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_days(), 'mcap')
    done = subprocess.run([sys.executable, str(SCRIPT), 'replay', str(bag), '--file',
                           str(tmp_path / 'robot-memory.md'), '--dry-run'],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index('would learn:')
    learned = lines[start + 1:lines.index('(dry run: nothing was written)')]
    assert len(learned) == 2, done.stdout
    assert all(line[2] in '🔴🟡🟢' and line.endswith(' (new)') for line in learned), learned
    assert any('left encoder' in line for line in learned)
    assert any('Failed to make progress' in line for line in learned)
    assert not (tmp_path / 'robot-memory.md').exists()


def test_dry_run_json_lists_the_entries_and_names_no_deleted_summary_file(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', robot_days(), 'mcap')
    done = subprocess.run([sys.executable, str(SCRIPT), 'replay', str(bag), '--file',
                           str(tmp_path / 'robot-memory.md'), '--dry-run', '--json'],
                          capture_output=True, text=True, env=ENV, timeout=300)
    summary = json.loads(done.stdout)
    assert [item['change'] for item in summary['would_learn']] == ['new', 'new']
    assert all(item['band'] in '🔴🟡🟢' and 0 < item['confidence'] <= 1
               for item in summary['would_learn'])
    # Before: robot-memory.md.dream-*.md in a temporary directory deleted on exit.
    assert summary['dreams'] and all(report['summary_file'] is None
                                     for report in summary['dreams'])


def test_ctrl_c_says_what_was_kept_and_running_again_resumes(tmp_path):
    bag = bag_writer.write_bag(tmp_path / 'bag', motor(60_000), 'mcap')
    db = tmp_path / 'robot-memory.db'
    argv = [sys.executable, str(SCRIPT), 'replay', str(bag), '--no-dream', '--json',
            '--file', str(tmp_path / 'robot-memory.md')]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                               text=True)
    try:
        while process.poll() is None:
            if db.exists():
                with contextlib.suppress(sqlite3.Error), \
                        contextlib.closing(sqlite3.connect(db, timeout=0.1)) as conn:
                    if conn.execute('SELECT count(*) FROM replay_taken').fetchone()[0]:
                        process.send_signal(signal.SIGINT)
                        break
            time.sleep(0.01)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert 'Traceback' not in err and 'KeyboardInterrupt' not in err
    [line] = [line for line in err.splitlines() if line.startswith('interrupted: ')]
    first = json.loads(out)
    assert first['interrupted'] and 0 < first['observations'] < 60_000
    assert line.startswith(f'interrupted: the {first["observations"]:,} messages taken before '
                           f'Ctrl-C are kept ({first["evidence_kept"]:,} pieces of evidence')
    assert line.endswith('run the same command again to resume where it stopped')
    done = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=300)
    again = json.loads(done.stdout)
    assert done.returncode == 0 and not again['interrupted']
    assert again['skipped'] == {replay.OWN: first['observations']}
    assert again['observations'] == 60_000 - first['observations']
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute('SELECT sum(count) FROM observations').fetchone()[0] == 60_000
