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

"""The dream's intent record: one writer, one reader, and records left by the untyped writer."""

import datetime as dt
import json

import pytest

from robot_memory.cli import main as cli
from robot_memory.common.timeutil import UTC
from robot_memory.dream import autodream
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.intent import DreamIntent
from robot_memory.rcan.memory_file import read_last_updated
from support.dream_scenario import morning
from support.dream_scenario import Robot
from support.paths import REPO

UNTYPED = json.loads((REPO / 'test' / 'data' / 'untyped_intents.json').read_text('utf-8'))
AT = dt.datetime(2026, 5, 2, 2, 0, tzinfo=UTC)


def killed(self, intent):
    raise KeyboardInterrupt('killed between the file write and the database commit')


def leave_intent(store, text: str) -> None:
    """Replace the pending intent record by ``text``, as an older version would have left it."""
    old = json.loads(text)
    with store.db.conn:
        store.db.execute('INSERT OR REPLACE INTO pending_dream (id, token, at, file_hash, '
                         'payload) VALUES (1, ?, ?, ?, ?)',
                         (old['token'], old['at'], old['file_hash'], text))


def test_every_kind_round_trips_through_its_one_writer_and_reader():
    intents = [
        DreamIntent(kind='dream', token='t1', at=AT, actor='autodream', file_hash='h',
                    first_id=3, last_id=9, audit=[['mem-1', 'create', 'why', '{}']],
                    signatures=[['sig', 'diagnostic', 'key', '', 'mem-1', 'x', 1.0, 2.0, 4, 0,
                                 '{}']], sources=[['key', 2.0, None, None]],
                    snapshot=[['mem-1', '{"id": "mem-1"}']], snapshot_deleted=['mem-0'],
                    report={'created': ['mem-1']}),
        DreamIntent(kind='prune', token='t2', at=AT, actor='cli', file_hash='h',
                    prior_hash='p', audit=[['mem-1', 'prune', 'why', '{}']],
                    snapshot_deleted=['mem-1']),
        DreamIntent(kind='undo', token='t3', at=AT, actor='cli', file_hash='h', prior_hash=None,
                    file_changed=False, reason='wrong', label='before dream 2',
                    point={'label': 'before dream 2'}, manual=[['mem-1', None, '{}']],
                    changes=[['mem-2', '{}', None]]),
    ]
    for intent in intents:
        assert DreamIntent.from_json(intent.to_json()) == intent
    prune = json.loads(intents[1].to_json())
    assert sorted(prune) == ['actor', 'at', 'audit', 'file_changed', 'file_hash', 'kind',
                             'prior_hash', 'snapshot_deleted', 'token']
    assert prune['at'] == '2026-05-02T02:00:00Z'


@pytest.mark.parametrize('text, reason', [
    ('[1, 2]', 'not a JSON object'),
    ('{"kind": "nap", "token": "t"}', "kind 'nap'"),
    ('{"kind": "prune", "token": "t", "at": "2026-05-02T02:00:00Z", "actor": "cli", '
     '"file_hash": "h", "audit": []}', 'prune lacks snapshot_deleted'),
    ('{"kind": "prune", "token": "t", "at": "2026-05-02T02:00:00Z", "actor": "cli", '
     '"file_hash": "h", "audit": {}, "snapshot_deleted": []}', 'audit holds dict'),
    ('{"token": "t"', 'not JSON'),
])
def test_a_damaged_intent_record_is_refused_with_what_is_wrong(text, reason):
    with pytest.raises(ValueError, match=reason):
        DreamIntent.from_json(text)


def killed_in_its_first_dream(tmp_path, monkeypatch) -> 'Robot':
    """Return a robot whose first dream wrote the file and died before committing."""
    robot = Robot(tmp_path / 'robot')
    robot.fault(0)
    monkeypatch.setattr(EvidenceStore, 'commit_dream', killed)
    with pytest.raises(KeyboardInterrupt):
        robot.dream(0)
    monkeypatch.undo()
    return robot


