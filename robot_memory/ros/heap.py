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
its diagnostics timer, at most once per ``min_interval_s``.

glibc also gives every thread that allocates its own arena (up to eight per core), and an
arena keeps what its thread's busiest moment needed: memory_node's six executor threads,
its store thread and the middleware's threads held 6-7 MB that way under a flood.
:func:`limit_arenas` (called by memory_node before rclpy starts a thread) caps them at two,
unless the operator set ``MALLOC_ARENA_MAX``, which glibc reads itself.

Elsewhere than glibc both do nothing.
"""

import ctypes
import functools
import os
import time
from typing import Optional


ARENAS = 2
_M_ARENA_MAX = -8  # mallopt parameter, glibc's malloc.h


@functools.lru_cache(maxsize=None)
def _libc_function(name: str):
    """Return the C library's function ``name``, or None (not glibc: musl, macOS)."""
    try:
        # The process's own symbols, libc's among them: ctypes.util.find_library would run
        # ldconfig in a subprocess and keep subprocess loaded (0.5 MB).
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def limit_arenas(arenas: int = ARENAS, environ=None) -> bool:
    """
    Cap glibc's malloc arenas at ``arenas`` for the threads started from now on.

    True when the cap was set; False where there is no glibc ``mallopt``, or when
    ``MALLOC_ARENA_MAX`` is in the environment (the operator's own choice stands).
    """
    environ = os.environ if environ is None else environ
    if environ.get('MALLOC_ARENA_MAX', '').strip():
        return False
    mallopt = _libc_function('mallopt')
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(_M_ARENA_MAX, arenas) == 1


def _malloc_trim():
    trim = _libc_function('malloc_trim')
    if trim is None:  # not glibc (musl, macOS): nothing to trim with
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrimmer:
    """Calls ``malloc_trim(0)`` at most once per ``min_interval_s`` (monotonic clock)."""

    def __init__(self, min_interval_s: float = 10.0):
        self.min_interval_s = min_interval_s
        self._trim = _malloc_trim()
        self._last: Optional[float] = None
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
