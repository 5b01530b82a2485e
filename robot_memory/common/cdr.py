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
Reading a serialized ``diagnostic_msgs/msg/DiagnosticArray`` straight from its CDR bytes.

Why: in a flood of diagnostics most of memory_node's time went into rclpy building Python
message objects (every field through a generated property setter), about 85 us for an
array of 5 statuses, to then read 5 fields of each. Taking the message serialized and
reading just those fields here is several times cheaper (``bench/bench_node.py``).

What it reads: the XCDR1 encoding that ROS 2 middlewares use for ROS messages
(encapsulation ``00 00`` big-endian or ``00 01`` little-endian; every length and count a
4-byte unsigned integer aligned to 4 from the end of the encapsulation header; a string is
its length including the terminating NUL, then its bytes). Strings mean what rclpy makes
of them: cut at the first NUL, invalid UTF-8 replaced by U+FFFD. Anything else (another
encapsulation, a buffer that is too short or whose counts cannot be right) raises
:class:`CdrError`, and the caller deserializes with rclpy instead, so an odd message is
never lost to this shortcut. ``test/ros/test_cdr.py`` checks it against rclpy's deserializer
on generated messages.

The strings of a robot's diagnostics repeat (names, hardware ids, messages, keys, most
values): each distinct short one is decoded once and the same ``str`` (and the same
key/value pair) is handed out again, from caches of at most _CACHE_ENTRIES emptied when
full. What a flood keeps in flight in the ingest backlog is then little more than the
observations themselves, and so is the memory the process keeps after it.

:class:`ArrayCache` goes further for a replay of recordings, where the same arrays come
back every second: each distinct array is read once (see its docstring).

No rclpy here: plain bytes in, plain tuples out.
"""

import struct

from robot_memory.errors import RobotMemoryError

_U32 = {0: struct.Struct('>I').unpack_from, 1: struct.Struct('<I').unpack_from}
_HEADER = 4          # encapsulation: 2 bytes scheme, 2 bytes options
_MIN_STATUS = 1 + 4 * 4  # level, three string lengths and the values count (unpadded)
_CACHE_ENTRIES = 1024  # each cache: about 0.3 MB when full of the longest kept
_CACHE_BYTES = 120     # longer strings (and pairs) are decoded each time, not kept
_STAMPED = _HEADER + 8  # encapsulation and header stamp: the stamp is never read
_TEXTS: dict = {}    # the bytes of a string (up to its NUL) -> the str rclpy makes of them
_PAIRS: dict = {}    # (key, value) -> the same tuple


def _shared(cache: dict, key, value):
    """Return ``value`` kept under ``key`` (the first one kept), emptying a full cache."""
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()
    return cache.setdefault(key, value)


def _decoded(chunk: bytes) -> str:
    """Return the str rclpy makes of a string's bytes; a short one is kept for next time."""
    text = chunk.decode('utf-8', 'replace')
    return _shared(_TEXTS, chunk, text) if len(chunk) <= _CACHE_BYTES else text


class CdrError(RobotMemoryError, ValueError):
    """The bytes are not a DiagnosticArray this reader understands; use rclpy instead."""


def diagnostic_statuses(raw: bytes) -> list:
    """
    Return the statuses of a serialized DiagnosticArray as tuples.

    Each is (level, name, message, hardware_id, [(key, value), ...]); CdrError when the
    bytes are not read here.
    """
    size = len(raw)
    if size < _HEADER + 16 or raw[0] != 0 or raw[1] not in _U32:
        raise CdrError(f'encapsulation {bytes(raw[:2]).hex()} is not plain CDR')
    unpack = _U32[raw[1]]
    find = raw.find
    texts = _TEXTS
    pairs_kept = _PAIRS
    # The strings are read inline (a helper call per string costs as much as the read):
    # align to 4, length, the bytes up to the first NUL or the length, decoded as rclpy does.
    try:
        pos = _HEADER + 8                                   # header stamp: sec, nanosec
        (length,) = unpack(raw, pos)                        # header frame_id
        pos += 4 + length
        pos += -(pos - _HEADER) % 4
        (statuses,) = unpack(raw, pos)
        pos += 4
        if pos + statuses * _MIN_STATUS > size:
            raise CdrError(f'{statuses} statuses cannot fit in the {size - pos} bytes left')
        result = []
        for _ in range(statuses):
            level = raw[pos]
            fields = []
            pos += 1
            for _ in range(3):                              # name, message, hardware_id
                pos += -(pos - _HEADER) % 4
                (length,) = unpack(raw, pos)
                pos += 4
                end = pos + length
                if end > size:
                    raise CdrError(f'a string of {length} bytes at byte {pos} runs past the end')
                cut = find(b'\0', pos, end)
                chunk = raw[pos:end if cut < 0 else cut]
                fields.append(texts.get(chunk) or _decoded(chunk))
                pos = end
            pos += -(pos - _HEADER) % 4
            (pairs,) = unpack(raw, pos)
            pos += 4
            if pos + pairs * 8 > size:
                raise CdrError(f'{pairs} key/values cannot fit in the {size - pos} bytes left')
            values = []
            for _ in range(pairs):
                pair = []
                for _ in range(2):                          # key, value
                    pos += -(pos - _HEADER) % 4
                    (length,) = unpack(raw, pos)
                    pos += 4
                    end = pos + length
                    if end > size:
                        raise CdrError(f'a string of {length} bytes at byte {pos} runs past '
                                       'the end')
                    cut = find(b'\0', pos, end)
                    chunk = raw[pos:end if cut < 0 else cut]
                    pair.append(texts.get(chunk) or _decoded(chunk))
                    pos = end
                key_value = (pair[0], pair[1])
                if len(key_value[0]) + len(key_value[1]) <= _CACHE_BYTES:
                    key_value = pairs_kept.get(key_value) or _shared(pairs_kept, key_value,
                                                                     key_value)
                values.append(key_value)
            result.append((level, fields[0], fields[1], fields[2], values))
    except (struct.error, IndexError):
        raise CdrError(f'the message ends before its last field ({size} bytes)') from None
    return result


class ArrayCache:
    """
    What ``derive`` makes of the statuses of serialized DiagnosticArrays, each array read once.

    Why: a robot republishes the same statuses every second, byte for byte but for the
    header stamp, and a replay of its recordings reads millions of them. The key is the
    encapsulation and every byte after the header stamp, that is all that
    :func:`diagnostic_statuses` reads, so a kept result is exactly what reading the bytes
    again would give. Bounded: arrays over ``max_bytes`` are not kept, and the cache is
    emptied when it holds ``entries`` (by default at most 8 MB of keys, and what ``derive``
    made of them). CdrError as :func:`diagnostic_statuses` (never kept).
    """

    def __init__(self, derive=tuple, entries: int = 2048, max_bytes: int = 4096):
        self.derive = derive
        self._entries = entries
        self._max_bytes = max_bytes
        self._kept: dict = {}

    def get(self, raw: bytes):
        """Return ``derive(diagnostic_statuses(raw))``, kept from an equal array if one came."""
        key = bytes(raw[:2]) + bytes(raw[_STAMPED:])
        found = self._kept.get(key)
        if found is None:
            found = self.derive(diagnostic_statuses(raw))
            if len(key) <= self._max_bytes:
                if len(self._kept) >= self._entries:
                    self._kept.clear()
                self._kept[key] = found
        return found
