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
  "content": content}``. Tool messages are text only: for a result with media, the
  message has its text and a note naming them, and the media go in one ``user``
  message after the turn's tool messages (``chat_tool_message``, ``chat_media_part``).

How its stream is read: ``delta.content`` (and ``delta.refusal``) → ``TextDelta``;
``delta.reasoning_content`` / ``delta.reasoning`` (DeepSeek, Kimi, vLLM, Ollama, OpenRouter,
Groq...) → ``ReasoningDelta``, and the whole reasoning is kept with the message
(``ProviderItem("openai", "reasoning_content", '{"<field>":text}')``) and sent back in that
field of its assistant message, the one the server used (DeepSeek and Kimi refuse a tool
loop whose reasoning was dropped; Qwen's template reads it back); OpenRouter's
``delta.reasoning_details`` entries are kept in that item too (``"reasoning_details":
[...]``, in order, the streamed pieces of one ``reasoning.text`` entry put together) and
sent back on the message unmodified, as OpenRouter requires; the ``tool_calls`` deltas
of an ``index`` → ``ToolUseStart(index, id, name)`` once the name is whole (its pieces
joined, as the SDK does: when arguments begin, another call begins or the response
ends; a call without an id gets a random one), every ``arguments`` fragment →
``ToolInputDelta``, a call's ``extra_content`` (Gemini's OpenAI-compatible thought
signature) → ``ProviderItem("openai", "extra_content", '{"id":...,"extra_content":...}')``,
sent back on that call; ``finish_reason`` → ``ToolUseStop`` for every started call; the end
of the stream → ``Completion`` with the mapped stop reason and the usage chunk
(``stream_options.include_usage``). Stop reasons: ``stop`` → ``end_turn`` (``refusal``
if ``delta.refusal`` text came: the model refused), ``tool_calls`` → ``tool_use``,
``length`` → ``max_tokens``, anything else (``content_filter``...) as the server sent it.
A stream that ends (``[DONE]``) with no ``finish_reason`` is complete when the usage
chunk came or every tool call's arguments are a whole JSON object (OpenRouter and Kimi
send such streams): ``tool_use`` if it called tools, else ``end_turn`` (or ``refusal``);
otherwise it is a ``ProviderError`` (the answer may be cut short).

``OpenAIResponsesClient`` speaks the Responses API (``POST /responses``), statelessly:
every request carries the whole conversation as ``input`` (``store: false``), so
nothing depends on state kept on OpenAI's side, and asks for
``include: ["reasoning.encrypted_content"]``, so a reasoning model's reasoning can go
back with it. The system prompt is ``instructions``; a ``UserMessage`` is ``{"role":
"user", "content": text}``; an ``AssistantMessage`` is its reasoning items (below),
then ``{"role": "assistant", "content": text}`` (if it has text), then one ``{"type":
"function_call", "call_id", "name", "arguments"}`` per call; a ``ToolResult`` is
``{"type": "function_call_output", "call_id", "output"}``, whose ``output`` is the
result's text, or for a result with media its parts as ``input_text`` /
``input_image`` / ``input_file`` items (``function_output``). Its stream:
``response.output_text.delta`` and ``response.refusal.delta`` → ``TextDelta``;
``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta`` →
``ReasoningDelta``; ``response.output_item.done`` of a ``reasoning`` item →
``ProviderItem("openai", "reasoning", <the item as JSON>)``;
``response.output_item.added`` of a ``function_call`` → ``ToolUseStart(output_index,
call_id, name)``; ``response.function_call_arguments.delta`` → ``ToolInputDelta`` (the
arguments of ``.done``, or of the finished item, when no delta came);
``response.output_item.done`` → ``ToolUseStop``; ``response.completed`` → the calls of
its ``output`` that no ``output_item`` event started, told by ``call_id`` or item id
(start, arguments, stop), then ``Completion("tool_use")`` if the model called tools, else
``"refusal"`` if it refused (a ``response.refusal.*`` event, or a ``refusal`` part in the
output), else ``"end_turn"``;
``response.incomplete`` → ``Completion("max_tokens")`` for ``max_output_tokens``, else
its reason; ``response.failed`` and ``error`` events → ``ProviderError``.

A kept reasoning item goes back as it came, in front of its message's text and calls
(where the API put it), without its ``id`` when ``store`` is false (nothing was stored
under it; ``encrypted_content`` carries the reasoning); an item with no
``encrypted_content`` then cannot be read back and is left out. With
``extra_body={"store": True}`` items keep their ids. ``OpenAIChatClient`` drops them.

A run's structured answer (``request.output_format``) goes as ``response_format``
(Chat Completions) or ``text.format`` (Responses), a ``json_schema``, strict when the
schema has a strict form (``json_schema_format``). With ``strict=True``, the nulls strict
mode introduces into tool arguments are taken out of each call's arguments before the
worker gets them, which then come as one fragment once the call is complete.

Neither API has an error flag on a tool result: a failed call's content already says
so ("Invalid argument: ...", "Execution failed: ...", "Tool 'x' not found"...).

