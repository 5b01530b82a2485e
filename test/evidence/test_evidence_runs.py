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

"""Evidence stored as runs: small at real rates, and every count and time the dream uses exact."""

import datetime as dt
import json
import sqlite3

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from robot_memory.common.sqlite_db import MigrationSet
from robot_memory.common.sqlite_db import open_database
from robot_memory.common.timeutil import UTC
from robot_memory.dream.autodream import dream
from robot_memory.dream.pattern import GAP_S
from robot_memory.dream.pattern import STATUS_GAP_S
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.evidence.migrations import MIGRATIONS
from robot_memory.evidence.observations import diagnostic
from robot_memory.evidence.observations import log
from robot_memory.evidence.runs import renumbered
from robot_memory.evidence.runs import RUN_GAP_S
from support.dream_scenario import Robot

T0 = dt.datetime(2026, 6, 1, tzinfo=UTC)
JOYSTICK = ('joy_linux_node: Joystick Driver Status', 'none')
WHEELS = ('turtlebot4_diagnostics: Wheel Status', 'Turtlebot4')


def joystick(at, rate='4.1', level=2, message='Joystick not open.', docked='True'):
    """Return a joystick status with a numeric value and a state value."""
    return diagnostic(at, JOYSTICK[0], JOYSTICK[1], level, message,
                      [('frequency', rate), ('is_docked', docked)])


def rows(store):
    return store.db.execute('SELECT stamp, coalesce(end_stamp, stamp), count, severity, ranges '
                            'FROM observations ORDER BY id').fetchall()


def test_runs_never_outgrow_an_episode_gap():
    assert 0 < RUN_GAP_S <= min(GAP_S, STATUS_GAP_S)


def test_a_constant_fault_at_1_hz_for_a_day_is_a_handful_of_rows():
    with EvidenceStore(None) as store:
        for second in range(86_400):
            store.add(joystick(T0 + dt.timedelta(seconds=second), f'{3.1 + second % 16 / 10:.1f}'))
            if second % 500 == 0:
                store.flush()
        store.flush()
        stored = rows(store)
        assert len(stored) == 24  # a run never crosses a UTC hour: hourly counts stay exact
        assert sum(row[2] for row in stored) == store.observation_count() == 86_400
        assert [row[2] for row in stored] == [3600] * 24
        upto = store.take_window()
        groups, _ = store.evidence_groups(0, upto)
        [group] = groups.values()
        assert (group.count, group.errors) == (86_400, 86_400)
        assert (group.first, group.last) == (T0.timestamp(), T0.timestamp() + 86_399)
        assert list(store.episodes(0, upto, GAP_S, STATUS_GAP_S).values()) == [
            [[T0.timestamp(), T0.timestamp() + 86_399, 86_400, 1]]]
        ranges = store.value_ranges(0, upto)
        assert ranges.bad == {group.signature: {'frequency': [3.1, 4.6]}}
        assert ranges.bad_by_source == {group.source_key: {'frequency': [3.1, 4.6]}}
        assert ranges.ok == {}


def test_a_state_value_change_starts_a_new_run_and_numbers_do_not():
    with EvidenceStore(None) as store:
        states = ['True'] * 5 + ['False'] * 3 + ['True'] * 2
        for second, docked in enumerate(states):
            store.add(joystick(T0 + dt.timedelta(seconds=second), str(second), docked=docked))
        store.flush()
        assert [(row[2], row[4]) for row in rows(store)] == [
            (5, '{"frequency":[0.0,4.0]}'), (3, '{"frequency":[5.0,7.0]}'),
            (2, '{"frequency":[8.0,9.0]}')]


@pytest.mark.parametrize('change', ['message', 'level', 'gap', 'backwards', 'other key'])
def test_anything_but_a_number_or_the_time_starts_a_new_run(change):
    with EvidenceStore(None) as store:
        store.add(joystick(T0))
        second = {'message': joystick(T0 + dt.timedelta(seconds=1), message='Joystick lost'),
                  'level': joystick(T0 + dt.timedelta(seconds=1), level=1),
                  'gap': joystick(T0 + dt.timedelta(seconds=RUN_GAP_S + 1)),
                  'backwards': joystick(T0 - dt.timedelta(seconds=1))}.get(change)
        if second is None:
            store.add(diagnostic(T0, WHEELS[0], WHEELS[1], 2, 'Joystick not open.'))
        else:
            store.add(second)
        store.flush()
        assert [row[2] for row in rows(store)] == [1, 1]


