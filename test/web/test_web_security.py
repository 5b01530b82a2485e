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
The operator page attacked as an outside tester would: raw HTTP against ``robot-memory serve``.

Every guard docs/operator-page.md promises is tried with the headers a browser, curl or an
attacker's page would send; a refusal must change nothing (the file's bytes, the database's
rows).
"""

import contextlib
import datetime as dt
import hashlib
import http.client
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse

import pytest

from robot_memory.common.timeutil import UTC
from robot_memory.web.app import csrf_mark
from robot_memory.web.app import token_cookie
from support import web_demo
from support.paths import REPO
from support.processes import free_port

TOKEN = 'attack-token-0123456789abcdef'
XSS = '<img src=x onerror="window.pwned=1">\'"</script><script>window.pwned=2</script>'


class Raw:
    """HTTP with every header under the test's control (http.client sends nothing unasked)."""

    def __init__(self, base: str):
        parts = urllib.parse.urlsplit(base)
        self.port = parts.port

    def send(self, method: str, path: str, headers=None, body: bytes = b'',
             host: object = True):
        """Return (status, headers, body text); ``host`` True sends the real Host, None none."""
        conn = http.client.HTTPConnection('127.0.0.1', self.port, timeout=20)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            if host is True:
                host = f'127.0.0.1:{self.port}'
            if host is not None:
                conn.putheader('Host', host)
            for key, value in (headers or {}).items():
                conn.putheader(key, value)
            if body or method == 'POST':
                conn.putheader('Content-Type', 'application/x-www-form-urlencoded')
                conn.putheader('Content-Length', str(len(body)))
            conn.endheaders(body or None)
            response = conn.getresponse()
            return (response.status, {k.lower(): v for k, v in response.getheaders()},
                    response.read().decode('utf-8', 'replace'))
        finally:
            conn.close()

    def get(self, path: str, **options):
        """GET ``path``."""
        return self.send('GET', path, **options)

    def change(self, path: str, token: str = TOKEN, headers=None, host: object = True,
               **form):
        """POST a change form carrying the cookie, the mark and an actor unless told otherwise."""
        form.setdefault('csrf', csrf_mark(TOKEN))
        form.setdefault('actor', 'alice')
        all_headers = {'Cookie': f'{token_cookie(TOKEN)}={token}'} if token else {}
        all_headers.update(headers or {})
        return self.send('POST', path, headers=all_headers, host=host,
                         body=urllib.parse.urlencode(form).encode())


def state(memory) -> tuple:
    """Return what a refused request must leave alone: the file's bytes and every row."""
    conn = sqlite3.connect(memory.path.with_suffix('.db'))
    try:
        rows = hashlib.sha256('\n'.join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()
    return memory.path.read_bytes(), rows


def entry_ids(memory) -> list:
    return [entry.id for entry in memory.load(dt.datetime.now(UTC)).document.entries]


@pytest.fixture(scope='module')
def shared(tmp_path_factory):
    """One server for the probes that change nothing: (client, memory, port)."""
    directory = tmp_path_factory.mktemp('attacked')
    memory = web_demo.build(directory, dt.datetime.now(UTC))
    with web_demo.serving(memory, TOKEN) as base:
        client = Raw(base)
        yield client, memory, client.port


@pytest.fixture
def own(tmp_path):
    """Yield a server of this test's own, for probes that make changes: (client, memory)."""
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC))
    with web_demo.serving(memory, TOKEN) as base:
        yield Raw(base), memory


def listening_addresses(port: int) -> set:
    """Return the local addresses a socket listening on ``port`` is bound to (/proc/net)."""
    found = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        with open(table) as lines:
            next(lines)
            for line in lines:
                local, state_code = line.split()[1], line.split()[3]
                address, hex_port = local.split(':')
                if int(hex_port, 16) == port and state_code == '0A':  # LISTEN
                    found.add(address)
    return found


def test_serve_listens_on_127_0_0_1_only_by_default(shared):
    client, memory, port = shared
    assert listening_addresses(port) == {'0100007F'}  # 127.0.0.1, little-endian hex


