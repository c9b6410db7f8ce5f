"""``ConversationWorkflow``: one run of a conversation as a Temporal workflow.

A subclass names its ``DurableWorker`` and marks ``run`` (Temporal wants the
run method on the registered class itself)::

    @workflow.defn
    class TrackerWorkflow(ConversationWorkflow):
        durable = tracker

        @workflow.run
        async def run(self, start: ConversationStart) -> ConversationOutcome:
            return await super().run(start)

``run`` drives the same turn loop a process does (``Worker.run_stream``) on the
``DurableWorker``'s activity-backed worker, and records each event. When the run
pauses for approvals it waits (for as long as it takes) for the ``decide``
update, then resumes. The workflow's state is the worker's: the queries read
``pending``, the ``history``, the run ``state`` and the ``events``.

A run is held to the definition it started with (``DurableWorker.definition()``,
recorded in its history at its first workflow task): a worker with another
fails the workflow task with ``DefinitionChangedError``, which Temporal retries
until a worker with the run's definition takes it (see ``_definition``).

A run that ends with an error (an abort, a budget, a provider failing past its
retry policy...) fails the workflow with an ``ApplicationError`` whose ``type``
is the error's class name, whose message is its text (at most ``MAX_FAILURE_MESSAGE``
characters, valid Unicode: Temporal must be able to send it) and whose first
detail is the run state's JSON, so the conversation can go on in a new workflow
(``ConversationStart(state=...)``).
A state too large for one payload (``max_payload_bytes``) is not put in the
workflow's result or failure (Temporal would refuse it, and retry the workflow
task for ever): the ``state`` query still gives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from .._approvals import Decision, Deny, PendingCall
from .._events import ApprovalRequested, RunEvent, RunFinished, RunPaused
from .._exceptions import WorkerError, WorkerStateError
from .._run import RunStream
from .._session import WorkerResult
from .._state import RunState
from .._worker import Worker
from ._definition import check_definition
from ._durable import DurableWorker
from ._payloads import MAX_FAILURE_TEXT, bounded_text, payload_size
from ._wire import (
    dump_decisions,
    dump_event,
    dump_history,
    dump_pending_call,
    dump_tool,
    load_decisions,
    load_pause_id,
)

__all__ = [
    "EVENTS_PER_PAGE",
    "MAX_FAILURE_MESSAGE",
    "ConversationOutcome",
    "ConversationStart",
    "ConversationWorkflow",
]

_STATE_LEFT_OUT = (
    " (the run state, {size} bytes, is over max_payload_bytes and is not attached: read "
    "it with the workflow's state query, Conversation.state())"
)

EVENTS_PER_PAGE = 500
"""The most events one ``events`` query answers with (a page: ask again from ``next``);
fewer when they would not fit in one payload (``max_payload_bytes``)."""

_ENVELOPE_BYTES = 200  # a query answer's own keys, around what it carries

MAX_FAILURE_MESSAGE = MAX_FAILURE_TEXT + 1_000
"""The most characters of the message of the workflow's failure, or of a refused start
or decision (``bounded_text``). An error's text from an activity's failure (a provider's
message) is at most ``MAX_FAILURE_TEXT`` already: it goes whole, with the words around it."""


@dataclass(frozen=True)
class ConversationStart:
    """The workflow's input: what the run starts from.

    - ``user_input``: the message of a new run (``run()``); ``None`` continues
      ``state`` instead: a paused state waits for decisions (``resume()``), any
      other asks the model again (``retry()``).
    - ``state``: a ``RunState.to_json()`` to continue (an earlier workflow's
      ``ConversationOutcome.state``, or one saved by a process).
    - ``deps``: the run's deps as JSON data (``DurableWorker.dump_deps(deps)``).
    - ``allowed_tools``, ``tool_choice``: as ``run()`` takes them.
    - ``definition``: the ``DurableWorker.definition()`` of the code that started the
      run (``Conversation.start`` sets it). The run is held to the definition its
      first workflow task ran with (recorded in its history); this one only lets
      the error say what changed when a later worker's differs.
    """

    user_input: str | None = None
    state: str | None = None
    deps: Any = None
    allowed_tools: list[str] | None = None
    tool_choice: str = "auto"
    definition: dict[str, Any] | None = None


@dataclass(frozen=True)
class ConversationOutcome:
    """The workflow's result: the model's answer and the run state to continue from.

    ``output``: with the ``DurableWorker``'s ``output_type``, the structured answer as
    JSON data (``DurableWorker.load_output`` reads it back); ``None`` without one, and
    for ``str`` (the answer is ``text``).
    ``state`` is ``None`` when it is over ``max_payload_bytes`` (the ``state`` query
    gives it; ``Conversation.result()`` asks it).
    """

    text: str | None
    state: str | None
    output: Any = None


class ConversationWorkflow:
    """Base class of a workflow that runs one conversation run of ``durable``."""

    durable: ClassVar[DurableWorker[Any]]
    """The ``DurableWorker`` this workflow runs; set it on the subclass."""

    def __init__(self) -> None:
        self._worker: Worker[Any] | None = None
        self._deps: Any = None
        self._status = "starting"
        # What the decide update gave, and the pause it named (None: the current one).
        self._decisions: tuple[Mapping[str, Decision] | Decision, str | None] | None = None
        self._events: list[dict[str, Any]] = []
        self._rest: str | None = None  # the run state where the run last stood still
        self._rests = 0  # how often it changed: the parts of one state_part read agree
        self._cuts: tuple[int, list[int]] = (-1, [])  # where _rest's parts begin, per _rests

    async def run(self, start: ConversationStart) -> ConversationOutcome:
        """Run the conversation from ``start`` to the model's answer (decorate the override)."""
        _share_anyio_backend()
        try:
            stream = self._begin(start)
        except (WorkerError, TypeError, ValueError) as exc:
            # A start that can never run (a bad state, deps of the wrong type) fails the
            # workflow; raised as it is, it would fail every workflow task, forever.
            self._status = "failed"
            raise _refusal(exc) from None
        worker = self._worker
        assert worker is not None
        try:
            while True:
                if stream is not None:
                    self._status = "running"
                    async with stream:
                        async for event in stream:
                            self._record(event)
                    self._rest_at(worker)
                    if stream.result is WorkerResult.FINISHED:
                        break
                self._status = "paused"
                decisions, pause_id = await self._decisions_given()
                stream = worker.resume_stream(decisions, pause_id=pause_id, deps=self._deps)
        except asyncio.CancelledError:  # the workflow is cancelled: a UI polling must see it
            self._status = "cancelled"
            self._rest_at(worker)  # the stream has closed: calls have results
            self._events.append({"seq": len(self._events), "type": "run_cancelled"})
            raise
        except WorkerError as exc:
            self._status = "failed"
            self._rest_at(worker)
            # Bounded, and raised from None: the cause would carry the whole text again.
            message = bounded_text(str(exc), MAX_FAILURE_MESSAGE)
            state: str | None = self._rest
            if not self._fits(message, state):
                message += _STATE_LEFT_OUT.format(size=payload_size(state))
                state = None
            raise ApplicationError(
                message, state, type=type(exc).__name__, non_retryable=True
            ) from None
        self._status = "finished"
        durable = type(self).durable
        output = None
        if durable.output_type not in (None, str):  # a str answer is the text: not twice
            output = durable.dump_output(worker.output)
        text, state = worker.final_text, self._rest
        return ConversationOutcome(text, state if self._fits(text, state, output) else None, output)

    def _rest_at(self, worker: Worker[Any]) -> None:
        self._rest = worker.state.to_json()
        self._rests += 1

    def _fits(self, *values: object) -> bool:
        """Whether ``values`` fit in one payload of the workflow's result or failure."""
        return payload_size(list(values)) <= type(self).durable.max_payload_bytes

    async def _decisions_given(self) -> tuple[Mapping[str, Decision] | Decision, str | None]:
        """The decisions the ``decide`` update gives, and the pause id it named; past the
        approval timeout, a denial."""
        timeout = type(self).durable.approval_timeout
        try:
            await workflow.wait_condition(lambda: self._decisions is not None, timeout=timeout)
        except asyncio.TimeoutError:
            self._status = "running"  # a late decide is refused: nothing waits any more
            assert timeout is not None
            denial = Deny(f"no decision came within the approval timeout ({_duration(timeout)})")
            self._events.append(
                {"seq": len(self._events), "type": "decided", "decisions": dump_decisions(denial)}
            )
            return denial, None
        decisions, self._decisions = self._decisions, None
        assert decisions is not None
        return decisions

    def _begin(self, start: ConversationStart) -> RunStream[Any] | None:
        """The worker, loaded with ``start``'s state, and the stream the run begins with.

        Raises ``DefinitionChangedError`` (the workflow task fails: Temporal retries it)
        when the definition is not the one the run started with.
        """
        durable = type(self).durable
        check_definition(durable.name, durable.definition(), start.definition)
        worker = durable.workflow_worker()
        if start.state is not None:
            worker.load_state(RunState.from_json(start.state))
        deps = durable.load_deps(start.deps)
        self._worker, self._deps = worker, deps
        self._rest_at(worker)
        if start.user_input is not None:
            return worker.run_stream(
                start.user_input,
                deps=deps,
                allowed_tools=start.allowed_tools,
                tool_choice=start.tool_choice,
            )
        if worker.is_paused:  # decisions first; the feed shows the pause as a run's does
            for pending in worker.pending:
                self._record(ApprovalRequested(pending))
            self._record(RunPaused(worker.pending, worker.pause_id))
            return None
        return worker.retry_stream(deps=deps)

    def _record(self, event: RunEvent) -> None:
        assert self._worker is not None
        data = dump_event(event, pause_id=self._worker.pause_id)
        if data is None:
            return
        durable = type(self).durable
        if isinstance(event, RunFinished) and durable.output_type not in (None, str):
            data["output"] = durable.dump_output(event.output)  # as the outcome carries it
        self._events.append({"seq": len(self._events), **data})

    # -- decisions -------------------------------------------------------------------

    @workflow.update
    async def decide(self, decisions: dict[str, Any]) -> list[str]:
        """Decide the pending calls (``{"calls": {id: decision}}`` or ``{"all": decision}``,
        and maybe ``"pause_id"``: the pause they are for).

        Checked by the validator with the rules of ``resume()`` (a ``pause_id`` that is
        not the current pause's is refused); a rejected update leaves no trace in the
        workflow's history. Returns the decided call ids.
        """
        parsed, pause_id = self._checked(decisions)
        assert self._worker is not None
        decided = [pending.call.id for pending in self._worker.pending]
        self._decisions = parsed, pause_id
        # As parsed: what the run goes on with, not whatever else the update carried.
        recorded = dump_decisions(parsed, pause_id)
        self._events.append({"seq": len(self._events), "type": "decided", "decisions": recorded})
        return decided

    @decide.validator
    def _validate_decisions(self, decisions: dict[str, Any]) -> None:
        self._checked(decisions)

    def _checked(
        self, decisions: dict[str, Any]
    ) -> tuple[Mapping[str, Decision] | Decision, str | None]:
        worker = self._worker
        try:
            if worker is None or self._status != "paused":
                raise _not_paused(self._status)
            if self._decisions is not None:
                raise WorkerStateError("The pending calls are decided already; the run resumes")
            parsed, pause_id = load_decisions(decisions), load_pause_id(decisions)
            # The very checks resume() makes (a stream refuses bad decisions when it is
            # made, before it runs anything), so a rejected update changes nothing.
            worker.resume_stream(parsed, pause_id=pause_id, deps=self._deps)
        except (WorkerError, TypeError, ValueError) as exc:
            raise _refusal(exc) from None
        return parsed, pause_id

    # -- queries ---------------------------------------------------------------------

    @workflow.query
    def status(self) -> str:
        """``"starting"``, ``"running"``, ``"paused"``, ``"finished"``, ``"failed"`` or
        ``"cancelled"``."""
        return self._status

    @workflow.query
    def pending(self, after: int = 0) -> dict[str, Any]:
        """The calls waiting for a decision, in call order (as ``worker.pending``), from
        call ``after`` on: ``{"calls": [...], "tools": {...}, "next": n, "total": t,
        "pause_id": p}``, as many as fit in one payload (``max_payload_bytes``).

        Each call names its tool, whose meta the page's ``tools`` has once. Ask again
        from ``next`` until it is ``total``, with the same ``pause_id`` (another one:
        the run has moved on, read from 0 again; ``Conversation.pending()`` does).
        """
        worker = self._worker
        if worker is None:
            return {"calls": [], "tools": {}, "next": 0, "total": 0, "pause_id": None}
        return _pending_page(
            worker.pending, worker.pause_id, after, type(self).durable.max_payload_bytes
        )

    @workflow.query
    def history(self) -> list[dict[str, Any]]:
        """The conversation so far, each message as in the run state's JSON."""
        worker = self._worker
        return [] if worker is None else dump_history(worker.history)

    @workflow.query
    def state(self) -> str | None:
        """The run state (``RunState.to_json()``) where the run last stood still.

        That is the start, a pause, or the end; while calls run, the state before them.
        """
        return self._rest

    @workflow.query
    def events(self, after: int) -> dict[str, Any]:
        """The feed for a UI: ``{"events": [...], "next": n, "status": ...}``, from ``after``.

        Poll with the ``next`` of the previous answer. Each event has its ``seq``
        (from 0) and ``type``: ``response_started``, ``text``, ``reasoning``,
        ``tool_call_ready``, ``response_completed``, ``approval_requested``,
        ``decided``, ``tool_call_running``, ``tool_call_finished``, and the run's
        end, ``run_finished``, ``run_paused``, ``run_aborted``, ``run_failed`` or
        ``run_cancelled`` (the workflow was cancelled). ``approval_requested`` and
        ``run_paused`` have the ``pause_id`` a ``decide`` may name.
        """
        start = max(0, after)
        page: list[dict[str, Any]] = []
        size, limit = _ENVELOPE_BYTES, type(self).durable.max_payload_bytes
        for event in self._events[start : start + EVENTS_PER_PAGE]:
            event_size = payload_size(event)
            if event_size + _ENVELOPE_BYTES > limit:  # never in one answer: said, not sent
                event = _left_out(event, event_size)
                event_size = payload_size(event)
            size += event_size + 1
            if page and size > limit:  # a page is one payload: the rest in the next one
                break
            page.append(event)
        return {"events": page, "next": start + len(page), "status": self._status}

    @workflow.query
    def state_part(self, index: int) -> dict[str, Any]:
        """Part ``index`` of the ``state`` query's text, each within ``max_payload_bytes``
        (a query's answer is one payload, and a state can be larger than one).

        ``{"text": ..., "parts": n, "version": v}``: join the texts of parts 0 to
        n - 1 of one ``version`` (``Conversation.state()`` does).
        """
        text = self._rest
        if text is None:
            return {"text": None, "parts": 0, "version": self._rests}
        if self._cuts[0] != self._rests:  # cut once per state: each read of it asks each part
            budget = type(self).durable.max_payload_bytes - _ENVELOPE_BYTES
            self._cuts = (self._rests, _cuts(text, budget))
        cuts = self._cuts[1]
        parts = len(cuts) - 1
        part = text[cuts[index] : cuts[index + 1]] if 0 <= index < parts else ""
        return {"text": part, "parts": parts, "version": self._rests}


