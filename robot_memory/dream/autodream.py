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
Autodream: consolidate the evidence since the last dream into robot-memory.md.

``dream(store, memory_file, now, rules, config)`` reads the observations added since the
dream cursor, groups them by *signature* (never by text) and:

* **creates** an entry for a signature without one (once it has ``min_count``
  observations), worded by the rule template or a distiller, with an initial confidence
  from the strength of the evidence: ``initial_min + (initial_max - initial_min) x
  count_factor x spread_factor`` where ``count_factor = min(1, log2(count + errors) /
  log2(initial_full_count))`` (an ERROR counts twice) and ``spread_factor = min(1, minutes
  between first and last observation / initial_full_spread_minutes)``. Defaults 0.10 to
  0.50, 64 observations, 60 minutes: a one-off glitch (one report, or any burst shorter
  than 30 minutes, however many reports) starts below the injection threshold 0.30 and
  only reaches it if it recurs on a later night; an hour-long stream of warnings can
  start at 0.50, never higher;
* **reinforces** an entry at most once per dream with evidence, via
  ``lifecycle.reinforce(entry, now, config, observations=1)``. ``observation_count``
  therefore counts *dream cycles with evidence* (nights on which the fault was seen),
  as in the RCAN example of 14 observations; the raw observation counts stay in the
  database (``signatures.bad_total``, ``daily_counts``, the audit details). A flood of
  10,000 identical warnings in one night is one step of +0.10. An entry reinforced less
  than ``min_reinforce_interval_hours`` (default 20) ago is not reinforced again: its
  evidence is *held* and applied by the first dream after the interval, so dreaming
  hourly does not make confidence climb faster than dreaming nightly;
* **resolves** an entry (type ``resolved``, the original type kept in the signature link
  and in the entry key ``resolved_from``) when every source it is linked to has reported
  OK for ``quiet_period_days`` (default 3) with no bad evidence since. Sources that
  never report OK (log records) do not resolve; their entries just decay;
* **re-opens** a resolved entry with its original type when its fault recurs (and
  reinforces it); an entry that was pruned is created afresh;
* **restates** an entry it wrote, keeping its id, with its episodes' pattern
  (``dream.pattern``); a status starting and stopping with another of its hardware joins
  that one's entry (``dream.restate``), and existing entries of one incident are merged
  into the oldest (``dream.incidents``, audited as ``merge``);
* **prunes** entries whose effective confidence fell below ``prune_min`` (archived to
  ``<file>.archive.jsonl`` first), and writes the file atomically through
  ``MemoryFile.update(now, rrn=..., on_corrupt='set_aside')``.

**Proposals.** With ``proposals.distiller`` set to ``propose`` a new entry keeps the rule
template's text and the distiller's text is queued as a reword for a person
(``robot_memory.review.proposing``); every dream also expires overdue proposals and lists the
waiting ones in its summary.

**Manual edits.** The dream remembers the hash of the file it wrote and a per-entry
snapshot. When the file differs, each added, deleted or changed entry is taken in as it
is and audited as ``manual`` with a diff summary; a deleted entry's signatures are
unlinked and the evidence of that dream is not used to re-create it (later evidence
starts a new entry from the low initial confidence). An unreadable file a dream wrote
before is set aside (its body kept) and the entries are restored from the snapshot; one no
dream of this database wrote (a hand-written file with a typo) is left untouched and the
dream refused with the line to fix (MemoryFileError), the evidence kept for the next one.

**Crash safety.** Everything is computed first. Then, while the file lock is held, the
complete set of database changes is committed as an intent record (a
``dream_intent.DreamIntent`` in ``pending_dream``, with the hash of the file about to be
written); the file is written atomically; then one transaction applies the intent (audit
rows, links, snapshot, cursor, dream log) and deletes it. A dream that finds an intent
record completes it if the file on disk is the one it describes, and discards it
otherwise (the file was never replaced), before doing anything else. So a crash at any
moment leaves the old or the new file and a database that matches it, and re-running the
dream completes the work exactly once. ``prune(store, memory_file, now, config)``
(``robot-memory prune``) prunes outside a dream the same way.

