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
One incident, one entry: entries whose statuses start and stop together become one.

``merges`` finds, among the entries the dream wrote, those whose signatures' recent
episodes start and stop together on one hardware id (``restate.start_and_stop_together``)
and pairs each with the oldest of its incident. ``IncidentMerging`` is the dream's half:
it moves the younger entry's signature links to the older entry, removes the younger
entry (its prior state is kept, so an undo of the dream restores it), restates the kept
entry so it names the others, and audits it as ``merge``.
"""

import datetime as dt
from typing import Any
from typing import Callable
from typing import Optional

from pydantic import ValidationError

from robot_memory.dream.conditions import Finder
from robot_memory.dream.conditions import new_condition
from robot_memory.dream.cooccurrence import ok_states
from robot_memory.dream.distiller import RuleDistiller
from robot_memory.dream.normal import JUDGEMENTS
from robot_memory.dream.pattern import History
from robot_memory.dream.pattern import KEEP_DAYS
from robot_memory.dream.pattern import STATUS_GAP_S
from robot_memory.dream.restate import device
from robot_memory.dream.restate import restate
from robot_memory.dream.restate import source_states
from robot_memory.dream.restate import speaker
from robot_memory.dream.restate import start_and_stop_together
from robot_memory.evidence.proposal_queue import waiting_or_answered
from robot_memory.evidence.runs import state_rows
from robot_memory.rcan import untrusted
from robot_memory.rcan.schema import MemoryEntry

# Episodes each entry must have before two existing entries are called one incident: a
# single coincidence is not enough.
MIN_EPISODES = 2


def merge_candidates(links: dict, by_id: dict, rules) -> dict:
    """
    Return ``{entry id: (episodes, hardware ids, source keys)}`` of the entries that may merge.

    Entries the dream wrote, not resolved, with at least MIN_EPISODES episodes.
    """
    own: dict = {}
    for key in sorted(links):
        link = links[key]
        if link['entry_id'] in by_id and link['history']:
            own.setdefault(link['entry_id'], []).append(link)
    facts = {}
    for entry_id, found in own.items():
        entry = by_id[entry_id]
        if entry.type == 'resolved' or speaker(entry.text, found, rules) is None:
            continue
        episodes = sorted(item for link in found
                          for item in History.from_json(link['history']).episodes)
        if len(episodes) >= MIN_EPISODES:
            facts[entry_id] = (episodes, {device(link['source_key']) for link in found} - {''},
                               {link['source_key'] for link in found})
    return facts


def merges(links: dict, by_id: dict, rules) -> list:
    """
    Return ``(kept id, merged id)`` pairs: entries of one incident, the oldest kept.

    Only entries the dream wrote (a person's reword is never merged away) and that are not
    resolved; their statuses must share a hardware id and differ.
    """
    facts = merge_candidates(links, by_id, rules)
    group = {entry_id: entry_id for entry_id in facts}

    def root(entry_id):
        while group[entry_id] != entry_id:
            entry_id = group[entry_id]
        return entry_id

    ordered = sorted(facts, key=lambda entry_id: (by_id[entry_id].first_seen, entry_id))
    position = {entry_id: index for index, entry_id in enumerate(ordered)}
    # Only entries sharing a hardware id are compared (all pairs of 10,000 entries: 27 s).
    by_device: dict = {}
    for entry_id in ordered:
        for hardware in facts[entry_id][1]:
            by_device.setdefault(hardware, []).append(entry_id)
    for index, one in enumerate(ordered):
        mine, devices, keys = facts[one]
        others = {other for hardware in devices for other in by_device[hardware]
                  if position[other] > index}
        for other in sorted(others, key=position.__getitem__):
            theirs, _, their_keys = facts[other]
            if not keys & their_keys and start_and_stop_together(mine, theirs):
                first, second = sorted((root(one), root(other)), key=position.__getitem__)
                group[second] = first
    return [(root(entry_id), entry_id) for entry_id in ordered if root(entry_id) != entry_id]


JUDGED, RELEASED = 0, 1  # which proposal of the dream's own IncidentMerging._asked is about


class HeldText:
    """
    ``(entry id, text, text)`` of a held entry, read when the queue takes it (a reword).

    Made while the dream words the entry, before a new entry has its id; the proposals
    queue reads it after the dream's commit, from the entry's signature link.
    """

    def __init__(self, by_id: dict, link: dict):
        self.by_id = by_id
        self.link = link

    def __iter__(self):
        """Yield the entry's id and its text twice (before and after: a release)."""
        entry = self.by_id.get(self.link['entry_id'] or '')
        text = entry.text if entry is not None else ''
        return iter((self.link['entry_id'] or '', text, text))


class Judgement(HeldText):
    """``(entry id, text, routine or constant text)``: a person's call the dream proposes."""

    def __init__(self, by_id: dict, link: dict, after: str):
        super().__init__(by_id, link)
        self.after = after

    def __iter__(self):
        """Yield the entry's id, its text and the text that labels it normal."""
        entry_id, text, _ = super().__iter__()
        return iter((entry_id, text, self.after))


class IncidentMerging:
    """The dream's wording of entries and merging of one incident's entries (a mixin)."""

    # What the dream (autodream._Dream) holds, which these methods read and change.
    links: dict
    by_id: dict
    entries: list
    position: dict
    rules: Any
    sources: dict
    now: dt.datetime
    config: Any
    distiller: Any
    report: Any
    states: Optional[list] = None  # the other sources' states, built once a dream
    ok_states: Optional[dict] = None  # the states statuses' OK reports hold (cooccurrence)
    conditions: Optional[Finder] = None  # learned conditions (dream.conditions), once a dream
    asked: Optional[tuple] = None  # (judged, released) entry ids: see _asked
    store: Any
    _replace: Callable[..., None]
    _log: Callable[..., None]

    def _merge_incidents(self, evidence: dict) -> None:
        """Merge existing entries of one incident; ``evidence`` moves to the kept entry."""
        for kept_id, merged_id in merges(self.links, self.by_id, self.rules):
            kept, merged = self.by_id[kept_id], self.by_id.pop(merged_id)
            moved = sorted(key for key, link in self.links.items()
                           if link['entry_id'] == merged_id)
            for key in moved:
                self.links[key].update(entry_id=kept_id,
                                       entry_type=self.links[key]['entry_type'] or merged.type)
            evidence.setdefault(kept_id, []).extend(evidence.pop(merged_id, []))
            self.entries = [entry for entry in self.entries if entry.id != merged_id]
            self.position = {entry.id: index for index, entry in enumerate(self.entries)}
            detail = {'merged': merged_id, 'signatures': moved,
                      'entry': {'text': kept.text, 'type': kept.type},
                      'merged_entry': {'text': merged.text, 'type': merged.type,
                                       'confidence': merged.confidence}}
            links = [link for link in self.links.values() if link['entry_id'] == kept_id]
            updated, note = self._with_text(kept, links, detail)
            self._replace(kept, updated)
            self._log(kept_id, 'merge', f'{merged_id} starts and stops with it (one incident, '
                                        f'one entry); its {len(moved)} signature(s) moved here'
                                        f'{note}', detail)
            self.report.merged.append([kept_id, merged_id])

    def _with_text(self, entry, links: list, detail: dict) -> tuple:
        """Return (entry with its pattern restated, its id kept; a note for the audit)."""
        restated = self._restated(entry.text, links)
        if restated is None or restated[0] == entry.text:
            return entry, ''
        try:
            updated = MemoryEntry.model_validate(dict(entry.model_dump(), text=restated[0]))
        except ValidationError:
            return entry, ''
        detail['text'] = [entry.text, restated[0]]
        return updated, f'; restated as {restated[1] or "the rule text"}'

    def _restated(self, text: str, links: list) -> Optional[tuple]:
        """Return (text, label) restating an entry from its links (a distiller's words stay)."""
        if not isinstance(self.distiller, RuleDistiller):
            self._hold(text, links)
            return None
        restated = self._restate(text, links)
        self._hold(restated[0] if restated else text, links)
        if restated and restated[2] and links:  # routine or constant: a person's call
            link = min(links, key=lambda item: item['signature'])
            self.report.rewords.append(Judgement(self.by_id, link, restated[2]))
            self._now_asked(link, JUDGED)
        return restated

    def _asked(self, link: dict, which: int) -> bool:
        """
        Whether a person has the entry's judgement or release before them, or answered it.

        ``which``: JUDGED (its routine wording) or RELEASED (a held text's release). The
        link's history keeps what was proposed, so it is proposed once; one that expired
        unanswered (or was never queued: the queue could not be written) is proposed again,
        or the entry would stay as it is for good. An entry without an id yet was never asked.
        """
        if self.asked is None:
            judged, released = set(), set()
            db = getattr(self.store, 'db', None)
            for target, payload in waiting_or_answered(db, 'reword') if db is not None else ():
                after = payload.get('after') if isinstance(payload, dict) else None
                if not isinstance(after, str):
                    continue
                if after.startswith(JUDGEMENTS):
                    judged.add(target)
                elif payload.get('before') == after:
                    released.add(target)
            self.asked = (judged, released)
        return not link['entry_id'] or link['entry_id'] in self.asked[which]

    def _now_asked(self, link: dict, which: int) -> None:
        """Count the entry of ``link`` as asked for the rest of this dream."""
        if link['entry_id'] and self.asked is not None:
            self.asked[which].add(link['entry_id'])

    def _hold(self, text: str, links: list) -> None:
        """
        Propose the release of an entry text that quotes instruction-like text, once.

        The block holds such an entry from the brain (``untrusted.held``); the dream
        queues a reword of the entry to its own text, which a person's approval turns into
        a release (``review.proposing.apply_reword``). The signature link's history keeps
        the key proposed, so a text restated around the same quote is not proposed again.
        """
        key = untrusted.release_key(text)
        if not key or not links:
            return
        link = min(links, key=lambda item: item['signature'])
        entry = self.by_id.get(link['entry_id'] or '')
        history = History.from_json(link['history'])
        if (history.held == key and self._asked(link, RELEASED)) or (
                entry is not None and entry.extras.get(untrusted.RELEASED) == key):
            return
        history.held = key
        link['history'] = history.to_json()
        self.report.rewords.append(HeldText(self.by_id, link))
        self._now_asked(link, RELEASED)

    def _restate(self, text: str, links: list) -> Optional[tuple]:
        if self.states is None:  # once a dream, after the histories
            self.states = source_states(self.links)
            since = self.now.timestamp() - KEEP_DAYS * 86400.0
            self.ok_states = ok_states(state_rows(self.store.db, since), STATUS_GAP_S)
        if self.conditions is None:
            self.conditions = Finder(self.store, self.now.timestamp(), self.rules.spec.signals,
                                     KEEP_DAYS)
        finder = self.conditions
        finder.last = None
        again = bool(links) and not self._asked(min(links, key=lambda item: item['signature']),
                                                JUDGED)
        restated = restate(text, links, self.rules, self.sources, self.now,
                           self.config.timezone, self.states, self.ok_states, finder, again)
        new_condition(self.report, text, restated, links, finder.last)
        return restated
