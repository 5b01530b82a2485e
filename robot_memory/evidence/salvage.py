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
What survives in a damaged evidence database set aside: the links of entries to evidence.

A damaged database is set aside whole (``robot-memory.db.corrupt-<time>``, its WAL beside
it) and a new one started; the next dream takes the entries of the memory file in again.
Each entry's link to its evidence (``signatures``: the signature, its recent episodes and
the text the dream last wrote from them) is read back here from the set-aside copy, as far
as the damage lets it be read, so the rebuilt database goes on counting from there: an
entry's text keeps stating its days and counts from its whole history, not a stale one.

The copy is never written: it and its WAL are copied to a temporary directory and read
there (SQLite writes beside a database it opens, even to read it).
"""

import pathlib
import shutil
import sqlite3
import tempfile

from robot_memory.common.fileio import side_file
from robot_memory.evidence.evidence_store import SIGNATURE_COLUMNS


def surviving_links(copy: pathlib.Path, entry_ids: set) -> dict:
    """
    Return the signature rows of ``copy`` linked to one of ``entry_ids``, by signature.

    Rows are dicts of ``SIGNATURE_COLUMNS`` (a column the copy lacks is its default);
    reading stops at the first damaged page, keeping what was read. Nothing readable: {}.
    """
    found: dict = {}
    with tempfile.TemporaryDirectory(prefix='robot-memory-salvage-') as scratch:
        target = pathlib.Path(scratch) / 'copy.db'
        try:
            shutil.copyfile(copy, target)
            wal = side_file(copy, '-wal')
            if wal.exists():
                shutil.copyfile(wal, side_file(target, '-wal'))
        except OSError:
            return found
        conn = sqlite3.connect(target)
        try:
            columns = [row[1] for row in conn.execute('PRAGMA table_info(signatures)')]
            wanted = [column for column in SIGNATURE_COLUMNS if column in columns]
            if 'signature' not in wanted or 'entry_id' not in wanted:
                return found
            for row in conn.execute(f'SELECT {", ".join(wanted)} FROM signatures'):
                data = dict(zip(wanted, row))
                if data['entry_id'] in entry_ids:
                    found[data['signature']] = _complete(data)
        except sqlite3.DatabaseError:
            pass  # the damage: keep what was read before it
        finally:
            conn.close()
    return found


def _complete(data: dict) -> dict:
    """Return a row with every column of SIGNATURE_COLUMNS, in their order."""
    defaults = {'rule': '', 'bad_total': 0, 'held': 0, 'payload': '', 'history': ''}
    return {column: data.get(column, defaults.get(column)) for column in SIGNATURE_COLUMNS}