Running a dream twice at the same ``now`` changes nothing (no new evidence, no prune at
an instant already dreamt, file bytes identical, no audit rows). A ``now`` earlier than
the last dream changes nothing and is reported (``clock_backwards``); so does one far
ahead of the last dream and the newest evidence, unless confirmed (``clock_leap``, see
``robot_memory.dream.clock``).
"""

import datetime as dt
import json
import math
import sqlite3
from typing import Optional
import uuid

from pydantic import ValidationError

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import require_aware
from robot_memory.dream import clock as dream_clock
from robot_memory.dream import summary as dream_summary
from robot_memory.dream.distiller import Candidate
from robot_memory.dream.distiller import proposals
from robot_memory.dream.distiller import RuleDistiller
from robot_memory.dream.incidents import IncidentMerging
from robot_memory.dream.manual_edits import canonical
from robot_memory.dream.manual_edits import ManualEdits
from robot_memory.dream.pattern import FLAP_GAP_S
from robot_memory.dream.pattern import GAP_S
from robot_memory.dream.pattern import History
from robot_memory.dream.pattern import rule_text
from robot_memory.dream.pattern import STATUS_GAP_S
from robot_memory.dream.pattern import without_node
from robot_memory.dream.recovery import as_config
from robot_memory.dream.recovery import file_hash
from robot_memory.dream.recovery import prune  # noqa: F401 - autodream.prune, as before
from robot_memory.dream.recovery import recover
from robot_memory.dream.report import DreamReport
from robot_memory.dream.report import returned_after_deletion
from robot_memory.dream.resign import regroup
from robot_memory.dream.resign import resign
from robot_memory.dream.resolve_prune import ResolveAndPrune
from robot_memory.dream.restate import incident_partner
from robot_memory.dream.restate import Partners
from robot_memory.dream.restate import RuleTexts
from robot_memory.errors import MemoryFileError
from robot_memory.evidence import proposal_queue as queue_module
from robot_memory.evidence.dream_book import SIGNATURE_COLUMNS
from robot_memory.evidence.dream_book import SOURCE_COLUMNS
from robot_memory.evidence.intent import DreamIntent
from robot_memory.evidence.observations import message_pattern
from robot_memory.evidence.rules import Rules
from robot_memory.rcan import lifecycle
from robot_memory.rcan.memory_file import load_problems
from robot_memory.rcan.memory_file import render
from robot_memory.rcan.schema import make_entry_id
from robot_memory.rcan.schema import MemoryEntry
from robot_memory.rcan.schema import new_entry
from robot_memory.settings import DreamConfig


def initial_confidence(count: int, errors: int, spread_s: float, config: DreamConfig) -> float:
    """Confidence of a new entry from evidence strength: count (ERROR twice) and spread."""
    weighted = max(1, count + errors)
    count_factor = min(1.0, math.log2(weighted) / math.log2(config.initial_full_count))
    full_spread = config.initial_full_spread_minutes * 60.0
    spread_factor = 1.0 if full_spread <= 0 else min(1.0, max(0.0, spread_s) / full_spread)
    value = config.initial_min + (config.initial_max - config.initial_min) * \
        count_factor * spread_factor
    return round(min(config.initial_max, max(config.initial_min, value)), 6)


def _aware(now: dt.datetime) -> dt.datetime:
    return require_aware(now)


def dream(store, memory_file, now: dt.datetime, rules: Optional[Rules] = None, config=None,
          distiller=None, actor: str = 'autodream', proposals=None,
          confirm_leap: bool = False) -> DreamReport:
    """
    Consolidate the evidence since the last dream into the memory file; see the module.

    ``proposals`` (``proposals.ProposalSettings``) says whether the distiller's texts are
    applied or proposed; the dream also expires overdue proposals and lists the waiting
    ones in its summary. ``confirm_leap``: a person accepts a time far ahead of the last
    dream and the newest evidence (``dream.clock``).
    """
    now = _aware(now)
    config = as_config(config)
    report = DreamReport(now, actor)
    report.propose_texts = proposals is not None and proposals.distiller == 'propose'
    report.problems.extend(store.take_problems())
    store.flush()
    payload = None
    # A file no dream of this database wrote (a person's, or one from before the database)
    # is not replaced when it cannot be read: there is no snapshot to restore its entries
    # from, and a fresh file would hide them. The dream is refused; the evidence waits.
    ours = store.dream_cursor().file_hash is not None
    with memory_file.update(now, rrn=config.rrn,
                            on_corrupt='set_aside' if ours else 'raise') as result:
        report.recovered = recover(store, memory_file)
        cursor = store.dream_cursor()
        if dream_clock.may_dream(store, cursor, now, config.max_leap_days, confirm_leap,
                                 report):
            run = _Dream(store, memory_file, now, rules or store.rules, config,
                         distiller or RuleDistiller(), actor, cursor, report)
            payload = run.plan(result)
            if payload is not None:
                store.begin_dream(payload)
    if payload is None:
        report.noop = not (report.clock_backwards or report.clock_leap)
        if report.noop and config.compact:
            # Idempotent; finishes the compaction of a dream that was interrupted after
            # its commit.
            report.compacted = store.compact(now).rows
        if report.noop:
            _queue(store, report, now, proposals)
        return report
    report.dream_id = store.commit_dream(payload)
    _queue(store, report, now, proposals)
    if config.compact:
        report.compacted = store.compact(now).rows
    if config.summary_nights and dream_summary.worth_telling(report):
        try:
            report.summary_file = str(dream_summary.write_summary(
                memory_file, dream_summary.build_summary(report, config.lifecycle), now,
                config.summary_nights))
        except MemoryFileError as error:  # the dream is done and safe; say so, go on
            report.problems.append(f'the dream summary was not written: {error}')
    return report


def _queue(store, report: DreamReport, now: dt.datetime, proposals) -> None:
    """Queue the distiller's held-back texts, expire overdue proposals, list the waiting."""
    db = getattr(store, 'db', None)
    if db is None:
        return
    settings = proposals or queue_module.DEFAULT_SETTINGS
    try:
        queue = queue_module.ProposalQueue(db)
        queue.expire(now, report.actor)
        for entry_id, before, after in report.rewords:
            proposal = queue.propose('reword', 'distiller', entry_id,
                                     queue_module.reword_summary(entry_id, before, after),
                                     {'before': before, 'after': after}, now,
                                     settings.expire_after_s)
            report.proposed.append(proposal.id)
        report.waiting = [proposal.to_dict() for proposal in queue.pending(now)]
    except (sqlite3.Error, ValueError) as error:  # the dream itself is done and safe
        lost = len(report.rewords) - len(report.proposed)
        report.problems.append(f'the proposals queue could not be written ({error}); '
                               f'{lost} distiller texts were not proposed (the entries keep '
                               'their rule texts)')


