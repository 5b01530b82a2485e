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
What the operator's page shows, read over real HTTP from a real server (issue 35, point 4).

One history per confidence chart, a memory whose clock runs ahead of this computer's, text
as the brain gets it, charts that name what they show, bands in words, an undo preview
with its values, and the small words (counts, bytes, pages) right.
"""

import datetime as dt
import html
import json
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import UTC
from robot_memory.evidence.evidence_store import EvidenceStore
from robot_memory.review import undo
from robot_memory.web import charts
from support import web_demo
from support.paths import REPO
from support.web import entry_ids
from support.web import serve
from support.web import TOKEN

PLOT_TOP, PLOT_HEIGHT = charts.PAD, charts.HEIGHT - 2 * charts.PAD


@pytest.fixture
def ahead(tmp_path):
    """Yield (memory, client) of a memory two days ahead of this computer's clock."""
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC) + dt.timedelta(days=2))
    thread, client = serve(memory)
    yield memory, client
    thread.stop()


@pytest.fixture
def demo(tmp_path):
    """Yield (memory, client) of the demo memory, dreamt up to now."""
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC))
    thread, client = serve(memory)
    yield memory, client
    thread.stop()


def confidence_line(page: str) -> list:
    """Return the confidence chart's line as (x, confidence) points, in drawing order."""
    figure = re.search(r'<figure id="confidence-chart">(.*?)</figure>', page, re.S).group(1)
    path = re.search(r'<path d="([^"]+)"', figure).group(1)
    return [(float(x), 1.0 - (float(y) - PLOT_TOP) / PLOT_HEIGHT)
            for x, y in re.findall(r'[ML]([-\d.]+),([-\d.]+)', path)]


def header_percent(page: str) -> int:
    return int(re.search(r'\[(\d+)%\]', page).group(1))


def test_after_an_undo_the_confidence_chart_draws_one_history(demo):
    memory, client = demo
    with EvidenceStore(memory.path.with_suffix('.db')) as store:
        report = undo.undo(store, memory, dt.datetime.now(UTC), 'test', 'a false fault',
                           dream=7)
    changed = [change['id'] for change in report.entries if change['change'] == 'changed back']
    assert changed
    for entry_id in changed:
        status, page = client.request(f'/entries/{entry_id}')
        assert status == 200
        line = confidence_line(page)
        assert all(a[0] <= b[0] for a, b in zip(line, line[1:])), (entry_id, line)
        # One history: confidence only decays between the changes (the chart's event
        # dots), it does not zigzag between the state the undo replaced and the one it
        # restored, drawn over the same days.
        rises = sum(1 for a, b in zip(line, line[1:]) if b[1] > a[1] + 0.002)
        events = len(re.findall(r'<circle cx="[\d.]+" cy="154"', page))
        assert rises < events, (entry_id, rises, events)
        # ... and it ends where the header stands.
        assert abs(line[-1][1] * 100 - header_percent(page)) < 1.5, (entry_id, line[-1])


def test_a_memory_ahead_of_the_clock_is_shown_as_of_its_newest_stamp(ahead):
    memory, client = ahead
    for entry_id in entry_ids(memory):
        status, page = client.request(f'/entries/{entry_id}')
        assert status == 200
        assert 'This memory is ahead of this computer&#39;s clock' in page
        line = confidence_line(page)
        # The newest state is drawn, as late as the latest event, at the header's value.
        events = [float(x) for x in re.findall(r'<circle cx="([\d.]+)" cy="154"', page)]
        assert events and line[-1][0] >= max(events) - 0.2, (entry_id, line, events)
        assert abs(line[-1][1] * 100 - header_percent(page)) < 1.5, (entry_id, line[-1])
    for path in ('/', '/entries'):
        assert 'id="clock-note"' in client.request(path)[1], path


def test_an_edit_of_a_memory_ahead_of_the_clock_is_stamped_after_what_it_edits(ahead):
    memory, client = ahead
    entry_id = entry_ids(memory)[0]
    status, page = client.change(f'/entries/{entry_id}/edit', text='Encoder drops ticks',
                                 reason='clearer')
    assert status == 200, page
    with sqlite3.connect(memory.path.with_suffix('.db')) as conn:
        stamps = conn.execute('SELECT action, at FROM audit WHERE entry_id = ? ORDER BY id',
                              (entry_id,)).fetchall()
    assert stamps[-1][0] == 'manual'
    edited = parse_iso(stamps[-1][1])
    assert all(parse_iso(at) <= edited for _, at in stamps), stamps


