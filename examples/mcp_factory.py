"""The quickstart's issue tracker as an MCP server, for Claude Desktop, an IDE or any MCP host.

`factory()` is what `llm-worker mcp serve` calls: it creates the application
and returns a ToolServer with the application's tools registered. From this
directory (the current directory is importable):

    llm-worker mcp serve mcp_factory:factory                    # stdio, for a host
    llm-worker mcp serve mcp_factory:factory --transport http   # http://127.0.0.1:8000/mcp

or, from anywhere, put this directory on PYTHONPATH. Running this file does the
same through the Python API:  python examples/mcp_factory.py [--http]
(it logs where it serves on stderr; Ctrl-C ends it with exit status 130, as the
command does).

Needs the mcp extra:  pip install 'llm-worker[mcp]'
"""

from __future__ import annotations

import logging
import sys

from quickstart import Issue, IssueTracker  # the app of examples/quickstart.py

from llm_worker import ToolServer, tool_definitions


def factory() -> ToolServer:
    """A fresh tracker with two issues, and a ToolServer holding its tools."""
    tracker = IssueTracker(project="llm-worker")
    tracker.issues[1] = Issue(id=1, title="Crash on empty input", status="open", labels=["bug"])
    tracker.issues[2] = Issue(id=2, title="Document the quickstart", status="open", labels=[])
    server = ToolServer()
    server.register_tools(tool_definitions(tracker))
    return server


def main() -> int:
    """Serve ``factory()`` over stdio, or over HTTP with ``--http``, until Ctrl-C."""
    # What `llm-worker mcp serve` sets up: llm_worker's records (such as the address it
    # serves at) on stderr. Over stdio, stdout is the protocol.
    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("llm_worker").setLevel(logging.INFO)
    try:
        from llm_worker.mcp import serve

        serve(factory(), transport="http" if "--http" in sys.argv[1:] else "stdio")
    except KeyboardInterrupt:
        return 130  # 128 + SIGINT, as the command exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
