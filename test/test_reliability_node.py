"""Reliability of memory_node itself: the installed executable, killed, flooded, raced, fuzzed.

The core-level suites (test_reliability_power_loss, _concurrency, _fuzz, _damage,
_disk_full, _clock) exercise the library and the CLI in-process or as ``python -m``; this
file does the same to the real ``memory_node`` process and the installed ``robot-memory``
command, talking DDS:

* **Power loss.** memory_node runs with a sped-up clock (one wall second is one memory
  hour, a common ``time_origin`` so restarts continue the memory's time), dreams every
  second over a file of ~2,000 entries of which some age past ``prune_min`` every memory
  hour, and ingests a steady stream of diagnostics whose sources keep changing (so dreams
  create, reinforce and prune). It is SIGKILLed at random moments (some aimed at a dream
  requested on ``~/dream``), and ``robot-memory prune / ingest / dream`` runs beside it
  and is SIGKILLed at random moments too. After every kill: robot-memory.md parses with
  no problem, ``PRAGMA integrity_check`` passes, every entry of the file read just before
  the kill is still there or in the prune archive (and kept its history: observation
  count, last reinforcement and first sighting never go back), stored observations, audit
  records, dreams and the dream cursor never decrease, and the database agrees with the
  file (no intent record: the snapshot holds exactly the file's entries; an intent
  record: the file is the one before or after it). At the end no 'manual' audit record
  exists beyond the first dream's (a lost update would show up as a hand edit).
  Default 6 node kills and 6 CLI kills (about 60 s); ``ROBOT_MEMORY_LONG=1``: 250 node
  kills and 750 CLI kills.
* **Load.** A separate process floods ``/diagnostics`` with several thousand arrays a
  second (15 s; 180 s in long mode) while ``~/get_context`` and ``~/dream`` are called
  over and over: every call answers within its timeout, the node's RSS stays bounded,
  and the node's own counters (``received``, ``stored``, ``dropped_backlog_full``,
  ``lost_in_middleware`` on its ``robot_memory: evidence`` status) account for what the
  flood published and for the rows in the database.
* **Concurrency.** ``robot-memory ingest``, ``dream`` and ``prune`` from the install tree
  run again and again against the memory file the running node dreams into: every CLI
  observation is stored exactly once, every entry ever created is in the file or was
  pruned with an audit record and archived, and no update is taken for a hand edit.
* **Hostile input.** hypothesis-generated ``~/get_context`` requests (token budgets up to
  2^32 - 1, NaN, infinities, negatives, huge and tiny min_confidence, include_peers) and
  ``/diagnostics`` / ``/rosout`` messages (huge strings, unicode, NaN-like keys and values,
  deep and many key/values, odd levels) sent by a real publisher: the node stays up, every
  request is answered, and a refusal says which field was wrong.
* **Damage at start-up.** memory_node started on a garbage evidence database sets it
  aside and rebuilds it from robot-memory.md, like the CLI does.
"""

import datetime as dt
import hashlib
import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import threading
import time

import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from rcl_interfaces.msg import Log
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

from robot_memory.autodream import canonical
from robot_memory.memory_file import MemoryFile
from robot_memory.memory_file import side_file
from robot_memory.schema import MemoryEntry
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from robot_memory.timeutil import format_iso
from robot_memory.timeutil import UTC

from ros_harness import NodeProcess
from ros_harness import rss_bytes
from ros_harness import start_flood
from ros_harness import wait_for
from ros_probe import call
from ros_probe import health
from ros_probe import make_probe
from ros_probe import spin
from ros_probe import wait_ready

LONG = os.environ.get('ROBOT_MEMORY_LONG') == '1'
ROBOT_MEMORY = shutil.which('robot-memory')
SCALE = 3600.0          # one wall second is one memory hour
RRN = 'RRN-000000000042'
WARN = bytes([1])

NODE_ONLY_KILLS = 250 if LONG else 5
CLI_NODE_KILLS = 200 if LONG else 3
CLI_KILLS_PER_NODE = 4 if LONG else 1
FLOOD_SECONDS = 180.0 if LONG else 15.0
FLOOD_RATE = 5000.0     # DiagnosticArrays per second
CLI_ROUNDS = 12 if LONG else 3


@pytest.fixture(scope='module')
def probe():
    """An rclpy node in the test process to publish, subscribe and call services."""
    yield from make_probe('reliability_probe')


# ------------------------------------------------------------------------------ helpers

