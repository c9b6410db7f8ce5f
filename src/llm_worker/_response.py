"""Assembling a model's response: a client's events into one ``AssistantMessage``.

``ResponseAssembler.feed`` takes the ``LlmClient``'s events one at a time,
checks the protocol (a call's input only between its ``ToolUseStart`` and
``ToolUseStop``, unique call ids, text that is text, nothing after the
``Completion``) and says what the run stream passes on: text and reasoning
deltas, argument fragments, and each call, whole, once its ``ToolUseStop``
comes (``ToolCallReady``). ``message()`` is the response as the history keeps it.
"""

from __future__ import annotations

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
from ._conversation import AssistantMessage, ProviderItem, ToolCall
from ._events import RunEvent, ToolCallReady
from ._exceptions import LlmClientError
from ._safe_text import valid_unicode

__all__ = ["ResponseAssembler"]


class ResponseAssembler:
    """Assembles a client's events into one ``AssistantMessage``, checking the protocol."""

    __slots__ = ("calls", "completion", "fragments", "ids", "items", "stopped", "text")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.items: list[ProviderItem] = []
        self.calls: dict[int, ToolUseStart] = {}
        self.fragments: dict[int, list[str]] = {}
        self.ids: set[str] = set()
        self.stopped: dict[int, ToolCall] = {}  # the calls whose ToolUseStop came
        self.completion: Completion | None = None

    def feed(self, event: LlmEvent) -> RunEvent | None:
        """Take one event; return what the run stream passes on, if anything."""
        if self.completion is not None:
            raise LlmClientError(f"LlmClient sent {event!r} after the Completion event")
        if isinstance(event, TextDelta):
            if type(event.text) is not str:
                raise LlmClientError(f"LlmClient sent text that is not a str: {event!r}")
            self.text.append(event.text)
            return event
        if isinstance(event, ToolInputDelta):
            index = event.index
            if index not in self.calls:
                raise LlmClientError(
                    f"LlmClient sent input for tool call index {index} before its ToolUseStart"
                )
            if index in self.stopped:
                raise LlmClientError(
                    f"LlmClient sent input for tool call index {index} after its ToolUseStop"
                )
            if type(event.fragment) is not str:
                raise LlmClientError(
                    f"LlmClient sent an argument fragment that is not a str for tool call "
                    f"index {index}: {type(event.fragment).__name__}"
                )
            self.fragments[index].append(event.fragment)
            return event
        if isinstance(event, ToolUseStart):
            index = event.index
            if index in self.calls:
                raise LlmClientError(f"LlmClient started tool call index {index} twice")
            if type(event.call_id) is not str or type(event.name) is not str:
                raise LlmClientError(
                    f"LlmClient started a tool call whose id or name is not a str: {event!r}"
                )
            if event.call_id in self.ids:
                raise LlmClientError(
                    f"LlmClient sent two tool calls with the id {event.call_id!r} in one "
                    f"response; each call needs its own id"
                )
            self.ids.add(event.call_id)
            self.calls[index] = event
            self.fragments[index] = []
            return event
        if isinstance(event, ToolUseStop):
            index = event.index
            if index not in self.calls:
                raise LlmClientError(
                    f"LlmClient stopped tool call index {index}, which never started"
                )
            if index in self.stopped:
                return None
            call = _call(self.calls[index], self.fragments[index])
            self.stopped[index] = call
            return ToolCallReady(index, call)
        if isinstance(event, Completion):
            self.completion = event
            return None
        if isinstance(event, ReasoningDelta):
            return event
        if isinstance(event, ProviderItemDone):
            if not isinstance(event.item, ProviderItem):
                raise LlmClientError(f"LlmClient sent a provider item that is not one: {event!r}")
            self.items.append(event.item)
            return None
        raise LlmClientError(f"LlmClient sent an unknown event: {event!r}")

    def message(self) -> AssistantMessage:
        completion = self.completion
        if completion is None:
            raise LlmClientError("LlmClient's stream ended without a Completion event")
        stopped = self.stopped
        calls = tuple(
            stopped.get(index) or _call(start, self.fragments[index])
            for index, start in self.calls.items()
        )
        text = valid_unicode("".join(self.text))
        return AssistantMessage(
            text,
            calls,
            completion.stop_reason,
            completion.usage,
            tuple(self.items),
            completion.response_id,
            completion.model,
        )


def _call(start: ToolUseStart, fragments: list[str]) -> ToolCall:
    # What the history keeps is valid Unicode: a lone surrogate (a JSON escape such as
    # "\udcff" decodes to one) would make every later request, and the run state, fail.
    return ToolCall(
        valid_unicode(start.call_id), valid_unicode(start.name), valid_unicode("".join(fragments))
    )