@pytest.mark.parametrize('host', ['127.0.0.1:{port}', '127.0.0.1', 'localhost:{port}',
                                  'localhost', 'LOCALHOST:{port}', 'LocalHost',
                                  '[::1]:{port}', '[::1]'])
def test_a_loopback_name_is_served(shared, host):
    client, memory, port = shared
    status, headers, page = client.get('/entries', host=host.format(port=port))
    assert status == 200, page


@pytest.mark.parametrize('host', ['evil.example:{port}', 'evil.example', 'localhost.:{port}',
                                  'localhost.', '127.0.0.1.nip.io:{port}',
                                  'localhost.evil.example', '[::ffff:7f00:1]:{port}',
                                  '2130706433:{port}', 'evil.example:{port}@127.0.0.1',
                                  'evil.example@localhost', '127.0.0.1:{port}:1',
                                  'localhost:{port}/x', '127.0.0.1 evil.example', '', None])
def test_a_foreign_name_is_refused_as_dns_rebinding(shared, host):
    client, memory, port = shared
    host = host.format(port=port) if host is not None else None
    for path in ('/', '/entries', f'/entries/{entry_ids(memory)[0]}', '/review', '/typed',
                 '/events', '/dreams', f'/review?token={TOKEN}'):
        status, headers, page = client.get(path, host=host)
        assert 'set-cookie' not in headers
        if host is None:  # HTTP/1.1 without a Host header: the HTTP parser refuses it
            assert status == 400 and 'Invalid HTTP request' in page
            continue
        assert status == 403 and 'answers only as 127.0.0.1 or localhost' in page, (path, page)


def test_a_change_needs_the_token_cookie_and_the_link_sets_it_strictly(own):
    client, memory = own
    before = state(memory)
    for token in ('', 'not-the-token-0123456789'):
        status, headers, page = client.change('/review/proposals/1', token=token,
                                              decision='approve')
        assert status == 403 and 'a change needs the access token' in page
    status, headers, page = client.get('/review?token=wrong-token-0123456789')
    assert status == 403 and 'set-cookie' not in headers
    assert state(memory) == before
    status, headers, page = client.get(f'/review?token={TOKEN}&x=1')
    assert status == 303 and headers['location'] == '/review?x=1'
    cookie = headers['set-cookie']
    assert cookie.startswith(f'{token_cookie(TOKEN)}={TOKEN};')
    assert 'HttpOnly' in cookie and 'SameSite=strict' in cookie


@pytest.mark.parametrize('mark', ['', 'f' * 64, csrf_mark('another-token-0123456789')])
def test_a_change_without_the_pages_mark_is_refused(own, mark):
    client, memory = own
    before = state(memory)
    status, headers, page = client.change('/review/proposals/1', csrf=mark, decision='approve')
    assert status == 403 and 'does not carry this page' in page
    assert state(memory) == before


@pytest.mark.parametrize('header, origin', [
    ('Origin', 'null'), ('Origin', 'http://127.0.0.1:1'), ('Origin', 'http://evil.example'),
    ('Origin', 'http://localhost:{port}'), ('Origin', 'https://127.0.0.1:{port}'),
    ('Origin', 'ws://127.0.0.1:{port}'), ('Referer', 'http://evil.example/page'),
    ('Referer', 'https://127.0.0.1:{port}/review'), ('Referer', 'http://127.0.0.1:1/'),
    ('Referer', 'null')])
def test_a_change_from_another_origin_is_refused(own, header, origin):
    client, memory = own
    before = state(memory)
    origin = origin.format(port=client.port)
    status, headers, page = client.change('/review/proposals/1', decision='approve',
                                          headers={header: origin})
    assert status == 403 and 'from another site' in page, page
    assert state(memory) == before


def test_a_same_origin_change_or_one_from_curl_goes_through(own):
    client, memory = own
    same = f'http://127.0.0.1:{client.port}'
    for headers in ({'Origin': same}, {'Referer': same + '/review'}, {},
                    {'Origin': same.upper(), 'Referer': same + '/entries?q=x'}):
        status, headers, page = client.change('/review/proposals/1', decision='reject',
                                              reason='not now', headers=headers)
        # The guards let it through to the operation: the first rejects, the next are stale.
        assert status in (200, 409) and 'another site' not in page, page


