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
memory_node with real rclpy: the installed executable in its own process, probed over DDS.

Each node runs under its own namespace on this run's ROS_DOMAIN_ID (scripts/test.sh picks
one per run and keeps discovery on localhost). The memory clock is sped up
(``time_scale``) so that a few seconds of warnings span the hour that full evidence
strength needs; nothing about the node's logic is replaced or mocked.
"""

import datetime as dt
import math
import os
import signal
import sqlite3
import stat
import subprocess
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.msg import ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import BatteryState

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.context import percent
from robot_memory.rcan.lifecycle import band
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.untrusted import FRAMING
from robot_memory.rcan.untrusted import HEADER
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from support.paths import REPO
from support.ros_harness import FAST
from support.ros_harness import NODE_EXECUTABLE
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import latched_context
from support.ros_probe import publish_warnings
from support.ros_probe import spin
from support.ros_probe import wait_gone
from support.ros_probe import wait_ready


WARN = bytes([1])  # DiagnosticStatus.level is a byte field


def _now():
    return dt.datetime.now(UTC)


@pytest.fixture(scope='module')
def learned(tmp_path_factory, probe):
    """Return a node that has been shown 250 encoder warnings over 75 memory-minutes and dreamt."""
    tmp_path = tmp_path_factory.mktemp('learned')
    node = NodeProcess(tmp_path, 'it_learned', **FAST).start()
    try:
        wait_ready(probe, node)
        publish_warnings(probe, 250)
        wait_for(lambda: False, 0.5)  # let the worker flush
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        yield node, reply
    finally:
        node.stop()


def test_diagnostics_dream_and_get_context_show_the_entry_in_its_band(learned, probe):
    node, dream = learned
    assert len(dream.created) == 1 and dream.consumed >= 250, dream.message
    reply = call(probe, GetContext, f'{node.prefix}/get_context',
                 GetContext.Request(token_budget=0, include_peers=True))
    assert reply.success, reply.message
    [entry] = reply.entries
    assert entry.id == dream.created[0]
    assert entry.effective_confidence >= 0.8 and entry.effective_confidence <= entry.confidence
    expected = f'{band(entry.effective_confidence)} [{percent(entry.effective_confidence)}%]'
    # The block opens with its framing header (issue 38, point 6), also a field of its own.
    lines = reply.text.split('\n')
    assert lines[0] == HEADER and reply.framing == FRAMING
    # The encoder still warns (no OK since): "Active now" comes first (issue 39, point 5).
    assert lines[1].startswith('Active now') and 'left wheel encoder' in lines[2]
    first = lines[lines.index('') + 1]
    assert first.startswith(expected + ' base: left wheel encoder'), reply.text
    assert expected.startswith('🔴')


def test_get_context_refuses_a_bad_min_confidence_and_honours_a_high_one(learned, probe):
    node, _ = learned
    bad = call(probe, GetContext, f'{node.prefix}/get_context',
               GetContext.Request(min_confidence=1.5))
    assert not bad.success and 'min_confidence' in bad.message
    strict = call(probe, GetContext, f'{node.prefix}/get_context',
                  GetContext.Request(min_confidence=0.99))
    # No entry passes; what is failing now is still said (the encoder warns yet).
    assert strict.success and not strict.entries and '🔴' not in strict.text
    assert [fault.source_key for fault in strict.active_now] == [
        'diagnostic|wheel_left|base: left wheel encoder']


def test_a_late_subscriber_to_context_receives_the_block(learned, probe):
    node, dream = learned
    block = latched_context(probe, node)
    assert block.rrn == 'RRN-000000000042'
    assert [entry.id for entry in block.entries] == list(dream.created)
    assert block.text.startswith(HEADER + '\nActive now') and '\n\n🔴 [' in block.text
    # Issue 38: the latched block carries the framing too; it is built without a query.
    assert block.framing == FRAMING and list(block.relevant_ids) == []


def test_get_context_with_a_query_names_the_entries_chosen_for_it(learned, probe):
    """Issue 38, point 4: the brain's task in the request; the reply says what it lifted."""
    node, dream = learned
    reply = call(probe, GetContext, f'{node.prefix}/get_context',
                 GetContext.Request(query='drive slowly, the left wheel encoder drops ticks'))
    assert reply.success, reply.message
    assert list(reply.relevant_ids) == list(dream.created)
    assert [entry.id for entry in reply.entries] == list(dream.created)
    assert f'1 chosen for the query ({dream.created[0]})' in reply.message
    plain = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
    assert plain.success and list(plain.relevant_ids) == []
    assert 'chosen for the query' not in plain.message
    bad = call(probe, GetContext, f'{node.prefix}/get_context',
               GetContext.Request(query='x' * 4001))
    assert not bad.success and 'limit is 4000' in bad.message


