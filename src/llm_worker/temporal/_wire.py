"""What crosses Temporal: requests, responses, tool calls, decisions and events, as JSON data.

Temporal stores every activity's input and output, every update's argument and
every query's answer as payloads (JSON, by its default converter). Everything
here is plain JSON data (dicts, lists, strings, numbers), so it looks the same
in the Temporal UI as in ``RunState.to_json()``: messages, calls and results
are written by the run state's own codec (``_state_json``), in its format.

Reading checks the shape and raises ``ValueError`` naming what is wrong: data
from a workflow history written by another version of the code, or sent by
hand to an update, must not fail somewhere deep in the turn loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from .._approvals import Approve, Decision, Deny, PendingCall
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
from .._conversation import Message, ProviderItem, ToolCall, ToolResult, Usage
from .._events import (
    ApprovalRequested,
    ResponseCompleted,
    ResponseStarted,
    RunAborted,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallReady,
    ToolCallRunning,
)
from .._meta import LlmToolDefinition, ToolMeta
from .._state_json import (
    dump_call,
    dump_message,
    dump_result,
    dump_usage,
    parse_message,
    parse_result,
)

__all__ = [
    "LeftOutCall",
    "PendingPage",
    "coalesce",
    "dump_decisions",
    "dump_event",
    "dump_events",
    "dump_history",
    "dump_pending",
    "dump_pending_call",
    "dump_request",
    "dump_tool",
    "load_call",
    "load_decisions",
    "load_events",
    "load_history",
    "load_pause_id",
    "load_pending",
    "load_pending_page",
    "load_request",
    "load_result",
]

JsonDict = dict[str, Any]


# -- model requests and responses ----------------------------------------------------------


def dump_request(request: LlmRequest) -> JsonDict:
    """An ``LlmRequest`` as JSON data: the model activity's input."""
    return {
        "system_prompt": request.system_prompt,
        "messages": [dump_message(message) for message in request.messages],
        "tools": [tool.to_dict() for tool in request.tools],
        "tool_choice": request.tool_choice,
        "allowed_tools": None if request.allowed_tools is None else list(request.allowed_tools),
    }


def load_request(data: Mapping[str, Any]) -> LlmRequest:
    """The ``LlmRequest`` ``dump_request`` wrote."""
    allowed = _field(data, "allowed_tools", (list, type(None)))
    system_prompt = _field(data, "system_prompt", (str, type(None)))
    return LlmRequest(
        system_prompt,
        [parse_message(item) for item in _field(data, "messages", list)],
        [
            LlmToolDefinition(
                name=_field(tool, "name", str),
                description=_field(tool, "description", str),
                input_schema=_field(tool, "input_schema", dict),
            )
            for tool in _field(data, "tools", list)
        ],
        _field(data, "tool_choice", str),
        None if allowed is None else tuple(_strings(allowed, "allowed_tools")),
    )


def coalesce(events: Iterable[LlmEvent]) -> list[LlmEvent]:
    """``events`` with runs of text, reasoning and one call's input fragments joined.

    A response travels whole, so its thousands of deltas need not each be a
    JSON object; the order of everything else is kept.
    """
    out: list[LlmEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, TextDelta) and isinstance(last, TextDelta):
            out[-1] = TextDelta(last.text + event.text)
        elif isinstance(event, ReasoningDelta) and isinstance(last, ReasoningDelta):
            out[-1] = ReasoningDelta(last.text + event.text)
        elif (
            isinstance(event, ToolInputDelta)
            and isinstance(last, ToolInputDelta)
            and last.index == event.index
        ):
            out[-1] = ToolInputDelta(event.index, last.fragment + event.fragment)
        else:
            out.append(event)
    return out


def dump_events(events: Sequence[LlmEvent]) -> list[JsonDict]:
    """A response's events as JSON data: the model activity's output."""
    return [_dump_llm_event(event) for event in events]


