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
``robot-memory blackbox list|export``: the fault recordings memory_node's black box wrote.

Both read the database without changing it (opened read-only). ``export`` copies one
recording out and checks the copy's sha256 against the one recorded when it was written.
"""

import contextlib
import json
import os
import pathlib
import shutil
import sqlite3

from robot_memory.cli.command_options import db_path
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch


def add_commands(subparsers, common_parents) -> None:
    """Add ``blackbox`` with its ``list`` and ``export`` to ``subparsers``."""
    command = subparsers.add_parser(
        'blackbox', help="list or export the black box's fault recordings (MCAP, see "
                         'docs/blackbox.md)')
    actions = command.add_subparsers(dest='blackbox_action', required=True, metavar='ACTION')
    listing = actions.add_parser(
        'list', parents=common_parents,
        help='the recordings, oldest first: time, signature, size, topics (and GONE for one '
             'deleted by hand)')
    listing.add_argument('--json', action='store_true', help='print the recordings as JSON')
    export = actions.add_parser('export', parents=common_parents,
                                help='copy a recording out, verified by its sha256')
    export.add_argument('recording', type=int, metavar='ID', help='recording id (from list)')
    export.add_argument('destination', help='file or existing folder to copy it to')


def _recordings(args, memory) -> list:
    # lazy: the black box, 28 ms and 6 MB of robot-memory --help
    from robot_memory.evidence import blackbox
    path = db_path(args, memory)
    if not path.exists():
        raise ValueError(f'no database at {path}, so no recordings; check --file or --db')
    conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'blackbox_recordings'") \
                .fetchone() is None:
            return []
        return blackbox.recordings(conn)
    finally:
        conn.close()


def _row(recording) -> dict:
    return {'id': recording.id, 'time': format_iso(from_epoch(recording.started)),
            'signature': recording.signature, 'entry_id': recording.entry_id,
            'bytes': recording.bytes, 'topics': list(recording.topics),
            'path': recording.path, 'sha256': recording.sha256,
            'gone': not recording.exists(), 'freeze_frame': json.loads(recording.freeze_frame)}


def cmd_list(args, memory) -> int:
    """Print the recordings; one deleted by hand is listed as GONE."""
    rows = [_row(recording) for recording in _recordings(args, memory)]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print('no black-box recording (memory_node writes them with blackbox_topics set)')
    for row in rows:
        state = '  GONE: deleted by hand' if row['gone'] else ''
        print(f'{row["id"]:>4}  {row["time"]}  {row["signature"]}  '
              f'{row["bytes"] / 2**20:.1f} MB  {",".join(row["topics"])}{state}')
    return 0


def cmd_export(args, memory) -> int:
    """Copy recording ``ID`` to the destination; a copy whose sha256 differs is removed."""
    # lazy: the black box, 28 ms and 6 MB of robot-memory --help
    from robot_memory.evidence import blackbox
    found = [item for item in _recordings(args, memory) if item.id == args.recording]
    if not found:
        raise ValueError(f'no recording {args.recording}; robot-memory blackbox list shows '
                         'their ids')
    recording = found[0]
    source = pathlib.Path(recording.path)
    if not source.is_file():
        raise ValueError(f'recording {recording.id} is gone from {source} (deleted by hand?); '
                         'nothing was exported')
    target = pathlib.Path(args.destination).expanduser()
    if target.is_dir():
        target = target / source.name
    if target.exists():
        raise ValueError(f'{target} exists; name a new file or a folder')
    shutil.copyfile(source, target)
    digest = blackbox.file_sha256(target)
    if digest != recording.sha256:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise ValueError(f'recording {recording.id} at {source} has sha256 {digest}, not the '
                         f'{recording.sha256} it was written with: it changed since; the copy '
                         'was removed')
    print(f'exported recording {recording.id} to {target} (sha256 {digest} verified)')
    return 0


def history_records(conn: sqlite3.Connection, entry_id: str) -> list:
    """Return (time, record) of each recording of an entry's faults, for ``history``."""
    from robot_memory.evidence import blackbox  # lazy: 28 ms and 6 MB of --help
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'blackbox_recordings'") \
            .fetchone() is None:
        return []
    records = []
    for recording in blackbox.recordings(conn, entry_id):
        row = _row(recording)
        gone = ' GONE: deleted by hand' if row['gone'] else ''
        records.append((from_epoch(recording.started), dict(
            row, at=row['time'], action='recorded', actor='black box', log='black box',
            reason=f'recording {recording.id}: {recording.path} '
                   f'({recording.bytes / 2**20:.1f} MB, {", ".join(recording.topics)}){gone}'
                   f'; freeze frame: {json.dumps(row["freeze_frame"], sort_keys=True)}')))
    return records


def cmd_blackbox(args, memory) -> int:
    """Run ``blackbox list`` or ``blackbox export``."""
    return (cmd_list if args.blackbox_action == 'list' else cmd_export)(args, memory)


HANDLERS = {'blackbox': cmd_blackbox}
