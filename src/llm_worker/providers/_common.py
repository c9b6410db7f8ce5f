"""What the provider clients share: their skeleton (``ProviderClient``), when a failure is
worth retrying, how an error body is read, the texts they use, and ``HistoryPrefix``, which
lets a client convert only the messages its last request did not have.

Nothing here imports a provider SDK; httpx2, which every one of them sends through, is
the only HTTP library it names.
"""

from __future__ import annotations

import contextlib
import datetime
import email.utils
import json
import math
import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import anyio
import httpx2
import pydantic
from typing_extensions import Self

from .._client import LlmEvent, LlmRequest, OutputFormat
from .._conversation import AssistantMessage, Message, ProviderItem
from .._exceptions import ProviderError
from .._formats import FormatName, export_tools
from .._meta import LlmToolDefinition
from .._safe_text import safe_text

__all__ = [
    "MALFORMED_STREAM",
    "REQUEST_NOT_BUILT",
    "STREAM_ENDED",
    "TIMED_OUT",
    "ErrorKind",
    "HistoryPrefix",
    "ProviderClient",
    "SdkClient",
    "SdkStream",
    "StreamReader",
    "body_status",
    "body_text",
    "compact_json",
    "connection_failed",
    "detail_text",
    "error_field",
    "exception_detail",
    "exception_text",
    "given_text",
    "http_failure",
    "is_retryable_status",
    "malformed_stream",
    "not_a_stream",
    "output_schema",
    "own_items",
    "proxied_message",
    "request_not_built",
    "retry_after",
    "sdk_request",
    "stream_ended",
]

# What a ProviderError says when no provider message exists.
STREAM_ENDED = "the response stream ended before the response was complete"
TIMED_OUT = "the request timed out"
MALFORMED_STREAM = "the provider sent a malformed stream event"
REQUEST_NOT_BUILT = "the request could not be built, so it was not sent"

_MAX_BODY_TEXT = 300
# How much of a server's text body_text reads: collapsing whitespace shortens it.
_BODY_WINDOW = 4 * _MAX_BODY_TEXT

# How long what follows a response's terminal event is read, unfed, before the stream is
# closed (the openai SDK drains a body after `[DONE]` as long).
_DRAIN_SECONDS = 0.1


def is_retryable_status(status: int) -> bool:
    """The statuses both SDKs retry themselves: 408, 409, 429 and every 5xx (529 included)."""
    return status in (408, 409, 429) or status >= 500


def _error_object(body: object) -> Mapping[str, object] | None:
    # ``body["error"]``, or ``body`` itself when the SDK already unwrapped ``error``.
    if not isinstance(body, Mapping):
        return None
    fields = cast("Mapping[str, object]", body)
    error = fields.get("error", fields)
    return cast("Mapping[str, object]", error) if isinstance(error, Mapping) else None


def error_field(body: object, name: str) -> str | None:
    """``body["error"][name]`` (or ``body[name]`` when the SDK already unwrapped ``error``),
    as ``body_text`` gives a server's text: on one line, shortened."""
    error = _error_object(body)
    return body_text(error.get(name)) if error is not None else None


def body_status(body: object) -> int | None:
    """The HTTP status an error body names: ``status_code`` (Groq) or a numeric ``code``
    (OpenRouter), in ``body["error"]`` or ``body``; ``None`` if it names none."""
    error = _error_object(body)
    if error is None:
        return None
    for name in ("status_code", "code"):
        value = error.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
            return value
    return None


def proxied_message(body: object) -> str | None:
    """What a proxy's error says the upstream provider answered, if it says.

    OpenRouter wraps an upstream failure as ``{"message": "Provider returned error",
    "metadata": {"raw": ..., "provider_name": ...}}``: the useful text is ``raw`` (the
    upstream's own error body, whose ``message`` is taken when it is JSON).
    """
    error = _error_object(body)
    metadata = error.get("metadata") if error is not None else None
    if not isinstance(metadata, Mapping):
        return None
    fields = cast("Mapping[str, object]", metadata)
    raw = fields.get("raw")
    if isinstance(raw, str):
        try:
            parsed: object = json.loads(raw)
        except ValueError:
            parsed = None
        detail = error_field(parsed, "message") or body_text(raw)
    elif isinstance(raw, Mapping):
        detail = error_field(cast("Mapping[str, object]", raw), "message")
    else:
        detail = None
    if detail is None:
        return None
    provider = body_text(fields.get("provider_name"))
    return body_text(f"{provider}: {detail}") if provider else detail


