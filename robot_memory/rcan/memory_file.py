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
robot-memory.md on disk (RCAN Robot Memory Schema 1.0): the file's API, load, save and lock.

The file is Markdown with a YAML front matter; everything after the closing delimiter is the
Markdown body and is kept byte for byte. Reading is ``parse`` (the readers ``reader_fast``,
``line_reader`` and ``reader_yaml``), writing is ``writer``. Files above the size limit are
refused unread.

Safety: writes go to a temporary file in the same directory, are flushed and
fsynced, renamed over the old file and the directory is fsynced; the file is mode
0600; writers take an exclusive lock so the node and the CLI never lose each
other's updates. A file that cannot be parsed is never overwritten: writers set
it aside as ``<file>.corrupt-<time>``. One invalid entry is quarantined (kept in
``<file>.quarantine.jsonl``) and the valid entries survive.

A memory file that is a symbolic link (say onto a persistent partition) stays one:
every write goes through to the end of the chain of links, in that file's directory,
and the lock and the side files (archive, quarantine, ``.corrupt-`` and ``.legacy-``
copies) lie beside that target, on the same file system as the data they belong to,
so every link to one file shares one lock. A link to nothing is refused, never
replaced by a regular file.
"""

import contextlib
import datetime as dt
import fcntl
import glob
import json
import os
import pathlib
import stat
import time
from typing import Iterator
from typing import Optional

from robot_memory.common.fileio import append_durably
from robot_memory.common.fileio import FILE_MODE
from robot_memory.common.fileio import fsync_directory
from robot_memory.common.fileio import kept_name
from robot_memory.common.fileio import side_file
from robot_memory.common.fileio import write_atomic
from robot_memory.common.timeutil import format_iso
from robot_memory.errors import MemoryFileError
from robot_memory.errors import MemoryLockTimeout
from robot_memory.locations import DEFAULT_PATH  # noqa: F401 - part of this API
from robot_memory.locations import ENV_VAR  # noqa: F401 - part of this API
from robot_memory.locations import link_target
from robot_memory.locations import resolve_path
from robot_memory.rcan import schema
from robot_memory.rcan.parse import check_text  # noqa: F401 - part of this API
from robot_memory.rcan.parse import LoadResult
from robot_memory.rcan.parse import migrate_legacy  # noqa: F401 - part of this API
from robot_memory.rcan.parse import parse_bytes
from robot_memory.rcan.parse import Problem
from robot_memory.rcan.parse import QuarantinedItem  # noqa: F401 - part of this API
from robot_memory.rcan.parse import read_last_updated  # noqa: F401 - part of this API
from robot_memory.rcan.parse import salvage
from robot_memory.rcan.parse import UNSET_RRN
from robot_memory.rcan.reader_yaml import check_structure  # noqa: F401 - part of this API
from robot_memory.rcan.reader_yaml import MAX_DEPTH  # noqa: F401 - part of this API
from robot_memory.rcan.schema import MemoryDocument
from robot_memory.rcan.schema import SCHEMA_VERSION
from robot_memory.rcan.writer import render

# A memory file larger than this is refused unread (the limit in MiB can be set in
# $CASTOR_ROBOT_MEMORY_MAX_MB): 200,000 entries take about 80 MiB.
MAX_FILE_ENV_VAR = 'CASTOR_ROBOT_MEMORY_MAX_MB'
DEFAULT_MAX_FILE_MB = 128
# Deepest nesting of collections a front matter may have (ours needs 6 plus unknown keys).
# What one save may write to the quarantine: per item, and for all items together. An item
# over the limit is recorded by its reason, line and an excerpt, and the whole file it came
# from is kept beside it (``<file>.quarantined-<time>``), so nothing is lost.
QUARANTINE_ITEM_BYTES = 64 * 1024
QUARANTINE_RUN_BYTES = 1024 * 1024


def max_file_bytes() -> int:
    """Return the size limit of a memory file: ``$CASTOR_ROBOT_MEMORY_MAX_MB`` MiB, else 128 MiB."""
    text = os.environ.get(MAX_FILE_ENV_VAR, '').strip()
    if not text:
        return DEFAULT_MAX_FILE_MB * 2 ** 20
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = float('nan')
    if not 0 < megabytes < 2 ** 40:
        raise MemoryFileError(f'${MAX_FILE_ENV_VAR} must be a positive number of MiB, got '
                              f'{text!r}; unset it for the default {DEFAULT_MAX_FILE_MB} MiB')
    return int(megabytes * 2 ** 20)


def size_text(count: int) -> str:
    """Return a size for people: ``12.3 MiB`` from 1 MiB up, else ``1,234 bytes``."""
    return f'{count / 2 ** 20:.1f} MiB' if count >= 2 ** 20 else f'{count:,} bytes'


def new_document(rrn: str, now: dt.datetime) -> MemoryDocument:
    """Return an empty 1.0 document for ``rrn`` with a short explanatory body."""
    schema.DocumentHeader(schema_version=SCHEMA_VERSION, rrn=rrn, last_updated=now)
    body = (b'\n# Robot memory\n\nOperational memory kept by robot_memory (RCAN Robot Memory '
            b'Schema 1.0).\nThe front matter above is rewritten after each dream; text below '
            b'it is yours and is kept as it is.\n')
    return MemoryDocument(rrn=rrn, last_updated=now, body=body)


def _kind(mode: int) -> str:
    return ('a directory' if stat.S_ISDIR(mode) else 'a FIFO' if stat.S_ISFIFO(mode)
            else 'a socket' if stat.S_ISSOCK(mode) else 'a device')


class MemoryFile:
    """robot-memory.md on disk: lock-free reads, locked read-modify-write updates."""

    def __init__(self, path=None, lock_timeout_s: float = 10.0,
                 max_bytes: Optional[int] = None):
        self.path = resolve_path(path)
        self.lock_timeout_s = lock_timeout_s
        self.max_bytes = max_bytes if max_bytes is not None else max_file_bytes()
        # The target resolved when the lock was taken: everything under one lock (a file
        # set aside, then the new one written) goes to the same file.
        self._locked_target: Optional[pathlib.Path] = None

    def target(self) -> pathlib.Path:
        """Return the file writes replace: the end of ``path``'s links (see link_target)."""
        locked = self._locked_target
        return locked if locked is not None else link_target(self.path)

    def side_path(self, suffix: str) -> pathlib.Path:
        """Return a side file (``.archive.jsonl``, ``.lock``...) beside the target of ``path``."""
        return side_file(self.target(), suffix)

    @property
    def lock_path(self) -> pathlib.Path:
        """Return the writers' lock file, beside the target so every link shares it."""
        return self.side_path('.lock')

    def exists(self) -> bool:
        """Return whether the memory file exists; a link to nothing raises MemoryFileError."""
        return self.target().exists()

    def read_bytes(self) -> bytes:
        """Return the file's bytes; a missing file is a MemoryFileError with advice."""
        try:
            # O_NONBLOCK: a FIFO in the file's place is refused here, not waited on for ever
            # while a writer holds the lock (no effect on a regular file)
            with open(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK), 'rb') as handle:
                found = os.fstat(handle.fileno())
                if not stat.S_ISREG(found.st_mode):
                    raise MemoryFileError(
                        f'not a regular file ({_kind(found.st_mode)}), so it was not read and is '
                        'left as it is; give the path of the memory file, or move this aside',
                        self.path)
                size = found.st_size
                data = b''
                if size <= self.max_bytes:
                    # As large as the file is: read(max_bytes + 1) would allocate the
                    # whole limit (128 MiB) for every load. A file grown since fstat
                    # gets the rest read, up to the limit.
                    data = handle.read(size + 1)
                    if len(data) > size:
                        data += handle.read(self.max_bytes + 1 - len(data))
        except FileNotFoundError:
            self.target()  # a link to nothing says so
            raise MemoryFileError('no memory file here yet; it is created by the first dream '
                                  '(robot-memory dream) or by memory_node', self.path) from None
        except OSError as error:
            raise MemoryFileError(f'cannot read: {error.strerror}', self.path) from None
        if size > self.max_bytes or len(data) > self.max_bytes:
            size = max(size, len(data))
            raise MemoryFileError(
                f'the file is {size_text(size)}, above the {size_text(self.max_bytes)} limit for a '
                'memory file, so it was not read and is left as it is; a '
                'memory file this large is damaged or not one of ours: move it aside, or '
                f'raise the limit with ${MAX_FILE_ENV_VAR}', self.path)
        return data

    def load(self, now: dt.datetime, default_rrn: str = UNSET_RRN,
             read_only: bool = False) -> LoadResult:
        """Parse the file without locking or writing anything (``read_only``: see parse_bytes)."""
        data = self.read_bytes()
        try:
            return parse_bytes(data, now, default_rrn, read_only)
        except MemoryFileError as error:
            raise MemoryFileError(error.problem, self.path, error.line) from None

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the exclusive writer lock, ``<file>.lock`` beside the target, for the duration."""
        target = link_target(self.path)
        lock_path = side_file(target, '.lock')
        lock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise MemoryLockTimeout(
                            f'another writer held {lock_path.name} for more than '
                            f'{self.lock_timeout_s:g} s; retry, or find the stuck process',
                            self.path) from None
                    time.sleep(0.01)
            self._locked_target = target
            try:
                self._remove_stale_temp_files()
                yield
            finally:
                self._locked_target = None  # before the lock is released to the next writer
        finally:
            os.close(fd)

    def _remove_stale_temp_files(self) -> None:
        # Left by a writer killed between mkstemp and rename; safe under the lock.
        target = self.target()
        for stale in target.parent.glob(f'.{glob.escape(target.name)}.*.tmp'):
            with contextlib.suppress(OSError):
                stale.unlink()

    def set_aside(self, now: dt.datetime, reason: str = 'corrupt') -> pathlib.Path:
        """Rename the current file (a link's target) to ``<file>.<reason>-<time>``, beside it."""
        current = self.target()
        target = kept_name(current, reason, now)
        os.rename(current, target)
        fsync_directory(current.parent)
        return target

    def save(self, document: MemoryDocument, result: Optional[LoadResult] = None,
             now: Optional[dt.datetime] = None, rendered: Optional[bytes] = None) -> None:
        """
        Write ``document`` atomically (call while holding ``lock()``).

        Quarantined items and a migrated legacy original are made durable first, so
        nothing that was in the old file is lost when it is replaced. ``rendered``: the
        document's bytes, when the caller has just rendered it (10,000 entries: 0.1 s).
        """
        target = self.target()
        if result is not None:
            if result.quarantined:
                self._quarantine(result, now or document.last_updated)
            if result.legacy_original is not None:
                archive = kept_name(target, 'legacy', now or document.last_updated)
                write_atomic(archive, result.legacy_original)
                result.legacy_original = None
        write_atomic(target, render(document) if rendered is None else rendered)

    def _quarantine(self, result: LoadResult, now: dt.datetime) -> None:
        """
        Append the quarantined items to ``<file>.quarantine.jsonl``, bounded in size.

        An item larger than QUARANTINE_ITEM_BYTES, and every item once the run has written
        QUARANTINE_RUN_BYTES, is recorded with its reason, line and an excerpt; the whole
        file it came from is then kept as ``<file>.quarantined-<time>`` (no larger than
        the file-size limit), so the quarantine never grows by more than the caps.
        """
        when = format_iso(now)
        records, total, kept_in = [], 0, None
        for item in result.quarantined:
            record = {'quarantined_at': when, 'section': item.section, 'line': item.line,
                      'reason': item.reason, 'raw': item.raw}
            text = json.dumps(item.raw, ensure_ascii=False, default=str)
            size = len(text.encode('utf-8'))
            if size > QUARANTINE_ITEM_BYTES or total + size > QUARANTINE_RUN_BYTES:
                if kept_in is None:
                    kept_in = kept_name(self.target(), 'quarantined', now)
                    write_atomic(kept_in, result.source or b'')
                del record['raw']
                record.update(raw_bytes=size, raw_excerpt=text[:256], raw_kept_in=kept_in.name)
                size = 512
            total += size
            records.append(record)
        append_durably(self.side_path('.quarantine.jsonl'), records)
        result.quarantined = []

    @contextlib.contextmanager
    def update(self, now: dt.datetime, rrn: Optional[str] = None,
               on_corrupt: str = 'raise') -> Iterator[LoadResult]:
        """
        Lock, load (or create), yield the LoadResult, then save if anything changed.

        ``on_corrupt='set_aside'`` moves an unparseable file to ``<file>.corrupt-<time>``
        and starts from an empty document with that file's body and RRN where they can be
        read (``parse.salvage``); ``'raise'`` leaves it untouched and raises.
        ``last_updated`` is set to ``now`` only when the content changed.
        """
        with self.lock():
            original = self.read_bytes() if self.exists() else None
            try:
                # An empty file is unreadable (parse_bytes): set aside when asked, so a dream
                # restores its entries from the snapshot; otherwise a new memory (touch).
                if original is None or (on_corrupt != 'set_aside' and not original.strip()):
                    result = LoadResult(new_document(rrn or UNSET_RRN, now))
                else:
                    result = parse_bytes(original, now, rrn or UNSET_RRN)
            except MemoryFileError as error:
                if on_corrupt != 'set_aside' or original is None:
                    raise MemoryFileError(
                        f'{error.problem}. The file was left untouched; fix it by hand '
                        '(robot-memory validate shows every problem)', self.path,
                        error.line) from None
                target = self.set_aside(now)
                kept_rrn, body = salvage(original)
                result = LoadResult(new_document(kept_rrn or rrn or UNSET_RRN, now))
                if body:  # the person's text below the front matter stays where it was
                    result.document.body = body
                result.problems.append(Problem(
                    f'unreadable memory file set aside as {target.name}: {error.problem}'
                    f'{"; the text below the front matter was kept" if body else ""}',
                    error.line))
            yield result
            document = result.document
            rendered = render(document)
            needs_write = (original is None or rendered != original or result.quarantined
                           or result.legacy_original is not None)
            if needs_write:
                if document.last_updated != now:
                    document.last_updated = now
                    rendered = render(document)
                self.save(document, result, now, rendered)


def load_problems(result, memory_file) -> list:
    """
    Return what a load of the memory file found wrong, in the words a dream reports.

    Every writer of the file calls it, so an entry quarantined by another writer (a peer
    block expiring) is still reported by the next dream, not lost from the report.
    """
    problems = [problem.message for problem in result.problems]
    if result.quarantined:
        ids = [item.raw['id'] for item in result.quarantined
               if isinstance(item.raw, dict) and isinstance(item.raw.get('id'), str)]
        problems.append(
            f'quarantined {", ".join(ids[:5]) or "an item without an id"}'
            f'{" and more" if len(ids) > 5 else ""}: kept verbatim, with the reason, in '
            f'{memory_file.side_path(".quarantine.jsonl").name}; fix it there and '
            'paste it back into the memory file')
    return problems