Every failure is raised from ``stream()`` as ``ProviderError("openai", ...)``, chained
to the SDK's exception. An error body is read as compatible servers write it too: the
status it names (``status_code``, Groq's in-stream errors; a numeric ``code``,
OpenRouter's) gives ``status`` and ``retryable``, and an upstream's own words
(OpenRouter's ``metadata.raw``, with ``metadata.provider_name``) are the message. A
message the server chose (the body's, an ``error`` event's, a failed response's) is on
one line, 300 characters at most (``body_text``). The SDK retries connection errors,
408, 409, 429 and 5xx (``max_retries`` times, 2 by default) before the stream starts;
a failure after the first byte is never retried (``ProviderError.retryable`` tells
whether it may help).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

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
    OutputFormat,
    ProviderItemDone,
    ReasoningDelta,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from .._content import MediaPart
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
from .._model_texts import MEDIA_DOCUMENT_TEXT, MEDIA_OF_RESULT, media_label
from .._strict_schema import StrictSchemaError, drop_introduced_nulls, strict_schema
from ._common import (
    TIMED_OUT,
    HistoryPrefix,
    ProviderClient,
    body_status,
    body_text,
    compact_json,
    detail_text,
    error_field,
    exception_text,
    given_text,
    http_failure,
    is_retryable_status,
    output_schema,
    own_items,
    proxied_message,
    retry_after,
    sdk_request,
    stream_ended,
)
from ._parts import (
    attached_note,
    base64_of,
    data_url,
    file_name,
    has_media,
    mime_type,
    not_sent,
    plain_text,
    result_blocks,
    sendable,
)

if TYPE_CHECKING:
    from openai import Omit
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionChunk,
        ChatCompletionContentPartParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionToolChoiceOptionParam,
        ChatCompletionToolMessageParam,
    )
    from openai.types.chat.completion_create_params import ResponseFormat
    from openai.types.completion_usage import CompletionUsage
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseFunctionCallOutputItemParam,
        ResponseFunctionToolCall,
        ResponseInputFileContentParam,
        ResponseInputItemParam,
        ResponseStreamEvent,
        ResponseTextConfigParam,
        ResponseUsage,
    )
    from openai.types.responses.response_create_params import ToolChoice as ToolChoiceParam

__all__ = ["OpenAIChatClient", "OpenAIResponsesClient"]

PROVIDER = "openai"
REASONING_CONTENT = "reasoning_content"  # the kind of a Chat response's kept reasoning
# Where servers put a response's reasoning, not in the SDK's types: DeepSeek, Kimi, vLLM
# `reasoning_content`; OpenRouter, Ollama, Groq `reasoning`.
REASONING_FIELDS = ("reasoning_content", "reasoning")
# OpenRouter's reasoning blocks (text, summaries, encrypted reasoning and signatures),
# which must go back unmodified on their assistant message.
REASONING_DETAILS = "reasoning_details"
# Fields of a Chat assistant message kept with its reasoning, and sent back.
KEPT_MESSAGE_FIELDS = (*REASONING_FIELDS, REASONING_DETAILS)
# What a server adds to a tool call, which must go back on that call: Gemini's
# OpenAI-compatible endpoint puts the call's thought signature in
# `extra_content.google.thought_signature`. Also the kind of the item that keeps it.
EXTRA_CONTENT = "extra_content"

STOP_REASONS: Mapping[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
}
"""Chat Completions ``finish_reason`` → our stop reason; others pass through unchanged."""

INCOMPLETE_REASONS: Mapping[str, str] = {"max_output_tokens": "max_tokens"}
"""Responses ``incomplete_details.reason`` → our stop reason; others pass through."""

REFUSAL = "refusal"
"""The stop reason of a response that refused (Anthropic's word): both APIs give a
refusal as text of its own kind, and end it as any answer."""

RESPONSE_FAILED = "the response failed"
"""The message of a failed response (or an ``error`` event) whose error says nothing."""

RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded"})
"""Error codes of a failed response (or an ``error`` event, or a 200 whose body is an
error) that a retry may fix."""

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
"""The image types both APIs take (as a data URL or a URL)."""

URL_SCHEMES = frozenset({"http", "https"})
"""The URLs both APIs fetch (``image_url``, Responses' ``file_url``): http(s). A part's
``data:`` URL is sent as its bytes (an image's as a data URL again, a file's as
``file_data``), a ``gs://`` one as a note (``sendable``)."""

AUDIO_FORMATS: Mapping[str, Literal["wav", "mp3"]] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
"""The audio types Chat Completions takes (``input_audio``, base64), and their ``format``."""

_ChunkT = TypeVar("_ChunkT")
_ItemT = TypeVar("_ItemT")


@dataclass(frozen=True)
class _Converted(Generic[_ItemT]):
    """A converted history's items, whether ``store`` was on (ids go back then), and (Chat
    Completions) the media of the last tool results, for the user message after them."""

    items: list[_ItemT]
    stored: bool = False
    attachments: Sequence[ChatCompletionContentPartParam] = ()


class _OpenAIClient(ProviderClient[openai.AsyncOpenAI, _ChunkT], Generic[_ChunkT, _ItemT]):
    """What both clients share: the SDK, the settings, strict tools, the errors, and the
    history converted for the last request (``_ItemT``: one item of the request's list)."""

    _provider = PROVIDER
    _gen_ai_provider = "openai"
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
        self._output: tuple[OutputFormat, _JsonSchema] | None = None

    def _json_schema(self, output_format: OutputFormat) -> _JsonSchema:
        # A run sends the same format with every request: rewrite it once.
        if self._output is None or self._output[0] != output_format:
            self._output = (output_format, json_schema_format(output_format))
        return self._output[1]

    def _null_dropper(self, request: LlmRequest) -> _NullDropper | None:
        """What takes the nulls strict mode introduced out of the arguments (strict only)."""
        return _NullDropper(request.tools) if self.strict and request.tools else None

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

    def _export_settings(self) -> tuple[object, ...]:
        return (self.strict,)

    def _provider_error(self, exc: Exception) -> ProviderError:
        return provider_error(cast(openai.OpenAIError, exc))

    def _error_kind(self, body: object) -> tuple[int | None, bool] | None:
        # As for a failed response: its code says whether a retry may fix it.
        return (None, True) if error_field(body, "code") in RETRYABLE_CODES else None


class OpenAIChatClient(_OpenAIClient["ChatCompletionChunk", "ChatCompletionMessageParam"]):
    """An ``LlmClient`` on the Chat Completions API (``POST /chat/completions``, streamed).

    Give it either a configured ``openai.AsyncOpenAI`` as ``client`` (you close it), or
    the settings to make one: ``api_key`` (default: ``OPENAI_API_KEY``), ``base_url``
    (default: ``OPENAI_BASE_URL`` or OpenAI's; any OpenAI-compatible server works),
    ``max_retries`` (SDK default 2) and ``timeout`` in seconds (SDK default 600). A client
    it made is closed by ``aclose()`` or ``async with``.

    ``strict=True`` sends every tool with ``"strict": true`` and its schema rewritten
    for OpenAI's strict mode (``export_tools(..., "openai", strict=True)``; a schema
    that has no strict form raises ``ValueError`` from the first request), and takes
    the nulls that rewrite introduces (``null`` for "not given") out of each call's
    arguments (``drop_introduced_nulls``), so a tool never reads one.
    ``max_tokens`` is sent as ``max_completion_tokens``, ``temperature`` as is, and
    ``extra_body`` is merged into every request body (for server-specific fields,
    or ``{"max_tokens": n}`` for servers that predate ``max_completion_tokens``).
    """

    _format = "openai"

    async def _open_stream(
        self, request: LlmRequest, tools: list[dict[str, Any]]
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        return await sdk_request(
            PROVIDER,
            self._client.chat.completions.create(
                model=self.model,
                messages=chat_messages(request.system_prompt, request.messages, self._history),
                tools=cast("list[ChatCompletionFunctionToolParam]", tools)
                if tools
                else openai.omit,
                tool_choice=chat_tool_choice(request) if tools else openai.omit,
                stream=True,
                stream_options={"include_usage": True},
                response_format=self._response_format(request.output_format),
                max_completion_tokens=openai.omit if self.max_tokens is None else self.max_tokens,
                temperature=openai.omit if self.temperature is None else self.temperature,
                extra_body=self.extra_body or None,
            ),
        )

    def _response_format(self, output_format: OutputFormat | None) -> ResponseFormat | Omit:
        if output_format is None:
            return openai.omit
        schema = self._json_schema(output_format)
        return {
            "type": "json_schema",
            "json_schema": {
                "name": schema.name,
                "schema": schema.schema,
                "strict": schema.strict,
            },
        }

    def _reader(self, request: LlmRequest) -> _ChunkReader:
        return _ChunkReader(self._null_dropper(request))


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
        return await sdk_request(
            PROVIDER,
            self._client.responses.create(
                model=self.model,
                input=responses_input(request.messages, self._history, stored=stored),
                instructions=request.system_prompt if request.system_prompt else openai.omit,
                tools=cast("list[FunctionToolParam]", tools) if tools else openai.omit,
                tool_choice=responses_tool_choice(request) if tools else openai.omit,
                stream=True,
                store=False,
                include=["reasoning.encrypted_content"],
                text=self._text_format(request.output_format),
                max_output_tokens=openai.omit if self.max_tokens is None else self.max_tokens,
                temperature=openai.omit if self.temperature is None else self.temperature,
                extra_body=self.extra_body or None,
            ),
        )

    def _text_format(self, output_format: OutputFormat | None) -> ResponseTextConfigParam | Omit:
        if output_format is None:
            return openai.omit
        schema = self._json_schema(output_format)
        return {
            "format": {
                "type": "json_schema",
                "name": schema.name,
                "schema": schema.schema,
                "strict": schema.strict,
            }
        }

    def _reader(self, request: LlmRequest) -> _ResponseEventReader:
        return _ResponseEventReader(self._null_dropper(request))


@dataclass(frozen=True)
class _JsonSchema:
    """A structured answer's schema as both APIs send it (``json_schema``)."""

    name: str
    schema: dict[str, Any]
    strict: bool


def json_schema_format(output_format: OutputFormat) -> _JsonSchema:
    """The schema of a structured answer, strict when it has a strict form.

    Strict (``"strict": true``, the answer always matches) with the schema rewritten
    for strict mode, its optional properties required as they are
    (``strict_schema(..., introduce_nulls=False)``: the answer is validated as it
    comes, so a null must not stand for "not given"); else the schema as it is,
    with ``"strict": false``.
    """
    schema = output_schema(output_format)
    try:
        return _JsonSchema(output_format.name, strict_schema(schema, introduce_nulls=False), True)
    except StrictSchemaError:
        return _JsonSchema(output_format.name, schema, False)


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
    attachments = list(done.attachments) if done is not None else []
    for message in messages[start:] if start else messages:
        if isinstance(message, ToolResult):
            if has_media(message):
                out.append(chat_tool_message(message, attachments))
            else:
                out.append(
                    {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
                )
            continue
        if attachments:  # the media of the tool results before, after the last of them
            out.append({"role": "user", "content": attachments})
            attachments = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, AssistantMessage):
            if not message.tool_calls:
                out.append(_with_reasoning(message, {"role": "assistant", "content": message.text}))
                continue
            reply: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                "content": message.text or None,
                "tool_calls": chat_tool_calls(message),
            }
            out.append(_with_reasoning(message, reply))
        else:
            raise TypeError(f"not a history item: {message!r}")
    if prefix is not None:
        prefix.keep(messages, _Converted(out, attachments=attachments))
    if attachments:
        out = [*out, {"role": "user", "content": attachments}]
    if system_prompt:
        return [{"role": "system", "content": system_prompt}, *out]
    return list(out)


def chat_tool_calls(message: AssistantMessage) -> list[ChatCompletionMessageFunctionToolCallParam]:
    """The message's calls as ``tool_calls``, each with the ``extra_content`` it came with."""
    extras = _extra_contents(message)
    calls: list[ChatCompletionMessageFunctionToolCallParam] = []
    for call in message.tool_calls:
        sent: ChatCompletionMessageFunctionToolCallParam = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": _arguments(call.input_json)},
        }
        if call.id in extras:
            fields = {**sent, EXTRA_CONTENT: extras[call.id]}
            sent = cast("ChatCompletionMessageFunctionToolCallParam", fields)
        calls.append(sent)
    return calls