def detail_text(body: object) -> str | None:
    """The message of a FastAPI-style error body: ``{"detail": "..."}``, or
    ``{"detail": [{"loc": [...], "msg": "..."}, ...]}`` (what many compatible servers send)."""
    if not isinstance(body, Mapping):
        return None
    detail = cast("Mapping[str, object]", body).get("detail")
    if isinstance(detail, str):
        return body_text(detail)
    if not isinstance(detail, list):
        return None
    parts: list[str] = []
    for item in cast("list[object]", detail)[:5]:
        if not isinstance(item, Mapping):
            continue
        fields = cast("Mapping[str, object]", item)
        message, location = fields.get("msg"), fields.get("loc")
        if not isinstance(message, str):
            continue
        where = (
            ".".join(str(p) for p in cast("list[object]", location))
            if isinstance(location, list)
            else ""
        )
        parts.append(f"{where}: {message}" if where else message)
    return body_text("; ".join(parts)) if parts else None


def body_text(body: object) -> str | None:
    """Text a server chose, as a ``ProviderError``'s message shows it: on one line, and
    ``_MAX_BODY_TEXT`` characters at most (cut ending in "..."); ``None`` for no text.

    Every server-chosen text a message quotes goes through here: a non-JSON error body (a
    proxy's HTML page...), the message of a JSON one (``error_field``), of an error event
    in a stream, the SDK's own text that quotes a body. A server can make any of them a
    megabyte long; only the first ``_BODY_WINDOW`` characters are read.
    """
    if not isinstance(body, str):
        return None
    head = body[:_BODY_WINDOW]
    text = " ".join(head.split())
    if not text:
        return None
    if len(text) <= _MAX_BODY_TEXT and len(head) == len(body):
        return text
    return text[: _MAX_BODY_TEXT - 3] + "..."


def http_failure(provider: str, cause: BaseException | None, fallback: str) -> ProviderError:
    """What the HTTP library raised (``cause``; ``fallback`` if it says nothing): a request
    it refused to send (``httpx2.LocalProtocolError``: a header value with a line break,
    such as an API key read from a file with its newline) could not be built and is not
    retryable; anything else is a connection that failed (``connection_failed``)."""
    if isinstance(cause, httpx2.LocalProtocolError):
        return request_not_built(provider, cause)
    return connection_failed(provider, cause, fallback)


def connection_failed(provider: str, cause: BaseException | None, fallback: str) -> ProviderError:
    """The connection failed or broke mid-response: always worth retrying."""
    said = body_text(_said(cause)) if cause is not None else None
    detail = f"{type(cause).__name__}: {said}" if said else fallback
    return ProviderError(provider, f"the connection failed ({detail})", retryable=True)


def malformed_stream(provider: str, cause: Exception) -> ProviderError:
    """A stream event that cannot be read (a field missing, or of another type). Not
    retryable: the server that sent it would send it again."""
    return ProviderError(
        provider, f"{MALFORMED_STREAM} ({exception_detail(cause)})", retryable=False
    )


def request_not_built(provider: str, cause: BaseException) -> ProviderError:
    """The SDK refused to build the request (an empty history, a setting of a type it does
    not take), so nothing was sent. Not retryable: the same request would be refused
    again, and no provider is at fault."""
    return ProviderError(
        provider, f"{REQUEST_NOT_BUILT} ({exception_detail(cause)})", retryable=False
    )


_T = TypeVar("_T")


