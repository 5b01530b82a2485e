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
The RCAN reference implementation (OpenCastor) reads every entry of the files we write.

OpenCastor's ``castor/brain/memory_schema.py`` is the peer to interoperate with. Its
package pulls in large dependencies (LLM clients, OpenCV, ...), none of which that
module uses, so the wheel is installed with ``--no-deps`` into a cache directory and
the one module is loaded from its file. PyPI must be reachable (it is on every
machine of this project); a failed install fails the test rather than skipping it.
Its loader returns an empty memory on any error, so each test counts the entries.
"""

import datetime as dt
import importlib.util
import pathlib
import subprocess
import sys

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.schema import new_entry

OPENCASTOR = 'opencastor==1!3.7.0'
NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=UTC)


@pytest.fixture(scope='session')
def castor_memory(tmp_path_factory):
    """Return OpenCastor's ``castor.brain.memory_schema`` module, loaded from the real wheel."""
    target = pathlib.Path(tmp_path_factory.getbasetemp()) / 'opencastor'
    module_path = target / 'castor' / 'brain' / 'memory_schema.py'
    if not module_path.exists():
        subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--no-deps',
                        '--target', str(target), OPENCASTOR], check=True, timeout=300,
                       capture_output=True)
    spec = importlib.util.spec_from_file_location('castor_memory_schema', module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def our_file(path: pathlib.Path, count: int = 50) -> list:
    """Write a memory file of ``count`` entries with robot_memory; return the entries."""
    document = new_document('RRN-000000000001', NOW)
    document.entries.append(new_entry('hardware_observation', 'Left wheel encoder '
                                      'intermittent under sustained load', 0.92, NOW,
                                      tags=['wheel', 'encoder']))
    taken = {entry.id for entry in document.entries}
    for index in range(count - 1):
        entry = new_entry('environment_note', f'doorway {index} has a 3 cm lip — slow to '
                          f'≤0.1 m/s; "quoted" words: {{braces}} #{index}', 0.25 + index / 100,
                          NOW, tags=['kitchen', f'door-{index}'], taken=taken)
        taken.add(entry.id)
        document.entries.append(entry)
    MemoryFile(path).save(document)
    return document.entries


def test_the_reference_reads_every_entry_we_write_in_block_style(castor_memory, tmp_path):
    path = tmp_path / 'robot-memory.md'
    entries = our_file(path)
    text = path.read_text(encoding='utf-8')
    assert f'\n  - id: "{entries[0].id}"\n    type: "hardware_observation"\n' in text
    loaded = castor_memory.load_memory(str(path))
    assert loaded.rrn == 'RRN-000000000001'
    assert [entry.id for entry in loaded.entries] == [entry.id for entry in entries]
    for theirs, ours in zip(loaded.entries, entries):
        assert theirs.text == ours.text and theirs.confidence == ours.confidence
        assert theirs.tags == ours.tags
        assert theirs.last_reinforced == ours.last_reinforced
        assert theirs.observation_count == ours.observation_count


def test_we_read_what_the_reference_writes_on_the_fast_path_and_keep_its_text(
        castor_memory, tmp_path):
    path = tmp_path / 'robot-memory.md'
    entries = our_file(path, 20)
    castor_memory.save_memory(castor_memory.load_memory(str(path)), str(path))
    written = path.read_bytes()
    result = MemoryFile(path).load(NOW)
    assert result.problems == []
    assert [entry.id for entry in result.document.entries] == [entry.id for entry in entries]
    assert [entry.text for entry in result.document.entries] == [
        entry.text for entry in entries]
    # Unchanged entries keep the reference's text (no flattening, no reformatting).
    with MemoryFile(path).update(NOW + dt.timedelta(hours=1)) as update:
        update.document.extra['site'] = 'north'
    rewritten = path.read_bytes()
    start = written.index(b'entries:\n')
    assert written[start:written.index(b'---\n', 4)] in rewritten
