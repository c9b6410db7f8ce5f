"""Google's Gemini API, and Gemini on Vertex AI, as an ``LlmClient``.

Needs the ``google-genai`` package: ``pip install 'llm-worker[gemini]'``.

>>> client = GeminiClient("gemini-3-flash")       # GEMINI_API_KEY or GOOGLE_API_KEY from the env
>>> vertex = GeminiClient("gemini-3-flash", vertexai=True, project="my-project", location="global")
>>> worker = Worker(client)

It streams ``generateContent`` (``POST .../models/{model}:streamGenerateContent?alt=sse``)
through the SDK's ``client.aio.models.generate_content_stream``; ``vertexai=True``
(with ``project`` and ``location``, or an ``api_key`` for Vertex AI express mode) is the
SDK's own switch to Vertex AI. The SDK's automatic function calling is turned off: the
worker runs the tools.

How the conversation is sent (``contents``, and ``config``):

- the system prompt → ``config.system_instruction`` (left out if empty);
- the tools → one ``config.tools`` entry, ``{"function_declarations": [...]}``, each
  declaration as ``export_tools(definitions, "gemini")`` writes it (Gemini's
  OpenAPI-subset schema); ``tool_choice`` and ``allowed_tools`` →
  ``config.tool_config.function_calling_config`` (see ``gemini_tool_config``);
- ``UserMessage(text)`` → ``{"role": "user", "parts": [{"text": text}]}``;
- ``AssistantMessage`` → ``{"role": "model", "parts": [...]}``: the parts the response
  had, as they came, when the message keeps them (see below); otherwise a ``text`` part
  (if there is text) and one ``function_call`` part per call (``id``, ``name``, ``args``:
  the call's ``input_json`` parsed, ``{}`` if it is not a JSON object). The first of
  those calls carries the thought signature Gemini documents for history that no
  Gemini model made (``skip_thought_signature_validator``), which Gemini 3 requires on
  the first function call of every step;
- consecutive ``ToolResult``\\s → one ``{"role": "user", "parts": [...]}`` with a
  ``function_response`` part per result: the call's ``name`` and ``id`` (when Gemini
  gave the call one) and ``response`` ``{"output": content}``, or ``{"error":
  content}`` for a failed call. A result's images, PDFs and text files go in the
  response's ``parts`` (``FUNCTION_RESPONSE_TYPES``; bytes as ``inline_data``, a URL as
  ``file_data``); its other media Gemini documents (``USER_TURN_TYPES``: audio, video,
  HEIC images, text documents) in a user turn after the responses (``add_media``),
  under Gemini's name for their type (``audio/x-wav`` as ``audio/wav``); a text file
  of a type off Gemini's list (YAML...) goes as ``text/plain``; a part of a type Gemini
  does not take (a Word document, SVG...) is a note in the response's text instead.

A run's structured answer (``request.output_format``) → ``config.response_mime_type``
``"application/json"`` and ``config.response_json_schema``.

What a message keeps: unless a response is plain text and function calls (each with
Gemini's own ``id``, no thought signature), every part of it becomes one
``ProviderItem("gemini", <kind>, <the part as JSON, Gemini's field names>)``, in order:
``kind`` is ``"thought"`` (a thought summary), ``"text"``, ``"function_call"``, or the
part's field (``"executable_code"``...); a part the SDK cannot read (a kind newer than
it, which it reads as empty) is not kept, since Gemini refuses an empty part. Streamed
text is put together (a new part starts where the thought flag changes or after a part
that carries a thought signature), and a function call whose arguments were streamed is
kept whole. Each
``thoughtSignature`` stays on the part it came with, so later requests send it back
where Gemini 3 requires it. The parts are used while the message's tool calls are the
function calls among them (same order); another provider's items are not sent.

How the stream is read (candidate 0 of each chunk): a text part → ``TextDelta``, a
thought part (``thought: true``, with ``thinking_config.include_thoughts``) →
``ReasoningDelta``; a ``function_call`` part → ``ToolUseStart(index, id, name)``, its
arguments as one ``ToolInputDelta`` and ``ToolUseStop`` once the call is whole (``args``
at once, or ``partial_args`` pieces until ``will_continue`` is false, Vertex AI's
``stream_function_call_arguments``; an array index in ``partial_args`` is one the list
has or the next, any further on a malformed stream). ``index`` counts the response's calls from 0; a
call without an ``id`` gets ``call_<response id>_<index>``. The end of the stream →
``Completion``: ``STOP`` is ``tool_use`` if the model called functions, else
``end_turn``; ``MAX_TOKENS`` is ``max_tokens``; other finish reasons lower-cased
(``safety``, ``malformed_function_call``...); a prompt blocked by
``prompt_feedback.block_reason`` ends with that reason, lower-cased. Usage, from the
last ``usage_metadata``: input = ``prompt_token_count`` + ``tool_use_prompt_token_count``
(``cached_content_token_count`` of them cached), output = ``candidates_token_count`` +
``thoughts_token_count`` (the thoughts are ``reasoning_tokens``).

Every failure is raised from ``stream()`` as ``ProviderError("gemini", ...)``, chained to
the SDK's exception: an ``errors.APIError`` (an error status, or an ``{"error": ...}``
chunk inside the stream) gives its ``code`` as ``status`` and its ``message``, and
``retry_after`` from a ``Retry-After`` header or else the body's ``google.rpc.RetryInfo``
``retryDelay`` (``"37s"``, which Gemini's 429s give); a message the server chose is
on one line, 300 characters at most (``body_text``). A connection that fails or breaks,
or a timeout, is retryable. The SDK retries 408, 429, 500, 502, 503 and 504 and
connection errors ``max_retries`` times (2 by default, with its exponential backoff
from 1 s) before the stream starts; a failure after the first byte is never retried.

The SDK builds the request when the stream is first read: a ``ValueError`` or
``TypeError`` it raises before the request went out (an empty history, a ``config``
value its types refuse) is a request that could not be built (``request_not_built``,
not retryable), one it raises after, reading the answer, a malformed stream. The HTTP
client this module makes tells whether the request went out; with a ``genai.Client``
you pass in, whether a chunk came does.

The SDK's own async HTTP client keeps one pool per asyncio event loop, which does not
run on trio; the SDK client this module makes sends through an ``httpx2.AsyncClient``
of its own instead, so it works on asyncio and trio. A ``genai.Client`` you pass in is
used as you configured it (``http_options.httpx_async_client`` for trio). Vertex AI
with Application Default Credentials refreshes its token with asyncio: on trio, pass
``credentials`` that hold a valid token, or an ``api_key``.
"""

