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
Revision of records (supersede, fork, contest, retract, affirm, merge) and of facts.

A new fact is resolved against the live facts it meets (``resolve_fact``); records are
linked by ``relate``.

Each revision is one ``BEGIN IMMEDIATE`` transaction of the store (``store.transaction()``):
nothing partial is ever visible. The functions take the
:class:`~robot_memory.substrate.substrate_store.Substrate` as their first argument and use only its
public interface; ``Substrate``'s revision methods call the public ones.
"""

import datetime as dt
import json
import sqlite3
from typing import Optional
import uuid

from robot_memory.substrate import payloads
from robot_memory.substrate import textrules
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.filters import check_json
from robot_memory.substrate.record_tables import condition_key
from robot_memory.substrate.record_tables import dumps
from robot_memory.substrate.record_tables import LIVE
from robot_memory.substrate.record_tables import object_key
from robot_memory.substrate.records import NewRecord
from robot_memory.substrate.results import RevisionResult
from robot_memory.substrate.salience import row_salience
from robot_memory.substrate.validation import check_provenance
from robot_memory.substrate.validation import check_reason
from robot_memory.substrate.validation import check_tags
from robot_memory.substrate.validation import check_text
from robot_memory.substrate.validation import check_unit
from robot_memory.substrate.validation import epoch
from robot_memory.substrate.vocabulary import MAX_TAGS


def fact_conflicts(store, data: dict, exclude: Optional[str] = None) -> tuple:
    """
    Live facts of the same subject and conditions: ``(same, genuine, unsure)`` rows.

    ``same`` holds the same predicate and object; ``genuine`` conflicts (a single-valued
    facet with another value, or the opposite predicate with the same object); ``unsure``
    may conflict (the same predicate, another value, cardinality unknown on both sides).
    """
    subject = textrules.normalise(data['subject'])
    predicate = textrules.normalise(data['predicate'])
    opposite = textrules.NEGATIONS.get(predicate.replace(' ', '_'))
    hint = data.get('single_valued')
    cardinality, facet = textrules.fact_facet(predicate, data['object'], hint)
    key = object_key(data['object'])
    # A subject may hold thousands of many-valued facts: for those only equal values and
    # stated cardinalities (a stated single value has a facet) matter, and both queries
    # are index seeks.
    columns = ('SELECT id, predicate, facet, object_key, json_extract(payload, '
               "'$.object'), json_type(payload, '$.object'), json_extract(payload, "
               "'$.single_valued') FROM substrate_records WHERE subject = ? AND ")
    condition = condition_key(data.get('validity') or {})
    predicates = (predicate, opposite or predicate, (opposite or predicate).replace('_', ' '))
    if cardinality == 'many':
        rows = store.db.conn.execute(
            f'{columns} predicate IN (?, ?, ?) AND condition_key = ? AND object_key = ? '
            f"AND +type = 'semantic' AND +status IN {LIVE} AND id IS NOT ? UNION "
            f'{columns} predicate = ? AND condition_key = ? AND facet IS NOT NULL AND '
            "type = 'semantic' AND status = 'active' AND id IS NOT ?",
            (subject, *predicates, condition, key, exclude, subject, predicate, condition,
             exclude)).fetchall()
    else:
        rows = store.db.conn.execute(
            f'{columns} predicate IN (?, ?, ?) AND condition_key = ? AND (object_key = ? OR '
            f"predicate = ?) AND +type = 'semantic' AND +status IN {LIVE} AND id IS NOT ?",
            (subject, *predicates, condition, key, predicate, exclude)).fetchall()
    facts = [dict(zip(('id', 'predicate', 'facet', 'object_key', 'object', 'object_type',
                       'hint'), row)) for row in rows]
    facts += store.sealing.sealed_facts(subject, condition, exclude)
    stated = {bool(fact['hint']) for fact in facts
              if fact['predicate'] == predicate and fact['hint'] is not None}
    if hint is None and stated and predicate not in textrules.COPULAS:
        # Someone said how many values this predicate holds for this subject: that beats
        # the vocabulary's general rule.
        cardinality, facet = textrules.fact_facet(predicate, data['object'], True in stated)
    same, genuine, unsure = [], [], []
    for fact in facts:
        value = fact['object']
        if fact['object_type'] in ('object', 'array'):
            value = json.loads(value)
        elif fact['object_type'] in ('true', 'false'):
            value = fact['object_type'] == 'true'
        hint_of = None if fact['hint'] is None else bool(fact['hint'])
        equal = fact['object_key'] == key
        if fact['predicate'] == predicate:
            if equal:
                same.append(fact['id'])
            elif cardinality == 'one' and (fact['facet'] == facet or (
                    fact['facet'] is None and facet == predicate.replace(' ', '_')
                    and textrules.fact_facet(predicate, value, hint_of)[0] == 'unknown')):
                genuine.append(fact['id'])
            elif cardinality == 'unknown' and textrules.fact_facet(
                    predicate, value, hint_of)[0] == 'unknown':
                unsure.append(fact['id'])
        elif opposite is not None and equal:
            genuine.append(fact['id'])
    chosen = {row['id']: row for row in store.rows_by_id(same + genuine + unsure)}
    same, genuine, unsure = ([chosen[record_id] for record_id in group]
                             for group in (same, genuine, unsure))
    return same, genuine, unsure


def resolve_fact(store, conn, now_s: float, data: dict, confidence: float, policy: str,
                 record_id: str) -> tuple:
    """Revise the live facts a new one meets: ``(superseded ids, contested ids, same row)``."""
    same, genuine, unsure = fact_conflicts(store, data)
    if same:
        active = [row for row in same if row['status'] == 'active']
        return [], [], (active or same)[0]
    if not genuine and not unsure:
        return [], [], None
    if policy == 'error':
        old = (genuine or unsure)[0]
        fact = json.loads(old['payload'])
        raise SubstrateError(f'conflicts with live fact {old["id"]} ({old["subject"]} '
                             f'{old["predicate"]} {fact["object"]!r}); choose '
                             'on_conflict="supersede" or "contest", or fork with conditions')
    replace, doubt = [], []
    if genuine and (policy == 'supersede' or (policy == 'auto' and confidence >= max(
            row['confidence'] for row in genuine))):
        replace += genuine
    else:
        doubt += genuine
    (replace if policy == 'supersede' else doubt).extend(unsure)
    for old in replace:
        store.set_status(conn, now_s, old['id'], 'superseded')
        patch_revision(store, conn, old, superseded_by=record_id)
    if replace:
        data.setdefault('revision', {})['supersedes'] = replace[0]['id']
    for old in doubt:
        store.set_status(conn, now_s, old['id'], 'contested')
    if doubt:
        data.setdefault('revision', {})['status'] = 'contested'
    return [row['id'] for row in replace], [row['id'] for row in doubt], None


def link_revision(store, conn, now_s: float, record_id: str, superseded: list,
                  contested: list, actor: str, reason: str) -> None:
    """Relations and audit of what a new fact superseded or contested (already set)."""
    if contested:
        store.set_status(conn, now_s, record_id, 'contested')
    for old in superseded:
        store.link(conn, now_s, record_id, 'supersedes', old)
        store.audit(conn, now_s, old, 'supersede', actor, reason, {'by': record_id})
    for old in contested:
        store.link(conn, now_s, record_id, 'contradicts', old)
        store.link(conn, now_s, old, 'contradicts', record_id)
        store.audit(conn, now_s, old, 'contest', actor, reason, {'by': record_id})


def patch_revision(store, conn, row: dict, **changes) -> None:
    """Update the ``revision`` block of a row's payload (resealed when sealed)."""
    payload = json.loads(row['payload'])
    payload.setdefault('revision', {}).update(changes)
    if row.get('key_id'):
        store.sealing.reseal(conn, row, payload=payload)
        return
    conn.execute('UPDATE substrate_records SET payload = ? WHERE id = ?',
                 (dumps(payload), row['id']))


