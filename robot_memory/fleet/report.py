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
The fleet report: what the fleet store's robots say together, as data and as text.

``build_report(store, now, ...)`` rolls up the store's current entries and robots:

- ``same_fault``: each fault signature seen on two robots or more, with the robots, each
  robot's entry of it (``entries``: what an operator promotes) and their counts by model,
  firmware and site;
- ``robots``: every robot with the time last heard from, and ``silent`` when longer ago than
  ``silent_after_s`` (a robot dreams nightly: 36 hours by default);
- ``week``: entries learned (first heard), reinforced (observation count grew) and resolved
  (left a robot's payload) in the last ``days`` days;
- ``disagreements``: faults one robot resolved that others still see;
- ``refusals``: the store's count per refusal reason.
"""

import collections
import datetime as dt
from typing import Optional

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import to_utc
from robot_memory.fleet.refusals import REASONS

DEFAULT_DAYS = 7.0
DEFAULT_SILENT_AFTER_S = 36 * 3600.0
LABELS = '\x1f'  # between model, firmware and site in store.fault_entries() (never in a label)


def _iso(seconds) -> object:
    return format_iso(from_epoch(seconds)) if seconds is not None else None


def provenance(labels) -> tuple:
    """Return ``(model, firmware, site)`` of a row of ``store.fault_entries()`` (or Nones)."""
    return tuple(labels.split(LABELS)) if labels is not None else (None, None, None)


def _sorted(counts: collections.Counter) -> dict:
    return dict(sorted(counts.items()))


def _same_fault(groups: dict, texts: dict) -> list:
    """Roll up ``store.fault_entries()`` by signature: each fault on two robots or more."""
    faults = []
    for signature, group in groups.items():
        # one pass over the entries (sorted by RRN and entry): robots in order, each once
        robots: list = []
        entries: list = []
        counts: dict = {}
        last = None
        for _, rrn, entry_id, labels in group:
            if rrn != last:
                robots.append(rrn)
                last = rrn
            entries.append({'rrn': rrn, 'entry_id': entry_id})
            counts[labels] = counts.get(labels, 0) + 1
        if len(robots) < 2:
            continue
        by_model: collections.Counter = collections.Counter()
        by_firmware: collections.Counter = collections.Counter()
        by_site: collections.Counter = collections.Counter()
        for labels, count in counts.items():  # a few a fault: its entries' dreams
            model, firmware, site = provenance(labels)
            by_model[model] += count
            by_firmware[firmware] += count
            by_site[site] += count
        entry_type, text = texts[signature]
        faults.append({'signature': signature, 'type': entry_type, 'text': text,
                       'robots': robots, 'count': len(robots), 'by_model': _sorted(by_model),
                       'entries': entries, 'by_firmware': _sorted(by_firmware),
                       'by_site': _sorted(by_site)})
    faults.sort(key=lambda fault: (-fault['count'], fault['signature']))
    return faults


def _robots(robots: list, now: float, silent_after_s: float) -> list:
    return [{'rrn': row['rrn'], 'site': row['site'], 'model': row['model'],
             'firmware': row['firmware'], 'last_heard': _iso(row['last_heard']),
             'last_dream': int(row['last_dream']),
             'silent': now - row['last_heard'] > silent_after_s} for row in robots]


def _week(entries: list, since: float) -> dict:
    def item(row, at_field):
        return {'rrn': row['rrn'], 'entry_id': row['entry_id'], 'signature': row['signature'],
                'type': row['type'], 'text': row['text'], 'at': _iso(row[at_field])}
    return {
        'learned': [item(row, 'first_heard') for row in entries if row['first_heard'] >= since],
        'reinforced': [item(row, 'reinforced_at') for row in entries
                       if row['reinforced_at'] is not None and row['reinforced_at'] >= since
                       and row['status'] == 'active'],
        'resolved': [item(row, 'resolved_at') for row in entries
                     if row['resolved_at'] is not None and row['resolved_at'] >= since],
    }


def _disagreements(entries: list) -> list:
    groups: dict = collections.defaultdict(lambda: {'active': set(), 'resolved': set()})
    texts: dict = {}
    for row in entries:
        groups[row['signature']][row['status']].add(row['rrn'])
        texts.setdefault(row['signature'], row['text'])
    found = []
    for signature, seen in sorted(groups.items()):
        if seen['active'] and seen['resolved']:
            found.append({'signature': signature, 'text': texts[signature],
                          'resolved_by': sorted(seen['resolved']),
                          'still_seen_by': sorted(seen['active'])})
    return found


def build_report(store, now: dt.datetime, days: float = DEFAULT_DAYS,
                 silent_after_s: float = DEFAULT_SILENT_AFTER_S) -> dict:
    """Return the fleet's roll-ups at ``now`` as JSON data (module docstring)."""
    at = to_utc(now).timestamp()
    since = at - days * 86_400.0
    robots = _robots(store.robots(), at, silent_after_s)
    return {'at': format_iso(now), 'days': days, 'silent_after_s': silent_after_s,
            'robots': robots, 'silent': [robot['rrn'] for robot in robots if robot['silent']],
            'same_fault': _same_fault(*store.fault_entries()),
            'week': _week(store.changed_since(since), since),
            'disagreements': _disagreements(store.resolved_faults()),
            'refusals': store.refusals(), 'dreams_kept': store.dream_count()}


def _counts(mapping: dict) -> str:
    return ', '.join(f'{key} {value}' for key, value in mapping.items())


def _most(items: list, most: Optional[int]) -> tuple:
    """Return the first ``most`` items (all when None) and the line saying how many are left."""
    if most is None or len(items) <= most:
        return items, []
    return items[:most], [f'  ... and {len(items) - most} more (--most 0 lists all, --json '
                          'gives all)']


def format_report(report: dict, most: Optional[int] = None) -> str:
    """
    Return the report as text for people.

    ``most``: each list (robots, the same fault, each kind of the week, disagreements) shows
    at most that many items and says how many more there are; None shows all. Silent robots
    come first in the robots' list, the faults on the most robots first in theirs.
    """
    lines = [f'Fleet report at {report["at"]}: {len(report["robots"])} robots, '
             f'{report["dreams_kept"]} dreams kept']
    lines.append('\nRobots (last heard from):')
    robots, more = _most(sorted(report['robots'], key=lambda robot: not robot['silent']), most)
    for robot in robots:
        flag = '  SILENT' if robot['silent'] else ''
        lines.append(f'  {robot["rrn"]}  {robot["site"]}  {robot["model"]} '
                     f'{robot["firmware"]}  {robot["last_heard"]}  dream {robot["last_dream"]}'
                     f'{flag}')
    lines += more
    hours = report['silent_after_s'] / 3600
    lines.append(f'Silent longer than {hours:g} h: {", ".join(report["silent"]) or "none"}')
    lines.append('\nThe same fault on several robots:')
    faults, more = _most(report['same_fault'], most)
    for fault in faults:
        lines.append(f'  {fault["count"]} robots  [{fault["signature"]}] {fault["text"]}')
        lines.append(f'    by model: {_counts(fault["by_model"])}; by firmware: '
                     f'{_counts(fault["by_firmware"])}; by site: {_counts(fault["by_site"])}')
    lines += more
    if not report['same_fault']:
        lines.append('  none')
    week = report['week']
    lines.append(f'\nThe last {report["days"]:g} days: {len(week["learned"])} learned, '
                 f'{len(week["reinforced"])} reinforced, {len(week["resolved"])} resolved')
    for kind in ('learned', 'reinforced', 'resolved'):
        items, more = _most(week[kind], most)
        for item in items:
            lines.append(f'  {kind:<10} {item["rrn"]}  {item["text"]}')
        lines += more
    lines.append('\nRobots that disagree (one resolved what others still see):')
    items, more = _most(report['disagreements'], most)
    for item in items:
        lines.append(f'  [{item["signature"]}] {item["text"]}: resolved by '
                     f'{", ".join(item["resolved_by"])}; still seen by '
                     f'{", ".join(item["still_seen_by"])}')
    lines += more
    if not report['disagreements']:
        lines.append('  none')
    lines.append('\nRefused payloads: ' + _counts(report['refusals']))
    for reason, count in report['refusals'].items():
        if count:
            lines.append(f'  {reason}: {REASONS[reason]}')
    return '\n'.join(lines) + '\n'