def _dump_llm_event(event: LlmEvent) -> JsonDict:
    if isinstance(event, TextDelta):
        return {"type": "text", "text": event.text}
    if isinstance(event, ReasoningDelta):
        return {"type": "reasoning", "text": event.text}
    if isinstance(event, ToolUseStart):
        return {
            "type": "tool_use_start",
            "index": event.index,
            "call_id": event.call_id,
            "name": event.name,
        }
    if isinstance(event, ToolInputDelta):
        return {"type": "tool_input", "index": event.index, "fragment": event.fragment}
    if isinstance(event, ToolUseStop):
        return {"type": "tool_use_stop", "index": event.index}
    if isinstance(event, ProviderItemDone):
        item = event.item
        return {
            "type": "provider_item",
            "provider": item.provider,
            "kind": item.kind,
            "data": item.data,
        }
    return {
        "type": "completion",
        "stop_reason": event.stop_reason,
        "usage": None if event.usage is None else dump_usage(event.usage),
        "response_id": event.response_id,
        "model": event.model,
    }


def load_events(data: Sequence[Any]) -> list[LlmEvent]:
    """The events ``dump_events`` wrote."""
    if not isinstance(data, list):
        raise ValueError(f"a model response must be a list of events, not {type(data).__name__}")
    return [_load_llm_event(item) for item in data]


def _load_llm_event(data: Any) -> LlmEvent:
    kind = _field(data, "type", str)
    if kind == "text":
        return TextDelta(_field(data, "text", str))
    if kind == "reasoning":
        return ReasoningDelta(_field(data, "text", str))
    if kind == "tool_use_start":
        return ToolUseStart(
            _field(data, "index", int), _field(data, "call_id", str), _field(data, "name", str)
        )
    if kind == "tool_input":
        return ToolInputDelta(_field(data, "index", int), _field(data, "fragment", str))
    if kind == "tool_use_stop":
        return ToolUseStop(_field(data, "index", int))
    if kind == "provider_item":
        return ProviderItemDone(
            ProviderItem(
                _field(data, "provider", str), _field(data, "kind", str), _field(data, "data", str)
            )
        )
    if kind == "completion":
        usage = _field(data, "usage", (dict, type(None)))
        return Completion(
            _field(data, "stop_reason", str),
            None if usage is None else Usage(**{k: _field(usage, k, int) for k in _USAGE}),
            _optional_text(data, "response_id"),
            _optional_text(data, "model"),
        )
    raise ValueError(f"unknown model event type {kind!r}")


_USAGE = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")


# -- tool calls ----------------------------------------------------------------------------


def load_call(data: Any) -> ToolCall:
    """The ``ToolCall`` the run state's codec wrote."""
    return ToolCall(
        _field(data, "id", str), _field(data, "name", str), _field(data, "input_json", str)
    )


def load_result(data: Any) -> ToolResult:
    """The ``ToolResult`` the run state's codec wrote (parts and metadata included)."""
    return parse_result(data)


# -- approvals -----------------------------------------------------------------------------


def dump_pending(pending: PendingCall) -> JsonDict:
    """A call waiting for a decision, as the ``pending`` query answers it."""
    meta = pending.meta
    return {
        "call": dump_call(pending.call),
        "tool": {
            "name": meta.name,
            "description": meta.description,
            "input_schema": meta.input_schema,
        },
        "reason": pending.reason,
    }


def load_pending(data: Any) -> PendingCall:
    """The ``PendingCall`` ``dump_pending`` wrote."""
    tool = _field(data, "tool", dict)
    meta = _load_tool(_field(tool, "name", str), tool)
    return PendingCall(load_call(_field(data, "call", dict)), meta, _field(data, "reason", str))


def dump_pending_call(pending: PendingCall) -> JsonDict:
    """A call waiting for a decision as a ``pending`` page lists it: its tool by name, the
    tool's meta once in the page's ``tools`` (``dump_tool``), however many calls it has."""
    return {"call": dump_call(pending.call), "tool": pending.meta.name, "reason": pending.reason}


def dump_tool(meta: ToolMeta) -> JsonDict:
    """A tool's meta as a ``pending`` page's ``tools`` has it, under the tool's name."""
    return {"description": meta.description, "input_schema": meta.input_schema}


@dataclass(frozen=True)
class LeftOutCall:
    """A call of a ``pending`` page that did not fit in it: ``call_id`` and its tool's
    ``meta``; the call and its reason are in the run state (its ``paused_calls``)."""

    call_id: str
    meta: ToolMeta


@dataclass(frozen=True)
class PendingPage:
    """One answer of the ``pending`` query: its ``calls`` (in call order), the ``pause_id``
    they wait in, and where the next page starts (``next``, of ``total`` calls)."""

    calls: list[PendingCall | LeftOutCall]
    pause_id: str | None
    next: int
    total: int


