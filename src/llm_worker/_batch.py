"""``ToolBatch``: the tool calls of one response, from the model's answer to their results.

The invariant "every tool call gets exactly one result, in call order" lives
here. Each call has one ``CallSlot`` that moves one way through its states:

    UNDECIDED ─┬─> READY ──> RUNNING ──> RAN ──> FINAL
               ├─> HELD (waits for a human) ──> READY, or FINAL
               └─> FINAL (decided without running: unknown, skipped, answered...)

``finalize`` gives a slot its one result; ``close`` gives every slot still
without one the text of how the batch ended and returns all results in call
order, for the history. Nothing is recorded after ``close``. ``report`` gives
each result's ``ToolCallFinished`` once, in the order the results came: what
the run stream yields, however the batch ends.

A call's ``Turn`` is where it takes its turn: a runner (one slot of
``Limits.max_concurrent_calls``) or the run's own task, after the calls its
sequential tool (or the sequential call before it) must not overlap. A
plain-``def`` call whose timeout abandons its thread leaves the thread in its
``Turn`` (``keep_turn``): until the thread really ends it keeps the turn, and
the next call there waits for it, inside that call's own timeout.
"""

from __future__ import annotations

import contextvars
import enum
import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

import anyio  # its submodules load when first used: `import llm_worker` stays cheap

from ._conversation import ToolCall, ToolResult, valid_message
from ._events import ToolCallFinished, ToolCallOutcome
from ._model_texts import STOPPED, call_text

if TYPE_CHECKING:
    from ._instrumentation import ToolSpan
    from ._server import ToolEntry

__all__ = [
    "RECHECK_SECONDS",
    "TURN",
    "AbandonedThread",
    "CallSlot",
    "SlotState",
    "ToolBatch",
    "Turn",
    "keep_turn",
]

logger = logging.getLogger("llm_worker")


class SlotState(enum.Enum):
    UNDECIDED = "undecided"
    READY = "ready"  # will run, as ``run_call``
    HELD = "held"  # waits for a decision, for ``reason``
    RUNNING = "running"
    RAN = "ran"  # has the tool's result; the post-hooks have not reviewed it yet
    FINAL = "final"  # has the result the model reads


class CallSlot:
    """One call of the batch: what the model asked, what will run, and what came of it."""

    __slots__ = (
        "call",
        "entry",
        "index",
        "outcome",
        "reason",
        "result",
        "run_call",
        "span",
        "state",
    )

    def __init__(self, index: int, call: ToolCall) -> None:
        self.index = index
        self.call = call  # as the model made it: the history keeps this one
        self.run_call = call  # as it will run, after hooks and humans changed its arguments
        self.entry: ToolEntry | None = None
        self.state = SlotState.UNDECIDED
        self.reason: str | None = None
        self.result: ToolResult | None = None
        self.outcome: ToolCallOutcome | None = None
        self.span: ToolSpan | None = None  # an observer's, while the call runs

    def __repr__(self) -> str:
        return f"<CallSlot {self.index} {self.call.name!r} {self.state.value}>"


