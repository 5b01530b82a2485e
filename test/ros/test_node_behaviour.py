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
memory_node behaviours seen only from outside: the installed executable, real rclpy, real files.

Each test starts ``memory_node`` in its own process (``ros_harness.NodeProcess``) under a
namespace of its own and watches what it really does: the evidence database
(``robot-memory.db`` beside the memory file, opened read-only), ``robot-memory.md`` on
disk, its ``robot_memory: <task>`` statuses on ``/diagnostics`` and its services. Nothing
is mocked: the nightly dream is reached by speeding up the memory clock (``time_scale``),
log records come from a real rclpy node's logger through rcl's ``/rosout``, telemetry is
a real sensor_msgs/BatteryState publisher.

Messages sent before discovery has matched both sides of a topic are not delivered, so
evidence is sent again until the node has stored it (``send_until``); what must NOT become
evidence is sent before a last good message from the same writer, which reliable delivery
keeps in order, so once that one is stored the others were seen and dropped.
"""

import datetime as dt
import hashlib
import json
import os
import pathlib
import re
import signal
import sqlite3
import subprocess
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
import pytest
import rclpy
from sensor_msgs.msg import BatteryState

from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import UTC
from robot_memory.evidence import observations
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.untrusted import HEADER
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from support.paths import REPO
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import latched_context
from support.ros_probe import spin
from support.ros_probe import wait_ready

RULES_FILE = REPO / 'config' / 'observation_rules.yaml'
OK = bytes([0])  # DiagnosticStatus.level is a byte field
WARN = bytes([1])
ERROR = 2


def _now():
    return dt.datetime.now(UTC)


def database(node) -> pathlib.Path:
    """Return the node's evidence database, beside its memory file."""
    return node.memory_file.with_name('robot-memory.db')


def query(path, sql, *args) -> list:
    """
    Rows of ``sql`` on an evidence database opened read-only ([] before it exists).

    Read-only, so that looking never changes what is looked at (a read-write connection's
    last close would checkpoint the node's WAL).
    """
    if not path.exists():
        return []
    db = sqlite3.connect(f'{path.resolve().as_uri()}?mode=ro', uri=True, timeout=30.0)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def payloads(path, source_key) -> list:
    """Return the decoded evidence payloads stored for ``source_key``."""
    return [json.loads(payload) for (payload,) in query(
        path, 'SELECT payload FROM observations WHERE source_key = ? ORDER BY id', source_key)]


def send_until(probe, send, condition, timeout=15.0, every=0.2) -> bool:
    """``send()`` every ``every`` s until ``condition()`` holds (or ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        send()
        if wait_for(condition, every, spin=spin(probe)):
            return True
    return bool(condition())


def publish_diagnostics(probe, statuses) -> None:
    """Publish one DiagnosticArray of ``statuses`` on /diagnostics (reliable)."""
    publisher = probe.create_publisher(DiagnosticArray, '/diagnostics', 100)
    try:
        wait_for(lambda: publisher.get_subscription_count() > 0, 10.0, spin=spin(probe))
        publisher.publish(DiagnosticArray(status=statuses))
        rclpy.spin_once(probe, timeout_sec=0.05)
    finally:
        probe.destroy_publisher(publisher)


def seed_evidence(node, hardware_id) -> None:
    """One WARN diagnostic in the node's evidence database, before the node starts."""
    store = EvidenceStore(database(node), Rules.default())
    try:
        store.add(observations.diagnostic(_now(), 'base: lidar', hardware_id, 1,
                                          'dropped 12 scans in the last second'))
    finally:
        store.close()


def dream_statuses(probe, rrn, into) -> object:
    """Subscribe to /diagnostics, appending every ``robot_memory: dream`` status of ``rrn``."""
    def keep(array):
        for status in array.status:
            if status.name == 'robot_memory: dream' and status.hardware_id == rrn:
                values = {item.key: item.value for item in status.values}
                values['_message'] = status.message
                into.append(values)
    return probe.create_subscription(DiagnosticArray, '/diagnostics', keep, 100)


