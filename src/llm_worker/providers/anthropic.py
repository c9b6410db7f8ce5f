"""Anthropic's Messages API as an ``LlmClient``.

Needs the ``anthropic`` package: ``pip install 'llm-worker[anthropic]'``.

>>> client = AnthropicClient("claude-haiku-4-5")     # ANTHROPIC_API_KEY from the env
>>> worker = Worker(client)

How the conversation is sent:

- the system prompt → ``system`` (left out if empty);
- ``UserMessage(text)`` → ``{"role": "user", "content": text}``;
- ``AssistantMessage`` → ``{"role": "assistant", "content": [...]}``: the blocks the
  response had, as they came, when the message keeps them (its ``provider_items``, see
  below); otherwise a ``text`` block (if there is text) and one ``tool_use`` block per
  call (``id``, ``name``, ``input``: the call's ``input_json`` parsed; text that is not
  a JSON object is sent as ``{}``, so the conversation can go on, and the model reads
  the error result it got for that call). An id the API would refuse (it takes
  ``^[a-zA-Z0-9_-]+$``; another provider's, such as Kimi's ``functions.add_note:0``)
  goes out rewritten (``tool_use_id``), the same way in the call's ``tool_result``. A
  text block of whitespace only is not sent
  (the API refuses it; the message keeps its text), and an assistant message with no
  content is left out: the API rejects empty content;
- consecutive ``ToolResult``\\s → one ``{"role": "user", "content": [...]}`` with a
  ``tool_result`` block per result (``tool_use_id``, ``content``, ``is_error``):
  ``content`` is the result's text, or, for a result with media, its parts in order
  as blocks (``tool_result_content``: text, ``image`` and ``document`` blocks, and a
  note for audio, video and other media a tool result cannot hold, and for bytes over
  the API's size limits: an image over 5 MB of base64, a document over a whole
  request's 32 MB; sent, they would fail every later request of the conversation).

A run's structured answer (``request.output_format``) goes as ``output_config``
(``claude_output_config``). A type the API's structured outputs cannot express (a
``dict[str, X]``, a recursive type: ``supports_output_schema`` says ``False``) is
asked for through the worker's ``final_result`` tool instead.

What a message keeps: when a response has blocks that text and tool calls cannot say
(``thinking`` with its ``signature``, ``redacted_thinking``, ``server_tool_use``,
``web_search_tool_result`` and the other server-tool results, text with ``citations``,
``compaction``, any block type this client does not know), or its text and tool_use
blocks are interleaved, every block of the response becomes one
``ProviderItem("anthropic", <block type>, <the block as JSON>)``, in order, with its
streamed parts put together (text, thinking, signature, citations, input). Later
requests send those blocks back unchanged, as the API requires for thinking during
tool use and for a turn paused with ``pause_turn`` (but a ``tool_use`` block's id, which
goes out as its ``tool_result``'s does: ``tool_use_id``). A response of plain text and
tool_use blocks keeps no items: it is rebuilt from the message. The blocks are used
while the message's tool calls are the ``tool_use`` blocks among them (same ids, in
order); a message edited to other calls is rebuilt, without them. Items of another
provider are not sent.

How the stream is read: ``message_start`` gives the input usage;
``content_block_start`` of a ``tool_use`` block → ``ToolUseStart(index, id, name)``
(``index`` is the block's); ``text_delta`` → ``TextDelta`` (a text block that follows a
block of another kind, after earlier text, starts with a blank line: ``"\\n\\n"``, so
"…information." and "I found…" stay apart); ``thinking_delta`` → ``ReasoningDelta``;
``input_json_delta`` of a tool_use block → ``ToolInputDelta(index, partial_json)``;
``content_block_stop`` of a tool_use block → ``ToolUseStop`` (a delta for a block that
never started is a malformed stream); ``message_delta`` gives
``stop_reason`` and the usage; ``message_stop`` ends the response (its provider items,
then ``Completion``). Stop reasons are Anthropic's own (``end_turn``, ``tool_use``,
``max_tokens``, ``stop_sequence``, ``pause_turn``, ``refusal``...), which is our
vocabulary; the worker continues a turn that stopped with ``pause_turn``. Usage:
input tokens with cache reads and writes (``cached_input_tokens``: the reads), output
tokens (``reasoning_tokens``: ``output_tokens_details.thinking_tokens``), plus the
tokens of the ``compaction`` entries of ``usage.iterations``, which the top-level
figures leave out.

Every failure is raised from ``stream()`` as ``ProviderError("anthropic", ...)``,
chained to the SDK's exception; an ``error`` event inside the stream gets the
HTTP status Anthropic documents for its error type (``overloaded_error`` → 529,
``rate_limit_error`` → 429...). A message the server chose is on one line, 300
characters at most (``body_text``). The SDK retries connection errors, 408, 409, 429
and 5xx (529 included; ``max_retries`` times, 2 by default) before the stream
starts; a failure after the first byte is never retried.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

try:
    import anthropic
    import httpx2
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "llm_worker.providers.anthropic needs the anthropic package: "
        "pip install 'llm-worker[anthropic]'"
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
from .._conversation import AssistantMessage, Message, ProviderItem, ToolResult, Usage, UserMessage
from .._exceptions import ProviderError
from .._model_texts import MEDIA_NOT_SENT, media_label
from ._common import (
    TIMED_OUT,
    HistoryPrefix,
    ProviderClient,
    body_text,
    compact_json,
    error_field,
    exception_detail,
    exception_text,
    given_text,
    http_failure,
    is_retryable_status,
    output_schema,
    own_items,
    retry_after,
    sdk_request,
    stream_ended,
)
from ._parts import base64_of, has_media, mime_type, plain_text, result_blocks

if TYPE_CHECKING:
    from anthropic import Omit
    from anthropic.types import (
        Base64PDFSourceParam,
        ContentBlockParam,
        DocumentBlockParam,
        MessageParam,
        OutputConfigParam,
        RawMessageStreamEvent,
        ToolChoiceParam,
        ToolParam,
        ToolResultBlockParam,
    )
    from anthropic.types.tool_result_block_param import Content as ToolResultContent

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
"""The HTTP status Anthropic documents for each error type (used for ``error`` events, and
a 200 whose body is an error: see ``type_status``)."""

PARAGRAPH = "\n\n"
"""What goes between two text blocks that a block of another kind separates."""

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types a ``tool_result`` takes (base64 or URL)."""

