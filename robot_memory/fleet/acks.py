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
The store's ack, signed with the fleet's key: only the fleet's own store makes a robot forget.

An ack that says ``stored`` or ``duplicate`` makes the robot drop the payload from its outbox.
Anyone who can answer on the ingest key (a program on a site's network with ``tcp/``
endpoints) could otherwise make robots forget what the store never kept. ``fleet serve
--fleet-key`` signs each ack with the fleet's Ed25519 private key over :func:`ack_bytes`:
the status, the robot, the dream, the reason and a SHA-256 of the very bytes delivered, so
an ack cannot be moved onto another delivery. A robot that knows the fleet's public key
(``fleet_public_key``) takes an ack that lets it forget only when :func:`checked` finds the
fleet key's signature on it; refusals need none (they only keep the payload waiting).
"""

import base64
import dataclasses
import hashlib
import json

from cryptography.exceptions import InvalidSignature

from robot_memory.federation.peer_context import load_public_key
from robot_memory.federation.peer_context import SIGNATURE_BYTES
from robot_memory.fleet.fleet_store import Ack

FORMAT = 'robot-memory-fleet-ack/1'
REASON = 'unsigned_ack'  # the robot's own refusal of an ack: it keeps the payload waiting
_ADVICE = ("start fleet serve with --fleet-key (the fleet's private key, whose public key the "
           'robot has as fleet_public_key), or find what else answers on the ingest key')


def ack_bytes(ack: Ack, delivery: bytes) -> bytes:
    """Return what the fleet key signs of ``ack``, the answer to the bytes ``delivery``."""
    return json.dumps([FORMAT, ack.status, ack.rrn, ack.dream_id, ack.reason,
                       hashlib.sha256(bytes(delivery)).hexdigest()],
                      separators=(',', ':'), ensure_ascii=False).encode('utf-8')


def sign(ack: Ack, delivery: bytes, private_key) -> Ack:
    """Return ``ack`` signed with ``private_key`` (an Ed25519 key object, loaded once)."""
    signature = private_key.sign(ack_bytes(ack, delivery))
    return dataclasses.replace(ack, signature=base64.b64encode(signature).decode('ascii'))


def checked(ack: Ack, delivery: bytes, public_key_path) -> Ack:
    """
    Return ``ack``, or a refusal when it lets the robot forget and the fleet key did not sign it.

    ``public_key_path``: the fleet's public key (PEM). An ack that refuses is returned as it
    is, signed or not: it keeps the payload waiting, which is what no answer does too.
    """
    if not ack.acknowledged:
        return ack
    try:
        signature = base64.b64decode(str(ack.signature).encode('ascii'), validate=True)
    except (ValueError, UnicodeEncodeError):
        signature = b''
    if len(signature) != SIGNATURE_BYTES:
        problem = 'carries no signature of the fleet key'
    else:
        try:
            load_public_key(public_key_path).verify(signature, ack_bytes(ack, delivery))
            return ack
        except InvalidSignature:
            problem = (f'is not signed by the fleet key {public_key_path} for this delivery '
                       '(altered, about other bytes, or signed with another key)')
    return Ack('refused', ack.rrn, ack.dream_id, reason=REASON,
               message=f'the answer {ack.status} for dream {ack.dream_id!r:.20} {problem}; the '
                       f'payload waits; {_ADVICE}')
