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
The ingest thread (robot_memory.ros.ingest) with real rclpy and real DDS, in this process.

A publisher node and a subscribing node share one context; the subscribing node is spun
by a MultiThreadedExecutor, as memory_node is, to show the executor never runs what the
ingest thread serves. memory_node's own ingestion, end to end, is test_node_behaviour's.
"""

import os
import threading
import time

import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy
from rclpy.qos import HistoryPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String

from robot_memory.ros.ingest import IngestThread

QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                 reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def wait_until(condition, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def graph():
    """Yield (publisher node, subscribing node, executor spinning the subscriber)."""
    context = rclpy.Context()
    rclpy.init(context=context)
    suffix = f'{os.getpid()}_{time.monotonic_ns()}'
    talker = Node(f'ingest_talker_{suffix}', context=context)
    listener = Node(f'ingest_listener_{suffix}', context=context)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(listener)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        yield talker, listener
    finally:
        executor.shutdown()
        listener.destroy_node()
        talker.destroy_node()
        rclpy.try_shutdown(context=context)
        spinner.join(5)


def test_every_message_reaches_its_handler_in_order_on_the_thread_never_the_executor(graph):
    talker, listener = graph
    topic = f'/ingest_test_{os.getpid()}_a'
    seen, threads, errors = [], set(), []

    def handler(message, info):
        seen.append(message.data)
        threads.add(threading.current_thread().name)
        assert 'source_timestamp' in info  # rclpy's MessageInfo comes along

    ingest = IngestThread(listener, on_error=errors.append, name='test-ingest')
    subscription = ingest.subscribe(String, topic, handler, QOS)
    ingest.start()
    publisher = talker.create_publisher(String, topic, QOS)
    assert wait_until(lambda: publisher.get_subscription_count() == 1)
    for number in range(500):
        publisher.publish(String(data=str(number)))
    assert wait_until(lambda: len(seen) == 500), f'{len(seen)} of 500 taken'
    assert seen == [str(number) for number in range(500)]
    assert threads == {'test-ingest'}
    assert errors == [] and ingest.errors == 0 and ingest.taken == 500
    # The executor would run the subscription's callback (the handler) on its own threads:
    # it never did, and its callback group refuses every entity to any executor.
    assert not ingest.group.can_execute(subscription)
    assert all(not ingest.group.can_execute(event) for event in subscription.event_handlers)
    assert ingest.stop()


def test_a_failing_handler_is_reported_and_the_next_messages_still_arrive(graph):
    talker, listener = graph
    topic = f'/ingest_test_{os.getpid()}_b'
    seen, errors = [], []

    def handler(message, _info):
        if message.data == 'bad':
            raise ValueError('cannot use this one')
        seen.append(message.data)

    ingest = IngestThread(listener, on_error=errors.append)
    ingest.subscribe(String, topic, handler, QOS)
    ingest.start()
    publisher = talker.create_publisher(String, topic, QOS)
    assert wait_until(lambda: publisher.get_subscription_count() == 1)
    for data in ('one', 'bad', 'two'):
        publisher.publish(String(data=data))
    assert wait_until(lambda: len(seen) == 2)
    assert seen == ['one', 'two']
    assert [str(error) for error in errors] == ['cannot use this one']
    assert ingest.errors == 1
    assert ingest.stop()


def test_two_topics_are_served_by_one_thread_and_stop_ends_it_promptly(graph):
    talker, listener = graph
    topics = [f'/ingest_test_{os.getpid()}_c', f'/ingest_test_{os.getpid()}_d']
    seen = {topic: [] for topic in topics}
    running = []
    overlap = []

    def handler_for(topic):
        def handler(message, _info):
            if running:
                overlap.append(topic)
            running.append(topic)
            seen[topic].append(message.data)
            running.pop()
        return handler

    ingest = IngestThread(listener, on_error=lambda error: None)
    for topic in topics:
        ingest.subscribe(String, topic, handler_for(topic), QOS)
    ingest.start()
    with pytest.raises(RuntimeError, match='before the ingest thread starts'):
        ingest.subscribe(String, '/too_late', handler_for(topics[0]), QOS)
    publishers = [talker.create_publisher(String, topic, QOS) for topic in topics]
    assert wait_until(lambda: all(p.get_subscription_count() == 1 for p in publishers))
    for number in range(300):
        for publisher in publishers:
            publisher.publish(String(data=str(number)))
    assert wait_until(lambda: all(len(seen[topic]) == 300 for topic in topics))
    assert all(seen[topic] == [str(n) for n in range(300)] for topic in topics)
    assert overlap == []
    started = time.monotonic()
    assert ingest.stop()
    assert time.monotonic() - started < 2.0  # the guard condition woke it, not the timeout
