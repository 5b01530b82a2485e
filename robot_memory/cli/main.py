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
The ``robot-memory`` command line: a thin layer over the core library.

The memory file comes from ``--file``, else as OpenCastor finds it
(``robot_memory.locations.default_memory_file``). Exit codes: 0 success, 1 a problem with the
memory (reported one per line), 2 a usage error.
"""

import argparse
import collections
import datetime as dt
import json
import pathlib
import sys
from typing import Callable
from typing import Optional
from typing import TYPE_CHECKING
from typing import Union

from robot_memory.cli import blackbox_commands
from robot_memory.cli import command_options
from robot_memory.cli import fleet_commands
from robot_memory.cli import proposal_commands
from robot_memory.cli import refusal
from robot_memory.cli import replay_command
from robot_memory.cli import serve_command
from robot_memory.cli import substrate_commands
from robot_memory.common.timeutil import format_iso
from robot_memory.common.timeutil import from_epoch
from robot_memory.common.timeutil import parse_iso
from robot_memory.common.timeutil import parse_iso_argument
from robot_memory.common.timeutil import UTC
from robot_memory.dependencies import skip_pydantic_plugins
from robot_memory.errors import MemoryFileError
from robot_memory.errors import RobotMemoryError
from robot_memory.locations import default_db_path
from robot_memory.locations import link_target

if TYPE_CHECKING:
    from robot_memory.evidence.evidence_store import EvidenceStore
    from robot_memory.evidence.rules import Rules
    from robot_memory.rcan import lifecycle
    from robot_memory.rcan.memory_file import MemoryFile

# Each command imports what it uses when it runs: `robot-memory --help` and `show` must not
# pay for the evidence database, the rules or autodream (bench/bench_cli.py,
# test/ros/test_cli_imports.py).


def _undo_time(text: str) -> dt.datetime:
    try:
        return parse_iso(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'{text!r} is not an ISO 8601 time; give e.g. 2026-05-01T03:00:00Z (a time '
            'without an offset is taken as UTC)') from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
    if value < 1:
        raise argparse.ArgumentTypeError('must be at least 1')
    return value


def _unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError('must be between 0 and 1')
    return value


def _parents() -> tuple:
    """Return the parsers of the options commands share: file, time, database, rules."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--file', help='memory file (default: $CASTOR_ROBOT_MEMORY_FILE; else '
                                       '~/.opencastor/robot-memory.md ($CASTOR_OPENCASTOR_DIR '
                                       'for ~/.opencastor) if it exists; else '
                                       '$ROBOT_HOME/robot-memory.md; else the former)')
    common.add_argument('--config', help="memory_node's ROS 2 parameters file (e.g. "
                                         'config/robot_memory.yaml), validated as the node '
                                         'validates it')
    at = argparse.ArgumentParser(add_help=False)
    at.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                    help='evaluate decay at this moment instead of now (e.g. 2026-05-01T03:00:00Z)')

    database = argparse.ArgumentParser(add_help=False)
    database.add_argument('--db', help='database of the evidence and the typed memory '
                                       '(default: beside the memory file, named after it: '
                                       'robot-memory.db for robot-memory.md)')
    rules = argparse.ArgumentParser(add_help=False)
    rules.add_argument('--rules', help='observation rules file (default: built-in rules; see '
                                       'config/observation_rules.yaml)')

    return common, at, database, rules


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser; every command and option carries help text."""
    common, at, database, rules = _parents()
    parser = argparse.ArgumentParser(
        prog='robot-memory',
        description='Operational memory for ROS 2 robots (RCAN Robot Memory Schema 1.0).')
    commands = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')
    _add_file_commands(commands, common, at, database)
    _add_evidence_commands(commands, common, database, rules)
    _add_undo(commands, [common, database])
    replay_command.add_commands(commands, [common, database, rules])
    for module in (substrate_commands, proposal_commands, serve_command, blackbox_commands,
                   fleet_commands):
        module.add_commands(commands, [common, database])
    return parser


def _add_file_commands(commands, common, at, database) -> None:
    """Add show, validate, stats, prune and export: the commands of the memory file."""
    show = commands.add_parser('show', parents=[common, at],
                               help='print the context block the robot brain receives')
    show.add_argument('--budget', type=_positive_int, metavar='TOKENS',
                      help='token budget of the block (default: the configured token_budget)')
    show.add_argument('--no-peers', action='store_true', help="leave out peer robots' entries")
    show.add_argument('--min-confidence', type=_unit_float, metavar='C',
                      help='raise the injection threshold for this call')
    show.add_argument('--query', metavar='TEXT', default='',
                      help='the task at hand (e.g. "dock and charge"): entries relevant to it '
                           'lead the block, never pushing a red one out')

    commands.add_parser('validate', parents=[common],
                        help='check the memory file (and --config); exit 0 when valid, 1 '
                             'with one line a problem')

    stats = commands.add_parser('stats', parents=[common, at],
                                help='counts by type and band, peers, file facts')
    stats.add_argument('--json', action='store_true', help='print the statistics as JSON')

    prune = commands.add_parser('prune', parents=[common, at, database],
                                help='remove entries below prune_min, archiving them first')
    prune.add_argument('--dry-run', action='store_true', help='only say what would be pruned')
    prune.add_argument('--verbose', action='store_true',
                       help='also list each pruned entry (default: a one-line summary)')

    export = commands.add_parser('export', parents=[common, at],
                                 help='write the memory as JSON to standard output')
    export.add_argument('--format', choices=['json'], default='json', help='output format')


def _add_evidence_commands(commands, common, database, rules) -> None:
    """Add ingest, dream and history: the commands of the evidence database."""
    ingest = commands.add_parser('ingest', parents=[common, database, rules],
                                 help='add observations from a JSON-lines file to the evidence '
                                      'database')
    ingest.add_argument('jsonl', metavar='FILE.jsonl',
                        help='one observation a line ({"stamp": ..., "source": ...}); - reads '
                             'standard input')
    ingest.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                        help='the clock taking the evidence in, instead of now (a memory on a '
                             'sped-up clock): a line stamped more than an hour after it is '
                             'refused as from the future')

    dream = commands.add_parser('dream', parents=[common, database, rules],
                                help='consolidate new evidence into the memory file (autodream) '
                                     'and print what it did, for people')
    dream.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                       help='dream as of this moment instead of now (e.g. 2026-05-01T03:00:00Z)')
    dream.add_argument('--json', action='store_true', help='print the dream report as JSON')
    dream.add_argument('--confirm-leap', action='store_true',
                       help='accept a dream time more than dream.max_leap_days after both the '
                            'last dream and the newest evidence (otherwise refused: a clock '
                            'that jumped ahead); kept in the dream log')

    history = commands.add_parser('history', parents=[common, database],
                                  help='print the audit trail of one entry, typed record or '
                                       'proposal, oldest first')
    history.add_argument('entry_id', metavar='ID',
                         help='entry id (mem-a3f9c1d2), typed record id, proposal:7 or '
                              'substrate:key')
    history.add_argument('--json', action='store_true', help='print the records as JSON lines')


def _add_undo(commands, parents) -> None:
    """Add undo: a dream's or an undo's changes taken back, or a point in time restored."""
    undo = commands.add_parser(
        'undo', parents=parents,
        help="take back one dream's or one undo's own changes, or restore the memory file "
             'and the typed records as they were at a time; audited, itself undoable')
    point = undo.add_mutually_exclusive_group(required=True)
    point.add_argument('--dream', type=_positive_int, metavar='ID',
                       help="take back this dream's own changes; entries changed since are kept "
                            'unless --force (ids: robot-memory undo --list)')
    point.add_argument('--to', type=_undo_time, metavar='ISO-TIME',
                       help='point in time: restore the state at this time, taking back every '
                            'later change (e.g. 2026-05-01T03:00:00Z)')
    point.add_argument('--undo', type=_positive_int, metavar='ID', dest='undo_id',
                       help='undo this undo: re-apply exactly what it took back; what changed '
                            'since is kept unless --force')
    point.add_argument('--list', action='store_true',
                       help='list the dreams and undos with their ids, oldest first')
    undo.add_argument('--reason', default='',
                      help='why (required unless --dry-run or --list); kept in the audit log')
    undo.add_argument('--force', action='store_true',
                      help='with --dream or --undo: take back entries and records changed '
                           'since too')
    undo.add_argument('--dry-run', action='store_true',
                      help='only show what would change; nothing is written')
    undo.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                      help="the undo's own time instead of now (e.g. 2026-05-01T03:00:00Z)")
    undo.add_argument('--json', action='store_true', help='print the undo report as JSON')


def _now(args) -> dt.datetime:
    return getattr(args, 'at', None) or dt.datetime.now(UTC)


def _config(args) -> 'lifecycle.AnyConfig':
    from robot_memory.rcan import lifecycle  # lazy: 9 ms and 1 MB of robot-memory --help
    if not args.config:
        return lifecycle.DEFAULTS  # the defaults, without pydantic
    return command_options.settings(args).lifecycle


def _warn(memory: 'MemoryFile', result) -> None:
    for problem in result.problems:
        print(f'warning: {problem.format(memory.path)}', file=sys.stderr)


def cmd_show(args, memory: 'MemoryFile') -> int:
    """Print the context block."""
    from robot_memory.rcan import context  # lazy: the context block, 47 ms and 5 MB of --help
    config = _config(args)
    result = memory.load(_now(args), read_only=True)  # read to answer, never written
    _warn(memory, result)
    relevant = []
    if args.query.strip():
        # lazy: relevance and embedder, 30 ms and 5 MB of --help
        from robot_memory.substrate import context_relevance
        from robot_memory.substrate.embedding import default_embedder
        threshold = max(config.inject_min, args.min_confidence or 0.0)
        relevant = context_relevance.relevant_ids(result.document, args.query, _now(args),
                                                  config, threshold, default_embedder())
    block = context.build_context(result.document, _now(args), config, args.budget,
                                  not args.no_peers, args.min_confidence, relevant=relevant)
    if block.text:
        print(block.text)
    # What the brain is not told, and why: on stderr, so stdout stays the block itself.
    print(f'({context.summary(block)})', file=sys.stderr)
    return 0


def cmd_validate(args, memory: 'MemoryFile') -> int:
    """Report every problem (of --config's parameters too); exit 1 if there is any."""
    if args.config:
        command_options.settings(args)  # refused as memory_node would refuse them
        print(f'{args.config}: valid parameters')
    try:
        result = memory.load(dt.datetime.now(UTC), read_only=True)
    except MemoryFileError as error:
        line = error.line if error.line is not None else 1
        print(f'{error.path}:{line}: {error.problem}')
        return 1
    for problem in result.problems:
        print(problem.format(memory.path))
    if result.problems:
        return 1
    document = result.document
    print(f'{memory.path}: valid (schema {document.schema_version}, {len(document.entries)} '
          f'entries, {len(document.peer_context or [])} peer blocks)')
    return 0


def collect_stats(document, now, config, path=None) -> dict:
    """Count by type and band, peers and file facts, as a plain dict."""
    from robot_memory.rcan import lifecycle  # lazy: 9 ms and 1 MB of robot-memory --help
    from robot_memory.rcan.schema import ENTRY_TYPES  # lazy: the schema, 26 ms and 4 MB of --help
    by_type = collections.Counter(dict.fromkeys(ENTRY_TYPES, 0))
    for entry in document.entries:
        by_type[entry.type] += 1
    by_band = lifecycle.band_counts(document.entries, now, config)
    del by_band['resolved']  # shown by type
    prunable = sum(1 for entry in document.entries
                   if lifecycle.effective_confidence(entry, now, config) < config.prune_min)
    stats = {
        'rrn': document.rrn,
        'at': format_iso(now),
        'last_updated': format_iso(document.last_updated),
        'entries': len(document.entries),
        'by_type': dict(by_type),
        'by_band': dict(by_band),
        'prunable': prunable,
        'peers': {block.rrn: {'entries': len(block.entries),
                              'last_synced': format_iso(block.last_synced)}
                  for block in document.peer_context or []},
        'oldest_first_seen': min((format_iso(e.first_seen) for e in document.entries),
                                 default=None),
    }
    if path is not None and path.exists():
        stats['file'] = str(path)
        stats['file_bytes'] = path.stat().st_size
        if path.is_symlink():
            stats['file_target'] = str(link_target(path))
    return stats


def cmd_stats(args, memory: 'MemoryFile') -> int:
    """Print statistics."""
    from robot_memory.rcan import context  # lazy: the context block, 47 ms and 5 MB of --help
    now = _now(args)
    database = default_db_path(memory.path)
    if not memory.exists() and database.exists():
        # Typed memory only (an agent's): its stats, the encryption notice and search mode.
        stats: dict = {'file': str(memory.path), 'file_exists': False,
                       'database': str(database), 'database_exists': True,
                       'substrate': substrate_commands.substrate_stats(
                           database, now, command_options.encryption(args, database))}
        if args.json:
            print(json.dumps(stats, indent=2, ensure_ascii=False))
            return 0
        print(f'{stats["file"]}: no memory file here yet (the first dream or memory_node '
              'writes it); the typed memory:')
        print(f'database: {stats["database"]}')
        for line in substrate_commands.stats_lines(stats['substrate']):
            print(line)
        return 0
    result = memory.load(now, read_only=True)
    _warn(memory, result)
    stats = collect_stats(result.document, now, _config(args), memory.path)
    stats['file_exists'] = True
    stats['database'] = str(database)
    stats['database_exists'] = database.exists()
    stats['substrate'] = substrate_commands.substrate_stats(
        database, now, command_options.encryption(args, database))
    if args.json:
        print(json.dumps(stats, indent=2, ensure_ascii=False))
        return 0
    print(f'{stats["file"]}  rrn {stats["rrn"]}  last updated {stats["last_updated"]}')
    print(f'entries: {stats["entries"]}  ' +
          '  '.join(f'{name}: {count}' for name, count in stats['by_type'].items()))
    band_counts = stats['by_band']
    print(f'at {stats["at"]}: 🔴 {band_counts["high"]}  🟡 {band_counts["medium"]}  '
          f'🟢 {band_counts["low"]}  below threshold {band_counts["below_threshold"]}  '
          f'prunable {stats["prunable"]}')
    for rrn, peer in stats['peers'].items():
        print(f'peer {rrn}: {context.plural(peer["entries"], "entry", "entries")}, last synced '
              f'{peer["last_synced"]}')
    print(f'file size: {stats["file_bytes"]} bytes' +
          (f'  (a link to {stats["file_target"]})' if 'file_target' in stats else ''))
    print(f'evidence database: {stats["database"]}' +
          ('' if stats['database_exists'] else ' (not created yet)'))
    for line in substrate_commands.stats_lines(stats['substrate']):
        print(line)
    return 0


def cmd_prune(args, memory: 'MemoryFile') -> int:
    """Prune entries below prune_min (archived first), audited as ``prune`` by ``cli``."""
    from robot_memory.dream import autodream  # lazy: the dream and pydantic, 750 ms of --help
    from robot_memory.rcan import context
    now = _now(args)
    config = _config(args)
    if not memory.exists():
        # A mistyped --file must not create an empty memory file and report success.
        raise MemoryFileError('no memory file here, so nothing to prune; check --file and '
                              '$CASTOR_ROBOT_MEMORY_FILE', memory.path)
    if args.dry_run:
        outcome = autodream.prune(None, memory, now, config, dry_run=True)
    else:
        with _store(args, memory) as store:
            _warn_store(store)
            outcome = autodream.prune(store, memory, now, config, actor='cli')
    verb = 'would prune' if args.dry_run else 'pruned'
    for item in outcome.pruned if args.verbose else ():
        print(f'{verb} {item.entry.id} [{context.percent(item.effective_confidence)}%] '
              f'{item.entry.text}')
    archived = '' if args.dry_run or not outcome.pruned else (
        f' (archived in {memory.path.name}.archive.jsonl)')
    print(f'{verb} {context.plural(len(outcome.pruned), "entry", "entries")}{archived}; '
          f'{len(outcome.kept)} remain' +
          (f'; {outcome.held_back} held back for a later prune (max_prune_fraction)'
           if outcome.held_back else '') +
          (f'; {outcome.archive_advice}' if outcome.archive_advice else ''))
    return 0


def document_as_json(document, now, config) -> dict:
    """Return the document as plain JSON data, with effective confidences at ``now``."""
    from robot_memory.rcan import lifecycle  # lazy: 9 ms and 1 MB of robot-memory --help

    def entry_data(entry, reference=None):
        data = entry.model_dump(mode='json', exclude_none=True)
        data['effective_confidence'] = round(
            lifecycle.effective_confidence(entry, now, config, reference), 6)
        return data

    return {
        'schema_version': document.schema_version,
        'rrn': document.rrn,
        'last_updated': format_iso(document.last_updated),
        'evaluated_at': format_iso(now),
        'entries': [entry_data(entry) for entry in document.entries],
        'peer_context': [
            {'rrn': block.rrn, 'last_synced': format_iso(block.last_synced),
             'entries': [entry_data(entry, block.last_synced) for entry in block.entries]}
            for block in document.peer_context or []],
        'extra': document.extra,
    }


def cmd_export(args, memory: 'MemoryFile') -> int:
    """Print the memory as JSON."""
    now = _now(args)
    result = memory.load(now)
    _warn(memory, result)
    print(json.dumps(document_as_json(result.document, now, _config(args)), indent=2,
                     ensure_ascii=False, default=str))
    return 0


def _db_path(args, memory: 'MemoryFile') -> pathlib.Path:
    return command_options.db_path(args, memory)


def _store(args, memory: 'MemoryFile', rules: Optional['Rules'] = None,
           batch_size: int = 500) -> 'EvidenceStore':
    """
    Return the evidence database for a writing command.

    A damaged database (truncated, garbage) is set aside as ``<database>.corrupt-<time>``
    and a fresh one is started, like memory_node does; the next dream takes the entries of
    the memory file in again. Reading commands (history, undo --list and --dry-run) leave a
    damaged file alone: ``_reading_store``.
    """
    # lazy: the evidence store, 58 ms and 6 MB of --help
    from robot_memory.evidence.evidence_store import EvidenceStore
    return EvidenceStore(_db_path(args, memory), rules, batch_size=batch_size,
                         on_corrupt='set_aside')


def _reading_store(path: pathlib.Path) -> 'EvidenceStore':
    """
    Return the evidence database at ``path`` for a reading command, which changes no file.

    A damaged database is left where it is, as it is, and refused with what to do
    (``_store`` is the writing commands' opening, which sets it aside).
    """
    # lazy: the evidence store, 58 ms and 6 MB of --help
    from robot_memory.evidence.evidence_store import EvidenceDamaged
    from robot_memory.evidence.evidence_store import EvidenceStore
    try:
        return EvidenceStore(path)
    except EvidenceDamaged as error:
        raise ValueError(f'{error.path} is not a usable evidence database ({error.detail}); '
                         'it was left as it is. robot-memory dream sets it aside and rebuilds '
                         'it from the memory file') from None


def _warn_store(store: 'EvidenceStore') -> None:
    for problem in store.take_problems():
        print(f'warning: {problem}', file=sys.stderr)


def cmd_ingest(args, memory: 'MemoryFile') -> int:
    """Add observations from a JSON-lines file, each once; report what was kept and skipped."""
    from robot_memory.evidence import ingest  # lazy: ingest, 63 ms and 6 MB of --help
    name = '<stdin>' if args.jsonl == '-' else args.jsonl
    try:
        handle = sys.stdin if args.jsonl == '-' else open(args.jsonl, encoding='utf-8',
                                                          errors='surrogateescape')
    except OSError as error:
        raise ValueError(f'cannot read {name}: {error.strerror}') from None

    def say(text: str) -> None:
        print(text, file=sys.stderr)

    # One line at a time, straight into the store: memory stays flat whatever the size. The
    # store writes only when ingest says, with the progress that makes a second run skip.
    with handle, _store(args, memory, command_options.rules(args), batch_size=10**9) as store:
        _warn_store(store)
        summary = ingest.ingest(store, ingest.bounded_lines(handle), name, _now(args), say)
    lines = summary.lines()
    failure = lines.pop() if summary.failed else None  # what was not stored, and what to do
    for line in lines:
        print(line)
    if failure is not None:
        print(f'robot-memory ingest: {failure}', file=sys.stderr)
    refused_future = summary.future.count if summary.future is not None else 0
    return 1 if summary.refused or refused_future or failure is not None else 0


def cmd_dream(args, memory: 'MemoryFile') -> int:
    """Run one dream and print its report."""
    # lazy: the dream and pydantic, 750 ms and 21 MB of --help
    from robot_memory.dream import autodream
    from robot_memory.dream import summary as dream_summary
    now = _now(args)
    settings = command_options.settings(args) if args.config else None
    config = settings.dream if settings is not None else autodream.DreamConfig()
    rules = command_options.rules(args)
    with _store(args, memory, rules) as store:
        report = autodream.dream(store, memory, now, rules, config, actor='cli',
                                 proposals=settings.proposals if settings is not None else None,
                                 confirm_leap=args.confirm_leap)
    for problem in report.problems:
        print(f'warning: {problem}', file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.summary())
        print()
        print(dream_summary.build_summary(report, config.lifecycle), end='')
        if report.summary_file:
            print(f'\n(kept as {report.summary_file})')
    return 1 if report.clock_backwards or report.clock_leap else 0


def cmd_history(args, memory: 'MemoryFile') -> int:
    """Print one entry's audit trail, oldest first."""
    path = _db_path(args, memory)
    if not path.exists():
        raise ValueError(f'no evidence database at {path}; it is created by robot-memory '
                         'ingest, robot-memory dream or memory_node (or pass --db)')
    store = _reading_store(path)
    # lazy: the record tables, 43 ms and 6 MB of --help
    from robot_memory.substrate.record_tables import audit_rows
    with store:
        records = [(record.at, record.to_dict()) for record in store.history(args.entry_id)]
        # A typed record's trail (and substrate:key's) is the typed memory's audit log.
        for row_id, at, record_id, action, actor, reason, detail in audit_rows(
                store.db.conn, args.entry_id):
            at = from_epoch(at)
            records.append((at, {'id': row_id, 'at': format_iso(at), 'record_id': record_id,
                                 'action': action, 'actor': actor, 'reason': reason,
                                 'detail': json.loads(detail), 'log': 'typed memory'}))
        # The black box's recordings of the entry's faults, with their freeze frames.
        records.extend(blackbox_commands.history_records(store.db.conn, args.entry_id))
    if not records:
        print(f'no audit records for {args.entry_id} in {path}', file=sys.stderr)
        return 1
    for at, record in sorted(records, key=lambda item: item[0]):
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
        else:
            print(f'{record["at"]}  {record["action"]:<10} {record["actor"]:<10} '
                  f'{record["reason"]}')
    return 0


def _undo_list(args, memory: 'MemoryFile') -> int:
    """Print the dreams and undos with their ids; reads only (see ``_reading_store``)."""
    # lazy: undo, 19 ms and 1 MB of --help (the dream's on use)
    from robot_memory.review import undo
    path = _db_path(args, memory)
    items = []
    if path.exists():
        with _reading_store(path) as store:
            items = undo.log(store.db.conn)
    if args.json:
        print(json.dumps(items, indent=2, ensure_ascii=False))
        return 0
    if not items:
        print('no dream or undo yet (typed records are restored with --to TIME)')
    for item in items:
        print(f'{item["kind"]} {item["id"]}  {item["at"]}  {item["actor"]:<14} '
              f'{item["what"]}')
    return 0


def cmd_undo(args, memory: 'MemoryFile') -> int:
    """Restore an earlier state of the memory (or list dreams and undos); print what changed."""
    # lazy: undo, 19 ms and 1 MB of --help (the dream's on use)
    from robot_memory.review import undo
    if args.list:
        return _undo_list(args, memory)
    now = _now(args)
    if args.dry_run:  # reads only: a damaged database is left alone, a missing one not made
        path = _db_path(args, memory)
        if not path.exists():
            raise ValueError(f'no evidence database at {path}, so nothing to undo (or pass '
                             '--db)')
        opened = _reading_store(path)
    else:
        opened = _store(args, memory)
    with opened as store:
        _warn_store(store)
        report = undo.undo(store, memory, now, 'cli', args.reason, dream=args.dream,
                           to=args.to, undo_id=args.undo_id, dry_run=args.dry_run,
                           force=args.force)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0
    print(report.summary())
    for line in report.lines():
        print(f'  {line}')
    if report.kept:
        print('to take back the kept ones too: add --force')
    if report.undo_id is not None:
        print(f'to undo this: robot-memory undo --undo {report.undo_id} --reason "..."')
    return 0


COMMANDS: dict[str, Callable[..., int]] = {
    'show': cmd_show,
    'validate': cmd_validate,
    'stats': cmd_stats,
    'prune': cmd_prune,
    'export': cmd_export,
    'ingest': cmd_ingest,
    'dream': cmd_dream,
    'history': cmd_history,
    'undo': cmd_undo,
}
COMMANDS.update(replay_command.HANDLERS)
COMMANDS.update(substrate_commands.HANDLERS)
COMMANDS.update(proposal_commands.HANDLERS)
COMMANDS.update(serve_command.HANDLERS)
COMMANDS.update(blackbox_commands.HANDLERS)
COMMANDS.update(fleet_commands.HANDLERS)
# These create nothing.
READS_ONLY = frozenset({'show', 'validate', 'stats', 'export', 'history', 'blackbox'})


class NeutralisedStream:
    """
    A text stream that writes control and bidi-override characters as visible escapes.

    Every output of the CLI goes through it, so a memory file's text cannot reorder or
    repaint a terminal; inside JSON strings the escape is JSON's own, so data survive.
    """

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        """Write ``text`` neutralised; return its length as given."""
        length = len(text)
        # Plain ASCII with only newlines and tabs needs nothing (help text): no import then.
        if not (text.isascii() and text.replace('\n', '').replace('\t', '').isprintable()):
            # lazy: the context block, 47 ms and 5 MB of --help
            from robot_memory.rcan import context
            text = context.neutralise(text, keep_newlines=True)
        self.stream.write(text)
        return length

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv=None) -> int:
    """Entry point of ``robot-memory``."""
    skip_pydantic_plugins()  # also when started as a pip console script, not bin/robot-memory
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = NeutralisedStream(out), NeutralisedStream(err)
    try:
        args = build_parser().parse_args(argv)
        memory: Union[command_options.MemoryLocation, 'MemoryFile']
        if args.command in substrate_commands.HANDLERS:
            memory = command_options.MemoryLocation(args.file)  # the file's reader is not needed
        else:
            # lazy: the memory file, 55 ms and 6 MB of --help
            from robot_memory.rcan.memory_file import MemoryFile
            memory = MemoryFile(args.file)
        try:
            if args.command not in READS_ONLY:  # these say what is missing in their own words
                command_options.check_directories(args, memory)
            return COMMANDS[args.command](args, memory)
        except (RobotMemoryError, ValueError) as error:  # MissingExtra: 2, else 1
            return refusal.refuse(args.command, error)
        except BrokenPipeError:
            return 0
        except Exception as error:  # noqa: B902 - the file system's, SQLite's: one line
            if not refusal.unforeseen(error):
                raise
            return refusal.refuse_unforeseen(args.command, error)
    finally:
        sys.stdout, sys.stderr = out, err


if __name__ == '__main__':
    sys.exit(main())
