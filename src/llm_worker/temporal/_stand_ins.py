"""What the workflow's ``Worker`` talks to: a model and tools whose every call is an activity.

The workflow runs the same ``Worker`` turn loop as a process does; only its
``LlmClient`` and its tools are stand-ins. ``ActivityModel.stream(request)``
executes one model request activity (the real client, on an activity worker)
and yields the response it returns. ``ActivityTool`` executes one tool call
activity per call (the real tool, on an activity worker of its task queue).
Temporal records each completion in the workflow's history, so on replay these
return the recorded results and nothing runs again.

Everything here runs inside the workflow: no I/O, no clock, no randomness.
A call cancelled (the run stopped, the workflow was cancelled) asks Temporal to
cancel its activity, waits until that is recorded, and is cancelled as in a
process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar, cast

import anyio
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from .._client import LlmEvent, LlmRequest
from .._content import ToolReturn
from .._context import ToolContext
from .._exceptions import ExecutionFailedError, LlmClientError, ProviderError, ToolError
from .._meta import ToolMeta
from .._model_texts import (
    DURABLE_CALL_FAILED,
    DURABLE_HISTORY_FULL,
    DURABLE_INPUT_TOO_LARGE,
    DURABLE_TOOL_UNAVAILABLE,
    call_text,
)
from ._config import ActivityConfig
from ._payloads import HISTORY_LIMIT_PATCH, PAYLOAD_LIMIT_PATCH, TASK_INPUT_BYTES, payload_size
from ._wire import dump_request, load_events, load_result

__all__ = ["ActivityModel", "ActivityTool", "Sends"]

_Evicted: type[BaseException]
try:  # private, but what an evicted workflow's code gets for asking to cancel an activity
    from temporalio.worker._workflow_instance import (
        _WorkflowBeingEvictedError as _Evicted,  # pyright: ignore[reportPrivateUsage]
    )
except ImportError:  # a temporalio that has it no more: nothing to let pass
    _Evicted = type("_Evicted", (Exception,), {})


_T = TypeVar("_T")


class Sends:
    """What one run's activities send and will record, against Temporal's limits (see
    ``_payloads``): one per workflow run, shared by its model and its tools."""

    __slots__ = ("_task", "_task_bytes", "_unrecorded", "max_history_bytes", "max_payload_bytes")

    def __init__(self, max_payload_bytes: int, max_history_bytes: int) -> None:
        self.max_payload_bytes = max_payload_bytes
        self.max_history_bytes = max_history_bytes
        self._task = -1  # the workflow task (its history length) that scheduled _task_bytes
        self._task_bytes = 0
        self._unrecorded = 0  # the room kept for the results of the activities under way

    async def room(self, size: int) -> int | None:
        """Wait until an input of ``size`` bytes fits in a workflow task's commands and in
        the history, then ``None`` if it may be scheduled (with room kept for its result
        until ``recorded``), or the bytes the history has when it has no room.

        The room kept for a result is the most one may be (``max_payload_bytes``): while
        activities under way hold room that keeps this one out, it waits for them to be
        recorded (as they are, not as they might have been), and has no room only when
        none is under way.
        """
        info = workflow.info()
        while True:
            if (
                self._task == info.get_current_history_length()
                and self._task_bytes + size > TASK_INPUT_BYTES
                and workflow.patched(HISTORY_LIMIT_PATCH)
            ):
                # The calls already scheduled complete in a later workflow task: this one
                # goes in that task's commands.
                await workflow.wait_condition(partial(_moved_on, info, self._task))
                continue
            history = info.get_current_history_size() + self._unrecorded
            if history + size + self.max_payload_bytes <= self.max_history_bytes:
                break
            if not workflow.patched(HISTORY_LIMIT_PATCH):
                break
            if not self._unrecorded:
                return history
            await workflow.wait_condition(partial(_less_kept, self, self._unrecorded))
        task = info.get_current_history_length()
        if task != self._task:
            self._task, self._task_bytes = task, 0
        self._task_bytes += size
        self._unrecorded += size + self.max_payload_bytes
        return None

    @property
    def unrecorded(self) -> int:
        """The room kept for the results of the activities under way."""
        return self._unrecorded

    def recorded(self, size: int) -> None:
        """The activity of an input of ``size`` bytes has ended: its room is the history's."""
        self._unrecorded -= size + self.max_payload_bytes