def _with_reasoning(
    message: AssistantMessage, reply: ChatCompletionAssistantMessageParam
) -> ChatCompletionAssistantMessageParam:
    """``reply`` with the reasoning its response came with, in the server's own fields."""
    for item in own_items(message, PROVIDER):
        if item.kind == REASONING_CONTENT:
            fields = cast("dict[str, object]", item.json())
            kept = {name: fields[name] for name in KEPT_MESSAGE_FIELDS if name in fields}
            return cast("ChatCompletionAssistantMessageParam", {**reply, **kept})
    return reply


def _extra_contents(message: AssistantMessage) -> dict[str, object]:
    """The ``extra_content`` a server sent with each of the message's calls, by call id."""
    extras: dict[str, object] = {}
    for item in own_items(message, PROVIDER):
        if item.kind == EXTRA_CONTENT:
            fields = cast("dict[str, object]", item.json())
            extras[cast(str, fields["id"])] = fields[EXTRA_CONTENT]
    return extras


def chat_tool_message(
    result: ToolResult, attachments: list[ChatCompletionContentPartParam]
) -> ChatCompletionToolMessageParam:
    """A rich result's ``tool`` message (text only, as the API has it), its media added to
    ``attachments``, the parts of the user message that follows the turn's results.

    The tool message has the result's text, then a note naming the media sent after it
    (and one for each media part the API cannot take); the user message has, per
    result, a line naming its call and then its media (``chat_media_part``). A ``data:``
    URL goes as the bytes it holds, a URL of a scheme the API does not fetch
    (``URL_SCHEMES``: ``gs://``) as a note (``sendable``).
    """
    sent: list[MediaPart] = []
    notes: list[str] = []
    media: list[ChatCompletionContentPartParam] = []
    for part in result.parts:
        if not isinstance(part, MediaPart):
            continue
        sendable_part = sendable(part, URL_SCHEMES)
        converted = None if sendable_part is None else chat_media_part(sendable_part)
        if sendable_part is None or converted is None:
            notes.append(not_sent(part, sendable_part))
        else:
            sent.append(sendable_part)
            media.append(converted)
    if sent:
        notes.append(attached_note(sent))
        attachments.append({"type": "text", "text": MEDIA_OF_RESULT.format(call_id=result.call_id)})
        attachments.extend(media)
    text = "\n".join([result.content, *notes] if result.content else notes)
    return {"role": "tool", "tool_call_id": result.call_id, "content": text}


