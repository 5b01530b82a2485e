"""A Model Context Protocol server (stdio) over the memory substrate and robot-memory.md.

Tools: ``learn``, ``recall``, ``forget`` (the substrate) and ``get_context`` (the
emoji-banded context block of robot-memory.md, as the robot brain receives it). Started
by ``robot-memory mcp --file robot-memory.md``; the MCP client's trust level is fixed by
``--trust`` at start, so a client cannot raise its own clearance. Errors a client can
cause come back as tool errors with the substrate's message. Every argument of every tool
carries a description in its JSON Schema, ``type`` and ``sensitivity`` are enums, and the
server reports the package version in its ``serverInfo``.
"""

import datetime as dt
import pathlib
from typing import Annotated
from typing import Literal
from typing import Optional

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from robot_memory import __version__
from robot_memory.errors import MemoryFileError
from robot_memory.substrate.models import MAX_QUERY
from robot_memory.substrate.models import MAX_REASON
from robot_memory.substrate.models import MAX_TAG
from robot_memory.substrate.models import MAX_TAGS
from robot_memory.substrate.models import MAX_TEXT
from robot_memory.substrate.store import Substrate
from robot_memory.substrate.vocabulary import MEMORY_TYPES
from robot_memory.substrate.vocabulary import SENSITIVITIES
from robot_memory.timeutil import UTC

INSTRUCTIONS = ('Robot memory. learn stores a typed, deduplicated record; recall finds records '
                'by keywords (and vectors when enabled) with optional context filters; forget '
                'archives a record by id or the best match of a query (all for every match, '
                'dry_run to preview, restore to undo) with a reason; get_context returns the '
                'robot-memory.md context block.')

# The field limits of robot_memory.substrate.models, stated in the tool schemas (maxLength).
Tags = Annotated[list[Annotated[str, Field(max_length=MAX_TAG)]], Field(max_length=MAX_TAGS)]
MemoryType = Literal[MEMORY_TYPES]
Sensitivity = Literal[SENSITIVITIES]
RequestId = Annotated[Optional[str], Field(
    description='Optional unique id of this request (e.g. a UUID): a retry with the same id '
                'and arguments returns the first reply (replayed: true) and has no second '
                'effect')]


def _now() -> dt.datetime:
    return dt.datetime.now(UTC)


def search_description(embedder) -> str:
    """One line on how recall searches, e.g. "semantic (minilm-l6-v2-int8)"."""
    from robot_memory.substrate.embedding import describe_embedder
    info = describe_embedder(embedder)
    if info['embedder'] == 'none':
        return f'{info["search"]} ({info.get("hint", "vectors off")})'
    return f'{info["search"]} ({info["embedder"]})'


