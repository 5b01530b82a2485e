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
The memory-quality benchmark run from bags gives the memory of its direct run.

``bench/bench_quality.py --from-bag FORMAT`` writes a profile's stream into a bag and
takes it through ``robot-memory replay``'s code; its figures (all but the timings, and
the database's size, which also holds what each message was) and the entries of the
memory it builds must be those of the direct run of the same stream.
"""

import importlib.util
import os

import pytest

from robot_memory.rcan.memory_file import MemoryFile
from support.paths import REPO

TIMINGS = ('ingest_rate', 'dream_s', 'dream_s_max', 'baseline_s', 'dream_ratio', 'from_bag')


def bench_quality():
    """Return bench/bench_quality.py as a module."""
    spec = importlib.util.spec_from_file_location('bench_quality',
                                                  REPO / 'bench' / 'bench_quality.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entries(path, at) -> list:
    """Return a memory's entries as (text, type, observations, first seen, last reinforced)."""
    document = MemoryFile(path).load(at).document
    return sorted((entry.text, entry.type, entry.observation_count, str(entry.first_seen),
                   str(entry.last_reinforced)) for entry in document.entries)


@pytest.mark.parametrize('fmt', ['mcap', 'sqlite3', 'ros1'])
def test_a_profile_from_a_bag_gives_the_figures_and_entries_of_the_direct_run(tmp_path, fmt):
    bench = bench_quality()
    zone = os.environ.get('TZ')
    direct = bench.run_profile('turtlebot4_lite', 2, 120.0, tmp_path)
    from_bag = bench.run_profile_from_bag('turtlebot4_lite', 2, 120.0, tmp_path, fmt)
    assert os.environ.get('TZ') == zone  # the profile's clock is put back
    assert from_bag['from_bag'] == fmt
    # A replay also keeps what each message was (replay_seen, issue 35 point 1): its
    # database grows by that, about 20 bytes a message, and by nothing else.
    sizes = ('evidence_bytes_per_day', 'ratio')
    same = {key: value for key, value in direct.items() if key not in TIMINGS + sizes}
    assert {key: value for key, value in from_bag.items() if key not in TIMINGS + sizes} == same
    extra = from_bag['evidence_bytes_per_day'] - direct['evidence_bytes_per_day']
    assert 0 <= extra <= 32 * direct['n'] / 2, (extra, direct['n'])
    assert direct['n'] > 0 and direct['by_cause']
    at = bench.START.replace(day=bench.START.day + 3)
    at = bench.generate.local_midnight(bench.generate.load('turtlebot4_lite'), at)
    assert entries(tmp_path / f'turtlebot4_lite-{fmt}.md', at) == \
        entries(tmp_path / 'turtlebot4_lite.md', at) != []