@pytest.mark.parametrize('route, form', [
    ('/review/proposals/1', {'decision': 'approve'}),
    ('/review/undo', {'dream': '1', 'confirm': 'yes', 'reason': 'try'}),
    ('/entries/{entry}/edit', {'text': 'changed by an attacker', 'reason': 'try'}),
])
def test_read_only_refuses_every_change_with_every_credential(tmp_path, route, form):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC))
    with web_demo.serving(memory, TOKEN, '--read-only') as base:
        client = Raw(base)
        before = state(memory)
        path = route.format(entry=entry_ids(memory)[0])
        status, headers, page = client.change(path, headers={'Origin': base}, **form)
        assert status == 403 and 'this page is read-only' in page
        assert state(memory) == before
        for page_path in ('/', '/entries', f'/entries/{entry_ids(memory)[0]}', '/review',
                          '/typed'):
            status, headers, page = client.get(page_path, headers={
                'Cookie': f'{token_cookie(TOKEN)}={TOKEN}'})
            assert status == 200 and 'method="post"' not in page and 'read-only' in page


def column(memory, sql: str) -> list:
    conn = sqlite3.connect(memory.path.with_suffix('.db'))
    try:
        return [row[0] for row in conn.execute(sql)]
    finally:
        conn.close()


def test_every_change_is_audited_with_the_actor_it_names(own):
    client, memory = own
    entry = entry_ids(memory)[0]
    status, headers, page = client.change('/review/proposals/1', decision='approve',
                                          actor='carol')
    assert status == 200, page
    status, headers, page = client.change(f'/entries/{entry}/edit', text='Edited by Dave',
                                          reason='clearer', actor='dave')
    assert status == 200, page
    newest = max(column(memory, 'SELECT id FROM dreams'))
    status, headers, page = client.change('/review/undo', dream=str(newest), confirm='yes',
                                          force='yes', reason='wrong night', actor='erin')
    assert status == 200, page
    assert column(memory, 'SELECT decided_by FROM proposals WHERE id = 1') == ['web:carol']
    assert 'web:carol' in column(memory, "SELECT actor FROM audit WHERE action = 'approve'")
    assert 'web:dave' in column(memory, "SELECT actor FROM audit WHERE action = 'manual'")
    assert column(memory, 'SELECT actor FROM undos') == ['web:erin']
    for actor in ('', ' ', 'x' * 61, 'tab\there'):
        status, headers, page = client.change(f'/entries/{entry}/edit', text='anonymous',
                                              reason='who', actor=actor)
        assert status == 400 and 'acting as' in page


@pytest.mark.parametrize('path', ['/entries/..%2F..%2F..%2Fetc%2Fpasswd', '/entries/%2e%2e',
                                  '/static/../app.py', '/static/%2e%2e/app.py',
                                  '/static/..%2fapp.py', '/static//etc/passwd',
                                  '/static/%2e%2e/%2e%2e/setup.cfg', '/entries/..'])
def test_no_route_reads_a_file_outside_its_own(shared, path):
    client, memory, port = shared
    status, headers, page = client.get(path)
    assert status in (400, 404), (status, page)
    assert 'root:' not in page and 'Copyright' not in page and 'import ' not in page


