"""Assembling a model's response: a client's events into one ``AssistantMessage``.

``ResponseAssembler.feed`` takes the ``LlmClient``'s events one at a time,
checks the protocol (a call's input only between its ``ToolUseStart`` and
``ToolUseStop``, unique call ids, text that is text, nothing after the
``Completion``) and says what the run stream passes on: text and reasoning
deltas, argument fragments, and each call, whole, once its ``ToolUseStop``
comes (``ToolCallReady``). ``message()`` is the response as the history keeps it.

What the history keeps is checked here, before the run appends it: a value of
the wrong type (a ``str`` token count, an ``int`` stop reason, a provider
item that is not JSON) would otherwise fail later, in the budgets or the run
state, with the response already in the history. The checks of the events
that come by the thousand are one type test each.
"""

from __future__ import annotations

import dataclasses
import json

from ._client import (
    Completion,
    LlmEvent,
    ProviderItemDone,
    ReasoningDelta,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from ._conversation import MAX_COUNT, AssistantMessage, ProviderItem, ToolCall, Usage
from ._events import RunEvent, ToolCallReady
from ._exceptions import LlmClientError
from ._limits import DEFAULT_MAX_RESPONSE_CHARS
from ._safe_text import bounded_repr as _shown
from ._safe_text import valid_unicode

__all__ = ["ResponseAssembler"]


class ResponseAssembler:
    """Assembles a client's events into one ``AssistantMessage``, checking the protocol."""

    __slots__ = (
        "calls",
        "completion",
        "fragments",
        "ids",
        "items",
        "late",
        "left",
        "max_chars",
        "stopped",
        "text",
    )

    def __init__(self, max_chars: int = DEFAULT_MAX_RESPONSE_CHARS) -> None:
        self.max_chars = max_chars
        self.left = max_chars  # characters the response may still send (text, reasoning,
        # arguments, calls' ids and names, provider items' data: everything it makes the
        # history keep), every event counting one at least (so an endless run of empty
        # events ends too)
        self.text: list[str] = []
        self.items: list[ProviderItem] = []
        self.calls: dict[int, ToolUseStart] = {}
        self.fragments: dict[int, list[str]] = {}
        self.ids: set[str] = set()
        self.stopped: dict[int, ToolCall] = {}  # the calls whose ToolUseStop came
        # The calls the Completion ended without a ToolUseStop: ready once it came.
        self.late: list[ToolCallReady] = []
        self.completion: Completion | None = None

    def feed(self, event: LlmEvent) -> RunEvent | None:
        """Take one event; return what the run stream passes on, if anything."""
        if self.completion is not None:
            raise LlmClientError(f"LlmClient sent {_shown(event)} after the Completion event")
        if isinstance(event, TextDelta):
            if type(event.text) is not str:
                raise LlmClientError(f"LlmClient sent text that is not a str: {_shown(event)}")
            self.left -= len(event.text) or 1
            if self.left < 0:
                raise self._too_long()
            self.text.append(event.text)
            return event
        if isinstance(event, ToolInputDelta):
            index = event.index
            # The type first: an unhashable index would make the lookup raise TypeError.
            if type(index) is not int or index not in self.calls:
                raise LlmClientError(
                    _index_problem(index)
                    or f"LlmClient sent input for tool call index {_shown(index)} before its "
                    f"ToolUseStart"
                )
            if index in self.stopped:
                raise LlmClientError(
                    f"LlmClient sent input for tool call index {_shown(index)} after its "
                    f"ToolUseStop"
                )
            if type(event.fragment) is not str:
                raise LlmClientError(
                    f"LlmClient sent an argument fragment that is not a str for tool call "
                    f"index {_shown(index)}: {type(event.fragment).__name__}"
                )
            self.left -= len(event.fragment) or 1
            if self.left < 0:
                raise self._too_long()
            self.fragments[index].append(event.fragment)
            return event
        if isinstance(event, ToolUseStart):
            index = event.index
            if type(index) is not int:  # only ints get into `calls`: the lookups below rely on it
                raise LlmClientError(_index_problem(index))
            if index in self.calls:
                raise LlmClientError(f"LlmClient started tool call index {_shown(index)} twice")
            if type(event.call_id) is not str or type(event.name) is not str:
                raise LlmClientError(
                    f"LlmClient started a tool call whose id or name is not a str: {_shown(event)}"
                )
            call_id = valid_unicode(event.call_id)  # as the history keeps it (see _call)
            if call_id in self.ids:
                raise LlmClientError(
                    f"LlmClient sent two tool calls with the id {_shown(call_id)} in one "
                    f"response; each call needs its own id"
                )
            self.left -= len(call_id) + len(event.name) + 1
            if self.left < 0:
                raise self._too_long()
            self.ids.add(call_id)
            self.calls[index] = event
            self.fragments[index] = []
            return event
        if isinstance(event, ToolUseStop):
            index = event.index
            if type(index) is not int or index not in self.calls:
                raise LlmClientError(
                    _index_problem(index)
                    or f"LlmClient stopped tool call index {_shown(index)}, which never started"
                )
            if index in self.stopped:
                self.left -= 1  # a repeated stop says nothing, but an endless run of them
                if self.left < 0:  # would never end
                    raise self._too_long()
                return None
            call = _call(self.calls[index], self.fragments[index])
            self.stopped[index] = call
            return ToolCallReady(index, call)
        if isinstance(event, Completion):
            _check_completion(event)  # once per response
            self.completion = event
            return None
        if isinstance(event, ReasoningDelta):
            if type(event.text) is not str:
                raise LlmClientError(f"LlmClient sent reasoning that is not a str: {_shown(event)}")
            self.left -= len(event.text) or 1  # shown, and kept by the provider for later
            if self.left < 0:
                raise self._too_long()
            return event
        if isinstance(event, ProviderItemDone):
            _check_item(event)
            self.left -= len(event.item.data) or 1
            if self.left < 0:
                raise self._too_long()
            self.items.append(event.item)
            return None
        raise LlmClientError(f"LlmClient sent an unknown event: {_shown(event)}")

    def _too_long(self) -> LlmClientError:
        return LlmClientError(
            f"The model's response is over {self.max_chars} characters of text, reasoning, "
            f"arguments and provider items (Limits.max_response_chars); it was refused"
        )

    def message(self) -> AssistantMessage:
        completion = self.completion
        if completion is None:
            raise LlmClientError("LlmClient's stream ended without a Completion event")
        stopped = self.stopped
        if len(stopped) < len(self.calls):  # the Completion ends a call as its stop would
            for index, start in self.calls.items():
                if index not in stopped:
                    call = stopped[index] = _call(start, self.fragments[index])
                    self.late.append(ToolCallReady(index, call))
        calls = tuple(stopped[index] for index in self.calls)
        text = valid_unicode("".join(self.text))
        return AssistantMessage(
            text,
            calls,
            _valid(completion.stop_reason),
            completion.usage,
            tuple(self.items),
            _valid(completion.response_id),
            _valid(completion.model),
        )


def _valid(label: str | None) -> str | None:
    # A provider's label (stop reason, response id, model) is kept, and reported to an
    # observer, as valid Unicode: an exporter cannot encode a lone surrogate.
    return None if label is None else valid_unicode(label)


def _call(start: ToolUseStart, fragments: list[str]) -> ToolCall:
    # What the history keeps is valid Unicode: a lone surrogate (a JSON escape such as
    # "\udcff" decodes to one) would make every later request, and the run state, fail.
    return ToolCall(
        valid_unicode(start.call_id), valid_unicode(start.name), valid_unicode("".join(fragments))
    )


_USAGE_FIELDS = tuple(field.name for field in dataclasses.fields(Usage))


def _check_completion(completion: Completion) -> None:
    """Refuse a ``Completion`` whose figures or texts the history cannot keep.

    Token counts are added up and compared with the budgets: a ``str`` fails the
    addition, a negative count or NaN makes a budget never fire, a float cannot be read
    back from the run state, nor a count over ``MAX_COUNT`` (one of 4 300 digits cannot
    even be written). A stop reason, response id or model that is not text breaks
    the run state the same way.
    """
    for name in ("stop_reason", "response_id", "model"):
        value = getattr(completion, name)
        if value is not None and type(value) is not str:
            raise LlmClientError(
                f"LlmClient sent a Completion whose {name} is not a str or None: "
                f"{_shown(value)} ({type(value).__name__})"
            )
    usage = completion.usage
    if usage is None:
        return
    if not isinstance(usage, Usage):
        raise LlmClientError(
            f"LlmClient sent a Completion whose usage is not a Usage or None: "
            f"{_shown(usage)} ({type(usage).__name__})"
        )
    for name in _USAGE_FIELDS:
        value = getattr(usage, name)
        if type(value) is not int or value < 0:
            raise LlmClientError(
                f"LlmClient sent a Completion whose usage.{name} is not an int of at least 0: "
                f"{_shown(value)} ({type(value).__name__})"
            )
        if value > MAX_COUNT:
            raise LlmClientError(
                f"LlmClient sent a Completion whose usage.{name} is over {MAX_COUNT} "
                f"(2**63 - 1, the most a run state keeps): {_shown(value)} (int)"
            )


def _check_item(event: ProviderItemDone) -> None:
    """Refuse a provider item the history cannot keep: its fields are text, ``data`` a JSON
    object.

    A built-in client parses ``data`` when it sends the item back, so text that is not
    an object's JSON would fail every later request (and a saved state refuses it).
    """
    item = event.item
    if not isinstance(item, ProviderItem):
        raise LlmClientError(f"LlmClient sent a provider item that is not one: {_shown(event)}")
    if type(item.provider) is not str or type(item.kind) is not str or type(item.data) is not str:
        raise LlmClientError(
            f"LlmClient sent a provider item whose provider, kind or data is not a str: "
            f"{_shown(item)}"
        )
    try:
        data = json.loads(item.data, parse_constant=_not_json)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep to parse
        raise LlmClientError(
            f"LlmClient sent a provider item whose data is not JSON text "
            f"({type(exc).__name__}: {exc}): {_shown(item)}"  # the parser's texts are short
        ) from None
    if not isinstance(data, dict):
        raise LlmClientError(
            f"LlmClient sent a provider item whose data is JSON, but not an object: {_shown(item)}"
        )


def _not_json(constant: str) -> object:
    # json.loads reads NaN and Infinity, which are not JSON: no provider reads them back.
    raise ValueError(f"{constant} is not JSON")


def _index_problem(index: object) -> str | None:
    """What is wrong with a tool call index that is not an int; ``None`` for an int."""
    if type(index) is int:
        return None
    return (
        f"LlmClient sent a tool call index that is not an int: "
        f"{_shown(index)} ({type(index).__name__})"
    )
