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

"""How a fault's episodes read: constant, routine, intermittent, once."""

import datetime as dt
import re
import zoneinfo

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from robot_memory.dream.cooccurrence import ok_states
from robot_memory.dream.cooccurrence import only_while
from robot_memory.dream.pattern import by_how_much
from robot_memory.dream.pattern import describe
from robot_memory.dream.pattern import Description
from robot_memory.dream.pattern import duration_text
from robot_memory.dream.pattern import entry_text
from robot_memory.dream.pattern import FLAP_GAP_S
from robot_memory.dream.pattern import GAP_S
from robot_memory.dream.pattern import History
from robot_memory.dream.pattern import KEEP_DAYS
from robot_memory.dream.pattern import LABELS
from robot_memory.dream.pattern import rule_text
from robot_memory.dream.pattern import zone_offset
from robot_memory.dream.restate import short_name
from robot_memory.rcan.context import is_condition

TORONTO = 'America/Toronto'
ZONE = zoneinfo.ZoneInfo(TORONTO)
DAY0 = dt.datetime(2026, 6, 1, tzinfo=ZONE)


def at(day: int, hours: float) -> float:
    """UNIX seconds of ``hours`` after local midnight of ``day``."""
    return (DAY0 + dt.timedelta(days=day, hours=hours)).timestamp()


def now(day: int, hours: float = 3.0) -> dt.datetime:
    return (DAY0 + dt.timedelta(days=day, hours=hours)).astimezone(dt.timezone.utc)


def history(*episodes) -> History:
    found = History()
    found.add([[a, b, max(1, int(b - a)), 0] for a, b in episodes], episodes[-1][1])
    return found


def test_a_fault_that_never_let_go_is_constant_since_its_start():
    found = describe(history((at(0, 8), at(9, 2.9))), now(9), TORONTO, ok_since_first=False)
    assert found.label == 'constant'
    assert found.phrase == 'constant since 2026-06-01 08:00 UTC-4'


def test_the_same_run_with_ok_reports_between_is_not_constant():
    found = describe(history((at(0, 8), at(9, 2.9))), now(9), TORONTO, ok_since_first=True)
    assert found is None or found.label != 'constant'


def test_docked_every_night_is_routine_with_its_local_window():
    nights = [(at(day, 22), at(day + 1, 7)) for day in range(14)]
    found = describe(history(*nights), now(15), TORONTO)
    assert found.label == 'routine'
    assert found.phrase == 'daily 22:00-07:00 UTC-4, on 14 of the last 16 days, ' \
                           'typically 9 h'
    assert is_condition(entry_text('Wheel Status reports WARN: Disabled', found))


def test_a_short_fault_late_each_afternoon_is_intermittent_with_its_window():
    # A battery runs low late each working afternoon, give or take a quarter of an hour.
    weekdays = [(at(day, 16.5 + (day * 7 % 5 - 2) / 8), at(day, 17.25 + (day * 7 % 5 - 2) / 8))
                for day in range(14) if (DAY0 + dt.timedelta(days=day)).weekday() < 5]
    found = describe(history(*weekdays), now(14), TORONTO)
    assert found.label == 'intermittent'
    assert not is_condition(entry_text('Battery Percentage reports WARN: Low', found))
    assert found.phrase == (f'on {len(weekdays)} of the last 15 days, '
                            'usually 16:15-17:22 UTC-4, typically 45 min')


