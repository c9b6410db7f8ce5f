"""MCP both ways: serve a ``ToolServer`` to MCP hosts; use an MCP server's tools in a ``Worker``.

Needs the optional extra: ``pip install 'llm-worker[mcp]'`` (the official ``mcp`` SDK).

Serve (see ``docs/mcp.md``)::

    from llm_worker.mcp import serve

    serve(server)                                # stdio, for a desktop or IDE host
    serve(server, transport="http", port=8000)   # streamable HTTP on 127.0.0.1

or from the command line: ``llm-worker mcp serve package.module:factory``.

Use::

    from llm_worker.mcp import mcp_tool_definitions

    worker.register_tools(await mcp_tool_definitions(session))

Over streamable HTTP, give the SDK ``mcp_http_client()`` so that a server that
goes away fails the calls made to it instead of cancelling everything.

``import llm_worker`` never imports this package or the SDK.
"""

from __future__ import annotations

# Fail at once, with the fix in the message, when the optional extra is missing.
try:
    import mcp
except ImportError as exc:
    raise ImportError(
        "llm_worker.mcp needs the mcp package: pip install 'llm-worker[mcp]'", name="mcp"
    ) from exc

from ._client import McpTool, McpToolDefinition, mcp_tool_definitions
from ._http_client import mcp_http_client
from ._serve import Transport, create_http_app, create_server, serve, serve_async

__all__ = [
    "McpTool",
    "McpToolDefinition",
    "Transport",
    "create_http_app",
    "create_server",
    "mcp_http_client",
    "mcp_tool_definitions",
    "serve",
    "serve_async",
]

# Tracebacks and help() show the public home of each function, as in llm_worker.
for _function in (
    McpTool,
    McpToolDefinition,
    create_http_app,
    create_server,
    mcp_http_client,
    mcp_tool_definitions,
    serve,
    serve_async,
):
    _function.__module__ = __name__
del _function, mcp