URL_SCHEMES = frozenset({"http", "https"})
"""The URLs an image or PDF ``source`` of ``type: "url"`` takes: the API fetches only
http(s). A part's ``data:`` URL is sent as its bytes, a ``gs://`` one as a note
(``sendable``)."""

MAX_IMAGE_BASE64 = 5 * 1024 * 1024
"""The largest image the API takes: 5 MB per image, counted in its base64 text (it refuses
more with "image exceeds 5 MB maximum: <base64 length> bytes > 5242880 bytes")."""

MAX_REQUEST_BYTES = 32 * 1024 * 1024
"""The documented size limit of a whole request (standard endpoints, PDFs included): a
document larger than that alone can never be sent."""

MAX_IMAGE_BYTES = MAX_IMAGE_BASE64 // 4 * 3
"""The largest image, in its own bytes, whose base64 fits ``MAX_IMAGE_BASE64`` (3932160)."""

MAX_PDF_BYTES = MAX_REQUEST_BYTES // 4 * 3
"""The largest PDF, in its own bytes, whose base64 fits in a request (25165824)."""


class AnthropicClient(ProviderClient[anthropic.AsyncAnthropic, "RawMessageStreamEvent"]):
    """An ``LlmClient`` on Anthropic's Messages API (``POST /v1/messages``, streamed).

    Give it either a configured ``anthropic.AsyncAnthropic`` as ``client`` (you close
    it), or the settings to make one: ``api_key`` (default: ``ANTHROPIC_API_KEY``),
    ``base_url`` (default: ``ANTHROPIC_BASE_URL`` or Anthropic's), ``max_retries`` (SDK
    default 2) and ``timeout`` in seconds (SDK default 600). A client it made is closed
    by ``aclose()`` or ``async with``.

    ``max_tokens`` (required by the API) caps each response; ``extra_body`` is merged
    into every request body (``{"temperature": 0.2}``, ``{"thinking": {"type":
    "enabled", "budget_tokens": 2048}}``, server tools in ``{"tools": [...]}`` next to
    the worker's...).
    """

    _provider = PROVIDER
    _gen_ai_provider = "anthropic"
    _format = "anthropic"
    _sdk_client_name = "AsyncAnthropic"
    _sdk_error = anthropic.AnthropicError
    # While it reads a stream the SDK lets httpx2's ReadTimeout through unwrapped.
    _timeout_error = httpx2.TimeoutException

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
        self._history: HistoryPrefix[_Converted] = HistoryPrefix()
        self._output: tuple[OutputFormat, OutputConfigParam] | None = None

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
        output_config = self._output_config(request.output_format)
        extra_body = self.extra_body or None
        given = self.extra_body.get("output_config")
        if isinstance(output_config, dict) and isinstance(given, Mapping):
            # extra_body's own output_config (its effort...) would replace ours: merge them.
            merged = {**cast("Mapping[str, object]", given), **output_config}
            extra_body = {**self.extra_body, "output_config": merged}
        server_tools = self.extra_body.get("tools")
        if tools and isinstance(server_tools, list):
            # extra_body's tools (server tools: web search...) would replace the worker's:
            # send both, the worker's first.
            tools = [*tools, *cast("list[dict[str, Any]]", server_tools)]
            extra_body = {k: v for k, v in (extra_body or {}).items() if k != "tools"} or None
        return await sdk_request(
            PROVIDER,
            self._client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                messages=claude_messages(request.messages, self._history),
                system=request.system_prompt if request.system_prompt else anthropic.omit,
                tools=cast("list[ToolParam]", tools) if tools else anthropic.omit,
                tool_choice=claude_tool_choice(request) if tools else anthropic.omit,
                output_config=output_config,
                stream=True,
                extra_body=extra_body,
            ),
        )

    def _output_config(self, output_format: OutputFormat | None) -> OutputConfigParam | Omit:
        # A run sends the same format with every request: convert it once.
        if output_format is None:
            return anthropic.omit
        if self._output is None or self._output[0] != output_format:
            self._output = (output_format, claude_output_config(output_format))
        return self._output[1]

    def supports_output_schema(self, schema: Mapping[str, Any]) -> bool:
        """Whether a run's structured answer of this JSON Schema (``OutputFormat.schema``)
        can go natively, in ``output_config``, meaning what it means.

        ``False`` for what Anthropic's structured outputs cannot express
        (``output_schema_problem``): a ``dict[str, X]`` anywhere in the type, a recursive
        type, ``Any``. The worker then asks for that answer through its ``final_result``
        tool, as for a client without ``supports_output_format``.
        """
        return output_schema_problem(schema) is None

    def _reader(self, request: LlmRequest) -> _EventReader:
        return _EventReader()

    def _provider_error(self, exc: Exception) -> ProviderError:
        return provider_error(cast(anthropic.AnthropicError, exc))

    def _error_kind(self, body: object) -> tuple[int | None, bool] | None:
        typed = type_status(body)
        return None if typed is None else (typed, is_retryable_status(typed))


