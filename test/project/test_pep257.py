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

"""Docstrings checked by ament_pep257 with its own convention, as ROS 2 packages do."""

from ament_pep257.main import main
import pytest

from support.paths import PYTHON_SOURCES
from support.paths import REPO


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    """Check the docstrings of every Python file of the repository."""
    rc = main(argv=[str(REPO / name) for name in PYTHON_SOURCES])
    assert rc == 0, 'Found code style errors / warnings (listed on stderr above)'
