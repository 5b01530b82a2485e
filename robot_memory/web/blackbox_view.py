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
The black box and "Active now" on the operator's page.

* An entry's page lists its recordings (time, size, topics inside, whether the file is still
  there), offers each for download and plots the numeric fields of its freeze frame.
* The Now page lists the faults active now (``Source.live``: memory_node's live state, only
  when the node serves the page), each with a form to acknowledge it, audited.

A download is a file of the robot's seconds around a fault: it needs the access token, as
every change does, even on 127.0.0.1.
"""

import datetime as dt
import html
import json
import math
import pathlib
import sqlite3

from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse

from robot_memory.web import charts
from robot_memory.web import data

MAX_FIELDS = 40  # numeric fields plotted of one freeze frame at most
MAX_ARRAY = 9  # an array longer than this (a covariance) is not plotted item by item
ROW = 18


def _size(count: int) -> str:
    for unit, size in (('GB', 2**30), ('MB', 2**20), ('kB', 2**10)):
        if count >= size:
            return f'{count / size:.1f} {unit}'
    return f'{count} B'


def _when(seconds: float) -> str:
    return data.stamp(dt.datetime.fromtimestamp(seconds, dt.timezone.utc))


def numeric_fields(value, prefix: str = '') -> list:
    """Return (path, number) of every finite number in a JSON value, nested paths dotted."""
    found: list = []
    if isinstance(value, bool):
        return found
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            found.append((prefix, float(value)))
        return found
    if isinstance(value, dict):
        for key, item in value.items():
            found += numeric_fields(item, f'{prefix}.{key}' if prefix else str(key))
    elif isinstance(value, list) and len(value) <= MAX_ARRAY:
        for index, item in enumerate(value):
            found += numeric_fields(item, f'{prefix}[{index}]')
    return found


def freeze_fields(frame: dict) -> tuple:
    """Return (fields, notes): each topic's numeric fields, and what could not be plotted."""
    fields, notes = [], []
    for topic, item in sorted(frame.items()):
        if not isinstance(item, dict):
            continue
        if 'value' not in item:
            notes.append(f'{topic}: {item.get("missing") or item.get("error") or "no value"}')
            continue
        numbers = numeric_fields(item['value'])
        if not numbers:
            notes.append(f'{topic}: no numeric field')
        fields += [(f'{topic} {path}'.strip(), number) for path, number in numbers]
    if len(fields) > MAX_FIELDS:
        notes.append(f'{len(fields) - MAX_FIELDS} more numeric fields not plotted (the '
                     'download has them all)')
        fields = fields[:MAX_FIELDS]
    return fields, notes


def freeze_chart(fields: list) -> str:
    """
    Return an SVG bar per numeric field, each on its own scale (±10^k around its value).

    A freeze frame is one moment of unrelated quantities (m/s, V, rad): each bar shows its
    field's sign and size within its own decade, and the number itself is written beside it.
    """
    if not fields:
        return ''
    height = ROW * len(fields) + 10
    middle, half = 430, 110
    body = [f'<line x1="{middle}" y1="0" x2="{middle}" y2="{height}" stroke="#888"/>']
    for row, (name, value) in enumerate(fields):
        y = 5 + row * ROW
        scale = 10 ** math.ceil(math.log10(abs(value))) if value else 1.0
        width = abs(value) / scale * half
        x = middle if value >= 0 else middle - width
        colour = charts.COLOURS[0] if value >= 0 else charts.COLOURS[1]
        label = name if len(name) <= 48 else name[:47] + '…'
        body.append(f'<text x="4" y="{y + 12}" font-size="11">{html.escape(label)}</text>'
                    f'<rect x="{x:.1f}" y="{y + 2}" width="{width:.1f}" height="{ROW - 6}" '
                    f'fill="{colour}"><title>{html.escape(name)} = {value:g}</title></rect>'
                    f'<text x="{middle + half + 8}" y="{y + 12}" font-size="11">{value:g} '
                    f'(scale ±{scale:g})</text>')
    return charts._svg(body, 'numeric fields of the freeze frame', height)


