"""A Model Context Protocol server (stdio) over the memory substrate and robot-memory.md.

Tools: ``learn``, ``recall``, ``forget`` (the substrate) and ``get_context`` (the
emoji-banded context block of robot-memory.md, as the robot brain receives it). Started
by ``robot-memory mcp --file robot-memory.md``; the MCP client's trust level is fixed by
``--trust`` at start, so a client cannot raise its own clearance. Errors a client can
cause come back as tool errors with the substrate's message.
"""

import datetime as dt
import pathlib
from typing import Optional

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from robot_memory import context as context_block
from robot_memory.errors import MemoryFileError
from robot_memory.memory_file import MemoryFile
from robot_memory.substrate import HashingEmbedder
from robot_memory.substrate import Substrate
from robot_memory.timeutil import UTC

INSTRUCTIONS = ('Robot memory. learn stores a typed, deduplicated record; recall finds records '
                'by keywords (and vectors when enabled) with optional context filters; forget '
                'archives by id or query with a reason; get_context returns the robot-memory.md '
                'context block.')


def _now() -> dt.datetime:
    return dt.datetime.now(UTC)


def build_server(memory_path, db_path, trust: str = 'medium', vectors: bool = False,
                 clock=_now) -> MCPServer:
    """The MCP server with its four tools, over one open Substrate."""
    substrate = Substrate(db_path, embedder=HashingEmbedder() if vectors else None)
    if vectors:
        substrate.reindex_vectors()
    memory = MemoryFile(memory_path)
    server = MCPServer('robot-memory', instructions=INSTRUCTIONS)

    @server.tool()
    def learn(text: str, type: Optional[str] = None, tags: Optional[list[str]] = None,
              context: Optional[dict] = None, sensitivity: Optional[str] = None,
              confidence: float = 0.7) -> dict:
        """Remember text as a typed record (episodic, working, semantic, competence, plan_graph).

        A duplicate reinforces the existing record and the reply says so.
        """
        try:
            return substrate.learn(text, type=type, tags=tags, context=context, now=clock(),
                                   sensitivity=sensitivity, confidence=confidence,
                                   actor='mcp').to_dict()
        except ValueError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    def recall(query: str, k: int = 5, filters: Optional[dict] = None,
               types: Optional[list[str]] = None, near: Optional[list[float]] = None) -> dict:
        """Find records for a query; filters like {"context.battery": {"$lt": 0.2}}."""
        try:
            return substrate.recall(query, k=k, filters=filters, trust=trust, now=clock(),
                                    types=types, near=near).to_dict()
        except ValueError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    def forget(target: str, reason: str, hard: bool = False) -> dict:
        """Archive a record by id or the records matching every word of a query (audited)."""
        try:
            return substrate.forget(target, reason, clock(), hard=hard, actor='mcp').to_dict()
        except ValueError as error:
            raise ToolError(str(error)) from None

    @server.tool()
    def get_context(token_budget: Optional[int] = None, include_peers: bool = True) -> dict:
        """The context block of robot-memory.md: banded lines within a token budget."""
        now = clock()
        try:
            document = memory.load(now).document
        except MemoryFileError as error:
            return {'rrn': None, 'text': '', 'entries': 0, 'peer_entries': 0, 'omitted': 0,
                    'token_estimate': 0, 'note': str(error)}
        block = context_block.build_context(document, now, token_budget=token_budget,
                                            include_peers=include_peers)
        return {'rrn': block.rrn, 'text': block.text, 'entries': len(block.entries),
                'peer_entries': len(block.peer_entries), 'omitted': block.omitted,
                'token_estimate': block.token_estimate}

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
