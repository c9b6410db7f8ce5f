"""The JSON format of a ``RunState`` (version 1): its shape, and reading and writing it.

Imported only by ``RunState.to_json`` and ``from_json`` (and ``llm_worker.temporal``,
which sends messages between a workflow and its activities in the same format),
so ``import llm_worker`` does not build the validator. Reading checks the shape
strictly (pydantic names the first bad fields); ``RunState`` then checks the
conversation.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from typing_extensions import NotRequired, TypedDict

from ._approvals import MAX_PAUSE_ID_CHARS, PAUSE_ID_PATTERN
from ._content import ContentPart, DataPart, MediaPart, TextPart, check_metadata
from ._conversation import (
    MAX_COUNT,
    AssistantMessage,
    Message,
    ProviderItem,
    RunUsage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from ._events import ToolCallOutcome
from ._exceptions import RunStateError
from ._fail_fast import screen_of
from ._instrumentation import MAX_TRACE_LINK_CHARS, MAX_TRACE_LINK_ITEMS
from ._safe_text import bounded_repr, valid_unicode

__all__ = [
    "FORMAT_VERSION",
    "CallStatus",
    "check_message",
    "dump_call",
    "dump_message",
    "dump_result",
    "dump_state",
    "dump_usage",
    "load_state",
    "parse_message",
    "parse_result",
]

FORMAT_VERSION = 1
_FORMAT = "llm-worker.run-state"

CallStatus = Literal["ready", "held", "final"]
# One paused call, as RunState's PausedCall fields: call, status, reason, result, outcome.
PausedTuple = tuple[ToolCall, CallStatus, str | None, ToolResult | None, ToolCallOutcome | None]


class _CallJson(TypedDict):
    id: str
    name: str
    input_json: str


class _TextPartJson(TypedDict):
    type: Literal["text"]
    text: str


class _MediaPartJson(TypedDict):
    type: Literal["media"]
    media_type: str
    data: str | None  # base64
    url: str | None
    name: str | None


class _DataPartJson(TypedDict):
    type: Literal["data"]
    json: str


_PartJson = Annotated[_TextPartJson | _MediaPartJson | _DataPartJson, Field(discriminator="type")]


class _ResultJson(TypedDict):
    call_id: str
    content: str
    is_error: bool
    # Only in a rich result (a text result is written as before).
    parts: NotRequired[list[_PartJson]]
    metadata: NotRequired[Any]


# A count: no client can report a negative one (the worker refuses it), and a negative
# run usage read back would keep the run's budgets from ever firing. Nor one over
# MAX_COUNT: the next response would add to it, and an int of more than 4 300 digits
# makes the next to_json() fail.
_Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]


class _UsageJson(TypedDict):
    input_tokens: _Count
    output_tokens: _Count
    cached_input_tokens: _Count
    reasoning_tokens: _Count


class _RunUsageJson(_UsageJson):
    requests: _Count
    tool_calls: _Count


class _UserJson(TypedDict):
    type: Literal["user"]
    text: str


class _ProviderItemJson(TypedDict):
    provider: str
    kind: str
    data: str


class _AssistantJson(TypedDict):
    type: Literal["assistant"]
    text: str
    tool_calls: list[_CallJson]
    stop_reason: str | None
    usage: _UsageJson | None
    provider_items: list[_ProviderItemJson]
    response_id: NotRequired[str | None]  # NotRequired: states written before it read
    model: NotRequired[str | None]


class _ToolResultJson(_ResultJson):
    type: Literal["tool_result"]


class _PausedCallJson(TypedDict):
    call: _CallJson
    status: CallStatus
    reason: str | None
    result: _ResultJson | None
    outcome: (
        Literal[
            "ran",
            "skipped",
            "answered",
            "denied",
            "not_found",
            "not_allowed",
            "aborted",
            "withheld",
            "not_run",
        ]
        | None
    )


_PauseId = Annotated[
    str, Field(min_length=1, max_length=MAX_PAUSE_ID_CHARS, pattern=PAUSE_ID_PATTERN)
]


class _PausedJson(TypedDict):
    turns: _Count
    output_attempts: NotRequired[_Count]  # NotRequired: states written before it read
    # NotRequired: a state written before pause ids reads with a fresh one.
    pause_id: NotRequired[_PauseId]
    calls: list[_PausedCallJson]


_TraceText = Annotated[str, Field(max_length=MAX_TRACE_LINK_CHARS)]


class _RunJson(TypedDict):
    usage: _RunUsageJson
    tool_choice: str
    allowed_tools: list[str] | None
    # NotRequired: states written before it read, and a run never traced writes none.
    trace_link: NotRequired[
        Annotated[dict[_TraceText, _TraceText], Field(max_length=MAX_TRACE_LINK_ITEMS)]
    ]


_MessageJson = Annotated[_UserJson | _AssistantJson | _ToolResultJson, Field(discriminator="type")]


class _StateJson(TypedDict):
    format: Literal["llm-worker.run-state"]
    version: int
    fingerprint: str
    history: list[_MessageJson]
    paused: _PausedJson | None
    run: _RunJson
    usage: _RunUsageJson


class _HeaderJson(TypedDict):
    """What every version of the format begins with (the rest is ignored)."""

    format: Literal["llm-worker.run-state"]
    version: int


_ADAPTER = TypeAdapter(_StateJson)
# The format is our own TypedDicts, with no code of the application in it: its screen
# reads exactly what the adapter reads, its lists failing fast (a hostile file of a
# million bad messages is one error, not a million).
_VALIDATOR = screen_of(_ADAPTER.core_schema) or _ADAPTER.validator
_HEADER_ADAPTER = TypeAdapter(_HeaderJson)
_RESULT_ADAPTER = TypeAdapter(_ResultJson)
_MESSAGE_ADAPTER: TypeAdapter[_UserJson | _AssistantJson | _ToolResultJson] = TypeAdapter(
    _MessageJson
)


def load_state(text: str | bytes) -> dict[str, Any]:
    """The ``RunState`` constructor's keywords from JSON text, paused calls as tuples."""
    try:
        data: _StateJson = _VALIDATOR.validate_json(text, strict=True)
    except ValidationError as exc:
        # Another version may have another shape: its number is what is wrong, not a field.
        _check_version(_version_of(text))
        raise RunStateError(f"Not a valid run state: {_describe(exc)}") from exc
    _check_version(data["version"])
    paused = data["paused"]
    run = data["run"]
    allowed = run["allowed_tools"]
    return {
        "history": [_load_message(item) for item in data["history"]],
        "paused": None if paused is None else [_load_paused(call) for call in paused["calls"]],
        "turns": 0 if paused is None else paused["turns"],
        "output_attempts": 0 if paused is None else paused.get("output_attempts", 0),
        "run_usage": RunUsage(**run["usage"]),
        "usage": RunUsage(**data["usage"]),
        "tool_choice": run["tool_choice"],
        "allowed_tools": None if allowed is None else tuple(allowed),
        "fingerprint": data["fingerprint"],
        "trace_link": run.get("trace_link"),
        "pause_id": None if paused is None else paused.get("pause_id"),
    }