from __future__ import annotations

import base64
import contextvars
import json
import math
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, cast

try:
    import google.auth.exceptions
    import httpx2
    from google import genai
    from google.genai import errors, types
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    if sys.version_info < (3, 11):  # the extra installs nothing there
        raise ImportError(
            "llm_worker.providers.gemini needs the google-genai package, which needs "
            "Python 3.11 or newer"
        ) from exc
    raise ImportError(
        "llm_worker.providers.gemini needs the google-genai package: "
        "pip install 'llm-worker[gemini]'"
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
from .._content import MediaPart
from .._conversation import AssistantMessage, Message, ProviderItem, ToolResult, Usage, UserMessage
from .._exceptions import ProviderError
from .._model_texts import MEDIA_OF_RESULT
from ._common import (
    TIMED_OUT,
    HistoryPrefix,
    ProviderClient,
    body_text,
    compact_json,
    detail_text,
    exception_text,
    given_text,
    http_failure,
    is_retryable_status,
    malformed_stream,
    output_schema,
    own_items,
    request_not_built,
    retry_after,
    sdk_request,
    stream_ended,
)
from ._parts import attached_note, has_media, mime_type, not_sent, plain_text, sendable

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

__all__ = ["GeminiClient"]

PROVIDER = "gemini"

DEFAULT_MAX_RETRIES = 2
DEFAULT_TIMEOUT = 600.0  # seconds; the SDK has none

SKIP_SIGNATURE = base64.urlsafe_b64decode("skip_thought_signature_validator")
"""The thought signature Gemini documents for function calls no Gemini model made."""

PARAGRAPH = "\n\n"
"""What goes between two pieces of text that a part of another kind separates."""

_FUNCTION_CALLING_MODES = {"required": "ANY", "none": "NONE"}

FUNCTION_RESPONSE_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)
"""The media types Gemini takes in a function response's ``parts`` (Gemini 3 models)."""

USER_TURN_TYPES = FUNCTION_RESPONSE_TYPES | {
    # Images ("Image understanding", the Gemini API and Vertex AI).
    "image/heic",
    "image/heif",
    # Audio ("Audio understanding": the Gemini API's list, then what Vertex AI adds).
    "audio/wav",
    "audio/mp3",
    "audio/aiff",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "audio/mpeg",
    "audio/mpga",
    "audio/x-aac",
    "audio/m4a",
    "audio/mp4",
    "audio/pcm",
    "audio/webm",
    # Video ("Video understanding": the Gemini API's list, then what Vertex AI adds).
    "video/mp4",
    "video/mpeg",
    "video/mov",
    "video/avi",
    "video/x-flv",
    "video/mpg",
    "video/webm",
    "video/wmv",
    "video/3gpp",
    "video/quicktime",
    "video/mpegs",
    # Documents Gemini reads as text ("Document understanding").
    "text/html",
    "text/css",
    "text/csv",
    "text/xml",
    "text/rtf",
    "text/markdown",
    "text/md",
    "text/javascript",
    "application/x-javascript",
    "text/x-python",
    "application/x-python",
}
"""The media types Gemini documents for the parts of a request (a user turn), as
``mime_type()`` writes them. Gemini refuses any other with a 400 ("... mimeType parameter
with value ..., which is not supported"), and every later request would carry it again:
a part of another type is a note (``not_sent``) instead."""

