"""The turn loop, as a stream of events: ``RunStream``.

One run is one async generator, ``_Turns.events()``, read top to bottom like
the loop it is: check the budgets, send the request, pass the response's
deltas on (``ResponseAssembler`` checks and assembles them), decide each
tool call (pre-hooks, approvals), run the allowed ones, review their results
(post-hooks) in call order, record them, and go again until the model
answers without calling tools. Every step is a yield of a
``RunEvent``, and the state between steps is the session's data. ``run()``
reads the same stream and keeps only how it ended.

Concurrency: the stream is an async context manager that owns one task
group for the whole run; the calls of a response that run together are
tasks in it, and hand their results back through a memory stream, so the
generator itself never yields inside a cancel scope. Leaving the stream early
(break, an exception, cancellation) closes the generator, which gives every
unfinished call its "cancelled" result, then cancels the tasks.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import AbstractContextManager, aclosing
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

import anyio
from typing_extensions import Self, TypeVar, final

from ._approvals import APPROVAL_NEEDED, Decision, PendingCall
from ._batch import (
    RECHECK_SECONDS,
    TURN,
    AbandonedThread,
    CallSlot,
    SlotState,
    ToolBatch,
    Turn,
)
from ._client import (
    LlmRequest,
    ToolChoice,
)
from ._context import ProgressReports, Report, ToolContext
from ._conversation import (
    AssistantMessage,
    HistoryView,
    RunUsage,
    ToolCall,
    ToolResult,
    UserMessage,
    valid_message,
)
from ._events import (
    ApprovalRequested,
    ResponseCompleted,
    ResponseStarted,
    RunAborted,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPaused,
    ToolCallOutcome,
    ToolCallProgress,
    ToolCallReady,
    ToolCallRunning,
)
from ._exceptions import (
    MaxTurnsExceededError,
    ToolNotFoundError,
    UsageLimitExceededError,
    WorkerAbortedError,
    WorkerStateError,
)
from ._execution import execute_call, timed_out
from ._hooks import (
    Abort,
    Continue,
    Pause,
    PostToolCallContext,
    Skip,
    SyntheticResult,
    ToolCallContext,
    needs_approval,
    run_post_hooks,
    run_pre_hooks,
)
from ._instrumentation import RunSpan, check_trace_link
from ._isolation import isolated
from ._model_texts import (
    ABORTED,
    CANCELLED,
    NOT_ALLOWED,
    NOT_RUN,
    SKIPPED,
    SKIPPED_BECAUSE,
    WITHHELD,
    call_text,
)
from ._response import ResponseAssembler
from ._safe_text import valid_unicode
from ._server import entry_of, sorted_definitions
from ._session import Phase, Session, UsageTally, WorkerResult
from ._timeouts import awaited_in

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ._limits import Limits
    from ._output import RunOutput

__all__ = ["STREAM_CLOSE_TIMEOUT", "RunStream", "Start", "close_stream"]

logger = logging.getLogger("llm_worker")

DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=Any)
T = TypeVar("T")

_CONTINUE = Continue()
# The stop reason of a response the provider cut short to be continued (Anthropic's
# server tools): the turn is not over, and the same history is sent again.
PAUSE_TURN = "pause_turn"
_STARTED = object()  # a runner took its next call
_PROGRESS = object()  # a call reported progress: drain the reports


@dataclass(frozen=True)
class Start:
    """How a run begins: a new message (``user_input``), a resume (``decisions``), or a retry."""

    kind: str  # "run" | "resume" | "retry"
    user_input: str = ""
    decisions: Mapping[str, Decision] | Decision | None = None
    pause_id: str | None = None  # the pause a resume's decisions are for, if it says


@final
class RunStream(Generic[DepsT, OutputT]):
    """The events of one run, as they happen. Always used as an async context manager::

        async with worker.run_stream("Close the stale issues") as stream:
            async for event in stream:
                ...
        stream.result   # WorkerResult.FINISHED or PAUSED
        stream.output   # the final answer, as the run's output_type (once FINISHED)

    The stream ends with ``RunFinished`` or ``RunPaused``; after ``RunAborted``
    or ``RunFailed`` it raises the error, as ``run()`` would. Leaving the
    ``async with`` early cancels the run the way cancelling ``run()`` does:
    every unfinished call gets its "cancelled" result and the history stays
    valid. Nothing is produced until it is asked for, so a slow reader slows
    the run (the model's stream is read as the events are, and running tools
    hand back at most one result each).
    """

    __slots__ = (
        "_events",
        "_group",
        "_owner",
        "_pause",
        "_run_number",
        "_session",
        "_start",
        "_state",
        "_turns",
    )

    def __init__(
        self,
        session: Session,
        start: Start,
        *,
        deps: DepsT | None,
        tool_choice: ToolChoice | None,
        allowed_tools: Sequence[str] | None,
        output: RunOutput | None = None,
        own_output: bool = False,
    ) -> None:
        # Refuse at once what could never run, before the caller enters the stream.
        _check_start(session, start)
        self._session = session
        self._owner = session.owner  # the Worker or LockedWorker that made it
        # The pause a resume decides: its decisions are about those calls, and no later ones.
        self._pause = session.paused
        self._run_number = session.run_number  # the one a retry continues
        self._start = start
        self._turns = _Turns(session, deps, tool_choice, allowed_tools, output, own_output)
        self._group: TaskGroup | None = None
        self._events: AsyncGenerator[RunEvent, None] | None = None
        self._state = "new"

    @property
    def result(self) -> WorkerResult | None:
        """``FINISHED`` or ``PAUSED`` once the stream has ended so; ``None`` before, or if not."""
        return self._turns.result

    @property
    def output(self) -> OutputT:
        """The final answer, validated into the run's ``output_type`` (its text without one).

        Raises ``WorkerStateError`` unless the stream ended with ``RunFinished``.
        """
        turns = self._turns
        if turns.result is not WorkerResult.FINISHED:
            raise WorkerStateError(
                "This run has no output: it has not finished (it is paused, failed or "
                "still running)"
            )
        value: OutputT = turns.output_value  # this run's: a later run's is the worker's
        return value

    async def __aenter__(self) -> Self:
        if self._state != "new":
            raise WorkerStateError("A RunStream can be entered only once")
        if self._session.owner is not self._owner:
            raise WorkerStateError(
                "This stream's worker was locked or unlocked after the stream was made; "
                "make it again from the worker lock() or unlock() returned"
            )
        if self._start.kind == "resume":
            # The pause may have ended since the stream was made: a decision that names
            # its pause is refused by id, and any decision by the pause it was made in.
            self._session.check_pause_id(self._start.pause_id)
            if self._session.paused is not self._pause:
                raise WorkerStateError(
                    "This resume was made for a pause that has ended (the run was resumed, "
                    "or another state was loaded); read worker.pending and resume again"
                )
        elif self._start.kind == "retry" and self._session.run_number != self._run_number:
            raise WorkerStateError(
                "This retry was made for a run that is no longer the last (a run was "
                "started, a state loaded or the history set since); make it again"
            )
        _check_start(self._session, self._start)
        group = anyio.create_task_group()
        await group.__aenter__()
        try:
            self._turns.begin(self._start)
        except BaseException:
            await group.__aexit__(None, None, None)
            raise
        self._state = "open"
        self._group = group
        self._turns.group = group
        self._events = self._turns.events()
        return self

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        # Once entered, ``async for`` reads the loop's generator itself: one step less per
        # event than going through ``__anext__``.
        return self if self._events is None else self._events

    async def __anext__(self) -> RunEvent:
        events = self._events
        if events is None:
            raise WorkerStateError(
                "Read a RunStream inside `async with worker.run_stream(...) as stream:`"
            )
        return await events.__anext__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        group, events = self._group, self._events
        self._events = None
        self._state = "closed"
        turns = self._turns
        # Whether the run stops for a reason of its own (its error, a cancellation, the
        # reader's exception): then the observer's errors are logged, not raised.
        stopping = exc is not None or turns.result is None
        try:
            if events is not None and not turns.ended:
                with anyio.CancelScope(shield=True):
                    await events.aclose()  # closes an unfinished batch: "cancelled" results
            turns.abandon()
        finally:
            try:
                if group is not None:
                    if turns.runners:  # cancelling costs anyio a task repr: only if needed
                        group.cancel_scope.cancel()
                    # The body's exception (if any) propagates as it is, never in a group,
                    # and a cancellation arriving meanwhile does not replace it.
                    try:
                        await group.__aexit__(None, None, None)
                    except anyio.get_cancelled_exc_class():
                        stopping = True
                        if exc is None or isinstance(exc, anyio.get_cancelled_exc_class()):
                            raise
                        # The body's error goes on; the cancellation is delivered again at
                        # the next checkpoint of the scope that asked for it.
            finally:
                turns.end(stopping)
        escaped = turns.escaped
        if escaped is not None and exc is None:
            raise escaped  # a tool's KeyboardInterrupt or SystemExit, unchanged

    def __repr__(self) -> str:
        return f"<RunStream {self._start.kind} {self._state}>"


STREAM_CLOSE_TIMEOUT = 5.0
"""Seconds a model's stream left unfinished may take to close; then it is left as it is."""


