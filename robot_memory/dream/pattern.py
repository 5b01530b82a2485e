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
The pattern of a fault from its episodes: constant, routine, flapping or intermittent.

An *episode* is a run of bad reports of one signature with no gap over ``GAP_S``; bad runs
less than ``FLAP_GAP_S`` apart are kept as one episode that counts its *flips*. The dream
keeps each signature's recent episodes (``History``) and ``describe`` turns them into a
label and a phrase such as ``daily 22:00-07:00 (America/Toronto), on 14 of the last 14
days, typically 9 h``. Pure and deterministic: time and time zone are passed in.
"""

import dataclasses
import datetime as dt
import json
import math
import re
import statistics
from typing import Optional
import zoneinfo

# Log records further apart than this are two episodes; a status's episode ends with an OK
# report, or after STATUS_GAP_S without a report (the robot was off).
GAP_S = 120.0
STATUS_GAP_S = 3600.0
KEEP_DAYS = 30
MAX_EPISODES = 500
LABELS = ('constant', 'routine', 'flapping', 'intermittent')
# The labels stating a fact where the dream holds back "routine" or "constant" (dream.normal).
FACT_LABELS = ('recurring', 'since')
# A condition present most days, in one window of the day, for hours at a time, is
# routine (docked, charging, parked with the e-stop in); a shorter one is a fault.
ROUTINE_DAY_SHARE = 0.6
ROUTINE_MIN_S = 6 * 3600.0
# A single episode this long, still going at the dream, that never let go, is constant.
CONSTANT_MIN_S = 6 * 3600.0
WINDOW_SHARE = 0.8
WINDOW_MAX_H = 6.0
# Days a fault must be seen on before its pattern is stated (constant ones excepted).
MIN_DAYS = 3
# A condition that starts at the same minute of the day (a break, a nightly job) is
# scheduled, hence routine however short: most starts within SCHEDULE_MIN minutes, on
# SCHEDULE_DAYS days or more (a few days at one time may be a coincidence) and on
# SCHEDULE_SHARE of the days it could have been (a schedule does not skip days; a fault
# that happens to start at one time does).
SCHEDULE_MIN = 5.0
SCHEDULE_DAYS = 7
SCHEDULE_SHARE = 0.9
# Bad runs of one status this close together are one episode that flips between bad and
# OK; an episode of FLAP_MIN_FLIPS flips or more is a flapping spell, and a fault most of
# whose episodes are such spells is flapping (how often it flips is what to say).
FLAP_GAP_S = 300.0
FLAP_MIN_FLIPS = 5
# By how much: at most MAX_VALUES values whose range while bad lies outside their OK range,
# by at least MIN_APART of the OK range's width or of VALUE_SHARE of its value if more
# (a value that is steady when OK still varies by that much without being off).
MAX_VALUES = 2
MIN_APART = 0.05
VALUE_SHARE = 0.1
MAX_RANGES = 4 * KEEP_DAYS
# Keys that name a thing rather than measure it, or count since start-up: never compared.
_NOT_MEASURES = ('id', 'serial', 'uuid', 'address', 'port', 'pid', 'since', 'total',
                 'stamp', 'timestamp', 'time', 'date', 'count', 'seq', 'version', 'index')


def _ranges(data) -> dict:
    return {str(key): [float(pair[0]), float(pair[1])] for key, pair in dict(data).items()}


@dataclasses.dataclass
class History:
    """Recent episodes of one signature: ``[start, end, count, flips]``, oldest first."""

    episodes: list = dataclasses.field(default_factory=list)
    text: str = ''  # the last text the dream generated (a person's reword differs)
    # Per dream with numeric values: [dream time, bad ranges, its status's OK ranges],
    # each {value key: [min, max]}, for KEEP_DAYS (what ``by_how_much`` states).
    ranges: list = dataclasses.field(default_factory=list)
    # The release key (rcan.untrusted) of the held text last proposed for release.
    held: str = ''
    # The judgement ("routine"/"constant" and the rule text) last proposed to a person.
    normal: str = ''

    @classmethod
    def from_json(cls, text: Optional[str]) -> 'History':
        """Return the history stored as ``text`` (empty for '' or anything unreadable)."""
        try:
            data = json.loads(text) if text else {}
            episodes = [[float(item[0]), float(item[1]), int(item[2]),
                         int(item[3]) if len(item) > 3 else 1]
                        for item in data.get('episodes', ())]
            ranges = [[float(item[0]), _ranges(item[1]), _ranges(item[2])]
                      for item in data.get('ranges', ())]
            return cls(episodes, str(data.get('text', '')), ranges, str(data.get('held', '')),
                       str(data.get('normal', '')))
        except (TypeError, ValueError, AttributeError, IndexError):
            return cls()

    def to_json(self) -> str:
        """Return the history as compact JSON (what the signatures table keeps)."""
        data: dict = {'episodes': self.episodes, 'text': self.text}
        if self.ranges:
            data['ranges'] = self.ranges
        if self.held:
            data['held'] = self.held
        if self.normal:
            data['normal'] = self.normal
        return json.dumps(data, separators=(',', ':'), ensure_ascii=False)

    def add_ranges(self, now_s: float, bad: Optional[dict], ok: Optional[dict]) -> None:
        """Keep a dream's numeric value ranges: the signature's while bad, its status's OK."""
        if bad:
            self.ranges.append([now_s, bad, ok or {}])
        horizon = now_s - KEEP_DAYS * 86400.0
        self.ranges = [item for item in self.ranges if item[0] >= horizon][-MAX_RANGES:]

    def add(self, episodes: list, now_s: float, gap_s: float = GAP_S,
            last_ok: Optional[float] = None, flap_gap_s: float = 0.0) -> None:
        """
        Merge new episodes ``[start, end, count, opens]`` (time order) into the history.

        One that ``opens`` its window continues the last episode when it is within
        ``gap_s`` of it and the source's ``last_ok`` report is not after it; one that
        starts within ``flap_gap_s`` (a status's: FLAP_GAP_S) of the last episode's end
        joins it as one more flip.
        """
        for start, end, count, opens in sorted(episodes):
            last = self.episodes[-1] if self.episodes else None
            if (last is not None and opens and 0 <= start - last[1] <= gap_s
                    and (last_ok is None or last_ok <= last[1])):
                last[1], last[2] = max(last[1], end), last[2] + count
            elif last is not None and 0 <= start - last[1] <= flap_gap_s:
                last[1], last[2], last[3] = max(last[1], end), last[2] + count, last[3] + 1
            else:
                self.episodes.append([start, end, count, 1])
        horizon = now_s - KEEP_DAYS * 86400.0
        self.episodes = [item for item in self.episodes if item[1] >= horizon]
        while len(self.episodes) > MAX_EPISODES:  # join the two oldest
            first, second = self.episodes[0], self.episodes.pop(1)
            first[1], first[2] = second[1], first[2] + second[2]
            first[3] += second[3]