URL_SCHEMES = frozenset({"http", "https", "gs"})
"""The URLs ``file_data``'s ``file_uri`` takes: http(s) (the Files API's URIs, public and
signed URLs) and ``gs://`` (Cloud Storage). A part's ``data:`` URL, which Gemini does not
fetch, is sent as its bytes (``inline_data``; ``sendable``)."""

MEDIA_TYPE_ALIASES = {
    "image/jpg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-aiff": "audio/aiff",
    "audio/x-flac": "audio/flac",
    "audio/x-m4a": "audio/m4a",
    "video/x-msvideo": "video/avi",
    "video/x-ms-wmv": "video/wmv",
}
"""Other names of types Gemini documents, sent under Gemini's name: Python's
``mimetypes`` names a ``.wav`` file ``audio/x-wav`` and an ``.avi`` ``video/x-msvideo``."""


class GeminiClient(ProviderClient[genai.Client, types.GenerateContentResponse]):
    """An ``LlmClient`` on Gemini's ``streamGenerateContent``, through ``google-genai``.

    Give it either a configured ``genai.Client`` as ``client`` (you close it), or the
    settings to make one: ``api_key`` (default: ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``),
    ``base_url`` (default: ``GOOGLE_GEMINI_BASE_URL`` / ``GOOGLE_VERTEX_BASE_URL``, else
    Google's), ``max_retries`` (default 2), ``timeout`` in seconds (default 600), and for
    Vertex AI ``vertexai=True`` with ``project`` and ``location`` (defaults:
    ``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``) and ``credentials`` (default:
    Application Default Credentials). A client it made is closed by ``aclose()`` or
    ``async with``.

    ``max_tokens`` is sent as ``max_output_tokens`` and ``temperature`` as it is;
    ``config`` holds more ``GenerateContentConfig`` fields for every request
    (``{"thinking_config": {"include_thoughts": True}}``, ``safety_settings``, a
    ``tools`` list whose entries go before the worker's...); ``extra_body`` is merged
    into every request body as JSON (``http_options.extra_body``).
    """

    _provider = PROVIDER
    _gen_ai_provider = "gcp.gemini"
    _format = "gemini"
    _sdk_client_name = "genai"
    _sdk_error = (
        errors.APIError,
        errors.UnknownApiResponseError,
        httpx2.HTTPError,
        google.auth.exceptions.GoogleAuthError,
    )

    def __init__(
        self,
        model: str,
        *,
        client: genai.Client | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        credentials: Credentials | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        config: Mapping[str, object] | None = None,
        extra_body: Mapping[str, object] | None = None,
    ) -> None:
        vertex: dict[str, object] = {
            "vertexai": vertexai or None,
            "project": project,
            "location": location,
            "credentials": credentials,
        }
        given = [name for name, value in vertex.items() if value is not None]
        if client is not None and given:
            raise TypeError(
                f"GeminiClient takes client= or {'/'.join(given)}=, not both; "
                f"configure the {self._sdk_client_name} client instead"
            )
        self._vertex = (vertexai, project, location, credentials)
        self._http: httpx2.AsyncClient | None = None
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
        self.temperature = temperature
        self.config: dict[str, object] = dict(config or {})
        self._history: HistoryPrefix[_Converted] = HistoryPrefix()

    def _make_client(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int | None,
        timeout: float | None,
    ) -> genai.Client:
        vertexai, project, location, credentials = self._vertex
        # An HTTP client of our own: the SDK's default one only runs on asyncio. Its hook
        # tells a stream whether its request went out (see _Stream).
        self._http = httpx2.AsyncClient(
            follow_redirects=True, event_hooks={"request": [_request_going_out]}
        )
        retries = DEFAULT_MAX_RETRIES if max_retries is None else max_retries
        options = types.HttpOptions(
            base_url=base_url,
            timeout=round((DEFAULT_TIMEOUT if timeout is None else timeout) * 1000),
            retry_options=types.HttpRetryOptions(attempts=retries + 1),
            httpx_async_client=self._http,
        )
        return genai.Client(
            vertexai=vertexai or None,
            api_key=api_key,
            credentials=credentials,
            project=project,
            location=location,
            http_options=options,
        )

    async def _open_stream(self, request: LlmRequest, tools: list[dict[str, Any]]) -> _Stream:
        contents = gemini_contents(request.messages, self._history)
        config = self._request_config(request, tools)
        # The SDK's types name PIL's Image, which is unknown without Pillow installed.
        stream_content = self._client.aio.models.generate_content_stream  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        # A ValueError or TypeError here: its types refused the config, nothing was sent.
        chunks = await sdk_request(
            PROVIDER,
            stream_content(
                model=self.model,
                contents=cast("types.ContentListUnionDict", contents),
                config=config,
            ),
        )
        return _Stream(chunks, watched=self._http is not None)

    def _request_config(
        self, request: LlmRequest, tools: list[dict[str, Any]]
    ) -> types.GenerateContentConfigDict:
        config: dict[str, object] = {
            **self.config,
            "automatic_function_calling": {"disable": True},
        }
        if request.system_prompt:
            config["system_instruction"] = request.system_prompt
        if tools:
            given = config.get("tools")
            before = list(cast("list[object]", given)) if isinstance(given, list) else []
            config["tools"] = [*before, {"function_declarations": tools}]
            tool_config = gemini_tool_config(request)
            if tool_config is not None:
                config["tool_config"] = tool_config
        if request.output_format is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = output_schema(request.output_format)
        if self.max_tokens is not None:
            config["max_output_tokens"] = self.max_tokens
        if self.temperature is not None:
            config["temperature"] = self.temperature
        if self.extra_body:
            given_options = config.get("http_options")
            options: dict[str, object] = {}
            if isinstance(given_options, types.HttpOptions):
                options = given_options.model_dump(exclude_none=True)
            elif isinstance(given_options, Mapping):
                options = dict(cast("Mapping[str, object]", given_options))
            given_body: object = options.get("extra_body")
            body = (
                dict(cast("Mapping[str, object]", given_body))
                if isinstance(given_body, Mapping)
                else {}
            )
            config["http_options"] = {**options, "extra_body": {**body, **self.extra_body}}
        return cast("types.GenerateContentConfigDict", config)

    def _reader(self, request: LlmRequest) -> _ChunkReader:
        return _ChunkReader()

    @property
    def provider(self) -> str:
        """``"gcp.vertex_ai"`` on Vertex AI, else ``"gcp.gemini"`` (the OpenTelemetry names)."""
        return "gcp.vertex_ai" if self._client.vertexai else self._gen_ai_provider

    def _provider_error(self, exc: Exception) -> ProviderError:
        return provider_error(exc)

    def _base_url(self) -> str:
        # The SDK resolves the base URL (settings, environment, Vertex AI location) on its
        # API client and shows it only there.
        options = self._client._api_client.get_read_only_http_options()  # pyright: ignore[reportPrivateUsage]
        return str(options.get("base_url") or "")

    async def _close_client(self) -> None:
        self._client.close()
        await self._client.aio.aclose()
        if self._http is not None:
            await self._http.aclose()