def revisable(store, record_id: str, what: str) -> dict:
    """Return the row of a live, non-episodic record that may be revised; refuse others."""
    row = store.row(record_id)
    store.sealing.check_open(row)
    if row['type'] == 'episodic':
        raise SubstrateError(f'{record_id} is episodic; episodic records are append-only '
                             '(record the correction as a new semantic or competence '
                             'record, or forget it)')
    if row['status'] not in LIVE:
        raise SubstrateError(f'cannot {what} {record_id}: it is {row["status"]}')
    return row


def supersede(store, record_id: str, now: dt.datetime, reason: str,
              text: Optional[str] = None, payload: Optional[dict] = None,
              object=None, confidence: Optional[float] = None, tags=None,
              context: Optional[dict] = None, provenance=(),
              actor: str = 'api') -> RevisionResult:
    """Replace a record by a new version; the old one becomes ``superseded``, atomically."""
    reason = check_reason(reason)
    now_s = epoch(now)
    sources = check_provenance(provenance)
    with store.transaction() as conn:
        old = revisable(store, record_id, 'supersede')
        new_id = str(uuid.uuid4())
        data = payloads.revised(old, text, payload, object, new_id)
        if old['type'] == 'semantic':
            data.setdefault('revision', {}).update({'supersedes': record_id,
                                                    'status': 'active'})
        store.set_status(conn, now_s, record_id, 'superseded')
        if old['type'] == 'semantic':
            patch_revision(store, conn, old, superseded_by=new_id)
        insert_version(store, conn, now_s, old, new_id, text, data, confidence, tags, context,
                       sources, actor)
        store.link(conn, now_s, new_id, 'supersedes', record_id)
        store.audit(conn, now_s, record_id, 'supersede', actor, reason, {'by': new_id})
        store.audit(conn, now_s, new_id, 'create', actor, reason, {'supersedes': record_id})
    return RevisionResult('supersede', [new_id], [record_id], reason)