def claude_output_config(output_format: OutputFormat) -> OutputConfigParam:
    """A structured answer's schema as ``output_config``: ``{"format": {"type":
    "json_schema", "schema": ...}}``.

    The schema is rewritten as the SDK's own ``messages.parse`` does
    (``anthropic.transform_schema``): every object closed (``additionalProperties:
    false``), keywords the API does not take (``minimum``, ``maxLength``...) moved
    into the description. A schema the API cannot be sent as it means
    (``output_schema_problem``) raises a non-retryable ``ProviderError`` instead: sent,
    it would forbid answers the type takes (a ``dict[str, X]`` could only be ``{}``).
    """
    rewritten, problem = _rewritten(output_schema(output_format))
    if problem is not None:
        raise ProviderError(
            PROVIDER,
            f"Anthropic's structured outputs cannot express the output type's schema: "
            f"{problem}; ask through the final_result tool instead "
            f"(client.supports_output_format = False)",
        )
    return {"format": {"type": "json_schema", "schema": rewritten}}


def output_schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``output_config`` cannot carry the structured answer ``schema`` as it means it,
    or ``None`` if it can.

    Anthropic's structured outputs take ``additionalProperties: false`` on every object
    and nothing else, and no recursive schema (its "JSON Schema limitations"). So a
    schema cannot go when it has an object whose keys are not all named in advance (a
    ``dict[str, X]``: ``additionalProperties`` a schema or true, ``patternProperties``, an
    object with no ``properties``), which the rewrite would close to ``{}``; a
    ``$ref`` cycle (a tree type); or anything ``anthropic.transform_schema`` cannot
    read (``Any``: a schema of no type). An object that lists its properties without
    ``additionalProperties`` (a pydantic model) is closed: validation drops other keys.
    """
    return _rewritten(schema)[1]


def _rewritten(schema: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``schema`` (without the worker's root ``x-`` keywords) as ``transform_schema``
    rewrites it, and why that cannot be sent (``None``: it can)."""
    original = {key: value for key, value in schema.items() if not key.startswith("x-")}
    try:
        rewritten = anthropic.transform_schema(original)
    except Exception as exc:  # however it fails (ValueError, assert_never on a type list...)
        return original, f"anthropic.transform_schema cannot read it ({exception_detail(exc)})"
    problem = _closed_open_object(original, rewritten, "#") or _recursion(rewritten)
    return rewritten, problem


