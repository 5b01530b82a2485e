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
Encryption at rest of sensitive typed records (selective-learning RFC §15.9).

Real SQLite files, real key files, real AES-GCM: the bytes on disk (database and WAL) are
searched for what was learned; the key is moved, replaced and rotated as an operator would.
"""

import json
import os
import pathlib
import shutil
import sqlite3
import stat
import subprocess
import sys

import pytest

from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.memory_file import render
from robot_memory.settings_file import validate_parameters
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from robot_memory.substrate.crypto import default_key_path
from robot_memory.substrate.crypto import new_key
from robot_memory.substrate.crypto import write_key_file
from robot_memory.substrate.embedding import HashingEmbedder
from robot_memory.substrate.errors import KeyUnavailable
from robot_memory.substrate.sealing import Sealing
from support.cli import run
from support.processes import child_env
from support.samples import leaks
from support.samples import NOW

AT = '2026-04-01T12:00:00Z'
SECRET = 'Ben Okafor takes warfarin every evening at nine'
WORDS = ('Okafor', 'warfarin')


def disk_bytes(directory: pathlib.Path) -> bytes:
    """Every byte of every file in ``directory`` except the key file: db, -wal, -shm."""
    return b''.join(path.read_bytes() for path in sorted(directory.iterdir())
                    if path.is_file() and not path.name.endswith('.key'))


@pytest.fixture
def db(tmp_path):
    """Return a database path of its own directory (the key file goes beside it)."""
    directory = tmp_path / 'memory'
    directory.mkdir()
    return directory / 'robot-memory.db'


def test_sensitive_phrase_is_not_in_the_database_nor_its_wal_and_recall_finds_it(db):
    with Substrate(db, embedder=HashingEmbedder(), encrypt_from='high') as substrate:
        secret = substrate.learn(SECRET, now=NOW, sensitivity='high', tags=['medication'],
                                 context={'person': 'Ben Okafor'})
        plain = substrate.learn('The charging dock is in the hallway', now=NOW)
        # While the store is open its WAL holds the latest pages: both files are read.
        assert (db.parent / 'robot-memory.db-wal').exists()
        data = disk_bytes(db.parent)
        assert leaks(data, WORDS) == []
        assert b'medication' not in data
        assert leaks(data, ('hallway',)) == ['hallway']  # the search itself can find text
        hits = substrate.recall('warfarin evening', now=NOW, trust='high')
        assert hits.ids() == [secret.record_id]
        assert hits.hits[0].text == SECRET
        assert hits.hits[0].tags == ['medication']
        assert hits.hits[0].context == {'person': 'Ben Okafor'}
        assert hits.sealed_withheld == 0 and hits.notice == ''
        assert substrate.get(secret.record_id).text == SECRET
        # The indexes hold nothing of it: no FTS match, no vector.
        conn = substrate.db.conn
        assert conn.execute('SELECT count(*) FROM substrate_fts WHERE substrate_fts MATCH '
                            "'warfarin OR medication'").fetchone()[0] == 0
        assert conn.execute('SELECT embedding FROM substrate_records WHERE id = ?',
                            (secret.record_id,)).fetchone()[0] is None
        assert conn.execute('SELECT embedding FROM substrate_records WHERE id = ?',
                            (plain.record_id,)).fetchone()[0] is not None
        substrate.reindex_vectors()
        assert conn.execute('SELECT embedding FROM substrate_records WHERE id = ?',
                            (secret.record_id,)).fetchone()[0] is None
    assert leaks(disk_bytes(db.parent), WORDS) == []


def test_only_records_at_or_above_the_level_are_encrypted_and_the_key_is_0600(db):
    with Substrate(db, encrypt_from='medium') as substrate:
        substrate.learn('The lift to floor two is slow on Mondays', now=NOW, sensitivity='low')
        substrate.learn('Visitor badge office closes at five', now=NOW, sensitivity='medium')
        sealed = substrate.db.conn.execute(
            'SELECT sensitivity FROM substrate_records WHERE key_id IS NOT NULL').fetchall()
    assert sealed == [('medium',)]
    key = default_key_path(db)
    assert key == db.parent / 'robot-memory.key'
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    data = disk_bytes(db.parent)
    assert leaks(data, ('Mondays', 'badge')) == ['Mondays']
    assert key.read_text().split()[1].encode() not in data  # the key never reaches the db


def test_trust_gating_still_applies_to_encrypted_records(db):
    with Substrate(db, encrypt_from='high') as substrate:
        substrate.learn(SECRET, now=NOW, sensitivity='high')
        redacted = substrate.recall('warfarin', now=NOW, trust='medium')
        assert redacted.redacted == 1 and redacted.hits[0].text.startswith('[redacted')
        withheld = substrate.recall('warfarin', now=NOW, trust='low')
        assert withheld.hits == [] and withheld.withheld == 1


def test_duplicate_check_and_fact_conflicts_work_for_encrypted_records(db):
    with Substrate(db, encrypt_from='high') as substrate:
        first = substrate.learn(SECRET, now=NOW, sensitivity='high', type='episodic')
        again = substrate.learn(SECRET.lower() + ' ', now=NOW, sensitivity='high',
                                type='episodic')
        assert again.action == 'reinforced' and again.match == 'exact'
        assert again.record_id == first.record_id
        note = substrate.learn('Ben Okafor prefers the quiet table by the garden window',
                               now=NOW, sensitivity='high', type='working', tags=['seating'])
        near = substrate.learn('Ben Okafor prefers the quiet table by the garden window today',
                               now=NOW, sensitivity='high', type='working', tags=['ben'])
        assert near.action == 'reinforced' and near.match == 'jaccard'
        assert near.record_id == note.record_id
        assert substrate.get(note.record_id).tags == ['seating', 'ben']  # merged, still sealed
        code = substrate.learn("Ben's door code is 4412", type='semantic', now=NOW,
                               sensitivity='high', single_valued=True)
        same = substrate.learn("Ben's door code is 4412", type='semantic', now=NOW,
                               sensitivity='high', single_valued=True)
        assert same.action == 'reinforced' and same.record_id == code.record_id
        new = substrate.learn("Ben's door code is 9051", type='semantic', now=NOW,
                              sensitivity='high', single_valued=True)
        assert new.action == 'superseded' and new.replaced == [code.record_id]
        assert substrate.get(code.record_id).status == 'superseded'
        assert substrate.get(code.record_id).payload.revision.superseded_by == new.record_id
        assert substrate.count(status='active', type='semantic') == 1
    assert leaks(disk_bytes(db.parent), ('4412', '9051', 'garden', 'seating')) == []


def test_without_the_key_encrypted_records_are_withheld_with_a_reason(db):
    with Substrate(db, encrypt_from='high') as substrate:
        secret = substrate.learn(SECRET, now=NOW, sensitivity='high')
        substrate.learn('The charging dock is in the hallway', now=NOW)
    key = default_key_path(db)
    key.rename(db.parent / 'elsewhere.key')
    with Substrate(db, encrypt_from='high') as substrate:
        result = substrate.recall('warfarin', now=NOW, trust='hyper')
        assert result.hits == [] and result.sealed_withheld == 1
        assert str(key) in result.notice and 'missing' in result.notice
        assert '1 encrypted record withheld' in result.notice
        assert 'put the right key file back' in result.notice
        assert [record.text for record in substrate.all_records(NOW)] == [
            'The charging dock is in the hallway']
        status = substrate.sealed_status()
        assert status['sealed'] == 1 and status['withheld'] == 1
        with pytest.raises(KeyUnavailable, match='is encrypted and cannot be opened'):
            substrate.get(secret.record_id)
        with pytest.raises(KeyUnavailable, match='missing'):
            substrate.supersede(secret.record_id, NOW, 'fix', text='changed')
        with pytest.raises(KeyUnavailable,
                           match='cannot store the record encrypted: the key file .* is missing'):
            substrate.learn('Ben Okafor has a pacemaker', now=NOW, sensitivity='high')
        assert not key.exists()  # a new key is never made while records need the old one
        substrate.learn('Low things still work', now=NOW)
        # Archiving and deleting need no key: an operator can always remove a record.
        substrate.forget(secret.record_id, 'wrong person', NOW)
        with pytest.raises(KeyUnavailable, match='cannot be opened'):
            substrate.forget(secret.record_id, 'back', NOW, restore=True)
        substrate.forget(secret.record_id, 'gone', NOW, hard=True)
        assert substrate.sealed_status()['sealed'] == 0


def test_a_wrong_key_is_a_clear_error_not_a_crash(db):
    with Substrate(db, encrypt_from='high') as substrate:
        substrate.learn(SECRET, now=NOW, sensitivity='high')
    key = default_key_path(db)
    key.unlink()
    write_key_file(key, new_key())
    with Substrate(db, encrypt_from='high') as substrate:
        result = substrate.recall('warfarin', now=NOW, trust='hyper')
        assert result.hits == [] and result.sealed_withheld == 1
        assert 'wrong key file' in result.notice
        with pytest.raises(KeyUnavailable, match='records are encrypted under key'):
            substrate.learn('Another secret about Ben', now=NOW, sensitivity='high')
    key.write_text('not a key\n')
    with Substrate(db) as substrate:
        assert 'not a robot-memory key file' in substrate.recall('warfarin', now=NOW).notice
    key.chmod(0o644)
    with Substrate(db) as substrate:
        assert 'readable by others' in substrate.recall('warfarin', now=NOW).notice


def test_the_ciphertext_is_bound_to_its_record_id(db):
    with Substrate(db, encrypt_from='high') as substrate:
        first = substrate.learn(SECRET, now=NOW, sensitivity='high')
        second = substrate.learn('The garden gate code is 1234', now=NOW, sensitivity='high')
    conn = sqlite3.connect(db)
    with conn:
        conn.execute('UPDATE substrate_records SET sealed = (SELECT sealed FROM '
                     'substrate_records WHERE id = ?) WHERE id = ?',
                     (first.record_id, second.record_id))
    conn.close()
    with Substrate(db) as substrate:
        with pytest.raises(KeyUnavailable, match='failed authentication'):
            substrate.get(second.record_id)
        assert substrate.get(first.record_id).text == SECRET
        result = substrate.recall('gate code', now=NOW, trust='hyper')
        assert result.hits == [] and 'failed authentication' in result.notice


def test_rotate_key_re_encrypts_every_record_in_one_audited_step(db):
    with Substrate(db, encrypt_from='high') as substrate:
        ids = [substrate.learn(text, now=NOW, sensitivity='high').record_id for text in
               (SECRET, "Ben's door code is 4412", 'Ben Okafor visits on Tuesdays')]
        substrate.forget(ids[2], 'old', NOW)  # archived records are rotated too
        before = dict(substrate.db.conn.execute('SELECT id, sealed FROM substrate_records'))
        old_key = default_key_path(db).read_bytes()
        result = substrate.rotate_key(NOW, actor='test')
        assert result['records'] == 3 and result['old_key_id'] != result['new_key_id']
        after = dict(substrate.db.conn.execute('SELECT id, sealed FROM substrate_records'))
        assert all(after[record_id] != before[record_id] for record_id in ids)
        assert {name for name, in substrate.db.conn.execute(
            'SELECT key_id FROM substrate_records')} == {result['new_key_id']}
        assert substrate.recall('warfarin', now=NOW, trust='hyper').ids() == [ids[0]]
        again = substrate.learn(SECRET, now=NOW, sensitivity='high')
        assert again.action == 'reinforced' and again.record_id == ids[0]  # digests rekeyed
        audit = substrate.history('substrate:key')
        assert [(entry.action, entry.actor) for entry in audit] == [('rotate-key', 'test')]
        assert audit[0].detail['records'] == 3
    key = default_key_path(db)
    assert key.read_bytes() != old_key and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert sorted(path.name for path in db.parent.glob('*.key*')) == ['robot-memory.key']
    # The old key no longer opens anything.
    key.unlink()
    key.write_bytes(old_key)
    key.chmod(0o600)
    with Substrate(db) as substrate:
        assert 'wrong key file' in substrate.recall('warfarin', now=NOW).notice


def test_an_interrupted_rotation_changes_nothing(db, monkeypatch):
    with Substrate(db, encrypt_from='high') as substrate:
        for text in (SECRET, 'The garden gate code is 1234'):
            substrate.learn(text, now=NOW, sensitivity='high')
        before = list(substrate.db.conn.execute('SELECT id, sealed, key_id, content_hash '
                                                'FROM substrate_records ORDER BY seq'))
        old_key = default_key_path(db).read_bytes()
        calls = []
        real = Sealing.reseal_under

        def fail_on_second(self, conn, row, key):
            calls.append(row['id'])
            if len(calls) == 2:
                raise OSError(28, 'No space left on device')
            return real(self, conn, row, key)

        monkeypatch.setattr(Sealing, 'reseal_under', fail_on_second)
        with pytest.raises(OSError):
            substrate.rotate_key(NOW)
        monkeypatch.undo()
        assert list(substrate.db.conn.execute('SELECT id, sealed, key_id, content_hash '
                                              'FROM substrate_records ORDER BY seq')) == before
        assert substrate.history('substrate:key') == []
        assert substrate.recall('warfarin', now=NOW, trust='hyper').hits
    assert default_key_path(db).read_bytes() == old_key
    assert sorted(path.name for path in db.parent.glob('*.key*')) == ['robot-memory.key']


def test_rotate_key_refuses_when_an_earlier_rotation_left_files(db):
    with Substrate(db, encrypt_from='high') as substrate:
        with pytest.raises(SubstrateError, match='no record is encrypted'):
            substrate.rotate_key(NOW)
        substrate.learn(SECRET, now=NOW, sensitivity='high')
        shutil.copy(default_key_path(db), db.parent / 'robot-memory.key.bak')
        with pytest.raises(SubstrateError, match='did not finish'):
            substrate.rotate_key(NOW)


def test_the_key_lives_beside_the_federation_key_when_one_is_set(tmp_path):
    keys = tmp_path / 'keys'
    assert default_key_path(tmp_path / 'm.db', keys / 'robot.pem') == (
        keys / 'memory-encryption.key')
    assert default_key_path(tmp_path / 'm.db') == tmp_path / 'm.key'


def test_the_node_parameters_validate_the_encryption_settings():
    settings = validate_parameters({'substrate_encrypt_from': 'high',
                                    'substrate_key_file': '/etc/robot/m.key'})
    assert settings.node.substrate_encrypt_from == 'high'
    with pytest.raises(ValueError, match='substrate_encrypt_from.*not one of'):
        validate_parameters({'substrate_encrypt_from': 'secret'})
    with pytest.raises(SubstrateError, match='not one of'):
        Substrate(':memory:', encrypt_from='secret')
    with pytest.raises(SubstrateError, match='needs key_file'):
        Substrate(':memory:', encrypt_from='high')


def test_the_command_line_encrypts_from_its_config_file_and_rotates_the_key(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    keys = tmp_path / 'keys'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n'
                      f'    federation:\n      private_key_path: "{keys / "robot.pem"}"\n')
    common = ['--file', str(memory), '--config', str(config), '--at', AT]
    code, out, _ = run(capsys, 'learn', SECRET, '--sensitivity', 'high', *common)
    assert code == 0 and out.startswith('created ')
    key = keys / 'memory-encryption.key'
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert leaks(disk_bytes(tmp_path), WORDS) == []
    code, out, _ = run(capsys, 'recall', 'warfarin', '--trust', 'high', *common)
    assert code == 0 and SECRET in out
    code, out, _ = run(capsys, 'rotate-key', '--json', *common)
    assert code == 0 and json.loads(out)['records'] == 1
    code, out, _ = run(capsys, 'recall', 'warfarin', '--trust', 'high', *common)
    assert code == 0 and SECRET in out
    # Without --config the key is looked for beside the database: withheld, with the reason.
    code, out, err = run(capsys, 'recall', 'warfarin', '--trust', 'high', '--file',
                         str(memory), '--at', AT)
    assert code == 1 and SECRET not in out
    assert '1 encrypted record withheld' in err and 'robot-memory.key is missing' in err
    code, out, err = run(capsys, 'export-rlm', str(tmp_path / 'out'), '--file', str(memory),
                         '--at', AT)
    assert code == 0 and '1 encrypted record withheld' in err
    assert leaks(b''.join(path.read_bytes() for path in (tmp_path / 'out').rglob('*')
                          if path.is_file()), WORDS) == []
    os.rename(key, tmp_path / 'lost.key')
    code, _, err = run(capsys, 'rotate-key', *common)
    assert code != 0 and 'missing' in err


def test_forget_by_query_finds_encrypted_records_and_kept_replies_stay_encrypted(db):
    with Substrate(db, encrypt_from='high') as substrate:
        secret = substrate.learn(SECRET, now=NOW, sensitivity='high')
        reply = substrate.once('req-1', 'forget', {'query': 'warfarin'}, NOW, lambda: {
            'message': substrate.forget('warfarin evening', 'wrong person', NOW,
                                        actor='test').message})
        assert secret.record_id in reply['message'] and 'warfarin' in reply['message']
        assert substrate.get(secret.record_id).status == 'archived'
        again = substrate.once('req-1', 'forget', {'query': 'warfarin'}, NOW, lambda: {})
        assert again == {**reply, 'replayed': True}
        assert leaks(disk_bytes(db.parent), WORDS) == []
        restored = substrate.forget('warfarin', 'right person after all', NOW, restore=True)
        assert restored.ids == [secret.record_id]


def test_encryption_benchmark_quick_run_prints_json_lines():
    repo = pathlib.Path(__file__).resolve().parents[2]
    env = child_env()
    run = subprocess.run([sys.executable, str(repo / 'bench' / 'bench_encryption.py'),
                          '--quick'], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=240)
    assert run.returncode == 0, run.stderr
    records = {record['bench']: record for record in map(json.loads, run.stdout.splitlines())}
    assert set(records) == {'learn_sealed', 'recall_sealed', 'recall_first', 'rotate_key'}
    for record in records.values():
        figure = record.get('ms', record.get('p50_ms'))
        baseline = record.get('baseline_ms', record.get('baseline_p50_ms'))
        assert figure > 0 and baseline > 0 and record['ratio'] > 0, record
    assert records['rotate_key']['n'] == records['recall_sealed']['sealed']


def test_stats_shows_the_encrypted_records_and_what_is_withheld(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    memory.write_bytes(render(new_document('RRN-000000000001', NOW)))
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n')
    common = ['--file', str(memory), '--config', str(config), '--at', AT]
    assert run(capsys, 'learn', SECRET, '--sensitivity', 'high', *common)[0] == 0
    code, out, _ = run(capsys, 'stats', *common)
    assert code == 0
    assert (f'substrate encryption: high and above; 1 records encrypted, key file '
            f'{tmp_path / "robot-memory.key"}') in out
    (tmp_path / 'robot-memory.key').unlink()
    code, out, _ = run(capsys, 'stats', '--json', *common)
    encryption = json.loads(out)['substrate']['encryption']
    assert encryption['sealed'] == 1 and encryption['withheld'] == 1
    assert 'is missing' in encryption['notice']


def test_a_proposed_sensitive_learn_is_stored_encrypted_once_approved(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n'
                      '    proposals:\n      agents: propose\n')
    common = ['--file', str(memory), '--config', str(config), '--at', AT]
    with Substrate(tmp_path / 'robot-memory.db', key_file=tmp_path / 'robot-memory.key',
                   encrypt_from='high') as substrate:
        substrate.learn('The pharmacy courier comes on Tuesdays', now=NOW, sensitivity='high')
    code, out, err = run(capsys, 'learn', SECRET, '--sensitivity', 'high', '--json', *common)
    assert code == 0, err
    # While it waits, the queue, its summary and the audit log hold nothing of the text...
    assert leaks(disk_bytes(tmp_path), WORDS) == []
    code, out, err = run(capsys, 'proposals', *common)
    assert code == 0 and 'encrypted at rest' in out and 'warfarin' not in out
    # ...and a key rotation meanwhile re-seals it, so it is still approved as it was asked.
    code, out, err = run(capsys, 'rotate-key', '--json', *common)
    assert code == 0, err
    code, out, err = run(capsys, 'approve', '--all', '--json', *common)
    assert code == 0, err
    assert leaks(disk_bytes(tmp_path), WORDS) == []
    with Substrate(tmp_path / 'robot-memory.db', key_file=tmp_path / 'robot-memory.key') as s:
        records = s.all_records(NOW)
        assert sorted(record.text for record in records) == [
            SECRET, 'The pharmacy courier comes on Tuesdays']
        assert s.sealed_status()['sealed'] == 2
