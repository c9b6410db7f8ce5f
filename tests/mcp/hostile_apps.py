"""Tools that try to take an MCP server down, served in-process and as ``llm-worker mcp serve``.

Imported as ``hostile_apps`` in-process and as ``tests.mcp.hostile_apps`` by the
server subprocesses (see ``mcp_apps``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from llm_worker import ToolServer, tool, tool_definitions, tool_registry


class Custom(BaseException):
    """A BaseException of the tool's own."""


@tool_registry
class Hostile:
    @tool
    def parse(self, flag: str) -> str:
        """Parse a command line the model chose: argparse exits on a bad one."""
        parser = argparse.ArgumentParser(prog="tool", add_help=False)
        parser.add_argument("--count", type=int)
        return str(parser.parse_args([flag]).count)

    @tool
    async def interrupt(self) -> str:
        raise KeyboardInterrupt

    @tool
    async def custom(self) -> str:
        raise Custom("custom")

    @tool
    async def listing(self) -> str:
        """A file name that is not UTF-8, as os.listdir gives it (a lone surrogate)."""
        return "report-\udcff.txt"

    @tool
    async def echo(self, text: str) -> str:
        return text

    @tool
    def names(self, n: int) -> list[str]:
        """A typed result as long as the model asks: n file names (a structured result)."""
        return [f"file_{i:05d}.txt" for i in range(n)]

    @tool
    def sleep(self, seconds: float) -> str:
        """Block a worker thread (and say so, on stderr when served over stdio)."""
        print("sleeping", flush=True)
        time.sleep(seconds)
        return "slept"

    @tool
    def read_stdin(self) -> str:
        """Read stdin, and start a process that does: over stdio, both must read EOF, never
        the client's messages."""
        own = os.read(0, 1000)
        child = subprocess.run(
            [sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return f"own={own!r} child={child.stdout.strip()}"


def factory() -> ToolServer:
    server = ToolServer()
    server.register_tools(tool_definitions(Hostile()))
    return server
