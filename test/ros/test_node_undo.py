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
~/undo on a real memory_node in its own process: the restored block, the audit, redo.

The node learns an encoder fault from /diagnostics and dreams; a typed record is learned
over ~/learn; ~/undo of that dream then empties the context block (the service reply, the
latched topic and ~/get_context agree) and leaves the record (a dream never learned it),
and ~/undo of the undo puts the entry back. An entry a later dream reinforced is named and
kept unless the request sets force. Refusals come back as a reply, never as a dead service.
"""

import json
import sqlite3

import pytest

from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from robot_memory.srv import Learn
from robot_memory.srv import Recall
from robot_memory.srv import Undo
from support.ros_harness import FAST
from support.ros_harness import NodeProcess
from support.ros_probe import call
from support.ros_probe import latched_context
from support.ros_probe import publish_warnings
from support.ros_probe import wait_ready


@pytest.fixture(scope='module')
def dreamt(tmp_path_factory, probe):
    """Return a node that learned the encoder fault in one dream, then a typed record."""
    node = NodeProcess(tmp_path_factory.mktemp('undo'), 'it_undo', **FAST).start()
    try:
        wait_ready(probe, node)
        publish_warnings(probe, 250)
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request())
        assert reply.success and len(reply.created) == 1, reply.message
        learned = call(probe, Learn, f'{node.prefix}/learn',
                       Learn.Request(text='the charging dock moved to the hallway',
                                     type='semantic'))
        assert learned.success, learned.message
        yield node, reply, learned.id
    finally:
        node.stop()


def context(probe, node):
    return call(probe, GetContext, f'{node.prefix}/get_context',
                GetContext.Request(token_budget=0, include_peers=True))


def recall(probe, node):
    reply = call(probe, Recall, f'{node.prefix}/recall',
                 Recall.Request(query='charging dock', k=5))
    assert reply.success, reply.message
    return [record.id for record in reply.records]


def test_undo_of_the_dream_restores_the_block_and_redo_brings_it_back(dreamt, probe):
    node, dream, record_id = dreamt
    dream_id = json.loads(dream.report_json)['dream_id']
    entry_id = dream.created[0]
    assert [entry.id for entry in context(probe, node).entries] == [entry_id]
    assert recall(probe, node) == [record_id]

    dry = call(probe, Undo, f'{node.prefix}/undo', Undo.Request(dream_id=dream_id,
                                                                dry_run=True))
    assert dry.success and dry.undo_id == 0, dry.message
    assert f'would take back the changes of dream {dream_id}' in dry.message, dry.message
    assert dry.entries_changed == [entry_id] and dry.records_changed == []
    assert [entry.id for entry in context(probe, node).entries] == [entry_id]

    reply = call(probe, Undo, f'{node.prefix}/undo',
                 Undo.Request(dream_id=dream_id, reason='the encoder was unplugged on purpose',
                              actor='operator-anna'))
    assert reply.success and reply.undo_id == 1, reply.message
    assert reply.entries_changed == [entry_id] and reply.records_changed == []
    assert context(probe, node).entries == []
    assert latched_context(probe, node).entries == []
    assert recall(probe, node) == [record_id]  # learned after the dream, not by it
    with sqlite3.connect(node.memory_file.with_name('robot-memory.db')) as conn:
        rows = conn.execute("SELECT actor, reason, dream_id FROM audit WHERE action = 'undo'"
                            ).fetchall()
    assert rows == [('operator-anna', 'the encoder was unplugged on purpose (undo 1: the '
                     f'changes of dream {dream_id} ({json.loads(dream.report_json)["at"]}))',
                     None)]

    redo = call(probe, Undo, f'{node.prefix}/undo',
                Undo.Request(undo_id=reply.undo_id, reason='it was a real fault'))
    assert redo.success and redo.undo_id == 2, redo.message
    assert [entry.id for entry in context(probe, node).entries] == [entry_id]
    assert [entry.id for entry in latched_context(probe, node).entries] == [entry_id]
    assert recall(probe, node) == [record_id]


def test_undo_of_a_dream_keeps_an_entry_changed_since_unless_forced(dreamt, probe):
    node, dream, _ = dreamt
    dream_id = json.loads(dream.report_json)['dream_id']
    entry_id = dream.created[0]
    # A person rewords the entry in the file after the dream.
    text = node.memory_file.read_text()
    entry = next(entry for entry in context(probe, node).entries if entry.id == entry_id)
    node.memory_file.write_text(text.replace(entry.text, 'Encoder cable: check the clip'))
    kept = call(probe, Undo, f'{node.prefix}/undo',
                Undo.Request(dream_id=dream_id, reason='false fault'))
    assert kept.success and kept.undo_id == 0, kept.message
    assert kept.entries_changed == [] and kept.entries_kept == [entry_id]
    assert '1 kept because changed since' in kept.message, kept.message
    assert json.loads(kept.report_json)['kept'][0]['why'].startswith(
        'changed since by an edit by hand')
    assert [entry.text for entry in context(probe, node).entries] == [
        'Encoder cable: check the clip']
    forced = call(probe, Undo, f'{node.prefix}/undo',
                  Undo.Request(dream_id=dream_id, reason='false fault', force=True))
    assert forced.success and forced.entries_changed == [entry_id], forced.message
    assert forced.entries_kept == [] and context(probe, node).entries == []
    refused = call(probe, Undo, f'{node.prefix}/undo',
                   Undo.Request(to='2026-01-01T00:00:00Z', reason='x', force=True))
    assert not refused.success and 'force is for' in refused.message, refused.message


@pytest.mark.parametrize('request_fields, message', [
    ({'dream_id': 1}, 'reason'),
    ({'dream_id': 1, 'to': '2026-01-01T00:00:00Z', 'reason': 'x'}, 'name one restore point'),
    ({'to': 'last tuesday', 'reason': 'x'}, 'ISO 8601'),
    ({'dream_id': 99, 'reason': 'x'}, 'there is no dream 99'),
])
def test_a_bad_undo_request_is_refused_with_a_reason(dreamt, probe, request_fields, message):
    node, _, _ = dreamt
    reply = call(probe, Undo, f'{node.prefix}/undo', Undo.Request(**request_fields))
    assert not reply.success and message in reply.message, reply.message
    # Issue 26.9: a ROS caller is told the request fields, not the command line's flags.
    assert 'robot-memory' not in reply.message and '--' not in reply.message, reply.message


def test_undo_refusals_name_the_request_fields(dreamt, probe):
    node, _, _ = dreamt
    cases = {'the reason field': Undo.Request(dream_id=1),
             'dream_id': Undo.Request(reason='x'),
             "~/dream reply's report_json": Undo.Request(dream_id=99, reason='x')}
    for words, request in cases.items():
        reply = call(probe, Undo, f'{node.prefix}/undo', request)
        assert not reply.success and words in reply.message, reply.message