def _closed_open_object(original: object, rewritten: object, path: str) -> str | None:
    """The first object the rewrite closed though it takes other keys, said with its path;
    ``original`` and ``rewritten`` are walked side by side, where the rewrite recursed."""
    given, sent = _mapping(original), _mapping(rewritten)
    if given is None or sent is None:
        return None
    if sent.get("additionalProperties") is False and _takes_other_keys(given):
        return (
            f"{path} takes keys not named in advance ({_other_keys(given)}), and the API "
            f"takes only additionalProperties: false, which would forbid them"
        )
    for sub_original, sub_rewritten, sub_path in _pairs(given, sent, path):
        found = _closed_open_object(sub_original, sub_rewritten, sub_path)
        if found is not None:
            return found
    return None


def _pairs(
    original: Mapping[str, Any], rewritten: Mapping[str, Any], path: str
) -> list[tuple[object, object, str]]:
    """The subschemas ``transform_schema`` rewrote, each with the one it came from and its
    path: ``$defs`` and ``properties`` by name, ``items``, and the branches of ``anyOf``
    (from ``anyOf`` or ``oneOf``) and ``allOf``."""
    pairs: list[tuple[object, object, str]] = []
    for key in ("$defs", "properties"):
        given = _mapping(original.get(key)) or {}
        for name, sub in (_mapping(rewritten.get(key)) or {}).items():
            if name in given:
                pairs.append((given[name], sub, f"{path}/{key}/{name}"))
    if "items" in rewritten:
        pairs.append((original.get("items"), rewritten["items"], f"{path}/items"))
    for key in ("anyOf", "allOf"):
        # The rewrite makes an anyOf of a oneOf (when there is no anyOf list).
        source = key if key == "allOf" or _list(original.get("anyOf")) is not None else "oneOf"
        given_list = _list(original.get(source)) or []
        for index, sub in enumerate(_list(rewritten.get(key)) or []):
            if index < len(given_list):
                pairs.append((given_list[index], sub, f"{path}/{source}/{index}"))
    return pairs


