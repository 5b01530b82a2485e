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
The end of an entry's life in a dream: resolved when its sources are quiet, pruned when faded.

``ResolveAndPrune`` is the dream's half (a mixin of ``autodream._Dream``): an entry whose every
linked source has reported OK for ``quiet_period_days`` with no bad evidence since becomes
``resolved`` (its type kept in ``resolved_from``); an entry whose effective confidence fell
below ``prune_min`` is archived (``dream.archive``) and leaves the file.
"""

from typing import Any
from typing import Callable

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.dream.archive import archive_pruned
from robot_memory.rcan import lifecycle


class ResolveAndPrune:
    """The dream's resolving of quiet entries and pruning of faded ones (a mixin)."""

    # What the dream (autodream._Dream) holds, which these methods read and change.
    config: Any
    lc: Any
    links: dict
    by_id: dict
    entries: list
    sources: dict
    touched: set
    now: Any
    now_s: float
    memory_file: Any
    report: Any
    _log: Callable[..., None]
    _replace: Callable[..., None]

    def _resolve(self) -> None:
        quiet = self.config.quiet_period_days * 86400.0
        linked: dict = {}
        for link in self.links.values():
            if link['entry_id'] in self.by_id:
                linked.setdefault(link['entry_id'], []).append(link)
        for entry_id in sorted(linked):
            entry = self.by_id[entry_id]
            if entry.type == 'resolved' or entry_id in self.touched:
                continue
            since = []
            for link in linked[entry_id]:
                state = self.sources.get(link['source_key'])
                ok_since = state['ok_since'] if state else None
                if (ok_since is None or link['held'] or self.now_s - ok_since < quiet
                        or (link['last_bad'] is not None and ok_since <= link['last_bad'])):
                    break
                since.append((link['source_key'], ok_since))
            else:
                for link in linked[entry_id]:
                    link['entry_type'] = link['entry_type'] or entry.type
                updated = entry.model_copy(update={'type': 'resolved', 'resolved_from': entry.type})
                key, ok_since = min(since, key=lambda item: item[1])
                days = (self.now_s - ok_since) / 86400.0
                self._log(entry_id, 'resolve',
                          f'{key} has reported OK since {format_iso(from_epoch(ok_since))} '
                          f'({days:.1f} days) with no new bad evidence',
                          {'sources': [item[0] for item in since], 'from_type': entry.type})
                self._replace(entry, updated)
                self.report.resolved.append(entry_id)

    def _prune(self) -> None:
        candidates = [entry for entry in self.entries if entry.id not in self.touched]
        outcome = lifecycle.prune(candidates, self.now, self.lc)
        if not outcome.pruned:
            return
        archived = archive_pruned(self.memory_file, outcome.pruned, self.now,
                                  reason='pruned by autodream')
        if archived.held_back:
            self.report.prune_held_back = len(archived.held_back)
            self.report.problems.append(f'prune: {archived.advice()}')
        gone = {item.entry.id for item in archived.archived}
        self.entries = [entry for entry in self.entries if entry.id not in gone]
        for item in archived.archived:
            self._log(item.entry.id, 'prune',
                      f'effective confidence {item.effective_confidence:.3f} below prune_min '
                      f'{self.lc.prune_min:.2f}; archived',
                      {'effective_confidence': round(item.effective_confidence, 6),
                       'type': item.entry.type, 'text': item.entry.text})
            self.report.pruned.append(item.entry.id)
            self.by_id.pop(item.entry.id, None)
