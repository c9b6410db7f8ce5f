"""Anthropic's Messages API as an ``LlmClient``.

Needs the ``anthropic`` package: ``pip install 'llm-worker[anthropic]'``.

>>> client = AnthropicClient("claude-haiku-4-5")     # ANTHROPIC_API_KEY from the env
>>> worker = Worker(client)

How the conversation is sent:

- the system prompt → ``system`` (left out if empty);
- ``UserMessage(text)`` → ``{"role": "user", "content": text}``;
- ``AssistantMessage(text, tool_calls)`` → ``{"role": "assistant", "content": [...]}`` with a
  ``text`` block (if there is text) and one ``tool_use`` block per call (``id``,
  ``name``, ``input``: the call's ``input_json`` parsed; text that is not a JSON object
  is sent as ``{}``, so the conversation can go on, and the model reads the error
  result it got for that call). An assistant message with neither is left out: the
  API rejects empty content;
- consecutive ``ToolResult``\\s → one ``{"role": "user", "content": [...]}`` with a
  ``tool_result`` block per result (``tool_use_id``, ``content``, ``is_error``).

How the stream is read: ``message_start`` gives the input usage;
``content_block_start`` of a ``tool_use`` block → ``ToolUseStart(index, id, name)``
(``index`` is the block's); ``text_delta`` → ``TextDelta``; ``input_json_delta`` →
``ToolInputDelta(index, partial_json)``; ``content_block_stop`` of a tool block →
``ToolUseStop``; ``message_delta`` gives ``stop_reason`` and the output usage;
``message_stop`` ends the response → ``Completion``. Stop reasons are Anthropic's own
(``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``, ``pause_turn``,
``refusal``...), which is our vocabulary. Thinking and server-tool blocks are
skipped (they are not kept in the history, so extended thinking with tool use is
not supported).

Every failure is raised from ``stream()`` as ``ProviderError("anthropic", ...)``,
chained to the SDK's exception; an ``error`` event inside the stream gets the
HTTP status Anthropic documents for its error type (``overloaded_error`` → 529,
``rate_limit_error`` → 429...). The SDK retries connection errors, 408, 409, 429
and 5xx (529 included; ``max_retries`` times, 2 by default) before the stream
starts; a failure after the first byte is never retried.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "llm_worker.providers.anthropic needs the anthropic package: "
        "pip install 'llm-worker[anthropic]'"
    ) from exc

from .._client import (
    Completion,
    LlmEvent,
    LlmRequest,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from .._conversation import AssistantMessage, Message, ToolResult, Usage, UserMessage
from .._exceptions import ProviderError
from ._common import (
    TIMED_OUT,
    ProviderClient,
    body_text,
    connection_failed,
    error_field,
    is_retryable_status,
    stream_ended,
)

if TYPE_CHECKING:
    from anthropic import Omit
    from anthropic.types import (
        ContentBlockParam,
        MessageParam,
        RawMessageStreamEvent,
        ToolChoiceParam,
        ToolParam,
        ToolResultBlockParam,
    )

__all__ = ["AnthropicClient"]

PROVIDER = "anthropic"

DEFAULT_MAX_TOKENS = 4096

ERROR_STATUS: Mapping[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status Anthropic documents for each error type (used for ``error`` events)."""


class AnthropicClient(ProviderClient[anthropic.AsyncAnthropic, "RawMessageStreamEvent"]):
    """An ``LlmClient`` on Anthropic's Messages API (``POST /v1/messages``, streamed).

    Give it either a configured ``anthropic.AsyncAnthropic`` as ``client`` (you close
    it), or the settings to make one: ``api_key`` (default: ``ANTHROPIC_API_KEY``),
    ``base_url`` (default: ``ANTHROPIC_BASE_URL`` or Anthropic's), ``max_retries`` (SDK
    default 2) and ``timeout`` in seconds (SDK default 600). A client it made is closed
    by ``aclose()`` or ``async with``.

    ``max_tokens`` (required by the API) caps each response; ``extra_body`` is merged
    into every request body (``{"temperature": 0.2}``, ``{"tool_choice": ...}``...).
    """

    _provider = PROVIDER
    _format = "anthropic"
    _sdk_client_name = "AsyncAnthropic"
    _sdk_error = anthropic.AnthropicError

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        extra_body: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(
            model,
            client=client,
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            extra_body=extra_body,
        )
        self.max_tokens = max_tokens

    def _make_client(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int | None,
        timeout: float | None,
    ) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=anthropic.DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
            timeout=anthropic.NOT_GIVEN if timeout is None else timeout,
        )

    async def _open_stream(
        self, request: LlmRequest, tools: list[dict[str, Any]]
    ) -> anthropic.AsyncStream[RawMessageStreamEvent]:
        return await self._client.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=claude_messages(request.messages),
            system=request.system_prompt if request.system_prompt else anthropic.omit,
            tools=cast("list[ToolParam]", tools) if tools else anthropic.omit,
            tool_choice=claude_tool_choice(request) if tools else anthropic.omit,
            stream=True,
            extra_body=self.extra_body or None,
        )

    def _reader(self) -> _EventReader:
        return _EventReader()

    def _provider_error(self, exc: Exception) -> ProviderError:
        return provider_error(cast(anthropic.AnthropicError, exc))


