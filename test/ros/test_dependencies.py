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
The run-time Python dependencies: declared for rosdep and pip, and checked before use.

On a robot with ROS from apt, ``ros2 run`` starts the installed executables with the
system python3, whose packages came from rosdep (``package.xml``) and pip. The processes
here are the installed ``memory_node`` and ``robot-memory`` run by a python3 that is a
fresh venv of this interpreter (on a robot, the one the command's ``#!`` line names):

* with nothing installed in it: one line naming every missing package and the pip
  command that fixes it, exit 2, no traceback;
* with pydantic 1.10.4 as apt installs it on Ubuntu 24.04 / Debian 12: the same, naming
  that release as too old. The check reads installed metadata only (never imports the
  package), so what is placed in the venv is what pip or apt leaves for pydantic 1.10.4,
  its ``.dist-info`` record; everything else comes from this checkout's venv through a
  ``.pth`` file, after it, as apt's ``dist-packages`` come after a user's site;
* with everything in place: the program runs.
"""

import configparser
import datetime as dt
import json
import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import robot_memory
from robot_memory import dependencies
from robot_memory.dependencies import Requirement
from robot_memory.dependencies import REQUIREMENTS
from robot_memory.rcan.memory_file import new_document
from robot_memory.rcan.memory_file import render
from support.paths import REPO

INSTALLED_PACKAGE_DIR = pathlib.Path(robot_memory.__file__).resolve().parent


def _versions(**installed):
    return lambda name: installed.get(name)


# --------------------------------------------------------------------------- pure logic

@pytest.mark.parametrize('version, expected', [
    ('2.11.7', (2, 11, 7)), ('1.10.4', (1, 10, 4)), ('2.0rc1', (2, 0)), ('38.0.4', (38, 0, 4)),
    ('6.0', (6, 0)), ('2', (2,)), ('1.24.2+ds', (1, 24, 2)), ('dev', ()),
])
def test_release_reads_the_numeric_part(version, expected):
    assert dependencies.release(version) == expected


def test_unmet_names_missing_and_too_old_packages_only():
    found = dependencies.unmet(version=_versions(**{
        'pydantic': '1.10.4', 'PyYAML': '6.0', 'numpy': '1.24.2', 'cryptography': '38.0.4'}))
    assert [(requirement.name, installed) for requirement, installed in found] == [
        ('pydantic', '1.10.4')]
    found = dependencies.unmet(version=_versions(**{'pydantic': '2.5.0', 'PyYAML': '6.0'}))
    assert [(requirement.name, installed) for requirement, installed in found] == [
        ('numpy', None), ('cryptography', None)]
    assert dependencies.unmet(version=_versions(**{
        'pydantic': '2.5.0', 'PyYAML': '6.0.1', 'numpy': '2.1.0',
        'cryptography': '41.0.7'})) == []


def test_versions_are_read_from_the_entry_names_as_importlib_metadata_finds_them(tmp_path):
    first, second = tmp_path / 'user', tmp_path / 'dist-packages'
    for directory, names in ((first, ['pydantic-2.11.7.dist-info', 'sqlite_utils-3.38.dist-info',
                                      'robot_memory.egg-info', 'notes.txt']),
                             (second, ['pydantic-1.10.4.egg-info', 'PyYAML-6.0.1-py3.12.egg-info',
                                       'numpy-1.26.4.dist-info'])):
        directory.mkdir()
        for name in names:
            (directory / name).mkdir()
    versions = dependencies.listed_versions([str(first), str(tmp_path / 'gone'), str(second)])
    assert versions == {'pydantic': '2.11.7', 'sqlite-utils': '3.38', 'robot-memory': '',
                        'pyyaml': '6.0.1', 'numpy': '1.26.4'}


def test_the_listed_versions_agree_with_importlib_metadata_here():
    from importlib import metadata
    versions = dependencies.listed_versions(sys.path)
    for item in REQUIREMENTS:
        assert versions[item.name.lower()] == metadata.version(item.name), item


def test_the_fix_command_suits_the_interpreter():
    wanted = [Requirement('pydantic', '2.5', 'python3-pydantic'),
              Requirement('sqlite-utils', '3.35', 'python3-sqlite-utils-pip')]
    specs = "'pydantic>=2.5' 'sqlite-utils>=3.35'"
    assert dependencies.pip_command(wanted, '/v/bin/python', in_venv=True) == \
        f'/v/bin/python -m pip install {specs}'
    assert dependencies.pip_command(wanted, '/usr/bin/python3', in_venv=False,
                                    externally_managed=True) == \
        f'/usr/bin/python3 -m pip install --user --break-system-packages {specs}'
    assert dependencies.pip_command(wanted, '/usr/bin/python3', in_venv=False,
                                    externally_managed=False) == \
        f'/usr/bin/python3 -m pip install --user {specs}'


# --------------------------------------------------------------------------- declarations

def test_setup_cfg_requires_what_the_check_checks():
    config = configparser.ConfigParser()
    config.read(REPO / 'setup.cfg')
    declared = [line.strip() for line in config['options']['install_requires'].splitlines()
                if line.strip()]
    assert declared == [f'{item.name}>={item.minimum}' for item in REQUIREMENTS]


def test_package_xml_names_every_runtime_dependency_with_a_rosdep_key():
    root = ET.parse(REPO / 'package.xml').getroot()
    exec_depends = {element.text for element in root.iter()
                    if element.tag in ('exec_depend', 'depend')}
    missing = [item.rosdep_key for item in REQUIREMENTS if item.rosdep_key not in exec_depends]
    assert missing == [], 'package.xml lacks these rosdep keys'
    python_keys = {key for key in exec_depends if key.startswith('python3-')}
    assert python_keys == {item.rosdep_key for item in REQUIREMENTS}, \
        'a python3-* key in package.xml that the check does not know'


# --------------------------------------------------------------------------- processes

@pytest.fixture(scope='module')
def executables():
    """Return the installed memory_node and robot-memory, as ros2 run / PATH find them."""
    found = {}
    for name in ('memory_node', 'robot-memory'):
        path = shutil.which(name)
        assert path, f'{name} is not on PATH: source scripts/env.sh'
        found[name] = pathlib.Path(path)
    return found


def _venv(where: pathlib.Path, pth_to_checkout_venv: bool) -> pathlib.Path:
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(where)], check=True,
                   timeout=120)
    [site] = (where / 'lib').glob('python3*/site-packages')
    if pth_to_checkout_venv:
        ours = [path for path in sys.path if path.endswith('site-packages')
                and (pathlib.Path(path) / 'pydantic').is_dir()]
        assert ours, sys.path
        (site / 'checkout-venv.pth').write_text(ours[0] + '\n')
    return site


def _run(executable, venv: pathlib.Path, *args):
    env = {name: value for name, value in os.environ.items()
           if name not in ('VIRTUAL_ENV', 'PYTHONHOME', 'LD_LIBRARY_PATH')}
    env['PATH'] = f'{venv / "bin"}{os.pathsep}/usr/bin:/bin'
    # The install tree's robot_memory, as install/setup.bash puts it on PYTHONPATH.
    env['PYTHONPATH'] = str(INSTALLED_PACKAGE_DIR.parent)
    # The installed command names its interpreter in its #! line (the one the workspace was
    # built with: on a robot the system python3); here that interpreter is the venv's.
    return subprocess.run([str(venv / 'bin' / 'python3'), str(executable), *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=venv)


@pytest.mark.parametrize('program', ['memory_node', 'robot-memory'])
def test_an_interpreter_without_the_packages_stops_with_one_line(tmp_path, executables,
                                                                 program):
    venv = tmp_path / 'bare'
    _venv(venv, pth_to_checkout_venv=False)
    run = _run(executables[program], venv, *(['--help'] if program == 'robot-memory' else []))
    assert run.returncode == dependencies.EXIT_UNMET, (run.stdout, run.stderr)
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and 'Traceback' not in run.stderr, run.stderr
    [line] = lines
    assert line.startswith(f'[robot_memory] {program} cannot start: '), line
    for item in REQUIREMENTS:
        assert f'{item.name} is not installed' in line, line
    specs = ' '.join(f"'{item.name}>={item.minimum}'" for item in REQUIREMENTS)
    assert line.endswith(f'Fix: {venv / "bin" / "python3"} -m pip install {specs}'), line
    assert run.stdout == ''


def test_pydantic_1_10_from_apt_is_named_too_old(tmp_path, executables):
    venv = tmp_path / 'apt-like'
    site = _venv(venv, pth_to_checkout_venv=True)
    record = site / 'pydantic-1.10.4.dist-info'
    record.mkdir()
    (record / 'METADATA').write_text('Metadata-Version: 2.1\nName: pydantic\nVersion: 1.10.4\n')
    (record / 'INSTALLER').write_text('pip\n')
    (record / 'RECORD').write_text('')
    run = _run(executables['memory_node'], venv)
    assert run.returncode == dependencies.EXIT_UNMET, (run.stdout, run.stderr)
    assert run.stderr.splitlines() == [
        '[robot_memory] memory_node cannot start: pydantic 1.10.4 is too old (need >= 2.5). '
        f"Fix: {venv / 'bin' / 'python3'} -m pip install 'pydantic>=2.5'"], run.stderr


def test_with_the_packages_in_place_the_program_runs(tmp_path, executables):
    venv = tmp_path / 'complete'
    _venv(venv, pth_to_checkout_venv=True)
    run = _run(executables['robot-memory'], venv, '--help')
    assert run.returncode == 0, run.stderr
    assert 'usage' in run.stdout.lower(), run.stdout


def test_skip_pydantic_plugins_leaves_the_operators_setting_alone():
    environ = {}
    assert dependencies.skip_pydantic_plugins(environ)
    assert environ == {'PYDANTIC_DISABLE_PLUGINS': '__all__'}
    for setting in ('', 'logfire', '1'):
        environ = {'PYDANTIC_DISABLE_PLUGINS': setting}
        assert not dependencies.skip_pydantic_plugins(environ)
        assert environ == {'PYDANTIC_DISABLE_PLUGINS': setting}


# A pydantic plugin, as a package installs one (an entry point of group ``pydantic``), that
# leaves a file behind when pydantic loads it.
MARKER_PLUGIN = """
import os
import pathlib

pathlib.Path(os.environ['PLUGIN_MARKER']).write_text('loaded')


class _Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = _Plugin()
"""


@pytest.mark.parametrize('program', ['memory_node', 'robot-memory'])
@pytest.mark.parametrize('setting', [None, ''])
def test_the_programs_look_for_pydantic_plugins_only_when_the_operator_asks(
        tmp_path, executables, program, setting):
    """Unset: no plugin is looked for (each start saves the scan); set empty: they load."""
    site = tmp_path / 'site'
    info = site / 'marker_plugin-1.0.dist-info'
    info.mkdir(parents=True)
    (site / 'marker_plugin.py').write_text(MARKER_PLUGIN)
    (info / 'METADATA').write_text('Metadata-Version: 2.1\nName: marker_plugin\nVersion: 1.0\n')
    (info / 'entry_points.txt').write_text('[pydantic]\nmarker = marker_plugin:plugin\n')
    marker = tmp_path / 'loaded'
    env = {name: value for name, value in os.environ.items()
           if name != 'PYDANTIC_DISABLE_PLUGINS'}
    env.update(PLUGIN_MARKER=str(marker), HOME=str(tmp_path),
               PYTHONPATH=os.pathsep.join(filter(None, [str(site), env.get('PYTHONPATH')])))
    if setting is not None:
        env['PYDANTIC_DISABLE_PLUGINS'] = setting
    memory = tmp_path / 'robot-memory.md'
    if program == 'robot-memory':
        memory.write_bytes(render(new_document('RRN-000000000001',
                                               dt.datetime.now(dt.timezone.utc))))
        args, code = ['show', '--file', str(memory)], 0
    else:  # a memory file linked to nothing: the node stops once its modules are loaded
        memory.symlink_to(tmp_path / 'unmounted' / 'robot-memory.md')
        args, code = ['--ros-args', '-p', f'memory_file:={memory}'], 2
    run = subprocess.run([str(executables[program]), *args], env=env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == code, (run.stdout[-3000:], run.stderr[-3000:])
    assert marker.exists() == (setting == ''), (run.stdout[-3000:], run.stderr[-3000:])


def test_the_check_benchmark_prints_json_lines():
    run = subprocess.run([sys.executable, str(REPO / 'bench' / 'bench_dependency_check.py'),
                          '--quick'], capture_output=True, text=True, timeout=240,
                         cwd=REPO)
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert sorted(item['bench'] for item in records) == ['dependency_check',
                                                         'dependency_check_in_process']
    for record in records:
        assert record['ms'] > 0 and record['baseline_ms'] > 0 and record['repeats'] == 5, record
        assert abs(record['ratio'] - record['ms'] / record['baseline_ms']) < 0.01, record


_PLUGIN_LOADER = """
import sys
from robot_memory.dependencies import skip_pydantic_plugins
skip_pydantic_plugins()
import pydantic
class Model(pydantic.BaseModel):
    x: int
assert Model(x='1').x == 1
print('importlib.metadata' in sys.modules)
"""


@pytest.mark.parametrize('setting, loaded', [(None, False), ('', True)])
def test_without_plugins_pydantic_does_not_load_importlib_metadata(setting, loaded):
    env = {key: value for key, value in os.environ.items() if key != 'PYDANTIC_DISABLE_PLUGINS'}
    if setting is not None:  # the operator's choice: pydantic's own loader, as before
        env['PYDANTIC_DISABLE_PLUGINS'] = setting
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO), env.get('PYTHONPATH')]))
    run = subprocess.run([sys.executable, '-c', _PLUGIN_LOADER], capture_output=True,
                         text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(loaded)]
