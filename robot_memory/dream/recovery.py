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
Crash recovery of an interrupted dream, prune or undo, and the prune outside a dream.

``recover`` finishes or discards the intent record a writer of the memory file left behind
(see ``robot_memory.evidence.intent``); ``prune`` (``robot-memory prune``) prunes outside a
dream, crash-safe like one. Both are also reached as ``autodream.recover`` and
``autodream.prune``.
"""

import datetime as dt
import hashlib
import json
from typing import Optional
import uuid

from robot_memory.common.timeutil import require_aware
from robot_memory.dream.archive import archive_pruned
from robot_memory.errors import MemoryFileError
from robot_memory.evidence.intent import DreamIntent
from robot_memory.rcan import lifecycle
from robot_memory.rcan.lifecycle import LifecycleConfig
from robot_memory.rcan.lifecycle import LifecycleValues
from robot_memory.rcan.memory_file import read_last_updated
from robot_memory.rcan.memory_file import render
from robot_memory.settings import DreamConfig


def file_hash(data: Optional[bytes]) -> str:
    """sha256 of the file bytes (of nothing when the file is absent)."""
    return hashlib.sha256(data or b'').hexdigest()


def as_config(config) -> DreamConfig:
    """Return the dream settings of ``config``: None, lifecycle values or DreamConfig."""
    if config is None:
        return DreamConfig()
    if isinstance(config, LifecycleValues):  # lifecycle.DEFAULTS, say: plain values
        config = LifecycleConfig(**config._asdict())
    if isinstance(config, LifecycleConfig):
        return DreamConfig(lifecycle=config)
    return config


def recover(store, memory_file) -> Optional[str]:
    """Finish or discard an interrupted dream (call while holding the file lock)."""
    pending = store.pending_dream()
    if pending is None:
        return None
    try:
        current = memory_file.path.read_bytes()
    except FileNotFoundError:
        current = None
    current_hash = file_hash(current) if current is not None else None
    written = current_hash == pending.file_hash
    if (not written and current is not None and pending.file_changed
            and current_hash != pending.prior_hash):
        # Written by that dream, then edited by someone before this recovery.
        written = read_last_updated(current) == pending.at
    if written:
        store.commit_dream(pending)
        return 'completed'
    store.discard_pending()
    return 'discarded'


def prune(store, memory_file, now: dt.datetime, config=None, actor: str = 'cli',
          dry_run: bool = False) -> lifecycle.PruneOutcome:
    """
    Prune entries below ``prune_min`` outside a dream (archived first), crash-safe like one.

    The next dream recognises a person's deletion by an entry that is in the database's
    snapshot but not in the file. So the pruned entries leave the snapshot, with a
    ``prune`` audit record each, through an intent record: committed durably (under the
    file lock) before the file is written and applied after it, or by the next dream's
    recovery if this process dies in between; discarded if the file was never written.
    An unfinished dream found on the way is completed first. ``dry_run`` only says what
    would go (``store`` may then be None); nothing is written.
    """
    now = require_aware(now)
    config = as_config(config).lifecycle
    if not memory_file.exists():  # never create an empty memory file to prune nothing
        raise MemoryFileError('no memory file here, so nothing to prune', memory_file.path)
    if dry_run:
        return lifecycle.prune(memory_file.load(now).document.entries, now, config)
    intent = None
    with memory_file.update(now) as result:
        recover(store, memory_file)
        document = result.document
        outcome = lifecycle.prune(document.entries, now, config)
        if outcome.pruned:
            original = memory_file.path.read_bytes()
            archived = archive_pruned(memory_file, outcome.pruned, now)
            if archived.held_back:  # they stay in the file, in their place
                gone = {id(item.entry) for item in archived.archived}
                outcome.kept = [entry for entry in document.entries if id(entry) not in gone]
                outcome.pruned, outcome.archive_advice = archived.archived, archived.advice()
        if outcome.pruned:
            document.entries = outcome.kept
            document.last_updated = now
            intent = DreamIntent(
                kind='prune', token=uuid.uuid4().hex, at=now, actor=actor,
                file_hash=file_hash(render(document)), prior_hash=file_hash(original),
                file_changed=True,
                audit=[[item.entry.id, 'prune',
                        f'effective confidence {item.effective_confidence:.3f} below '
                        f'prune_min {config.prune_min:.2f}; archived (robot-memory prune)',
                        json.dumps({'effective_confidence': round(item.effective_confidence, 6),
                                    'type': item.entry.type, 'text': item.entry.text},
                                   ensure_ascii=False, sort_keys=True)]
                       for item in outcome.pruned],
                snapshot_deleted=[item.entry.id for item in outcome.pruned])
            store.begin_dream(intent)
    if intent is not None:
        store.commit_dream(intent)
    return outcome