def test_an_undo_of_a_memory_ahead_of_the_clock_is_refused_in_words_that_fit(ahead):
    # Only the way back is open: the last dream (7) at the clock that ran ahead may be taken
    # back (review/undo.py); an earlier dream's undo stamped now would come before dream 7.
    memory, client = ahead
    before = memory.path.read_bytes()
    status, page = client.change('/review/undo', dream='6')
    page = html.unescape(page)
    assert status == 409, page
    assert "the memory's last dream, at " in page
    assert "later than this computer's clock" in page and 'nothing was changed' in page
    assert 'check the system clock' not in page and 'went backwards' not in page
    assert memory.path.read_bytes() == before


def test_the_last_dream_of_a_memory_ahead_of_the_clock_can_be_taken_back(ahead):
    memory, client = ahead
    status, page = client.change('/review/undo', dream='7', confirm='yes',
                                 reason='the robot clock ran ahead')
    assert status == 200, html.unescape(page)
    with sqlite3.connect(memory.path.with_suffix('.db')) as conn:
        undos = conn.execute('SELECT COUNT(*) FROM undos').fetchone()[0]
    assert undos == 1


def hand_written(memory, text: str, tags=()) -> str:
    """Give the first entry ``text`` and ``tags`` as a person editing the file would."""
    now = dt.datetime.now(UTC)
    with memory.update(now) as result:
        entry = result.document.entries[0]
        result.document.entries[0] = entry.model_copy(update={'text': text,
                                                              'tags': list(tags)})
    return entry.id


def test_a_bidi_override_is_shown_as_the_brain_gets_it(demo):
    memory, client = demo
    entry_id = hand_written(memory, 'left \u202eright wheel', ['checked'])
    for path in ('/entries', f'/entries/{entry_id}', '/'):
        status, page = client.request(path, token=TOKEN)
        assert status == 200
        assert '\u202e' not in page, path
        assert 'left \\u202eright wheel' in page, path


def test_an_edit_carrying_a_bidi_override_is_refused(demo):
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    before = memory.path.read_bytes()
    for form in ({'text': 'fine \u202eenif'}, {'tags': 'ok, \u202ekcehc'}):
        status, page = client.change(f'/entries/{entry_id}/edit', reason='x', **form)
        page = html.unescape(page)
        assert status == 409 and 'U+202E (RIGHT-TO-LEFT OVERRIDE)' in page, page
        assert page.count('nothing was changed') == 1
    assert memory.path.read_bytes() == before


def test_evidence_charts_have_visible_titles_and_axis_names(demo):
    memory, client = demo
    status, page = client.request(f'/entries/{entry_ids(memory)[0]}')
    for figure, title, axis in (('daily-chart', 'Observations per day, by signature',
                                 'day (UTC)'),
                                ('hours-chart', 'Observations by hour of day (UTC)',
                                 'hour of day (UTC)')):
        svg = re.search(rf'<figure id="{figure}">(.*?)</figure>', page, re.S).group(1)
        assert f'class="chart-title">{title}</text>' in svg
        assert f'class="axis-label">{html.escape(axis)}</text>' in svg
        assert 'class="axis-label">observations</text>' in svg


def test_the_daily_legend_names_every_signature_in_full():
    battery = 'diagnostic|battery|power: battery|'
    daily = {battery + 'cell # voltage low': {'2026-05-01': 3},
             battery + 'cell # temperature high': {'2026-05-02': 1}}
    svg = charts.daily_chart(daily)
    legend = re.findall(r'class="legend"><title>[^<]*</title>([^<]*)</text>', svg)
    assert sorted(legend) == sorted(html.escape(name) for name in daily)
    long = 'diagnostic|' + 'x' * 200 + '|status A'
    legend = re.findall(r'class="legend"><title>[^<]*</title>([^<]*)</text>',
                        charts.daily_chart({long: {'2026-05-01': 1}}))
    assert legend[0].endswith('|status A') and len(legend[0]) == charts.LEGEND_CHARS


def test_a_band_is_named_in_words_beside_its_emoji(demo):
    memory, client = demo
    status, page = client.request('/entries')
    bands = re.findall(r'<td class="band">(\S+) (\w+)</td>', page)
    assert len(bands) == len(entry_ids(memory))
    names = {'🔴': 'high', '🟡': 'medium', '🟢': 'low'}
    assert all(names[emoji] == name for emoji, name in bands), bands
    status, page = client.request('/')
    assert re.search(r'🔴 high \d+, 🟡 medium \d+, 🟢 low \d+', page)
    status, page = client.request(f'/entries/{entry_ids(memory)[0]}')
    assert re.search(r'<span class="band">\S+ (high|medium|low)</span>', page)


