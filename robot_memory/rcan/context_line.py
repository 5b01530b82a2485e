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
One line of the context block: its band, its percentage and its text (split from ``context``).

:class:`ContextLine` (an entry as shown), :func:`format_line` (``🔴 [92%] text``, the text
neutralised), :func:`percent` (the one home of every percentage the product prints) and
the small words the block's labels use (:func:`plural`, :func:`threshold_percent`).
"""

import dataclasses
import math
from typing import TYPE_CHECKING

from robot_memory.rcan.lifecycle import band
from robot_memory.rcan.lifecycle import DEFAULTS
from robot_memory.rcan.untrusted import neutralise

if TYPE_CHECKING:  # pydantic, imported only where a config is validated
    from robot_memory.rcan.lifecycle import AnyConfig


def plural(count: int, word: str, words: str = '') -> str:
    """``1 entry``, ``2 entries``: a count with its noun (``words``: an irregular plural)."""
    if count == 1:
        return f'1 {word}'
    return f'{count} {words or word + "s"}'


def percent(confidence: float, config: 'AnyConfig' = DEFAULTS) -> int:
    """
    Confidence as a whole percentage, truncated as the reference does (0.7996 is 79%).

    It never reaches a threshold of ``config`` (band, injection, prune) that the confidence
    is below, so ``🟡 [80%]`` or ``🟢 [50%]`` cannot be printed. The one home of every
    percentage the product prints.
    """
    # The 1e-6 absorbs float noise: 0.29 * 100 is 28.999999999999996.
    scaled = confidence * 100
    value = math.floor(scaled + 1e-6)
    if value <= scaled:  # not lifted by the noise margin: below every bound the confidence is
        return max(0, value)
    for bound in (config.band_high, config.band_medium, config.inject_min, config.prune_min):
        if confidence < bound:
            value = min(value, math.ceil(bound * 100 - 1e-6) - 1)
    return max(0, min(100, value))


def threshold_percent(value: float) -> str:
    """Return a configured threshold as a percentage, exactly (0.3 is '30%', 0.305 is '30.5%')."""
    return f'{round(value * 100, 4):g}%'


@dataclasses.dataclass(frozen=True)
class ContextLine:
    """One injected entry: the entry, its effective confidence and its formatted line."""

    entry: object
    effective_confidence: float
    line: str
    source_rrn: str = ''


def format_line(text: str, confidence: float, config: 'AnyConfig' = DEFAULTS) -> str:
    """``🔴 [92%] text`` for one entry, its text neutralised."""
    return f'{band(confidence, config)} [{percent(confidence, config)}%] {neutralise(text)}'