class _Sending:
    """Whether the request of the stream being read went out (``_request_going_out``)."""

    __slots__ = ("went_out",)

    def __init__(self) -> None:
        self.went_out = False


_SENDING: contextvars.ContextVar[_Sending | None] = contextvars.ContextVar(
    "llm_worker_gemini_sending", default=None
)
"""The ``_Sending`` of the stream this task is reading: the SDK sends from the task that
reads the stream, so the HTTP client's hook finds it here."""


async def _request_going_out(request: httpx2.Request) -> None:
    """The request hook of the HTTP client a ``GeminiClient`` makes: the SDK built the
    request of the stream being read, and sends it."""
    sending = _SENDING.get()
    if sending is not None:
        sending.went_out = True


class _Stream:
    """The SDK's stream of chunks (an async generator) as a ``SdkStream``.

    The SDK builds the request on the first read, so a ``ValueError`` or ``TypeError`` it
    raises means one of two things: before the request went out, a request it could not
    build (``request_not_built``); after, an answer it could not read
    (``malformed_stream``). ``watched``: the HTTP client is the one this module made,
    whose hook says when the request goes out; on another, a request went out once a
    chunk came.
    """

    def __init__(
        self, chunks: AsyncIterator[types.GenerateContentResponse], *, watched: bool
    ) -> None:
        self._chunks = chunks
        self._watched = watched
        self._read = False  # a chunk came

    async def __anext__(self) -> types.GenerateContentResponse:
        sending = _Sending()
        token = _SENDING.set(sending)
        try:
            chunk = await self._chunks.__anext__()
        except errors.UnknownApiResponseError:
            raise  # a ValueError too, but the SDK's own: a chunk that is not JSON
        except (ValueError, TypeError) as exc:
            went_out = self._read or (self._watched and sending.went_out)
            failed = malformed_stream if went_out else request_not_built
            raise failed(PROVIDER, exc) from exc
        finally:
            _SENDING.reset(token)
        self._read = True
        return chunk

    async def close(self) -> None:
        chunks: object = self._chunks
        if isinstance(chunks, AsyncGenerator):
            await cast("AsyncGenerator[object, None]", chunks).aclose()


