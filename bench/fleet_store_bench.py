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
The fleet store's figures of bench_fleet.py: delivery accounting, ingest and the roll-up.

- :func:`delivery_line`: every robot's outbox against the store's tables after the run (the
  router kill, the link outage): dreams made, stored, superseded, pending, lost, twice.
- :func:`ingest_line`: the store keeping one sealed envelope a robot into an empty PostgreSQL
  database, as ``fleet serve`` keeps a queue (``receive_many``, ``MAX_TAKEN`` at a time; one
  ``receive`` a delivery is reported beside it, ``one_by_one_*``), against a bare
  ``executemany`` of the very rows it wrote, in one transaction, into another empty database
  of the same server and schema.
- :func:`rollup_line`: "the same fault on N robots" as ``robot-memory fleet report`` computes it
  (``store.fault_entries()`` and ``report``'s grouping) over robots x 50 entries written with
  COPY, against one bare ``GROUP BY signature`` on the same table.
"""

import datetime as dt
import pathlib
import random
import statistics
import time

import psycopg

from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import FederationPolicy
from robot_memory.fleet import report
from robot_memory.fleet.envelope import envelope_for
from robot_memory.fleet.envelope import Provenance
from robot_memory.fleet.envelope import Trust
from robot_memory.fleet.fleet_store import fault_signature
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.fleet_store import MAX_TAKEN
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.writer import render
from robot_memory.testing.fleet_servers import new_database

import fleet_robots  # noqa: I100 - bench/fleet_robots.py, beside this script
from fleet_robots import robot_entries

TABLES = ('fleet_robots', 'fleet_dreams', 'fleet_dream_entries', 'fleet_entries',
          'fleet_fault_counts')
GOAL_INGEST_RATIO, GOAL_ROLLUP_MS = 0.5, 200.0
REPEATS = 5  # of the ingest: the store, then the bare INSERT, in turn


def _document(robot: dict) -> MemoryDocument:
    start = dt.datetime.fromisoformat(robot['start'].replace('Z', '+00:00'))
    profile = fleet_robots.generate.load(robot['profile'])
    return MemoryDocument(rrn=robot['rrn'], last_updated=start, entries=robot_entries(
        profile, robot['index'], robot['entries'], start))


def memory_file_sizes(robots: list) -> list:
    """Return the bytes of each robot's whole robot-memory.md (the naive payload)."""
    return [len(render(_document(robot))) for robot in robots]


def _key(dream_id, dream_at) -> tuple:
    return int(dream_id), round(float(dream_at), 3)


def delivery_line(run: dict, url: str, quick: bool) -> dict:
    """Return the accounting of every dream after the faults (module docstring)."""
    with psycopg.connect(url) as conn:
        stored = {}
        for rrn, dream_id, dream_at in conn.execute(
                'SELECT rrn, dream_id, dream_at FROM fleet_dreams'):
            stored.setdefault(rrn, []).append(_key(dream_id, dream_at))
        entry_rows = dict(conn.execute('SELECT rrn, count(*) FROM fleet_entries GROUP BY rrn'))
        kept_entries = conn.execute('SELECT count(*) FROM fleet_dream_entries').fetchone()[0]
        said_entries = conn.execute('SELECT sum(entry_count) FROM fleet_dreams').fetchone()[0]
    made = acked = superseded = pending = lost = twice = wrong_entries = 0
    for state in run['states']:
        dreams = {_key(row[0], row[1]): row[2] for row in state['dreams']}
        kept = stored.get(state['rrn'], [])
        made += len(dreams)
        twice += len(kept) - len(set(kept))
        acked += sum(1 for value in dreams.values() if value == 'acked')
        superseded += sum(1 for value in dreams.values() if value == 'superseded')
        pending += sum(1 for value in dreams.values() if value == 'pending')
        newest = max(dreams, key=lambda key: key[1])
        # lost: acknowledged but not kept, or the newest state not in the store
        lost += sum(1 for key, value in dreams.items() if value == 'acked' and key not in kept)
        lost += newest not in kept
        wrong_entries += entry_rows.get(state['rrn'], 0) != len(state['entries'])
    results = run['results'] + run['drained']
    duplicates = sum(1 for item in results if item.get('status') == 'duplicate')
    sent = sum(1 for item in run['results'] if item['online']) + sum(
        1 for item in results if item.get('status') not in (None, 'nothing'))
    twice += abs(int(said_entries or 0) - int(kept_entries))
    return {'bench': 'fleet_delivery', 'n': made, 'robots': len(run['states']),
            'router_killed_round': run['plan']['kill_round'],
            'link_down_rounds': sorted(run['plan']['outage']), 'link_down_rrn': run['offline_rrn'],
            'payloads_sent': sent, 'dreams_made': made,
            'dreams_stored': sum(len(set(kept)) for kept in stored.values()),
            'acked': acked, 'superseded_by_newer': superseded, 'pending': pending,
            'duplicate_acks': duplicates, 'lost': lost + pending + wrong_entries,
            'counted_twice': twice, 'goal': 'nothing lost, nothing counted twice',
            'met': lost + pending + wrong_entries == 0 and twice == 0}


def _sealed(robots: list, at: dt.datetime) -> list:
    found = []
    for robot in robots:
        policy = FederationPolicy(private_key_path=pathlib.Path(robot['private_key']))
        provenance = Provenance(robot['site'], robot['model'], robot['firmware'], 1, at)
        found.append((envelope_for(_document(robot), at, policy, provenance), robot['site'],
                      robot['rrn']))
    return found


def _ours(server, trust: Trust, sealed: list, now: dt.datetime, together: bool) -> tuple:
    """
    Return the seconds the store takes to keep every delivery, and its database's URL.

    ``together``: as ``fleet serve`` keeps a queue of deliveries, ``MAX_TAKEN`` at a time
    (``receive_many``); else one ``receive`` a delivery, as when they come one by one.
    """
    url = new_database(server)
    with FleetStore(url, trust) as store:
        began = time.perf_counter()
        if together:
            acks = [ack for first in range(0, len(sealed), MAX_TAKEN)
                    for ack in store.receive_many(sealed[first:first + MAX_TAKEN], now)]
        else:
            acks = [store.receive(raw, site, rrn, now) for raw, site, rrn in sealed]
        took = time.perf_counter() - began
    for ack in acks:
        if ack.status != 'stored':
            raise SystemExit(f'bench_fleet: the store did not keep {ack.rrn}: {ack.message}')
    return took, url


def _bare(server, rows: dict) -> float:
    url = new_database(server)
    with FleetStore(url, Trust({})):
        pass  # the same schema, migrated
    with psycopg.connect(url) as conn:
        began = time.perf_counter()
        with conn.cursor() as cursor:
            for table in TABLES:
                names = list(rows[table]['names'])
                cursor.executemany(
                    f'INSERT INTO {table} ({", ".join(names)}) VALUES '
                    f'({", ".join(["%s"] * len(names))})', rows[table]['values'])
        conn.commit()
        return time.perf_counter() - began


def _rows_of(url: str) -> dict:
    """Return every row the store wrote, table by table, for the bare INSERT to write again."""
    rows = {}
    with psycopg.connect(url) as conn:
        for table in TABLES:
            cursor = conn.execute(f'SELECT * FROM {table}')
            rows[table] = {'names': [column.name for column in cursor.description],
                           'values': cursor.fetchall()}
    return rows


def ingest_line(args, server, robots: list) -> dict:
    """
    Return the store's ingest against a bare batched INSERT of the same rows.

    Each repeat times the store, then the bare INSERT of what it wrote, one after the other,
    so both meet the same load; ``ratio`` is the median of the repeats' ratios.
    """
    now = dt.datetime.now(UTC)
    sealed = _sealed(robots, now - dt.timedelta(minutes=1))
    trust = Trust({robot['rrn']: pathlib.Path(robot['public_key']) for robot in robots})
    ours, single, bare, rows = [], [], [], {}
    for _ in range(1 if args.quick else REPEATS):
        took, url = _ours(server, trust, sealed, now, together=True)
        ours.append(took)
        rows = rows or _rows_of(url)
        bare.append(_bare(server, rows))
        single.append(_ours(server, trust, sealed, now, together=False)[0])
    count = sum(len(rows[table]['values']) for table in TABLES)
    ours_s, bare_s = statistics.median(ours), statistics.median(bare)
    single_s = statistics.median(single)
    ratio = statistics.median(mine_bare / mine for mine, mine_bare in zip(ours, bare))
    return {'bench': 'fleet_ingest', 'n': len(sealed), 'rows': count,
            'path': f'receive_many, {MAX_TAKEN} queued deliveries at a time (fleet serve)',
            'payloads_per_s': round(len(sealed) / ours_s, 1),
            'rows_per_s': round(count / ours_s), 'ms': round(ours_s * 1000, 1),
            'baseline': 'bare executemany of the same rows, one transaction, same server',
            'baseline_ms': round(bare_s * 1000, 1), 'baseline_rows_per_s': round(count / bare_s),
            'ratio': round(ratio, 3), 'ratios': [round(b / o, 3) for o, b in zip(ours, bare)],
            'goal_ratio': GOAL_INGEST_RATIO,
            'one_by_one_ms': round(single_s * 1000, 1),
            'one_by_one_ratio': round(bare_s / single_s, 3),
            'repeats': len(ours),
            'met': None if args.quick else ratio >= GOAL_INGEST_RATIO}


def _fill(url: str, robots: int, per_robot: int) -> int:
    rng = random.Random(37)
    faults = [f'WARN on fault {number}: {rng.choice(fleet_robots.PLACES)} sensor reads out of '
              f'range under load ({number})' for number in range(300)]
    weights = [1.0 / (rank + 1) for rank in range(len(faults))]
    now = time.time()
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        with cursor.copy('COPY fleet_robots FROM STDIN') as copy:
            for index in range(robots):
                copy.write_row((f'RRN-{index + 1:012d}', f'site-{index % 3}',
                                f'model-{index % 4}', f'1.{index % 5}.0', now, now, now, 1, now))
        with cursor.copy('COPY fleet_dreams FROM STDIN') as copy:
            for index in range(robots):
                copy.write_row((f'RRN-{index + 1:012d}', 1, now, f'site-{index % 3}',
                                f'model-{index % 4}', f'1.{index % 5}.0', now, now, per_robot,
                                'sig', 'sig'))
        written = 0
        with cursor.copy('COPY fleet_entries FROM STDIN') as copy:
            for index in range(robots):
                common = set(rng.choices(range(len(faults)), weights, k=per_robot // 5))
                texts = [faults[number] for number in sorted(common)]
                texts += [f'Robot {index} note {number}: dock {number % 9} alignment off'
                          for number in range(per_robot - len(texts))]
                for number, text in enumerate(texts):
                    resolved = rng.random() < 0.05
                    copy.write_row((
                        f'RRN-{index + 1:012d}', f'mem-{number:08x}',
                        fault_signature('hardware_observation', text), 'hardware_observation',
                        text, 0.9, 5, '[]', now, now, now, None, now if resolved else None, 1,
                        now, 'resolved' if resolved else 'active'))
                    written += 1
        # what FleetStore.receive keeps beside the entries it writes (COPY went around it)
        cursor.execute('INSERT INTO fleet_fault_counts (signature, entries) SELECT signature, '
                       "count(*) FROM fleet_entries WHERE status = 'active' GROUP BY signature")
        conn.commit()
    return written


def rollup_line(args, server) -> dict:
    """Return the same-fault roll-up over robots x 50 entries against a bare GROUP BY."""
    url = new_database(server)
    with FleetStore(url, Trust({})):
        pass  # migrated
    entries = _fill(url, args.rollup_robots, 50)
    ours, whole, bare = [], [], []
    with FleetStore(url, Trust({})) as store:
        store.db.execute('ANALYZE')
        for _ in range(3):
            began = time.perf_counter()
            faults = report._same_fault(*store.fault_entries())
            ours.append(time.perf_counter() - began)
            began = time.perf_counter()
            report.build_report(store, dt.datetime.now(UTC))
            whole.append(time.perf_counter() - began)
            began = time.perf_counter()
            grouped = store.db.rows(
                'SELECT signature, count(DISTINCT rrn) AS robots FROM fleet_entries WHERE '
                "status = 'active' GROUP BY signature HAVING count(DISTINCT rrn) >= 2")
            bare.append(time.perf_counter() - began)
    if len(grouped) != len(faults):
        raise SystemExit(f'bench_fleet: the report found {len(faults)} faults on several robots, '
                         f'the GROUP BY {len(grouped)}')
    ms, bare_ms = statistics.median(ours) * 1000, statistics.median(bare) * 1000
    return {'bench': 'fleet_rollup', 'n': args.rollup_robots, 'entries': entries,
            'faults_on_several_robots': len(faults), 'ms': round(ms, 1),
            'whole_report_ms': round(statistics.median(whole) * 1000, 1),
            'baseline': 'one SQL GROUP BY signature HAVING count(DISTINCT rrn) >= 2',
            'baseline_ms': round(bare_ms, 1), 'ratio': round(ms / bare_ms, 2),
            'goal_ms': GOAL_ROLLUP_MS, 'repeats': 3,
            'met': None if args.quick or args.rollup_robots != 5000 else ms <= GOAL_ROLLUP_MS}
