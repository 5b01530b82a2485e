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
The test side of the ROS graph: an rclpy probe node and small helpers to use it.

Shared by the integration tests that talk to memory_node over DDS (the node itself is
started by ``ros_harness.NodeProcess``).
"""

import os
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from diagnostic_msgs.msg import KeyValue
import rclpy
from rclpy.node import Node

from robot_memory.srv import GetContext
from robot_memory.testing.processes import end_process
from support.ros_harness import wait_for


def make_probe(name: str = 'test_probe'):
    """Return a generator for a module-scoped ``probe`` fixture: rclpy up, one node, then down."""
    rclpy.init()
    node = Node(f'{name}_{os.getpid()}')
    try:
        yield node
    finally:
        for key in [key for key in _clients if key[0] is node]:
            del _clients[key]
        node.destroy_node()
        rclpy.shutdown()


def spin(node):
    """Return a spin function for wait_for."""
    return lambda step: rclpy.spin_once(node, timeout_sec=step)


def spin_for(node, seconds: float) -> None:
    """Spin ``node`` for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=max(0.0, deadline - time.monotonic()))


_clients = {}  # (probe node, service name): its one client


def client_for(node, service_type, name):
    """
    Return the probe's client of service ``name``, created once and kept (like a real caller).

    Each new client is a new reply reader the service must match before it can answer;
    the node's Fast DDS profile (config/fastdds_profiles.xml) lets a reply wait 2 s for it.
    """
    key = (node, name)
    client = _clients.get(key)
    if client is None or client.srv_type is not service_type:
        if client is not None:
            node.destroy_client(client)
        client = _clients[key] = node.create_client(service_type, name)
    return client


def call(node, service_type, name, request, timeout=20.0):
    """Call a service and return the response (fail the test on timeout)."""
    client = client_for(node, service_type, name)
    assert client.wait_for_service(timeout_sec=timeout), f'{name} never appeared'
    future = client.call_async(request)
    rclpy.spin_until_future_complete(node, future, timeout_sec=timeout)
    assert future.done(), f'{name} did not answer within {timeout} s'
    return future.result()


def wait_ready(probe, node, timeout=20.0, topic='/diagnostics'):
    """Wait until the node serves ~/get_context and subscribes to ``topic``."""
    client = probe.create_client(GetContext, f'{node.prefix}/get_context')
    try:
        if not client.wait_for_service(timeout_sec=timeout):
            state = 'ended' if node.process.poll() is not None else 'still ran'
            raise AssertionError(f'{node.prefix}/get_context never appeared in {timeout} s '
                                 f'(the node {state}): {dump_stacks(node)}')
    finally:
        probe.destroy_client(client)
    namespace = f'/{node.namespace}'
    assert wait_for(lambda: any(info.node_namespace == namespace for info in
                                probe.get_subscriptions_info_by_topic(topic)),
                    timeout, spin=spin(probe)), f'the node never subscribed to {topic}'


def dump_stacks(node) -> str:
    """
    Return the end of the node's log, with its Python stacks if it still runs.

    A node that never came up while its log stays empty hangs in its start-up (once in CI,
    after many SIGKILLed ROS processes): SIGABRT makes faulthandler (PYTHONFAULTHANDLER,
    set by NodeProcess) print where, and ends it.
    """
    end_process(node.process, signal.SIGABRT, 10.0)
    return node.log()[-4000:] or '(its log is empty)'


def health(probe, task: str, timeout: float = 10.0, where=None) -> dict:
    """Return the key/values of the next ``robot_memory: <task>`` status (from ``where`` if set)."""
    from diagnostic_msgs.msg import DiagnosticArray  # noqa: I100 - only where used

    seen = {}

    def keep(array):
        for status in array.status:
            if status.name == f'robot_memory: {task}' and (where is None
                                                           or status.hardware_id == where):
                seen['status'] = status

    subscription = probe.create_subscription(DiagnosticArray, '/diagnostics', keep, 50)
    try:
        assert wait_for(lambda: 'status' in seen, timeout, spin=spin(probe)), \
            f'no robot_memory: {task} status'
    finally:
        probe.destroy_subscription(subscription)
    status = seen['status']
    values = {item.key: item.value for item in status.values}
    values['_level'] = status.level[0] if isinstance(status.level, bytes) else status.level
    values['_message'] = status.message
    return values


def wait_gone(probe, node, timeout=20.0):
    """
    Wait until a stopped node has left the probe's view of the graph.

    A node restarted under the same name is otherwise "available" at once through the
    stale discovery data of the old one, and a request sent then is lost.
    """
    namespace = f'/{node.namespace}'
    assert wait_for(lambda: ('robot_memory', namespace) not in
                    probe.get_node_names_and_namespaces(), timeout, spin=spin(probe)), \
        f'{node.prefix} is still in the graph after it stopped'


def latched_context(probe, node, timeout: float = 10.0):
    """Return the ContextBlock a subscriber that joins now receives on the node's latched topic."""
    from rclpy.qos import DurabilityPolicy  # noqa: I100 - only where used
    from rclpy.qos import QoSProfile
    from rclpy.qos import ReliabilityPolicy
    from robot_memory.msg import ContextBlock

    received = []
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    subscription = probe.create_subscription(ContextBlock, f'{node.prefix}/context',
                                             received.append, qos)
    try:
        assert wait_for(lambda: received, timeout, spin=spin(probe)), 'no latched context block'
    finally:
        probe.destroy_subscription(subscription)
    return received[-1]


WARN = bytes([1])  # DiagnosticStatus.level is a byte field


def encoder_warning(index):
    """Return an intermittent wheel-encoder warning as a robot's driver would publish it."""
    return DiagnosticStatus(level=WARN, name='base: left wheel encoder', hardware_id='wheel_left',
                            message=f'dropped {index} ticks in the last second',
                            values=[KeyValue(key='ticks_dropped', value=str(index))])


def publish_warnings(probe, count, rate_hz=100.0, status=encoder_warning):
    """Publish ``count`` DiagnosticArrays on /diagnostics at ``rate_hz``."""
    # History for every message: a reliable KEEP_LAST writer overwrites what a node busy on
    # a loaded machine has not acknowledged yet, and tests count what arrives.
    publisher = probe.create_publisher(DiagnosticArray, '/diagnostics', max(100, count))
    try:
        wait_for(lambda: publisher.get_subscription_count() > 0, 10.0, spin=spin(probe))
        for index in range(count):
            publisher.publish(DiagnosticArray(status=[status(index)]))
            time.sleep(1.0 / rate_hz)
        rclpy.spin_once(probe, timeout_sec=0.2)
    finally:
        probe.destroy_publisher(publisher)
