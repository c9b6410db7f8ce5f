"""Test doubles for code that uses a ``Worker``: ``ScriptedClient`` replays a script.

>>> client = ScriptedClient([
...     ScriptedResponse(tool_calls=[ScriptedCall("search", {"query": "cats"})]),
...     "Found 3 cats.",
... ])
>>> worker = Worker(client)

Every request the worker sends is recorded in ``client.requests``, so a test
can assert what the model saw.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio

from ._client import (
    Completion,
    LlmEvent,
    LlmRequest,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from ._conversation import Usage

__all__ = [
    "ScriptExhaustedError",
    "ScriptStep",
    "ScriptedCall",
    "ScriptedClient",
    "ScriptedResponse",
]


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call in a scripted response; ``arguments`` is JSON text or a JSON-ready mapping."""

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None

    @property
    def input_json(self) -> str:
        """The arguments as the JSON text the model would send."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class ScriptedResponse:
    """One model response: text and/or tool calls.

    ``chunk_size`` splits the text and every argument JSON into pieces of that
    many characters (``1`` sends them a character at a time); ``interleave``
    alternates the argument fragments of different calls, as parallel tool
    calls may arrive.
    """

    text: str = ""
    tool_calls: Sequence[ScriptedCall] = ()
    chunk_size: int | None = None
    interleave: bool = False
    stop_reason: str | None = None
    usage: Usage | None = None
    response_id: str | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        _check_chunk_size(self.chunk_size)


ScriptStep: TypeAlias = ScriptedResponse | str | Callable[[LlmRequest], ScriptedResponse | str]
"""A response, plain answer text, or a function of the request that returns one."""


class ScriptExhaustedError(RuntimeError):
    """The worker sent more requests than the script has responses."""


class ScriptedClient:
    """An ``LlmClient`` that replays ``responses`` in order and records every request.

    ``supports_output_format``: whether it plays a client with native structured
    output (a run with ``output_type`` then sends it ``LlmRequest.output_format``
    and validates the final text) or one without (the run adds the
    ``final_result`` tool).
    """

    def __init__(
        self,
        responses: Iterable[ScriptStep] = (),
        *,
        chunk_size: int | None = None,
        supports_output_format: bool = True,
    ) -> None:
        _check_chunk_size(chunk_size)
        self._script: list[ScriptStep] = []
        self.add(*responses)
        self._served = 0  # the next step: a request the script had no answer for used none
        self._chunk_size = chunk_size
        self.supports_output_format = supports_output_format
        self.requests: list[LlmRequest] = []

    def add(self, *responses: ScriptStep) -> None:
        """Append more responses to the script."""
        for number, step in enumerate(responses, start=len(self._script) + 1):
            if not isinstance(step, (str, ScriptedResponse)) and not callable(step):
                raise TypeError(
                    f"ScriptedClient step #{number} is {type(step).__name__}, not a "
                    f"ScriptedResponse, a str or a function of the request returning one"
                )
        self._script.extend(responses)

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet."""
        return len(self._script) - self._served

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        """Record ``request`` and yield the next scripted response as events."""
        self.requests.append(request)
        number = self._served
        if number >= len(self._script):
            raise ScriptExhaustedError(
                f"ScriptedClient got request #{len(self.requests)} but its script has "
                f"{len(self._script)} responses"
            )
        self._served += 1
        response = _response_of(self._script[number], number + 1, request)
        for event in _events(
            response,
            number,
            self._chunk_size if response.chunk_size is None else response.chunk_size,
        ):
            await anyio.lowlevel.checkpoint()
            yield event

    def __repr__(self) -> str:
        return f"<ScriptedClient requests={len(self.requests)} remaining={self.remaining}>"


def _response_of(step: ScriptStep, number: int, request: LlmRequest) -> ScriptedResponse:
    given: object = step(request) if callable(step) else step
    if isinstance(given, ScriptedResponse):
        return given
    if isinstance(given, str):
        return ScriptedResponse(text=given)
    name = getattr(step, "__qualname__", None) or repr(step)
    raise TypeError(
        f"ScriptedClient step #{number} ({name}) returned {type(given).__name__}, not a "
        f"ScriptedResponse or a str"
    )


def _events(response: ScriptedResponse, number: int, chunk_size: int | None) -> list[LlmEvent]:
    events: list[LlmEvent] = [TextDelta(piece) for piece in _split(response.text, chunk_size)]
    fragments = [_split(call.input_json, chunk_size) for call in response.tool_calls]
    for index, call in enumerate(response.tool_calls):
        events.append(ToolUseStart(index, call.id or f"call_{number}_{index}", call.name))
        if not response.interleave:
            events.extend(ToolInputDelta(index, piece) for piece in fragments[index])
            events.append(ToolUseStop(index))
    if response.interleave:
        longest = max((len(f) for f in fragments), default=0)
        for position in range(longest):
            for index, pieces in enumerate(fragments):
                if position < len(pieces):
                    events.append(ToolInputDelta(index, pieces[position]))
        events.extend(ToolUseStop(index) for index in range(len(fragments)))
    stop_reason = response.stop_reason or ("tool_use" if response.tool_calls else "end_turn")
    events.append(Completion(stop_reason, response.usage, response.response_id, response.model))
    return events


def _check_chunk_size(chunk_size: object) -> None:
    if chunk_size is None:
        return
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a whole number of at least 1, got {chunk_size!r}")


def _split(text: str, chunk_size: int | None) -> list[str]:
    if not text:
        return []
    if not chunk_size:
        return [text]
    return [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]
