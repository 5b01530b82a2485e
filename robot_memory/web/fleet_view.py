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
The operator page's Fleet view: the fleet store's roll-ups and lessons; promote and revoke.

Shown when the page is given a fleet store (``robot-memory serve --fleet-store URL``). It reads
through what ``robot-memory fleet report`` and ``fleet lessons`` read (``fleet.report`` and
``fleet.lesson_store``) and changes through the same audited operations as ``fleet promote``
and ``fleet revoke``: no SQL here. A promotion or a revocation needs the fleet's private key
(``--fleet-key``) and, as every change of the page, the access token, the form's mark and a
named actor, audited as ``web:NAME``. With ``--fleet-connect`` the signed lesson is published
through that router at once; robots also take it when they next ask the store.
"""

import dataclasses
import datetime as dt
import pathlib
from typing import Any
from typing import Optional

from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

DAYS = 7.0  # fleet.report's defaults, as robot-memory fleet report has them
SILENT_AFTER_S = 36 * 3600.0
SCOPES = ('model', 'site')
# Rows of each list the view shows at most (a fleet has thousands of robots): the silent robots
# and the faults on the most robots first; fleet report --json has them all.
MOST = 100


@dataclasses.dataclass(frozen=True)
class FleetSettings:
    """The fleet store the page shows, and what promoting from the page needs."""

    store: str  # postgresql://… or a SQLite file, as fleet report's --store
    fleet_key: Optional[pathlib.Path] = None  # the fleet's private key: promote and revoke
    connect: tuple = ()  # routers a lesson is published through at once
    tls: Any = None  # fleet.transport.TlsFiles, for tls/ routers
    days: float = DAYS
    silent_after_s: float = SILENT_AFTER_S


def open_store(settings: FleetSettings):
    """Open the fleet store (migrated, as every fleet command opens it)."""
    # lazy: the fleet, 80-110 ms and 10 MB of a page without one
    from robot_memory.fleet.envelope import Trust
    from robot_memory.fleet.fleet_store import FleetStore
    return FleetStore(settings.store, Trust({}))


def fleet_page(settings: FleetSettings, now: dt.datetime) -> dict:
    """Return the report, the lessons and the models and sites a lesson can go to."""
    from robot_memory.fleet import lesson_store  # lazy: the fleet, see open_store
    from robot_memory.fleet.report import build_report
    with open_store(settings) as store:
        report = build_report(store, now, settings.days, settings.silent_after_s)
        lessons = lesson_store.lessons(store)
    targets = [(scope, value) for scope in SCOPES
               for value in sorted({robot[scope] for robot in report['robots']})]
    robots = sorted(report['robots'], key=lambda robot: not robot['silent'])  # silent first
    return {'report': report, 'lessons': lessons, 'targets': targets, 'robots': robots,
            'most': MOST}


def target(text: str) -> tuple:
    """Return (scope, value) of a form's ``to`` ("model:rover-2"); ValueError says why not."""
    scope, _, value = text.partition(':')
    if scope not in SCOPES or not value:
        raise ValueError(f'{text[:80]!r} names no robots to promote to: choose "every robot of '
                         'model …" or "of site …" in the form')
    return scope, value


def source(form: dict) -> tuple:
    """Return (RRN, entry id) to promote: ``source`` ("RRN ENTRY"), else ``rrn`` and ``entry``."""
    rrn, _, entry = form.get('source', '').strip().partition(' ')
    if not form.get('source'):
        rrn, entry = form.get('rrn', '').strip(), form.get('entry', '').strip()
    if not rrn or not entry or len(entry) > 200:
        raise ValueError("name the robot (its RRN) and its entry's id (mem-…), as the fleet "
                         'report lists them')
    return rrn, entry.strip()


def _published(settings: FleetSettings, scope: str, value: str, message: bytes) -> str:
    """Publish the lesson through the page's routers; return what the operator is told."""
    from robot_memory.errors import MissingExtra  # lazy: the fleet, see open_store
    from robot_memory.fleet.refusals import FleetError
    from robot_memory.fleet.transport import publish_lesson_through
    later = 'its robots take it when they next ask the fleet store (at their next dream)'
    if not settings.connect:
        return later
    try:
        publish_lesson_through(settings.connect, settings.tls, scope, value, message)
    except (FleetError, MissingExtra) as error:
        return f'not published now ({error}); {later}'
    return f'published through {", ".join(settings.connect)}'


