"""OpenAI's APIs, and every server that speaks them, as ``LlmClient``\\s.

Needs the ``openai`` package: ``pip install 'llm-worker[openai]'``.

>>> client = OpenAIChatClient("gpt-5-mini")                       # OPENAI_API_KEY from the env
>>> local = OpenAIChatClient("qwen3", base_url="http://localhost:11434/v1", api_key="ollama")
>>> responses = OpenAIResponsesClient("gpt-5-mini")
>>> worker = Worker(client)

``OpenAIChatClient`` speaks Chat Completions (``POST /chat/completions``), which
OpenAI-compatible servers implement. How the conversation is sent (``messages``):

- the system prompt → ``{"role": "system", "content": prompt}`` first (none if empty);
- ``UserMessage(text)`` → ``{"role": "user", "content": text}``;
- ``AssistantMessage(text, tool_calls)`` → ``{"role": "assistant", "content": text}``, or
  with tool calls ``{"role": "assistant", "content": text or None, "tool_calls": [{"id",
  "type": "function", "function": {"name", "arguments": input_json or "{}"}}]}``;
- ``ToolResult(call_id, content)`` → ``{"role": "tool", "tool_call_id": call_id,
  "content": content}``.

How its stream is read: ``delta.content`` (and ``delta.refusal``) → ``TextDelta``;
``delta.reasoning_content`` / ``delta.reasoning`` (vLLM, DeepSeek, OpenRouter...) →
``ReasoningDelta`` (shown, not sent back); the first ``tool_calls`` delta of an
``index`` → ``ToolUseStart(index, id, name)``, every ``arguments`` fragment →
``ToolInputDelta``; ``finish_reason`` → ``ToolUseStop`` for every started call; the end
of the stream → ``Completion`` with the mapped stop reason and the usage chunk
(``stream_options.include_usage``). Stop reasons: ``stop`` → ``end_turn``, ``tool_calls``
→ ``tool_use``, ``length`` → ``max_tokens``, anything else (``content_filter``...) as the
server sent it. A stream that ends (``[DONE]``) with no ``finish_reason`` is complete
when the usage chunk came or every tool call's arguments are a whole JSON object
(OpenRouter and Kimi send such streams): ``tool_use`` if it called tools, else
``end_turn``; otherwise it is a ``ProviderError`` (the answer may be cut short).

``OpenAIResponsesClient`` speaks the Responses API (``POST /responses``), statelessly:
every request carries the whole conversation as ``input`` (``store: false``), so
nothing depends on state kept on OpenAI's side, and asks for
``include: ["reasoning.encrypted_content"]``, so a reasoning model's reasoning can go
back with it. The system prompt is ``instructions``; a ``UserMessage`` is ``{"role":
"user", "content": text}``; an ``AssistantMessage`` is its reasoning items (below),
then ``{"role": "assistant", "content": text}`` (if it has text), then one ``{"type":
"function_call", "call_id", "name", "arguments"}`` per call; a ``ToolResult`` is
``{"type": "function_call_output", "call_id", "output"}``. Its stream:
``response.output_text.delta`` → ``TextDelta``; ``response.reasoning_summary_text.delta``
and ``response.reasoning_text.delta`` → ``ReasoningDelta``; ``response.output_item.done``
of a ``reasoning`` item → ``ProviderItem("openai", "reasoning", <the item as JSON>)``;
``response.output_item.added`` of a ``function_call`` → ``ToolUseStart(output_index,
call_id, name)``; ``response.function_call_arguments.delta`` → ``ToolInputDelta``;
``response.output_item.done`` → ``ToolUseStop``; ``response.completed`` →
``Completion("tool_use")`` if the model called tools, else ``"end_turn"``;
``response.incomplete`` → ``Completion("max_tokens")`` for ``max_output_tokens``, else
its reason; ``response.failed`` and ``error`` events → ``ProviderError``.

A kept reasoning item goes back as it came, in front of its message's text and calls
(where the API put it), without its ``id`` when ``store`` is false (nothing was stored
under it; ``encrypted_content`` carries the reasoning); an item with no
``encrypted_content`` then cannot be read back and is left out. With
``extra_body={"store": True}`` items keep their ids. ``OpenAIChatClient`` drops them.

Neither API has an error flag on a tool result: a failed call's content already says
so ("Invalid argument: ...", "Execution failed: ...", "Tool 'x' not found"...).

Every failure is raised from ``stream()`` as ``ProviderError("openai", ...)``, chained
to the SDK's exception. An error body is read as compatible servers write it too: the
status it names (``status_code``, Groq's in-stream errors; a numeric ``code``,
OpenRouter's) gives ``status`` and ``retryable``, and an upstream's own words
(OpenRouter's ``metadata.raw``, with ``metadata.provider_name``) are the message. The
SDK retries connection errors, 408, 409, 429 and 5xx (``max_retries`` times, 2 by
default) before the stream starts; a failure after the first byte is never retried
(``ProviderError.retryable`` tells whether it may help).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "llm_worker.providers.openai needs the openai package: pip install 'llm-worker[openai]'"
    ) from exc

from .._client import (
    Completion,
    LlmEvent,
    LlmRequest,
    ProviderItemDone,
    ReasoningDelta,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from .._conversation import (
    AssistantMessage,
    Message,
    ProviderItem,
    ToolResult,
    Usage,
    UserMessage,
)
from .._exceptions import ProviderError
from .._formats import export_tools
from .._meta import LlmToolDefinition
from ._common import (
    TIMED_OUT,
    HistoryPrefix,
    ProviderClient,
    body_status,
    body_text,
    compact_json,
    connection_failed,
    error_field,
    is_retryable_status,
    own_items,
    proxied_message,
    stream_ended,
)

if TYPE_CHECKING:
    from openai import Omit
    from openai.types.chat import (
        ChatCompletionChunk,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolChoiceOptionParam,
    )
    from openai.types.completion_usage import CompletionUsage
    from openai.types.responses import (
        FunctionToolParam,
        ResponseInputItemParam,
        ResponseStreamEvent,
        ResponseUsage,
    )
    from openai.types.responses.response_create_params import ToolChoice as ToolChoiceParam

__all__ = ["OpenAIChatClient", "OpenAIResponsesClient"]

PROVIDER = "openai"

STOP_REASONS: Mapping[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
}
"""Chat Completions ``finish_reason`` → our stop reason; others pass through unchanged."""

INCOMPLETE_REASONS: Mapping[str, str] = {"max_output_tokens": "max_tokens"}
"""Responses ``incomplete_details.reason`` → our stop reason; others pass through."""

RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded"})
"""Error codes of a failed response (or an ``error`` event) that a retry may fix."""

_ChunkT = TypeVar("_ChunkT")
_ItemT = TypeVar("_ItemT")


@dataclass(frozen=True)
class _Converted(Generic[_ItemT]):
    """A converted history's items, and whether ``store`` was on (ids go back then)."""

    items: list[_ItemT]
    stored: bool = False