def gemini_tool_config(request: LlmRequest) -> types.ToolConfigDict | None:
    """The request's ``tool_choice`` and ``allowed_tools`` as ``tool_config``; ``None`` for
    the default (``"auto"``, every tool).

    ``"required"`` → mode ``ANY``, ``"none"`` → ``NONE``, a tool's name → ``ANY`` with
    ``allowed_function_names: [name]``; ``allowed_tools`` → ``allowed_function_names``,
    with mode ``ANY`` for ``"required"`` and ``VALIDATED`` (the model may answer in text,
    and a call it makes is one of those) for ``"auto"``; an empty ``allowed_tools`` →
    ``NONE`` (an empty ``allowed_function_names`` restricts nothing).
    """
    choice, allowed = request.tool_choice, request.allowed_tools
    if choice == "auto" and allowed is None:
        return None
    if choice == "none" or (choice in ("auto", "required") and allowed is not None and not allowed):
        return {"function_calling_config": {"mode": types.FunctionCallingConfigMode.NONE}}
    if choice not in ("auto", "required"):
        allowed = (choice,)
        choice = "required"
    mode = _FUNCTION_CALLING_MODES.get(choice, "VALIDATED")
    calling: types.FunctionCallingConfigDict = {"mode": types.FunctionCallingConfigMode(mode)}
    if allowed is not None:
        calling["allowed_function_names"] = list(allowed)
    return {"function_calling_config": calling}


def tool_args(input_json: str) -> dict[str, object]:
    """A stored call's arguments as ``args``; ``{}`` if they are not a JSON object."""
    if not input_json.strip():
        return {}
    try:
        value: object = json.loads(input_json)
    except ValueError:
        return {}
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


@dataclass(frozen=True)
class _ModelTurn:
    """An assistant message as Gemini reads it, and the ids of its calls Gemini never gave."""

    content: types.Content | None
    unnamed_calls: frozenset[str]


def model_content(message: AssistantMessage) -> _ModelTurn:
    """An assistant message's ``content``: its kept parts, or text and function calls."""
    # An empty part (kept by an earlier version, for one the SDK could not read) is left
    # out: Gemini refuses it.
    items = [data for item in own_items(message, PROVIDER) if (data := item.json())]
    if items:
        kept = [types.Part.model_validate(data) for data in items]
        calls = [part.function_call for part in kept if part.function_call is not None]
        if len(calls) == len(message.tool_calls) and all(
            # The parts say the calls only as long as nobody edited them (set_history).
            sent.name == call.name
            and (not sent.id or sent.id == call.id)
            and (sent.args or {}) == tool_args(call.input_json)
            for call, sent in zip(message.tool_calls, calls, strict=True)
        ):
            unnamed = frozenset(
                call.id for call, sent in zip(message.tool_calls, calls, strict=True) if not sent.id
            )
            return _ModelTurn(types.Content(role="model", parts=kept), unnamed)
    parts: list[types.Part] = []
    if message.text:
        parts.append(types.Part(text=message.text))
    for position, call in enumerate(message.tool_calls):
        parts.append(
            types.Part(
                function_call=types.FunctionCall(
                    id=call.id, name=call.name, args=tool_args(call.input_json)
                ),
                thought_signature=SKIP_SIGNATURE if position == 0 else None,
            )
        )
    return _ModelTurn(types.Content(role="model", parts=parts) if parts else None, frozenset())


GeminiContents: TypeAlias = "list[types.Content | types.ContentDict]"


@dataclass(frozen=True)
class _Converted:
    """Where a conversion ended: the contents so far, what the tool results need to know
    of the calls, and the results not yet sent."""

    contents: GeminiContents
    names: dict[str, str]  # call id -> tool name: a function response names its function
    unnamed: frozenset[str]  # calls Gemini gave no id: their responses carry none either
    responses: list[types.PartDict]
    attachments: list[types.PartDict]  # media of those responses for a user turn after them


def gemini_contents(
    messages: Sequence[Message], prefix: HistoryPrefix[_Converted] | None = None
) -> GeminiContents:
    """Our history as ``contents`` (the list in the module docstring).

    With ``prefix``, only the messages the last request did not have are converted.
    """
    start, state = prefix.resume(messages) if prefix is not None else (0, None)
    out: GeminiContents = list(state.contents) if state is not None else []
    names = dict(state.names) if state is not None else {}
    unnamed = set(state.unnamed) if state is not None else set[str]()
    responses = list(state.responses) if state is not None else []
    attachments = list(state.attachments) if state is not None else []
    for message in messages[start:] if start else messages:
        if isinstance(message, ToolResult):
            key = "error" if message.is_error else "output"
            response: types.FunctionResponseDict = {
                "name": names.get(message.call_id, message.call_id),
                "response": {key: message.content},
            }
            if message.call_id not in unnamed:
                response["id"] = message.call_id
            if has_media(message):
                add_media(message, response, attachments)
            responses.append({"function_response": response})
            continue
        if responses:
            out.append({"role": "user", "parts": responses})
            responses = []
            if attachments:  # after the responses: the function calls' turn must end first
                out.append({"role": "user", "parts": attachments})
                attachments = []
        if isinstance(message, UserMessage):
            out.append({"role": "user", "parts": [{"text": message.text}]})
        elif isinstance(message, AssistantMessage):
            turn = model_content(message)
            for call in message.tool_calls:
                names[call.id] = call.name
            unnamed.update(turn.unnamed_calls)
            if turn.content is not None:
                out.append(turn.content)
        else:
            raise TypeError(f"not a history item: {message!r}")
    if prefix is not None:
        prefix.keep(messages, _Converted(out, names, frozenset(unnamed), responses, attachments))
    if responses:
        if attachments:
            return [
                *out,
                {"role": "user", "parts": responses},
                {"role": "user", "parts": attachments},
            ]
        return [*out, {"role": "user", "parts": responses}]
    return list(out)