def _mapping(value: object) -> Mapping[str, Any] | None:
    """``value`` if it is a schema object (a mapping), else ``None``."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else None


def _list(value: object) -> list[object] | None:
    """``value`` if it is a list, else ``None``."""
    return cast("list[object]", value) if isinstance(value, list) else None


def _takes_other_keys(schema: Mapping[str, Any]) -> bool:
    """Whether an object schema admits keys its ``properties`` do not name."""
    if schema.get("patternProperties"):
        return True
    if schema.get("unevaluatedProperties", False) is not False:
        return True
    if "additionalProperties" not in schema:
        return "properties" not in schema  # {"type": "object"}: any object
    return schema["additionalProperties"] is not False


def _other_keys(schema: Mapping[str, Any]) -> str:
    """How an object takes other keys, for a message (a schema is not shown: it may be big)."""
    if schema.get("patternProperties"):
        return "patternProperties"
    if schema.get("unevaluatedProperties", False) is not False:
        return "unevaluatedProperties"
    if "additionalProperties" not in schema:
        return "no properties"
    extra = schema["additionalProperties"]
    return f"additionalProperties: {'true' if extra is True else 'a schema'}"


def _recursion(rewritten: Mapping[str, Any]) -> str | None:
    """Why the schema is recursive (a ``$ref`` cycle), or ``None`` if it is not."""
    defs = _mapping(rewritten.get("$defs")) or {}
    graph = {name: _refs(body) for name, body in defs.items()}
    if "#" in _refs(rewritten) or any("#" in refs for refs in graph.values()):
        return "the schema refers to itself ($ref: '#'), and the API takes no recursive schema"
    done: set[str] = set()
    for start in graph:
        cycle = _cycle_from(start, graph, [], done)
        if cycle is not None:
            shown = " -> ".join(f"#/$defs/{name}" for name in cycle)
            return f"{shown} is recursive, and the API takes no recursive schema"
    return None


def _cycle_from(
    name: str, graph: Mapping[str, set[str]], trail: list[str], done: set[str]
) -> list[str] | None:
    # Depth first; `done` holds the entries no cycle goes through, so each is walked once.
    if name in trail:
        return [*trail[trail.index(name) :], name]
    if name in done or name not in graph:
        return None
    trail.append(name)
    for target in sorted(graph[name]):
        cycle = _cycle_from(target, graph, trail, done)
        if cycle is not None:
            return cycle
    trail.pop()
    done.add(name)
    return None


_DEFS_REF = "#/$defs/"


def _refs(node: object) -> set[str]:
    """The ``$defs`` names the ``$ref``\\s inside ``node`` point at (``"#"`` for the root)."""
    found: set[str] = set()
    stack = [node]
    while stack:  # a stack, not recursion: no depth limit to meet
        item = stack.pop()
        schema, items = _mapping(item), _list(item)
        if schema is not None:
            ref = schema.get("$ref")
            if ref == "#":
                found.add("#")
            elif isinstance(ref, str) and ref.startswith(_DEFS_REF):
                found.add(ref[len(_DEFS_REF) :])
            stack.extend(value for key, value in schema.items() if key != "$defs")
        elif items is not None:
            stack.extend(items)
    return found


def claude_tool_choice(request: LlmRequest) -> ToolChoiceParam | Omit:
    """The request's ``tool_choice`` as the Messages API's; left out for ``"auto"``.

    The API has no allowed-tools field: ``request.allowed_tools`` is enforced by the worker
    (a call to another tool gets an error result and does not run); an empty one, no tool
    allowed, is ``{"type": "none"}``.
    """
    choice, allowed = request.tool_choice, request.allowed_tools
    if choice in ("auto", "required") and allowed is not None and not allowed:
        return {"type": "none"}  # no tool may be called
    if choice == "auto":
        return anthropic.omit
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_IN_TOOL_USE_ID = re.compile(r"[^a-zA-Z0-9_-]")


def tool_use_id(call_id: str) -> str:
    """A call id as the API takes it (``^[a-zA-Z0-9_-]+$``), for ``tool_use.id`` and
    ``tool_result.tool_use_id`` alike: unchanged if it is one; else (another provider's,
    such as Kimi's ``functions.add_note:0``) every other character becomes ``_``, and a
    short hash of the id follows, so two ids that differ only there stay two."""
    if _TOOL_USE_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{_NOT_IN_TOOL_USE_ID.sub('_', call_id)}_{digest}"


def tool_input(input_json: str) -> dict[str, object]:
    """A stored call's arguments as the ``input`` object; ``{}`` if they are not a JSON object."""
    if not input_json.strip():
        return {}
    try:
        value: object = json.loads(input_json)
    except ValueError:
        return {}
    return cast("dict[str, object]", value) if isinstance(value, dict) else {}


def assistant_content(message: AssistantMessage) -> list[ContentBlockParam]:
    """An assistant message's ``content``: its kept blocks, or text and tool_use blocks."""
    items = own_items(message, PROVIDER)
    if items:
        blocks = [cast("ContentBlockParam", item.json()) for item in items]
        calls = [block.get("id") for block in blocks if block["type"] == "tool_use"]
        if calls == [call.id for call in message.tool_calls]:
            # Their ids go out as the results' do (tool_use_id): the pairs stay pairs.
            return [_sent_block(block) for block in blocks if not _blank_text(block)]
    content: list[ContentBlockParam] = []
    if message.text.strip():
        content.append({"type": "text", "text": message.text})
    content.extend(
        {
            "type": "tool_use",
            "id": tool_use_id(call.id),
            "name": call.name,
            "input": tool_input(call.input_json),
        }
        for call in message.tool_calls
    )
    return content


def _sent_block(block: ContentBlockParam) -> ContentBlockParam:
    """A kept block as it goes back: a ``tool_use`` block with its id as the API takes it
    (``tool_use_id``, as its ``tool_result`` has it), any other as it came."""
    if block["type"] == "tool_use":
        block["id"] = tool_use_id(block["id"])  # a fresh copy: item.json() parses anew
    return block


def _blank_text(block: ContentBlockParam) -> bool:
    # A text block of whitespace only: the API refuses it ("text content blocks must
    # contain non-whitespace text"), so it is not sent (the message keeps it).
    text = block.get("text") if block["type"] == "text" else None
    return isinstance(text, str) and not text.strip()


def tool_result_content(result: ToolResult) -> list[ToolResultContent]:
    """A rich result's ``content`` blocks, in the order of its parts: text (and data as its
    JSON), ``image`` and ``document`` blocks, and a note for media the API cannot take.
    Texts of whitespace only are left out, as in assistant messages (``_blank_text``). A
    ``data:`` URL goes as the bytes it holds, a URL of a scheme the API does not fetch
    (``URL_SCHEMES``: ``gs://``) as a note (``sendable``)."""
    return result_blocks(result, media_block, _text_block, schemes=URL_SCHEMES, blank=False)


def _text_block(text: str) -> ToolResultContent:
    return {"type": "text", "text": text}


def media_block(part: MediaPart) -> ToolResultContent | None:
    """An ``image`` or ``document`` block for ``part``; ``None`` if a tool result cannot hold it.

    Images of ``IMAGE_TYPES`` and PDFs go as base64 or as their URL; a ``text/*``
    document's bytes as a plain-text document. Audio, video and other documents cannot.
    Bytes over the API's limits (``MAX_IMAGE_BYTES``, ``MAX_PDF_BYTES``, a text document
    over ``MAX_REQUEST_BYTES``) become a text block with a note (``too_large``): sent, the
    API would refuse every later request of the conversation, since each carries them.
    """
    largest = largest_bytes(part)
    if largest is not None and part.size > largest:
        return _text_block(too_large(part, largest))
    media_type = mime_type(part)
    if media_type in IMAGE_TYPES:
        if part.url is not None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        image_type = cast(
            "Literal['image/jpeg', 'image/png', 'image/gif', 'image/webp']", media_type
        )
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": image_type, "data": base64_of(part)},
        }
    document: DocumentBlockParam
    if media_type == "application/pdf":
        if part.url is not None:
            document = {"type": "document", "source": {"type": "url", "url": part.url}}
        else:
            source = {"type": "base64", "media_type": "application/pdf", "data": base64_of(part)}
            document = {"type": "document", "source": cast("Base64PDFSourceParam", source)}
    else:
        text = plain_text(part)
        if text is None:
            return None
        document = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    if part.name:
        document["title"] = part.name
    return document