def load_pending_page(data: object) -> PendingPage:
    """The page the workflow's ``pending`` query answered.

    Raises ``ValueError`` for a page whose tool did not fit in it (its meta is nowhere
    else), naming the limit.
    """
    tools: Mapping[str, object] = _field(data, "tools", dict)
    metas: dict[str, ToolMeta] = {}
    calls: list[PendingCall | LeftOutCall] = []
    for entry in _field(data, "calls", list):
        name: str = _field(entry, "tool", str)
        meta = metas.get(name)
        if meta is None:
            meta = metas[name] = _load_tool(name, _field(tools, name, dict))
        if "left_out" in entry:
            calls.append(LeftOutCall(_field(entry, "call_id", str), meta))
        else:
            call = load_call(_field(entry, "call", dict))
            calls.append(PendingCall(call, meta, _field(entry, "reason", str)))
    pause_id: str | None = _field(data, "pause_id", (str, type(None)))
    return PendingPage(calls, pause_id, _field(data, "next", int), _field(data, "total", int))


def _load_tool(name: str, data: Mapping[str, object]) -> ToolMeta:
    if "left_out" in data:
        raise ValueError(
            f"the pending calls of tool {name!r} cannot be read: {data['left_out']}; raise "
            f"DurableWorker(max_payload_bytes=...), within the cluster's blob size limit"
        )
    return ToolMeta(
        name=name,
        description=_field(data, "description", str),
        input_schema=_field(data, "input_schema", dict),
    )


def dump_decisions(
    decisions: Mapping[str, Decision] | Decision, pause_id: str | None = None
) -> JsonDict:
    """``resume()``'s decisions as the ``decide`` update's argument.

    ``{"all": decision}`` for one decision that applies to every pending call,
    else ``{"calls": {call_id: decision}}``; a decision is ``{"approve": true,
    "arguments": null | "<JSON text>" | {...}}`` or ``{"approve": false,
    "reason": "..."}``. With ``pause_id`` (the pause they are for, as
    ``resume(..., pause_id=...)`` takes it), ``"pause_id": "..."`` beside them.
    """
    if pause_id is not None and not isinstance(pause_id, str):
        raise TypeError(
            f"pause_id must be a str (the id of the pause the decisions are for), not "
            f"{type(pause_id).__name__}"
        )
    if isinstance(decisions, (Approve, Deny)):
        document: JsonDict = {"all": _dump_decision(decisions)}
    elif isinstance(decisions, Mapping):
        document = {"calls": {call_id: _dump_decision(d) for call_id, d in decisions.items()}}
    else:
        raise TypeError(
            f"decisions must map call ids to Approve()/Deny(reason), or be one decision, "
            f"not {type(decisions).__name__}"
        )
    if pause_id is not None:
        document["pause_id"] = pause_id
    return document


def _dump_decision(decision: object) -> JsonDict:
    if isinstance(decision, Approve):
        arguments = decision.arguments
        return {
            "approve": True,
            "arguments": arguments
            if arguments is None or isinstance(arguments, str)
            else dict(arguments),
        }
    if isinstance(decision, Deny):
        return {"approve": False, "reason": decision.reason}
    raise TypeError(f"a decision must be Approve() or Deny(reason), not {decision!r}")


def load_decisions(data: object) -> Mapping[str, Decision] | Decision:
    """The decisions ``dump_decisions`` wrote, as ``resume()`` takes them."""
    document = _object(data)
    if document is None or set(document) - {"pause_id"} not in ({"all"}, {"calls"}):
        raise ValueError(
            'decisions must be {"all": decision} or {"calls": {call_id: decision}} (and '
            f'maybe "pause_id": "..."), not {data!r}'[:300]
        )
    if "all" in document:
        return _load_decision(document["all"], "all")
    calls: dict[str, object] = _field(document, "calls", dict)
    return {str(call_id): _load_decision(d, str(call_id)) for call_id, d in calls.items()}


def load_pause_id(data: object) -> str | None:
    """The ``pause_id`` ``dump_decisions`` wrote beside the decisions; ``None`` without one
    (as the decisions of earlier versions came)."""
    document = _object(data)
    if document is None or document.get("pause_id") is None:
        return None
    pause_id: str = _field(document, "pause_id", str)
    return pause_id


