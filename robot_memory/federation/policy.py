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
The federation policy: who may share with this robot, how much, for how long, signed or not.

``FederationPolicy`` is validated once (``robot_memory.settings`` builds it from the node's
parameters and the CLI's settings): allowed peers are RRNs, and signing on needs this robot's
private key and a public key for every allowed peer. ``robot_memory.federation.peer_context``
applies it to what is shared and what is accepted.
"""

import pathlib
import re
from typing import Optional

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator

from robot_memory.errors import SettingsConflict
from robot_memory.rcan.schema import MAX_TEXT_CHARS
from robot_memory.rcan.schema import RRN_PATTERN

_RRN = re.compile(RRN_PATTERN)


class FederationPolicy(BaseModel):
    """Who may share with this robot, how much, for how long, and whether it must be signed."""

    model_config = ConfigDict(frozen=True, extra='forbid')

    allowed_peers: tuple[str, ...] = Field(
        (), description='RRNs whose payloads are accepted; empty accepts none')
    max_entries: int = Field(
        50, ge=1, le=10_000, description='Most entries in one payload, sent or accepted')
    max_text_chars: int = Field(
        MAX_TEXT_CHARS, ge=1, le=MAX_TEXT_CHARS,
        description='Longest entry text accepted (and shared) in characters')
    max_payload_bytes: int = Field(
        65_536, ge=256, le=16 * 1024 * 1024,
        description='Largest payload: canonical JSON bytes plus the signature')
    peer_expiry_s: float = Field(
        86_400.0, gt=0.0, le=365 * 86_400.0, allow_inf_nan=False,
        description="Seconds of silence after which a peer's block is dropped")
    max_clock_skew_s: float = Field(
        300.0, ge=0.0, le=86_400.0, allow_inf_nan=False,
        description='How far in the future a payload (and its timestamps) may be')
    max_payload_age_s: float = Field(
        3_600.0, gt=0.0, le=30 * 86_400.0, allow_inf_nan=False,
        description='Oldest sent_at accepted, in seconds before now (replays are refused)')
    corroboration_jaccard: float = Field(
        0.6, gt=0.0, le=1.0, allow_inf_nan=False,
        description='Token Jaccard similarity at which a peer entry corroborates an own one')
    require_signatures: bool = Field(
        False, description='Refuse unsigned payloads and verify Ed25519 signatures')
    private_key_path: Optional[pathlib.Path] = Field(
        None, description="This robot's Ed25519 private key (PEM, mode 0600); signs payloads")
    peer_public_keys: dict[str, pathlib.Path] = Field(
        default_factory=dict, description='Peer RRN → path of its Ed25519 public key (PEM)')

    @field_validator('allowed_peers')
    @classmethod
    def _peers_are_rrns(cls, value: tuple) -> tuple:
        for rrn in value:
            if not _RRN.fullmatch(rrn):
                raise ValueError(f'{rrn!r} is not an RRN (e.g. RRN-000000000005)')
        return tuple(dict.fromkeys(value))

    @field_validator('peer_public_keys')
    @classmethod
    def _keys_are_for_rrns(cls, value: dict) -> dict:
        for rrn in value:
            if not _RRN.fullmatch(rrn):
                raise ValueError(f'{rrn!r} is not an RRN (e.g. RRN-000000000005)')
        return value

    @model_validator(mode='after')
    def _signing_is_complete(self):
        if not self.require_signatures:
            return self
        if self.private_key_path is None:
            raise SettingsConflict('require_signatures is on but private_key_path is not set; '
                                   'create a key with generate_keypair() and set its path',
                                   ('require_signatures', 'private_key_path'))
        missing = [rrn for rrn in self.allowed_peers if rrn not in self.peer_public_keys]
        if missing:
            raise SettingsConflict('require_signatures is on but these allowed peers have no '
                                   f'public key in peer_public_keys: {", ".join(missing)}',
                                   ('require_signatures', 'peer_public_keys'))
        return self
