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
from typing import TYPE_CHECKING


from robot_memory.common.timeutil import days_between
from robot_memory.rcan.lifecycle_values import DEFAULTS
from robot_memory.rcan.lifecycle_values import LifecycleValues

if TYPE_CHECKING:
    from robot_memory.rcan.lifecycle_config import LifecycleConfig
    # Every function here reads a config by its attributes: either form will do.
    AnyConfig = LifecycleConfig | LifecycleValues


def __getattr__(name: str):
    """``LifecycleConfig`` and ``DEFAULT_CONFIG``: imported with pydantic at first use."""
    if name not in ('LifecycleConfig', 'DEFAULT_CONFIG'):
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    from robot_memory.rcan import lifecycle_config  # noqa: I100 - lazy: 58 ms, 7 MB of show
    value = getattr(lifecycle_config, name)
    globals()[name] = value  # looked up directly from now on
    return value


def effective_confidence(entry, now: dt.datetime, config: 'AnyConfig' = DEFAULTS,
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


def reinforce(entry, now: dt.datetime, config: 'AnyConfig' = DEFAULTS,
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


def is_injectable(entry, now: dt.datetime, config: 'AnyConfig' = DEFAULTS,
                  reference: Optional[dt.datetime] = None) -> bool:
    """Eligible for the context block: not resolved and effective confidence ≥ inject_min."""
    return (entry.type != 'resolved'
            and effective_confidence(entry, now, config, reference) >= config.inject_min)


def band(confidence: float, config: 'AnyConfig' = DEFAULTS) -> str:
    """Return the emoji band of RCAN §5: 🔴 high, 🟡 medium, 🟢 lower."""
    if confidence >= config.band_high:
        return '🔴'
    if confidence >= config.band_medium:
        return '🟡'
    return '🟢'


def band_counts(entries, now: dt.datetime, config: 'AnyConfig' = DEFAULTS) -> dict:
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


def _seen_since(entry, moment: dt.datetime) -> bool:
    seen = entry.last_reinforced or entry.first_seen
    return seen is not None and seen > moment


@dataclasses.dataclass
class PruneOutcome:
    """What a prune kept, removed, and held back for a later cycle."""

    kept: list
    pruned: list
    held_back: int = 0
    # What the archive could not take (robot-memory prune): held back, and what to do.
    archive_advice: str = ''


def prune(entries, now: dt.datetime, config: 'AnyConfig' = DEFAULTS) -> PruneOutcome:
    """
    Split ``entries`` into kept and pruned (effective confidence < prune_min).

    An entry seen within ``recent_hours`` (reinforced, or first seen, then) is never pruned:
    the context block promises it in its "Seen in the last ... h" section. At most
    ``max_prune_fraction`` of the entries (at least one) go in one call, the weakest first,
    so that a clock jumping far ahead cannot empty the memory at once.
    """
    scored = [(entry, effective_confidence(entry, now, config)) for entry in entries]
    recent = (now - dt.timedelta(hours=config.recent_hours)
              if getattr(config, 'recent_hours', 0) > 0 else None)
    below = [(entry, c) for entry, c in scored if c < config.prune_min
             and not (recent is not None and _seen_since(entry, recent))]
    allowed = max(1, int(len(scored) * config.max_prune_fraction))
    below.sort(key=lambda pair: (pair[1], pair[0].last_reinforced or now, pair[0].id))
    chosen = below[:allowed]
    chosen_ids = {id(entry) for entry, _ in chosen}
    return PruneOutcome(
        kept=[entry for entry in entries if id(entry) not in chosen_ids],
        pruned=[PrunedEntry(entry, c) for entry, c in chosen],
        held_back=len(below) - len(chosen),
    )