def test_a_dream_intent_left_by_the_untyped_writer_is_completed(tmp_path, monkeypatch):
    robot = killed_in_its_first_dream(tmp_path, monkeypatch)
    old = json.loads(UNTYPED['dream'])
    assert 'kind' not in old
    assert autodream.file_hash(robot.memory.path.read_bytes()) == old['file_hash']
    leave_intent(robot.store, UNTYPED['dream'])

    with robot.memory.lock():
        assert autodream.recover(robot.store, robot.memory) == 'completed'
    assert robot.store.pending_dream() is None
    entry_id, = old['report']['created']
    dream_log, = robot.store.dreams()
    assert dream_log['report']['created'] == [entry_id] and dream_log['actor'] == 'autodream'
    assert [record.action for record in robot.store.history(entry_id)] == ['create']
    assert robot.store.snapshot().keys() == {entry_id}
    cursor = robot.store.dream_cursor()
    assert (cursor.last_id, cursor.last_dream_at, cursor.file_hash) == (80, AT, old['file_hash'])
    report = robot.dream(1)
    assert report.manual == [] and report.created == []
    robot.close()


def test_a_prune_intent_left_by_the_untyped_writer_is_completed_by_the_next_dream(
        tmp_path, monkeypatch):
    robot = Robot(tmp_path / 'robot')
    robot.fault(0)
    entry_id, = robot.dream(0).created
    monkeypatch.setattr(EvidenceStore, 'commit_dream', killed)
    with pytest.raises(KeyboardInterrupt):
        cli.main(['prune', '--file', str(robot.memory.path), '--at', morning(120).isoformat()])
    monkeypatch.undo()
    old = json.loads(UNTYPED['prune'])
    assert autodream.file_hash(robot.memory.path.read_bytes()) == old['file_hash']
    leave_intent(robot.store, UNTYPED['prune'])

    report = robot.dream(121)
    assert report.recovered == 'completed' and report.manual == []
    assert [(record.action, record.actor) for record in robot.store.history(entry_id)] == [
        ('create', 'autodream'), ('prune', 'cli')]
    assert entry_id not in robot.store.snapshot()
    robot.close()


def test_an_intent_whose_file_was_edited_after_writing_is_known_by_its_last_updated(
        tmp_path, monkeypatch):
    robot = killed_in_its_first_dream(tmp_path, monkeypatch)
    # A person edits the file before the recovery, writing last_updated in a form of their
    # own (plain, with a comment): still the time of the dream that wrote it.
    text = robot.memory.path.read_text('utf-8')
    edited = text.replace('last_updated: "2026-05-02T02:00:00Z"',
                          'last_updated: 2026-05-02 02:00:00+00:00  # by hand')
    assert edited != text
    robot.memory.path.write_text(edited.replace('dropped 12 ticks', 'dropped ticks'), 'utf-8')
    with robot.memory.lock():
        assert autodream.recover(robot.store, robot.memory) == 'completed'
    robot.close()


@pytest.mark.parametrize('data, expected', [
    (b'---\nschema_version: "1.0"\nlast_updated: "2026-05-02T02:00:00Z"\n---\n', AT),
    (b'---\nlast_updated: 2026-05-02T04:00:00+02:00 # hand\r\nentries: []\n---\n', AT),
    (b'---\nlast_updated: "2026-05-02T02:00:00"\n---\nbody\n', AT),
    (b'---\nentries:\n  - text: "last_updated: x"\n---\n', None),
    (b'---\n  last_updated: "2026-05-02T02:00:00Z"\n---\n', None),
    (b'---\nlast_updated: "yesterday"\n---\n', None),
    (b'---\nlast_updated: [1, 2\n---\n', None),
    (b'---\nlast_updated: "2026-05-02T02:00:00Z"\n', None),
    (b'# notes without front matter\nlast_updated: "2026-05-02T02:00:00Z"\n', None),
])
def test_read_last_updated_reads_the_top_level_key_only(data, expected):
    assert read_last_updated(data) == expected
