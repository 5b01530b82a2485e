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
Peer federation (RCAN §6): what a robot shares, what it accepts, and how it merges it.

Pure functions, no rclpy; the clock is always passed in. The ROS node converts the
``ExchangePeerContext`` message to plain data, calls :func:`validate_payload`, then
:func:`merge_peer_payload` inside ``MemoryFile.update(now)``, and writes
``federation.federation_audit.audit_records`` to the evidence store.

Decisions, written down once:

Sharing
    Only the robot's *own* entries are shared, never a peer's (a peer entry is never
    re-shared as own, so a fact spreads to direct peers only). Shared are entries that
    are injectable at ``now`` (``lifecycle.is_injectable``: not ``resolved``, effective
    confidence ≥ ``inject_min``) and not private. An entry is **private** when it has
    the tag ``private`` (any case) or an entry key ``private`` whose value is anything
    but ``false`` / ``no`` / ``0`` / null — when in doubt, it stays home. The highest
    effective confidence goes first, cut to the policy's count and byte limits.
Confidence on the wire
    The shared ``confidence`` is the *effective* confidence at ``sent_at`` (rounded to
    4 decimals so it survives the message's float32), and ``last_reinforced`` is the
    sender's real last evidence time. The receiver stores the entry with
    ``last_reinforced = sent_at`` (capped at its own ``now``) and keeps the sender's value
    as ``reported_last_reinforced``: every stored confidence stays "as of
    last_reinforced", so read-time decay on the receiver continues from what the sender
    believed when it sent — it is never applied twice.
Peer ids
    A peer entry's id is ``peer:<rrn>:<id>``, so it can never equal an own id (own ids
    are ``mem-…``); payload ids that already start with ``peer:`` are refused (a relay).
Corroboration without reinforcement
    A robot never reinforces its own entries from peer data (RCAN §6): own entries are
    never modified by a merge — not their confidence, count, time, nor any key. That
    also keeps autodream from mistaking a merge for a person's edit (it compares own
    entries with its snapshot). Corroboration is recorded on the *peer* entry instead:
    ``corroborates: [<own id>, …]`` when the own entry has the same type and the same id
    or normalised-token Jaccard similarity ≥ ``corroboration_jaccard``.
    :func:`corroborations` gives the per-own-entry view (own id → peer rrns).
Replay and ordering
    A block remembers the payload's ``sent_at``; a payload older than the stored one, or
    older than ``max_payload_age_s``, is refused as stale.
