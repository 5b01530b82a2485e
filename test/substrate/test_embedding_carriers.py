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
The wheels that carry the semantic model: found without importing them, each named by its file.

scripts/setup.sh installs both carriers of embedding.CARRIERS (on x86-64 Linux; elsewhere
the first does not exist), so the model that aarch64 robots install runs here for real.
"""

import datetime as dt
import importlib.util
import json
import platform
import shutil
import subprocess
import sys

import numpy
import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.substrate import default_embedder
from robot_memory.substrate import describe_embedder
from robot_memory.substrate import embedding
from robot_memory.substrate import SemanticEmbedder
from robot_memory.substrate import Substrate
from robot_memory.substrate.embedding import carrier_files
from robot_memory.substrate.embedding import CARRIERS
from robot_memory.substrate.embedding import model_name
from support.paths import REPO
from support.processes import child_env

NOW = dt.datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
PORTABLE = CARRIERS[-1]  # the pure-Python carrier, the one aarch64 installs
MEMORIES = ['The charging dock is in the hallway next to the coat rack',
            'Carol takes her medication at 8 am and 8 pm with water',
            'Bob is allergic to peanuts; never bring him snacks with nuts',
            'The fuse box is in the garage behind the coat hooks']


def installed() -> list:
    """Return the carriers installed here (by scripts/setup.sh), with their files."""
    return [(carrier, carrier_files(carrier)) for carrier in CARRIERS
            if carrier_files(carrier) is not None]


@pytest.fixture(scope='module')
def portable():
    """Return the embedder of the pure-Python carrier's model."""
    files = carrier_files(PORTABLE)
    assert files is not None, f'{PORTABLE.distributions} is not installed; run scripts/setup.sh'
    return SemanticEmbedder(*files)


def test_the_portable_carrier_is_installed_with_its_files_in_its_packages():
    files = carrier_files(PORTABLE)
    assert files is not None, f'{PORTABLE.distributions} is not installed; run scripts/setup.sh'
    for path, relative in zip(files, (PORTABLE.model, PORTABLE.tokenizer)):
        assert path.is_file() and path.as_posix().endswith('site-packages/' + relative), path
    # On x86-64 Linux the faster carrier is installed too, and preferred.
    if sys.platform == 'linux' and platform.machine() == 'x86_64':
        assert [carrier for carrier, _ in installed()] == list(CARRIERS)
        assert embedding.semantic_model_files() == carrier_files(CARRIERS[0])


