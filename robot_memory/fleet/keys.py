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
Zenoh key expressions of the fleet: where a robot publishes, where the store answers.

A robot of site ``S`` with RRN ``R`` publishes its payload on ``robot-memory/fleet/S/R/payload``,
answers queries for it there too, and declares its liveliness token on
``robot-memory/fleet/S/R/alive``. The fleet store acknowledges deliveries on its queryable
``robot-memory/store/ingest/S/R`` and answers reads on ``robot-memory/store/report`` and
``robot-memory/store/robots/R``. Lessons go out on ``robot-memory/lessons/model/M`` and
``robot-memory/lessons/site/S``; a robot of site S and model M asks for the current ones on
``robot-memory/store/lessons/S/M``. Site, model and RRN are single chunks (no ``/``, no
wildcards).
"""

import re
from typing import Optional

from robot_memory.fleet.refusals import FleetError
from robot_memory.rcan.schema import RRN_PATTERN

ROOT = 'robot-memory'
FLEET = f'{ROOT}/fleet'
STORE = f'{ROOT}/store'
SITE_PATTERN = r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'
ALL_PAYLOADS = f'{FLEET}/*/*/payload'
ALL_INGEST = f'{STORE}/ingest/*/*'
REPORT = f'{STORE}/report'
ROBOTS = f'{STORE}/robots/*'
LESSONS = f'{ROOT}/lessons'
ALL_LESSONS = f'{LESSONS}/*/*'
STORE_LESSONS = f'{STORE}/lessons/*/*'

_SITE = re.compile(SITE_PATTERN)
_RRN = re.compile(RRN_PATTERN)


def check_site(site: str) -> str:
    """Return ``site`` when it can name a site in a key expression; else raise FleetError."""
    if not isinstance(site, str) or not _SITE.fullmatch(site):
        raise FleetError(f'site {site!r} cannot be used in a key expression: give 1 to 64 '
                         'letters, digits, "_", "." or "-", starting with a letter or digit '
                         '(e.g. depot-north)')
    return site


def check_rrn(rrn: str) -> str:
    """Return ``rrn`` when it is an RRN; else raise FleetError."""
    if not isinstance(rrn, str) or not _RRN.fullmatch(rrn):
        raise FleetError(f'{rrn!r} is not an RRN (e.g. RRN-000000000005)')
    return rrn


def _chunks(site: str, rrn: str) -> str:
    return f'{check_site(site)}/{check_rrn(rrn)}'


def payload_key(site: str, rrn: str) -> str:
    """Return the key a robot publishes its payload on (and answers queries for it on)."""
    return f'{FLEET}/{_chunks(site, rrn)}/payload'


def alive_key(site: str, rrn: str) -> str:
    """Return the key of a robot's liveliness token."""
    return f'{FLEET}/{_chunks(site, rrn)}/alive'


def ingest_key(site: str, rrn: str) -> str:
    """Return the key of the store's queryable that takes a delivery and answers an ack."""
    return f'{STORE}/ingest/{_chunks(site, rrn)}'


def robot_key(rrn: str) -> str:
    """Return the key of the store's queryable that answers one robot's entries."""
    return f'{STORE}/robots/{check_rrn(rrn)}'


def lesson_key(scope: str, value: str) -> str:
    """Return the key the store publishes the lessons of a model or site on."""
    return f'{LESSONS}/{scope}/{check_site(value)}'


def store_lessons_key(site: str, model: str) -> str:
    """Return the key a robot of ``site`` and ``model`` asks the store for its lessons on."""
    return f'{STORE}/lessons/{check_site(site)}/{check_site(model)}'


def site_and_rrn(key: str) -> Optional[tuple]:
    """Return (site, rrn) of a payload or ingest key, or None when the key is neither."""
    parts = str(key).split('/')
    if len(parts) == 5 and parts[:2] == FLEET.split('/') and parts[4] == 'payload':
        site, rrn = parts[2], parts[3]
    elif len(parts) == 5 and parts[:3] == f'{STORE}/ingest'.split('/'):
        site, rrn = parts[3], parts[4]
    else:
        return None
    if not _SITE.fullmatch(site) or not _RRN.fullmatch(rrn):
        return None
    return site, rrn