def test_the_memory_file_is_written_private(learned):
    node, dream = learned
    mode = stat.S_IMODE(os.stat(node.memory_file).st_mode)
    assert mode == 0o600, oct(mode)
    document = MemoryFile(node.memory_file).load(_now()).document
    assert [entry.id for entry in document.entries] == list(dream.created)
    assert stat.S_IMODE(os.stat(node.memory_file.with_name('robot-memory.db')).st_mode) == 0o600


def test_health_is_published_on_diagnostics_like_diagnostic_updater(learned, probe):
    node, _ = learned
    seen = {}

    def keep(array):
        for status in array.status:
            if status.name.startswith('robot_memory: '):
                seen[status.name] = status

    subscription = probe.create_subscription(DiagnosticArray, '/diagnostics', keep, 10)
    try:
        wanted = {'robot_memory: memory file', 'robot_memory: dream', 'robot_memory: evidence',
                  'robot_memory: entries'}
        assert wait_for(lambda: wanted <= set(seen), 10.0, spin=spin(probe)), sorted(seen)
    finally:
        probe.destroy_subscription(subscription)
    assert all(status.hardware_id == 'RRN-000000000042' for status in seen.values())
    values = {item.key: item.value for item in seen['robot_memory: entries'].values}
    assert values['high'] == '1'
    evidence = {item.key: item.value for item in seen['robot_memory: evidence'].values}
    assert int(evidence['stored']) >= 250 and evidence['dropped_backlog_full'] == '0'
    dream = seen['robot_memory: dream']
    assert dream.level == bytes([0]) and 'created 1' in dream.message


def test_a_restart_keeps_the_memory(tmp_path, probe):
    first = NodeProcess(tmp_path, 'it_restart', **FAST).start()
    try:
        wait_ready(probe, first)
        publish_warnings(probe, 200)
        wait_for(lambda: False, 0.5)
        created = call(probe, Dream, f'{first.prefix}/dream', Dream.Request()).created
        assert len(created) == 1
    finally:
        assert first.stop() == 0, first.log()
    wait_gone(probe, first)
    second = NodeProcess(tmp_path, 'it_restart', **FAST).start()
    try:
        wait_ready(probe, second)
        reply = call(probe, GetContext, f'{second.prefix}/get_context', GetContext.Request())
        assert [entry.id for entry in reply.entries] == list(created), reply.text
    finally:
        second.stop()


def test_an_invalid_parameter_stops_the_node_at_start_up_with_a_reason(tmp_path):
    node = NodeProcess(tmp_path, 'it_badparam', decay_per_day=-1.0).start()
    assert node.wait_exit() == 2
    assert 'invalid parameter decay_per_day' in node.log(), node.log()


def test_an_invalid_parameter_change_is_refused_with_a_reason(learned, probe):
    node, _ = learned
    request = SetParameters.Request(parameters=[ParameterMsg(
        name='inject_min', value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE,
                                                double_value=0.95))])
    reply = call(probe, SetParameters, f'{node.prefix}/set_parameters', request)
    [result] = reply.results
    assert not result.successful and 'inject_min' in result.reason and 'band' in result.reason
    request.parameters[0].value.double_value = 0.35
    [result] = call(probe, SetParameters, f'{node.prefix}/set_parameters', request).results
    assert result.successful, result.reason
    request.parameters[0].name = 'rrn'
    request.parameters[0].value = ParameterValue(type=ParameterType.PARAMETER_STRING,
                                                 string_value='RRN-OTHER')
    [result] = call(probe, SetParameters, f'{node.prefix}/set_parameters', request).results
    assert not result.successful and 'read-only' in result.reason


def test_an_unknown_telemetry_type_is_a_clear_start_up_error(tmp_path):
    node = NodeProcess(tmp_path, 'it_badtype',
                       telemetry_topics=['/battery_state:sensor_msgs/msg/NoSuchMessage']).start()
    assert node.wait_exit() == 2
    log = node.log()
    assert '/battery_state' in log and 'sensor_msgs/msg/NoSuchMessage' in log, log
    missing = NodeProcess(tmp_path, 'it_badpkg',
                          telemetry_topics=['/x:no_such_pkg/msg/Thing']).start()
    assert missing.wait_exit() == 2 and 'no_such_pkg' in missing.log()


