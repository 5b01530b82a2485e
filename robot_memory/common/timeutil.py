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

import argparse
import datetime as dt
from typing import Optional
from typing import overload

UTC = dt.timezone.utc
FILE_STAMP_FORMAT = '%Y%m%dT%H%M%SZ'


def to_utc(value: dt.datetime) -> dt.datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken as UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    if value.utcoffset() == dt.timedelta(0) and value.tzinfo is UTC:
        return value
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+02:00: before the first UTC time there is
        raise ValueError(f'{value.isoformat()} is out of range in UTC; give a time between '
                         'the years 1 and 9999') from None


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


def file_stamp(value: dt.datetime) -> str:
    """Format a moment for a file name, to the second: ``20260401T030000Z``."""
    return format_iso(value).replace(':', '').replace('-', '').split('.')[0].rstrip('Z') + 'Z'


def parse_file_stamp(text: str) -> dt.datetime:
    """Parse a moment written by ``file_stamp`` (ValueError if ``text`` is not one)."""
    return dt.datetime.strptime(text, FILE_STAMP_FORMAT).replace(tzinfo=UTC)


def require_aware(value, error: type = ValueError, what: str = 'now') -> dt.datetime:
    """
    Return ``value`` as aware UTC; refuse anything but an aware datetime with ``error``.

    The core takes the clock as an argument: a naive time is an unknown time there, not UTC.
    """
    if not isinstance(value, dt.datetime):
        raise error(f'{what} must be a datetime (the caller passes the clock), got '
                    f'{type(value).__name__}')
    if value.tzinfo is None:
        raise error(f'{what} must be an aware datetime, got a naive {value.isoformat()}; '
                    'attach timezone.utc, e.g. datetime.now(timezone.utc)')
    return to_utc(value)


def to_epoch(value: dt.datetime) -> float:
    """Return ``value`` as UNIX seconds (a naive value is taken as UTC)."""
    return to_utc(value).timestamp()


@overload
def from_epoch(seconds: float) -> dt.datetime: ...


@overload
def from_epoch(seconds: None) -> None: ...


def from_epoch(seconds: Optional[float]) -> Optional[dt.datetime]:
    """Return UNIX seconds as an aware UTC datetime (None stays None)."""
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, UTC)


def parse_iso_argument(text: str) -> dt.datetime:
    """Parse an ISO-8601 command-line value (an argparse ``type``): a bad one says why."""
    try:
        return parse_iso(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def days_between(earlier: dt.datetime, later: dt.datetime) -> float:
    """Days from ``earlier`` to ``later`` (negative when the clock went backwards)."""
    return (later - earlier).total_seconds() / 86400.0
