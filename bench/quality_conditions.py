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
Learned conditions against planted ones, for ``bench_quality.py`` (issue 38 point 8).

On each profile's clock and time zone, in an evidence store and memory file of their own
(so the profile's own figures are untouched), a robot drives at a speed, carries a
payload, runs its motor warm and its battery down, each held for a while and reported
every ``max(period, 30 s)`` as telemetry (``/cmd_vel``, ``/battery_state``, ``/payload``)
or as a value of an OK status (``cond: motor``). Four faults depend on them with known
thresholds; two (``camera``, ``wifi``) happen at random, independent of every signal.
The rules mark payload controllable (speed is by default). Nightly dreams as in
``bench_quality``; at the end each planted fault's entry is read:

``condition_recall``   dependent faults whose entry states the planted signal, on the
                       planted side, with a threshold within 10 % (goal >= 0.9)
``false_conditions``   independent faults whose entry states any condition (goal 0)
``advice_stated``      controllable faults (speed, payload) whose entry gives advice
``advice_safe``        of those, advice on the safe side of the planted threshold (goal: all)
"""

import dataclasses
import datetime as dt
import random
import re

from robot_memory.dream.autodream import dream
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.observations import DiagnosticObservation
from robot_memory.evidence.observations import TelemetryObservation
from robot_memory.evidence.rules import Rules
from robot_memory.rcan.memory_file import MemoryFile

RULES = {'signals': {'controllable': ['*cmd_vel* linear.*', '*payload*']}}
MIN_PERIOD_S = 30.0


@dataclasses.dataclass(frozen=True)
class Planted:
    """A fault and the signal it depends on (None: independent), with its threshold."""

    status: str
    message: str
    signal: str = ''
    op: str = '>='
    threshold: float = 0.0
    chance: float = 0.1  # of a fault in a held value on the fault side (or any, if independent)
    controllable: bool = False


# signal name: (low, high, minutes each value is held)
SIGNALS = {'/cmd_vel linear.x': (0.05, 0.7, 10), 'cond: motor: Motor Temp (C)': (35.0, 80.0, 30),
           '/battery_state voltage': (10.8, 13.0, 30), '/payload data': (0.0, 20.0, 20)}
PLANTED = (
    Planted('cond: wheels', 'Wheel slip detected', '/cmd_vel linear.x', '>=', 0.45, 0.15, True),
    Planted('cond: motor driver', 'Thermal derating', 'cond: motor: Motor Temp (C)', '>=',
            70.0, 0.3),
    Planted('cond: power', 'Brownout on the 12 V rail', '/battery_state voltage', '<=', 11.3,
            0.3),
    Planted('cond: arm', 'Joint overload', '/payload data', '>=', 14.0, 0.25, True),
    Planted('cond: camera', 'Frame dropped'),
    Planted('cond: wifi', 'Link lost'),
)


def _held(rng, days: int) -> dict:
    """Each signal's values: {name: [(start minute, value)]}, a new value each hold."""
    found = {}
    for name, (low, high, minutes) in SIGNALS.items():
        found[name] = [(minute, rng.uniform(low, high))
                       for minute in range(0, days * 1440, minutes)]
    return found


def _value(held: list, minute: int, hold: int) -> float:
    return held[minute // hold][1]


def _faults(rng, held: dict, days: int) -> dict:
    """Each planted fault's bad intervals in minutes since the start: {status: [(a, b)]}."""
    found = {}
    for plant in PLANTED:
        spans = []
        if plant.signal:
            hold = SIGNALS[plant.signal][2]
            for start, value in held[plant.signal]:
                side = value >= plant.threshold if plant.op == '>=' else value <= plant.threshold
                if side and rng.random() < plant.chance:
                    begin = start + rng.randrange(0, max(1, hold - 4))
                    spans.append((begin, begin + 3))
        else:
            for start in range(0, days * 1440, 20):
                if rng.random() < 0.04:
                    spans.append((start + 5, start + 8))
        found[plant.status] = spans
    return found


def _observations(stamp: dt.datetime, minute: int, held: dict, bad: set):
    speed = _value(held['/cmd_vel linear.x'], minute, 10)
    yield TelemetryObservation(stamp, '/cmd_vel', 'geometry_msgs/msg/Twist',
                               {'linear': {'x': speed, 'y': 0.0, 'z': 0.0},
                                'angular': {'x': 0.0, 'y': 0.0, 'z': 0.0}})
    yield TelemetryObservation(stamp, '/battery_state', 'sensor_msgs/msg/BatteryState',
                               {'voltage': _value(held['/battery_state voltage'], minute, 30),
                                'header': {'stamp': {'sec': int(stamp.timestamp())}}})
    yield TelemetryObservation(stamp, '/payload', 'std_msgs/msg/Float32',
                               {'data': _value(held['/payload data'], minute, 20)})
    temp = _value(held['cond: motor: Motor Temp (C)'], minute, 30)
    yield DiagnosticObservation(stamp, 'cond: motor', 'base', 0, 'OK',
                                (('Motor Temp (C)', f'{temp:.1f}'), ('serial', 'A1B2C3')))
    for plant in PLANTED:
        level = 1 if plant.status in bad else 0
        yield DiagnosticObservation(stamp, plant.status, 'base', level,
                                    plant.message if level else 'OK')


def run(name: str, start: dt.datetime, nights: list, days: int, period_s: float, scratch,
        config) -> dict:
    """Plant the conditions on one profile's clock; return the figures (keys above)."""
    rng = random.Random(f'conditions-{name}')
    held = _held(rng, days)
    faults = _faults(rng, held, days)
    rules = Rules.from_data(RULES)
    memory = MemoryFile(scratch / f'{name}-conditions.md')
    step = max(period_s, MIN_PERIOD_S)
    night = 0
    with EvidenceStore(scratch / f'{name}-conditions.db', rules=rules) as store:
        second = 0.0
        index = dict.fromkeys(faults, 0)
        while second < days * 86400.0:
            stamp = start + dt.timedelta(seconds=second)
            while night < len(nights) and stamp >= nights[night]:
                dream(store, memory, nights[night], rules, config=config)
                night += 1
            minute = int(second // 60)
            bad = set()
            for status, spans in faults.items():
                while index[status] < len(spans) and spans[index[status]][1] <= minute:
                    index[status] += 1
                if index[status] < len(spans) and spans[index[status]][0] <= minute:
                    bad.add(status)
            for observation in _observations(stamp, minute, held, bad):
                store.add(observation)
            second += step
        while night < len(nights):
            dream(store, memory, nights[night], rules, config=config)
            night += 1
    entries = memory.load(nights[-1] + dt.timedelta(hours=1)).document.entries
    return score({plant.status: [entry.text for entry in entries
                                 if entry.text.split(' - ', 1)[0].find(plant.status) >= 0]
                  for plant in PLANTED})


_WHEN = re.compile(r'when (?P<label>.+?) (?P<op>[≥≤]) (?P<value>-?[\d.]+)')
_PREFER = re.compile(r'prefer .+? (?P<op>[≥≤]) (?P<value>-?[\d.]+)')
_LABELS = {'/cmd_vel linear.x': 'linear speed', 'cond: motor: Motor Temp (C)':
           'cond: motor: Motor Temp (C)', '/battery_state voltage': 'battery voltage',
           '/payload data': 'payload'}


def score(texts: dict) -> dict:
    """Return the figures from each planted fault's entry texts ({status: [text]})."""
    dependent = [plant for plant in PLANTED if plant.signal]
    recalled, false, stated, safe, missed = 0, 0, 0, 0, []
    for plant in PLANTED:
        text = ' '.join(texts.get(plant.status, ()))
        when = _WHEN.search(text)
        if not plant.signal:
            false += bool(when)
            continue
        sign = '≥' if plant.op == '>=' else '≤'
        right = (when is not None and when['label'] == _LABELS[plant.signal]
                 and when['op'] == sign
                 and abs(float(when['value']) - plant.threshold) <= 0.1 * abs(plant.threshold))
        recalled += right
        if not right:
            missed.append(plant.status)
        prefer = _PREFER.search(text)
        if plant.controllable and prefer is not None:
            stated += 1
            value = float(prefer['value'])
            safe += value < plant.threshold if plant.op == '>=' else value > plant.threshold
    controllable = sum(1 for plant in PLANTED if plant.controllable)
    return {'condition_recall': round(recalled / len(dependent), 3),
            'conditions_planted': len(dependent), 'conditions_missed': missed,
            'false_conditions': false,
            'advice_stated': f'{stated}/{controllable}', 'advice_safe': f'{safe}/{stated}'}
