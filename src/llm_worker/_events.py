"""What a run stream yields: one frozen event per step of the turn loop.

``worker.run_stream(...)`` yields these; ``run()`` reads the same stream and
keeps only how it ended. In the order they come:

    ResponseStarted             a model request was sent (``request`` counts them)
    TextDelta                   a piece of the answer's text, as it arrives
    ReasoningDelta              a piece of the model's reasoning, where the provider shows it
    ToolUseStart                the model began tool call ``call_id`` to ``name``
    ToolInputDelta              a fragment of that call's argument JSON (by ``index``)
    ToolCallReady               that call is complete: its whole ``ToolCall``
    ResponseCompleted           the response is whole and in the history
    ApprovalRequested           a call waits for a decision (then RunPaused)
    ToolCallRunning             a call started running
    ToolCallProgress            a running call reported progress
    ToolCallFinished            a call's result, exactly as the model will read it
    RunFinished | RunPaused | RunAborted | RunFailed    how the run ended (last)

``TextDelta``, ``ReasoningDelta``, ``ToolUseStart`` and ``ToolInputDelta`` are the
client's own events, passed on as they arrive.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, TypeAlias

from ._approvals import PendingCall
from ._client import ReasoningDelta, TextDelta, ToolInputDelta, ToolUseStart
from ._conversation import AssistantMessage, ToolCall, ToolResult

__all__ = [
    "ApprovalRequested",
    "ResponseCompleted",
    "ResponseStarted",
    "RunAborted",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunPaused",
    "ToolCallFinished",
    "ToolCallOutcome",
    "ToolCallProgress",
    "ToolCallReady",
    "ToolCallRunning",
]


@dataclass(frozen=True)
class ResponseStarted:
    """Model request number ``request`` of this run was sent (1 for the first; a request
    that failed keeps its number, so a retry's is the next)."""

    request: int


@dataclass(frozen=True)
class ToolCallReady:
    """The tool call at ``index`` of the response is complete (its arguments are whole)."""

    index: int
    call: ToolCall


@dataclass(frozen=True)
class ResponseCompleted:
    """The model's response is complete and appended to the history."""

    message: AssistantMessage


@dataclass(frozen=True)
class ApprovalRequested:
    """A call of the response waits for a human's decision (``resume(decisions)``)."""

    pending: PendingCall


@dataclass(frozen=True)
class ToolCallRunning:
    """A call started running, with these arguments (a hook or a human may have changed them)."""

    call: ToolCall


@dataclass(frozen=True)
class ToolCallProgress:
    """A running call reported progress (``ToolContext.report_progress``)."""

    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


class ToolCallOutcome(enum.Enum):
    """Where a call's result came from."""

    RAN = "ran"
    """The tool ran; its result may still be an error (a failure, a timeout)."""
    SKIPPED = "skipped"
    """A pre-hook returned ``Skip()``."""
    ANSWERED = "answered"
    """A pre-hook returned ``SyntheticResult(...)``; the tool did not run."""
    DENIED = "denied"
    """A human returned ``Deny(reason)``."""
    NOT_FOUND = "not_found"
    """No tool has that name."""
    NOT_ALLOWED = "not_allowed"
    """The tool is not in this run's ``allowed_tools``."""
    ABORTED = "aborted"
    """A hook aborted the run before the call ran or finished."""
    WITHHELD = "withheld"
    """It ran, but the run stopped before the post-hooks saw its result."""
    NOT_RUN = "not_run"
    """The run stopped with an error before the call ran or finished."""


@dataclass(frozen=True)
class ToolCallFinished:
    """``call``'s result, after the post-hooks: what the model will read."""

    call: ToolCall
    result: ToolResult
    outcome: ToolCallOutcome


@dataclass(frozen=True)
class RunFinished:
    """The model gave its final answer: ``text``, and ``output`` (the answer validated
    into the run's ``output_type``; the text itself for a run without one)."""

    text: str
    output: Any = None


@dataclass(frozen=True)
class RunPaused:
    """The run waits for decisions on ``pending``; ``resume(decisions)`` goes on.

    ``pause_id`` is this pause's id (``worker.pause_id``): ``resume(decisions,
    pause_id=...)`` refuses decisions meant for another pause. Always given by a run
    (``None`` only in a ``RunPaused`` made without one).
    """

    pending: tuple[PendingCall, ...]
    pause_id: str | None = None


@dataclass(frozen=True)
class RunAborted:
    """A hook aborted the run; the stream then raises ``WorkerAbortedError``."""

    reason: str


@dataclass(frozen=True)
class RunFailed:
    """The run stopped with ``error``, which the stream raises next."""

    error: Exception


RunEvent: TypeAlias = (
    ResponseStarted
    | TextDelta
    | ReasoningDelta
    | ToolUseStart
    | ToolInputDelta
    | ToolCallReady
    | ResponseCompleted
    | ApprovalRequested
    | ToolCallRunning
    | ToolCallProgress
    | ToolCallFinished
    | RunFinished
    | RunPaused
    | RunAborted
    | RunFailed
)
"""One step of a run, as ``run_stream()`` yields it."""
