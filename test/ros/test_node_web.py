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


"""memory_node with ``web_port`` set serves the operator's page beside it (a real node process)."""

import socket
import time

from support.processes import free_port
from support.ros_harness import NodeProcess
from support.ros_probe import health
from support.web import fetch

TOKEN = 'node-token-0123456789abcdef'


def test_the_node_serves_the_page_with_its_health_and_stops_it(tmp_path):
    token_file = tmp_path / 'token'
    token_file.write_text(TOKEN)
    port = free_port()
    node = NodeProcess(tmp_path, 'it_web', web_port=port,
                       web_token_file=str(token_file)).start()
    try:
        page = fetch(f'http://127.0.0.1:{port}/')
        # The node's own /diagnostics statuses, the same memory file.
        assert 'robot_memory: memory file' in page and 'robot_memory: dream' in page
        assert str(node.memory_file) in page
        assert 'robot_memory: operator page' in page
        assert f'serving http://127.0.0.1:{port}/' in page
    finally:
        assert node.stop() == 0
    assert f'http://127.0.0.1:{port}/?token={TOKEN}' in node.log()
    with socket.socket() as sock:  # no one listens any more: the server stopped with the node
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        sock.bind(('127.0.0.1', port))


def test_serve_with_diagnostics_shows_a_running_nodes_health(tmp_path):
    import signal
    import subprocess
    import sys

    from support.paths import REPO
    node = NodeProcess(tmp_path, 'it_web_diag').start()
    port = free_port()
    serve = subprocess.Popen([sys.executable, str(REPO / 'bin' / 'robot-memory'), 'serve',
                              '--file', str(node.memory_file), '--port', str(port),
                              '--diagnostics', '--read-only'],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        page = fetch(f'http://127.0.0.1:{port}/')
        deadline = time.monotonic() + 30
        while 'robot_memory: memory file' not in page and time.monotonic() < deadline:
            time.sleep(0.5)
            page = fetch(f'http://127.0.0.1:{port}/')
        assert 'robot_memory: memory file' in page and 'robot_memory: evidence' in page
    finally:
        serve.send_signal(signal.SIGINT)  # Ctrl-C: the page and its ROS listener stop cleanly
        assert serve.wait(20) == 0, serve.stdout.read()
        assert node.stop() == 0


def test_a_public_address_without_a_token_is_refused_and_the_node_runs_on(tmp_path):
    node = NodeProcess(tmp_path, 'it_web_public', web_port=free_port(),
                       web_host='0.0.0.0').start()
    try:
        deadline = time.monotonic() + 30
        while 'robot_memory ready' not in node.log() and time.monotonic() < deadline:
            time.sleep(0.2)
        log = node.log()
        assert "operator's page not started: serving on 0.0.0.0 reaches beyond this " \
               'machine, so it needs an access token' in log
        assert node.process.poll() is None
    finally:
        assert node.stop() == 0


def test_a_port_already_taken_shows_in_the_nodes_health(tmp_path, probe):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        node = NodeProcess(tmp_path, 'it_web_taken', web_port=port).start()
        try:
            status = health(probe, 'operator page', timeout=30.0, where=node.rrn)
            if status['_message'] == 'starting':  # the first report, before the page started
                status = health(probe, 'operator page', timeout=10.0, where=node.rrn)
            assert status['_level'] == 2, status  # ERROR
            assert status['_message'].startswith(
                f'not started: cannot listen on 127.0.0.1:{port}: '), status
            assert 'in use' in status['_message'], status
            assert status['port'] == str(port), status
            assert "operator's page not started: cannot listen" in node.log()
            assert node.process.poll() is None  # the node runs on without its page
        finally:
            assert node.stop() == 0