def add_media(
    result: ToolResult, response: types.FunctionResponseDict, attachments: list[types.PartDict]
) -> None:
    """A rich result's media, in order: those of ``FUNCTION_RESPONSE_TYPES`` in the function
    response's ``parts``; the other types Gemini documents (``USER_TURN_TYPES``: audio,
    video, text documents) in ``attachments``, the parts of a user turn after the turn's
    responses, headed by a line naming the call. The response's text ends with a note in
    place of each part of a type Gemini does not take (``not_sent``), then one naming the
    parts attached.

    Bytes go as ``inline_data``, a URL as ``file_data`` (``file_uri``); a ``data:`` URL as
    the bytes it holds (``sendable``; a note if they cannot be read).
    """
    parts: list[types.FunctionResponsePartDict] = []
    later: list[MediaPart] = []
    notes: list[str] = []
    for part in result.parts:
        if not isinstance(part, MediaPart):
            continue
        sent = sendable(part, URL_SCHEMES)
        media_type = None if sent is None else gemini_media_type(sent)
        if sent is None or media_type is None:
            notes.append(not_sent(part, sent))
        elif media_type in FUNCTION_RESPONSE_TYPES:
            parts.append(cast("types.FunctionResponsePartDict", media_data(sent)))
        else:
            later.append(sent)
    if parts:
        response["parts"] = parts
    if later:
        attachments.append({"text": MEDIA_OF_RESULT.format(call_id=result.call_id)})
        attachments.extend(cast("types.PartDict", media_data(part)) for part in later)
        notes.append(attached_note(later))
    if notes:
        text = "\n".join([result.content, *notes] if result.content else notes)
        response["response"] = {"error" if result.is_error else "output": text}


def gemini_media_type(part: MediaPart) -> str | None:
    """The type Gemini takes ``part`` as (``USER_TURN_TYPES``, under Gemini's name), or
    ``None`` if it takes no such part.

    A text document of a type off the list (YAML, TOML, a ``text/x-rust`` source...)
    goes as ``text/plain``, as the other clients send its text; by URL it cannot (Gemini
    fetches it under its own type).
    """
    media_type = mime_type(part)
    media_type = MEDIA_TYPE_ALIASES.get(media_type, media_type)
    if media_type in USER_TURN_TYPES:
        return media_type
    if part.data is not None and media_type.startswith("text/"):
        return "text/plain"
    return None


def media_data(part: MediaPart) -> dict[str, object]:
    """A media part Gemini takes (``gemini_media_type``) as Gemini sends it: its bytes as
    ``inline_data``, a URL as ``file_data`` (a part of a function response and of a
    request alike)."""
    media_type = gemini_media_type(part)
    assert media_type is not None, part
    if part.data is not None:
        data = part.data
        if media_type == "text/plain" and mime_type(part) != media_type:
            text = plain_text(part)  # its own type's bytes, read as UTF-8 text
            assert text is not None
            data = text.encode()
        return {"inline_data": {"mime_type": media_type, "data": data}}
    return {"file_data": {"file_uri": part.url, "mime_type": media_type}}


@dataclass
class _Call:
    """A function call being read: whole at once, or in ``partial_args`` pieces."""

    index: int
    id: str | None  # Gemini's id, if it gave one
    name: str
    args: dict[str, Any]
    signature: bytes | None
    continuing: set[str] = field(default_factory=set[str])  # string paths still streaming

    def add(self, call: types.FunctionCall) -> None:
        if call.args:
            self.args.update(call.args)
        for piece in call.partial_args or ():
            path = piece.json_path or "$"
            value: object
            if piece.string_value is not None:
                value = piece.string_value
                if path in self.continuing:
                    value = str(_get_path(self.args, path) or "") + piece.string_value
            elif piece.number_value is not None:
                number = piece.number_value
                value = int(number) if number.is_integer() else number
            elif piece.bool_value is not None:
                value = piece.bool_value
            else:
                value = None
            _set_path(self.args, path, value)
            if piece.will_continue:
                self.continuing.add(path)
            else:
                self.continuing.discard(path)

    def part(self) -> dict[str, Any]:
        call: dict[str, Any] = {"name": self.name, "args": self.args}
        if self.id is not None:
            call["id"] = self.id
        part: dict[str, Any] = {"functionCall": call}
        if self.signature is not None:
            part["thoughtSignature"] = _b64(self.signature)
        return part