class _OpenAIClient(ProviderClient[openai.AsyncOpenAI, _ChunkT], Generic[_ChunkT, _ItemT]):
    """What both clients share: the SDK, the settings, strict tools, the errors, and the
    history converted for the last request (``_ItemT``: one item of the request's list)."""

    _provider = PROVIDER
    _sdk_client_name = "AsyncOpenAI"
    _sdk_error = openai.OpenAIError

    def __init__(
        self,
        model: str,
        *,
        client: openai.AsyncOpenAI | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        strict: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
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
        self.strict = strict
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._history: HistoryPrefix[_Converted[_ItemT]] = HistoryPrefix()

    def _make_client(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int | None,
        timeout: float | None,
    ) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=openai.DEFAULT_MAX_RETRIES if max_retries is None else max_retries,
            timeout=openai.NOT_GIVEN if timeout is None else timeout,
        )

    def _export_tools(self, tools: Sequence[LlmToolDefinition]) -> list[dict[str, Any]]:
        return export_tools(tools, self._format, strict=self.strict)

    def _provider_error(self, exc: Exception) -> ProviderError:
        return provider_error(cast(openai.OpenAIError, exc))


class OpenAIChatClient(_OpenAIClient["ChatCompletionChunk", "ChatCompletionMessageParam"]):
    """An ``LlmClient`` on the Chat Completions API (``POST /chat/completions``, streamed).

    Give it either a configured ``openai.AsyncOpenAI`` as ``client`` (you close it), or
    the settings to make one: ``api_key`` (default: ``OPENAI_API_KEY``), ``base_url``
    (default: ``OPENAI_BASE_URL`` or OpenAI's; any OpenAI-compatible server works),
    ``max_retries`` (SDK default 2) and ``timeout`` in seconds (SDK default 600). A client
    it made is closed by ``aclose()`` or ``async with``.

    ``strict=True`` sends every tool with ``"strict": true`` and its schema rewritten
    for OpenAI's strict mode (``export_tools(..., "openai", strict=True)``; a schema
    that has no strict form raises ``ValueError`` from the first request).
    ``max_tokens`` is sent as ``max_completion_tokens``, ``temperature`` as is, and
    ``extra_body`` is merged into every request body (for server-specific fields,
    or ``{"max_tokens": n}`` for servers that predate ``max_completion_tokens``).
    """

    _format = "openai"

    async def _open_stream(
        self, request: LlmRequest, tools: list[dict[str, Any]]
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        return await self._client.chat.completions.create(
            model=self.model,
            messages=chat_messages(request.system_prompt, request.messages, self._history),
            tools=cast("list[ChatCompletionFunctionToolParam]", tools) if tools else openai.omit,
            tool_choice=chat_tool_choice(request) if tools else openai.omit,
            stream=True,
            stream_options={"include_usage": True},
            max_completion_tokens=openai.omit if self.max_tokens is None else self.max_tokens,
            temperature=openai.omit if self.temperature is None else self.temperature,
            extra_body=self.extra_body or None,
        )

    def _reader(self) -> _ChunkReader:
        return _ChunkReader()


class OpenAIResponsesClient(_OpenAIClient["ResponseStreamEvent", "ResponseInputItemParam"]):
    """An ``LlmClient`` on the Responses API (``POST /responses``, streamed, stateless).

    Takes the same arguments as ``OpenAIChatClient``. Every request sends the whole
    conversation with ``store: false`` and ``include: ["reasoning.encrypted_content"]``
    (pass ``extra_body={"store": True}`` to keep responses on OpenAI's side anyway);
    ``max_tokens`` is sent as ``max_output_tokens``. A reasoning model's reasoning
    items are kept with each message and sent back with it (reasoning settings go in
    ``extra_body``: ``{"reasoning": {"effort": "low", "summary": "auto"}}``).
    """

    _format = "openai-responses"

    async def _open_stream(
        self, request: LlmRequest, tools: list[dict[str, Any]]
    ) -> openai.AsyncStream[ResponseStreamEvent]:
        stored = self.extra_body.get("store") is True  # then item ids go back
        return await self._client.responses.create(
            model=self.model,
            input=responses_input(request.messages, self._history, stored=stored),
            instructions=request.system_prompt if request.system_prompt else openai.omit,
            tools=cast("list[FunctionToolParam]", tools) if tools else openai.omit,
            tool_choice=responses_tool_choice(request) if tools else openai.omit,
            stream=True,
            store=False,
            include=["reasoning.encrypted_content"],
            max_output_tokens=openai.omit if self.max_tokens is None else self.max_tokens,
            temperature=openai.omit if self.temperature is None else self.temperature,
            extra_body=self.extra_body or None,
        )

    def _reader(self) -> _ResponseEventReader:
        return _ResponseEventReader()


def chat_messages(
    system_prompt: str | None,
    messages: Sequence[Message],
    prefix: HistoryPrefix[_Converted[ChatCompletionMessageParam]] | None = None,
) -> list[ChatCompletionMessageParam]:
    """Our history as Chat Completions ``messages`` (see the module docstring).

    With ``prefix``, only the messages the last request did not have are converted.
    """
    start, done = prefix.resume(messages) if prefix is not None else (0, None)
    out: list[ChatCompletionMessageParam] = list(done.items) if done is not None else []
    for message in messages[start:] if start else messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResult):
            out.append(
                {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
            )
        elif isinstance(message, AssistantMessage):
            if not message.tool_calls:
                out.append({"role": "assistant", "content": message.text})
                continue
            calls: list[ChatCompletionMessageFunctionToolCallParam] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call.input_json)},
                }
                for call in message.tool_calls
            ]
            out.append({"role": "assistant", "content": message.text or None, "tool_calls": calls})
        else:
            raise TypeError(f"not a history item: {message!r}")
    if prefix is not None:
        prefix.keep(messages, _Converted(out))
    if system_prompt:
        return [{"role": "system", "content": system_prompt}, *out]
    return list(out)


