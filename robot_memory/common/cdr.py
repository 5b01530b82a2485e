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

(And a ``rcl_interfaces/msg/Log``, for recordings: :func:`log_record`.)

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

from bisect import bisect_right
import struct
from typing import NamedTuple
from typing import Optional

from robot_memory.errors import RobotMemoryError

_U32 = {0: struct.Struct('>I').unpack_from, 1: struct.Struct('<I').unpack_from}
_HEADER = 4          # encapsulation: 2 bytes scheme, 2 bytes options
_MIN_STATUS = 1 + 4 * 4  # level, three string lengths and the values count (unpadded)
_CACHE_ENTRIES = 1024  # each cache: about 0.3 MB when full of the longest kept
_CACHE_BYTES = 120     # longer strings (and pairs) are decoded each time, not kept
_STAMPED = _HEADER + 8  # encapsulation and header stamp: the stamp is never read
_TEXTS: dict = {}    # the bytes of a string (up to its NUL) -> the str rclpy makes of them
_PAIRS: dict = {}    # (key, value) -> the same tuple


def cached_entries() -> int:
    """Return the strings and pairs the decoder keeps (at most _CACHE_ENTRIES of each)."""
    return len(_TEXTS) + len(_PAIRS)


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


class LogRecord(NamedTuple):
    """The fields of a ``rcl_interfaces/msg/Log`` that evidence reads (as rclpy's message)."""

    level: int
    name: str
    msg: str
    file: str
    function: str
    line: int


