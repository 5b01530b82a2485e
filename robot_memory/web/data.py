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
What the operator's page shows, gathered from the memory file and the database.

Plain functions with ``now`` passed in; no web framework here. Every read goes through the
modules the CLI uses (context, proposals, undo, dream_summary, the evidence store).
"""

import dataclasses
import datetime as dt
import heapq
import json
import os
import pathlib
import sqlite3
from typing import Any
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.common import jsontext
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import parse_iso
from robot_memory.dream import summary as dream_summary
from robot_memory.dream.schedule import next_nightly
from robot_memory.rcan import active_now
from robot_memory.rcan import context
from robot_memory.rcan import lifecycle
from robot_memory.rcan.document_cache import DocumentCache
from robot_memory.rcan.memory_file import UNSET_RRN
from robot_memory.rcan.schema import ENTRY_TYPES
from robot_memory.rcan.schema_models import MemoryEntry

if TYPE_CHECKING:
    from robot_memory.rcan.memory_file import MemoryFile
    from robot_memory.settings_file import Settings

PAGE_SIZE = 100
SORTS = ('confidence', 'last_reinforced', 'first_seen', 'count', 'type', 'text')
BANDS = ('high', 'medium', 'low')
SHOWS = ('current', 'resolved', 'archived', 'peers')
EVIDENCE_ROWS = 40
# A memory ahead of the page's clock by less is read as of its stamp without a word.
NOTED_AHEAD_S = 60.0


@dataclasses.dataclass
class Source:
    """Where the page reads and writes: the memory file, its database and the settings."""

    memory: 'MemoryFile'
    db_path: pathlib.Path
    settings: Optional['Settings'] = None
    health: object = None
    cache: Optional['DocumentCache'] = None  # made by __post_init__ when not given
    live: Any = None  # memory_node's Active now (ros/active_now.py), beside the node only

    def __post_init__(self):
        if self.cache is None:  # beside memory_node: the node's own cache, one copy
            self.cache = DocumentCache(self.memory, UNSET_RRN)

    @property
    def config(self):
        """Return the lifecycle constants (the defaults without a parameters file)."""
        return self.settings.lifecycle if self.settings is not None else lifecycle.DEFAULTS

    def database(self) -> Optional[sqlite3.Connection]:
        """Return a read-only connection to the database, or None when there is none yet."""
        if not self.db_path.exists():
            return None
        # as_uri escapes what a path may hold ('?', '#', '%'); mode=ro writes nothing.
        conn = sqlite3.connect(f'{self.db_path.resolve().as_uri()}?mode=ro', uri=True,
                               timeout=10)
        conn.row_factory = sqlite3.Row
        return conn


def load_document(source: Source, now: dt.datetime):
    """Return (document, problems) of the memory file, re-read only when it changed."""
    cache = source.cache
    assert cache is not None  # made by Source.__post_init__
    document = cache.document(now)
    problems = list(cache.problems)
    if cache.error:
        problems.insert(0, f'{cache.error} (the page shows the last good content)')
    return document, problems


def newest_stamp(source: Source, document) -> Optional[dt.datetime]:
    """Return the memory's newest stamp: its file's, an entry's or its last dream's."""
    stamps = [document.last_updated] if document.last_updated else []
    stamps += [entry.last_reinforced for entry in document.entries if entry.last_reinforced]
    conn = source.database()
    if conn is not None:
        with conn:
            if table_exists(conn, 'dream_state'):
                row = conn.execute('SELECT last_dream_at FROM dream_state WHERE id = 1'
                                   ).fetchone()
                if row is not None and row[0]:
                    stamps.append(parse_iso(row[0]))
        conn.close()
    return max(stamps, default=None)


def reading_time(source: Source, wall: dt.datetime, document) -> tuple:
    """
    Return (now, note): when the page reads the memory, and why, if not at ``wall``.

    A memory whose newest stamp is later than this computer's clock (a robot's clock ran
    ahead, or the file was copied from one) is read as of that stamp: its newest state is
    shown, decayed to then, and an edit is stamped after what it edits.
    """
    newest = newest_stamp(source, document)
    if newest is None or newest <= wall:
        return wall, ''
    if (newest - wall).total_seconds() < NOTED_AHEAD_S:
        return newest, ''
    return newest, (f"This memory is ahead of this computer's clock: its newest stamp, "
                    f'{stamp(newest)}, is {duration(newest - wall)} later than this '
                    f"computer's clock ({stamp(wall)}). The page shows the memory as of "
                    f'{stamp(newest)} and stamps an edit then. Check which clock is '
                    'right: the one that wrote the memory, or this one.')


def stamp(value: dt.datetime) -> str:
    """Return a time to the second, as a person reads it in a sentence."""
    return format_iso(value.replace(microsecond=0))


def duration(span: dt.timedelta) -> str:
    """Return a time span in a person's words: '2 days 3 hours', '5 min', '40 s'."""
    seconds = int(span.total_seconds())
    days, hours, minutes = seconds // 86400, seconds // 3600 % 24, seconds // 60 % 60
    parts = [f'{value} {plural(value, name)}' for value, name in
             ((days, 'day'), (hours, 'hour')) if value]
    if not days and minutes:
        parts.append(f'{minutes} min')
    return ' '.join(parts[:2]) or f'{seconds} s'