# ------------------------------------------------------------------ 1. the nightly dream

def test_the_nightly_dream_runs_by_itself_at_dream_time_and_not_when_it_is_off(tmp_path, probe):
    # 600x: one real second is ten memory-minutes, so a dream_time 45-46 memory-minutes
    # ahead of the start arrives about 4.5 s after it. The memory clock equals the wall
    # clock at the node's start, so a slow start-up does not eat into that margin.
    start = dt.datetime.now().astimezone()
    target = (start + dt.timedelta(minutes=46)).replace(second=0, microsecond=0)
    for name in ('nightly', 'off'):
        (tmp_path / name).mkdir()
    nightly = NodeProcess(tmp_path / 'nightly', 'it_nightly', rrn='RRN-000000000171',
                          time_scale=600.0, dream_time=target.strftime('%H:%M'),
                          diagnostics_period_s=0.2, flush_period_s=0.1,
                          **{'dream.initial_min': 0.6, 'dream.initial_max': 0.9})
    # 50000x: two memory-days in under 3.5 s, so the default 03:00 would come round too.
    two_days_s = 2 * 86400 / 50_000.0
    off = NodeProcess(tmp_path / 'off', 'it_nightly_off', rrn='RRN-000000000172',
                      time_scale=50_000.0, dream_time='', diagnostics_period_s=0.2,
                      flush_period_s=0.1)
    seed_evidence(nightly, 'lidar_front')
    seed_evidence(off, 'lidar_front')
    seen, seen_off = [], []
    subscriptions = [dream_statuses(probe, 'RRN-000000000171', seen),
                     dream_statuses(probe, 'RRN-000000000172', seen_off)]
    try:
        nightly.start()
        off_started = time.monotonic()
        off.start()
        assert wait_for(lambda: seen and seen_off, 15.0, spin=spin(probe)), nightly.log()
        # Before dream_time: no dream yet, and the next nightly one is exactly dream_time.
        assert seen[0]['_message'] == 'no dream yet' and seen[0]['last_dream'] == '', seen[0]
        assert parse_iso(seen[0]['next_nightly']) == target.astimezone(UTC), (seen[0], target)
        assert seen_off[0]['next_nightly'] == 'off', seen_off[0]
        assert wait_for(lambda: seen[-1]['last_dream'], 20.0, spin=spin(probe)), \
            (seen[-1], nightly.log())
        dreamt_at = parse_iso(seen[-1]['last_dream'])
        # At dream_time (the scheduler wakes when it is due), not before.
        assert target.astimezone(UTC) <= dreamt_at < target.astimezone(UTC) + \
            dt.timedelta(minutes=30), (dreamt_at, target)
        assert 'created 1' in seen[-1]['_message'], seen[-1]
        # The scheduler dreamt (actor memory_node), nobody called ~/dream.
        dreams = query(database(nightly), 'SELECT actor, at FROM dreams')
        assert [actor for actor, _ in dreams] == ['memory_node'], dreams
        assert parse_iso(dreams[0][1]) == dreamt_at
        document = MemoryFile(nightly.memory_file).load(_now()).document
        [entry] = document.entries
        assert 'lidar_front' in entry.text and 'dropped 12 scans' in entry.text, entry.text
        reply = call(probe, GetContext, f'{nightly.prefix}/get_context', GetContext.Request())
        assert [item.id for item in reply.entries] == [entry.id], reply.text

        # The node without a dream_time (nor a period) has been up for two memory-days.
        assert wait_for(lambda: time.monotonic() - off_started > two_days_s, two_days_s + 1.0,
                        spin=spin(probe))
        latest = health(probe, 'dream', where='RRN-000000000172')
        assert latest['_message'] == 'no dream yet' and latest['last_dream'] == '', latest
        assert all(status['last_dream'] == '' for status in seen_off), seen_off[-1]
        assert query(database(off), 'SELECT count(*) FROM dreams') == [(0,)]
        assert query(database(off), 'SELECT coalesce(sum(count), 0) FROM observations')[0][0] >= 1
        assert not off.memory_file.exists()
        assert off.process.poll() is None, off.log()
    finally:
        for subscription in subscriptions:
            probe.destroy_subscription(subscription)
        assert nightly.stop() == 0, nightly.log()
        assert off.stop() == 0, off.log()


