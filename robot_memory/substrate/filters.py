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
Structured filters on a record's context, spatial distance, and limits on JSON input.

A filter is a dict from a dot path to a value (equality) or to an operator dict:
``{"context.location.room": "kitchen", "context.battery": {"$lt": 0.2}}``. Operators:
``$eq $ne $lt $lte $gt $gte``. Paths start with ``context.``. A record without the
field never matches, not even ``$ne``; comparing a number with a string does not match
(no error), so one odd record cannot break a query.
"""

import json
import math
import re
from typing import Any
from typing import Optional

from robot_memory.common import jsontext
from robot_memory.substrate.errors import SubstrateError


OPERATORS = ('$eq', '$ne', '$lt', '$lte', '$gt', '$gte')
MAX_CONTEXT_BYTES = 16_384
MAX_JSON_DEPTH = 8
MAX_FILTERS_BYTES = 4096
_SEGMENT = re.compile(r'^[A-Za-z0-9_\-]{1,64}$')
_MISSING = object()


def parse_json_object(text: str, what: str, max_bytes: int = MAX_CONTEXT_BYTES) -> dict:
    """Return a JSON object from text (CLI argument, service field); SubstrateError says why not."""
    if len(text.encode('utf-8', 'surrogatepass')) > max_bytes:
        raise SubstrateError(f'{what} is larger than {max_bytes} bytes; send less')
    try:
        value = jsontext.loads(text)
    except json.JSONDecodeError as error:
        if error.msg == jsontext.NESTED_TOO_DEEPLY:
            raise SubstrateError(f'{what} nests too deeply; flatten it') from None
        raise SubstrateError(f'{what} is not JSON ({error.msg} at column {error.colno})') \
            from None
    if not isinstance(value, dict):
        raise SubstrateError(f'{what} must be a JSON object, e.g. {{"room": "kitchen"}}')
    check_json(value, what, max_bytes)
    return value


def check_json(value: Any, what: str, max_bytes: int = MAX_CONTEXT_BYTES,
               max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse values that are not JSON, nest deeper than ``max_depth`` or exceed ``max_bytes``."""
    def depth(item, level):
        if level > max_depth:
            raise SubstrateError(f'{what} nests deeper than {max_depth} levels; flatten it')
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise SubstrateError(f'{what} keys must be strings, got {key!r}')
                depth(child, level + 1)
        elif isinstance(item, (list, tuple)):
            for child in item:
                depth(child, level + 1)
        elif isinstance(item, float) and not math.isfinite(item):
            raise SubstrateError(f'{what} contains {item}, which JSON cannot store')
        elif not isinstance(item, (str, int, float, bool)) and item is not None:
            raise SubstrateError(f'{what} contains a {type(item).__name__}; use JSON values '
                                 '(strings, numbers, booleans, null, lists, objects)')

    depth(value, 1)
    size = len(json.dumps(value, ensure_ascii=False).encode('utf-8'))
    if size > max_bytes:
        raise SubstrateError(f'{what} is {size} bytes of JSON; the limit is {max_bytes}')


def _path(path: str) -> tuple:
    if not isinstance(path, str):
        raise SubstrateError(f'filter keys are dot paths like "context.location.room", '
                             f'got {path!r}')
    parts = path.split('.')
    if parts[0] != 'context' or len(parts) < 2:
        raise SubstrateError(f'filter path {path!r} must start with "context." (e.g. '
                             '"context.location.room"); use types= or tags= for the rest')
    for part in parts[1:]:
        if not _SEGMENT.match(part):
            raise SubstrateError(f'filter path {path!r} has an invalid segment {part!r} '
                                 '(letters, digits, _ and - only)')
    return tuple(parts[1:])


def compile_filters(filters: Optional[dict]) -> list:
    """Validate a filter dict; returns ``[(path parts, operator, value)]``."""
    if not filters:
        return []
    if not isinstance(filters, dict):
        raise SubstrateError('filters must be an object of dot path -> value or '
                             '{"$op": value}')
    check_json(filters, 'filters', max_bytes=MAX_FILTERS_BYTES)
    compiled = []
    for path, condition in filters.items():
        parts = _path(path)
        if isinstance(condition, dict) and any(str(key).startswith('$') for key in condition):
            for operator, value in condition.items():
                if operator not in OPERATORS:
                    raise SubstrateError(f'unknown filter operator {operator!r} on {path!r}; '
                                         f'use one of {" ".join(OPERATORS)}')
                if operator not in ('$eq', '$ne') and not isinstance(value, (int, float, str)):
                    raise SubstrateError(f'{operator} on {path!r} needs a number or a string, '
                                         f'got {value!r}')
                compiled.append((parts, operator, value))
        else:
            compiled.append((parts, '$eq', condition))
    return compiled


def get_path(data: Any, parts: tuple) -> Any:
    """Return the value at ``parts`` inside nested dicts, or a private MISSING marker."""
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _comparable(left, right) -> bool:
    numbers = (int, float)
    if isinstance(left, bool) or isinstance(right, bool):
        return False
    return (isinstance(left, numbers) and isinstance(right, numbers)) or (
        isinstance(left, str) and isinstance(right, str))


def matches(context: dict, compiled: list) -> bool:
    """Whether a record's context satisfies every compiled condition."""
    for parts, operator, expected in compiled:
        actual = get_path(context, parts)
        if actual is _MISSING:
            return False
        if operator == '$eq':
            if actual != expected or isinstance(actual, bool) != isinstance(expected, bool):
                return False
        elif operator == '$ne':
            if actual == expected and isinstance(actual, bool) == isinstance(expected, bool):
                return False
        else:
            if not _comparable(actual, expected):
                return False
            if operator == '$lt' and not actual < expected:
                return False
            if operator == '$lte' and not actual <= expected:
                return False
            if operator == '$gt' and not actual > expected:
                return False
            if operator == '$gte' and not actual >= expected:
                return False
    return True


def check_point(point, what: str = 'near') -> tuple:
    """Return a position as a tuple of 2 or 3 finite floats."""
    try:
        values = tuple(float(value) for value in point)
    except (TypeError, ValueError, OverflowError):  # 10**400 is no float
        raise SubstrateError(f'{what} must be 2 or 3 numbers (x, y[, z]), got '
                             f'{str(point)[:80]}') from None
    if len(values) not in (2, 3) or not all(math.isfinite(value) for value in values):
        raise SubstrateError(f'{what} must be 2 or 3 finite numbers (x, y[, z]), got {point!r}')
    return values


def position_of(context: dict, parts: tuple = ('position',)) -> Optional[tuple]:
    """Return a record's position from its context: ``[x, y(, z)]`` or ``{"x", "y"(, "z")}``."""
    value = get_path(context, parts)
    if isinstance(value, dict):
        value = [value[key] for key in ('x', 'y', 'z') if key in value]
    if not isinstance(value, (list, tuple)) or len(value) not in (2, 3):
        return None
    if not all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value):
        return None
    try:  # one record's odd position (10**400, 1e308) makes it one without a position
        point = tuple(float(item) for item in value)
    except OverflowError:
        return None
    return point if all(math.isfinite(item) for item in point) else None


def distance(left: tuple, right: tuple) -> float:
    """Euclidean distance; a missing z counts as 0."""
    size = max(len(left), len(right))
    left = left + (0.0,) * (size - len(left))
    right = right + (0.0,) * (size - len(right))
    return math.hypot(*(a - b for a, b in zip(left, right)))  # no overflow of (a - b) ** 2
