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
Reliability of memory_node itself: the installed executable, killed, flooded, raced, fuzzed.

The core-level suites (test_reliability_power_loss, _concurrency, _fuzz, _damage,
_disk_full, _clock) exercise the library and the CLI in-process or as ``python -m``; this
file does the same to the real ``memory_node`` process and the installed ``robot-memory``
command, over DDS:

* **Power loss.** memory_node runs with a sped-up clock (one wall second is one memory
  hour; a common ``time_origin`` so that restarts continue the memory's time), dreams
  every second over a file of ~2,000 entries of which some age past ``prune_min`` every
  memory hour, and ingests a stream of diagnostics whose sources keep changing (so dreams
  create, reinforce and prune). It is SIGKILLed at random moments, half of them aimed at
  a dream requested on ``~/dream`` (half of those the instant the dream's intent record is
  durable, while the file is being replaced; long mode requires some to land there). In
  the second variant ``robot-memory prune / ingest / dream`` also runs beside it and is
  SIGKILLed at random moments, and one CLI run per cycle ends normally before the node's
  next dream. After every kill: robot-memory.md
  parses with no problem, every database passes ``PRAGMA integrity_check``, every entry of
  the file read just before the kill is still there or in the prune archive (and its
  observation count, last reinforcement and first sighting never go back), stored
  observations, audit records, dreams and the dream cursor never decrease, and the
  database agrees with the file (no intent record: the snapshot holds exactly the file's
  entries; an intent record: the file is the one before or after it). At the end no
  'manual' audit record exists beyond the first dream's (a lost update would be taken in
  as a hand edit). The test reads the database through read-only connections only.
  Default 5 node kills, and 3 node + 3 CLI kills (about 50 s); ``--long``:
  250 node kills, and 150 node + 600 CLI kills.