def _less_kept(sends: Sends, kept: int) -> bool:
    """Whether an activity under way has been recorded since ``kept`` bytes were kept."""
    return sends.unrecorded < kept


def _moved_on(info: workflow.Info, task: int) -> bool:
    """Whether a workflow task after ``task`` (a history length) has begun."""
    return info.get_current_history_length() != task


class ActivityModel:
    """An ``LlmClient`` whose ``stream(request)`` is one model request activity."""

    __slots__ = ("_activity", "_options", "_sends")

    def __init__(
        self, activity: str, config: ActivityConfig, default_timeout: timedelta, sends: Sends
    ) -> None:
        self._activity = activity
        self._options = config.activity_options(default_timeout)
        self._sends = sends

    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        """Run the request as an activity and yield the whole response's events."""
        return self._stream(request)

    async def _stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        sent = dump_request(request)
        size = payload_size(sent)
        limit = self._sends.max_payload_bytes
        if size > limit and workflow.patched(PAYLOAD_LIMIT_PATCH):
            # Temporal would refuse it at every attempt. (Not in a history an earlier
            # version recorded, which scheduled it: a replay must do as it did.)
            raise ProviderError(
                "temporal",
                f"the model request is {size} bytes, over the {limit} bytes "
                f"a durable run can send as one activity's input (max_payload_bytes): "
                f"continue the conversation from a shorter history",
            )
        history = await self._sends.room(size)
        if history is not None:  # Temporal would terminate the workflow: its work lost
            raise ProviderError(
                "temporal",
                f"the workflow's history is {history} bytes: with the model request ({size} "
                f"bytes) and room for its response ({limit}), it would pass the "
                f"{self._sends.max_history_bytes} bytes a durable run keeps it under "
                f"(max_history_bytes): continue the conversation in a new workflow",
            )
        try:
            data = await _completed(
                workflow.start_activity(
                    self._activity,
                    sent,
                    result_type=list,
                    summary=f"model request {len(request.messages)} messages",
                    **self._options,
                )
            )
        except ActivityError as exc:
            raise _model_error(exc) from None
        finally:
            self._sends.recorded(size)
        for event in load_events(data):
            yield event

    def __repr__(self) -> str:
        return f"<ActivityModel {self._activity!r}>"


def _model_error(exc: ActivityError) -> Exception:
    """The error a process's run would have raised, for a model activity that failed."""
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        if cause.type == "ProviderError" and cause.details:
            details: object = cause.details[0]
            if isinstance(details, dict):
                fields = cast("dict[str, Any]", details)
                status = fields.get("status")
                wait = fields.get("retry_after")
                return ProviderError(
                    str(fields.get("provider", "?")),
                    str(fields.get("message", cause.message)),
                    status=status if isinstance(status, int) else None,
                    retryable=fields.get("retryable") is True,
                    retry_after=float(wait)
                    if isinstance(wait, (int, float)) and not isinstance(wait, bool)
                    else None,
                )
        if cause.type == "LlmClientError":
            return LlmClientError(cause.message)
    return ProviderError("temporal", f"the model request activity failed: {_why(exc)}")