# ------------------------------------------------------------------ 2. /rosout

def test_error_logs_of_another_node_become_an_entry_info_and_warn_do_not(tmp_path, probe):
    node = NodeProcess(tmp_path, 'it_rosout', rrn='RRN-000000000173', flush_period_s=0.1).start()
    # A real node of its own: rcl publishes only node loggers on /rosout.
    source = rclpy.create_node('motor_driver', namespace='it_rosout_src')
    logger = source.get_logger()
    key = f'log|{logger.name}'
    db = database(node)
    try:
        wait_ready(probe, node, topic='/rosout')
        attempt = iter(range(1, 1000))
        assert send_until(probe, lambda: logger.error(
            f'motor driver lost heartbeat after {next(attempt)} ms'),
            lambda: payloads(db, key)), node.log()
        # What must not count, then a last ERROR from the same writer (kept in order).
        logger.warning('motor driver voltage sagging to 11 V')
        logger.info('motor driver ready after 3 s')
        logger.debug('motor driver duty cycle 40 %')
        logger.error('motor driver lost heartbeat after 7777 ms')
        assert wait_for(lambda: any('7777' in item['message'] for item in payloads(db, key)),
                        10.0, spin=spin(probe)), payloads(db, key)
        stored = payloads(db, key)
        assert len(stored) >= 2 and all(item['level'] == 40 for item in stored), stored
        assert all('lost heartbeat' in item['message'] for item in stored), stored
        everything = [payload for (payload,) in query(db, 'SELECT payload FROM observations')]
        assert not any('sagging' in text or 'ready after' in text or 'duty cycle' in text
                       for text in everything), everything
        # Dropped as not evidence, not refused as malformed.
        assert health(probe, 'evidence', where='RRN-000000000173')['refused'] == '0'

        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        document = MemoryFile(node.memory_file).load(_now()).document
        mine = [entry for entry in document.entries if logger.name in entry.text]
        assert len(mine) == 1 and mine[0].id in reply.created, [e.text for e in document.entries]
        assert 'lost heartbeat' in mine[0].text and 'ERROR' in mine[0].text, mine[0].text
        assert not any('sagging' in entry.text or 'ready after' in entry.text
                       for entry in document.entries)
    finally:
        source.destroy_node()
        assert node.stop() == 0, node.log()


# ------------------------------------------------------------------ 4. telemetry

def test_a_low_battery_on_a_telemetry_topic_becomes_evidence_and_an_entry(tmp_path, probe):
    topic = '/it_battery/battery_state'
    node = NodeProcess(tmp_path, 'it_battery', rrn='RRN-000000000174', flush_period_s=0.1,
                       rules_file=str(RULES_FILE),
                       telemetry_topics=[f'{topic}:sensor_msgs/msg/BatteryState'],
                       **{'dream.initial_min': 0.6, 'dream.initial_max': 0.9}).start()
    db = database(node)
    key = f'telemetry|battery-low|{topic}'

    def rows(severity):
        return query(db, 'SELECT payload FROM observations WHERE source_key = ? AND severity = ?',
                     key, severity)

    publisher = probe.create_publisher(BatteryState, topic, 10)
    try:
        wait_ready(probe, node, topic=topic)
        # A full battery is an OK report of the rule, never bad evidence.
        assert send_until(probe, lambda: publisher.publish(BatteryState(percentage=0.9)),
                          lambda: rows(0)), node.log()
        assert not rows(1)
        assert send_until(probe, lambda: publisher.publish(BatteryState(percentage=0.15)),
                          lambda: rows(1)), node.log()
        bad = [json.loads(payload) for (payload,) in rows(1)]
        assert all(item['rule'] == 'battery-low' and item['topic'] == topic
                   and abs(item['value'] - 0.15) < 1e-6 for item in bad), bad

        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        context = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
        battery = [entry for entry in context.entries if topic in entry.text]
        assert len(battery) == 1 and battery[0].id in reply.created, context.text
        assert battery[0].text == (f'Battery on {topic} runs below 20% (seen 15%); plan '
                                   'charging earlier'), battery[0].text
        assert {'battery', 'power'} <= set(battery[0].tags)
    finally:
        probe.destroy_publisher(publisher)
        assert node.stop() == 0, node.log()


