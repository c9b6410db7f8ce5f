"""The quickstart's issue tracker as an MCP server, for Claude Desktop, an IDE or any MCP host.

`factory()` is what `llm-worker mcp serve` calls: it creates the application
and returns a ToolServer with the application's tools registered. From this
directory (the current directory is importable):

    llm-worker mcp serve mcp_factory:factory                    # stdio, for a host
    llm-worker mcp serve mcp_factory:factory --transport http   # http://127.0.0.1:8000/mcp

or, from anywhere, put this directory on PYTHONPATH. Running this file does the
same through the Python API:  python examples/mcp_factory.py [--http]

Needs the mcp extra:  pip install 'llm-worker[mcp]'
"""

from __future__ import annotations

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


if __name__ == "__main__":
    from llm_worker.mcp import serve

    serve(factory(), transport="http" if "--http" in sys.argv[1:] else "stdio")
