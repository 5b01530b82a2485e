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

"""Active now and aborted action goals in a real memory_node (its own process)."""

import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request

from action_msgs.msg import GoalInfo
from action_msgs.msg import GoalStatus
from action_msgs.msg import GoalStatusArray
from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.qos import DurabilityPolicy
from rclpy.qos import QoSProfile
from rclpy.qos import ReliabilityPolicy
from unique_identifier_msgs.msg import UUID

from robot_memory.msg import ActiveNow
from robot_memory.srv import Dream
from robot_memory.srv import GetContext
from robot_memory.web.guards import csrf_mark
from robot_memory.web.guards import token_cookie
from support.processes import free_port
from support.ros_harness import NodeProcess
from support.ros_harness import wait_for
from support.ros_probe import call
from support.ros_probe import spin
from support.ros_probe import wait_ready
from support.web import fetch

TOKEN = 'active-token-0123456789abcdef'
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _status(level: int, message: str) -> DiagnosticArray:
    return DiagnosticArray(status=[DiagnosticStatus(level=bytes([level]), name='an: lidar',
                                                    hardware_id='lidar', message=message)])


def _goals(*states) -> GoalStatusArray:
    return GoalStatusArray(status_list=[
        GoalStatus(goal_info=GoalInfo(goal_id=UUID(uuid=[number] * 16)), status=status)
        for number, status in states])


def _acknowledge(port: int, source_key: str, actor: str) -> str:
    body = urllib.parse.urlencode({'csrf': csrf_mark(TOKEN), 'actor': actor,
                                   'source_key': source_key, 'reason': 'seen it'}).encode()
    request = urllib.request.Request(f'http://127.0.0.1:{port}/active/acknowledge', data=body,
                                     headers={'Cookie': f'{token_cookie(TOKEN)}={TOKEN}'})
    return urllib.request.urlopen(request, timeout=10).read().decode('utf-8')


def test_a_fault_is_active_now_acknowledged_on_the_page_and_cleared_by_ok(tmp_path, probe):
    token_file = tmp_path / 'token'
    token_file.write_text(TOKEN)
    port = free_port()
    node = NodeProcess(tmp_path, 'an1', active_hold_s=1.5, web_port=port,
                       web_token_file=str(token_file)).start()
    states = []
    probe.create_subscription(ActiveNow, f'{node.prefix}/active_now', states.append, LATCHED)
    try:
        wait_ready(probe, node)
        assert wait_for(lambda: states and not states[-1].faults, 10.0, spin=spin(probe))
        diagnostics = probe.create_publisher(DiagnosticArray, '/diagnostics', 100)
        diagnostics.publish(_status(0, 'ok'))
        diagnostics.publish(_status(2, 'no scans for 2 s'))
        assert wait_for(lambda: states[-1].faults, 10.0, spin=spin(probe)), node.log()
        [fault] = states[-1].faults
        assert fault.source_key == 'diagnostic|lidar|an: lidar' and fault.severity == 2
        assert fault.text == 'an: lidar (lidar): no scans for 2 s' and not fault.acknowledged
        assert states[-1].text.startswith('Active now (faults reported at this moment')

        reply = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
        assert [item.source_key for item in reply.active_now] == [fault.source_key]
        assert reply.text.split('\n')[1].startswith('Active now')
        assert '"an: lidar (lidar): no scans for 2 s"' in reply.text
        assert reply.active_now_text in reply.text

        page = fetch(f'http://127.0.0.1:{port}/')
        assert 'id="active-now"' in page and 'no scans for 2 s' in page
        done = _acknowledge(port, fault.source_key, 'alice')
        assert 'acknowledged: an: lidar (lidar): no scans for 2 s' in done
        assert wait_for(lambda: states[-1].faults and states[-1].faults[0].acknowledged,
                        10.0, spin=spin(probe))
        assert states[-1].faults[0].acknowledged_by == 'web:alice'
        reply = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
        assert reply.active_now[0].acknowledged and '[acknowledged by "web:alice"]' in reply.text
        conn = sqlite3.connect(f'file:{tmp_path / "robot-memory.db"}?mode=ro', uri=True)
        try:
            audit = conn.execute('SELECT entry_id, actor, reason FROM audit WHERE action = ?',
                                 ('acknowledge',)).fetchall()
        finally:
            conn.close()
        assert audit == [(fault.source_key, 'web:alice', 'seen it')]
        # Acknowledging what is not active is refused, and says what to do.
        try:
            _acknowledge(port, 'diagnostic|nothing|here', 'alice')
            raise AssertionError('acknowledged a fault that is not active')
        except urllib.error.HTTPError as error:
            assert error.code == 409 and 'is not active now' in error.read().decode()

        # OK reports for the hold time clear it; one OK between errors does not.
        for _ in range(8):
            diagnostics.publish(_status(0, 'ok'))
            time.sleep(0.3)
        assert wait_for(lambda: not states[-1].faults, 10.0, spin=spin(probe)), node.log()
        reply = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
        assert list(reply.active_now) == [] and 'Active now' not in reply.text
    finally:
        assert node.stop() == 0


