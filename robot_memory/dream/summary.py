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

r"""
The summary of a dream that a person reads.

What was learned, reinforced, resolved, pruned, and what contradicts what (the
"summarize" phase of a reflection cycle).

``build_summary(report, config)`` turns a ``autodream.DreamReport`` into Markdown; it is
pure (no files, no clock: the report carries its moment). Each section lists at most
``MAX_ITEMS`` entries and says how many more there were, so a night that prunes thousands
of entries still gives a page, not a log (``robot-memory history`` and the archive hold
everything). Entry text is shown on one line with control and bidirectional-override
characters written as ``\uXXXX``: the summary is read by people, and the file keeps what
was written.

``write_summary`` keeps the summary beside the memory file (beside a link's target, like
every side file) as ``<file>.dream-<time>.md`` and removes the summaries older than
``nights`` days; ``latest_summary`` reads the newest one back (the node publishes it again
after a restart).
"""

import contextlib
import datetime as dt
import os
import pathlib
import re
from typing import Optional

from robot_memory.common.fileio import write_atomic
from robot_memory.common.timeutil import file_stamp
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_file_stamp
from robot_memory.errors import MemoryFileError
from robot_memory.rcan.context import format_line
from robot_memory.rcan.context import neutralise
from robot_memory.rcan.context import percent
from robot_memory.rcan.lifecycle import DEFAULT_CONFIG
from robot_memory.rcan.lifecycle import LifecycleConfig

MAX_ITEMS = 50
SUMMARY_SUFFIX = '.md'
_STAMP = re.compile(r'(\d{8}T\d{6}Z)(?:-\d+)?' + re.escape(SUMMARY_SUFFIX) + r'\Z')


def one_line(text: str) -> str:
    """``text`` on one line, control and bidi-override characters written as escapes."""
    return neutralise(str(text))


def _item(change: dict, tail: str) -> str:
    return f'- `{change["id"]}` {one_line(change["text"])}: {one_line(tail)}'


def _section(title: str, lines: list, empty: Optional[str] = 'none') -> list:
    """Return a Markdown section (``None`` for ``empty`` leaves an empty section out)."""
    if not lines and empty is None:
        return []
    out = ['', f'## {title} ({len(lines)})' if lines else f'## {title}', '']
    if not lines:
        return out + [empty]
    out.extend(lines[:MAX_ITEMS])
    if len(lines) > MAX_ITEMS:
        out.append(f'- ... and {len(lines) - MAX_ITEMS} more (robot-memory history ENTRY_ID '
                   "shows any entry's record)")
    return out


def _waiting(proposal: dict) -> str:
    """One pending proposal (``Proposal.to_dict()``) as a summary line."""
    return (f'- #{proposal["id"]} {proposal["kind"]} from {proposal["source"]} '
            f'({one_line(proposal["proposer"])}, until {proposal["expires_at"]}): '
            f'{one_line(proposal["summary"])} — robot-memory approve {proposal["id"]} | '
            f'reject {proposal["id"]} --reason WHY')


def _changes(report, action: str) -> list:
    return [change for change in report.changes if change['action'] == action]


def worth_telling(report) -> bool:
    """
    Whether a dream did anything a person should read about (else no file, no topic).

    Evidence held for a later dream changes nothing: a fault that recurs between frequent
    dreams would otherwise write a summary each time, and the last useful one would no longer
    be the one published after a restart. Held evidence is still listed when there is more.
    """
    return bool(report.created or report.reinforced or report.resolved or report.reopened
                or report.pruned or getattr(report, 'merged', None) or report.manual
                or getattr(report, 'rebuilt', None)
                or report.contradictions
                or report.problems or getattr(report, 'proposed', None))


