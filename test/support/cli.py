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
``robot-memory`` in a test: in this process (with pytest's capsys) or as a user runs it.

Every test that runs the command line uses one of these three, so a change to how the
command is started is made once.
"""

import subprocess
import sys

from robot_memory.cli import main as cli
from support.paths import REPO
from support.processes import child_env

SCRIPT = REPO / 'bin' / 'robot-memory'


def run(capsys, *argv) -> tuple:
    """Run ``robot-memory *argv`` in this process; return (exit code, stdout, stderr)."""
    code = cli.main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def command(*argv) -> list:
    """Return the argv of a ``robot-memory`` child process (this interpreter, this checkout)."""
    return [sys.executable, str(SCRIPT), *map(str, argv)]


def run_process(*argv, env=None, timeout: float = 300) -> tuple:
    """Run ``robot-memory *argv`` as a user does; return (exit code, stdout, stderr)."""
    done = subprocess.run(command(*argv), capture_output=True, text=True,
                          env=child_env(env), timeout=timeout)
    return done.returncode, done.stdout, done.stderr