@dataclasses.dataclass(frozen=True)
class Description:
    """A label (one of LABELS) and the phrase that states the pattern."""

    label: str
    phrase: str


def _zone(name: str):
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return dt.timezone.utc


def duration_text(seconds: float) -> str:
    """Return ``seconds`` as people say it: 40 s, 12 min, 3 h, 2 days."""
    if seconds < 90:
        return f'{max(1, round(seconds))} s'
    if seconds < 90 * 60:
        return f'{round(seconds / 60)} min'
    if seconds < 36 * 3600:
        return f'{round(seconds / 3600)} h'
    return f'{round(seconds / 86400)} days'


def zone_offset(now: dt.datetime, timezone: str) -> str:
    """
    Return the robot's time zone at ``now`` as its offset, ``UTC-4`` or ``UTC+5:30``.

    Shorter than the zone's name on every line of a block (an offset is also unambiguous,
    where an abbreviation such as IST is not); times are the robot's local time.
    """
    offset = now.astimezone(_zone(timezone)).utcoffset() or dt.timedelta(0)
    minutes = round(offset.total_seconds() / 60)
    if not minutes:
        return 'UTC'
    sign, minutes = ('+' if minutes > 0 else '-'), abs(minutes)
    return f'UTC{sign}{minutes // 60}' + (f':{minutes % 60:02d}' if minutes % 60 else '')