async def sdk_request(provider: str, call: Awaitable[_T]) -> _T:
    """Await the SDK's ``call`` that builds a request and sends it (its arguments, our own
    conversions, are made before): a ``TypeError`` or ``ValueError`` it raises is a request
    it could not build (``request_not_built``: a value in ``extra_body`` JSON cannot
    encode, an API key with a character a header cannot hold). Nothing was sent: what
    sending raises, the SDKs raise as their own errors."""
    try:
        return await call
    except (TypeError, ValueError) as exc:
        raise request_not_built(provider, exc) from exc


def exception_text(exc: BaseException) -> str:
    """What an exception says, for a ``ProviderError``'s message: its text with secrets,
    paths and addresses taken out (``safe_text``), else its class's name."""
    return _said(exc) or type(exc).__name__


def exception_detail(cause: BaseException) -> str:
    """What an exception says, for a message: its class and its text (``exception_text``'s),
    on one line, shortened."""
    name = type(cause).__name__
    said = body_text(_said(cause))
    return f"{name}: {said}" if said else name


# What h11 says of a header it refuses quotes the header's value, which may be a credential
# a header's name does not give away (`x-api-key`, Azure's `api-key`): it is not shown.
_QUOTED_HEADER = re.compile(r"(Illegal header (?:name|value))\s.*", re.DOTALL)


def _said(exc: BaseException) -> str:
    # An exception's text, scrubbed: every exception text a ProviderError quotes goes
    # through here (the HTTP library's quotes the request's headers: `Bearer sk-...`).
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not break the error path
        return ""
    if isinstance(exc, httpx2.LocalProtocolError):
        text = _QUOTED_HEADER.sub(r"\1 (not shown)", text)
    return safe_text(text)


@contextlib.contextmanager
def _reading_events(provider: str) -> Generator[None]:
    # What a reader raises on an event it cannot read (an AttributeError on a field a
    # server left out...) is the provider's malformed stream; its own ProviderErrors (an
    # error event, a failed response) stay as they are.
    try:
        yield
    except ProviderError:
        raise
    except Exception as exc:
        raise malformed_stream(provider, exc) from exc


ErrorKind = Callable[[object], "tuple[int | None, bool] | None"]
"""The status and retryability an error body gets from the kind of error it names (an
Anthropic error type, an OpenAI error code); ``None`` for a body that names none."""


def not_a_stream(provider: str, body: str, error_kind: ErrorKind) -> ProviderError:
    """A 200 response whose body held no event: a JSON error (some proxies and servers
    answer so), or a server that ignored ``stream: true``. Its message is the body's own;
    its status and retryability those of the status it names, else of the kind of error it
    names (``error_kind``, as the provider's in-stream errors get them); else not retryable."""
    parsed: object
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    status = body_status(parsed)
    if status is not None:
        retryable = is_retryable_status(status)
    else:
        status, retryable = error_kind(parsed) or (None, False)
    said = proxied_message(parsed) or error_field(parsed, "message") or detail_text(parsed)
    if said is None and isinstance(parsed, Mapping):
        said = body_text(cast("Mapping[str, object]", parsed).get("error"))  # {"error": "..."}
    message = said or f"the response held no stream events ({body_text(body)})"
    return ProviderError(provider, message, status=status, retryable=retryable)


# A line of server-sent events: a comment, a field the SDKs read, or blank (one that ends
# an event). A body of such lines only (keep-alive comments, `event: ping`) is a stream.
_SSE_LINE = re.compile(rb"(?::.*|(?:data|event|id|retry)(?::.*)?)?")


async def _drain(response: SdkStream[object]) -> None:
    """Read what follows a response's terminal event, unfed, until the body ends or
    ``_DRAIN_SECONDS`` have passed: a server that holds the stream open (or sends
    keep-alives) costs that long, not a timeout, and the body a server ends at once is read
    to its end, so the SDK's async generators finish rather than being left to the garbage
    collector (which trio reports as ResourceWarnings) and the connection can be reused."""
    with anyio.move_on_after(_DRAIN_SECONDS):
        while True:
            try:
                await response.__anext__()
            except StopAsyncIteration:
                return
            except Exception:  # the response is complete: what breaks after it is no failure
                return


