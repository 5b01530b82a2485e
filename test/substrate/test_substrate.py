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

"""Tests of the typed memory substrate: records, learn, recall, forget, revision, metrics."""

import dataclasses
import datetime as dt
import sqlite3

import pytest

from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.substrate import effective_salience
from robot_memory.substrate import HashingEmbedder
from robot_memory.substrate import json_schema
from robot_memory.substrate import Substrate
from robot_memory.substrate import SubstrateError
from robot_memory.substrate import textrules
from robot_memory.substrate.models import MemoryRecord
from support.samples import DAY
from support.samples import NOW


@pytest.fixture
def store(tmp_path):
    """Return a substrate in a fresh database file."""
    with Substrate(tmp_path / 'robot-memory.db') as substrate:
        yield substrate


@pytest.fixture
def vector_store(tmp_path):
    """Return a substrate with the local hashing embedder on."""
    with Substrate(tmp_path / 'robot-memory.db', embedder=HashingEmbedder()) as substrate:
        yield substrate


def snapshot(store):
    """Every row of every substrate table, to show that nothing changed."""
    tables = ('substrate_records', 'substrate_relations', 'substrate_audit',
              'substrate_provenance')
    return {table: store.db.conn.execute(f'SELECT * FROM {table} ORDER BY 1, 2').fetchall()
            for table in tables}


# --------------------------------------------------------------------------- schemas

def test_json_schemas_follow_the_normative_appendix():
    record = json_schema('MemoryRecord')
    assert record['$id'] == 'mem://schemas/MemoryRecord'
    assert set(record['required']) >= {'id', 'type', 'sensitivity', 'confidence', 'salience',
                                       'created_at', 'updated_at', 'lifecycle', 'provenance',
                                       'payload'}
    assert record['properties']['type']['enum'] == ['episodic', 'working', 'semantic',
                                                    'competence', 'plan_graph']
    assert record['properties']['sensitivity']['enum'] == ['public', 'low', 'medium', 'high',
                                                           'hyper']
    assert record['properties']['confidence']['minimum'] == 0
    assert record['properties']['confidence']['maximum'] == 1
    semantic = json_schema('SemanticPayload')
    assert set(semantic['required']) == {'subject', 'predicate', 'object'}
    assert semantic['properties']['kind']['const'] == 'semantic'
    competence = json_schema('CompetencePayload')
    assert set(competence['required']) >= {'skill_name', 'triggers', 'recipe'}
    plan = json_schema('PlanGraphPayload')
    assert set(plan['required']) >= {'plan_id', 'version', 'nodes', 'edges'}
    edge = plan['$defs']['PlanEdge']
    assert set(edge['required']) == {'from', 'to', 'kind'}
    assert edge['properties']['kind']['enum'] == ['data', 'control']
    working = json_schema('WorkingPayload')
    assert set(working['required']) >= {'thread_id', 'state'}
    assert working['properties']['state']['enum'] == ['planning', 'executing', 'blocked',
                                                      'waiting', 'done']
    episodic = json_schema('EpisodicPayload')
    assert 'timeline' in episodic['required']
    lifecycle = json_schema('Lifecycle')
    assert set(lifecycle['required']) == {'decay', 'last_reinforced_at'}
    decay = json_schema('DecayProfile')
    assert decay['properties']['curve']['enum'] == ['exponential', 'linear', 'custom']
    assert 'half_life_seconds' in decay['required']
    relation = json_schema('Relation')
    assert set(relation['required']) == {'predicate', 'target_id'}
    assert {'supports', 'contradicts', 'derived_from', 'supersedes'} <= set(
        relation['properties']['predicate']['enum'])
    with pytest.raises(ValueError, match='no schema named'):
        json_schema('Nope')


def test_the_rfc_example_semantic_record_validates():
    example = {
        'id': '9a2b', 'type': 'semantic', 'sensitivity': 'low', 'confidence': 0.9,
        'salience': 0.8, 'created_at': '2026-01-28T00:00:00Z',
        'updated_at': '2026-01-28T00:00:00Z',
        'lifecycle': {'decay': {'curve': 'exponential', 'half_life_seconds': 7776000},
                      'last_reinforced_at': '2026-01-28T00:00:00Z'},
        'provenance': {'sources': [{'kind': 'event', 'ref': 'evt://1'}]},
        'payload': {'kind': 'semantic', 'subject': 'user', 'predicate': 'prefers',
                    'object': 'go', 'validity': {'mode': 'conditional',
                                                 'conditions': {'project_kind': 'backend'}},
                    'revision': {'status': 'active'}},
        'text': 'user prefers go for backend services',
    }
    record = MemoryRecord.model_validate(example)
    assert record.payload.validity.conditions == {'project_kind': 'backend'}
    assert MemoryRecord.model_validate(record.to_dict()) == record


# --------------------------------------------------------------------------- learn

def test_learn_classifies_by_rule(store):
    cases = {
        'The charging dock is in the hallway': 'semantic',
        'Alice prefers the robot to stay out of the study': 'semantic',
        'To dock the robot: first drive to the marker, then align, finally reverse slowly':
            'competence',
        'At 10:02 the left wheel stalled near the kitchen door': 'episodic',
        'Currently mapping the second floor, waiting for the elevator': 'working',
    }
    for text, expected in cases.items():
        result = store.learn(text, now=NOW)
        assert (result.action, result.type) == ('created', expected), text
    procedure = store.get(store.learn('How to empty the bin: first lift the lid, then tip it, '
                                      'finally put it back', now=NOW).record_id)
    assert procedure.payload.skill_name == 'empty the bin'
    assert [step.step for step in procedure.payload.recipe] == ['lift the lid', 'tip it',
                                                                'put it back']
    fact = store.recall('charging dock', now=NOW).hits[0]
    assert fact.payload['subject'] == 'the charging dock'
    assert fact.payload['object'] == 'in the hallway'