def test_aborted_goals_are_evidence_active_now_and_an_entry_after_the_dream(tmp_path, probe):
    node = NodeProcess(tmp_path, 'an2', active_hold_s=60.0,
                       action_names=['/an2_navigate_to_pose']).start()
    states = []
    probe.create_subscription(ActiveNow, f'{node.prefix}/active_now', states.append, LATCHED)
    try:
        wait_ready(probe, node, topic='/an2_navigate_to_pose/_action/status')
        # As an action server publishes it: latched, every goal it knows at each change.
        status = probe.create_publisher(GoalStatusArray, '/an2_navigate_to_pose/_action/status',
                                        LATCHED)
        assert wait_for(lambda: status.get_subscription_count() > 0, 10.0, spin=spin(probe))
        history = []
        for number in range(1, 5):
            history.append((number, 2))
            status.publish(_goals(*history))
            time.sleep(0.1)
            history[-1] = (number, GoalStatus.STATUS_ABORTED if number != 3
                           else GoalStatus.STATUS_CANCELED)
            status.publish(_goals(*history))
            time.sleep(0.1)
        assert wait_for(lambda: states and states[-1].faults, 10.0, spin=spin(probe)), \
            node.log()

        def counted() -> int:  # the topic tells changes; GetContext the count at the call
            reply = call(probe, GetContext, f'{node.prefix}/get_context', GetContext.Request())
            return reply.active_now[0].count if reply.active_now else 0
        assert wait_for(lambda: counted() == 3, 10.0), counted()  # the canceled goal is not
        [fault] = states[-1].faults
        assert fault.source_key == 'diagnostic|action|/an2_navigate_to_pose'
        assert fault.text == '/an2_navigate_to_pose (action): goal aborted (status 6)'
        database = tmp_path / 'robot-memory.db'

        def aborted() -> int:
            conn = sqlite3.connect(f'file:{database}?mode=ro', uri=True)
            try:
                return conn.execute(
                    'SELECT count(*) FROM observations WHERE source_key = ? AND severity = 2',
                    ('diagnostic|action|/an2_navigate_to_pose',)).fetchone()[0]
            except sqlite3.OperationalError:  # not created yet
                return 0
            finally:
                conn.close()
        assert wait_for(lambda: database.exists() and aborted() == 3, 10.0), node.log()
        reply = call(probe, Dream, f'{node.prefix}/dream', Dream.Request(), timeout=60.0)
        assert reply.success, reply.message
        text = node.memory_file.read_text(encoding='utf-8')
        assert '/an2_navigate_to_pose' in text and 'goal aborted' in text, text
    finally:
        assert node.stop() == 0


def test_the_page_beside_the_node_shows_active_now_live_and_acknowledges_it(tmp_path, probe):
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    chromium = shutil.which('chromium') or shutil.which('chromium-browser')
    driver_path = shutil.which('chromedriver')
    assert chromium and driver_path, 'the browser tests need chromium and chromium-driver'
    token_file = tmp_path / 'token'
    token_file.write_text(TOKEN)
    port = free_port()
    node = NodeProcess(tmp_path, 'an3', active_hold_s=60.0, web_port=port,
                       web_token_file=str(token_file)).start()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(driver_path), options=options)
    browser.set_page_load_timeout(30)
    try:
        wait_ready(probe, node)
        fetch(f'http://127.0.0.1:{port}/')
        browser.get(f'http://127.0.0.1:{port}/?token={TOKEN}')
        section = browser.find_element(By.ID, 'active-now').text
        assert 'Nothing is failing at this moment.' in section
        WebDriverWait(browser, 10).until(
            lambda d: d.find_element(By.ID, 'live').text == 'live')
        diagnostics = probe.create_publisher(DiagnosticArray, '/diagnostics', 100)
        assert wait_for(lambda: diagnostics.get_subscription_count() > 0, 10.0,
                        spin=spin(probe))
        diagnostics.publish(_status(2, 'no scans for 2 s'))

        def shown(text):
            return lambda d: text in d.find_element(By.ID, 'active-now').text
        # No reload: the live stream swaps the page when the live state changes.
        WebDriverWait(browser, 15).until(shown('an: lidar (lidar): no scans for 2 s'))
        assert 'Active now (faults reported' in browser.find_element(
            By.ID, 'context-block').text
        form = browser.find_element(By.CSS_SELECTOR, 'form.acknowledge')
        form.find_element(By.NAME, 'actor').send_keys('bob')
        form.find_element(By.TAG_NAME, 'button').click()
        WebDriverWait(browser, 10).until(lambda d: 'Acknowledged' in d.title
                                         or 'acknowledged:' in d.page_source)
        browser.get(f'http://127.0.0.1:{port}/')
        WebDriverWait(browser, 10).until(shown('by web:bob at'))
        assert '[acknowledged by "web:bob"]' in browser.find_element(By.ID,
                                                                     'context-block').text
    finally:
        browser.quit()
        assert node.stop() == 0
