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
The black box: the seconds around a fault, kept in RAM and written as MCAP when it starts.

Pure (no rclpy): the ROS edge (``robot_memory.ros.blackbox``) hands in raw serialized
messages with their receive time and the observations it ingests; time is always passed in.

* :class:`RingBuffer` keeps the last ``before_s + after_s`` seconds of raw messages, never
  more than ``ram_bytes`` with the MCAP writer's own buffers (the oldest go first); one
  buffer serves every fault, so two faults close together each get their own window from
  it, and a window is streamed from it to the writer, never copied.
* :class:`FaultTrigger` decides when an episode of a fault starts: a status going bad after
  OK (or first seen bad), a log signature first seen bad in ``cooldown_s``; and at most one
  recording per signature per ``cooldown_s``, so a flapping fault writes one, not hundreds.
* :func:`write_recording` writes a window as MCAP (``ros2msg`` schemas with the full
  definitions, as rosbag2 writes them): temporary name in the same folder, fsync, rename; an
  interrupted or failed write leaves no file.
* The ``blackbox_recordings`` table links each recording to its signature (and so to the
  entry); :func:`prune` removes the oldest recordings over ``total_bytes`` but keeps each
  entry's most recent one.
"""

import collections
import contextlib
import dataclasses
import datetime as dt
import errno
import hashlib
import json
import os
import pathlib
import re
import sqlite3
import threading
from typing import Callable
from typing import Iterable
from typing import Iterator
from typing import Optional

from robot_memory.common.fileio import fsync_directory
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence.runs import MAX_OPEN_RUNS

PARTIAL_SUFFIX = '.partial'
# What a kept message costs beyond its bytes: the bytes object's header, its tuple, its
# deque slot and the allocator's header (about 120 bytes on CPython 3.11, x86-64).
ITEM_OVERHEAD = 128
# What the MCAP writer holds while it writes, in chunks: its builder, the chunk's copy, zstd's
# context and output, the record, and the piece of the window being streamed. Measured: 2.6 MB
# at most for 512 kB chunks of incompressible 100 kB messages (about five chunks); twice
# that is kept free for it.
WRITER_CHUNKS = 10
_QUOTED_TYPE = re.compile(r"'([A-Za-z0-9_]+/msg/[A-Za-z0-9_]+)'")
# A log signature bad again after this long is a new episode (the dream's GAP_S order).
LOG_EPISODE_GAP_S = 300.0


class BlackboxError(RobotMemoryError, ValueError):
    """The black box cannot do what was asked: the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class Policy:
    """How much the black box keeps: the window around a fault and its three bounds."""

    before_s: float = 5.0
    after_s: float = 1.0
    ram_bytes: int = 256 * 2**20
    recording_bytes: int = 50 * 2**20
    total_bytes: int = 500 * 2**20
    cooldown_s: float = 60.0

    @property
    def chunk_bytes(self) -> int:
        """Return the MCAP chunk size: 512 kB, smaller for a small RAM bound (a 64th of it)."""
        return max(64 * 2**10, min(512 * 2**10, self.ram_bytes // 64))

    @property
    def writer_bytes(self) -> int:
        """Return what the writer may hold while it writes: kept free within ``ram_bytes``."""
        return WRITER_CHUNKS * self.chunk_bytes


class Hold:
    """A window being written: the ring keeps its messages until the writer has taken them."""

    def __init__(self, first: int, last: int, count: int, size: int, topics: frozenset):
        self.cursor = first  # sequence number of the next message to write
        self.last = last
        self.count = count
        self.bytes = size
        self.topics = topics


class RingBuffer:
    """
    Raw messages of the kept topics, newest last, bounded in age and in bytes.

    ``ram_bytes`` bounds everything the black box holds: the messages (each counted with
    :data:`ITEM_OVERHEAD`, what Python and the allocator add to it) and ``reserve_bytes`` set
    aside for the MCAP writer's own buffers. A window being written is not copied: it is
    *held* (:meth:`hold`) and streamed to the writer in pieces (:meth:`stream`); the ring
    lets go of its messages only once they are written, and when the bound is reached with
    the oldest messages still held, a new message is dropped (``dropped_for_ram``) rather
    than the bound crossed.
    """

    def __init__(self, keep_s: float, ram_bytes: int, reserve_bytes: int = 0):
        self.keep_ns = int(keep_s * 1e9)
        self.ram_bytes = ram_bytes
        self.bound = max(0, ram_bytes - reserve_bytes)  # the messages' share of ram_bytes
        self.bytes = 0
        self.dropped_for_ram = 0
        self._items: collections.deque = collections.deque()  # (stamp ns, topic, data)
        self._first_seq = 0  # sequence number of _items[0]
        self._holds: list = []
        self._last: dict = {}  # topic -> (stamp ns, data): the freeze frame
        self._lock = threading.Lock()

    def add(self, topic: str, stamp_ns: int, data: bytes) -> None:
        """Keep one raw message; older ones past the age or the RAM bound are let go."""
        size = len(data) + ITEM_OVERHEAD
        with self._lock:
            self._last[topic] = (stamp_ns, data)
            if size > self.bound:
                self.dropped_for_ram += 1
                return
            items = self._items
            horizon = stamp_ns - self.keep_ns
            held = min((hold.cursor for hold in self._holds if hold.cursor <= hold.last),
                       default=None)
            while items and (self.bytes + size > self.bound or items[0][0] < horizon):
                if held is not None and self._first_seq >= held:
                    break  # still to be written: kept
                old = items.popleft()
                self._first_seq += 1
                self.bytes -= len(old[2]) + ITEM_OVERHEAD
                if old[0] >= horizon:
                    self.dropped_for_ram += 1
            if self.bytes + size > self.bound:
                self.dropped_for_ram += 1  # the bound is full of messages still to write
                return
            items.append((stamp_ns, topic, data))
            self.bytes += size

    def note_last(self, topic: str, stamp_ns: int, data: bytes) -> None:
        """Keep only the last message of a freeze-frame topic that is not recorded."""
        with self._lock:
            self._last[topic] = (stamp_ns, data)

    def hold(self, start_ns: int, end_ns: int, max_bytes: int) -> Hold:
        """
        Hold the messages received in [start_ns, end_ns], the newest ``max_bytes``.

        Nothing is copied: the ring keeps them until :meth:`stream` has handed them to the
        writer (or :meth:`release`), within its bound.
        """
        with self._lock:
            total, count, topics = 0, 0, set()
            first = last = self._first_seq + len(self._items)  # empty: nothing to write
            for index in range(len(self._items) - 1, -1, -1):
                stamp, topic, data = self._items[index]
                if stamp > end_ns:
                    continue
                if stamp < start_ns or total + len(data) > max_bytes:
                    break
                total += len(data)
                count += 1
                topics.add(topic)
                first = self._first_seq + index
                if count == 1:
                    last = first
            if not count:
                last = first - 1
            hold = Hold(first, last, count, total, frozenset(topics))
            self._holds.append(hold)
        return hold

    def stream(self, hold: Hold, piece_bytes: int = 2**20) -> Iterator:
        """Yield the held messages (stamp ns, topic, data) in order, ``piece_bytes`` at a time."""
        while True:
            with self._lock:
                piece: list = []
                size = 0
                while hold.cursor <= hold.last and (not piece or size < piece_bytes):
                    index = hold.cursor - self._first_seq
                    hold.cursor += 1
                    if 0 <= index < len(self._items):
                        piece.append(self._items[index])
                        size += len(piece[-1][2])
            if not piece:
                return
            yield from piece
            del piece  # written: the ring may let go of them now

    def release(self, hold: Hold) -> None:
        """End a hold (written or not): its messages go with the ring's age and bound."""
        with self._lock:
            if hold in self._holds:
                self._holds.remove(hold)

    def window(self, start_ns: int, end_ns: int, max_bytes: int) -> list:
        """Return a copy of the list :meth:`stream` would give (for a look, not for writing)."""
        hold = self.hold(start_ns, end_ns, max_bytes)
        try:
            return list(self.stream(hold))
        finally:
            self.release(hold)

    def held(self) -> int:
        """Return how many windows are held for writing."""
        with self._lock:
            return len(self._holds)

    def last(self) -> dict:
        """Return each topic's last message: topic -> (stamp ns, data)."""
        with self._lock:
            return dict(self._last)

    def topics_seen(self) -> set:
        """Return the topics at least one message came on."""
        with self._lock:
            return set(self._last)


class FaultTrigger:
    """Which observations start an episode of a fault, at most one per signature per cooldown."""

    def __init__(self, cooldown_s: float):
        self.cooldown_s = cooldown_s
        self._status: dict = {}  # source key -> last severity
        self._log_last: dict = {}  # signature -> stamp of its last bad record
        self._fired: dict = {}  # signature -> stamp of its last recording

    def observe(self, source: str, classifications: Iterable, now_s: float) -> list:
        """Return the (signature, source key) whose episode starts with this observation."""
        started = []
        for book in (self._status, self._log_last, self._fired):
            if len(book) >= MAX_OPEN_RUNS:  # a flood of new names: bounded as the run books
                book.clear()
        for item in classifications:
            if source == 'diagnostic':
                before = self._status.get(item.source_key, 0)
                self._status[item.source_key] = item.severity
                new = item.severity > 0 and before == 0
            else:
                last = self._log_last.get(item.signature)
                if item.severity > 0:
                    self._log_last[item.signature] = now_s
                new = item.severity > 0 and (last is None or now_s - last > LOG_EPISODE_GAP_S)
            if not new or item.signature is None:
                continue
            fired = self._fired.get(item.signature)
            if fired is not None and now_s - fired < self.cooldown_s:
                continue
            self._fired[item.signature] = now_s
            started.append((item.signature, item.source_key))
        return started


@dataclasses.dataclass
class Window:
    """One fault's recording to come: its moment, and the messages once it is due."""

    signature: str
    source_key: str
    fault_ns: int
    start_ns: int
    end_ns: int
    freeze: dict = dataclasses.field(default_factory=dict)  # topic -> (stamp ns, data)


class BlackBox:
    """The ring buffer and the trigger together: faults in, due windows out."""

    def __init__(self, policy: Policy):
        self.policy = policy
        # A little beyond the window: the writer looks for due windows once in a while.
        self.buffer = RingBuffer(policy.before_s + policy.after_s + 2.0, policy.ram_bytes,
                                 policy.writer_bytes)
        self.trigger = FaultTrigger(policy.cooldown_s)
        self._pending: list = []
        self._lock = threading.Lock()

    def observe(self, source: str, classifications: Iterable, now_ns: int) -> list:
        """Note an ingested observation; return the windows it started."""
        started = self.trigger.observe(source, classifications, now_ns / 1e9)
        windows = [Window(signature, key, now_ns, now_ns - int(self.policy.before_s * 1e9),
                          now_ns + int(self.policy.after_s * 1e9), self.buffer.last())
                   for signature, key in started]
        with self._lock:
            self._pending.extend(windows)
        return windows

    def due(self, now_ns: int) -> list:
        """
        Return (window, hold) of each window whose ``after_s`` is over, oldest first.

        Write each with ``buffer.stream(hold)``, then ``buffer.release(hold)``.
        """
        with self._lock:
            ready = [window for window in self._pending if window.end_ns <= now_ns]
            self._pending = [window for window in self._pending if window.end_ns > now_ns]
        return [(window, self.buffer.hold(window.start_ns, window.end_ns,
                                          self.policy.recording_bytes)) for window in ready]

    def pending(self) -> int:
        """Return how many windows wait for their seconds after the fault."""
        with self._lock:
            return len(self._pending)


def check_folder(folder: pathlib.Path) -> pathlib.Path:
    """Create the recordings folder; a symbolic link (the folder or a parent) is refused."""
    folder = pathlib.Path(os.path.abspath(folder))
    for part in [folder, *folder.parents]:
        if part.is_symlink():
            raise BlackboxError(
                f'the black-box folder {folder} goes through the symbolic link {part} -> '
                f'{os.readlink(part)}; recordings are pruned by size there, so a link elsewhere '
                'is refused: set blackbox_folder to the real folder')
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as error:
        raise BlackboxError(f'cannot create the black-box folder {folder}: {error.strerror}; '
                            'set blackbox_folder to a writable folder') from None
    return folder


def message_definition(type_name: str, find_msg: Callable[[str], Optional[str]],
                       store=None) -> Optional[str]:
    """
    Return the ``ros2msg`` schema of ``type_name``: its .msg and its dependencies', joined.

    ``store`` is a rosbags type store (Kilted's by default); a type it lacks is read with
    ``find_msg('pkg/msg/Type')`` (the text of its .msg file, or None). None: no definition.
    """
    # lazy: rosbags (the blackbox extra), 16 ms and 5 MB of a node without a black box
    from rosbags import typesys as rosbags_typesys
    if store is None:
        store = rosbags_typesys.get_typestore(rosbags_typesys.Stores.ROS2_KILTED)
    for _ in range(64):  # each round registers one missing type
        try:
            return store.generate_msgdef(type_name, ros_version=2)[0]
        except (KeyError, rosbags_typesys.TypesysError) as error:
            missing = _missing_type(error, type_name)
        text = find_msg(missing)
        if text is None:
            return None
        try:
            store.register(rosbags_typesys.get_types_from_msg(text, missing))
        except rosbags_typesys.TypesysError:
            return None
    return None


def _missing_type(error: Exception, type_name: str) -> str:
    # rosbags says "Type 'pkg/msg/Name' is unknown."; a KeyError holds the bare name.
    match = _QUOTED_TYPE.search(str(error))
    return match.group(1) if match else type_name


def recording_name(signature: str, fault_ns: int) -> str:
    """Return a recording's file name: its moment (UTC) and a short signature digest."""
    seconds, rest = divmod(fault_ns, 10**9)
    stamp = _utc_text(seconds).replace(':', '').replace('-', '')
    digest = hashlib.sha256(signature.encode()).hexdigest()[:8]
    return f'{stamp}.{rest // 10**6:03d}Z_{digest}.mcap'


def _utc_text(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')


def write_recording(path: pathlib.Path, topics: dict, messages: Iterable,
                    metadata: Optional[dict] = None, chunk_bytes: int = 2**20) -> tuple:
    """
    Write ``messages`` [(stamp ns, topic, data)] as an MCAP at ``path``; return (bytes, sha256).

    ``topics`` maps each topic to (type name, schema text or None: the type is named with an
    empty definition). ``messages`` is read once, in order (a list or :meth:`RingBuffer.stream`);
    the writer holds about four ``chunk_bytes`` at a time. Written to ``path.partial`` in the
    same folder, fsynced and renamed: an error or an interrupt (Ctrl-C) leaves no file, and a
    full disk says so.
    """
    temp = path.with_name(path.name + PARTIAL_SUFFIX)
    try:
        with open(temp, 'xb') as handle:
            _write_mcap(handle, topics, messages, metadata or {}, chunk_bytes)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(error, OSError):
            full = error.errno in (errno.ENOSPC, errno.EDQUOT)
            raise BlackboxError(
                f'the black-box recording {path.name} was not written '
                f'({error.strerror}); no partial file is left; '
                + ('the disk is full: free space or lower blackbox_total_mb' if full
                   else 'check the folder is writable')) from None
        raise
    fsync_directory(path.parent)
    return path.stat().st_size, file_sha256(path)


def _write_mcap(handle, topics: dict, messages: Iterable, metadata: dict,
                chunk_bytes: int) -> None:
    # lazy: the MCAP writer (the blackbox extra), 61 ms and 4 MB of a node without a black box
    from mcap import writer as mcap_writer
    writer = mcap_writer.Writer(handle, chunk_size=chunk_bytes)
    writer.start(profile='ros2', library='robot_memory blackbox')
    channels = {}
    for topic, (type_name, schema) in sorted(topics.items()):
        schema_id = writer.register_schema(name=type_name, encoding='ros2msg' if schema else '',
                                           data=(schema or '').encode())
        channels[topic] = writer.register_channel(topic=topic, message_encoding='cdr',
                                                  schema_id=schema_id)
    for sequence, (stamp_ns, topic, data) in enumerate(messages):
        if topic in channels:
            writer.add_message(channels[topic], log_time=stamp_ns, data=data,
                               publish_time=stamp_ns, sequence=sequence)
    if metadata:
        writer.add_metadata('robot_memory.blackbox', {key: str(value)
                                                      for key, value in metadata.items()})
    writer.finish()


def file_sha256(path: pathlib.Path) -> str:
    """Return the sha256 of a file, read in 1 MB pieces."""
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for piece in iter(lambda: handle.read(2**20), b''):
            digest.update(piece)
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class Recording:
    """One row of ``blackbox_recordings``: where a fault's recording is and what it holds."""

    id: int
    path: str
    signature: str
    source_key: str
    started: float
    ended: float
    bytes: int
    topics: tuple
    sha256: str
    freeze_frame: str
    entry_id: Optional[str] = None

    def exists(self) -> bool:
        """Whether the file is still there (one deleted by hand is listed as gone)."""
        return pathlib.Path(self.path).is_file()


_COLUMNS = 'r.id, r.path, r.signature, r.source_key, r.started, r.ended, r.bytes, r.topics, ' \
           'r.sha256, r.freeze_frame, s.entry_id'


def record(conn: sqlite3.Connection, path: pathlib.Path, window: Window, size: int,
           topics: Iterable, sha256: str, freeze_frame: dict) -> int:
    """Link a written recording to its signature (and so its entry); return its id."""
    cursor = conn.execute(
        'INSERT INTO blackbox_recordings (path, signature, source_key, started, ended, bytes, '
        'topics, sha256, freeze_frame) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        (str(path), window.signature, window.source_key, window.start_ns / 1e9,
         window.end_ns / 1e9, size, json.dumps(sorted(topics)), sha256,
         json.dumps(freeze_frame, sort_keys=True, default=str)))
    return int(cursor.lastrowid or 0)


def recordings(conn: sqlite3.Connection, entry_id: Optional[str] = None) -> list:
    """Return the recordings, oldest first (of one entry's signatures when given)."""
    sql = (f'SELECT {_COLUMNS} FROM blackbox_recordings r LEFT JOIN signatures s '
           'ON s.signature = r.signature')
    rows = conn.execute(sql + (' WHERE s.entry_id = ?' if entry_id else '')
                        + ' ORDER BY r.started, r.id', (entry_id,) if entry_id else ())
    return [Recording(id=row[0], path=row[1], signature=row[2], source_key=row[3],
                      started=row[4], ended=row[5], bytes=row[6],
                      topics=tuple(json.loads(row[7])), sha256=row[8], freeze_frame=row[9],
                      entry_id=row[10]) for row in rows]


def prune(conn: sqlite3.Connection, total_bytes: int) -> list:
    """
    Delete the oldest recordings (file and row) while all of them exceed ``total_bytes``.

    An entry's most recent recording is kept as long as the entry exists; a recording
    already deleted by hand counts for nothing (its row stays: listed as gone). Returns the
    paths deleted.
    """
    rows = recordings(conn)
    keep = {}
    for row in rows:
        if row.entry_id:
            keep[row.entry_id] = row.id
    kept_ids = set(keep.values())
    total = sum(row.bytes for row in rows if row.exists())
    deleted = []
    for row in rows:
        if total <= total_bytes:
            break
        if row.id in kept_ids or not row.exists():
            continue  # a row whose file is gone stays, so the list can say it is gone
        with contextlib.suppress(FileNotFoundError):
            os.unlink(row.path)
        total -= row.bytes
        deleted.append(row.path)
        conn.execute('DELETE FROM blackbox_recordings WHERE id = ?', (row.id,))
    return deleted


def freeze_frame(last: dict, types: dict, store, max_chars: int = 4096) -> dict:
    """
    Return the freeze frame: each topic's last value as plain JSON data, decoded now.

    ``last`` is :meth:`RingBuffer.last`, ``types`` maps each freeze topic to its type and
    ``store`` is the rosbags type store that knows them. A topic with no message yet, one
    that does not decode, or one too large says so instead of a value.
    """
    frame = {}
    for topic, type_name in sorted(types.items()):
        item = last.get(topic)
        if item is None:
            frame[topic] = {'type': type_name, 'missing': 'no message since the node started'}
            continue
        try:
            value = plain(store.deserialize_cdr(item[1], type_name))
        except Exception as error:  # noqa: B902 - a bad message is named, the rest goes on
            frame[topic] = {'type': type_name, 'error': f'not decoded: {error}'}
            continue
        size = len(json.dumps(value, default=str))
        if size > max_chars:
            value = f'{size} characters of JSON, over {max_chars}: left out'
        frame[topic] = {'type': type_name, 'stamp': item[0] / 1e9, 'value': value}
    return frame


def plain(value):
    """Return a rosbags message as dicts, lists and numbers (JSON data)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name))
                for field in dataclasses.fields(value)}
    if hasattr(value, 'tolist'):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
