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
What an entry made from evidence says: its pattern restated, an incident's statuses named.

``restate`` words an entry from its signature links (the one whose words it is speaks;
the others are the statuses that start and stop with it) and names the state of another
source it happens only in (``dream.cooccurrence``); ``incident_partner`` finds, for a new
signature, one whose episodes start and stop with its own (one incident, one entry).
"""

import dataclasses
import json
from typing import Optional

from robot_memory.dream import normal
from robot_memory.dream.cooccurrence import only_while
from robot_memory.dream.pattern import by_how_much
from robot_memory.dream.pattern import describe
from robot_memory.dream.pattern import entry_text
from robot_memory.dream.pattern import History
from robot_memory.dream.pattern import rule_text
from robot_memory.dream.pattern import without_node
from robot_memory.evidence.observations import message_pattern
from robot_memory.evidence.rules import clean_text
from robot_memory.evidence.rules import reported

# Two statuses are one incident when most of their episodes start within ALIGN_START_S and
# end within ALIGN_END_S of each other; episodes this long or longer are conditions, not
# incidents (two conditions present since boot would otherwise look like one).
ALIGN_START_S = 60.0
ALIGN_END_S = 120.0
ALIGN_SHARE = 0.8
MAX_INCIDENT_S = 6 * 3600.0


def _share(episodes: list, others: list) -> float:
    hits = sum(1 for start, end, *_ in episodes
               if any(abs(start - other[0]) <= ALIGN_START_S
                      and abs(end - other[1]) <= ALIGN_END_S for other in others))
    return hits / len(episodes)


def start_and_stop_together(one: list, other: list) -> bool:
    """Whether two signatures' episodes (``[start, end, ...]``) start and stop together."""
    if not one or not other:
        return False
    if any(end - start >= MAX_INCIDENT_S for start, end, *_ in one + other):
        return False
    return _share(one, other) >= ALIGN_SHARE and _share(other, one) >= ALIGN_SHARE


class Partners:
    """Signatures a new one may be one incident with, by the hardware id their status reports."""

    def __init__(self):
        self.by_device: dict = {}  # hardware id -> {signature: source key}
        self.devices: dict = {}  # signature -> its hardware id

    def add(self, signature: str, source_key: str) -> None:
        """Let ``signature`` (a status of ``source_key``) be a partner (again: its new key)."""
        previous = self.devices.pop(signature, None)
        if previous is not None:
            del self.by_device[previous][signature]
        hardware = device(source_key)
        if hardware:
            self.devices[signature] = hardware
            self.by_device.setdefault(hardware, {})[signature] = source_key


def incident_partner(signature: str, source_key: str, episodes: dict,
                     candidates: Partners) -> Optional[str]:
    """
    Return the signature of ``candidates`` in one incident with ours.

    Only another status of the same hardware id can be a partner: statuses of unrelated
    devices that happen to fail at once stay apart (so only those are looked at: a dream
    creating 10,000 entries compared each with all the others). ``episodes`` holds this
    window's episodes by signature. The first partner in signature order is returned.
    """
    own = episodes.get(signature)
    hardware = device(source_key)
    if not own or not hardware:
        return None
    same = candidates.by_device.get(hardware, {})
    for other in sorted(same):
        if same[other] != source_key and start_and_stop_together(own, episodes.get(other, ())):
            return other
    return None


def device(source_key: str) -> str:
    """Return the hardware id a status reports on ('' for a log or an empty id)."""
    kind, _, rest = source_key.partition('|')
    return rest.partition('|')[0] if kind == 'diagnostic' else ''


def _payload(link: dict) -> Optional[dict]:
    try:
        payload = json.loads(link['payload']) if link['payload'] else None
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _with_others(base: str, link: dict, links: list) -> str:
    """Return ``base`` naming the other statuses of the incident (their name and message)."""
    named: list = []
    own = (_payload(link) or {}).get('name', '')
    for other in sorted(links, key=lambda item: item['signature']):
        payload = _payload(other)
        if other is link or payload is None or other['source_key'] == link['source_key']:
            continue
        payload = reported(payload)  # another status's words are quoted data too
        what = f'{payload.get("name") or payload.get("node", "?")}: {payload.get("message", "")}'
        what = short_name(what, own)
        if what not in named:
            named.append(what)
    return f'{base} (together with {"; ".join(named)})' if named else base


