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
Each ``robot-memory`` command imports only what it uses (whole process, real start path).

The command runs as ``bin/robot-memory`` runs it, in a fresh interpreter under
``python -X importtime``, whose report names every module the process imported. A heavy
library a command does not need (numpy, sqlite-utils, cryptography, mcp, pandas) or a part
of this package it does not use is a failure: start-up time is what an LLM brain calling
the CLI every session pays (bench/bench_cli.py measures it).
"""

import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import new_entry
from robot_memory.rcan.schema import PeerBlock
from robot_memory.rcan.schema import PeerEntry
from support.paths import REPO

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 4, 1, 3, 0, tzinfo=UTC)
AT = '2026-04-01T03:00:00Z'
SCRIPT = REPO / 'bin' / 'robot-memory'
# rosbags: the [bags] extra, for robot-memory replay only.
HEAVY = {'numpy', 'pandas', 'sqlite_utils', 'cryptography', 'mcp', 'matplotlib', 'rclpy',
         'rosbags'}
# The parts of this package that only writing commands, the evidence database and the
# typed memory need.
WRITERS = {'robot_memory.dream.autodream', 'robot_memory.evidence.evidence_store',
           'robot_memory.evidence.rules', 'robot_memory.dream.distiller',
           'robot_memory.federation.peer_context', 'robot_memory.substrate.substrate_store'}


def imported(argv, env=None, stdin=None, expect=None) -> set:
    """
    Return the top-level packages and robot_memory modules imported by ``robot-memory *argv``.

    ``stdin`` is the command's standard input; ``expect``, text its standard output must hold.
    """
    run = subprocess.run([sys.executable, '-X', 'importtime', str(SCRIPT)] + list(argv),
                         capture_output=True, text=True, env=env, timeout=120, input=stdin)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    assert expect is None or expect in run.stdout, (run.stdout[-2000:], run.stderr[-3000:])
    names = set()
    for line in run.stderr.splitlines():
        if not line.startswith('import time:') or '|' not in line:
            continue
        name = line.rsplit('|', 1)[1].strip()
        if name == 'imported package':
            continue
        names.add(name if name.startswith('robot_memory') else name.split('.')[0])
    assert 'robot_memory.cli.main' in names, run.stderr[-3000:]
    return names


@pytest.fixture
def memory(tmp_path):
    """Return a small memory file written by the project's writer, and an environment for it."""
    document = new_document('RRN-000000000001', NOW)
    document.entries = [new_entry('hardware_observation', 'Left wheel encoder intermittent',
                                  0.9, NOW),
                        new_entry('environment_note', 'Kitchen doorway has a 3cm lip', 0.6,
                                  NOW)]
    path = tmp_path / 'robot-memory.md'
    path.write_bytes(render(document))
    env = dict(os.environ, HOME=str(tmp_path / 'home'), CASTOR_ROBOT_MEMORY_FILE=str(path))
    return path, env


def test_help_imports_no_library_beyond_the_standard_one(memory):
    _, env = memory
    names = imported(['--help'], env)
    assert not names & (HEAVY | {'pydantic', 'yaml'}), sorted(names & (HEAVY | {'pydantic'}))
    assert not names & WRITERS
    assert 'robot_memory.rcan.memory_file' not in names
    assert not {name for name in names if name.startswith('robot_memory.bags')}


def test_show_reads_a_file_of_the_writers_form_without_pyyaml_or_pydantic(memory):
    """Own entries and peer blocks as the writer writes them need neither PyYAML nor pydantic."""
    path, env = memory
    document = new_document('RRN-000000000001', NOW)
    document.entries = [new_entry('hardware_observation', 'Left wheel encoder intermittent',
                                  0.9, NOW)]
    document.peer_context = [PeerBlock(rrn='RRN-000000000002', last_synced=NOW, entries=[
        PeerEntry(id='mem-p1', type='environment_note', text='Wet floor after 18:00',
                  confidence=0.75, tags=['floor'])])]
    path.write_bytes(render(document))
    names = imported(['show', '--at', AT], env, expect='Wet floor after 18:00')
    assert 'robot_memory.rcan.memory_file' in names
    assert 'yaml' not in names
    # The file is checked in bulk against the schema's rules; the models are not needed.
    assert not names & {'pydantic', 'robot_memory.rcan.schema_models',
                        'robot_memory.rcan.lifecycle_config'}
    # An entry with a key of its own is validated by its model.
    path.write_bytes(render(document).replace(b'    confidence: 0.9\n',
                                              b'    confidence: 0.9\n    severity: 3\n'))
    names = imported(['show', '--at', AT], env, expect='Wet floor after 18:00')
    assert 'robot_memory.rcan.schema_models' in names


@pytest.mark.parametrize('command', [['show', '--at', AT], ['validate'], ['export', '--at', AT]])
def test_reading_commands_import_neither_the_database_nor_the_writers(memory, command):
    _, env = memory
    names = imported(command, env)
    assert 'robot_memory.rcan.memory_file' in names  # the command really ran
    assert not names & HEAVY, sorted(names & HEAVY)
    assert not names & WRITERS, sorted(names & WRITERS)
    assert not {name for name in names if name.startswith('robot_memory.bags')}, sorted(names)


