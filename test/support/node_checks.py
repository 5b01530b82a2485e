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

"""What the reliability tests of memory_node check: its files, its database and its health."""

import datetime as dt
import hashlib
import json
import shutil
import sqlite3
import subprocess
import time
import zlib


from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import canonical
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import side_file
from robot_memory.rcan.schema import MemoryEntry
from support.ros_harness import wait_for
from support.ros_probe import health


ROBOT_MEMORY = shutil.which('robot-memory')
SCALE = 3600.0          # one wall second is one memory hour
RRN = 'RRN-000000000042'
WARN = bytes([1])


def memory_now(origin: dt.datetime) -> dt.datetime:
    """Return the memory time of a node started with ``time_scale=SCALE, time_origin=origin``."""
    wall = dt.datetime.now(UTC)
    return origin + (wall - origin) * SCALE


def fast_clock(origin: dt.datetime, **extra) -> dict:
    """Node parameters: sped-up clock from ``origin``, quick flushes, dreams every second."""
    values = {'time_scale': SCALE, 'time_origin': format_iso(origin), 'dream_period_s': 1.0,
              'flush_period_s': 0.05, 'dream.min_reinforce_interval_hours': 0.0}
    values.update(extra)
    return values


def seed_memory(path, origin: dt.datetime, steady: int, aging: int, span_hours: float,
                rrn: str = RRN) -> None:
    """
    Return a memory file of ``steady`` firm entries and ``aging`` ones.

    The aging ones fall below prune_min one after another over ``span_hours`` of memory
    time after ``origin``.
    """
    entries = []
    for index in range(steady):
        entries.append(MemoryEntry(
            id=f'mem-steady{index:05d}', type='environment_note',
            text=f'doorway {index} has a {index % 7 + 1} cm lip; cross it at ≤0.3 m/s',
            confidence=1.0, first_seen=origin - dt.timedelta(days=30),
            last_reinforced=origin, observation_count=index % 40 + 1, tags=['doorway']))
    for index in range(aging):
        # confidence 0.5 decays below 0.10 eight days after last_reinforced.
        crosses = origin + dt.timedelta(hours=span_hours * (index + 1) / aging)
        entries.append(MemoryEntry(
            id=f'mem-aging{index:05d}', type='behavior_pattern',
            text=f'pallet {index} was left in aisle {index % 13}',
            confidence=0.5, first_seen=crosses - dt.timedelta(days=9),
            last_reinforced=crosses - dt.timedelta(days=8), observation_count=1,
            tags=['aisle']))
    memory = MemoryFile(path)
    with memory.update(origin, rrn=rrn) as result:
        result.document.entries = entries


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_only(database) -> sqlite3.Connection:
    """
    Return a read-only connection: looking must not change what is looked at.

    A read-write connection's last close checkpoints and deletes the WAL.
    """
    return sqlite3.connect(f'{database.resolve().as_uri()}?mode=ro', uri=True, timeout=30.0)


def until_intent_recorded(database, timeout: float) -> float:
    """
    Poll (read-only) until a dream's intent record is in ``database``; seconds waited.

    Returns at once when it appears, or after ``timeout`` (the dream may have had nothing
    to write): the caller kills the node either way.
    """
    started = time.monotonic()
    connection = read_only(database)
    try:
        while time.monotonic() - started < timeout:
            try:
                if connection.execute('SELECT 1 FROM pending_dream').fetchone():
                    break
            except sqlite3.OperationalError:  # busy for a moment: look again
                pass
            time.sleep(0.0005)
    finally:
        connection.close()
    return time.monotonic() - started


