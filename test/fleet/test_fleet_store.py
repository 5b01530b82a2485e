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

"""The fleet store on SQLite and on a real PostgreSQL server: keep, deduplicate, refuse, report."""

import datetime as dt

import pytest

from robot_memory.cli.main import main
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.fleet_store import MIGRATIONS
from robot_memory.fleet.refusals import FleetError
from robot_memory.fleet.report import build_report
from robot_memory.fleet.report import format_report
from support.fleet import A
from support.fleet import B
from support.fleet import C
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import LIDAR
from support.fleet import NOW

# the fleet's fixtures: robots with keys, store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)

HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


def _receive(store, robot, raw, at=NOW):
    return store.receive(raw, robot.site, robot.rrn, at)


@pytest.fixture
def store(store_url, robots):
    with FleetStore(store_url, robots.trust) as opened:
        yield opened


def test_a_payload_is_kept_with_its_provenance(store, robots):
    ack = _receive(store, robots.a, robots.a.envelope([entry('mem-enc00001', ENCODER)], 7))
    assert (ack.status, ack.rrn, ack.dream_id) == ('stored', A, 7)
    [kept] = store.entries(A)
    assert (kept['entry_id'], kept['text'], kept['status']) == ('mem-enc00001', ENCODER, 'active')
    assert (kept['site'], kept['model'], kept['firmware']) == ('depot-north', 'rover-2', '1.4.0')
    assert kept['last_dream'] == 7 and kept['sent_at'] == NOW.timestamp()
    assert len(kept['payload_signature']) == 88  # base64 of 64 bytes
    assert [robot['rrn'] for robot in store.robots()] == [A]


def test_redelivery_of_a_dream_is_acknowledged_and_never_counted_twice(store, robots):
    raw = robots.a.envelope([entry('mem-enc00001', ENCODER)], 7)
    assert _receive(store, robots.a, raw).status == 'stored'
    again = _receive(store, robots.a, raw, NOW + HOUR)
    assert (again.status, again.acknowledged) == ('duplicate', True)
    later = robots.a.envelope([entry('mem-enc00001', ENCODER, count=9)], 7, at=NOW + HOUR)
    assert _receive(store, robots.a, later, NOW + HOUR).status == 'duplicate'
    assert store.dream_count(A) == 1
    [kept] = store.entries(A)
    assert kept['observation_count'] == 3 and kept['reinforced_at'] is None
    assert sum(store.refusals().values()) == 0


def test_a_new_dream_with_an_old_id_is_kept_after_the_robot_set_its_database_aside(
        store, robots):
    first = robots.a.envelope([entry('mem-enc00001', ENCODER, at=NOW - DAY)], 1,
                              dream_at=NOW - DAY, at=NOW - DAY)
    assert _receive(store, robots.a, first, NOW - DAY).status == 'stored'
    # dream ids start again at 1: a new dream, with its own time, is not a duplicate
    again = robots.a.envelope([entry('mem-enc00001', ENCODER, count=5),
                               entry('mem-lid00001', LIDAR)], 1, dream_at=NOW, at=NOW)
    ack = _receive(store, robots.a, again)
    assert (ack.status, ack.dream_id) == ('stored', 1)
    assert _receive(store, robots.a, again, NOW + HOUR).status == 'duplicate'
    assert store.dream_count(A) == 2
    kept = {row['entry_id']: row for row in store.entries(A)}
    assert kept['mem-enc00001']['observation_count'] == 5
    assert kept['mem-lid00001']['sent_at'] == NOW.timestamp()  # joined to the new dream


def test_an_older_payload_is_refused_as_replayed_and_counted(store, robots):
    new = robots.a.envelope([entry('mem-enc00001', ENCODER, count=5)], 8, at=NOW)
    old = robots.a.envelope([entry('mem-enc00001', ENCODER, count=3)], 7, at=NOW - HOUR)
    assert _receive(store, robots.a, new).status == 'stored'
    ack = _receive(store, robots.a, old)
    assert (ack.status, ack.reason) == ('refused', 'replayed')
    assert 'not after the newest payload kept' in ack.message
    assert store.entries(A)[0]['observation_count'] == 5
    assert store.refusals()['replayed'] == 1