def entry_recordings(source: data.Source, entry_id: str) -> list:
    """Return an entry's recordings as the page lists them, newest first."""
    conn = source.database()
    if conn is None:
        return []
    try:
        with conn:
            if not data.table_exists(conn, 'blackbox_recordings'):
                return []
            rows = conn.execute(
                'SELECT r.id, r.path, r.started, r.ended, r.bytes, r.topics, r.freeze_frame, '
                'r.signature FROM blackbox_recordings r JOIN signatures s ON s.signature = '
                'r.signature WHERE s.entry_id = ? ORDER BY r.started DESC, r.id DESC',
                (entry_id,)).fetchall()
    finally:
        conn.close()
    found = []
    for row in rows:
        try:
            frame = json.loads(row['freeze_frame'] or '{}')
        except ValueError:
            frame = {}
        fields, notes = freeze_fields(frame if isinstance(frame, dict) else {})
        found.append({'id': row['id'], 'name': pathlib.Path(row['path']).name,
                      'at': _when(row['started']), 'seconds': f'{row["ended"] - row["started"]:g}',
                      'size': _size(int(row['bytes'])), 'topics': json.loads(row['topics']),
                      'exists': pathlib.Path(row['path']).is_file(),
                      'freeze_svg': freeze_chart(fields), 'freeze_notes': notes})
    return found


def recording_path(source: data.Source, recording_id: str) -> tuple:
    """Return (path, file name) of recording ``recording_id``; a ValueError says why not."""
    if not recording_id.isascii() or not recording_id.isdigit() or len(recording_id) > 18:
        raise ValueError(f'{recording_id[:40]!r} is not a recording id (a number such as 3); '
                         "the entry's page lists them")
    conn = source.database()
    row = None
    if conn is not None:
        try:
            with conn:
                if data.table_exists(conn, 'blackbox_recordings'):
                    row = conn.execute('SELECT path FROM blackbox_recordings WHERE id = ?',
                                       (int(recording_id),)).fetchone()
        except sqlite3.DatabaseError:
            raise
        finally:
            conn.close()
    if row is None:
        raise LookupError(f'there is no recording {recording_id}; robot-memory blackbox list '
                          "or the entry's page lists them")
    path = pathlib.Path(row['path'])
    if path.is_symlink() or not path.is_file():
        raise LookupError(f'recording {recording_id} ({path.name}) is gone from its folder '
                          '(deleted by hand, or the folder moved); its row stays so the list '
                          'says so')
    return path, path.name


def active_rows(source: data.Source):
    """Return the faults active now as plain rows, or None when no node serves the page."""
    live = getattr(source, 'live', None)
    return None if live is None else live.rows()


def live_version(source: data.Source):
    """Return what changes when the live state changes (None without a node)."""
    live = getattr(source, 'live', None)
    return None if live is None else live.state.version


class Views:
    """The page's handlers of the black box and Active now, over one ``app.Page``."""

    def __init__(self, page, refused):
        self.page = page
        self.refused = refused  # app.Refused: the page's clear refusal

    async def download(self, request):
        """Send one recording as a file; only with the access token, as every change."""
        page = self.page
        page._must_read(request)
        if not page._has_token(request):
            raise self.refused(403, "a recording is the robot's seconds around a fault: its "
                                    'download needs the access token, even here; open the '
                                    'link robot-memory serve printed (…/?token=…) once')
        try:
            path, name = await run_in_threadpool(recording_path, page.config.source,
                                                 request.path_params['recording_id'])
        except LookupError as error:
            raise self.refused(404, str(error.args[0]))
        return FileResponse(path, media_type='application/octet-stream', filename=name)

    async def acknowledge(self, request):
        """Acknowledge one active fault: it stays listed, marked with who and when."""
        page = self.page
        form = await page._form(request)
        live = getattr(page.config.source, 'live', None)
        if live is None:
            raise self.refused(409, 'Active now is kept by memory_node: this page is served '
                                    'apart from it (robot-memory serve), so there is nothing '
                                    'to acknowledge here; nothing was changed')
        key = form.get('source_key', '')
        if not key or len(key) > 1000:
            raise self.refused(400, 'the form names no active fault (source_key); reload '
                                    'the page; nothing was changed')
        fault = await run_in_threadpool(live.acknowledge, key, f'web:{form["actor"]}',
                                        form.get('reason', '').strip()[:500])
        response = page.render(request, 'done.html', title='Acknowledged', back='/',
                               message=f'acknowledged: {fault["text"]}; it stays listed, '
                                       'marked, until OK reports clear it; audited')
        return page._done(request, response, form['actor'])
