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
The dream window's evidence as episodes: one pass over the rows in the order they were stored.

An episode is what ``episodes_of`` makes of a source key's rows ordered by stamp and
id. Rows are stored in that order per source key but for a report older than its source
key's last; sorting a million rows to find so cost more than the rest of the walk
(bench_autodream). ``window_episodes`` walks the rows in id order, each source key on its
own, and sorts only the rows of the source keys whose stamps went backwards.
"""

from typing import Iterable

_COLUMNS = ('SELECT source_key, signature, stamp, coalesce(end_stamp, stamp), count, severity, '
            'source FROM observations WHERE id > ? AND id <= ?')


def walk_in_id_order(rows, log_gap_s: float, status_gap_s: float) -> tuple:
    """
    Return (``{source key: [[signature, number, start, end, count, opens]]}``, unordered keys).

    ``rows`` as ``episodes_of`` takes them, in id order. A source key whose stamp goes
    backwards is left out of the first dict and named in the set: its episodes need the
    rows sorted by stamp.
    """
    states: dict = {}  # source key -> [last signature, last end, last stamp, number, current]
    found: dict = {}
    unordered: set = set()
    for key, signature, stamp, until, count, severity, source in rows:
        state = states.get(key)
        if state is None:
            if key in unordered:
                continue
            opens = 1
            state = states[key] = [signature, until, stamp, 1, None]
            found[key] = []
        elif stamp < state[2]:
            unordered.add(key)
            del states[key], found[key]
            continue
        else:
            opens = 0
            if not (state[0] == signature
                    and stamp - state[1] <= (log_gap_s if source == 'log' else status_gap_s)):
                state[3] += 1
                state[4] = None
            state[0], state[2] = signature, stamp
        if severity > 0:
            current = state[4]
            if current is None:
                state[4] = current = [signature, state[3], stamp, until, count, opens]
                found[key].append(current)
            else:
                if until > current[3]:
                    current[3] = until
                current[4] += count
        state[1] = until
    return found, unordered


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
    for (signature, _), value in sorted(grouped.items(), key=lambda item: (
            item[0][0] is not None, item[0][0] or '', item[1][0])):
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


def window_episodes(db, after: int, upto: int, log_gap_s: float, status_gap_s: float) -> dict:
    """``episodes_of`` the rows with ``after < id <= upto``, sorting only where needed."""
    found, unordered = walk_in_id_order(db.execute(_COLUMNS, (after, upto)), log_gap_s,
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
    return _by_signature(grouped)