def test_every_refusal_is_counted_by_reason_and_shown_by_the_report(store, robots):
    good = robots.a.envelope([entry('mem-enc00001', ENCODER)], 1)
    _receive(store, robots.a, b'not json')
    store.receive(good, 'depot-north', B, NOW)
    store.receive(good, 'depot-north', B, NOW)
    assert store.refusals() == {'unsigned': 0, 'forged': 0, 'replayed': 0, 'unknown_robot': 0,
                                'wrong_key': 2, 'oversized': 0, 'malformed': 1,
                                'unsigned_lesson': 0}
    assert store.robots() == []
    text = format_report(build_report(store, NOW))
    assert 'Refused payloads: unsigned 0, forged 0, replayed 0, unknown_robot 0, wrong_key 2' \
        in text
    assert 'wrong_key: published under a key expression naming another robot' in text


def test_migrations_are_recorded_once_and_reopening_changes_nothing(store_url, robots):
    with FleetStore(store_url, robots.trust) as store:
        _receive(store, robots.a, robots.a.envelope([entry('mem-enc00001', ENCODER)], 1))
    with FleetStore(store_url, robots.trust) as store:
        names = [row['name'] for row in store.db.rows('SELECT name FROM fleet_migrations')]
        assert names == [name for name, _ in MIGRATIONS]
        assert store.dream_count() == 1


def test_dreams_older_than_the_retention_are_deleted_and_entries_stay(store_url, robots):
    with FleetStore(store_url, robots.trust, retention_days=2.0) as store:
        _receive(store, robots.a, robots.a.envelope([entry('mem-enc00001', ENCODER)], 1))
        later = NOW + 3 * DAY
        _receive(store, robots.a, robots.a.envelope(
            [entry('mem-enc00001', ENCODER, count=4, at=later)], 2, at=later), later)
        assert [row['dream_id'] for row in store.db.rows('SELECT dream_id FROM fleet_dreams')] \
            == [2]
        assert store.db.value('SELECT count(*) FROM fleet_dream_entries WHERE dream_id = 1') == 0
        assert store.entries(A)[0]['observation_count'] == 4


def _fleet_week(store, robots):
    """Give A encoder and lidar, B the encoder it later resolves, C the encoder reinforced."""
    start = NOW - 6 * DAY
    lidar = entry('mem-lidar001', LIDAR, entry_type='environment_note', at=start)
    for robot in (robots.a, robots.b, robots.c):
        _receive(store, robot, robot.envelope(
            [entry('mem-enc00001', ENCODER, at=start)] + [lidar] * (robot is robots.a), 1,
            at=start), start)
    _receive(store, robots.b, robots.b.envelope([], 2, at=NOW - DAY), NOW - DAY)
    _receive(store, robots.c, robots.c.envelope(
        [entry('mem-enc00001', ENCODER, count=6, at=NOW - HOUR)], 2, at=NOW - HOUR),
        NOW - HOUR)


def test_the_report_rolls_up_faults_silence_the_week_and_disagreements(store, robots):
    _fleet_week(store, robots)
    report = build_report(store, NOW, days=7, silent_after_s=36 * 3600)
    [fault] = report['same_fault']
    assert (fault['text'], fault['robots'], fault['count']) == (ENCODER, [A, C], 2)
    assert fault['by_model'] == {'lifter-1': 1, 'rover-2': 1}
    assert fault['by_firmware'] == {'1.4.0': 2}
    assert fault['by_site'] == {'depot-north': 1, 'depot-south': 1}
    assert report['silent'] == [A]  # heard six days ago; B a day ago, C an hour ago
    week = report['week']
    assert sorted((item['rrn'], item['text']) for item in week['learned']) == sorted(
        [(A, ENCODER), (A, LIDAR), (B, ENCODER), (C, ENCODER)])
    assert [(item['rrn'], item['text']) for item in week['reinforced']] == [(C, ENCODER)]
    assert [(item['rrn'], item['text']) for item in week['resolved']] == [(B, ENCODER)]
    [disagreement] = report['disagreements']
    assert disagreement['resolved_by'] == [B] and disagreement['still_seen_by'] == [A, C]
    text = format_report(report)
    assert f'2 robots  [{fault["signature"]}] {ENCODER}' in text
    assert f'resolved by {B}; still seen by {A}, {C}' in text
    assert f'Silent longer than 36 h: {A}' in text
    # a week later nothing of it is "this week" any more
    assert build_report(store, NOW + 8 * DAY)['week'] == {'learned': [], 'reinforced': [],
                                                          'resolved': []}