def assistant_input(
    message: AssistantMessage, *, stored: bool = False
) -> list[ResponseInputItemParam]:
    """An assistant message's ``input`` items: its reasoning, its text, its function calls.

    Without ``stored`` (``store: false``) a reasoning item goes back without its id, and
    one without ``encrypted_content`` not at all (see the module docstring).
    """
    out: list[ResponseInputItemParam] = []
    for item in own_items(message, PROVIDER):
        if item.kind != "reasoning":
            continue
        reasoning = cast("dict[str, object]", item.json())
        if not stored:
            if not reasoning.get("encrypted_content"):
                continue
            reasoning.pop("id", None)
        out.append(cast("ResponseInputItemParam", reasoning))
    if message.text or not message.tool_calls:
        out.append({"role": "assistant", "content": message.text})
    out.extend(
        {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": _arguments(call.input_json),
        }
        for call in message.tool_calls
    )
    return out


def responses_input(
    messages: Sequence[Message],
    prefix: HistoryPrefix[_Converted[ResponseInputItemParam]] | None = None,
    *,
    stored: bool = False,
) -> list[ResponseInputItemParam]:
    """Our history as Responses ``input`` items (see the module docstring).

    With ``prefix``, only the messages the last request did not have are converted;
    ``stored`` is ``store: true`` (see ``assistant_input``).
    """
    start, done = prefix.resume(messages) if prefix is not None else (0, None)
    if done is not None and done.stored != stored:
        start, done = 0, None  # converted for the other setting of store
    out: list[ResponseInputItemParam] = list(done.items) if done is not None else []
    for message in messages[start:] if start else messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResult):
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": message.call_id,
                    "output": message.content,
                }
            )
        elif isinstance(message, AssistantMessage):
            out.extend(assistant_input(message, stored=stored))
        else:
            raise TypeError(f"not a history item: {message!r}")
    if prefix is not None:
        prefix.keep(messages, _Converted(out, stored))
    return list(out)


