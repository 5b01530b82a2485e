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
Opening recordings with ``rosbags``: rosbag2 (MCAP, sqlite3, compressed) and ROS 1 bags.

Why rosbags: one maintained, pure-Python library reads all three formats, ships the
message definitions of every distribution (so a bag without embedded definitions is
read too) and writes all three (``robot_memory.testing.bag_writer``). ``mcap`` with
``mcap-ros2-support`` reads MCAP only.

A recording that cannot be read is refused with :class:`RecordingError`, saying what is
wrong and what to do. A truncated MCAP (a power cut while recording) is read up to the
damage: :class:`_TolerantMcap` finds the last whole record and reads the file up to it,
and :meth:`Bag.cut_note` says how much was read and lost. An MCAP without a chunk index
(cut short, no summary, rosbag2's fastwrite) is read in time order whatever order its
messages were written in (:func:`in_time_order`).
"""

import dataclasses
import datetime as dt
import hashlib
import heapq
import pathlib
import struct
from typing import Iterator
from typing import Optional
from typing import Union

from rosbags.interfaces import MessageDefinitionFormat
from rosbags.rosbag1 import Reader as Reader1
from rosbags.rosbag2 import Reader as Reader2
from rosbags.rosbag2.errors import ReaderError
from rosbags.rosbag2.reader import DirectoryReader
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader
from rosbags.typesys import get_types_from_idl
from rosbags.typesys import get_types_from_msg
from rosbags.typesys import get_typestore
from rosbags.typesys import Stores
from rosbags.typesys.base import Nodetype
from rosbags.typesys.store import Typestore
import yaml

from robot_memory.common import cdr
from robot_memory.errors import RobotMemoryError
from robot_memory.evidence import observations

MCAP_MAGIC = b'\x89MCAP0\r\n'
ROS1_MAGIC = b'#ROSBAG V2.0\n'
SQLITE_MAGIC = b'SQLite format 3\x00'
# Recorded times before this are simulation time (use_sim_time), not the robot's life.
EARLIEST_NS = 946684800 * 10**9  # 2000-01-01T00:00:00Z
IDENTITY_BYTES = 1 << 20  # the head of each storage file names the recording
ORDER_BLOCK = 4096  # messages of an unindexed MCAP whose earliest time one pass notes
ORDER_HELD = 500_000  # messages held back to order an unindexed MCAP, at most
DIAGNOSTICS_TYPES = ('diagnostic_msgs/msg/DiagnosticArray',)
LOG_TYPES = ('rcl_interfaces/msg/Log', 'rosgraph_msgs/msg/Log')
_DISTROS = {store.value.removeprefix('ros2_'): store for store in Stores
            if store.value.startswith('ros2_')}
_MCAP_OPS = range(0x01, 0x10)
_HOLD_MESSAGES = (0x05, 0x06)  # MCAP records that hold messages: message, chunk
# Where a recording names its robot (custom data, MCAP metadata): key -> identity field.
_ROBOT_KEYS = {'rrn': 'rrn', 'robot_rrn': 'rrn', 'hostname': 'hostname', 'host': 'hostname',
               'robot_hostname': 'hostname'}
# What rosbags says of an MCAP without its footer: cut short while it was being written.
_CUT_SHORT = ('File end magic is invalid.', 'Invalid MCAP footer.')
# A stamp (sec, nanosec) read from a message's bytes: ROS 2 CDR by its encapsulation's byte
# order (00 00 big-endian, 00 01 little-endian; sec is signed), ROS 1 little-endian.
_STAMP_CDR = {0: struct.Struct('>iI').unpack_from, 1: struct.Struct('<iI').unpack_from}
_STAMP_ROS1 = struct.Struct('<II').unpack_from


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def datetime_of(ns: int) -> dt.datetime:
    """Return a recorded time (ns since the epoch) as an aware UTC datetime (to the us)."""
    return _EPOCH + dt.timedelta(microseconds=ns // 1000)


def ns_of(value) -> int:
    """Return an aware datetime (or ns, unchanged) as ns since the epoch, exactly."""
    if not isinstance(value, dt.datetime):
        return int(value)
    delta = value - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000


class RecordingError(RobotMemoryError, ValueError):
    """A path that is not a readable recording; the message says why and what to do."""


class _TolerantMcap(McapReader):
    """rosbags' MCAP reader that reads a file cut short (no footer) up to its last whole record."""

    unread_bytes = 0
    index_cut = False  # cut short in its summary, after every message: all were read
    cut_record: tuple = (0, 0)  # the opcode and length of the record the cut went through

    def _open(self) -> None:
        try:
            super()._open()
        except ReaderError as error:
            if str(error) not in _CUT_SHORT:
                raise
            self._open_cut_short()

    def _open_cut_short(self) -> None:
        bio = self.bio
        assert bio is not None  # the file McapReader._open opened
        size = bio.seek(0, 2)
        bio.seek(8)
        good = None
        while True:
            start = bio.tell()
            head = bio.read(9)
            if len(head) < 9 or head[0] not in _MCAP_OPS:
                break
            end = start + 9 + int.from_bytes(head[1:], 'little')
            if end > size:
                self.cut_record = (head[0], end - start)
                break
            if head[0] == 0x01:
                self.data_start = end
            if head[0] in (0x0F, 0x02):  # data end, footer: the rest is the summary
                self.index_cut = True
                break
            bio.seek(end)
            good = end
        if good is None:
            raise RecordingError('the MCAP file ends inside its header: nothing can be read')
        self.data_end = good
        self.unread_bytes = 0 if self.index_cut else size - good
        self.chunks = []
        self.meta_scan()
        stats = self.statistics
        assert stats is not None  # counted by meta_scan
        self.connections = [x._replace(msgcount=stats.channel_message_counts.get(x.id, 0))
                            for x in self.connections]
        count = stats.message_count
        self.metadata = self.metadata._replace(
            duration=stats.end_time - stats.start_time + 1 if count else 0,
            start_time=stats.start_time if count else 2**63 - 1,
            end_time=stats.end_time + 1 if count else 0, message_count=count)

    def messages(self, connections, start=None, stop=None):
        """
        Yield (connection, recorded ns, bytes) oldest first, an unindexed file's too.

        MCAP allows messages in any order. With a chunk index rosbags merges the chunks
        by time; without one (cut short, no summary, rosbag2's fastwrite without chunks)
        it read in file order and stopped at the first message older than the one before.
        Here every whole chunk and message of such a file is read, in time order
        (:func:`in_time_order`).
        """
        if self.chunks:
            yield from super().messages(connections, start, stop)
            return
        self.out_of_order = 0
        for message in in_time_order(lambda: self.messages_scan(connections, start, stop)):
            if message is None:  # the order could not be kept: see in_time_order
                self.out_of_order += 1
            else:
                yield message

    out_of_order = 0  # messages an unindexed file yielded after later ones (see messages)


def in_time_order(scan, block: int = ORDER_BLOCK, held: int = ORDER_HELD):
    """
    Yield what ``scan()`` yields, (connection, ns, bytes) in any order, oldest first.

    Two passes: the first notes the earliest time of each ``block`` of messages in file
    order; the second holds messages back only until no later block can hold an earlier
    one. So a file in time order holds one block, and any order is put right. Should more
    than ``held`` messages wait (a file in reverse order), the oldest go on anyway, each
    announced by a None before it: the caller counts them.
    """
    earliest: list = []
    for index, (_, ns, _) in enumerate(scan()):
        if index % block:
            earliest[-1] = min(earliest[-1], ns)
        else:
            earliest.append(ns)
    after = [2**63] * len(earliest)  # after[b]: the earliest time of blocks after b
    for number in range(len(earliest) - 2, -1, -1):
        after[number] = min(earliest[number + 1], after[number + 1])
    waiting: list = []
    last = -2**63
    for index, (connection, ns, data) in enumerate(scan()):
        heapq.heappush(waiting, (ns, index, connection, data))
        if index % block != block - 1 and len(waiting) <= held:
            continue
        limit = after[index // block] if index // block < len(after) else 2**63
        while waiting and (waiting[0][0] <= limit or len(waiting) > held):
            ns, _, connection, data = heapq.heappop(waiting)
            if ns < last:
                yield None
            last = max(last, ns)
            yield connection, ns, data
    while waiting:
        ns, _, connection, data = heapq.heappop(waiting)
        if ns < last:
            yield None
        last = max(last, ns)
        yield connection, ns, data


class _TolerantDirectory(DirectoryReader):
    STORAGE_PLUGINS = {'mcap': _TolerantMcap, 'sqlite3': Sqlite3Reader}


class _TolerantReader(Reader2):
    STORAGE_PLUGINS = {'dir': _TolerantDirectory, '.mcap': _TolerantMcap, '.db3': Sqlite3Reader}


@dataclasses.dataclass
class Bag:
    """One open recording: what it is, its times, and how to read its messages."""

    path: pathlib.Path
    kind: str  # mcap, sqlite3 or ros1
    identity: str
    reader: Union[Reader1, Reader2]
    typestore: Typestore
    start_ns: int
    end_ns: int
    message_count: int
    size_bytes: int
    robot: dict
    unread_bytes: int = 0
    notes: list = dataclasses.field(default_factory=list)
    _stamp_offsets: dict = dataclasses.field(default_factory=dict)

    @property
    def ros1(self) -> bool:
        """Whether messages are ROS 1 serialized."""
        return self.kind == 'ros1'

    def topics(self) -> dict:
        """Return {topic: message type} of the recording."""
        return {conn.topic: conn.msgtype for conn in self.reader.connections}

    def topic_types(self) -> dict:
        """Return {topic: {message type: messages}}: a topic may carry more than one type."""
        found: dict = {}
        for conn in self.reader.connections:
            kinds = found.setdefault(conn.topic, {})
            kinds[conn.msgtype] = kinds.get(conn.msgtype, 0) + conn.msgcount
        return found

    def counts(self) -> dict:
        """Return {topic: messages} as the recording's index says."""
        counts: dict[str, int] = {}
        for conn in self.reader.connections:
            counts[conn.topic] = counts.get(conn.topic, 0) + conn.msgcount
        return counts

    def messages(self, topics, types: Optional[dict] = None) -> Iterator[tuple]:
        """
        Yield (recorded ns, topic, message type, raw bytes) of ``topics``, oldest first.

        ``types`` ({topic: message type}): only the messages of that type on each topic.
        """
        connections = [conn for conn in self.reader.connections if conn.topic in topics
                       and (types is None or types.get(conn.topic) == conn.msgtype)]
        if not connections:
            return
        try:
            for conn, stamp, raw in self.reader.messages(connections=connections):
                yield stamp, conn.topic, conn.msgtype, raw
        except Exception as error:  # noqa: B902 - rosbags raises several kinds on damage
            self.notes.append(f'reading stopped at damage in the recording ({error}); what '
                              'came before it was taken')
            self.unread_bytes = self.unread_bytes or -1
        late = sum(getattr(storage, 'out_of_order', 0) for storage in _storages(self.reader))
        if late:
            self.notes.append(
                f'{late:,} messages lay so far out of time order in the file (more than '
                f'{ORDER_HELD:,} held back to order them) that they were taken after later '
                'ones; those of a night already dreamed go to the next dream')

    def cut_note(self) -> Optional[str]:
        """Say how much of a recording cut short was read, and how much was lost (or None)."""
        storages = _storages(self.reader)
        if any(getattr(storage, 'index_cut', False) for storage in storages):
            self.notes.append('its index (the MCAP summary) was cut short, after the last '
                              'message: every message was read')
        if self.unread_bytes <= 0:
            return None
        kept = self.size_bytes - self.unread_bytes
        cut = [getattr(storage, 'cut_record', (0, 0)) for storage in storages]
        held = sum(length for opcode, length in cut if opcode in _HOLD_MESSAGES)
        each = kept / self.message_count if self.message_count else 0
        if not held:
            lost = ('an index record after the last whole message, so every message the file '
                    'holds was read')
        elif each:
            lost = (f'a chunk or message of {held:,} bytes: about '
                    f'{max(1, round(held / each)):,} messages in it (at the size of those '
                    'read) were lost')
        else:
            lost = f'a chunk or message of {held:,} bytes: the messages in it were lost'
        return (f'the recording was cut short (a power cut?): the '
                f'{self.message_count:,} messages in the whole records of its first '
                f'{kept:,} bytes were read; the last {self.unread_bytes:,} bytes could not be '
                f'read, the cut went through {lost}')

    def stamp_offset(self, type_name: str) -> Optional[int]:
        """
        Return where a message of ``type_name`` holds its own stamp in its bytes (None: nowhere).

        A message whose first field is a ``std_msgs/Header`` (DiagnosticArray, ROS 1's Log,
        most sensor messages) or a ``builtin_interfaces/Time`` (ROS 2's Log) is stamped by
        its publisher: after the CDR encapsulation (4 bytes), or after ROS 1's header seq.
        """
        found = self._stamp_offsets.get(type_name, -1)
        if found != -1:
            return found
        fields = self.typestore.fielddefs.get(type_name)
        first = fields[1][0][1] if fields and fields[1] else None
        offset = None
        if first is not None and first[0] == Nodetype.NAME:
            if first[1] == 'std_msgs/msg/Header':
                offset = 4
            elif first[1] == 'builtin_interfaces/msg/Time':
                offset = 0 if self.ros1 else 4
        self._stamp_offsets[type_name] = offset
        return offset

    def own_stamp(self, raw, offset: Optional[int]) -> Optional[int]:
        """Return the stamp (ns) a message's bytes hold at ``offset``; None if unset or odd."""
        if offset is None:
            return None
        try:
            if self.ros1:
                sec, nanosec = _STAMP_ROS1(raw, offset)
            else:
                sec, nanosec = _STAMP_CDR[raw[1]](raw, offset)
        except (struct.error, KeyError, IndexError):
            return None
        return sec * 10**9 + nanosec if sec > 0 and nanosec < 10**9 else None

    def decode(self, raw, type_name: str):
        """Return a message deserialized (RecordingError names a type without definition)."""
        try:
            if self.ros1:
                return self.typestore.deserialize_ros1(raw, type_name)
            return self.typestore.deserialize_cdr(raw, type_name)
        except KeyError:
            raise RecordingError(missing_type_message(type_name)) from None

    def knows(self, type_name: str) -> bool:
        """Whether the type's definition is known (in the recording, rosbags or --msg-dir)."""
        return type_name in self.typestore.fielddefs

    def statuses(self, raw, type_name: str, cache: Optional[cdr.StatusCache] = None):
        """
        Return a DiagnosticArray's statuses as cdr.diagnostic_statuses gives them.

        With ``cache``, what it derives from each (CDR arrays it reads; others as without).
        """
        if not self.ros1:
            try:
                return cache.get(raw) if cache is not None else cdr.diagnostic_statuses(raw)
            except cdr.CdrError:
                pass
        array = self.decode(raw, type_name)
        statuses = [(observations.byte_level(status.level), status.name, status.message,
                     status.hardware_id, [(item.key, item.value) for item in status.values])
                    for status in array.status]
        return cache.derived(statuses) if cache is not None else statuses

    def close(self) -> None:
        """Close the recording."""
        self.reader.close()


def missing_type_message(type_name: str) -> str:
    """Return how to supply the definition of a message type the reader does not know."""
    package, _, name = type_name.partition('/msg/')
    return (f'the message type {type_name} is neither defined in the recording nor shipped '
            f'by rosbags; give its definition with --msg-dir DIR, where DIR holds '
            f'{package}/msg/{name or type_name}.msg (e.g. the src/ of your workspace)')


def find(paths) -> tuple:
    """
    Return (recordings, problems) for the paths given: files and directories of bags.

    A directory with ``metadata.yaml`` is one rosbag2 recording; another directory is
    searched for recordings. A problem names a path that is not a recording, and why.
    """
    found, problems = [], []
    for given in paths:
        path = pathlib.Path(given)
        if not path.exists():
            problems.append(f'{path}: no such file or directory')
        elif path.is_dir():
            inside = _search(path)
            if inside:
                found.extend(inside)
            else:
                problems.append(f'{path}: no recording in this directory (looked for rosbag2 '
                                'directories with metadata.yaml, .mcap, .db3 and .bag files)')
        else:
            found.append(_bag_of_file(path))
    unique = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique, problems


def _bag_of_file(path: pathlib.Path) -> pathlib.Path:
    """Return the rosbag2 directory a storage file lies in (it stands for it), or the file."""
    if path.suffix in ('.mcap', '.db3', '.zstd') and (path.parent / 'metadata.yaml').exists():
        return path.parent
    return path


def _search(directory: pathlib.Path) -> list:
    if (directory / 'metadata.yaml').exists():
        return [directory]
    found = []
    for child in sorted(directory.iterdir()):
        if child.is_dir():
            found.extend(_search(child))
        elif child.suffix in ('.mcap', '.db3', '.bag'):
            found.append(child)
    return found


def open_bag(path: pathlib.Path, msg_dirs=()) -> Bag:
    """Open one recording (RecordingError says why it cannot be read)."""
    path = pathlib.Path(path)
    kind = _kind(path)
    reader: Union[Reader1, Reader2]
    try:
        if kind == 'ros1':
            reader = Reader1(path)
        else:
            reader = _TolerantReader(path)
        reader.open()
    except RecordingError:
        raise
    except Exception as error:  # noqa: B902 - rosbags raises several kinds
        raise RecordingError(f'{path}: cannot be read as a {kind} recording ({error})') from None
    files = _storage_files(path)
    unread = sum(getattr(storage, 'unread_bytes', 0) for storage in _storages(reader))
    custom = dict(getattr(reader.storage.metadata, 'custom', None) or {}) \
        if isinstance(reader, Reader2) else {}
    records = [record for file in files if file.suffix == '.mcap'
               for record in mcap_metadata(file)] if kind == 'mcap' else []
    bag = Bag(path=path, kind=kind, identity=_identity(files), reader=reader,
              typestore=_typestore(reader, kind, msg_dirs),
              start_ns=reader.start_time if reader.message_count else 0,
              end_ns=reader.end_time if reader.message_count else 0,
              message_count=reader.message_count,
              size_bytes=sum(file.stat().st_size for file in files),
              robot=robot_identity([custom, *records]),
              unread_bytes=unread)
    return bag


def _storages(reader) -> list:
    """Return the storage readers of a rosbag2 reader (one a file); none for ROS 1."""
    if not isinstance(reader, Reader2):
        return []
    return list(getattr(reader.storage, 'storages', [reader.storage]))


def robot_identity(sources) -> dict:
    """
    Return {'rrn', 'hostname'} (those found) of the robot that made a recording.

    ``sources`` are dicts of strings, most trusted first: the rosbag2 custom data of
    metadata.yaml, then the MCAP metadata records (see :func:`mcap_metadata`), whose
    ``rosbag2`` record carries the recorder's own copy of that custom data (what is left
    of it when the .mcap travels alone). The first value of a field wins.
    """
    robot = {}
    for source in sources:
        for key, value in source.items():
            field = _ROBOT_KEYS.get(str(key).lower())
            if field is not None and value not in (None, '') and field not in robot:
                robot[field] = str(value)
    return robot


def mcap_metadata(path: pathlib.Path) -> list:
    """
    Return the metadata records of an MCAP file as dicts of strings, in file order.

    A ``rosbag2`` record (``ros2 bag record``'s copy of metadata.yaml) gives its custom
    data; any other record (a fleet's ``robot`` record, say) its own keys. The data
    section is walked record by record (a chunk is skipped, not read), so a file cut
    short gives what comes before the damage, and an unindexed record is found too.
    """
    found = []
    try:
        with open(path, 'rb') as handle:
            size = handle.seek(0, 2)
            handle.seek(len(MCAP_MAGIC))
            while True:
                start = handle.tell()
                head = handle.read(9)
                if len(head) < 9 or head[0] not in _MCAP_OPS or head[0] in (0x0F, 0x02):
                    break
                end = start + 9 + int.from_bytes(head[1:], 'little')
                if end > size:
                    break
                if head[0] == 0x0C:
                    found.append(_metadata_record(handle.read(end - start - 9)))
                handle.seek(end)
    except OSError:
        return found
    return [record for record in found if record]


def _metadata_record(body: bytes) -> dict:
    """Return the keys of one MCAP metadata record (name, then a map of strings); {} if odd."""
    try:
        pos = 4 + int.from_bytes(body[:4], 'little')
        name = body[4:pos].decode('utf-8')
        end = pos + 4 + int.from_bytes(body[pos:pos + 4], 'little')
        pos += 4
        values = {}
        while pos < min(end, len(body)):
            strings = []
            for _ in range(2):
                length = int.from_bytes(body[pos:pos + 4], 'little')
                strings.append(body[pos + 4:pos + 4 + length].decode('utf-8'))
                pos += 4 + length
            values[strings[0]] = strings[1]
    except UnicodeDecodeError:
        return {}
    if name != 'rosbag2':
        return values
    try:
        data = yaml.load(values.get('serialized_metadata', ''), Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return {}
    if isinstance(data, dict) and 'rosbag2_bagfile_information' in data:
        data = data['rosbag2_bagfile_information']
    custom = data.get('custom_data') if isinstance(data, dict) else None
    return dict(custom) if isinstance(custom, dict) else {}


def _kind(path: pathlib.Path) -> str:
    if path.is_dir():
        text = (path / 'metadata.yaml').read_text(encoding='utf-8', errors='replace')
        return 'sqlite3' if 'storage_identifier: sqlite3' in text else 'mcap'
    try:
        with open(path, 'rb') as handle:
            head = handle.read(16)
    except OSError as error:
        raise RecordingError(f'{path}: cannot be read ({error.strerror})') from None
    if head.startswith(MCAP_MAGIC):
        return 'mcap'
    if head.startswith(ROS1_MAGIC):
        return 'ros1'
    if head.startswith(SQLITE_MAGIC) and path.suffix == '.db3':
        return 'sqlite3'
    if path.suffix == '.zstd':
        raise RecordingError(f'{path}: a compressed storage file needs the metadata.yaml of its '
                             'rosbag2 directory beside it; copy the whole directory, or '
                             'decompress it with zstd -d')
    if not head:
        raise RecordingError(f'{path}: the file is empty, not a recording')
    raise RecordingError(f'{path}: not a recording (expected a rosbag2 directory, an .mcap or '
                         '.db3 file, or a ROS 1 .bag)')


def _storage_files(path: pathlib.Path) -> list:
    if not path.is_dir():
        return [path]
    return sorted(file for file in path.iterdir()
                  if file.is_file() and file.name != 'metadata.yaml')


def _identity(files) -> str:
    digest = hashlib.sha256()
    for file in files:
        with open(file, 'rb') as handle:
            digest.update(handle.read(IDENTITY_BYTES))
    return digest.hexdigest()[:32]


def _typestore(reader, kind: str, msg_dirs):
    if kind == 'ros1':
        base = Stores.ROS1_NOETIC
    else:
        base = _DISTROS.get(str(getattr(reader, 'ros_distro', None) or ''), Stores.LATEST)
    store = get_typestore(base)
    types = {}
    for conn in reader.connections:
        if conn.msgtype in store.fielddefs or conn.msgtype in types:
            continue
        definition = conn.msgdef
        try:
            if definition.format == MessageDefinitionFormat.MSG:
                types.update(get_types_from_msg(definition.data, conn.msgtype))
            elif definition.format == MessageDefinitionFormat.IDL:
                for part in definition.data.split('=' * 80 + '\n'):
                    if part.startswith('IDL: '):
                        part = part.split('\n', 1)[1]
                    if part.strip():
                        types.update(get_types_from_idl(part))
        except Exception:  # noqa: B902 - a definition rosbags cannot parse: see msg_dirs
            continue
    for directory in msg_dirs:
        types.update(_types_of_directory(pathlib.Path(directory)))
    types = {name: value for name, value in types.items() if name not in store.fielddefs}
    if types:
        store.register(types)
    return store


def _types_of_directory(directory: pathlib.Path) -> dict:
    """Message definitions of ``pkg/msg/Name.msg`` files under ``directory``."""
    if not directory.is_dir():
        raise RecordingError(f'--msg-dir {directory}: not a directory')
    types = {}
    for file in sorted(directory.rglob('*.msg')):
        if file.parent.name != 'msg':
            continue
        name = f'{file.parent.parent.name}/msg/{file.stem}'
        try:
            types.update(get_types_from_msg(file.read_text(encoding='utf-8'), name))
        except Exception as error:  # noqa: B902 - a definition rosbags cannot parse
            raise RecordingError(f'{file}: not a message definition rosbags can read '
                                 f'({error})') from None
    return types