def test_identical_logs_make_one_run_and_different_ids_do_not():
    with EvidenceStore(None) as store:
        for index in range(1000):  # a storm: 1,000 identical errors in a second
            store.add(log(T0 + dt.timedelta(microseconds=index * 900), 'bt_navigator', 40,
                          'Collision Ahead'))
        for index in range(3):
            store.add(log(T0 + dt.timedelta(seconds=2 + index), 'bt_navigator', 40,
                          f'goal {index}f0a9c2-aborted'))
        store.flush()
        assert [row[2] for row in rows(store)] == [1000, 1, 1, 1]


def test_a_run_a_dream_took_never_grows_and_what_follows_is_counted_once():
    with EvidenceStore(None) as store:
        for second in range(10):
            store.add(joystick(T0 + dt.timedelta(seconds=second)))
        store.flush()
        upto = store.take_window()
        for second in range(10, 25):
            store.add(joystick(T0 + dt.timedelta(seconds=second)))
            if second == 12:
                store.flush()
        store.flush()
        assert [row[2] for row in rows(store)] == [10, 15]
        first, _ = store.evidence_groups(0, upto)
        later, _ = store.evidence_groups(upto, store.take_window())
        assert [group.count for group in first.values()] == [10]
        assert [group.count for group in later.values()] == [15]
        with pytest.raises(sqlite3.IntegrityError, match='append-only'):
            store.db.execute('UPDATE observations SET count = 11 WHERE id = 1')


def test_the_trigger_lets_an_open_run_grow_and_nothing_else():
    with EvidenceStore(None) as store:
        store.add(joystick(T0))
        store.flush()
        store.db.execute('UPDATE observations SET count = 2, end_stamp = stamp + 1, '
                         "ranges = '{}' WHERE id = 1")
        for change in ("payload = 'x'", 'severity = 0', 'stamp = stamp + 1', 'count = 1',
                       'end_stamp = stamp - 1', 'end_stamp = NULL', "signature = 'x'",
                       'id = 7', "source_key = 'x'", "source = 'log'"):
            with pytest.raises(sqlite3.IntegrityError, match='append-only'):
                store.db.execute(f'UPDATE observations SET {change} WHERE id = 1')


def test_ok_reports_keep_their_value_ranges():
    with EvidenceStore(None, ok_heartbeat_s=10) as store:
        for second in range(30):
            store.add(joystick(T0 + dt.timedelta(seconds=second), f'{8 + second / 100}',
                               level=0, message='OK'))
        store.flush()
        ranges = store.value_ranges(0, store.take_window())
        assert ranges.bad == {}
        assert ranges.ok == {f'diagnostic|{JOYSTICK[1]}|{JOYSTICK[0]}': {
            'frequency': [8.0, 8.2]}}


def ok_rows(store):
    return store.db.execute('SELECT stamp, payload FROM observations WHERE severity = 0 '
                            'ORDER BY id').fetchall()


def test_an_ok_change_of_state_is_stored_inside_the_heartbeat():
    with EvidenceStore(None, ok_heartbeat_s=900) as store:
        for second in range(600):  # docked for five minutes, then not, each second
            store.add(joystick(T0 + dt.timedelta(seconds=second), f'{8 + second % 3}', level=0,
                               message='OK', docked='True' if second < 300 else 'False'))
        store.flush()
        found = ok_rows(store)
        # The first report and the change; the same state is thinned, numbers do not count.
        assert [(stamp - T0.timestamp(), json.loads(payload)) for stamp, payload in found] == [
            (0.0, {'message': 'OK', 'values': {'is_docked': 'True'}}),
            (300.0, {'message': 'OK', 'values': {'is_docked': 'False'}})]


def test_an_ok_value_that_flips_every_second_is_not_stored_every_second():
    with EvidenceStore(None, ok_heartbeat_s=900) as store:
        for second in range(600):
            store.add(joystick(T0 + dt.timedelta(seconds=second), level=0, message='OK',
                               docked=('True', 'False')[second % 2]))
        store.flush()
        stamps = [stamp - T0.timestamp() for stamp, _ in ok_rows(store)]
        assert len(stamps) <= 600 / 60 + 1
        assert all(b - a >= 60 for a, b in zip(stamps, stamps[1:]))