def db_state(database) -> dict:
    """Counters, cursor, intent record and snapshot of the evidence database."""
    if not database.exists():
        return {'integrity': [('ok',)], 'stored': 0, 'audit': 0, 'dreams': 0, 'last_id': 0,
                'file_hash': None, 'pending': None, 'snapshot': {}}
    connection = read_only(database)
    try:
        connection.execute('BEGIN')  # one read transaction: a consistent view
        integrity = connection.execute('PRAGMA integrity_check').fetchall()
        stored = connection.execute(
            'SELECT (SELECT coalesce(sum(count), 0) FROM observations) + '
            '(SELECT coalesce(sum(count), 0) FROM daily_counts)').fetchone()[0]
        audit = connection.execute('SELECT count(*) FROM audit').fetchone()[0]
        dreams = connection.execute('SELECT count(*) FROM dreams').fetchone()[0]
        last_id, file_hash = connection.execute(
            'SELECT last_id, file_hash FROM dream_state WHERE id = 1').fetchone()
        pending = connection.execute('SELECT payload FROM pending_dream').fetchone()
        snapshot = dict(connection.execute('SELECT entry_id, data FROM snapshot').fetchall())
        connection.execute('COMMIT')
    finally:
        connection.close()
    return {'integrity': integrity, 'stored': stored, 'audit': audit, 'dreams': dreams,
            'last_id': last_id, 'file_hash': file_hash,
            'pending': json.loads(pending[0]) if pending else None, 'snapshot': snapshot}


def archived_ids(memory_path) -> set:
    archive = side_file(memory_path, '.archive.jsonl')
    if not archive.exists():
        return set()
    return {json.loads(line)['entry']['id']
            for line in archive.read_text(encoding='utf-8').splitlines() if line.strip()}


def file_state(memory_path, at: dt.datetime) -> dict:
    """Return the memory file's bytes, hash and entries; it must parse without any problem."""
    data = memory_path.read_bytes()
    result = MemoryFile(memory_path).load(at)
    assert result.problems == [], [problem.message for problem in result.problems]
    entries = {entry.id: entry for entry in result.document.entries}
    assert len(entries) == len(result.document.entries), 'duplicate entry ids'
    for entry in entries.values():
        assert 0.0 <= entry.confidence <= 1.0, entry
    return {'data': data, 'hash': sha256(data), 'entries': entries}


def check_databases(directory) -> None:
    """Every SQLite database in ``directory`` passes PRAGMA integrity_check."""
    for path in directory.glob('*.db'):
        connection = read_only(path)
        try:
            assert connection.execute('PRAGMA integrity_check').fetchall() == [('ok',)], path
        finally:
            connection.close()


def check_kept(before: dict, after: dict, archived: set, where: str) -> None:
    """Nothing durable before a kill is gone after it."""
    lost = set(before['entries']) - set(after['entries']) - archived
    assert not lost, f'{where}: entries lost {sorted(lost)[:5]}'
    for entry_id, old in before['entries'].items():
        new = after['entries'].get(entry_id)
        if new is None or entry_id in archived:
            continue
        assert new.observation_count >= old.observation_count, (where, old, new)
        assert new.first_seen == old.first_seen, (where, old, new)
        if old.last_reinforced is not None:
            assert new.last_reinforced >= old.last_reinforced, (where, old, new)
    for key in ('stored', 'audit', 'dreams', 'last_id'):
        assert after['db'][key] >= before['db'][key], \
            f'{where}: {key} went from {before["db"][key]} to {after["db"][key]}'


def check_agrees(state: dict, where: str) -> str:
    """Check that the database agrees with the file (call when no writer is running); say how."""
    database, data_hash = state['db'], state['hash']
    pending = database['pending']
    if pending is not None:
        assert data_hash in (pending['file_hash'], pending.get('prior_hash')), \
            f'{where}: the file is neither the one before nor the one after the intent record'
        return 'intent record pending'
    if database['file_hash'] is None:
        return 'no dream yet'
    files = {entry_id: canonical(entry) for entry_id, entry in state['entries'].items()}
    assert set(files) == set(database['snapshot']), \
        f'{where}: snapshot and file differ in ids ' \
        f'{sorted(set(files) ^ set(database["snapshot"]))[:5]}'
    changed = [key for key in files if files[key] != database['snapshot'][key]]
    assert not changed, f'{where}: entries differ from the snapshot: {changed[:5]}'
    return 'consistent'


def snapshot_state(directory, memory_path, at) -> dict:
    state = file_state(memory_path, at)
    state['db'] = db_state(directory / 'robot-memory.db')
    assert state['db']['integrity'] == [('ok',)], state['db']['integrity']
    return state


def audit_rows(database) -> list:
    connection = read_only(database)
    try:
        return connection.execute(
            'SELECT id, entry_id, action, actor, reason FROM audit ORDER BY id').fetchall()
    finally:
        connection.close()