def build_server(memory_path, db_path, trust: str = 'medium', vectors: bool = False,
                 clock=_now) -> MCPServer:
    """The MCP server with its four tools, over one open Substrate."""
    from robot_memory.substrate.embedding import default_embedder
    embedder = default_embedder(vectors)  # numpy only when an embedder is in use
    substrate = Substrate(db_path, embedder=embedder)
    if embedder is not None:
        substrate.reindex_vectors()
    search = search_description(embedder)
    server = MCPServer('robot-memory', description=f'Robot memory; recall search: {search}',
                       instructions=f'{INSTRUCTIONS} Recall search: {search}.',
                       version=__version__)

    def once(request_id, kind: str, arguments: dict, act) -> dict:
        if request_id is None:
            return act()
        return substrate.once(request_id, kind, arguments, clock(), act)

    @server.tool()
    def learn(text: Annotated[str, Field(description='What to remember, in plain words',
                                         max_length=MAX_TEXT)],
              type: Annotated[Optional[MemoryType], Field(
                  description='Memory type; omitted: classified from the text')] = None,
              tags: Annotated[Optional[Tags], Field(
                  description='Tags to filter by later, e.g. ["cleaning"]')] = None,
              context: Annotated[Optional[dict], Field(
                  description='Context fields, e.g. {"location": {"room": "kitchen"}}; '
                              'recall can filter on them')] = None,
              sensitivity: Annotated[Optional[Sensitivity], Field(
                  description='Who may read it back; omitted: low (high for text that looks '
                              'secret)')] = None,
              confidence: Annotated[float, Field(
                  description='How sure the caller is, 0 to 1')] = 0.7,
              single_valued: Annotated[Optional[bool], Field(
                  description='For a fact: true if its predicate holds one value at a time '
                              '(a new value supersedes), false if many; omitted: the '
                              'built-in vocabulary decides')] = None,
              request_id: RequestId = None) -> dict:
        """Remember text as a typed record (episodic, working, semantic, competence, plan_graph).

        A duplicate reinforces the existing record and the reply says so. A fact replaces
        another only when they conflict: single_valued true says its predicate holds one
        value at a time, false many; unsure pairs are both kept, marked contested.
        """
        try:
            return once(request_id, 'learn', {
                'text': text, 'type': type, 'tags': tags, 'context': context,
                'sensitivity': sensitivity, 'confidence': confidence,
                'single_valued': single_valued},
                lambda: substrate.learn(text, type=type, tags=tags, context=context,
                                        now=clock(), sensitivity=sensitivity,
                                        confidence=confidence, single_valued=single_valued,
                                        actor='mcp').to_dict())
        except ValueError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    def recall(query: Annotated[str, Field(description='What to look for, in plain words',
                                           max_length=MAX_QUERY)],
               k: Annotated[int, Field(description='How many records at most')] = 5,
               filters: Annotated[Optional[dict], Field(
                   description='Context filters, e.g. {"context.battery": {"$lt": 0.2}} or '
                               '{"context.location.room": "kitchen"}')] = None,
               types: Annotated[Optional[list[MemoryType]], Field(
                   description='Only these memory types')] = None,
               near: Annotated[Optional[list[float]], Field(
                   description='A position [x, y] or [x, y, z]: matches come nearest '
                               'first')] = None) -> dict:
        """Find records for a query; filters like {"context.battery": {"$lt": 0.2}}."""
        try:
            return substrate.recall(query, k=k, filters=filters, trust=trust, now=clock(),
                                    types=types, near=near).to_dict()
        except ValueError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    def forget(target: Annotated[str, Field(
                   description='A record id, or a query: the best record holding all its words',
                   max_length=MAX_QUERY)],
               reason: Annotated[str, Field(description='Why (kept in the audit log)',
                                            max_length=MAX_REASON)],
               hard: Annotated[bool, Field(
                   description='Delete for good instead of archiving (still audited; cannot '
                               'be restored)')] = False,
               all: Annotated[bool, Field(
                   description='Act on every record the query matches (at most 10), not only '
                               'the best one')] = False,
               dry_run: Annotated[bool, Field(
                   description='Change nothing; say what would be forgotten')] = False,
               restore: Annotated[bool, Field(
                   description='Bring archived records back instead of forgetting')] = False,
               request_id: RequestId = None) -> dict:
        """Archive a record by id, or the best match of every word of a query (audited).

        No match is an error; an archived record can be restored until deleted with hard.
        """
        try:
            return once(request_id, 'forget', {'target': target, 'reason': reason,
                                               'hard': hard, 'all': all, 'dry_run': dry_run,
                                               'restore': restore},
                        lambda: substrate.forget(target, reason, clock(), hard=hard,
                                                 all_matches=all, dry_run=dry_run,
                                                 restore=restore, trust=trust,
                                                 actor='mcp').to_dict())
        except ValueError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    def get_context(token_budget: Annotated[Optional[int], Field(
                        description='Most tokens the block may take; omitted: the default '
                                    'budget')] = None,
                    include_peers: Annotated[bool, Field(
                        description="Also the peer robots' entries, in their own "
                                    'section')] = True) -> dict:
        """The context block of robot-memory.md: banded lines within a token budget."""
        # The file's reader is imported on the first call, not before the server answers.
        from robot_memory import context as context_block
        from robot_memory.memory_file import MemoryFile
        now = clock()
        try:
            document = MemoryFile(memory_path).load(now).document
        except MemoryFileError as error:
            return {'rrn': None, 'text': '', 'entries': 0, 'peer_entries': 0, 'omitted': 0,
                    'token_estimate': 0, 'note': str(error)}
        block = context_block.build_context(document, now, token_budget=token_budget,
                                            include_peers=include_peers)
        return {'rrn': block.rrn, 'text': block.text, 'entries': len(block.entries),
                'peer_entries': len(block.peer_entries), 'omitted': block.omitted,
                'token_estimate': block.token_estimate,
                'below_threshold': block.below_threshold,
                'summary': context_block.summary(block)}

    server.substrate = substrate
    return server


def serve(memory_path, db_path, trust: str = 'medium', vectors: bool = False,
          clock=None) -> None:
    """Run the server on standard input / output until the client disconnects."""
    server = build_server(pathlib.Path(memory_path), db_path, trust, vectors, clock or _now)
    try:
        server.run('stdio')
    finally:
        server.substrate.close()
