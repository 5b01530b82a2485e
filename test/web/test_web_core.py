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
The operator page's guards and operations over real HTTP, without a browser.

A real uvicorn server on a thread serves a demo memory; requests go through urllib.
"""

import datetime as dt
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.review.edit import edit_entry
from robot_memory.review.edit import EditError
from robot_memory.review.proposing import ProposalQueue
from robot_memory.web.app import create_app
from robot_memory.web.app import csrf_mark
from robot_memory.web.page_server import make_server
from robot_memory.web.page_server import ServerThread
from support import web_demo
from support.paths import REPO
from support.processes import free_port
from support.web import Client
from support.web import entry_ids
from support.web import serve
from support.web import TOKEN


@pytest.fixture
def demo(tmp_path):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC))
    thread, client = serve(memory)
    yield memory, client
    thread.stop()


def test_every_page_answers_and_the_entry_page_draws_three_charts(demo):
    memory, client = demo
    for path in ('/', '/entries', '/entries?show=resolved', '/entries?show=peers',
                 '/entries?show=archived', '/dreams', '/review', '/typed'):
        status, page = client.request(path)
        assert status == 200, (path, page)
    status, page = client.request(f'/entries/{entry_ids(memory)[0]}')
    assert status == 200 and page.count('<svg') == 3
    status, page = client.request('/dreams')
    assert f'<a href="/entries/{entry_ids(memory)[0]}">' in page


def test_peer_entries_are_listed_labelled_with_their_peer_and_open(demo):
    from robot_memory.rcan.schema import PeerBlock
    from robot_memory.rcan.schema import PeerEntry
    memory, client = demo
    now = dt.datetime.now(UTC)
    with memory.update(now) as result:
        result.document.peer_context = [PeerBlock(
            rrn='RRN-000000000007', last_synced=now,
            entries=[PeerEntry(id='mem-0000feed', type='environment_note', confidence=0.8,
                               text='The kitchen door sticks when it rains')])]
    status, page = client.request('/entries?show=peers')
    assert status == 200 and 'The kitchen door sticks when it rains' in page
    assert 'peer RRN-000000000007' in page
    status, page = client.request('/entries')
    assert 'The kitchen door sticks' not in page  # the robot's own entries only
    status, page = client.request('/entries/mem-0000feed', token=TOKEN)
    assert status == 200 and 'from peer RRN-000000000007' in page
    assert 'id="edit"' not in page  # a peer's entry changes only on its robot
    own = client.request(f'/entries/{entry_ids(memory)[0]}', token=TOKEN)[1]
    assert 'id="edit"' in own


def test_reading_needs_no_token_on_loopback_but_no_page_offers_a_change_without_it(demo):
    memory, client = demo
    status, page = client.request('/review')
    assert status == 200 and 'proposal-1' in page and 'form method="post"' not in page
    status, page = client.request('/review', token=TOKEN)
    assert 'form method="post"' in page and csrf_mark(TOKEN) in page


@pytest.mark.parametrize('form, token, headers, status, message', [
    ({'decision': 'approve'}, '', {}, 403, 'a change needs the access token'),
    ({'decision': 'approve'}, 'wrong-token-0123456789', {}, 403, 'needs the access token'),
    ({'decision': 'approve', 'csrf': 'forged'}, TOKEN, {}, 403, 'does not carry this page'),
    ({'decision': 'approve'}, TOKEN, {'Origin': 'http://evil.example'}, 403,
     'sent from another site'),
    ({'decision': 'approve', 'actor': ''}, TOKEN, {}, 400, 'say who you are'),
    ({'decision': 'reject'}, TOKEN, {}, 400, 'say why you reject it'),
    ({'decision': 'maybe'}, TOKEN, {}, 400, 'decision must be approve or reject'),
])
def test_a_refused_change_says_why_on_the_page_and_changes_nothing(demo, form, token, headers,
                                                                   status, message):
    memory, client = demo
    before = memory.path.read_bytes()
    form = dict(form)
    form.setdefault('csrf', csrf_mark(TOKEN))
    form.setdefault('actor', 'mallory')
    got, page = client.request('/review/proposals/1', form, token, headers)
    assert (got, message in page.replace('&#39;', "'")) == (status, True), page
    assert 'id="refusal"' in page
    assert memory.path.read_bytes() == before
    with ProposalQueue.open(memory.path.with_suffix('.db')) as queue:
        assert queue.get(1).status == 'pending'


def test_a_loopback_page_answers_only_to_a_loopback_name(demo):
    memory, client = demo
    status, page = client.request('/entries', headers={'Host': 'evil.example:8765'})
    assert status == 403 and "not as 'evil.example:8765'" in page.replace('&#39;', "'")
    status, page = client.request('/entries', headers={'Host': 'localhost:8765'})
    assert status == 200


def test_an_oversized_form_is_refused(demo):
    memory, client = demo
    status, page = client.request('/review/proposals/1', token=TOKEN,
                                  body=b'reason=' + b'x' * 20_000)
    assert status == 413 and 'the limit is 16384' in page


def test_a_stale_proposal_an_unknown_id_and_a_bad_undo_are_refused_clearly(demo):
    memory, client = demo
    assert client.change('/review/proposals/1', decision='approve')[0] == 200
    status, page = client.change('/review/proposals/1', decision='approve')
    assert status == 409 and 'proposal 1 was already approved' in page
    status, page = client.change('/review/proposals/99', decision='reject', reason='no')
    assert status == 409 and 'there is no proposal 99' in page
    status, page = client.change('/review/proposals/' + '1' * 30, decision='approve')
    assert status == 404 and f'there is no proposal {"1" * 30} (ids have at most 18' in page
    status, page = client.change('/review/proposals/seven', decision='approve')
    assert status == 404 and 'seven' in page and 'is not a proposal id (a number' in page
    status, page = client.change('/review/undo', dream='999')
    assert status == 409 and 'there is no dream 999' in page and 'nothing was changed' in page
    status, page = client.change('/review/undo', to='yesterday')
    assert status == 400 and 'is not an ISO 8601 time' in page
    status, page = client.change('/review/undo', dream='7', confirm='yes')
    assert status == 409 and 'say why in the reason box' in page
    status, page = client.request('/entries/mem-00000000')
    assert status == 404 and 'there is no entry' in page
    status, page = client.request('/entries?sort=size')
    assert status == 400 and 'sort' in page


def test_an_undo_preview_writes_nothing_and_the_confirm_is_audited_with_the_actor(demo):
    memory, client = demo
    before = memory.path.read_bytes()
    status, page = client.change('/review/undo', dream='7')
    assert status == 200 and 'would take back the changes of dream 7' in page
    assert memory.path.read_bytes() == before
    status, page = client.change('/review/undo', dream='7', confirm='yes',
                                 reason='false fault', actor='carol')
    assert status == 200 and 'undo 1: took back the changes of dream 7' in page
    assert memory.path.read_bytes() != before
    db = memory.path.with_suffix('.db')
    import sqlite3
    with sqlite3.connect(db) as conn:
        assert conn.execute('SELECT actor, reason FROM undos').fetchall() == \
            [('web:carol', 'false fault')]


def test_an_edit_by_hand_is_audited_as_manual_with_the_actor_and_can_be_undone(demo):
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    status, page = client.change(f'/entries/{entry_id}/edit', text='Encoder drops ticks',
                                 tags='wheel_left, checked', reason='clearer', actor='dana')
    assert status == 200 and 'text and tags changed' in page
    [entry] = [entry for entry in memory.load(dt.datetime.now(UTC)).document.entries
               if entry.id == entry_id]
    assert (entry.text, entry.tags) == ('Encoder drops ticks', ['wheel_left', 'checked'])
    with EvidenceStore(memory.path.with_suffix('.db')) as store:
        last = store.history(entry_id)[-1]
        assert (last.action, last.actor, last.reason) == ('manual', 'web:dana',
                                                          'edited by hand: clearer')
        assert last.detail['after']['text'] == 'Encoder drops ticks'
        # The next dream does not take the edit in a second time.
        from robot_memory.dream.autodream import dream
        report = dream(store, memory, dt.datetime.now(UTC), store.rules)
        assert entry_id not in report.manual
    # The edit is undoable: back to the time just before it.
    before_edit = (last.at - dt.timedelta(milliseconds=1)).isoformat()
    status, page = client.change('/review/undo', to=before_edit, confirm='yes',
                                 reason='take the edit back')
    assert status == 200 and 'undo 1: restored the memory as it was at' in page, page
    texts = {entry.id: entry.text for entry in memory.load(dt.datetime.now(UTC)).document.entries}
    assert texts[entry_id] != 'Encoder drops ticks'


def test_a_bad_edit_is_refused_and_the_file_keeps_its_bytes(demo):
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    before = memory.path.read_bytes()
    for form, message in [({'text': '', 'reason': 'x'},
                           'the text is empty: write something; nothing was changed'),
                          ({'text': 'x' * 600, 'reason': 'x'},
                           'the text has 600 characters, at most 500; nothing was changed'),
                          ({'text': 'one\ntwo', 'reason': 'x'}, 'text: text contains U+000A'),
                          ({'text': 'new', 'reason': ''}, 'say why in a reason')]:
        status, page = client.change(f'/entries/{entry_id}/edit', **form)
        assert status == 409 and message in page, page
        # Said once, in a person's words.
        assert page.count('nothing was changed') == 1 and 'String should' not in page, page
        assert 'Value error' not in page
    status, page = client.change('/entries/mem-00000000/edit', text='new', reason='x')
    assert status == 409 and 'is not in the memory file' in page
    assert memory.path.read_bytes() == before


def test_an_actor_outside_latin1_is_answered_as_done_and_remembered(demo):
    # The actor goes back in a cookie; a header is Latin-1: the change was made, then the
    # page said it was refused and "nothing was changed"
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    status, page = client.change(f'/entries/{entry_id}/edit', text='Encoder drops ticks',
                                 reason='clearer', actor='田中 Łukasz')
    assert status == 200 and 'text changed; audited as manual' in page, page
    with EvidenceStore(memory.path.with_suffix('.db')) as store:
        assert store.history(entry_id)[-1].actor == 'web:田中 Łukasz'


def test_a_form_that_is_not_utf8_or_not_a_form_changes_nothing(demo):
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    before = memory.path.read_bytes()
    form = urllib.parse.urlencode({'csrf': csrf_mark(TOKEN), 'actor': 'dana', 'reason': 'x'})
    status, page = client.request(f'/entries/{entry_id}/edit', token=TOKEN, headers={
        'Origin': client.base}, body=(form + '&text=%ff%fe%fd').encode())
    assert status == 400 and 'the form could not be read' in page  # was stored as U+FFFD
    status, page = client.request(f'/entries/{entry_id}/edit', token=TOKEN, headers={
        'Origin': client.base, 'Content-Type': 'text/plain'},
        body=(form + '&text=new').encode())
    assert status == 415 and 'not text/plain' in page
    assert memory.path.read_bytes() == before


def test_a_charts_text_is_shown_as_the_brain_gets_it():
    from robot_memory.web import charts
    svg = charts.daily_chart({'cam: \u202efront \U000e0069 \x1b[31m': {'2026-05-01': 3}})
    assert '\u202e' not in svg and '\U000e0069' not in svg and '\x1b' not in svg
    assert '\\u202e' in svg and '\\U000e0069' in svg


def test_an_edit_while_the_database_is_held_changes_nothing_at_all(tmp_path):
    # The file was written, then the database refused: "nothing was changed" was untrue,
    # and the edit could not be undone (no version kept)
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    [entry, *_] = memory.load(dt.datetime.now(UTC)).document.entries
    before = memory.path.read_bytes()
    holder = sqlite3.connect(memory.path.with_suffix('.db'), isolation_level=None)
    try:
        holder.execute('BEGIN IMMEDIATE')
        with EvidenceStore(memory.path.with_suffix('.db'), busy_timeout_s=0.2) as store:
            with pytest.raises(sqlite3.OperationalError, match='locked'):
                edit_entry(store, memory, entry.id, dt.datetime.now(UTC), 'dana', 'clearer',
                           text='Encoder drops ticks')
    finally:
        holder.execute('ROLLBACK')
        holder.close()
    assert memory.path.read_bytes() == before


def test_undo_after_a_hand_edit_in_the_file_gives_the_hand_edit_back(demo):
    # The version kept before a page edit was the dream's snapshot: a person's edit of the
    # file since the last dream was lost by an undo to the moment before the page edit
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    [entry] = [item for item in memory.load(dt.datetime.now(UTC)).document.entries
               if item.id == entry_id]
    memory.path.write_text(memory.path.read_text().replace(entry.text, 'HAND EDIT C'))
    time.sleep(0.01)
    between = dt.datetime.now(UTC).isoformat()
    time.sleep(0.01)
    status, page = client.change(f'/entries/{entry_id}/edit', text='WEB D', reason='page')
    assert status == 200, page
    status, page = client.change('/review/undo', to=between, confirm='yes', reason='back')
    assert status == 200, page
    texts = {item.id: item.text for item in memory.load(dt.datetime.now(UTC)).document.entries}
    assert texts[entry_id] == 'HAND EDIT C'


def test_edit_entry_refuses_an_edit_that_changes_nothing(tmp_path):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    [entry, *_] = memory.load(dt.datetime.now(UTC)).document.entries
    with EvidenceStore(tmp_path / 'robot-memory.db') as store:
        with pytest.raises(EditError, match='already reads so'):
            edit_entry(store, memory, entry.id, dt.datetime.now(UTC), 'web:x', 'why',
                       text=entry.text)


def test_read_only_offers_no_change_and_refuses_one(tmp_path):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    thread, client = serve(memory, read_only=True)
    try:
        status, page = client.request('/review', token=TOKEN)
        assert 'read-only' in page and 'form method="post"' not in page
        status, page = client.change('/review/undo', dream='1')
        assert status == 403 and 'this page is read-only' in page
    finally:
        thread.stop()


def test_beyond_loopback_even_reading_needs_the_token(tmp_path):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    thread, client = serve(memory, host='0.0.0.0')
    try:
        status, page = client.request('/entries')
        assert status == 401 and 'needs the access token' in page
        status, page = client.request('/entries', token=TOKEN)
        assert status == 200
    finally:
        thread.stop()


def test_typed_memory_honours_the_trust_level(demo):
    memory, client = demo
    status, page = client.request('/typed?q=robot+office&trust=medium')
    assert status == 200 and 'stay out of the office' not in page
    status, page = client.request('/typed?q=charging+dock')
    assert status == 200 and 'The charging dock is behind the kitchen door' in page
    status, page = client.request('/typed?q=office&trust=hyper')
    assert status == 403 and 'above what this page may show' in page
    kitchen = urllib.parse.quote('{"context.room": "kitchen"}')
    status, page = client.request(f'/typed?q=charging+dock&filter={kitchen}')
    assert status == 200 and 'The charging dock is behind the kitchen door' in page
    hall = urllib.parse.quote('{"context.room": "hall"}')
    status, page = client.request(f'/typed?q=charging+dock&filter={hall}')
    assert status == 200 and 'The charging dock' not in page and 'no records matched' in page
    status, page = client.request('/typed?q=dock&type=semantic&type=dream')
    assert status == 400 and 'is not one of episodic, working' in page.replace('&#39;', "'")
    status, page = client.request('/typed?q=charging+dock&filter=%7Bnot+json')
    assert status == 400 and 'the filter' in page


def test_an_encrypted_record_is_never_shown_without_its_key(tmp_path):
    from robot_memory.substrate.substrate_store import Substrate
    from robot_memory.web.app import PageConfig
    from robot_memory.web.data import Source
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    db = memory.path.with_suffix('.db')
    with Substrate(db, encrypt_from='high', key_file=tmp_path / 'robot.key') as substrate:
        substrate.learn('The spare key is under the blue mat', type='semantic',
                        sensitivity='high', now=dt.datetime.now(UTC))
    page = {}
    for name, key in (('without', tmp_path / 'elsewhere.key'), ('with', tmp_path / 'robot.key')):
        config = PageConfig(Source(memory, db), TOKEN, max_trust='hyper',
                            encryption={'key_file': key})
        port = free_port()
        thread = ServerThread(make_server(create_app(config), '127.0.0.1', port)).start()
        try:
            while not thread.server.started:
                time.sleep(0.05)
            page[name] = Client(f'http://127.0.0.1:{port}').request(
                '/typed?q=spare+key&trust=hyper')[1]
        finally:
            thread.stop()
    assert 'blue mat' not in page['without'] and '1 encrypted record withheld' in page['without']
    assert 'The spare key is under the blue mat' in page['with']


def test_serve_on_a_public_address_without_a_token_exits_1_with_advice(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / 'bin' / 'robot-memory'), 'serve', '--file',
                          str(tmp_path / 'robot-memory.md'), '--host', '0.0.0.0'],
                         capture_output=True, text=True, timeout=60,
                         env={'PATH': '/usr/bin:/bin', **_python_env()})
    assert run.returncode == 1
    assert 'needs an access token: --token-file FILE or $ROBOT_MEMORY_WEB_TOKEN' in run.stderr


def test_serve_on_a_port_in_use_exits_1_before_showing_a_link(tmp_path):
    # The link printed before was to the other server, with a token that server refuses.
    taken = socket.socket()
    taken.bind(('127.0.0.1', 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        run = subprocess.run([sys.executable, str(REPO / 'bin' / 'robot-memory'), 'serve',
                              '--file', str(tmp_path / 'robot-memory.md'), '--port', str(port)],
                             capture_output=True, text=True, timeout=60,
                             env={'PATH': '/usr/bin:/bin', **_python_env()})
    finally:
        taken.close()
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert run.stdout == ''
    assert run.stderr.strip() == (f'robot-memory serve: cannot listen on 127.0.0.1:{port}: '
                                  'Address already in use; choose another --port, or stop '
                                  'what serves there'), run.stderr


def _python_env():
    import os
    return {key: value for key, value in os.environ.items()
            if key.startswith(('PYTHON', 'AMENT', 'LD_LIBRARY', 'VIRTUAL_ENV', 'ROS'))}


def test_the_page_ships_every_script_style_and_font_itself(demo):
    memory, client = demo
    for path in ('/', '/entries', f'/entries/{entry_ids(memory)[0]}', '/review'):
        status, page = client.request(path)
        for marker in ('http://', 'https://', '//cdn', '@import', 'url('):
            allowed = 'http://www.w3.org/2000/svg'
            assert marker not in page.replace(allowed, ''), (path, marker)
    status, style = client.request('/static/style.css')
    assert status == 200 and 'url(' not in style and '@font-face' not in style