def check_audit_trail(directory, entries: dict) -> None:
    """No update was taken for a hand edit; the file matches each entry's last action."""
    rows = audit_rows(directory / 'robot-memory.db')
    manual = [row for row in rows if row[2] == 'manual'
              and row[4] != 'present in the memory file before the first dream']
    assert not manual, f'updates taken for hand edits (lost updates?): {manual[:3]}'
    last = {}
    for _, entry_id, action, _, _ in rows:
        last[entry_id] = action
    archived = archived_ids(directory / 'robot-memory.md')
    for entry_id, action in last.items():
        if entry_id.startswith('peer:'):
            continue
        if action == 'prune':
            assert entry_id not in entries and entry_id in archived, entry_id
        else:
            assert entry_id in entries, f'{entry_id} (last audit {action}) is not in the file'
    assert set(entries) <= set(last), sorted(set(entries) - set(last))[:5]


def cli(*args) -> list:
    assert ROBOT_MEMORY, 'robot-memory is not on PATH: source scripts/env.sh first'
    return [ROBOT_MEMORY, *map(str, args)]


def write_observations(path, at: dt.datetime, source: str, count: int) -> None:
    """``count`` WARN diagnostics of hardware ``source`` over the memory minute before ``at``."""
    lines = []
    for index in range(count):
        stamp = at - dt.timedelta(seconds=60.0 * (count - index) / count)
        lines.append(json.dumps({'source': 'diagnostic', 'stamp': format_iso(stamp),
                                 'name': f'{source}: status', 'hardware_id': source,
                                 'level': 1, 'message': f'retry {index} failed'}))
    path.write_text('\n'.join(lines) + '\n', encoding='utf-8')


def cli_command(kind: str, directory, origin, number: int) -> list:
    memory_path = directory / 'robot-memory.md'
    now = memory_now(origin)
    if kind == 'prune':
        return cli('prune', '--file', memory_path, '--at', format_iso(now))
    if kind == 'dream':
        # A little ahead of the node's clock, so the CLI's start-up does not put it behind.
        return cli('dream', '--file', memory_path, '--at',
                   format_iso(now + dt.timedelta(hours=2)))
    source = directory / f'cli-{number}.jsonl'
    write_observations(source, now, f'cli-{number}', 400)
    # Stamped on the node's sped-up clock: taken in as of it, not refused as from the future.
    return cli('ingest', '--file', memory_path, source, '--at', format_iso(now))


def cli_succeeded(kind: str, done: subprocess.CompletedProcess) -> bool:
    if done.returncode == 0:
        return True
    # A CLI dream that starts after the node already dreamt at a later memory time.
    return kind == 'dream' and done.returncode == 1 and 'clock went backwards' in done.stderr


def rrn_of(namespace: str) -> str:
    """Return an RRN of the node's own, so that its health statuses are told apart from others'."""
    return f'RRN-{zlib.crc32(namespace.encode()) % 10 ** 12:012d}'


def latest_health(probe, node, task: str) -> dict:
    """Return the next ``robot_memory: <task>`` status of ``node`` (started with rrn_of)."""
    return dict(health(probe, task, timeout=15.0, where=rrn_of(node.namespace)))


def settled_evidence(probe, node, timeout: float = 30.0) -> dict:
    """Return the node's evidence status once nothing is waiting and nothing new comes in."""
    seen = [{}]

    def still():
        current = latest_health(probe, node, 'evidence')
        previous, seen[0] = seen[0], current
        return (current['backlog'] == '0' and previous.get('received') == current['received']
                and previous.get('stored') == current['stored'])

    assert wait_for(still, timeout), seen[0]
    return seen[0]


def count_rows(database, where: str = '', connect=None) -> int:
    """
    Return the observation rows (raw plus compacted).

    Read by default the way any other program would: a read-write connection, opened and
    closed.
    """
    connection = (connect or (lambda path: sqlite3.connect(path, timeout=30.0)))(database)
    try:
        return connection.execute(
            f'SELECT (SELECT coalesce(sum(count), 0) FROM observations {where}) + '
            f'(SELECT coalesce(sum(count), 0) FROM daily_counts {where})').fetchone()[0]
    finally:
        connection.close()