def chat_media_part(part: MediaPart) -> ChatCompletionContentPartParam | None:
    """A media part as a user message's content part; ``None`` if the API cannot take it.

    Images of ``IMAGE_TYPES`` → ``image_url`` (a data URL, or the URL); a PDF's bytes →
    ``file`` (``file_data`` as a data URL, ``filename``); a ``text/*`` document's bytes →
    its text, after a line naming it (``[file 'notes.txt' (text/plain, 120 bytes):]``);
    WAV and MP3 bytes → ``input_audio``. Not: video, other documents and audio, and
    documents or audio given by URL.
    """
    media_type = mime_type(part)
    if media_type in IMAGE_TYPES:
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    if part.data is None:
        return None
    if media_type == "application/pdf":
        return {"type": "file", "file": {"file_data": data_url(part), "filename": file_name(part)}}
    audio = AUDIO_FORMATS.get(media_type)
    if audio is not None:
        return {"type": "input_audio", "input_audio": {"data": base64_of(part), "format": audio}}
    text = plain_text(part)
    if text is None:
        return None
    # Without its name, a file's text reads as the user's own words (Anthropic sends the
    # name as the document's title).
    return {
        "type": "text",
        "text": f"{MEDIA_DOCUMENT_TEXT.format(media=media_label(part))}\n{text}",
    }


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
                    "output": function_output(message) if has_media(message) else message.content,
                }
            )
        elif isinstance(message, AssistantMessage):
            out.extend(assistant_input(message, stored=stored))
        else:
            raise TypeError(f"not a history item: {message!r}")
    if prefix is not None:
        prefix.keep(messages, _Converted(out, stored))
    return list(out)