def log_record(raw: bytes) -> LogRecord:
    """
    Return a serialized ``rcl_interfaces/msg/Log``, its strings decoded as rclpy decodes them.

    For recordings: a library that refuses a log whose text is not UTF-8 (a driver printing
    a Latin-1 ``°``) would drop what memory_node, through rclpy, takes. CdrError when the
    bytes are not read here.
    """
    size = len(raw)
    if size < _HEADER + 9 or raw[0] != 0 or raw[1] not in _U32:
        raise CdrError(f'encapsulation {bytes(raw[:2]).hex()} is not plain CDR')
    unpack = _U32[raw[1]]
    level = raw[_STAMPED]                                   # after stamp: sec, nanosec
    pos = _STAMPED + 1
    texts = []
    try:
        for _ in range(4):                                  # name, msg, file, function
            pos += -(pos - _HEADER) % 4
            (length,) = unpack(raw, pos)
            pos += 4
            end = pos + length
            if end > size:
                raise CdrError(f'a string of {length} bytes at byte {pos} runs past the end')
            cut = raw.find(b'\0', pos, end)
            texts.append(bytes(raw[pos:end if cut < 0 else cut]).decode('utf-8', 'replace'))
            pos = end
        pos += -(pos - _HEADER) % 4
        (line,) = unpack(raw, pos)
    except struct.error:
        raise CdrError(f'the message ends before its last field ({size} bytes)') from None
    name, msg, file, function = texts
    return LogRecord(level, name, msg, file, function, line)


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
    is handed out again. When the bytes differ only inside strings (a value of the same
    length), the layout is the same: only those strings are read again (:meth:`_patched`)
    and ``rederive(what was kept, status, changed)`` makes what to keep of it: ``changed``
    lists the indices of the values whose value may have changed (the others did not),
    None when the message, the hardware id or a key may have (by default
    ``derive(status)``). Any other status is read
    (:func:`diagnostic_statuses`'s reader) and kept in place of the one before.
    ``derive(status)`` returns what to keep, or None to leave the status out. Bounded:
    statuses over ``max_bytes`` are not kept, and all are forgotten when ``entries`` are
    kept (by default at most about 5 MB). CdrError as :func:`diagnostic_statuses`.
    """

    def __init__(self, derive=None, entries: int = 4096, max_bytes: int = 512, rederive=None):
        self.derive = derive or (lambda status: status)
        self.rederive = rederive or (lambda previous, status, changed: self.derive(status))
        self._entries = entries
        self._max_bytes = max_bytes
        # byte order -> the padding after the level (0-3, the status's alignment) -> kept:
        # head -> [bytes, derived, status, _layout of its strings (None until needed), pad,
        # head]
        self._kept: dict = {order: [{}, {}, {}, {}] for order in _U32}
        self._count = 0
        self._order: list = []  # the kept statuses of the last array, in its order
        self._order_byte = -1

    def get(self, raw: bytes) -> list:
        """Return ``derive`` of each status of the array (None left out), read or kept."""
        unpack, pos, statuses = _array_start(raw)
        size = len(raw)
        derive = self.derive
        kept = self._kept[raw[1]]
        startswith = raw.startswith
        # Robots send their statuses in the same order every time: the status kept at the
        # same place in the array before is looked at first.
        order = self._order if raw[1] == self._order_byte else ()
        known = len(order)
        now = []
        result = []
        try:
            for index in range(statuses):
                pad = (3 - pos) % 4                         # after the level (_HEADER 4)
                found = order[index] if index < known else None
                if found is not None and found[4] == pad and startswith(found[0], pos):
                    now.append(found)                       # as it was
                    pos += len(found[0])
                    if found[1] is not None:
                        result.append(found[1])
                    continue
                if found is not None and found[4] == pad and startswith(found[5], pos):
                    head = found[5]
                else:
                    (length,) = unpack(raw, pos + 1 + pad)  # the name's length
                    head = raw[pos:pos + 5 + pad + length]  # level, padding, name
                    found = kept[pad].get(head)
                if found is not None and startswith(found[0], pos):
                    item = found[1]
                    pos += len(found[0])
                elif found is not None and (item := self._patched(found, raw, pos, unpack,
                                                                  pad)) is not _CHANGED:
                    pos += len(found[0])
                else:
                    status, end = _status(raw, pos, unpack, size)
                    item = derive(status)
                    found = None
                    if end - pos <= self._max_bytes:
                        if self._count >= self._entries:
                            for slots in self._kept.values():
                                for slot in slots:
                                    slot.clear()
                            self._count = 0
                        self._count += head not in kept[pad]
                        found = kept[pad][head] = [raw[pos:end], item, status, None, pad, head]
                    pos = end
                now.append(found)
                if item is not None:
                    result.append(item)
        except (struct.error, IndexError):
            raise CdrError(f'the message ends before its last field ({size} bytes)') from None
        self._order, self._order_byte = now, raw[1]
        return result

    def _patched(self, found: list, raw: bytes, pos: int, unpack, pad: int):
        """
        Return what to keep of the status at ``pos`` if it differs from ``found`` only in strings.

        The bytes are compared at once (as two integers): when every differing byte lies
        within a string's bytes, no length, count or padding changed, so the layout is
        ``found``'s and only the strings that differ are decoded. When they all lie within
        the strings that changed last time, those are decoded without looking for which (a
        voltage changes every second). When the first length that differs is a string's
        (a value one digit longer), what comes before it is as it was and the status is
        read from that string on (:func:`_reread`). ``found`` is updated. Otherwise
        _CHANGED: the caller reads the status whole.
        """
        old = found[0]
        width = len(old)
        new = raw[pos:pos + width]
        if len(new) != width:
            return _CHANGED
        layout = found[3]
        if layout is None:
            layout = found[3] = _layout(old, pad, unpack, found[2])
        starts, ends, strings, hot = layout
        strings = list(strings)
        diff = int.from_bytes(old, 'little') ^ int.from_bytes(new, 'little')
        if hot is not None and not diff & hot[0]:
            # Only strings that changed last time differ (a voltage again): read those.
            for index in hot[1]:
                end = ends[index]
                cut = new.find(b'\0', starts[index], end)
                strings[index] = new[starts[index]:end if cut < 0 else cut].decode(
                    'utf-8', 'replace')
            changed = hot[2]
        else:
            changed, hot, moved = self._walk(diff, new, starts, ends, strings)
            if moved is not None:
                if moved < 0:
                    return _CHANGED
                before = strings[moved:]
                starts, ends = starts[:moved], ends[:moved]
                del strings[moved:]
                after = pos + (ends[-1] if moved else len(found[5]))  # the name's end
                end = _reread(raw, pos, after, unpack, moved, before, starts, ends, strings)
                if end - pos > self._max_bytes:
                    return _CHANGED
                new = raw[pos:end]
                changed = _values_changed(changed, moved, before, strings)
        before = found[2]
        status = (before[0], before[1], strings[0], strings[1],
                  list(zip(strings[2::2], strings[3::2])))
        item = self.rederive(found[1], status, changed)
        found[0], found[1], found[2], found[3] = new, item, status, (starts, ends, strings, hot)
        return item

    @staticmethod
    def _walk(diff: int, new: bytes, starts: list, ends: list, strings: list) -> tuple:
        """
        Decode into ``strings`` those where ``diff`` (old XOR new bytes) has bits; see _patched.

        Returns (the value indices that changed, or None if another string did; (a mask of
        the bytes outside those strings, their indices, the former); None), or (..., None,
        the index of the first string whose length changed), or (..., None, -1) when a
        differing byte lies outside every string and length (padding, the values' count).
        """
        changed: Optional[list] = []
        indices = []
        index = base = mask = 0
        count = len(starts)
        while diff:  # its bits from byte ``base`` of the status on
            byte = base + (((diff & -diff).bit_length() - 1) >> 3)
            index = bisect_right(ends, byte, index)
            if index == count or byte < starts[index]:
                moved = index if index < count and byte >= starts[index] - 4 else -1
                return changed, None, moved
            start, end = starts[index], ends[index]
            cut = new.find(b'\0', start, end)
            # A value that changed is seldom one seen before: decoded, not looked up and kept.
            strings[index] = new[start:end if cut < 0 else cut].decode('utf-8', 'replace')
            indices.append(index)
            mask |= ((1 << ((end - start) << 3)) - 1) << (start << 3)
            if not (index & 1 and index > 2):
                changed = None                              # not a value
            elif changed is not None:
                changed.append((index - 3) >> 1)
            diff >>= (end - base) << 3
            base = end
        return changed, (~mask, indices, changed), None

    def derived(self, statuses) -> list:
        """Return ``derive`` of each status read elsewhere (None left out), nothing kept."""
        return [item for item in map(self.derive, statuses) if item is not None]


_CHANGED = object()  # StatusCache._patched: the status must be read whole


def _reread(raw: bytes, pos: int, at: int, unpack, index: int, before: list, starts: list,
            ends: list, strings: list) -> int:
    """
    Read the strings of the status at ``pos`` from string ``index`` on; return its end.

    ``at`` is where the string before ends (or the name); ``starts``, ``ends`` and
    ``strings`` hold the ones before ``index`` (as they were) and get the rest; ``before``
    are the strings that were there from ``index`` on. The values' count is read again
    when it comes after ``index``. struct.error/IndexError or CdrError as :func:`_status`.
    """
    size = len(raw)
    texts = _TEXTS
    total = len(before) + index if index > 2 else -1
    while True:
        if len(strings) == 2 and total < 0:                 # the values' count
            at += -(at - _HEADER) % 4
            (pairs,) = unpack(raw, at)
            at += 4
            if at + pairs * 8 > size:
                raise CdrError(f'{pairs} key/values cannot fit in the {size - at} bytes left')
            total = 2 + 2 * pairs
        if len(strings) == total:
            return at
        at += -(at - _HEADER) % 4
        (length,) = unpack(raw, at)
        at += 4
        end = at + length
        if end > size:
            raise CdrError(f'a string of {length} bytes at byte {at} runs past the end')
        cut = raw.find(b'\0', at, end)
        chunk = raw[at:end if cut < 0 else cut]
        strings.append(texts.get(chunk) or _decoded(chunk))
        starts.append(at - pos)
        ends.append(end - pos)
        at = end


def _values_changed(changed: Optional[list], index: int, before: list, strings: list):
    """Return ``changed`` with the values from string ``index`` on that differ from ``before``."""
    if changed is None or len(strings) != len(before) + index:
        return None
    for offset, (was, now) in enumerate(zip(before, strings[index:])):
        if was != now:
            position = index + offset
            if not (position & 1 and position > 2):
                return None                                  # not a value
            changed = changed + [(position - 3) >> 1]
    return changed


def _layout(data: bytes, pad: int, unpack, status: tuple) -> tuple:
    """
    Return (starts, ends, strings, None) of the message, hardware id, keys and values.

    ``data`` is one well-formed status as :func:`_status` read it into ``status``, ``pad``
    the padding after its level: CDR aligns to 4 from the payload's start, which puts the
    level at 3 - pad modulo 4. ``strings`` are the status's, in the same order.
    """
    shift = 3 - pad
    (length,) = unpack(data, 1 + pad)
    pos = 5 + pad + length                                  # after the name
    starts: list = []
    ends: list = []
    strings = [status[2], status[3]]                        # message, hardware_id
    for key, value in status[4]:
        strings += (key, value)
    for index in range(len(strings)):
        if index == 2:                                      # the values' count first
            pos += -(pos + shift) % 4 + 4
        pos += -(pos + shift) % 4
        (length,) = unpack(data, pos)
        pos += 4
        starts.append(pos)
        pos += length
        ends.append(pos)
    return starts, ends, strings, None  # None: which strings changed last (_patched)