def largest_bytes(part: MediaPart) -> int | None:
    """The most bytes the API takes of a part like ``part`` (``None``: no limit, or a URL,
    whose size the API finds out)."""
    if part.data is None:
        return None
    media_type = mime_type(part)
    if media_type in IMAGE_TYPES:
        return MAX_IMAGE_BYTES
    if media_type == "application/pdf":
        return MAX_PDF_BYTES
    if media_type.startswith("text/"):
        return MAX_REQUEST_BYTES  # sent as its text, not base64
    return None


def too_large(part: MediaPart, largest: int) -> str:
    """The note the model reads in place of a part over the API's limit: the same note as
    for media a tool result cannot hold, with the largest size it takes."""
    media_type = f"{mime_type(part)} of more than {largest} bytes"
    return MEDIA_NOT_SENT.format(media=media_label(part), media_type=media_type)


@dataclass(frozen=True)
class _Converted:
    """Where a conversion ended: the messages so far, and the tool results not yet sent."""

    messages: list[MessageParam]
    results: list[ToolResultBlockParam]


def claude_messages(
    messages: Sequence[Message], prefix: HistoryPrefix[_Converted] | None = None
) -> list[MessageParam]:
    """Our history as Messages API ``messages`` (the list in the module docstring).

    With ``prefix``, only the messages the last request did not have are converted.
    """
    start, state = prefix.resume(messages) if prefix is not None else (0, None)
    out = list(state.messages) if state is not None else []
    results = list(state.results) if state is not None else []
    for message in messages[start:] if start else messages:
        if isinstance(message, ToolResult):
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": tool_use_id(message.call_id),
                    "content": tool_result_content(message)
                    if has_media(message)
                    else message.content,
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
            content = assistant_content(message)
            if content:
                out.append({"role": "assistant", "content": content})
        else:
            raise TypeError(f"not a history item: {message!r}")
    if prefix is not None:
        prefix.keep(messages, _Converted(out, results))
    if results:
        return [*out, {"role": "user", "content": results}]
    return list(out)


class _Block:
    """One content block as it streams in; ``data`` is the block as the API names it."""

    __slots__ = ("data", "json", "pieces")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.pieces: list[str] = []  # text or thinking deltas
        self.json: list[str] | None = None  # input_json_delta fragments, once one came

    @property
    def type(self) -> str:
        return cast(str, self.data["type"])

    def finish(self) -> None:
        """Put the streamed parts into ``data``."""
        data = self.data
        if self.pieces:
            key = "thinking" if data["type"] == "thinking" else "text"
            data[key] = (data.get(key) or "") + "".join(self.pieces)
            self.pieces = []
        if self.json is not None:
            data["input"] = tool_input("".join(self.json))
            self.json = None

    def plain(self) -> bool:
        """A text or tool_use block that the message's text and tool calls say entirely."""
        kind = self.data["type"]
        return kind == "tool_use" or (kind == "text" and not self.data.get("citations"))