class _BodyHead(httpx2.AsyncByteStream):
    """A streamed HTTP body that keeps its first bytes as the SDK reads them: what a body
    that held no event said (``not_a_stream``), which the SDK's SSE parser drops unread."""

    __slots__ = ("_encoding", "_stream", "cut", "head")

    _KEEP = 4 * _MAX_BODY_TEXT

    def __init__(self, stream: httpx2.AsyncByteStream, encoding: str) -> None:
        self._stream = stream
        self._encoding = encoding  # the response's Content-Encoding: the head is as sent
        self.head = b""
        self.cut = False  # whether the body went on past the head

    @classmethod
    def tap(cls, response: object) -> _BodyHead | None:
        """Keep the head of the body of ``response``, an SDK stream over an httpx2 response
        (``.response``, as the openai and anthropic SDKs have); ``None`` for another."""
        http: object = getattr(response, "response", None)
        if not isinstance(http, httpx2.Response) or not isinstance(
            http.stream, httpx2.AsyncByteStream
        ):
            return None
        body = cls(http.stream, http.headers.get("content-encoding", "").strip().lower())
        http.stream = body  # the SDK has not read from it yet
        return body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in self._stream:
            room = self._KEEP - len(self.head)
            self.head += part[:room]
            self.cut = self.cut or len(part) > room
            yield part

    async def aclose(self) -> None:
        await self._stream.aclose()

    def holds_no_event(self) -> bool:
        """Whether the body said something, but not as server-sent events (JSON, HTML,
        text). One of comments and ``event:`` lines only is a stream that ended early; so is
        one whose encoding the head cannot be decoded from (brotli, zstd) here."""
        head = self._decoded()
        if head is None:
            return False
        lines = head.splitlines()
        if self.cut and len(lines) > 1:
            lines.pop()  # cut short, maybe inside a field's name
        return any(not _SSE_LINE.fullmatch(line.strip()) for line in lines)

    def text(self) -> str:
        """The head of the body, decoded, as text."""
        return (self._decoded() or b"").decode("utf-8", "replace")

    def _decoded(self) -> bytes | None:
        # The head as the SDK read it, decoded from its Content-Encoding (no more than
        # _KEEP bytes of it: a small compressed head can stand for a huge body).
        if self._encoding in ("", "identity"):
            return self.head
        if self._encoding not in ("gzip", "deflate"):
            return None
        try:  # 32 + MAX_WBITS: zlib reads either header, gzip's or deflate's
            return zlib.decompressobj(32 + zlib.MAX_WBITS).decompress(self.head, self._KEEP)
        except zlib.error:
            return None


def stream_ended(provider: str) -> ProviderError:
    """The stream ended cleanly but before the provider said the response was complete."""
    return ProviderError(provider, STREAM_ENDED, retryable=True)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The seconds ``headers`` ask to wait before trying again: ``retry-after-ms`` (OpenAI,
    Anthropic), else ``retry-after`` in seconds or as an HTTP date; ``None`` if neither
    says (or says something that is no time)."""
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        with contextlib.suppress(ValueError):
            return _wait(float(milliseconds) / 1000)
    given = headers.get("retry-after")
    if given is None:
        return None
    with contextlib.suppress(ValueError):
        return _wait(float(given))
    try:
        when = email.utils.parsedate_to_datetime(given)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return _wait((when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


def _wait(seconds: float) -> float | None:
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def given_text(value: object) -> str | None:
    """``value`` if it is a non-empty ``str``: what a server sent in a field the SDK types as
    text but does not check (a response id, a model name), else ``None``."""
    return value if isinstance(value, str) and value else None


def compact_json(value: object) -> str:
    """``value`` as JSON text without spaces, non-ASCII kept: how provider items are stored."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def output_schema(output_format: OutputFormat) -> dict[str, Any]:
    """A structured answer's JSON Schema as a provider is sent it (a fresh copy): without the
    worker's own ``x-`` keywords at its root, which no provider reads."""
    schema = output_format.schema
    for key in [key for key in schema if key.startswith("x-")]:
        del schema[key]
    return schema