def test_an_attackers_text_renders_inert_everywhere(own, tmp_path):
    from robot_memory.evidence.evidence_store import EvidenceStore
    from robot_memory.evidence.observations import DiagnosticObservation
    from robot_memory.rcan.schema import PeerBlock
    from robot_memory.rcan.schema import PeerEntry
    from robot_memory.substrate.substrate_store import Substrate
    client, memory = own
    now = dt.datetime.now(UTC)
    entry = entry_ids(memory)[0]
    status, headers, page = client.change(f'/entries/{entry}/edit', text='XSS ' + XSS,
                                          tags='<b>tag</b>, plain', reason=XSS[:100],
                                          actor='<i>mallory</i>')
    assert status == 200, page
    with memory.update(now) as result:
        result.document.peer_context = [PeerBlock(
            rrn='RRN-000000000007', last_synced=now,
            entries=[PeerEntry(id='mem-00000007', text='peer ' + XSS, confidence=0.8,
                               type='hardware_observation')])]
    with EvidenceStore(memory.path.with_suffix('.db')) as store:
        for minute in range(3):
            store.add(DiagnosticObservation(
                now - dt.timedelta(minutes=minute), 'base: left encoder', 'wheel_left', 1,
                'dropped ticks', (('note', XSS),)))
            store.add(DiagnosticObservation(
                now - dt.timedelta(minutes=minute), '<script>sig</script>', XSS, 2, XSS,
                ((XSS, XSS),)))
    with Substrate(memory.path.with_suffix('.db')) as substrate:
        substrate.learn('dock ' + XSS, type='semantic', tags=['dock'], context={'room': XSS},
                        now=now, actor='test')
    pages = ['/', '/entries', '/entries?show=peers', f'/entries/{entry}', '/entries/mem-00000007',
             '/dreams', '/review', '/typed?q=dock', f'/entries?q={urllib.parse.quote(XSS)}']
    for path in pages:
        status, headers, page = client.get(path)
        assert status == 200, (path, page)
        assert '<img' not in page and '<script>' not in page and '<b>' not in page, path
        assert '<i>mallory' not in page, path
    status, headers, page = client.get(f'/entries/{entry}')
    assert 'XSS &lt;img src=x onerror=' in page  # shown, as text


def test_a_form_over_the_limit_is_refused_however_it_is_sent(own):
    client, memory = own
    before = state(memory)
    big = urllib.parse.urlencode({'csrf': csrf_mark(TOKEN), 'actor': 'alice',
                                  'reason': 'x' * 20000, 'decision': 'reject'}).encode()
    status, headers, page = client.send('POST', '/review/proposals/1', body=big, headers={
        'Cookie': f'{token_cookie(TOKEN)}={TOKEN}'})
    assert status == 413, page
    # Chunked, with no length declared: counted while it arrives.
    conn = http.client.HTTPConnection('127.0.0.1', client.port, timeout=20)
    try:
        conn.request('POST', '/review/proposals/1', body=iter([big[:8000], big[8000:]]),
                     headers={'Cookie': f'{token_cookie(TOKEN)}={TOKEN}',
                              'Content-Type': 'application/x-www-form-urlencoded'},
                     encode_chunked=True)
        response = conn.getresponse()
        assert response.status == 413
    finally:
        conn.close()
    assert state(memory) == before
    # Headers are bounded by the HTTP parser: a 2 MB one is refused or the connection closed.
    try:
        status, headers, page = client.send('GET', '/entries', headers={'X-Big': 'y' * 2 ** 21})
    except ConnectionError:
        status = 400
    assert status in (400, 413, 431)


def test_typed_recall_shows_nothing_above_the_trust_cap(shared):
    client, memory, port = shared
    status, headers, page = client.get('/typed?q=Ben+office')
    assert status == 200 and 'Ben prefers' not in page
    assert 'withheld' in page or 'redacted' in page
    status, headers, page = client.get('/typed?q=Ben+office&trust=high')
    assert status == 403 and 'Ben prefers' not in page
    status, headers, page = client.get('/typed?q=Ben+office&trust=hyper')
    assert status == 403 and 'Ben prefers' not in page


@pytest.mark.parametrize('path, form', [
    ('/review/proposals/99999999999999999999999', {'decision': 'approve'}),
    ('/review/proposals/9223372036854775808', {'decision': 'approve'}),
    ('/review/undo', {'dream': '99999999999999999999999'}),
    ('/review/undo', {'undo_id': '9223372036854775808', 'confirm': 'yes', 'reason': 'r'}),
    ('/review/undo', {'dream': '١٢'}),  # digits, but not ASCII ones
    ('/review/proposals/%EF%BC%91', {'decision': 'approve'}),  # a full-width 1
])
def test_an_id_out_of_range_is_refused_clearly_not_an_error(own, path, form):
    client, memory = own
    before = state(memory)
    status, headers, page = client.change(path, **form)
    assert status in (400, 404, 409) and 'Refused.' in page, (status, page)
    assert 'Traceback' not in page and 'File "' not in page
    assert state(memory) == before


