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

"""Deliveries kept together (``receive_many``, fleet serve), each checked and answered alone."""

import datetime as dt
import json
import threading

import pytest

from robot_memory.fleet import keys
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.transport import open_session
from robot_memory.fleet.transport import StoreServer
from robot_memory.testing.fleet_servers import new_database
from support.fleet import A
from support.fleet import B
from support.fleet import C
from support.fleet import ENCODER
from support.fleet import entry
from support.fleet import LIDAR
from support.fleet import NOW
from support.fleet import until
from support.processes import free_port

# the fleet's fixtures: robots with keys, store_url (SQLite, PostgreSQL)
pytest_plugins = ('support.fleet_fixtures',)

HOUR = dt.timedelta(hours=1)

# a rule of the database (as an operator's CHECK would be) that refuses one robot's dreams
REFUSE_BROKEN = {
    'sqlite': ['CREATE TRIGGER refuse_broken BEFORE INSERT ON fleet_dreams WHEN NEW.model = '
               "'broken' BEGIN SELECT RAISE(ABORT, 'model broken refused'); END"],
    'postgresql': ['CREATE FUNCTION refuse_broken() RETURNS trigger AS $$ BEGIN IF NEW.model = '
                   "'broken' THEN RAISE EXCEPTION 'model broken refused'; END IF; RETURN NEW; "
                   'END $$ LANGUAGE plpgsql',
                   'CREATE TRIGGER refuse_broken BEFORE INSERT ON fleet_dreams FOR EACH ROW '
                   'EXECUTE FUNCTION refuse_broken()'],
}


@pytest.fixture
def store(store_url, robots):
    with FleetStore(store_url, robots.trust) as opened:
        yield opened


def _forged(robot, dream_id: int) -> bytes:
    raw = robot.envelope([entry('mem-enc00001', ENCODER)], dream_id)
    return raw.replace(ENCODER.encode(), ENCODER.replace('Left', 'Right').encode())


def test_a_batch_refuses_only_its_bad_payloads_and_keeps_the_rest(store, robots):
    deliveries = [
        (robots.a.envelope([entry('mem-enc00001', ENCODER)], 1), robots.a.site, A),
        (_forged(robots.b, 1), robots.b.site, B),
        (b'not json', robots.c.site, C),
        (robots.c.envelope([entry('mem-lid00001', LIDAR)], 1), robots.c.site, C),
    ]
    acks = store.receive_many(deliveries, NOW)
    assert [(ack.status, ack.reason) for ack in acks] == [
        ('stored', ''), ('refused', 'forged'), ('refused', 'malformed'), ('stored', '')]
    assert [ack.rrn for ack in acks] == [A, B, C, C]
    assert store.dream_count() == 2 and store.entries(B) == []
    assert [row['text'] for row in store.entries(C)] == [LIDAR]
    refusals = store.refusals()
    assert (refusals['forged'], refusals['malformed'], sum(refusals.values())) == (1, 1, 2)


def test_a_robots_deliveries_in_one_batch_are_judged_in_order(store, robots):
    first = robots.a.envelope([entry('mem-enc00001', ENCODER)], 1)
    older = robots.a.envelope([entry('mem-enc00001', ENCODER, count=2)], 2,
                              at=NOW.replace(hour=11))
    newer = robots.a.envelope([entry('mem-enc00001', ENCODER, count=7)], 3,
                              at=NOW.replace(hour=13))
    acks = store.receive_many([(raw, robots.a.site, A) for raw in (first, first, older, newer)],
                              NOW.replace(hour=13))
    assert [(ack.status, ack.reason, ack.dream_id) for ack in acks] == [
        ('stored', '', 1), ('duplicate', '', 1), ('refused', 'replayed', None), ('stored', '', 3)]
    assert store.dream_count(A) == 2  # never counted twice
    [kept] = store.entries(A)
    assert (kept['observation_count'], kept['last_dream']) == (7, 3)
    assert store.refusals()['replayed'] == 1
    assert store.db.value('SELECT entries FROM fleet_fault_counts') == 1


