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
Entry lifecycle (RCAN §4) as pure functions: decay, reinforcement, eligibility, pruning.

The clock is always an argument. The file stores the confidence as of
``last_reinforced``; decay is computed at read time and never written back, so a
load/save cycle never changes a confidence.
"""

import dataclasses
import datetime as dt
from typing import Optional

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from robot_memory.timeutil import days_between


class LifecycleConfig(BaseModel):
    """Every constant of the lifecycle and the context block; all configurable."""

    # Built when first validated: a command on the defaults (robot-memory show) never builds
    # it, nor scans the installed packages for pydantic plugins as the first build does.
    model_config = ConfigDict(frozen=True, extra='forbid', defer_build=True)

    reinforce_step: float = Field(0.10, gt=0.0, le=1.0,
                                  description='Confidence added when new evidence matches (§4.2)')
    decay_per_day: float = Field(0.05, ge=0.0, le=1.0,
                                 description='Confidence lost per day without evidence (§4.3)')
    inject_min: float = Field(0.30, ge=0.0, le=1.0,
                              description='Lowest effective confidence injected into context '
                                          '(§4.4)')
    prune_min: float = Field(0.10, ge=0.0, le=1.0,
                             description='Entries below this effective confidence are pruned '
                                         '(§4.5)')
    band_high: float = Field(0.80, ge=0.0, le=1.0, description='🔴 at or above this confidence')
    band_medium: float = Field(0.50, ge=0.0, le=1.0, description='🟡 at or above this confidence')
    token_budget: int = Field(400, ge=1, le=1_000_000,
                              description='Default token budget of the context block')
    max_prune_fraction: float = Field(
        0.5, gt=0.0, le=1.0,
        description='One prune removes at most this share of entries (at least one), so a '
                    'clock jump can never empty the memory at once; the rest go in later cycles')
    recent_hours: float = Field(
        24.0, ge=0.0, le=8760.0,
        description='Own entries below inject_min reinforced within this many hours are shown '
                    'after the injected ones, in a section labelled as weak recent evidence, '
                    'so a fault seen today reaches the brain today; 0 leaves the section out')

    @model_validator(mode='after')
    def _thresholds_ordered(self):
        if not self.prune_min <= self.inject_min <= self.band_medium <= self.band_high:
            raise ValueError('thresholds must satisfy prune_min ≤ inject_min ≤ band_medium ≤ '
                             f'band_high (got {self.prune_min}, {self.inject_min}, '
                             f'{self.band_medium}, {self.band_high})')
        return self


# The defaults satisfy every rule above (test_lifecycle checks it against a validated one).
DEFAULT_CONFIG = LifecycleConfig.model_construct()


def effective_confidence(entry, now: dt.datetime, config: LifecycleConfig = DEFAULT_CONFIG,
                         reference: Optional[dt.datetime] = None) -> float:
    """
    Confidence after decay at ``now``: max(0, c − rate × days since last_reinforced).

    ``reference`` stands in for entries without ``last_reinforced`` (peer entries use
    their block's ``last_synced``). A clock that went backwards never raises confidence.
    """
    since = entry.last_reinforced or reference
    if since is None:
        return entry.confidence
    days = days_between(since, now)
    if days <= 0.0:
        return entry.confidence
    # Rounded to 1e-9 so that float noise never crosses a threshold (0.85 one day later is
    # 0.80, not 0.7999999999999999) and capped so that rounding never raises confidence.
    decayed = round(entry.confidence - config.decay_per_day * days, 9)
    return min(entry.confidence, max(0.0, decayed))


def reinforce(entry, now: dt.datetime, config: LifecycleConfig = DEFAULT_CONFIG,
              observations: int = 1):
    """
    Apply new evidence: start from the effective confidence, add the step, count, reset the clock.

    ``observations`` is how many confirmations this reinforcement represents (added to
    ``observation_count``); confidence moves by one step whatever that number is.
    """
    start = effective_confidence(entry, now, config)
    last = max(now, entry.last_reinforced) if entry.last_reinforced else now
    return entry.model_copy(update={
        'confidence': round(min(1.0, start + config.reinforce_step), 6),
        'observation_count': (entry.observation_count or 0) + max(1, observations),
        'last_reinforced': last,
    })


def is_injectable(entry, now: dt.datetime, config: LifecycleConfig = DEFAULT_CONFIG,
                  reference: Optional[dt.datetime] = None) -> bool:
    """Eligible for the context block: not resolved and effective confidence ≥ inject_min."""
    return (entry.type != 'resolved'
            and effective_confidence(entry, now, config, reference) >= config.inject_min)


def band(confidence: float, config: LifecycleConfig = DEFAULT_CONFIG) -> str:
    """Return the emoji band of RCAN §5: 🔴 high, 🟡 medium, 🟢 lower."""
    if confidence >= config.band_high:
        return '🔴'
    if confidence >= config.band_medium:
        return '🟡'
    return '🟢'


def band_counts(entries, now: dt.datetime, config: LifecycleConfig = DEFAULT_CONFIG) -> dict:
    """Own entries by band at ``now``: high, medium, low, below_threshold and resolved."""
    counts = {'high': 0, 'medium': 0, 'low': 0, 'below_threshold': 0, 'resolved': 0}
    for entry in entries:
        if entry.type == 'resolved':
            counts['resolved'] += 1
            continue
        confidence = effective_confidence(entry, now, config)
        if confidence < config.inject_min:
            counts['below_threshold'] += 1
        elif confidence >= config.band_high:
            counts['high'] += 1
        elif confidence >= config.band_medium:
            counts['medium'] += 1
        else:
            counts['low'] += 1
    return counts


@dataclasses.dataclass(frozen=True)
class PrunedEntry:
    """An entry removed by pruning, with its effective confidence at that moment."""

    entry: object
    effective_confidence: float


@dataclasses.dataclass
class PruneOutcome:
    """What a prune kept, removed, and held back for a later cycle."""

    kept: list
    pruned: list
    held_back: int = 0
    # What the archive could not take (robot-memory prune): held back, and what to do.
    archive_advice: str = ''


def prune(entries, now: dt.datetime, config: LifecycleConfig = DEFAULT_CONFIG) -> PruneOutcome:
    """
    Split ``entries`` into kept and pruned (effective confidence < prune_min).

    At most ``max_prune_fraction`` of the entries (at least one) go in one call, the
    weakest first, so that a clock jumping far ahead cannot empty the memory at once.
    """
    scored = [(entry, effective_confidence(entry, now, config)) for entry in entries]
    below = [(entry, c) for entry, c in scored if c < config.prune_min]
    allowed = max(1, int(len(scored) * config.max_prune_fraction))
    below.sort(key=lambda pair: (pair[1], pair[0].last_reinforced or now, pair[0].id))
    chosen = below[:allowed]
    chosen_ids = {id(entry) for entry, _ in chosen}
    return PruneOutcome(
        kept=[entry for entry in entries if id(entry) not in chosen_ids],
        pruned=[PrunedEntry(entry, c) for entry, c in chosen],
        held_back=len(below) - len(chosen),
    )