def promote(settings: FleetSettings, rrn: str, entry: str, scope: str, value: str,
            actor: str, reason: str, now: dt.datetime) -> str:
    """Promote as ``fleet promote`` does, then publish; return what the operator is told."""
    from robot_memory.fleet import lesson_store  # lazy: the fleet, see open_store
    with open_store(settings) as store:
        lesson_id, message = lesson_store.promote(store, settings.fleet_key, rrn, entry, scope,
                                                  value, actor, reason, now)
    return (f'lesson {lesson_id}: {rrn} {entry} to every robot of {scope} {value}; audited; '
            + _published(settings, scope, value, message))


def revoke(settings: FleetSettings, lesson_id: str, actor: str, reason: str,
           now: dt.datetime) -> str:
    """Revoke as ``fleet revoke`` does, then publish; return what the operator is told."""
    from robot_memory.fleet import lesson_store  # lazy: the fleet, see open_store
    with open_store(settings) as store:
        lesson, message = lesson_store.revoke(store, settings.fleet_key, lesson_id, actor,
                                              reason, now)
    return (f'lesson {lesson_id} revoked on every robot of {lesson.scope} {lesson.scope_value}; '
            f'audited; {_published(settings, lesson.scope, lesson.scope_value, message)}')


class Views:
    """The Fleet view's handlers over one ``app.Page``."""

    def __init__(self, page, refused):
        self.page = page
        self.refused = refused  # app.Refused: the page's clear refusal

    def _settings(self) -> FleetSettings:
        settings = self.page.config.fleet
        if settings is None:
            raise self.refused(404, 'this page was started without a fleet store: robot-memory '
                                    'serve --fleet-store URL shows the Fleet view '
                                    '(docs/fleet.md)')
        return settings

    def _changing(self, form: dict) -> tuple:
        """Return (settings, reason) of a promotion or revocation, or refuse saying why."""
        settings = self._settings()
        if settings.fleet_key is None:
            raise self.refused(409, 'a lesson is signed with the fleet key, and this page was '
                                    'started without it: add --fleet-key PEM (fleet keygen '
                                    'makes it) to robot-memory serve; nothing was changed')
        reason = form.get('reason', '').strip()
        if not reason:
            raise self.refused(400, 'say why in the reason box: robots show it with the lesson '
                                    'and the audit keeps it; nothing was changed')
        return settings, reason

    async def show(self, request):
        """Show the Fleet view."""
        from robot_memory.fleet.refusals import FleetError  # lazy: the fleet, see open_store
        self.page._must_read(request)
        settings = self._settings()
        try:
            shown = await run_in_threadpool(fleet_page, settings, self.page.config.clock())
        except FleetError as error:
            raise self.refused(503, f'{error}; the Fleet view shows again once the store '
                                    'answers')
        return self.page.render(request, 'fleet.html', title='Fleet', fleet=shown,
                                can_promote=settings.fleet_key is not None,
                                hours=settings.silent_after_s / 3600)

    async def promote(self, request):
        """Promote a robot's entry to every robot of a model or site, audited."""
        form = await self.page._form(request)
        settings, reason = self._changing(form)
        try:
            rrn, entry = source(form)
            scope, value = target(form.get('to', ''))
        except ValueError as error:
            raise self.refused(400, f'{error}; nothing was changed') from None
        said = await run_in_threadpool(promote, settings, rrn, entry, scope, value,
                                       f'web:{form["actor"]}', reason, self.page.config.clock())
        response = self.page.render(request, 'done.html', title='Promoted', back='/fleet',
                                    message=said)
        return self.page._done(request, response, form['actor'])

    async def revoke(self, request):
        """Revoke a fleet lesson on every robot it went to, audited."""
        form = await self.page._form(request)
        settings, reason = self._changing(form)
        lesson_id = form.get('lesson', '').strip()
        if not lesson_id:
            raise self.refused(400, 'the form names no lesson; reload the Fleet view; nothing '
                                    'was changed')
        said = await run_in_threadpool(revoke, settings, lesson_id, f'web:{form["actor"]}',
                                       reason, self.page.config.clock())
        response = self.page.render(request, 'done.html', title='Revoked', back='/fleet',
                                    message=said)
        return self.page._done(request, response, form['actor'])


def routes(views: Views, guard) -> list:
    """Return the Fleet view's routes, each behind the page's ``guard``."""
    return [Route('/fleet', guard(views.show)),
            Route('/fleet/promote', guard(views.promote), methods=['POST']),
            Route('/fleet/revoke', guard(views.revoke), methods=['POST'])]
