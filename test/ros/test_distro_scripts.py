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
scripts/distro.sh: which ROS 2 distribution, and the trees each one builds and tests in.

The shell function is run by bash exactly as setup.sh, env.sh and test.sh source it,
with the environment each case names and nothing else of this test's.
"""

import os
import pathlib
import subprocess

import pytest

import robot_memory
from support.paths import REPO

DISTRO_SH = REPO / 'scripts' / 'distro.sh'


def select(env: dict, root='/checkout') -> subprocess.CompletedProcess:
    """Run _rm_select_distro in a clean bash; print what it set."""
    script = (f'source {DISTRO_SH} && _rm_select_distro {root} && '
              'echo "$_rm_distro $_rm_venv $_rm_build $_rm_install $_rm_colcon_log $_rm_ros_reqs"')
    return subprocess.run(['bash', '-c', script], env={'PATH': '/usr/bin:/bin', **env},
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize('env, expected', [
    ({}, 'kilted /checkout/.venv /checkout/build /checkout/install /checkout/log '
         '/checkout/scripts/ros-requirements.txt'),
    ({'ROBOT_MEMORY_DISTRO': 'kilted'}, 'kilted /checkout/.venv /checkout/build '
     '/checkout/install /checkout/log /checkout/scripts/ros-requirements.txt'),
    ({'ROBOT_MEMORY_DISTRO': 'jazzy'}, 'jazzy /checkout/.venv-jazzy /checkout/build-jazzy '
     '/checkout/install-jazzy /checkout/log/jazzy /checkout/scripts/ros-requirements-jazzy.txt'),
    ({'ROS_DISTRO': 'jazzy'}, 'jazzy /checkout/.venv-jazzy /checkout/build-jazzy '
     '/checkout/install-jazzy /checkout/log/jazzy /checkout/scripts/ros-requirements-jazzy.txt'),
], ids=['default', 'kilted', 'jazzy', 'sourced jazzy'])
def test_each_distribution_has_its_own_trees_and_kilted_keeps_the_old_ones(env, expected):
    run = select(env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == expected.split()


@pytest.mark.parametrize('value', ['Jazzy', 'jazzy;rm', '../x', ''])
def test_a_distribution_name_that_is_not_a_name_is_refused(value):
    run = select({'ROBOT_MEMORY_DISTRO': value} if value else {'ROS_DISTRO': ' '})
    assert run.returncode == 1 and run.stdout == ''
    assert 'must be a ROS 2 distribution name such as kilted or jazzy' in run.stderr


def test_a_shell_set_up_for_one_distribution_refuses_the_other():
    run = select({'ROBOT_MEMORY_DISTRO': 'jazzy', 'ROBOT_MEMORY_VENV': '/checkout/.venv'})
    assert run.returncode == 1 and run.stdout == ''
    assert 'this shell sourced scripts/env.sh for /checkout/.venv' in run.stderr
    assert 'use a new shell' in run.stderr
    same = select({'ROBOT_MEMORY_DISTRO': 'jazzy', 'ROBOT_MEMORY_VENV': '/checkout/.venv-jazzy'})
    assert same.returncode == 0, same.stderr


def _requirements(name: str) -> list:
    lines = (REPO / 'scripts' / name).read_text().splitlines()
    return [line.split('#', 1)[0].strip() for line in lines if line.split('#', 1)[0].strip()]


def test_the_jazzy_wheels_are_the_kilted_set_under_the_jazzy_prefix():
    kilted, jazzy = _requirements('ros-requirements.txt'), _requirements(
        'ros-requirements-jazzy.txt')
    expected = [name.replace('ros-', 'ros-jazzy-', 1) if name.startswith('ros-') else name
                for name in kilted if name != 'ros-ament-cmake-ros-core']  # not in Jazzy
    assert jazzy == expected


def test_this_run_uses_the_install_tree_of_its_distribution():
    distro = os.environ.get('ROBOT_MEMORY_DISTRO')
    assert distro, 'source scripts/env.sh (scripts/test.sh does) before running the tests'
    suffix = '' if distro == 'kilted' else f'-{distro}'
    installed = pathlib.Path(robot_memory.__file__).resolve()
    assert installed.is_relative_to(REPO / f'install{suffix}'), installed
