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
``robot-memory replay``: the command around ``robot_memory.bags.replay``.

Options, the progress display (a bar on a terminal, plain lines when piped), the closing
summary or ``--json``, and ``--dry-run``: the replay runs into copies of the memory file
and the evidence database in a temporary directory, and only its summary is kept.
"""

import datetime as dt
import json
import pathlib
import shutil
import signal
import sqlite3
import sys
import tempfile
import time

from robot_memory.cli import command_options
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import UTC
from robot_memory.errors import MissingExtra

PLAIN_EVERY_S = 5.0  # when piped, one progress line at most this often


def add_commands(subparsers, parents) -> None:
    """Add ``replay`` to ``subparsers``, with the shared options of ``parents``."""
    replay = subparsers.add_parser(
        'replay', parents=parents,
        help='learn from recordings: replay rosbag2 (MCAP, sqlite3) and ROS 1 bags into the '
             'evidence database, dreaming at every night they cross (needs robot_memory[bags])')
    replay.add_argument('paths', nargs='+', metavar='PATH',
                        help='a rosbag2 directory, an .mcap or .db3 file, a ROS 1 .bag, or a '
                             'directory of them')
    replay.add_argument('--dry-run', action='store_true',
                        help='replay into temporary copies and print what would be learned; '
                             'nothing is written')
    replay.add_argument('--json', action='store_true', help='print the summary as JSON')
    replay.add_argument('--remap', action='append', metavar='TOPIC:=RECORDED',
                        help='read a topic under another recorded name, e.g. '
                             '/diagnostics:=/robot1/diagnostics (repeatable)')
    replay.add_argument('--msg-dir', action='append', metavar='DIR',
                        help='definitions of custom message types, as pkg/msg/Type.msg files '
                             'under DIR (repeatable)')
    replay.add_argument('--accept-other-robot', action='store_true',
                        help='take recordings that name another robot (RRN or hostname)')
    replay.add_argument('--no-dream', action='store_true',
                        help='only add the evidence; run no nightly dreams')


def cmd_replay(args, memory) -> int:
    """Replay recordings into the memory (the memory file's MemoryFile)."""
    return run(args, memory, command_options.rules, command_options.db_path)


def remaps(values) -> dict:
    """Return {node topic: recorded topic} of ``--remap FROM:=TO`` values (ValueError)."""
    mapping = {}
    for value in values or ():
        source, separator, target = value.partition(':=')
        if not separator or not source.startswith('/') or not target.startswith('/'):
            raise ValueError(f'--remap {value!r}: give NODE_TOPIC:=RECORDED_TOPIC, e.g. '
                             '/diagnostics:=/robot1/diagnostics')
        mapping[source] = target
    return mapping


class Display:
    """Progress on standard error: a bar on a terminal, a plain line now and then if piped."""

    def __init__(self, stream=None, clock=time.monotonic):
        # The command's stderr shows control characters as visible escapes (the CLI's
        # NeutralisedStream): the bar's own carriage return and erase go to the stream under
        # it. Its text is numbers and times, nothing a recording could smuggle in.
        self.stream = stream or getattr(sys.stderr, 'stream', None) or sys.stderr
        self.terminal = bool(getattr(self.stream, 'isatty', lambda: False)())
        self.clock = clock
        self.last_plain = None

    def __call__(self, state: dict) -> None:
        """Show one progress report."""
        total = max(state['total'], 1)
        fraction = min(state['messages'] / total, 1.0)
        elapsed = state['elapsed']
        if state.get('final'):
            timing = f'took {_duration(elapsed)}'
        elif fraction > 0 and elapsed > 0:
            timing = f'ETA {_duration(elapsed * (1 - fraction) / fraction + 0.5)}'
        else:
            timing = 'ETA unknown yet'
        at = format_iso(state['at']) if state.get('at') else '-'
        text = (f'{state["messages"]:,}/{state["total"]:,} messages, '
                f'{state["bytes"] / 1e6:.1f} MB, recorded {at}, {timing}')
        if self.terminal:
            bar = '#' * int(fraction * 30)
            self.stream.write(f'\r[{bar:<30}] {fraction:4.0%} {text}\x1b[K')
            if state.get('final'):
                self.stream.write('\n')
            self.stream.flush()
            return
        now = self.clock()
        if state.get('final') or self.last_plain is None or now - self.last_plain >= PLAIN_EVERY_S:
            self.last_plain = now
            self.stream.write(f'replay: {fraction:.0%} {text}\n')


class _Stop:
    """
    Ctrl-C during a replay: noted, and the replay stopped between two messages.

    Called as the replay's ``progress``: once Ctrl-C was pressed it raises the replay's
    ``Interrupted``, so what was taken before is written with the record of it (a later
    replay resumes after it), and no KeyboardInterrupt traceback is printed.
    """

    def __init__(self, display, interrupted):
        self.display = display
        self.interrupted = interrupted
        self.asked = False

    def __call__(self, state: dict) -> None:
        if self.asked and not state.get('final'):
            raise self.interrupted()
        if self.display is not None:
            self.display(state)

    def ask(self, signum, frame) -> None:
        """Note a Ctrl-C (SIGINT handler)."""
        self.asked = True


def would_learn(summary, memory) -> list:
    """Return the entries a replay's dreams created or reinforced, as the memory holds them."""
    created = {entry for report in summary.dreams for entry in report.created}
    reinforced = {entry for report in summary.dreams for entry in report.reinforced} - created
    if not (created or reinforced) or not memory.exists():
        return []
    from robot_memory.rcan import lifecycle  # lazy: 9 ms and 1 MB of --help
    now = summary.dreams[-1].at
    found = []
    for entry in memory.load(now, read_only=True).document.entries:
        if entry.id in created or entry.id in reinforced:
            confidence = lifecycle.effective_confidence(entry, now)
            found.append({'id': entry.id, 'text': entry.text,
                          'band': lifecycle.band(confidence), 'confidence': round(confidence, 3),
                          'change': 'new' if entry.id in created else 'reinforced'})
    return found


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


def _copy_for_dry_run(memory_path: pathlib.Path, db_path: pathlib.Path, into: pathlib.Path):
    memory_copy = into / memory_path.name
    db_copy = into / db_path.name
    if memory_path.exists():
        shutil.copyfile(memory_path, memory_copy)
    if db_path.exists():
        source = sqlite3.connect(f'file:{db_path}?mode=ro', uri=True)
        target = sqlite3.connect(db_copy)
        try:
            source.backup(target)  # a consistent copy, even while memory_node writes
        finally:
            source.close()
            target.close()
    return memory_copy, db_copy


def run(args, memory, rules_of, db_path_of) -> int:
    """Run ``robot-memory replay``; print the summary; 0 when everything was read."""
    try:
        # lazy: rosbags and the dream, 350 ms and 26 MB of --help
        from robot_memory.bags import replay
    except ImportError as error:
        raise MissingExtra('replaying recordings', 'bags', error.name or str(error)) from None
    # lazy: the store and memory file, 110 ms and 12 MB of --help
    from robot_memory.evidence.evidence_store import EvidenceStore
    from robot_memory.rcan.memory_file import MemoryFile
    options = replay.ReplayOptions(remap=remaps(args.remap), msg_dirs=tuple(args.msg_dir or ()),
                                   accept_robot=args.accept_other_robot,
                                   now=dt.datetime.now(UTC))
    if args.config:
        settings = command_options.settings(args)
        options.telemetry = list(settings.node.telemetry())
        options.nightly = settings.node.nightly_time()
        options.dream_config = settings.dream
        options.proposals = settings.proposals
        options.rrn = settings.node.rrn
    if args.no_dream:
        options.nightly = None
    options.rules = rules_of(args)
    if memory.exists() and options.rrn in (None, 'RRN-UNSET'):
        options.rrn = memory.load(dt.datetime.now(UTC), read_only=True).document.rrn
    db_path = db_path_of(args, memory)
    stop = _Stop(None if args.json else Display(), replay.Interrupted)
    learned: list = []
    with tempfile.TemporaryDirectory(prefix='robot-memory-replay-') as scratch:
        if args.dry_run:
            memory_path, db_path = _copy_for_dry_run(memory.path, db_path, pathlib.Path(scratch))
            memory = MemoryFile(memory_path)
        with EvidenceStore(db_path, options.rules, batch_size=10**9,
                           on_corrupt='set_aside') as store:
            for problem in store.take_problems():
                print(f'warning: {problem}', file=sys.stderr)
            summary = _replay(replay, args.paths, store, memory, options, stop)
        if args.dry_run:
            learned = would_learn(summary, memory)
    _print(args, summary, learned)
    if summary.interrupted:
        print(f'interrupted: the {sum(summary.taken.values()):,} messages taken before Ctrl-C '
              f'are kept ({summary.rows:,} pieces of evidence'
              f'{", recorded up to " + format_iso(summary.last) if summary.last else ""}); '
              'run the same command again to resume where it stopped', file=sys.stderr)
        return 130
    damaged = any('cut short' in note or 'damage' in note for note in summary.notes)
    return 1 if summary.refused or damaged else 0


def _replay(replay, paths, store, memory, options, stop):
    """Run the replay with Ctrl-C turned into a stop between two messages (see _Stop)."""
    try:
        before = signal.signal(signal.SIGINT, stop.ask)
    except ValueError:  # not the main thread: Ctrl-C is not this replay's to take
        return replay.replay(paths, store, memory, options, stop)
    try:
        return replay.replay(paths, store, memory, options, stop)
    finally:
        signal.signal(signal.SIGINT, before)


def _print(args, summary, learned: list) -> None:
    """Print the closing summary (or --json), with what a dry run would have learned."""
    if args.json:
        data = summary.to_dict()
        data['dry_run'] = bool(args.dry_run)
        if args.dry_run:  # its summaries were written in copies, deleted since
            data['would_learn'] = learned
            for report in data['dreams']:
                report['summary_file'] = None
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for line in summary.lines():
        print(line)
    if args.dry_run:
        from robot_memory.rcan.context import format_line  # lazy: 47 ms and 5 MB of --help
        if learned:
            print('would learn:')
        for entry in learned:
            print(f'  {format_line(entry["text"], entry["confidence"])} ({entry["change"]})')
        print('(dry run: nothing was written)')


HANDLERS = {'replay': cmd_replay}