def build_summary(report, config: LifecycleConfig = DEFAULT_CONFIG) -> str:
    """Return the Markdown summary of one dream, for a person (pure)."""
    at = format_iso(report.at)
    lines = [f'# Dream of {at}', '', one_line(report.summary()) + f' (by {report.actor}).']
    if not worth_telling(report):
        lines += ['', 'Nothing in the memory changed.']
    learned = [f'- {format_line(one_line(change["text"]), change["detail"]["confidence"], config)}'
               f' (`{change["id"]}`, {change["type"]}): {one_line(change["reason"])}'
               for change in _changes(report, 'create')]
    reinforced = []
    for change in _changes(report, 'reinforce'):
        before, after = change['detail'].get('confidence') or (0.0, 0.0)
        reinforced.append(_item(change, f'{percent(before, config)}% → {percent(after, config)}%; '
                                        f'{change["reason"]}'))
    resolved = [_item(change, change['reason']) for change in _changes(report, 'resolve')]
    pruned = [_item(change, change['reason']) for change in _changes(report, 'prune')]
    merged = [_item(change, change['reason']) for change in _changes(report, 'merge')]
    contradictions = []
    for item in report.contradictions:
        change = {'id': item['entry_id'], 'text': item['text']}
        contradictions.append(_item(change, item['what']))
    manual = [_item(change, change['reason']) for change in _changes(report, 'manual')]
    rebuilt = [_item(change, change['reason']) for change in _changes(report, 'rebuild')]
    held = [f'- `{entry_id}`' for entry_id in report.held]
    lines += _section('Learned', learned)
    lines += _section('Reinforced', reinforced)
    lines += _section('Resolved', resolved)
    lines += _section('Pruned (kept in the archive file)', pruned)
    lines += _section('Merged (one incident, one entry)', merged, empty=None)
    lines += _section('Contradictions', contradictions)
    lines += _section('Conditions learned (and advice)', [
        f'- `{item["entry_id"] or "new"}` {one_line(item["about"])}: {one_line(item["condition"])}'
        + (f'; advice: {one_line(item["advice"])}' if item['advice'] else '')
        + f' — rests on {one_line(item["evidence"])}'
        for item in getattr(report, 'conditions', None) or ()], empty=None)
    waiting = [_waiting(item) for item in getattr(report, 'waiting', None) or ()]
    lines += _section('Waiting for approval', waiting,
                      empty='none: every change above was applied directly')
    lines += _section('Taken in from edits by hand', manual, empty=None)
    lines += _section('Taken in again from the memory file (the evidence database was rebuilt)',
                      rebuilt, empty=None)
    lines += _section('Evidence held for a later dream (reinforced too recently)', held,
                      empty=None)
    lines += _section('Problems', [f'- {one_line(problem)}' for problem in report.problems],
                      empty=None)
    return '\n'.join(lines) + '\n'


def _prefix(target: pathlib.Path) -> str:
    return f'{target.name}.dream-'


def summary_stamp(name: str, memory_name: str) -> Optional[dt.datetime]:
    """Return the moment in a summary file's name, or None if it is not one of ``memory_name``'s."""
    prefix = f'{memory_name}.dream-'
    if not name.startswith(prefix):
        return None
    match = _STAMP.match(name[len(prefix):])
    if match is None:
        return None
    return parse_file_stamp(match.group(1))


def expired_summaries(names, memory_name: str, now: dt.datetime, nights: int) -> list:
    """Return the summary files among ``names`` older than ``nights`` days before ``now``."""
    limit = now - dt.timedelta(days=nights)
    return sorted(name for name in names
                  if (stamp := summary_stamp(name, memory_name)) is not None and stamp < limit)


def write_summary(memory_file, text: str, at: dt.datetime, nights: int) -> pathlib.Path:
    """
    Write ``text`` as ``<file>.dream-<time>.md`` beside the memory file; drop old ones.

    Raises MemoryFileError when the file cannot be written (the caller reports it; the
    dream itself is already safe).
    """
    target = memory_file.target()
    base = f'{_prefix(target)}{file_stamp(at)}'
    path = target.with_name(base + SUMMARY_SUFFIX)
    counter = 2
    while path.exists():
        path = target.with_name(f'{base}-{counter}{SUMMARY_SUFFIX}')
        counter += 1
    write_atomic(path, text.encode('utf-8'))
    with contextlib.suppress(OSError):
        names = os.listdir(target.parent)
        for name in expired_summaries(names, target.name, at, nights):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target.with_name(name))
    return path


def latest_summary(memory_file) -> Optional[str]:
    """Return the text of the newest summary beside the memory file, or None."""
    try:
        target = memory_file.target()
        names = os.listdir(target.parent)
    except (OSError, MemoryFileError):
        return None
    found = [(summary_stamp(name, target.name), name) for name in names]
    # Two dreams in one second: <stamp>.md, then <stamp>-2.md, <stamp>-3.md...
    ordered = sorted((stamp, len(name), name) for stamp, name in found if stamp is not None)
    for _, _, name in reversed(ordered):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            return target.with_name(name).read_text(encoding='utf-8')
    return None
