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
"Normal" is a person's call: when the dream may label a condition routine or constant.

A pattern (``pattern.describe``) that looks routine or constant is labelled so by the dream
alone only when nothing says it is a fault. A routine-looking one is not when:

* the status reported an ERROR (or STALE), or the node logged an error: an ERROR at every
  08:00 mission start is a fault that recurs, not a habit of the robot;
* its values were clearly off their OK range (``pattern.by_how_much`` found some): a worn
  battery at 12–15 % every afternoon against 55–90 % is a fault.

A constant-looking one is not when it began after a period of OK reports (its source said
OK before it): a camera that died on day 5 is a change, not a constant. One present since
the source's first report and never OK (a gamepad that is not fitted) stays constant.

Such a pattern keeps a label that states the fact (:data:`FACTS`): ``Recurring: ... -
daily 16:30-18:00 ...`` or ``Since: ... - constant since 2026-06-05 10:00``; the block shows
it among the faults. The dream proposes the routine text once (a reword in the proposals
queue; a change is never proposed as constant); a person who approves it on the page or
with ``robot-memory proposals approve`` moves the entry to the conditions section, and the
entry keeps that person's words. Or an operator declares it up front: a rule with
``normal: true`` in the rules file (:func:`declared`) files its condition under the routine
and constant conditions whatever it looks like, with the rule named, and nothing is proposed.
Pure.
"""

import dataclasses
from typing import Optional

from robot_memory.dream.pattern import Description
from robot_memory.dream.pattern import rule_text

# What the dream's factual labels say instead of a judgement, by the judgement held back.
FACTS = {'routine': 'recurring', 'constant': 'since'}
LABELS = tuple(FACTS.values())
# How an entry text the dream proposes as a person's call begins ("Routine: ...").
JUDGEMENTS = tuple(f'{label.capitalize()}: ' for label in FACTS)
ERROR_LEVELS = {'diagnostic': 2, 'log': 40}


def reasons(label: str, payload: dict, source: str, how_much: str,
            began_after_ok: bool) -> list:
    """Return why a routine- or constant-looking pattern is not the dream's to call normal."""
    if label == 'constant':
        return ['began after OK reports'] if began_after_ok else []
    found = []
    level = payload.get('level')
    floor = ERROR_LEVELS.get(source)
    if floor is not None and isinstance(level, int) and not isinstance(level, bool) \
            and level >= floor:
        found.append('an error')
    if how_much:
        found.append('values off their OK range')
    return found


def judged(found, payload: dict, source: str, how_much: str,
           began_after_ok: bool) -> tuple:
    """
    Return (description to state, the held-back judgement or None).

    ``found`` is ``pattern.describe``'s Description (or None). A routine or constant one
    that :func:`reasons` speaks against gets its factual label (:data:`FACTS`); a routine
    judgement it held back is returned for a person to approve (a constant one that began
    after OK reports is a change, never proposed as constant).
    """
    if found is None or found.label not in FACTS:
        return found, None
    if not reasons(found.label, payload, source, how_much, began_after_ok):
        return found, None
    stated = dataclasses.replace(found, label=FACTS[found.label])
    # A change is not a constant: nothing to propose (a nightly routine on its first night
    # looks like one, and is restated as routine once its days show it).
    return stated, (found if found.label == 'routine' else None)


def restated_since(text: str, before: str, after: str) -> bool:
    """
    Whether a proposed judgement still applies to an entry the dream restated since.

    The dream states a fact label's counts anew each night (``before`` goes stale); the
    proposal applies while the entry still carries a fact label over the same rule text.
    """
    facts = tuple(f'{label.capitalize()}: ' for label in LABELS)
    return (text.startswith(facts) and before.startswith(facts)
            and after.startswith(JUDGEMENTS) and rule_text(text) == rule_text(before))


def declared(found, rule: str) -> Description:
    """
    Return the description of a condition the rule ``rule`` declares normal on this robot.

    ``found`` is ``pattern.describe``'s Description (or None, too early to say): a constant
    one (or one the dream states as a change, ``since``) stays constant, anything else is
    routine; the phrase says the pattern, if any, and that the rule declared it so.
    """
    label = 'constant' if found is not None and found.label in ('constant', 'since') \
        else 'routine'
    said = f'normal by rule {rule}'
    return Description(label, f'{found.phrase}, {said}' if found is not None else said)


def proposal_key(judgement, base: str) -> Optional[str]:
    """Return the key that proposes a judgement once per entry and label ('' for none)."""
    return f'{judgement.label}:{base}' if judgement is not None else None