class ToolBatch:
    """The calls of one response while they are decided, run, reviewed and recorded."""

    __slots__ = ("closed", "output_attempts", "slots", "turns", "unreported")

    def __init__(self, calls: tuple[ToolCall, ...], turns: int) -> None:
        self.slots: list[CallSlot] = [CallSlot(index, call) for index, call in enumerate(calls)]
        self.turns = turns  # model requests made so far in this run (for max_turns)
        self.output_attempts = 0  # structured answers that failed before a pause
        self.closed = False
        self.unreported: list[ToolCallFinished] = []  # of the results not reported yet

    def __iter__(self) -> Iterator[CallSlot]:
        return iter(self.slots)

    def ready(self, slot: CallSlot, run_call: ToolCall) -> None:
        """``slot`` will run, as ``run_call`` (same id and tool; maybe other arguments)."""
        slot.run_call = run_call
        slot.state = SlotState.READY

    def hold(self, slot: CallSlot, run_call: ToolCall, reason: str) -> None:
        """``slot`` waits for a decision."""
        slot.run_call = run_call
        slot.reason = reason
        slot.state = SlotState.HELD

    def ran(self, slot: CallSlot, result: ToolResult) -> None:
        """The tool gave ``result``; the post-hooks review it next. Ignored after ``close``."""
        if not self.closed and slot.state is SlotState.RUNNING:
            slot.result = result
            slot.state = SlotState.RAN

    def finalize(self, slot: CallSlot, result: ToolResult, outcome: ToolCallOutcome) -> None:
        """Give ``slot`` the result the model reads. Each slot gets exactly one."""
        assert slot.state is not SlotState.FINAL, slot
        assert not self.closed, slot
        assert result.call_id == slot.call.id, (result, slot)
        if result.parts or (outcome is not ToolCallOutcome.RAN and not result.content.isascii()):
            # The history's text is valid Unicode, so every later request encodes and its
            # state reads back: a call's own text was made so (execute_call, and the
            # post-hooks for theirs), a decision's or a hook's answer is made so here.
            result = valid_message(result)
        slot.result = result
        slot.outcome = outcome
        slot.state = SlotState.FINAL
        self.unreported.append(ToolCallFinished(slot.call, result, outcome))

    def report(self) -> list[ToolCallFinished]:
        """The ``ToolCallFinished`` of each result given since the last report, in that order."""
        events, self.unreported = self.unreported, []
        return events

    def close(
        self, template: str, outcome: ToolCallOutcome, *, why: str | None = None, **fields: str
    ) -> list[ToolResult]:
        """End the batch: every slot without a result gets ``template`` (and ``outcome``).

        ``template`` is one of ``_model_texts``' (``{name}`` and ``fields``
        filled in). With ``why``, a call that was running when the batch
        stopped is told it was cancelled, and why. Returns every result in call
        order, for the history.
        """
        for slot in self.slots:
            if slot.state is SlotState.FINAL:
                continue
            if why is not None and slot.state is SlotState.RUNNING:
                text = call_text(STOPPED, slot.call.name, why=why)
            else:
                text = call_text(template, slot.call.name, **fields)
            self.finalize(slot, ToolResult(slot.call.id, text, True), outcome)
        self.closed = True
        return [slot.result for slot in self.slots if slot.result is not None]

    def held(self) -> list[CallSlot]:
        return [slot for slot in self.slots if slot.state is SlotState.HELD]

    def __repr__(self) -> str:
        states = ", ".join(slot.state.value for slot in self.slots)
        return f"<ToolBatch [{states}]{' closed' if self.closed else ''}>"


class AbandonedThread(Protocol):
    """The thread of a call that ended before it (its ``_Call``, a dedicated thread's job):
    ``running`` until the tool's function returns."""

    running: bool


# An ending thread wakes no event loop (a call back into a loop that is shutting down could
# block): a call waiting for its turn looks again this often.
RECHECK_SECONDS = 0.1


class Turn:
    """Where calls of a run take turns, and the threads that still keep it: abandoned by its
    calls, or by earlier calls its calls come after.

    ``threads`` is only touched on the event loop's thread; each thread tells that it
    ended by its own ``running`` (a bool, read without a lock).
    """

    __slots__ = ("threads",)

    def __init__(self, threads: Iterable[AbandonedThread] = ()) -> None:
        self.threads: list[AbandonedThread] = list(threads)

    def kept(self) -> bool:
        """Whether a thread still keeps this turn (the ended ones are forgotten)."""
        threads = self.threads
        if threads:
            threads[:] = [thread for thread in threads if thread.running]
        return bool(threads)

    async def wait(self, name: str) -> None:
        """Wait, in a call of tool ``name``, until no thread keeps this turn. Run inside the
        call's timeout: that ends the wait as it would end the call."""
        try:
            while self.kept():
                await anyio.sleep(RECHECK_SECONDS)
        except anyio.get_cancelled_exc_class():
            # The call's result says only that it timed out (or stopped): say why.
            logger.warning(
                "A call of tool %r ended waiting for its turn: %d thread(s) of earlier "
                "calls, abandoned when those timed out, still run (a sequential tool's "
                "turn, or a slot of max_concurrent_calls, is theirs until they end)",
                name,
                len(self.threads),
            )
            raise

    def __repr__(self) -> str:
        return f"<Turn kept by {len(self.threads)} thread(s)>"


TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("llm_worker_turn", default=None)
"""The ``Turn`` of the call running in this context: set by a Worker's run, else ``None``."""


def keep_turn(thread: AbandonedThread) -> None:
    """Leave ``thread``, of a call that ends before it, in the call's ``Turn`` (if any)."""
    turn = TURN.get()
    if turn is not None:
        turn.threads.append(thread)