def test_a_stop_at_the_same_minute_every_working_day_is_routine_on_weekdays():
    # A protective stop for the lunch break: 45 minutes, same minute, never at weekends.
    weekdays = [(at(day, 12), at(day, 12.75)) for day in range(21)
                if (DAY0 + dt.timedelta(days=day)).weekday() < 5]
    found = describe(history(*weekdays), now(21), TORONTO)
    assert found == found.__class__('routine', 'weekdays 12:00-12:45 UTC-4, on 15 of '
                                               'the last 22 days, typically 45 min')
    assert is_condition(entry_text('Safety mode reports WARN: PROTECTIVE_STOP', found))
    # The same minute on a few days only is not a routine: it is a fault with a window.
    rare = describe(history(*weekdays[::4]), now(21), TORONTO)
    assert rare.label == 'intermittent' and 'usually 12:00-12:45' in rare.phrase
    # Before two weekends have passed, a schedule of weekdays is not told from chance.
    assert describe(history(*weekdays[:7]), now(9), TORONTO).label == 'intermittent'
    # Every day at one minute for a week and more is a daily schedule.
    every_day = [(at(day, 2), at(day, 2.25)) for day in range(10)]
    assert describe(history(*every_day), now(10), TORONTO).phrase.startswith(
        'daily 02:00-02:15 UTC-4, on 10 of the last 11 days')
    # A fault at one minute that skips days is not a schedule.
    skipping = [(at(day, 2), at(day, 2.25)) for day in range(20) if day % 3]
    assert describe(history(*skipping), now(20), TORONTO).label == 'intermittent'


def flaps(day: int, hours: float, minutes: float, every_s: float) -> list:
    """Return the episodes of a status bad for ``every_s`` then OK, for ``minutes``."""
    start = at(day, hours)
    return [[start + second, start + second + every_s - 1, 1, int(second == 0)]
            for second in range(0, int(minutes * 60), int(2 * every_s))]


def test_a_status_that_flaps_is_labelled_flapping_with_how_often():
    found = History()
    for day in range(6):
        found.add(flaps(day, 21.5, 15, 3), at(day, 22), flap_gap_s=FLAP_GAP_S)
    assert [item[3] for item in found.episodes] == [150] * 6  # one spell a night
    described = describe(found, now(6), TORONTO)
    assert described == described.__class__(
        'flapping', 'about 150 flips in 15 min, on 6 of the last 7 days, usually '
                    '21:30-21:45 UTC-4')
    assert rule_text(entry_text('Dock Status reports WARN: Dock not visible', described)) == \
        'Dock Status reports WARN: Dock not visible'
    assert History.from_json(found.to_json()) == found


def test_two_bad_runs_minutes_apart_are_one_episode_not_flapping():
    found = History()
    for day in range(4):
        start = at(day, 9 + day * 1.7)
        found.add([[start, start + 60, 6, 1], [start + 240, start + 300, 6, 0]], start + 3600,
                  flap_gap_s=FLAP_GAP_S)
    assert [item[3] for item in found.episodes] == [2] * 4
    assert describe(found, now(4), TORONTO).label == 'intermittent'
    # A log's bursts never flip: without flap_gap_s they stay apart.
    logs = History()
    logs.add([[at(0, 9), at(0, 9) + 60, 6, 1], [at(0, 9) + 240, at(0, 9) + 300, 6, 0]], at(0, 10))
    assert len(logs.episodes) == 2


def test_scattered_faults_have_no_window():
    episodes = [(at(day, hour), at(day, hour) + 120) for day, hour in
                ((0, 1), (2, 9), (3, 15), (5, 20), (8, 4), (9, 12))]
    found = describe(history(*episodes), now(10), TORONTO)
    assert found == found.__class__('intermittent', 'on 6 of the last 11 days, '
                                                    'typically 2 min')


def test_a_one_off_or_a_fault_of_two_days_is_not_described_yet():
    assert describe(history((at(4, 11.2), at(4, 11.2) + 2)), now(6), TORONTO) is None
    two_days = [(at(day, hour), at(day, hour) + 60) for day in (3, 4) for hour in (9, 10, 11)]
    assert describe(history(*two_days), now(6), TORONTO) is None


def test_the_time_zone_moves_the_window():
    nights = [(at(day, 22), at(day + 1, 7)) for day in range(7)]
    assert describe(history(*nights), now(8), 'UTC').phrase.startswith('daily 02:00-11:00 UTC,')
    # A zone that does not exist is UTC, and says so rather than naming the unknown zone.
    assert describe(history(*nights), now(8), 'Not/AZone').phrase.startswith(
        'daily 02:00-11:00 UTC,')


