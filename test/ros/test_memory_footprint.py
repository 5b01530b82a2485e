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
What memory_node holds per entry and per queued observation stays small.

The node keeps the parsed robot-memory.md (10,000 entries on a busy robot) and a backlog
of observations under a flood, so per-object overhead is resident memory the robot's
computer pays (bench/bench_node.py, ``rss``). These tests pin the two savings in place and
that they change no behaviour.
"""

import dataclasses
import datetime as dt
import sys
import tracemalloc

import pytest

from robot_memory.evidence import observations
from robot_memory.federation.peer_context import build_payload
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.rcan.lifecycle import band_counts
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.memory_file import parse_bytes
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import new_entry

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=UTC)


def loaded(count: int) -> list:
    """Return the entries of a ``count``-entry file, as the node's document cache reads them."""
    document = new_document('RRN-000000000001', NOW)
    taken = set()
    for index in range(count):
        entry = new_entry('hardware_observation', f'wheel encoder fault number {index}', 0.5,
                          NOW - dt.timedelta(minutes=index), tags=['wheel'], taken=taken)
        taken.add(entry.id)
        document.entries.append(entry)
    return parse_bytes(render(document), NOW).document.entries


def test_loaded_entries_share_one_fields_set():
    entries = loaded(200)
    assert len({id(entry.model_fields_set) for entry in entries}) == 1


def test_a_copy_with_changes_leaves_the_shared_fields_set_alone():
    entries = loaded(3)
    before = set(entries[0].model_fields_set)
    changed = entries[1].model_copy(update={'confidence': 0.9, 'note': 'extra key'})
    assert changed.confidence == 0.9 and changed.model_extra == {'note': 'extra key'}
    assert 'note' in changed.model_fields_set
    assert entries[0].model_fields_set == before and entries[2].model_fields_set == before
    assert entries[0].model_extra == {} and entries[2].model_extra == {}
    with pytest.raises(Exception):
        entries[0].confidence = 0.1  # frozen: nothing changes a shared set in place


def test_retained_bytes_per_loaded_entry():
    entries = None
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        entries = loaded(2000)
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    # Entry objects, their dicts, strings, datetimes and the raw line kept for the writer;
    # a set of field names per entry alone was ~730 bytes more.
    assert len(entries) == 2000
    assert held / 2000 < 1200, f'{held / 2000:.0f} bytes an entry'


@pytest.mark.parametrize('kind', [observations.DiagnosticObservation,
                                  observations.LogObservation,
                                  observations.TelemetryObservation])
def test_observations_have_no_per_object_dict(kind):
    fields = {field.name: field.type for field in dataclasses.fields(kind)}
    values = {name: NOW if name == 'stamp' else (0 if kind_of is int else '')
              for name, kind_of in fields.items() if name not in ('values', 'fields')}
    observation = kind(**values)
    assert not hasattr(observation, '__dict__')
    assert sys.getsizeof(observation) <= 120
    with pytest.raises(dataclasses.FrozenInstanceError):
        observation.stamp = NOW
    assert observation.source == {'DiagnosticObservation': 'diagnostic',
                                  'LogObservation': 'log',
                                  'TelemetryObservation': 'telemetry'}[kind.__name__]


def test_the_node_cache_keeps_no_source_lines_and_reads_the_same(tmp_path):
    from robot_memory.rcan.context import build_context
    from robot_memory.rcan.document_cache import DocumentCache
    from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
    from robot_memory.rcan.memory_file import MemoryFile
    from robot_memory.rcan.schema import PeerBlock
    from robot_memory.rcan.schema import PeerEntry
    document = new_document('RRN-000000000001', NOW)
    for index in range(50):
        document.entries.append(new_entry('environment_note', f'doorway lip number {index}',
                                          0.4 + index / 100, NOW))
    document.peer_context = [
        PeerBlock(rrn='RRN-000000000002', last_synced=NOW - dt.timedelta(days=1), entries=[
            PeerEntry(id=f'mem-p{index}', type='environment_note', text=f'wet floor {index}',
                      confidence=0.5 + index / 10, tags=['floor'] * (index % 2))
            for index in range(4)]),
        PeerBlock(rrn='RRN-000000000003', last_synced=NOW)]
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(render(document))
    memory = MemoryFile(path)
    cached = DocumentCache(memory, 'RRN-000000000001').document(NOW)
    loaded = memory.load(NOW).document
    assert not hasattr(cached, '_source_lines') and hasattr(loaded, '_source_lines')
    assert {type(entry).__name__ for entry in cached.entries} == {'EntryRecord'}
    assert cached.entries == loaded.entries and loaded.entries == cached.entries
    assert {type(block).__name__ for block in cached.peer_context} == {'PeerBlockRecord'}
    for block, read in zip(cached.peer_context, loaded.peer_context, strict=True):
        assert (block.rrn, block.last_synced, {}) == \
            (read.rrn, read.last_synced, read.__pydantic_extra__)
        assert block.entries == read.entries and read.entries == block.entries
        assert {type(entry).__name__ for entry in block.entries} <= {'EntryRecord'}
    assert build_context(cached, NOW, DEFAULT_CONFIG).text == \
        build_context(loaded, NOW, DEFAULT_CONFIG).text
    policy = FederationPolicy()
    assert build_payload(cached, NOW, policy) == build_payload(loaded, NOW, policy)
    assert band_counts(cached.entries, NOW, DEFAULT_CONFIG) == \
        band_counts(loaded.entries, NOW, DEFAULT_CONFIG)
    assert render(loaded) == path.read_bytes()
    with pytest.raises(TypeError, match='read_only'):  # the cached copy is never written
        render(cached)
    with pytest.raises(AttributeError, match='cannot be changed'):
        cached.entries[0].confidence = 1.0


def test_a_read_only_load_holds_far_less_than_a_full_one(tmp_path):
    from robot_memory.rcan.memory_file import MemoryFile
    document = new_document('RRN-000000000001', NOW)
    document.entries = [new_entry('hardware_observation', f'encoder {index} drops ticks on turns',
                                  0.3 + (index % 60) / 100, NOW) for index in range(3000)]
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(render(document))
    memory = MemoryFile(path)
    held = {}
    for read_only in (False, True):
        tracemalloc.start()
        kept = memory.load(NOW, read_only=read_only).document
        held[read_only] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(kept.entries) == 3000
        del kept
    assert held[True] < 0.6 * held[False], held


def test_a_read_only_load_keeps_each_tag_and_set_of_tags_once(tmp_path):
    from robot_memory.rcan.memory_file import MemoryFile
    document = new_document('RRN-000000000001', NOW)
    tag_sets = (['wheel', 'encoder'], ['lidar'], ['wheel', 'encoder'], [])
    document.entries = [new_entry('hardware_observation', f'encoder {index} drops ticks',
                                  0.5, NOW, tags=tag_sets[index % 4]) for index in range(400)]
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(render(document))
    entries = MemoryFile(path).load(NOW, read_only=True).document.entries
    assert {type(entry).__name__ for entry in entries} == {'EntryRecord'}
    assert [list(entry.tags) for entry in entries] == [tag_sets[index % 4]
                                                       for index in range(400)]
    # One object for each distinct tag and each distinct set of tags, not one an entry.
    assert len({id(tag) for entry in entries for tag in entry.tags}) == 3
    assert len({id(entry.tags) for entry in entries}) == 3
