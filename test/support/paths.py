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

"""Where the repository is, and which of its Python files the lint tests check."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
# The Python of the repository that the lint tests check: the package, its tests,
# benchmarks, launch file and setup.py, and the executables of bin/ (Python without .py).
PYTHON_SOURCES = ('robot_memory', 'test', 'bench', 'launch', 'setup.py')


def python_files() -> list:
    """Return every Python file of the repository that the lint tests check."""
    files = []
    for name in PYTHON_SOURCES:
        path = REPO / name
        files += [path] if path.is_file() else sorted(
            found for found in path.rglob('*.py') if '__pycache__' not in found.parts)
    return files + sorted((REPO / 'bin').iterdir())