def chat_tool_choice(request: LlmRequest) -> ChatCompletionToolChoiceOptionParam | Omit:
    """The request's ``tool_choice`` and ``allowed_tools`` as Chat Completions' ``tool_choice``.

    Left out for the default (``"auto"``, every tool), so such requests stay as they were.
    """
    choice, allowed = request.tool_choice, request.allowed_tools
    if choice == "auto" and allowed is None:
        return openai.omit
    if choice not in ("auto", "required", "none"):
        return {"type": "function", "function": {"name": choice}}
    if allowed is None or choice == "none":
        return cast("ChatCompletionToolChoiceOptionParam", choice)
    return {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required" if choice == "required" else "auto",
            "tools": [{"type": "function", "function": {"name": name}} for name in allowed],
        },
    }


def responses_tool_choice(request: LlmRequest) -> ToolChoiceParam | Omit:
    """The request's ``tool_choice`` and ``allowed_tools`` as the Responses ``tool_choice``."""
    choice, allowed = request.tool_choice, request.allowed_tools
    if choice == "auto" and allowed is None:
        return openai.omit
    if choice not in ("auto", "required", "none"):
        return {"type": "function", "name": choice}
    if allowed is None or choice == "none":
        return cast("ToolChoiceParam", choice)
    return {
        "type": "allowed_tools",
        "mode": "required" if choice == "required" else "auto",
        "tools": [{"type": "function", "name": name} for name in allowed],
    }