def _version_of(text: str | bytes) -> int | None:
    try:
        return _HEADER_ADAPTER.validate_json(text, strict=True)["version"]
    except ValidationError:
        return None


def _check_version(version: int | None) -> None:
    if version is not None and version != FORMAT_VERSION:
        raise RunStateError(
            f"Not a valid run state: format version {_shown(version)} is not supported "
            f"(this llm-worker reads version {FORMAT_VERSION})"
        )


def dump_state(
    *,
    history: Sequence[Message],
    paused: Sequence[PausedTuple] | None,
    turns: int,
    output_attempts: int,
    run_usage: RunUsage,
    usage: RunUsage,
    tool_choice: str,
    allowed_tools: tuple[str, ...] | None,
    fingerprint: str,
    trace_link: Mapping[str, str] | None,
    pause_id: str | None,
) -> str:
    """The JSON text of a state given as ``RunState``'s fields."""
    document = {
        "format": _FORMAT,
        "version": FORMAT_VERSION,
        "fingerprint": fingerprint,
        "history": [dump_message(message) for message in history],
        "paused": None
        if paused is None
        else {
            "turns": turns,
            "output_attempts": output_attempts,
            **({} if pause_id is None else {"pause_id": pause_id}),
            "calls": [_dump_paused(*call) for call in paused],
        },
        "run": {
            "usage": _dump_run_usage(run_usage),
            "tool_choice": tool_choice,
            "allowed_tools": None if allowed_tools is None else list(allowed_tools),
            **({} if trace_link is None else {"trace_link": dict(trace_link)}),
        },
        "usage": _dump_run_usage(usage),
    }
    # Text a hook or the application put in (a pause's reason, metadata) may hold a lone
    # surrogate, which no JSON reader takes: the text written always reads back.
    return valid_unicode(json.dumps(document, ensure_ascii=False, allow_nan=False))