class ActivityTool:
    """A ``Tool`` whose every call is a tool call activity running the real tool.

    ``execute_with_context`` sends the call's idempotency key, prefixed with the
    workflow id (``"{workflow_id}/{request}/{call_id}"``), and the run's deps.
    The result comes back as the model reads it; a call whose activity never
    completed (retries used up, timed out) gets an ``Execution failed`` result.
    """

    __slots__ = ("_activity", "_dump_deps", "_options", "_sends", "meta")

    def __init__(
        self,
        activity: str,
        meta: ToolMeta,
        config: ActivityConfig,
        default_timeout: timedelta | None,
        dump_deps: Callable[[object], object],
        sends: Sends,
    ) -> None:
        self._activity = activity
        self.meta = meta
        self._options = config.activity_options(default_timeout)
        self._dump_deps = dump_deps
        self._sends = sends

    async def execute(self, input_json: str) -> str | ToolReturn:
        """A call outside a run (``ToolServerHandle.call_tool`` in workflow code)."""
        return await self._call(input_json, "", "", None)

    async def execute_with_context(
        self, input_json: str, context: ToolContext[Any]
    ) -> str | ToolReturn:
        """A call of a run: what a process's Worker would do, as an activity."""
        key = f"{workflow.info().workflow_id}/{context.idempotency_key}"
        return await self._call(input_json, context.call_id, key, context.deps)

    async def _call(
        self, input_json: str, call_id: str, key: str, deps: object
    ) -> str | ToolReturn:
        name = self.meta.name
        sent = {
            "tool": name,
            "call_id": call_id,
            "input_json": input_json,
            "idempotency_key": key,
            "deps": self._dump_deps(deps),
        }
        size = payload_size(sent)
        limit = self._sends.max_payload_bytes
        if size > limit and workflow.patched(PAYLOAD_LIMIT_PATCH):
            raise ExecutionFailedError(
                call_text(DURABLE_INPUT_TOO_LARGE, name, size=size, limit=limit)
            )
        if await self._sends.room(size) is not None:  # the next model request fails the run
            raise ExecutionFailedError(call_text(DURABLE_HISTORY_FULL, name))
        try:
            data = await _completed(
                workflow.start_activity(
                    self._activity,
                    sent,
                    result_type=dict,
                    summary=name,
                    **self._options,
                )
            )
        except ActivityError as exc:
            raise ExecutionFailedError(_call_failure(name, exc)) from None
        finally:
            self._sends.recorded(size)
        result = load_result(data)
        if result.is_error:
            raise _Failed(result.content)  # the model reads the activity's text as it is
        if result.parts or result.metadata is not None:
            # A rich result stays one: its images and data for the model, its metadata
            # for the application (already within the limits the workflow's would apply).
            return ToolReturn(result.parts or result.content, result.metadata)
        return result.content

    def __repr__(self) -> str:
        return f"<ActivityTool {self.meta.name!r}>"


async def _completed(handle: workflow.ActivityHandle[_T]) -> _T:
    """What ``handle``'s activity returned. Cancelled, this asks Temporal to cancel the
    activity, waits (shielded) until it is, and raises the cancellation.

    Not ``await handle``: the handle takes a cancellation as a request and waits for the
    activity, and anyio, seeing its task still waiting, delivers the cancellation again
    at every turn of the workflow's event loop, which then never goes idle to send the
    request (Temporal's deadlock detector fails the workflow task).
    """
    try:
        return await asyncio.shield(handle)
    except asyncio.CancelledError:
        # Evicted from the worker's cache, the workflow may not ask for anything (its
        # activity runs on; the workflow's next worker replays): the cancellation goes
        # on as it came, which the call lets through, not as an error of the call's.
        with contextlib.suppress(_Evicted):
            handle.cancel()
            with (
                anyio.CancelScope(shield=True),
                contextlib.suppress(ActivityError, asyncio.CancelledError),
            ):
                await handle
        raise


class _Failed(ToolError):
    """A tool call's error result, as the activity wrote it (its text is already whole)."""

    __slots__ = ()


def _call_failure(name: str, exc: ActivityError) -> str:
    """What the model reads of a tool call activity that failed."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type == "ToolNotFoundError":
        # How the deployment is wrong is for its developers (the log, the activity's
        # failure in the history), not for the model.
        workflow.logger.error("Tool call activity failed: %s", cause.message)
        return call_text(DURABLE_TOOL_UNAVAILABLE, name)
    return call_text(DURABLE_CALL_FAILED, name, why=_why(exc))


def _why(exc: ActivityError) -> str:
    cause = exc.cause
    if isinstance(cause, TimeoutError):
        kind = "" if cause.type is None else f" ({cause.type.name.lower().replace('_', '-')})"
        return f"its activity timed out{kind}"
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or exc)