def test_duplicates_reinforce_instead_of_adding(store):
    first = store.learn('The charging dock is in the hallway', now=NOW, salience=0.5)
    again = store.learn('the  charging dock is in the hallway.', now=NOW + DAY)
    assert again.action == 'reinforced' and again.duplicate and again.match == 'exact'
    assert again.record_id == first.record_id
    assert 'reinforced' in again.message
    near = store.learn('Robot vacuum battery lasts ninety minutes on carpet floors', now=NOW)
    similar = store.learn('Robot vacuum battery lasts ninety minutes on carpet floors today',
                          type='semantic', now=NOW)
    assert similar.match == 'jaccard' and similar.record_id == near.record_id
    assert similar.similarity >= 0.8
    assert store.count() == 2
    record = store.get(first.record_id, NOW + DAY)
    assert record.salience > 0.5
    assert [entry.action for entry in store.history(first.record_id)] == ['create', 'reinforce']


def test_jaccard_threshold_is_configurable(tmp_path):
    with Substrate(tmp_path / 'a.db', jaccard_threshold=0.99) as strict:
        strict.learn('Robot vacuum battery lasts ninety minutes on carpet floors', now=NOW)
        result = strict.learn('Robot vacuum battery lasts ninety minutes on carpet floors today',
                              type='semantic', now=NOW)
        assert result.action == 'created'


def test_cosine_dedup_when_vectors_are_on(vector_store):
    first = vector_store.learn('gripper force calibration value is 12.5 newtons', now=NOW)
    vector_store.jaccard_threshold = 1.0
    again = vector_store.learn('Gripper force calibration value is 12.5 newtons!!', now=NOW,
                               dedup=True)
    assert again.record_id == first.record_id
    vector_store.cosine_threshold = 0.5
    paraphrase = vector_store.learn('the gripper calibration force value is 12.5 newton',
                                    now=NOW)
    assert paraphrase.match == 'cosine' and paraphrase.record_id == first.record_id


def test_episodic_events_are_only_deduplicated_exactly(store):
    store.learn('At 10:02 the battery dropped to 15 percent', now=NOW)
    other = store.learn('At 10:07 the battery dropped to 15 percent', now=NOW)
    assert other.action == 'created'


def test_learn_validates_its_input(store):
    bad = [
        ({'text': ''}, 'empty'),
        ({'text': 'x' * 5000}, 'limit is 4000'),
        ({'text': 'ok', 'type': 'fact'}, 'not one of'),
        ({'text': 'ok', 'sensitivity': 'secret'}, 'sensitivity'),
        ({'text': 'ok', 'tags': ['a b']}, 'tag'),
        ({'text': 'ok', 'tags': [f't{i}' for i in range(30)]}, 'limit is 20'),
        ({'text': 'ok', 'confidence': 1.5}, 'between 0 and 1'),
        ({'text': 'ok', 'context': {'a': {'b': {'c': {'d': {'e': {'f': {'g': {'h': 1}}}}}}}}},
         'deeper'),
        ({'text': 'ok', 'context': {'blob': 'x' * 20000}}, 'bytes of JSON'),
        ({'text': 'ok', 'context': [1]}, 'must be an object'),
        ({'text': 'ok', 'type': 'working', 'payload': {'thread_id': 't', 'state': 'dancing'}},
         'working payload is invalid'),
        ({'text': 'ok', 'provenance': [{'kind': 'rumour', 'ref': 'x'}]}, 'provenance'),
    ]
    for kwargs, message in bad:
        with pytest.raises(SubstrateError, match=message):
            store.learn(now=NOW, **kwargs)
    with pytest.raises(SubstrateError, match='aware datetime'):
        store.learn('ok', now=dt.datetime(2026, 4, 1))
    assert store.count(status=None) == 0


def test_secrets_are_classified_high_and_provenance_is_linked(store):
    result = store.learn('The wifi password is hunter2', now=NOW,
                         provenance=['observation:42', {'kind': 'entry', 'ref': 'entry:mem-1'}])
    record = store.get(result.record_id)
    assert record.sensitivity == 'high'
    assert [(source.kind, source.ref) for source in record.provenance.sources] == [
        ('observation', 'observation:42'), ('entry', 'entry:mem-1')]
    linked = store.db.conn.execute('SELECT record_id FROM substrate_provenance WHERE ref = ?',
                                   ('observation:42',)).fetchall()
    assert linked == [(result.record_id,)]


# --------------------------------------------------------------------------- salience

def test_salience_decays_at_read_time_and_pinned_never_decays(store):
    record_id = store.learn('The lift is slow in the morning', now=NOW, salience=0.8,
                            decay={'curve': 'exponential', 'half_life_seconds': 86400,
                                   'min_salience': 0.1}).record_id
    assert store.get(record_id, NOW + DAY).effective_salience == pytest.approx(0.4)
    assert store.get(record_id, NOW + 10 * DAY).effective_salience == pytest.approx(0.1)
    assert store.get(record_id).salience == pytest.approx(0.8)
    store.pin(record_id, NOW)
    assert store.get(record_id, NOW + 100 * DAY).effective_salience == pytest.approx(0.8)
    store.unpin(record_id, NOW + 100 * DAY)
    assert store.get(record_id, NOW + 101 * DAY).effective_salience == pytest.approx(0.4)
    assert [entry.action for entry in store.history(record_id)] == ['create', 'pin', 'unpin']