class _Dream(IncidentMerging, ManualEdits, ResolveAndPrune):
    """The computation of one dream, inside the file lock; produces the intent record."""

    def __init__(self, store, memory_file, now, rules, config, distiller, actor, cursor,
                 report):
        self.store = store
        self.memory_file = memory_file
        self.now = now
        self.now_s = now.timestamp()
        self.rules = RuleTexts(rules)
        self.config = config
        self.lc = config.lifecycle
        self.distiller = distiller
        self.actor = actor
        self.cursor = cursor
        self.report = report
        self.audit = []
        self.touched = set()

    # ------------------------------------------------------------------ helpers

    def _log(self, entry_id: str, action: str, reason: str, detail: dict) -> None:
        self.audit.append([entry_id, action, reason,
                           json.dumps(detail, ensure_ascii=False, sort_keys=True)])
        # A person's edit carries the entry in its detail (logged before by_id exists).
        shown = detail.get('after') or detail.get('before') or detail.get('entry')
        if shown is None:
            entry = getattr(self, 'by_id', {}).get(entry_id)
            shown = {'text': entry.text, 'type': entry.type} if entry is not None else detail
        self.report.changes.append({
            'id': entry_id, 'action': action, 'reason': reason, 'detail': detail,
            'text': shown.get('text', ''), 'type': shown.get('type', '')})

    def _contradiction(self, entry_id: str, kind: str, text: str, what: str) -> None:
        self.report.contradictions.append(
            {'entry_id': entry_id, 'kind': kind, 'text': text, 'what': what})

    def _replace(self, old, new) -> None:
        self.entries[self.position[old.id]] = new
        self.by_id[new.id] = new
        self.touched.add(new.id)

    # ------------------------------------------------------------------ plan

    def plan(self, result) -> Optional[DreamIntent]:
        """Apply everything to the loaded document; return the intent record or None."""
        document = result.document
        path = self.memory_file.path
        original = path.read_bytes() if path.exists() else None
        self.report.problems.extend(load_problems(result, self.memory_file))
        self.snapshot = self.store.snapshot()
        self.links = self.store.signature_rows()
        links_before = {key: tuple(row.values()) for key, row in self.links.items()}
        self.sources = self.store.source_rows()
        sources_before = {key: tuple(row.values()) for key, row in self.sources.items()}
        self.entries = document.entries
        self.muted: dict = {}  # signature -> (id, text) of an entry a person deleted
        resigned = resign(self.links, self.rules)

        self._take_in_edits(document, original, result)
        self.by_id = {entry.id: entry for entry in self.entries}
        self.position = {entry.id: index for index, entry in enumerate(self.entries)}
        high = self.store.take_window()
        after = self.cursor.last_id
        self.report.first_id, self.report.last_id = after, high
        groups, window_last_bad, episodes = self.store.window(
            after, high, GAP_S, STATUS_GAP_S) if high > after else ({}, {}, {})
        self.ranges = self.store.value_ranges(after, high) if high > after else None
        self.last_ok = {key: row['last_ok'] for key, row in self.sources.items()}
        self._update_sources(after, high, window_last_bad)
        self.report.signatures = len(groups)
        self.report.consumed += sum(group.count for group in groups.values())
        self._apply_evidence(groups, episodes)
        self._resolve()
        same_instant = self.cursor.last_dream_at == self.now
        if not same_instant:
            self._prune()
        document.entries = self.entries

        snapshot = {entry.id: canonical(entry) for entry in self.entries}
        snapshot_rows = [[key, data] for key, data in snapshot.items()
                         if self.snapshot.get(key) != data]
        snapshot_deleted = [key for key in self.snapshot if key not in snapshot]
        signature_rows = [list(row.values()) for key, row in sorted(self.links.items())
                          if links_before.get(key) != tuple(row.values())]
        source_rows = [list(row.values()) for key, row in sorted(self.sources.items())
                       if sources_before.get(key) != tuple(row.values())]

        rendered = render(document)
        if (original is None or rendered != original or result.quarantined
                or result.legacy_original is not None):
            document.last_updated = self.now
            rendered = render(document)
        file_changed = rendered != original
        nothing = not (self.audit or snapshot_rows or snapshot_deleted or signature_rows
                       or resigned or source_rows or file_changed or high != after)
        if nothing and same_instant:
            return None
        return DreamIntent(
            kind='dream', token=uuid.uuid4().hex, at=self.now, actor=self.actor,
            first_id=after, last_id=high, file_hash=file_hash(rendered),
            prior_hash=file_hash(original) if original is not None else None,
            file_changed=file_changed, audit=self.audit, signatures=signature_rows,
            signatures_deleted=resigned,
            sources=source_rows, snapshot=snapshot_rows, snapshot_deleted=snapshot_deleted,
            report=self.report.to_dict())

    # ------------------------------------------------------------------ evidence

    def _update_sources(self, after: int, high: int, window_last_bad: dict) -> None:
        merged = {}
        for key in window_last_bad:
            state = self.sources.get(key)
            previous = state['last_bad'] if state else None
            merged[key] = max(value for value in (previous, window_last_bad[key])
                              if value is not None)
        for key, state in self.sources.items():
            if key not in merged and state['last_bad'] is not None:
                merged[key] = state['last_bad']
        oks = self.store.ok_reports(after, high, merged) if high > after else {}
        self.report.consumed += sum(count for _, _, count in oks.values())
        for key in sorted(set(window_last_bad) | set(oks)):
            state = self.sources.get(key)
            if state is None:
                state = dict.fromkeys(SOURCE_COLUMNS)
                state['source_key'] = key
                self.sources[key] = state
            bad = window_last_bad.get(key)
            if bad is not None and (state['last_bad'] is None or bad > state['last_bad']):
                state['last_bad'] = bad
                if state['ok_since'] is not None and state['ok_since'] <= bad:
                    state['ok_since'] = None
            if key in oks:
                first_after_bad, last_ok, _ = oks[key]
                if state['last_ok'] is None or last_ok > state['last_ok']:
                    state['last_ok'] = last_ok
                if state['ok_since'] is None and first_after_bad is not None:
                    state['ok_since'] = first_after_bad

    def _apply_evidence(self, groups: dict, episodes: dict) -> None:
        groups = regroup(groups, episodes, self.rules)
        self.episodes = episodes
        evidence: dict = {}
        creations = []
        for key in sorted(groups):
            group = groups[key]
            if key in self.muted:
                entry_id, text = self.muted[key]
                self._contradiction(
                    entry_id, 'deleted_by_hand_seen_again', text,
                    f'deleted by hand, but its fault was reported {group.count} more times; '
                    'that evidence was not used to re-create it (later evidence starts a new '
                    'entry from a low confidence)')
                self.links.get(key, {})['entry_id'] = None  # told once
                continue
            payload = json.loads(group.payload) if group.payload else {}
            link = self.links.get(key)
            if link is None:
                link = dict.fromkeys(SIGNATURE_COLUMNS)
                link.update(signature=key, bad_total=0, held=0, first_seen=group.first)
                self.links[key] = link
            link.update(source=group.source, source_key=group.source_key,
                        rule=payload.get('rule', ''), payload=group.payload,
                        bad_total=link['bad_total'] + group.count,
                        first_seen=min(link['first_seen'] or group.first, group.first),
                        last_bad=max(link['last_bad'] or group.last, group.last))
            history = History.from_json(link['history'])
            log = group.source == 'log'
            history.add(episodes.get(key, ()), self.now_s, GAP_S if log else STATUS_GAP_S,
                        self.last_ok.get(group.source_key), 0.0 if log else FLAP_GAP_S)
            if self.ranges is not None:
                history.add_ranges(self.now_s, self.ranges.bad.get(key),
                                   self.ranges.ok.get(group.source_key))
            link['history'] = history.to_json()
            entry = self.by_id.get(link['entry_id']) if link['entry_id'] else None
            if entry is None:
                returned_after_deletion(self.store, link, group.count, self._contradiction)
                view = self.rules.view(group.source, link['rule'])
                if link['bad_total'] >= view.min_count:
                    creations.append((group, payload, view, link))
                continue
            evidence.setdefault(entry.id, []).append((link, group))
        for key, link in sorted(self.links.items()):
            if link['held'] and key not in groups and link['entry_id'] in self.by_id:
                evidence.setdefault(link['entry_id'], []).append((link, None))
        self._merge_incidents(evidence)
        self.by_entry: dict = {}
        for link in self.links.values():
            if link['entry_id']:
                self.by_entry.setdefault(link['entry_id'], []).append(link)
        for entry_id in sorted(evidence):
            self._reinforce(self.by_id[entry_id], evidence[entry_id])
        self._create(sorted(creations, key=lambda item: (not item[0].errors, item[0].signature)))

    def _unlinked_twin(self, entry_type: str, texts: tuple, linked: set):
        """
        Return an entry no signature links to that ``texts`` would create (or restate).

        Such an entry was made from the same evidence before its link was lost (the
        evidence database was rebuilt from the memory file); it is reinforced, not doubled.
        """
        for text in texts:
            entry = self.by_id.get(make_entry_id(entry_type, text))
            if entry is not None and entry.text != text:
                entry = None
            unlinked = self._restated_entries(linked) if entry is None else None
            if unlinked:  # usually none: spare masking the text of each new entry
                # Restated, the text may have lost its node prefix (pattern.without_node).
                entry = unlinked.get(message_pattern(text)) or unlinked.get(
                    message_pattern(without_node(text)))
            if entry is None or entry.id in linked:
                continue
            if entry.type == entry_type or (entry.type == 'resolved' and
                                            entry.extras.get('resolved_from') == entry_type):
                return entry
        return None

    def _restated_entries(self, linked: set) -> dict:
        """Unlinked entries by the masked rule text they were restated from (made once)."""
        if getattr(self, '_unlinked', None) is None:
            self._unlinked = {message_pattern(rule_text(entry.text)): entry
                              for entry in self.entries if entry.id not in linked}
        return self._unlinked

    def _reinforce(self, entry, items: list, note: str = '') -> None:
        count = sum(group.count for _, group in items if group is not None)
        held = sum(link['held'] for link, _ in items)
        signatures = sorted(link['signature'] for link, _ in items)
        before = lifecycle.effective_confidence(entry, self.now, self.lc)
        detail = {'signatures': signatures, 'observations': count, 'held': held}
        if entry.type == 'resolved':
            link = items[0][0]
            original_type = (link['entry_type'] or entry.extras.get('resolved_from')
                             or 'hardware_observation')
            data = entry.model_dump()
            data.pop('resolved_from', None)
            data['type'] = original_type
            updated = lifecycle.reinforce(MemoryEntry.model_validate(data), self.now, self.lc)
            detail['confidence'] = [round(before, 6), updated.confidence]
            updated, restated = self._with_text(updated, self.by_entry.get(entry.id, []),
                                                detail)
            self._log(entry.id, 'reopen', f'the fault recurred ({count} observations); '
                                          f're-opened as {original_type}{note}{restated}',
                      detail)
            self._contradiction(entry.id, 'resolved_recurred', entry.text,
                                f'was resolved, but the fault came back ({count} observations); '
                                f're-opened as {original_type}: check the repair')
            self.report.reopened.append(entry.id)
        else:
            interval = self.config.min_reinforce_interval_hours * 3600.0
            since = (self.now - entry.last_reinforced).total_seconds()
            if since < interval:
                for link, group in items:
                    if group is not None:
                        link['held'] += group.count
                self.report.held.append(entry.id)
                self.touched.add(entry.id)
                return
            updated = lifecycle.reinforce(entry, self.now, self.lc, observations=1)
            detail['confidence'] = [round(before, 6), updated.confidence]
            updated, restated = self._with_text(updated, self.by_entry.get(entry.id, []),
                                                detail)
            extra = f' plus {held} held from an earlier cycle' if held else ''
            self._log(entry.id, 'reinforce', f'{count} new observations{extra} of '
                                             f'{len(signatures)} signature(s){note}{restated}',
                      detail)
            self.report.reinforced.append(entry.id)
        for link, _ in items:
            link['held'] = 0
        self._replace(entry, updated)

    def _candidate_texts(self, creations: list) -> tuple:
        """Return the candidates, their texts (the distiller's or the rule's) and fallbacks."""
        candidates = []
        for group, payload, view, link in creations:
            candidates.append(Candidate(
                signature=group.signature, source=group.source, entry_type=view.entry_type,
                text=self.rules.candidate_text(group.source, payload),
                tags=tuple(self.rules.candidate_tags(group.source, payload)),
                count=group.count, severity=2 if group.errors else 1, payload=payload))
        try:
            proposed = self.distiller.rewrite(list(candidates))
        except Exception as error:  # noqa: B902 - a distiller must never break a dream
            self.report.problems.append(f'distiller failed ({type(error).__name__}: {error}); '
                                        'rule texts were used')
            proposed = {}
        texts, fell_back = proposals(candidates, proposed)
        if not isinstance(self.distiller, RuleDistiller):
            self.report.distiller_fallbacks = len(fell_back)
        self.report.problems.extend(getattr(self.distiller, 'errors', None) or [])
        return candidates, texts, fell_back

    def _create(self, creations: list) -> None:
        if not creations:
            return
        candidates, texts, fell_back = self._candidate_texts(creations)
        taken = set(self.by_id)
        linked = {row['entry_id'] for row in self.links.values() if row['entry_id']}
        partners = Partners()
        for key, row in self.links.items():
            if row['entry_id'] in self.by_id and key in self.episodes:
                partners.add(key, row['source_key'])
        for (group, payload, view, link), candidate in zip(creations, candidates):
            partner = incident_partner(group.signature, group.source_key, self.episodes, partners)
            if partner is not None:  # one incident, one entry: it joins its partner's
                self._link(link, self.links[partner]['entry_id'],
                           self.links[partner]['entry_type'])
                self._reinforce(self.by_id[link['entry_id']], [(link, group)],
                                note=f'; starts and stops with {partner}')
                continue
            twin = self._unlinked_twin(view.entry_type,
                                       (texts[candidate.signature], candidate.text), linked)
            if twin is not None:
                self._link(link, twin.id, view.entry_type)
                linked.add(twin.id)
                self._reinforce(twin, [(link, group)],
                                note='; linked again to its existing entry of the same text')
                continue
            confidence = initial_confidence(group.count, group.errors, group.last - group.first,
                                            self.config)
            held_back = None
            if self.report.propose_texts and texts[candidate.signature] != candidate.text:
                # The distiller's wording waits for a person; the entry keeps the rule text.
                held_back = texts[candidate.signature]
                fell_back.append(candidate.signature)
            chosen = texts[candidate.signature]
            restated = self._restated(chosen, [link])
            if restated is not None:
                chosen = restated[0]
            try:
                entry = new_entry(view.entry_type, candidate.text if held_back else chosen,
                                  confidence, self.now, candidate.tags, taken)
            except ValidationError:
                held_back = None
                entry = new_entry(view.entry_type, candidate.text, confidence, self.now,
                                  candidate.tags, taken)
            if link['entry_id'] and link['entry_id'] not in taken:  # pruned: one fault, one id
                entry = entry.model_copy(update={'id': link['entry_id']})
            if held_back is not None:
                self.report.rewords.append((entry.id, candidate.text, held_back))
            taken.add(entry.id)
            self.position[entry.id] = len(self.entries)
            self.entries.append(entry)
            self.by_id[entry.id] = entry
            self.touched.add(entry.id)
            self._link(link, entry.id, view.entry_type)
            partners.add(group.signature, group.source_key)
            self._log(entry.id, 'create',
                      f'{group.count} observations from {format_iso(from_epoch(group.first))} '
                      f'to {format_iso(from_epoch(group.last))}; initial confidence '
                      f'{confidence:.2f}; pattern {group.signature}',
                      {'signature': group.signature, 'observations': group.count,
                       'example': payload.get('message', ''),
                       'errors': group.errors, 'confidence': confidence,
                       'text_source': 'rule' if candidate.signature in fell_back
                       or isinstance(self.distiller, RuleDistiller) else 'distiller'})
            self.report.created.append(entry.id)

    def _link(self, link: dict, entry_id: str, entry_type: str) -> None:
        link.update(entry_id=entry_id, entry_type=entry_type, held=0)
        self.by_entry.setdefault(entry_id, []).append(link)
