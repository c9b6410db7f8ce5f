"""The conversation a worker keeps: user messages, assistant messages and tool results.

Every item is frozen, so a history can be shared without being changed
behind the worker's back. A hook that wants another call or result assigns a
new one: ``ctx.call = dataclasses.replace(ctx.call, input_json=...)``; the
history keeps what the model actually said.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar, overload

from typing_extensions import final

from ._content import ContentPart
from ._safe_text import valid_unicode

__all__ = [
    "FILTERED_STOP_REASONS",
    "MAX_COUNT",
    "AssistantMessage",
    "HistoryView",
    "Message",
    "ProviderItem",
    "RunUsage",
    "ToolCall",
    "ToolResult",
    "Usage",
    "UserMessage",
    "valid_message",
]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made: ``id``, tool ``name`` and its argument JSON."""

    id: str
    name: str
    input_json: str


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call; ``is_error`` tells the model the call failed.

    ``content`` is its text. A rich result also has ``parts``, its whole content
    in order (text, images, documents, data: see ``ToolReturn``); ``content`` is
    then the text of those parts. ``metadata`` is for the application, never
    sent to a model.
    """

    call_id: str
    content: str
    is_error: bool = False
    parts: tuple[ContentPart, ...] = ()
    metadata: Any = field(default=None, hash=False)

    def __repr__(self) -> str:
        rich = f", parts={self.parts!r}" if self.parts else ""
        if self.metadata is not None:
            rich += f", metadata={self.metadata!r}"
        return (
            f"ToolResult(call_id={self.call_id!r}, content={self.content!r}, "
            f"is_error={self.is_error!r}{rich})"
        )


MAX_COUNT = 2**63 - 1
"""The largest count (tokens, requests, tool calls, turns) a run keeps: a signed 64-bit
int, as providers and OpenTelemetry count. A client reporting more is refused, a run
state holding more does not load, and the run's totals stop there: Python's ints have
no bound, but one of more than 4 300 digits cannot even be written as text."""


@dataclass(frozen=True)
class Usage:
    """Tokens one response cost, as the provider reported them.

    ``input_tokens`` counts every input token, ``cached_input_tokens`` of them
    read from the provider's prompt cache; ``output_tokens`` counts every
    output token, ``reasoning_tokens`` of them spent on hidden reasoning. A
    provider that does not report a figure leaves it at 0. Each is an ``int``
    from 0 to ``MAX_COUNT`` (2**63 - 1).
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

    def __sub__(self, other: RunUsage) -> RunUsage:
        """What this usage adds to an earlier one, ``other`` (a resume's, over its run's)."""
        return RunUsage(
            self.requests - other.requests,
            self.tool_calls - other.tool_calls,
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.cached_input_tokens - other.cached_input_tokens,
            self.reasoning_tokens - other.reasoning_tokens,
        )


@dataclass(frozen=True)
class UserMessage:
    """What the user said."""

    text: str


@dataclass(frozen=True)
class ProviderItem:
    """Something a provider sent with a response that only that provider reads back.

    Reasoning with its signature, an encrypted reasoning item, a server tool's
    result, citations: kept with the message, exactly as sent (``data`` is its
    JSON text), so the client that made it can send it back on later requests.
    Another provider's client leaves it out. ``kind`` says what it is
    (``"thinking"``, ``"reasoning"``...) for code that wants to show it.
    """

    provider: str
    kind: str
    data: str

    def json(self) -> object:
        """``data``, parsed."""
        import json

        return json.loads(self.data)


@dataclass(frozen=True)
class AssistantMessage:
    """What the model answered: text and/or tool calls, in the order it made them.

    ``provider_items`` are what the provider needs back on later requests (see
    ``ProviderItem``); a client of another provider ignores them. ``usage``,
    ``response_id`` and ``model`` (the model that answered) are the provider's
    account of the response, when it gives one; equality ignores them.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop_reason: str | None = None
    usage: Usage | None = field(default=None, compare=False)
    provider_items: tuple[ProviderItem, ...] = ()
    response_id: str | None = field(default=None, compare=False)
    model: str | None = field(default=None, compare=False)


Message: TypeAlias = UserMessage | AssistantMessage | ToolResult

FILTERED_STOP_REASONS = frozenset(
    {
        "content_filter",  # Chat Completions' and Responses'
        # Gemini's reasons for withholding content (FinishReason / BlockedReason, lower-cased)
        "safety",
        "recitation",
        "blocklist",
        "prohibited_content",
        "spii",
        "image_safety",
        "image_prohibited_content",
        "image_recitation",
        "jailbreak",
        "model_armor",
    }
)
"""The ``AssistantMessage.stop_reason`` values of a response a provider's content filter
or policy withheld."""
"""One item of a worker's history."""

_ItemT = TypeVar("_ItemT")


def valid_message(message: _ItemT) -> _ItemT:
    """``message`` with each lone surrogate of its texts (a call's, a part's...), which
    UTF-8 cannot encode, replaced by U+FFFD; ``message`` itself when it has none."""
    changes: dict[str, Any] = {}
    for name in _text_fields(type(message)):
        value = getattr(message, name)
        if isinstance(value, str):
            valid: Any = valid_unicode(value)
        elif isinstance(value, tuple) and value:
            items: tuple[object, ...] = value  # pyright: ignore[reportUnknownVariableType]
            valid = tuple(valid_message(item) for item in items)
            if all(a is b for a, b in zip(valid, items, strict=True)):
                continue
        else:
            continue
        if valid is not value:
            changes[name] = valid
    return dataclasses.replace(message, **changes) if changes else message  # type: ignore[type-var]


def _text_fields(kind: type) -> tuple[str, ...]:
    """The fields of a history item's dataclass that may hold text (not ``metadata``)."""
    if not dataclasses.is_dataclass(kind):
        return ()
    return tuple(f.name for f in dataclasses.fields(kind) if f.name != "metadata")


@final
class HistoryView(Sequence[Message]):
    """The first ``length`` items of a history that only ever grows: a snapshot in O(1).

    What a request carries as its ``messages``: later appends to the history do not
    show in it, and it compares equal to any sequence with the same items.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[Message], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self._items[: self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        items = self._items
        return (items[i] for i in range(self._length))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HistoryView):
            return tuple(self) == tuple(other)
        if isinstance(other, (tuple, list)):
            return tuple(self) == tuple(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"