def test_every_answer_carries_the_security_headers(shared):
    client, memory, port = shared
    for path in ('/', '/entries', f'/entries/{entry_ids(memory)[0]}', '/review', '/typed',
                 '/dreams', '/entries/mem-00000000', '/static/style.css', '/static/live.js',
                 '/nowhere', '/typed?trust=hyper'):
        status, headers, page = client.get(path)
        policy = headers.get('content-security-policy', '')
        assert "default-src 'none'" in policy and "script-src 'self'" in policy, path
        assert "frame-ancestors 'none'" in policy and "form-action 'self'" in policy, path
        assert headers.get('x-content-type-options') == 'nosniff', path
        assert headers.get('x-frame-options') == 'DENY', path
        assert headers.get('referrer-policy') == 'same-origin', path
        if not path.startswith('/static/'):
            assert headers.get('cache-control') == 'no-store', path
        assert 'javascript:' not in page and '<script>' not in page, path
        assert ' style="' not in page and ' on' + 'click=' not in page, path


def open_stream(port: int):
    """Open /events on a raw socket; return (socket, status line)."""
    sock = socket.create_connection(('127.0.0.1', port), timeout=10)
    sock.sendall(f'GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
    answer = b''
    while b'\r\n' not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    return sock, answer.split(b'\r\n')[0].decode()


def test_live_streams_are_bounded_and_a_closed_one_frees_its_place(shared):
    from robot_memory.web.app import MAX_LIVE
    client, memory, port = shared
    # Readers that leave at once, before or after the answer began, leave no place taken.
    for index in range(3 * MAX_LIVE):
        sock = socket.create_connection(('127.0.0.1', port), timeout=10)
        sock.sendall(f'GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
        if index % 2:
            sock.recv(100)
        sock.close()
    time.sleep(1)
    streams = []
    try:
        for _ in range(MAX_LIVE):
            sock, status = open_stream(port)
            streams.append(sock)
            assert status == 'HTTP/1.1 200 OK'
        sock, status = open_stream(port)
        sock.close()
        assert status.startswith('HTTP/1.1 503')
        # The page itself still answers while every stream is held.
        status, headers, page = client.get('/entries')
        assert status == 200
        streams.pop().close()
        deadline = time.monotonic() + 10
        while True:
            sock, status = open_stream(port)
            if status == 'HTTP/1.1 200 OK' or time.monotonic() > deadline:
                break
            sock.close()
            time.sleep(0.2)
        streams.append(sock)
        assert status == 'HTTP/1.1 200 OK'
    finally:
        for sock in streams:
            sock.close()


def test_typed_recall_on_the_page_changes_nothing(own):
    client, memory = own
    before = state(memory)
    pages = [client.get(f'/typed?q={urllib.parse.quote(query)}&k=5')
             for query in ('dock', 'charging dock kitchen', 'Ben office')]
    assert all(status == 200 for status, _, _ in pages)
    assert 'The charging dock is behind the kitchen door' in pages[0][2]
    # No access count, salience or recall-log row moved: a GET is only a look.
    assert state(memory) == before


def test_a_damaged_database_gets_a_clear_refusal_and_no_trace(tmp_path):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    entry = entry_ids(memory)[0]
    database = memory.path.with_suffix('.db')
    database.write_bytes(b'\x13not a database' * 300)
    with web_demo.serving(memory, TOKEN) as base:
        client = Raw(base)
        for path in ('/', '/entries', f'/entries/{entry}', '/dreams', '/review',
                     '/typed?q=dock'):
            status, headers, page = client.get(path)
            assert status == 200 or 'Refused.' in page, (path, status, page)
            assert 'Traceback' not in page and 'File "' not in page, path
            assert 'content-security-policy' in headers, path
        status, headers, page = client.get('/')
        assert status == 503 and 'cannot be read now' in page
        status, headers, page = client.change('/review/proposals/1', decision='approve')
        assert 'Refused.' in page and 'Traceback' not in page
    assert database.read_bytes() == b'\x13not a database' * 300


@contextlib.contextmanager
def app_on_a_socket(config):
    """Serve ``config``'s app with uvicorn on a thread (for what serve cannot be given)."""
    from robot_memory.web.app import create_app
    from robot_memory.web.page_server import make_server
    from robot_memory.web.page_server import ServerThread
    port = free_port()
    thread = ServerThread(make_server(create_app(config), '127.0.0.1', port)).start()
    try:
        deadline = time.monotonic() + 10
        while not thread.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield Raw(f'http://127.0.0.1:{port}')
    finally:
        thread.stop()


def test_an_unexpected_error_answers_with_the_refusal_page_and_no_trace(tmp_path):
    from robot_memory.web.app import page_config
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=1)
    config = page_config(memory, memory.path.with_suffix('.db'), None, TOKEN)

    def broken_clock():
        raise ZeroDivisionError('a secret detail of the failure')
    config.clock = broken_clock
    with app_on_a_socket(config) as client:
        status, headers, page = client.get('/entries')
    assert status == 500 and 'did not expect (ZeroDivisionError)' in page
    assert 'secret detail' not in page and 'Traceback' not in page
    assert 'content-security-policy' in headers


def test_the_nodes_diagnostics_render_inert_on_the_now_page(tmp_path):
    from robot_memory.web.app import page_config
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=1)
    # Any ROS publisher can put a status on /diagnostics: its words are an attacker's.
    rows = [{'name': 'memory_node: ' + XSS, 'level': XSS, 'message': XSS,
             'values': {XSS: XSS}}, {'name': 'ok', 'level': 0, 'message': 'fine', 'values': {}}]
    config = page_config(memory, memory.path.with_suffix('.db'), None, TOKEN,
                         health=lambda: rows)
    with app_on_a_socket(config) as client:
        status, headers, page = client.get('/')
    assert status == 200 and 'memory_node: &lt;img' in page
    assert '<img' not in page and '<script>' not in page and 'level-&lt;img' in page


