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

"""The shared helpers each concept has one home for: durable files, SQLite files, time, words."""

import datetime as dt
import re
import sqlite3
import subprocess
import sys

from pydantic import BaseModel
from pydantic import Field
from pydantic import field_validator
from pydantic import model_validator
from pydantic import ValidationError
import pytest

from robot_memory.common import fileio
from robot_memory.common import sqlite_db
from robot_memory.common import timeutil
from robot_memory.common import validation_text
from robot_memory.errors import SettingsConflict
from robot_memory.rcan.schema import check_printable
from robot_memory.rcan.schema import clean_tags
from robot_memory.substrate.textrules import jaccard
from robot_memory.substrate.textrules import token_set

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 4, 1, 3, 0, 0, 123456, tzinfo=UTC)


class _Limits(BaseModel):
    speed: float = Field(ge=0, le=2)
    name: str = Field(min_length=1)

    @field_validator('name')
    @classmethod
    def _no_x(cls, value: str) -> str:
        if 'x' in value:
            raise ValueError('no x allowed')
        return value


def _error(**values) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Limits(**values)
    return caught.value


def test_first_errors_lists_three_places_and_counts_the_rest():
    class Many(BaseModel):
        a: int
        b: int
        c: int
        d: int
        e: int
    with pytest.raises(ValidationError) as caught:
        Many()
    assert validation_text.first_errors(caught.value) == (
        'a: Field required; b: Field required; c: Field required (+2 more)')


def test_first_error_takes_a_label_for_the_whole_value_a_prefix_and_leads_to_drop():
    error = _error(speed=3, name='x')
    assert validation_text.first_error(error) == (
        'speed: Input should be less than or equal to 2')
    assert validation_text.first_error(error, prefix='dream.') == (
        'dream.speed: Input should be less than or equal to 2')
    named = _error(speed=1, name='x')
    assert validation_text.first_error(named) == 'name: Value error, no x allowed'
    assert validation_text.first_error(named, leads=validation_text.VALIDATOR_LEADS) == (
        'name: no x allowed')
    whole = {'loc': (), 'msg': 'Value error, speeds disagree'}
    assert validation_text.describe(whole, whole='settings', prefix='proposals.',
                                    leads=('Value error, ',)) == (
        'proposals.settings: speeds disagree')
    assert validation_text.describe(whole, prefix='field ') == 'Value error, speeds disagree'


class _Window(BaseModel):
    low: float = 0.0
    high: float = 1.0

    @model_validator(mode='after')
    def _ordered(self):
        if self.low > self.high:
            raise SettingsConflict(f'low ({self.low}) must not exceed high ({self.high})',
                                   ('low', 'high'))
        return self


class _Holder(BaseModel):
    window: _Window = _Window()


def test_a_cross_field_refusal_names_its_fields_where_one_field_names_itself():
    with pytest.raises(ValidationError) as caught:
        _Window(low=2.0)
    detail = caught.value.errors()[0]
    assert validation_text.places(detail, 'dream.') == ['dream.low', 'dream.high']
    assert validation_text.first_error(caught.value, 'settings', 'dream.',
                                       validation_text.VALIDATOR_LEADS) == (
        'dream.low, dream.high: low (2.0) must not exceed high (1.0)')
    with pytest.raises(ValidationError) as caught:  # a nested model: its fields under its loc
        _Holder(window={'low': 2.0})
    assert validation_text.where(caught.value.errors()[0]) == 'window.low, window.high'
    whole = {'loc': (), 'msg': 'Value error, speeds disagree', 'ctx': {'error': ValueError()}}
    assert validation_text.where(whole, 'settings', 'proposals.') == 'proposals.settings'


def test_the_words_module_imports_no_pydantic():
    code = ('import sys; import robot_memory.common.validation_text; '
            "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'robot_memory.'))))")
    run = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip() == \
        "['robot_memory.common', 'robot_memory.common.validation_text']"


def test_a_file_stamp_reads_back_to_the_second():
    stamp = timeutil.file_stamp(NOW)
    assert stamp == '20260401T030000Z'
    assert timeutil.parse_file_stamp(stamp) == NOW.replace(microsecond=0)
    with pytest.raises(ValueError):
        timeutil.parse_file_stamp('2026-04-01')


def test_epoch_seconds_go_both_ways_and_naive_means_utc():
    seconds = timeutil.to_epoch(NOW)
    assert timeutil.from_epoch(seconds) == NOW
    assert timeutil.to_epoch(NOW.replace(tzinfo=None)) == seconds
    assert timeutil.from_epoch(None) is None


