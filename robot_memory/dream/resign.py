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
Re-signing: evidence keeps its entry when the way signatures are made changes.

Signatures made before ids were masked (robot_memory.evidence.observations.message_pattern)
or under an earlier rules file are re-made from the evidence's stored payload at the next
dream, for the signature links and for the new evidence groups alike.
"""

import dataclasses
import json

from robot_memory.dream.pattern import History


def resign(links: dict, rules) -> list:
    """
    Move each link to the signature its evidence gets under ``rules``; return old keys.

    Signatures made before ids were masked (a goal's UUID, a serial) or under an
    earlier rules file are re-made from the link's last payload, so the fault keeps
    its entry. Links that now share a signature are merged into one, unless both
    already have an entry (then the old one is left as it is).
    """
    gone = []
    for key in sorted(links):
        link = links[key]
        try:
            payload = json.loads(link['payload']) if link['payload'] else None
        except ValueError:
            continue
        new = rules.signature_of(link['source'], payload)
        if new is None or new == key:
            continue
        target = links.get(new)
        if target is None:
            links[new] = dict(link, signature=new)
        elif target['entry_id'] and link['entry_id']:
            continue
        else:
            if not target['entry_id']:
                target.update(entry_id=link['entry_id'], entry_type=link['entry_type'])
            history = History.from_json(target['history'])
            history.episodes = sorted(history.episodes
                                      + History.from_json(link['history']).episodes)
            target['history'] = history.to_json()
            target.update(bad_total=target['bad_total'] + link['bad_total'],
                          held=target['held'] + link['held'],
                          first_seen=_either(min, target['first_seen'], link['first_seen']),
                          last_bad=_either(max, target['last_bad'], link['last_bad']))
        del links[key]
        gone.append(key)
    return gone


def regroup(groups: dict, episodes: dict, rules) -> dict:
    """Merge groups (and episodes) whose evidence gets one signature now (see _resign)."""
    merged: dict = {}
    moved: dict[str, list] = {}
    for key in sorted(groups):
        group = groups[key]
        try:
            payload = json.loads(group.payload) if group.payload else None
        except ValueError:
            payload = None
        new = rules.signature_of(group.source, payload) or key
        if new != key:
            moved.setdefault(new, []).extend(episodes.pop(key, ()))
        into = merged.get(new)
        if into is None:
            merged[new] = dataclasses.replace(group, signature=new)
            continue
        if group.last >= into.last:
            into.source, into.source_key, into.payload = (group.source, group.source_key,
                                                          group.payload)
        into.count += group.count
        into.errors += group.errors
        into.first, into.last = min(into.first, group.first), max(into.last, group.last)
    for key, items in moved.items():
        episodes[key] = sorted(episodes.get(key, []) + items)
    return merged


def _either(pick, *values):
    """``pick`` (min or max) of the values that are not None, or None."""
    present = [value for value in values if value is not None]
    return pick(present) if present else None
