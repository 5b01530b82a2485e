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


"""The dream's shortcuts for thousands of signatures give what comparing every pair gave."""

import datetime as dt
import json

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from robot_memory.common.timeutil import UTC
from robot_memory.dream.incidents import merge_candidates
from robot_memory.dream.incidents import merges
from robot_memory.dream.pattern import GAP_S
from robot_memory.dream.pattern import History
from robot_memory.dream.pattern import STATUS_GAP_S
from robot_memory.dream.restate import device
from robot_memory.dream.restate import incident_partner
from robot_memory.dream.restate import Partners
from robot_memory.dream.restate import start_and_stop_together
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.rules import Rules
from robot_memory.evidence.runs import state_rows
from robot_memory.evidence.window import episodes_of
from robot_memory.evidence.window import walk_in_id_order
from robot_memory.evidence.window import window_evidence
from robot_memory.rcan.schema import new_entry

RULES = Rules.default()
DAY0 = dt.datetime(2026, 5, 1, tzinfo=UTC)
HARDWARE = ('base', 'dock', '')
# Episodes that start and stop together (or not) with each other's.
EPISODES = st.lists(st.sampled_from([[0.0, 600.0], [30.0, 650.0], [5000.0, 5100.0],
                                     [9000.0, 9500.0], [9040.0, 9600.0], [0.0, 30000.0]]),
                    min_size=1, max_size=4, unique_by=lambda item: item[0])


def all_pairs_partner(signature, source_key, episodes, candidates):
    """incident_partner as it stood: every candidate looked at, in signature order."""
    own = episodes.get(signature)
    hardware = device(source_key)
    if not own or not hardware:
        return None
    for other in sorted(candidates):
        if (candidates[other] != source_key and hardware == device(candidates[other])
                and start_and_stop_together(own, episodes.get(other, ()))):
            return other
    return None


def all_pairs_merges(links, by_id, rules):
    """incidents.merges as it stood: every pair of entries compared."""
    facts = merge_candidates(links, by_id, rules)
    group = {entry_id: entry_id for entry_id in facts}

    def root(entry_id):
        while group[entry_id] != entry_id:
            entry_id = group[entry_id]
        return entry_id

    ordered = sorted(facts, key=lambda entry_id: (by_id[entry_id].first_seen, entry_id))
    for index, one in enumerate(ordered):
        for other in ordered[index + 1:]:
            (mine, devices, keys), (theirs, their_devices, their_keys) = facts[one], facts[other]
            if (devices & their_devices and not keys & their_keys
                    and start_and_stop_together(mine, theirs)):
                first, second = sorted((root(one), root(other)), key=ordered.index)
                group[second] = first
    return [(root(entry_id), entry_id) for entry_id in ordered if root(entry_id) != entry_id]


STATUS = st.tuples(st.integers(0, 5), st.sampled_from(HARDWARE), EPISODES)


@settings(max_examples=150, deadline=None)
@given(st.lists(STATUS, max_size=12), st.lists(STATUS, max_size=6), st.integers(0, 5),
       st.sampled_from(HARDWARE), EPISODES)
def test_an_incident_partner_is_the_one_comparing_every_candidate_found(
        existing, later, name, hardware, own):
    episodes = {'ours': own}
    candidates, partners = {}, Partners()
    for number, (other, where, found) in enumerate(existing + later):
        signature = f'sig{number % 9}'  # some signatures come back with another key
        episodes[signature] = found
        candidates[signature] = f'diagnostic|{where}|status {other}'
        partners.add(signature, candidates[signature])
    source_key = f'diagnostic|{hardware}|status {name}'
    assert incident_partner('ours', source_key, episodes, partners) == \
        all_pairs_partner('ours', source_key, episodes, candidates)


def _status_link(number: int, name: int, hardware: str, episodes: list) -> tuple:
    """Return (signature, link) of a WARN status as the dream keeps it, and its rule text."""
    item, = RULES.classify(DiagnosticObservation(DAY0, f'node: status {name}', hardware, 1,
                                                 f'fault {name}'))
    payload = json.loads(item.payload)
    link = {'signature': f'{item.signature}#{number}', 'source': 'diagnostic',
            'source_key': item.source_key, 'rule': '', 'entry_id': None, 'entry_type': None,
            'payload': item.payload, 'history': History([list(e) + [10, 1] for e in episodes])
            .to_json()}
    return link, RULES.candidate_text('diagnostic', payload)