async def close_stream(aclose: Callable[[], Awaitable[object]]) -> None:
    """Close a client's stream, shielded (a cancelled run still closes its connection),
    but never for longer than ``STREAM_CLOSE_TIMEOUT``: a close that hangs (a dead
    connection's) would otherwise hang the run, and every cancel scope around it."""
    with anyio.move_on_after(STREAM_CLOSE_TIMEOUT, shield=True) as scope:
        await aclose()
    if scope.cancelled_caught:
        logger.warning(
            "The model's stream did not close within %ss; it was left open", STREAM_CLOSE_TIMEOUT
        )


def _link_of(trace: RunSpan) -> Mapping[str, str] | None:
    """What the observer gives a continuation of this run to link to; a link it cannot give
    (or gives malformed) is logged, and the continuation links to nothing."""
    try:
        link = trace.link()
        return None if link is None else check_trace_link(link)
    except Exception:
        logger.exception("The instrumentation's RunSpan.link() failed; no link is kept")
        return None


def _check_start(session: Session, start: Start) -> None:
    if start.kind == "run":
        session.require_phase(Phase.IDLE, "run()")
        if not isinstance(start.user_input, str):
            raise TypeError(f"run() takes the user's message as a str, not {start.user_input!r}")
    elif start.kind == "resume":
        session.check_decisions(start.decisions, start.pause_id)
    else:
        session.require_retryable()


