"""A target that writes to file descriptor 1 itself while it is imported, past ``sys.stdout``.

``factory`` does it again when called: for ``mcp serve`` over stdio.
"""

import os
import sys

from llm_worker import ToolServer, tool, tool_definitions, tool_registry

os.write(1, b"banner at fd level\n")  # what a C extension's printf does
print("to sys.__stdout__, unflushed", file=sys.__stdout__)


@tool_registry
class FdNoisy:
    @tool
    async def ping(self) -> str:
        """Answer pong."""
        return "pong"


def factory() -> ToolServer:
    os.write(1, b"banner from the factory\n")
    server = ToolServer()
    server.register_tools(tool_definitions(FdNoisy()))
    return server