* **Load.** A separate process floods ``/diagnostics`` with 5,000 arrays a second (15 s;
  180 s in long mode) while ``~/get_context`` and ``~/dream`` are called back to back:
  every call answers within its timeout, the node's RSS stays bounded and does not
  creep, and the node's counters on its ``robot_memory: evidence`` status (``received``,
  ``stored``, ``dropped_backlog_full``, ``lost_in_middleware``, ``refused``) match the
  rows in the database and add up to exactly what the flood published. A burst as fast as one
  process can publish must leave every observation stored or counted as lost. Where rclpy
  gives no publisher GID with a message (Jazzy's rclpy 7), middleware losses cannot be
  counted: there the node must say ``not counted``, and what it does count must not exceed
  what was published.
* **Concurrency.** ``robot-memory ingest``, ``dream`` and ``prune`` from the install tree
  run again and again against the memory the running node dreams into: every
  observation of either writer is stored exactly once, every entry is where its last
  audit record says (in the file, or pruned and archived), each CLI source became an
  entry, and no update is taken in as a hand edit. Also: a program that merely reads the
  database beside the node must not cost the node its writes.
* **Hostile input.** hypothesis-generated ``~/get_context`` requests (token budgets up to
  2^32 - 1; NaN, infinities, negatives, float32 extremes for min_confidence;
  include_peers) and ``/diagnostics`` / ``/rosout`` messages (200,000-character strings,
  emoji, bidi marks, NaN-like and JSON-like deep keys and values, thousands of key/values,
  any level) from a real publisher: the node stays up, answers every request, a refusal
  names the field, and afterwards it still ingests, dreams and serves.
* **Damage at start-up.** memory_node started on a garbage evidence database sets it
  aside and rebuilds it from robot-memory.md, as the CLI does.
* **Full disk** (root only: a 2 MiB tmpfs). A dream fails with a reply and an ERROR
  status that say the disk is full, the memory file stays as it was, the evidence status
  is ERROR while taken-in observations cannot be written, and once space returns every
  one of them is stored and dreams succeed again.

"""

import datetime as dt
import json
import os
import random
import signal
import subprocess
import time

import pytest
import rclpy
import rclpy.subscription

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import side_file
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from support.disks import fill
from support.disks import mounted_tmpfs
from support.modes import LONG
from support.node_checks import archived_ids
from support.node_checks import check_agrees
from support.node_checks import check_audit_trail
from support.node_checks import check_databases
from support.node_checks import check_kept
from support.node_checks import cli_command
from support.node_checks import cli_succeeded
from support.node_checks import count_rows
from support.node_checks import fast_clock
from support.node_checks import latest_health
from support.node_checks import memory_now
from support.node_checks import read_only
from support.node_checks import rrn_of
from support.node_checks import seed_memory
from support.node_checks import settled_evidence
from support.node_checks import snapshot_state
from support.node_checks import until_intent_recorded
from support.ros_harness import clean_dead_shm
from support.ros_harness import flood_ready
from support.ros_harness import NodeProcess
from support.ros_harness import rss_bytes
from support.ros_harness import start_flood
from support.ros_harness import stop_flood
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import spin
from support.ros_probe import wait_ready

pytestmark = [pytest.mark.long, pytest.mark.slow]  # --long runs it at full length

# The message info of this rclpy names the publisher (Kilted on), so losses can be counted.
GIVES_PUBLISHER_GID = 'publisher_gid' in getattr(
    getattr(rclpy.subscription, 'MessageInfo', None), '__annotations__', {})
RRN = 'RRN-000000000042'

NODE_ONLY_KILLS = 250 if LONG else 5
CLI_NODE_KILLS = 150 if LONG else 3
CLI_KILLS_PER_NODE = 4 if LONG else 1
# At least 1,000 kills in long mode, node and CLI together.
assert not LONG or NODE_ONLY_KILLS + CLI_NODE_KILLS * (1 + CLI_KILLS_PER_NODE) >= 1000
FLOOD_SECONDS = 180.0 if LONG else 15.0
FLOOD_RATE = 5000.0     # DiagnosticArrays per second
CLI_ROUNDS = 12 if LONG else 3


# --------------------------------------------------------------------------- power loss

# memory_node keeps every write while another process opens and closes robot-memory.db
# (robot-memory ingest/dream/prune/history, sqlite3, a backup). Closing any descriptor of a
# file drops all of the process's POSIX locks on it, SQLite's shared lock included, after
# which the other process's last close deletes the WAL under the node: so no store of the
# node opens and closes a descriptor of the database beside its connection (the file is
# created only if missing, O_CREAT|O_EXCL, and chmod-ed by path).


def wait_serving(probe, node, timeout: float = 60.0) -> None:
    """
    Wait until the node serves ~/get_context (it creates its subscriptions before).

    Unlike ros_probe.wait_ready this does not wait for the probe's graph to list the
    node's subscription, which after hundreds of restarts can lag far behind.
    """
    client = probe.create_client(GetContext, f'{node.prefix}/get_context')
    try:
        ready = client.wait_for_service(timeout_sec=timeout)
    finally:
        probe.destroy_client(client)
    assert ready and node.process.poll() is None, node.log()[-3000:]


# What memory_node logs when the middleware dropped a reply (ros/node.py, _reply_dropped).
DROPPED_DREAM_REPLY = 'reply of ~/dream dropped'


def requested_dream(probe, node, timeout: float = 30.0):
    """
    Return the reply of the node's ~/dream; ask again only if the node dropped the reply.

    rmw_fastrtps drops a reply whose client it has not matched within 2 s, which a host
    loaded as these tests load it can cause; the node logs each drop. A dream that is not
    answered for any other reason fails the test, with the node's log.
    """
    for _ in range(2):
        dropped_before = node.log().count(DROPPED_DREAM_REPLY)
        client = probe.create_client(Dream, f'{node.prefix}/dream')
        try:
            assert client.wait_for_service(timeout_sec=timeout), node.log()[-3000:]
            future = client.call_async(Dream.Request())
            rclpy.spin_until_future_complete(probe, future, timeout_sec=timeout)
        finally:
            probe.destroy_client(client)
        if future.done():
            return future.result()
        log = node.log()
        assert log.count(DROPPED_DREAM_REPLY) > dropped_before, (
            f'~/dream did not answer within {timeout} s and the node dropped no reply; its '
            f'log ends:\n{log[-4000:]}')
    raise AssertionError(f'the node dropped two ~/dream replies in a row:\n{log[-4000:]}')


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
                wait_serving(probe, node)
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
                # Anywhere in the run as far as it has been seen to last: a command that
                # finishes in 0.2 s must still be killed half-way through now and then.
                delay = chance.uniform(0.3, 1.1) * longest[kind]
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
                    longest[kind] = max(0.05, min(longest[kind],
                                                  time.monotonic() - started) * 0.9)
                after = snapshot_state(tmp_path, memory_path, memory_now(origin))
                check_kept(before, after, archived_ids(memory_path), where)
                last = after

            if cli_kills_per_node:
                # One CLI run that ends normally (it closes the database), then a dream of
                # the node after it: the kill below must not lose that dream either.
                done = subprocess.run(cli_command('ingest', tmp_path, origin, cycle * 1000),
                                      capture_output=True, text=True, timeout=120)
                assert cli_succeeded('ingest', done), done.stderr
            if cli_kills_per_node or chance.random() < 0.8:
                # Most kills come once the node is at work (a dream written); the others
                # at any moment from start-up on.
                mark = memory_path.stat().st_mtime_ns
                assert wait_for(lambda: memory_path.stat().st_mtime_ns != mark, 15.0,
                                spin=spin(probe)), 'the node did not dream'
            dream_client = probe.create_client(Dream, f'{node.prefix}/dream')
            aim = chance.random()
            if aim < 0.25:
                # Aim at the commit itself: kill the moment the dream's intent record is
                # durable, while robot-memory.md is being replaced (a window of milliseconds
                # that random delays hardly ever hit). What was durable is read first: read
                # between the intent and the kill, it would let the dream finish.
                before = snapshot_state(tmp_path, memory_path, memory_now(origin))
                assert dream_client.wait_for_service(timeout_sec=20.0)
                dream_client.call_async(Dream.Request())
                delay = until_intent_recorded(tmp_path / 'robot-memory.db', 5.0)
            else:
                if aim < 0.5:
                    # Aim at a dream: request one and kill while it may still run.
                    assert dream_client.wait_for_service(timeout_sec=20.0)
                    dream_client.call_async(Dream.Request())
                    delay = chance.uniform(0.0, 0.6)
                else:
                    delay = chance.uniform(0.0, 2.5)
                wait_for(lambda: False, delay, spin=spin(probe))
                before = snapshot_state(tmp_path, memory_path, memory_now(origin))
            node.process.send_signal(signal.SIGKILL)
            probe.destroy_client(dream_client)
            assert node.process.wait(20.0) == -signal.SIGKILL, node.log()
            node._log.close()
            clean_dead_shm()  # what the killed node held in shared memory
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
            wait_serving(probe, node)
            reply = requested_dream(probe, node)
            assert reply.success or 'clock went backwards' in reply.message, reply.message
        finally:
            assert node.stop() == 0, node.log()[-3000:]
    finally:
        stop_flood(flood)
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
    assert final['db']['dreams'] >= node_kills, 'the node hardly dreamt: the kills tested little'
    return outcomes, landed


@pytest.mark.timeout(5400 if LONG else 240)
def test_sigkill_of_the_node_never_loses_durable_data(tmp_path, probe):
    _, landed = power_loss(tmp_path, probe, NODE_ONLY_KILLS, 0, 'rel_power')
    if LONG:
        assert landed.get('intent record pending', 0) > 0, landed


@pytest.mark.timeout(6000 if LONG else 240)
def test_sigkill_of_the_node_and_the_cli_beside_it_never_loses_durable_data(tmp_path, probe):
    power_loss(tmp_path, probe, CLI_NODE_KILLS, CLI_KILLS_PER_NODE, 'rel_power2')


@pytest.mark.timeout(120)
def test_another_process_reading_the_database_costs_the_node_no_writes(tmp_path, probe):
    node = NodeProcess(tmp_path, 'rel_reader', rrn=rrn_of('rel_reader'),
                       flush_period_s=0.05).start()
    flood = start_flood(rate=200.0, seconds=60.0, prefix='rd', sources=5)
    database = tmp_path / 'robot-memory.db'
    try:
        wait_ready(probe, node, timeout=60.0)
        assert wait_for(lambda: int(latest_health(probe, node, 'evidence')['stored']) >= 100, 20.0)
        # Another program reads the database once, as `robot-memory history` or the
        # sqlite3 shell would: it opens, reads and closes it.
        seen = count_rows(database)
        assert seen >= 100
        # The node still uses its WAL; what it stores next reaches the database.
        assert (tmp_path / 'robot-memory.db-wal').exists(), \
            "the WAL of the running node was deleted by the other program's close"
        assert wait_for(lambda: count_rows(database) >= seen + 200, 5.0), \
            f'nothing the node stored after the read became visible ({seen} rows)'
        seen = count_rows(database)
    finally:
        stop_flood(flood)
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(20.0)
        node._log.close()
    assert count_rows(database) >= seen


# memory_node starts on a damaged evidence database: it sets it aside and rebuilds it from
# robot-memory.md (MemoryNode._open_store opens EvidenceStore with on_corrupt='set_aside';
# the first dream reports the set-aside copy and takes the file in again), rather than
# refusing to start with "not a usable evidence database".


@pytest.mark.timeout(120)
def test_the_node_sets_a_damaged_database_aside_and_rebuilds_it(tmp_path, probe):
    origin = dt.datetime.now(UTC).replace(microsecond=0)
    seed_memory(tmp_path / 'robot-memory.md', origin, steady=5, aging=0, span_hours=1.0)
    database = tmp_path / 'robot-memory.db'
    garbage = b'\x00\xffnot a database at all\n' * 500
    database.write_bytes(garbage)
    node = NodeProcess(tmp_path, 'rel_damage').start()
    try:
        wait_for(lambda: node.process.poll() is not None, 8.0)
        assert node.process.poll() is None, f'memory_node exited: {node.log()[-1500:]}'
        wait_ready(probe, node, timeout=60.0)
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(), timeout=30.0)
        assert reply.success, reply.message
        # Taken in again as a rebuild, not as a person's edits (issue 40 point 6).
        assert list(reply.manual) == []
        assert sorted(json.loads(reply.report_json)['rebuilt']) == [
            f'mem-steady{index:05d}' for index in range(5)]
        assert 'robot-memory.db.corrupt-' in reply.report_json
    finally:
        node.stop()
    kept = [path for path in tmp_path.glob('robot-memory.db.corrupt-*')
            if not path.name.endswith('-wal')]
    assert [path.read_bytes() for path in kept] == [garbage]
    check_databases(tmp_path)


# --------------------------------------------------------------------------------- load

@pytest.fixture(scope='module')
def flooded(tmp_path_factory, probe):
    """memory_node under a flood of diagnostics while its services are called; the facts."""
    tmp_path = tmp_path_factory.mktemp('flooded')
    origin = dt.datetime.now(UTC).replace(microsecond=0)
    seed_memory(tmp_path / 'robot-memory.md', origin, steady=300, aging=0, span_hours=1.0,
                rrn=rrn_of('rel_load'))
    node = NodeProcess(tmp_path, 'rel_load', rrn=rrn_of('rel_load'), flush_period_s=0.25,
                       max_backlog=1000).start()
    facts = {'latency': {'get_context': [], 'dream': []}, 'failures': [], 'rss': []}
    try:
        wait_ready(probe, node, timeout=60.0)
        facts['rss_idle'] = rss_bytes(node.process.pid)
        flood = start_flood(rate=FLOOD_RATE, seconds=FLOOD_SECONDS, prefix='flood',
                            sources=40)
        try:
            flood_ready(flood)
            contexts = probe.create_client(GetContext, f'{node.prefix}/get_context')
            dreams = probe.create_client(Dream, f'{node.prefix}/dream')
            calls = 0
            while flood.poll() is None:
                calls += 1
                name, client, request, timeout = (
                    ('dream', dreams, Dream.Request(), 30.0) if calls % 3 == 0 else
                    ('get_context', contexts, GetContext.Request(token_budget=200), 10.0))
                started = time.monotonic()
                future = client.call_async(request)
                rclpy.spin_until_future_complete(probe, future, timeout_sec=timeout)
                if not future.done():
                    facts['failures'].append(f'{name} did not answer within {timeout} s')
                    future.cancel()
                elif not future.result().success:
                    facts['failures'].append(f'{name}: {future.result().message}')
                else:
                    facts['latency'][name].append(time.monotonic() - started)
                facts['rss'].append(rss_bytes(node.process.pid))
                assert node.process.poll() is None, node.log()[-2000:]
            out, err = flood.communicate(timeout=60.0)
            facts['published'] = json.loads(out.strip().splitlines()[-1])['statuses']
            probe.destroy_client(contexts)
            probe.destroy_client(dreams)
        finally:
            stop_flood(flood)
        # The flood is over: wait until the node has stored what it took in.
        facts['evidence'] = evidence = settled_evidence(probe, node)
        database = tmp_path / 'robot-memory.db'

        def rows():
            facts['rows'] = count_rows(database, "WHERE source_key LIKE 'diagnostic|flood-%'",
                                       read_only)
            return facts['rows'] == int(evidence['stored'])

        wait_for(rows, 20.0)
        facts['alive'] = node.process.poll() is None
    finally:
        facts['exit'] = node.stop()
        facts['log'] = node.log()
    print(f'\nload: published {facts.get("published")}, evidence {facts.get("evidence")}, '
          f'{facts.get("rows")} rows, rss idle {facts.get("rss_idle", 0) >> 20} MiB, max '
          f'{max(facts["rss"] or [0]) >> 20} MiB, get_context max '
          f'{max(facts["latency"]["get_context"] or [0]):.2f} s, dream max '
          f'{max(facts["latency"]["dream"] or [0]):.2f} s, failures {facts["failures"][:3]}')
    return facts


@pytest.mark.timeout(FLOOD_SECONDS + 240)
def test_services_keep_answering_under_a_flood(flooded):
    # The flood really was several thousand messages a second.
    assert flooded['published'] >= 0.6 * FLOOD_RATE * FLOOD_SECONDS, flooded['published']
    assert flooded['failures'] == []
    assert len(flooded['latency']['get_context']) >= FLOOD_SECONDS
    assert len(flooded['latency']['dream']) >= FLOOD_SECONDS / 5
    assert flooded['alive'] and flooded['exit'] == 0, flooded['log'][-2000:]
    assert 'Traceback' not in flooded['log'], flooded['log'][-3000:]


def test_memory_stays_bounded_under_a_flood(flooded):
    samples = flooded['rss']
    assert len(samples) >= 20 and min(samples) > 0
    assert max(samples) < flooded['rss_idle'] + (400 << 20), max(samples) >> 20
    # No steady growth: the last quarter is not far above the second quarter.
    quarter = len(samples) // 4
    second = sorted(samples[quarter:2 * quarter])[quarter // 2]
    last = sorted(samples[-quarter:])[quarter // 2]
    assert last < second + (60 << 20), (second >> 20, last >> 20)


def test_what_the_node_took_in_is_stored_and_counted(flooded):
    evidence = flooded['evidence']
    received, stored = int(evidence['received']), int(evidence['stored'])
    dropped, refused = int(evidence['dropped_backlog_full']), int(evidence['refused'])
    # What the store took is in the database, exactly once.
    assert received == stored == flooded['rows'], evidence
    if not GIVES_PUBLISHER_GID:
        assert_losses_not_counted(evidence)
        assert received + dropped + refused <= flooded['published'], evidence
        return
    lost = int(evidence['lost_in_middleware'])
    # Every published status is accounted for: taken in, or lost by a counted policy.
    assert received + dropped + lost + refused == flooded['published'], evidence
    if dropped or lost:
        assert evidence['_level'] == 1 and 'lost' in evidence['_message'], evidence


def assert_losses_not_counted(evidence):
    """Check that the node says it cannot count middleware losses, rather than report 0."""
    assert evidence['lost_in_middleware'] == 'not counted', evidence
    assert 'lost in the middleware are not counted' in evidence['_message'], evidence


def frozen_burst(tmp_path, probe, name: str):
    """Flood a node frozen (SIGSTOP) for 2 s of a 4 s burst; return (what was sent, evidence)."""
    directory = tmp_path / name
    directory.mkdir()
    node = NodeProcess(directory, name, rrn=rrn_of(name), flush_period_s=0.1).start()
    try:
        wait_ready(probe, node, timeout=60.0)
        # As fast as one process can publish, and the node frozen (SIGSTOP) for two seconds
        # of it: on a slow or loaded machine the publisher alone may not outrun the node,
        # but a node that cannot read for 2 s surely overflows whatever history there is.
        flood = start_flood(rate=1e9, seconds=4.0, prefix='burst', sources=20)
        flood_ready(flood)
        time.sleep(0.5)
        os.kill(node.process.pid, signal.SIGSTOP)
        try:
            time.sleep(2.0)
        finally:
            os.kill(node.process.pid, signal.SIGCONT)
        out, _ = flood.communicate(timeout=60.0)
        sent = json.loads(out.strip().splitlines()[-1])
        evidence = settled_evidence(probe, node)
    finally:
        node.stop()
    print(f'\n{name}: sent {sent}, evidence {evidence}')
    return sent, evidence


@pytest.mark.timeout(240)
def test_a_burst_beyond_what_the_node_can_take_is_counted_as_lost(tmp_path, probe):
    # Only what reaches the node can be counted: a loss shows as a gap *before* a message
    # that arrives. Now and then (once in CI, after 20 s of waiting) Fast DDS does not
    # deliver the rest of the burst to the thawed reader at all, so the writer never has
    # it acknowledged (all_acked false) and the last sequence numbers never arrive. That
    # burst shows nothing about counting, only that nothing was counted twice; then the
    # scenario runs once more, and the exact account is asked of a delivered burst.
    for attempt in ('rel_burst', 'rel_burst_again'):
        sent, evidence = frozen_burst(tmp_path, probe, attempt)
        published = sent['statuses']
        counted = sum(int(evidence[key]) for key in ('received', 'dropped_backlog_full',
                                                     'refused'))
        if not GIVES_PUBLISHER_GID:
            assert_losses_not_counted(evidence)
            # Whether the burst overflowed the reader cannot be told here: nothing is
            # counted twice, and the node does not claim that nothing was lost.
            assert counted <= published, (sent, evidence)
            return
        counted += int(evidence['lost_in_middleware'])
        assert counted <= published, (sent, evidence)
        if sent['all_acked']:
            break
    else:
        pytest.fail(f'the middleware delivered neither burst in full: {sent}, {evidence}')
    assert counted == published, (sent, evidence)
    # The burst really overflowed the reader (else this shows nothing), and it says so.
    assert int(evidence['lost_in_middleware']) > 0, evidence
    assert evidence['_level'] == 1 and 'lost in the middleware' in evidence['_message'], evidence


# --------------------------------------------------------------------------- concurrency

@pytest.mark.timeout(600 if LONG else 180)
def test_the_cli_and_the_node_writing_at_once_never_lose_an_update(tmp_path, probe):
    origin = dt.datetime.now(UTC).replace(microsecond=0)
    memory_path = tmp_path / 'robot-memory.md'
    seed_memory(memory_path, origin, steady=300, aging=200, span_hours=CLI_ROUNDS * 6 + 30,
                rrn=rrn_of('rel_conc'))
    node = NodeProcess(tmp_path, 'rel_conc', rrn=rrn_of('rel_conc'),
                       **fast_clock(origin)).start()
    flood = start_flood(rate=150.0, seconds=10 ** 6, prefix='cc', sources=10, rotate=300)
    ingested, sources = 0, []
    try:
        wait_ready(probe, node, timeout=60.0)
        for number in range(CLI_ROUNDS):
            for kind in ('ingest', 'dream', 'prune'):
                command = cli_command(kind, tmp_path, origin, number)
                done = subprocess.run(command, capture_output=True, text=True, timeout=120)
                assert cli_succeeded(kind, done), f'robot-memory {kind}: {done.stderr}'
                if kind == 'ingest':
                    assert 'accepted 400, refused 0; 400 pieces of evidence kept' in done.stdout
                    ingested += 400
                    sources.append(f'cli-{number}')
                assert node.process.poll() is None, node.log()[-2000:]
        stop_flood(flood)
        evidence = settled_evidence(probe, node)
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(), timeout=60.0)
        assert reply.success or 'clock went backwards' in reply.message, reply.message
    finally:
        stop_flood(flood)
        code = node.stop()
    assert code == 0, node.log()[-2000:]
    database = tmp_path / 'robot-memory.db'
    check_databases(tmp_path)
    # Every observation of either writer is stored exactly once.
    assert count_rows(database, "WHERE source_key LIKE 'diagnostic|cli-%'") == ingested
    assert count_rows(database, "WHERE source_key LIKE 'diagnostic|cc-%'") == \
        int(evidence['stored'])
    final = snapshot_state(tmp_path, memory_path, memory_now(origin))
    assert check_agrees(final, 'after the run') == 'consistent'
    check_audit_trail(tmp_path, final['entries'])
    # Each CLI source became an entry (made by whichever dream came first), kept or pruned.
    texts = [entry.text for entry in final['entries'].values()]
    archive = side_file(memory_path, '.archive.jsonl')
    if archive.exists():
        texts += [json.loads(line)['entry']['text']
                  for line in archive.read_text(encoding='utf-8').splitlines()]
    missing = [source for source in sources if not any(f'({source})' in text or
                                                       f'{source}:' in text for text in texts)]
    assert not missing, missing


# ---------------------------------------------------------------------------- full disk

@pytest.fixture(scope='module')
def full_disk(tmp_path_factory, probe):
    """memory_node writing to a 2 MiB tmpfs that fills up, then gets space back; the facts."""
    base = tmp_path_factory.mktemp('full_disk')
    with mounted_tmpfs(base / 'disk', size='2m') as disk:
        return full_disk_facts(probe, base, disk)


def full_disk_facts(probe, base, disk) -> dict:
    """Return what memory_node on a 2 MiB tmpfs ``disk`` does when it fills up and empties."""
    facts = {}
    node = NodeProcess(base, 'rel_full', rrn=rrn_of('rel_full'),
                       memory_file=str(disk / 'robot-memory.md'),
                       flush_period_s=0.1, diagnostics_period_s=0.2)
    flood = None
    try:
        node.start()
        wait_ready(probe, node, timeout=60.0)
        flood = start_flood(rate=100.0, seconds=10 ** 6, prefix='fd', sources=5)
        assert wait_for(lambda: int(latest_health(probe, node, 'evidence')['stored']) >= 50, 30.0)
        first = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(), timeout=30.0)
        assert first.success and first.created, first.message
        memory_path = disk / 'robot-memory.md'
        before = memory_path.read_bytes()

        filler = fill(disk)
        wait_for(lambda: False, 1.0, spin=spin(probe))  # some flushes fail meanwhile
        facts['dream_full'] = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(),
                                   timeout=30.0)
        facts['memory_full'] = latest_health(probe, node, 'memory file')
        facts['files_full'] = latest_health(probe, node, 'files')
        # The robot goes quiet (diagnostics come in bursts): nothing new arrives, but what
        # was taken in still cannot be written.
        stop_flood(flood)
        facts['evidence_full'] = settled_evidence(probe, node)
        facts['file_kept'] = memory_path.read_bytes() == before
        facts['alive_full'] = node.process.poll() is None

        filler.unlink()
        received = int(facts['evidence_full']['received'])
        database = disk / 'robot-memory.db'
        facts['resumed'] = wait_for(
            lambda: count_rows(database, "WHERE source_key LIKE 'diagnostic|fd-%'",
                               read_only) >= received, 20.0, spin=spin(probe))
        facts['dream_again'] = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(),
                                    timeout=30.0)
        facts['evidence_after'] = latest_health(probe, node, 'evidence')
        facts['memory_after'] = latest_health(probe, node, 'memory file')
    finally:
        if flood is not None:
            stop_flood(flood)
        if node.process is not None:
            facts['exit'] = node.stop()
            facts['log'] = node.log()
        facts['rows'] = count_rows(disk / 'robot-memory.db',
                                   "WHERE source_key LIKE 'diagnostic|fd-%'", read_only)
    return facts


@pytest.mark.timeout(240)
def test_a_full_disk_fails_the_dream_clearly_and_writing_resumes(full_disk):
    facts = full_disk
    dream = facts['dream_full']
    assert not dream.success and 'disk is full' in dream.message, dream.message
    assert facts['memory_full']['_level'] == 2, facts['memory_full']
    assert 'disk is full' in facts['memory_full']['_message'], facts['memory_full']
    # Each file of the node on that disk is named, with the free space left.
    files = facts['files_full']
    assert files['_level'] == 2, files
    on_disk = ('memory file', 'database', 'archive', 'summaries')
    assert all('the disk is full' in files[what] for what in on_disk), files
    assert facts['file_kept'] and facts['alive_full']
    # Space returns: what was taken in while the disk was full is written, nothing lost.
    assert facts['resumed'], (facts['evidence_full'], facts['rows'])
    again = facts['dream_again']
    assert again.success, again.message
    assert facts['memory_after']['_level'] == 0, facts['memory_after']
    evidence = facts['evidence_after']
    assert evidence['_level'] == 0 and int(evidence['dropped_backlog_full']) == 0, evidence
    assert int(evidence['received']) == int(evidence['stored']) == facts['rows'], \
        (evidence, facts['rows'])
    assert facts['exit'] == 0, facts['log'][-2000:]


# While the disk is full the "robot_memory: evidence" status says ERROR, also between bursts:
# the worker moves its backlog into the store's buffer before the failing flush, so the
# backlog is 0 while the buffered rows cannot be written; the status follows the store's last
# flush (EvidenceStore.write_error, cleared when a flush succeeds).


def test_a_full_disk_shows_as_an_evidence_error_on_diagnostics(full_disk):
    evidence = full_disk['evidence_full']
    assert evidence['_level'] == 2 and 'disk is full' in evidence['_message'], evidence
    # What waits in memory for the disk is reported, and none of it was dropped yet.
    assert evidence['dropped_unwritable'] == '0', evidence