def test_effective_salience_curves():
    assert effective_salience(0.8, 'linear', 100, 0.0, 100) == pytest.approx(0.4)
    assert effective_salience(0.8, 'linear', 100, 0.2, 1000) == pytest.approx(0.2)
    assert effective_salience(0.8, 'custom', 100, 0.0, 1000) == pytest.approx(0.8)
    assert effective_salience(0.8, 'exponential', 100, 0.0, -50) == pytest.approx(0.8)
    assert effective_salience(0.8, 'exponential', 100, 0.1, 10, age_s=11,
                              max_age_s=10) == 0.0
    assert effective_salience(0.8, 'exponential', 100, 0.1, 10, pinned=True, age_s=11,
                              max_age_s=10) == 0.8


def test_recall_counts_access_and_reinforces(store):
    record_id = store.learn('The mop lives in the utility closet', now=NOW,
                            salience=0.5).record_id
    hit = store.recall('where is the mop', now=NOW + DAY).hits[0]
    assert hit.id == record_id and hit.access_count == 1
    record = store.get(record_id)
    assert record.access_count == 1
    assert record.last_accessed == NOW + DAY
    decayed = 0.5 * 0.5 ** (1 / 90)
    assert record.salience == pytest.approx(decayed + store.recall_gain)
    store.recall('mop', now=NOW + DAY, reinforce=False)
    assert store.get(record_id).access_count == 1


def test_a_recall_that_records_nothing_writes_nothing(store):
    record_id = store.learn('The mop lives in the utility closet', now=NOW).record_id
    logged = 'SELECT count(*) FROM substrate_recalls'
    before = (store.get(record_id), store.db.conn.execute(logged).fetchone())
    result = store.recall('where is the mop', now=NOW + DAY, record=False)
    assert result.hits[0].id == record_id and result.hits[0].access_count == 0
    assert result.recall_id is None
    assert (store.get(record_id), store.db.conn.execute(logged).fetchone()) == before


# --------------------------------------------------------------------------- recall

def test_recall_ranks_and_filters_on_context(store):
    store.learn('Battery low warning in the kitchen', now=NOW,
                context={'location': {'room': 'kitchen'}, 'battery': 0.15})
    store.learn('Battery low warning in the hallway', now=NOW,
                context={'location': {'room': 'hallway'}, 'battery': 0.5})
    store.learn('Battery replaced last week', now=NOW, context={'battery': 1.0})
    kitchen = store.recall('battery', now=NOW, filters={'context.location.room': 'kitchen'})
    assert [hit.text for hit in kitchen.hits] == ['Battery low warning in the kitchen']
    low = store.recall('battery', now=NOW, filters={'context.battery': {'$lt': 0.2}})
    assert [hit.context['battery'] for hit in low.hits] == [0.15]
    assert len(store.recall('battery', now=NOW,
                            filters={'context.battery': {'$gte': 0.5}}).hits) == 2
    assert len(store.recall('battery', now=NOW,
                            filters={'context.battery': {'$lte': 0.5, '$gt': 0.15}}).hits) == 1
    others = store.recall('battery', now=NOW,
                          filters={'context.location.room': {'$ne': 'kitchen'}})
    assert [hit.text for hit in others.hits] == ['Battery low warning in the hallway']
    mismatched = store.recall('battery', now=NOW, filters={'context.battery': {'$lt': 'x'}})
    assert mismatched.hits == []
    with pytest.raises(SubstrateError, match='unknown filter operator'):
        store.recall('battery', now=NOW, filters={'context.battery': {'$regex': '.*'}})
    with pytest.raises(SubstrateError, match='must start with "context."'):
        store.recall('battery', now=NOW, filters={'battery': 1})


def test_recall_weights_by_confidence(store):
    weak = store.learn('Door sensor on the porch is flaky', now=NOW, confidence=0.2)
    strong = store.learn('Door sensor on the garage is flaky', now=NOW, confidence=1.0)
    assert store.recall('door sensor flaky', now=NOW).ids() == [strong.record_id,
                                                                weak.record_id]


def test_recall_sorts_nearest_first(store):
    far = store.learn('Charging pad near the window', now=NOW, context={'position': [10, 0]})
    near = store.learn('Charging pad near the sofa', now=NOW,
                       context={'position': {'x': 1, 'y': 1}})
    nowhere = store.learn('Charging pad somewhere upstairs', now=NOW)
    result = store.recall('charging pad', now=NOW, near=(0, 0))
    assert result.ids() == [near.record_id, far.record_id, nowhere.record_id]
    assert result.hits[0].distance == pytest.approx(2 ** 0.5)
    bounded = store.recall('charging pad', now=NOW, near=(0, 0, 0), max_distance=5)
    assert bounded.ids() == [near.record_id]
    with pytest.raises(SubstrateError, match='near must be'):
        store.recall('charging pad', now=NOW, near=(1,))


def test_recall_sanitises_fts_syntax(store):
    store.learn('The NEAR sensor reads AND logs distances', now=NOW)
    for query in ['"unbalanced', 'NEAR(a b', 'text:sensor', 'AND OR NOT', '(((', ')',
                  'sensor*', '^sensor', 'a - b', "it's", '{text}: x', 'NEAR/2']:
        store.recall(query, now=NOW)
    assert store.recall('NEAR sensor AND', now=NOW).hits
    assert store.recall('!!!', now=NOW).hits == []
    for empty in ['', '   ']:
        with pytest.raises(SubstrateError, match='query is empty'):
            store.recall(empty, now=NOW)
    with pytest.raises(SubstrateError, match='k must be'):
        store.recall('sensor', k=0, now=NOW)
    with pytest.raises(SubstrateError, match='k must be'):
        store.recall('sensor', k=101, now=NOW)


