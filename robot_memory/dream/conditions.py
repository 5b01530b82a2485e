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
Learned operating conditions: the signal and threshold under which a fault happens.

A fault's *episodes* (``[start, end, ...]``, UNIX seconds) are compared with the robot's
context signals (``evidence.signals.Series``: per interval of ``INTERVAL_S`` the min, max,
mean and count of a speed, a temperature, a voltage). The rule, per signal:

* each episode takes the mean of the interval it started in; every interval that no episode
  of the fault touches (one interval of margin either side) is fault-free operating time;
* a *stump* splits the values at a threshold ``t`` (``>= t`` or ``<= t``, ``t`` one of the
  episodes' values), among those with SUPPORT of the episodes on the fault side (and
  MIN_EPISODES at least) and a *lift* of MIN_LIFT or more (the fault's rate per hour on
  that side against its rate overall): of the splits within NEAR_GAIN of the highest
  information gain (episode units against fault-free intervals), the one that holds the
  most episodes;
* its p-value: the chance that so many episodes fall on the fault side if they started at
  random operating times (binomial, with the side's share of fault-free time), times the
  thresholds tried on that signal (Bonferroni); across signals the Holm step-down at
  ALPHA keeps only those that pass, so trying 200 signals does not make one look causal.

A condition must also tell something beyond the fault's hours of the day (the same test
as ``cooccurrence.marks_the_hours``): within the quarter hours of the day the fault's
episodes touch, the fault side must still hold the fault at a lift of MIN_LIFT against
that fault-free time. A signal that merely marks working time (a lidar's rate, high all day
and nil on the dock at night) holds through a daytime fault's hours anyway: not stated.

Of the signals that pass, only the one with the highest gain is stated: two signals that
move together (a wheel speed and the commanded speed) give one condition, the one that
separates best. A fault that depends on no signal gets none. A signal the rules mark as
controllable (``SignalRules.controllable``) gets advice: the safe side, at a value the
robot ran at for ADVICE_MIN_S or more (within NEAR_SHARE below it) with no episode at or
beyond it, at least ADVICE_MARGIN short of the threshold. Pure and deterministic.
"""

import bisect
import dataclasses
import math
from typing import Optional

from robot_memory.evidence.signals import INTERVAL_S
from robot_memory.evidence.signals import label

MIN_EPISODES = 5
SUPPORT = 0.8
MIN_LIFT = 1.5
ALPHA = 0.01
MAX_THRESHOLDS = 32
NEAR_GAIN = 0.9
# Fault-free operating time a signal needs before it can say anything.
MIN_FREE_S = 4 * 3600.0
ADVICE_MARGIN = 0.1
ADVICE_MIN_S = 3600.0
NEAR_SHARE = 0.2
ROUND_SHARE = 0.02
SLOT_S = 900.0
DAY_S = 86400.0


@dataclasses.dataclass(frozen=True)
class Condition:
    """A fault's learned condition, its evidence and the advice it gives (if any)."""

    signal: str
    op: str  # '>=' or '<='
    threshold: float
    seen: tuple  # (low, high) of the episodes' values on the fault side
    episodes: int  # episodes on the fault side
    of: int  # episodes with a value of the signal
    safe_value: float  # the side away from the fault: no episode at or beyond it
    safe_s: float  # fault-free operating seconds at or beyond safe_value
    safe_episodes: int  # episodes at or beyond safe_value (0: "none")
    p_value: float
    lift: float
    advice: bool  # the signal is controllable and the safe side has enough time behind it
    label: str = ''
    unit: str = ''

    def phrase(self) -> str:
        """``when linear speed >= 0.45 m/s (seen 0.44-0.62; none in 41 h at or below 0.3)``."""
        sign = '≥' if self.op == '>=' else '≤'
        other = 'below' if self.op == '>=' else 'above'
        unit = f' {self.unit}' if self.unit else ''
        low, high = (number(value) for value in self.seen)
        seen = low if low == high else f'{low}-{high}'
        none = 'none' if not self.safe_episodes else str(self.safe_episodes)
        text = (f'when {self.label or self.signal} {sign} {number(self.threshold)}{unit} '
                f'(seen {seen}; {none} in {hours(self.safe_s)} at or {other} '
                f'{number(self.safe_value)})')
        return f'{text}; {self.advice_text()}' if self.advice else text

    def advice_text(self) -> str:
        """``prefer linear speed <= 0.3 m/s`` (the safe side), or ''."""
        if not self.advice:
            return ''
        sign = '≤' if self.op == '>=' else '≥'
        unit = f' {self.unit}' if self.unit else ''
        return f'prefer {self.label or self.signal} {sign} {number(self.safe_value)}{unit}'

    def evidence(self) -> str:
        """Return what the condition rests on, for the dream's summary."""
        return (f'{self.episodes} of {self.of} episodes on that side, lift {self.lift:.1f}, '
                f'p {self.p_value:.1g} after correction for the signals tried')


