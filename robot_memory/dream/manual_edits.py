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
A person's edits to the memory file, taken in by the dream that finds them.

``ManualEdits`` is the dream's half (a mixin of ``autodream._Dream``): it compares the file with
the snapshot of the file the last dream wrote (``canonical`` entries) and audits each added,
edited or deleted entry as ``manual``; a missing or unreadable file is restored from the
snapshot; on a rebuilt database the file's entries are audited as ``rebuild`` with their links
to the evidence read back from the set-aside copy (``evidence.salvage``).
"""

import json
from typing import Any
from typing import Callable
from typing import Optional

from robot_memory.dream.recovery import file_hash
from robot_memory.dream.report import diff_summary
from robot_memory.evidence.salvage import surviving_links
from robot_memory.rcan.schema import MemoryEntry


def canonical(entry) -> str:
    """Return an entry as sorted-key JSON, for comparing the file with the dream's snapshot."""
    return json.dumps(entry.model_dump(mode='json'), sort_keys=True, ensure_ascii=False)


def store_set_aside_copies(store) -> list:
    """Damaged evidence databases set aside beside ``store`` (none for other stores)."""
    copies = getattr(store, 'set_aside_copies', None)
    return copies() if copies is not None else []


class ManualEdits:
    """The dream's taking in of a person's edits to the memory file (a mixin)."""

    # What the dream (autodream._Dream) holds, which these methods read and change.
    snapshot: dict
    entries: list
    links: dict
    muted: dict
    cursor: Any
    report: Any
    store: Any
    _log: Callable[..., None]

    def _take_in_edits(self, document, original: Optional[bytes], result) -> None:
        snapshot = self.snapshot
        if original is None:
            if snapshot:
                restored = sorted((MemoryEntry.model_validate(json.loads(data))
                                   for data in snapshot.values()),
                                  key=lambda entry: (entry.first_seen, entry.id))
                self.entries[:] = restored + [entry for entry in self.entries
                                              if entry.id not in snapshot]
                self.report.problems.append(
                    f'the memory file was missing or unreadable; {len(restored)} entries were '
                    "restored from the last dream's snapshot in the evidence database. Edits "
                    'made since that dream are only in a set-aside copy: make them again in '
                    'the memory file (copied back whole, it would count the entries learned '
                    'since as deleted by hand)')
            return
        if self.cursor.file_hash is not None and file_hash(original) == self.cursor.file_hash:
            return
        present = {entry.id for entry in self.entries}
        for item in result.quarantined:
            raw_id = item.raw.get('id') if isinstance(item.raw, dict) else None
            if raw_id in snapshot and raw_id not in present:
                self.entries.append(MemoryEntry.model_validate(json.loads(snapshot[raw_id])))
                present.add(raw_id)
                self.report.problems.append(
                    f'entry {raw_id} was invalid after an edit ({item.reason}); the last good '
                    'version was kept and the edited one is in the quarantine file')
        first_dream = self.cursor.file_hash is None and not snapshot
        first_reason = 'present in the memory file before the first dream'
        set_aside = store_set_aside_copies(self.store) if first_dream else []
        if set_aside:
            first_reason = ('taken in from the memory file: the evidence database was damaged '
                            f'and set aside as {set_aside[-1].name}, so it was rebuilt from '
                            'robot-memory.md')
            # Each entry's link to its evidence, as far as the copy can be read (issue 40).
            for key, row in surviving_links(set_aside[-1], present).items():
                self.links.setdefault(key, row)
        linked: dict = {}
        for key, row in self.links.items():
            if row['entry_id']:
                linked.setdefault(row['entry_id'], []).append(key)
        for entry in self.entries:
            data = canonical(entry)
            old = snapshot.get(entry.id)
            if old == data:
                continue
            after = json.loads(data)
            if old is None and set_aside:  # not a person's edit: audited as the rebuild
                self._log(entry.id, 'rebuild', first_reason, {'change': 'added', 'entry': after})
                self.report.rebuilt.append(entry.id)
                continue
            if old is None:
                reason = first_reason if first_dream else 'entry added by hand'
                self._log(entry.id, 'manual', reason, {'change': 'added', 'entry': after})
            else:
                before = json.loads(old)
                summary = diff_summary(before, after)
                self._log(entry.id, 'manual', f'edited by hand: {summary}',
                          {'change': 'edited', 'before': before, 'after': after})
                if after['type'] != before['type'] and after['type'] != 'resolved':
                    for key in linked.get(entry.id, ()):
                        self.links[key]['entry_type'] = after['type']
            self.report.manual.append(entry.id)
        for entry_id, old in snapshot.items():
            if entry_id in present:
                continue
            before = json.loads(old)
            self._log(entry_id, 'manual', 'entry deleted by hand; its evidence starts over',
                      {'change': 'deleted', 'before': before})
            self.report.manual.append(entry_id)
            for key in linked.get(entry_id, ()):
                self.links[key].update(bad_total=0, held=0)  # entry_id kept: see below
                self.muted[key] = (entry_id, before.get('text', ''))
