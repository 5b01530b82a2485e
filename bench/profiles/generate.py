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
A robot profile (a YAML file beside this one) as a stream of what the robot reports.

``stream(profile, start, days, period_s)`` yields ``(stamp, kind, data)`` in time order:
``kind`` is ``diagnostic`` or ``log`` and ``data`` the plain JSON-lines object of
``robot_memory.observations`` (what ``robot-memory ingest`` reads, or what a bag's
message becomes). Every status of the profile is published each ``period_s`` (1 s is
diagnostic_updater's rate); a planted cause makes its statuses bad, or its node log, in
the windows its ``when`` gives. Seeded: the same profile gives the same stream.
"""

import dataclasses
import datetime as dt
import pathlib
import random
import uuid
import zoneinfo

import yaml

HERE = pathlib.Path(__file__).resolve().parent
UTC = dt.timezone.utc
DAY = 86400.0


@dataclasses.dataclass(eq=False)
class Plant:
    """One planted cause: what it makes bad, when, and what a good memory says of it."""

    cause: str
    expect: str  # fault, routine, constant, transient or storm
    recurring: bool
    statuses: list  # [(name, hardware_id, level, message)]
    log: dict  # {'node', 'message', 'per_window'} or {}
    when: dict
    intervals: list = dataclasses.field(default_factory=list)
    during: tuple = ()  # causes of the states it happens only in (what its entry should say)
    values: dict = dataclasses.field(default_factory=dict)  # (name, hardware id) -> bad values


def local_midnight(profile: dict, date: dt.date) -> dt.datetime:
    """Midnight of ``date`` in the profile's time zone, as an aware UTC datetime."""
    zone = zoneinfo.ZoneInfo(profile.get('timezone', 'UTC'))
    return dt.datetime.combine(date, dt.time(0), zone).astimezone(UTC)


def load(name: str) -> dict:
    """Return the profile ``name`` (a YAML file in bench/profiles/) as plain data."""
    return yaml.safe_load((HERE / f'{name}.yaml').read_text(encoding='utf-8'))


def profile_names() -> list:
    """Return the names of the profiles shipped beside this module."""
    return sorted(path.stem for path in HERE.glob('*.yaml'))


# Profiles that plant negative controls for bench_quality, not a robot's statuses: the node
# benchmarks build their robot from the robot profiles alone.
CONTROL_PROFILES = ('negative_controls',)


def robot_profile_names() -> list:
    """Return the names of the robot profiles (all but the negative controls)."""
    return [name for name in profile_names() if name not in CONTROL_PROFILES]


def plants(profile: dict, start: dt.datetime, days: int) -> list:
    """Return the profile's planted causes with their bad intervals (UNIX seconds)."""
    zone = zoneinfo.ZoneInfo(profile.get('timezone', 'UTC'))
    rng = random.Random(profile['name'])
    found = []
    for spec in profile['plants']:
        statuses = [(item['name'], item['hardware_id'], item.get('level', 1), item['message'])
                    for item in spec.get('statuses', ())]
        plant = Plant(spec['cause'], spec['expect'], spec.get('recurring', False), statuses,
                      spec.get('log', {}), spec['when'], during=tuple(spec.get('while', ())),
                      values={(item['name'], item['hardware_id']): item['values']
                              for item in spec.get('statuses', ()) if item.get('values')})
        plant.intervals = _intervals(plant.when, start, days, zone, rng)
        found.append(plant)
    return found


def _intervals(when: dict, start: dt.datetime, days: int, zone, rng) -> list:
    first, last = when.get('days', [0, days])
    last = min(last, days)
    begin = start.timestamp()
    if when.get('always'):
        return [(begin + first * DAY, begin + last * DAY)]
    found = []
    for day in range(first, last):
        date = start.astimezone(zone).date() + dt.timedelta(days=day)
        if when.get('weekdays') and date.weekday() >= 5:
            continue
        if rng.random() >= when.get('chance', 1.0):
            continue

        def at(hours):
            local = dt.datetime.combine(date, dt.time(0), zone) + dt.timedelta(hours=hours)
            return local.timestamp()

        if 'at' in when:
            if day != first:
                continue
            moment = at(when['at'])
            found.append((moment, moment + when.get('seconds', 1)))
        elif 'window' in when:
            low, high = when['window']
            jitter = when.get('jitter_min', 0) * 60
            a = at(low) + rng.uniform(-jitter, jitter)
            b = at(high if high > low else high + 24) + rng.uniform(-jitter, jitter)
            found.append((a, b))
        else:
            low, high = when.get('hours', [0, 24])
            for _ in range(when.get('episodes', 1)):
                a = at(rng.uniform(low, high))
                found.append((a, a + 60 * rng.uniform(*when.get('minutes', [1, 10]))))
    stop = begin + days * DAY
    return sorted((max(a, begin), min(b, stop)) for a, b in found if b > begin and a < stop)


def _fill(template: str, rng) -> str:
    ids = {
        'uuid': lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        'goal_hex': lambda: uuid.UUID(int=rng.getrandbits(128)).hex,
        'hex': lambda: f'0x{rng.getrandbits(48):012x}',
        'ip': lambda: f'192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}',
        'port': lambda: str(rng.randrange(1024, 65535)),
        'pid': lambda: str(rng.randrange(100, 99999)),
        'serial': lambda: ''.join(rng.choice('0123456789ABCDEF') for _ in range(18)),
        'seconds': lambda: f'{rng.uniform(0.5, 30):.1f}',
        'time': lambda: dt.datetime.fromtimestamp(rng.uniform(1.7e9, 1.8e9), UTC).strftime(
            '%Y-%m-%dT%H:%M:%S.%fZ'),
    }
    return template.format_map({key: make() for key, make in ids.items()})


def _log_events(plant: Plant, rng) -> list:
    events = []
    per_window = plant.log.get('per_window', 1)
    for a, b in plant.intervals:
        for index in range(per_window):
            stamp = a + (b - a) * (index + 0.5) / per_window
            events.append((stamp, plant.log['node'], _fill(plant.log['message'], rng)))
    return events


def stream(profile: dict, start: dt.datetime, days: int, period_s: float = 1.0):
    """Yield ``(stamp, kind, data)`` for ``days`` of the profile from ``start`` (aware UTC)."""
    found = plants(profile, start, days)
    rng = random.Random(f'{profile["name"]}/ids')
    logs = []
    for plant in found:
        if plant.log:
            logs.extend(_log_events(plant, rng))
    logs.sort()
    cursor = {id(plant): 0 for plant in found}
    by_status = {}
    for plant in found:
        for name, hardware_id, level, message in plant.statuses:
            by_status.setdefault((name, hardware_id), []).append(
                (plant, level, message, plant.values.get((name, hardware_id))))
    draw = random.Random(f'{profile["name"]}/values')
    statuses = [(item['name'], item['hardware_id'], item.get('message', 'OK'),
                 item.get('values', {})) for item in profile['statuses']]
    begin, stop = start.timestamp(), start.timestamp() + days * DAY
    log_index = 0
    tick = 0
    while True:
        now = begin + tick * period_s
        if now >= stop:
            break
        while log_index < len(logs) and logs[log_index][0] < now + period_s:
            stamp, node, message = logs[log_index]
            yield stamp, 'log', {'stamp': dt.datetime.fromtimestamp(stamp, UTC),
                                 'source': 'log', 'name': node, 'level': 40, 'msg': message}
            log_index += 1
        stamp = dt.datetime.fromtimestamp(now, UTC)
        for name, hardware_id, ok_message, ok_values in statuses:
            level, message, values = 0, ok_message, ok_values
            for plant, bad_level, bad_message, bad_values in by_status.get(
                    (name, hardware_id), ()):
                if _active(plant, now, cursor, plant.when.get('flap_s')):
                    level, message = bad_level, bad_message
                    values = {**ok_values, **bad_values} if bad_values else ok_values
                    break
            yield now, 'diagnostic', {'stamp': stamp, 'source': 'diagnostic', 'name': name,
                                      'hardware_id': hardware_id, 'level': level,
                                      'message': message, 'values': _drawn(values, draw)}
        tick += 1
    for stamp, node, message in logs[log_index:]:
        if stamp < stop:
            yield stamp, 'log', {'stamp': dt.datetime.fromtimestamp(stamp, UTC),
                                 'source': 'log', 'name': node, 'level': 40, 'msg': message}


def _drawn(values: dict, rng) -> dict:
    """Return a status's values: from a list of values it takes, one drawn (seeded)."""
    return {key: rng.choice(value) if isinstance(value, list) else value
            for key, value in values.items()}


def _active(plant: Plant, now: float, cursor: dict, flap_s) -> bool:
    intervals = plant.intervals
    index = cursor[id(plant)]
    while index < len(intervals) and intervals[index][1] <= now:
        index += 1
    cursor[id(plant)] = index
    if index >= len(intervals) or intervals[index][0] > now:
        return False
    if flap_s:
        return int((now - intervals[index][0]) // flap_s) % 2 == 0
    return True
