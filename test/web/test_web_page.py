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
The operator's page driven by a real headless Chromium (Selenium) against a real server.

``robot-memory serve`` runs in its own process on a demo memory; the browser loads,
filters, opens an entry, approves a proposal, previews and confirms an undo, sees a new
proposal arrive without a reload, and is refused a change without the token. Served with a
fleet store, it promotes a fault robots share on the Fleet view and revokes the lesson. With
ROBOT_MEMORY_WEB_SCREENSHOTS=1 the screenshots of docs/operator-page/ are written anew.
"""

import datetime as dt
import os
import pathlib
import re
import shutil
import tempfile
import time

import pytest

from robot_memory.cli.main import main
from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.fleet.fleet_store import fault_signature
from robot_memory.fleet.fleet_store import FleetStore
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.review.proposing import ProposalQueue
from robot_memory.web.app import token_cookie
from support import web_demo
from support.fleet import ENCODER
from support.fleet import fleet_with_faults
from support.fleet import make_robots
from support.paths import REPO

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
DRIVER = shutil.which('chromedriver')
SHOTS = REPO / 'docs' / 'operator-page'
TOKEN = 'demo-token-0123456789abcdef'
# The screenshots show the memory's paths: a neutral directory, not a test's temporary one.
SHOT_HOME = pathlib.Path(tempfile.gettempdir()) / 'robot'


def shooting() -> bool:
    return os.environ.get('ROBOT_MEMORY_WEB_SCREENSHOTS') == '1'


@pytest.fixture
def served(tmp_path):
    """Yield (base url, memory file, directory) of a demo memory that robot-memory serve serves."""
    directory = tmp_path
    if shooting():
        shutil.rmtree(SHOT_HOME, ignore_errors=True)
        SHOT_HOME.mkdir()
        directory = SHOT_HOME
    memory = web_demo.build(directory, dt.datetime.now(UTC))
    with web_demo.serving(memory, TOKEN) as base:
        yield base, memory, directory
    if shooting():
        shutil.rmtree(SHOT_HOME, ignore_errors=True)


@pytest.fixture
def browser():
    """Yield a headless Chromium; scripts/setup.sh installs chromium and chromium-driver."""
    assert CHROMIUM and DRIVER, ('the browser tests need chromium and chromium-driver: '
                                 'bash scripts/setup.sh installs them (apt, as root)')
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage',
                 '--window-size=1280,1000', '--disable-gpu'):
        options.add_argument(flag)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})  # policy violations
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.implicitly_wait(0)
    # A page that never loads is a failure, not a wait: streams of earlier pages once held
    # all six connections a browser allows a host, and the next change stalled a minute.
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def until(driver, condition, timeout_s: float = 10.0):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait
    # A live update replaces the page's elements: an element found a moment ago may be gone
    # by the time the condition reads it; the wait asks again rather than failing.
    return WebDriverWait(driver, timeout_s, ignored_exceptions=(
        StaleElementReferenceException,)).until(condition)


def shot(driver, name: str) -> None:
    if shooting():
        assert 'pytest' not in driver.find_element('tag name', 'body').text, name
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / f'{name}.png'))


def fresh(driver, action, timeout_s: float = 10.0):
    """
    Return ``action(driver)``, run again while a live update replaced what it found.

    The page swaps its main part when the memory changes, so an element found a moment ago
    may be gone; the action finds everything it uses itself, so a rerun starts clean.
    """
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.common.exceptions import WebDriverException
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return action(driver)
        except WebDriverException as error:
            # Chromium reports an element swapped out mid-read as an inspector error, not
            # as a stale element: "Node with given id does not belong to the document".
            gone = (isinstance(error, StaleElementReferenceException)
                    or 'does not belong to the document' in str(error))
            if not gone or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def text_of(driver, css: str) -> str:
    from selenium.webdriver.common.by import By
    return fresh(driver, lambda d: d.find_element(By.CSS_SELECTOR, css).text)


def submit(driver, form_css: str, button_css: str, **fields) -> None:
    """Fill the form's fields (an int picks a menu's option) and press the button, afresh."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    def fill_and_press(d):
        form = d.find_element(By.CSS_SELECTOR, form_css)
        for name, value in fields.items():
            box = form.find_element(By.NAME, name)
            if isinstance(value, int):
                Select(box).select_by_index(value)
            else:
                box.clear()
                box.send_keys(value)
        form.find_element(By.CSS_SELECTOR, button_css).click()
    fresh(driver, fill_and_press)


