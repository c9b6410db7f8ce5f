"""Applications and factories the MCP tests serve, in-process and as ``llm-worker mcp serve``.

Imported as ``mcp_apps`` in-process (pytest puts ``tests/mcp`` on ``sys.path``)
and as ``tests.mcp.mcp_apps`` by the server subprocesses (run from the
repository root). This directory has no ``__init__.py`` on purpose: as a
package named ``mcp`` it would hide the SDK.
"""

from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import BaseModel

from llm_worker import (
    Description,
    ExecutionFailedError,
    Tool,
    ToolMeta,
    ToolServer,
    ToolServerHandle,
    tool,
    tool_definitions,
    tool_registry,
)


class Point(BaseModel):
    x: int
    y: int


@tool_registry
class Probe:
    """Small tools with exactly predictable results."""

    @tool
    async def echo(
        self,
        text: Annotated[str, Description("Text to send back")],
        times: int = 1,
    ) -> str:
        """Send the text back, repeated."""
        return text * times

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def centroid(
        self, points: list[Point], unit: Literal["px", "pt"] = "px"
    ) -> dict[str, int]:
        """The centroid of some points, rounded down."""
        if not points:
            raise ExecutionFailedError("no points given")
        n = len(points)
        return {"x": sum(p.x for p in points) // n, "y": sum(p.y for p in points) // n}

    @tool
    async def pid(self) -> int:
        """The id of the process serving this tool."""
        return os.getpid()

    @tool
    async def shout(self, text: str) -> str:
        """Print the text (to stdout!) and return it in capitals."""
        print(f"shouting {text}")
        return text.upper()


class BrokenTool:
    """A hand-written tool with a bug: it raises something that is not a ToolError."""

    async def execute(self, input_json: str) -> str:
        raise KeyError("secret internal detail")


class NotTextTool:
    """A hand-written tool that returns a number instead of text."""

    async def execute(self, input_json: str) -> str:
        return 5  # type: ignore[return-value]


def broken_definition() -> tuple[ToolMeta, Tool]:
    return ToolMeta(name="broken", description="Always breaks."), BrokenTool()


def not_text_definition() -> tuple[ToolMeta, Tool]:
    return ToolMeta(name="not_text", description="Returns a number."), NotTextTool()


def factory() -> ToolServer:
    """The server every MCP test serves: Probe's tools and two broken hand-written ones."""
    server = ToolServer()
    server.register_tools([*tool_definitions(Probe()), broken_definition, not_text_definition])
    return server


def handle_factory() -> ToolServerHandle:
    return factory().handle()


def printing_factory() -> ToolServer:
    print("hello from the factory")
    return factory()


# -- Factories `llm-worker mcp serve` must refuse. -------------------------------------------

NOT_CALLABLE = 42


def raising_factory() -> ToolServer:
    raise RuntimeError("database is down\n  (second line)")


def wrong_type_factory() -> list[int]:
    return [1, 2]


async def async_factory() -> ToolServer:
    return factory()


def needs_arguments(project: str) -> ToolServer:
    return factory()