def ahead_of_clock(last: dt.datetime, now: dt.datetime) -> str:
    """Return the page's refusal of an undo while the memory's last dream is in the future."""
    return (f"the memory's last dream, at {stamp(last)}, is {duration(last - now)} "
            f"later than this computer's clock ({stamp(now)}): the memory was written "
            'by a clock ahead of this one (a robot whose clock ran ahead, or a copy from '
            "one), or this computer's clock is behind. An undo stamped now would come before "
            "the dream it takes back: set this computer's clock right, or undo where the "
            "memory's clock runs; nothing was changed")


def plural(count: int, noun: str) -> str:
    """Return ``noun`` for one, ``noun + 's'`` otherwise ('1 entry' needs 'entries' below)."""
    if count == 1:
        return noun
    return noun[:-1] + 'ies' if noun.endswith('y') else noun + 's'


def _size(path: pathlib.Path) -> Optional[int]:
    try:
        return path.stat().st_size
    except OSError:
        return None


def table_exists(conn, name: str) -> bool:
    """Return whether the database has table ``name`` (an older or new one may not)."""
    found = conn.execute('SELECT 1 FROM sqlite_master WHERE name = ?', (name,)).fetchone()
    return found is not None


def now_page(source: Source, now: dt.datetime, document) -> dict:
    """Return the Now page: the context block as the brain gets it, health, dreams, sizes."""
    config = source.config
    budget = None
    assert source.cache is not None  # made by Source.__post_init__
    index = source.cache.context_index(document, config)
    block = context.build_context(document, now, config, budget, True, None, index)
    if source.live is not None:  # beside memory_node: "Active now" first, as the brain gets it
        block = active_now.with_active_now(
            lambda tokens: context.build_context(document, now, config, tokens, True, None,
                                                 index),
            source.live.faults(), source.live.now_s(), config.token_budget, config)[0]
    last_dream = None
    conn = source.database()
    if conn is not None:
        with conn:
            if table_exists(conn, 'dreams'):
                row = conn.execute('SELECT id, at, actor, report FROM dreams '
                                   'ORDER BY id DESC LIMIT 1').fetchone()
                if row is not None:
                    report = json.loads(row['report'])
                    last_dream = {'id': row['id'], 'at': row['at'], 'actor': row['actor'],
                                  'counts': {name: len(report.get(name) or ())
                                             for name in ('created', 'reinforced', 'resolved',
                                                          'reopened', 'pruned', 'manual')}}
        conn.close()
    return {
        'block': block.text, 'block_summary': context.summary(block),
        'tokens': block.token_estimate, 'health': health_rows(source.health),
        'last_dream': last_dream, 'next_dream': next_dream(source.settings, now),
        'file': str(source.memory.path), 'file_bytes': _size(source.memory.path),
        'database': str(source.db_path), 'database_bytes': _size(source.db_path),
        'bands': lifecycle.band_counts(document.entries, now, config),
        'entries': len(document.entries),
    }


def next_dream(settings, now: dt.datetime) -> str:
    """Return when the node dreams next, by its parameters, or why that is not known."""
    if settings is None:
        return 'not known: start the page with --config (the node parameters file)'
    nightly = settings.node.nightly_time()
    parts = []
    if nightly is not None:
        parts.append(format_iso(next_nightly(now, *nightly)))
    if settings.node.dream_period_s:
        parts.append(f'every {settings.node.dream_period_s:g} s')
    return ', '.join(parts) or 'no dream is scheduled (dream_time is empty)'


LEVELS = {0: 'OK', 1: 'WARN', 2: 'ERROR', 3: 'STALE'}