def fork(store, record_id: str, conditions: dict, now: dt.datetime, reason: str,
         text: Optional[str] = None, object=None, payload: Optional[dict] = None,
         confidence: Optional[float] = None, original_conditions: Optional[dict] = None,
         actor: str = 'api') -> RevisionResult:
    """
    Add a variant valid under ``conditions``; both stay active (conditional fork).

    ``original_conditions`` narrows the original's validity in the same transaction (it
    is superseded by a copy with those conditions), so the two become disjoint.
    """
    reason = check_reason(reason)
    if not isinstance(conditions, dict) or not conditions:
        raise SubstrateError('a fork needs non-empty conditions, e.g. {"floor": 2}')
    check_json(conditions, 'conditions', max_bytes=2048)
    now_s = epoch(now)
    with store.transaction() as conn:
        old = revisable(store, record_id, 'fork')
        created, changed = [], []
        original = record_id
        if original_conditions is not None:
            if not isinstance(original_conditions, dict):
                raise SubstrateError('original_conditions must be an object')
            narrowed_id = str(uuid.uuid4())
            narrowed = json.loads(old['payload'])
            payloads.apply_conditions(old['type'], narrowed, original_conditions)
            store.set_status(conn, now_s, record_id, 'superseded')
            insert_version(store, conn, now_s, old, narrowed_id, None, narrowed, None, None,
                           None, [], actor)
            store.link(conn, now_s, narrowed_id, 'supersedes', record_id)
            store.audit(conn, now_s, record_id, 'supersede', actor,
                        f'narrowed for a fork: {reason}', {'by': narrowed_id})
            created.append(narrowed_id)
            changed.append(record_id)
            original = narrowed_id
        new_id = str(uuid.uuid4())
        data = payloads.revised(old, text, payload, object, new_id)
        payloads.apply_conditions(old['type'], data, conditions)
        if old['type'] == 'semantic':
            data['revision'] = {'status': 'active'}
        try:
            insert_version(store, conn, now_s, old, new_id, text, data, confidence, None,
                           None, [], actor)
        except sqlite3.IntegrityError:
            raise SubstrateError(f'an active fact with these conditions already exists '
                                 f'({conditions}); supersede it instead of forking') from None
        store.link(conn, now_s, new_id, 'derived_from', original)
        store.audit(conn, now_s, new_id, 'fork', actor, reason,
                    {'from': original, 'conditions': conditions})
        created.append(new_id)
    return RevisionResult('fork', created, changed, reason)


def contest(store, record_id: str, now: dt.datetime, reason: str,
            against: Optional[str] = None, actor: str = 'api') -> RevisionResult:
    """Mark a record (and ``against``, if given) contested, linked by ``contradicts``."""
    reason = check_reason(reason)
    now_s = epoch(now)
    with store.transaction() as conn:
        rows = [revisable(store, record_id, 'contest')]
        if against is not None:
            rows.append(revisable(store, against, 'contest'))
            store.link(conn, now_s, record_id, 'contradicts', against)
            store.link(conn, now_s, against, 'contradicts', record_id)
        for row in rows:
            store.set_status(conn, now_s, row['id'], 'contested')
            store.audit(conn, now_s, row['id'], 'contest', actor, reason,
                        {'against': against} if against else {})
    return RevisionResult('contest', [], [row['id'] for row in rows], reason)


def retract(store, record_id: str, now: dt.datetime, reason: str,
            actor: str = 'api') -> RevisionResult:
    """Withdraw a record: it no longer holds (kept for history, out of recall)."""
    reason = check_reason(reason)
    now_s = epoch(now)
    with store.transaction() as conn:
        revisable(store, record_id, 'retract')
        store.set_status(conn, now_s, record_id, 'retracted')
        store.audit(conn, now_s, record_id, 'retract', actor, reason)
    return RevisionResult('retract', [], [record_id], reason)


def affirm(store, record_id: str, now: dt.datetime, reason: str,
           actor: str = 'api') -> RevisionResult:
    """Resolve a contest in favour of a record: contested becomes active again."""
    reason = check_reason(reason)
    now_s = epoch(now)
    with store.transaction() as conn:
        row = store.row(record_id)
        if row['status'] != 'contested':
            raise SubstrateError(f'{record_id} is {row["status"]}, not contested')
        try:
            store.set_status(conn, now_s, record_id, 'active')
        except sqlite3.IntegrityError:
            raise SubstrateError(f'another active fact has the same subject, predicate and '
                                 f'conditions as {record_id}; retract or supersede it '
                                 'first') from None
        store.audit(conn, now_s, record_id, 'affirm', actor, reason)
    return RevisionResult('affirm', [], [record_id], reason)