def test_episodes_close_together_join_and_old_ones_leave():
    found = History()
    found.add([[at(0, 1), at(0, 1) + 10, 10, 1]], at(0, 2))
    found.add([[at(0, 1) + 10 + GAP_S, at(0, 1) + 200, 5, 1]], at(0, 2))
    assert found.episodes == [[at(0, 1), at(0, 1) + 200, 15, 1]]
    # Not when the source reported OK between, nor when it does not open its window.
    found.add([[at(0, 1) + 210, at(0, 1) + 220, 2, 1]], at(0, 2), last_ok=at(0, 1) + 205)
    found.add([[at(0, 1) + 230, at(0, 1) + 240, 2, 0]], at(0, 2))
    assert len(found.episodes) == 3
    found.add([[at(40, 1), at(40, 2), 60, 1]], at(40, 3))
    assert found.episodes == [[at(40, 1), at(40, 2), 60, 1]]
    # A history written before flips were counted reads as one flip an episode.
    assert History.from_json('{"episodes":[[1,2,3]]}').episodes == [[1.0, 2.0, 3, 1]]
    assert History.from_json(found.to_json()) == found
    assert History.from_json('not json') == History() and History.from_json('') == History()


def test_entry_text_puts_the_label_first():
    base = 'joy_linux_node: Joystick Driver Status (none) reports ERROR: Joystick not open.'
    found = describe(history((at(0, 0), at(3, 0))), now(3), 'UTC', ok_since_first=False)
    assert is_condition(entry_text(base, found))
    assert entry_text(base, found) == (
        f'Constant: {base} - constant since 2026-06-01 04:00 UTC')
    assert entry_text(base, None) == base


def test_durations_read_as_people_say_them():
    assert [duration_text(value) for value in (0.2, 40, 700, 3 * 3600, 3 * 86400)] == \
        ['1 s', '40 s', '12 min', '3 h', '3 days']


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 29), st.floats(0, 23.9), st.floats(1, 20000)),
                min_size=1, max_size=60), st.booleans(), st.sampled_from([TORONTO, 'UTC']))
def test_any_history_is_described_deterministically(items, ok, zone):
    episodes = sorted((at(day, hour), at(day, hour) + length) for day, hour, length in items)
    first, second = history(*episodes), history(*episodes)
    found = describe(first, now(31), zone, ok)
    assert found == describe(second, now(31), zone, ok)
    days = {dt.datetime.fromtimestamp(start, zoneinfo.ZoneInfo(zone)).date()
            for start, _ in episodes}
    if found is None:
        assert len(days) < 3 or not first.episodes
    else:
        assert found.label in LABELS and found.phrase and '\n' not in found.phrase


def test_the_rule_text_is_recovered_from_a_restated_text():
    base = 'behavior_server logs ERROR repeatedly: Goal 1 aborted: Collision Ahead - Exiting'
    found = describe(history(*[(at(day, 9), at(day, 9) + 5) for day in range(4)]), now(5), 'UTC')
    assert rule_text(entry_text(base, found)) == base
    assert rule_text(entry_text(base + ' (together with dock: status: Battery critical)',
                                found)) == base
    assert rule_text('Battery runs low late afternoon') == 'Battery runs low late afternoon'


def test_a_fault_that_happens_only_while_docked_says_so():
    # Issue 38, point 7: docked must tell something the time of day does not. On odd days
    # the robot works until 01:00; the fault comes at 23:00 only on the nights it is docked.
    docked = [[at(day, 22 if day % 2 == 0 else 25), at(day + 1, 7), 1, 1] for day in range(10)]
    wheels = [[at(day, 23), at(day, 23.5), 1, 1] for day in range(0, 10, 2)]
    states = {'dock reports Docked': docked, 'lidar reports Frequency too low.':
              [[at(day, 10), at(day, 10.2), 1, 1] for day in range(10)]}
    assert only_while(wheels, states, at(10, 8)) == 'dock reports Docked'
    # Docked every night at 23:00: the fault's own hours say it all, "docked" says nothing.
    every_night = [[at(day, 22), at(day + 1, 7), 1, 1] for day in range(10)]
    nightly = [[at(day, 23), at(day, 23.5), 1, 1] for day in range(10)]
    assert only_while(nightly, {'dock reports Docked': every_night}, at(10, 8)) is None


