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

"""The archive of pruned entries: ``<memory file>.archive.jsonl``, appended durably."""

import dataclasses
import json

from robot_memory.common import jsontext
from robot_memory.common.fileio import append_durably
from robot_memory.common.timeutil import format_iso
from robot_memory.rcan.memory_file import size_text

ARCHIVE_SUFFIX = '.archive.jsonl'  # beside the memory file (a link's target)
_ARCHIVE_TAIL_BYTES = 8 << 20
# What one prune may append to the archive: per entry (an entry's own fields take about
# 3 KiB at most; unknown keys are unbounded), and for the whole run (some 30,000 entries).
ARCHIVE_ENTRY_BYTES = 64 * 1024
ARCHIVE_RUN_BYTES = 16 << 20


@dataclasses.dataclass
class Archived:
    """What ``archive_pruned`` archived, and what it held back in the file."""

    archived: list = dataclasses.field(default_factory=list)
    # Larger than ARCHIVE_ENTRY_BYTES (unknown keys can be any size): they stay in the file.
    too_large: list = dataclasses.field(default_factory=list)
    # Beyond ARCHIVE_RUN_BYTES for this run: they stay in the file for the next prune.
    over_run: list = dataclasses.field(default_factory=list)

    @property
    def held_back(self) -> list:
        """Every pruned item that was not archived, so must stay in the file."""
        return self.too_large + self.over_run

    def advice(self) -> str:
        """Return what was held back and what to do, or '' when nothing was."""
        parts = []
        if self.too_large:
            parts.append(
                f'{len(self.too_large)} too large to archive (over '
                f'{ARCHIVE_ENTRY_BYTES // 1024} KiB each) held back in the file: trim their '
                'unknown keys by hand, then prune again')
        if self.over_run:
            parts.append(
                f'{len(self.over_run)} held back for the next prune (the archive takes at '
                f'most {size_text(ARCHIVE_RUN_BYTES)} a run)')
        return '; '.join(parts)


def archive_pruned(memory, pruned, now, reason='pruned') -> Archived:
    """
    Append pruned entries to ``<file>.archive.jsonl`` durably, before they leave the file.

    The archive lies beside the memory file's target when the file is a symbolic link.
    What one run appends is bounded: an entry whose record is over ARCHIVE_ENTRY_BYTES,
    and every entry after ARCHIVE_RUN_BYTES were written, is held back (the caller keeps
    it in the file), so a hostile file cannot fill the disk through the archive.

    Idempotent for one ``now``: an entry already archived at that moment (a dream re-run
    after a crash) is not archived twice.
    """
    path = memory.side_path(ARCHIVE_SUFFIX)
    when = format_iso(now)
    already = _archived_at(path, when) if pruned else set()
    outcome, records, total = Archived(), [], 0
    for item in pruned:
        if item.entry.id in already:
            outcome.archived.append(item)
            continue
        record = {'archived_at': when, 'reason': reason,
                  'effective_confidence': round(item.effective_confidence, 6),
                  'entry': item.entry.model_dump(mode='json')}
        size = len(json.dumps(record, ensure_ascii=False, default=str).encode('utf-8')) + 1
        if size > ARCHIVE_ENTRY_BYTES:
            outcome.too_large.append(item)
        elif outcome.over_run or total + size > ARCHIVE_RUN_BYTES:
            outcome.over_run.append(item)
        else:
            total += size
            records.append(record)
            outcome.archived.append(item)
    append_durably(path, records)
    return outcome


def _archived_at(path, when: str) -> set:
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - _ARCHIVE_TAIL_BYTES))
            tail = handle.read().decode('utf-8', errors='replace')
    except FileNotFoundError:
        return set()
    found = set()
    for line in tail.splitlines():
        if when not in line:
            continue
        try:
            record = jsontext.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get('archived_at') == when:
            found.add((record.get('entry') or {}).get('id'))
    return found