class _EventReader:
    """Turns Messages stream events into our events, keeping the blocks the API needs back."""

    def __init__(self) -> None:
        self.blocks: dict[int, _Block] = {}
        self.tool_blocks: set[int] = set()  # open tool_use blocks
        self.said_text = False  # some text went out already
        self.gap = False  # a block of another kind came after that text
        self.stop_reason: str | None = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.input_tokens = 0
        self.cached_tokens = 0
        self.output_tokens = 0
        self.reasoning_tokens = 0
        self.compaction_input = 0
        self.compaction_output = 0
        self.stopped = False

    @property
    def done(self) -> bool:
        """Once ``message_stop`` came: the response's last event."""
        return self.stopped

    def text(self, text: str) -> list[LlmEvent]:
        if not text:
            return []
        if self.gap:
            text = PARAGRAPH + text
            self.gap = False
        self.said_text = True
        return [TextDelta(text)]

    def feed(self, event: RawMessageStreamEvent) -> list[LlmEvent]:
        if event.type == "content_block_delta":
            block = self.blocks.get(event.index)
            if block is None:  # what it adds to is unknown: dropping it would lose text
                raise ValueError(f"a delta for content block {event.index}, which never started")
            delta = event.delta
            if delta.type == "text_delta":
                block.pieces.append(delta.text)
                return self.text(delta.text)
            if delta.type == "input_json_delta":
                if block.json is None:
                    block.json = []
                block.json.append(delta.partial_json)
                if event.index in self.tool_blocks and delta.partial_json:
                    return [ToolInputDelta(event.index, delta.partial_json)]
                return []
            if delta.type == "thinking_delta":
                block.pieces.append(delta.thinking)
                return [ReasoningDelta(delta.thinking)] if delta.thinking else []
            if delta.type == "signature_delta":
                block.data["signature"] = delta.signature
            elif delta.type == "citations_delta":
                citations: list[object] = block.data.get("citations") or []
                citations.append(delta.citation.to_dict(mode="json"))
                block.data["citations"] = citations
            else:  # a delta this SDK does not know (compaction_delta...): merge its fields
                unknown = cast("anthropic.BaseModel", delta)
                _merge(block.data, unknown.to_dict(mode="json"))
            return []
        if event.type == "content_block_start":
            start = event.content_block
            if start.type == "text":
                data: dict[str, Any] = {"type": "text", "text": start.text}
                if start.citations is not None:
                    data["citations"] = [c.to_dict(mode="json") for c in start.citations]
                self.blocks[event.index] = _Block(data)
                return self.text(start.text)
            if self.said_text:
                self.gap = True
            if start.type == "tool_use":
                call_id = start.id or f"toolu_{secrets.token_hex(12)}"  # a server left it out
                data = {
                    "type": "tool_use",
                    "id": call_id,
                    "name": start.name,
                    "input": start.input,
                }
                self.blocks[event.index] = _Block(data)
                self.tool_blocks.add(event.index)
                return [ToolUseStart(event.index, call_id, start.name)]
            self.blocks[event.index] = _Block(start.to_dict(mode="json"))
            if start.type == "thinking" and start.thinking:
                return [ReasoningDelta(start.thinking)]
            return []
        if event.type == "content_block_stop":
            block = self.blocks.get(event.index)
            if block is None:
                return []
            streamed = block.json is not None
            block.finish()
            if event.index not in self.tool_blocks:
                return []
            self.tool_blocks.discard(event.index)
            # A server that sends the whole input at the start and no deltas.
            initial = block.data["input"]
            head: list[LlmEvent] = (
                [ToolInputDelta(event.index, json.dumps(initial))]
                if initial and not streamed
                else []
            )
            return [*head, ToolUseStop(event.index)]
        if event.type == "message_start":
            message = cast("Any", event.message)  # typed as whole; a server may leave out
            self.response_id = given_text(getattr(message, "id", None))
            self.model = given_text(getattr(message, "model", None))
            usage = message.usage
            if usage is not None:
                self.cached_tokens = usage.cache_read_input_tokens or 0
                self.input_tokens = (
                    (usage.input_tokens or 0)
                    + (usage.cache_creation_input_tokens or 0)
                    + self.cached_tokens
                )
                self.output_tokens = usage.output_tokens or 0
        elif event.type == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            delta_usage = cast("Any", event.usage)  # typed as always there; a server may not
            if delta_usage is None:
                return []
            self.output_tokens = delta_usage.output_tokens or 0
            if delta_usage.input_tokens is not None:  # cumulative, when sent
                self.cached_tokens = delta_usage.cache_read_input_tokens or 0
                self.input_tokens = (
                    delta_usage.input_tokens
                    + (delta_usage.cache_creation_input_tokens or 0)
                    + self.cached_tokens
                )
            details = delta_usage.output_tokens_details
            if details is not None:
                self.reasoning_tokens = details.thinking_tokens or 0
            extra = delta_usage.model_extra  # fields this SDK does not know: `iterations`
            if extra:
                self.count_iterations(extra.get("iterations"))
        elif event.type == "message_stop":
            self.stopped = True
            return self.items()
        return []

    def count_iterations(self, iterations: object) -> None:
        """Compaction's own tokens, which the top-level usage leaves out (context management)."""
        if not isinstance(iterations, list):
            return
        self.compaction_input = self.compaction_output = 0
        for entry in cast("list[object]", iterations):
            if not isinstance(entry, Mapping):
                continue
            fields = cast("Mapping[str, object]", entry)
            if fields.get("type") != "compaction":
                continue
            for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
                value = fields.get(name)
                self.compaction_input += value if isinstance(value, int) else 0
            value = fields.get("output_tokens")
            self.compaction_output += value if isinstance(value, int) else 0

    def items(self) -> list[LlmEvent]:
        """Every block as a provider item, if the message's text and calls cannot say them."""
        blocks: list[_Block] = []
        for _, block in sorted(self.blocks.items()):
            block.finish()  # a block whose stop never came (none should)
            if not (block.type == "text" and not block.data["text"] and block.plain()):
                blocks.append(block)  # an empty text block is not sent back: the API refuses it
        if _rebuilt_alike(blocks):
            return []
        return [
            ProviderItemDone(ProviderItem(PROVIDER, block.type, compact_json(block.data)))
            for block in blocks
        ]

    def end(self) -> list[LlmEvent]:
        if not self.stopped:
            raise stream_ended(PROVIDER)
        usage = Usage(
            self.input_tokens + self.compaction_input,
            self.output_tokens + self.compaction_output,
            cached_input_tokens=self.cached_tokens,
            reasoning_tokens=self.reasoning_tokens,
        )
        return [Completion(self.stop_reason or "end_turn", usage, self.response_id, self.model)]