def memory_now(origin: dt.datetime) -> dt.datetime:
    """The memory time of a node started with ``time_scale=SCALE, time_origin=origin``."""
    wall = dt.datetime.now(UTC)
    return origin + (wall - origin) * SCALE


def fast_clock(origin: dt.datetime, **extra) -> dict:
    """Node parameters: sped-up clock from ``origin``, quick flushes, dreams every second."""
    values = {'time_scale': SCALE, 'time_origin': format_iso(origin), 'dream_period_s': 1.0,
              'flush_period_s': 0.05, 'dream.min_reinforce_interval_hours': 0.0}
    values.update(extra)
    return values


def seed_memory(path, origin: dt.datetime, steady: int, aging: int, span_hours: float) -> None:
    """A memory file of ``steady`` firm entries and ``aging`` ones that fall below
    prune_min one after another over ``span_hours`` of memory time after ``origin``."""
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
    with memory.update(origin, rrn=RRN) as result:
        result.document.entries = entries


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_only(database) -> sqlite3.Connection:
    """A read-only connection: looking must not change what is looked at (a read-write
    connection's last close checkpoints and deletes the WAL)."""
    return sqlite3.connect(f'{database.resolve().as_uri()}?mode=ro', uri=True, timeout=30.0)


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
            'SELECT (SELECT count(*) FROM observations) + '
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
    """The memory file's bytes, hash and entries; it must parse without any problem."""
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
    """The database agrees with the file (call when no writer is running); says how."""
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
    return cli('ingest', '--file', memory_path, source)


def cli_succeeded(kind: str, done: subprocess.CompletedProcess) -> bool:
    if done.returncode == 0:
        return True
    # A CLI dream that starts after the node already dreamt at a later memory time.
    return kind == 'dream' and done.returncode == 1 and 'clock went backwards' in done.stderr


# --------------------------------------------------------------------------- power loss

WAL_BUG = (
    'memory_node loses every write after another process opens and closes robot-memory.db '
    '(robot-memory ingest/dream/prune/history, sqlite3, a backup): Substrate._open '
    '(robot_memory/substrate/store.py) does os.open/os.close on the database after the '
    "store worker's connection is open, and closing any descriptor of a file drops all of "
    "the process's POSIX locks on it, SQLite's shared lock included; the other process's "
    'last close then deletes the WAL under the node. Fix: create the file only if missing '
    '(O_CREAT|O_EXCL) and chmod by path, as EvidenceStore._open now does, or open the '
    'substrate before the worker in MemoryNode.__init__')


