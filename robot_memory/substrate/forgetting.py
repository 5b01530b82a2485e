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
Forget: archive, hard-delete or restore what a record id or a query names.

The one meaning of forget for the API, CLI, MCP and ROS (``Substrate.forget`` calls
:func:`forget`, which uses the store's public interface); the reply's message is worded
here for every edge.
"""

import datetime as dt
import json
from typing import Optional

from robot_memory.substrate import revision
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.record_tables import LIVE
from robot_memory.substrate.results import ForgetResult
from robot_memory.substrate.validation import check_reason
from robot_memory.substrate.validation import epoch
from robot_memory.substrate.validation import level
from robot_memory.substrate.vocabulary import MAX_QUERY
from robot_memory.substrate.vocabulary import MAX_RECORD_ID
from robot_memory.substrate.vocabulary import SENSITIVITIES


def forget(store, target: str, reason: str, now: dt.datetime, hard: bool = False,
           actor: str = 'api', limit: int = 10, dry_run: bool = False,
           all_matches: bool = False, restore: bool = False,
           by: str = 'auto', trust: Optional[str] = None) -> ForgetResult:
    """
    Archive what ``target`` names (``hard``: delete it; ``restore``: bring it back).

    The one meaning of forget for the API, CLI, MCP and ROS. ``target`` is a record id,
    or a query: the records holding every word of it, best (BM25) first, of which only
    the best is taken unless ``all_matches`` (then at most ``limit``, else refused).
    ``by='id'`` or ``'query'`` says which it is. A query looks among live records
    (active, contested); with ``hard`` among all kept ones; with ``restore`` among the
    archived. No match is an error. ``dry_run`` changes nothing and reports what would
    go. Archived records leave recall but stay in ``get`` and ``history`` and can be
    restored (to their status before the archive, or contested when a live fact now
    conflicts) until they are hard-deleted; the audit entry outlives a hard delete.
    ``trust`` (the caller's level, as in ``recall``): a query skips the records recall
    would withhold, an id naming one is no record's id, and the reply redacts the text of
    those it would redact.
    """
    reason = check_reason(reason)
    if by not in ('auto', 'id', 'query'):
        raise SubstrateError(f'by must be auto, id or query, got {by!r}')
    if hard and restore:
        raise SubstrateError('restore brings an archived record back; it cannot be combined '
                             'with hard (delete)')
    if not isinstance(target, str) or not target.strip():
        raise SubstrateError({'id': 'id is empty; give the id of the record',
                              'query': 'query is empty; give words to match'}.get(
            by, 'say what to forget: a record id or a query'))
    longest = MAX_RECORD_ID if by == 'id' else MAX_QUERY
    if len(target) > longest:
        raise SubstrateError(f'{"target" if by == "auto" else by} is {len(target)} '
                             f'characters; the limit is {longest}')
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise SubstrateError(f'limit must be a whole number of at least 1, got {limit!r}')
    visible = len(SENSITIVITIES) if trust is None else level(trust)
    now_s = epoch(now)
    action = 'restore' if restore else ('delete' if hard else 'archive')
    statuses = ('archived',) if restore else (
        ('active', 'contested', 'retracted', 'superseded', 'archived') if hard else LIVE)
    with store.lock:
        rows, matched = forget_targets(store, target.strip(), by, statuses, all_matches,
                                       limit, action, visible + 1)
    summaries = [{'id': row['id'], 'type': row['type'], 'status': row['status'],
                  'text': row['text'] if SENSITIVITIES.index(row['sensitivity']) <= visible
                  else f'[redacted: {row["sensitivity"]} sensitivity]'} for row in rows]
    if dry_run:
        return ForgetResult([row['id'] for row in rows], hard, reason, True, action,
                            matched, summaries, forget_message(action, True, summaries,
                                                               matched))
    with store.transaction() as conn:
        for row in rows:
            row = store.row(row['id'])  # as of this transaction
            if restore:
                row['status'] = restore_archived(store, conn, now_s, row, actor, reason)
            elif hard:
                conn.execute('DELETE FROM substrate_records WHERE id = ?', (row['id'],))
                conn.execute('DELETE FROM substrate_relations WHERE source_id = ? OR '
                             'target_id = ?', (row['id'], row['id']))
                conn.execute('DELETE FROM substrate_provenance WHERE record_id = ?',
                             (row['id'],))
                store.audit(conn, now_s, row['id'], 'delete', actor, reason,
                            {'type': row['type'], 'status': row['status'],
                             'content_hash': row['content_hash']})
            else:
                conn.execute("UPDATE substrate_records SET status = 'archived', "
                             'archived_at = ?, archive_reason = ?, updated_at = ? '
                             'WHERE id = ?', (now_s, reason, now_s, row['id']))
                store.audit(conn, now_s, row['id'], 'archive', actor, reason,
                            {'previous_status': row['status']})
                row['status'] = 'archived'
            for summary in summaries:
                if summary['id'] == row['id']:
                    summary['status'] = 'deleted' if hard else row['status']
    return ForgetResult([row['id'] for row in rows], hard, reason, False, action, matched,
                        summaries, forget_message(action, False, summaries, matched))


def forget_targets(store, target: str, by: str, statuses: tuple, all_matches: bool,
                   limit: int, action: str, highest: int) -> tuple:
    """Return the rows ``forget`` acts on and how many matched: by id, else by every word."""
    if by in ('auto', 'id'):
        rows = store.rows('id = ?', (target,)) if len(target) <= MAX_RECORD_ID else []
        # a record recall withholds from this caller is no record to it: by id as by query
        # (a low-trust client hard-deleted, or learned the id and type of, what it may not see)
        rows = [row for row in rows if SENSITIVITIES.index(row['sensitivity']) <= highest]
        if rows:
            row = rows[0]
            if action == 'archive' and row['status'] == 'archived':
                raise SubstrateError(f'{row["id"]} is archived already; hard deletes it '
                                     'for good, restore brings it back')
            if action == 'restore' and row['status'] != 'archived':
                raise SubstrateError(f'{row["id"]} is {row["status"]}, not archived; only '
                                     'archived records can be restored')
            return rows, 1
        if by == 'id':
            deleted = store.db.conn.execute(
                "SELECT 1 FROM substrate_audit WHERE record_id = ? AND action = 'delete'",
                (target,)).fetchone()
            raise SubstrateError(f'record id {target!r} was hard-deleted; it cannot be '
                                 'restored' if deleted else f'no record with id {target!r}; '
                                 'recall to find ids')
    words = [word for word in textrules.tokens(target)
             if word not in textrules._STOPWORDS] or textrules.tokens(target)
    if not words:
        raise SubstrateError(f'query {target!r} has no words to match'
                             + ('' if by == 'query' else ' and is no record id'))
    query = ' AND '.join('"' + word.replace('"', '""') + '"' for word in words[:32])
    seqs = [seq for seq, in store.db.conn.execute(
        'SELECT rowid FROM substrate_fts WHERE substrate_fts MATCH ? '
        'ORDER BY bm25(substrate_fts, 1.0, 0.5), rowid', (query,))]
    seqs += [seq for seq, _ in store.sealing.sealed_matches(query, 1000)]
    rank = {seq: position for position, seq in enumerate(seqs)}
    rows = sorted((row for row in store.rows_by_seq(seqs) if row['status'] in statuses
                   and SENSITIVITIES.index(row['sensitivity']) <= highest),
                  key=lambda row: rank[row['seq']])
    if not rows:
        where = 'archived' if action == 'restore' else ('kept' if action == 'delete'
                                                        else 'live')
        raise SubstrateError(f'nothing to {action}: no {where} record matches query '
                             f'{target!r} (every word must appear)'
                             + ('' if by == 'query' else ' and no record has that id')
                             + '; recall to see what is stored')
    if not all_matches:
        return rows[:1], len(rows)
    if len(rows) > limit:
        raise SubstrateError(f'{len(rows)} records match query {target!r}, more than the '
                             f'limit of {limit}; narrow the query or forget by id')
    return rows, len(rows)


def restore_archived(store, conn, now_s: float, row: dict, actor: str,
                     reason: str) -> str:
    """Give an archived record its status from before the archive; returns it."""
    store.sealing.check_open(row)
    previous = 'active'
    for detail, in conn.execute('SELECT detail FROM substrate_audit WHERE record_id = ? '
                                "AND action = 'archive' ORDER BY id DESC LIMIT 1",
                                (row['id'],)):
        previous = json.loads(detail).get('previous_status') or 'active'
    colliding = []
    if row['type'] == 'semantic' and previous in LIVE:
        colliding = [other['id'] for group in revision.fact_conflicts(
            store, json.loads(row['payload']), exclude=row['id']) for other in group]
        for other in colliding:
            store.set_status(conn, now_s, other, 'contested')
    status = 'contested' if colliding else previous
    conn.execute('UPDATE substrate_records SET status = ?, archived_at = NULL, '
                 'archive_reason = NULL, updated_at = ? WHERE id = ?',
                 (status, now_s, row['id']))
    store.audit(conn, now_s, row['id'], 'restore', actor, reason,
                {'status': status, **({'contests': colliding} if colliding else {})})
    revision.link_revision(store, conn, now_s, row['id'], [], colliding, actor,
                           f'restored {row["id"]} conflicts')
    return status


def forget_message(action: str, dry_run: bool, records: list, matched: int) -> str:
    """Return what forget did (or would do), the same words on every edge."""
    verb = {'archive': 'archived', 'delete': 'deleted', 'restore': 'restored'}[action]
    head = f'would {action}' if dry_run else verb
    listed = '; '.join(f'{record["id"]} ({record["status"]}): {record["text"][:80]!r}'
                       for record in records)
    message = f'{head} {len(records)} record{"s" if len(records) != 1 else ""}: {listed}'
    if matched > len(records):
        message += (f' (the best of {matched} matches; ask for all matches to {action} every '
                    'one)')
    return message
