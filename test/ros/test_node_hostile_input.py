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

"""memory_node under hostile input: fuzzed GetContext requests, nasty diagnostics and logs."""

import datetime as dt
import math

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
from rcl_interfaces.msg import Log
import rclpy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
import rclpy.subscription

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from support.modes import LONG
from support.node_checks import check_databases
from support.node_checks import seed_memory
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import spin
from support.ros_probe import wait_ready

pytestmark = [pytest.mark.long, pytest.mark.slow]  # --long runs it at full length

WARN = bytes([1])


# ------------------------------------------------------------------------ hostile input

FUZZ = settings(max_examples=400 if LONG else 60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.fixture(scope='module')
def fuzz_node(tmp_path_factory, probe):
    """One memory_node for the fuzzing tests, with a small memory to answer from."""
    tmp_path = tmp_path_factory.mktemp('fuzz')
    origin = dt.datetime.now(UTC).replace(microsecond=0)
    seed_memory(tmp_path / 'robot-memory.md', origin, steady=40, aging=0, span_hours=1.0)
    node = NodeProcess(tmp_path, 'rel_fuzz', flush_period_s=0.05).start()
    wait_ready(probe, node, timeout=60.0)
    client = probe.create_client(GetContext, f'{node.prefix}/get_context')
    assert client.wait_for_service(timeout_sec=20.0)
    yield node, client
    probe.destroy_client(client)
    code = node.stop()
    assert code == 0, node.log()[-3000:]
    assert 'Traceback' not in node.log(), node.log()[-3000:]


def ask(probe, client, request, timeout=10.0):
    future = client.call_async(request)
    rclpy.spin_until_future_complete(probe, future, timeout_sec=timeout)
    assert future.done(), f'get_context did not answer within {timeout} s: {request}'
    return future.result()


BUDGETS = st.one_of(st.sampled_from([0, 1, 2, 3, 7, 400, 2 ** 31 - 1, 2 ** 32 - 1]),
                    st.integers(min_value=0, max_value=2 ** 32 - 1))
CONFIDENCES = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 1.0, 0.3, 0.99,
                     1.0000001, 1e-45, 3.4e38, -3.4e38, 2.0]),
    st.floats(width=32))