def _window(starts: list, durations: list, max_h: float = WINDOW_MAX_H) -> Optional[tuple]:
    """Return the smallest arc of the day (minutes) with WINDOW_SHARE of the starts, or None."""
    minutes = sorted(starts)
    n = len(minutes)
    need = max(1, math.ceil(n * WINDOW_SHARE))
    best = None
    for index in range(n):
        stop = minutes[(index + need - 1) % n] + (1440 if index + need - 1 >= n else 0)
        width = stop - minutes[index]
        if best is None or width < best[1] - best[0]:
            best = (minutes[index], stop)
    if best is None or best[1] - best[0] > max_h * 60:
        return None
    return best[0], best[1] + statistics.median(durations) / 60.0


def _clock(minutes: float) -> str:
    minutes = int(round(minutes)) % 1440
    return f'{minutes // 60:02d}:{minutes % 60:02d}'


def describe(history: History, now: dt.datetime, timezone: str = 'UTC',
             ok_since_first: bool = True) -> Optional[Description]:
    """
    Return the pattern of ``history`` at ``now`` in the robot's ``timezone``, or None.

    ``ok_since_first`` says whether the source has reported OK since the fault was first
    seen; one episode of six hours or more that never let go and is still going is
    constant. Anything else needs MIN_DAYS days seen (None before: the rule's text says
    enough). Only episodes that started by ``now`` count: evidence stamped after the
    dream's own time (a clock ahead, a recording replayed) would make the counts contradict
    themselves ("on 5 of the last 2 days").
    """
    now_s = now.timestamp()
    episodes = [item for item in history.episodes if item[0] <= now_s]
    if not episodes:
        return None
    zone = _zone(timezone)
    offset = zone_offset(now, timezone)
    local = [(dt.datetime.fromtimestamp(item[0], zone), item[1] - item[0]) for item in episodes]
    length = episodes[-1][1] - episodes[-1][0]
    if (len(episodes) == 1 and not ok_since_first and length >= CONSTANT_MIN_S
            and now_s - episodes[0][1] <= max(3600.0, length / 10.0)):
        since = local[0][0]
        return Description('constant', f'constant since {since:%Y-%m-%d %H:%M} {offset}')
    days_seen = sorted({start.date() for start, _ in local})
    if len(days_seen) < MIN_DAYS:
        return None  # too early to say more than the rule's text does
    today = dt.datetime.fromtimestamp(now_s, zone).date()
    span_days = min(KEEP_DAYS, (today - local[0][0].date()).days + 1)
    durations = [max(0.0, length) for _, length in local]
    typical = statistics.median(durations)
    how_long = f'typically {duration_text(typical)}' if typical >= 1 else 'brief'
    starts = [start.hour * 60 + start.minute + start.second / 60.0 for start, _ in local]
    window = _window(starts, durations)
    weekdays = _weekdays_only(days_seen, local[0][0].date(), today)
    possible = span_days if not weekdays else sum(
        1 for offset in range(span_days) if (today - dt.timedelta(days=offset)).weekday() < 5)
    if days_seen[-1] != today and (not weekdays or today.weekday() < 5):
        possible -= 1  # today is not over
    share = len(days_seen) / max(1, possible)
    days = f'on {len(days_seen)} of the last {span_days} days'
    # Once a day: the count says nothing the days do not ("22 times on 22 of ..." is long).
    times = f'{len(episodes)} times {days}' if len(episodes) > len(days_seen) else days
    when = (f', usually {_clock(window[0])}-{_clock(window[1])} {offset}'
            if window is not None else '')
    flips = [item[3] for item in episodes]
    spells = [item for item in flips if item >= FLAP_MIN_FLIPS]
    if len(spells) * 2 >= len(flips):
        rate = statistics.median(spells)
        return Description('flapping', f'about {round(rate)} flips in {duration_text(typical)}, '
                                       f'{times}{when}')
    scheduled = (window is not None and len(days_seen) >= SCHEDULE_DAYS
                 and share >= SCHEDULE_SHARE
                 and _window(starts, [0.0] * len(starts), SCHEDULE_MIN / 60.0) is not None)
    if window is not None and (typical >= ROUTINE_MIN_S or scheduled) \
            and share >= ROUTINE_DAY_SHARE:
        every = 'weekdays' if weekdays else 'daily'
        return Description('routine', f'{every} {_clock(window[0])}-{_clock(window[1])} '
                                      f'{offset}, {days}, {how_long}')
    return Description('intermittent', f'{times}{when}, {how_long}')