# Two episodes each: the first two histories start and stop together, the others do not.
HISTORIES = st.sampled_from([[[0.0, 600.0], [5000.0, 5100.0]], [[30.0, 650.0], [5040.0, 5150.0]],
                             [[9000.0, 9500.0], [12000.0, 12100.0]], [[0.0, 30000.0]]])
ENTRY = st.tuples(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(HARDWARE), HISTORIES),
                           min_size=1, max_size=2),
                  st.integers(0, 3), st.booleans())


@settings(max_examples=150, deadline=None)
@given(st.lists(ENTRY, min_size=2, max_size=10))
def test_the_incidents_merged_are_those_comparing_every_pair_found(entries):
    links, by_id = {}, {}
    for number, (statuses, day, resolved) in enumerate(entries):
        made = [_status_link(number * 10 + index, *status)
                for index, status in enumerate(statuses)]
        entry = new_entry('hardware_observation', made[0][1], 0.5,
                          DAY0 + dt.timedelta(days=day), taken=by_id)
        if resolved:
            entry = entry.model_copy(update={'type': 'resolved'})
        by_id[entry.id] = entry
        for link, _ in made:
            link['entry_id'] = entry.id
            links[link['signature']] = link
    assert merges(links, by_id, RULES) == all_pairs_merges(links, by_id, RULES)


ROW = st.tuples(st.sampled_from(['a', 'b', 'c']), st.sampled_from([0, 1, 30, 119, 121, 3601, -5]),
                st.sampled_from(['log', 'diagnostic']), st.sampled_from([0, 1, 2]),
                st.sampled_from([None, '1', '2', 'x']), st.sampled_from([None, 0, 10, 200]),
                st.integers(1, 3))


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW, max_size=60), st.integers(0, 20))
def test_one_pass_in_id_order_gives_the_sorted_episodes_and_the_group_by_sums(evidence, after):
    store = EvidenceStore(None)
    db = store.db
    stamps, rows, backwards = {}, [], set()
    for key, step, source, severity, mark, extra, count in evidence:
        stamp = stamps.get(key, 1e9) + step
        if key in stamps and step < 0 and len(rows) >= after:
            backwards.add(key)
        stamps[key] = stamp
        signature = None if mark is None else 'x' if mark == 'x' else f'{key}{mark}'
        rows.append((stamp, source, signature, key, severity, json.dumps([key, len(rows)]),
                     None if extra is None else stamp + extra, count))
    db.conn.executemany('INSERT INTO observations (stamp, source, signature, source_key, '
                        'severity, payload, end_stamp, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
                        rows)
    columns = ('SELECT source_key, signature, stamp, coalesce(end_stamp, stamp), count, severity, '
               'source{} FROM observations WHERE id > ? AND id <= ?')
    _, unordered, _ = walk_in_id_order(db.execute(columns.format(', id'), (after, 10**9)),
                                       GAP_S, STATUS_GAP_S)
    assert unordered <= backwards
    expected = episodes_of(db.execute(columns.format('') + ' ORDER BY source_key, stamp, id',
                                      (after, 10**9)), GAP_S, STATUS_GAP_S)
    groups, last_bad, episodes = window_evidence(db, after, 10**9, GAP_S, STATUS_GAP_S)
    assert episodes == expected
    assert (groups, last_bad) == store.evidence_groups(after, 10**9)
    store.close()


# state_rows as it stood: the statuses with an OK state as a subquery of the one scan.
STATE_ROWS_SQL = (
    'SELECT source_key, stamp, coalesce(end_stamp, stamp), severity, payload '
    "FROM observations WHERE source = 'diagnostic' AND stamp >= ? AND source_key IN ("
    "SELECT DISTINCT source_key FROM observations WHERE severity = 0 AND payload != '' "
    'AND stamp >= ?) ORDER BY source_key, stamp, id')


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(['a', 'b', 'c']), st.integers(-50, 50),
                          st.sampled_from(['log', 'diagnostic']), st.sampled_from([0, 1]),
                          st.sampled_from(['', '{"message":"Charging"}'])), max_size=40),
       st.integers(-60, 60))
def test_state_rows_are_those_of_the_single_query(reports, since):
    store = EvidenceStore(None)
    store.db.conn.executemany(
        'INSERT INTO observations (stamp, source, signature, source_key, severity, payload) '
        'VALUES (?, ?, ?, ?, ?, ?)',
        [(1e9 + at, source, None if not severity else f'{key}!', key, severity, payload)
         for key, at, source, severity, payload in reports])
    assert state_rows(store.db, 1e9 + since) == \
        store.db.execute(STATE_ROWS_SQL, (1e9 + since, 1e9 + since)).fetchall()
    store.close()
