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
The fleet envelope: a robot's signed peer payload with its provenance, signed too.

The payload is the one robots exchange on the LAN (``federation.peer_context``: rrn, sent_at,
the robot's own shareable entries, an Ed25519 signature of its canonical bytes). The envelope
adds where it comes from (site, model, firmware) and which dream made it, and signs those
with the same key over :func:`provenance_bytes`, which include the payload's signature: a
relay can change neither the entries nor their provenance, nor move one onto another.

:func:`seal` makes the bytes a robot sends; :func:`open_envelope` is what the fleet store
checks before it keeps anything, raising :class:`~robot_memory.fleet.refusals.Refused`.
"""

import base64
import dataclasses
import datetime as dt
import functools
import json
import pathlib
from typing import Any
from typing import Optional

from cryptography.exceptions import InvalidSignature

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import to_utc
from robot_memory.federation.peer_context import build_payload
from robot_memory.federation.peer_context import FederationError
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.federation.peer_context import load_private_key
from robot_memory.federation.peer_context import load_public_key
from robot_memory.federation.peer_context import PeerPayload
from robot_memory.federation.peer_context import PeerRejected
from robot_memory.federation.peer_context import SIGNATURE_BYTES
from robot_memory.federation.peer_context import validate_payload
from robot_memory.federation.peer_context import verify_signature
from robot_memory.fleet.keys import check_rrn
from robot_memory.fleet.keys import check_site
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.refusals import json_of
from robot_memory.fleet.refusals import Refused
from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.rcan.schema import check_printable
from robot_memory.rcan.schema import MemoryDocument

FORMAT = 'robot-memory-fleet/1'
ENVELOPE_KEYS = ('format', 'site', 'model', 'firmware', 'dream_id', 'dream_at', 'payload',
                 'provenance_signature')
MAX_LABEL_CHARS = 64
DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_MAX_ENTRIES = 1000
DEFAULT_MAX_AGE_S = 30 * 86_400.0
# PeerRejected's kinds (the LAN's rules) as the fleet store's refusal reasons
_REASON_OF_KIND = {'not_allowed': 'unknown_robot', 'oversized': 'oversized',
                   'malformed': 'malformed', 'own_rrn': 'malformed', 'signature': 'forged',
                   'stale': 'replayed'}
_MALFORMED_ADVICE = (f'send a {FORMAT} envelope (robot-memory fleet push makes one): '
                     f'{", ".join(ENVELOPE_KEYS)}')


def _label(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_LABEL_CHARS:
        raise ValueError(f'{what} must be 1 to {MAX_LABEL_CHARS} characters of text, got '
                         f'{value!r:.80}')
    return check_printable(value, what)


@dataclasses.dataclass(frozen=True)
class Provenance:
    """
    Where a payload comes from and which dream made it (the robot is the payload's rrn).

    A dream is its id and its time together: ids start again at 1 when a damaged evidence
    database is set aside, so the id alone does not name one dream.
    """

    site: str
    model: str
    firmware: str
    dream_id: int
    dream_at: dt.datetime

    def __post_init__(self):
        check_site(self.site)
        _label(self.model, 'model')
        _label(self.firmware, 'firmware')
        if isinstance(self.dream_id, bool) or not isinstance(self.dream_id, int) \
                or not 1 <= self.dream_id < 2 ** 63:
            raise ValueError(f'dream_id must be a whole number from 1, got {self.dream_id!r}')
        if not isinstance(self.dream_at, dt.datetime) or self.dream_at.tzinfo is None:
            raise ValueError(f'dream_at must be a time with its zone, got {self.dream_at!r:.80}')


@dataclasses.dataclass(frozen=True)
class Envelope:
    """A checked delivery: the payload, its provenance and the provenance signature."""

    payload: PeerPayload
    provenance: Provenance
    provenance_signature: str
    size: int

    @property
    def rrn(self) -> str:
        """Return the robot's RRN (the signed payload's)."""
        return self.payload.rrn

    @property
    def sent_at(self) -> dt.datetime:
        """Return when the robot made the payload."""
        return self.payload.sent_at


def provenance_bytes(payload: PeerPayload, provenance: Provenance) -> bytes:
    """Return the bytes the provenance signature covers (sorted-key compact JSON)."""
    data = {'format': FORMAT, 'rrn': payload.rrn, 'sent_at': format_iso(payload.sent_at),
            'site': provenance.site, 'model': provenance.model,
            'firmware': provenance.firmware, 'dream_id': provenance.dream_id,
            'dream_at': format_iso(provenance.dream_at), 'payload_signature': payload.signature}
    return json.dumps(data, sort_keys=True, separators=(',', ':'), ensure_ascii=False,
                      allow_nan=False).encode('utf-8')


def seal(payload: PeerPayload, provenance: Provenance, private_key_path) -> bytes:
    """Return the envelope's bytes: the signed payload, its provenance, their signature."""
    if not payload.signature:
        raise FleetError('the payload is not signed; fleet payloads are signed end to end: set '
                         "federation.private_key_path in the node's parameters file")
    key = load_private_key(private_key_path)
    signature = base64.b64encode(key.sign(provenance_bytes(payload, provenance)))
    data = {'format': FORMAT, 'site': provenance.site, 'model': provenance.model,
            'firmware': provenance.firmware, 'dream_id': provenance.dream_id,
            'dream_at': format_iso(provenance.dream_at), 'payload': payload.to_data(iso=True),
            'provenance_signature': signature.decode('ascii')}
    return json.dumps(data, sort_keys=True, separators=(',', ':'), ensure_ascii=False,
                      allow_nan=False).encode('utf-8')


def envelope_for(document: MemoryDocument, now: dt.datetime, policy: FederationPolicy,
                 provenance: Provenance, config: LifecycleConfig = DEFAULT_CONFIG) -> bytes:
    """Return the sealed envelope of the robot's payload at ``now`` (as peers get it on the LAN)."""
    if policy.private_key_path is None:
        raise FleetError('fleet payloads are signed end to end, and no signing key is set: set '
                         "federation.private_key_path in the node's parameters file")
    payload = build_payload(document, now, policy, config)
    return seal(payload, provenance, policy.private_key_path)


@dataclasses.dataclass(frozen=True)
class Trust:
    """The store's trust: allowed robots and their public keys, and what it accepts."""

    public_keys: dict  # RRN -> path of its Ed25519 public key (PEM)
    max_bytes: int = DEFAULT_MAX_BYTES
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_age_s: float = DEFAULT_MAX_AGE_S
    max_clock_skew_s: float = 300.0

    def __post_init__(self):
        for rrn, path in self.public_keys.items():
            check_rrn(rrn)
            try:
                load_public_key(path)
            except FederationError as error:
                raise FleetError(f'the public key of {rrn}: {error}') from None

    def policy(self) -> FederationPolicy:
        """Return the LAN's policy with the store's limits (signatures checked here)."""
        return self._policy

    @functools.cached_property
    def _policy(self) -> FederationPolicy:
        # made once: it names every robot, so making it a delivery cost as much as the fleet
        return FederationPolicy(
            allowed_peers=tuple(self.public_keys), max_entries=self.max_entries,
            max_payload_bytes=min(self.max_bytes, 16 * 1024 * 1024),
            max_payload_age_s=self.max_age_s, max_clock_skew_s=self.max_clock_skew_s,
            peer_public_keys={rrn: pathlib.Path(path) for rrn, path in self.public_keys.items()})


def read_robots(lines, where: str) -> dict:
    """Return RRN -> public key path from lines ``RRN=PATH`` (blank lines and # comments skip)."""
    robots = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        rrn, separator, path = (part.strip() for part in line.partition('='))
        if not separator or not rrn or not path:
            raise FleetError(f'{where}:{number}: {line!r:.80} is not "RRN=path of its public '
                             'key", e.g. RRN-000000000002=/etc/robot_memory/keys/b.pub')
        if rrn in robots:
            raise FleetError(f'{where}:{number}: {rrn} is listed twice')
        robots[check_rrn(rrn)] = pathlib.Path(path)
    return robots


def _decode(raw: bytes, key_rrn: Optional[str], trust: Trust) -> dict:
    if len(raw) > trust.max_bytes:
        raise Refused('oversized', f'{len(raw)} bytes (at most {trust.max_bytes})',
                      'the robot must share fewer or shorter entries', key_rrn)
    try:
        data = json_of(raw)
    except ValueError as error:  # not UTF-8, not JSON, nested too deeply
        raise Refused('malformed', f'not UTF-8 JSON ({error})'[:200], _MALFORMED_ADVICE,
                      key_rrn) from None
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise Refused('malformed', f'not a {FORMAT} envelope', _MALFORMED_ADVICE, key_rrn)
    unknown = sorted(str(key) for key in data if key not in ENVELOPE_KEYS)
    missing = [key for key in ENVELOPE_KEYS if key not in data]
    if unknown or missing:
        raise Refused('malformed', f'unknown keys {unknown}, missing keys {missing}'[:300],
                      _MALFORMED_ADVICE, key_rrn)
    if not isinstance(data['payload'], dict):
        raise Refused('malformed', 'payload is not a mapping', _MALFORMED_ADVICE, key_rrn)
    return data


def _provenance(data: dict, rrn: Optional[str]) -> Provenance:
    try:
        if not isinstance(data['dream_at'], str):
            raise ValueError(f"dream_at must be an ISO time, got {data['dream_at']!r:.80}")
        return Provenance(data['site'], data['model'], data['firmware'], data['dream_id'],
                          parse_iso(data['dream_at']))
    except (FleetError, ValueError) as error:
        raise Refused('malformed', str(error)[:300], _MALFORMED_ADVICE, rrn) from None


def open_envelope(raw: bytes, key_site: str, key_rrn: str, trust: Trust,
                  now: dt.datetime) -> Envelope:
    """
    Check a delivery made under the key of ``key_site`` / ``key_rrn``; raise Refused if bad.

    In order: size, shape, the key's robot and site against the signed ones, an allowed
    robot, the payload by the LAN's rules (``validate_payload``: entries, limits, times),
    then both signatures. Replays against what the store holds are the store's check.
    """
    data = _decode(raw, key_rrn, trust)
    payload_rrn = data['payload'].get('rrn')
    provenance = _provenance(data, payload_rrn if isinstance(payload_rrn, str) else key_rrn)
    if payload_rrn != key_rrn or provenance.site != key_site:
        raise Refused('wrong_key', f'published under {key_site}/{key_rrn} but signed as '
                      f'{provenance.site}/{payload_rrn!r:.70}',
                      'a robot publishes only under its own site and RRN', key_rrn)
    if key_rrn not in trust.public_keys:
        raise Refused('unknown_robot', f'{key_rrn} is not an allowed robot of this store',
                      "add 'RRN=path of its public key' to the store's --robots file", key_rrn)
    try:
        payload = validate_payload(data['payload'], trust.policy(), to_utc(now), own_rrn='')
    except PeerRejected as error:
        raise Refused(_REASON_OF_KIND[error.kind], error.detail, error.advice,
                      key_rrn) from None
    signature = data['provenance_signature']
    if not payload.signature or not signature:
        raise Refused('unsigned', 'the payload or its provenance is not signed',
                      "set federation.private_key_path in the robot's parameters file", key_rrn)
    key_path = trust.public_keys[key_rrn]
    if not verify_signature(payload, key_path):
        raise Refused('forged', "the payload's signature does not match its entries and the "
                      f'public key {key_path}', 'the payload was altered or signed with another '
                      "key; check the robot's key pair", key_rrn)
    if not _provenance_verifies(payload, provenance, signature, key_path):
        raise Refused('forged', 'the provenance signature does not match site, model, '
                      f'firmware and dream with the public key {key_path}',
                      "the envelope was altered or signed with another key; check the robot's "
                      'key pair', key_rrn)
    return Envelope(payload, provenance, signature, len(raw))


def _provenance_verifies(payload: PeerPayload, provenance: Provenance, signature: Any,
                         key_path) -> bool:
    if not isinstance(signature, str):
        return False
    try:
        raw = base64.b64decode(signature.encode('ascii'), validate=True)
    except (ValueError, UnicodeEncodeError):
        return False
    if len(raw) != SIGNATURE_BYTES:
        return False
    try:
        load_public_key(key_path).verify(raw, provenance_bytes(payload, provenance))
    except InvalidSignature:
        return False
    return True
