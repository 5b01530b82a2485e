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

"""What the MCP tests share: the installed robot-memory command, a tool result's payload."""

import json
import pathlib
import shutil

REPO = pathlib.Path(__file__).resolve().parents[2]


def installed_command() -> str:
    """Return the robot-memory of the colcon install tree (on PATH after scripts/env.sh)."""
    command = shutil.which('robot-memory')
    assert command, 'robot-memory is not on PATH: run the tests with scripts/test.sh'
    resolved = pathlib.Path(command).resolve()
    # install/ (Kilted) or install-<distro>/ (scripts/distro.sh): a colcon tree of this checkout
    assert resolved.is_relative_to(REPO), command
    assert resolved.relative_to(REPO).parts[0].startswith('install'), command
    return command


def payload(result) -> dict:
    """Return a successful tool result's JSON payload."""
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)