@FUZZ
@given(budget=BUDGETS, confidence=CONFIDENCES, peers=st.booleans())
def test_get_context_answers_every_request_and_names_what_was_wrong(fuzz_node, probe, budget,
                                                                    confidence, peers):
    node, client = fuzz_node
    request = GetContext.Request(token_budget=budget, min_confidence=confidence,
                                 include_peers=peers)
    reply = ask(probe, client, request)
    assert node.process.poll() is None, node.log()[-2000:]
    if not reply.success:
        assert 'min_confidence' in reply.message or 'token_budget' in reply.message, reply
        assert not reply.entries and reply.text == ''
        return
    assert reply.message
    limit = budget or 400
    assert -(-len(reply.text.encode('utf-8')) // 4) <= limit, (budget, reply.text)
    if 0.0 < confidence <= 1.0:
        threshold = max(0.3, float(request.min_confidence))
        assert all(entry.effective_confidence >= threshold - 1e-6 for entry in reply.entries)
    else:
        assert all(entry.effective_confidence >= 0.3 - 1e-6 for entry in reply.entries)


# get_context_callback refuses a NaN or negative min_confidence (``request.min_confidence > 0``
# is False for both, which would read as "use the default"): anything but 0 or a number in
# (0, 1] gets success=False and a message naming the value.


@pytest.mark.parametrize('value', [math.nan, -1.0, -math.inf, -1e-6])
def test_get_context_refuses_a_nan_or_negative_min_confidence(fuzz_node, probe, value):
    _, client = fuzz_node
    reply = ask(probe, client, GetContext.Request(min_confidence=value))
    assert not reply.success and 'min_confidence' in reply.message, reply.message


NASTY = ['', ' ', 'NaN', 'nan', 'inf', '-Infinity', '1e999', '-0', 'null', 'None', '{}',
         '[' * 400 + ']' * 400, '{"a": ' * 300 + '1' + '}' * 300, '../../etc/passwd',
         'mem-../../x', '\u202eevil\u202c', '\u200f\u05e9\u05dc\u05d5\u05dd', '\ufeff',
         '\u2028', '\t\r\n', '%s%n', '{hardware_id}', 'robot_memory: evidence',
         '🤖🔥' * 3000, 'x' * 200_000, 'é' * 70_000]
TEXT = st.one_of(st.sampled_from(NASTY),
                 st.text(alphabet=st.characters(blacklist_categories=('Cs',)), max_size=80))
KEY_VALUES = st.one_of(
    st.lists(st.builds(KeyValue, key=TEXT, value=TEXT), max_size=8),
    st.integers(min_value=200, max_value=3000).map(
        lambda size: [KeyValue(key=f'k{index}', value='NaN') for index in range(size)]))
STATUSES = st.builds(
    DiagnosticStatus, level=st.integers(min_value=0, max_value=255).map(lambda v: bytes([v])),
    name=TEXT, message=TEXT, hardware_id=TEXT, values=KEY_VALUES)
LOGS = st.builds(
    Log, level=st.sampled_from([0, 10, 20, 30, 40, 50, 41, 255]),
    name=TEXT, msg=TEXT, file=TEXT, function=TEXT,
    line=st.integers(min_value=0, max_value=2 ** 32 - 1))


@FUZZ
@given(statuses=st.lists(STATUSES, min_size=0, max_size=4), logs=st.lists(LOGS, max_size=3))
def test_hostile_diagnostics_and_log_records_leave_the_node_up(fuzz_node, probe, statuses,
                                                               logs):
    node, client = fuzz_node
    publishers = hostile_publishers(probe)
    publishers['diagnostics'].publish(DiagnosticArray(status=statuses))
    for record in logs:
        publishers['rosout'].publish(record)
    rclpy.spin_once(probe, timeout_sec=0.01)
    assert node.process.poll() is None, node.log()[-3000:]


_PUBLISHERS = {}


def hostile_publishers(probe) -> dict:
    """Reliable publishers on /diagnostics and /rosout, matched with the node (made once)."""
    if not _PUBLISHERS:
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        _PUBLISHERS['diagnostics'] = probe.create_publisher(DiagnosticArray, '/diagnostics', qos)
        _PUBLISHERS['rosout'] = probe.create_publisher(Log, '/rosout', qos)
        for publisher in _PUBLISHERS.values():
            assert wait_for(lambda: publisher.get_subscription_count() > 0, 20.0,
                            spin=spin(probe))
    return _PUBLISHERS


@pytest.mark.timeout(120)
def test_after_the_hostile_input_the_node_still_serves_and_dreams(fuzz_node, probe):
    node, client = fuzz_node
    hostile_publishers(probe)['diagnostics'].publish(DiagnosticArray(status=[DiagnosticStatus(
        level=WARN, name='after: fuzz', hardware_id='after-fuzz', message='still here')]))
    replies = []

    # The node takes the message in and a dream makes an entry of it.
    def learned():
        replies.append(call(probe, Dream, f'{node.prefix}/dream', Dream.Request(),
                            timeout=60.0))
        assert replies[-1].success, replies[-1].message
        return any('after-fuzz' in entry.text for entry in
                   MemoryFile(node.memory_file).load(dt.datetime.now(UTC)).document.entries)

    assert wait_for(learned, 30.0, step=0.5, spin=spin(probe)), replies[-1].message
    context = ask(probe, client, GetContext.Request())
    assert context.success, context.message
    result = MemoryFile(node.memory_file).load(dt.datetime.now(UTC))
    assert result.problems == []
    assert all(len(entry.text) <= 500 for entry in result.document.entries)
    check_databases(node.tmp_path)
    assert node.process.poll() is None, node.log()[-3000:]