def health_rows(health) -> Optional[list]:
    """Return the node's diagnostics as plain rows; None when no node runs beside the page."""
    if health is None:
        return None
    return [{'name': item['name'], 'level': LEVELS.get(item['level'], str(item['level'])),
             'message': item['message'], 'values': item['values']} for item in health()]


@dataclasses.dataclass(frozen=True)
class EntryQuery:
    """The Entries page's filter, sort, search and page, checked."""

    q: str = ''
    type: str = ''
    band: str = ''
    show: str = 'current'
    sort: str = 'confidence'
    page: int = 1

    @classmethod
    def from_params(cls, params) -> 'EntryQuery':
        """Return the query of the request's parameters; a ValueError says what was wrong."""
        q = params.get('q', '')[:200]
        kind = params.get('type', '')
        if kind and kind not in ENTRY_TYPES:
            raise ValueError(f'type {kind!r} is not one of {", ".join(ENTRY_TYPES)}')
        band = params.get('band', '')
        if band and band not in BANDS:
            raise ValueError(f'band {band!r} is not one of {", ".join(BANDS)}')
        show = params.get('show', 'current') or 'current'
        if show not in SHOWS:
            raise ValueError(f'show {show!r} is not one of {", ".join(SHOWS)}')
        sort = params.get('sort', 'confidence') or 'confidence'
        if sort not in SORTS:
            raise ValueError(f'sort {sort!r} is not one of {", ".join(SORTS)}')
        try:
            page = int(params.get('page', '1') or 1)
        except ValueError:
            raise ValueError(f'page {params.get("page")!r} is not a whole number') from None
        if page < 1:
            raise ValueError('page must be at least 1')
        return cls(q, kind, band, show, sort, page)


def _row(entry, now, config, reference=None, peer: str = '', archived: str = '') -> dict:
    confidence = lifecycle.effective_confidence(entry, now, config, reference)
    return {
        # Text and tags as the brain gets them: a control or bidi-override character is
        # shown as its escape, so it cannot reverse what stands beside it on the page.
        'id': entry.id, 'type': entry.type, 'text': context.neutralise(entry.text),
        'tags': [context.neutralise(tag) for tag in entry.tags],
        'confidence': confidence, 'percent': context.percent(confidence, config),
        'band': lifecycle.band(confidence, config) if entry.type != 'resolved' else '✅',
        'band_name': (_band_name(confidence, config) if entry.type != 'resolved'
                      else 'resolved'),
        'first_seen': format_iso(entry.first_seen) if entry.first_seen else '',
        'last_reinforced': format_iso(entry.last_reinforced) if entry.last_reinforced else '',
        'count': entry.observation_count or 0, 'peer': peer, 'archived': archived,
        'stored': entry.confidence,
    }


def _band_name(confidence: float, config) -> str:
    if confidence >= config.band_high:
        return 'high'
    return 'medium' if confidence >= config.band_medium else 'low'


def archived_entries(memory) -> list:
    """Return (archived_at, entry) of the archive beside the memory file, newest last."""
    path = memory.side_path('.archive.jsonl')
    found: list = []
    try:
        handle = open(path, encoding='utf-8', errors='replace')
    except OSError:
        return found
    with handle:
        for line in handle:
            try:
                record = jsontext.loads(line)
                found.append((record['archived_at'], MemoryEntry.model_validate(record['entry'])))
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line of the archive is skipped, never rewritten
    return found


