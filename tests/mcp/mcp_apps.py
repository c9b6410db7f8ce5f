"""Applications and factories the MCP tests serve, in-process and as ``llm-worker mcp serve``.

Imported as ``mcp_apps`` in-process (pytest puts ``tests/mcp`` on ``sys.path``)
and as ``tests.mcp.mcp_apps`` by the server subprocesses (run from the
repository root). This directory has no ``__init__.py`` on purpose: as a
package named ``mcp`` it would hide the SDK.
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Literal

import anyio
from pydantic import BaseModel

from llm_worker import (
    DataPart,
    Description,
    ExecutionFailedError,
    MediaPart,
    TextPart,
    Tool,
    ToolAnnotations,
    ToolCallContext,
    ToolContext,
    ToolMeta,
    ToolReturn,
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


# -- Rich results, annotations, structured results, approval, progress. -----------------------

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt "
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n%%EOF"
MP4 = b"\x00\x00\x00\x18ftypmp42"

# Every kind of part, in the order `chart` returns them.
CHART_PARTS = [
    TextPart("The chart:"),
    MediaPart("image/png", data=PNG),
    MediaPart("audio/wav", data=WAV),
    MediaPart("application/pdf", data=PDF, name="report q3.pdf"),
    MediaPart("video/mp4", data=MP4),
    MediaPart("image/png", url="https://example.com/chart.png"),
    DataPart.of({"points": [1, 2, 3]}),
]


class Stats(BaseModel):
    count: int
    mean: float


def overwrites(ctx: ToolCallContext) -> bool:
    """An approval policy: only a call that would overwrite something needs approval."""
    return json.loads(ctx.call.input_json).get("overwrite") is True


@tool_registry
class Gallery:
    """Tools with rich and structured results, annotations, approval and progress."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.copied: list[str] = []

    @tool(title="Quarterly chart", annotations=ToolAnnotations(read_only=True, idempotent=True))
    async def chart(self) -> ToolReturn:
        """Draw the quarterly chart."""
        return ToolReturn(CHART_PARTS, metadata={"rows": 3, "secret": "for the app only"})

    @tool
    async def stats(self, values: list[float]) -> Stats:
        """Count and average some numbers."""
        return Stats(count=len(values), mean=sum(values) / len(values))

    @tool
    async def count(self, text: str) -> int:
        """Count the words of a text."""
        return len(text.split())

    @tool(annotations=ToolAnnotations(destructive=True, open_world=False), requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a file."""
        self.deleted.append(path)
        return f"deleted {path}"

    @tool(requires_approval=overwrites)
    async def copy(self, path: str, overwrite: bool = False) -> str:
        """Copy a file."""
        self.copied.append(path)
        return f"copied {path}"

    @tool
    async def crunch(self, ctx: ToolContext, steps: int) -> str:
        """Crunch numbers, reporting each step."""
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps, f"step {step}")
            await anyio.sleep(0.01)
        return f"crunched {steps}"


def rich_factory() -> ToolServer:
    """The server of the rich-result, approval and progress tests."""
    server = ToolServer()
    server.register_tools(tool_definitions(Gallery()))
    return server


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
