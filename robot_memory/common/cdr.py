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

:class:`StatusCache` goes further for a replay of recordings, where the same statuses come
back every second: each distinct status is read once (see its docstring).

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


def _array_start(raw: bytes) -> tuple:
    """Return (length reader, offset of the first status, statuses) of an array's bytes."""
    size = len(raw)
    if size < _HEADER + 16 or raw[0] != 0 or raw[1] not in _U32:
        raise CdrError(f'encapsulation {bytes(raw[:2]).hex()} is not plain CDR')
    unpack = _U32[raw[1]]
    try:
        pos = _STAMPED                                      # header stamp: sec, nanosec
        (length,) = unpack(raw, pos)                        # header frame_id
        pos += 4 + length
        pos += -(pos - _HEADER) % 4
        (statuses,) = unpack(raw, pos)
    except struct.error:
        raise CdrError(f'the message ends before its last field ({size} bytes)') from None
    pos += 4
    if pos + statuses * _MIN_STATUS > size:
        raise CdrError(f'{statuses} statuses cannot fit in the {size - pos} bytes left')
    return unpack, pos, statuses


def _status(raw: bytes, pos: int, unpack, size: int) -> tuple:
    """Return (the status at ``pos`` as a tuple, the offset after it); struct/IndexError."""
    texts = _TEXTS
    find = raw.find
    # The strings are read inline (a helper call per string costs as much as the read):
    # align to 4, length, the bytes up to the first NUL or the length, decoded as rclpy does.
    level = raw[pos]
    fields = []
    pos += 1
    for _ in range(3):                                      # name, message, hardware_id
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
        for _ in range(2):                                  # key, value
            pos += -(pos - _HEADER) % 4
            (length,) = unpack(raw, pos)
            pos += 4
            end = pos + length
            if end > size:
                raise CdrError(f'a string of {length} bytes at byte {pos} runs past the end')
            cut = find(b'\0', pos, end)
            chunk = raw[pos:end if cut < 0 else cut]
            pair.append(texts.get(chunk) or _decoded(chunk))
            pos = end
        key_value = (pair[0], pair[1])
        if len(key_value[0]) + len(key_value[1]) <= _CACHE_BYTES:
            key_value = _PAIRS.get(key_value) or _shared(_PAIRS, key_value, key_value)
        values.append(key_value)
    return (level, fields[0], fields[1], fields[2], values), pos


def diagnostic_statuses(raw: bytes) -> list:
    """
    Return the statuses of a serialized DiagnosticArray as tuples.

    Each is (level, name, message, hardware_id, [(key, value), ...]); CdrError when the
    bytes are not read here.
    """
    unpack, pos, statuses = _array_start(raw)
    size = len(raw)
    result = []
    try:
        for _ in range(statuses):
            status, pos = _status(raw, pos, unpack, size)
            result.append(status)
    except (struct.error, IndexError):
        raise CdrError(f'the message ends before its last field ({size} bytes)') from None
    return result


class StatusCache:
    """
    What ``derive`` makes of each status of serialized DiagnosticArrays, each status read once.

    Why: a robot republishes its statuses every second, and a replay of its recordings
    reads millions of them; most are byte for byte what they were the second before, a
    few carry a value that changed (a voltage, a measured frequency). The level and name
    of a status (what precedes its name, the name's length and bytes) find the bytes that
    status had last time; when the message holds those same bytes there, at the same
    alignment (CDR aligns to 4 from the start of the payload) and in the same byte order,
    reading them again would give exactly the same status, so what ``derive`` made of it
    is handed out again. Any other status is read (:func:`diagnostic_statuses`'s reader)
    and kept in place of the one before. ``derive(status)`` returns what to keep, or None
    to leave the status out. Bounded: statuses over ``max_bytes`` are not kept, and all
    are forgotten when ``entries`` are kept (by default at most about 5 MB). CdrError as
    :func:`diagnostic_statuses`.
    """

    def __init__(self, derive=None, entries: int = 4096, max_bytes: int = 512):
        self.derive = derive or (lambda status: status)
        self._entries = entries
        self._max_bytes = max_bytes
        # byte order -> the padding after the level (0-3, the status's alignment) -> kept
        self._kept: dict = {order: [{}, {}, {}, {}] for order in _U32}
        self._count = 0

    def get(self, raw: bytes) -> list:
        """Return ``derive`` of each status of the array (None left out), read or kept."""
        unpack, pos, statuses = _array_start(raw)
        size = len(raw)
        derive = self.derive
        kept = self._kept[raw[1]]
        startswith = raw.startswith
        result = []
        try:
            for _ in range(statuses):
                pad = -(pos + 1 - _HEADER) % 4
                (length,) = unpack(raw, pos + 1 + pad)      # the name's length
                head = raw[pos:pos + 5 + pad + length]      # level, padding, name
                found = kept[pad].get(head)
                if found is not None and startswith(found[0], pos):
                    item = found[1]
                    pos += len(found[0])
                else:
                    status, end = _status(raw, pos, unpack, size)
                    item = derive(status)
                    if end - pos <= self._max_bytes:
                        if self._count >= self._entries:
                            for slots in self._kept.values():
                                for slot in slots:
                                    slot.clear()
                            self._count = 0
                        self._count += head not in kept[pad]
                        kept[pad][head] = (raw[pos:end], item)
                    pos = end
                if item is not None:
                    result.append(item)
        except (struct.error, IndexError):
            raise CdrError(f'the message ends before its last field ({size} bytes)') from None
        return result

    def derived(self, statuses) -> list:
        """Return ``derive`` of each status read elsewhere (None left out), nothing kept."""
        return [item for item in map(self.derive, statuses) if item is not None]