def own_items(message: AssistantMessage, provider: str) -> list[ProviderItem]:
    """The message's provider items that ``provider`` made, in order (another's are dropped)."""
    return [item for item in message.provider_items if item.provider == provider]


_StateT = TypeVar("_StateT")


class HistoryPrefix(Generic[_StateT]):
    """The history converted for the last request, and the conversion's state at its end.

    A worker sends its whole history with every request, and the history only grows
    within a run: converting it all again (parsing every call's arguments and provider
    items) would make each request cost more the longer the run. ``resume(messages)``
    says how many leading messages are the ones converted last time, and the state
    after them, so only the new messages are converted; ``keep(messages, state)``
    records the request's. The prefix is compared as a tuple: the same objects cost a
    pointer comparison each (in C), and an equal copy counts as the same, since a
    conversion depends only on the messages' values. A history replaced by
    ``set_history`` or ``load_state`` is converted anew. The state is never changed
    after ``keep``: a client copies what it extends.
    """

    __slots__ = ("_messages", "_state")

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] = ()
        self._state: _StateT | None = None

    def resume(self, messages: Sequence[Message]) -> tuple[int, _StateT | None]:
        """How many leading ``messages`` were converted last time, and the state after them."""
        count = len(self._messages)
        if not count or len(messages) < count or tuple(messages[:count]) != self._messages:
            return 0, None
        return count, self._state

    def keep(self, messages: Sequence[Message], state: _StateT) -> None:
        """``messages`` are converted, ending in ``state``."""
        self._messages = tuple(messages[:])
        self._state = state

    def clear(self) -> None:
        """Forget the last history (a setting the conversion reads has changed)."""
        self._messages = ()
        self._state = None


_ChunkT = TypeVar("_ChunkT")
_ChunkT_co = TypeVar("_ChunkT_co", covariant=True)
_ChunkT_contra = TypeVar("_ChunkT_contra", contravariant=True)


class SdkClient(Protocol):
    """What ``openai.AsyncOpenAI`` and ``anthropic.AsyncAnthropic`` have: the defaults of
    ``ProviderClient._base_url()`` and ``_close_client()`` use it."""

    @property
    def base_url(self) -> object: ...

    async def close(self) -> None: ...


_SdkT = TypeVar("_SdkT")


class SdkStream(Protocol[_ChunkT_co]):
    """A streamed response, as the SDKs give it: the next chunk, and ``close()``."""

    async def __anext__(self) -> _ChunkT_co: ...

    async def close(self) -> None: ...


class StreamReader(Protocol[_ChunkT_contra]):
    """Turns one response's chunks into our events; ``end()`` once the stream has ended,
    or once ``done`` says the response is complete."""

    def feed(self, chunk: _ChunkT_contra, /) -> list[LlmEvent]: ...

    @property
    def done(self) -> bool:
        """Whether the response's terminal event came (Anthropic's ``message_stop``,
        Responses' ``response.completed``): nothing after it belongs to the response, so
        nothing more is fed, and the stream is closed after a short drain (``_drain``). A
        server may hold the connection open after it, or send keep-alives: reading on to
        the end of the body would wait for them. ``False`` for a stream whose end the SDK
        finds (Chat Completions' ``[DONE]``), or that has no terminal event (Gemini: a
        usage chunk may follow the finish reason)."""
        ...

    def end(self) -> list[LlmEvent]:
        """What the end of the stream brings, the ``Completion`` last; raises a
        ``ProviderError`` if the response is not complete."""
        ...


