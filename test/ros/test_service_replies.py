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
No lost reply: memory_node's service replies wait for a new client, and a drop is counted.

rmw_fastrtps sends a reply only once the caller's reply reader is matched, waiting at most
the reply writer's ``max_blocking_time``. The node ships a Fast DDS profile that makes that
wait 2 s (Fast DDS's default is 100 ms). A client whose reply reader the service can never
match (it asks for TRANSIENT_LOCAL replies, which a service does not offer) forces the
drop deterministically: the request gets through, the reply cannot. A caller that retries
with the same ``request_id`` gets the first reply again and nothing is counted twice.
"""

import re
import time
import uuid

import pytest
import rclpy
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy

from robot_memory.srv import Forget
from robot_memory.srv import Learn
from robot_memory.srv import Recall
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import health
from support.ros_probe import spin
from support.ros_probe import spin_for
from support.ros_probe import wait_ready

DROP = re.compile(r'reply of ~/learn dropped after waiting (?P<waited>[0-9.]+) s')
# A reader asking for TRANSIENT_LOCAL never matches a service's VOLATILE reply writer;
# the request writer (offering more than the service asks) still matches its reader.
DEAF = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                  durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _send_deaf(probe, node, request) -> None:
    """Send ``request`` to ~/learn from a client that cannot take the reply; wait for the drop."""
    deaf = probe.create_client(Learn, f'{node.prefix}/learn', qos_profile=DEAF)
    try:
        # Its reply reader never matches, so wait_for_service (which needs both) cannot be
        # used on it: wait for the service with a normal client, then give the node a
        # moment to match the deaf client's request writer.
        call(probe, Recall, f'{node.prefix}/recall', Recall.Request(query='anything'))
        spin_for(probe, 1.0)
        deaf.call_async(request)
        assert wait_for(lambda: DROP.search(node.log()), 15.0, spin=spin(probe)), node.log()
    finally:
        probe.destroy_client(deaf)


def test_a_reply_no_client_can_take_waits_2_s_then_is_logged_counted_and_retry_safe(tmp_path,
                                                                                    probe):
    node = NodeProcess(tmp_path, 'it_replies', substrate_metrics_period_s=1.0).start()
    try:
        wait_ready(probe, node)
        request_id = str(uuid.uuid4())
        request = Learn.Request(text='The spare battery is in locker 4', type='semantic',
                                request_id=request_id)
        _send_deaf(probe, node, request)
        # The package's profile is in effect: the reply waited 2 s, not Fast DDS's 100 ms.
        assert float(DROP.search(node.log())['waited']) >= 1.9, node.log()
        assert 'Fast DDS profiles: ' in node.log() and 'fastdds_profiles.xml' in node.log()
        services = health(probe, 'services', timeout=15.0)
        assert services['_level'] == 1 and int(services['replies_dropped']) >= 1, services
        assert int(services['dropped learn']) >= 1 and '~/learn' in services['_message']

        # The caller never saw the reply; it retries with the same request_id.
        retry = call(probe, Learn, f'{node.prefix}/learn', request)
        assert retry.success and retry.replayed, retry.message
        assert retry.type == 'semantic' and not retry.duplicate
        found = call(probe, Recall, f'{node.prefix}/recall',
                     Recall.Request(query='spare battery locker', k=5))
        assert [record.id for record in found.records] == [retry.id]
        other = call(probe, Learn, f'{node.prefix}/learn', Learn.Request(
            text='Something else entirely', request_id=request_id))
        assert not other.success and 'request_id' in other.message, other.message
        assert 'already used' in other.message

        forget = Forget.Request(id=retry.id, reason='battery moved', request_id='forget-1')
        first = call(probe, Forget, f'{node.prefix}/forget', forget)
        again = call(probe, Forget, f'{node.prefix}/forget', forget)
        assert first.success and not first.replayed and list(first.ids) == [retry.id]
        assert again.success and again.replayed and list(again.ids) == [retry.id]
        assert again.message == first.message
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.parametrize('start', range(3))
def test_a_fresh_clients_first_call_to_a_fresh_node_is_answered(tmp_path, probe, start):
    """The race of every `ros2 service call` and of a brain launched with the node."""
    node = NodeProcess(tmp_path, f'it_fresh_{start}').start()
    try:
        # No settle anywhere: each call is a new client's first request.
        for attempt in range(12):
            client = probe.create_client(Learn, f'{node.prefix}/learn')
            try:
                assert client.wait_for_service(timeout_sec=20.0), node.log()
                future = client.call_async(Learn.Request(text=f'fresh fact {start} {attempt}',
                                                         request_id=f'{start}-{attempt}'))
                started = time.monotonic()
                rclpy.spin_until_future_complete(probe, future, timeout_sec=10.0)
                assert future.done(), (f'call {attempt} unanswered after '
                                       f'{time.monotonic() - started:.1f} s\n{node.log()}')
                assert future.result().success, future.result().message
            finally:
                probe.destroy_client(client)
        services = health(probe, 'services', timeout=15.0)
        assert int(services['replies_dropped']) == 0, services
        assert 'dropped' not in node.log(), node.log()
    finally:
        assert node.stop() == 0, node.log()
