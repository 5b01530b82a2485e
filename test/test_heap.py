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

"""HeapTrimmer gives freed C-heap memory back to the operating system (glibc), rate-limited."""

import gc

from robot_memory.ros.heap import HeapTrimmer


def _rss_mb() -> float:
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    raise AssertionError('no VmRSS')


def test_a_trim_returns_the_freed_heap_of_a_load():
    trimmer = HeapTrimmer()
    assert trimmer.available, 'glibc malloc_trim not found on this Linux'
    trimmer.maybe_trim(force=True)
    # A load's pattern: many mid-sized temporaries (malloc, not pymalloc), a few kept.
    temporaries = [bytes(600) + str(index).encode() for index in range(150_000)]
    kept = temporaries[::64]
    del temporaries
    gc.collect()
    before = _rss_mb()
    assert trimmer.maybe_trim(force=True)
    after = _rss_mb()
    assert before - after > 20, (before, after)
    assert len(kept) == 2344


def test_trims_are_rate_limited(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr('robot_memory.ros.heap.time.monotonic', lambda: clock[0])
    trimmer = HeapTrimmer(min_interval_s=10.0)
    assert trimmer.maybe_trim() and trimmer.trims == 1
    clock[0] += 9.9
    assert not trimmer.maybe_trim() and trimmer.trims == 1
    assert trimmer.maybe_trim(force=True) and trimmer.trims == 2
    clock[0] += 10.0
    assert trimmer.maybe_trim() and trimmer.trims == 3


def test_without_malloc_trim_it_does_nothing(monkeypatch):
    monkeypatch.setattr('robot_memory.ros.heap._malloc_trim', lambda: None)
    trimmer = HeapTrimmer()
    assert not trimmer.available and not trimmer.maybe_trim(force=True)
