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
Charts of the operator's page as inline SVG, drawn on the server (no script, no library).

Each function takes plain numbers and returns SVG text; every label is escaped.
"""

import datetime as dt
import html

from robot_memory.common.timeutil import from_epoch
from robot_memory.rcan.untrusted import neutralise

WIDTH = 640
HEIGHT = 180
PAD = 34
COLOURS = ('#3465a4', '#cc0000', '#73d216', '#f57900', '#75507b', '#c4a000', '#06989a')
EVENT_COLOURS = {'create': '#3465a4', 'reinforce': '#4e9a06', 'resolve': '#06989a',
                 'reopen': '#cc0000', 'prune': '#555753', 'manual': '#75507b',
                 'approve': '#75507b', 'peer_merge': '#c4a000', 'undo': '#ce5c00'}


def _text(value) -> str:
    """Return text for the SVG: control, bidi and invisible characters escaped, then HTML."""
    return html.escape(neutralise(str(value)))


def _svg(body: list, title: str, height: int = HEIGHT) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
            f'role="img" class="chart"><title>{_text(title)}</title>'
            + ''.join(body) + '</svg>')


def _day(stamp: float) -> str:
    return from_epoch(stamp).strftime('%Y-%m-%d')


def confidence_chart(points: list, events: list, thresholds: dict) -> str:
    """Draw (time, confidence) points as a line, the thresholds dashed, events as dots."""
    if not points:
        return _svg(['<text x="20" y="90">no recorded states yet</text>'], 'confidence')
    first = min([points[0][0]] + [at for at, _ in events])
    last = max([points[-1][0]] + [at for at, _ in events])
    span = (last - first) or 1.0
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def x(at: float) -> float:
        return PAD + (at - first) / span * plot_w

    def y(value: float) -> float:
        return PAD + (1.0 - value) * plot_h

    body = [f'<rect x="{PAD}" y="{PAD}" width="{plot_w}" height="{plot_h}" fill="#fafafa" '
            'stroke="#ccc"/>']
    for name, value in thresholds.items():
        body.append(f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(value):.1f}" '
                    f'y2="{y(value):.1f}" stroke="#bbb" stroke-dasharray="4 3"/>'
                    f'<text x="{WIDTH - PAD - 2}" y="{y(value) - 2:.1f}" font-size="9" '
                    f'text-anchor="end" fill="#777">{_text(name)}</text>')
    path = ' '.join(f'{"M" if index == 0 else "L"}{x(at):.1f},{y(value):.1f}'
                    for index, (at, value) in enumerate(points))
    body.append(f'<path d="{path}" fill="none" stroke="#204a87" stroke-width="2"/>')
    for at, action in events:
        colour = EVENT_COLOURS.get(action, '#000')
        body.append(f'<circle cx="{x(at):.1f}" cy="{HEIGHT - PAD + 8}" r="4" fill="{colour}">'
                    f'<title>{_text(action)} {_day(at)}</title></circle>')
    body.append(f'<text x="{PAD}" y="{HEIGHT - 4}" font-size="10">{_day(first)}</text>'
                f'<text x="{WIDTH - PAD}" y="{HEIGHT - 4}" font-size="10" text-anchor="end">'
                f'{_day(last)}</text><text x="4" y="{y(1.0) + 4:.1f}" font-size="10">1.0</text>'
                f'<text x="4" y="{y(0.0) + 4:.1f}" font-size="10">0</text>')
    actions = sorted({action for _, action in events})
    for index, action in enumerate(actions):
        colour = EVENT_COLOURS.get(action, '#000')
        body.append(f'<circle cx="{PAD + 8 + index * 90}" cy="12" r="4" '
                    f'fill="{colour}"/><text x="{PAD + 16 + index * 90}" '
                    f'y="16" font-size="10">{_text(action)}</text>')
    return _svg(body, 'confidence over time')


LEGEND_ROW = 14
LEGEND_CHARS = 100  # a longer signature keeps its end: the status tells one from another


def _axes(title: str, x_label: str, y_label: str, top: int, height: int = HEIGHT) -> list:
    """Return a chart's visible title and axis names (not only tooltips)."""
    middle = PAD + (height - PAD - 24) / 2
    return [f'<text x="{WIDTH / 2:.0f}" y="14" font-size="12" font-weight="bold" '
            f'text-anchor="middle" class="chart-title">{_text(title)}</text>',
            f'<text x="{WIDTH / 2:.0f}" y="{height - 2}" font-size="10" text-anchor="middle" '
            f'class="axis-label">{_text(x_label)}</text>',
            f'<text x="10" y="{middle:.0f}" font-size="10" text-anchor="middle" '
            f'transform="rotate(-90 10 {middle:.0f})" class="axis-label">'
            f'{_text(y_label)}</text>',
            f'<text x="{PAD - 3}" y="{PAD + 4}" font-size="10" text-anchor="end">{top}</text>',
            f'<text x="{PAD - 3}" y="{height - 24}" font-size="10" text-anchor="end">0</text>']