def test_finding_the_model_imports_no_carrier_code():
    """Only the carriers' data files are read; none of their modules is ever imported."""
    probe = ('import sys\n'
             'from robot_memory.substrate.embedding import CARRIERS, SemanticEmbedder, '
             'carrier_files, semantic_model_files\n'
             'assert semantic_model_files() is not None\n'
             'SemanticEmbedder(*carrier_files(CARRIERS[-1])).embed(["the dock"])\n'
             'SemanticEmbedder().embed(["the dock"])\n'
             'tops = {c.model.split("/")[0] for c in CARRIERS} | '
             '{c.tokenizer.split("/")[0] for c in CARRIERS}\n'
             'print(sorted(name for name in sys.modules if name.split(".")[0] in tops))\n')
    env = child_env()
    env.pop('ROBOT_MEMORY_EMBEDDER_MODEL', None)
    done = subprocess.run([sys.executable, '-c', probe], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '[]', done.stdout


def test_the_portable_model_places_a_paraphrase_nearest(portable):
    vectors = portable.embed(MEMORIES + ['where does the robot go to recharge its battery',
                                         'where are the circuit breakers'])
    assert vectors.shape == (6, 384) and vectors.dtype == numpy.float32
    assert numpy.allclose(numpy.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert int(numpy.argmax(vectors[:4] @ vectors[4])) == 0
    assert int(numpy.argmax(vectors[:4] @ vectors[5])) == 3
    # Unrelated sentences stay under the embedder's floor, as with the other carrier's model.
    unrelated = portable.embed(['mop', 'Alarm code is 1234'])
    assert float(unrelated[0] @ unrelated[1]) < portable.min_similarity


def test_the_two_carriers_models_agree_but_carry_different_names(portable):
    assert portable.name == 'minilm-l6-v2-w8a32'
    assert describe_embedder(portable)['search'] == 'semantic'
    files = carrier_files(CARRIERS[0])
    if files is None:
        pytest.skip(f'{CARRIERS[0].distributions} exists for x86-64 Linux only')
    fast = SemanticEmbedder(*files)
    assert fast.name == 'minilm-l6-v2-int8'
    cosines = numpy.sum(fast.embed(MEMORIES) * portable.embed(MEMORIES), axis=1)
    assert cosines.min() > 0.97, cosines


def test_a_model_file_of_its_own_is_named_by_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    model, tokenizer = carrier_files(PORTABLE)
    copy = tmp_path / 'model' / 'model.onnx'
    copy.parent.mkdir()
    shutil.copyfile(model, copy)
    shutil.copyfile(tokenizer, copy.parent / 'tokenizer.json')
    assert model_name(copy) == 'minilm-l6-v2-w8a32'  # the same bytes, the same name
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER_MODEL', str(copy.parent))
    assert default_embedder().name == 'minilm-l6-v2-w8a32'
    with open(copy, 'ab') as changed:
        changed.write(b'\0')
    name = model_name(copy)
    assert name.startswith('minilm-l6-v2-') and name not in embedding.MODEL_NAMES.values()
    assert default_embedder().name == name
    with pytest.raises(ValueError, match='cannot read the semantic model file'):
        model_name(tmp_path / 'missing.onnx')


def test_naming_the_model_writes_nothing_until_it_is_loaded(tmp_path, monkeypatch):
    """A node that never embeds leaves no cache in the home (test/ros/test_demo.py)."""
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    embedder = SemanticEmbedder(*carrier_files(PORTABLE))
    assert embedder.name == 'minilm-l6-v2-w8a32'
    assert not (tmp_path / 'cache').exists()
    embedder.embed(['the dock'])
    digests = tmp_path / 'cache' / 'robot_memory' / embedding.DIGESTS
    assert '8199be6f699a395f' in digests.read_text(encoding='utf-8')
    # Once noted, the name comes from the note, not from hashing the file again.
    notes = json.loads(digests.read_text(encoding='utf-8'))
    digests.write_text(json.dumps({key: 'f' * 16 for key in notes}), encoding='utf-8')
    assert SemanticEmbedder(*carrier_files(PORTABLE)).name == 'minilm-l6-v2-' + 'f' * 16


def test_without_the_first_carrier_the_portable_one_is_the_default(monkeypatch):
    monkeypatch.delenv('ROBOT_MEMORY_EMBEDDER_MODEL', raising=False)
    monkeypatch.delenv('ROBOT_MEMORY_EMBEDDER', raising=False)
    monkeypatch.setattr(embedding, 'CARRIERS', (PORTABLE,))
    embedder = default_embedder()
    assert isinstance(embedder, SemanticEmbedder) and embedder.name == 'minilm-l6-v2-w8a32'
    assert (embedder.model_path, embedder.tokenizer_path) == carrier_files(PORTABLE)
    monkeypatch.setattr(embedding, 'CARRIERS', ())
    assert default_embedder() is None
    with pytest.raises(ValueError, match=r'robot_memory\[semantic\]'):
        default_embedder(choice='semantic')


def test_a_change_of_model_re_embeds_every_record(tmp_path, portable):
    """Vectors of two model files never mix: the other file's records are embedded again."""
    files = carrier_files(CARRIERS[0])
    if files is None:
        pytest.skip(f'{CARRIERS[0].distributions} exists for x86-64 Linux only')
    path = tmp_path / 'robot-memory.db'
    with Substrate(path, embedder=SemanticEmbedder(*files)) as store:
        store.learn_many(MEMORIES, NOW)
        assert store.reindex_vectors() == 0
    with Substrate(path, embedder=portable) as store:
        assert store.reindex_vectors() == len(MEMORIES)
        assert store.vector_index().model == 'minilm-l6-v2-w8a32'
        result = store.recall('which food must he avoid because of an allergy', now=NOW)
        assert result.mode == 'hybrid' and result.hits[0].text == MEMORIES[2]
        assert store.reindex_vectors() == 0


def test_the_readme_names_the_carriers():
    readme = (REPO / 'README.md').read_text(encoding='utf-8')
    for carrier in CARRIERS:
        for pin in carrier.distributions.split():
            assert pin.split('==')[0] in readme, pin
    assert 'works out of the box on **x86-64 Linux only**' not in readme


def test_the_embed_bench_measures_each_installed_carrier():
    """bench_recall.py --only embed: the figures README gives for the two models."""
    spec = importlib.util.spec_from_file_location('bench_recall',
                                                  REPO / 'bench' / 'bench_recall.py')
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.bench_embed(len(CARRIERS) - 1, 5)
    assert result['bench'] == 'embed_speed' and result['embedder'] == 'minilm-l6-v2-w8a32'
    assert result['carrier'] == PORTABLE.distributions and result['queries'] == 5
    assert 0 < result['p50_ms'] <= result['p99_ms'] and result['batch_per_s'] > 0
    assert result['model_rss_mb'] >= 0
