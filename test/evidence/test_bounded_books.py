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
What memory_node keeps in memory while it ingests stays within its caps, whatever comes in.

A flood of distinct source keys, statuses or strings must not grow the ingestion's books
(open runs, states, OK heartbeats), the worker's backlog or the decoder's caches past their
caps, and what the caps push out is never evidence: every observation taken is stored.
Counts of entries, read through the same ``books()`` the node reports on its evidence
status, not resident memory.
"""

import datetime as dt
import threading

from rosbags.typesys import get_typestore
from rosbags.typesys import Stores

from robot_memory.common import cdr
from robot_memory.common.timeutil import UTC
from robot_memory.evidence import evidence_store
from robot_memory.evidence import runs
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import diagnostic
from robot_memory.evidence.worker import StoreWorker
from robot_memory.testing import bag_writer

T0 = dt.datetime(2026, 6, 1, tzinfo=UTC)
CAP = 50  # MAX_OPEN_RUNS for the test: the same code path, far fewer keys to feed
STORE = get_typestore(Stores.ROS2_KILTED)
KIND = 'diagnostic_msgs/msg/DiagnosticArray'


def distinct_statuses(count: int, seconds: float = 0.0):
    """Return ``count`` statuses of distinct source keys, OK and ERROR in turn."""
    return [diagnostic(T0 + dt.timedelta(seconds=seconds + index / 1000), f'robot: part {index}',
                       f'hw-{index}', 2 * (index % 2), 'ok' if index % 2 == 0 else 'stopped',
                       [('state', f'mode {index % 3}'), ('volts', f'{index % 7}.5')])
            for index in range(count)]


def test_the_books_stay_within_their_cap_under_many_distinct_source_keys(monkeypatch):
    monkeypatch.setattr(runs, 'MAX_OPEN_RUNS', CAP)
    monkeypatch.setattr(evidence_store, 'MAX_OPEN_RUNS', CAP)
    with EvidenceStore(None, batch_size=40) as store:
        taken = 0
        for second in range(3):  # again after a minute: the OK reports change state
            for observation in distinct_statuses(12 * CAP, seconds=second * 70.0):
                taken += store.add(observation)
                books = store.books()
                assert max(books['open_runs'], books['state_book'], books['ok_book']) <= CAP, \
                    books
                assert books['unstored_runs'] <= 40, books
        store.flush()
        assert taken > 20 * CAP  # the caps pushed keys out over and over
        assert store.observation_count() == taken  # and no evidence with them


def test_books_count_the_source_keys_each_book_follows():
    with EvidenceStore(None) as store:
        for observation in distinct_statuses(10):
            store.add(observation)
        assert store.books() == {'open_runs': 10, 'state_book': 5, 'unstored_runs': 10,
                                 'ok_book': 10}
    assert runs.MAX_OPEN_RUNS == evidence_store.MAX_OPEN_RUNS == 10_000  # about 15 MB when full


def test_the_backlog_never_passes_max_backlog_and_its_peak_is_reported():
    holding, release = threading.Event(), threading.Event()
    worker = StoreWorker(lambda: EvidenceStore(None), flush_period_s=0.05, batch_size=10,
                         max_backlog=100)
    worker.start()
    try:
        busy = worker.call_async(lambda store: holding.set() or release.wait(30))
        assert holding.wait(30)  # a dream, say, holds the store thread from now on
        for observation in distinct_statuses(350):
            worker.submit(observation)
            assert worker.backlog <= 100
        assert (worker.backlog, worker.dropped, worker.submitted) == (100, 250, 100)
        assert worker.books()['peak_backlog'] == 100
        release.set()
        busy.result(30)
        assert worker.call(lambda store: store.observation_count()) == 100
        assert worker.books()['peak_backlog'] == 100  # a peak, not the backlog now
        assert worker.backlog == 0
    finally:
        release.set()
        worker.stop()


def serialized_array(first: int, count: int) -> bytes:
    """Return a DiagnosticArray of ``count`` statuses whose strings are all new."""
    statuses = [{'level': 0, 'name': f'robot: node {number}', 'message': f'state {number}',
                 'hardware_id': f'hw {number}',
                 'values': [{'key': f'key {number}', 'value': f'value {number}'}]}
                for number in range(first, first + count)]
    fields = {'header': {'stamp': {'sec': 1, 'nanosec': 0}, 'frame_id': ''}, 'status': statuses}
    return bytes(STORE.serialize_cdr(bag_writer.build(STORE, KIND, fields), KIND))


def test_the_decode_caches_stay_within_their_cap_under_many_distinct_strings():
    cap = 2 * cdr._CACHE_ENTRIES  # the strings, and the key/value pairs
    read = 0
    for first in range(0, 6 * cdr._CACHE_ENTRIES, 32):
        statuses = cdr.diagnostic_statuses(serialized_array(first, 32))
        read += len(statuses)
        assert statuses[-1][1] == f'robot: node {first + 31}'
        assert cdr.cached_entries() <= cap
    assert read == 6 * cdr._CACHE_ENTRIES
