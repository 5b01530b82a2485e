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
The thread that takes memory_node's evidence topics, off rclpy's executor.

Why: under a flood, rclpy's MultiThreadedExecutor cost more than the ingestion itself.
Its main thread rebuilds the wait set over every service, timer and subscription of the
node at each wake-up, in Python, holding the GIL that the store thread and the ingest
callback need. Under ``bench/bench_node.py``'s flood (8,000 DiagnosticArrays/s) the node
took 19-63 % of what a bare rclpy subscriber takes, and the messages it fell behind on
left it about 10 MB larger. On this thread it takes them all, and stays below 100 MB.

How: the node creates the subscriptions as usual (rclpy owns and destroys them), in
:class:`ServedByIngestThread`, a callback group whose entities the executor never runs.
:class:`IngestThread` waits on a wait set holding only those subscriptions, their QoS
event handlers (message lost) and a guard condition that stops it. It takes what waits
on each subscription in turn (``take_message``, the call the executor makes) and hands
every message to its handler with its MessageInfo, and runs the event callbacks through
rclpy's Waitable interface, as the executor would. One thread runs all of them, so they
never run at the same time, as in the mutually exclusive group they replace; the
messages of one subscription are handled in the order they were received.

The event handlers must come along: left to the executor, a flood that made the reader
lose messages woke the executor for every message-lost event, and the node fell behind
as before (measured: 0.65-0.70 of the bare subscriber instead of 1.0).

rclpy's wait set is not part of its documented Python API; it is what
``rclpy.wait_for_message`` uses, with the same arguments on Jazzy and Kilted.
"""

import contextlib
import threading
from typing import Callable

from rclpy.callback_groups import CallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.guard_condition import GuardCondition
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription

BATCH = 100  # messages taken from one subscription before the next one gets its turn
WAIT_NS = 2_000_000_000  # a safety net: stop() wakes the wait with the guard condition
ERROR_PAUSE_S = 0.01  # after a failure, before waiting again


class ServedByIngestThread(CallbackGroup):
    """A callback group whose entities the executor leaves to an :class:`IngestThread`."""

    def can_execute(self, entity) -> bool:
        return False

    def beginning_execution(self, entity) -> bool:
        return False

    def ending_execution(self, entity) -> None:
        return None


class IngestThread:
    """Takes the messages of the subscriptions made through :meth:`subscribe`, on one thread."""

    def __init__(self, node, on_error: Callable[[Exception], None],
                 name: str = 'robot_memory-ingest'):
        self._node = node
        self._on_error = on_error
        self.group = ServedByIngestThread()
        self._handlers: list = []
        self._events: list = []
        self._stopping = threading.Event()
        self._guard = GuardCondition(None, None, context=node.context)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.taken = 0
        self.errors = 0

    def subscribe(self, msg_type, topic: str, handler: Callable, qos, **kwargs) -> Subscription:
        """
        Create a subscription of the node whose messages this thread hands to ``handler``.

        ``handler(message, message_info)`` gets the serialized bytes when ``raw=True``.
        Subscribe before :meth:`start`.
        """
        if self._thread.is_alive():
            raise RuntimeError('subscribe before the ingest thread starts')
        subscription = self._node.create_subscription(
            msg_type, topic, handler, qos, callback_group=self.group, **kwargs)
        self._handlers.append((subscription, handler))
        self._events.extend(subscription.event_handlers)
        return subscription

    def start(self) -> None:
        """Start taking messages."""
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop taking messages (a handler running finishes first); True when it stopped."""
        self._stopping.set()
        with contextlib.suppress(Exception):  # the context is shut down: the wait times out
            self._guard.trigger()
        if self._thread.is_alive():
            self._thread.join(timeout)
        stopped = not self._thread.is_alive()
        if stopped:
            with contextlib.suppress(Exception):
                self._guard.destroy()
        return stopped

    # ------------------------------------------------------------------ thread

    def _run(self) -> None:
        if not self._handlers:
            return
        try:
            events = sum(handler.get_num_entities().num_events for handler in self._events)
            wait_set = _rclpy.WaitSet(len(self._handlers), 1, 0, 0, 0, events,
                                      self._node.context.handle)
        except Exception as error:  # noqa: B902 - rclpy raises its RCLError
            self._report(error)
            return
        while not self._stopping.is_set():
            try:
                self._wait(wait_set)
                while self._take_all():
                    pass
            except InvalidHandle:  # a subscription or the guard is being destroyed
                return
            except Exception as error:  # noqa: B902 - a handler's fault, or rclpy's
                if self._stopping.is_set() or not self._node.context.ok():
                    return  # shutting down: the context went first
                self._report(error)
                self._stopping.wait(ERROR_PAUSE_S)  # never a busy loop of one failure

    def _wait(self, wait_set) -> None:
        wait_set.clear_entities()
        with contextlib.ExitStack() as handles:
            for subscription, _ in self._handlers:
                handles.enter_context(subscription.handle)
                wait_set.add_subscription(subscription.handle)
            for event in self._events:
                handles.enter_context(event)
                event.add_to_wait_set(wait_set)
            handles.enter_context(self._guard.handle)
            wait_set.add_guard_condition(self._guard.handle)
            wait_set.wait(WAIT_NS)
            for event in self._events:
                if event.is_ready(wait_set):
                    self._run_event(event)

    def _run_event(self, event) -> None:
        """Take a ready QoS event and run its callback, as rclpy's executor does."""
        taken = event.take_data()
        if taken is None:
            return
        execution = event.execute(taken)  # a coroutine that awaits nothing
        try:
            execution.send(None)
        except StopIteration:
            return
        execution.close()
        raise RuntimeError(f'the callback of {type(event).__name__} did not finish at once')

    def _take_all(self) -> bool:
        """Take up to BATCH waiting messages of each subscription; True when any was taken."""
        took = False
        for subscription, handler in self._handlers:
            for _ in range(BATCH):
                if self._stopping.is_set():
                    return False
                with subscription.handle:
                    taken = subscription.handle.take_message(subscription.msg_type,
                                                             subscription.raw)
                if taken is None:
                    break
                took = True
                self.taken += 1
                handler(*taken)
        return took

    def _report(self, error: Exception) -> None:
        self.errors += 1
        self._on_error(error)
