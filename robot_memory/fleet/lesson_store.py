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
The fleet store's lessons: promote a robot's entry, revoke a lesson, answer robots, audit it all.

``fleet_lessons`` holds each lesson's newest signed message (its promotion, or its
revocation) and its state; ``fleet_audit`` one row per step: ``promote``, ``revoke``,
``refused`` (a lesson on the fleet's key space that the fleet key did not sign). Both tables
come with the store's migration ``0002_lessons``.
"""

import datetime as dt
import json

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import to_utc
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.keys import check_rrn
from robot_memory.fleet.lessons import check_scope
from robot_memory.fleet.lessons import Lesson
from robot_memory.fleet.lessons import lesson_id_of
from robot_memory.fleet.lessons import seal_lesson
from robot_memory.fleet.refusals import FleetError


def _label(value: str, what: str, most: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > most:
        raise FleetError(f'give {what}: 1 to {most} characters')
    return value.strip()


def audit(store: FleetStore, at: dt.datetime, lesson_id: str, action: str, actor: str,
          reason: str, detail: dict) -> None:
    """Append one row to the store's lesson audit."""
    store.db.execute('INSERT INTO fleet_audit (at, lesson_id, action, actor, reason, detail) '
                     'VALUES (?, ?, ?, ?, ?, ?)',
                     (to_utc(at).timestamp(), lesson_id, action, actor, reason[:500],
                      json.dumps(detail, ensure_ascii=False, sort_keys=True)))


def promote(store: FleetStore, fleet_key, rrn: str, entry_id: str, scope: str, value: str,
            operator: str, reason: str, now: dt.datetime) -> tuple:
    """
    Promote ``rrn``'s current entry ``entry_id`` to every robot of a model or site.

    Returns (lesson id, signed message). Raises FleetError when the robot has no such entry.
    """
    scope, value = check_scope(scope, value)
    operator, reason = _label(operator, '--operator', 64), _label(reason, '--reason', 500)
    found = store.db.rows('SELECT type, text, confidence, tags FROM fleet_entries WHERE rrn = ? '
                          "AND entry_id = ? AND status = 'active'", (check_rrn(rrn), entry_id))
    if not found:
        raise FleetError(f'{rrn} has no current entry {entry_id!r} in the fleet store; robot-'
                         'memory fleet report --json lists the robots and their entries')
    row = found[0]
    entry = {'type': row['type'], 'text': row['text'], 'confidence': float(row['confidence']),
             'tags': json.loads(row['tags'])}
    now = to_utc(now)
    lesson = Lesson(lesson_id_of(rrn, entry_id, scope, value, now), 'promote', scope, value,
                    now, rrn, entry_id, entry, operator, reason)
    message = seal_lesson(lesson, fleet_key)
    with store.db.transaction():
        store.db.execute(
            'INSERT INTO fleet_lessons (lesson_id, scope, scope_value, source_rrn, '
            'source_entry, state, issued_at, revoked_at, message) VALUES (?, ?, ?, ?, ?, '
            "'active', ?, NULL, ?)", (lesson.lesson_id, scope, value, rrn, entry_id,
                                      now.timestamp(), message.decode('utf-8')))
        audit(store, now, lesson.lesson_id, 'promote', operator, reason,
              {'source_rrn': rrn, 'source_entry': entry_id, 'scope': scope,
               'scope_value': value, 'text': entry['text']})
    return lesson.lesson_id, message


def revoke(store: FleetStore, fleet_key, lesson_id: str, operator: str, reason: str,
           now: dt.datetime) -> tuple:
    """Revoke an active lesson; return (the revocation, its signed message robots take)."""
    operator, reason = _label(operator, '--operator', 64), _label(reason, '--reason', 500)
    found = store.db.rows('SELECT * FROM fleet_lessons WHERE lesson_id = ?', (lesson_id,))
    if not found:
        raise FleetError(f'no lesson {lesson_id!r} in the fleet store; robot-memory fleet '
                         'lessons lists them')
    row = found[0]
    if row['state'] != 'active':
        raise FleetError(f'lesson {lesson_id} was revoked at '
                         f'{format_iso(from_epoch(row["revoked_at"]))}; nothing changed')
    now = to_utc(now)
    lesson = Lesson(lesson_id, 'revoke', row['scope'], row['scope_value'], now,
                    row['source_rrn'], row['source_entry'], {}, operator, reason)
    message = seal_lesson(lesson, fleet_key)
    with store.db.transaction():
        store.db.execute("UPDATE fleet_lessons SET state = 'revoked', revoked_at = ?, "
                         'message = ? WHERE lesson_id = ?',
                         (now.timestamp(), message.decode('utf-8'), lesson_id))
        audit(store, now, lesson_id, 'revoke', operator, reason,
              {'scope': row['scope'], 'scope_value': row['scope_value']})
    return lesson, message


def messages_for(store: FleetStore, site: str, model: str) -> list:
    """Return the newest signed message of every lesson for a robot of ``site`` and ``model``."""
    rows = store.db.rows("SELECT message FROM fleet_lessons WHERE (scope = 'site' AND "
                         "scope_value = ?) OR (scope = 'model' AND scope_value = ?) ORDER BY "
                         'issued_at, lesson_id', (site, model))
    return [row['message'].encode('utf-8') for row in rows]


def lessons(store: FleetStore) -> list:
    """Return every lesson (newest first) with its audit rows, for people and the report."""
    found = store.db.rows('SELECT lesson_id, scope, scope_value, source_rrn, source_entry, '
                          'state, issued_at, revoked_at FROM fleet_lessons ORDER BY issued_at '
                          'DESC, lesson_id')
    for row in found:
        row['issued_at'] = format_iso(from_epoch(row['issued_at']))
        row['revoked_at'] = (format_iso(from_epoch(row['revoked_at']))
                             if row['revoked_at'] is not None else None)
        row['audit'] = [
            {'at': format_iso(from_epoch(step['at'])), 'action': step['action'],
             'actor': step['actor'], 'reason': step['reason']}
            for step in store.db.rows('SELECT at, action, actor, reason FROM fleet_audit WHERE '
                                      'lesson_id = ? ORDER BY at', (row['lesson_id'],))]
    return found
