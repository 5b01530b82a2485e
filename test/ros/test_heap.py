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

"""HeapTrimmer gives freed C-heap memory back to the OS (glibc); limit_arenas caps arenas."""

import gc
import os
import subprocess
import sys

from robot_memory.ros.heap import HeapTrimmer
from robot_memory.ros.heap import limit_arenas


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


# Threads that each hold mid-sized C allocations at once; then the number of malloc arenas
# besides the main one (glibc maps each at a 64 MiB-aligned address, the main one is brk).
_ARENAS_SCRIPT = """
import sys, threading
from robot_memory.ros.heap import limit_arenas
if sys.argv[1] == 'limit':
    assert limit_arenas()
hold, ready, go = [], threading.Barrier(9), threading.Event()
def work():
    hold.append([bytearray(3000) for _ in range(300)])
    ready.wait()
    go.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
ready.wait()
arenas = 0
for line in open('/proc/self/maps'):
    start, _, rest = line.partition('-')
    if int(start, 16) % (64 << 20) == 0 and line.split()[1].startswith('rw'):
        arenas += 1
go.set()
print(arenas)
"""


def _arenas(mode: str) -> int:
    env = {key: value for key, value in os.environ.items() if key != 'MALLOC_ARENA_MAX'}
    done = subprocess.run([sys.executable, '-c', _ARENAS_SCRIPT, mode], capture_output=True,
                          text=True, env=env, timeout=60, check=True)
    return int(done.stdout)


def test_limit_arenas_keeps_threads_to_two_arenas():
    assert _arenas('default') >= 3  # glibc's default: an arena for each busy thread
    assert _arenas('limit') <= 1    # the main arena and one more


def test_an_operators_malloc_arena_max_stands():
    assert not limit_arenas(environ={'MALLOC_ARENA_MAX': '4'})