def _arguments(input_json: str) -> str:
    # The worker reads empty arguments as {}; say so to the server, which may parse them.
    return input_json if input_json.strip() else "{}"


class _ChunkReader:
    """Turns ``chat.completion.chunk``s into events; only choice 0 is read."""

    def __init__(self) -> None:
        self.arguments: dict[int, list[str]] = {}  # started calls: index -> fragments
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed(self, chunk: ChatCompletionChunk) -> list[LlmEvent]:
        events: list[LlmEvent] = []
        if chunk.usage is not None:
            self.usage = _chat_usage(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = _reasoning_text(delta)
            if reasoning:
                events.append(ReasoningDelta(reasoning))
            if delta.content:
                events.append(TextDelta(delta.content))
            if delta.refusal:
                events.append(TextDelta(delta.refusal))
            for call in delta.tool_calls or ():
                function = call.function
                fragments = self.arguments.get(call.index)
                if fragments is None:
                    fragments = self.arguments[call.index] = []
                    call_id = call.id or f"call_{chunk.id}_{call.index}"
                    name = (function.name if function is not None else None) or ""
                    events.append(ToolUseStart(call.index, call_id, name))
                if function is not None and function.arguments:
                    fragments.append(function.arguments)
                    events.append(ToolInputDelta(call.index, function.arguments))
            if choice.finish_reason is not None and self.finish_reason is None:
                self.finish_reason = choice.finish_reason
                events.extend(ToolUseStop(index) for index in self.arguments)
        return events

    def end(self) -> list[LlmEvent]:
        if self.finish_reason is not None:
            reason = self.finish_reason
            return [Completion(STOP_REASONS.get(reason, reason), self.usage)]
        # No finish_reason before [DONE] (OpenRouter, Kimi): complete if the usage chunk
        # came, or if every call's arguments are whole; else the answer may be cut short.
        if self.usage is None and not (self.arguments and self._calls_whole()):
            raise stream_ended(PROVIDER)
        stops: list[LlmEvent] = [ToolUseStop(index) for index in self.arguments]
        return [*stops, Completion("tool_use" if self.arguments else "end_turn", self.usage)]

    def _calls_whole(self) -> bool:
        for fragments in self.arguments.values():
            try:
                value: object = json.loads("".join(fragments) or "{}")
            except ValueError:
                return False
            if not isinstance(value, dict):
                return False
        return True


def _reasoning_text(delta: object) -> str | None:
    # Not in the SDK's types: vLLM and DeepSeek send `reasoning_content`, OpenRouter `reasoning`.
    extra = getattr(delta, "model_extra", None)
    if not extra:
        return None
    fields = cast("dict[str, object]", extra)
    text = fields.get("reasoning_content") or fields.get("reasoning")
    return text if isinstance(text, str) else None


class _ResponseEventReader:
    """Turns Responses stream events into events; output items are told apart by index."""

    def __init__(self) -> None:
        # Open function calls: output_index -> whether argument deltas came.
        self.open_calls: dict[int, bool] = {}
        self.called = False
        self.result: Completion | None = None

    def feed(self, event: ResponseStreamEvent) -> list[LlmEvent]:
        if event.type == "response.output_text.delta" or event.type == "response.refusal.delta":
            return [TextDelta(event.delta)] if event.delta else []
        if event.type == "response.function_call_arguments.delta":
            if event.output_index not in self.open_calls or not event.delta:
                return []
            self.open_calls[event.output_index] = True
            return [ToolInputDelta(event.output_index, event.delta)]
        if (
            event.type == "response.reasoning_summary_text.delta"
            or event.type == "response.reasoning_text.delta"
        ):
            return [ReasoningDelta(event.delta)] if event.delta else []
        if event.type == "response.reasoning_summary_part.added":
            # Summary parts are paragraphs.
            return [ReasoningDelta("\n\n")] if event.summary_index > 0 else []
        if event.type == "response.output_item.added":
            item = event.item
            if item.type != "function_call":
                return []
            self.open_calls[event.output_index] = False
            self.called = True
            return [ToolUseStart(event.output_index, item.call_id, item.name)]
        if event.type == "response.output_item.done":
            item = event.item
            if item.type == "reasoning":
                data = compact_json(item.to_dict(mode="json"))
                return [ProviderItemDone(ProviderItem(PROVIDER, "reasoning", data))]
            if item.type != "function_call" or event.output_index not in self.open_calls:
                return []
            streamed = self.open_calls.pop(event.output_index)
            # A server that sends the arguments only with the finished item.
            head: list[LlmEvent] = []
            if not streamed and item.arguments:
                head.append(ToolInputDelta(event.output_index, item.arguments))
            return [*head, ToolUseStop(event.output_index)]
        if event.type == "response.completed":
            usage = _responses_usage(event.response.usage)
            self.result = Completion("tool_use" if self.called else "end_turn", usage)
        elif event.type == "response.incomplete":
            details = event.response.incomplete_details
            reason = (details.reason if details is not None else None) or "incomplete"
            usage = _responses_usage(event.response.usage)
            self.result = Completion(INCOMPLETE_REASONS.get(reason, reason), usage)
        elif event.type == "response.failed":
            error = event.response.error
            message = error.message if error is not None else "the response failed"
            code = error.code if error is not None else None
            raise ProviderError(PROVIDER, message, retryable=code in RETRYABLE_CODES)
        elif event.type == "error":
            retryable = event.code is None or event.code in RETRYABLE_CODES
            raise ProviderError(PROVIDER, event.message, retryable=retryable)
        return []

    def end(self) -> list[LlmEvent]:
        if self.result is None:
            raise stream_ended(PROVIDER)
        return [self.result]


def _chat_usage(usage: CompletionUsage) -> Usage:
    prompt, completion = usage.prompt_tokens_details, usage.completion_tokens_details
    return Usage(
        usage.prompt_tokens,
        usage.completion_tokens,
        cached_input_tokens=(prompt.cached_tokens or 0) if prompt is not None else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion is not None else 0,
    )


def _responses_usage(usage: ResponseUsage | None) -> Usage | None:
    if usage is None:
        return None
    # Typed as always there, but servers that speak the API do leave them out.
    given: object = getattr(usage, "input_tokens_details", None)
    made: object = getattr(usage, "output_tokens_details", None)
    return Usage(
        usage.input_tokens,
        usage.output_tokens,
        cached_input_tokens=getattr(given, "cached_tokens", None) or 0,
        reasoning_tokens=getattr(made, "reasoning_tokens", None) or 0,
    )


def provider_error(exc: openai.OpenAIError) -> ProviderError:
    """The SDK's exception as a ``ProviderError`` (see docs/providers.md, "Errors")."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = (
            proxied_message(exc.body)
            or error_field(exc.body, "message")
            or body_text(exc.body)
            or exc.message
        )
        return ProviderError(
            PROVIDER, message, status=status, retryable=is_retryable_status(status)
        )
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(PROVIDER, TIMED_OUT, retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return connection_failed(PROVIDER, exc.__cause__, exc.message)
    if isinstance(exc, openai.APIError):
        # An error sent inside a Chat Completions stream: {"error": {"message", "type"...}},
        # which compatible servers extend with the status it stands for.
        message = proxied_message(exc.body) or error_field(exc.body, "message") or exc.message
        named = body_status(exc.body)
        if named is not None:
            return ProviderError(
                PROVIDER, message, status=named, retryable=is_retryable_status(named)
            )
        kind = error_field(exc.body, "type")
        return ProviderError(PROVIDER, message, retryable=kind != "invalid_request_error")
    return ProviderError(PROVIDER, str(exc) or type(exc).__name__)