def test_a_telemetry_topic_no_rule_reads_is_named_at_start_up(tmp_path, probe):
    rules = str(REPO / 'config' / 'observation_rules.yaml')
    unread = NodeProcess(tmp_path, 'it_unread', telemetry_topics=[
        '/battery_state:sensor_msgs/msg/BatteryState']).start()
    read = NodeProcess(tmp_path, 'it_read', rules_file=rules, telemetry_topics=[
        '/battery_state:sensor_msgs/msg/BatteryState']).start()
    try:
        wait_ready(probe, unread)
        wait_ready(probe, read)
    finally:
        unread.stop()
        read.stop()
    warning = 'telemetry topic /battery_state (sensor_msgs/msg/BatteryState): no rule'
    assert warning in unread.log() and 'set rules_file' in unread.log(), unread.log()
    assert 'no rule' not in read.log(), read.log()


def test_absurd_messages_are_handled_without_crashing(tmp_path, probe):
    node = NodeProcess(tmp_path, 'it_absurd', flush_period_s=0.1,
                       telemetry_topics=['/battery_state:sensor_msgs/msg/BatteryState']).start()
    try:
        wait_ready(probe, node)
        huge = 'x' * 100_000
        statuses = [
            lambda i: DiagnosticStatus(level=WARN, name=huge, hardware_id=huge, message=huge,
                                       values=[KeyValue(key=huge, value=huge)]),
            lambda i: DiagnosticStatus(level=bytes([200]), name='bad level', hardware_id='x'),
            lambda i: DiagnosticStatus(level=WARN, name='unicode \u202e\U0001F916 \ufffd',
                                       hardware_id='\x00nul', message='\ud7ff'),
        ]
        for status in statuses:
            publish_warnings(probe, 5, status=status)
        battery = probe.create_publisher(BatteryState, '/battery_state', 10)
        wait_for(lambda: battery.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for value in (math.nan, math.inf, -math.inf, 0.1):
            battery.publish(BatteryState(percentage=value, voltage=math.nan))
            time.sleep(0.05)
        probe.destroy_publisher(battery)
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success, reply.message
        context = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
        assert context.success
        assert node.process.poll() is None, node.log()
        document = MemoryFile(node.memory_file).load(_now()).document
        assert all(len(entry.text) <= 500 for entry in document.entries)
    finally:
        assert node.stop() == 0, node.log()


def test_sigterm_loses_no_evidence(tmp_path, probe):
    # A long flush period: only the shutdown flush can save these observations.
    node = NodeProcess(tmp_path, 'it_sigterm', flush_period_s=60.0, batch_size=100_000).start()
    evidence = {}

    def keep(array):
        for status in array.status:
            if status.name == 'robot_memory: evidence':
                evidence.update({item.key: item.value for item in status.values})

    wait_ready(probe, node)
    subscription = probe.create_subscription(DiagnosticArray, '/diagnostics', keep, 10)
    try:
        publish_warnings(probe, 300, rate_hz=300.0)
        assert wait_for(lambda: evidence.get('received') == '300', 10.0, spin=spin(probe)), \
            evidence
        assert evidence['stored'] == '0'
    finally:
        probe.destroy_subscription(subscription)
    assert node.stop(signal.SIGTERM) == 0, node.log()
    with sqlite3.connect(tmp_path / 'robot-memory.db') as db:
        assert db.execute('SELECT coalesce(sum(count), 0) FROM observations').fetchone()[0] == 300


def test_help_prints_the_usage_and_starts_nothing(tmp_path):
    # An operator's first try: before, --help started the node on ~/.opencastor's memory.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith('CASTOR_ROBOT_MEMORY')}
    env['HOME'] = str(tmp_path)
    done = subprocess.run([NODE_EXECUTABLE, '--help'], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('usage: memory_node [--ros-args'), done.stdout
    for name in ('memory_file', 'rrn', 'dream_time', 'telemetry_topics'):
        assert f'\n  {name} (default ' in done.stdout, name
    assert 'memory_file:=' in done.stdout
    assert list(tmp_path.iterdir()) == [], 'memory_node --help wrote something'
