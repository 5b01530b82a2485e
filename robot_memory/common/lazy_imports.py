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
Heavy libraries imported on first use, so a command or node pays only for what it uses.

``deferred('numpy')`` is a stand-in for the module that imports it at the first attribute
access (``numpy.float32`` works as before): numpy alone costs about 0.17 s of start-up and
10 MB of resident memory.
"""

import importlib
import types
from typing import Optional


class _Deferred:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str):
        self._name = name
        self._module: Optional[types.ModuleType] = None

    def __getattr__(self, attribute: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        state = 'imported' if self._module is not None else 'not imported yet'
        return f'<deferred module {self._name!r} ({state})>'


def deferred(name: str) -> _Deferred:
    """Return a stand-in for module ``name`` that imports it on first attribute access."""
    return _Deferred(name)