def test_trust_redacts_one_level_above_and_withholds_further(store):
    ids = {level: store.learn(f'Front door code note for {level} level', now=NOW,
                              sensitivity=level).record_id
           for level in ('public', 'low', 'medium', 'high', 'hyper')}
    result = store.recall('front door code note', k=10, trust='low', now=NOW)
    shown = {hit.id: hit for hit in result.hits}
    assert set(shown) == {ids['public'], ids['low'], ids['medium']}
    redacted = shown[ids['medium']]
    assert redacted.redacted and redacted.text == '[redacted: medium sensitivity]'
    assert redacted.payload is None and redacted.context is None and redacted.type == 'semantic'
    assert result.withheld == 2 and result.redacted == 1
    assert store.get(ids['medium']).access_count == 0
    everything = store.recall('front door code note', k=10, trust='hyper', now=NOW)
    assert len(everything.hits) == 5 and everything.withheld == 0
    with pytest.raises(SubstrateError, match='trust'):
        store.recall('door', trust='admin', now=NOW)


def test_a_record_withheld_from_a_caller_cannot_be_forgotten_by_it_even_by_id(store):
    # A low-trust MCP client could hard-delete (and, dry, read the type of) a record recall
    # withheld from it, by its id: the query path checked the level, the id path did not
    kept = store.learn('The lab safe is behind the blue panel', now=NOW,
                       sensitivity='high').record_id
    medium = store.learn('The spare key is in the red box', now=NOW,
                         sensitivity='medium').record_id
    assert store.recall('lab safe', trust='low', now=NOW).withheld == 1
    for hard, dry_run in ((True, True), (True, False), (False, False)):
        with pytest.raises(SubstrateError) as refused:
            store.forget(kept, 'tidy up', now=NOW, hard=hard, dry_run=dry_run, trust='low')
        assert 'no record has that id' in str(refused.value)
        assert 'semantic' not in str(refused.value)
        with pytest.raises(SubstrateError, match=f"no record with id '{kept}'"):
            store.forget(kept, 'tidy up', now=NOW, hard=hard, by='id', trust='low')
    assert store.get(kept).status == 'active'
    # one level above the caller's is redacted, as recall redacts it, and can be forgotten
    done = store.forget(medium, 'tidy up', now=NOW, trust='low')
    assert done.ids == [medium] and done.records[0]['text'] == '[redacted: medium sensitivity]'
    assert store.forget(kept, 'tidy up', now=NOW, trust='high').ids == [kept]


def test_texts_that_differ_in_their_numbers_are_two_facts_not_a_duplicate(vector_store):
    # merged as a cosine duplicate: a recall for marker 12 found only the marker-11 record
    first = vector_store.learn('Robot A observed marker number 11 near shelf A11', now=NOW)
    second = vector_store.learn('Robot A observed marker number 12 near shelf A12', now=NOW)
    assert second.record_id != first.record_id and second.action == 'created'
    hits = vector_store.recall('marker 12 shelf A12', now=NOW).hits
    assert hits[0].id == second.record_id
    again = vector_store.learn('Robot A observed marker number 12 near shelf A12.', now=NOW)
    assert again.record_id == second.record_id  # the same figures: still one fact


def test_a_position_too_large_for_a_float_is_refused_or_no_position(store):
    # near: [10**400, 0] raised OverflowError; one record at [1e300, 0] broke every near
    # recall that matched it ((a - b) ** 2 overflowed)
    with pytest.raises(SubstrateError, match='near must be 2 or 3 numbers'):
        store.recall('lamp', near=[10**400, 0], now=NOW)
    far = store.learn('The lamp is in room ten', now=NOW, context={'position': [1e300, 0]})
    huge = store.learn('The lamp shade is in room nine', now=NOW,
                       context={'position': [10**400, 0]})
    found = store.recall('lamp', near=[0, 0], now=NOW)
    assert {hit.id for hit in found.hits} >= {far.record_id, huge.record_id}


def test_a_lone_surrogate_is_refused_naming_the_field(store):
    # it failed in SQLite's encoding with the codec's words, naming no field
    with pytest.raises(SubstrateError, match=r'text holds a lone surrogate \(U\+D800\) at '
                                             'position 9'):
        store.learn('the dock \ud800 is here', now=NOW)
    kept = store.learn('the dock is here', now=NOW).record_id
    with pytest.raises(SubstrateError, match='reason holds a lone surrogate'):
        store.forget(kept, 'tidy \udcff', NOW)
    assert store.get(kept).status == 'active'


def test_hybrid_recall_finds_paraphrases(vector_store):
    target = vector_store.learn('The robot recharges at the docking station in the garage',
                                now=NOW)
    vector_store.learn('Kitchen floor is slippery after mopping', now=NOW)
    keyword = vector_store.recall('recharging docks', now=NOW, vectors=False)
    hybrid = vector_store.recall('recharging docks', now=NOW)
    assert hybrid.mode == 'hybrid'
    assert hybrid.hits[0].id == target.record_id
    assert hybrid.hits[0].vector_rank == 1
    assert keyword.mode == 'keyword'
    only_vectors = vector_store.recall('!!!', now=NOW)
    assert only_vectors.hits == []


def test_vectors_requested_without_backend_is_an_error(store):
    with pytest.raises(SubstrateError, match='no embedding backend'):
        store.recall('dock', now=NOW, vectors=True)


def test_hashing_embedder_is_deterministic_and_normalised():
    embedder = HashingEmbedder(dim=64)
    first = embedder.embed(['charging dock', 'charging dock'])
    assert first.dtype.name == 'float32' and first.shape == (2, 64)
    assert (first[0] == first[1]).all()
    assert float((first[0] ** 2).sum()) == pytest.approx(1.0, rel=1e-5)
    assert float(HashingEmbedder(dim=64).embed_one('charging dock') @ first[0]) == \
        pytest.approx(1.0, rel=1e-5)
    related = embedder.embed_one('charging docks') @ first[0]
    unrelated = embedder.embed_one('slippery kitchen floor') @ first[0]
    assert related > unrelated
    with pytest.raises(ValueError):
        HashingEmbedder(dim=3)