def test_an_undo_preview_shows_each_value_before_and_after(demo):
    memory, client = demo
    with EvidenceStore(memory.path.with_suffix('.db')) as store:
        report = undo.undo(store, memory, dt.datetime.now(UTC), 'test', dream=7,
                           dry_run=True)
    status, page = client.change('/review/undo', dream='7', actor='alice')
    assert status == 200
    for change in report.entries:
        if change['change'] != 'changed back':
            continue
        before, after = change['before'], change['after']
        assert before['confidence'] != after['confidence']
        row = (f'<tr><th>confidence</th><td>{before["confidence"]}</td><td>→</td>'
               f'<td>{after["confidence"]}</td></tr>')
        assert row in page, change['id']
    # The confirm form keeps who previews: it does not ask "acting as" again.
    confirm = re.search(r'<form[^>]*id="confirm-undo">(.*?)</form>', page, re.S).group(1)
    assert '<input type="hidden" name="actor" value="alice">' in confirm
    assert '<input name="actor"' not in confirm


def test_counts_sizes_and_pages_read_right(tmp_path):
    memory = web_demo.build(tmp_path, dt.datetime.now(UTC), nights=2)
    memory.path.with_suffix('.db').unlink()  # a memory file whose database is not made yet
    thread, client = serve(memory)
    try:
        status, page = client.request('/')
        assert '(not created yet)' in page and 'yet bytes' not in page
        assert re.search(r'\(\d+ bytes\)', page)
        status, page = client.request('/entries?q=battery')
        assert '1 entry<' in page or '1 entry;' in page, page
        status, page = client.request('/entries?page=76')
        assert status == 200
        assert 'there is no page 76: the last is' in page and 'page 76 of' not in page
        assert '&page=1">page 1</a>' in page
    finally:
        thread.stop()


@pytest.mark.parametrize('query', ['kitchen door', 'where does the robot charge'])
def test_typed_memory_ranks_as_robot_memory_recall(tmp_path, monkeypatch, query):
    at = dt.datetime.now(UTC).replace(microsecond=0)
    memory = web_demo.build(tmp_path, at - dt.timedelta(hours=1))
    # Vectors in every environment (the semantic model may not be installed): the CLI
    # then adds them to keywords for a query keywords alone do not settle.
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'hashing')

    def cli_recall() -> list:
        done = subprocess.run(
            [sys.executable, str(REPO / 'bin' / 'robot-memory'), 'recall', query, '-k', '5',
             '--file', str(memory.path), '--at', format_iso(at), '--json'],
            capture_output=True, text=True, timeout=120, env=dict(os.environ))
        return [(hit['id'], f'{hit["score"]:.4f}') for hit in json.loads(done.stdout)['hits']]
    cli_recall()  # the first recall indexes the records' vectors, as the node does
    thread, client = serve(memory, clock=lambda: at)
    try:
        status, page = client.request(f'/typed?q={query.replace(" ", "+")}&k=5')
    finally:
        thread.stop()
    assert status == 200, page
    shown = re.findall(r'<tr><td>([\d.]+)</td><td>\w+</td><td>([\w-]+)</td>', page)
    expected = cli_recall()
    assert expected and [(record, score) for score, record in shown] == expected, page


def test_typed_memory_on_the_page_says_which_records_have_no_vector_yet(demo, monkeypatch):
    memory, client = demo
    monkeypatch.setenv('ROBOT_MEMORY_EMBEDDER', 'hashing')
    database = memory.path.with_suffix('.db')
    before = database.read_bytes()
    status, page = client.request('/typed?q=kitchen+door')
    assert status == 200
    assert re.search(r'records without a vector from [\w-]+ yet: 2, found by their words', page)
    assert 'robot-memory recall (or memory_node) indexes them' in page
    assert database.read_bytes() == before  # a look indexes nothing


def test_reasons_and_proposals_are_shown_as_the_brain_gets_them(demo):
    from robot_memory.review.proposing import ProposalQueue
    memory, client = demo
    entry_id = entry_ids(memory)[0]
    status, page = client.change(f'/entries/{entry_id}/edit', text='Encoder drops ticks',
                                 reason='clearer \u202ereason', actor='dana')
    assert status == 200
    with ProposalQueue.open(memory.path.with_suffix('.db')) as queue:
        queue.propose('learn', 'mcp', '', 'new semantic record: "The lift \u202eis out"',
                      {'text': 'The lift is out', 'type': 'semantic'},
                      dt.datetime.now(UTC), 3600.0)
    for path, shown in ((f'/entries/{entry_id}', 'clearer \\u202ereason'),
                        ('/review', 'The lift \\u202eis out')):
        status, page = client.request(path, token=TOKEN)
        assert shown in page and '\u202e' not in page, path