def function_output(result: ToolResult) -> list[ResponseFunctionCallOutputItemParam]:
    """A rich result's ``output`` items, in the order of its parts: ``input_text`` (text, and
    data as its JSON), ``input_image``, ``input_file``, and a note for media the API cannot
    take in a function call's output. A ``data:`` URL goes as the bytes it holds, a URL of
    a scheme the API does not fetch (``URL_SCHEMES``: ``gs://``) as a note (``sendable``)."""
    return result_blocks(result, responses_media_item, _input_text, schemes=URL_SCHEMES)


def _input_text(text: str) -> ResponseFunctionCallOutputItemParam:
    return {"type": "input_text", "text": text}


def responses_media_item(part: MediaPart) -> ResponseFunctionCallOutputItemParam | None:
    """A media part as a function call's output item; ``None`` if the API cannot take it.

    Images of ``IMAGE_TYPES`` → ``input_image`` (a data URL, or the URL); any document →
    ``input_file`` (``file_data`` as a data URL with its ``filename``, or ``file_url``).
    Not: audio, video, images of other types.
    """
    if mime_type(part) in IMAGE_TYPES:
        return {"type": "input_image", "image_url": data_url(part)}
    if part.kind != "document":
        return None
    if part.url is not None:
        item: ResponseInputFileContentParam = {"type": "input_file", "file_url": part.url}
        if part.name:
            item["filename"] = part.name
        return item
    return {"type": "input_file", "file_data": data_url(part), "filename": file_name(part)}


def chat_tool_choice(request: LlmRequest) -> ChatCompletionToolChoiceOptionParam | Omit:
    """The request's ``tool_choice`` and ``allowed_tools`` as Chat Completions' ``tool_choice``.

    Left out for the default (``"auto"``, every tool), so such requests stay as they were;
    ``"none"`` when ``allowed_tools`` is empty (an ``allowed_tools`` choice needs tools).
    """
    choice, allowed = request.tool_choice, request.allowed_tools
    if choice == "auto" and allowed is None:
        return openai.omit
    if choice not in ("auto", "required", "none"):
        return {"type": "function", "function": {"name": choice}}
    if allowed is not None and not allowed:
        return "none"  # no tool may be called
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
    """The request's ``tool_choice`` and ``allowed_tools`` as the Responses ``tool_choice``
    (as ``chat_tool_choice`` writes them)."""
    choice, allowed = request.tool_choice, request.allowed_tools
    if choice == "auto" and allowed is None:
        return openai.omit
    if choice not in ("auto", "required", "none"):
        return {"type": "function", "name": choice}
    if allowed is not None and not allowed:
        return "none"  # no tool may be called
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


class _NullDropper:
    """Takes the nulls strict mode introduced out of a call's arguments, with the tool's own
    schema (``drop_introduced_nulls``), so a tool never reads a null it does not allow."""

    __slots__ = ("_tools",)

    def __init__(self, tools: Sequence[LlmToolDefinition]) -> None:
        self._tools = tools

    def arguments(self, name: str, text: str) -> str:
        """The arguments ``text`` of a call of ``name``, without the introduced nulls."""
        if "null" not in text:  # nothing to drop: the usual case costs one scan
            return text
        definition = next((tool for tool in self._tools if tool.name == name), None)
        if definition is None:
            return text
        try:
            value: object = json.loads(text)
        except ValueError:
            return text  # the worker reports arguments that are not JSON
        if not isinstance(value, dict):
            return text
        arguments = cast("dict[str, Any]", value)
        kept = drop_introduced_nulls(definition.input_schema, arguments)
        return text if kept == arguments else json.dumps(kept, ensure_ascii=False)