def parse_message(data: object) -> Message:
    """One history item from its JSON data (as ``dump_message`` wrote it), checked strictly."""
    try:
        checked = _MESSAGE_ADAPTER.validate_python(data, strict=True)
    except ValidationError as exc:
        raise RunStateError(f"Not a valid message: {_describe(exc)}") from exc
    return _load_message(checked)


def parse_result(data: object) -> ToolResult:
    """A ``ToolResult`` from its JSON data (as ``dump_result`` wrote it), checked strictly."""
    try:
        checked = _RESULT_ADAPTER.validate_python(data, strict=True)
    except ValidationError as exc:
        raise RunStateError(f"Not a valid tool result: {_describe(exc)}") from exc
    return _load_result(checked)


def check_message(message: Message, where: str) -> Message:
    """``message`` as a run state keeps it: written as ``to_json`` writes it, then read back
    as strictly as ``from_json`` reads it (so the two never disagree); ``RunStateError``
    naming ``where`` and the field if no state could keep it."""
    try:
        data = dump_message(message)
    except (AttributeError, TypeError) as exc:  # a field of a type the format has no form for
        raise RunStateError(
            f"{where}: the {type(message).__name__} cannot be written in a run state ({exc})"
        ) from None
    try:
        return _load_message(_MESSAGE_ADAPTER.validate_python(data, strict=True))
    except ValidationError as exc:
        raise RunStateError(f"{where}: {_describe(exc)}") from None
    except RunStateError as exc:
        raise RunStateError(f"{where}: {exc}") from None


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    # A location names a dict's key, and a message may quote the input (a message's "type"
    # tag): both are the state's text, of any length, so both are cut short.
    shown = [
        f"{'.'.join(_cut(str(part)) for part in error['loc']) or 'the document'}: "
        f"{_cut(error['msg'], 300)}"
        for error in errors[:5]
    ]
    more = f"; and {len(errors) - 5} more" if len(errors) > 5 else ""
    return "; ".join(shown) + more


def dump_message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"type": "user", "text": message.text}
    if isinstance(message, ToolResult):
        return {"type": "tool_result", **dump_result(message)}
    return {
        "type": "assistant",
        "text": message.text,
        "tool_calls": [dump_call(call) for call in message.tool_calls],
        "stop_reason": message.stop_reason,
        "usage": None if message.usage is None else dump_usage(message.usage),
        "provider_items": [
            {"provider": item.provider, "kind": item.kind, "data": item.data}
            for item in message.provider_items
        ],
        **({} if message.response_id is None else {"response_id": message.response_id}),
        **({} if message.model is None else {"model": message.model}),
    }


def dump_call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "input_json": call.input_json}


def dump_result(result: ToolResult) -> dict[str, Any]:
    data: dict[str, Any] = {
        "call_id": result.call_id,
        "content": result.content,
        "is_error": result.is_error,
    }
    if result.parts:
        data["parts"] = [_dump_part(part) for part in result.parts]
    if result.metadata is not None:
        data["metadata"] = result.metadata
    return data


def _dump_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, DataPart):
        return {"type": "data", "json": part.json_text}
    return {
        "type": "media",
        "media_type": part.media_type,
        "data": None if part.data is None else base64.b64encode(part.data).decode("ascii"),
        "url": part.url,
        "name": part.name,
    }