def merge(store, record_ids: list, now: dt.datetime, reason: str,
          into: Optional[str] = None, actor: str = 'api') -> RevisionResult:
    """
    Fold records of one type into one keeper (``into`` or the most confident).

    The keeper takes the highest confidence, summed use counts and the union of tags
    and provenance; the others become ``superseded`` by it.
    """
    reason = check_reason(reason)
    ids = list(dict.fromkeys(record_ids or []))
    if len(ids) < 2:
        raise SubstrateError('merge needs at least two distinct record ids')
    if into is not None and into not in ids:
        ids.insert(0, into)
    now_s = epoch(now)
    with store.transaction() as conn:
        rows = [revisable(store, record_id, 'merge') for record_id in ids]
        if len({row['type'] for row in rows}) != 1:
            raise SubstrateError('merge needs records of one type; got '
                                 f'{", ".join(sorted({row["type"] for row in rows}))}')
        keeper = next(row for row in rows if row['id'] == into) if into else max(
            rows, key=lambda row: (row['confidence'], row['access_count'], -row['seq']))
        others = [row for row in rows if row['id'] != keeper['id']]
        for row in others:
            store.set_status(conn, now_s, row['id'], 'superseded')
            if row['type'] == 'semantic':
                patch_revision(store, conn, row, superseded_by=keeper['id'])
            store.link(conn, now_s, keeper['id'], 'supersedes', row['id'])
            store.audit(conn, now_s, row['id'], 'merge', actor, reason,
                        {'into': keeper['id']})
        sources, tags = [], []
        for row in [keeper] + others:
            sources += json.loads(row['provenance'])['sources']
            tags += [tag for tag in row['tags'].split() if tag not in tags]
        unique = list({(source['kind'], source['ref']): source for source in sources}.values())
        conn.execute('UPDATE substrate_records SET confidence = ?, access_count = ?, '
                     'tags = ?, provenance = ?, updated_at = ?, salience = ?, '
                     'last_reinforced_at = ? WHERE id = ?',
                     (max(row['confidence'] for row in rows),
                      sum(row['access_count'] for row in rows),
                      store.sealing.clear_tags(conn, keeper, tags[:MAX_TAGS]),
                      dumps({'sources': unique,
                             'created_by': json.loads(keeper['provenance']).get(
                                 'created_by')}),
                      now_s, max(row_salience(row, now_s) for row in rows), now_s,
                      keeper['id']))
        conn.executemany('INSERT OR IGNORE INTO substrate_provenance (record_id, kind, ref, '
                         'hash) VALUES (?, ?, ?, ?)',
                         [(keeper['id'], source['kind'], source['ref'], source.get('hash'))
                          for source in unique])
        store.audit(conn, now_s, keeper['id'], 'merge', actor, reason,
                    {'merged': [row['id'] for row in others]})
    return RevisionResult('merge', [], [keeper['id']] + [row['id'] for row in others],
                          reason)


def relate(store, source_id: str, predicate: str, target_id: str, now: dt.datetime,
           weight: Optional[float] = None, actor: str = 'api') -> None:
    """Add a relation between two records (supports, contradicts, derived_from, ...)."""
    now_s = epoch(now)
    if weight is not None:
        check_unit(weight, 'weight')
    with store.transaction() as conn:
        store.row(source_id)
        store.row(target_id)
        store.link(conn, now_s, source_id, predicate, target_id, weight)
        store.audit(conn, now_s, source_id, 'relate', actor, f'{predicate} {target_id}')


def insert_version(store, conn, now_s: float, old: dict, new_id: str, text, data: dict,
                   confidence, tags, context, sources, actor) -> None:
    """Insert ``new_id``, a new version of row ``old`` with what the revision changed."""
    text = check_text(text) if text is not None else old['text']
    if text == old['text'] and data.get('kind') == 'semantic' and json.loads(
            old['payload']).get('object') != data.get('object'):
        text = f'{data["subject"]} {data["predicate"]} {data["object"]}'
    if context is not None:
        check_json(context, 'context')
    decay = store.decay_of(old)
    provenance = json.loads(old['provenance'])['sources'] + list(sources)
    store.insert(conn, now_s, NewRecord(
        new_id, old['type'], text, check_tags(tags) if tags is not None else old['tags'].split(),
        context if context is not None else json.loads(old['context']), data,
        old['sensitivity'],
        check_unit(confidence, 'confidence') if confidence is not None else old['confidence'],
        max(row_salience(old, now_s), 0.5), decay, bool(old['pinned']), provenance,
        old['scope'], actor, seal=bool(old.get('key_id'))))