def _rebuilt_alike(blocks: Sequence[_Block]) -> bool:
    """Whether a text block and then tool_use blocks, made from the message, say it all."""
    called = False
    for block in blocks:
        if not block.plain():
            return False
        if block.type == "tool_use":
            called = True
        elif called:  # text after a tool call
            return False
    return True


def _merge(data: dict[str, Any], delta: dict[str, Any]) -> None:
    # Text fields are streamed in pieces, others come whole.
    for key, value in delta.items():
        if key == "type":
            continue
        before = data.get(key)
        data[key] = before + value if isinstance(before, str) and isinstance(value, str) else value


def type_status(body: object) -> int | None:
    """The HTTP status Anthropic documents for the error type ``body`` names, if it names one."""
    return ERROR_STATUS.get(error_field(body, "type") or "")


def provider_error(exc: anthropic.AnthropicError) -> ProviderError:
    """The SDK's exception as a ``ProviderError`` (see docs/providers.md, "Errors")."""
    if isinstance(exc, anthropic.APIStatusError):
        message = (
            error_field(exc.body, "message")
            or body_text(exc.body)
            or body_text(exc.message)  # the SDK's, quoting the body: "Error code: 400 - {...}"
            or exception_text(exc)
        )
        if exc.status_code >= 400:
            status = exc.status_code
            return ProviderError(
                PROVIDER,
                message,
                status=status,
                retryable=is_retryable_status(status),
                retry_after=retry_after(exc.response.headers),
            )
        # An `error` event inside a 200 stream: the status its error type stands for.
        typed = type_status(exc.body)
        retryable = typed is None or is_retryable_status(typed)
        return ProviderError(PROVIDER, message, status=typed, retryable=retryable)
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderError(PROVIDER, TIMED_OUT, retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return http_failure(PROVIDER, exc.__cause__, exc.message)
    return ProviderError(PROVIDER, exception_text(exc))