def power_loss(tmp_path, probe, node_kills: int, cli_kills_per_node: int, namespace: str):
    """SIGKILL memory_node (and the CLI beside it) at random moments; check every kill."""
    chance = random.Random(20260511 + cli_kills_per_node)
    origin = dt.datetime.now(UTC).replace(microsecond=0)
    memory_path = tmp_path / 'robot-memory.md'
    expected_hours = node_kills * (5 + 2 * cli_kills_per_node) + 60
    seed_memory(memory_path, origin, steady=1500, aging=1500 if LONG else 600,
                span_hours=expected_hours)
    params = fast_clock(origin)
    flood = start_flood(rate=150.0, seconds=10 ** 6, prefix='pl', sources=30, rotate=150)
    outcomes = {'node killed': 0, 'cli killed': 0, 'cli finished': 0}
    longest = {'prune': 2.0, 'ingest': 2.0, 'dream': 3.0}
    landed = {}
    last = snapshot_state(tmp_path, memory_path, origin)
    try:
        for cycle in range(node_kills):
            # A namespace of its own per run: a client process that talked to a killed
            # server can miss a restarted one of the same name for a while (Fast DDS
            # discovery), which is not what this test is about.
            node = NodeProcess(tmp_path, f'{namespace}_{cycle}', **params).start()
            try:
                wait_ready(probe, node, timeout=60.0)
            except AssertionError:
                node.stop()
                raise
            killed = attempts = 0
            while killed < cli_kills_per_node:
                attempts += 1
                assert attempts < 20 * cli_kills_per_node, f'{outcomes}, {longest}'
                kind = chance.choice(('prune', 'ingest', 'dream'))
                command = cli_command(kind, tmp_path, origin, cycle * 1000 + attempts)
                before = snapshot_state(tmp_path, memory_path, memory_now(origin))
                check_kept(last, before, archived_ids(memory_path), f'cycle {cycle} start')
                started = time.monotonic()
                process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True)
                delay = chance.uniform(0.2, longest[kind] * 1.1)
                try:
                    out, err = process.communicate(timeout=delay)
                except subprocess.TimeoutExpired:
                    process.kill()
                    out, err = process.communicate()
                where = f'cycle {cycle}: robot-memory {kind} after {delay:.2f} s'
                if process.returncode == -signal.SIGKILL:
                    outcomes['cli killed'] += 1
                    killed += 1
                else:
                    outcomes['cli finished'] += 1
                    assert cli_succeeded(kind, subprocess.CompletedProcess(
                        command, process.returncode, out, err)), f'{where}: {err}'
                    # Finished before the kill: aim earlier next time.
                    longest[kind] = max(0.3, min(longest[kind],
                                                 time.monotonic() - started) * 0.9)
                after = snapshot_state(tmp_path, memory_path, memory_now(origin))
                check_kept(before, after, archived_ids(memory_path), where)
                last = after

            dream_client = probe.create_client(Dream, f'{node.prefix}/dream')
            if chance.random() < 0.5:
                # Aim at a dream: request one and kill while it may still run.
                assert dream_client.wait_for_service(timeout_sec=20.0)
                dream_client.call_async(Dream.Request())
                delay = chance.uniform(0.0, 0.6)
            else:
                delay = chance.uniform(0.0, 2.5)
            wait_for(lambda: False, delay, spin=spin(probe))
            probe.destroy_client(dream_client)
            before = snapshot_state(tmp_path, memory_path, memory_now(origin))
            node.process.send_signal(signal.SIGKILL)
            assert node.process.wait(20.0) == -signal.SIGKILL, node.log()
            node._log.close()
            outcomes['node killed'] += 1
            where = f'cycle {cycle}: memory_node killed {delay:.2f} s after ready'
            after = snapshot_state(tmp_path, memory_path, memory_now(origin))
            check_databases(tmp_path)
            archived = archived_ids(memory_path)
            check_kept(before, after, archived, where)
            check_kept(last, after, archived, where)
            how = check_agrees(after, where)
            if list(tmp_path.glob('.robot-memory.md.*.tmp')):
                how += ', temporary file left'
            landed[how] = landed.get(how, 0) + 1
            last = after

        # A last run: recovery, one more dream, an orderly stop.
        node = NodeProcess(tmp_path, f'{namespace}_last', **params).start()
        try:
            wait_ready(probe, node, timeout=60.0)
            reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(), timeout=60.0)
            assert reply.success or 'clock went backwards' in reply.message, reply.message
        finally:
            assert node.stop() == 0, node.log()[-3000:]
    finally:
        flood.kill()
        flood.communicate()
    final = snapshot_state(tmp_path, memory_path, memory_now(origin))
    archived = archived_ids(memory_path)
    check_kept(last, final, archived, 'after the last, orderly run')
    assert check_agrees(final, 'after the last, orderly run') == 'consistent'
    assert list(tmp_path.glob('.robot-memory.md.*.tmp')) == []
    check_audit_trail(tmp_path, final['entries'])
    print(f'\npower loss: {outcomes}; node kills landed: {landed}; '
          f'{len(final["entries"])} entries, {len(archived)} archived, '
          f'{final["db"]["dreams"]} dreams, {final["db"]["stored"]} observations')
    assert outcomes['node killed'] == node_kills
    assert outcomes['cli killed'] == node_kills * cli_kills_per_node
    assert final['db']['dreams'] > node_kills, 'the node hardly dreamt: the kills tested little'
    return outcomes, landed


@pytest.mark.timeout(3000 if LONG else 240)
def test_sigkill_of_the_node_never_loses_durable_data(tmp_path, probe):
    _, landed = power_loss(tmp_path, probe, NODE_ONLY_KILLS, 0, 'rel_power')
    if LONG:
        assert landed.get('intent record pending', 0) > 0, landed


@pytest.mark.xfail(strict=True, reason=WAL_BUG)
@pytest.mark.timeout(4000 if LONG else 240)
def test_sigkill_of_the_node_and_the_cli_beside_it_never_loses_durable_data(tmp_path, probe):
    outcomes, _ = power_loss(tmp_path, probe, CLI_NODE_KILLS, CLI_KILLS_PER_NODE, 'rel_power2')
    if LONG:
        assert outcomes['node killed'] + outcomes['cli killed'] >= 1000, outcomes