def test_an_operator_sees_filters_opens_approves_and_undoes(served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    browser.get(f'{base}/?token={TOKEN}')
    # Now: the block as the brain receives it; the token became a cookie and left the URL.
    assert browser.current_url == f'{base}/'
    block = text_of(browser, '#context-block')
    assert '🟡 [' in block or '🔴 [' in block
    assert 'changes allowed' in text_of(browser, '#mode')
    facts = text_of(browser, 'table.facts')
    assert re.search(r'🔴 high \d+, 🟡 medium \d+, 🟢 low \d+', facts), facts
    assert re.search(r'robot-memory\.db \(\d+ bytes\)', facts), facts
    shot(browser, 'now')
    # Entries: filter by a search word.
    browser.get(f'{base}/entries')
    assert text_of(browser, '#count').startswith('5 entries')
    submit(browser, '#filters', '#apply', q='encoder')
    until(browser, lambda d: text_of(d, '#count').startswith('2 entries'))
    rows = fresh(browser, lambda d: [row.text for row in d.find_elements(
        By.CSS_SELECTOR, '#entries tbody tr')])
    assert len(rows) == 2 and all('encoder' in row for row in rows)
    bands = fresh(browser, lambda d: [cell.text for cell in d.find_elements(
        By.CSS_SELECTOR, '#entries td.band')])
    assert all(band.split()[-1] in ('high', 'medium', 'low') for band in bands), bands
    shot(browser, 'entries')
    # One entry: its plots and its whole audit history.
    fresh(browser, lambda d: d.find_element(By.CSS_SELECTOR, '#entries tbody tr a').click())
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#confidence-chart svg path'))
    assert browser.find_elements(By.CSS_SELECTOR, '#daily-chart svg rect[fill]')
    history = text_of(browser, '#history')
    assert 'create autodream' in history
    # The evidence charts say what they show, in words on the chart, not only in tooltips.
    for chart, title in (('#daily-chart', 'Observations per day, by signature'),
                         ('#hours-chart', 'Observations by hour of day (UTC)')):
        assert text_of(browser, f'{chart} .chart-title') == title
        assert browser.find_element(By.CSS_SELECTOR, f'{chart} .chart-title').is_displayed()
    legend = text_of(browser, '#daily-chart .legend')
    assert legend.startswith('diagnostic|') and legend.endswith('dropped ticks'), legend
    shot(browser, 'entry')
    # Review: approve the distiller's reword, naming who approves.
    browser.get(f'{base}/review')
    assert web_demo.REWORD in text_of(browser, '#proposal-1')
    shot(browser, 'review')
    submit(browser, '#proposal-1 form', 'button.approve', actor='alice')
    until(browser, lambda d: d.find_elements(By.ID, 'done'))
    assert text_of(browser, '#done').startswith('approved #1')
    texts = [entry.text for entry in memory.load(dt.datetime.now(UTC)).document.entries]
    assert web_demo.REWORD in texts
    # Read back through the page (the database stays the server's alone during the flow).
    browser.get(f'{base}/review')
    decided = fresh(browser, lambda d: d.find_element(By.ID, 'decided').get_attribute(
        'textContent'))
    assert '#1 approved by web:alice' in decided
    assert not browser.find_elements(By.ID, 'proposal-1')
    # Undo: preview the last dream's undo, then confirm exactly that.
    before = memory.path.read_bytes()
    submit(browser, '#undo', '#preview', dream=1, actor='alice')  # 1: the newest dream
    until(browser, lambda d: d.find_elements(By.ID, 'undo-summary'))
    assert text_of(browser, '#undo-summary').startswith('would take back the changes of dream')
    preview = text_of(browser, '#undo-lines')
    assert 'entry ' in preview and re.search(r'confidence \d\.\d+ → \d\.\d+', preview), preview
    # Who previews is who confirms: the confirm form does not ask again.
    assert not browser.find_elements(By.CSS_SELECTOR, '#confirm-undo input[name=actor]'
                                                      ':not([type=hidden])')
    assert 'acting as alice' in text_of(browser, '#confirm-undo')
    assert memory.path.read_bytes() == before, 'a preview changed the file'
    shot(browser, 'undo-preview')
    submit(browser, '#confirm-undo', '#confirm', reason='the right encoder was a cable, fixed')
    until(browser, lambda d: d.find_elements(By.ID, 'undo-done'))
    assert text_of(browser, '#undo-summary').startswith('undo 1: took back the changes of dream')
    assert memory.path.read_bytes() != before
    with EvidenceStore(directory / 'robot-memory.db') as store:
        from robot_memory.review import undo
        [item] = [item for item in undo.log(store.db.conn) if item['kind'] == 'undo']
    assert item['actor'] == 'web:alice'


def test_a_new_proposal_appears_without_a_reload(served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    browser.get(f'{base}/review?token={TOKEN}')
    until(browser, lambda d: text_of(d, '#live') == 'live')
    browser.execute_script('window.stillThisPage = true;')
    assert not browser.find_elements(By.ID, 'proposal-2')
    with ProposalQueue.open(directory / 'robot-memory.db') as queue:
        queue.propose('learn', 'mcp', '', 'new semantic record: "The lift is out of order"',
                      {'text': 'The lift is out of order', 'type': 'semantic'},
                      dt.datetime.now(UTC), 3600.0)
    until(browser, lambda d: d.find_elements(By.ID, 'proposal-2'), timeout_s=15)
    assert browser.execute_script('return window.stillThisPage === true;')
    assert 'The lift is out of order' in text_of(browser, '#proposal-2')


def test_a_change_without_the_token_is_refused_on_the_page(served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    browser.get(f'{base}/review')
    # Without the token the page offers no change at all.
    assert 'view only' in text_of(browser, '#mode')
    assert not browser.find_elements(By.CSS_SELECTOR, 'form.change')
    # A form kept from before the token cookie was lost is refused, and nothing changes.
    browser.get(f'{base}/review?token={TOKEN}')
    before = memory.path.read_bytes()
    browser.delete_cookie(token_cookie(TOKEN))
    submit(browser, '#proposal-1 form', 'button.approve', actor='mallory')
    until(browser, lambda d: d.find_elements(By.ID, 'refusal'))
    assert 'a change needs the access token' in text_of(browser, '#refusal')
    shot(browser, 'refused')
    assert memory.path.read_bytes() == before
    with ProposalQueue.open(directory / 'robot-memory.db') as queue:
        assert queue.get(1).status == 'pending'


def test_a_stored_script_stays_text_and_the_policy_blocks_nothing_of_ours(served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    attack = '<img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script>'
    entry = memory.load(dt.datetime.now(UTC)).document.entries[0].id
    browser.get(f'{base}/entries/{entry}?token={TOKEN}')
    submit(browser, '#edit', 'button[type=submit]', text=attack, actor='mallory',
           reason='a stored script, tried')
    until(browser, lambda d: d.find_elements(By.ID, 'done'))
    for path in ('/', '/entries', f'/entries/{entry}', '/review'):
        browser.get(base + path)
        # Our own script runs under the policy (the live badge), the stored one never does.
        until(browser, lambda d: text_of(d, '#live') == 'live')
        assert browser.execute_script('return window.pwned === undefined'), path
    assert text_of(browser, '#proposal-1')  # the Review page rendered
    browser.get(f'{base}/entries/{entry}')
    assert text_of(browser, '#entry-text') == attack
    violations = [line['message'] for line in browser.get_log('browser')
                  if 'Content Security Policy' in line['message']]
    assert not violations


def test_the_flows_hold_while_live_updates_replace_the_page_under_them(served, browser):
    import threading
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    stop = threading.Event()

    def touch():  # the memory file changes under the page (as the node's writes do)
        while not stop.wait(0.3):
            os.utime(memory.path)
    toucher = threading.Thread(target=touch, daemon=True)
    toucher.start()
    try:
        for _ in range(3):
            browser.get(f'{base}/entries?token={TOKEN}')
            until(browser, lambda d: text_of(d, '#live').startswith('updated'))
            submit(browser, '#filters', '#apply', q='encoder')
            until(browser, lambda d: text_of(d, '#count').startswith('2 entries'))
            until(browser, lambda d: text_of(d, '#live').startswith('updated'))
            assert text_of(browser, '#count').startswith('2 entries')
        browser.get(f'{base}/review')
        until(browser, lambda d: text_of(d, '#live').startswith('updated'))
        submit(browser, '#proposal-1 form', 'button.approve', actor='alice')
        until(browser, lambda d: d.find_elements(By.ID, 'done'))
        assert text_of(browser, '#done').startswith('approved #1')
    finally:
        stop.set()
        toucher.join()


def test_a_form_typed_in_is_kept_when_the_memory_changes(served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    browser.get(f'{base}/review?token={TOKEN}')
    until(browser, lambda d: text_of(d, '#live') == 'live')
    reason = browser.find_element(By.CSS_SELECTOR, '#proposal-1 input[name=reason]')
    reason.send_keys('half a thought')
    browser.find_element(By.TAG_NAME, 'h1').click()  # the person looks elsewhere
    with ProposalQueue.open(directory / 'robot-memory.db') as queue:
        queue.propose('learn', 'mcp', '', 'new semantic record: "The lift is out of order"',
                      {'text': 'The lift is out of order', 'type': 'semantic'},
                      dt.datetime.now(UTC), 3600.0)
    until(browser, lambda d: 'reload to see it' in text_of(d, '#live'), timeout_s=15)
    assert reason.get_attribute('value') == 'half a thought'
    assert not browser.find_elements(By.ID, 'proposal-2')


def test_a_bidi_override_in_an_entry_reads_as_the_brain_gets_it(served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    with memory.update(dt.datetime.now(UTC)) as result:
        entry = result.document.entries[0]
        result.document.entries[0] = entry.model_copy(update={
            'text': 'left \u202eright wheel', 'tags': ['checked']})
    browser.get(f'{base}/entries?q=wheel')
    row = fresh(browser, lambda d: [item.text for item in d.find_elements(
        By.CSS_SELECTOR, '#entries tbody tr') if 'right wheel' in item.text])[0]
    # The override is shown as its escape, as in the block: the tag beside it stays
    # "checked", not reversed, and nothing of the row reads right to left.
    assert 'left \\u202eright wheel' in row and '\u202e' not in row, row
    assert 'checked' in row
    browser.get(base + '/')
    block = text_of(browser, '#context-block')
    assert 'left \\u202eright wheel' in block


def _recording(directory: pathlib.Path) -> tuple:
    """Write a black-box recording of the demo's first linked entry; return (entry, bytes)."""
    from robot_memory.evidence import blackbox
    database = directory / 'robot-memory.db'
    with EvidenceStore(database) as store:
        conn = store.db.conn
        signature, entry_id = conn.execute(
            'SELECT signature, entry_id FROM signatures WHERE entry_id IS NOT NULL '
            'ORDER BY entry_id LIMIT 1').fetchone()
        folder = directory / 'robot-memory.blackbox'
        folder.mkdir()
        now_ns = time.time_ns()
        path = folder / blackbox.recording_name(signature, now_ns)
        messages = [(now_ns - 10**9 + index * 10**8, '/scan', bytes(400)) for index in range(12)]
        size, digest = blackbox.write_recording(path, {'/scan': ('sensor_msgs/msg/LaserScan',
                                                                 None)}, messages)
        frame = {'/battery_state': {'type': 'sensor_msgs/msg/BatteryState', 'stamp': 1.0,
                                    'value': {'voltage': 11.8, 'percentage': 0.42,
                                              'current': -1.5, 'present': True}},
                 '/odom': {'type': 'nav_msgs/msg/Odometry',
                           'missing': 'no message since the node started'}}
        window = blackbox.Window(signature, 'diagnostic|x|y', now_ns, now_ns - 10**9,
                                 now_ns + 2 * 10**8)
        with store.db.atomic(immediate=True):
            blackbox.record(conn, path, window, size, ['/scan'], digest, frame)
    return entry_id, path.read_bytes()


def test_an_entry_lists_its_recordings_plots_the_freeze_frame_and_downloads_with_token(
        served, browser):
    from selenium.webdriver.common.by import By
    base, memory, directory = served
    entry_id, content = _recording(directory)
    browser.get(f'{base}/entries/{entry_id}')  # no token yet: listed, not offered
    row = text_of(browser, '#recordings tr:nth-child(2)')
    assert '/scan' in row and 'download needs the access token' in row, row
    assert re.search(r'\d+(\.\d)? (kB|B)', row), row
    bars = fresh(browser, lambda d: [item.get_attribute('textContent') for item in
                                     d.find_elements(By.CSS_SELECTOR, '.freeze-chart rect title')])
    assert bars == ['/battery_state current = -1.5', '/battery_state percentage = 0.42',
                    '/battery_state voltage = 11.8'], bars
    assert '/odom: no message since the node started' in browser.find_element(
        By.TAG_NAME, 'main').text
    blocked = browser.execute_async_script(
        'var done = arguments[0]; fetch("/blackbox/1").then(function (r) { done(r.status); });')
    assert blocked == 403
    browser.get(f'{base}/entries/{entry_id}?token={TOKEN}')
    link = fresh(browser, lambda d: d.find_element(By.CSS_SELECTOR, '#recordings a'))
    assert link.get_attribute('href') == f'{base}/blackbox/1'
    got = browser.execute_async_script(
        'var done = arguments[0]; fetch("/blackbox/1").then(function (r) { return '
        'r.arrayBuffer(); }).then(function (b) { done(b.byteLength); });')
    assert got == len(content) and content.startswith(b'\x89MCAP')
    shot(browser, 'entry-recordings')
    # A recording deleted by hand stays listed, marked gone, and is not offered.
    for path in (directory / 'robot-memory.blackbox').iterdir():
        path.unlink()
    browser.get(f'{base}/entries/{entry_id}')
    assert 'gone (deleted by hand?)' in text_of(browser, '#recordings')
    gone = browser.execute_async_script(
        'var done = arguments[0]; fetch("/blackbox/1").then(function (r) { done(r.status); });')
    assert gone == 404


def test_an_operator_promotes_a_shared_fault_and_revokes_it_on_the_fleet_view(tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    robots = make_robots(tmp_path / 'keys')
    store = str(tmp_path / 'fleet.db')
    with FleetStore(store, robots.trust) as kept:  # heard from a minute ago, one silent
        fleet_with_faults(kept, robots, dt.datetime.now(UTC).replace(microsecond=0)
                          - dt.timedelta(minutes=1))
    key, public = tmp_path / 'fleet.pem', tmp_path / 'fleet.pub'
    assert main(['fleet', 'keygen', str(key), str(public)]) == 0
    memory = MemoryFile(tmp_path / 'robot-memory.md')
    memory.save(MemoryDocument(rrn=robots.a.rrn, last_updated=dt.datetime.now(UTC), entries=[]))
    encoder = f'#fault-{fault_signature("hardware_observation", ENCODER)}'
    with web_demo.serving(memory, TOKEN, '--fleet-store', store, '--fleet-key', str(key)) as base:
        browser.get(f'{base}/fleet?token={TOKEN}')
        assert '2 robots' in text_of(browser, encoder) and ENCODER in text_of(browser, encoder)
        assert robots.c.rrn in text_of(browser, '#silent')
        shot(browser, 'fleet')
        # to every robot of model rover-2: the fault's model is chosen already
        assert Select(fresh(browser, lambda d: d.find_element(
            By.CSS_SELECTOR, f'{encoder} select[name=to]'))).first_selected_option.text == \
            'model rover-2'
        submit(browser, f'{encoder} form', 'button', actor='alice',
               reason='seen on two rovers')
        until(browser, lambda d: d.find_elements(By.ID, 'done'))
        assert 'to every robot of model rover-2; audited' in text_of(browser, '#done')
        browser.get(f'{base}/fleet')
        lesson = text_of(browser, '.lesson')
        assert 'active · every robot of model rover-2' in lesson
        assert 'promote · web:alice: seen on two rovers' in lesson
        submit(browser, '.lesson form', 'button', reason='fixed in 1.5')
        until(browser, lambda d: d.find_elements(By.ID, 'done'))
        assert 'revoked on every robot of model rover-2' in text_of(browser, '#done')
        browser.get(f'{base}/fleet')
        assert 'revoke · web:alice: fixed in 1.5' in text_of(browser, '.lesson')
        assert not browser.find_elements(By.CSS_SELECTOR, '.lesson form')
