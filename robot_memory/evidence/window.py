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
The dream window's evidence, per signature and as episodes, in one pass over its rows.

An episode is what ``episodes_of`` makes of a source key's rows ordered by stamp and
id. Rows are stored in that order per source key but for a report older than its source
key's last; sorting a million rows to find so cost more than the rest of the walk
(bench_autodream). ``window_episodes`` walks the rows in id order, each source key on its
own, and sorts only the rows of the source keys whose stamps went backwards. The same pass
sums each signature's evidence (``window_evidence``: what ``groups_of`` makes of the
GROUP BY in ``EvidenceStore.evidence_groups``).
"""

import dataclasses
from typing import Iterable

_COLUMNS = ('SELECT source_key, signature, stamp, coalesce(end_stamp, stamp), count, severity, '
            'source FROM observations WHERE id > ? AND id <= ?')
_WITH_ID = _COLUMNS.replace('source FROM', 'source, id FROM')
_CHUNK = 500  # ids a statement looks up (SQLite before 3.32 took 999 variables)


@dataclasses.dataclass
class EvidenceGroup:
    """All new bad evidence of one signature in a dream window."""

    signature: str
    source: str
    source_key: str
    count: int
    errors: int
    first: float
    last: float
    payload: str


def groups_of(rows) -> tuple:
    """
    Return ``{signature: EvidenceGroup}`` and ``{source key: last bad}`` of aggregate rows.

    ``rows``: (signature, source key, count, errors, first, last, source, payload, last id)
    per (signature, source key); a signature's source and payload are its latest row's.
    """
    groups: dict = {}
    last_bad: dict = {}
    newest: dict = {}
    for signature, source_key, count, errors, first, last, source, payload, last_id in rows:
        if last_bad.get(source_key) is None or last > last_bad[source_key]:
            last_bad[source_key] = last
        group = groups.get(signature)
        if group is None:
            groups[signature] = EvidenceGroup(signature, source, source_key, count, errors,
                                              first, last, payload)
            newest[signature] = last_id
            continue
        group.count += count
        group.errors += errors
        group.first = min(group.first, first)
        group.last = max(group.last, last)
        if last_id > newest[signature]:
            newest[signature] = last_id
            group.source, group.source_key, group.payload = source, source_key, payload
    return groups, last_bad


def walk_in_id_order(rows, log_gap_s: float, status_gap_s: float) -> tuple:
    """
    Return (episodes by source key, unordered keys, sums by source key) of rows in id order.

    ``rows`` as ``episodes_of`` takes them with the id last, in id order. Episodes are
    ``{source key: [[signature, number, start, end, count, opens]]}``; a source key whose
    stamp goes backwards is left out of them and named in the set: its episodes need the
    rows sorted by stamp. Sums are ``{source key: {signature: [count, errors, first, last,
    last id]}}`` of the bad rows, every source key's.
    """
    states: dict = {}  # source key -> [signature, end, stamp, number, current, sums, in order]
    found: dict = {}
    unordered: set = set()
    for key, signature, stamp, until, count, severity, source, row_id in rows:
        state = states.get(key)
        walk = True
        if state is None:
            opens = 1
            state = states[key] = [signature, until, stamp, 1, None, {}, True]
            found[key] = []
        elif not state[6]:
            walk = False
        elif stamp < state[2]:
            unordered.add(key)
            del found[key]
            state[6] = walk = False
        else:
            opens = 0
            if not (state[0] == signature
                    and stamp - state[1] <= (log_gap_s if source == 'log' else status_gap_s)):
                state[3] += 1
                state[4] = None
            state[0], state[1], state[2] = signature, until, stamp
        if severity > 0:
            if walk:
                current = state[4]
                if current is None:
                    state[4] = current = [signature, state[3], stamp, until, count, opens]
                    found[key].append(current)
                else:
                    if until > current[3]:
                        current[3] = until
                    current[4] += count
            sums = state[5].get(signature)
            if sums is None:
                state[5][signature] = [count, count if severity >= 2 else 0, stamp, until,
                                       row_id]
            else:
                sums[0] += count
                if severity >= 2:
                    sums[1] += count
                if stamp < sums[2]:
                    sums[2] = stamp
                if until > sums[3]:
                    sums[3] = until
                sums[4] = row_id
    return found, unordered, {key: state[5] for key, state in states.items() if state[5]}


def _walk_sorted(rows: Iterable, log_gap_s: float, status_gap_s: float, grouped: dict) -> None:
    """Add the episodes of rows ordered by source key, stamp and id to ``grouped``."""
    last_key = last_signature = last_until = None
    episode = 0
    for key, signature, stamp, until, count, severity, source in rows:
        if key != last_key:
            opens, episode = 1, 1
        else:
            opens = 0
            gap = log_gap_s if source == 'log' else status_gap_s
            if not (last_signature == signature and stamp - last_until <= gap):
                episode += 1
        last_key, last_signature, last_until = key, signature, until
        if severity > 0:
            _merge(grouped, signature, episode, stamp, until, count, opens)


def _merge(grouped: dict, signature, episode: int, start: float, end: float, count: int,
           opens: int) -> None:
    held = grouped.get((signature, episode))
    if held is None:
        grouped[(signature, episode)] = [start, end, count, opens]
    else:
        held[0], held[1] = min(held[0], start), max(held[1], end)
        held[2] += count
        held[3] = max(held[3], opens)


def _by_signature(grouped: dict) -> dict:
    found: dict = {}
    # Whole episodes compared: episodes of one signature starting together on two source
    # keys come in one order however the rows were walked.
    for (signature, _), value in sorted(grouped.items(), key=lambda item: (
            item[0][0] is not None, item[0][0] or '', item[1])):
        found.setdefault(signature, []).append(value)
    return found


def episodes_of(rows: Iterable, log_gap_s: float, status_gap_s: float) -> dict:
    """
    Return bad evidence as episodes per signature, ``{signature: [[start, end, count, opens]]}``.

    ``rows`` are (source key, signature, stamp, end, count, severity, source) ordered by
    source key, stamp and id. An episode of a source key ends at a report of another
    signature (an OK too) or a gap over ``log_gap_s`` / ``status_gap_s`` from the last
    report's end; ``opens`` is 1 when it holds the source key's first report. Episodes are
    numbered per source key and grouped by (signature, number), as the SQL this replaced.
    """
    grouped: dict = {}
    _walk_sorted(rows, log_gap_s, status_gap_s, grouped)
    return _by_signature(grouped)


def window_evidence(db, after: int, upto: int, log_gap_s: float, status_gap_s: float) -> tuple:
    """
    Return (groups, last bad per source key, episodes) of the rows with ``after < id <= upto``.

    What ``EvidenceStore.evidence_groups`` and ``episodes_of`` give, in one pass in id
    order; only the source keys whose stamps went backwards are read again, sorted.
    """
    found, unordered, sums = walk_in_id_order(db.execute(_WITH_ID, (after, upto)), log_gap_s,
                                              status_gap_s)
    grouped: dict = {}
    for episodes in found.values():
        for signature, number, start, end, count, opens in episodes:
            _merge(grouped, signature, number, start, end, count, opens)
    if unordered:
        with db.atomic():
            db.execute('CREATE TEMP TABLE IF NOT EXISTS dream_unordered (source_key TEXT '
                       'PRIMARY KEY)')
            db.execute('DELETE FROM temp.dream_unordered')
            db.conn.executemany('INSERT INTO temp.dream_unordered VALUES (?)',
                                [(key,) for key in unordered])
        _walk_sorted(db.execute(_COLUMNS + ' AND source_key IN (SELECT source_key FROM '
                                'temp.dream_unordered) ORDER BY source_key, stamp, id',
                                (after, upto)), log_gap_s, status_gap_s, grouped)
    rows = sorted(((signature, key, *values) for key, signatures in sums.items()
                   for signature, values in signatures.items()),
                  key=lambda row: (row[0] is not None, row[0] or '', row[1]))
    latest: dict = {}
    ids = [row[6] for row in rows]
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        latest.update((row[0], row[1:]) for row in db.execute(
            f'SELECT id, source, payload FROM observations WHERE id IN '
            f'({", ".join("?" * len(chunk))})', chunk))
    groups, last_bad = groups_of((signature, key, count, errors, first, last, *latest[last_id],
                                  last_id)
                                 for signature, key, count, errors, first, last, last_id in rows)
    return groups, last_bad, _by_signature(grouped)


def window_episodes(db, after: int, upto: int, log_gap_s: float, status_gap_s: float) -> dict:
    """``episodes_of`` the rows with ``after < id <= upto`` (see ``window_evidence``)."""
    return window_evidence(db, after, upto, log_gap_s, status_gap_s)[2]