# --------------------------------------------------------------------------- forget

def test_forget_archives_softly_and_hard_deletes_when_asked(store):
    keep = store.learn('The cat sleeps on the sofa', now=NOW)
    gone = store.learn('The old map of floor two is wrong', now=NOW)
    result = store.forget(gone.record_id, 'map replaced', NOW + DAY)
    assert result.ids == [gone.record_id] and not result.hard
    assert store.recall('map floor', now=NOW + DAY).hits == []
    archived = store.get(gone.record_id)
    assert archived.status == 'archived' and archived.text == 'The old map of floor two is wrong'
    assert store.history(gone.record_id)[-1].action == 'archive'
    assert store.history(gone.record_id)[-1].rationale == 'map replaced'
    store.forget(gone.record_id, 'really remove it', NOW + DAY, hard=True)
    with pytest.raises(SubstrateError, match='no record'):
        store.get(gone.record_id)
    assert [entry.action for entry in store.history(gone.record_id)] == ['create', 'archive',
                                                                         'delete']
    by_query = store.forget('cat sofa', 'cat moved out', NOW + DAY)
    assert by_query.ids == [keep.record_id]
    with pytest.raises(SubstrateError, match='reason'):
        store.forget(keep.record_id, '  ', NOW)


def test_forget_by_broad_query_is_refused(store):
    for index in range(3):
        store.learn(f'Sensor {index} reading is noisy number {index}', now=NOW)
    with pytest.raises(SubstrateError, match='narrow the query'):
        store.forget('sensor', 'cleanup', NOW, limit=2, all_matches=True)
    preview = store.forget('sensor', 'cleanup', NOW, dry_run=True, all_matches=True)
    assert len(preview.ids) == 3 and preview.matched == 3 and store.count() == 3
    assert [record['status'] for record in preview.records] == ['active'] * 3


def test_forget_by_query_takes_the_best_match_only_unless_all_are_asked_for(store):
    dock = store.learn('The charging dock is in the hallway by the stairs', now=NOW).record_id
    warning = store.learn('Never block the fire exit with the dock cart', now=NOW).record_id
    store.learn('Wipe the dock contacts every Friday', now=NOW, type='episodic')
    preview = store.forget('charging dock hallway', 'moved', NOW, dry_run=True)
    assert preview.dry_run and preview.matched >= 1 and len(preview.ids) == 1
    assert preview.records[0]['text'].startswith('The charging dock')
    assert store.get(preview.ids[0]).status == 'active', 'a dry run changes nothing'
    best = store.forget('dock', 'dock moved', NOW)
    assert best.ids and best.matched == 3 and best.action == 'archive'
    assert warning not in best.ids and store.get(warning).status == 'active'
    everything = store.forget('dock', 'clear all dock notes', NOW, all_matches=True)
    assert len(everything.ids) == 2 and warning in everything.ids
    assert dock in everything.ids + best.ids
    with pytest.raises(SubstrateError, match='no live record matches query'):
        store.forget('dock', 'again', NOW)
    with pytest.raises(SubstrateError, match='no record with id'):
        store.forget('not-an-id', 'x', NOW, by='id')
    with pytest.raises(SubstrateError, match='nothing to archive'):
        store.forget('zebra crossing', 'x', NOW)


def test_forget_shows_no_more_than_recall_would_to_the_caller(store):
    code = store.learn('The vault door code is 4711', now=NOW, sensitivity='high').record_id
    hidden = store.learn('The vault door alarm code is 9090', now=NOW,
                         sensitivity='hyper').record_id
    preview = store.forget('vault door', 'x', NOW, dry_run=True, all_matches=True,
                           trust='medium')
    # The record's random id may itself hold '4711' (a UUID has 1 chance in 4,096): not the text.
    assert preview.ids == [code] and '4711' not in preview.message.replace(code, '')
    assert preview.records[0]['text'] == '[redacted: high sensitivity]'
    with pytest.raises(SubstrateError, match='no live record matches'):
        store.forget('vault alarm 9090', 'x', NOW, trust='medium')
    # by id as by query: a record withheld from the caller is no record to it
    with pytest.raises(SubstrateError, match='no record has that id'):
        store.forget(hidden, 'by id', NOW, trust='medium')
    assert store.forget(hidden, 'by id', NOW, trust='hyper').ids == [hidden]


def test_an_archived_record_is_restored_until_it_is_hard_deleted(store):
    kept = store.learn('The spare battery lives in locker 4', now=NOW).record_id
    store.forget(kept, 'tidy up', NOW)
    assert store.recall('spare battery locker', now=NOW).hits == []
    with pytest.raises(SubstrateError, match='archived already'):
        store.forget(kept, 'again', NOW)
    preview = store.forget('spare battery', 'oops', NOW, restore=True, dry_run=True)
    assert preview.ids == [kept] and preview.action == 'restore'
    back = store.forget(kept, 'archived by mistake', NOW + DAY, restore=True)
    assert back.ids == [kept] and back.records[0]['status'] == 'active'
    assert store.recall('spare battery locker', now=NOW + DAY).ids() == [kept]
    assert [entry.action for entry in store.history(kept)][-2:] == ['archive', 'restore']
    with pytest.raises(SubstrateError, match='not archived'):
        store.forget(kept, 'x', NOW, restore=True)
    with pytest.raises(SubstrateError, match='cannot be combined'):
        store.forget(kept, 'x', NOW, restore=True, hard=True)
    store.forget(kept, 'gone for good', NOW + DAY, hard=True)
    with pytest.raises(SubstrateError, match='hard-deleted; it cannot be restored'):
        store.forget(kept, 'undo', NOW + DAY, restore=True, by='id')


