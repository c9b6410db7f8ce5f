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

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar, cast

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
from ._payloads import DEFAULT_MAX_PAYLOAD_BYTES, payload_size
from ._wire import LeftOutCall, dump_decisions, load_history, load_pending, load_pending_page
from ._workflow import ConversationOutcome, ConversationStart, ConversationWorkflow

__all__ = ["Conversation", "ConversationNotFoundError", "ConversationResult", "EventPage"]

_T = TypeVar("_T")


class ConversationNotFoundError(WorkerStateError, LookupError):
    """Temporal has no workflow of the conversation's id: it was never started (a
    mistyped id?), or its history is gone (deleted past the namespace's retention)."""


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
    """A handle on one durable run: watch it, decide its pending calls, await its end.

    Each method raises ``ConversationNotFoundError`` when Temporal has no workflow of
    the handle's id.
    """

    __slots__ = ("handle", "max_payload_bytes")

    def __init__(
        self,
        handle: WorkflowHandle[Any, Any],
        *,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    ) -> None:
        """A handle on the run of ``handle``'s workflow; ``max_payload_bytes``: its
        ``DurableWorker``'s (the most a ``decide`` may send)."""
        self.handle = handle
        self.max_payload_bytes = max_payload_bytes

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
        keywords go to ``Client.start_workflow``. A state over ``max_payload_bytes``
        (its next model request would be) raises ``ValueError``, as does an input Temporal
        would refuse.
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
            definition=durable.definition(),
        )
        _check_input(start, durable.max_payload_bytes)
        handle = await client.start_workflow(
            workflow.run, start, id=id, task_queue=task_queue, **options
        )
        return cls(handle, max_payload_bytes=durable.max_payload_bytes)

    @property
    def id(self) -> str:
        """The workflow id."""
        return self.handle.id

    async def status(self) -> str:
        """``"starting"``, ``"running"``, ``"paused"``, ``"finished"``, ``"failed"`` or
        ``"cancelled"``; and for a workflow that Temporal closed without its code
        (terminated, or past its timeout), ``"terminated"`` or ``"timed_out"``."""
        try:
            status: str = await self._found(
                self.handle.query(
                    "status", result_type=str, reject_condition=QueryRejectCondition.NOT_OPEN
                )
            )
        except WorkflowQueryRejectedError as exc:  # closed: Temporal knows how
            return _closed_status(exc)
        return status

    async def pending(self) -> tuple[PendingCall, ...]:
        """The calls waiting for a decision, in call order.

        Read in pages (the ``pending`` query), each within one Temporal payload; a call
        too large for a page of its own is read from the run state (``state()``).
        Raises ``ValueError`` (naming ``max_payload_bytes``) for a call whose tool's
        description and input schema alone do not fit in one.
        """
        for _ in range(_STATE_READS):
            data: object = await self._found(self.handle.query("pending"))
            if isinstance(data, list):  # a worker of an earlier version: every call, whole
                return tuple(load_pending(item) for item in cast("list[object]", data))
            first = page = load_pending_page(data)
            calls = list(page.calls)
            while page.next < page.total:
                page = load_pending_page(await self.handle.query("pending", page.next))
                if page.pause_id != first.pause_id:
                    break  # the run moved on meanwhile: read its calls now
                calls += page.calls
            else:
                found = await self._left_out_calls(calls, first.pause_id)
                if found is not None:
                    return found
        raise WorkerStateError(
            f"the pending calls of {self.handle.id!r} changed at every one of {_STATE_READS} reads"
        )

    async def _left_out_calls(
        self, calls: list[PendingCall | LeftOutCall], pause_id: str | None
    ) -> tuple[PendingCall, ...] | None:
        """``calls``, each left out of its page read from the run state; ``None`` if the
        state is no longer that of pause ``pause_id``."""
        if all(isinstance(call, PendingCall) for call in calls):
            return tuple(cast("list[PendingCall]", calls))
        state = await self.state()
        if state is None or state.pause_id != pause_id:
            return None
        held = {paused.call.id: paused for paused in state.paused_calls if paused.status == "held"}
        found: list[PendingCall] = []
        for call in calls:
            if isinstance(call, LeftOutCall):
                paused = held.get(call.call_id)
                if paused is None:
                    return None
                call = PendingCall(paused.call, call.meta, paused.reason or "")
            found.append(call)
        return tuple(found)

    async def history(self) -> tuple[Message, ...]:
        """The conversation so far."""
        data = await self._found(self.handle.query("history", result_type=list))
        return tuple(load_history(data))

    async def state(self) -> RunState | None:
        """The run state where the run last stood still (start, pause or end).

        Read in parts (the ``state_part`` query), so a state larger than one Temporal
        payload comes whole.
        """
        for _ in range(_STATE_READS):
            first = await self._found(self.handle.query("state_part", 0, result_type=dict))
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
            data = await self._found(
                self.handle.query(
                    "events",
                    after,
                    result_type=dict,
                    reject_condition=QueryRejectCondition.NOT_OPEN,
                )
            )
            status = str(data["status"])
        except WorkflowQueryRejectedError as exc:  # closed: its events are in its history
            data = await self.handle.query("events", after, result_type=dict)
            status = _closed_status(exc)
        return EventPage(list(data["events"]), int(data["next"]), status)

    async def decide(
        self,
        decisions: Mapping[str, Decision] | Decision,
        *,
        decision_id: str | None = None,
        pause_id: str | None = None,
    ) -> tuple[str, ...]:
        """Decide the pending calls, as ``resume(decisions)`` takes them; the run goes on.

        Raises what ``resume()`` would, with its message (``WorkerStateError``
        when the run is not paused, a pending call has no decision, or ``pause_id``
        is not the current pause's; ``TypeError`` for what is not a decision), and
        nothing changes then. Returns the ids of the calls decided.

        ``pause_id`` names the pause the decisions were made for (the ``pause_id`` of
        the feed's ``run_paused`` and ``approval_requested`` events, or of ``state()``):
        once that pause has ended, they decide nothing, also at a later pause whose
        calls have the same ids (model call ids are unique only within one response).

        ``decision_id`` (Temporal's update id) makes a decision that is sent again
        (a retried request) a no-op: the workflow takes each id once, and a repeat
        returns what the first got. Without it or a ``pause_id``, a repeat that
        arrives at the next pause decides that pause's calls if their ids match.

        Decisions over ``max_payload_bytes`` as JSON raise ``ValueError`` (a ``Deny``
        reason becomes the tool result the model reads: it goes into the history).
        """
        payload = dump_decisions(decisions, pause_id)
        size = payload_size(payload)
        if size > self.max_payload_bytes:  # Temporal would refuse it, or fail workflow tasks
            raise ValueError(
                f"the decisions are {size} bytes as JSON, over the {self.max_payload_bytes} "
                f"bytes one update may carry (max_payload_bytes): shorten the Deny reasons "
                f"(each becomes a tool result the model reads) or the approved arguments"
            )
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
            if exc.status is RPCStatusCode.FAILED_PRECONDITION:  # its workflow task fails
                raise _not_ready("take decisions", exc) from exc
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise
            await self._found(self.handle.describe())  # an id that was never started?
            raise WorkerStateError(f"Nothing to decide: the run has ended ({exc})") from exc
        return tuple(str(call_id) for call_id in decided)

    async def result(self) -> ConversationResult:
        """Wait for the run to end; a failed run raises Temporal's ``WorkflowFailureError``.

        A state too large for the workflow's result is asked of the ``state`` query.
        """
        outcome: object = await self._found(self.handle.result())
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

    async def _found(self, asked: Awaitable[_T]) -> _T:
        """What ``asked`` of the workflow gives; ``ConversationNotFoundError`` if there is
        no workflow of this id (Temporal's NOT_FOUND: a closed one answers queries), a
        ``WorkerStateError`` while its workflow task keeps failing."""
        try:
            return await asked
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                raise ConversationNotFoundError(
                    f"There is no conversation {self.handle.id!r}: Temporal has no workflow "
                    f"of that id (never started, or deleted past its namespace's retention)"
                ) from exc
            if exc.status is RPCStatusCode.FAILED_PRECONDITION:
                raise _not_ready("answer", exc) from exc
            raise

    def __repr__(self) -> str:
        return f"<Conversation {self.handle.id!r}>"