def test_a_fault_that_merely_overlaps_a_state_once_is_not_only_while():
    docked = [[at(day, 22), at(day + 1, 7), 1, 1] for day in range(10)]
    faults = [[at(day, 14), at(day, 14.5), 1, 1] for day in range(9)] + \
        [[at(9, 23), at(9, 23.5), 1, 1]]
    assert only_while(faults, {'dock reports Docked': docked}, at(10, 8)) is None
    # Nor with too few episodes to tell, nor with a state that is always there.
    assert only_while(faults[-2:], {'dock reports Docked': docked}, at(10, 8)) is None
    always = [[at(0, 0), at(10, 8), 1, 1]]
    assert only_while(faults, {'gps reports No fix': always}, at(10, 8)) is None


def test_with_what_picks_the_state_that_covers_most_then_holds_least():
    # Both states hold only on even days, as the fault does (so both tell something).
    faults = [[at(day, 23), at(day, 23.2), 1, 1] for day in range(0, 10, 2)]
    night = [[at(day, 20), at(day + 1, 6), 1, 1] for day in range(0, 10, 2)]
    late = [[at(day, 22.5), at(day, 23.5), 1, 1] for day in range(0, 10, 2)]
    assert only_while(faults, {'a night': night, 'b late': late}, at(10, 8)) == 'b late'


def test_the_state_must_hold_before_the_fault_starts():
    wheels = [[at(day, 22), at(day + 1, 7), 1, 1] for day in range(10)]
    lidar = [[at(day, 22.05), at(day + 1, 6.95), 1, 1] for day in range(10)]
    assert only_while(lidar, {'wheels reports Disabled': wheels}, at(10, 8)) == \
        'wheels reports Disabled'
    assert only_while(wheels, {'lidar reports No events recorded.': lidar}, at(10, 8)) is None


FREQUENCY = 'Actual frequency (Hz)'


def with_ranges(*nights) -> History:
    """Return a history whose dreams saw ``(bad ranges, OK ranges)``, one a night."""
    found = History()
    for night, (bad, ok) in enumerate(nights):
        found.add_ranges(at(night, 7), bad, ok)
    return found


def test_by_how_much_states_the_bad_range_against_the_normal_one_over_the_nights():
    found = with_ranges(({FREQUENCY: [3.6, 4.6], 'Target frequency (Hz)': [8.0, 8.0]},
                         {FREQUENCY: [7.9, 7.9], 'Target frequency (Hz)': [8.0, 8.0]}),
                        ({FREQUENCY: [3.1, 4.2]}, {FREQUENCY: [7.85, 7.95]}))
    assert by_how_much(found) == 'Actual frequency (Hz) 3.1-4.6 against 7.85-7.95'
    assert History.from_json(found.to_json()) == found


def test_by_how_much_says_nothing_when_the_values_do_not_differ():
    # The bad range overlaps the OK one: the value is no sign of the fault.
    assert by_how_much(with_ranges(({'voltage': [15.2, 15.8]}, {'voltage': [15.5, 16.6]}))) == ''
    # A value with no OK range (the status was never OK) has nothing to be compared with.
    assert by_how_much(with_ranges(({'voltage': [11.0, 11.2]}, {}))) == ''
    # Identifiers, counters and times differ between any two reports: never compared.
    assert by_how_much(with_ranges(({'Serial number': [7.0, 7.0], 'Events since startup':
                                     [900.0, 990.0], 'Last timestamp': [5.0, 6.0]},
                                    {'Serial number': [3.0, 3.0], 'Events since startup':
                                     [0.0, 800.0], 'Last timestamp': [1.0, 2.0]}))) == ''
    # A difference of a hair (a rounding) is no difference.
    assert by_how_much(with_ranges(({'voltage': [15.91, 15.91]}, {'voltage': [15.9, 15.9]}))) \
        == ''
    assert by_how_much(History()) == ''