def test_a_restored_fact_that_now_conflicts_comes_back_contested(store):
    old = store.learn('The mop bucket is in the utility room', now=NOW).record_id
    store.forget(old, 'we moved it', NOW)
    new = store.learn('The mop bucket is in the garage', now=NOW + DAY).record_id
    assert store.get(new).status == 'active'
    back = store.forget(old, 'the move was undone', NOW + DAY, restore=True)
    assert back.records[0]['status'] == 'contested'
    assert store.get(new).status == 'contested' and store.get(old).status == 'contested'
    assert {hit.id for hit in store.recall('mop bucket', now=NOW + DAY).hits} == {old, new}


# --------------------------------------------------------------------------- invariants

def test_audit_log_and_episodes_are_append_only_in_the_database(store):
    episode = store.learn('At 09:00 the robot bumped the table', now=NOW).record_id
    with pytest.raises(sqlite3.IntegrityError, match='append-only'):
        store.db.conn.execute('UPDATE substrate_audit SET reason = ?', ('x',))
    with pytest.raises(sqlite3.IntegrityError, match='append-only'):
        store.db.conn.execute('DELETE FROM substrate_audit')
    with pytest.raises(sqlite3.IntegrityError, match='append-only'):
        store.db.conn.execute('UPDATE substrate_records SET text = ? WHERE id = ?',
                              ('rewritten', episode))
    store.db.conn.rollback()
    with pytest.raises(SubstrateError, match='append-only'):
        store.supersede(episode, NOW, 'fix the story', text='nothing happened')
    with pytest.raises(SubstrateError, match='append-only'):
        store.retract(episode, NOW, 'wrong')
    store.forget(episode, 'old', NOW)
    assert store.get(episode).status == 'archived'


def test_one_active_value_of_a_single_valued_fact_is_enforced_by_the_database(store):
    first = store.learn('The lift is on floor 3', now=NOW).record_id
    assert store.db.conn.execute('SELECT facet FROM substrate_records WHERE id = ?',
                                 (first,)).fetchone() == ('location',)
    with pytest.raises(sqlite3.IntegrityError, match='UNIQUE'):
        store.db.conn.execute(
            'INSERT INTO substrate_records (id, type, sensitivity, text, confidence, salience, '
            'created_at, updated_at, last_reinforced_at, decay_curve, half_life_s, decay_floor, '
            'gain, content_hash, payload, provenance, subject, predicate, condition_key, facet) '
            "SELECT 'copy', type, sensitivity, text, confidence, salience, created_at, "
            'updated_at, last_reinforced_at, decay_curve, half_life_s, decay_floor, gain, '
            "'h', payload, provenance, subject, predicate, condition_key, facet "
            'FROM substrate_records WHERE id = ?', (first,))
    store.db.conn.rollback()
    assert store.count() == 1


