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

"""Child processes of the tests: their environment, and what a killed writer leaves behind."""

import os
import pathlib

from robot_memory.testing.fleet_servers import free_port  # noqa: F401 - the tests' one

REPO = pathlib.Path(__file__).resolve().parents[2]


def child_env(base=None) -> dict:
    """
    Return the environment of a child: robot_memory importable from this checkout.

    ``base`` is the environment to start from (this process's by default).
    """
    env = dict(os.environ if base is None else base)
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(REPO),
                                                      env.get('PYTHONPATH')]))
    return env


def stray_temp_files(path: pathlib.Path) -> list:
    """Temporary files a killed writer may have left beside ``path``."""
    return sorted(path.parent.glob(f'.{path.name}.*.tmp'))