def test_an_old_database_keeps_working_its_rows_are_runs_of_one(tmp_path):
    path = tmp_path / 'robot-memory.db'
    old = MigrationSet(MIGRATIONS.name, MIGRATIONS.migrations_table)
    for name, function, transactional in MIGRATIONS.steps:
        if name != '0006_observation_runs':
            old(name=name, transactional=transactional)(function)
    db = open_database(str(path), 10.0, old)
    payload = json.dumps({'rule': '', 'name': JOYSTICK[0], 'hardware_id': JOYSTICK[1],
                          'message': 'Joystick not open.', 'level': 2})
    key = f'diagnostic|{JOYSTICK[1]}|{JOYSTICK[0]}'
    signature = f'{key}|Joystick not open.'
    with db.atomic():
        db.conn.executemany(
            'INSERT INTO observations (stamp, source, signature, source_key, severity, '
            "payload) VALUES (?, 'diagnostic', ?, ?, 2, ?)",
            [(T0.timestamp() + second, signature, key, payload) for second in range(5)])
    db.close()
    with EvidenceStore(path) as store:
        assert '0006_observation_runs' in store.applied_migrations()
        assert [row[1:3] for row in rows(store)] == [
            (T0.timestamp() + second, 1) for second in range(5)]
        for second in range(5, 8):  # later evidence never grows a row written before
            store.add(joystick(T0 + dt.timedelta(seconds=second)))
        store.flush()
        assert [row[2] for row in rows(store)] == [1, 1, 1, 1, 1, 3]
        upto = store.take_window()
        groups, _ = store.evidence_groups(0, upto)
        assert groups[signature].count == 8
        assert store.episodes(0, upto, GAP_S, STATUS_GAP_S) == {
            signature: [[T0.timestamp(), T0.timestamp() + 7, 8, 1]]}
        with pytest.raises(sqlite3.IntegrityError, match='append-only'):
            store.db.execute('UPDATE observations SET count = 2 WHERE id = 1')


# ---------------------------------------------------------------- runs against rows

SOURCES = [JOYSTICK, WHEELS, ('battery: Battery Percentage', 'Turtlebot4')]
MESSAGES = ['Joystick not open.', 'Low', 'Disabled', 'OK']
STEPS = [0.0, 0.5, 1.0, 1.0, 1.0, 30.0, RUN_GAP_S + 1, GAP_S + 1, 1800.0, STATUS_GAP_S + 1]

event = st.one_of(
    st.tuples(st.just('status'), st.sampled_from(range(len(SOURCES))), st.sampled_from([0, 1, 2]),
              st.sampled_from(MESSAGES), st.sampled_from(['True', 'False']),
              st.integers(0, 9), st.sampled_from(STEPS)),
    st.tuples(st.just('log'), st.sampled_from(['Collision Ahead', 'goal 9 aborted']),
              st.sampled_from(STEPS)),
    st.tuples(st.just('flush')),
    st.tuples(st.just('dream')),
)


def _play(robot, events, start) -> list:
    """Feed ``events`` to ``robot``; return what each dream left (file, links, sources)."""
    at, results = start, []
    for item in events:
        kind = item[0]
        if kind == 'status':
            _, source, level, message, docked, rate, step = item
            at += dt.timedelta(seconds=step)
            name, hardware_id = SOURCES[source]
            robot.store.add(diagnostic(at, name, hardware_id, level, message,
                                       [('rate', str(rate)), ('docked', docked)]))
        elif kind == 'log':
            _, message, step = item
            at += dt.timedelta(seconds=step)
            robot.store.add(log(at, 'bt_navigator', 40, message))
        elif kind == 'flush':
            robot.store.flush()
        else:
            at += dt.timedelta(seconds=1)
            report = dream(robot.store, robot.memory, at, robot.rules, config=robot.config)
            results.append(_outcome(robot, report))
    robot.store.compact(at + dt.timedelta(days=30))
    results.append(robot.store.daily_counts())
    results.append(robot.store.observation_count())
    return results


def _outcome(robot, report) -> tuple:
    store = robot.store
    return (robot.memory.path.read_text() if robot.memory.path.exists() else '',
            report.consumed, report.signatures, sorted(report.created),
            sorted(store.signature_rows().items()), sorted(store.source_rows().items()),
            store.db.execute('SELECT at, entry_id, action, reason, detail FROM audit '
                             'ORDER BY id').fetchall())


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(events=st.lists(event, min_size=1, max_size=120))
def test_runs_dream_exactly_what_rows_dream(tmp_path_factory, events):
    directory = tmp_path_factory.mktemp('runs')
    start = T0 + dt.timedelta(minutes=59, seconds=30)  # near an hour boundary
    as_runs = Robot(directory / 'runs')
    as_rows = Robot(directory / 'rows', run_gap_s=None)
    try:
        assert _play(as_runs, events, start) == _play(as_rows, events, start)
    finally:
        as_runs.close()
        as_rows.close()


