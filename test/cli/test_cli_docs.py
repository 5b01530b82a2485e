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
Every command of ``robot-memory`` is documented in the README, as sqlite-utils checks.

The commands come from the argument parser itself, so a command added without a row in the
README's table ("The command line") fails here.
"""

import argparse
import re

import pytest

from robot_memory.cli import main as cli
from support.paths import REPO


def _commands() -> list:
    parser = cli.build_parser()
    [subparsers] = [action for action in parser._actions
                    if isinstance(action, argparse._SubParsersAction)]
    return sorted(subparsers.choices)


def _command_table() -> str:
    readme = (REPO / 'README.md').read_text(encoding='utf-8')
    section = readme.split('\n## The command line\n', 1)[1].split('\n## ', 1)[0]
    return '\n'.join(line for line in section.splitlines() if line.startswith('| `'))


def test_the_parser_has_the_commands_of_both_modules():
    """Check that the list below is not empty: memory-file and typed-memory commands."""
    assert {'show', 'dream', 'learn', 'recall'} <= set(_commands())


@pytest.mark.parametrize('command', _commands())
def test_every_command_is_documented_in_the_readme(command):
    """Check that the README's command table has a row naming ``command``."""
    assert re.search(r'`' + re.escape(command) + r'[` ]', _command_table()), \
        f'README.md, "The command line": add a row for `robot-memory {command}`'
