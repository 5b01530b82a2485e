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
The store thread sleeps while nothing comes, and never at the cost of evidence.

A robot that reports nothing must not wake memory_node's store thread every flush period
(each wake-up is idle CPU); the first observation after a quiet spell wakes it, and is
stored within a flush period; a flush that failed is retried whether or not more comes;
a task or a stop is served at once. A real in-memory EvidenceStore, counting its flushes.
"""

import datetime as dt
import threading
import time

from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import EvidenceError
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import diagnostic
from robot_memory.evidence.worker import StoreWorker
from support.ros_harness import wait_for

PERIOD = 0.05  # flush_period_s of these tests
T0 = dt.datetime(2026, 6, 1, tzinfo=UTC)


class CountingStore(EvidenceStore):
    """An in-memory EvidenceStore that counts flushes and can be told to fail them."""

    def __init__(self):
        super().__init__(None)
        self.flushes = 0
        self.failures_left = 0
        self.kept = 0  # observations in the database after the last flush

    def flush(self, then=None):
        self.flushes += 1
        if self.failures_left:
            self.failures_left -= 1
            raise EvidenceError('disk full (test)')
        written = super().flush(then)
        self.kept = self.observation_count()
        return written


def error_status(second: int):
    return diagnostic(T0 + dt.timedelta(seconds=second), 'lidar: front', 'lidar', 2,
                      'no scan', [])


def started() -> tuple:
    stores = []

    def open_store():
        stores.append(CountingStore())
        return stores[0]

    worker = StoreWorker(open_store, flush_period_s=PERIOD, batch_size=500)
    worker.start()
    return worker, stores[0]


def test_a_quiet_worker_sleeps_and_the_next_observation_wakes_it_and_is_stored():
    worker, store = started()
    try:
        time.sleep(20 * PERIOD)
        flushes = store.flushes
        assert flushes <= 3, f'{flushes} flushes in 20 quiet periods: it did not sleep'
        time.sleep(20 * PERIOD)
        assert store.flushes == flushes  # asleep: not one wake-up more
        assert worker.submit(error_status(0))
        assert wait_for(lambda: store.kept == 1, 10 * PERIOD, step=0.005), \
            'not stored after a period'
        # A trickle keeps it flushing each period; quiet again, it sleeps again.
        for second in range(1, 6):
            worker.submit(error_status(second))
            time.sleep(PERIOD / 2)
        assert wait_for(lambda: worker.stored == 6 and worker.backlog == 0, 5.0, step=0.005)
        time.sleep(10 * PERIOD)
        flushes = store.flushes
        time.sleep(20 * PERIOD)
        assert store.flushes == flushes
    finally:
        worker.stop()


def test_a_failed_flush_is_retried_every_period_though_nothing_more_comes():
    worker, store = started()
    try:
        time.sleep(10 * PERIOD)  # asleep
        store.failures_left = 3
        worker.submit(error_status(0))
        assert wait_for(lambda: store.kept == 1, 40 * PERIOD, step=0.005), \
            'the failed flush was dropped'
        assert worker.flush_errors == 3 and store.failures_left == 0
    finally:
        worker.stop()


def test_a_task_or_a_stop_reaches_a_sleeping_worker_at_once():
    worker, store = started()
    time.sleep(10 * PERIOD)  # asleep
    answered = threading.Event()
    started_at = time.monotonic()
    assert worker.call(lambda held: answered.set() or held.observation_count(), 5.0) == 0
    assert time.monotonic() - started_at < 2.0
    time.sleep(10 * PERIOD)
    worker.submit(error_status(0))
    started_at = time.monotonic()
    worker.stop(timeout=5.0)
    assert time.monotonic() - started_at < 2.0
    assert worker.stored == 1 and store.kept == 1  # the stop drained and flushed it
