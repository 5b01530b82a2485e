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
The dream's clock checks: a time before the last dream, and a leap far beyond it.

A dream decays every entry from its last reinforcement to the dream's time and prunes
what fell below ``prune_min``; the time of the last dream is the floor of every later
one. So a dream at a wrong time is harmful both ways:

* **backwards** (``report.clock_backwards``): a time before the last dream changes
  nothing (an NTP correction, a ``--at`` in the past). When the last dream is the one at
  the wrong time (a clock that had jumped ahead), the refusal names the way back: take
  that dream back, ``robot-memory undo --dream N``, which also moves the dream cursor
  back to the dream before it, so dreams run again;
* **a leap** (``report.clock_leap``): a time more than ``dream.max_leap_days`` (default
  2) after both the last dream and the newest evidence since it changes nothing either,
  until a person confirms it (``robot-memory dream --confirm-leap``, ``dream(...,
  confirm_leap=True)``); the confirmed leap is kept in the dream's report in the dream
  log (``leap_confirmed``). A robot switched off for a month is no leap: its first dream
  after the month has new evidence stamped "now". The very first dream of a database has
  no earlier time to leap from.

Pure but for reading the store: ``now`` is passed in.
"""

import datetime as dt
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.dream.report import DreamReport

UNDO_HINT = ('if that dream ran at a wrong time (a clock that had jumped ahead), take it back '
             'with robot-memory undo --dream {dream} --reason "..." (memory_node: ~/undo with '
             'dream_id {dream}; README, Clock jumps): the memory is restored and dreams run '
             'again')


def leap_days(now: dt.datetime, last_dream: Optional[dt.datetime],
              newest_evidence: Optional[dt.datetime]) -> Optional[float]:
    """Days ``now`` lies after both the last dream and the newest evidence (None: no dream)."""
    if last_dream is None:
        return None
    since = max(last_dream, newest_evidence) if newest_evidence is not None else last_dream
    return (now - since).total_seconds() / 86400.0


def last_dream_id(store, at: dt.datetime) -> Optional[int]:
    """Return the id of the latest dream logged at ``at`` (None: none)."""
    return store.db.execute('SELECT max(id) FROM dreams WHERE at = ?',
                            (format_iso(at),)).fetchone()[0]


def may_dream(store, cursor, now: dt.datetime, max_leap_days: float, confirm_leap: bool,
              report: DreamReport) -> bool:
    """
    Whether a dream at ``now`` may change anything; when not, say why in ``report``.

    ``cursor`` is the store's dream cursor (read under the file lock).
    """
    last = cursor.last_dream_at
    if last is not None and now < last:
        report.clock_backwards = True
        dream = last_dream_id(store, last)
        hint = f'; {UNDO_HINT.format(dream=dream)}' if dream is not None else ''
        report.problems.append(
            f'the clock went backwards: {format_iso(now)} is before the last dream at '
            f'{format_iso(last)}; nothing was changed. Check the system clock (NTP), or the '
            f'time asked for (--at); dreams after that time proceed normally{hint}')
        return False
    newest = store.newest_stamp(cursor.last_id)
    newest_at = from_epoch(newest) if newest is not None else None
    days = leap_days(now, last, newest_at)
    if days is None or days <= max_leap_days:
        return True
    assert last is not None  # leap_days needs a last dream
    evidence = (f'the newest evidence since it is from {format_iso(newest_at)}'
                if newest_at is not None else 'no evidence came since it')
    said = (f'{format_iso(now)} is {days:.1f} days after the last dream '
            f'({format_iso(last)}) and {evidence}: more than dream.max_leap_days '
            f'({max_leap_days:g})')
    if confirm_leap:
        report.leap_confirmed = f'{said}; confirmed by {report.actor}'
        return True
    report.clock_leap = True
    report.problems.append(
        f'the clock leapt ahead: {said}; nothing was changed (no decay, no prune across the '
        'leap). Check the system clock (NTP) or the time asked for (--at); if the time is '
        'right, confirm it: robot-memory dream --confirm-leap')
    return False
