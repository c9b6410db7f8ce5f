"""Tools that try to take an MCP server down, served in-process and as ``llm-worker mcp serve``.

Imported as ``hostile_apps`` in-process and as ``tests.mcp.hostile_apps`` by the
server subprocesses (see ``mcp_apps``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from llm_worker import Tool, ToolMeta, ToolServer, tool, tool_definitions, tool_registry


class Custom(BaseException):
    """A BaseException of the tool's own."""


class Tree(BaseModel):
    """A recursive model: its JSON nests two levels (an object, a list) per tree."""

    children: list[Tree] = []


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
    def grow(self, depth: int) -> Tree:
        """A chain of ``depth`` trees, each the only child of the next."""
        tree = Tree()
        for _ in range(depth):
            tree = Tree(children=[tree])
        return tree

    @tool(requires_approval=True)
    async def remove(self, path: str) -> str:
        """Remove a file (only once the host's user approved it)."""
        return f"removed {path}"

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


class Returns:
    """A hand-written tool that returns the same text, whatever it is called with."""

    def __init__(self, text: str) -> None:
        self.text = text

    async def execute(self, input_json: str) -> str:
        return self.text


def typed(name: str, schema: dict[str, Any], text: str) -> Callable[[], tuple[ToolMeta, Tool]]:
    """The definition of hand-written tool ``name``, with output schema ``schema``, that
    returns ``text``."""
    meta = ToolMeta(name=name, description=f"Returns {text[:20]}", output_schema=schema)
    return lambda: (meta, Returns(text))


def chained(levels: int, refs: int) -> tuple[dict[str, Any], str]:
    """An output schema of objects ``{"c": ...}`` reached through ``refs`` ``$ref``s each
    (jsonschema recurses through every one), and a value ``levels`` such objects deep."""
    defs: dict[str, Any] = {"node": {"type": "object", "properties": {"c": {"$ref": "#/$defs/r1"}}}}
    for i in range(1, refs):
        defs[f"r{i}"] = {"$ref": f"#/$defs/r{i + 1}"}
    defs[f"r{refs}"] = {"$ref": "#/$defs/node"}
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"c": value}
    return {"type": "object", "$defs": defs, "$ref": "#/$defs/node"}, json.dumps(value)


STRING = {"type": "object", "properties": {"name": {"type": "string"}}}
DANGLING = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nowhere"}}}

TYPED = [
    # A value jsonschema cannot check, nested 150 levels (the SDK writes about 250).
    typed("chained", *chained(150, 8)),
    # A lone surrogate's escape: JSON reads it, and no wire can carry it.
    typed("unpaired", STRING, '{"name": "report-\\udcff.txt"}'),
    # A $ref that points to nothing: jsonschema raises, at the check, what is no ValueError.
    typed("dangling", DANGLING, '{"a": 1}'),
]


def factory() -> ToolServer:
    server = ToolServer()
    server.register_tools([*tool_definitions(Hostile()), *TYPED])
    return server
