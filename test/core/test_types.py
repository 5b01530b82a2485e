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

"""mypy on setup.cfg's [mypy] files, as ROS packages run ament_mypy; the package is typed."""

import configparser
import pathlib

from mypy import api
import pytest

from conftest import REPO
import robot_memory


def mypy(tmp_path, monkeypatch, *extra) -> tuple:
    """Run mypy with setup.cfg in the checkout; return (report, exit status)."""
    monkeypatch.chdir(REPO)
    out, err, status = api.run(['--config-file', str(REPO / 'setup.cfg'),
                                '--cache-dir', str(tmp_path / 'cache'), *extra])
    return out + err, status


@pytest.mark.linter
def test_the_typed_modules_pass_mypy(tmp_path, monkeypatch):
    """Every module setup.cfg lists passes mypy with check_untyped_defs."""
    report, status = mypy(tmp_path, monkeypatch)
    assert status == 0, report
    assert 'Success: no issues found' in report


@pytest.mark.linter
def test_mypy_reports_a_type_error_in_a_listed_module(tmp_path, monkeypatch):
    """The same settings fail on a typing error inside an untyped function (check_untyped_defs)."""
    bad = tmp_path / 'bad.py'
    bad.write_text('"""A module with a type error in an untyped function."""\n\n'
                   'from robot_memory.common.timeutil import format_iso\n\n\n'
                   'def stamp():\n    return format_iso(3)\n', encoding='utf-8')
    report, status = mypy(tmp_path, monkeypatch, str(bad))
    assert status == 1, report
    assert 'Argument 1 to "format_iso" has incompatible type "int"' in report


def test_the_package_ships_py_typed():
    """PEP 561: py.typed is in the installed package and in setup.cfg's package data."""
    config = configparser.ConfigParser()
    config.read(REPO / 'setup.cfg')
    assert config['options.package_data']['robot_memory'].strip() == 'py.typed'
    assert (REPO / 'robot_memory' / 'py.typed').is_file()
    installed = pathlib.Path(robot_memory.__file__).parent / 'py.typed'
    assert installed.is_file(), f'{installed} is missing: the colcon install drops it'
