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
A person's edit of one entry's text or tags, made through a tool rather than an editor.

The change is written under the memory file's lock; then one transaction keeps the entry
as it was (``entry_versions``, so ``robot-memory undo`` can take the edit back), moves the
dream's snapshot with the file (the next dream sees no edit to take in again) and appends
a ``manual`` audit record naming the person. An edit by an editor is taken in by the next
dream with the same audit action.
"""

import contextlib
import datetime as dt
import json
from typing import Any
from typing import Mapping

from pydantic import ValidationError

from robot_memory.common.timeutil import format_iso
from robot_memory.errors import MemoryFileError
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence.evidence_audit import write_audit
from robot_memory.rcan import untrusted
from robot_memory.rcan.context import check_displayable
from robot_memory.rcan.schema import entry_index
from robot_memory.rcan.schema_models import MemoryEntry

MAX_REASON = 500
MAX_ACTOR = 100


class EditError(RobotMemoryError, ValueError):
    """An edit that cannot be made; the message says what was wrong and what to do."""


def _check(value, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise EditError(f'say {what}; the audit log keeps it')
    if len(value) > limit:
        raise EditError(f'the {what} is {len(value)} characters; the limit is {limit}')
    return value.strip()


def _refuse_hidden_direction(text, tags) -> None:
    """Refuse bidi-override characters (U+202E...) as a peer's entry is refused."""
    for what, value in [('the text', text)] + [('a tag', tag) for tag in tags or ()]:
        if isinstance(value, str):
            try:
                check_displayable(value, what)
            except ValueError as error:
                raise EditError(f'{error}; nothing was changed') from None


def parse_tags(text: str) -> list:
    """Return the tags of a comma-separated field, blanks dropped."""
    return [tag.strip() for tag in text.split(',') if tag.strip()]


def edit_entry(store, memory_file, entry_id: str, now: dt.datetime, actor: str, reason: str,
               text=None, tags=None) -> dict:
    """
    Give entry ``entry_id`` a new ``text`` and/or ``tags``; return the audit detail.

    Refused (EditError) when the entry is not in the file, the new text or tags break the
    schema, nothing would change, or actor or reason is missing. ``store`` is the
    memory file's EvidenceStore.
    """
    # lazy: the dream, 220 ms and 6 MB of the operator page's start
    from robot_memory.dream.autodream import canonical
    actor = _check(actor, 'who edits (the actor)', MAX_ACTOR)
    reason = _check(reason, 'why in a reason', MAX_REASON)
    if text is None and tags is None:
        raise EditError('give a new text or new tags; nothing was changed')
    if not memory_file.exists():
        raise EditError(f'there is no memory file at {memory_file.path}')
    # The database's write lock is taken inside the file's (the order a dream takes them)
    # and before the file is written: an edit while another process held the database
    # wrote the file, then failed, saying "nothing was changed". Now a failure before the
    # file is saved changes nothing, and the database commits only once it is saved.
    database = contextlib.ExitStack()
    try:
        with database, memory_file.update(now, on_corrupt='raise') as result:
            document = result.document
            position = entry_index(document.entries, entry_id)
            if position is None:
                raise EditError(f'entry {entry_id} is not in the memory file (pruned, deleted '
                                "or a peer's entry, which only its robot can change)")
            entry = document.entries[position]
            data = entry.model_dump()
            if text is not None:
                data['text'] = text
            if tags is not None:
                data['tags'] = list(tags)
            try:
                updated = MemoryEntry.model_validate(data)
            except ValidationError as error:
                problem = '; '.join(_said(item) for item in error.errors())
                raise EditError(f'{problem}; nothing was changed') from None
            # What the schema lets through but the brain would read reversed (U+202E...).
            _refuse_hidden_direction(text, tags)
            if canonical(updated) == canonical(entry):
                raise EditError(f'entry {entry_id} already reads so; nothing was changed')
            document.entries[position] = updated
            before, after = canonical(entry), canonical(updated)
            detail = {'change': 'edited', 'before': json.loads(before),
                      'after': json.loads(after)}
            database.enter_context(store.db.atomic(immediate=True))
            conn = store.db.conn
            # The prior version is the file's entry as it was: a hand edit made since the last
            # dream is what an undo gives back, not the dream's snapshot of before it.
            conn.execute('INSERT INTO entry_versions (at, entry_id, prior, manual) VALUES '
                         '(?, ?, ?, 1)', (now.timestamp(), entry_id, before))
            conn.execute('UPDATE snapshot SET data = ? WHERE entry_id = ?', (after, entry_id))
            write_audit(conn, [(format_iso(now), entry_id, 'manual', actor,
                                f'edited by hand: {reason}',
                                json.dumps(detail, ensure_ascii=False, sort_keys=True), None)])
    except MemoryFileError as error:
        raise EditError(str(error)) from None
    if untrusted.held(updated.text, updated.extras):
        detail['held'] = _propose_release(store, entry_id, updated.text, now, actor)
    return detail


def _propose_release(store, entry_id: str, text: str, now: dt.datetime, actor: str) -> dict:
    """
    Queue the release of an edited text that reads like an instruction to a model.

    The edit is kept (a person's words are never lost), but the block holds the entry
    from the brain until a person approves the release: what was flagged, the proposal.
    """
    # lazy: the proposals queue, 47 ms and 2 MB of the operator page's start
    from robot_memory.evidence import proposal_queue
    queue = proposal_queue.ProposalQueue(store.db)
    proposal = queue.propose('reword', actor, entry_id,
                             proposal_queue.reword_summary(entry_id, text, text),
                             {'before': text, 'after': text}, now,
                             proposal_queue.DEFAULT_SETTINGS.expire_after_s)
    return {'proposal': proposal.id, 'why': untrusted.describe(untrusted.findings(text))}


def _said(item: Mapping[str, Any]) -> str:
    """Return one of pydantic's refusals of an edited entry in a person's words."""
    field = '.'.join(str(part) for part in item['loc'])
    limit = (item.get('ctx') or {}).get('max_length')
    if item['type'] == 'string_too_short':
        return f'the {field} is empty: write something'
    if item['type'] == 'string_too_long' and limit is not None:
        return f'the {field} has {len(item["input"])} characters, at most {limit}'
    message = item['msg']
    if message.startswith('Value error, '):  # a validator's own words
        message = message[len('Value error, '):]
    return f'{field}: {message}'
