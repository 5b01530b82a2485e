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
Entries relevant to the brain's query lead the block, and a red line is never dropped for them.

Which entries are relevant is the substrate's hybrid recall
(``robot_memory.substrate.context_relevance``, above this layer); this module places them.
:func:`chosen` keeps the named entries the block may show (own, not resolved, at or above
the threshold), best first. :func:`lifted` yields them ahead of the ranking, each only when
every red line (🔴, confidence at or above ``band_high``) of the ranking still fits the budget
after it: a relevant 🟡 line takes the place of a 🟢 one, never of a 🔴 one. The rest follows in
rank order, so without a query nothing changes.
"""

from robot_memory.rcan.context_fill import estimate_tokens
from robot_memory.rcan.lifecycle import effective_confidence


def chosen(document, relevant, now, config, threshold: float) -> list:
    """(effective confidence, entry) of the own entries named in ``relevant``, in its order."""
    if not relevant:
        return []
    wanted = dict.fromkeys(relevant)
    found = {entry.id: entry for entry in document.entries if entry.id in wanted}
    pairs = []
    for entry_id in wanted:
        entry = found.get(entry_id)
        if entry is None or entry.type == 'resolved':
            continue
        confidence = effective_confidence(entry, now, config)
        if confidence >= threshold:
            pairs.append((confidence, entry))
    return pairs


def _cost(item) -> int:
    return estimate_tokens(item.line) + 1


def lifted(items, chosen_lines: list, budget: int, config, lifted_ids: set):
    """
    Yield the lifted chosen lines first, then ``items`` (rank order) without them.

    ``budget``: the tokens the block's lines may use. The red prefix of ``items`` is read
    ahead; a chosen line that is not red is lifted only while the lifted lines and every red
    line fit together. ``lifted_ids`` receives the ids lifted.
    """
    red = config.band_high
    ahead = []
    for item in items:
        ahead.append(item)
        if item.effective_confidence < red:
            break
    room = budget - sum(_cost(item) for item in ahead if item.effective_confidence >= red)
    front = []
    for line in chosen_lines:
        if line.effective_confidence >= red:
            front.append(line)  # its cost is among the red ones read ahead
        elif _cost(line) <= room:
            room -= _cost(line)
            front.append(line)
    lifted_ids.update(line.entry.id for line in front)
    yield from front
    for item in ahead:
        if item.entry.id not in lifted_ids:
            yield item
    for item in items:
        if item.entry.id not in lifted_ids:
            yield item
