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
Words for a pydantic ValidationError: where each problem is and what it is.

Every place that turns a refused value into a message a person reads uses these, with its
own label for the whole value and its own prefix. Duck-typed on ``errors()`` and
``error_count()``: importing this module imports no pydantic and no model.
"""

from typing import Mapping

# Leads pydantic puts before the message of a validator's ValueError or assert.
VALIDATOR_LEADS = ('Value error, ', 'Assertion failed, ')


def places(detail: Mapping, prefix: str = '') -> list:
    """
    Return the dotted paths of the fields one error of ``errors()`` is about, each prefixed.

    A cross-field refusal (its error carries ``fields``, as ``errors.SettingsConflict`` does)
    is about those fields of the model at its ``loc``; any other error about its ``loc``
    (nothing: the whole value).
    """
    loc = tuple(str(part) for part in detail.get('loc', ()))
    fields = getattr((detail.get('ctx') or {}).get('error'), 'fields', None)
    paths = [loc + (field,) for field in fields] if fields else [loc] if loc else []
    return [prefix + '.'.join(path) for path in paths]


def where(detail: Mapping, whole: str = '', prefix: str = '') -> str:
    """Return the field path(s) of one error of ``errors()``, or ``whole`` for the value."""
    return ', '.join(places(detail, prefix)) or (prefix + whole if whole else '')


def message(detail: Mapping, leads: tuple = ()) -> str:
    """Return the message of one error of ``errors()`` less the first of ``leads`` it opens with."""
    text = detail.get('msg', 'invalid')
    for lead in leads:
        if text.startswith(lead):
            return text[len(lead):]
    return text


def describe(detail: Mapping, whole: str = '', prefix: str = '', leads: tuple = ()) -> str:
    """Return one error as ``<prefix><where>: <message>``, the message alone without a place."""
    place = where(detail, whole, prefix)
    text = message(detail, leads)
    return f'{place}: {text}' if place else text


def first_error(error, whole: str = '', prefix: str = '', leads: tuple = ()) -> str:
    """Return the first problem of a ValidationError (see ``describe`` for the parameters)."""
    return describe(error.errors()[0], whole, prefix, leads)


def first_errors(error, limit: int = 3) -> str:
    """Return up to ``limit`` problems joined by ``; `` and how many more there are."""
    parts = [describe(detail) for detail in error.errors()[:limit]]
    more = error.error_count() - len(parts)
    return '; '.join(parts) + (f' (+{more} more)' if more > 0 else '')