def test_fleet_report_most_caps_each_list_of_the_text_and_refuses_a_negative_count(
        store, store_url, robots, capsys):
    _fleet_week(store, robots)
    report = ['fleet', 'report', '--store', store_url, '--at', '2026-04-01T12:00:00Z']
    assert main(report + ['--most', '1']) == 0
    text = capsys.readouterr().out
    robots_listed = [line for line in text.splitlines() if line.startswith('  RRN-')]
    assert robots_listed == [line for line in robots_listed if line.endswith('SILENT')] \
        and len(robots_listed) == 1  # the silent one first
    assert '  ... and 2 more (--most 0 lists all, --json gives all)' in text
    assert main(report + ['--most', '0']) == 0
    assert len([line for line in capsys.readouterr().out.splitlines()
                if line.startswith('  RRN-')]) == 3
    with pytest.raises(SystemExit) as exited:
        main(report + ['--most', '-1'])
    assert exited.value.code == 2 and 'must be from 0 to 1000000' in capsys.readouterr().err


def test_the_text_report_of_a_large_fleet_lists_the_most_items_a_section_silent_first():
    # a fleet of 500 robots must not print 500 lines a section: the first N, silent robots
    # first, the faults on the most robots first, and how many more there are
    robots = [{'rrn': f'RRN-{index:012d}', 'site': 's', 'model': 'm', 'firmware': 'f',
               'last_heard': '2026-01-01T00:00:00Z', 'last_dream': 1, 'silent': index >= 497}
              for index in range(500)]
    fault = {'signature': 'sig', 'text': 'encoder', 'count': 2, 'by_model': {},
             'by_firmware': {}, 'by_site': {}}
    week = {kind: [{'rrn': robot['rrn'], 'text': 'encoder'} for robot in robots[:30]]
            for kind in ('learned', 'reinforced', 'resolved')}
    report = {'at': '2026-01-02T00:00:00Z', 'robots': robots, 'dreams_kept': 500,
              'silent_after_s': 36 * 3600.0, 'silent': [robot['rrn'] for robot in robots[497:]],
              'same_fault': [dict(fault, signature=f'sig{n}', count=40 - n) for n in range(30)],
              'days': 7.0, 'week': week, 'disagreements': [], 'refusals': {'forged': 0}}
    text = format_report(report, most=5)
    listed = [line for line in text.splitlines() if line.startswith('  RRN-')]
    assert len(listed) == 5 and all(line.endswith('SILENT') for line in listed[:3])
    assert '  ... and 495 more (--most 0 lists all, --json gives all)' in text
    assert '  40 robots  [sig0]' in text and '  36 robots  [sig4]' in text
    assert '[sig5]' not in text and '  ... and 25 more' in text
    assert text.count('  learned    ') == 5 and text.count('  ... and 25 more') == 4
    assert len(format_report(report).splitlines()) > 600  # None: everything, as --json


def test_the_store_reconnects_after_postgresql_restarts_and_nothing_is_counted_twice(
        own_postgres, robots):
    with FleetStore(own_postgres.new_database(), robots.trust) as store:
        first = robots.a.envelope([entry('mem-enc00001', ENCODER)], 1)
        assert _receive(store, robots.a, first).status == 'stored'
        own_postgres.stop()
        down = robots.a.envelope([entry('mem-enc00001', ENCODER, count=4)], 2, at=NOW + HOUR)
        with pytest.raises(FleetError, match='cannot connect to the fleet store'):
            _receive(store, robots.a, down, NOW + HOUR)  # unacknowledged: the robot keeps it
        own_postgres.start()
        assert _receive(store, robots.a, down, NOW + HOUR).status == 'stored'
        assert _receive(store, robots.a, first, NOW + HOUR).status == 'duplicate'
        own_postgres.stop()
        own_postgres.start()  # restarted while idle: the next delivery finds out, and reopens
        third = robots.a.envelope([entry('mem-enc00001', ENCODER, count=5)], 3, at=NOW + DAY)
        assert _receive(store, robots.a, third, NOW + DAY).status == 'stored'
        assert store.dream_count(A) == 3 and store.db.reconnects >= 2
        [kept] = store.entries(A)
        assert kept['observation_count'] == 5


def test_a_reinforcement_stays_this_weeks_when_the_next_dream_brings_the_same_count(
        store, robots):
    _fleet_week(store, robots)  # C's encoder grew from 3 to 6 an hour ago
    _receive(store, robots.c, robots.c.envelope(
        [entry('mem-enc00001', ENCODER, count=6, at=NOW)], 3, at=NOW), NOW)
    week = build_report(store, NOW + HOUR, days=7)['week']
    assert [(item['rrn'], item['text']) for item in week['reinforced']] == [(C, ENCODER)]
    [kept] = store.entries(C)
    assert kept['reinforced_at'] == (NOW - HOUR).timestamp()
