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
Secrets are recognised, and a secret stored in plaintext is reported.

A table of texts that are secrets (PINs, passcodes, door and alarm codes, passwords in
other words, keys and tokens by their shape) and of texts that only look alike ("pin the
map", "code review", "error code 42"). Learned through ``robot-memory learn`` without
encryption at rest, a secret is stored ``high`` and the reply and ``stats`` say how to
encrypt it; with ``substrate_encrypt_from: high`` it is stored encrypted.
"""

import json
import sqlite3

import pytest

from robot_memory.substrate.textrules import looks_secret
from support.cli import run
from support.samples import leaks
from support.samples import SPEC_EXAMPLE

AT = '2026-04-01T12:00:00Z'
ISSUE_CASES = ['The maintenance door PIN is 4711', 'PIN: 4711', 'Door PIN 5523',
               'Passcode for the cabinet: 1357', 'The alarm code is 2468']
SECRETS = ISSUE_CASES + [
    'The wifi password is hunter2', 'my pin is 8812', 'pin: 4421', 'pin code 0000',
    'The SIM PIN is 1234', 'The gate code is 7788', 'The code for the safe is 31-12-99',
    'Combination to the padlock: 4-19-27', 'The lock combination is 12 34 56',
    'The keypad code changed to 9090', 'Unlock code 2580', 'The front door entry code is 1590',
    'Wi-Fi key: sunflower77', 'login: admin', 'pwd = hunter2',
    'The passphrase of the backup drive is blue-horse', "Ben's credentials are in the drawer",
    'The GitHub token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789',
    'AKIAIOSFODNN7EXAMPLE opens the bucket', 'Use sk-proj-Abc123Def456Ghi789Jkl012',
    'Authorization: Bearer abcdefghijklmnop1234',
    'The maps key is AIzaSyA-1234567890abcdefghijklmnopqrstu',
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N',
    '-----BEGIN OPENSSH PRIVATE KEY-----', 'The service key is Zx8KqL2mP9vT4nR7wY1cB6dF3hJ5gS0a']
NOT_SECRETS = [
    'Pin the map to the wall', 'The map is pinned above the desk',
    'GPIO pin 13 drives the bumper LED', 'The pin on the left connector is bent',
    'Pinpoint the dock on the map', 'Spin the brush slowly', 'The code review is on Friday',
    'Error code 42 means the lidar is dirty', 'Exit code 1 after the update',
    'The status code 404 means not found', 'The source code lives in src/',
    'The path planner code is in nav/', 'Scan the QR code on the door',
    'The barcode scanner is at the till', 'The fail-safe code path stops the motors',
    'The building code requires railings', 'Door 4 is locked at night', 'The door is open',
    'Pass the salt to Ben', 'The compass needs calibrating', 'Ben keeps his keys in the bowl',
    'Record 3f2c9a1e-4b5d-4c6e-8f70-1a2b3c4d5e6f was merged',
    'sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08']


@pytest.mark.parametrize('text', SECRETS)
def test_a_secret_is_recognised(text):
    assert looks_secret(text)


@pytest.mark.parametrize('text', NOT_SECRETS)
def test_a_text_that_only_looks_like_one_is_not(text):
    assert not looks_secret(text)


def stored(db) -> list:
    """Return (text, sensitivity, encrypted) of every record as the database holds it."""
    with sqlite3.connect(db) as conn:
        return conn.execute('SELECT text, sensitivity, key_id IS NOT NULL FROM '
                            'substrate_records ORDER BY seq').fetchall()


def test_secrets_learned_without_encryption_are_high_and_the_reply_and_stats_say_so(
        tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(SPEC_EXAMPLE, encoding='utf-8')
    common = ['--file', str(memory), '--at', AT]
    for text in ISSUE_CASES:
        code, out, _ = run(capsys, 'learn', text, *common)
        assert code == 0 and out.startswith('created '), out
        assert 'not encrypted: this high sensitivity record is stored in plaintext because ' \
            'encryption at rest is off' in out and 'substrate_encrypt_from: high' in out, out
    code, out, _ = run(capsys, 'learn', 'The kitchen is left of the hallway', *common)
    assert code == 0 and 'not encrypted' not in out, out
    assert [row[1] for row in stored(tmp_path / 'robot-memory.db')] == ['high'] * 5 + ['low']
    code, out, _ = run(capsys, 'stats', *common)
    assert code == 0
    assert ('substrate encryption: off; 5 records of high sensitivity or above stored in '
            'plaintext: encryption at rest is off; to encrypt them set substrate_encrypt_from: '
            'high') in out, out
    code, out, _ = run(capsys, 'stats', '--json', *common)
    encryption = json.loads(out)['substrate']['encryption']
    assert encryption['plaintext_sensitive'] == 5 and 'substrate_encrypt_from' in \
        encryption['plaintext_notice']


def test_with_encryption_on_secrets_are_stored_encrypted_and_nothing_is_reported(
        tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n')
    memory.write_text(SPEC_EXAMPLE, encoding='utf-8')
    common = ['--file', str(memory), '--config', str(config), '--at', AT]
    for text in ISSUE_CASES:
        code, out, _ = run(capsys, 'learn', text, *common)
        assert code == 0 and 'not encrypted' not in out, out
    assert stored(tmp_path / 'robot-memory.db') == [('', 'high', 1)] * 5
    data = b''.join(path.read_bytes() for path in tmp_path.glob('robot-memory.db*'))
    assert leaks(data, ('4711', '5523', '1357', '2468', 'Passcode', 'alarm code')) == []
    code, out, _ = run(capsys, 'stats', *common)
    assert code == 0 and 'plaintext' not in out and '5 records encrypted' in out, out


def test_a_level_above_high_reports_what_encryption_leaves_out(tmp_path, capsys):
    memory = tmp_path / 'robot-memory.md'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: hyper\n')
    common = ['--file', str(memory), '--config', str(config), '--at', AT]
    code, out, _ = run(capsys, 'learn', 'PIN: 4711', *common)
    assert code == 0 and 'because encryption at rest starts at hyper' in out, out
