"""``RunState``: everything needed to continue a conversation, as one value that is JSON.

``worker.state`` takes it; ``RunState.to_json()`` writes it; in another
process, ``RunState.from_json(text)`` reads it back and
``worker.load_state(state)`` continues from it (a paused run is then resumed
with ``resume(decisions)``). The JSON format is versioned (``"version": 1``)
and documented in docs/worker.md, "Saving and loading a run".

A state is checked twice: ``from_json`` checks its shape (every field of the
right type; pydantic names the bad one), and ``check_history`` checks that it
is a conversation a worker can continue: every tool call has exactly one
result, in call order, or belongs to the paused response; call ids are unique
within a response; a paused response's calls are those of the last assistant
message. Both raise ``RunStateError`` and load nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from typing_extensions import Self, final

from ._approvals import MAX_PAUSE_ID_CHARS, new_pause_id
from ._conversation import AssistantMessage, Message, RunUsage, ToolCall, ToolResult, UserMessage
from ._events import ToolCallOutcome
from ._exceptions import RunStateError
from ._instrumentation import check_trace_link
from ._meta import LlmToolDefinition
from ._safe_text import bounded_repr

if TYPE_CHECKING:
    from ._state_json import CallStatus, PausedTuple

__all__ = ["PausedCall", "RunState", "check_history", "fingerprint_of"]


@dataclass(frozen=True)
class PausedCall:
    """One call of a paused response: will run (``ready``), waits (``held``), or has its result."""

    call: ToolCall  # as it will run: a hook may have changed its arguments
    status: CallStatus
    reason: str | None = None  # why it is held
    result: ToolResult | None = None  # its result, once final
    outcome: ToolCallOutcome | None = None


@final
class RunState:
    """A conversation at rest: history, the paused response if any, counters and usage.

    Immutable; compare two with ``==``. Read ``history``, ``pending_call_ids``,
    ``pause_id``, ``usage`` (the whole conversation's), ``run_usage`` (the current
    run's, which budgets count) and ``trace_link``; write it with ``to_json()``.
    """

    __slots__ = (
        "_allowed_tools",
        "_fingerprint",
        "_history",
        "_output_attempts",
        "_pause_id",
        "_paused",
        "_run_usage",
        "_tool_choice",
        "_trace_link",
        "_turns",
        "_usage",
    )

    def __init__(
        self,
        *,
        history: Sequence[Message],
        paused: Sequence[PausedCall] | None,
        turns: int,
        run_usage: RunUsage,
        usage: RunUsage,
        tool_choice: str,
        allowed_tools: tuple[str, ...] | None,
        fingerprint: str,
        output_attempts: int = 0,
        trace_link: Mapping[str, str] | None = None,
        pause_id: str | None = None,
    ) -> None:
        self._history = tuple(history)
        self._paused = None if paused is None else tuple(paused)
        # Only a paused state has a pause; one saved without an id (before ids) gets one.
        self._pause_id = None if paused is None else _pause_id_of(pause_id)
        # Only a paused run goes on counting.
        self._turns = turns if paused is not None else 0
        self._output_attempts = output_attempts if paused is not None else 0
        self._run_usage = run_usage
        self._usage = usage
        self._tool_choice = tool_choice
        self._allowed_tools = allowed_tools
        self._fingerprint = fingerprint
        self._trace_link = None if trace_link is None else check_trace_link(trace_link)
        check_history(self._history, self._paused)

    @property
    def version(self) -> int:
        """The format version ``to_json`` writes."""
        from ._state_json import FORMAT_VERSION

        return FORMAT_VERSION

    @property
    def history(self) -> tuple[Message, ...]:
        """The conversation; while paused, it ends with the response whose calls wait."""
        return self._history

    @property
    def is_paused(self) -> bool:
        """Whether a response's calls wait for decisions (``resume()`` after loading)."""
        return self._paused is not None

    @property
    def paused_calls(self) -> tuple[PausedCall, ...]:
        """The calls of the paused response (empty when not paused)."""
        return self._paused or ()

    @property
    def pending_call_ids(self) -> tuple[str, ...]:
        """The ids of the calls that wait for a decision, as saved (a worker loading the
        state also holds its ready calls to tools that need approval: read
        ``worker.pending`` after ``load_state()``)."""
        return tuple(p.call.id for p in self.paused_calls if p.status == "held")

    @property
    def pause_id(self) -> str | None:
        """The id of the pause (``worker.pause_id`` after loading), or ``None`` when not
        paused: ``resume(..., pause_id=...)`` takes it."""
        return self._pause_id

    @property
    def turns(self) -> int:
        """Model requests made by the ``run()``/``resume()``/``retry()`` in progress."""
        return self._turns

    @property
    def output_attempts(self) -> int:
        """Structured answers of the paused run that failed (``output_retries`` counts them)."""
        return self._output_attempts

    @property
    def usage(self) -> RunUsage:
        """What the whole conversation has cost."""
        return self._usage

    @property
    def run_usage(self) -> RunUsage:
        """What the current (or last) run has cost: what the budgets of ``Limits`` count."""
        return self._run_usage

    @property
    def tool_choice(self) -> str:
        """The current run's ``tool_choice``."""
        return self._tool_choice

    @property
    def allowed_tools(self) -> tuple[str, ...] | None:
        """The current run's ``allowed_tools`` (sorted), or ``None`` for every tool."""
        return self._allowed_tools

    @property
    def fingerprint(self) -> str:
        """A hash of the system prompt and tool definitions the state was taken with."""
        return self._fingerprint

    @property
    def trace_link(self) -> Mapping[str, str] | None:
        """What the last traced run gave its continuation to link to (``RunSpan.link()``),
        or ``None``; a resume or retry of this state gets it."""
        return self._trace_link

    def to_json(self) -> str:
        """The state as JSON text (format version 1; see docs/worker.md)."""
        from ._state_json import dump_state

        paused: list[PausedTuple] | None = None
        if self._paused is not None:
            paused = [(p.call, p.status, p.reason, p.result, p.outcome) for p in self._paused]
        return dump_state(
            history=self._history,
            paused=paused,
            turns=self._turns,
            output_attempts=self._output_attempts,
            run_usage=self._run_usage,
            usage=self._usage,
            tool_choice=self._tool_choice,
            allowed_tools=self._allowed_tools,
            fingerprint=self._fingerprint,
            trace_link=self._trace_link,
            pause_id=self._pause_id,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Read a state ``to_json`` wrote; ``RunStateError`` names what is wrong with it."""
        from ._state_json import load_state

        fields = load_state(text)
        paused = fields.pop("paused")
        if paused is not None:
            paused = [PausedCall(*call) for call in paused]
        return cls(paused=paused, **fields)

    def _key(self) -> tuple[object, ...]:
        return (
            self._history,
            self._paused,
            self._turns,
            self._output_attempts,
            self._run_usage,
            self._usage,
            self._tool_choice,
            self._allowed_tools,
            self._fingerprint,
            self._trace_link,
            self._pause_id,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunState):
            return NotImplemented
        # A response's usage, id and model are left out of AssistantMessage equality; a
        # saved state keeps them too.
        return self._key() == other._key() and _provider_labels(self._history) == (
            _provider_labels(other._history)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        paused = f" paused={len(self.pending_call_ids)} pending" if self._paused else ""
        return f"<RunState messages={len(self._history)}{paused}>"


def fingerprint_of(system_prompt: str | None, tools: Sequence[LlmToolDefinition]) -> str:
    """A hash of what a provider caches as the prompt prefix: system prompt and tools."""
    prefix = [system_prompt, [tool.to_dict() for tool in tools]]
    text = json.dumps(prefix, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    import hashlib  # here: it costs `import llm_worker` some milliseconds

    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# -- the checks --------------------------------------------------------------------------


def _provider_labels(history: Sequence[Message]) -> list[tuple[object, ...]]:
    return [(m.usage, m.response_id, m.model) for m in history if isinstance(m, AssistantMessage)]


def _pause_id_of(pause_id: object) -> str:
    """``pause_id`` if a state may hold it (what from_json reads, checked as strictly), or
    a fresh id for ``None``."""
    if pause_id is None:
        return new_pause_id()
    if not isinstance(pause_id, str):
        raise RunStateError(f"the pause_id must be a str, not {type(pause_id).__name__}")
    fits = 0 < len(pause_id) <= MAX_PAUSE_ID_CHARS
    if not (fits and pause_id.isascii() and pause_id.isprintable() and " " not in pause_id):
        raise RunStateError(
            f"the pause_id must be 1 to {MAX_PAUSE_ID_CHARS} printable ASCII characters "
            f"without spaces"
        )
    return pause_id


def check_history(history: Sequence[Message], paused: Sequence[PausedCall] | None) -> None:
    """Raise ``RunStateError`` unless ``history`` is a conversation a worker can continue.

    Every assistant message's tool calls are followed by exactly one
    ``ToolResult`` per call, in call order, except the last message's when
    ``paused`` holds its calls; call ids are unique within a message.
    """
    position = 0
    count = len(history)
    while position < count:
        item = history[position]
        where = f"history[{position}]"
        position += 1
        if isinstance(item, ToolResult):
            raise RunStateError(
                f"{where}: a ToolResult for call {_shown(item.call_id)} that answers no tool call "
                f"(results follow the assistant message whose calls they answer, in call order)"
            )
        if isinstance(item, UserMessage):
            continue
        if not isinstance(item, AssistantMessage):
            raise RunStateError(
                f"{where}: {type(item).__name__} is not a UserMessage, AssistantMessage "
                f"or ToolResult"
            )
        _check_calls(where, item.tool_calls)
        if paused is not None and position == count:
            _check_paused(where, item, paused)
            return
        for call in item.tool_calls:
            if position >= count or not isinstance(history[position], ToolResult):
                raise RunStateError(
                    f"{where}: tool call {_shown(call.id)} ({_name(call)}) has no result (each "
                    f"call is followed by its ToolResult, in call order)"
                )
            result = history[position]
            assert isinstance(result, ToolResult)
            if result.call_id != call.id:
                raise RunStateError(
                    f"history[{position}]: the result of call {_shown(result.call_id)} where the "
                    f"result of {_shown(call.id)} ({_name(call)}) belongs (results follow their "
                    f"calls in call order)"
                )
            position += 1
    if paused is not None:
        raise RunStateError(
            "the state is paused, but its history does not end with the assistant message "
            "whose calls wait"
        )


def _check_calls(where: str, calls: Sequence[ToolCall]) -> None:
    seen: set[str] = set()
    for call in calls:
        if not isinstance(call, ToolCall):
            raise RunStateError(f"{where}: {_shown(call)} is not a ToolCall")
        if call.id in seen:
            raise RunStateError(f"{where}: two tool calls share the id {_shown(call.id)}")
        seen.add(call.id)


def _check_paused(where: str, message: AssistantMessage, paused: Sequence[PausedCall]) -> None:
    calls = message.tool_calls
    if len(paused) != len(calls) or not calls:
        raise RunStateError(
            f"{where}: the paused response has {len(calls)} tool calls, but the state "
            f"holds {len(paused)}"
        )
    for call, held in zip(calls, paused, strict=True):
        if (held.call.id, held.call.name) != (call.id, call.name):
            raise RunStateError(
                f"{where}: paused call {_shown(held.call.id)} ({_name(held.call)}) is not the "
                f"response's call {_shown(call.id)} ({_name(call)})"
            )
        if held.status == "final":
            if held.result is None or held.outcome is None or held.result.call_id != call.id:
                raise RunStateError(
                    f"{where}: paused call {_shown(call.id)} is final but has no result of its own"
                )
        elif held.result is not None:
            raise RunStateError(
                f"{where}: paused call {_shown(call.id)} is {held.status} but has a result"
            )
        if held.status == "held" and not held.reason:
            raise RunStateError(f"{where}: paused call {_shown(call.id)} waits, but for no reason")
    if not any(p.status == "held" for p in paused):
        raise RunStateError(f"{where}: the state is paused, but no call waits for a decision")


# -- how a state's values are shown -------------------------------------------------------

_SHOWN_CHARS = 80  # of an id or a name in an error message: a hostile state's 1 MB id is cut


def _shown(value: object) -> str:
    """``value`` (an id, a call) as an error message shows it: its repr, cut short."""
    return bounded_repr(value, _SHOWN_CHARS)


def _name(call: ToolCall) -> str:
    """A call's tool name as an error message shows it: the text, cut short."""
    name = call.name
    if isinstance(name, str) and len(name) <= _SHOWN_CHARS:
        return name
    return bounded_repr(name, _SHOWN_CHARS)