class _ChunkReader:
    """Turns ``chat.completion.chunk``s into events; only choice 0 is read.

    With a ``_NullDropper`` (strict mode), a call's arguments are held until the call is
    complete and then sent as one fragment, without the nulls strict mode introduced.
    """

    def __init__(self, nulls: _NullDropper | None = None) -> None:
        self.arguments: dict[int, list[str]] = {}  # calls: index -> fragments
        self.names: dict[int, str] = {}
        # Calls whose ToolUseStart waits for the rest of their name, which a server may
        # stream in pieces (vLLM), or after an id-only first delta: in order of arrival.
        self.unstarted: dict[int, None] = {}
        self.ids: dict[int, str] = {}
        # The server's index of a call -> ours. Ours is the server's, unless the server
        # gives two calls one index (Ollama sends 0 for each, some builds none at all):
        # a new id at an index is a new call.
        self.latest: dict[object, int] = {}
        self.nulls = nulls
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.reasoning: list[str] = []
        self.reasoning_field: str | None = None  # the first of REASONING_FIELDS it came in
        self.reasoning_details: list[object] = []  # OpenRouter's, put together
        self.call_ids: dict[int, str] = {}  # started calls: index -> the id they went out with
        self.extra_contents: dict[int, object] = {}  # index -> the call's extra_content
        self.refused = False  # a `refusal` delta came

    @property
    def done(self) -> bool:
        """Never before the stream ends: the SDK ends it at ``[DONE]``, and the usage chunk
        comes after the ``finish_reason``."""
        return False

    def feed(self, chunk: ChatCompletionChunk) -> list[LlmEvent]:
        events: list[LlmEvent] = []
        # Typed as always there; servers leave them out: a `data: null` chunk, Azure's
        # content-filter chunks with `delta: null`, `choices: null`.
        if cast("ChatCompletionChunk | None", chunk) is None:
            return events
        if self.response_id is None:
            self.response_id = given_text(chunk.id)
        if self.model is None:
            self.model = given_text(chunk.model)
        if chunk.usage is not None:
            self.usage = _chat_usage(chunk.usage)
        for choice in cast("list[Any] | None", chunk.choices) or ():
            # Typed as always there; a server that sends one choice may leave it out.
            if getattr(choice, "index", None) not in (0, None):
                continue
            delta = choice.delta
            if delta is None:
                if choice.finish_reason is not None and self.finish_reason is None:
                    self.finish_reason = choice.finish_reason
                    events.extend(self.stops())
                continue
            extra = _extra_fields(delta)
            reasoning = self._reasoning(extra)
            if reasoning:
                events.append(ReasoningDelta(reasoning))
            self._add_reasoning_details(extra.get(REASONING_DETAILS))
            if delta.content:
                events.append(TextDelta(delta.content))
            if delta.refusal:
                self.refused = True
                events.append(TextDelta(delta.refusal))
            for call in delta.tool_calls or ():
                function = call.function
                given: object = call.index  # an int, says the SDK; some servers send none
                latest = self.latest.get(given)
                if latest is None or (call.id and self.ids.get(latest, call.id) != call.id):
                    # A new call: at the server's index, unless a call already has it.
                    if isinstance(given, int) and given not in self.arguments:
                        index = given
                    else:
                        index = max(self.arguments, default=-1) + 1
                    # A new call: the name of those before it is whole.
                    events.extend(self.starts())
                    self.latest[given] = index
                    self.arguments[index] = []
                    self.names[index] = ""
                    self.unstarted[index] = None
                    if call.id:  # only the server's own id tells its calls apart
                        self.ids[index] = call.id
                else:
                    index = latest
                    if call.id:  # an id after the call's first delta: the same call
                        self.ids.setdefault(index, call.id)
                name = function.name if function is not None else None
                # A piece of the name, joined as the SDK's accumulate_delta does; one
                # that repeats the whole name so far (servers that send it in every
                # delta) adds nothing.
                if name and index in self.unstarted and name != self.names[index]:
                    self.names[index] += name
                extra_content = _extra_fields(call).get(EXTRA_CONTENT)
                if extra_content is not None:
                    self.extra_contents[index] = extra_content
                fragments = self.arguments[index]
                if function is not None and function.arguments:
                    # Servers send a call's name before any arguments: the names so
                    # far are whole.
                    events.extend(self.starts())
                    fragments.append(function.arguments)
                    if self.nulls is None:
                        events.append(ToolInputDelta(index, function.arguments))
            if choice.finish_reason is not None and self.finish_reason is None:
                self.finish_reason = choice.finish_reason
                events.extend(self.stops())
        return events

    def starts(self) -> list[LlmEvent]:
        """The ``ToolUseStart`` of every call not yet started, in order of arrival."""
        events: list[LlmEvent] = []
        for index in self.unstarted:
            call_id = self.ids.get(index) or _made_up_id()
            self.call_ids[index] = call_id
            events.append(ToolUseStart(index, call_id, self.names[index]))
        self.unstarted.clear()
        return events

    def stops(self) -> list[LlmEvent]:
        """A ``ToolUseStop`` for every call (after its start and its held arguments, if
        any are still to come)."""
        events = self.starts()
        if self.nulls is None:
            return [*events, *(ToolUseStop(index) for index in self.arguments)]
        for index, fragments in self.arguments.items():
            text = self.nulls.arguments(self.names[index], "".join(fragments))
            if text:
                events.append(ToolInputDelta(index, text))
            events.append(ToolUseStop(index))
        return events

    def _reasoning(self, fields: Mapping[str, object]) -> str | None:
        for name in REASONING_FIELDS:
            text = fields.get(name)
            if text and isinstance(text, str):
                self.reasoning.append(text)
                if self.reasoning_field is None:
                    self.reasoning_field = name
                return text
        return None

    def _add_reasoning_details(self, given: object) -> None:
        """OpenRouter's ``reasoning_details`` entries, in order. A ``reasoning.text`` entry
        that goes on with the last one (same ``index``) is joined to it, as OpenRouter's own
        SDK puts streamed text together; any other entry is kept as it came."""
        if not isinstance(given, list):
            return
        for entry in cast("list[object]", given):
            last = self.reasoning_details[-1] if self.reasoning_details else None
            if _goes_on(last, entry):
                _join_text(cast("dict[str, object]", last), cast("dict[str, object]", entry))
            else:
                self.reasoning_details.append(
                    dict(cast("dict[str, object]", entry)) if isinstance(entry, dict) else entry
                )

    def end(self) -> list[LlmEvent]:
        if self.finish_reason is not None:
            reason = self.finish_reason
            return [*self.kept(), self.completion(STOP_REASONS.get(reason, reason))]
        # No finish_reason before [DONE] (OpenRouter, Kimi): complete if the usage chunk
        # came, or if every call's arguments are whole; else the answer may be cut short.
        if self.usage is None and not (self.arguments and self._calls_whole()):
            raise stream_ended(PROVIDER)
        stop_reason = "tool_use" if self.arguments else "end_turn"
        return [*self.stops(), *self.kept(), self.completion(stop_reason)]

    def kept(self) -> list[LlmEvent]:
        """What goes back with the response: its reasoning (text in the server's field,
        ``reasoning_details``), then each call's ``extra_content`` (``[]`` if none came)."""
        fields: dict[str, object] = {}
        if self.reasoning_field is not None:
            fields[self.reasoning_field] = "".join(self.reasoning)
        if self.reasoning_details:
            fields[REASONING_DETAILS] = self.reasoning_details
        items: list[ProviderItem] = []
        if fields:
            items.append(ProviderItem(PROVIDER, REASONING_CONTENT, compact_json(fields)))
        for index, extra_content in self.extra_contents.items():
            call = {"id": self.call_ids[index], EXTRA_CONTENT: extra_content}
            items.append(ProviderItem(PROVIDER, EXTRA_CONTENT, compact_json(call)))
        return [ProviderItemDone(item) for item in items]

    def completion(self, stop_reason: str) -> Completion:
        # A refusal ends with `stop` as an answer does; a more telling reason (`length`,
        # `content_filter`) stays.
        if self.refused and stop_reason == "end_turn":
            stop_reason = REFUSAL
        return Completion(stop_reason, self.usage, self.response_id, self.model)

    def _calls_whole(self) -> bool:
        for fragments in self.arguments.values():
            try:  # no arguments: a tool without parameters (servers send "")
                value: object = json.loads("".join(fragments) or "{}")
            except ValueError:
                return False
            if not isinstance(value, dict):
                return False
        return True