def short_name(name: str, own: str) -> str:
    """Return ``name`` without the node prefix (``node: ``) it shares with ``own``."""
    node, found, rest = name.partition(': ')
    return rest if found and rest and own.startswith(f'{node}: ') else name


def speaker(text: str, links: list, rules) -> Optional[tuple]:
    """Return (link, payload, history) whose words ``text`` is, or None (a person's words)."""
    found = []
    mine = None
    for link in sorted(links, key=lambda item: item['signature']):
        payload = _payload(link)
        if (link['rule'] and not rules.view(link['source'], link['rule']).normal) \
                or not link['history'] or payload is None:
            continue
        history = History.from_json(link['history'])
        if history.text == text:
            return link, payload, history
        # The rule's own text; once restated, exactly it (the entry was pruned and came
        # back, or an undo put the rule text back), never a person's text that extends it.
        # Equal texts mask alike: a new entry's text is its rule's, unmasked.
        rule = rules.candidate_text(link['source'], payload)
        if text == rule:
            found.append((link, payload, history))
            continue
        if mine is None:
            mine = message_pattern(text)
            # The dream's own restated text, whose link's history was lost (the evidence
            # database was rebuilt): stated again from the evidence there is, not left stale.
            bare = message_pattern(rule_text(text))
        # Restated, the rule's text may have lost a node prefix (pattern.without_node).
        rules_said = {message_pattern(rule), message_pattern(without_node(rule))}
        if mine in rules_said or (not history.text and (
                mine.startswith(tuple(rules_said)) or bare in rules_said)):
            found.append((link, payload, history))
    return found[0] if found else None


def source_states(links: dict) -> list:
    """Return every signature's state as ``(source key, name, episodes)``, for ``restate``."""
    found = []
    for key in sorted(links):
        link = links[key]
        payload = _payload(link)
        episodes = History.from_json(link['history']).episodes if link['history'] else []
        if payload is None or not episodes:
            continue
        payload = reported(payload)  # named in another entry's "only while": quoted data
        if 'node' in payload:
            name = f'{payload["node"]} logs {payload.get("message", "")}'
        else:
            name = f'{payload.get("name", "?")} reports {payload.get("message", "")}'
        found.append((link['source_key'], name.replace(' - ', ', '), episodes))
    return found


def _others(everything: list, links: list, own: list) -> dict:
    """Other sources' states; a status of one incident with ours is named as such instead."""
    mine = {link['source_key'] for link in links}
    hardware = {device(link['source_key']) for link in links} - {''}
    found: dict = {}
    for source_key, name, episodes in everything:
        if source_key in mine or (device(source_key) in hardware
                                  and start_and_stop_together(own, episodes)):
            continue
        found.setdefault(name, []).extend(episodes)
    return found


def _how_much(history: History, link: dict, links: list) -> str:
    """By how much the speaking status's values were off; else another of its incident's."""
    found = by_how_much(history)
    for other in sorted(links, key=lambda item: item['signature']):
        if found:
            break
        if other is not link and other['history']:
            found = by_how_much(History.from_json(other['history']))
    return found.replace(' - ', ', ')


def _only_while(history: History, links: list, everything: list, held: dict,
                now) -> Optional[str]:
    """Return the state of another source an entry happens only in: a bad one, an OK one."""
    state = only_while(history.episodes, _others(everything, links, history.episodes),
                       now.timestamp()) if everything else None
    if state is None and held:
        mine = {link['source_key'] for link in links}
        candidates = {name: intervals for name, (key, intervals) in held.items()
                      if key not in mine}
        # OK reports are kept for the evidence's retention: judge the episodes since then.
        since = min((intervals[0][0] for intervals in candidates.values()),
                    default=now.timestamp())
        state = only_while([item for item in history.episodes if item[0] >= since], candidates,
                           now.timestamp())
    return state


