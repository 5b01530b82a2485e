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
Giving memory the process has freed back to the operating system (glibc ``malloc_trim``).

Loading a memory file builds and drops far more temporary objects than the document keeps:
on a 10,000-entry file the freed space left in the C heap is about as large again as the
document itself, and glibc keeps it resident. ``malloc_trim(0)`` returns those free pages.
memory_node calls :meth:`HeapTrimmer.maybe_trim` after it (re)loads the document and from
its diagnostics timer, at most once per ``min_interval_s``. Elsewhere than glibc it does
nothing.
"""

import ctypes
import ctypes.util
import time


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6')
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim with
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrimmer:
    """Calls ``malloc_trim(0)`` at most once per ``min_interval_s`` (monotonic clock)."""

    def __init__(self, min_interval_s: float = 10.0):
        self.min_interval_s = min_interval_s
        self._trim = _malloc_trim()
        self._last = None
        self.trims = 0

    @property
    def available(self) -> bool:
        """Return True when the C library has ``malloc_trim``."""
        return self._trim is not None

    def maybe_trim(self, force: bool = False) -> bool:
        """Trim now unless it was done within ``min_interval_s``; True when it trimmed."""
        if self._trim is None:
            return False
        now = time.monotonic()
        if not force and self._last is not None and now - self._last < self.min_interval_s:
            return False
        self._last = now
        self._trim(0)
        self.trims += 1
        return True