class _Turns:
    """One run's loop: the generator ``events()`` and what it keeps between steps."""

    def __init__(
        self,
        session: Session,
        deps: Any,
        tool_choice: ToolChoice | None,
        allowed_tools: Sequence[str] | None,
        output: RunOutput | None,
        own_output: bool,
    ) -> None:
        self.session = session
        self.output = output
        self.own_output = own_output  # a new run's output_type is not the worker's
        self.deps = deps
        self.new_tool_choice = tool_choice
        self.new_allowed_tools = (
            None if allowed_tools is None else tuple(sorted(set(allowed_tools)))
        )
        self.result: WorkerResult | None = None
        self.output_value: Any = None  # the final answer, once the run has finished
        self.turns = 0
        self.batch: ToolBatch | None = None  # a resumed batch, until events() takes it
        self.group: TaskGroup | None = None
        self.channel: tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]] | None
        self.channel = None
        self.scopes: set[anyio.CancelScope] = set()  # of the calls running in tasks
        self.stopping = False  # the batch is being stopped: runners take no more calls
        self.progress: ProgressReports | None = None
        self.escaped: BaseException | None = None
        self.runners = 0  # runner tasks alive
        self.own_turn = Turn()  # of the calls run in the run's own task
        self.trace: RunSpan | None = None  # the observer's, if the worker has one
        # The run span's optional activate(): entered around the application's hooks.
        self.activate_run: Callable[[], AbstractContextManager[None] | None] | None = None
        self.usage_before = _NOTHING_SPENT  # what the run cost before this part (a resume)
        self.error: BaseException | None = None  # what ended the run, if not a result
        self.ended = False  # whether events() ran to its end (or its error)

    # -- start and end ---------------------------------------------------------------

    def begin(self, start: Start) -> None:
        """Claim the session for this run; a resume or retry keeps the run's tool selection."""
        session = self.session
        instrumentation = session.instrumentation
        # The observer first: if it fails, the run has changed nothing.
        trace = None
        if instrumentation is not None:
            trace = instrumentation.run(
                kind=start.kind,
                client=session.client,
                system_prompt=session.system_prompt,
                tools=sorted_definitions(session.handle),
                continues=None if start.kind == "run" else session.trace_link,
            )
        if start.kind == "resume":
            self.batch = session.apply_decisions(start.decisions)
        elif start.kind == "run":
            session.history.append(UserMessage(valid_unicode(start.user_input)))
            session.run_number += 1
            session.run_tally = UsageTally()
            session.run_requests_sent = 0
            session.own_output = self.own_output
            session.tool_choice = self.new_tool_choice or "auto"
            session.allowed_tools = self.new_allowed_tools
            session.trace_link = None  # a new run continues none
        session.run_output = self.output
        session.has_output = False
        session.ran_last_run = True
        if start.kind == "retry" and self.output is not None:
            self.output.ask_again()
        session.phase = Phase.RUNNING
        if trace is not None:
            self.trace = trace
            self.activate_run = getattr(trace, "activate", None)
            self.usage_before = session.run_usage  # budgets count a run with its resumes

    def abandon(self) -> None:
        """A resumed batch the generator never took ends as a cancelled one."""
        batch, self.batch = self.batch, None
        if batch is not None:
            results = batch.close(CANCELLED, ToolCallOutcome.NOT_RUN)
            self.session.history.extend(results)

    def end(self, stopping: bool) -> None:
        """The run is over: free the session, and end the observer's span (``stopping``:
        the run stops for a reason of its own, which an error of the observer's must not
        replace)."""
        session = self.session
        session.phase = Phase.PAUSED if session.paused is not None else Phase.IDLE
        session.settled = False
        if self.channel is not None:
            send, receive = self.channel
            send.close()
            receive.close()
        trace, self.trace = self.trace, None
        if trace is not None:
            error = self.error
            if self.result is not None:
                outcome = self.result.value
            elif isinstance(error, WorkerAbortedError):
                outcome = "aborted"
            elif error is not None:
                outcome = "failed"
            else:
                outcome = "cancelled"  # the reader left early, or cancelled the run
            session.trace_link = _link_of(trace)
            usage = session.run_usage - self.usage_before
            if stopping:
                _while_stopping(trace.end, outcome, error, usage)
            else:
                trace.end(outcome, error, usage)

    # -- the loop --------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[RunEvent, None]:
        session = self.session
        output = self.output
        # A resumed run starts with its paused response's calls (the denied ones already
        # decided), then goes on as usual.
        batch, self.batch = self.batch, None
        message: AssistantMessage | None = None
        late: Sequence[ToolCallReady] = ()  # of the response's calls its Completion ended
        try:
            while True:
                if batch is None:
                    # -- a request: send it, and pass the response on as it comes --
                    self.check_budgets()
                    session.run_requests_sent += 1  # a request that fails keeps its number
                    try:
                        yield ResponseStarted(session.run_requests_sent)
                    except BaseException:
                        session.run_requests_sent -= 1  # the reader left: it was never sent
                        raise
                    request = self.request()
                    response = ResponseAssembler(session.limits.max_response_chars)
                    stream = session.client.stream(request)
                    trace = self.trace
                    span = None if trace is None else trace.request(request, self.turns + 1)
                    feed = response.feed
                    done = False
                    try:
                        if span is None:
                            async for llm_event in stream:
                                forwarded = feed(llm_event)
                                if forwarded is not None:
                                    yield forwarded
                        else:
                            next_event = stream.__anext__
                            while True:
                                # The observer's span is active while the model's stream
                                # is read, a step at a time: never while the reader has
                                # an event.
                                activation = span.activate()
                                try:
                                    if activation is None:
                                        llm_event = await next_event()
                                    else:
                                        with _Observed(activation):
                                            llm_event = await next_event()
                                except StopAsyncIteration:
                                    break
                                forwarded = feed(llm_event)
                                if forwarded is not None:
                                    yield forwarded
                        done = True
                        message = response.message()
                        late = response.late
                    except BaseException as exc:
                        if span is not None:  # the observer's error must not replace `exc`
                            _while_stopping(span.end, None, exc)
                        raise
                    finally:
                        aclose = None if done else getattr(stream, "aclose", None)
                        if aclose is not None:  # a stream read to its end needs no closing
                            await close_stream(aclose)
                    session.count(message)  # paid for, even if the observer fails now
                    if span is not None:
                        span.end(message, None)
                    session.history.append(message)
                    self.turns += 1
                    if not message.tool_calls:
                        yield ResponseCompleted(message)
                        if message.stop_reason == PAUSE_TURN:
                            continue  # the provider paused a long turn: ask it to go on
                        if output is None:
                            yield self.finish(message.text, message.text)
                            return
                        problem = output.answer_text(message.text, stop_reason=message.stop_reason)
                        if problem is None:
                            yield self.finish(message.text, output.value)
                            return
                        session.history.append(UserMessage(problem))  # and ask again,
                        output.check_retries()  # if it may answer again
                        continue
                    batch = ToolBatch(message.tool_calls, self.turns)
                # -- its calls, from the response to their results in the history: decide,
                # pause or run, review, record. This is the one place a batch ends early:
                # every way out gives every call its one result before the history is
                # seen again.
                try:
                    if message is not None:  # a new response (a resumed one was decided)
                        for call_ready in late:
                            yield call_ready
                        yield ResponseCompleted(message)
                        if session.tool_choice not in ("auto", "none"):
                            # A forced call has been made; forcing it again would loop.
                            session.tool_choice = "auto"
                        await self.decide(batch, message.stop_reason)
                        if batch.held():
                            pending = self.pause(batch)
                            for finished in batch.report():
                                yield finished
                            for waiting in pending:
                                yield ApprovalRequested(waiting)
                            session.settled = True
                            yield RunPaused(pending, session.pause_id)
                            return
                    else:  # a resumed batch: in here, an observer's error still closes it
                        self.trace_denied(batch)
                    for finished in batch.report():  # the calls decided without running
                        yield finished
                    ready = [slot for slot in batch if slot.state is SlotState.READY]
                    unreviewed = deque(ready)
                    for number, wave in enumerate(_waves(ready)):
                        after, held = (
                            self.abandoned_before(wave, number) if session.abandoned else _FREE
                        )
                        if len(wave) == 1 and _runs_inline(wave[0], after, held, session.limits):
                            slot = wave[0]
                            slot.state = SlotState.RUNNING
                            yield ToolCallRunning(slot.run_call)
                            turn = self.own_turn
                            if after or turn.threads:  # (its threads are in session.abandoned)
                                turn.threads[:] = after
                            token = TURN.set(turn)  # the call's context copies it, now
                            try:
                                call = self.execution(batch, slot, timed=True)
                            finally:
                                TURN.reset(token)
                            batch.ran(slot, await call)
                            if turn.threads:
                                self.keep_abandoned((turn,))
                            if not session.post_hooks:
                                self.final(batch, slot)
                            else:
                                await self.review(batch, unreviewed)
                            for finished in batch.report():
                                yield finished
                        else:
                            together = self.run_together(batch, wave, unreviewed, after, held)
                            async with aclosing(together) as events:
                                async for event in events:
                                    yield event
                    results = batch.close(NOT_RUN, ToolCallOutcome.NOT_RUN)
                    session.history.extend(results)
                except _Aborted as stop:
                    reason = stop.decision.reason
                    why = f"the run was aborted ({reason})"
                    self.stop(batch, ABORTED, ToolCallOutcome.ABORTED, why, reason=reason)
                    for finished in batch.report():  # the results that came, then the rest
                        yield finished
                    raise WorkerAbortedError(reason) from None
                except Exception:
                    why = "the run stopped with an error"
                    self.stop(batch, NOT_RUN, ToolCallOutcome.NOT_RUN, why)
                    for finished in batch.report():
                        yield finished
                    raise
                except BaseException as exc:
                    if session.paused is batch:
                        raise  # the reader left a paused run: the calls still wait
                    if isinstance(exc, (anyio.get_cancelled_exc_class(), GeneratorExit)):
                        why = "the run was cancelled"
                        self.stop(batch, CANCELLED, ToolCallOutcome.NOT_RUN, why, False)
                    else:
                        why = "the run stopped with an error"
                        self.stop(batch, NOT_RUN, ToolCallOutcome.NOT_RUN, why)
                    raise
                batch = None
                if output is not None and output.done:  # it answered through the output tool
                    text = _last_text(session.history) if message is None else message.text
                    yield self.finish(text, output.value)
                    return
        except WorkerAbortedError as exc:
            self.error = exc
            session.settled = True
            yield RunAborted(exc.reason)
            raise
        except Exception as exc:
            self.error = exc
            session.settled = True
            yield RunFailed(exc)
            raise
        except BaseException as exc:
            if not isinstance(exc, (GeneratorExit, anyio.get_cancelled_exc_class())):
                self.error = exc  # a tool's KeyboardInterrupt or SystemExit
            raise
        finally:
            self.ended = True

    def request(self) -> LlmRequest:
        session = self.session
        request = LlmRequest(
            session.system_prompt,
            HistoryView(session.history),
            sorted_definitions(session.handle),
            session.tool_choice,
            session.allowed_tools,
        )
        return request if self.output is None else _asking_for(request, self.output)

    def finish(self, text: str, value: Any) -> RunFinished:
        session = self.session
        session.output = value
        session.has_output = True
        self.output_value = value
        self.result = WorkerResult.FINISHED
        session.settled = True
        return RunFinished(text, value)

    def check_budgets(self) -> None:
        session = self.session
        if self.turns >= session.max_turns:
            raise MaxTurnsExceededError(session.max_turns)
        limits, used = session.limits, session.run_tally
        if limits.max_requests is not None and used.requests >= limits.max_requests:
            raise UsageLimitExceededError("max_requests", limits.max_requests, used.requests)
        if limits.max_input_tokens is not None and used.input_tokens >= limits.max_input_tokens:
            raise UsageLimitExceededError(
                "max_input_tokens", limits.max_input_tokens, used.input_tokens
            )
        if limits.max_output_tokens is not None and used.output_tokens >= limits.max_output_tokens:
            raise UsageLimitExceededError(
                "max_output_tokens", limits.max_output_tokens, used.output_tokens
            )

    # -- one response's calls ------------------------------------------------------------

    def trace_denied(self, batch: ToolBatch) -> None:
        """The observer hears of a resumed batch's denied calls."""
        trace = self.trace
        if trace is None:
            return
        for slot in batch:
            if slot.outcome is ToolCallOutcome.DENIED:
                trace.decided(slot.call, ToolCallOutcome.DENIED.value, slot.reason)

    def pause(self, batch: ToolBatch) -> tuple[PendingCall, ...]:
        """Keep ``batch`` waiting for decisions: from here on, leaving keeps the pause."""
        held = batch.held()
        self.session.pause(batch)
        # A saved state keeps how many answers failed: a loaded run has no more retries left.
        batch.output_attempts = 0 if self.output is None else self.output.attempts
        self.result = WorkerResult.PAUSED
        return tuple(
            PendingCall(slot.run_call, slot.entry.meta, slot.reason or "")
            for slot in held
            if slot.entry is not None
        )

    async def decide(self, batch: ToolBatch, stop_reason: str | None) -> None:
        """Resolve each call and ask its pre-hooks and approval policy, in call order, once.
        (``stop_reason``, the response's, explains a structured answer cut short.)

        Settles the calls that do not run (unknown, not allowed, skipped, answered);
        raises ``_Aborted`` when a hook aborts.
        """
        session = self.session
        hooks = session.pre_hooks
        allowed = session.allowed_tools
        output = self.output
        output_tool = None if output is None or output.tool is None else output.tool.name
        # A bad answer may come before a valid one in the same response, which then stands:
        # the retries are checked once, at the response's last answer.
        last_answer = max(
            (slot.index for slot in batch if slot.call.name == output_tool), default=-1
        )
        decided_all = False  # True once no hook stopped the batch: its held calls wait
        try:
            for slot in batch:
                call = slot.call
                if call.name == output_tool:
                    # The final answer: the loop's own, not a tool of the application's.
                    assert output is not None
                    text, is_error = output.answer_call(call.input_json, stop_reason=stop_reason)
                    self.answer(batch, slot, text, is_error, ToolCallOutcome.RAN)
                    if slot.index == last_answer:
                        # Raises if none validated: each answer keeps its result, and no
                        # other call of the response runs.
                        output.check_retries()
                    continue
                entry = entry_of(session.handle, call.name)
                if entry is None:
                    text = str(ToolNotFoundError(call.name))
                    self.answer(batch, slot, text, True, ToolCallOutcome.NOT_FOUND)
                    continue
                slot.entry = entry
                if allowed is not None and call.name not in allowed:
                    text = call_text(NOT_ALLOWED, call.name, allowed=", ".join(allowed) or "none")
                    self.answer(batch, slot, text, True, ToolCallOutcome.NOT_ALLOWED)
                    continue
                policy = entry.requires_approval
                if not hooks and policy is False:
                    batch.ready(slot, call)
                    continue
                ctx = ToolCallContext(call, entry.meta, entry.tool, self.deps)
                decision = await self.in_run(run_pre_hooks(hooks, ctx)) if hooks else _CONTINUE
                if isinstance(decision, Continue):
                    if policy is not False and await self.in_run(needs_approval(policy, ctx)):
                        batch.hold(slot, _as_decided(ctx, call), APPROVAL_NEEDED)
                    else:
                        batch.ready(slot, _as_decided(ctx, call))
                elif isinstance(decision, Pause):
                    reason = valid_unicode(decision.reason or "paused by a hook")
                    batch.hold(slot, _as_decided(ctx, call), reason)
                elif isinstance(decision, Skip):
                    slot.reason = decision.reason
                    if decision.reason is None:
                        text = call_text(SKIPPED, call.name)
                    else:
                        text = call_text(SKIPPED_BECAUSE, call.name, reason=decision.reason)
                    self.answer(batch, slot, text, True, ToolCallOutcome.SKIPPED)
                elif isinstance(decision, SyntheticResult):
                    outcome = ToolCallOutcome.ANSWERED
                    self.answer(batch, slot, decision.content, decision.is_error, outcome)
                else:
                    raise _Aborted(decision, call)  # an abort stops everything: nothing runs
            decided_all = True
        finally:  # the observer hears of what was settled, even if a hook stopped the rest
            if self.trace is not None:
                self.trace_decisions(batch, decided_all)

    def trace_decisions(self, batch: ToolBatch, decided_all: bool) -> None:
        """The observer hears of the calls settled without running, and (``decided_all``)
        of those held. Unless ``decided_all``, a hook's abort or error is stopping the run:
        an error of the observer's then is logged, and does not replace it."""
        trace = self.trace
        assert trace is not None
        for slot in batch:
            if slot.outcome not in (None, ToolCallOutcome.RAN):  # not run as asked
                outcome = slot.outcome.value
            elif decided_all and slot.state is SlotState.HELD:
                outcome = "paused"
            else:
                continue
            if decided_all:
                trace.decided(slot.call, outcome, slot.reason)
            else:
                _while_stopping(trace.decided, slot.call, outcome, slot.reason)

    @staticmethod
    def answer(
        batch: ToolBatch, slot: CallSlot, text: str, is_error: bool, outcome: ToolCallOutcome
    ) -> None:
        batch.finalize(slot, ToolResult(slot.call.id, text, is_error), outcome)

    def in_run(self, step: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """``step`` (the application's hooks) inside the run's span, if the observer makes
        one current (``RunSpan.activate()``): what the hooks trace belongs to the run."""
        activate = self.activate_run
        return step if activate is None else _activated(step, activate)

    # -- running and reviewing ---------------------------------------------------------

    def execution(
        self, batch: ToolBatch, slot: CallSlot, *, timed: bool, after: Turn | None = None
    ) -> Coroutine[Any, Any, ToolResult]:
        """What runs one call; ``timed=False`` when the caller holds its timeout itself.
        With ``after``, the call first waits until no thread keeps that turn (in its span:
        a call that times out waiting is traced as any other).

        The usual call is ``execute_call`` itself, in a context of its own, with no
        coroutine of the loop's around it; a ``ToolContext``, a wait and the observer's
        span each add one.
        """
        entry = slot.entry
        assert entry is not None
        if entry.execute_with_context is None:
            call = execute_call(entry, slot.run_call, self.session.limits, None, timed=timed)
        else:
            call = self.with_context(slot, timed)
        if after is not None:
            call = _after_turn(after, entry.meta.name, call)
        return isolated(call if self.trace is None else self.traced(batch, slot, call))

    async def traced(
        self, batch: ToolBatch, slot: CallSlot, call: Coroutine[Any, Any, ToolResult]
    ) -> ToolResult:
        """``call`` in the observer's span of it."""
        trace, entry = self.trace, slot.entry
        assert trace is not None
        assert entry is not None
        try:
            span = slot.span = trace.tool_call(slot.run_call, entry.meta)
            activation = span.activate()
        except BaseException:
            call.close()  # it never ran
            raise
        try:
            if activation is None:
                result = await call
            else:
                with _Observed(activation):
                    result = await call
        except anyio.get_cancelled_exc_class():
            raise  # a timeout (the runner's) or a stop: whoever knows which ends the span
        except BaseException as exc:
            call.close()  # if the activation's __enter__ raised, the call never ran
            self.end_span_stopping(slot, exc)  # the observer's error must not replace `exc`
            raise
        try:
            self.end_span(slot, result, None)
        except BaseException:
            batch.ran(slot, result)  # the call ran: the observer's error ends the run, not that
            raise
        return result

    async def with_context(self, slot: CallSlot, timed: bool) -> ToolResult:
        """Run a call of a tool that takes a ``ToolContext``: it may report progress."""
        entry = slot.entry
        assert entry is not None
        reports = self.progress_reports()
        call_id = slot.call.id
        # Calls run before the next request: the conversation's count is this response's number.
        key = f"{self.session.tally.requests}/{call_id}"
        context = ToolContext(
            call_id=call_id,
            tool_name=entry.meta.name,
            deps=self.deps,
            sink=reports.start(call_id),
            idempotency_key=key,
        )
        try:
            return await execute_call(
                entry, slot.run_call, self.session.limits, context, timed=timed
            )
        finally:
            reports.finish(call_id)  # later reports (an abandoned thread's) go nowhere

    @staticmethod
    def end_span(slot: CallSlot, result: ToolResult | None, error: BaseException | None) -> None:
        span, slot.span = slot.span, None
        if span is not None:
            span.end(result, error)

    @staticmethod
    def end_span_stopping(slot: CallSlot, error: BaseException | None) -> None:
        """``end_span`` with no result, for a run already stopping: an error of the
        observer's is logged (``_while_stopping``), never raised."""
        span, slot.span = slot.span, None
        if span is not None:
            _while_stopping(span.end, None, error)

    @staticmethod
    def final(batch: ToolBatch, slot: CallSlot) -> None:
        """Without post-hooks, nothing reviews a result: it is final the moment it comes."""
        result = slot.result
        assert result is not None
        batch.finalize(slot, result, ToolCallOutcome.RAN)

    async def review(self, batch: ToolBatch, unreviewed: deque[CallSlot]) -> None:
        """The post-hooks see the results that came, in call order: finalize those whose
        earlier calls were reviewed. Raises ``_Aborted``."""
        hooks = self.session.post_hooks
        while unreviewed and unreviewed[0].state is SlotState.RAN:
            slot = unreviewed.popleft()
            entry = slot.entry
            assert slot.result is not None
            assert entry is not None
            ctx = PostToolCallContext(slot.run_call, slot.result, entry.meta, entry.tool, self.deps)
            decision = await self.in_run(run_post_hooks(hooks, ctx))
            batch.finalize(slot, ctx.result, ToolCallOutcome.RAN)
            if isinstance(decision, Abort):
                raise _Aborted(decision, slot.call)

    def abandoned_before(
        self, wave: list[CallSlot], number: int
    ) -> tuple[Sequence[AbandonedThread], Sequence[AbandonedThread]]:
        """The threads abandoned by earlier calls of the worker that still run, as ``wave``
        (the ``number``-th of its response) must wait for them: ``(after, held)``.

        ``after``: every one of them, for a sequential call and the calls after it in its
        response, which start only once all have ended. ``held``: else, each keeps a slot
        of ``max_concurrent_calls`` (a call then takes a free one, or waits for one).
        """
        abandoned = self.session.abandoned
        if not abandoned:
            return (), ()
        abandoned[:] = [thread for thread in abandoned if thread.running]
        entry = wave[0].entry
        assert entry is not None
        if number == 0 and not entry.sequential:
            return (), tuple(abandoned)
        return tuple(abandoned), ()

    def keep_abandoned(self, turns: Iterable[Turn]) -> None:
        """Keep the threads that still keep the ``turns`` of a wave, for the calls after it."""
        kept = [thread for turn in turns if turn.kept() for thread in turn.threads]
        if kept:  # threads of earlier waves are in them too: each kept once
            session = self.session
            session.abandoned = list(dict.fromkeys([*session.abandoned, *kept]))

    async def run_together(
        self,
        batch: ToolBatch,
        wave: list[CallSlot],
        unreviewed: deque[CallSlot],
        after: Sequence[AbandonedThread],
        held: Sequence[AbandonedThread],
    ) -> AsyncGenerator[RunEvent, None]:
        """Run ``wave``'s calls as tasks, at most ``max_concurrent_calls`` at a time, once
        the threads of earlier calls in ``after`` have ended (each call waits for them);
        the slots threads in ``held`` keep are taken once each has ended."""
        send, receive = self.open_channel()
        post_hooks = self.session.post_hooks
        most = self.session.limits.max_concurrent_calls
        limit = min(most, len(wave))
        # The first calls start at once: they are announced here. The runners share the
        # wave's queue, so calls start in call order whichever runner the backend runs first.
        # A call's progress is given after its ToolCallRunning: a report of a call whose
        # start notice is still in the channel waits in `early` until that notice is read.
        announced: set[str] = set()
        early: dict[str, Report] = {}
        for slot in wave[:limit]:
            slot.state = SlotState.RUNNING
            announced.add(slot.call.id)
            yield ToolCallRunning(slot.run_call)
        self.stopping = False
        calls = _Calls(batch, wave, after, _slots_kept(held, most, limit))
        await self.start_runners(calls, limit, send)
        outstanding = len(wave)
        while outstanding:
            try:  # what already came needs no trip through the event loop
                message: tuple[int, object] = receive.receive_nowait()
            except anyio.WouldBlock:
                message = await receive.receive()
            index, what = message
            if what is _PROGRESS:
                for event in self.drain_progress(announced, early):
                    yield event
                continue
            slot = batch.slots[index]
            if what is _STARTED:
                announced.add(slot.call.id)
                yield ToolCallRunning(slot.run_call)
                report = early.pop(slot.call.id, None)
                if report is not None:
                    yield ToolCallProgress(*report)
                continue
            outstanding -= 1
            if self.progress is not None:  # what the call reported before its result
                for event in self.drain_progress(announced, early):
                    yield event
            if isinstance(what, BaseException):
                raise what  # KeyboardInterrupt, SystemExit...: the run stops, the error goes on
            assert isinstance(what, ToolResult)
            batch.ran(slot, what)
            if not post_hooks:
                self.final(batch, slot)
            else:
                await self.review(batch, unreviewed)
            for finished in batch.report():
                yield finished
        self.keep_abandoned(calls.turns)

    def drain_progress(
        self, announced: set[str], early: dict[str, Report]
    ) -> list[ToolCallProgress]:
        """The latest reports of the calls ``announced`` running; the others' wait in
        ``early`` (the latest of each) until their ToolCallRunning is given."""
        assert self.progress is not None
        events: list[ToolCallProgress] = []
        for report in self.progress.drain():
            if report[0] in announced:
                events.append(ToolCallProgress(*report))
            else:
                early[report[0]] = report
        return events

    async def start_runners(
        self, calls: _Calls, limit: int, send: MemoryObjectSendStream[Any]
    ) -> None:
        """Start runner tasks until each waiting call of ``calls`` has one, or ``limit`` run.

        A runner takes the next call the moment its call ends, so calls that never
        wait (a task costs more to start than such a call costs to run) run one after
        another in one task. Another runner starts only when every runner is waiting
        in a call: no call waits for one that is waiting. A runner not yet begun will
        take the next call: the loop lets the runners run (a checkpoint) until they do,
        unless the run is being cancelled (a task may then never begin).
        """
        group = self.group
        assert group is not None
        while len(calls.queue) > calls.starting and calls.runners < limit:
            if calls.starting:
                if group.cancel_scope.cancel_called:
                    return  # nothing more runs; reading the results raises the cancellation
                await anyio.lowlevel.checkpoint()
                continue
            self.runners += 1
            calls.runners += 1
            calls.starting += 1
            group.start_soon(self.runner, calls, send, calls.kept[calls.runners - 1])

    async def runner(
        self, calls: _Calls, send: MemoryObjectSendStream[Any], kept: Sequence[AbandonedThread]
    ) -> None:
        calls.starting -= 1
        # A slot of max_concurrent_calls: a thread its call (or an earlier call's, ``kept``)
        # abandoned keeps it until the thread ends, and the runner's next call waits for
        # that (inside its timeout).
        turn = Turn([*calls.after, *kept])
        calls.turns.append(turn)
        calls.live.add(turn)
        TURN.set(turn)  # in this task's own context, which its calls' contexts copy
        try:
            await self.run_calls(calls, send, turn)
        finally:
            calls.live.discard(turn)
            self.runners -= 1

    async def run_calls(self, calls: _Calls, send: MemoryObjectSendStream[Any], turn: Turn) -> None:
        """Run the calls of ``calls.queue`` until none is left or the batch stops."""
        queue, batch = calls.queue, calls.batch
        timeout = self.session.limits.tool_timeout
        while queue and not self.stopping:
            if turn.threads:
                await self.leave_calls(calls, turn)
                if not queue or self.stopping:
                    return
            # One scope for the calls this runner runs in a row (a scope costs more than a
            # call that never waits): a call that waits sets its deadline, its timeout.
            # Cancelling the scope is how the loop stops the batch; a scope cancelled (by
            # a timeout) ends, and the next call gets a new one.
            slot: CallSlot | None = None
            with anyio.CancelScope() as scope:
                self.scopes.add(scope)
                try:
                    while queue and not self.stopping and not scope.cancel_called:
                        slot = queue.popleft()
                        if slot.state is not SlotState.RUNNING:  # it waited for a free runner
                            slot.state = SlotState.RUNNING
                            _send(send, (slot.index, _STARTED))
                        entry = slot.entry
                        assert entry is not None
                        # A call waits for threads that keep its turn; a tool that waits
                        # its turn itself does so in its call.
                        waits = turn if turn.threads and not entry.waits_its_turn else None
                        call = self.execution(batch, slot, timed=False, after=waits)
                        try:
                            if timeout is None:
                                result = await call
                            else:
                                result = await awaited_in(scope, call, timeout)
                        except anyio.get_cancelled_exc_class():
                            raise
                        except BaseException as exc:
                            # execute_call turned a tool's Exceptions into results: this is a
                            # KeyboardInterrupt or SystemExit (kept, to raise unchanged), or
                            # the observer's error (the run's error, as an inline call's is).
                            if self.escaped is None and not isinstance(exc, Exception):
                                self.escaped = exc
                            _send(send, (slot.index, exc))
                            return
                        _send(send, (slot.index, result))
                        if turn.threads:  # its thread runs on, abandoned: see leave_calls
                            break
                finally:
                    self.scopes.discard(scope)
            if scope.cancelled_caught:  # it ended the call of `slot`
                if self.stopping:
                    return
                assert timeout is not None
                assert slot is not None
                result = timed_out(slot.run_call, timeout)
                try:
                    self.end_span(slot, result, None)
                except Exception as exc:  # the observer's: the run's error, not the group's
                    batch.ran(slot, result)
                    _send(send, (slot.index, exc))
                    return
                _send(send, (slot.index, result))

    async def leave_calls(self, calls: _Calls, turn: Turn) -> None:
        """While threads keep ``turn`` (a runner's slot) and another runner's slot is free,
        leave the wave's calls to that runner: a call taken now would only wait. Once every
        slot is kept, a runner takes the next call anyway, which waits inside its timeout."""
        with anyio.CancelScope() as scope:  # the loop stops the batch by cancelling it
            self.scopes.add(scope)
            try:
                while calls.queue and not self.stopping and turn.kept():
                    if all(other.kept() for other in calls.live if other is not turn):
                        return
                    await anyio.sleep(RECHECK_SECONDS)
            finally:
                self.scopes.discard(scope)

    def stop(
        self,
        batch: ToolBatch,
        template: str,
        outcome: ToolCallOutcome,
        why: str,
        stopped: bool = True,
        **fields: str,
    ) -> None:
        """End the batch early: withheld and closing results into the history (and
        ``batch.report()``).

        ``why`` the batch stopped is what a result the post-hooks did not review is
        withheld for, and (if ``stopped``) what a call still running reads. Results
        that arrived but were not read yet count: those calls ran.
        """
        self.stopping = True
        for scope in list(self.scopes):
            scope.cancel()
        self.collect_arrived(batch)
        trace = self.trace
        unstarted = () if trace is None else [_never_started(slot) for slot in batch]
        running = [slot for slot in batch if slot.span is not None]
        for slot in batch:
            if slot.state is SlotState.RAN and slot.result is not None:
                if self.session.post_hooks:
                    text = call_text(WITHHELD, slot.call.name, why=why)
                    result = ToolResult(slot.call.id, text, True)
                    batch.finalize(slot, result, ToolCallOutcome.WITHHELD)
                else:  # nothing would have reviewed it: it is final as it is
                    batch.finalize(slot, slot.result, ToolCallOutcome.RAN)
        results = batch.close(template, outcome, why=why if stopped else None, **fields)
        self.session.history.extend(results)
        # Only now the observer: every call has its result in the history whatever it
        # does. A call still running ends, cancelled, with the batch; then the observer
        # hears of each call that never started, and of each result withheld.
        for slot in running:
            self.end_span_stopping(slot, None)
        if trace is not None:
            withheld = ToolCallOutcome.WITHHELD
            reason = fields.get("reason")
            for slot, never_ran in zip(batch, unstarted, strict=True):
                if slot.outcome is not None and (never_ran or slot.outcome is withheld):
                    _while_stopping(trace.decided, slot.call, slot.outcome.value, reason)

    def collect_arrived(self, batch: ToolBatch) -> None:
        """Take in the results runners sent that the loop has not read."""
        if self.channel is None:
            return
        receive = self.channel[1]
        while True:
            try:
                message: tuple[int, object] = receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return
            index, what = message
            if isinstance(what, ToolResult) and 0 <= index < len(batch.slots):
                batch.ran(batch.slots[index], what)

    # -- plumbing -----------------------------------------------------------------------

    def open_channel(self) -> tuple[MemoryObjectSendStream[Any], MemoryObjectReceiveStream[Any]]:
        if self.channel is None:
            # Each running call sends at most a start notice and one result; progress
            # reports are coalesced. So the buffer holds at most a few messages per call.
            self.channel = anyio.create_memory_object_stream[Any](math.inf)
        return self.channel

    def progress_reports(self) -> ProgressReports:
        if self.progress is None:
            send, _ = self.open_channel()
            self.progress = ProgressReports(lambda: _send(send, (-1, _PROGRESS)))
        return self.progress


class _Aborted(Exception):
    """A hook returned ``Abort`` about ``call``."""

    def __init__(self, decision: Abort, call: ToolCall) -> None:
        super().__init__(decision.reason)
        self.decision = decision
        self.call = call


class _Calls:
    """One wave's calls no runner took yet, and its runners: started, and not begun yet.

    Counted per wave: a runner of an earlier wave, not begun yet, takes none of these.
    ``after``: the threads of earlier calls its calls wait for; ``kept``: by runner, the
    threads of earlier calls that keep its slot; ``turns``: its runners' (``live``: of
    those still taking calls).
    """

    __slots__ = ("after", "batch", "kept", "live", "queue", "runners", "starting", "turns")

    def __init__(
        self,
        batch: ToolBatch,
        wave: list[CallSlot],
        after: Sequence[AbandonedThread],
        kept: Sequence[Sequence[AbandonedThread]],
    ) -> None:
        self.batch = batch
        self.queue = deque(wave)
        self.runners = 0
        self.starting = 0
        self.after = after
        self.kept = kept
        self.turns: list[Turn] = []
        self.live: set[Turn] = set()  # of the runners still taking calls


async def _after_turn(turn: Turn, name: str, call: Coroutine[Any, Any, ToolResult]) -> ToolResult:
    """``call`` (of tool ``name``) once no thread keeps ``turn``."""
    try:
        await turn.wait(name)
    except BaseException:
        call.close()  # it never ran
        raise
    return await call


def _send(send: MemoryObjectSendStream[Any], message: tuple[int, object]) -> None:
    # Not contextlib.suppress: a context manager per message costs more than the send.
    try:  # noqa: SIM105
        send.send_nowait(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the run is over: nobody reads it


def _while_stopping(observe: Callable[..., object], *args: object) -> None:
    """Tell the observer (``observe(*args)``) something while the run is already stopping
    for another reason (an error, an abort, a cancellation): an exception of the
    observer's is logged, and the run stops for its own reason, every span ended."""
    try:
        observe(*args)
    except Exception:
        name = getattr(observe, "__qualname__", repr(observe))
        logger.exception(
            "The instrumentation's %s failed while the run was stopping; the run stops "
            "for its own reason",
            name,
        )


class _Observed:
    """An observer's ``activation`` around a step of the run. If the step raised (the
    run is stopping), an error of the activation's ``__exit__`` is logged and the step's
    error goes on; it never swallows one."""

    __slots__ = ("activation",)

    def __init__(self, activation: AbstractContextManager[None]) -> None:
        self.activation = activation

    def __enter__(self) -> None:
        self.activation.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or isinstance(exc, StopAsyncIteration):  # (the model's stream ended)
            self.activation.__exit__(None, None, None)
        else:
            _while_stopping(self.activation.__exit__, exc_type, exc, traceback)


async def _activated(
    step: Coroutine[Any, Any, T], activate: Callable[[], AbstractContextManager[None] | None]
) -> T:
    try:
        activation = activate()
    except BaseException:
        step.close()  # it never ran
        raise
    if activation is None:
        return await step
    try:
        with _Observed(activation):
            return await step
    finally:
        step.close()  # if the activation's __enter__ raised, the step never ran


def _never_started(slot: CallSlot) -> bool:
    # Announced running but not begun (the reader left at its ToolCallRunning, or the
    # batch stopped before a runner took it): no span, no result.
    if slot.state is SlotState.RUNNING:
        return slot.span is None and slot.result is None
    return slot.state in (SlotState.UNDECIDED, SlotState.READY, SlotState.HELD)


def _as_decided(ctx: ToolCallContext, call: ToolCall) -> ToolCall:
    """The call as the hooks let it through. Arguments a hook gave are kept as valid
    Unicode, as a saved state keeps them: the call runs the same resumed in this process
    or after ``load_state()``."""
    return call if ctx.call is call else valid_message(ctx.call)


def _runs_inline(
    slot: CallSlot,
    after: Sequence[AbandonedThread],
    held: Sequence[AbandonedThread],
    limits: Limits,
) -> bool:
    # A call alone runs in the loop's own task, unless it may report progress: then
    # the loop must be free to pass the reports on while it runs. Nor if it must wait for
    # threads of earlier calls and does not wait itself, or for a slot that earlier calls'
    # threads keep: a runner waits within its timeout.
    entry = slot.entry
    return (
        entry is not None
        and entry.execute_with_context is None
        and (not after or entry.waits_its_turn)
        and len(held) < limits.max_concurrent_calls
    )


def _slots_kept(
    held: Sequence[AbandonedThread], most: int, runners: int
) -> list[Sequence[AbandonedThread]]:
    """By runner (of ``runners``, in the order they start), the threads of ``held`` that
    keep its slot of the ``most`` a worker has. Slot ``j`` is kept by ``held[j]`` (and by
    ``held[j + most]``..., should more threads run than there are slots); the runners take
    the free slots first."""
    if not held:
        return [()] * runners
    free = max(0, most - len(held))
    return [() if number < free else held[number - free :: most] for number in range(runners)]


def _waves(ready: list[CallSlot]) -> list[list[CallSlot]]:
    """The ready calls in the groups that run together: a ``sequential`` tool's call runs alone."""
    if len(ready) == 1:
        return [ready]
    waves: list[list[CallSlot]] = []
    wave: list[CallSlot] = []
    for slot in ready:
        assert slot.entry is not None
        if slot.entry.sequential:
            if wave:
                waves.append(wave)
                wave = []
            waves.append([slot])
        else:
            wave.append(slot)
    if wave:
        waves.append(wave)
    return waves


def _asking_for(request: LlmRequest, output: RunOutput) -> LlmRequest:
    """``request`` asking for the run's structured answer: natively, or through its tool."""
    tool = output.tool
    if tool is None:
        return dataclasses.replace(request, output_format=output.format)
    allowed = request.allowed_tools
    return dataclasses.replace(
        request,
        tools=(*request.tools, tool),
        # Only a tool call can answer; a forced tool, or "none", stays as asked.
        tool_choice="required" if request.tool_choice == "auto" else request.tool_choice,
        allowed_tools=None if allowed is None else tuple(sorted({*allowed, tool.name})),
    )


_NOTHING_SPENT = RunUsage()
_FREE: tuple[tuple[()], tuple[()]] = ((), ())  # no thread abandoned earlier: nothing to wait for


def _last_text(history: Sequence[object]) -> str:
    for message in reversed(history):
        if isinstance(message, AssistantMessage):
            return message.text
    return ""