def restate(text: str, links: list, rules, sources: dict, now, timezone: str,
            everything: Optional[list] = None, held: Optional[dict] = None,
            conditions=None, again: bool = False) -> Optional[tuple]:
    """
    Return (text, label, judgement text or None) stating the pattern of the evidence, or None.

    Only a text the dream itself wrote (a link's rule text, or the last one restated) is
    restated, from that link's episodes: a person's reword and a rules-file template win,
    except a rule's that declares its condition normal (``normal: true``): its entry is
    labelled a condition (``dream.normal.declared``) with the template's words.
    ``sources`` holds each source key's state (its last OK report); ``everything``
    (``source_states``) gives the other sources' bad states an entry may happen only in,
    ``held`` (``cooccurrence.ok_states``) the states their OK reports hold;
    ``conditions(episodes)`` (``dream.conditions.Finder``) the learned condition, if any.
    A routine or constant pattern that is not the dream's to call normal (``dream.normal``) is
    stated as a fact; the routine text is returned once, for a person to approve, and
    ``again`` when the last time it was proposed nobody answered (it expired).
    """
    spoken = speaker(text, links, rules)
    if spoken is None:
        return None
    link, payload, history = spoken
    if not history.episodes:
        return None
    base = _with_others(without_node(rules.candidate_text(link['source'], payload)), link,
                        links)
    state = sources.get(link['source_key']) or {}
    ok = state.get('last_ok') is not None and state['last_ok'] > history.episodes[0][0]
    found = describe(history, now, timezone, ok)
    how_much = _how_much(history, link, links)
    if found is not None and how_much:
        found = dataclasses.replace(found, phrase=f'{found.phrase}, {how_much}')
    if found is not None and found.label != 'constant' and (everything or held):
        state = _only_while(history, links, everything or [], held or {}, now)
        if state is not None:
            state = short_name(state, payload.get('name', ''))
            found = dataclasses.replace(found, phrase=f'{found.phrase}, only while {state}')
    # The fault's own statuses' values restate the fault ("by how much" says them): not a
    # condition it happens under.
    own = tuple((_payload(item) or {}).get('name', '') for item in links)
    condition = conditions(history.episodes, own) if conditions and found is not None \
        and found.label != 'constant' else None
    if condition is not None and found is not None:
        found = dataclasses.replace(found, phrase=f'{found.phrase}, {condition.phrase()}')
    began_after_ok = not ok and (sources.get(link['source_key']) or {}).get('last_ok') is not None
    if link['rule'] and rules.view(link['source'], link['rule']).normal:
        found, judgement = normal.declared(found, link['rule']), None
    else:
        found, judgement = normal.judged(found, payload, link['source'], how_much,
                                         began_after_ok)
    restated = clean_text(entry_text(base, found))
    history.text = restated
    proposed = None
    key = normal.proposal_key(judgement, base)
    if key is not None and (history.normal != key or again):
        history.normal = key
        proposed = clean_text(entry_text(base, judgement))
    link['history'] = history.to_json()
    return restated, (found.label if found else ''), proposed


class RuleTexts:
    """
    A dream's view of the rules: each observation's rule text worked out once a dream.

    A new entry's text is asked for three times in a dream (the candidate, who speaks for
    an incident, the restatement), each a template rendered and every value scanned for
    instruction-like text: about a third of a dream over 10,000 signatures. The texts are
    kept for the one dream only (the rules do not change within it). Everything else is
    the rules' own.
    """

    def __init__(self, rules):
        self._rules = rules
        self._texts: dict = {}

    def candidate_text(self, source: str, payload: dict) -> str:
        """Return the rules' candidate text of an observation, worked out once a dream."""
        key = (source, json.dumps(payload, sort_keys=True, default=str))
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._rules.candidate_text(source, payload)
        return text

    def __getattr__(self, name: str):
        return getattr(self._rules, name)
