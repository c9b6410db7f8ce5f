"""The conversation a worker keeps: user messages, assistant messages and tool results.

Every item is frozen, so a history can be shared without being changed
behind the worker's back. A hook that wants another call or result assigns a
new one: ``ctx.call = dataclasses.replace(ctx.call, input_json=...)``; the
history keeps what the model actually said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

__all__ = ["AssistantMessage", "Message", "ToolCall", "ToolResult", "Usage", "UserMessage"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made: ``id``, tool ``name`` and its argument JSON."""

    id: str
    name: str
    input_json: str


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call; ``is_error`` tells the model the call failed."""

    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Usage:
    """Tokens a response cost, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True)
class UserMessage:
    """What the user said."""

    text: str


@dataclass(frozen=True)
class AssistantMessage:
    """What the model answered: text and/or tool calls, in the order it made them."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    usage: Usage | None = field(default=None, compare=False)


Message: TypeAlias = UserMessage | AssistantMessage | ToolResult
"""One item of a worker's history."""