def _extra_fields(model: object) -> Mapping[str, object]:
    """The fields of an SDK object that its type does not name (a server's own)."""
    extra: object = getattr(model, "model_extra", None)
    return cast("Mapping[str, object]", extra) if isinstance(extra, Mapping) else {}


def _goes_on(last: object, entry: object) -> bool:
    # Whether `entry` is more of the text of the reasoning.text entry `last`.
    if not (isinstance(last, dict) and isinstance(entry, dict)):
        return False
    before, after = cast("dict[str, object]", last), cast("dict[str, object]", entry)
    return (
        before.get("type") == after.get("type") == "reasoning.text"
        and before.get("index") == after.get("index")
        and isinstance(before.get("text") or "", str)
        and isinstance(after.get("text") or "", str)
    )


def _join_text(last: dict[str, object], entry: dict[str, object]) -> None:
    # The text put together; a field that came only later (the signature) is added.
    last["text"] = cast(str, last.get("text") or "") + cast(str, entry.get("text") or "")
    for key, value in entry.items():
        if last.get(key) is None:
            last[key] = value


def _made_up_id() -> str:
    # For a call the server gave no id: random, since one made from the chunk's id and
    # the call's index repeats in a history when a server reuses chunk ids (or sends none).
    return f"call_{secrets.token_hex(12)}"