@pytest.mark.parametrize('host, token, refusal', [
    ('0.0.0.0', None, 'needs an access token'),
    ('::', None, 'needs an access token'),
    ('192.0.2.1', None, 'needs an access token'),
    ('localhost.', None, 'needs an access token'),
    ('0.0.0.0', 'short', 'the access token has 5 characters'),
    ('0.0.0.0', '   ', 'the access token has 0 characters'),
])
def test_serve_beyond_loopback_needs_a_real_token(tmp_path, host, token, refusal):
    command = [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'serve', '--file',
               str(tmp_path / 'robot-memory.md'), '--host', host,
               '--port', str(free_port())]
    if token is not None:
        (tmp_path / 'token').write_text(token)
        command += ['--token-file', str(tmp_path / 'token')]
    env = {key: value for key, value in os.environ.items() if key != 'ROBOT_MEMORY_WEB_TOKEN'}
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 1 and refusal in run.stderr, run.stderr


def test_reading_every_page_writes_nothing(own):
    client, memory = own
    entry = entry_ids(memory)[0]
    before = state(memory)
    for path in ('/', '/entries', '/entries?show=resolved', '/entries?show=archived',
                 '/entries?show=peers', f'/entries/{entry}', '/dreams', '/review',
                 '/typed?q=dock', '/typed?q=Ben', f'/review?token={TOKEN}'):
        status, headers, page = client.get(path)
        assert status in (200, 303), path
    assert state(memory) == before


def test_two_pages_in_one_browser_keep_both_tokens(tmp_path):
    # Two tunnels to two robots end on one laptop's 127.0.0.1: their cookies share a name
    # space (cookies ignore the port), so each server's token cookie must have its own name.
    first = web_demo.build(tmp_path / 'first', dt.datetime.now(UTC), nights=2)
    second = web_demo.build(tmp_path / 'second', dt.datetime.now(UTC), nights=2)
    other = 'second-token-0123456789abcdef'
    with web_demo.serving(first, TOKEN) as one, web_demo.serving(second, other) as two:
        jar = {}
        for base, token in ((one, TOKEN), (two, other)):
            status, headers, page = Raw(base).get(f'/review?token={token}')
            name, value = headers['set-cookie'].split(';')[0].split('=', 1)
            jar[name] = value  # as a browser keeps them: by name, for 127.0.0.1
        cookies = '; '.join(f'{name}={value}' for name, value in jar.items())
        for base, token in ((one, TOKEN), (two, other)):
            status, headers, page = Raw(base).get('/review', headers={'Cookie': cookies})
            assert 'changes allowed' in page, base
