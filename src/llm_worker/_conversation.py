"""The conversation a worker keeps: user messages, assistant messages and tool results.

Every item is frozen, so a history can be shared without being changed
behind the worker's back. A hook that wants another call or result assigns a
new one: ``ctx.call = dataclasses.replace(ctx.call, input_json=...)``; the
history keeps what the model actually said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

__all__ = [
    "AssistantMessage",
    "Message",
    "RunUsage",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UserMessage",
]


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
    """Tokens one response cost, as the provider reported them.

    ``input_tokens`` counts every input token, ``cached_input_tokens`` of them
    read from the provider's prompt cache; ``output_tokens`` counts every
    output token, ``reasoning_tokens`` of them spent on hidden reasoning. A
    provider that does not report a figure leaves it at 0.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True)
class RunUsage:
    """What a run (or a whole conversation) has cost so far.

    ``requests`` counts model requests that got a complete response,
    ``tool_calls`` the tool calls those responses made (run or not); the token
    fields add up each response's ``Usage``.
    """

    requests: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def add_response(self, tool_calls: int, usage: Usage | None) -> RunUsage:
        """This usage plus one response that made ``tool_calls`` calls and cost ``usage``."""
        if usage is None:
            return RunUsage(
                self.requests + 1,
                self.tool_calls + tool_calls,
                self.input_tokens,
                self.output_tokens,
                self.cached_input_tokens,
                self.reasoning_tokens,
            )
        return RunUsage(
            self.requests + 1,
            self.tool_calls + tool_calls,
            self.input_tokens + usage.input_tokens,
            self.output_tokens + usage.output_tokens,
            self.cached_input_tokens + usage.cached_input_tokens,
            self.reasoning_tokens + usage.reasoning_tokens,
        )

    def __add__(self, other: RunUsage) -> RunUsage:
        return RunUsage(
            self.requests + other.requests,
            self.tool_calls + other.tool_calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
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
