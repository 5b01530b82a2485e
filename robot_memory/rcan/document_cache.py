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
The parsed robot-memory.md, re-read only when the file on disk changed.

Services that answer many times a second (``~/get_context``) must not parse the file
each time, yet must see a dream's result, a CLI prune or a person's edit at once. One
``stat`` per call decides: (inode, size, mtime) unchanged means the parsed document is
still the file's content, because every writer replaces the file by rename.

A file that cannot be read, or whose folder cannot be looked into, is reported
(``error``) and the last good document is kept for answering; so is a file deleted after it
was read (``deleted``: the next dream writes it again from the evidence database). Nothing
here ever writes, and no call raises for what the file system says. The document is loaded
``read_only``: own entries as compact ``EntryRecord``s, no copy of the file's lines, and
``render`` refuses it.

Next to the document sits its :class:`~robot_memory.rcan.context.ContextIndex` (one per decay
rate), built on the first context call after a load and dropped with the document, so a
``~/get_context`` costs O(log n + shown) instead of decaying and sorting every entry.
"""

import datetime as dt
import threading
from typing import Optional
from typing import TYPE_CHECKING

from robot_memory.errors import MemoryFileError
from robot_memory.rcan import context
from robot_memory.rcan.memory_file import MemoryFile
from robot_memory.rcan.memory_file import new_document

if TYPE_CHECKING:  # pydantic, imported only where a config is validated
    from robot_memory.rcan.lifecycle_config import LifecycleConfig
    from robot_memory.rcan.schema import MemoryDocument


class DocumentCache:
    """Thread-safe cached view of one memory file."""

    def __init__(self, memory_file: MemoryFile, rrn: str):
        self.memory_file = memory_file
        self.rrn = rrn
        self._lock = threading.Lock()
        self._key: Optional[tuple] = None
        self._document: Optional['MemoryDocument'] = None
        self._indexes: dict = {}
        self.error: Optional[str] = None
        self.problems: list = []
        self.deleted = False  # the file was read, then went away
        self._read = False  # a document was ever loaded from the file

    def _stat_key(self):
        """Return (inode, size, mtime) of the file, None when there is none, or the OSError."""
        try:
            stat = self.memory_file.path.stat()
        except FileNotFoundError:
            return None
        except OSError as error:  # a folder that cannot be searched, a file for a folder...
            return error
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _keep_last(self, now: dt.datetime, error: str):
        """Report ``error``; return the last good document (an empty one before any)."""
        self.error = error
        if self._document is None:
            self._set(new_document(self.rrn, now))
        return self._document

    def document(self, now: dt.datetime):
        """Return the current document; an empty one when the file does not exist yet."""
        key = self._stat_key()
        with self._lock:
            if isinstance(key, OSError):
                return self._keep_last(now, str(MemoryFileError(
                    f'cannot look at the file: {key.strerror or key}; the last copy read is '
                    'served, and the file is read again as soon as it can be (check the '
                    "permissions of its folder and that the folder's disk is mounted)",
                    self.memory_file.path)))
            if self._document is not None and key == self._key:
                return self._document
            if key is None:
                if self._read and self._document is not None:
                    self.deleted = True
                    return self._keep_last(now, str(MemoryFileError(
                        'the file was deleted after it was read; the last copy read '
                        f'({len(self._document.entries)} entries) is served, and the next '
                        'dream writes it again from the evidence database',
                        self.memory_file.path)))
                self._set(new_document(self.rrn, now))
                self._key = None
                self.error = None
                return self._document
            try:
                result = self.memory_file.load(now, self.rrn, read_only=True)
            except MemoryFileError as error:
                return self._keep_last(now, str(error))
            self._set(result.document)
            self._key = key
            self._read = True
            self.deleted = False
            self.error = None
            self.problems = [problem.message for problem in result.problems]
            return self._document

    def _set(self, document: 'MemoryDocument') -> None:
        self._document = document
        self._indexes = {}

    def context_index(self, document: 'MemoryDocument', config: 'LifecycleConfig'):
        """
        Return the context index of ``document`` at ``config``'s decay rate, built once.

        None when ``document`` is no longer the cached one (the file changed in between):
        the caller then builds its block by the scan, which gives the same result.
        """
        with self._lock:
            if document is not self._document:
                return None
            index = self._indexes.get(config.decay_per_day)
            if index is None:
                index = context.ContextIndex(document, config)
                self._indexes[config.decay_per_day] = index
            return index

    def build_context(self, now: dt.datetime, config: 'LifecycleConfig',
                      token_budget: Optional[int] = None, include_peers: bool = True,
                      min_confidence: Optional[float] = None,
                      relevant=()) -> context.ContextBlock:
        """
        Return the context block of the current file at ``now``, through the cached index.

        ``relevant``: ids of entries chosen for the brain's query (see ``build_context``).
        """
        document = self.document(now)
        return context.build_context(document, now, config, token_budget, include_peers,
                                     min_confidence, index=self.context_index(document, config),
                                     relevant=relevant)

    def invalidate(self) -> None:
        """Forget the parsed document; the next call re-reads the file."""
        with self._lock:
            self._key = ('invalid',)