def test_many_batches_are_each_checked_once_and_answered_in_order(store, robots):
    # a robot's deliveries go one a batch: six of A make six batches, kept in order
    deliveries = []
    for dream in range(1, 7):
        at = NOW + dream * HOUR
        deliveries.append((robots.a.envelope([entry('mem-enc00001', ENCODER, count=dream + 2,
                                                    at=at)], dream, at=at), robots.a.site, A))
        if dream == 3:
            deliveries.append((_forged(robots.b, 1), robots.b.site, B))
    deliveries.append((robots.c.envelope([entry('mem-lid00001', LIDAR)], 1), robots.c.site, C))
    acks = store.receive_many(deliveries, NOW + 7 * HOUR)
    assert [(ack.status, ack.rrn, ack.dream_id) for ack in acks] == [
        ('stored', A, 1), ('stored', A, 2), ('stored', A, 3), ('refused', B, None),
        ('stored', A, 4), ('stored', A, 5), ('stored', A, 6), ('stored', C, 1)]
    assert store.dream_count(A) == 6 and store.refusals()['forged'] == 1
    [kept] = store.entries(A)
    assert (kept['observation_count'], kept['last_dream']) == (8, 6)


def test_a_delivery_the_database_refuses_fails_alone_and_the_batch_is_kept(
        store, robots):
    for statement in REFUSE_BROKEN[store.db.dialect.name]:
        store.db.execute(statement)
    broken = robots.b.envelope([entry('mem-enc00001', ENCODER)], 1, model='broken')
    acks = store.receive_many([
        (robots.a.envelope([entry('mem-enc00001', ENCODER)], 1), robots.a.site, A),
        (broken, robots.b.site, B),
        (robots.c.envelope([entry('mem-enc00001', ENCODER)], 1), robots.c.site, C)], NOW)
    assert [ack.status for ack in acks] == ['stored', 'failed', 'stored']
    assert not acks[1].acknowledged and 'model broken refused' in acks[1].message
    assert store.dream_count() == 2 and store.entries(B) == []
    assert sum(store.refusals().values()) == 0  # the robot's payload was not refused
    # the fault is on A and C only: B's rolled-back writes left nothing behind
    assert store.db.value('SELECT entries FROM fleet_fault_counts') == 2
    with pytest.raises(Exception, match='model broken refused'):
        store.receive(broken, robots.b.site, B, NOW)  # alone, the error is the caller's


def test_a_dream_another_store_keeps_meanwhile_fails_and_is_never_counted_twice(
        postgres, robots):
    # two stores on one PostgreSQL: the other keeps the dream between this one's read and
    # its writes (SQLite has one writer at a time: BEGIN IMMEDIATE waits for the other)
    url = new_database(postgres)
    raw = robots.a.envelope([entry('mem-enc00001', ENCODER), entry('mem-lid00001', LIDAR)], 1)
    with FleetStore(url, robots.trust) as store, FleetStore(url, robots.trust) as other:
        judge, kept = store._judge, []

        def judged_then_kept_by_the_other(envelope, known, now):
            answer = judge(envelope, known, now)
            if not kept:
                kept.append(other.receive(raw, robots.a.site, A, NOW))
            return answer

        store._judge = judged_then_kept_by_the_other
        [ack] = store.receive_many([(raw, robots.a.site, A)], NOW)
        assert kept[0].status == 'stored'
        # its writes met the dream kept: rolled back, not acknowledged; the robot sends again
        assert (ack.status, ack.acknowledged) == ('failed', False)
        assert store.receive(raw, robots.a.site, A, NOW).status == 'duplicate'
        assert store.dream_count(A) == 1 and len(store.entries(A)) == 2
        assert store.db.tuples('SELECT entries FROM fleet_fault_counts') == [(1,), (1,)]
        assert store.db.value('SELECT count(*) FROM fleet_dream_entries') == 2


