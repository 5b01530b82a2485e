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
The signal that makes an entry's learned condition, around its recent episodes.

``condition_charts(conn, signatures, text)`` finds the condition an entry states (``when
linear speed ≥ 0.45 m/s``, ``dream.conditions``), the context signal it names (by its
words, ``evidence.signals.label``), and draws that signal's per-minute means over
WINDOW_S either side of each of the last EPISODES episodes, the episode shaded and the
threshold dashed: so a person sees why. Reads the evidence database only.
"""

import html
import re
import sqlite3

from robot_memory.common.timeutil import from_epoch
from robot_memory.dream.pattern import History
from robot_memory.evidence import signals

EPISODES = 3
WINDOW_S = 3600.0
WIDTH = 640
HEIGHT = 150
PAD = 34
_WHEN = re.compile(r'when (?P<label>.+?) (?P<op>[≥≤]) (?P<value>-?\d+(?:\.\d+)?)')


def _signal_name(conn: sqlite3.Connection, words: str):
    names = [row[0] for row in conn.execute('SELECT DISTINCT name FROM signal_hours')]
    for name in sorted(names):
        if signals.label(name)[0] == words:
            return name
    return None


def charts_for(source, signatures: list, text: str) -> list:
    """Return ``condition_charts`` read from the operator page's ``source`` database."""
    conn = source.database()
    if conn is None:
        return []
    try:
        return condition_charts(conn, signatures, text)
    finally:
        conn.close()


def condition_charts(conn: sqlite3.Connection, signatures: list, text: str) -> list:
    """Return SVG charts of the condition's signal around the recent episodes ([] if none)."""
    found = _WHEN.search(text or '')
    if found is None or not signatures:
        return []
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'signal_hours'").fetchone() is None:
        return []
    name = _signal_name(conn, found['label'])
    if name is None:
        return []
    marks = ', '.join('?' for _ in signatures)
    episodes = []
    for (history,) in conn.execute(
            f'SELECT history FROM signatures WHERE signature IN ({marks})', signatures):
        episodes.extend(History.from_json(history).episodes)
    charts = []
    for start, end, *_ in sorted(episodes)[-EPISODES:]:
        series = signals.read(conn, start - WINDOW_S, end + WINDOW_S).get(name)
        if series is None or not len(series.starts):
            continue
        points = list(zip(series.starts, series.means))
        charts.append(signal_chart(points, (start, end), float(found['value']),
                                   f'{found["label"]} around the episode of '
                                   f'{from_epoch(start):%Y-%m-%d %H:%M} UTC'))
    return charts


def signal_chart(points: list, episode: tuple, threshold: float, title: str) -> str:
    """Draw (time, value) as a line, the episode shaded red and the threshold dashed."""
    first = min(points[0][0], episode[0])
    last = max(points[-1][0], episode[1]) + signals.INTERVAL_S
    values = [value for _, value in points] + [threshold]
    low, high = min(values), max(values)
    span, height = (last - first) or 1.0, (high - low) or 1.0

    def x(at: float) -> float:
        return PAD + (at - first) / span * (WIDTH - 2 * PAD)

    def y(value: float) -> float:
        return PAD + (1.0 - (value - low) / height) * (HEIGHT - 2 * PAD)

    shade = max(1.0, x(episode[1]) - x(episode[0]))
    body = [f'<rect x="{x(episode[0]):.1f}" y="{PAD}" width="{shade:.1f}" '
            f'height="{HEIGHT - 2 * PAD}" fill="#cc0000" fill-opacity="0.25">'
            '<title>the fault</title></rect>',
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(threshold):.1f}" '
            f'y2="{y(threshold):.1f}" stroke="#555753" stroke-dasharray="4 3"/>',
            f'<text x="{WIDTH - PAD}" y="{y(threshold) - 3:.1f}" font-size="10" '
            f'text-anchor="end">{html.escape(f"{threshold:g}")}</text>',
            '<polyline fill="none" stroke="#3465a4" stroke-width="1.5" points="'
            + ' '.join(f'{x(at + signals.INTERVAL_S / 2):.1f},{y(value):.1f}'
                       for at, value in points) + '"/>',
            f'<text x="{PAD}" y="14" font-size="11">{html.escape(title)}</text>',
            f'<text x="{PAD}" y="{HEIGHT - 8}" font-size="10">{low:.3g}-{high:.3g}, '
            f'{from_epoch(first):%H:%M}-{from_epoch(last):%H:%M} UTC</text>']
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'role="img" class="chart"><title>{html.escape(title)}</title>'
            + ''.join(body) + '</svg>')
