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
The page's Fleet view over real HTTP, against a real fleet store (issue 37, points 3 and 4).

The view shows what ``robot-memory fleet report`` shows; an operator promotes an entry and
revokes a lesson from it, audited as ``fleet promote`` and ``fleet revoke`` audit; every
change needs the token, the form's mark, a name, a reason and the fleet key. The store is a
SQLite file, and PostgreSQL (with a real router the lesson is published through) in one test.
"""

import datetime as dt
import html
import json

import pytest

from robot_memory.cli.main import main
from robot_memory.common.timeutil import UTC
from robot_memory.federation.peer_context import generate_keypair
from robot_memory.fleet import keys
from robot_memory.fleet import lesson_store
from robot_memory.fleet.envelope import Trust
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.fleet.lessons import open_lesson
from robot_memory.fleet.transport import open_session
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.web import fleet_view
from robot_memory.web.fleet_view import FleetSettings
from support.fleet import A
from support.fleet import B
from support.fleet import C
from support.fleet import Child
from support.fleet import ENCODER
from support.fleet import fleet_with_faults
from support.fleet import LIDAR
from support.fleet import NOW
from support.fleet import until
from support.processes import child_env
from support.processes import free_port
from support.web import serve
from support.web import TOKEN

# the fleet's fixtures: robots with keys, a PostgreSQL server
pytest_plugins = ('support.fleet_fixtures',)

LATER = NOW + dt.timedelta(hours=1)


@pytest.fixture
def fleet_key(tmp_path):
    private, public = tmp_path / 'fleet.pem', tmp_path / 'fleet.pub'
    generate_keypair(private, public)
    return private, public


def _memory(tmp_path) -> MemoryFile:
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    memory.save(MemoryDocument(rrn=A, last_updated=NOW, entries=[]))
    return memory


@pytest.fixture
def page(tmp_path, robots, fleet_key):
    """Yield (client, store URL) of a page showing a SQLite fleet store with the fleet key."""
    url = str(tmp_path / 'fleet.db')
    with FleetStore(url, robots.trust) as store:
        fleet_with_faults(store, robots)
    thread, client = serve(_memory(tmp_path), clock=lambda: LATER,
                           fleet=FleetSettings(url, fleet_key[0]))
    yield client, url
    thread.stop()


def _report(url: str, capsys) -> dict:
    assert main(['fleet', 'report', '--store', url, '--json', '--at', LATER.isoformat()]) == 0
    return json.loads(capsys.readouterr().out)


def _lessons(url: str) -> list:
    with FleetStore(url, Trust({})) as store:
        return lesson_store.lessons(store)


def test_the_fleet_view_shows_what_the_fleet_report_shows(page, capsys):
    client, url = page
    status, text = client.request('/fleet', token=TOKEN)
    assert status == 200, text
    text = html.unescape(text)
    report = _report(url, capsys)
    assert '<a href="/fleet" class="here">Fleet</a>' in text
    assert '3 robots in the fleet store' in text and '4 dreams kept' in text
    # the same fault on N robots, grouped by model, firmware and site
    encoder, lidar = sorted(report['same_fault'], key=lambda fault: fault['text'])
    assert (encoder['text'], encoder['robots']) == (ENCODER, [B, A])  # by RRN
    assert (lidar['text'], lidar['robots']) == (LIDAR, [A, C])
    assert encoder['entries'] == [{'rrn': B, 'entry_id': 'mem-enc00002'},
                                  {'rrn': A, 'entry_id': 'mem-enc00001'}]
    block = text.split(f'id="fault-{encoder["signature"]}"')[1].split('</div>')[0]
    assert f'2 robots</strong> · hardware_observation · {ENCODER}' in block
    assert 'by model: rover-2 2; by firmware: 1.4.0 1, 1.5.0 1; by site: depot-north 2' in block
    assert f'<option value="{A} mem-enc00001">' in block  # what the operator promotes
    assert 'by model: lifter-1 1, rover-2 1' in text.split(f'fault-{lidar["signature"]}')[1]
    # robots last heard from, and the silent one
    assert report['silent'] == [C]
    assert f'Silent longer than 36 h: {C}' in text
    assert text.count('<strong>silent</strong>') == 1
    # the week: learned, reinforced, resolved
    week = report['week']
    assert (len(week['learned']), len(week['reinforced']), len(week['resolved'])) == (5, 1, 1)
    assert '5 learned, 1 reinforced, 1 resolved' in text
    assert 'resolved · ' in text and f'{C} mem-enc00003 · {ENCODER}' in text
    # robots that disagree
    assert f'{ENCODER}: resolved by {C}; still seen by {B}, {A}' in text
    assert 'unsigned 0, forged 0' in text
    assert 'No fleet lesson yet.' in text


def test_a_large_fleet_shows_the_silent_robots_and_the_widest_faults_first(page, monkeypatch):
    client, url = page
    monkeypatch.setattr(fleet_view, 'MOST', 1)  # the rows a list shows at most, here one
    text = html.unescape(client.request('/fleet', token=TOKEN)[1])
    rows = text.split('<table id="robots">')[1].split('</tbody>')[0].count('<tr>') + \
        text.split('<table id="robots">')[1].split('</tbody>')[0].count('<tr class="silent">')
    assert rows == 2  # the header and one robot: the silent one
    assert f'<tr class="silent"><td>{C}</td>' in text
    assert '2 more robots (silent ones are listed first)' in text
    assert text.count('class="proposal fault"') == 1
    assert '1 more, on fewer robots: <code>robot-memory fleet report</code> lists them all' \
        in text


def test_without_a_fleet_store_there_is_no_fleet_view(tmp_path):
    thread, client = serve(_memory(tmp_path))
    try:
        status, text = client.request('/')
        assert status == 200 and 'href="/fleet"' not in text
        status, text = client.request('/fleet')
        assert status == 404 and 'robot-memory serve --fleet-store URL' in html.unescape(text)
        status, text = client.change('/fleet/promote', source=f'{A} mem-enc00001',
                                     to='model:rover-2', reason='why')
        assert status == 404 and 'without a fleet store' in text
    finally:
        thread.stop()


def test_an_operator_promotes_and_revokes_from_the_page_audited_as_the_cli(
        page, fleet_key, capsys):
    client, url = page
    status, text = client.change('/fleet/promote', source=f'{A} mem-enc00001',
                                 to='model:rover-2', reason='seen on two rovers', actor='anna')
    assert status == 200, text
    [lesson] = _lessons(url)
    assert f'lesson {lesson["lesson_id"]}: {A} mem-enc00001 to every robot of model rover-2; ' \
        'audited; its robots take it when they next ask the fleet store' in html.unescape(text)
    assert (lesson['state'], lesson['scope'], lesson['scope_value'], lesson['source_rrn'],
            lesson['source_entry']) == ('active', 'model', 'rover-2', A, 'mem-enc00001')
    assert [(step['action'], step['actor'], step['reason']) for step in lesson['audit']] == [
        ('promote', 'web:anna', 'seen on two rovers')]
    # signed with the fleet key: what a robot of that model is answered, it takes
    with FleetStore(url, Trust({})) as store:
        [message] = lesson_store.messages_for(store, 'anywhere', 'rover-2')
    taken = open_lesson(message, fleet_key[1])
    assert (taken.entry['text'], taken.operator, taken.reason) == (
        ENCODER, 'web:anna', 'seen on two rovers')
    # the CLI's promotion of the same entry is audited alike, with its operator
    assert main(['fleet', 'promote', '--store', url, '--fleet-key', str(fleet_key[0]),
                 '--operator', 'ops-cli', '--reason', 'also the lifters', '--rrn', A,
                 '--entry', 'mem-lid00001', '--site', 'depot-south']) == 0
    capsys.readouterr()
    page_text = html.unescape(client.request('/fleet', token=TOKEN)[1])
    assert 'promote · web:anna: seen on two rovers' in page_text
    assert 'promote · ops-cli: also the lifters' in page_text
    assert page_text.count('action="/fleet/revoke"') == 2
    # the revocation from the page, with a reason
    status, text = client.change('/fleet/revoke', lesson=lesson['lesson_id'],
                                 reason='fixed in 1.5', actor='anna')
    assert status == 200, text
    assert f'lesson {lesson["lesson_id"]} revoked on every robot of model rover-2' in text
    revoked = next(item for item in _lessons(url) if item['lesson_id'] == lesson['lesson_id'])
    assert revoked['state'] == 'revoked'
    assert [(step['action'], step['actor']) for step in revoked['audit']] == [
        ('promote', 'web:anna'), ('revoke', 'web:anna')]
    with FleetStore(url, Trust({})) as store:
        [message] = lesson_store.messages_for(store, 'anywhere', 'rover-2')
    assert open_lesson(message, fleet_key[1]).action == 'revoke'
    status, text = client.change('/fleet/revoke', lesson=lesson['lesson_id'], reason='again')
    assert status == 409 and 'was revoked at' in text and 'nothing was changed' in text
    assert main(['fleet', 'lessons', '--store', url]) == 0
    listed = capsys.readouterr().out
    assert 'revoke   web:anna: fixed in 1.5' in listed and 'promote  ops-cli' in listed


def test_a_promotion_is_refused_without_what_it_needs_and_changes_nothing(
        page, tmp_path, robots):
    client, url = page
    good = {'source': f'{A} mem-enc00001', 'to': 'model:rover-2', 'reason': 'why'}
    refusals = [
        (dict(good, token=''), 403, 'a change needs the access token'),
        (dict(good, csrf='forged'), 403, "does not carry this page's mark"),
        (dict(good, actor=''), 400, 'say who you are'),
        (dict(good, reason=' '), 400, 'say why in the reason box'),
        (dict(good, to='planet:earth'), 400, 'names no robots to promote to'),
        (dict(good, source=f'{A}'), 400, "name the robot (its RRN) and its entry's id"),
        (dict(good, source=f'{A} mem-nope'), 409, f'{A} has no current entry'),
        (dict(good, source='robot/* mem-enc00001'), 409, 'is not an RRN'),
        (dict(good, to='site:no/such'), 409, 'cannot name a lesson key'),
    ]
    for form, status, said in refusals:
        token = form.pop('token', TOKEN)
        got, text = client.change('/fleet/promote', token=token, **form)
        assert (got, said) == (status, said) and said in html.unescape(text), (form, text)
        assert 'nothing was changed' in text and 'href="/fleet"' in text
    assert _lessons(url) == []
    # a page without the fleet key shows the fleet, offers no promotion, refuses one
    thread, keyless = serve(_memory(tmp_path / 'keyless'), fleet=FleetSettings(url))
    try:
        status, text = keyless.request('/fleet', token=TOKEN)
        assert status == 200 and 'start the page with <code>--fleet-key PEM' in text
        assert 'action="/fleet/promote"' not in text
        status, text = keyless.change('/fleet/promote', **good)
        assert status == 409 and 'started without it: add --fleet-key PEM' in text
    finally:
        thread.stop()
    # read-only: no change at all
    thread, reader = serve(_memory(tmp_path / 'reader'), read_only=True,
                           fleet=FleetSettings(url, tmp_path / 'fleet.pem'))
    try:
        assert 'action="/fleet/promote"' not in reader.request('/fleet', token=TOKEN)[1]
        status, text = reader.change('/fleet/promote', **good)
        assert status == 403 and 'read-only' in text
    finally:
        thread.stop()
    assert _lessons(url) == []


def test_a_fleet_store_that_cannot_be_read_is_said_on_the_view(tmp_path):
    missing = tmp_path / 'no-such-dir' / 'fleet.db'
    thread, client = serve(_memory(tmp_path), fleet=FleetSettings(str(missing)))
    try:
        status, text = client.request('/fleet')
        assert status == 503 and 'does not exist' in text and 'once the store answers' in text
    finally:
        thread.stop()


def test_on_postgresql_a_promotion_from_the_page_is_published_through_the_router(
        tmp_path, robots, fleet_key, postgres):
    from support.fleet_fixtures import new_database
    url = new_database(postgres)
    with FleetStore(url, robots.trust) as store:
        fleet_with_faults(store, robots)
    endpoint = f'tcp/127.0.0.1:{free_port()}'
    router = Child(['-m', 'robot_memory.fleet.router', '--listen', endpoint], child_env(),
                   'router listening')
    session = open_session('client', connect=[endpoint])
    heard: list = []
    thread = None
    try:
        subscriber = session.declare_subscriber(
            keys.lesson_key('site', 'depot-south'),
            lambda sample: heard.append(sample.payload.to_bytes()))
        thread, client = serve(_memory(tmp_path), clock=lambda: dt.datetime.now(UTC),
                               fleet=FleetSettings(url, fleet_key[0], (endpoint,)))
        status, text = client.request('/fleet')
        assert status == 200 and f'{ENCODER}: resolved by {C}' in html.unescape(text)
        status, text = client.change('/fleet/promote', rrn=C, entry='mem-lid00003',
                                     to='site:depot-south', reason='the bay is dusty')
        assert status == 200 and f'published through {endpoint}' in text, text
        [message] = until(lambda: heard, 'the promoted lesson was not published')
        lesson = open_lesson(message, fleet_key[1])
        assert (lesson.source_rrn, lesson.entry['text'], lesson.operator) == (
            C, LIDAR, 'web:bob')
        subscriber.undeclare()
    finally:
        if thread is not None:
            thread.stop()
        session.close()
        assert router.stop() == 0
    [kept] = _lessons(url)
    assert kept['audit'][0]['actor'] == 'web:bob'


def test_serve_refuses_a_fleet_option_it_cannot_use_before_it_listens(tmp_path, capsys):
    memory = _memory(tmp_path)
    serve_it = ['serve', '--file', str(memory.path), '--port', str(free_port())]
    assert main(serve_it + ['--fleet-key', str(tmp_path / 'fleet.pem')]) != 0
    assert '--fleet-key and --fleet-connect go with --fleet-store URL' in capsys.readouterr().err
    store = ['--fleet-store', str(tmp_path / 'fleet.db')]
    assert main(serve_it + store + ['--fleet-key', str(tmp_path / 'nope.pem')]) != 0
    assert f'--fleet-key {tmp_path / "nope.pem"} is not a file' in capsys.readouterr().err
    assert main(serve_it + ['--fleet-store', str(tmp_path / 'no' / 'fleet.db')]) != 0
    assert 'does not exist, so the fleet store fleet.db cannot be made there' in \
        capsys.readouterr().err
    assert main(serve_it + store + ['--fleet-tls-ca', str(tmp_path)]) != 0
    assert 'give --fleet-tls-ca, --fleet-tls-cert and --fleet-tls-key together' in \
        capsys.readouterr().err
