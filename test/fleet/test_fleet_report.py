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

"""The report's roll-ups, read with SQL, against the same roll-ups computed from every entry."""

import collections
import datetime as dt

import pytest

from robot_memory.fleet import report as fleet_report
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.report import build_report
from support.fleet import A
from support.fleet import B
from support.fleet import C
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import LIDAR
from support.fleet import NOW

# the fleet's fixtures: robots with keys, store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)

DAY = dt.timedelta(days=1)
SHOUTED = 'LEFT WHEEL encoder intermittent under sustained load.'  # ENCODER's signature
BATTERY = 'Battery sags below 22 V on the ramp'
DOCK = 'Dock contacts corroded'


def _by(rows: list, field: str) -> dict:
    return dict(sorted(collections.Counter(row[field] for row in rows).items()))


def _same_fault_from_every_entry(store) -> list:
    """Return the roll-up as the report made it before SQL: every entry, grouped in Python."""
    groups = collections.defaultdict(list)
    for row in store.entries():
        if row['status'] == 'active':
            groups[row['signature']].append(row)
    faults = []
    for signature, rows in groups.items():
        robots = sorted({row['rrn'] for row in rows})
        if len(robots) >= 2:
            faults.append({'signature': signature, 'type': rows[0]['type'],
                           'text': rows[0]['text'], 'robots': robots, 'count': len(robots),
                           'by_model': _by(rows, 'model'),
                           'entries': [{'rrn': row['rrn'], 'entry_id': row['entry_id']}
                                       for row in sorted(rows, key=lambda row: row['rrn'])],
                           'by_firmware': _by(rows, 'firmware'), 'by_site': _by(rows, 'site')})
    return sorted(faults, key=lambda fault: (-fault['count'], fault['signature']))


@pytest.fixture
def store(store_url, robots):
    with FleetStore(store_url, robots.trust) as opened:
        yield opened


def _deliver(store, robot, entries, dream, at):
    ack = store.receive(robot.envelope(entries, dream, at=at, dream_at=at), robot.site,
                        robot.rrn, at)
    assert ack.status == 'stored', ack


def test_same_fault_counts_robots_entries_and_the_first_entrys_text(store, robots):
    start = NOW - 2 * DAY
    # A: the encoder twice (two entries, one robot), the lidar twice (one robot only: no
    # fault of the fleet), the dock; B: the encoder in other words, the battery;
    # C: the encoder, resolved a day later, and the battery.
    at = {'at': start}
    _deliver(store, robots.a, [entry('mem-enc00001', ENCODER, **at),
                               entry('mem-enc00009', ENCODER, **at),
                               entry('mem-lid00001', LIDAR, **at),
                               entry('mem-lid00002', LIDAR, **at),
                               entry('mem-dock0001', DOCK, **at)], 1, start)
    _deliver(store, robots.b, [entry('mem-enc00002', SHOUTED, **at),
                               entry('mem-bat00002', BATTERY, **at)], 1, start)
    _deliver(store, robots.c, [entry('mem-enc00003', ENCODER, **at),
                               entry('mem-bat00003', BATTERY, **at)], 1, start)
    later = start + DAY
    _deliver(store, robots.c, [entry('mem-bat00003', BATTERY, count=5, at=later)], 2, later)
    report = build_report(store, NOW, days=1.5)
    faults = report['same_fault']
    assert faults == _same_fault_from_every_entry(store)
    # the week and the disagreements read only what they show: as from every entry
    every = store.entries()
    since = NOW.timestamp() - 1.5 * DAY.total_seconds()
    assert report['week'] == fleet_report._week(every, since)
    assert report['week']['resolved'] and report['week']['reinforced']
    assert not report['week']['learned']  # all heard two days ago
    assert report['disagreements'] == fleet_report._disagreements(every)
    assert [item['resolved_by'] for item in report['disagreements']] == [[C]]
    encoder, battery = faults
    # B's RRN sorts first, so the fault reads as B wrote it; the two entries of A count twice
    assert (encoder['text'], encoder['robots'], encoder['count']) == (SHOUTED, [B, A], 2)
    assert encoder['entries'] == [{'rrn': B, 'entry_id': 'mem-enc00002'},
                                  {'rrn': A, 'entry_id': 'mem-enc00001'},
                                  {'rrn': A, 'entry_id': 'mem-enc00009'}]
    assert encoder['by_model'] == {'rover-2': 3}
    assert encoder['by_firmware'] == {'1.4.0': 2, '1.5.0': 1}
    assert (battery['robots'], battery['by_site']) == (
        [B, C], {'depot-north': 1, 'depot-south': 1})
    assert C not in encoder['robots']  # resolved by C: not a fault C still sees


def _counted_now(store) -> dict:
    return {row['signature']: int(row['entries']) for row in store.db.rows(
        "SELECT signature, count(*) AS entries FROM fleet_entries WHERE status = 'active' "
        'GROUP BY signature')}


def _counts_kept(store) -> dict:
    return {row['signature']: int(row['entries']) for row in store.db.rows(
        'SELECT signature, entries FROM fleet_fault_counts WHERE entries <> 0')}


def test_fault_counts_follow_every_delivery_and_a_migrated_store_is_counted(store_url, robots):
    start = NOW - 2 * DAY
    at = {'at': start}
    with FleetStore(store_url, robots.trust) as store:
        _deliver(store, robots.a, [entry('mem-enc00001', ENCODER, **at)], 1, start)
        store.db.execute('DROP TABLE fleet_fault_counts')  # as a store made before 0003
        store.db.execute("DELETE FROM fleet_migrations WHERE name = '0003_fault_counts'")
    with FleetStore(store_url, robots.trust) as store:  # migrated: counted from the entries
        assert _counts_kept(store) == _counted_now(store) and len(_counted_now(store)) == 1
        _deliver(store, robots.b, [entry('mem-enc00002', SHOUTED, **at),
                                   entry('mem-bat00002', BATTERY, **at)], 1, start)
        _deliver(store, robots.c, [entry('mem-bat00003', BATTERY, **at)], 1, start)
        assert _counts_kept(store) == _counted_now(store)
        assert sorted(fault['robots'] for fault in build_report(store, NOW)['same_fault']) == [
            [B, A], [B, C]]
        later = start + DAY  # B resolves the encoder, rewords the battery, sees the dock
        _deliver(store, robots.b, [entry('mem-bat00002', BATTERY + ' twice', at=later),
                                   entry('mem-dock0002', DOCK, at=later)], 2, later)
        assert _counts_kept(store) == _counted_now(store)
        assert store.receive(robots.b.envelope([], 2, at=later, dream_at=later), robots.b.site,
                             B, later).status == 'duplicate'  # changes nothing
        assert _counts_kept(store) == _counted_now(store)
        assert build_report(store, NOW)['same_fault'] == []  # each fault on one robot now
