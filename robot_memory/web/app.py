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
The operator's page as a Starlette application.

Reading needs nothing on 127.0.0.1 and the access token elsewhere; every change (approve,
reject, undo, edit) needs the token (a cookie set by opening the page's link once), a
same-site form carrying the token's CSRF mark, and a named actor; it then calls the same
audited operation as the CLI. ``read_only`` offers no change at all.
"""

import asyncio
import dataclasses
import datetime as dt
import hmac
import json
import pathlib
import re
import sqlite3
from typing import Callable
from typing import Optional
import urllib.parse

from jinja2 import Environment
from jinja2 import FileSystemLoader
from jinja2 import select_autoescape
from markupsafe import escape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.responses import RedirectResponse
from starlette.routing import Mount
from starlette.routing import Route
from starlette.staticfiles import StaticFiles

from robot_memory.common.timeutil import UTC
from robot_memory.errors import RobotMemoryError
from robot_memory.rcan.context import neutralise
from robot_memory.review.edit import edit_entry
from robot_memory.review.edit import parse_tags
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.filters import parse_json_object
from robot_memory.substrate.vocabulary import MEMORY_TYPES
from robot_memory.substrate.vocabulary import SENSITIVITIES
from robot_memory.web import blackbox_view
from robot_memory.web import charts
from robot_memory.web import condition_chart
from robot_memory.web import data
from robot_memory.web import fleet_view
from robot_memory.web.guards import csrf_mark
from robot_memory.web.guards import host_name
from robot_memory.web.guards import is_loopback
from robot_memory.web.guards import new_token
from robot_memory.web.guards import SECURITY_HEADERS
from robot_memory.web.guards import SecurityHeaders
from robot_memory.web.guards import ServerTiming
from robot_memory.web.guards import token_cookie
from robot_memory.web.refusals import Refused
from robot_memory.web.refusals import refused

HERE = pathlib.Path(__file__).resolve().parent
ACTOR_COOKIE = 'robot_memory_actor'
MAX_FORM_BYTES = 16 * 1024
LIVE_PERIOD_S = 1.0
# Open live streams at most: each polls the database once a period. A browser keeps at most
# six connections to a host, so this serves a few operators and bounds what a script holds.
MAX_LIVE = 16
LIVE_SEND_TIMEOUT_S = 30.0  # a stream whose reader stops reading is closed
ENTRY_ID = re.compile(r'\bmem-[0-9a-f]{8,}\b')
ID = re.compile(r'[0-9]{1,18}')  # ASCII digits that fit SQLite's integer
TRUST_LEVELS = SENSITIVITIES  # the typed memory's own levels, lowest first


# What an undo refusal calls the page's fields (the CLI says --reason, a ROS caller reason).
PAGE_WORDS = {'reason': 'the reason box', 'dream': 'the dream to take back',
              'to': 'the time to restore', 'undo': 'the undo to undo',
              'log': 'the Review page lists them'}


@dataclasses.dataclass
class PageConfig:
    """What one server serves and how it guards it."""

    source: data.Source
    token: str
    host: str = '127.0.0.1'
    read_only: bool = False
    max_trust: str = 'medium'
    encryption: dict = dataclasses.field(default_factory=dict)
    clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(UTC)
    live_period_s: float = LIVE_PERIOD_S
    max_live: int = MAX_LIVE
    fleet: Optional[fleet_view.FleetSettings] = None  # the Fleet view's store (--fleet-store)


class Page:
    """The handlers of the operator's page over one PageConfig."""

    def __init__(self, config: PageConfig):
        self.config = config
        self.templates = Environment(loader=FileSystemLoader(str(HERE / 'templates')),
                                     autoescape=select_autoescape(default=True))
        self.templates.filters['link_ids'] = link_ids
        self.templates.filters['counted'] = counted
        self.templates.filters['shown'] = shown
        self.live = 0  # live streams open now (counted on the event loop's one thread)
        self._embedder: list = []  # the typed recall's, made at its first use

    # ------------------------------------------------------------------ guards

    def _has_token(self, request: Request) -> bool:
        given = request.cookies.get(token_cookie(self.config.token), '')
        return bool(given) and hmac.compare_digest(given.encode(), self.config.token.encode())

    def _must_be_named(self, request: Request) -> None:
        if is_loopback(self.config.host):
            # A page on 127.0.0.1 answers only to a loopback name: another site's name
            # pointed at 127.0.0.1 (DNS rebinding) cannot read it through a browser. The
            # Host header is read as it came, not as a URL that would read a@b as b.
            header = request.headers.get('host', '')
            if not is_loopback(host_name(header)):
                raise Refused(403, f'this page answers only as 127.0.0.1 or localhost, not as '
                                   f'{header[:100]!r}; open it through an SSH tunnel '
                                   '(docs/operator-page.md)')

    def _must_read(self, request: Request) -> None:
        self._must_be_named(request)
        if not is_loopback(self.config.host) and not self._has_token(request):
            raise Refused(401, 'this page is served beyond this machine, so it needs the '
                               'access token: open the link robot-memory serve printed '
                               '(…/?token=…)')

    def _must_be_same_origin(self, request: Request) -> None:
        # A browser names the page a change was sent from (Origin, else Referer): it must
        # be this page, by scheme, name and port. curl names none; the mark still guards.
        here = (request.url.scheme, request.headers.get('host', '').lower())
        for header in ('origin', 'referer'):
            sent = request.headers.get(header)
            if sent is None:
                continue
            parts = urllib.parse.urlsplit(sent)
            if (parts.scheme.lower(), parts.netloc.lower()) != here:
                raise Refused(403, f'a change sent from another site ({header}: '
                                   f'{sent[:100]}) is refused; nothing was changed')

    async def _form(self, request: Request) -> dict:
        """Return the change's form, after every guard; a Refused says which guard stopped it."""
        self._must_read(request)
        if self.config.read_only:
            raise Refused(403, 'this page is read-only (--read-only): it offers no change')
        if not self._has_token(request):
            raise Refused(403, 'a change needs the access token: open the link robot-memory '
                               'serve printed (…/?token=…) once in this browser; nothing '
                               'was changed')
        self._must_be_same_origin(request)
        declared = request.headers.get('content-length')
        if declared and declared.isdigit() and int(declared) > MAX_FORM_BYTES:
            raise Refused(413, f'the form is {declared} bytes; the limit is {MAX_FORM_BYTES}; '
                               'nothing was changed')
        body = b''
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise Refused(413, f'the form is over {MAX_FORM_BYTES} bytes; nothing was '
                                   'changed')
        kind = request.headers.get('content-type', '').split(';')[0].strip().lower()
        if kind != 'application/x-www-form-urlencoded':
            raise Refused(415, f'a change is sent as a form (application/x-www-form-urlencoded),'
                               f' not {kind[:60] or "without a type"}; nothing was changed')
        try:
            # strict: bytes that are not UTF-8 were stored as U+FFFD in the entry's text
            fields = urllib.parse.parse_qs(body.decode('utf-8'), keep_blank_values=True,
                                           max_num_fields=50, errors='strict')
        except (UnicodeDecodeError, ValueError) as error:
            raise Refused(400, f'the form could not be read ({error}); nothing was changed')
        form = {key: values[-1] for key, values in fields.items()}
        if not hmac.compare_digest(form.get('csrf', '').encode(),
                                   csrf_mark(self.config.token).encode()):
            raise Refused(403, "the form does not carry this page's mark (a cross-site "
                               'request, or a page from an earlier server): reload the page '
                               'and try again; nothing was changed')
        actor = form.get('actor', '').strip()
        if not actor or len(actor) > 60 or not actor.isprintable():
            raise Refused(400, 'say who you are in "acting as" (up to 60 printable '
                               'characters); the audit log names you; nothing was changed')
        form['actor'] = actor
        return form

    # ------------------------------------------------------------------ rendering

    def render(self, request: Request, name: str, status: int = 200, **values) -> HTMLResponse:
        """Render template ``name`` with the values every page has."""
        can_change = not self.config.read_only and self._has_token(request)
        values.update(
            request=request, path=request.url.path, read_only=self.config.read_only,
            can_change=can_change, csrf=csrf_mark(self.config.token) if can_change else '',
            actor=urllib.parse.unquote(request.cookies.get(ACTOR_COOKIE, '')),
            host=self.config.host, has_token=self._has_token(request),
            fleet_on=self.config.fleet is not None)
        text = self.templates.get_template(name).render(**values)
        return HTMLResponse(text, status_code=status)

    def refusal(self, request: Request, error: Refused) -> HTMLResponse:
        """Return the page's clear refusal."""
        path = request.url.path
        back = ('/review' if path.startswith('/review') else '/fleet' if path.startswith('/fleet')
                else path[:-len('/edit')] if request.method == 'POST' and path.endswith('/edit')
                else '/')  # a link, not history.back(): the policy runs no inline script
        return self.render(request, 'refused.html', status=error.status,
                           message=error.message, back=back)

    def _done(self, request: Request, response: HTMLResponse, actor: str) -> HTMLResponse:
        # Percent-encoded: a header is Latin-1, so "田中" raised after the change was made and
        # the page said it was refused, "nothing was changed".
        response.set_cookie(ACTOR_COOKIE, urllib.parse.quote(actor), httponly=True,
                            samesite='strict')
        return response

    async def guarded(self, request: Request, handler) -> HTMLResponse:
        """Run ``handler(request)``; a Refused or a core refusal becomes the refusal page."""
        try:
            return await handler(request)
        except (RobotMemoryError, ValueError) as error:  # a Refused among them
            return self.refusal(request, refused(error))
        except sqlite3.DatabaseError as error:  # a damaged file, or one locked for too long
            if 'locked' in str(error) or 'busy' in str(error):  # it passes: never move it aside
                return self.refusal(request, Refused(503, (
                    f'the database {self.config.source.db_path.name} is busy: another writer '
                    '(a dream, memory_node) held it for too long; try again in a moment; '
                    'nothing was changed')))
            return self.refusal(request, Refused(503, (
                f'the database {self.config.source.db_path} cannot be read now ({error}); '
                'try again; if it stays so, move the file aside (robot-memory dream starts a '
                'new one); nothing was changed')))

    async def failed(self, request: Request, error: Exception) -> HTMLResponse:
        """Answer an error nobody expected with the refusal page; the details go to the log."""
        response = self.refusal(request, Refused(500, (
            f'the page met an error it did not expect ({type(error).__name__}); nothing of it '
            'is shown here: the log of robot-memory serve (or memory_node) has the details')))
        # This answer leaves outside the middleware (Starlette's outermost error handler).
        for name, value in SECURITY_HEADERS + [(b'cache-control', b'no-store')]:
            response.headers[name.decode()] = value.decode()
        return response

    # ------------------------------------------------------------------ pages

    async def login(self, request: Request):
        """``?token=`` on any page: keep it as a same-site cookie, then show the page."""
        self._must_be_named(request)
        token = request.query_params.get('token', '')
        if not hmac.compare_digest(token.encode(), self.config.token.encode()):
            raise Refused(403, "that access token is not this server's; use the link "
                               'robot-memory serve printed')
        query = [(key, value) for key, value in request.query_params.multi_items()
                 if key != 'token']
        target = request.url.path + ('?' + urllib.parse.urlencode(query) if query else '')
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(token_cookie(token), token, httponly=True, samesite='strict')
        return response

    def reading(self) -> tuple:
        """Return (document, problems, now, note): the memory and when the page reads it."""
        source = self.config.source
        wall = self.config.clock()
        document, problems = data.load_document(source, wall)
        now, note = data.reading_time(source, wall, document)
        return document, problems, now, note

    async def now(self, request: Request):
        """Show the Now page."""
        self._must_read(request)
        source = self.config.source

        def gather():
            document, problems, now, note = self.reading()
            return data.now_page(source, now, document), problems, note
        page, problems, note = await run_in_threadpool(gather)
        return self.render(request, 'now.html', page=page, problems=problems, title='Now',
                           clock_note=note, active=blackbox_view.active_rows(source))

    async def entries(self, request: Request):
        """Show the Entries page."""
        self._must_read(request)
        try:
            query = data.EntryQuery.from_params(request.query_params)
        except ValueError as error:
            raise Refused(400, f'{error}; the page shows every choice in its menus')
        source = self.config.source

        def gather():
            document, problems, now, note = self.reading()
            return data.entries_page(source, now, document, query), problems, note
        page, problems, note = await run_in_threadpool(gather)
        return self.render(request, 'entries.html', page=page, problems=problems,
                           title='Entries', query=query, clock_note=note)

    async def entry(self, request: Request):
        """Show one entry: its confidence over time, its evidence, its audit history."""
        self._must_read(request)
        entry_id = request.path_params['entry_id']
        source = self.config.source

        def gather():
            document, _, now, note = self.reading()
            row, entry = data.find_entry(source, now, document, entry_id)
            if row is None:
                return None
            history = data.entry_history(source, entry_id)
            series = data.confidence_series(source, entry_id, entry, history, now)
            evidence = data.entry_evidence(source, entry_id)
            config = source.config
            thresholds = {'inject': config.inject_min, 'prune': config.prune_min,
                          'high': config.band_high, 'medium': config.band_medium}
            return {'row': row, 'history': history, 'evidence': evidence, 'clock_note': note,
                    'confidence_svg': charts.confidence_chart(series['points'],
                                                              series['events'], thresholds),
                    'daily_svg': charts.daily_chart(evidence['daily']),
                    'hours_svg': charts.hours_chart(evidence['hours']),
                    'recordings': blackbox_view.entry_recordings(source, entry_id),
                    'condition_svgs': condition_chart.charts_for(
                        source, evidence['signatures'], getattr(entry, 'text', ''))}
        page = await run_in_threadpool(gather)
        if page is None:
            raise Refused(404, f'there is no entry {entry_id!r} in the memory file, among '
                               "the peers' entries or in the archive; the Entries page "
                               'lists them')
        return self.render(request, 'entry.html', page=page, title=entry_id,
                           clock_note=page['clock_note'])

    async def dreams(self, request: Request):
        """Show every kept dream summary, newest first."""
        self._must_read(request)
        summaries = await run_in_threadpool(data.dreams_page, self.config.source)
        return self.render(request, 'dreams.html', summaries=summaries, title='Dreams')

    async def review(self, request: Request):
        """Show the proposals waiting and the undo with its preview."""
        self._must_read(request)
        from robot_memory.review import proposing  # lazy: 77 ms and 4 MB until the first review
        source, now = self.config.source, self.config.clock()

        def gather():
            pending, decided = [], []
            if source.db_path.exists():
                with proposing.ProposalQueue.open(source.db_path) as queue:
                    pending = [(item, item.describe(now)) for item in queue.pending(now)]
                    decided = [item for item in queue.recent(20) if item.status != 'pending']
            return pending, decided, data.undo_points(source)
        pending, decided, points = await run_in_threadpool(gather)
        return self.render(request, 'review.html', pending=pending, decided=decided,
                           points=points, title='Review')

    async def typed(self, request: Request):
        """Recall typed memory with the CLI's filters, honouring the trust level."""
        self._must_read(request)
        params = request.query_params
        query = params.get('q', '').strip()[:500]
        trust = params.get('trust', self.config.max_trust) or self.config.max_trust
        if trust not in TRUST_LEVELS:
            raise Refused(400, f'trust {trust!r} is not one of {", ".join(TRUST_LEVELS)}')
        if TRUST_LEVELS.index(trust) > TRUST_LEVELS.index(self.config.max_trust):
            raise Refused(403, f'trust {trust} is above what this page may show '
                               f"({self.config.max_trust}, the node's service_max_trust)")
        types = [kind for kind in params.getlist('type') if kind]
        for kind in types:
            if kind not in MEMORY_TYPES:
                raise Refused(400, f'type {kind!r} is not one of {", ".join(MEMORY_TYPES)}')
        try:
            k = int(params.get('k', '10') or 10)
        except ValueError:
            raise Refused(400, f'k {params.get("k")!r} is not a whole number (1-100)')
        if not 1 <= k <= 100:
            raise Refused(400, 'k must be between 1 and 100')
        filters_text = params.get('filter', '').strip()[:2000]
        filters = None
        if filters_text:
            try:
                filters = parse_json_object(filters_text, 'the filter')
            except SubstrateError as error:
                raise Refused(400, f'{error}; e.g. {{"context.room": "kitchen"}}')
        result = None
        if query:
            result = await run_in_threadpool(self._recall, query, k, trust, types, filters)
        return self.render(request, 'typed.html', query=query, trust=trust, k=k,
                           filters=filters_text, memory_types=MEMORY_TYPES,
                           types=types, result=result, levels=TRUST_LEVELS[
                               :TRUST_LEVELS.index(self.config.max_trust) + 1],
                           title='Typed memory')

    def _recall(self, query: str, k: int, trust: str, types: list, filters=None):
        from robot_memory.substrate.recall import recall_as_asked  # lazy: 90 ms, 3 MB
        from robot_memory.substrate.substrate_store import Substrate
        source = self.config.source
        if not source.db_path.exists():
            raise Refused(404, f'no database at {source.db_path} yet, so no typed memory')
        with Substrate(source.db_path, **self.config.encryption) as substrate:
            # Ranked as robot-memory recall ranks. A GET is a look: no access count,
            # salience, recall log or vector moves (a reload, a live update or another
            # site's <img> must not reinforce a record).
            return recall_as_asked(substrate, query, k, self.embedder(), index=False,
                                   filters=filters, trust=trust, now=self.config.clock(),
                                   types=types or None, record=False)

    def embedder(self):
        """Return the embedder robot-memory recall chooses, made once: its model loads once."""
        if not self._embedder:  # a page whose typed memory is never asked loads none of it
            from robot_memory.substrate.embedding import default_embedder  # lazy: 7 ms, 0.3 MB
            self._embedder.append(default_embedder())
        return self._embedder[0]

    # ------------------------------------------------------------------ changes

    async def decide(self, request: Request):
        """Approve or reject one proposal (a reason is required to reject)."""
        form = await self._form(request)
        decision = form.get('decision', '')
        if decision not in ('approve', 'reject'):
            raise Refused(400, 'decision must be approve or reject')
        reason = form.get('reason', '').strip()
        if decision == 'reject' and not reason:
            raise Refused(400, 'say why you reject it in a reason; nothing was changed')
        reason = reason or 'approved on the operator page'
        proposal_id = request.path_params['proposal_id']
        if not ID.fullmatch(proposal_id):
            if proposal_id.isascii() and proposal_id.isdigit():  # a number, but no id is so long
                raise Refused(404, f'there is no proposal {proposal_id[:40]} (ids have at most '
                                   '18 digits); the Review page lists those waiting; nothing '
                                   'was changed')
            raise Refused(404, f'{proposal_id[:40]!r} is not a proposal id (a number such as '
                               '7); the Review page lists those waiting; nothing was changed')
        decided = await run_in_threadpool(self._decide, proposal_id, decision,
                                          f'web:{form["actor"]}', reason)
        response = self.render(request, 'done.html', title='Decided', message=(
            f'{decided.status} #{decided.id} ({decided.kind} from {decided.source})'
            + (f': {decided.outcome}' if decided.outcome else '')), back='/review')
        return self._done(request, response, form['actor'])

    def _decide(self, proposal_id, decision, actor, reason):
        from robot_memory.review import proposing  # lazy: 77 ms and 4 MB until the first review
        from robot_memory.substrate.substrate_store import Substrate
        source = self.config.source
        if not source.db_path.exists():
            raise Refused(404, f'no database at {source.db_path}, so no proposals')
        now = self.config.clock()
        opened: list = []

        def substrate():
            if not opened:
                opened.append(Substrate(source.db_path, **self.config.encryption))
            return opened[0]
        allowed = (source.settings.federation.allowed_peers if source.settings is not None
                   else None)
        try:
            with proposing.ProposalQueue.open(source.db_path) as queue:
                return proposing.decide_proposal(queue, proposal_id, decision, actor, reason,
                                                 now, memory_file=source.memory,
                                                 substrate_factory=substrate,
                                                 allowed_peers=allowed)
        finally:
            for item in opened:
                item.close()

    async def undo(self, request: Request):
        """Preview an undo as a dry run, or make it once the preview was seen and confirmed."""
        from robot_memory.review import undo  # lazy: undo, 9 ms and 1 MB until the first undo
        form = await self._form(request)
        try:
            options = undo.point_options(_number(form.get('dream', '')),
                                         _number(form.get('undo_id', '')),
                                         form.get('to', ''), form.get('force') == 'yes')
        except ValueError as error:
            raise Refused(400, f'{error}; nothing was changed')
        confirm = form.get('confirm') == 'yes'
        report = await run_in_threadpool(self._undo, options, f'web:{form["actor"]}',
                                         form.get('reason', ''), not confirm)
        # Each entry with its values before and after; then the records, skips and keeps
        # (report.lines() lists the entries first, one line each, without their values).
        response = self.render(request, 'undo.html', report=report, form=form,
                               changes=data.undo_changes(report),
                               other_lines=report.lines()[len(report.entries):],
                               title='Undo' if confirm else 'Undo preview')
        return self._done(request, response, form['actor'])

    def _undo(self, options: dict, actor: str, reason: str, dry_run: bool):
        from robot_memory.evidence.evidence_store import EvidenceStore  # lazy: 32 ms, 2 MB
        from robot_memory.review import undo
        source = self.config.source
        if not source.db_path.exists():
            raise Refused(404, f'no database at {source.db_path}: nothing to undo')
        now = self.config.clock()
        with EvidenceStore(source.db_path) as store:
            try:
                return undo.undo(store, source.memory, now, actor, reason, dry_run=dry_run,
                                 words=PAGE_WORDS, **options)
            except undo.UndoError as error:
                # The core's refusal of a clock behind the last dream, in the page's words;
                # any other refusal (no such dream, a bad time) is said as it is.
                last = store.dream_cursor().last_dream_at
                if 'clock' not in str(error) or last is None or last <= now:
                    raise
                raise Refused(409, data.ahead_of_clock(last, now)) from None

    async def edit(self, request: Request):
        """Make a person's edit of an entry's text or tags, audited with their name."""
        form = await self._form(request)
        entry_id = request.path_params['entry_id']
        text = form.get('text')
        tags = parse_tags(form['tags']) if 'tags' in form else None
        detail = await run_in_threadpool(self._edit, entry_id, f'web:{form["actor"]}',
                                         form.get('reason', ''), text, tags)
        changed = [key for key in ('text', 'tags')
                   if detail['before'].get(key) != detail['after'].get(key)]
        held = detail.get('held')
        response = self.render(request, 'done.html', title='Edited', back=f'/entries/{entry_id}',
                               message=f'entry {entry_id}: {" and ".join(changed)} changed; '
                                       'audited as manual' + (
                                           f'. Its text reads like an instruction to a model '
                                           f'({held["why"]}), so the brain does not get it '
                                           f'until a person approves proposal #'
                                           f'{held["proposal"]} on the Review page'
                                           if held else ''))
        return self._done(request, response, form['actor'])

    def _edit(self, entry_id, actor, reason, text, tags):
        from robot_memory.evidence.evidence_store import EvidenceStore  # lazy: 32 ms, 2 MB
        source = self.config.source
        now = self.reading()[2]  # after the memory's newest stamp, when that is ahead
        with EvidenceStore(source.db_path) as store:
            return edit_entry(store, source.memory, entry_id, now, actor, reason, text=text,
                              tags=tags)

    # ------------------------------------------------------------------ live

    def state(self) -> tuple:
        """Return what the live page watches: the file, the dreams, the proposals."""
        source = self.config.source
        try:
            info = source.memory.path.stat()
            file_state = (info.st_mtime_ns, info.st_size)
        except OSError:
            file_state = None
        db_state = None
        conn = source.database()
        if conn is not None:
            try:
                with conn:
                    db_state = tuple(conn.execute(
                        'SELECT (SELECT max(id) FROM dreams), (SELECT max(id) FROM audit)'
                    ).fetchone())
                    if data.table_exists(conn, 'proposals'):
                        db_state += tuple(conn.execute(
                            "SELECT count(*), max(id) FROM proposals WHERE status = 'pending'"
                        ).fetchone())
            except Exception:  # noqa: B902 - a database being created is read next time
                db_state = None
            finally:
                conn.close()
        return file_state, db_state, blackbox_view.live_version(source)

    async def events(self, request: Request):
        """Send ``change`` (Server-Sent Events) when the memory, a dream or a proposal changes."""
        # lazy: sse-starlette, 24 ms and 2.6 MB of the page's start (until a live view)
        from sse_starlette.sse import EventSourceResponse
        self._must_read(request)
        if self.live >= self.config.max_live:
            raise Refused(503, f'{self.live} live pages are open, the most this server keeps; '
                               'close some (the page still works, reload it to see changes)')

        async def stream():
            last = await run_in_threadpool(self.state)
            yield {'event': 'hello', 'data': 'watching'}
            while True:
                await asyncio.sleep(self.config.live_period_s)
                current = await run_in_threadpool(self.state)
                if current != last:
                    last = current
                    yield {'event': 'change', 'data': json.dumps({'at': str(current)})}
        self.live += 1
        return LiveStream(self, EventSourceResponse(stream(), ping=15,
                                                    send_timeout=LIVE_SEND_TIMEOUT_S))


class LiveStream:
    """An open live stream that gives back its place in the page's count when it ends."""

    def __init__(self, page: Page, response):
        self.page = page
        self.response = response

    async def __call__(self, scope, receive, send):
        """Stream until the reader leaves or the server stops."""
        try:
            await self.response(scope, receive, send)
        finally:
            self.page.live -= 1


def shown(text) -> str:
    """Return ``text`` as the brain gets it: control and bidi-override characters escaped."""
    return neutralise(str(text), keep_newlines=True)


def counted(count: int, noun: str) -> str:
    """Return '1 entry', '2 entries': a count with its noun (the templates' ``counted``)."""
    return f'{count} {data.plural(count, noun)}'


def link_ids(text: str) -> Markup:
    """Escape ``text`` and link every entry id in it to its page."""
    return Markup(ENTRY_ID.sub(lambda match: f'<a href="/entries/{match.group(0)}">'
                                             f'{match.group(0)}</a>', str(escape(text))))


def _number(text: str) -> int:
    text = text.strip()
    if not text:
        return 0
    if not ID.fullmatch(text):
        raise ValueError(f'{text[:40]!r} is not an id (a whole number)')
    return int(text)


def create_app(config: PageConfig) -> Starlette:
    """Return the operator page's application."""
    page = Page(config)
    views = blackbox_view.Views(page, Refused)

    def guard(handler):
        async def endpoint(request: Request):
            if request.method == 'GET' and 'token' in request.query_params:
                return await page.guarded(request, page.login)
            return await page.guarded(request, handler)
        return endpoint

    routes = [
        Route('/', guard(page.now)),
        Route('/entries', guard(page.entries)),
        Route('/entries/{entry_id}', guard(page.entry)),
        Route('/entries/{entry_id}/edit', guard(page.edit), methods=['POST']),
        Route('/dreams', guard(page.dreams)),
        Route('/review', guard(page.review)),
        Route('/review/proposals/{proposal_id}', guard(page.decide), methods=['POST']),
        Route('/review/undo', guard(page.undo), methods=['POST']),
        Route('/typed', guard(page.typed)),
        Route('/events', guard(page.events)),
        Route('/blackbox/{recording_id}', guard(views.download)),
        Route('/active/acknowledge', guard(views.acknowledge), methods=['POST']),
        *fleet_view.routes(fleet_view.Views(page, Refused), guard),
        Mount('/static', StaticFiles(directory=str(HERE / 'static')), name='static'),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders),
                                               Middleware(ServerTiming)],
                    exception_handlers={Exception: page.failed})
    app.state.page = page
    return app


def page_config(memory, db_path, settings=None, token: Optional[str] = None,
                host: str = '127.0.0.1', read_only: bool = False, health=None,
                encryption: Optional[dict] = None, cache=None, live=None,
                fleet: Optional[fleet_view.FleetSettings] = None) -> PageConfig:
    """Return a PageConfig for a memory file, its database and the node's settings."""
    max_trust = settings.node.service_max_trust if settings is not None else 'medium'
    return PageConfig(source=data.Source(memory, db_path, settings, health, cache, live),
                      token=token or new_token(), host=host, read_only=read_only,
                      max_trust=max_trust, encryption=encryption or {}, fleet=fleet)