def _legend_name(signature: str) -> str:
    if len(signature) <= LEGEND_CHARS:
        return signature
    return '…' + signature[-(LEGEND_CHARS - 1):]


def daily_chart(daily: dict) -> str:
    """Draw observations per day, one stacked colour per signature, named in full below."""
    title = 'Observations per day, by signature'
    days = sorted({day for per_day in daily.values() for day in per_day})
    if not days:
        return _svg(['<text x="20" y="90">no evidence kept for this entry</text>'], title)
    start = dt.date.fromisoformat(days[0])
    count = (dt.date.fromisoformat(days[-1]) - start).days + 1
    signatures = sorted(daily)
    totals = [0] * count
    for per_day in daily.values():
        for day, value in per_day.items():
            totals[(dt.date.fromisoformat(day) - start).days] += value
    top = max(totals) or 1
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - PAD - 24
    bar = plot_w / count
    body = _axes(title, 'day (UTC)', 'observations', top)
    stacked = [0] * count
    for index, signature in enumerate(signatures):
        colour = COLOURS[index % len(COLOURS)]
        for day, value in sorted(daily[signature].items()):
            slot = (dt.date.fromisoformat(day) - start).days
            height = value / top * plot_h
            y = PAD + plot_h - (stacked[slot] / top * plot_h) - height
            body.append(f'<rect x="{PAD + slot * bar:.1f}" y="{y:.1f}" '
                        f'width="{max(bar - 1, 1):.1f}" height="{height:.1f}" fill="{colour}">'
                        f'<title>{_text(day)}: {value} × {_text(signature)}'
                        '</title></rect>')
            stacked[slot] += value
        row = HEIGHT + 6 + index * LEGEND_ROW
        body.append(f'<rect x="{PAD}" y="{row}" width="8" height="8" fill="{colour}"/>'
                    f'<text x="{PAD + 12}" y="{row + 8}" font-size="10" class="legend">'
                    f'<title>{_text(signature)}</title>'
                    f'{_text(_legend_name(signature))}</text>')
    body.append(f'<text x="{PAD}" y="{HEIGHT - 12}" font-size="10">{days[0]}</text>'
                f'<text x="{WIDTH - PAD}" y="{HEIGHT - 12}" font-size="10" text-anchor="end">'
                f'{days[-1]}</text>')
    return _svg(body, title, HEIGHT + 8 + len(signatures) * LEGEND_ROW)


def hours_chart(hours: list) -> str:
    """Draw how many observations fell in each hour of the day (UTC)."""
    title = 'Observations by hour of day (UTC)'
    top = max(hours) or 1
    plot_w, plot_h = WIDTH - 2 * PAD, HEIGHT - PAD - 24
    bar = plot_w / 24
    body = _axes(title, 'hour of day (UTC)', 'observations', top)
    for hour, value in enumerate(hours):
        height = value / top * plot_h
        body.append(f'<rect x="{PAD + hour * bar:.1f}" y="{PAD + plot_h - height:.1f}" '
                    f'width="{bar - 2:.1f}" height="{height:.1f}" fill="#3465a4">'
                    f'<title>{hour:02d}:00 UTC: {value}</title></rect>')
        if hour % 3 == 0:
            body.append(f'<text x="{PAD + hour * bar:.1f}" y="{HEIGHT - 12}" '
                        f'font-size="10">{hour:02d}</text>')
    return _svg(body, title)