def test_substrate_migrations_are_separate_from_evidence(tmp_path):
    path = tmp_path / 'robot-memory.db'
    with EvidenceStore(path) as evidence:
        evidence_migrations = evidence.applied_migrations()
    with Substrate(path) as substrate:
        assert substrate.applied_migrations() == ['0001_substrate_tables',
                                                  '0002_substrate_requests',
                                                  '0003_fact_cardinality',
                                                  '0004_vector_change_log',
                                                  '0005_encryption_at_rest',
                                                  '0006_record_versions']
    with EvidenceStore(path) as evidence:
        assert evidence.applied_migrations() == evidence_migrations
    with Substrate(path) as substrate:
        assert substrate.applied_migrations() == ['0001_substrate_tables',
                                                  '0002_substrate_requests',
                                                  '0003_fact_cardinality',
                                                  '0004_vector_change_log',
                                                  '0005_encryption_at_rest',
                                                  '0006_record_versions']
        tables = {row[0] for row in substrate.db.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {'substrate_migrations', 'migrations', 'observations', 'substrate_records'} <= tables


def test_a_file_that_is_not_a_database_is_reported(tmp_path):
    path = tmp_path / 'robot-memory.db'
    path.write_bytes(b'not a database at all' * 100)
    with pytest.raises(SubstrateError, match='not a usable memory database'):
        Substrate(path)


# --------------------------------------------------------------------------- revision

def test_conflicting_fact_supersedes_or_contests(store):
    old = store.learn('The charging dock is in the hallway', now=NOW, confidence=0.6)
    new = store.learn('The charging dock is in the garage', now=NOW + DAY, confidence=0.8)
    assert new.action == 'superseded' and new.replaced == [old.record_id]
    assert store.get(old.record_id).status == 'superseded'
    assert store.get(old.record_id).payload.revision.superseded_by == new.record_id
    assert store.get(new.record_id).relations[0].predicate == 'supersedes'
    doubt = store.learn('The charging dock is in the kitchen', now=NOW + DAY, confidence=0.3)
    assert doubt.action == 'contested'
    assert store.get(new.record_id).status == 'contested'
    assert store.get(doubt.record_id).payload.revision.status == 'contested'
    with pytest.raises(SubstrateError, match='conflicts with'):
        store.learn('The lift is slow', now=NOW)
        store.learn('The lift is fast', now=NOW, on_conflict='error')
    same = store.learn('the lift is SLOW', now=NOW)
    assert same.action == 'reinforced'


def test_supersede_fork_contest_retract_merge_affirm(store):
    fact = store.learn('Alice prefers tea', now=NOW, conditions={}, single_valued=True).record_id
    forked = store.fork(fact, {'time_of_day': 'evening'}, NOW, 'evenings differ',
                        object='herbal tea')
    evening = forked.created[0]
    assert store.get(evening).payload.validity.conditions == {'time_of_day': 'evening'}
    assert store.get(fact).status == 'active' and store.get(evening).status == 'active'
    assert store.get(evening).relations[0].predicate == 'derived_from'
    with pytest.raises(SubstrateError, match='already exists'):
        store.fork(fact, {'time_of_day': 'evening'}, NOW, 'again', object='coffee')
    newer = store.supersede(fact, NOW + DAY, 'she switched', object='green tea').created[0]
    assert store.get(fact).status == 'superseded'
    assert store.get(newer).payload.object == 'green tea'
    assert store.get(newer).payload.revision.supersedes == fact
    store.contest(newer, NOW + DAY, 'Bob says coffee', against=evening)
    assert store.get(newer).status == 'contested' and store.get(evening).status == 'contested'
    store.affirm(newer, NOW + DAY, 'asked Alice')
    assert store.get(newer).status == 'active'
    store.retract(evening, NOW + DAY, 'evening rule was a guess')
    assert store.get(evening).status == 'retracted'
    assert store.recall('Alice tea', now=NOW + DAY).ids() == [newer]
    one = store.learn('Mop is kept in closet A', now=NOW, type='competence').record_id
    two = store.learn('Mops are stored inside closet B', now=NOW, type='competence',
                      confidence=0.9).record_id
    merged = store.merge([one, two], NOW + DAY, 'same skill')
    assert merged.changed[0] == two and store.get(one).status == 'superseded'
    actions = [entry.action for entry in store.history(fact)]
    assert actions == ['create', 'supersede']
    metrics = store.metrics(NOW + DAY)
    assert metrics['revision']['in_window'] == {'fork': 1, 'supersede': 1, 'contest': 2,
                                                'affirm': 1, 'retract': 1, 'merge': 2}
    assert metrics['contradiction']['contradicts_relations'] == 2


def test_fork_can_narrow_the_original(store):
    fact = store.learn('The robot speed limit is 0.5', now=NOW).record_id
    result = store.fork(fact, {'floor': 'carpet'}, NOW, 'slower on carpet', object='0.3',
                        original_conditions={'floor': 'tile'})
    narrowed, carpet = result.created
    assert result.changed == [fact] and store.get(fact).status == 'superseded'
    assert store.get(narrowed).payload.validity.conditions == {'floor': 'tile'}
    assert store.get(carpet).payload.validity.conditions == {'floor': 'carpet'}


@pytest.mark.parametrize('operation', ['supersede', 'fork', 'contest', 'merge', 'learn'])
def test_a_failing_revision_leaves_nothing_behind(store, monkeypatch, operation):
    fact = store.learn('The lift is on the left', now=NOW).record_id
    other = store.learn('The stairs are on the right', now=NOW).record_id
    before = snapshot(store)

    def broken_audit(*args, **kwargs):
        raise RuntimeError('disk went away')

    monkeypatch.setattr(store, 'audit', broken_audit)
    calls = {
        'supersede': lambda: store.supersede(fact, NOW, 'moved', object='on the right'),
        'fork': lambda: store.fork(fact, {'floor': 2}, NOW, 'upstairs', object='ahead',
                                   original_conditions={'floor': 1}),
        'contest': lambda: store.contest(fact, NOW, 'unsure', against=other),
        'merge': lambda: store.merge([fact, other], NOW, 'same'),
        'learn': lambda: store.learn('The lift is on the right', now=NOW),
    }
    with pytest.raises(RuntimeError, match='disk went away'):
        calls[operation]()
    assert snapshot(store) == before
    assert store.db.conn.in_transaction is False


# --------------------------------------------------------------------------- selection

def test_selection_uses_conditions_success_and_recency(store):
    indoor = store.learn('To open the door: first press the button, then push', now=NOW,
                         payload={'skill_name': 'open the door',
                                  'triggers': [{'signal': 'door closed',
                                                'conditions': {'door': 'automatic'}}],
                                  'recipe': [{'step': 'press the button'}, {'step': 'push'}]})
    manual = store.learn('To open the door: first grab the handle, then pull hard', now=NOW,
                         payload={'skill_name': 'open the door by hand',
                                  'triggers': [{'signal': 'door closed',
                                                'conditions': {'door': 'manual'}}],
                                  'recipe': [{'step': 'grab the handle'}, {'step': 'pull'}]})
    chosen = store.select('open the door', NOW, context={'door': 'manual'})
    assert chosen.decided and chosen.winner == manual.record_id
    assert [item.id for item in chosen.candidates] == [manual.record_id]
    unsure = store.select('open the door', NOW)
    assert not unsure.decided and unsure.winner is None
    assert {item.id for item in unsure.candidates} == {indoor.record_id, manual.record_id}
    for _ in range(5):
        store.record_outcome(indoor.record_id, True, NOW)
        store.record_outcome(manual.record_id, False, NOW)
    proven = store.select('open the door', NOW + DAY)
    assert proven.decided and proven.winner == indoor.record_id
    assert proven.candidates[0].success_rate > proven.candidates[1].success_rate
    assert store.get(indoor.record_id).payload.performance.successes == 5
    with pytest.raises(SubstrateError, match='outcomes are for'):
        store.record_outcome(store.learn('Sky is blue', now=NOW).record_id, True, NOW)


def test_plan_graph_from_steps(store):
    plan = store.get(store.learn('To tidy the room: first pick up toys, then vacuum, finally '
                                 'open the window', type='plan_graph', now=NOW).record_id)
    assert [node.op for node in plan.payload.nodes] == ['pick up toys', 'vacuum',
                                                        'open the window']
    assert [(edge.source, edge.to) for edge in plan.payload.edges] == [('n1', 'n2'),
                                                                       ('n2', 'n3')]
    store.record_outcome(plan.id, False, NOW)
    assert store.get(plan.id).payload.metrics.failure_rate == 1.0


def test_recall_payloads_are_the_records_payloads_without_the_models(store):
    """Recall builds payloads from the stored dump (no pydantic); they equal the model's."""
    ids = [store.learn(text, type=kind, now=NOW, conditions=conditions).record_id
           for text, kind, conditions in [
               ('The kitchen door is red', 'semantic', None),
               ('The lift runs slowly', 'semantic', {'floor': 2}),
               ('The charging dock is 3.5 metres from the door', 'semantic', None),
               ('Docked at 03:00 after the patrol', 'episodic', None),
               ('Mapping the second floor', 'working', None),
               ('To open the door: first press the button, then push', 'competence', None),
               ('To tidy the room: first pick up toys, then vacuum', 'plan_graph', None)]]
    fact, lift, _, _, working, skill, plan = ids
    ids.append(store.learn('To dock: first align, then reverse', now=NOW, payload={
        'skill_name': 'dock', 'triggers': [{'signal': 'battery low',
                                            'conditions': {'site': 'lab'}}],
        'recipe': [{'step': 'align', 'tool': 'nav'}, {'step': 'reverse'}],
        'failure_modes': ['misaligned'], 'version': '2'}).record_id)
    store.record_outcome(skill, True, NOW)
    store.record_outcome(skill, False, NOW)
    store.record_outcome(plan, False, NOW)
    ids += store.supersede(fact, NOW, 'repainted', object='blue').created
    ids += store.fork(lift, {'floor': 3}, NOW, 'faster upstairs', object='fast',
                      original_conditions={'floor': 2}).created
    ids += store.fork(working, {'shift': 'night'}, NOW, 'night shift',
                      original_conditions={}).created
    ids += store.fork(skill, {'door': 'manual'}, NOW, 'by hand').created
    ids += store.fork(plan, {'room': 'nursery'}, NOW, 'quietly').created
    store.contest(ids[2], NOW, 'measured again')
    ids.append(store.learn('The hallway light is off', now=NOW).record_id)
    store.retract(ids[-1], NOW, 'never happened')
    rows = store.rows('1 = 1')
    statuses = {row['status'] for row in rows}
    assert statuses >= {'active', 'superseded', 'contested', 'retracted'}, statuses
    assert {row['type'] for row in rows} == {'semantic', 'episodic', 'working', 'competence',
                                             'plan_graph'}
    for row in rows:
        assert store.payload_of(row) == store.get(row['id']).payload.to_dict(), row['id']
    hits = store.recall('door', k=20, now=NOW).hits
    assert hits and all(hit.payload == store.get(hit.id).payload.to_dict() for hit in hits)


# --------------------------------------------------------------------------- metrics

def test_metrics_report_growth_salience_usefulness_and_rates(store):
    first = store.learn('The vacuum bin is full', now=NOW).record_id
    store.learn('At 08:00 the vacuum started', now=NOW + DAY)
    store.learn('The porch light is broken', now=NOW + DAY, sensitivity='public')
    store.pin(first, NOW)
    recalled = store.recall('vacuum', now=NOW + DAY)
    assert len(recalled.hits) == 2
    store.feedback(first, True, NOW + DAY)
    metrics = store.metrics(NOW + 2 * DAY)
    assert metrics['records'] == 3
    assert metrics['by_type']['semantic'] == 2 and metrics['by_type']['episodic'] == 1
    assert metrics['growth']['per_day'] == {'2026-04-01': {'semantic': 1},
                                            '2026-04-02': {'episodic': 1, 'semantic': 1}}
    assert metrics['growth']['created_in_window'] == 3
    assert metrics['salience']['count'] == 3 and metrics['salience']['pinned'] == 1
    assert sum(metrics['salience']['histogram'].values()) == 3
    assert metrics['retrieval']['hits'] == 2 and metrics['retrieval']['useful'] == 1
    assert metrics['retrieval']['usefulness'] == 0.5
    assert metrics['contradiction']['rate'] == 0.0
    assert metrics['revision']['total_in_window'] == 0
    with pytest.raises(SubstrateError, match='useful must be'):
        store.feedback(first, 'yes', NOW)


def test_text_rules():
    assert textrules.fts_query('"x" NEAR(b) c:d') == '"x" OR "near" OR "b" OR "c" OR "d"'
    assert textrules.fts_query('the a') == '"the" OR "a"'
    assert textrules.fts_query('?!') is None
    assert textrules.jaccard({'a', 'b'}, {'b', 'c'}) == pytest.approx(1 / 3)
    assert textrules.content_hash('Hello  World.') == textrules.content_hash('hello world')
    assert textrules.parse_fact('The dock is in the hall') == ('the dock', 'is', 'in the hall')


def test_learn_takes_a_request_object_as_it_takes_keywords(store):
    from robot_memory.substrate import LearnRequest
    request = LearnRequest('The fire exit is behind the canteen', now=NOW, tags=['safety'],
                           confidence=0.9, actor='planner')
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.text = 'changed'
    created = store.learn(request)
    assert created.action == 'created' and created.type == 'semantic'
    record = store.get(created.record_id)
    assert (record.tags, record.confidence, record.provenance.created_by) == (
        ['safety'], 0.9, 'planner')
    again = store.learn('The fire exit is behind the canteen', now=NOW)
    assert again.duplicate and again.record_id == created.record_id
    with pytest.raises(TypeError, match='colour'):
        store.learn('The lift is slow', now=NOW, colour='red')
