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

"""mypy on the whole package with setup.cfg, as ROS packages run ament_mypy; it is typed."""

import configparser
import pathlib
import sys

from mypy import api
from mypy.version import __version__ as mypy_version
from packaging.specifiers import SpecifierSet
import pytest

import robot_memory
from support.paths import REPO

# Kept under the build tree between runs, one per environment (Kilted's and Jazzy's venvs
# hold different libraries): a run after a small change re-checks only what it touched.
CACHE = REPO / 'build' / ('mypy-cache-' + pathlib.Path(sys.prefix).name.lstrip('.'))


def mypy(monkeypatch, *targets) -> tuple:
    """Run mypy with setup.cfg in the checkout on ``targets``; return (report, exit status)."""
    monkeypatch.chdir(REPO)
    out, err, status = api.run(['--config-file', str(REPO / 'setup.cfg'),
                                '--cache-dir', str(CACHE), *targets])
    return out + err, status


@pytest.mark.linter
def test_the_package_passes_mypy(monkeypatch):
    """Every module of robot_memory passes mypy with check_untyped_defs."""
    report, status = mypy(monkeypatch, '-p', 'robot_memory')
    assert status == 0, report
    assert 'Success: no issues found' in report


@pytest.mark.linter
def test_setup_cfg_checks_the_whole_package():
    """The settings name the package, not a list of modules that a new one would miss."""
    config = configparser.ConfigParser()
    config.read(REPO / 'setup.cfg')
    assert config['mypy']['packages'].strip() == 'robot_memory'
    assert config['mypy'].getboolean('check_untyped_defs')
    assert 'files' not in config['mypy'] and 'modules' not in config['mypy']
    assert 'ignore_missing_imports' not in config['mypy'], 'name the untyped libraries instead'


@pytest.mark.linter
def test_mypy_reports_a_type_error_in_an_untyped_function(tmp_path, monkeypatch):
    """The same settings fail on a typing error inside an untyped function (check_untyped_defs)."""
    bad = tmp_path / 'bad.py'
    bad.write_text('"""A module with a type error in an untyped function."""\n\n'
                   'from robot_memory.common.timeutil import format_iso\n\n\n'
                   'def stamp():\n    return format_iso(3)\n', encoding='utf-8')
    report, status = mypy(monkeypatch, str(bad))
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


def test_mypy_is_pinned_to_one_range_in_setup_cfg_and_the_set_up():
    """A new mypy release cannot turn the suite red unasked: both installs pin one range."""
    config = configparser.ConfigParser()
    config.read(REPO / 'setup.cfg')
    extras = config['options.extras_require']
    pins = [line.strip() for value in extras.values() for line in value.splitlines()
            if line.strip().startswith('mypy')]
    setup = (REPO / 'scripts' / 'setup.sh').read_text(encoding='utf-8')
    assert len(pins) == 1 and '<' in pins[0] and '>=' in pins[0], pins
    assert f'"{pins[0]}"' in setup
    assert SpecifierSet(pins[0][len('mypy'):]).contains(mypy_version), (mypy_version, pins[0])