"""

import base64
import dataclasses
import datetime as dt
import functools
import json
import os
import pathlib
import re
import stat
from typing import Any
from typing import Optional

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator
from pydantic import PrivateAttr
from pydantic import ValidationError

from robot_memory.common.fileio import write_new
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import to_utc
from robot_memory.common.validation_text import first_errors
from robot_memory.errors import RobotMemoryError
from robot_memory.federation.policy import FederationPolicy
from robot_memory.rcan import untrusted
from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
from robot_memory.rcan.lifecycle import effective_confidence
from robot_memory.rcan.lifecycle import is_injectable
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.rcan.schema import check_printable
from robot_memory.rcan.schema import clean_tags
from robot_memory.rcan.schema import clean_text
from robot_memory.rcan.schema import EntryType
from robot_memory.rcan.schema import ID_PATTERN
from robot_memory.rcan.schema import MAX_TAGS
from robot_memory.rcan.schema import MAX_TEXT_CHARS
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import PeerBlock
from robot_memory.rcan.schema import PeerEntry
from robot_memory.rcan.schema import RRN_PATTERN
from robot_memory.rcan.untrusted import check_displayable
from robot_memory.rcan.untrusted import is_displayable
from robot_memory.substrate.textrules import jaccard
from robot_memory.substrate.textrules import token_set

PRIVATE_TAG = 'private'
PRIVATE_KEY = 'private'
CORROBORATES_KEY = 'corroborates'
REPORTED_KEY = 'reported_last_reinforced'
SENT_AT_KEY = 'sent_at'
PEER_ID_PREFIX = 'peer:'
MAX_ID_CHARS = 128
SIGNATURE_BYTES = 64
AUDIT_ACTION = 'peer_merge'
CONFIDENCE_DECIMALS = 4
PAYLOAD_KEYS = ('rrn', 'sent_at', 'entries', 'signature')
ENTRY_KEYS = ('id', 'type', 'text', 'confidence', 'first_seen', 'last_reinforced',
              'observation_count', 'tags')

_RRN = re.compile(RRN_PATTERN)
_NOT_PRIVATE = (False, None, 0, 'false', 'no', '0', '')


class FederationError(RobotMemoryError, ValueError):
    """Federation cannot proceed (bad key file, bad policy use); the message says what to do."""


class PeerRejected(FederationError):
    """A peer payload was refused; ``kind`` names the rule, the message says what to do."""

    KINDS = ('not_allowed', 'own_rrn', 'oversized', 'malformed', 'signature', 'stale')

    def __init__(self, kind: str, detail: str, advice: str, rrn: Optional[str] = None):
        self.kind = kind
        self.detail = detail
        self.advice = advice
        self.rrn = rrn
        sender = rrn if rrn is not None else 'an unidentified sender'
        super().__init__(f'peer payload from {sender} rejected ({kind}): {detail}; {advice}')


# --------------------------------------------------------------------------- payload

def _displayable(value: str, what: str) -> str:
    return check_displayable(check_printable(value, what), what)


def _as_time(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        try:
            return to_utc(value)
        except OverflowError:
            raise ValueError(f'{value!r} is outside the range of dates') from None
    if isinstance(value, str):
        try:
            return parse_iso(value)
        except OverflowError:
            raise ValueError(f'{value!r} is outside the range of dates') from None
    raise ValueError(f'expected a datetime or an ISO-8601 string, got {type(value).__name__}')


class SharedEntry(BaseModel):
    """One own entry as it travels to a peer: the eight fields of the message, strictly typed."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    id: str = Field(pattern=ID_PATTERN, strict=True)
    type: EntryType
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, strict=True)
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)
    first_seen: dt.datetime
    last_reinforced: dt.datetime
    observation_count: int = Field(ge=1, le=2 ** 32 - 1, strict=True)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS, strict=True)

    @field_validator('first_seen', 'last_reinforced', mode='before')
    @classmethod
    def _times(cls, value: Any) -> dt.datetime:
        return _as_time(value)

    @field_validator('text')
    @classmethod
    def _text_printable(cls, value: str) -> str:
        return clean_text(value, check=_displayable)

    @field_validator('tags')
    @classmethod
    def _tags_clean(cls, value: list) -> list:
        return clean_tags(value, strip=False, max_tags=None, check=_displayable)

    @model_validator(mode='after')
    def _times_ordered(self):
        if self.first_seen > self.last_reinforced:
            raise ValueError(f'first_seen {format_iso(self.first_seen)} is after '
                             f'last_reinforced {format_iso(self.last_reinforced)}')
        return self

    def canonical(self) -> dict:
        """Return the entry as canonical JSON data (timestamps ISO, confidence rounded)."""
        return {'id': self.id, 'type': self.type, 'text': self.text,
                'confidence': round(self.confidence, CONFIDENCE_DECIMALS),
                'first_seen': format_iso(self.first_seen),
                'last_reinforced': format_iso(self.last_reinforced),
                'observation_count': self.observation_count, 'tags': list(self.tags)}


