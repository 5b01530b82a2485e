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
With what a fault happens: another source's state that holds during nearly all its episodes.

``only_while`` compares a signature's episodes with the episodes of the other sources'
states (a status being bad with a given message, a log being written) and returns the one
that holds during at least ``SHARE`` of them while holding at most ``MAX_TIME_SHARE`` of
the time: a state that is always there (a constant condition) says nothing, and one that
merely overlaps a fault once is not what the fault happens with. The state must already
hold when an episode starts: the lidar stops *while docked*, not the other way round.
``ok_states`` reads states from a status's OK reports too (a dock's ``Is docked: True``, a
charger's ``Charging``): each stored OK report holds its message and non-numeric values
until the status's next report. Pure and deterministic.

A state must also tell something about the fault's own time of day (issue 38, point 7):
one that holds during MAX_HOURS_SHARE of the fault's hours of the day (the quarter hours
its episodes touch) while the fault is *not* happening merely marks those hours — the
robot is "undocked" all working day, fault or not — and is not stated. When the fault fills
its hours (fault-free for less than half as long as the fault took them) there is no such
time to judge by: the state is kept only if it starts and stops with the fault (it holds at
most MAX_STATE_RATIO times as long: the lidar off every night while docked), not if it
covers the fault's hours and more (a battery low every afternoon, "undocked" all day).
"""

import bisect
import json
from typing import Optional

from robot_memory.evidence.observations import message_pattern

SHARE = 0.9
MIN_EPISODES = 3
MAX_TIME_SHARE = 0.6
# An episode is "during" a state when the state holds for this share of it.
OVERLAP = 0.5
MAX_HOURS_SHARE = 0.8
MAX_STATE_RATIO = 1.25
BIN_S = 900.0
DAY_S = 86400.0


def _overlap(start: float, end: float, intervals: list, starts: list) -> float:
    """Seconds of [start, end] covered by ``intervals`` (sorted, not overlapping)."""
    covered = 0.0
    index = max(0, bisect.bisect_right(starts, start) - 1)
    while index < len(intervals) and intervals[index][0] <= end:
        low, high = max(start, intervals[index][0]), min(end, intervals[index][1])
        covered += max(0.0, high - low)
        index += 1
    return covered


def _inside(start: float, end: float, intervals: list, starts: list) -> bool:
    """Whether the state already holds when the episode starts, and for most of it."""
    index = bisect.bisect_right(starts, start) - 1
    if index < 0 or start > intervals[index][1]:
        return False
    return end - start < 1.0 or _overlap(start, end, intervals, starts) >= OVERLAP * (end - start)


def _merged(episodes: list) -> list:
    found: list = []
    for start, end, *_ in sorted(episodes):
        if found and start <= found[-1][1]:
            found[-1][1] = max(found[-1][1], end)
        else:
            found.append([start, end])
    return found


def only_while(own: list, states: dict, now_s: float) -> Optional[str]:
    """
    Return the name of the state in ``states`` (name -> episodes) ``own`` happens only in.

    Needs MIN_EPISODES episodes of ours; the state must hold during SHARE of them and at
    most MAX_TIME_SHARE of the time since our first episode. Ties go to the state that
    holds the least time, then to the first name.
    """
    if len(own) < MIN_EPISODES:
        return None
    since = min(item[0] for item in own)
    span = max(1.0, now_s - since)
    best = None
    for name in sorted(states):
        intervals = _merged(states[name])
        starts = [item[0] for item in intervals]
        held = sum(max(0.0, min(end, now_s) - max(start, since)) for start, end in intervals)
        if not intervals or held > MAX_TIME_SHARE * span:
            continue
        inside = sum(1 for start, end, *_ in own if _inside(start, end, intervals, starts))
        if inside < SHARE * len(own):
            continue
        key = (-inside, held)
        if best is not None and key >= best[0]:
            continue
        if not marks_the_hours(own, intervals, starts, since, now_s):
            best = (key, name)
    return best[1] if best else None


def marks_the_hours(own: list, intervals: list, starts: list, since: float,
                    now_s: float) -> bool:
    """Whether the state holds through the fault's hours of the day anyway (see the module)."""
    bins = set()
    for start, end, *_ in own:
        moment = start - start % BIN_S
        while moment < min(end, start + DAY_S):
            bins.add(int(moment % DAY_S // BIN_S))
            moment += BIN_S
    faults = _merged(own)
    fault_starts = [item[0] for item in faults]
    free = held = fault_time = 0.0
    day = since - since % DAY_S
    while day < now_s:
        for slot in bins:
            low, high = max(since, day + slot * BIN_S), min(now_s, day + (slot + 1) * BIN_S)
            if high <= low:
                continue
            fault = _overlap(low, high, faults, fault_starts)
            fault_time += fault
            free += high - low - fault
            # During the fault the state holds (that is how it was chosen): the rest is free.
            held += max(0.0, _overlap(low, high, intervals, starts) - fault)
        day += DAY_S
    if free < 0.5 * fault_time or free <= 0:
        state_time = sum(max(0.0, min(end, now_s) - max(start, since)) for start, end in intervals)
        fault_total = sum(max(0.0, min(end, now_s) - start) for start, end in faults)
        return state_time > MAX_STATE_RATIO * fault_total
    return held >= MAX_HOURS_SHARE * free


def ok_states(rows, gap_s: float) -> dict:
    """
    Return the states OK reports hold, ``{name: (source key, [[start, end], ...])}``.

    ``rows`` are a status's reports ``(source key, stamp, end, severity, payload)`` in time
    order per source key. A state is the message or a non-numeric value of an OK report
    (``<status> reports Charging``, ``<status> reports Is docked: True``); it holds from
    that report until the next report of the status that does not carry it (a bad one
    never does), for at most ``gap_s`` after the last. Only a message or value key that
    takes two values or more among the OK reports is a state: one that never changes
    says nothing. Numbers in them are masked (``message_pattern``).
    """
    found: dict = {}
    seen: dict = {}
    held: dict = {}
    previous = None
    for source_key, stamp, end, severity, payload in rows:
        if source_key != previous:
            held, previous = {}, source_key
        state = {}
        if severity == 0 and payload:
            try:
                data = json.loads(payload)
                state = {'': message_pattern(str(data['message']))}
                state.update((str(key), message_pattern(str(value)))
                             for key, value in data.get('values', {}).items())
            except (ValueError, KeyError, TypeError, AttributeError):
                state = {}
        for key in list(held):
            value, interval = held[key]
            if stamp - interval[1] > gap_s:
                held.pop(key)  # the status was silent: the state is no longer known
                continue
            interval[1] = max(interval[1], stamp)  # it held until this report
            if state.get(key) != value:
                held.pop(key)
        name = source_key.split('|', 2)[-1]
        for key, value in state.items():
            seen.setdefault((source_key, key), set()).add(value)
            if key in held:
                held[key][1][1] = max(held[key][1][1], end)
                continue
            label = f'{name} reports {value}' if not key else f'{name} reports {key}: {value}'
            interval = [stamp, max(end, stamp)]
            found.setdefault(label.replace(' - ', ', '), (source_key, key, []))[2].append(interval)
            held[key] = (value, interval)
    return {label: (source_key, intervals) for label, (source_key, key, intervals)
            in found.items() if len(seen[(source_key, key)]) >= 2}