def number(value: float) -> str:
    """Return ``value`` with at most three significant digits, never in exponent form."""
    if value == 0 or not math.isfinite(value):
        return '0' if value == 0 else str(value)
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f'{round(value, digits):.{digits}f}'
    return text.rstrip('0').rstrip('.') if '.' in text else text


def hours(seconds: float) -> str:
    """Operating time as people say it: 50 min, 41 h."""
    if seconds < 5400:
        return f'{max(1, round(seconds / 60))} min'
    return f'{round(seconds / 3600)} h'


def _entropy(positive: float, total: float) -> float:
    if total <= 0 or positive <= 0 or positive >= total:
        return 0.0
    share = positive / total
    return -(share * math.log2(share) + (1 - share) * math.log2(1 - share))


def gain(hits: int, free_hits: int, episodes: int, free: int) -> float:
    """Information gain of a split: ``hits`` of ``episodes`` and ``free_hits`` of ``free``."""
    total = episodes + free
    inside = hits + free_hits
    outside = total - inside
    return (_entropy(episodes, total) - inside / total * _entropy(hits, inside)
            - outside / total * _entropy(episodes - hits, outside))


def binomial_tail(hits: int, trials: int, share: float) -> float:
    """P(X >= hits) for X ~ Binomial(trials, share)."""
    if hits <= 0:
        return 1.0
    if share <= 0:
        return 0.0
    if share >= 1:
        return 1.0
    log_share, log_rest = math.log(share), math.log1p(-share)
    terms = [math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
             + k * log_share + (trials - k) * log_rest for k in range(hits, trials + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(term - top) for term in terms))


class Prepared:
    """One signal's intervals, sorted for the fault-free counts every fault asks for."""

    def __init__(self, name: str, starts, means, interval_s: float):
        self.name = name
        self.starts = list(starts)
        self.means = list(means)
        self.interval_s = interval_s
        self.sorted = sorted(self.means)
        self._slots: Optional[dict] = None

    def slot_values(self) -> dict:
        """{quarter hour of the day: sorted means of the intervals starting in it}, once."""
        if self._slots is None:
            slots: dict = {}
            for start, mean in zip(self.starts, self.means):
                slots.setdefault(slot_of(start), []).append(mean)
            self._slots = {slot: sorted(values) for slot, values in slots.items()}
        return self._slots

    def counter(self) -> bool:
        """Whether the signal only ever grows (a counter, an odometer): not a condition."""
        means = self.means
        return len(means) >= 10 and means[-1] > means[0] and all(
            later >= earlier for earlier, later in zip(means, means[1:]))

    def bucket(self, stamp: float) -> Optional[int]:
        """Return the index of the interval ``stamp`` falls in, or None."""
        index = bisect.bisect_right(self.starts, stamp) - 1
        if index >= 0 and stamp < self.starts[index] + self.interval_s:
            return index
        return None

    def near_episodes(self, episodes: list) -> set:
        """Indexes of the intervals an episode touches, one interval of margin either side."""
        found: set = set()
        step = self.interval_s
        for start, end, *_ in episodes:
            low = bisect.bisect_left(self.starts, start - 2 * step)
            high = bisect.bisect_right(self.starts, end + step)
            found.update(range(low, high))
        return found