def test_reading_with_the_nodes_parameters_file_stays_as_light(memory, tmp_path):
    _, env = memory
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    dream:\n      quiet_period_days: 2.0\n'
                      '    proposals:\n      agents: propose\n', encoding='utf-8')
    names = imported(['show', '--at', AT, '--config', str(config)], env)
    assert 'robot_memory.settings' in names  # the file was read
    assert not names & HEAVY, sorted(names & HEAVY)
    # The parameters include the peer federation policy, defined beside the merge rules.
    writers = WRITERS - {'robot_memory.federation.peer_context'}
    assert not names & writers, sorted(names & writers)


def test_commands_of_the_evidence_database_do_not_import_sqlite_utils(memory):
    """The evidence store, its migrations and the proposals queue run on plain sqlite3."""
    _, env = memory
    for command in (['dream', '--at', AT], ['history', 'mem-none']):
        names = imported(command, env)
        assert 'robot_memory.evidence.evidence_store' in names, command  # the database was opened
        assert 'sqlite_utils' not in names, command


@pytest.mark.parametrize('command', [['learn', 'The charging dock is in the hallway'],
                                     ['recall', 'charging dock'],
                                     ['forget', 'nothing like this', '--reason', 'test']])
def test_typed_memory_commands_do_not_load_the_memory_file_or_numpy(memory, command, tmp_path):
    _, env = memory
    # Keyword search needs no numpy; the semantic embedder (installed here) is turned off.
    env = dict(env, ROBOT_MEMORY_EMBEDDER='off')
    names = imported(command + ['--db', str(tmp_path / 'records.db'), '--at', AT], env)
    assert 'robot_memory.substrate.substrate_store' in names  # the command really ran
    # A new database included: its migrations are applied with plain sqlite3.
    assert not names & HEAVY, sorted(names & HEAVY)
    assert not names & {'robot_memory.rcan.memory_file', 'robot_memory.dream.autodream',
                        'robot_memory.evidence.rules', 'yaml'}, sorted(names)
    if command[0] != 'learn':  # reading and archiving build no record model
        assert 'pydantic' not in names, sorted(names)


def _records(path, texts):
    from robot_memory.substrate.substrate_store import Substrate
    with Substrate(path) as substrate:
        substrate.learn_many(texts, NOW)


DOCK = ['The charging dock in the hallway is blocked', 'The charging dock in the kitchen is wet',
        'The charging dock in the garage sticks', 'The charging dock in the study is dark',
        'The charging dock in the office is noisy', 'Carol takes her medication at 8 am']


@pytest.mark.parametrize('embedder', ['hashing', 'auto'])
def test_recall_that_keywords_settle_loads_no_embedding_model(memory, tmp_path, embedder):
    """At least k records hold every word of the query: no numpy, no onnxruntime."""
    _, env = memory
    db = tmp_path / 'records.db'
    _records(db, DOCK)
    names = imported(['recall', 'charging dock', '--db', str(db), '--at', AT],
                     dict(env, ROBOT_MEMORY_EMBEDDER=embedder), expect='charging dock')
    assert 'robot_memory.substrate.substrate_store' in names
    assert not names & {'numpy', 'onnxruntime', 'tokenizers', 'pydantic'}, sorted(names)
    assert not names & HEAVY, sorted(names & HEAVY)


def test_recall_that_keywords_do_not_settle_uses_vectors(memory, tmp_path):
    """Fewer than k records hold every word (here a paraphrase): the embedder is loaded."""
    _, env = memory
    db = tmp_path / 'records.db'
    _records(db, DOCK)
    names = imported(['recall', 'where does the robot recharge', '--db', str(db), '--at', AT],
                     dict(env, ROBOT_MEMORY_EMBEDDER='hashing'))
    assert 'numpy' in names
    names = imported(['recall', 'charging dock', '-k', '6', '--db', str(db), '--at', AT],
                     dict(env, ROBOT_MEMORY_EMBEDDER='hashing'), expect='charging dock')
    assert 'numpy' in names


INITIALIZE = json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
                         'params': {'protocolVersion': '2025-06-18', 'capabilities': {},
                                    'clientInfo': {'name': 'test', 'version': '1'}}}) + '\n'


def test_mcp_answers_initialize_without_the_sdk_pydantic_or_the_database(memory, tmp_path):
    _, env = memory
    names = imported(['mcp', '--db', str(tmp_path / 'records.db')], env, stdin=INITIALIZE,
                     expect='"serverInfo"')
    assert 'robot_memory.mcp.mcp_server' in names
    assert not names & (HEAVY | {'pydantic', 'yaml', 'onnxruntime', 'tokenizers', 'anyio'}), \
        sorted(names & (HEAVY | {'pydantic', 'yaml', 'onnxruntime', 'anyio'}))
    assert not names & (WRITERS | {'robot_memory.rcan.memory_file',
                                   'robot_memory.substrate.models'})
    assert not (tmp_path / 'records.db').exists()  # opened at the first tool call


def test_vectors_still_load_numpy_when_asked(memory, tmp_path):
    _, env = memory
    names = imported(['recall', 'charging dock', '--vectors', '--db',
                      str(tmp_path / 'records.db'), '--at', AT], env)
    assert 'numpy' in names


def test_memory_node_does_not_import_the_bags_extra(tmp_path):
    """The node's module and everything it imports at start-up leave rosbags alone."""
    code = ('import sys; import robot_memory.ros.node; '
            'print(sorted(m for m in sys.modules '
            "if m.startswith(('rosbags', 'robot_memory.bags'))))")
    # From elsewhere than the checkout: the built package, with its generated messages.
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == '[]'
