"""The parsed robot-memory.md, re-read only when the file on disk changed.

Services that answer many times a second (``~/get_context``) must not parse the file
each time, yet must see a dream's result, a CLI prune or a person's edit at once. One
``stat`` per call decides: (inode, size, mtime) unchanged means the parsed document is
still the file's content, because every writer replaces the file by rename.

A file that cannot be read is reported (``error``) and the last good document is kept
for answering; nothing here ever writes.
"""

import datetime as dt
import threading
from typing import Optional

from robot_memory.errors import MemoryFileError
from robot_memory.memory_file import MemoryFile
from robot_memory.memory_file import new_document


class DocumentCache:
    """Thread-safe cached view of one memory file."""

    def __init__(self, memory_file: MemoryFile, rrn: str):
        self.memory_file = memory_file
        self.rrn = rrn
        self._lock = threading.Lock()
        self._key = None
        self._document = None
        self.error: Optional[str] = None
        self.problems: list = []

    def _stat_key(self):
        try:
            stat = self.memory_file.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def document(self, now: dt.datetime):
        """The current document (an empty one when the file does not exist yet)."""
        key = self._stat_key()
        with self._lock:
            if self._document is not None and key == self._key:
                return self._document
            if key is None:
                self._document = new_document(self.rrn, now)
                self._key = None
                self.error = None
                return self._document
            try:
                result = self.memory_file.load(now, self.rrn)
            except MemoryFileError as error:
                self.error = str(error)
                if self._document is None:
                    self._document = new_document(self.rrn, now)
                return self._document
            self._document = result.document
            self._key = key
            self.error = None
            self.problems = [problem.message for problem in result.problems]
            return self._document

    def invalidate(self) -> None:
        """Forget the parsed document; the next call re-reads the file."""
        with self._lock:
            self._key = ('invalid',)