class _ResponseEventReader:
    """Turns Responses stream events into events; output items are told apart by index.

    With a ``_NullDropper`` (strict mode), a call's arguments are held until its item is
    done and then sent as one fragment, without the nulls strict mode introduced.
    """

    def __init__(self, nulls: _NullDropper | None = None) -> None:
        # Open function calls: output_index -> whether argument deltas came.
        self.open_calls: dict[int, bool] = {}
        self.started: set[int] = set()  # the output_index of every call started
        # The call_id and item id of every call started: what tells a call of the final
        # output that was streamed (servers number the final output their own way).
        self.started_ids: set[str] = set()
        self.held: dict[int, list[str]] = {}  # strict mode: output_index -> fragments
        self.nulls = nulls
        self.called = False
        self.refused = False  # a refusal came (its events, or a refusal part of the output)
        self.result: Completion | None = None

    @property
    def done(self) -> bool:
        """Once ``response.completed`` or ``response.incomplete`` came: the last event."""
        return self.result is not None

    def feed(self, event: ResponseStreamEvent) -> list[LlmEvent]:
        if event.type == "response.output_text.delta":
            return [TextDelta(event.delta)] if event.delta else []
        if event.type == "response.refusal.delta":
            self.refused = self.refused or bool(event.delta)
            return [TextDelta(event.delta)] if event.delta else []
        if event.type == "response.refusal.done":
            self.refused = True
            return []
        if event.type == "response.function_call_arguments.delta":
            return self.arguments(event.output_index, event.delta)
        if event.type == "response.function_call_arguments.done":
            # A server that sends the arguments only whole, here: one fragment.
            if self.open_calls.get(event.output_index) is False:
                return self.arguments(event.output_index, event.arguments)
            return []
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
            self.started.add(event.output_index)
            self.started_ids.update(_call_item_ids(item))
            self.called = True
            call_id = item.call_id or f"call_{secrets.token_hex(12)}"  # a server left it out
            return [ToolUseStart(event.output_index, call_id, item.name)]
        if event.type == "response.output_item.done":
            item = event.item
            if item.type == "reasoning":
                data = compact_json(item.to_dict(mode="json"))
                return [ProviderItemDone(ProviderItem(PROVIDER, "reasoning", data))]
            if item.type != "function_call" or event.output_index not in self.open_calls:
                return []
            streamed = self.open_calls.pop(event.output_index)
            head: list[LlmEvent] = []
            if self.nulls is not None:
                held = "".join(self.held.pop(event.output_index, ()))
                text = self.nulls.arguments(item.name, item.arguments or held)
                if text:
                    head.append(ToolInputDelta(event.output_index, text))
            elif not streamed and item.arguments:
                # A server that sends the arguments only with the finished item.
                head.append(ToolInputDelta(event.output_index, item.arguments))
            return [*head, ToolUseStop(event.output_index)]
        if event.type == "response.completed":
            late = self.calls_only_in(event.response)
            self.result = _completion(event.response, self.completed_reason(event.response))
            return late
        if event.type == "response.incomplete":
            details = event.response.incomplete_details
            reason = (details.reason if details is not None else None) or "incomplete"
            self.result = _completion(event.response, INCOMPLETE_REASONS.get(reason, reason))
        elif event.type == "response.failed":
            error = event.response.error
            message = body_text(error.message) if error is not None else None
            code = error.code if error is not None else None
            raise ProviderError(
                PROVIDER, message or RESPONSE_FAILED, retryable=code in RETRYABLE_CODES
            )
        elif event.type == "error":
            retryable = event.code is None or event.code in RETRYABLE_CODES
            message = body_text(event.message) or RESPONSE_FAILED
            raise ProviderError(PROVIDER, message, retryable=retryable)
        return []

    def arguments(self, index: int, fragment: str) -> list[LlmEvent]:
        """A fragment of the arguments of the open call at output ``index``."""
        if index not in self.open_calls or not fragment:
            return []
        self.open_calls[index] = True
        if self.nulls is not None:
            self.held.setdefault(index, []).append(fragment)
            return []
        return [ToolInputDelta(index, fragment)]

    def calls_only_in(self, response: Response) -> list[LlmEvent]:
        """The events of the function calls that only the finished ``response`` has (a
        server that sent no ``output_item`` events for them), numbered after every call
        streamed; a call whose ``call_id`` or item id was streamed is not made again."""
        events: list[LlmEvent] = []
        for item in response.output or ():
            if item.type != "function_call" or self.started_ids.intersection(_call_item_ids(item)):
                continue
            index = max(self.started, default=-1) + 1
            self.started.add(index)
            self.called = True
            call_id = item.call_id or f"call_{secrets.token_hex(12)}"
            events.append(ToolUseStart(index, call_id, item.name))
            text = item.arguments or ""
            if self.nulls is not None:
                text = self.nulls.arguments(item.name, text)
            if text:
                events.append(ToolInputDelta(index, text))
            events.append(ToolUseStop(index))
        return events

    def completed_reason(self, response: Response) -> str:
        """The stop reason of a completed ``response``: ``tool_use`` if it called tools,
        ``refusal`` if it refused (a server may give the refusal only in its output)."""
        if self.called:
            return "tool_use"
        if self.refused or _has_refusal(response):
            return REFUSAL
        return "end_turn"

    def end(self) -> list[LlmEvent]:
        if self.result is None:
            raise stream_ended(PROVIDER)
        return [self.result]


def _has_refusal(response: Response) -> bool:
    """Whether a message of ``response``'s output holds a ``refusal`` part."""
    for item in response.output or ():
        if item.type == "message" and any(part.type == "refusal" for part in item.content or ()):
            return True
    return False


def _call_item_ids(item: ResponseFunctionToolCall) -> list[str]:
    """The ids a function call item was given: its ``call_id`` and its item ``id``."""
    return [given for given in (given_text(item.call_id), given_text(item.id)) if given]


def _completion(response: Response, stop_reason: str) -> Completion:
    """A finished Responses ``response``'s ``Completion``."""
    # Typed as always there; a server that speaks the API may leave them out.
    return Completion(
        stop_reason,
        _responses_usage(response.usage),
        given_text(getattr(response, "id", None)),
        given_text(getattr(response, "model", None)),
    )


def _chat_usage(usage: CompletionUsage) -> Usage:
    prompt, completion = usage.prompt_tokens_details, usage.completion_tokens_details
    return Usage(
        usage.prompt_tokens or 0,  # typed as always there; some servers send null
        usage.completion_tokens or 0,
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
        usage.input_tokens or 0,  # typed as always there; compatible servers send null
        usage.output_tokens or 0,
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
            or detail_text(exc.body)
            or body_text(exc.body)
            or body_text(exc.message)  # the SDK's own: "Error code: 400"
            or exception_text(exc)
        )
        # A 429 for a spent quota or credit: waiting does not bring it back.
        spent = error_field(exc.body, "code") == "insufficient_quota"
        return ProviderError(
            PROVIDER,
            message,
            status=status,
            retryable=is_retryable_status(status) and not spent,
            retry_after=retry_after(exc.response.headers),
        )
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(PROVIDER, TIMED_OUT, retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return http_failure(PROVIDER, exc.__cause__, exc.message)
    if isinstance(exc, openai.APIError):
        # An error sent inside a Chat Completions stream: {"error": {"message", "type"...}},
        # which compatible servers extend with the status it stands for.
        message = (
            proxied_message(exc.body)
            or error_field(exc.body, "message")
            or body_text(exc.body)  # {"error": "..."} (HF TGI): the SDK passes the str
            or body_text(exc.message)
            or exception_text(exc)
        )
        named = body_status(exc.body)
        if named is not None:
            return ProviderError(
                PROVIDER, message, status=named, retryable=is_retryable_status(named)
            )
        kind = error_field(exc.body, "type")
        return ProviderError(PROVIDER, message, retryable=kind != "invalid_request_error")
    return ProviderError(PROVIDER, exception_text(exc))