class PeerPayload(BaseModel):
    """What one robot sends another: its rrn, when it sent, its shareable entries, a signature."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    rrn: str = Field(pattern=RRN_PATTERN, strict=True)
    sent_at: dt.datetime
    entries: tuple[SharedEntry, ...] = ()
    signature: str = Field('', max_length=256, pattern=r'^[A-Za-z0-9+/=]*$', strict=True,
                           description='base64 Ed25519 signature of canonical_bytes, or empty')

    # canonical_bytes() of this payload, computed once: (entries, (rrn, sent_at), bytes).
    _canonical: Optional[tuple] = PrivateAttr(None)

    @field_validator('sent_at', mode='before')
    @classmethod
    def _time(cls, value: Any) -> dt.datetime:
        return _as_time(value)

    def to_data(self, iso: bool = False) -> dict:
        """Plain data for the ROS message (datetimes) or JSON (``iso=True``)."""
        if iso:
            entries = [entry.canonical() for entry in self.entries]
            return {'rrn': self.rrn, 'sent_at': format_iso(self.sent_at), 'entries': entries,
                    'signature': self.signature}
        return {'rrn': self.rrn, 'sent_at': self.sent_at,
                'entries': [entry.model_dump() for entry in self.entries],
                'signature': self.signature}


def canonical_bytes(payload: PeerPayload) -> bytes:
    """Deterministic bytes that are signed: sorted-key compact JSON of rrn, sent_at, entries."""
    cached = payload._canonical
    if cached is not None and cached[0] is payload.entries and cached[1] == (payload.rrn,
                                                                             payload.sent_at):
        return cached[2]
    data = {'rrn': payload.rrn, 'sent_at': format_iso(payload.sent_at),
            'entries': [entry.canonical() for entry in payload.entries]}
    encoded = json.dumps(data, sort_keys=True, separators=(',', ':'), ensure_ascii=False,
                         allow_nan=False).encode('utf-8')
    # Keyed on the entries tuple itself, so a model_copy with other entries recomputes.
    payload._canonical = (payload.entries, (payload.rrn, payload.sent_at), encoded)
    return encoded


def payload_size(payload: PeerPayload) -> int:
    """Bytes a payload counts against ``max_payload_bytes``: canonical JSON plus signature."""
    return len(canonical_bytes(payload)) + len(payload.signature.encode('utf-8'))


# --------------------------------------------------------------------------- sharing

def is_private(entry) -> bool:
    """Return True when the entry is tagged ``private`` or has a ``private`` key not set false."""
    if any(tag.casefold() == PRIVATE_TAG for tag in entry.tags):
        return True
    extras = entry.extras
    if PRIVATE_KEY not in extras:
        return False
    value = extras[PRIVATE_KEY]
    if isinstance(value, str):
        value = value.strip().casefold()
    return value not in _NOT_PRIVATE


def _longest_own_id(rrn: str) -> int:
    return MAX_ID_CHARS - len(PEER_ID_PREFIX) - len(rrn) - 1


def shareable_entries(document: MemoryDocument, now: dt.datetime, policy: FederationPolicy,
                      config: LifecycleConfig = DEFAULT_CONFIG) -> list:
    """Own entries to share at ``now``, highest effective confidence first, as SharedEntry."""
    longest_id = _longest_own_id(document.rrn)
    scored = []
    for entry in document.entries:
        if entry.type == 'resolved' or is_private(entry) or not is_injectable(entry, now, config):
            continue
        if len(entry.text) > policy.max_text_chars or len(entry.id) > longest_id:
            continue
        if entry.id.startswith(PEER_ID_PREFIX):
            continue
        if not is_displayable(entry.text) or not all(map(is_displayable, entry.tags)):
            continue  # a peer refuses bidi and control characters
        if untrusted.is_instruction_like(entry.text):
            continue  # a peer's block never injects it (rcan.untrusted): not sent at all
        scored.append((effective_confidence(entry, now, config), entry))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].last_reinforced.timestamp(), pair[1].id))
    shared = []
    for confidence, entry in scored[:policy.max_entries]:
        shared.append(SharedEntry(
            id=entry.id, type=entry.type, text=entry.text,
            confidence=round(confidence, CONFIDENCE_DECIMALS), first_seen=entry.first_seen,
            last_reinforced=entry.last_reinforced, observation_count=entry.observation_count,
            tags=list(entry.tags)))
    return shared


def build_payload(document: MemoryDocument, now: dt.datetime, policy: FederationPolicy,
                  config: LifecycleConfig = DEFAULT_CONFIG) -> PeerPayload:
    """Return this robot's payload at ``now``: shareable entries in the limit, signed if keyed."""
    entries = shareable_entries(document, now, policy, config)
    signature_room = 100 if policy.private_key_path is not None else 0
    payload = PeerPayload(rrn=document.rrn, sent_at=now, entries=tuple(entries))
    while entries and payload_size(payload) + signature_room > policy.max_payload_bytes:
        # Drop the weakest entries until it fits; the estimate shrinks as they go.
        over = payload_size(payload) + signature_room - policy.max_payload_bytes
        average = max(1, payload_size(payload) // len(entries))
        entries = entries[:max(0, len(entries) - max(1, over // average))]
        payload = PeerPayload(rrn=document.rrn, sent_at=now, entries=tuple(entries))
    if policy.private_key_path is not None:
        payload = sign_payload(payload, policy.private_key_path)
    return payload


# --------------------------------------------------------------------------- signing

def _crypto():
    # lazy: cryptography, 7 ms and 7 MB of memory_node's start (a robot that signs nothing)
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    return serialization, ed25519


def generate_keypair(private_path, public_path) -> None:
    """Write a new Ed25519 key pair as PEM: the private key mode 0600, never overwriting."""
    serialization, ed25519 = _crypto()
    private_path, public_path = pathlib.Path(private_path), pathlib.Path(public_path)
    for path in (private_path, public_path):
        if path.exists():
            raise FederationError(f'{path} already exists; a key is never overwritten — remove '
                                  'it first if you really mean to replace it')
    key = ed25519.Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    for path, data, mode in ((private_path, private_pem, 0o600), (public_path, public_pem, 0o644)):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_new(path, data, mode)


def _read_key_file(path, what: str) -> bytes:
    try:
        return pathlib.Path(path).read_bytes()
    except OSError as error:
        raise FederationError(f'cannot read the {what} {path}: {error.strerror}; check the path '
                              'in the federation policy') from None


def load_private_key(path):
    """Load an Ed25519 private key (PEM); refuse one that others can read."""
    serialization, ed25519 = _crypto()
    mode = pathlib.Path(path).stat().st_mode if pathlib.Path(path).exists() else 0
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise FederationError(f'private key {path} is readable by others (mode '
                              f'{stat.S_IMODE(mode):o}); run chmod 600 on it')
    data = _read_key_file(path, 'private key')
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise FederationError(f'{path} is not an unencrypted PEM private key ({error}); create '
                              'one with generate_keypair()') from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise FederationError(f'{path} is not an Ed25519 key; create one with generate_keypair()')
    return key


def load_public_key(path):
    """Load an Ed25519 public key (PEM); parsed again only when the file changed."""
    try:
        found = os.stat(path)
    except OSError:
        _read_key_file(path, 'public key')  # raises FederationError, saying why
        raise
    return _parsed_public_key(str(path), (found.st_ino, found.st_size, found.st_mtime_ns))


# A fleet store checks two signatures a delivery with a few robots' keys: reading and parsing
# the PEM each time cost more than the check. The file's identity is part of the key.
@functools.lru_cache(maxsize=256)
def _parsed_public_key(path: str, identity: tuple):
    serialization, ed25519 = _crypto()
    data = _read_key_file(path, 'public key')
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as error:
        raise FederationError(f"{path} is not a PEM public key ({error}); copy the peer's "
                              'public key file again') from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise FederationError(f'{path} is not an Ed25519 public key')
    return key


def sign_payload(payload: PeerPayload, private_key_path) -> PeerPayload:
    """Return the payload with ``signature`` = base64 Ed25519 signature of its canonical bytes."""
    key = load_private_key(private_key_path)
    signature = base64.b64encode(key.sign(canonical_bytes(payload))).decode('ascii')
    return payload.model_copy(update={'signature': signature})


def verify_signature(payload: PeerPayload, public_key_path) -> bool:
    """Return True when ``payload.signature`` is a valid Ed25519 signature by the key at path."""
    from cryptography.exceptions import InvalidSignature  # lazy: as _crypto, 4 ms and 6 MB

    key = load_public_key(public_key_path)
    try:
        raw = base64.b64decode(payload.signature.encode('ascii'), validate=True)
    except (ValueError, UnicodeEncodeError):
        return False
    if len(raw) != SIGNATURE_BYTES:
        return False
    try:
        key.verify(raw, canonical_bytes(payload))
    except InvalidSignature:
        return False
    return True


# --------------------------------------------------------------------------- validation

_MALFORMED_ADVICE = ('the sender must send rrn, sent_at, entries (id, type, text, confidence, '
                     'first_seen, last_reinforced, observation_count, tags) and signature')


def validate_payload(data: Any, policy: FederationPolicy, now: dt.datetime,
                     own_rrn: str) -> PeerPayload:
    """Check a received payload (plain data) against ``policy``; raise PeerRejected if refused."""
    now = to_utc(now)
    if not isinstance(data, dict):
        raise PeerRejected('malformed', f'expected a mapping, got {type(data).__name__}',
                           _MALFORMED_ADVICE)
    rrn = data.get('rrn')
    if not isinstance(rrn, str) or not _RRN.fullmatch(rrn):
        raise PeerRejected('malformed', f'rrn {rrn!r} is not an RRN', _MALFORMED_ADVICE)
    if rrn == own_rrn:
        raise PeerRejected('own_rrn', 'the payload claims to come from this robot',
                           'a robot never merges its own entries as peer data; check the '
                           "sender's configured rrn", rrn)
    if rrn not in policy.allowed_peers:
        raise PeerRejected('not_allowed', f'{rrn} is not on the allowlist',
                           "add it to the federation policy's allowed_peers to accept it", rrn)
    unknown = sorted(str(key) for key in data if key not in PAYLOAD_KEYS)
    if unknown:
        raise PeerRejected('malformed', f'unknown keys {", ".join(unknown)[:200]}',
                           _MALFORMED_ADVICE, rrn)
    entries = data.get('entries', [])
    if isinstance(entries, (list, tuple)) and len(entries) > policy.max_entries:
        raise PeerRejected('oversized', f'{len(entries)} entries (at most {policy.max_entries})',
                           'the sender must share fewer entries (its max_entries policy)', rrn)
    if isinstance(entries, (list, tuple)):
        for index, item in enumerate(entries):
            text = item.get('text') if isinstance(item, dict) else None
            if isinstance(text, str) and len(text) > policy.max_text_chars:
                raise PeerRejected('oversized', f'entries.{index}.text has {len(text)} characters '
                                   f'(at most {policy.max_text_chars})',
                                   'the sender must shorten or withhold long entries', rrn)
    try:
        payload = PeerPayload.model_validate(data)
    except ValidationError as error:
        raise PeerRejected('malformed', first_errors(error), _MALFORMED_ADVICE,
                           rrn) from None
    _check_entries(payload)
    size = payload_size(payload)
    if size > policy.max_payload_bytes:
        raise PeerRejected('oversized', f'{size} bytes (at most {policy.max_payload_bytes})',
                           'the sender must share fewer or shorter entries', rrn)
    _check_times(payload, policy, now)
    if policy.require_signatures:
        _check_signature(payload, policy)
    return payload


def _check_entries(payload: PeerPayload) -> None:
    rrn = payload.rrn
    longest_id = _longest_own_id(rrn)
    seen = set()
    for index, entry in enumerate(payload.entries):
        where = f'entries.{index} ({entry.id})'
        if entry.id.startswith(PEER_ID_PREFIX):
            raise PeerRejected('malformed', f'{where} is a peer entry being relayed',
                               'a robot shares only its own entries (RCAN §6)', rrn)
        if len(entry.id) > longest_id:
            raise PeerRejected('malformed', f'{where}: id longer than {longest_id} characters',
                               'the sender must use shorter entry ids', rrn)
        if entry.id in seen:
            raise PeerRejected('malformed', f'{where}: duplicate id',
                               'each shared entry needs its own id', rrn)
        seen.add(entry.id)
        if entry.type == 'resolved':
            raise PeerRejected('malformed', f'{where} is resolved',
                               'resolved entries are not shared; the sender must filter them', rrn)


def _check_times(payload: PeerPayload, policy: FederationPolicy, now: dt.datetime) -> None:
    rrn = payload.rrn
    latest = now + dt.timedelta(seconds=policy.max_clock_skew_s)
    if payload.sent_at > latest:
        raise PeerRejected('malformed', f'sent_at {format_iso(payload.sent_at)} is in the future '
                           f'(now {format_iso(now)}, allowed skew {policy.max_clock_skew_s:g} s)',
                           "synchronise the robots' clocks (e.g. chrony)", rrn)
    if payload.sent_at < now - dt.timedelta(seconds=policy.max_payload_age_s):
        raise PeerRejected('stale', f'sent_at {format_iso(payload.sent_at)} is older than '
                           f'{policy.max_payload_age_s:g} s', 'ask the peer for a fresh payload',
                           rrn)
    for index, entry in enumerate(payload.entries):
        if entry.last_reinforced > latest:
            raise PeerRejected('malformed', f'entries.{index} ({entry.id}): last_reinforced '
                               f'{format_iso(entry.last_reinforced)} is in the future',
                               "synchronise the robots' clocks (e.g. chrony)", rrn)


def _check_signature(payload: PeerPayload, policy: FederationPolicy) -> None:
    rrn = payload.rrn
    if not payload.signature:
        raise PeerRejected('signature', 'the payload is not signed and signatures are required',
                           "configure the sender's private_key_path (generate_keypair())", rrn)
    key_path = policy.peer_public_keys.get(rrn)
    if key_path is None:
        raise PeerRejected('signature', f'no public key configured for {rrn}',
                           "add the peer's public key file to peer_public_keys", rrn)
    if not verify_signature(payload, key_path):
        raise PeerRejected('signature', 'the signature does not match the payload and the '
                           f'public key {key_path}', 'the payload was altered or signed with '
                           "another key; check the peer's key pair", rrn)


# --------------------------------------------------------------------------- merge

# The peer block of fleet lessons (robot_memory.fleet.lessons): revoked, never expired
FLEET_BLOCK = 'fleet'


def peer_entry_id(rrn: str, entry_id: str) -> str:
    """Return the namespaced id of a peer's entry: ``peer:<rrn>:<id>``."""
    return f'{PEER_ID_PREFIX}{rrn}:{entry_id}'


@dataclasses.dataclass(frozen=True)
class MergeOutcome:
    """What merging one peer payload changed, for the service reply and audit rows."""

    rrn: str
    at: dt.datetime
    sent_at: dt.datetime
    received: int
    added: tuple
    changed: tuple
    removed: tuple
    corroborated: tuple
    newly_corroborated: tuple
    signed: bool

    @property
    def unchanged(self) -> int:
        """Entries received that were already in the peer's block exactly as before."""
        return self.received - len(self.added) - len(self.changed)

    def summary(self) -> str:
        """One line for the service reply and the audit reason."""
        return (f'merged {self.received} entries from {self.rrn} ({len(self.added)} new, '
                f'{len(self.changed)} changed, {len(self.removed)} withdrawn, '
                f'{len(self.corroborated)} own entries corroborated)')


def _corroborated_ids(document: MemoryDocument, shared, threshold: float) -> dict:
    """For each shared entry, the own ids it corroborates (same type; same id or similar text)."""
    by_id = {entry.id: entry for entry in document.entries}
    index: dict[tuple, list] = {}
    own_tokens = {}
    for entry in document.entries:
        words = token_set(entry.text)
        own_tokens[entry.id] = words
        for word in words:
            index.setdefault((entry.type, word), []).append(entry)
    found: dict[str, list[str]] = {}
    for item in shared:
        matches = []
        same = by_id.get(item.id)
        if same is not None and same.type == item.type:
            matches.append(same.id)
        words = token_set(item.text)
        candidates = {}
        for word in words:
            for entry in index.get((item.type, word), ()):
                candidates[entry.id] = entry
        for entry_id in sorted(candidates):
            if entry_id not in matches and jaccard(words, own_tokens[entry_id]) >= threshold:
                matches.append(entry_id)
        found[item.id] = matches
    return found


def _stored_sent_at(block: PeerBlock) -> Optional[dt.datetime]:
    value = (block.__pydantic_extra__ or {}).get(SENT_AT_KEY)
    try:
        return parse_iso(value) if isinstance(value, str) else None
    except ValueError:
        return None


def merge_peer_payload(document: MemoryDocument, payload: PeerPayload, now: dt.datetime,
                       policy: FederationPolicy) -> MergeOutcome:
    """Replace ``payload.rrn``'s block in ``document.peer_context``; own entries stay untouched."""
    now = to_utc(now)
    rrn = payload.rrn
    if rrn == document.rrn:
        raise PeerRejected('own_rrn', 'the payload claims to come from this robot',
                           'a robot never merges its own entries as peer data', rrn)
    if rrn not in policy.allowed_peers:
        raise PeerRejected('not_allowed', f'{rrn} is not on the allowlist',
                           'add it to allowed_peers, and validate payloads before merging', rrn)
    blocks = list(document.peer_context or [])
    position = next((i for i, block in enumerate(blocks) if block.rrn == rrn), None)
    previous = blocks[position] if position is not None else None
    if previous is not None:
        stored = _stored_sent_at(previous)
        if stored is not None and payload.sent_at < stored:
            raise PeerRejected('stale', f'sent_at {format_iso(payload.sent_at)} is older than the '
                               f'payload already merged ({format_iso(stored)})',
                               'an out-of-order or replayed payload is ignored; nothing changed',
                               rrn)
    matches = _corroborated_ids(document, payload.entries, policy.corroboration_jaccard)
    as_of = min(payload.sent_at, now)
    entries = []
    for item in payload.entries:
        fields = {'id': peer_entry_id(rrn, item.id), 'type': item.type, 'text': item.text,
                  'confidence': round(item.confidence, CONFIDENCE_DECIMALS),
                  'first_seen': min(item.first_seen, as_of), 'last_reinforced': as_of,
                  'observation_count': item.observation_count, 'tags': list(item.tags),
                  REPORTED_KEY: format_iso(item.last_reinforced)}
        if matches[item.id]:
            fields[CORROBORATES_KEY] = list(matches[item.id])
        entries.append(PeerEntry(**fields))
    block = PeerBlock(rrn=rrn, last_synced=now, entries=entries,
                      **{SENT_AT_KEY: format_iso(payload.sent_at)})
    before = {entry.id: _comparable(entry) for entry in (previous.entries if previous else ())}
    added = tuple(entry.id for entry in entries if entry.id not in before)
    changed = tuple(entry.id for entry in entries
                    if entry.id in before and before[entry.id] != _comparable(entry))
    now_ids = {entry.id for entry in entries}
    removed = tuple(entry_id for entry_id in before if entry_id not in now_ids)
    if position is None:
        blocks.append(block)
    else:
        blocks[position] = block
    document.peer_context = blocks
    corroborated = tuple(sorted({own for found in matches.values() for own in found}))
    earlier = {own for entry in (previous.entries if previous else ())
               for own in entry.extras.get(CORROBORATES_KEY) or ()}
    newly = tuple(own for own in corroborated if own not in earlier)
    return MergeOutcome(rrn, now, payload.sent_at, len(entries), added, changed, removed,
                        corroborated, newly, bool(payload.signature))


def _comparable(entry: PeerEntry) -> tuple:
    return (entry.type, entry.text, entry.confidence, entry.observation_count, tuple(entry.tags),
            entry.extras.get(REPORTED_KEY))


def corroborations(document: MemoryDocument) -> dict:
    """Own entry id → sorted peer rrns whose current block corroborates it."""
    found: dict[str, set[str]] = {}
    own = {entry.id for entry in document.entries}
    for block in document.peer_context or []:
        for entry in block.entries:
            for own_id in entry.extras.get(CORROBORATES_KEY) or ():
                if own_id in own:
                    found.setdefault(own_id, set()).add(block.rrn)
    return {own_id: sorted(rrns) for own_id, rrns in sorted(found.items())}


def expire_peers(document: MemoryDocument, now: dt.datetime,
                 policy: FederationPolicy) -> list:
    """
    Drop the blocks of peers silent for more than ``peer_expiry_s``; return their rrns.

    The fleet's lessons (block ``fleet``) do not expire: the fleet revokes them.
    """
    if not document.peer_context:
        return []
    now = to_utc(now)
    limit = dt.timedelta(seconds=policy.peer_expiry_s)
    kept, dropped = [], []
    for block in document.peer_context:
        if now - block.last_synced > limit and block.rrn != FLEET_BLOCK:
            dropped.append(block.rrn)
        else:
            kept.append(block)
    if dropped:
        document.peer_context = kept
    return dropped