def claude_tool_choice(request: LlmRequest) -> ToolChoiceParam | Omit:
    """The request's ``tool_choice`` as the Messages API's; left out for ``"auto"``.

    The API has no allowed-tools field: ``request.allowed_tools`` is enforced by the worker
    (a call to another tool gets an error result and does not run).
    """
    choice = request.tool_choice
    if choice == "auto":
        return anthropic.omit
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def tool_input(input_json: str) -> dict[str, object]:
    """A stored call's arguments as the ``input`` object; ``{}`` if they are not a JSON object."""
    if not input_json.strip():
        return {}
    try:
        value: object = json.loads(input_json)
    except ValueError:
        return {}
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def claude_messages(messages: Sequence[Message]) -> list[MessageParam]:
    """Our history as Messages API ``messages`` (the list in the module docstring)."""
    out: list[MessageParam] = []
    results: list[ToolResultBlockParam] = []
    for message in messages:
        if isinstance(message, ToolResult):
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": message.call_id,
                    "content": message.content,
                    "is_error": message.is_error,
                }
            )
            continue
        if results:
            out.append({"role": "user", "content": results})
            results = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            content: list[ContentBlockParam] = []
            if message.text:
                content.append({"type": "text", "text": message.text})
            content.extend(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": tool_input(call.input_json),
                }
                for call in message.tool_calls
            )
            if content:
                out.append({"role": "assistant", "content": content})
        else:
            raise TypeError(f"not a history item: {message!r}")
    if results:
        out.append({"role": "user", "content": results})
    return out


class _EventReader:
    """Turns Messages stream events into our events."""

    def __init__(self) -> None:
        # Open tool blocks: index -> the input the block started with, until a delta comes.
        self.tool_blocks: dict[int, dict[str, object] | None] = {}
        self.stop_reason: str | None = None
        self.input_tokens = 0
        self.cached_tokens = 0
        self.output_tokens = 0
        self.stopped = False

    def feed(self, event: RawMessageStreamEvent) -> list[LlmEvent]:
        if event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                return [TextDelta(delta.text)] if delta.text else []
            if delta.type == "input_json_delta" and event.index in self.tool_blocks:
                self.tool_blocks[event.index] = None  # the input is streamed
                return (
                    [ToolInputDelta(event.index, delta.partial_json)] if delta.partial_json else []
                )
            return []
        if event.type == "content_block_start":
            block = event.content_block
            if block.type == "text":
                return [TextDelta(block.text)] if block.text else []
            if block.type == "tool_use":
                self.tool_blocks[event.index] = block.input
                return [ToolUseStart(event.index, block.id, block.name)]
            return []
        if event.type == "content_block_stop":
            if event.index not in self.tool_blocks:
                return []
            initial = self.tool_blocks.pop(event.index)
            # A server that sends the whole input at the start and no deltas.
            head: list[LlmEvent] = (
                [ToolInputDelta(event.index, json.dumps(initial))] if initial else []
            )
            return [*head, ToolUseStop(event.index)]
        if event.type == "message_start":
            usage = event.message.usage
            self.cached_tokens = usage.cache_read_input_tokens or 0
            self.input_tokens = (
                usage.input_tokens + (usage.cache_creation_input_tokens or 0) + self.cached_tokens
            )
            self.output_tokens = usage.output_tokens
        elif event.type == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            delta_usage = event.usage
            self.output_tokens = delta_usage.output_tokens
            if delta_usage.input_tokens is not None:  # cumulative, when sent
                self.cached_tokens = delta_usage.cache_read_input_tokens or 0
                self.input_tokens = (
                    delta_usage.input_tokens
                    + (delta_usage.cache_creation_input_tokens or 0)
                    + self.cached_tokens
                )
        elif event.type == "message_stop":
            self.stopped = True
        return []

    def completion(self) -> Completion:
        if not self.stopped:
            raise stream_ended(PROVIDER)
        usage = Usage(self.input_tokens, self.output_tokens, cached_input_tokens=self.cached_tokens)
        return Completion(self.stop_reason or "end_turn", usage)


def provider_error(exc: anthropic.AnthropicError) -> ProviderError:
    """The SDK's exception as a ``ProviderError`` (see docs/providers.md, "Errors")."""
    if isinstance(exc, anthropic.APIStatusError):
        message = error_field(exc.body, "message") or body_text(exc.body) or exc.message
        if exc.status_code >= 400:
            status = exc.status_code
            return ProviderError(
                PROVIDER, message, status=status, retryable=is_retryable_status(status)
            )
        # An `error` event inside a 200 stream: the status its error type stands for.
        typed = ERROR_STATUS.get(error_field(exc.body, "type") or "")
        retryable = typed is None or is_retryable_status(typed)
        return ProviderError(PROVIDER, message, status=typed, retryable=retryable)
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderError(PROVIDER, TIMED_OUT, retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return connection_failed(PROVIDER, exc.__cause__, exc.message)
    return ProviderError(PROVIDER, str(exc) or type(exc).__name__)