def dump_usage(usage: Usage | RunUsage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def _dump_run_usage(usage: RunUsage) -> dict[str, Any]:
    return {"requests": usage.requests, "tool_calls": usage.tool_calls, **dump_usage(usage)}


def _dump_paused(
    call: ToolCall,
    status: CallStatus,
    reason: str | None,
    result: ToolResult | None,
    outcome: ToolCallOutcome | None,
) -> dict[str, Any]:
    return {
        "call": dump_call(call),
        "status": status,
        "reason": reason,
        "result": None if result is None else dump_result(result),
        "outcome": None if outcome is None else outcome.value,
    }


def _load_message(data: _UserJson | _AssistantJson | _ToolResultJson) -> Message:
    if data["type"] == "user":
        return UserMessage(data["text"])
    if data["type"] == "tool_result":
        return _load_result(data)
    usage = data["usage"]
    return AssistantMessage(
        data["text"],
        tuple(_load_call(call) for call in data["tool_calls"]),
        data["stop_reason"],
        None if usage is None else Usage(**usage),
        tuple(_load_provider_item(item) for item in data["provider_items"]),
        data.get("response_id"),
        data.get("model"),
    )


def _load_provider_item(data: _ProviderItemJson) -> ProviderItem:
    # Its provider's client parses data when it sends the item back, on every later
    # request: data that is not an object's JSON would make each of them fail.
    what = f"the {_shown(data['provider'])} item {_shown(data['kind'])} of an assistant message"
    try:
        parsed = json.loads(data["data"], parse_constant=_not_json)
    except ValueError as exc:
        raise RunStateError(f"{what} is not JSON text ({exc})") from None
    except RecursionError:  # deeper than json.loads reads (about 1 000 levels)
        raise RunStateError(f"{what} nests too deep to read") from None
    if not isinstance(parsed, dict):
        raise RunStateError(
            f"{what} is JSON, but not an object (its provider's client reads it back as one)"
        )
    return ProviderItem(**data)


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")  # json.loads reads NaN and Infinity


def _load_call(data: _CallJson) -> ToolCall:
    return ToolCall(data["id"], data["name"], data["input_json"])


def _load_paused(data: _PausedCallJson) -> PausedTuple:
    result = data["result"]
    outcome = data["outcome"]
    return (
        _load_call(data["call"]),
        data["status"],
        data["reason"],
        None if result is None else _load_result(result),
        None if outcome is None else ToolCallOutcome(outcome),
    )


def _load_result(data: _ResultJson) -> ToolResult:
    parts = data.get("parts")
    if parts is None and "metadata" not in data:
        return ToolResult(data["call_id"], data["content"], data["is_error"])
    try:
        check_metadata(data.get("metadata"))  # the reader takes NaN; no writer does
    except (TypeError, ValueError) as exc:
        raise RunStateError(
            f"the metadata of the result of call {_shown(data['call_id'])} cannot be written "
            f"as JSON: {exc}"
        ) from None
    return ToolResult(
        data["call_id"],
        data["content"],
        data["is_error"],
        () if parts is None else tuple(_load_part(part, data["call_id"]) for part in parts),
        data.get("metadata"),
    )


def _load_part(data: _TextPartJson | _MediaPartJson | _DataPartJson, call_id: str) -> ContentPart:
    if data["type"] == "text":
        return TextPart(data["text"])
    if data["type"] == "data":
        try:
            return DataPart(data["json"])  # which reads its JSON, once
        except ValueError as exc:
            raise RunStateError(
                f"the data part of the result of call {_shown(call_id)}: {exc}"
            ) from None
    encoded = data["data"]
    try:
        raw = None if encoded is None else base64.b64decode(encoded, validate=True)
        return MediaPart(data["media_type"], raw, data["url"], data["name"])
    except (binascii.Error, ValueError) as exc:
        raise RunStateError(
            f"a media part of the result of call {_shown(call_id)} is not valid: {exc}"
        ) from None


def _shown(value: object) -> str:
    """A state's id, label or number as an error message shows it: its repr, cut short (a
    hostile state's 1 MB id makes a short message)."""
    return bounded_repr(value, 80)


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
