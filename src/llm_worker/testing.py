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

import itertools
import json
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar, cast

import anyio

from ._client import (
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
from ._conversation import ProviderItem, Usage
from ._safe_text import bounded_repr

__all__ = [
    "ScriptExhaustedError",
    "ScriptStep",
    "ScriptedCall",
    "ScriptedClient",
    "ScriptedResponse",
]

T = TypeVar("T")
_END: Any = object()  # an iterator's end


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call in a scripted response; ``arguments`` is JSON text or a JSON-ready mapping.

    A mapping is written as JSON text when the call is made: a later change to it does
    not change the call, and one JSON cannot encode is a ``TypeError`` here, naming
    the call, not in the middle of a run.
    """

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None
    input_json: str = field(init=False, repr=False, compare=False)
    """The arguments as the JSON text the model sends."""

    def __post_init__(self) -> None:
        arguments = self.arguments
        if isinstance(arguments, str):
            text = arguments
        elif isinstance(arguments, Mapping):
            try:
                text = json.dumps(dict(arguments), ensure_ascii=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"ScriptedCall {self.name!r}: its arguments cannot be written as JSON ({exc})"
                ) from None
        else:
            raise TypeError(
                f"ScriptedCall {self.name!r}: arguments must be JSON text or a mapping, "
                f"not {type(arguments).__name__}"
            )
        object.__setattr__(self, "input_json", text)


@dataclass(frozen=True)
class ScriptedResponse:
    """One model response: text and/or tool calls, as a provider's client streams them.

    ``chunk_size`` splits the text, the reasoning and every argument JSON into pieces of
    that many characters (``1`` sends them a character at a time); ``interleave``
    alternates the argument fragments of different calls, as parallel tool calls may
    arrive. ``reasoning`` comes first, as ``ReasoningDelta`` events; ``provider_items``
    after the calls (``ProviderItemDone``), before the ``Completion``. With ``error``,
    the response fails instead of completing: the client raises it after every other
    event, as a connection lost at the last moment would.
    """

    text: str = ""
    tool_calls: Sequence[ScriptedCall] = ()
    chunk_size: int | None = None
    interleave: bool = False
    stop_reason: str | None = None
    usage: Usage | None = None
    response_id: str | None = None
    model: str | None = None
    reasoning: str = ""
    provider_items: Sequence[ProviderItem] = ()
    error: BaseException | None = None

    def __post_init__(self) -> None:
        _check_chunk_size(self.chunk_size)
        for name in ("text", "reasoning"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(
                    f"ScriptedResponse {name} must be a str, not {type(value).__name__}"
                )
        # Kept as tuples: a generator would be used up by the first request, and a list
        # changed after the response was written would change it.
        object.__setattr__(
            self, "tool_calls", _tuple_of(self.tool_calls, ScriptedCall, "tool_calls")
        )
        items = _tuple_of(self.provider_items, ProviderItem, "provider_items")
        object.__setattr__(self, "provider_items", items)
        if self.error is not None and not isinstance(self.error, BaseException):
            raise TypeError(
                f"ScriptedResponse error must be an exception, not {type(self.error).__name__}"
            )


ScriptStep: TypeAlias = ScriptedResponse | str | Callable[[LlmRequest], ScriptedResponse | str]
"""A response, plain answer text, or a function of the request that returns one."""


class ScriptExhaustedError(RuntimeError):
    """The worker sent more requests than the script has responses."""


class ScriptedClient:
    """An ``LlmClient`` that replays ``responses`` in order and records every request.

    ``responses`` is a list (or any collection) of steps, checked at once, or an
    iterator, whose steps are taken as requests come: ``itertools.repeat("ok")``
    answers every request. ``chunk_size`` is the default of each response's.
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
        if isinstance(responses, (str, ScriptedResponse)) or callable(responses):
            raise TypeError(
                f"ScriptedClient takes a list of steps, not one {type(responses).__name__}: "
                f"ScriptedClient([...])"
            )
        _check_chunk_size(chunk_size)
        self._script: list[ScriptStep] = []
        # An iterator's steps, not taken yet (None: none left, or the steps were a collection).
        self._later: Iterator[ScriptStep] | None = None
        if isinstance(responses, Collection):
            self.add(*responses)
        else:
            self._later = iter(responses)
        self._served = 0  # the next step: a request the script had no answer for used none
        self._chunk_size = chunk_size
        self.supports_output_format = supports_output_format
        self.requests: list[LlmRequest] = []

    def add(self, *responses: ScriptStep) -> None:
        """Append more responses to the script (after an iterator's, once it ends)."""
        for number, step in enumerate(responses, start=len(self._script) + 1):
            _check_step(step, number)
        if self._later is None:
            self._script.extend(responses)
        else:
            self._later = itertools.chain(self._later, responses)

    @property
    def remaining(self) -> int | None:
        """How many scripted responses have not been used yet; ``None`` while an
        iterator's steps are still being taken (how many it has is not known)."""
        if self._later is not None:
            return None
        return len(self._script) - self._served

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        """Record ``request`` and yield the next scripted response as events."""
        self.requests.append(request)
        number = self._served
        step = self._next_step(number)
        if step is None:
            messages = request.messages
            last = f"; the request ends with {bounded_repr(messages[-1])}" if messages else ""
            raise ScriptExhaustedError(
                f"ScriptedClient got request #{len(self.requests)} but its script has "
                f"{len(self._script)} responses{last}"
            )
        self._served += 1
        response = _response_of(step, number + 1, request)
        for event in _events(
            response,
            number,
            self._chunk_size if response.chunk_size is None else response.chunk_size,
        ):
            await anyio.lowlevel.checkpoint()
            yield event
        if response.error is not None:
            await anyio.lowlevel.checkpoint()
            raise response.error
        await anyio.lowlevel.checkpoint()
        yield _completion(response)

    def _next_step(self, number: int) -> ScriptStep | None:
        """Step ``number`` (from 0), taken from the iterator if it has not been yet."""
        while number >= len(self._script) and self._later is not None:
            step = next(self._later, _END)
            if step is _END:
                self._later = None
                break
            _check_step(step, len(self._script) + 1)
            self._script.append(step)
        return self._script[number] if number < len(self._script) else None

    def __repr__(self) -> str:
        remaining = "unknown" if self.remaining is None else self.remaining
        return f"<ScriptedClient requests={len(self.requests)} remaining={remaining}>"


def _check_step(step: object, number: int) -> None:
    if not isinstance(step, (str, ScriptedResponse)) and not callable(step):
        raise TypeError(
            f"ScriptedClient step #{number} is {type(step).__name__}, not a "
            f"ScriptedResponse, a str or a function of the request returning one"
        )


def _tuple_of(values: object, kind: type[T], name: str) -> tuple[T, ...]:
    """``values`` as a tuple of ``kind``: a ``TypeError`` naming the field otherwise."""
    if isinstance(values, (str, bytes, kind)) or not isinstance(values, Iterable):
        raise TypeError(
            f"ScriptedResponse {name} takes a list of {kind.__name__}, not {type(values).__name__}"
        )
    items: tuple[object, ...] = tuple(cast("Iterable[object]", values))
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(
                f"ScriptedResponse {name} holds {type(item).__name__}, not {kind.__name__}"
            )
    return cast("tuple[T, ...]", items)


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
    """The response's events but its ``Completion``."""
    events: list[LlmEvent] = [
        ReasoningDelta(piece) for piece in _split(response.reasoning, chunk_size)
    ]
    events += [TextDelta(piece) for piece in _split(response.text, chunk_size)]
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
    events += [ProviderItemDone(item) for item in response.provider_items]
    return events


def _completion(response: ScriptedResponse) -> Completion:
    stop_reason = response.stop_reason or ("tool_use" if response.tool_calls else "end_turn")
    return Completion(stop_reason, response.usage, response.response_id, response.model)


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