def _not_ready(doing: str, exc: RPCError) -> WorkerStateError:
    """What Temporal's FAILED_PRECONDITION means to a caller: the run's workflow task fails
    (and is retried), and until one completes the workflow takes nothing."""
    why = str(exc).rstrip(".")
    return WorkerStateError(
        f"The run cannot {doing} now: {why}. Its workflow's history says why (a worker "
        f"whose definition is not the run's?); ask again later"
    )


def _check_input(start: ConversationStart, limit: int) -> None:
    """Raise ``ValueError`` for a start that cannot run: a state over ``limit`` (the run's
    next model request, its history, could not be sent), or an input Temporal would
    refuse (``Blob data size exceeds limit``), at most ``limit`` or the default one."""
    if start.state is not None and (size := payload_size(start.state)) > limit:
        raise ValueError(
            f"the state is {size} bytes as JSON, over the {limit} bytes one payload may be "
            f"(max_payload_bytes): shorten its history first (Worker.set_history, then "
            f"worker.state)"
        )
    most = max(limit, DEFAULT_MAX_PAYLOAD_BYTES)  # an activity's limit may be lower
    size = payload_size(asdict(start))
    if size > most:
        raise ValueError(
            f"the workflow's input is {size} bytes as JSON, over the {most} bytes one payload "
            f"may be: shorten the user input or the deps"
        )


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
