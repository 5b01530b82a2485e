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
Which facts supersede, which live side by side, which are contested: test/data/fact_pairs.jsonl.

Each line is a pair of facts learned one after the other into a fresh substrate, and what
must happen to the first: ``supersede`` (a single-valued predicate got another value, or the
second denies the first), ``keep`` (compatible: many-valued predicates, other facets, other
conditions) or ``contest`` (unsure: both kept, both flagged contested and still recalled).
"""

import datetime as dt
import json
import pathlib
import sqlite3
import subprocess
import sys

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from robot_memory.substrate import textrules
from support.paths import REPO
from support.processes import child_env

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
LATER = NOW + dt.timedelta(hours=1)
PAIRS = [json.loads(line) for line in
         (pathlib.Path(__file__).resolve().parents[1] / 'data' / 'fact_pairs.jsonl').read_text(
             encoding='utf-8').splitlines() if line.strip()]


def _learn(store, fact, now):
    fields = {'text': fact} if isinstance(fact, str) else dict(fact)
    fields.setdefault('type', 'semantic')
    return store.learn(now=now, **fields)


def _text(fact):
    return fact if isinstance(fact, str) else fact['text']


def test_the_pair_set_covers_both_directions():
    counts = {kind: sum(1 for pair in PAIRS if pair['expect'] == kind)
              for kind in ('supersede', 'keep', 'contest')}
    assert counts['supersede'] >= 20 and counts['keep'] >= 20 and counts['contest'] >= 5, counts


@pytest.mark.parametrize('pair', PAIRS, ids=lambda pair: f'{pair["expect"]}: '
                         f'{_text(pair["second"])}')
def test_a_pair_of_facts_is_revised_as_expected(pair):
    with Substrate(':memory:') as store:
        first = _learn(store, pair['first'], NOW)
        second = _learn(store, pair['second'], LATER)
        assert first.action == 'created' and not second.duplicate, second.message
        old, new = store.get(first.record_id), store.get(second.record_id)
        query = ' '.join(sorted(textrules.content_tokens(_text(pair['first']))
                                | textrules.content_tokens(_text(pair['second']))))
        found = store.recall(query, k=10, now=LATER, reinforce=False).ids()
        if pair['expect'] == 'supersede':
            assert second.action == 'superseded' and second.replaced == [first.record_id]
            assert old.status == 'superseded' and new.status == 'active'
            assert old.payload.revision.superseded_by == new.id
            assert first.record_id not in found and second.record_id in found
        elif pair['expect'] == 'keep':
            assert second.action == 'created' and second.replaced == [], second.message
            assert old.status == 'active' and new.status == 'active'
            assert {first.record_id, second.record_id} <= set(found)
        else:
            assert second.action == 'contested' and second.replaced == [first.record_id]
            assert old.status == 'contested' and new.status == 'contested'
            assert old.payload.revision.status == 'contested'
            assert {(relation.predicate, relation.target_id) for relation in new.relations} == {
                ('contradicts', first.record_id)}
            assert {first.record_id, second.record_id} <= set(found), 'contested stays recalled'
            assert {hit.status for hit in store.recall(query, k=10, now=LATER).hits
                    if hit.id in (first.record_id, second.record_id)} == {'contested'}


def test_many_values_stay_active_and_a_third_single_value_retires_only_its_facet():
    with Substrate(':memory:') as store:
        tea = store.learn('Ben prefers tea', now=NOW).record_id
        seat = store.learn('Ben prefers the window seat', now=NOW).record_id
        kitchen = store.learn('Ben is in the kitchen', now=NOW).record_id
        tall = store.learn('Ben is tall', now=NOW).record_id
        office = store.learn('Ben is in the office', now=LATER)
        assert office.replaced == [kitchen]
        assert [store.get(record).status for record in (tea, seat, kitchen, tall)] == [
            'active', 'active', 'superseded', 'active']
        assert set(store.recall('Ben prefers', now=LATER).ids()) >= {tea, seat}


def test_a_low_confidence_value_contests_a_single_valued_fact_instead():
    with Substrate(':memory:') as store:
        sure = store.learn('The spare key is in drawer 2', now=NOW, confidence=0.9).record_id
        rumour = store.learn('The spare key is in the van', now=LATER, confidence=0.3)
        assert rumour.action == 'contested' and store.get(sure).status == 'contested'
        with pytest.raises(SubstrateError, match='conflicts with live fact'):
            store.learn('The spare key is in the shed', now=LATER, on_conflict='error')


def test_a_stated_cardinality_is_followed_by_later_facts_of_that_predicate():
    with Substrate(':memory:') as store:
        first = store.learn('Ben uses the blue mug', now=NOW, single_valued=True).record_id
        second = store.learn('Ben uses the red mug', now=LATER)
        assert second.action == 'superseded' and second.replaced == [first]
        many = store.learn('Ben drinks tea', now=NOW, single_valued=False,
                           payload={'subject': 'ben', 'predicate': 'drinks', 'object': 'tea'})
        more = store.learn('Ben drinks water', now=LATER,
                           payload={'subject': 'ben', 'predicate': 'drinks', 'object': 'water'})
        assert more.action == 'created' and store.get(many.record_id).status == 'active'
        with pytest.raises(SubstrateError, match='single_valued'):
            store.learn('At 9:00 the door opened', type='episodic', now=NOW, single_valued=True)


def test_the_cardinality_migration_keeps_old_facts_and_frees_many_valued_ones(tmp_path):
    path = tmp_path / 'robot-memory.db'
    with Substrate(path) as store:
        tea = store.learn('Ben prefers tea', now=NOW).record_id
    # Take the database back to its first schema: one active fact per subject and predicate.
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM substrate_migrations WHERE name IN ('0003_fact_cardinality', "
                     "'0006_record_versions')")
        for name in ('insert', 'update', 'delete'):
            conn.execute(f'DROP TRIGGER substrate_version_{name}')
        conn.execute('DROP INDEX substrate_one_active_value')
        conn.execute('DROP INDEX substrate_records_fact_value')
        conn.execute('CREATE INDEX substrate_records_fact ON substrate_records '
                     '(subject, predicate, condition_key)')
        conn.execute('ALTER TABLE substrate_records DROP COLUMN facet')
        conn.execute('ALTER TABLE substrate_records DROP COLUMN object_key')
        conn.execute('CREATE UNIQUE INDEX substrate_one_active_fact ON substrate_records '
                     "(subject, predicate, condition_key) WHERE type = 'semantic' AND "
                     "status = 'active'")
    with Substrate(path) as store:
        assert store.applied_migrations()[-2:] == ['0003_fact_cardinality',
                                                   '0006_record_versions']
        seat = store.learn('Ben prefers the window seat', now=LATER)
        assert seat.action == 'created' and store.get(tea).status == 'active'


def test_revision_benchmark_quick_run_prints_json_lines():
    env = child_env()
    run = subprocess.run([sys.executable, str(REPO / 'bench' / 'bench_revision.py'), '--quick'],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    records = {record['bench']: record for record in map(json.loads, run.stdout.splitlines())}
    pairs = records['fact_pairs']
    assert pairs['n'] == len(PAIRS) and pairs['correct'] == pairs['n'] and pairs['lost'] == 0
    assert pairs['baseline_lost'] > 0, 'the former rule retired compatible facts'
    timing = records['learn_one_subject']
    assert timing['n'] == 200 and timing['ms'] > 0 and timing['baseline_ms'] > 0