def slot_of(stamp: float) -> int:
    """Return the quarter hour of the (UTC) day ``stamp`` falls in."""
    return int(stamp % DAY_S // SLOT_S)


def fault_slots(episodes: list) -> set:
    """Return the quarter hours of the day the episodes touch (a day at most of each)."""
    slots: set = set()
    for start, end, *_ in episodes:
        moment = start - start % SLOT_S
        while moment <= min(end, start + DAY_S - SLOT_S):
            slots.add(slot_of(moment))
            moment += SLOT_S
    return slots


def marks_the_hours(signal: 'Prepared', near: set, best: '_Best', valued: int,
                    slots: set) -> bool:
    """
    Whether the split says no more than the fault's hours of the day (see the module).

    Its lift, recomputed against the fault-free intervals of the quarter hours ``slots``
    only (``near``: the intervals the episodes touch, not fault-free), is under MIN_LIFT.
    """
    by_slot = signal.slot_values()
    excluded: dict = {}
    for index in near:
        excluded.setdefault(slot_of(signal.starts[index]), []).append(signal.means[index])
    free = free_hits = 0
    for slot in slots:
        ordered = by_slot.get(slot, [])
        out = sorted(excluded.get(slot, ()))
        free += len(ordered) - len(out)
        free_hits += _count(ordered, out, best.threshold, best.op)
    if free <= 0:
        return False  # the fault fills its hours: no fault-free time there to judge by
    lift = (best.hits / (best.hits + free_hits)) / (valued / (valued + free))
    return lift < MIN_LIFT


def _count(ordered: list, excluded: list, value: float, op: str, strict: bool = False) -> int:
    """How many of ``ordered`` minus ``excluded`` (both sorted) lie on ``op``'s side."""
    if op == '>=':
        cut = bisect.bisect_right if strict else bisect.bisect_left
        return (len(ordered) - cut(ordered, value)) - (len(excluded) - cut(excluded, value))
    cut = bisect.bisect_left if strict else bisect.bisect_right
    return cut(ordered, value) - cut(excluded, value)


@dataclasses.dataclass
class _Best:
    op: str
    threshold: float
    hits: int
    free_hits: int
    gain: float
    p_value: float
    lift: float
    top: float  # the signal's highest gain (what signals are compared by)


def _stump(values: list, total: int, ordered: list, excluded: list) -> Optional[_Best]:
    """Return the best split of one signal for one fault, with its Bonferroni-corrected p-value."""
    valued = len(values)
    free = len(ordered) - len(excluded)
    if free <= 0:
        return None
    need = max(MIN_EPISODES, math.ceil(SUPPORT * total))
    distinct = sorted(set(values))
    if len(distinct) > MAX_THRESHOLDS:
        step = (len(distinct) - 1) / (MAX_THRESHOLDS - 1)
        distinct = sorted({distinct[round(index * step)] for index in range(MAX_THRESHOLDS)})
    tried = 2 * len(distinct)
    found = []
    ordered_values = sorted(values)
    for op in ('>=', '<='):
        for threshold in distinct:
            hits = (valued - bisect.bisect_left(ordered_values, threshold) if op == '>='
                    else bisect.bisect_right(ordered_values, threshold))
            if hits < need:
                continue
            free_hits = _count(ordered, excluded, threshold, op)
            lift = (hits / (hits + free_hits)) / (valued / (valued + free))
            if lift >= MIN_LIFT:
                found.append((gain(hits, free_hits, valued, free), hits, op, threshold,
                              free_hits, lift))
    if not found:
        return None
    # Of the splits within NEAR_GAIN of the best, the one that holds the most episodes: a
    # threshold that leaves one episode out to gain a little time is not the fault's.
    top = max(item[0] for item in found)
    best_gain, hits, op, threshold, free_hits, lift = max(
        (item for item in found if item[0] >= NEAR_GAIN * top),
        key=lambda item: (item[1], item[0]))
    share = (free_hits + 1) / (free + 1)
    return _Best(op, threshold, hits, free_hits, best_gain,
                 min(1.0, binomial_tail(hits, valued, share) * tried), lift, top)


def _safe_side(signal: Prepared, excluded: list, best: _Best, values: list) -> tuple:
    """(value, fault-free seconds at or beyond it, episodes at or beyond it, enough time)."""
    ordered, op, threshold = signal.sorted, best.op, best.threshold
    margin = ADVICE_MARGIN * max(abs(threshold), 1e-9)
    bound = threshold - margin if op == '>=' else threshold + margin
    free = [value for value in ordered if (value <= bound if op == '>=' else value >= bound)]
    if op == '>=':
        free.reverse()  # from the bound away from the fault
    excluded_set = excluded
    need = ADVICE_MIN_S / signal.interval_s
    chosen, enough = None, False
    stride = max(1, len(free) // 200)
    for value in free[::stride]:
        width = NEAR_SHARE * max(abs(value), 1e-9)
        low, high = (value - width, value) if op == '>=' else (value, value + width)
        near = (bisect.bisect_right(ordered, high) - bisect.bisect_left(ordered, low)
                - (bisect.bisect_right(excluded_set, high)
                   - bisect.bisect_left(excluded_set, low)))
        if near >= need:
            chosen, enough = value, True
            break
    if chosen is None:
        chosen = free[0] if free else bound
    chosen = _round_away(chosen, op)
    away = '<=' if op == '>=' else '>='
    seconds = _count(ordered, excluded, chosen, away) * signal.interval_s
    episodes = sum(1 for value in values if (value <= chosen if op == '>=' else value >= chosen))
    return chosen, seconds, episodes, enough and episodes == 0


def _round_away(value: float, op: str) -> float:
    """
    Round towards the safe side (down for a '>=' fault).

    Two significant digits, or three when two would move it by more than ROUND_SHARE
    (12.43 V is 12.5, not 13).
    """
    if value == 0 or not math.isfinite(value):
        return value
    turn = math.floor if op == '>=' else math.ceil
    for digits in (1, 2):
        scale = 10.0 ** (math.floor(math.log10(abs(value))) - digits)
        rounded = round(turn(value / scale) * scale, 12)
        if abs(rounded - value) <= ROUND_SHARE * abs(value):
            return rounded
    return rounded


def find(episodes: list, signals: dict, controllable=lambda name: False,
         labels=lambda name: (name, '')) -> Optional[Condition]:
    """
    Return the condition of a fault's ``episodes`` among ``signals`` ({name: Prepared}), or None.

    ``controllable(name)`` says whether the rules put a signal under the robot's control;
    ``labels(name)`` gives its words and unit (``('linear speed', 'm/s')``).
    """
    if len(episodes) < MIN_EPISODES:
        return None
    tested: list[tuple[float, str, Optional[_Best], list, list, set]] = []
    for name in sorted(signals):
        signal = signals[name]
        if len(signal.means) * signal.interval_s < MIN_FREE_S or signal.counter():
            continue
        values = []
        for start, *_ in episodes:
            index = signal.bucket(start)
            if index is not None:
                values.append(signal.means[index])
        if len(values) < MIN_EPISODES:
            continue
        near = signal.near_episodes(episodes)
        excluded = sorted(signal.means[index] for index in near)
        if (len(signal.means) - len(excluded)) * signal.interval_s < MIN_FREE_S:
            continue
        best = _stump(values, len(episodes), signal.sorted, excluded)
        tested.append((best.p_value if best else 1.0, name, best, values, excluded, near))
    passed = []
    slots = fault_slots(episodes)
    for rank, (p_value, name, best, values, excluded, near) in enumerate(sorted(
            tested, key=lambda item: (item[0], item[1]))):
        if best is None or p_value * (len(tested) - rank) > ALPHA:
            break  # Holm: the first that fails stops the rest
        if not marks_the_hours(signals[name], near, best, len(values), slots):
            passed.append((best.top, name, best, values, excluded))
    if not passed:
        return None
    _, name, best, values, excluded = max(passed, key=lambda item: (item[0], item[1]))
    value, seconds, at_or_beyond, enough = _safe_side(signals[name], excluded, best, values)
    side = [item for item in values
            if (item >= best.threshold if best.op == '>=' else item <= best.threshold)]
    label, unit = labels(name)
    return Condition(name, best.op, best.threshold, (min(side), max(side)), best.hits,
                     len(values), value, seconds, at_or_beyond,
                     min(1.0, best.p_value * len(tested)), best.lift,
                     bool(controllable(name)) and enough, label, unit)


class Finder:
    """
    ``find`` for one dream: the store's signals of the last ``days`` read once, when first asked.

    ``rules`` is the rules file's ``signals:`` section (``evidence.signals.SignalRules``);
    ``last`` holds the condition of the last call (None if it found none).
    """

    def __init__(self, store, now_s: float, rules, days: float = 30.0):
        self.store = store
        self.now_s = now_s
        self.rules = rules
        self.days = days
        self.signals: Optional[dict] = None
        self.last: Optional[Condition] = None
        self._found: dict = {}

    def _load(self) -> dict:
        series = self.store.signal_series(self.now_s - self.days * 86400.0, self.now_s)
        # A signal that never moved separates nothing: not prepared at all.
        return {name: Prepared(name, item.starts, item.means, INTERVAL_S)
                for name, item in series.items()
                if len(item.starts) and min(item.mins) < max(item.maxs)}

    def __call__(self, episodes: list, own: tuple = ()) -> Optional[Condition]:
        """
        Return the condition of ``episodes`` (started by the dream's time), or None.

        ``own``: the names of the fault's own statuses, whose values are not tried.
        """
        episodes = [item for item in episodes if item[0] <= self.now_s]
        key = (tuple((item[0], item[1]) for item in episodes), own)
        if key not in self._found:
            if len(episodes) < MIN_EPISODES:
                self._found[key] = None
            else:
                if self.signals is None:
                    self.signals = self._load()
                mine = tuple(f'{name}: ' for name in own if name)
                tried = {name: signal for name, signal in self.signals.items()
                         if not name.startswith(mine)} if mine else self.signals
                self._found[key] = find(episodes, tried, self.rules.is_controllable, label)
        self.last = self._found[key]
        return self.last


def new_condition(report, before: str, restated: Optional[tuple], links: list,
                  condition: Optional[Condition]) -> None:
    """Note in the dream's ``report.conditions`` a condition the entry did not state before."""
    if condition is None or restated is None or not links:
        return
    phrase = condition.phrase()
    # Its signal and side, not its figures: hours grow and a threshold moves night by night.
    stated = phrase.split(' (', 1)[0].rsplit(' ', 2 if condition.unit else 1)[0]
    if phrase not in restated[0] or stated in before:
        return
    report.conditions.append({
        'entry_id': links[0]['entry_id'] or '', 'about': restated[0].split(' - ', 1)[0][:120],
        'signal': condition.signal,
        'condition': phrase.split('; prefer ', 1)[0], 'advice': condition.advice_text(),
        'evidence': condition.evidence()})
