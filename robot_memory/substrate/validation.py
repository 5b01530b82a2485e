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
Checks of what callers pass to the substrate: each returns the clean value or refuses it.

A refusal is a :class:`~robot_memory.substrate.errors.SubstrateError` that says what was
wrong and what to do.
"""

import datetime as dt
import re
from typing import Optional

from robot_memory.common import validation_text
from robot_memory.common.timeutil import require_aware
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.vocabulary import MAX_REASON
from robot_memory.substrate.vocabulary import MAX_TAG
from robot_memory.substrate.vocabulary import MAX_TAGS
from robot_memory.substrate.vocabulary import MAX_TEXT
from robot_memory.substrate.vocabulary import MEMORY_TYPES
from robot_memory.substrate.vocabulary import SENSITIVITIES

TAG = re.compile(r'^[\w][\w\-:./]*$', re.UNICODE)
_SURROGATE = re.compile('[\ud800-\udfff]')


def first_error(error) -> str:
    """Return the first problem of a pydantic ``ValidationError``, as ``where: what``."""
    return validation_text.first_error(error, 'value')


def epoch(now: Optional[dt.datetime], what: str = 'now') -> float:
    """Return ``now`` (an aware datetime: the caller's clock) as UNIX seconds."""
    return require_aware(now, SubstrateError, what).timestamp()


def level(name: str, what: str = 'trust') -> int:
    """Return the rank of sensitivity ``name`` (0: public); refuse an unknown one."""
    if name not in SENSITIVITIES:
        raise SubstrateError(f'{what} {name!r} is not one of {", ".join(SENSITIVITIES)}')
    return SENSITIVITIES.index(name)


def check_text(text) -> str:
    """Return ``text`` stripped; refuse a non-string, empty, NUL-holding or too long one."""
    if not isinstance(text, str):
        raise SubstrateError(f'text must be a string, got {type(text).__name__}')
    stripped = text.strip()
    if not stripped:
        raise SubstrateError('text is empty; say what to remember')
    if '\x00' in stripped:
        raise SubstrateError('text contains a NUL character; remove it')
    _refuse_surrogate(stripped, 'text')
    if len(text) > MAX_TEXT:
        raise SubstrateError(f'text is {len(text)} characters; the limit is {MAX_TEXT} '
                             '(split it into several memories)')
    return stripped


def check_tags(tags) -> list:
    """Return the tags casefolded and deduplicated; refuse invalid or too many."""
    if tags is None:
        return []
    if isinstance(tags, str):
        raise SubstrateError('tags must be a list of strings, not one string')
    cleaned = []
    for tag in tags:
        if not isinstance(tag, str) or not TAG.match(tag) or len(tag) > MAX_TAG:
            raise SubstrateError(f'tag {tag!r} is invalid: use 1–{MAX_TAG} letters, digits '
                                 'or _ - : . / (starting with a letter or digit)')
        if tag.casefold() not in cleaned:
            cleaned.append(tag.casefold())
    if len(cleaned) > MAX_TAGS:
        raise SubstrateError(f'{len(cleaned)} tags given; the limit is {MAX_TAGS}')
    return cleaned


def check_type(name) -> str:
    """Return ``name`` when it is a memory type; refuse it otherwise."""
    if name not in MEMORY_TYPES:
        raise SubstrateError(f'memory type {name!r} is not one of {", ".join(MEMORY_TYPES)}')
    return name


def check_unit(value, what: str) -> float:
    """Return ``value`` as a float when it is a number in [0, 1]; refuse it otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            0.0 <= value <= 1.0):
        raise SubstrateError(f'{what} must be a number between 0 and 1, got {value!r}')
    return float(value)


def check_reason(reason) -> str:
    """Return the audit reason stripped; refuse an empty or too long one."""
    if not isinstance(reason, str) or not reason.strip():
        raise SubstrateError('a reason is required (it goes into the audit log)')
    if len(reason) > MAX_REASON:
        raise SubstrateError(f'reason is {len(reason)} characters; the limit is '
                             f'{MAX_REASON} (shorten it)')
    _refuse_surrogate(reason, 'reason')
    return reason.strip()


def _refuse_surrogate(value: str, what: str) -> None:
    r"""
    Refuse a lone surrogate ("\ud800" in JSON, bytes that were not UTF-8 on a command line).

    SQLite stores UTF-8: it failed later with the codec's own words, naming no field.
    """
    found = _SURROGATE.search(value)
    if found is not None:
        raise SubstrateError(f'{what} holds a lone surrogate (U+{ord(found.group()):04X}) at '
                             f'position {found.start()}, which is no character: send UTF-8 '
                             'text')


def check_provenance(provenance) -> list:
    """Return provenance links as dicts (a "kind:ref" string is one too)."""
    sources = []
    for item in provenance or ():
        if isinstance(item, str):
            kind, _, ref = item.partition(':')
            item = {'kind': kind, 'ref': item} if ref else {'kind': 'event', 'ref': item}
        # lazy: the record models and pydantic, 250 ms and 10 MB of robot-memory recall
        import pydantic
        from robot_memory.substrate import models
        try:
            sources.append(models.ProvenanceSource.model_validate(item).to_dict())
        except pydantic.ValidationError as error:
            raise SubstrateError(f'provenance {item!r} is invalid: {first_error(error)}; '
                                 'give {"kind": "observation", "ref": "observation:42"} '
                                 'or a "kind:ref" string') from None
    if len(sources) > 100:
        raise SubstrateError('more than 100 provenance links; link a summary record')
    return sources
