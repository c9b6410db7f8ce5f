"""``Conversation``: a durable run seen from outside (a web app, a CLI, a test).

It wraps a Temporal ``WorkflowHandle`` of a ``ConversationWorkflow`` and speaks
llm_worker's types: ``pending()`` gives ``PendingCall``s, ``decide()`` takes
``Approve()`` / ``Deny(reason)`` and raises the ``WorkerStateError`` or
``TypeError`` that ``resume()`` would, ``state()`` gives a ``RunState``.
Everything goes through the workflow's queries and its ``decide`` update, so a
program in another language can do the same with the JSON documented in
docs/durable.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import QueryRejectCondition
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from .._approvals import Decision, PendingCall
from .._context import deps_fit
from .._conversation import Message
from .._exceptions import WorkerStateError
from .._state import RunState
from ._wire import dump_decisions, load_history, load_pending
from ._workflow import ConversationOutcome, ConversationStart, ConversationWorkflow

__all__ = ["Conversation", "ConversationResult", "EventPage"]


@dataclass(frozen=True)
class EventPage:
    """One answer of the event feed: ``events`` from the asked ``seq`` on, and where to go on."""

    events: Sequence[Mapping[str, Any]]
    next: int
    status: str


@dataclass(frozen=True)
class ConversationResult:
    """How a durable run ended: the model's answer and the state to continue from.

    ``output``: the structured answer as JSON data, with an ``output_type`` (read it
    with the ``DurableWorker``'s ``load_output``); ``None`` without one, and for
    ``str`` (the answer is ``final_text``).
    """

    final_text: str | None
    state: RunState
    output: Any = None


class Conversation:
    """A handle on one durable run: watch it, decide its pending calls, await its end."""

    __slots__ = ("handle",)

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self.handle = handle

    @classmethod
    async def start(
        cls,
        client: Client,
        workflow: type[ConversationWorkflow],
        user_input: str | None,
        *,
        id: str,
        task_queue: str,
        state: RunState | None = None,
        deps: object = None,
        allowed_tools: Sequence[str] | None = None,
        tool_choice: str = "auto",
        **options: Any,
    ) -> Conversation:
        """Start ``workflow`` (a ``ConversationWorkflow`` subclass) on a run of ``user_input``.

        ``id`` is the workflow id: it names the conversation, and prefixes every
        tool call's idempotency key, so give each conversation its own. ``state``
        continues a conversation (``user_input=None`` resumes or retries it);
        ``deps`` go through the workflow's ``DurableWorker.dump_deps``. Other
        keywords go to ``Client.start_workflow``.
        """
        durable = workflow.durable
        deps_type = durable.deps_type
        if deps_type is not None and not deps_fit(deps, deps_type):
            raise TypeError(
                f"{workflow.__qualname__}'s runs take deps of type {deps_type.__qualname__} "
                f"(its DurableWorker's deps_type); got {type(deps).__qualname__}"
            )
        start = ConversationStart(
            user_input=user_input,
            state=None if state is None else state.to_json(),
            deps=durable.dump_deps(deps),
            allowed_tools=None if allowed_tools is None else list(allowed_tools),
            tool_choice=tool_choice,
        )
        handle = await client.start_workflow(
            workflow.run, start, id=id, task_queue=task_queue, **options
        )
        return cls(handle)

    @property
    def id(self) -> str:
        """The workflow id."""
        return self.handle.id

    async def status(self) -> str:
        """``"starting"``, ``"running"``, ``"paused"``, ``"finished"``, ``"failed"`` or
        ``"cancelled"``; and for a workflow that Temporal closed without its code
        (terminated, or past its timeout), ``"terminated"`` or ``"timed_out"``."""
        try:
            status: str = await self.handle.query(
                "status", result_type=str, reject_condition=QueryRejectCondition.NOT_OPEN
            )
        except WorkflowQueryRejectedError as exc:  # closed: Temporal knows how
            return _closed_status(exc)
        return status

    async def pending(self) -> tuple[PendingCall, ...]:
        """The calls waiting for a decision, in call order."""
        data = await self.handle.query("pending", result_type=list)
        return tuple(load_pending(item) for item in data)

    async def history(self) -> tuple[Message, ...]:
        """The conversation so far."""
        return tuple(load_history(await self.handle.query("history", result_type=list)))

    async def state(self) -> RunState | None:
        """The run state where the run last stood still (start, pause or end).

        Read in parts (the ``state_part`` query), so a state larger than one Temporal
        payload comes whole.
        """
        for _ in range(_STATE_READS):
            first = await self.handle.query("state_part", 0, result_type=dict)
            if first["text"] is None:
                return None
            texts = [str(first["text"])]
            for index in range(1, int(first["parts"])):
                part = await self.handle.query("state_part", index, result_type=dict)
                if part["version"] != first["version"]:
                    break  # the run moved on meanwhile: read the new state
                texts.append(str(part["text"]))
            else:
                return RunState.from_json("".join(texts))
        raise WorkerStateError(
            f"the run state of {self.handle.id!r} changed at every one of {_STATE_READS} reads"
        )

    async def events(self, after: int = 0) -> EventPage:
        """The events from ``after`` on (at most ``EVENTS_PER_PAGE``); poll again from ``next``.

        A workflow Temporal closed without its code (terminated, timed out) records
        nothing more: its pages have the events it had, and that ``status``.
        """
        try:
            data = await self.handle.query(
                "events", after, result_type=dict, reject_condition=QueryRejectCondition.NOT_OPEN
            )
            status = str(data["status"])
        except WorkflowQueryRejectedError as exc:  # closed: its events are in its history
            data = await self.handle.query("events", after, result_type=dict)
            status = _closed_status(exc)
        return EventPage(list(data["events"]), int(data["next"]), status)

    async def decide(
        self, decisions: Mapping[str, Decision] | Decision, *, decision_id: str | None = None
    ) -> tuple[str, ...]:
        """Decide the pending calls, as ``resume(decisions)`` takes them; the run goes on.

        Raises what ``resume()`` would, with its message (``WorkerStateError``
        when the run is not paused or a pending call has no decision, ``TypeError``
        for what is not a decision), and nothing changes then. Returns the ids
        of the calls decided.

        ``decision_id`` (Temporal's update id) makes a decision that is sent again
        (a retried request) a no-op: the workflow takes each id once, and a repeat
        returns what the first got. Without it, a repeat that arrives at the next
        pause decides that pause's calls if their ids match (model call ids are
        unique only within one response).
        """
        payload = dump_decisions(decisions)
        try:
            decided: list[object] = await self.handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                "decide", payload, result_type=list, id=decision_id
            )
        except WorkflowUpdateFailedError as exc:
            local = _local_error(exc)
            if local is None:
                raise
            raise local from exc
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:  # the workflow has closed
                raise WorkerStateError(f"Nothing to decide: the run has ended ({exc})") from exc
            raise
        return tuple(str(call_id) for call_id in decided)

    async def result(self) -> ConversationResult:
        """Wait for the run to end; a failed run raises Temporal's ``WorkflowFailureError``.

        A state too large for the workflow's result is asked of the ``state`` query.
        """
        outcome: object = await self.handle.result()
        if isinstance(outcome, dict):  # a handle made from an id alone knows no result type
            fields = cast("dict[str, Any]", outcome)
            outcome = ConversationOutcome(fields["text"], fields["state"], fields.get("output"))
        if not isinstance(outcome, ConversationOutcome):
            raise TypeError(f"{self.handle.id!r} is not a ConversationWorkflow run")
        state = None if outcome.state is None else RunState.from_json(outcome.state)
        if state is None:
            state = await self.state()
            assert state is not None  # a run that has finished has one
        return ConversationResult(outcome.text, state, outcome.output)

    def __repr__(self) -> str:
        return f"<Conversation {self.handle.id!r}>"


_STATE_READS = 5  # reads of a large state, each in parts, before giving up

_LOCAL_ERRORS: dict[str, type[Exception]] = {
    "WorkerStateError": WorkerStateError,
    "TypeError": TypeError,
    "ValueError": ValueError,
}


_CLOSED_STATUSES = {
    WorkflowExecutionStatus.COMPLETED: "finished",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TERMINATED: "terminated",
    WorkflowExecutionStatus.TIMED_OUT: "timed_out",
    WorkflowExecutionStatus.CONTINUED_AS_NEW: "continued_as_new",
}


def _closed_status(exc: WorkflowQueryRejectedError) -> str:
    """The status of a workflow that has closed, as Temporal gives it."""
    status = exc.status
    return "closed" if status is None else _CLOSED_STATUSES.get(status, status.name.lower())


def _local_error(exc: WorkflowUpdateFailedError) -> Exception | None:
    """The error ``resume()`` would have raised, for an update the workflow refused."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type in _LOCAL_ERRORS:
        return _LOCAL_ERRORS[cause.type](cause.message)
    return None
