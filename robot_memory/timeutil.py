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
Time helpers: every timestamp in robot_memory is an aware UTC datetime.

Pure functions only; the clock is always passed in by the caller.
"""

import datetime as dt

UTC = dt.timezone.utc


def to_utc(value: dt.datetime) -> dt.datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if value.utcoffset() == dt.timedelta(0) and value.tzinfo is UTC:
        return value
    return value.astimezone(UTC)


def parse_iso(text: str) -> dt.datetime:
    """Parse an ISO-8601 timestamp (``Z`` or an offset; naive means UTC)."""
    if not isinstance(text, str):
        raise ValueError(f'expected an ISO-8601 timestamp string, got {type(text).__name__}')
    cleaned = text.strip()
    if cleaned.endswith(('Z', 'z')):
        cleaned = cleaned[:-1] + '+00:00'
    try:
        return to_utc(dt.datetime.fromisoformat(cleaned))
    except ValueError:
        raise ValueError(
            f'{text!r} is not an ISO-8601 timestamp (expected e.g. 2026-04-01T02:00:00Z)'
        ) from None


def format_iso(value: dt.datetime) -> str:
    """Format an aware datetime as ISO-8601 UTC with a ``Z`` suffix."""
    return to_utc(value).isoformat().replace('+00:00', 'Z')


def days_between(earlier: dt.datetime, later: dt.datetime) -> float:
    """Days from ``earlier`` to ``later`` (negative when the clock went backwards)."""
    return (later - earlier).total_seconds() / 86400.0