# The episodes query as SQL window functions, as it stood before episodes_of walked the
# rows in Python (one sort instead of three): the reference the walk must equal.
EPISODES_SQL = (
    'SELECT signature, min(stamp), max(until), sum(count), max(opens) FROM ('
    'SELECT signature, stamp, until, count, severity, opens, sum(fresh) OVER (PARTITION '
    'BY source_key ORDER BY stamp, id) AS episode FROM (SELECT source_key, signature, '
    'stamp, coalesce(end_stamp, stamp) AS until, count, id, severity, '
    'lag(stamp) OVER w IS NULL AS opens, CASE WHEN lag(signature) OVER w IS '
    'signature AND stamp - lag(coalesce(end_stamp, stamp)) OVER w <= CASE WHEN '
    "source = 'log' THEN ? ELSE ? END THEN 0 ELSE 1 END AS fresh FROM observations "
    'WHERE id > ? AND id <= ? WINDOW w AS (PARTITION BY source_key ORDER BY stamp, id))) '
    'WHERE severity > 0 GROUP BY signature, episode ORDER BY signature, 2')

EVIDENCE_ROW = st.tuples(
    st.sampled_from([0, 1, 5, 60, 119, 121, 3599, 3601, -30]),   # step from the last stamp
    st.sampled_from(['log', 'diagnostic']), st.sampled_from(['a', 'b', 'c']),
    st.sampled_from([0, 0, 1, 2]), st.sampled_from([None, '1', '2', 'x']),
    st.sampled_from([None, 0, 10, 100]), st.integers(1, 5))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(EVIDENCE_ROW, max_size=120), st.integers(0, 40))
def test_episodes_equal_the_window_function_query(tmp_path, evidence, after):
    store = EvidenceStore(tmp_path / f'episodes-{len(evidence)}-{after}.db')
    stamp, rows = 1e9, []
    for step, source, key, severity, mark, extra, count in evidence:
        stamp += step
        signature = None if mark is None else f'{key}{mark}' if mark != 'x' else 'x'
        rows.append((stamp, source, signature, key, severity, '',
                     None if extra is None else stamp + extra, count))
    store.db.conn.executemany(
        'INSERT INTO observations (stamp, source, signature, source_key, severity, payload, '
        'end_stamp, count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', rows)
    store.db.conn.commit()
    expected = {}
    for signature, start, end, count, opens in store.db.execute(
            EPISODES_SQL, (GAP_S, STATUS_GAP_S, after, 10**9)).fetchall():
        expected.setdefault(signature, []).append([start, end, count, opens])
    found = store.episodes(after, 10**9, GAP_S, STATUS_GAP_S)
    assert {key: sorted(value) for key, value in found.items()} == \
        {key: sorted(value) for key, value in expected.items()}
    store.close()


RENUMBER_TEXT = st.sampled_from(['1', '2.5', '-0', 'nan', 'inf', '1e400', 'OK', 'ok', '42%',
                                 '１', '1_0', '', '12', '99'])
RENUMBER_VALUES = st.lists(st.tuples(st.sampled_from(['v', 'w', 'x']), RENUMBER_TEXT),
                           max_size=4)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(RENUMBER_VALUES, st.lists(st.tuples(st.integers(0, 3), RENUMBER_TEXT), max_size=3),
       st.sampled_from([0, 1, 2]))
def test_renumbered_evidence_is_what_prepare_gives_or_none(tmp_path, values, changes, level):
    """Only numbers that change keep the identity: the new numbers, or prepare it whole."""
    store = EvidenceStore(tmp_path / 'renumbered.db')
    before = diagnostic(T0, *WHEELS, level, 'Wheels', values)
    after, changed = list(values), set()
    for index, text in changes:
        if values:
            after[index % len(values)] = (values[index % len(values)][0], text)
            changed.add(index % len(values))
    evidence = renumbered(store.prepare(before), after, sorted(changed))
    whole = store.prepare(diagnostic(T0, *WHEELS, level, 'Wheels', after))
    if evidence is not None:
        assert evidence == whole
    keys = [key for key, _ in values]
    if (len(set(keys)) == len(keys) and all(_is_number(values[index][1]) and
                                            _is_number(after[index][1]) for index in changed)):
        assert evidence == whole  # the common case is never prepared whole
    store.close()


def _is_number(text: str) -> bool:
    return text in ('1', '2.5', '-0', '12', '99')