def test_the_server_keeps_what_waits_together_and_answers_each_delivery(store, robots):
    endpoint = f'tcp/127.0.0.1:{free_port()}'
    lines = []
    store_session = open_session('router', [endpoint])
    server = StoreServer(store_session, store, lambda: NOW + HOUR, lines.append)
    client = open_session('client', connect=[endpoint])
    try:
        replies = {}

        def ask(name, robot, raw):
            for reply in client.get(keys.ingest_key(robot.site, robot.rrn), payload=raw,
                                    timeout=10.0):
                answer = reply.ok if reply.ok is not None else reply.err
                replies[name] = answer.payload.to_bytes().decode('utf-8', 'replace')

        def asking(name, robot, raw):
            thread = threading.Thread(target=ask, args=(name, robot, raw))
            thread.start()
            return thread

        with server._lock:  # the store is busy: what comes meanwhile waits in the queue
            threads = [asking('first', robots.a, robots.a.envelope([], 1))]
            # (unfinished_tasks counts what was put: the server never calls task_done)
            until(lambda: server._queue.unfinished_tasks == 1 and server._queue.empty(),
                  'the first delivery queued and taken')
            threads += [asking('b', robots.b, robots.b.envelope([entry('mem-e1', ENCODER)], 1)),
                        asking('forged', robots.c, _forged(robots.c, 1)),
                        asking('a', robots.a, robots.a.envelope([entry('mem-e1', ENCODER)], 2,
                                                                at=NOW + HOUR))]
            until(lambda: server._queue.qsize() == 3, 'three deliveries waiting')
        for thread in threads:
            thread.join()
    finally:
        server.close()
        client.close()
        store_session.close()
    answers = {name: json.loads(reply) for name, reply in replies.items()}  # else: what it was
    assert {name: (reply['status'], reply['reason']) for name, reply in answers.items()} == {
        'first': ('stored', ''), 'b': ('stored', ''), 'forged': ('refused', 'forged'),
        'a': ('stored', '')}
    assert 'fleet serve: 3 deliveries kept together' in lines
    assert store.dream_count(A) == 2 and store.dream_count(C) == 0
    assert store.refusals()['forged'] == 1


@pytest.mark.parametrize('own_reader', [True, False], ids=['reader', 'one_connection'])
def test_queries_are_answered_while_the_store_writes_on_a_connection_of_their_own(
        store_url, robots, own_reader):
    # A report over thousands of robots takes seconds: on the ingest's connection every
    # delivery waited for it (and it for them). fleet serve gives the queries their own.
    endpoint = f'tcp/127.0.0.1:{free_port()}'
    with FleetStore(store_url, robots.trust) as store, \
            FleetStore(store_url, robots.trust) as reader:
        raw = robots.a.envelope([entry('mem-enc00001', ENCODER)], 1)
        assert store.receive(raw, robots.a.site, A, NOW).status == 'stored'
        store_session = open_session('router', [endpoint])
        server = StoreServer(store_session, store, lambda: NOW + HOUR, lambda line: None,
                             reader=reader if own_reader else None)
        client = open_session('client', connect=[endpoint])

        def answer(key):
            for reply in client.get(key, timeout=3.0):
                if reply.ok is not None:
                    return json.loads(reply.ok.payload.to_bytes())
            return None
        try:
            until(lambda: answer(keys.REPORT), 'the store answered no report')
            with server._lock:  # the ingest's connection is busy writing a batch
                report = answer(keys.REPORT)
                entries = answer(keys.robot_key(A))
        finally:
            server.close()
            client.close()
            store_session.close()
    if not own_reader:  # the queries waited for the writer, past the querier's timeout
        assert (report, entries) == (None, None)
        return
    assert report['dreams_kept'] == 1 and [robot['rrn'] for robot in report['robots']] == [A]
    assert [row['text'] for row in entries['entries']] == [ENCODER]