# ------------------------------------------------------------------ 5. SIGINT

def publish_unflushed(probe, node, count, status_of, rate_hz):
    """
    Publish ``count`` statuses (``status_of(index)``) at ``rate_hz`` to a node not flushing.

    Returns once the node's "evidence" status says all were received and none stored.
    """
    evidence = {}

    def keep(array):
        for status in array.status:
            if status.name == 'robot_memory: evidence' and status.hardware_id == node.rrn:
                evidence.update({item.key: item.value for item in status.values})

    wait_ready(probe, node)
    subscription = probe.create_subscription(DiagnosticArray, '/diagnostics', keep, 10)
    publisher = probe.create_publisher(DiagnosticArray, '/diagnostics', 1000)
    try:
        wait_for(lambda: publisher.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for index in range(count):
            publisher.publish(DiagnosticArray(status=[status_of(index)]))
            time.sleep(1.0 / rate_hz)
        assert wait_for(lambda: evidence.get('received') == str(count), 20.0,
                        spin=spin(probe)), evidence
        assert evidence['stored'] == '0'
    finally:
        probe.destroy_publisher(publisher)
        probe.destroy_subscription(subscription)


def test_sigint_loses_no_evidence(tmp_path, probe):
    # A long flush period: only the shutdown flush can save these observations.
    node = NodeProcess(tmp_path, 'it_sigint', rrn='RRN-000000000175', flush_period_s=60.0,
                       batch_size=100_000).start()
    publish_unflushed(probe, node, 300, lambda index: DiagnosticStatus(
        level=WARN, name='base: right wheel encoder', hardware_id='wheel_right',
        message=f'dropped {index} ticks',
        values=[KeyValue(key='ticks_dropped', value=str(index))]), rate_hz=300.0)
    assert node.stop(signal.SIGINT) == 0, node.log()
    assert query(database(node), 'SELECT coalesce(sum(count), 0) FROM observations') == [(300,)]


def test_repeated_stop_signals_lose_no_evidence(tmp_path, probe):
    """
    Ctrl-C under ``ros2 launch``: the terminal signals the whole group, launch forwards it.

    The node must finish its flush whatever signals repeat during it (SIGINT again, then the
    SIGTERM launch sends when its timeout runs out), exit 0 and say what it flushed.
    """
    node = NodeProcess(tmp_path, 'it_sigint_group', rrn='RRN-000000000176',
                       flush_period_s=60.0, batch_size=100_000).start(new_group=True)
    # A fast fault, not a burst past the reader queue.
    publish_unflushed(probe, node, 1500, lambda index: DiagnosticStatus(
        level=bytes([ERROR]), name='base: left wheel driver', hardware_id='wheel_left',
        message=f'overcurrent {index}',
        values=[KeyValue(key='current_a', value=str(index))]), rate_hz=1500.0)
    group = os.getpgid(node.process.pid)
    os.killpg(group, signal.SIGINT)  # the terminal's Ctrl-C, to the whole group
    deadline = time.monotonic() + 1.0
    while node.process.poll() is None and time.monotonic() < deadline:
        node.process.send_signal(signal.SIGINT)  # launch forwards it, again and again
        time.sleep(0.005)
    if node.process.poll() is None:
        node.process.send_signal(signal.SIGTERM)  # launch's sigterm_timeout ran out
    try:
        code = node.wait_exit(30.0)
    except subprocess.TimeoutExpired:
        node.stop(signal.SIGKILL)
        pytest.fail(f'memory_node did not end within 30 s of the signals: {node.log()}')
    log = node.log()
    assert code == 0, log
    assert query(database(node), 'SELECT coalesce(sum(count), 0) FROM observations') == [(1500,)]
    assert re.search(r'robot_memory stopped: flushed 1500 observations', log), log
    assert 'stop signals received: SIGINT' in log, log


# ------------------------------------------------------------------ 6. ~/context and decay

SEEDED_ID = 'mem-5eeded01'
SEEDED_TEXT = 'Loading bay floor is wet after 18:00; slow down to 0.2 m/s'


@pytest.fixture(scope='module')
def seeded(tmp_path_factory, probe):
    """Return a node started on a memory file of one entry; memory time runs 43200x (2 s a day)."""
    tmp_path = tmp_path_factory.mktemp('seeded')
    node = NodeProcess(tmp_path, 'it_seeded', rrn='RRN-000000000042', time_scale=43_200.0)
    now = _now()
    with MemoryFile(node.memory_file).update(now, rrn='RRN-000000000042') as result:
        result.document.entries = [MemoryEntry(
            id=SEEDED_ID, type='environment_note', text=SEEDED_TEXT, confidence=0.9,
            first_seen=now - dt.timedelta(days=3), last_reinforced=now, observation_count=4,
            tags=['floor'])]
    digest = hashlib.sha256(node.memory_file.read_bytes()).hexdigest()
    node.start()
    try:
        wait_ready(probe, node)
        yield node, digest
    finally:
        assert node.stop() == 0, node.log()


def test_context_is_published_at_start_up_for_a_late_subscriber(seeded, probe):
    node, digest = seeded
    block = latched_context(probe, node)
    assert block.rrn == 'RRN-000000000042'
    assert [entry.id for entry in block.entries] == [SEEDED_ID], block.text
    assert SEEDED_TEXT in block.text and block.text.startswith(HEADER + '\n🔴 ['), block.text
    # No dream has run: the block is the one published at start-up.
    assert query(database(node), 'SELECT count(*) FROM dreams') == [(0,)]
    assert hashlib.sha256(node.memory_file.read_bytes()).hexdigest() == digest


def test_get_context_evaluates_decay_at_call_time(seeded, probe):
    node, digest = seeded

    def seeded_entry():
        reply = call(probe, GetContext, f'{node.prefix}/get_context',
                     GetContext.Request(min_confidence=0.01))
        assert reply.success, reply.message
        [entry] = [entry for entry in reply.entries if entry.id == SEEDED_ID]
        return entry

    first = seeded_entry()
    later = {}

    def a_day_later():
        later['entry'] = seeded_entry()
        return later['entry'].effective_confidence <= first.effective_confidence - 0.05 + 1e-6

    # decay_per_day 0.05: one memory-day (2 real seconds) costs 0.05.
    assert wait_for(a_day_later, 15.0, step=0.2), (first, later)
    second = later['entry']
    assert second.effective_confidence < first.effective_confidence <= 0.9 + 1e-6
    assert abs(first.confidence - 0.9) < 1e-6 and abs(second.confidence - 0.9) < 1e-6
    # Decay is evaluated when read, never written back.
    assert hashlib.sha256(node.memory_file.read_bytes()).hexdigest() == digest


# ------------------------------------------------------------------ 2, 3. its own records

@pytest.fixture(scope='module')
def faulty(tmp_path_factory, probe):
    """
    Return a node that logs ERRORs and reports an ERROR status itself, and a healthy witness.

    Its memory file is a directory: every scheduled dream (each second) fails and is
    logged at ERROR on /rosout, and its ``robot_memory: memory file`` status is ERROR.
    """
    tmp_path = tmp_path_factory.mktemp('faulty')
    node = NodeProcess(tmp_path, 'it_own', rrn='RRN-000000000043', dream_period_s=1.0,
                       diagnostics_period_s=0.2, flush_period_s=0.1)
    node.memory_file.mkdir()
    (tmp_path / 'witness').mkdir()
    witness = NodeProcess(tmp_path / 'witness', 'it_own_witness', rrn='RRN-000000000044',
                          flush_period_s=0.1)
    node.start()
    witness.start()
    try:
        wait_ready(probe, node, topic='/rosout')
        wait_ready(probe, witness, topic='/rosout')
        yield node, witness
    finally:
        assert node.stop() == 0, node.log()
        assert witness.stop() == 0, witness.log()


def test_its_own_error_logs_are_never_evidence(faulty, probe):
    node, witness = faulty
    own_key = f'log|{node.namespace}.robot_memory'
    # Another memory node takes them as evidence: they are real ERROR records on /rosout.
    # Identical records are one run of evidence: count the evidence, not the rows.
    assert wait_for(lambda: query(database(witness), 'SELECT coalesce(sum(count), 0) FROM '
                                  'observations WHERE source_key = ?', own_key) >= [(2,)], 15.0,
                    spin=spin(probe)), (witness.log(), node.log())
    assert all('scheduled dream failed' in item['message'] and item['level'] == 40
               for item in payloads(database(witness), own_key))
    # The node itself takes in other nodes' ERROR records all the while ...
    source = rclpy.create_node('arm_driver', namespace='it_own_src')
    try:
        logger = source.get_logger()
        assert send_until(probe, lambda: logger.error('arm driver joint 3 over current'),
                          lambda: payloads(database(node), f'log|{logger.name}')), node.log()
    finally:
        source.destroy_node()
    # ... but not its own.
    assert node.log().count('scheduled dream failed') >= 2, node.log()
    assert payloads(database(node), own_key) == []
    assert query(database(node), "SELECT count(*) FROM observations WHERE source = 'log' "
                 'AND source_key LIKE ?', f'%{node.namespace}.robot_memory%') == [(0,)]


def test_its_own_diagnostics_are_never_observations(faulty, probe):
    node, _ = faulty
    db = database(node)
    # Its own memory file status is an ERROR: as anyone else's it would be evidence.
    status = health(probe, 'memory file', where='RRN-000000000043')
    assert status['_level'] == ERROR and 'unreadable' in status['_message'], status
    statuses = [DiagnosticStatus(level=WARN, name='base: lidar', hardware_id='lidar_own_test',
                                 message='dropped 3 scans'),
                DiagnosticStatus(level=OK, name='base: imu', hardware_id='imu_own_test',
                                 message='ok')]
    keys = ['diagnostic|lidar_own_test|base: lidar', 'diagnostic|imu_own_test|base: imu']

    def stored():
        return all(query(db, 'SELECT 1 FROM observations WHERE source_key = ?', key)
                   for key in keys)

    assert send_until(probe, lambda: publish_diagnostics(probe, statuses), stored), node.log()
    assert query(db, 'SELECT severity FROM observations WHERE source_key = ?', keys[0]) == [(1,)]
    own = query(db, "SELECT source_key FROM observations WHERE source = 'diagnostic' AND "
                "(source_key LIKE '%robot_memory: %' OR source_key LIKE '%RRN-000000000043%')")
    assert own == [], own


def test_a_lidar_fault_seen_today_reaches_the_brain_and_the_reply_says_what_is_left_out(
        tmp_path, probe):
    """
    Check a lidar fault: 100 ERROR reports over 20 s, then ~/dream.

    The dream gives the fault a low confidence (a 20 s burst is weak evidence of a lasting
    fault), below the injection threshold. The entry still reaches the brain in the
    labelled weak-recent section, and the reply and the latched block say how many entries
    are below the threshold and the highest.
    """
    # time_scale 10: 100 reports at 50 Hz are 20 s of memory time. Topics of its own: the
    # ``faulty`` node of this module logs an ERROR every second, which this node would learn
    # too (in one CI run it ranked above the lidar).
    node = NodeProcess(tmp_path, 'it_lidar', time_scale=10.0, flush_period_s=0.1,
                       remaps=['/diagnostics:=/it_lidar/diagnostics',
                               '/rosout:=/it_lidar/rosout']).start()
    try:
        wait_ready(probe, node, topic='/it_lidar/diagnostics')
        publisher = probe.create_publisher(DiagnosticArray, '/it_lidar/diagnostics', 100)
        wait_for(lambda: publisher.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for index in range(100):
            publisher.publish(DiagnosticArray(status=[DiagnosticStatus(
                level=bytes([ERROR]), name='lidar: front scanner', hardware_id='lidar_front',
                message='no scan received for 500 ms')]))
            time.sleep(0.02)
        probe.destroy_publisher(publisher)
        assert wait_for(lambda: query(database(node), 'SELECT coalesce(sum(count), 0) FROM '
                                      'observations') >= [(90,)], 10.0, spin=spin(probe))
        dream = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert dream.success and dream.created, dream.message

        reply = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
        assert reply.success, reply.message
        assert list(reply.entries) == []  # nothing at or above the 30% threshold
        assert reply.recent_entries, reply.text
        lidar = reply.recent_entries[0]
        assert lidar.id in dream.created and 'lidar' in lidar.text.lower()
        assert lidar.effective_confidence < 0.3
        lines = reply.text.split('\n')[1:]  # after the header (issue 38, point 6)
        # The lidar has sent no OK since: "Active now" comes first (issue 39, point 5).
        assert lines[0].startswith('Active now') and 'front scanner' in lines[1], reply.text
        lines = lines[lines.index('') + 1:]
        assert lines[0].startswith('Seen in the last 24 h, below the 30% injection threshold')
        assert lines[1].startswith('🟢 [') and 'lidar' in lines[1].lower(), reply.text
        assert reply.below_threshold == len(dream.created) and reply.omitted == 0
        assert reply.below_threshold_id in dream.created
        assert abs(reply.below_threshold_max - lidar.effective_confidence) < 1e-6
        assert (f'{len(dream.created)} below the 30% injection threshold, the highest'
                in reply.message), reply.message

        # A caller raising the threshold asked for strong entries only: told what is left out.
        strict = call(probe, GetContext, f'{node.prefix}/get_context',
                      GetContext.Request(min_confidence=0.5))
        assert strict.success and not strict.recent_entries and not strict.entries
        assert strict.text.split('\n')[1:] == strict.active_now_text.split('\n'), strict.text
        assert 'below the 50% injection threshold' in strict.message, strict.message

        block = latched_context(probe, node)
        assert [entry.id for entry in block.recent_entries] == [
            entry.id for entry in reply.recent_entries]
        assert block.below_threshold == reply.below_threshold
        assert block.below_threshold_id == reply.below_threshold_id
        assert 'below the 30% injection threshold, the highest' in block.summary
        assert 'lidar' in block.text.lower()
    finally:
        assert node.stop() == 0, node.log()
    # the node's log says it too, after the dream
    logged = [line for line in node.log().splitlines() if 'context block: ' in line]
    assert logged and re.search(r'\d+ recent entr(y|ies) below the threshold', logged[-1]), \
        node.log()[-3000:]
    assert 'below the 30% injection threshold, the highest' in logged[-1]