def entries_page(source: Source, now: dt.datetime, document, query: EntryQuery) -> dict:
    """Return one page of the Entries page's rows after the filter, search and sort."""
    config = source.config
    if query.show == 'peers':
        items = [(entry, block.last_synced, block.rrn, '')
                 for block in document.peer_context or () for entry in block.entries]
    elif query.show == 'archived':
        items = [(entry, None, '', at) for at, entry in archived_entries(source.memory)]
    else:
        resolved = query.show == 'resolved'
        items = [(entry, None, '', '') for entry in document.entries
                 if (entry.type == 'resolved') == resolved]
    if query.type:
        items = [item for item in items if item[0].type == query.type]
    if query.q:
        needle = query.q.casefold()
        items = [item for item in items if needle in item[0].text.casefold()
                 or needle in item[0].id or any(needle in tag.casefold()
                                                for tag in item[0].tags)]
    # Only what filters and sorts is computed for every entry; a row only for the page.
    scored = [(lifecycle.effective_confidence(item[0], now, config, item[1]), item)
              for item in items]
    if query.band:
        scored = [pair for pair in scored if _band_name(pair[0], config) == query.band]
    never = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
    key, reverse = {
        'confidence': (lambda pair: (pair[0], pair[1][0].id), True),
        'last_reinforced': (lambda pair: (pair[1][0].last_reinforced or never,
                                          pair[1][0].id), True),
        'first_seen': (lambda pair: (pair[1][0].first_seen or never, pair[1][0].id), True),
        'count': (lambda pair: (pair[1][0].observation_count or 0, pair[1][0].id), True),
        'type': (lambda pair: (pair[1][0].type, -pair[0]), False),
        'text': (lambda pair: (pair[1][0].text.casefold(), pair[1][0].id), False),
    }[query.sort]
    total = len(scored)
    pages = max(1, -(-total // PAGE_SIZE))
    start = (query.page - 1) * PAGE_SIZE
    if reverse:  # the first pages of the usual sorts: a partial sort
        shown = heapq.nlargest(start + PAGE_SIZE, scored, key=key)[start:]
    else:
        shown = sorted(scored, key=key)[start:start + PAGE_SIZE]
    rows = [_row(entry, now, config, reference, peer=peer, archived=at)
            for _, (entry, reference, peer, at) in shown]
    return {'rows': rows, 'total': total, 'page': query.page,
            'pages': pages, 'query': query, 'types': ENTRY_TYPES, 'bands': BANDS,
            'sorts': SORTS, 'shows': SHOWS}


def find_entry(source: Source, now: dt.datetime, document, entry_id: str) -> tuple:
    """Return (row, entry) of an own, peer or archived entry; (None, None) when there is none."""
    config = source.config
    for entry in document.entries:
        if entry.id == entry_id:
            return _row(entry, now, config), entry
    for block in document.peer_context or ():
        for entry in block.entries:
            if entry.id == entry_id:
                return _row(entry, now, config, block.last_synced, peer=block.rrn), None
    for at, entry in reversed(archived_entries(source.memory)):
        if entry.id == entry_id:
            return _row(entry, now, config, archived=at), None
    return None, None


def entry_history(source: Source, entry_id: str) -> list:
    """Return the entry's audit trail, oldest first (what ``robot-memory history`` prints)."""
    conn = source.database()
    if conn is None:
        return []
    with conn:
        if not table_exists(conn, 'audit'):
            return []
        rows = conn.execute('SELECT id, at, action, actor, reason, detail, dream_id FROM audit '
                            'WHERE entry_id = ? ORDER BY id', (entry_id,)).fetchall()
    conn.close()
    return [dict(row, detail=json.loads(row['detail'] or '{}')) for row in rows]


def confidence_series(source: Source, entry_id: str, entry, history: list,
                      now: dt.datetime) -> dict:
    """
    Return the entry's confidence over time: one history of its stored states, each decayed.

    A version row holds the entry as it was before a change at ``at``: that state held from
    its ``last_reinforced`` until then, its effective confidence falling by the decay
    formula; the entry as it is now (``entry``, None for a peer's or an archived one) holds
    until ``now``. A state an undo restored is older than the one it replaced: it is drawn
    from the undo on, so the line is one history in time, never two interleaved. Events are
    the audit records (create, reinforce, resolve, manual, ...).
    """
    config = source.config
    periods = []
    conn = source.database()
    if conn is not None:
        with conn:
            if table_exists(conn, 'entry_versions'):
                for version in conn.execute(
                        'SELECT at, prior FROM entry_versions WHERE entry_id = ? AND prior IS '
                        'NOT NULL ORDER BY id', (entry_id,)):
                    state = MemoryEntry.model_validate(json.loads(version['prior']))
                    periods.append((state.last_reinforced.timestamp(), version['at'], state))
        conn.close()
    if entry is not None:
        periods.append((entry.last_reinforced.timestamp(), now.timestamp(), entry))
    points: list = []
    for start, end, state in periods:
        if points:  # a state holds from when the one before it ended, not before
            start = max(start, points[-1][0])
        points.extend(_decay_points(state, start, max(start, end), config))
    events = [(parse_iso(item['at']).timestamp(), item['action']) for item in history]
    return {'points': points, 'events': events}


def _decay_points(entry, start: float, end: float, config) -> list:
    steps = 24 if end > start else 0
    return [(at, lifecycle.effective_confidence(entry, from_epoch(at), config))
            for at in (start + (end - start) * index / max(steps, 1)
                       for index in range(steps + 1))]


def entry_evidence(source: Source, entry_id: str) -> dict:
    """Return the evidence of an entry: counts per day by signature, hours, latest rows."""
    empty = {'signatures': [], 'daily': {}, 'hours': [0] * 24, 'latest': []}
    conn = source.database()
    if conn is None:
        return empty
    with conn:
        if not table_exists(conn, 'signatures'):
            return empty
        signatures = [row[0] for row in conn.execute(
            'SELECT signature FROM signatures WHERE entry_id = ? ORDER BY signature',
            (entry_id,))]
        daily: dict = {}
        hours, latest = [0] * 24, []
        marks = ', '.join('?' for _ in signatures)
        if signatures:
            for row in conn.execute(
                    f'SELECT signature, day, sum(count) FROM daily_counts WHERE signature IN '
                    f'({marks}) AND severity > 0 GROUP BY signature, day', signatures):
                daily.setdefault(row[0], {})[row[1]] = row[2]
            # A run of evidence (robot_memory.evidence.runs) never crosses a UTC hour; a
            # database the node has not yet migrated holds rows of one.
            columns = {row[1] for row in conn.execute('PRAGMA table_info(observations)')}
            count = 'count' if 'count' in columns else '1'
            for row in conn.execute(
                    f'SELECT stamp, signature, {count} FROM observations WHERE signature IN '
                    f'({marks}) AND severity > 0', signatures):
                stamp = from_epoch(row[0])
                day = stamp.date().isoformat()
                per_day = daily.setdefault(row[1], {})
                per_day[day] = per_day.get(day, 0) + row[2]
                hours[stamp.hour] += row[2]
            latest = [dict(row) for row in conn.execute(
                f'SELECT stamp, {count} AS count, source, source_key, signature, severity, '
                f'payload FROM observations WHERE signature IN ({marks}) ORDER BY id DESC LIMIT ?',
                (*signatures, EVIDENCE_ROWS))]
    conn.close()
    for item in latest:
        item['at'] = format_iso(from_epoch(item.pop('stamp')))
        try:
            item['values'] = json.loads(item['payload']) if item['payload'] else {}
        except ValueError:
            item['values'] = {'payload': item['payload']}
    return {'signatures': signatures, 'daily': daily, 'hours': hours, 'latest': latest}


def dreams_page(source: Source) -> list:
    """Return every kept dream summary, newest first: (time, file name, text)."""
    try:
        target = source.memory.target()
        names = os.listdir(target.parent)
    except OSError:
        return []
    found = []
    for name in names:
        stamp = dream_summary.summary_stamp(name, target.name)
        if stamp is None:
            continue
        try:
            text = target.with_name(name).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError):
            continue
        found.append((stamp, len(name), name, text))
    found.sort(reverse=True)
    return [{'at': format_iso(stamp), 'name': name, 'text': text}
            for stamp, _, name, text in found]


def undo_points(source: Source) -> list:
    """Return the dreams and undos an undo can go back before (``undo --list``)."""
    from robot_memory.review import undo  # lazy: undo, 9 ms and 1 MB, for the undo panel only
    conn = source.database()
    if conn is None:
        return []
    with conn:
        items = undo.log(conn) if table_exists(conn, 'dreams') else []
    conn.close()
    return list(reversed(items))


# What an undo preview compares, in the order a person reads an entry.
UNDO_FIELDS = ('text', 'type', 'confidence', 'observation_count', 'tags', 'first_seen',
               'last_reinforced')


def undo_changes(report) -> list:
    """
    Return the entry changes of an undo report with each value before and after.

    ``before`` is the entry in the file now, ``after`` as the undo leaves it; a removed
    entry has no after, a restored one no before. Texts are shown as the brain gets them.
    """
    out = []
    for change in report.entries:
        before, after = change['before'] or {}, change['after'] or {}
        fields = []  # a removed or restored entry: its confidence; a changed one: each change
        for name in UNDO_FIELDS if before and after else ('confidence',):
            old, new = before.get(name), after.get(name)
            if old != new:
                fields.append((name, _shown(old), _shown(new)))
        out.append({'id': change['id'], 'change': change['change'],
                    'text': context.neutralise(str((after or before).get('text', ''))),
                    'fields': fields})
    return out


def _shown(value) -> str:
    if value is None:
        return '—'
    if isinstance(value, list):
        return ', '.join(context.neutralise(str(item)) for item in value) or '(none)'
    return context.neutralise(str(value))