def test_by_how_much_names_at_most_two_values_the_furthest_off_first():
    found = with_ranges(({'temperature': [81.0, 96.0], 'current': [4.2, 4.4], 'voltage':
                          [47.0, 47.0]},
                         {'temperature': [30.0, 55.0], 'current': [2.0, 4.0], 'voltage':
                          [48.0, 52.0]}))
    assert by_how_much(found) == 'temperature 81-96 against 30-55, voltage 47 against 48-52'


def test_value_ranges_older_than_the_history_are_forgotten():
    found = with_ranges(({'voltage': [10.0, 10.0]}, {'voltage': [16.0, 16.0]}))
    found.add_ranges(at(KEEP_DAYS + 2, 7), {'voltage': [14.0, 14.0]}, {'voltage': [16.0, 16.0]})
    assert by_how_much(found) == 'voltage 14 against 16'
    found.add_ranges(at(KEEP_DAYS + 3, 7), None, {'voltage': [1.0, 1.0]})  # no bad values
    assert by_how_much(found) == 'voltage 14 against 16'


def test_the_time_zone_reads_as_its_offset_at_the_dream():
    summer, winter = now(0), now(200)
    assert (zone_offset(summer, TORONTO), zone_offset(winter, TORONTO)) == ('UTC-4', 'UTC-5')
    assert zone_offset(summer, 'Asia/Kolkata') == 'UTC+5:30'
    assert zone_offset(summer, 'UTC') == zone_offset(summer, 'No/Such_Zone') == 'UTC'


def test_a_name_drops_only_the_node_it_shares_with_the_entry():
    own = 'turtlebot4_diagnostics: Battery Percentage'
    assert short_name('turtlebot4_diagnostics: Wheel Status reports Disabled', own) == \
        'Wheel Status reports Disabled'
    assert short_name('charger: status reports Charging', own) == \
        'charger: status reports Charging'
    assert short_name('Wheel Status reports Disabled', own) == 'Wheel Status reports Disabled'


DOCK = 'diagnostic|base|dock: status'


def dock(stamp, docked, severity=0, message='OK'):
    payload = '{"message":"%s","values":{"Is docked":"%s"}}' % (message, docked)
    return (DOCK, stamp, stamp, severity, payload if severity == 0 else '{"rule":""}')


def test_ok_reports_hold_their_state_until_the_next_report_says_otherwise():
    rows = [dock(0, 'False'), dock(900, 'False'), dock(1000, 'True'), dock(1900, 'True'),
            dock(2000, 'True', 1, 'Dock lost'), dock(2100, 'True'), dock(9000, 'True')]
    found = ok_states(rows, 3600.0)
    # The message never changes: no state. A bad report ends one, a silence over the gap too.
    assert found == {'dock: status reports Is docked: False': (DOCK, [[0, 1000]]),
                     'dock: status reports Is docked: True': (DOCK, [[1000, 2000], [2100, 2100],
                                                                     [9000, 9000]])}
    assert ok_states([dock(0, 'True'), dock(900, 'True')], 3600.0) == {}  # never changes


def test_counts_never_include_evidence_stamped_after_the_dream():
    # Issue 38, point 6: logged 20 times over 5 days, described by a dream on the second
    # day, the text said "20 times on 5 of the last 2 days".
    found = History()
    found.add([[at(day, 10 + hour), at(day, 10 + hour) + 30, 3, 1]
               for day in range(5) for hour in range(4)], at(4, 20))
    assert len(found.episodes) == 20
    late = describe(found, now(2, 23.0), TORONTO)
    assert late is not None
    assert '12 times on 3 of the last 3 days' in late.phrase
    assert describe(found, now(1, 23.0), TORONTO) is None  # two days seen so far
    full = describe(found, now(4, 23.0), TORONTO)
    assert '20 times on 5 of the last 5 days' in full.phrase
    for day in range(6):
        phrase = (describe(found, now(day, 23.0), TORONTO) or Description('', '')).phrase
        match = re.search(r'on (\d+) of the last (\d+) days', phrase)
        assert match is None or int(match.group(1)) <= int(match.group(2)), phrase
