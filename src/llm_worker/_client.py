"""The ``LlmClient`` protocol: a request goes in, a stream of events comes out.

A client turns one ``LlmRequest`` into provider calls and yields, in order:
text deltas; for each tool call a ``ToolUseStart``, any number of
``ToolInputDelta`` fragments (split anywhere, even inside a JSON escape) and
a ``ToolUseStop``; and last a ``Completion``. Fragments of different tool
calls may interleave; ``index`` tells them apart. The worker assembles them.
A client may also yield ``ReasoningDelta`` (reasoning text to show, not sent
back) and ``ProviderItemDone`` (an opaque item the provider needs back, kept
in the message's ``provider_items``, in the order they came).

The worker checks each value before the history keeps it (an ``index`` is an
``int``; the text, a call's id, name and fragments ``str``; token counts
``int`` >= 0; a provider item's fields ``str``, its ``data`` JSON text) and
raises ``LlmClientError`` for anything else; nothing of such a response
enters the history.

A client that can constrain the final answer to a JSON Schema (structured
output) says so with a ``supports_output_format = True`` attribute; it then
gets ``LlmRequest.output_format`` when a run asks for typed output. For any
other client the worker asks through a tool instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ._conversation import Message, ProviderItem, Usage
from ._meta import LlmToolDefinition

__all__ = [
    "Completion",
    "LlmClient",
    "LlmEvent",
    "LlmRequest",
    "OutputFormat",
    "ProviderItemDone",
    "ReasoningDelta",
    "TextDelta",
    "ToolChoice",
    "ToolInputDelta",
    "ToolUseStart",
    "ToolUseStop",
]

ToolChoice: TypeAlias = Literal["auto", "required", "none"] | str
"""Whether the model may call tools: ``"auto"`` (it decides), ``"required"`` (it must call
one), ``"none"`` (it may not), or a tool's name (it must call that tool)."""


@dataclass(frozen=True)
class OutputFormat:
    """The JSON Schema (an object) the model's final answer must match: structured output.

    Only sent to a client whose ``supports_output_format`` is true; it passes it
    in the provider's own field (OpenAI ``response_format`` / ``text.format``,
    Anthropic ``output_config.format``, Gemini ``response_json_schema``).
    ``name`` is a valid identifier for providers that want one.
    """

    name: str
    schema_json: str

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema, parsed (a fresh copy)."""
        value: dict[str, Any] = json.loads(self.schema_json)
        return value


@dataclass(frozen=True)
class LlmRequest:
    """Everything the model is sent: system prompt, history and sorted tool definitions.

    ``tools`` is always every registered tool, so the prompt prefix a provider
    caches stays the same; ``allowed_tools`` (sorted names, ``None`` for all)
    and ``tool_choice`` say which of them the model may call in this request.
    A client sends them in the provider's own fields where it has them; the
    worker refuses a call outside ``allowed_tools`` whatever the model does.
    ``output_format`` is the schema of a structured final answer, if the run
    asks for one (see ``OutputFormat``).
    """

    system_prompt: str | None
    messages: Sequence[Message]
    tools: Sequence[LlmToolDefinition]
    tool_choice: ToolChoice = "auto"
    allowed_tools: tuple[str, ...] | None = None
    output_format: OutputFormat | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant's text."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning, as the provider lets it be shown (a summary...)."""

    text: str


@dataclass(frozen=True)
class ProviderItemDone:
    """An item of the response only its provider reads back (see ``ProviderItem``)."""

    item: ProviderItem


@dataclass(frozen=True)
class ToolUseStart:
    """The model starts tool call ``call_id`` to tool ``name``; ``index`` names it below."""

    index: int
    call_id: str
    name: str


@dataclass(frozen=True)
class ToolInputDelta:
    """A fragment of the argument JSON of the tool call at ``index``."""

    index: int
    fragment: str


@dataclass(frozen=True)
class ToolUseStop:
    """The tool call at ``index`` is complete."""

    index: int


@dataclass(frozen=True)
class Completion:
    """The response is complete: why it stopped, and what it cost if known.

    ``response_id`` and ``model`` are the provider's id of the response and the
    model that answered (an alias such as ``gpt-4o`` names a dated model here),
    when the provider says. Each of them and ``stop_reason`` is a ``str`` or
    ``None``; ``usage``'s figures are ``int``s of at least 0 (budgets add them up).
    """

    stop_reason: str
    usage: Usage | None = None
    response_id: str | None = None
    model: str | None = None


LlmEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ProviderItemDone
    | ToolUseStart
    | ToolInputDelta
    | ToolUseStop
    | Completion
)


@runtime_checkable
class LlmClient(Protocol):
    """A model behind the worker. ``llm_worker.testing.ScriptedClient`` is one for tests."""

    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        """Send ``request`` and yield the response as events, ending with a ``Completion``."""
        ...