class _ChunkReader:
    """Turns ``GenerateContentResponse`` chunks into events, keeping the response's parts."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []  # as Gemini names them (JSON, camelCase)
        self.kinds: list[str] = []
        self.calls = 0
        self.open_call: _Call | None = None
        self.said_text = False
        self.gap = False
        self.response_id: str | None = None
        self.model: str | None = None
        self.finish_reason: str | None = None
        self.blocked: str | None = None
        self.usage: Usage | None = None

    @property
    def done(self) -> bool:
        """Never before the stream ends: a chunk with the usage may follow the one with the
        finish reason."""
        return False

    def feed(self, chunk: types.GenerateContentResponse) -> list[LlmEvent]:
        if chunk.response_id:
            self.response_id = chunk.response_id
        if chunk.model_version:
            self.model = given_text(chunk.model_version)
        if chunk.usage_metadata is not None:
            self.usage = _usage(chunk.usage_metadata)
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.blocked = _reason(feedback.block_reason)
        if not chunk.candidates:
            return []
        candidate = chunk.candidates[0]
        events: list[LlmEvent] = []
        content = candidate.content
        for part in (content.parts if content is not None else None) or ():
            events.extend(self.part(part))
        if candidate.finish_reason is not None:
            self.finish_reason = _reason(candidate.finish_reason)
        return events

    def part(self, part: types.Part) -> list[LlmEvent]:
        if part.function_call is not None:
            return self.call(part.function_call, part.thought_signature)
        if part.text is not None:
            return self.text(part.text, bool(part.thought), part.thought_signature)
        if self.said_text:
            self.gap = True
        dumped = part.model_dump(mode="json", by_alias=True, exclude_none=True)
        # Empty: a part the SDK could not read (a field newer than it), whose fields it
        # dropped. Gemini refuses an empty part on every later request, so it is not kept.
        if dumped:
            self.keep(next(iter(part.model_dump(exclude_none=True))), dumped)
        return []

    def keep(self, kind: str, part: dict[str, Any]) -> None:
        self.kinds.append(kind)
        self.parts.append(part)

    def text(self, text: str, thought: bool, signature: bytes | None) -> list[LlmEvent]:
        kind = "thought" if thought else "text"
        last = self.parts[-1] if self.parts else None
        if last is not None and self.kinds[-1] == kind and "thoughtSignature" not in last:
            last["text"] += text
        else:
            new: dict[str, Any] = {"text": text, "thought": True} if thought else {"text": text}
            self.keep(kind, new)
            last = new
        if signature is not None:
            last["thoughtSignature"] = _b64(signature)
        if not text:
            return []
        if thought:
            return [ReasoningDelta(text)]
        if self.gap:
            text = PARAGRAPH + text
            self.gap = False
        self.said_text = True
        return [TextDelta(text)]

    def call(self, call: types.FunctionCall, signature: bytes | None) -> list[LlmEvent]:
        events: list[LlmEvent] = []
        current = self.open_call
        if current is None:
            if self.said_text:
                self.gap = True
            index = self.calls
            self.calls += 1
            call_id = call.id or f"call_{self.response_id or uuid.uuid4().hex}_{index}"
            current = _Call(index, call.id, call.name or "", {}, signature)
            events.append(ToolUseStart(index, call_id, current.name))
        elif signature is not None and current.signature is None:
            current.signature = signature
        current.add(call)
        if call.will_continue:
            self.open_call = current
            return events
        self.open_call = None
        self.keep("function_call", current.part())
        events.append(ToolInputDelta(current.index, json.dumps(current.args)))
        events.append(ToolUseStop(current.index))
        return events

    def end(self) -> list[LlmEvent]:
        if self.open_call is not None:
            raise stream_ended(PROVIDER)
        reason = self.finish_reason
        if reason is None:
            if self.blocked is None:
                raise stream_ended(PROVIDER)
            reason = self.blocked
        elif reason == "stop":
            reason = "tool_use" if self.calls else "end_turn"
        return [*self.items(), Completion(reason, self.usage, self.response_id, self.model)]

    def items(self) -> list[LlmEvent]:
        """Every part as a provider item, unless text and function calls with ids say it all."""
        kept = [
            (kind, part)
            for kind, part in zip(self.kinds, self.parts, strict=True)
            if not (kind == "text" and not part["text"] and "thoughtSignature" not in part)
        ]
        if _rebuilt_alike([part for _, part in kept], [kind for kind, _ in kept]):
            return []
        return [
            ProviderItemDone(ProviderItem(PROVIDER, kind, compact_json(part)))
            for kind, part in kept
        ]


def _rebuilt_alike(parts: Sequence[Mapping[str, Any]], kinds: Sequence[str]) -> bool:
    """Whether a text part and then function calls, made from the message, say it all."""
    called = False
    for kind, part in zip(kinds, parts, strict=True):
        if "thoughtSignature" in part:
            return False
        if kind == "function_call":
            if "id" not in part["functionCall"]:  # the rebuilt call would name one
                return False
            called = True
        elif kind != "text" or called:
            return False
    return True


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _reason(value: object) -> str:
    # A finish or block reason: an enum member, or a str for one this SDK does not know.
    return str(getattr(value, "value", value)).lower()


def _usage(meta: types.GenerateContentResponseUsageMetadata) -> Usage:
    thoughts = meta.thoughts_token_count or 0
    return Usage(
        (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0),
        (meta.candidates_token_count or 0) + thoughts,
        cached_input_tokens=meta.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


def _steps(path: str) -> list[str | int]:
    """A JSON path (``$.a.b[0]``, ``$['a b']``) as its keys and indexes."""
    steps: list[str | int] = []
    i = 1 if path.startswith("$") else 0
    while i < len(path):
        if path[i] == ".":
            end = i + 1
            while end < len(path) and path[end] not in ".[":
                end += 1
            steps.append(path[i + 1 : end])
            i = end
        elif path[i] == "[":
            end = path.index("]", i)
            inner = path[i + 1 : end]
            if inner[:1] in ("'", '"'):
                steps.append(inner[1:-1])
            else:
                steps.append(int(inner))
            i = end + 1
        else:
            raise ValueError(f"not a JSON path: {path!r}")
    return steps


def _get_path(root: dict[str, Any], path: str) -> object:
    node: Any = root
    for step in _steps(path):
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return None
    return cast(object, node)


def _set_path(root: dict[str, Any], path: str, value: object) -> None:
    steps = _steps(path)
    if not steps:
        if isinstance(value, dict):
            root.update(cast("dict[str, Any]", value))
        return
    node: Any = root
    for step, after in zip(steps, [*steps[1:], None], strict=True):
        if after is None:
            if isinstance(step, int):
                _reach(node, step)
            node[step] = value
            return
        empty: Any = [] if isinstance(after, int) else {}
        if isinstance(step, int):
            _reach(node, step)
            if node[step] is None:
                node[step] = empty
        elif node.get(step) is None:
            node[step] = empty
        node = node[step]


def _reach(items: list[Any], index: int) -> None:
    """Make ``items[index]`` exist: a list's items come in order, so ``index`` is one it
    has or the next. One further on would pad the list without bound (``[50000000]``,
    18 bytes, a gigabyte): a ``ValueError``, which makes the stream malformed."""
    if index > len(items):
        raise ValueError(
            f"partialArgs index {index} skips past the end of a list of {len(items)} items"
        )
    if index == len(items):
        items.append(None)


def _error_body(body: object) -> Mapping[str, object] | None:
    """``body["error"]`` of a google.rpc error body (``None`` for a body of another shape)."""
    error = cast("Mapping[str, object]", body).get("error") if isinstance(body, Mapping) else None
    return cast("Mapping[str, object]", error) if isinstance(error, Mapping) else None


def _retry_delay(body: object) -> float | None:
    """The seconds a google.rpc error body asks to wait (its ``RetryInfo`` detail's
    ``retryDelay``, a Duration such as ``"37s"`` or ``"45.8s"``); ``None`` if it says none,
    or no finite, non-negative time."""
    error = _error_body(body)
    details = error.get("details") if error is not None else None
    for detail in cast("list[object]", details) if isinstance(details, list) else ():
        if not isinstance(detail, Mapping):
            continue
        fields = cast("Mapping[str, object]", detail)
        kind, delay = fields.get("@type"), fields.get("retryDelay")
        if not (isinstance(kind, str) and kind.endswith("google.rpc.RetryInfo")):
            continue
        if not (isinstance(delay, str) and delay.endswith("s")):
            return None
        try:
            seconds = float(delay[:-1])
        except ValueError:
            return None
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def provider_error(exc: Exception) -> ProviderError:
    """The SDK's exception as a ``ProviderError`` (see docs/providers.md, "Errors")."""
    if isinstance(exc, errors.APIError):
        status = exc.code if isinstance(exc.code, int) and exc.code >= 400 else None
        details: object = getattr(exc, "details", None)
        # The body's message (google.rpc's, or a page that is not JSON: a proxy's...), a
        # FastAPI-style body's detail (a proxy's), the body's status name.
        message = (
            body_text(exc.message)
            or detail_text(details)
            or body_text(exc.status)
            or exception_text(exc)
        )
        retryable = status is None or is_retryable_status(status)
        response: object = getattr(exc, "response", None)  # httpx's, aiohttp's or requests'
        headers: object = getattr(response, "headers", None)
        wait = retry_after(cast("Mapping[str, str]", headers)) if headers else None
        return ProviderError(
            PROVIDER,
            message,
            status=status,
            retryable=retryable,
            # Gemini's own 429s say it only in the body.
            retry_after=wait if wait is not None else _retry_delay(details),
        )
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderError(PROVIDER, TIMED_OUT, retryable=True)
    if isinstance(exc, (httpx2.HTTPError, google.auth.exceptions.TransportError)):
        return http_failure(PROVIDER, exc, "the request failed")
    if isinstance(exc, errors.UnknownApiResponseError):  # a response that is not JSON
        return malformed_stream(PROVIDER, exc)
    return ProviderError(PROVIDER, exception_text(exc))
