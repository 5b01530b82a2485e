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
Fleet lessons: one robot's entry, promoted by an operator to every robot of a model or site.

A lesson is a small JSON message signed with the fleet's Ed25519 key (the store's): the
entry (type, text, confidence, tags), where it came from (robot and entry), to whom it goes
(``model`` or ``site`` and its name), who promoted it and why. Revoking it is a second
message of the same lesson, signed too. :func:`seal_lesson` makes the bytes;
:func:`open_lesson` checks them (a lesson the fleet key did not sign is refused as
``unsigned_lesson``).

A robot that trusts the fleet key keeps its lessons as peer entries of a block of its own,
``fleet`` (:data:`~robot_memory.federation.peer_context.FLEET_BLOCK`), labelled with the
lesson and its source; :func:`apply_lesson` makes that change to a memory document. A revoked
lesson's id stays listed in the block, so an old promotion replayed later is not taken again.
"""

import base64
import dataclasses
import datetime as dt
import hashlib
import json
from typing import Any
from typing import Optional

from cryptography.exceptions import InvalidSignature

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import to_utc
from robot_memory.common.validation_text import first_errors
from robot_memory.federation.peer_context import FLEET_BLOCK
from robot_memory.federation.peer_context import load_private_key
from robot_memory.federation.peer_context import load_public_key
from robot_memory.federation.peer_context import peer_entry_id
from robot_memory.federation.peer_context import SIGNATURE_BYTES
from robot_memory.fleet.keys import check_rrn
from robot_memory.fleet.keys import check_site
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.refusals import json_of
from robot_memory.fleet.refusals import Refused
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import PeerBlock
from robot_memory.rcan.schema import PeerEntry
from robot_memory.rcan.schema import ValidationError
from robot_memory.rcan.untrusted import check_displayable

FORMAT = 'robot-memory-lesson/1'
SCOPES = ('model', 'site')
ACTIONS = ('promote', 'revoke')
MAX_LESSON_BYTES = 64 * 1024
FIELDS = ('format', 'lesson_id', 'action', 'scope', 'scope_value', 'issued_at', 'source_rrn',
          'source_entry', 'entry', 'operator', 'reason', 'signature')
ENTRY_FIELDS = ('type', 'text', 'confidence', 'tags')
REVOKED_KEY = 'revoked_lessons'  # the fleet block's list of revoked lesson ids
_ADVICE = 'a lesson counts only when the fleet store signed it with the fleet key'


@dataclasses.dataclass(frozen=True)
class Lesson:
    """A checked lesson message (a promotion or its revocation)."""

    lesson_id: str
    action: str
    scope: str
    scope_value: str
    issued_at: dt.datetime
    source_rrn: str
    source_entry: str
    entry: dict
    operator: str
    reason: str

    @property
    def entry_id(self) -> str:
        """Return the id the lesson's entry has on a robot: ``peer:fleet:<lesson id>``."""
        return peer_entry_id(FLEET_BLOCK, self.lesson_id)

    def applies_to(self, site: str, model: str) -> bool:
        """Return True when the lesson is for a robot of ``site`` or ``model``."""
        return self.scope_value == (site if self.scope == 'site' else model)


def check_scope(scope: str, value: str) -> tuple:
    """Return (scope, value) when a lesson can go to them; else raise FleetError."""
    if scope not in SCOPES:
        raise FleetError(f'a lesson goes to every robot of a model or of a site, not {scope!r}')
    try:
        return scope, check_site(value)  # a single key-expression chunk, as a site is
    except FleetError:
        raise FleetError(f'{scope} {value!r} cannot name a lesson key: give 1 to 64 letters, '
                         'digits, "_", "." or "-"') from None


def lesson_id_of(source_rrn: str, source_entry: str, scope: str, value: str,
                 issued_at: dt.datetime) -> str:
    """Return a new lesson's id: ``les-`` and 12 hex digits of what it is."""
    digest = hashlib.sha256(f'{source_rrn} {source_entry} {scope} {value} '
                            f'{format_iso(issued_at)}'.encode('utf-8')).hexdigest()
    return f'les-{digest[:12]}'


def _canonical(data: dict) -> bytes:
    fields = {key: value for key, value in data.items() if key != 'signature'}
    return json.dumps(fields, sort_keys=True, separators=(',', ':'), ensure_ascii=False,
                      allow_nan=False).encode('utf-8')


def check_keepable(lesson: Lesson) -> None:
    """
    Refuse (ValueError) a promotion whose entry a robot could not keep as a peer entry.

    Checked where a lesson is made and where it is taken: a lesson robots cannot keep (an id
    with a space, 600 characters of text, a line break, a bidi or tag character) raised in
    the robot's round of lessons and stopped the lessons after it.
    """
    if lesson.action != 'promote':
        return
    try:
        _peer_entry(lesson)
    except ValidationError as error:
        raise ValueError(f'its entry cannot be kept: {first_errors(error)}') from None
    for text in (lesson.entry['text'], *lesson.entry['tags']):
        check_displayable(text, "the entry's text or a tag")


def seal_lesson(lesson: Lesson, private_key_path) -> bytes:
    """Return the lesson's message, signed with the fleet's private key."""
    check_scope(lesson.scope, lesson.scope_value)
    check_keepable(lesson)
    data = {'format': FORMAT, 'lesson_id': lesson.lesson_id, 'action': lesson.action,
            'scope': lesson.scope, 'scope_value': lesson.scope_value,
            'issued_at': format_iso(lesson.issued_at), 'source_rrn': lesson.source_rrn,
            'source_entry': lesson.source_entry, 'entry': lesson.entry,
            'operator': lesson.operator, 'reason': lesson.reason}
    signature = load_private_key(private_key_path).sign(_canonical(data))
    data['signature'] = base64.b64encode(signature).decode('ascii')
    return json.dumps(data, sort_keys=True, separators=(',', ':'), ensure_ascii=False,
                      allow_nan=False).encode('utf-8')