def _cuts(text: str, budget: int) -> list[int]:
    """Where the parts of ``text`` begin, and its end: each part as long as its JSON (as
    the converter writes it: a character is 1 to 12 bytes) fits in ``budget`` bytes."""
    cuts = [0]
    start = 0
    while start < len(text):
        length = max(1, budget)
        while length > 1 and (size := payload_size(text[start : start + length])) > budget:
            length = max(1, length * budget // size)  # shorter at each step: it ends
        start += length
        cuts.append(min(start, len(text)))
    return cuts


def _left_out(event: dict[str, Any], size: int) -> dict[str, Any]:
    """An event too large for a query's answer, as the feed gives it: what it was, and
    where its content is (the history, or the state, both read in ways that fit); a
    pause's events keep their ``pause_id``."""
    stub: dict[str, Any] = {"seq": event["seq"], "type": event["type"]}
    if "pause_id" in event:
        stub["pause_id"] = event["pause_id"]
    stub["left_out"] = (
        f"this event is {size} bytes, over max_payload_bytes: read its content in the run "
        f"state (Conversation.state())"
    )
    return stub


def _pending_page(
    waiting: Sequence[PendingCall], pause_id: str | None, after: int, limit: int
) -> dict[str, Any]:
    """The ``pending`` query's page of ``waiting`` from ``after``, within ``limit`` bytes.

    The page has the meta of each tool its calls name, once. A call that does not fit
    with its tool in a page of its own is left out: its id, its tool, and where to read
    it (the run state has the call and its reason). If its tool does not fit even so,
    the tool is left out too (its meta is nowhere else: ``Conversation.pending()``
    raises ``ValueError``).
    """
    start = min(max(0, after), len(waiting))
    calls: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    page: dict[str, Any] = {
        "calls": calls,
        "tools": tools,
        "next": len(waiting),  # as large as it can be, while the page is measured
        "total": len(waiting),
        "pause_id": pause_id,
    }
    size = payload_size(page)
    for pending in waiting[start:]:
        name = pending.meta.name
        tool = None if name in tools else dump_tool(pending.meta)
        # An entry's size, a comma; a tool's name, a colon, its meta and a comma.
        tool_size = 0 if tool is None else payload_size(name) + payload_size(tool) + 2
        entry = dump_pending_call(pending)
        entry_size = payload_size(entry) + 1
        if size + tool_size + entry_size > limit:
            if calls:
                break  # the next page begins with it
            assert tool is not None  # the page's first call brings its tool
            entry = {
                "call_id": pending.call.id,
                "tool": name,
                "left_out": f"this call is {entry_size - 1} bytes as JSON, and its tool "
                f"{tool_size}: together over max_payload_bytes ({limit}); read the call in "
                f"the run state (Conversation.state(), its paused_calls)",
            }
            entry_size = payload_size(entry) + 1
            if size + tool_size + entry_size > limit:
                tool = {
                    "left_out": f"its description and input schema are {payload_size(tool)} "
                    f"bytes as JSON: with a call, over what one answer of the pending query "
                    f"holds (max_payload_bytes, {limit} bytes)"
                }
                tool_size = payload_size(name) + payload_size(tool) + 2
        if tool is not None:
            tools[name] = tool
        calls.append(entry)
        size += tool_size + entry_size
    page["next"] = start + len(calls)
    return page


def _share_anyio_backend() -> None:
    """Let the sandbox see anyio's asyncio backend as the process has it.

    anyio imports its backend on first use with ``importlib.import_module``, which
    the sandbox cannot pass through: it would run the backend's module again in
    the sandbox, where its ``threading.Thread`` subclass is refused.
    """
    with workflow.unsafe.imports_passed_through():
        import anyio._backends._asyncio  # noqa: F401  # pyright: ignore[reportUnusedImport]


def _duration(span: timedelta) -> str:
    """``span`` as a model reads it: ``90s``, ``15 min``, ``36 h``, ``14 days``."""
    seconds = span.total_seconds()
    for unit, size in (("days", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.4g} {unit}"
    return f"{seconds:.4g}s"


def _refusal(exc: Exception) -> ApplicationError:
    """The failure that says why a start, or a decision, is refused: ``exc``'s text,
    bounded (``MAX_FAILURE_MESSAGE``); a failure Temporal refuses would fail the workflow
    task at every attempt, or leave the workflow's failure empty. Raise it ``from None``."""
    message = bounded_text(str(exc), MAX_FAILURE_MESSAGE)
    return ApplicationError(message, type=type(exc).__name__, non_retryable=True)


def _not_paused(status: str) -> WorkerStateError:
    if status in ("finished", "failed", "cancelled"):
        ended = "been cancelled" if status == "cancelled" else status
        return WorkerStateError(f"Nothing to decide: the run has {ended}")
    return WorkerStateError(f"Nothing to decide now: the run is {status}, not paused")