def _weekdays_only(days_seen: list, first: dt.date, today: dt.date) -> bool:
    """Whether a fault seen over two weekends or more was never seen on one."""
    weekends = sum(1 for offset in range((today - first).days + 1)
                   if (first + dt.timedelta(days=offset)).weekday() == 5)
    return weekends >= 2 and all(day.weekday() < 5 for day in days_seen)


def entry_text(base: str, description: Optional[Description]) -> str:
    """Return the entry text: the label first, then the rule text, then the pattern."""
    if description is None:
        return base
    return f'{description.label.capitalize()}: {base} - {description.phrase}'


# A diagnostic's name as the default rule words it: '<node>: <status> (<hardware id>) reports'.
_NODE_NAME = re.compile(r'^(?P<node>[^\s:()]+): (?P<rest>[^()]+?) \((?P<hardware>[^()]+)\)'
                        r'(?= reports )')
_NOT_ALNUM = re.compile(r'[^a-z0-9]')


def without_node(text: str) -> str:
    """
    Return a dream's text without the node prefix that only repeats the hardware id.

    ``turtlebot4_diagnostics: Battery Percentage (Turtlebot4) reports ...`` is
    ``Battery Percentage (Turtlebot4) reports ...``: the id's letters and digits are in the
    node's name (three or more of them), so the prefix says nothing the id does not, and
    costs the brain six tokens a line. Any other text is returned as it is.
    """
    match = _NODE_NAME.match(text)
    if match is None:
        return text
    hardware = _NOT_ALNUM.sub('', match['hardware'].lower())
    if len(hardware) < 3 or hardware not in _NOT_ALNUM.sub('', match['node'].lower()):
        return text
    return text[len(match['node']) + 2:]


def rule_text(text: str) -> str:
    """Return the rule's text an entry text was restated from (``text`` itself if it was not)."""
    for label in LABELS + FACT_LABELS:
        prefix = f'{label.capitalize()}: '
        if text.startswith(prefix) and ' - ' in text:
            text = text[len(prefix):].rsplit(' - ', 1)[0]
            break
    return text.split(' (together with ', 1)[0]


def _merged_ranges(items: list) -> dict:
    found: dict = {}
    for ranges in items:
        for key, (low, high) in ranges.items():
            pair = found.setdefault(key, [low, high])
            pair[0], pair[1] = min(pair[0], low), max(pair[1], high)
    return found


def _number(value: float) -> str:
    """Return ``value`` with three significant digits, never in exponent form."""
    if value == 0 or not math.isfinite(value):
        return '0' if value == 0 else str(value)
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f'{round(value, digits):.{digits}f}'
    return text.rstrip('0').rstrip('.') if '.' in text else text


def _measures(key: str) -> bool:
    words = ''.join(char if char.isalnum() else ' ' for char in key.lower()).split()
    return not any(word in _NOT_MEASURES for word in words)


def by_how_much(history: History) -> str:
    """
    Return how far the status's own values were off while bad, or '' (nothing to say).

    ``Actual frequency (Hz) 3.1-4.6 against 7.9``: the range of a value over the bad
    reports kept (``History.ranges``) against its range in the status's OK reports. Only
    values with an OK range, that measure something (not an id, a counter or a time), and
    whose bad range lies outside the OK range; the MAX_VALUES furthest off, relative to
    the OK range.
    """
    bad = _merged_ranges([item[1] for item in history.ranges])
    ok = _merged_ranges([item[2] for item in history.ranges])
    found = []
    for key in sorted(set(bad) & set(ok)):
        (low, high), (ok_low, ok_high) = bad[key], ok[key]
        gap = max(ok_low - high, low - ok_high)
        scale = max(ok_high - ok_low, VALUE_SHARE * abs(ok_low + ok_high) / 2.0, 1e-9)
        if _measures(key) and gap > 0 and gap >= MIN_APART * scale:
            found.append((-gap / scale, key))
    phrases = []
    for _, key in sorted(found)[:MAX_VALUES]:
        (low, high), (ok_low, ok_high) = bad[key], ok[key]
        while_bad = _number(low) if _number(low) == _number(high) else \
            f'{_number(low)}-{_number(high)}'
        normal = _number(ok_low) if _number(ok_low) == _number(ok_high) else \
            f'{_number(ok_low)}-{_number(ok_high)}'
        phrases.append(f'{key} {while_bad} against {normal}')
    return ', '.join(phrases)