class ProviderClient(ABC, Generic[_SdkT, _ChunkT]):
    """The skeleton of an ``LlmClient`` on a provider's SDK; a subclass fills in the SDK's parts.

    This class owns the SDK client (given as ``client=``, or made from the
    settings and then closed by ``aclose()`` / ``async with``), converts the
    tools (once for as long as they stay the same), and runs the stream,
    turning every failure into a ``ProviderError``. A subclass names its
    provider, tool format and SDK (the class attributes below) and writes:

    - ``_make_client(...)``: the SDK client, from the connection settings;
    - ``_open_stream(request, tools)``: send the request (the SDK's call awaited through
      ``sdk_request``), return the streamed response;
    - ``_reader(request)``: a new ``StreamReader`` for one response to ``request``;
    - ``_provider_error(exc)``: an SDK exception as a ``ProviderError``;

    and, for an SDK client that is not like ``SdkClient``, ``_base_url()`` and
    ``_close_client()``.

    ``provider``, ``model`` and ``base_url`` say what the client talks to (tracing reads
    them); ``supports_output_format`` that it sends structured output natively.
    """

    _provider: ClassVar[str]  # ProviderError.provider: "openai"
    # gen_ai.provider.name of the OpenTelemetry GenAI conventions: "openai", "gcp.gemini".
    _gen_ai_provider: ClassVar[str]
    _format: ClassVar[FormatName]  # how the tools are sent (see export_tools)
    _sdk_client_name: ClassVar[str]  # named when client= comes with settings: "AsyncOpenAI"
    # The exceptions _provider_error() maps: the SDK's base exception (and any other the
    # SDK lets through).
    _sdk_error: ClassVar[type[Exception] | tuple[type[Exception], ...]]
    # What a read that waited longer than `timeout` raises, when the SDK lets it through
    # unwrapped while the stream is read (Anthropic's: httpx2's ReadTimeout).
    _timeout_error: ClassVar[type[Exception] | tuple[type[Exception], ...]] = TimeoutError

    supports_output_format: bool = True
    """Every provider client sends a run's structured answer in its API's own field
    (``LlmRequest.output_format``). Set it to ``False`` on a client (a server or model that
    refuses that field) and the worker asks through its ``final_result`` tool instead."""

    def __init__(
        self,
        model: str,
        *,
        client: _SdkT | None,
        api_key: str | None,
        base_url: str | None,
        max_retries: int | None,
        timeout: float | None,
        extra_body: Mapping[str, object] | None,
    ) -> None:
        if client is not None:
            # client= comes configured: refuse connection settings given beside it.
            settings = {
                "api_key": api_key,
                "base_url": base_url,
                "max_retries": max_retries,
                "timeout": timeout,
            }
            given = [name for name, value in settings.items() if value is not None]
            if given:
                raise TypeError(
                    f"{type(self).__name__} takes client= or {'/'.join(given)}=, not both; "
                    f"configure the {self._sdk_client_name} client instead"
                )
            self._client = client
            self._owns_client = False
        else:
            self._client = self._make_client(
                api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
            )
            self._owns_client = True
        self._model = model
        self.extra_body: dict[str, object] = dict(extra_body or {})
        self._tools_for: tuple[tuple[LlmToolDefinition, ...], tuple[object, ...]] | None = None
        self._tools: list[dict[str, Any]] = []

    @abstractmethod
    def _make_client(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int | None,
        timeout: float | None,
    ) -> _SdkT:
        """The SDK client for these settings (``None``: the SDK's default)."""

    @abstractmethod
    async def _open_stream(
        self, request: LlmRequest, tools: list[dict[str, Any]]
    ) -> SdkStream[_ChunkT]:
        """Send ``request`` (with the converted ``tools``) and return the streamed response."""

    @abstractmethod
    def _reader(self, request: LlmRequest) -> StreamReader[_ChunkT]:
        """A new reader, for one response to ``request``."""

    @abstractmethod
    def _provider_error(self, exc: Exception) -> ProviderError:
        """The SDK's exception ``exc`` as a ``ProviderError``."""

    def _error_kind(self, body: object) -> tuple[int | None, bool] | None:
        """The status and retryability of an error body (a 200 that is no stream) from the
        kind of error it names, as this provider's in-stream errors get them (``ErrorKind``);
        none by default."""
        return None

    @property
    def client(self) -> _SdkT:
        """The SDK client requests go through."""
        return self._client

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def provider(self) -> str:
        """What this client talks to, as the OpenTelemetry GenAI conventions name it
        (``gen_ai.provider.name``): ``"openai"``, ``"anthropic"``, ``"gcp.gemini"``..."""
        return self._gen_ai_provider

    @property
    def base_url(self) -> str | None:
        """Where the SDK client sends requests (``None`` if it does not say)."""
        return self._base_url() or None

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        """Send ``request`` with ``stream=True`` and yield its events, ending with a Completion.

        Raises ``ProviderError`` for every failure: an error status, a connection that
        fails, breaks or times out, an error inside the stream (an ``error`` event, a
        failed response), an event the reader cannot read (``malformed_stream``), a
        200 whose body holds no event (``not_a_stream``), a stream that ends before the
        response is complete, a request the SDK could not build (``request_not_built``:
        ``_open_stream`` raises it, through ``sdk_request``; a subclass's stream may
        raise it on its first read, where its SDK builds it). The stream is closed once
        the reader is ``done``, or it ends.
        """
        tools = self._tool_dicts(request.tools)
        try:
            response = await self._open_stream(request, tools)
        except self._sdk_error as exc:
            raise self._provider_error(exc) from exc
        reader = self._reader(request)
        body = _BodyHead.tap(response)
        chunks = 0
        try:
            while not reader.done:  # then what follows is not the response's (_drain)
                try:
                    chunk = await response.__anext__()
                except StopAsyncIteration:
                    if not chunks and body is not None and body.holds_no_event():
                        raise not_a_stream(self._provider, body.text(), self._error_kind) from None
                    break
                except ProviderError:
                    raise  # the stream's own (a request its SDK could not build), as it is
                except self._sdk_error as exc:
                    raise self._provider_error(exc) from exc
                except Exception as exc:  # what the SDK lets through unwrapped
                    raise self._stream_failed(exc) from exc
                chunks += 1
                with _reading_events(self._provider):
                    events = reader.feed(chunk)
                for event in events:  # yielded outside: the consumer's exceptions pass
                    yield event
            if reader.done:
                await _drain(response)
        finally:
            await response.close()
        with _reading_events(self._provider):
            events = reader.end()
        for event in events:
            yield event

    def _stream_failed(self, exc: Exception) -> ProviderError:
        """An exception the SDK let through unwrapped while reading the stream."""
        if isinstance(exc, (pydantic.ValidationError, json.JSONDecodeError, UnicodeDecodeError)):
            # A chunk not JSON, not the API's, or not even UTF-8.
            return malformed_stream(self._provider, exc)
        if isinstance(exc, self._timeout_error):
            return ProviderError(self._provider, TIMED_OUT, retryable=True)
        # The HTTP library's own error: the stream broke.
        return http_failure(self._provider, exc, "the response stream broke")

    def _tool_dicts(self, tools: Sequence[LlmToolDefinition]) -> list[dict[str, Any]]:
        # A locked worker sends the same tools every time: convert them once, and again
        # when a setting the conversion reads changes (``strict`` set between requests).
        key = (tuple(tools), self._export_settings())
        if key != self._tools_for:
            self._tools = self._export_tools(key[0])
            self._tools_for = key
        return self._tools

    def _export_tools(self, tools: Sequence[LlmToolDefinition]) -> list[dict[str, Any]]:
        """The tools in this provider's format (a subclass may add options)."""
        return export_tools(tools, self._format)

    def _export_settings(self) -> tuple[object, ...]:
        """The settings of this client that ``_export_tools`` reads (none by default)."""
        return ()

    def _base_url(self) -> str:
        """Where the SDK client sends requests (for the repr)."""
        return str(cast(SdkClient, self._client).base_url)

    async def _close_client(self) -> None:
        """Close the SDK client this object made."""
        await cast(SdkClient, self._client).close()

    async def aclose(self) -> None:
        """Close the SDK client if this object made it (a client you passed in stays open)."""
        if self._owns_client:
            await self._close_client()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} model={self._model!r} base_url={self._base_url()!r}>"
