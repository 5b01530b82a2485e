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

"""A command whose optional extra is missing says how to install it from the checkout."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize('command, module, extra', [
    (['serve', '--port', '59999'], 'starlette', 'web'),
    (['serve', '--port', '59999'], 'uvicorn', 'web'),
])
def test_a_missing_extra_exits_2_with_a_command_that_works(tmp_path, command, module, extra):
    code = (f'import sys; sys.modules[{module!r}] = None; '
            'from robot_memory.cli.main import main; '
            f"sys.exit(main({command!r} + ['--file', {str(tmp_path / 'robot-memory.md')!r}]))")
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"pip install '.[{extra}]'" in done.stderr, done.stderr
    assert 'not on PyPI' in done.stderr and f'{module} is missing' in done.stderr
    assert 'robot_memory[' not in done.stderr  # the name pip cannot find