def _load_decision(data: object, where: str) -> Decision:
    decision = _object(data)
    if decision is None or not isinstance(decision.get("approve"), bool):
        raise ValueError(
            f'the decision for {where!r} must be {{"approve": true, "arguments": ...}} or '
            f'{{"approve": false, "reason": "..."}}, not {data!r}'[:300]
        )
    if decision["approve"]:
        arguments = decision.get("arguments")
        if arguments is None or isinstance(arguments, str):
            return Approve(arguments)
        given = _object(arguments)
        if given is None:
            raise ValueError(
                f"the arguments approved for {where!r} must be JSON text or an object, "
                f"not {type(arguments).__name__}"
            )
        return Approve(dict(given))
    return Deny(_field(decision, "reason", str))


# -- the event feed ------------------------------------------------------------------------


def dump_event(event: RunEvent, *, pause_id: str | None = None) -> JsonDict | None:
    """A run event as the feed a UI polls shows it; ``None`` for the fragments it skips.

    The pieces of a response in progress (``ToolUseStart``, ``ToolInputDelta``) are
    left out: a durable response arrives whole, and ``tool_call_ready`` has the call.
    ``pause_id`` is the worker's, which an ``ApprovalRequested`` does not carry: its
    ``approval_requested``, as ``run_paused``, says which pause a decision is for.
    """
    if isinstance(event, ResponseStarted):
        return {"type": "response_started", "request": event.request}
    if isinstance(event, TextDelta):
        return {"type": "text", "text": event.text}
    if isinstance(event, ReasoningDelta):
        return {"type": "reasoning", "text": event.text}
    if isinstance(event, ToolCallReady):
        return {"type": "tool_call_ready", "index": event.index, "call": dump_call(event.call)}
    if isinstance(event, ResponseCompleted):
        return {"type": "response_completed", "message": dump_message(event.message)}
    if isinstance(event, ApprovalRequested):
        return {
            "type": "approval_requested",
            "pending": dump_pending(event.pending),
            "pause_id": pause_id,
        }
    if isinstance(event, ToolCallRunning):
        return {"type": "tool_call_running", "call": dump_call(event.call)}
    if isinstance(event, ToolCallProgress):
        return {
            "type": "tool_call_progress",
            "call_id": event.call_id,
            "progress": event.progress,
            "total": event.total,
            "message": event.message,
        }
    if isinstance(event, ToolCallFinished):
        return {
            "type": "tool_call_finished",
            "call": dump_call(event.call),
            "result": dump_result(event.result),
            "outcome": event.outcome.value,
        }
    if isinstance(event, RunFinished):
        return {"type": "run_finished", "text": event.text}
    if isinstance(event, RunPaused):
        return {
            "type": "run_paused",
            "pending": [dump_pending(p) for p in event.pending],
            "pause_id": event.pause_id,
        }
    if isinstance(event, RunAborted):
        return {"type": "run_aborted", "reason": event.reason}
    if isinstance(event, RunFailed):
        return {
            "type": "run_failed",
            "error": type(event.error).__name__,
            "message": str(event.error),
        }
    return None


def dump_history(history: Sequence[Message]) -> list[JsonDict]:
    """A history as JSON data, each item as in ``RunState.to_json()``."""
    return [dump_message(message) for message in history]


def load_history(data: object) -> list[Message]:
    """The history ``dump_history`` wrote."""
    if not isinstance(data, list):
        raise ValueError(f"a history must be a list of messages, not {type(data).__name__}")
    return [parse_message(item) for item in cast("list[object]", data)]


# -- checks --------------------------------------------------------------------------------


def _object(data: object) -> Mapping[str, object] | None:
    return cast("Mapping[str, object]", data) if isinstance(data, Mapping) else None


def _optional_text(data: object, name: str) -> str | None:
    """A text field that may be missing (a result recorded by an earlier version)."""
    document = _object(data)
    if document is None or document.get(name) is None:
        return None
    text: str = _field(document, name, str)
    return text


def _field(data: object, name: str, kind: type | tuple[type, ...]) -> Any:
    document = _object(data)
    if document is None:
        raise ValueError(f"expected a JSON object with {name!r}, got {type(data).__name__}")
    if name not in document:
        raise ValueError(f"missing {name!r} in {sorted(document)}")
    value = document[name]
    # bool is an int to isinstance; a JSON true is never a count or an index.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ValueError(f"{name!r} has the wrong type ({type(value).__name__})")
    return value


def _strings(values: list[Any], name: str) -> list[str]:
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{name!r} must be a list of strings")
    return values