def _text(data: dict, key: str, most: int = 2000) -> str:
    value = data.get(key)
    if not isinstance(value, str) or len(value) > most:
        raise ValueError(f'{key} must be text of at most {most} characters')
    return value


def _fields(data: Any) -> dict:
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise ValueError(f'not a {FORMAT} message')
    if sorted(data) != sorted(FIELDS):
        raise ValueError(f'the fields must be {", ".join(FIELDS)}')
    if data['action'] not in ACTIONS:
        raise ValueError(f'action must be one of {", ".join(ACTIONS)}')
    entry = data['entry']
    if data['action'] == 'promote':
        if not isinstance(entry, dict) or sorted(entry) != sorted(ENTRY_FIELDS):
            raise ValueError(f"a promotion's entry must have {', '.join(ENTRY_FIELDS)}")
        _text(entry, 'type', 64)
        _text(entry, 'text')
        confidence = entry['confidence']
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
                or not 0.0 <= confidence <= 1.0:
            raise ValueError("the entry's confidence must be a number from 0 to 1")
        if not isinstance(entry['tags'], list) or len(entry['tags']) > 32 \
                or not all(isinstance(tag, str) and len(tag) <= 64 for tag in entry['tags']):
            raise ValueError("the entry's tags must be a list of at most 32 short texts")
    elif entry != {}:
        raise ValueError('a revocation carries no entry')
    return data


def open_lesson(raw: bytes, public_key_path) -> Lesson:
    """Check a lesson message against the fleet's public key; raise Refused when bad."""
    if len(raw) > MAX_LESSON_BYTES:
        raise Refused('oversized', f'a lesson of {len(raw)} bytes (at most {MAX_LESSON_BYTES})',
                      _ADVICE)
    try:
        data = _fields(json_of(raw))
        scope, value = check_scope(data['scope'], data['scope_value'])
        lesson = Lesson(
            _text(data, 'lesson_id', 40), data['action'], scope, value,
            parse_iso(data['issued_at']),
            check_rrn(data['source_rrn']), _text(data, 'source_entry', 200), data['entry'],
            _text(data, 'operator', 64), _text(data, 'reason', 500))
        check_keepable(lesson)
    except (UnicodeDecodeError, ValueError, TypeError) as error:
        raise Refused('malformed', f'not a fleet lesson: {error}'[:300], _ADVICE) from None
    signature = data['signature']
    try:
        decoded = base64.b64decode(str(signature).encode('ascii'), validate=True)
    except (ValueError, UnicodeEncodeError):
        decoded = b''
    if len(decoded) != SIGNATURE_BYTES:
        raise Refused('unsigned_lesson', f'lesson {lesson.lesson_id} carries no valid '
                      'signature', _ADVICE, lesson.source_rrn)
    try:
        load_public_key(public_key_path).verify(decoded, _canonical(data))
    except InvalidSignature:
        raise Refused('unsigned_lesson', f'lesson {lesson.lesson_id} is not signed by the '
                      f'fleet key {public_key_path}', _ADVICE, lesson.source_rrn) from None
    return lesson


def _peer_entry(lesson: Lesson) -> PeerEntry:
    """Return the peer entry a promotion becomes (pydantic's ValidationError if it cannot)."""
    return PeerEntry(id=lesson.entry_id, type=lesson.entry['type'], text=lesson.entry['text'],
                     confidence=float(lesson.entry['confidence']),
                     tags=list(lesson.entry['tags']), first_seen=lesson.issued_at,
                     last_reinforced=lesson.issued_at, lesson=lesson.lesson_id,
                     from_rrn=lesson.source_rrn, from_entry=lesson.source_entry,
                     scope=f'{lesson.scope}:{lesson.scope_value}')


def _fleet_block(document: MemoryDocument) -> tuple:
    blocks = list(document.peer_context or [])
    position = next((i for i, block in enumerate(blocks) if block.rrn == FLEET_BLOCK), None)
    return blocks, position


def apply_lesson(document: MemoryDocument, lesson: Lesson, now: dt.datetime) -> Optional[str]:
    """
    Take a lesson into the document's ``fleet`` block; return what changed, None if nothing.

    A promotion adds (or updates) the entry ``peer:fleet:<lesson id>``; a revocation removes
    it and lists the lesson as revoked, so a replayed promotion is not taken again.
    """
    now = to_utc(now)
    blocks, position = _fleet_block(document)
    block = blocks[position] if position is not None else None
    entries = list(block.entries) if block is not None else []
    extras = dict(getattr(block, '__pydantic_extra__', None) or {})
    revoked = list(extras.get(REVOKED_KEY) or [])
    entry_id = lesson.entry_id
    current = next((entry for entry in entries if entry.id == entry_id), None)
    if lesson.action == 'revoke':
        if lesson.lesson_id in revoked and current is None:
            return None
        entries = [entry for entry in entries if entry.id != entry_id]
        revoked = sorted(set(revoked) | {lesson.lesson_id})
        change = 'revoked'
    else:
        if lesson.lesson_id in revoked:
            return None
        taken = _peer_entry(lesson)
        if current is not None and current.model_dump() == taken.model_dump():
            return None
        entries = [entry for entry in entries if entry.id != entry_id] + [taken]
        change = 'taken'
    extras[REVOKED_KEY] = revoked
    new_block = PeerBlock(rrn=FLEET_BLOCK, last_synced=now, entries=entries, **extras)
    if position is None:
        blocks.append(new_block)
    else:
        blocks[position] = new_block
    document.peer_context = blocks
    return change
