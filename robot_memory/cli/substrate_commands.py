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
The substrate's ``robot-memory`` subcommands.

learn, recall, forget, mcp, import-rlm, export-rlm, rotate-key.

``add_commands(subparsers, common_parents)`` adds them to the main parser and ``HANDLERS``
maps each name to its function ``(args, memory) -> exit code``. The records live in the
database beside the memory file (``--db`` to choose another); encryption at rest
(``substrate_encrypt_from``, ``substrate_key_file``) is read from ``--config``. The store
(pydantic models, SQLite) is imported when a command opens it, not when the parser is
built.
"""

import argparse
import datetime as dt
import json
import pathlib
import sqlite3
import sys
from typing import Optional

from robot_memory.cli.command_options import db_path
from robot_memory.cli.command_options import encryption
from robot_memory.cli.command_options import proposal_settings
from robot_memory.common.timeutil import parse_iso_argument
from robot_memory.common.timeutil import UTC
from robot_memory.substrate.errors import SubstrateError
from robot_memory.substrate.filters import parse_json_object
from robot_memory.substrate.vocabulary import MAX_QUERY
from robot_memory.substrate.vocabulary import MAX_REASON
from robot_memory.substrate.vocabulary import MAX_TEXT
from robot_memory.substrate.vocabulary import MEMORY_TYPES
from robot_memory.substrate.vocabulary import SENSITIVITIES


def _json_object(text: str) -> dict:
    try:
        return parse_json_object(text, 'the value')
    except SubstrateError as error:
        raise argparse.ArgumentTypeError(str(error).replace('the value ', '', 1)) from None


def _point(text: str) -> tuple:
    try:
        values = tuple(float(part) for part in text.split(','))
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not X,Y or X,Y,Z') from None
    if len(values) not in (2, 3):
        raise argparse.ArgumentTypeError('give 2 or 3 comma-separated numbers: X,Y[,Z]')
    return values


def add_commands(subparsers, common_parents) -> None:
    """Add learn, recall, forget, mcp, import-rlm and export-rlm to ``subparsers``."""
    clock = _clock_parser()
    _add_learn(subparsers, list(common_parents) + [clock])
    _add_recall_and_forget(subparsers, list(common_parents) + [clock])

    mcp = subparsers.add_parser('mcp', parents=list(common_parents) + [clock],
                                help='run a Model Context Protocol server on stdio (tools: '
                                     'learn, recall, forget, get_context)')
    mcp.add_argument('--trust', choices=SENSITIVITIES, default='medium',
                     help='highest sensitivity the MCP client sees in full (default medium)')
    mcp.add_argument('--vectors', action='store_true',
                     help='turn on vector search even without the semantic model (then the '
                          'local hashing embedder); with robot_memory[semantic] installed '
                          'vectors are always on')

    importer = subparsers.add_parser('import-rlm', parents=list(common_parents) + [clock],
                                     help='import RLM-MEM JSON chunks (a directory or a file)')
    importer.add_argument('source', help='RLM-MEM memory directory (chunks/, archive/) or one '
                                         'chunk file')
    importer.add_argument('--json', action='store_true', help='print the report as JSON')

    exporter = subparsers.add_parser('export-rlm', parents=list(common_parents) + [clock],
                                     help='export the records as RLM-MEM JSON chunks')
    exporter.add_argument('target', help='directory to write chunks/, archive/ and index/ into')
    exporter.add_argument('--json', action='store_true', help='print the report as JSON')

    rotate = subparsers.add_parser('rotate-key', parents=list(common_parents) + [clock],
                                   help='re-encrypt every encrypted record under a new key (one '
                                        'transaction, audited; the old key file is kept as '
                                        'KEY.bak until done)')
    rotate.add_argument('--json', action='store_true', help='print the result as JSON')


def _add_learn(subparsers, parents) -> None:
    """Add ``learn``: one piece of text remembered as a typed record."""
    learn = subparsers.add_parser('learn', parents=parents,
                                  help='remember a piece of text as a typed record (deduplicated)')
    learn.add_argument('text', help='what to remember, e.g. "The charging dock is in the '
                                    f'hallway" (at most {MAX_TEXT} characters)')
    learn.add_argument('--type', choices=MEMORY_TYPES,
                       help='memory type (default: classified from the text by rules)')
    learn.add_argument('--tag', action='append', default=[], metavar='TAG',
                       help='a tag (repeat for several)')
    learn.add_argument('--context', type=_json_object, metavar='JSON',
                       help='structured context, e.g. \'{"location": {"room": "kitchen"}}\'')
    learn.add_argument('--sensitivity', choices=SENSITIVITIES,
                       help='sensitivity class (default: low, high when it mentions secrets)')
    learn.add_argument('--confidence', type=float, default=0.7, help='confidence 0..1 '
                                                                     '(default 0.7)')
    learn.add_argument('--conditions', type=_json_object, metavar='JSON',
                       help='validity conditions of a semantic fact, e.g. \'{"floor": 2}\'')
    cardinality = learn.add_mutually_exclusive_group()
    cardinality.add_argument('--single-valued', action='store_true', default=None,
                             dest='single_valued',
                             help="the fact's predicate holds one value at a time: a new "
                                  'value supersedes the old one')
    cardinality.add_argument('--multi-valued', action='store_false', dest='single_valued',
                             help="the fact's predicate holds many values side by side")
    learn.add_argument('--json', action='store_true', help='print the result as JSON')


def _add_recall_and_forget(subparsers, parents) -> None:
    """Add ``recall`` (find records) and ``forget`` (archive, delete or restore them)."""
    recall = subparsers.add_parser('recall', parents=parents,
                                   help='find records by keywords (and vectors with --vectors)')
    recall.add_argument('query', help='what to look for, e.g. "charging dock"')
    recall.add_argument('-k', type=int, default=5, help='how many records (1-100, default 5)')
    recall.add_argument('--filter', type=_json_object, metavar='JSON',
                        help='context filter, e.g. \'{"context.battery": {"$lt": 0.2}}\'')
    recall.add_argument('--type', action='append', choices=MEMORY_TYPES, dest='types',
                        help='only this memory type (repeat for several)')
    recall.add_argument('--trust', choices=SENSITIVITIES, default='medium',
                        help='caller trust level: one level above is redacted, higher is '
                             'withheld (default medium)')
    recall.add_argument('--near', type=_point, metavar='X,Y[,Z]',
                        help='sort nearest first by context.position')
    recall.add_argument('--vectors', action='store_true',
                        help='add vector similarity even without the semantic model (then '
                             'the local hashing embedder); with robot_memory[semantic] '
                             'installed vectors are always on')
    recall.add_argument('--json', action='store_true', help='print the result as JSON')

    forget = subparsers.add_parser('forget', parents=parents,
                                   help='archive a record by id, or the best match of a query '
                                        '(audited); --hard deletes, --restore undoes')
    forget.add_argument('target', help='record id, or a query whose every word must match '
                                       f'(at most {MAX_QUERY} characters)')
    forget.add_argument('--reason', required=True,
                        help=f'why (recorded in the audit log; at most {MAX_REASON} characters)')
    forget.add_argument('--all', action='store_true', dest='all_matches',
                        help='act on every record the query matches (at most 10), not only '
                             'the best one')
    forget.add_argument('--hard', action='store_true',
                        help='delete the rows instead of archiving them (still audited; '
                             'cannot be restored)')
    forget.add_argument('--restore', action='store_true',
                        help='bring archived records back instead of forgetting')
    forget.add_argument('--dry-run', action='store_true', help='only list what would be '
                                                               'forgotten (or restored)')
    forget.add_argument('--json', action='store_true', help='print the result as JSON')


def _clock_parser():
    clock = argparse.ArgumentParser(add_help=False)
    clock.add_argument('--at', type=parse_iso_argument, metavar='ISO-TIME',
                       help='act as of this moment instead of the clock (e.g. '
                            '2026-05-01T03:00:00Z)')
    return clock


def _now(args) -> dt.datetime:
    return getattr(args, 'at', None) or dt.datetime.now(UTC)


def _open(args, memory, vectors: bool = False):
    # lazy: the typed store, 190 ms and 8 MB of robot-memory --help
    from robot_memory.substrate.embedding import default_embedder
    from robot_memory.substrate.substrate_store import Substrate
    path = db_path(args, memory)
    return Substrate(path, embedder=default_embedder(vectors), **encryption(args, path))


def cmd_learn(args, memory) -> int:
    """Learn one record (or propose it, in propose mode) and say what happened."""
    settings = proposal_settings(args)
    with _open(args, memory) as substrate:
        if settings is not None and settings.agents == 'propose':
            # lazy: review and pydantic, 170 ms and 19 MB of --help
            from robot_memory.review import proposing
            result = proposing.learn_or_propose(
                substrate, lambda: proposing.ProposalQueue(substrate.db), settings,
                _now(args), 'cli', text=args.text, type=args.type, tags=args.tag,
                context=args.context, sensitivity=args.sensitivity,
                confidence=args.confidence, conditions=args.conditions,
                single_valued=args.single_valued)
        else:
            result = substrate.learn(args.text, type=args.type, tags=args.tag,
                                     context=args.context, now=_now(args),
                                     sensitivity=args.sensitivity, confidence=args.confidence,
                                     conditions=args.conditions,
                                     single_valued=args.single_valued, actor='cli').to_dict()
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    elif result['action'] == 'proposed':
        print(f'proposed #{result["proposal"]} ({result["type"]}): {result["message"]}')
    else:
        print(f'{result["action"]} {result["type"]} {result["record_id"]}: {result["message"]}')
    return 0


def cmd_recall(args, memory) -> int:
    """Print the best records for a query; exit 1 when none matched."""
    # lazy: the typed store, 190 ms and 8 MB of robot-memory --help
    from robot_memory.substrate.embedding import default_embedder
    from robot_memory.substrate.recall import recall_as_asked
    from robot_memory.substrate.substrate_store import Substrate
    embedder = default_embedder(args.vectors)
    path = db_path(args, memory)
    with Substrate(path, **encryption(args, path)) as substrate:
        # The one ranking, shared with the operator page: keyword-first, then vectors.
        result = recall_as_asked(substrate, args.query, args.k, embedder, args.vectors,
                                 filters=args.filter, trust=args.trust, now=_now(args),
                                 types=args.types, near=args.near)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        for hit in result.hits:
            flag = f' [{hit.status}]' if hit.status != 'active' else ''
            print(f'{hit.score:.5f}  {hit.type:<10} {hit.id}  {hit.text}{flag}')
        if result.withheld:
            print(f'({result.withheld} records above trust level {args.trust} withheld)',
                  file=sys.stderr)
        if result.notice:
            print(f'({result.notice})', file=sys.stderr)
        if not result.hits:
            print('no records matched', file=sys.stderr)
    return 0 if result.hits else 1


def cmd_forget(args, memory) -> int:
    """Archive, delete or restore records; print each id, its status and text."""
    with _open(args, memory) as substrate:
        result = substrate.forget(args.target, args.reason, _now(args), hard=args.hard,
                                  actor='cli', dry_run=args.dry_run,
                                  all_matches=args.all_matches, restore=args.restore)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
        return 0
    verb = {'archive': 'archived', 'delete': 'deleted', 'restore': 'restored'}[result.action]
    for record in result.records:
        print(f'{"would " + result.action if result.dry_run else verb} {record["id"]}  '
              f'{record["status"]:<10} {record["text"]}')
    if result.matched > len(result.ids):
        print(f'the best of {result.matched} matches; --all to {result.action} every one',
              file=sys.stderr)
    return 0


def cmd_mcp(args, memory) -> int:
    """Serve the MCP tools on standard input and output until the client leaves."""
    from robot_memory.mcp import mcp_server  # lazy: the MCP server, 12 ms of --help
    clock = (lambda: args.at) if args.at else None
    path = db_path(args, memory)
    mcp_server.serve(memory.path, path, trust=args.trust, vectors=args.vectors, clock=clock,
                     proposals=proposal_settings(args), encryption=encryption(args, path))
    return 0


def cmd_import_rlm(args, memory) -> int:
    """Import RLM-MEM chunks; print what was imported, skipped and refused."""
    from robot_memory.substrate import rlm  # lazy: RLM files, 20 ms and 5 MB of --help
    with _open(args, memory) as substrate:
        report = rlm.import_chunks(substrate, args.source, _now(args))
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        for problem in report.refused:
            print(f'refused: {problem}', file=sys.stderr)
        print(f'imported {len(report.imported)}, duplicates {len(report.duplicates)}, '
              f'refused {len(report.refused)}, links {report.links}')
    return 1 if report.refused else 0


def cmd_export_rlm(args, memory) -> int:
    """Export every record as RLM-MEM chunks into a directory."""
    from robot_memory.substrate import rlm  # lazy: RLM files, 20 ms and 5 MB of --help
    with _open(args, memory) as substrate:
        report = rlm.export_chunks(substrate, args.target, _now(args))
        notice = substrate.sealed_status()['notice']
    if args.json:
        print(json.dumps({**report.to_dict(), 'notice': notice}, ensure_ascii=False))
    else:
        print(f'exported {len(report.written)} chunks ({report.archived} archived) to '
              f'{args.target}')
    if notice:
        print(f'({notice})', file=sys.stderr)
    return 0


def cmd_rotate_key(args, memory) -> int:
    """Re-encrypt every encrypted record under a new key; print the old and new key ids."""
    with _open(args, memory) as substrate:
        result = substrate.rotate_key(_now(args), actor='cli')
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(f're-encrypted {result["records"]} records: key {result["old_key_id"]} -> '
              f'{result["new_key_id"]} in {result["key_file"]}')
    return 0


HANDLERS = {
    'learn': cmd_learn,
    'recall': cmd_recall,
    'forget': cmd_forget,
    'mcp': cmd_mcp,
    'import-rlm': cmd_import_rlm,
    'export-rlm': cmd_export_rlm,
    'rotate-key': cmd_rotate_key,
}


def substrate_stats(path, now: dt.datetime,
                    encryption: Optional[dict] = None) -> Optional[dict]:
    """
    Substrate metrics of the database at ``path``, or None when it holds no records table.

    Never creates the database or its tables: ``stats`` only reads. ``encryption`` (see
    :func:`encryption`) says where the key of the encrypted records is.
    """
    path = pathlib.Path(path)
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        try:
            present = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                   "name = 'substrate_records'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if not present:
        return None
    # lazy: the typed store, 190 ms and 8 MB of --help
    from robot_memory.substrate.substrate_store import Substrate
    try:
        with Substrate(path, **(encryption or {})) as substrate:
            metrics = substrate.metrics(now)
            metrics['encryption'] = substrate.sealed_status()
    except SubstrateError:
        return None
    # lazy: the typed store, 190 ms and 8 MB of robot-memory --help
    from robot_memory.substrate.embedding import default_embedder
    from robot_memory.substrate.embedding import describe_embedder
    try:
        metrics['embedder'] = describe_embedder(default_embedder())
    except ValueError as error:
        metrics['embedder'] = {'embedder': 'none', 'search': 'misconfigured', 'hint': str(error)}
    return metrics


def stats_lines(metrics) -> list:
    """Human-readable lines of substrate metrics for ``robot-memory stats``."""
    if not metrics:
        return []
    types = '  '.join(f'{name}: {count}' for name, count in metrics['by_type'].items())
    usefulness = metrics['retrieval']['usefulness']
    lines = [f'substrate records: {metrics["records"]}  {types}',
             f'substrate salience mean {metrics["salience"]["mean"]}  recalls '
             f'{metrics["retrieval"]["recalls"]}  usefulness '
             f'{"n/a" if usefulness is None else f"{usefulness:.0%}"}  contested '
             f'{metrics["contradiction"]["contested"]}  revisions (30 d) '
             f'{metrics["revision"]["total_in_window"]}'] + _embedder_lines(metrics.get('embedder'))
    return lines + _encryption_lines(metrics.get('encryption'))


def _encryption_lines(info) -> list:
    if info and info.get('plaintext_notice') and not (info['sealed'] or info['encrypt_from']):
        return [f'substrate encryption: off; {info["plaintext_notice"]}']
    if not info or not (info['sealed'] or info['encrypt_from']):
        return []
    level = f'{info["encrypt_from"]} and above' if info['encrypt_from'] else 'off for new records'
    lines = [f'substrate encryption: {level}; {info["sealed"]} records encrypted, key file '
             f'{info["key_file"]}']
    return lines + [notice for notice in (info['notice'], info.get('plaintext_notice')) if notice]


def _embedder_lines(info) -> list:
    if not info:
        return []
    line = f'substrate search: {info["search"]}'
    if info['embedder'] != 'none':
        line += f' ({info["embedder"]})'
    return [line + (f'; {info["hint"]}' if info.get('hint') else '')]