def test_a_bad_command_line_time_says_what_is_wrong():
    import argparse
    assert timeutil.parse_iso_argument('2026-04-01T03:00:00Z') == NOW.replace(microsecond=0)
    with pytest.raises(argparse.ArgumentTypeError, match='is not an ISO-8601 timestamp'):
        timeutil.parse_iso_argument('yesterday')


def test_a_kept_copy_never_takes_an_existing_name(tmp_path):
    path = tmp_path / 'robot-memory.md'
    first = fileio.kept_name(path, 'corrupt', NOW)
    assert first.name == 'robot-memory.md.corrupt-20260401T030000Z'
    first.write_bytes(b'')
    assert fileio.kept_name(path, 'corrupt', NOW).name == first.name + '-2'


def test_a_new_file_is_private_and_never_written_over(tmp_path):
    path = tmp_path / 'peer.key'
    fileio.write_new(path, b'secret')
    assert path.read_bytes() == b'secret' and path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        fileio.write_new(path, b'other', 0o644)
    assert path.read_bytes() == b'secret'
    public = tmp_path / 'peer.pub'
    fileio.write_new(public, b'public', 0o644)
    assert public.stat().st_mode & 0o777 == 0o644


def test_a_damaged_database_is_found_and_set_aside_with_its_wal(tmp_path):
    path = tmp_path / 'robot-memory.db'
    assert sqlite_db.damage_found(path, 1.0) is None  # missing: nothing to set aside
    sqlite_db.create_private_file(path)
    assert path.stat().st_mode & 0o777 == fileio.FILE_MODE
    assert sqlite_db.damage_found(path, 1.0) is None  # empty: a new database
    path.write_bytes(b'not a database at all' * 100)
    fileio.side_file(path, '-wal').write_bytes(b'wal')
    fileio.side_file(path, '-shm').write_bytes(b'shm')
    assert 'not a database' in sqlite_db.damage_found(path, 1.0)
    kept = sqlite_db.set_aside(path, NOW)
    assert kept.name == 'robot-memory.db.corrupt-20260401T030000Z'
    assert fileio.side_file(kept, '-wal').read_bytes() == b'wal'
    assert not path.exists() and not fileio.side_file(path, '-shm').exists()
    assert sqlite_db.set_aside_copies(path) == [kept]


def test_damage_and_a_full_disk_are_told_apart():
    damaged = sqlite3.DatabaseError('database disk image is malformed')
    full = sqlite3.OperationalError('database or disk is full')
    assert sqlite_db.is_damage(damaged) and not sqlite_db.is_disk_full(damaged)
    assert sqlite_db.is_disk_full(full) and not sqlite_db.is_damage(full)
    assert sqlite_db.is_disk_full(OSError(28, 'No space left on device'))


def test_tags_are_trimmed_for_entries_and_kept_as_given_for_peers_and_rules():
    assert clean_tags([' wheel ', 'dock']) == ['wheel', 'dock']
    assert clean_tags([' wheel '], strip=False, max_tags=None) == [' wheel ']
    with pytest.raises(ValueError, match='each tag must be 1 to 64 characters'):
        clean_tags(['  '], strip=False)
    with pytest.raises(ValueError, match='at most 2 tags are allowed, got 3'):
        clean_tags(['a', 'b', 'c'], max_tags=2)
    seen = []
    clean_tags(['a'], check=lambda tag, what: seen.append((tag, what)) or check_printable(
        tag, what))
    assert seen == [('a', 'tag')]


def test_token_sets_and_jaccard():
    assert token_set('Left WHEEL, left wheel!') == frozenset({'left', 'wheel'})
    assert jaccard(token_set('left wheel'), token_set('left wheel slips')) == pytest.approx(2 / 3)
    assert jaccard(frozenset(), frozenset()) == 0.0


@pytest.mark.parametrize('value, says', [
    (dt.datetime(2026, 5, 1), 'must be an aware datetime, got a naive 2026-05-01T00:00:00'),
    ('2026-05-01T00:00:00Z', 'must be a datetime (the caller passes the clock), got str'),
])
def test_the_clock_the_core_is_given_must_be_an_aware_datetime(value, says):
    class Refused(Exception):
        pass

    with pytest.raises(Refused, match=re.escape(f'at {says}')):
        timeutil.require_aware(value, Refused, 'at')
    berlin = dt.datetime(2026, 5, 1, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert timeutil.require_aware(berlin) == dt.datetime(2026, 5, 1, 0, 0, tzinfo=dt.timezone.utc)
