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
bench_quality's figures for issue 38, points 4, 5 and 7: lines, coverage, labels, queries.

``person_reviews`` plays the operator after each night: a proposal to label an entry
routine or constant (``dream.normal``) is approved when the profile planted that entry's
cause as routine or constant, rejected otherwise (a person who knows the robot). The
figures, added to each profile's JSON line:

``filed_normal``       planted faults whose entry sits in the conditions section (a miss:
                       goal none); ``fault_recall_sections`` recall counting faults only
                       where they are shown as faults
``chars_per_line``     mean characters of the final block's entry lines (goal <= 200), and
                       ``tokens_per_line`` (UTF-8 bytes / 4) — the line's text without band
``coverage_400``       of the planted recurring faults and conditions whose entry the final
                       block shows without a budget, the share the 400-token block shows;
                       ``left_out`` names the others (those the budget pushed out), and
                       ``left_out_named`` those of them the block's last line names
                       (``Left out for the budget: ...``; goal: all of ``left_out``)
``query_r3``           for each planted cause with an entry: a task query made of its
                       status's name, is its entry among the first 3 chosen for the query
                       (``substrate.context_relevance``, keywords only)
"""

from robot_memory.evidence.proposal_queue import ProposalQueue
from robot_memory.rcan.context import build_context
from robot_memory.rcan.context import CONDITIONS
from robot_memory.rcan.context import estimate_tokens
from robot_memory.rcan.context import is_condition
from robot_memory.review.proposing import decide_proposal
from robot_memory.substrate.context_relevance import relevant_ids

_NORMAL = CONDITIONS  # 'Routine: ', 'Constant: '


def person_reviews(store, memory_file, now, created: dict) -> int:
    """Approve or reject the night's routine/constant proposals as the profile says; count."""
    queue = ProposalQueue(store.db)
    decided = 0
    for proposal in queue.pending(now):
        after = proposal.payload.get('after', '') if proposal.kind == 'reword' else ''
        if not after.startswith(_NORMAL):
            continue
        causes = created.get(proposal.target, set())
        normal = any(plant.expect in ('routine', 'constant') for plant in causes)
        decide_proposal(queue, proposal.id, 'approve' if normal else 'reject', 'bench',
                        'the profile planted it so', now, memory_file=memory_file)
        decided += 1
    return decided


def _cause_query(plant) -> str:
    """Return a task a brain might have about the cause: its status's or node's words."""
    if plant.statuses:
        name = plant.statuses[0][0]
        return f'check the {name.split(": ", 1)[-1]} before the next mission'
    return f'is {plant.log.get("node", "")} working'


def figures(nightly, plants: list, document) -> dict:
    """Return the issue 38 figures of one profile's run (see the module's doc)."""
    faults = {plant.cause for plant in plants if plant.expect == 'fault' and plant.recurring}
    conditions = {plant.cause for plant in plants if plant.expect in ('routine', 'constant')}
    final = nightly.shown[-1] if nightly.shown else None
    block = getattr(nightly, 'block', None)
    as_fault, filed_normal, shown = set(), set(), set()
    for night in nightly.shown:
        for entry, causes in night.lines:
            for plant in causes:
                if plant.cause in faults:
                    (filed_normal if is_condition(entry.text) else as_fault).add(plant.cause)
    for entry, causes in (final.lines if final else ()):
        shown.update(plant.cause for plant in causes)
    unlimited = set()
    if block is not None and document is not None:
        whole = build_context(document, block.at, nightly.config.lifecycle, token_budget=10**9)
        ids = {item.entry.id for item in whole.entries + whole.recent}
        unlimited = {plant.cause for entry_id, causes in nightly.created.items()
                     if entry_id in ids for plant in causes}
    named = {plant.cause for entry_id, causes in nightly.created.items()
             if entry_id in {item.entry.id for item in getattr(block, 'left_out', ())}
             for plant in causes}
    texts = [item.line.partition('] ')[2] for item in (block.entries if block else [])]
    wanted = (faults | conditions) & unlimited
    line = {
        'filed_normal': sorted(filed_normal),
        'fault_recall_sections': round(len(as_fault - filed_normal) / len(faults), 3)
        if faults else None,
        'chars_per_line': round(sum(map(len, texts)) / len(texts), 1) if texts else None,
        'tokens_per_line': round(sum(map(estimate_tokens, texts)) / len(texts), 1)
        if texts else None,
        'coverage_400': round(len(wanted & shown) / len(wanted), 3) if wanted else None,
        'left_out': sorted(wanted - shown),
        'left_out_named': sorted((wanted - shown) & named),
    }
    line.update(_relevance(nightly, plants, document))
    return line


def _relevance(nightly, plants: list, document) -> dict:
    """R@3 of each planted cause's entry for a task query about its status."""
    if document is None or not nightly.shown:
        return {'query_r3': None}
    by_cause: dict = {}
    for entry_id, causes in nightly.created.items():
        for plant in causes:
            by_cause.setdefault(plant.cause, (plant, set()))[1].add(entry_id)
    now = nightly.block.at if getattr(nightly, 'block', None) else document.last_updated
    present = {entry.id for entry in document.entries}
    hits = asked = 0
    for cause, (plant, ids) in sorted(by_cause.items()):
        ids &= present
        if not ids or plant.expect not in ('fault', 'routine', 'constant'):
            continue
        asked += 1
        chosen = relevant_ids(document, _cause_query(plant), now, threshold=0.0, limit=3)
        hits += bool(ids & set(chosen))
    return {'query_r3': round(hits / asked, 3) if asked else None, 'queries': asked}
