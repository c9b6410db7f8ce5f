"""The two shapes every tool has: ``Tool`` (runs a call) and ``ToolDefinition`` (makes one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import (
    Protocol,
    TypeAlias,  # typing.TypeAlias is 3.10+, but keep one spelling
    runtime_checkable,
)

from ._content import ToolReturn
from ._meta import ToolMeta

__all__ = ["Tool", "ToolDefinition"]


@runtime_checkable
class Tool(Protocol):
    """Runs one tool call.

    ``execute`` receives the model's argument JSON and returns the text the
    model reads, or a ``ToolReturn`` for more than text (images, documents,
    data, metadata for the application). Failures are raised as ``ToolError``.
    An instance is created
    once, at registration, and then serves every call of the session, possibly
    several at once, so it must be safe to call concurrently.
    """

    async def execute(self, input_json: str) -> str | ToolReturn: ...


ToolDefinition: TypeAlias = Callable[[], tuple[ToolMeta, Tool]]
"""A factory for a tool: called exactly once, when the tool is registered."""
