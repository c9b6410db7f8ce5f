"""The activities: the real model request and the real tool call, on an activity worker.

``model_request_activity(name, client, ...)`` streams one request through the
user's own ``LlmClient`` and returns the whole response as events.
``tool_call_activity(name, handle, limits, deps, ...)`` runs one call on the
user's own tools exactly as a process's Worker would (input limits, the
tool's timeout, the result cap, a ``ToolError`` as the result the model
reads). Both run outside the workflow, so they may do anything: I/O, clocks,
threads.

What fails an activity (so that Temporal retries it, per the retry policy):
a ``ProviderError`` (``retryable=False`` makes it final at once), or anything
else the model client raises; for a tool call, only what is not a result:
the worker process dying, a timeout, a tool this activity worker does not
have (final at once).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

import anyio
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._client import LlmClient, LlmEvent, LlmRequest
from .._context import ToolContext
from .._conversation import ToolCall, ToolResult
from .._exceptions import ExecutionFailedError, LlmClientError, ProviderError
from .._execution import execute_call
from .._limits import Limits
from .._model_texts import DURABLE_RESULT_TOO_LARGE, call_text
from .._response import ResponseAssembler
from .._run import close_stream
from .._safe_text import bounded_repr
from .._server import ToolServerHandle, entry_of
from .._state_json import dump_result
from ._data import DataCodec
from ._payloads import MAX_FAILURE_TEXT, bounded_text, payload_size
from ._wire import coalesce, dump_events, load_request

__all__ = ["model_request_activity", "tool_call_activity"]

JsonDict = dict[str, Any]
_T = TypeVar("_T")


def model_request_activity(
    name: str, client: LlmClient, limits: Limits, max_payload_bytes: int
) -> Callable[[JsonDict], Awaitable[list[JsonDict]]]:
    """The activity ``name``: one model request through ``client``; a response over
    ``limits.max_response_chars`` or ``max_payload_bytes`` fails it for good."""

    @activity.defn(name=name)
    async def model_request(request: JsonDict) -> list[JsonDict]:
        try:
            reading = _read(client, load_request(request), limits.max_response_chars)
            events = await _beating(_Progress(), reading)
        except ProviderError as exc:
            raise _provider_failure(exc) from None
        except LlmClientError as exc:  # a client that breaks the protocol does so every time
            raise ApplicationError(
                bounded_text(str(exc)), type="LlmClientError", non_retryable=True
            ) from None
        except ApplicationError:
            raise
        except Exception as exc:
            if len(str(exc)) <= MAX_FAILURE_TEXT:
                raise  # as Temporal records any exception: retried, with its traceback
            raise ApplicationError(bounded_text(str(exc)), type=type(exc).__name__) from None
        data = dump_events(coalesce(events))
        size = payload_size(data)
        if size > max_payload_bytes:  # asking again would only get as long an answer
            raise ApplicationError(
                f"the model's response is {size} bytes, over the {max_payload_bytes} bytes a "
                f"durable run can record of one (max_payload_bytes)",
                type="LlmClientError",
                non_retryable=True,
            )
        return data

    return model_request


def tool_call_activity(
    name: str, handle: ToolServerHandle, limits: Limits, deps: DataCodec, max_payload_bytes: int
) -> Callable[[JsonDict], Awaitable[JsonDict]]:
    """The activity ``name``: one call of one of ``handle``'s tools, within ``limits``; a
    result over ``max_payload_bytes`` is an error result."""

    @activity.defn(name=name)
    async def tool_call(call: JsonDict) -> JsonDict:
        tool = str(call["tool"])
        entry = entry_of(handle, tool)
        if entry is None:
            info = activity.info()
            raise ApplicationError(
                f"tool {tool!r} is not among the tools of the activity worker on task queue "
                f"{info.task_queue!r} (give its definition to DurableWorker.activities(tools=...) "
                f"there)",
                type="ToolNotFoundError",
                non_retryable=True,
            )
        run_call = ToolCall(str(call["call_id"]), tool, str(call["input_json"]))
        progress = _Progress()
        context = ToolContext(
            call_id=run_call.id,
            tool_name=tool,
            deps=deps.load(call.get("deps")),
            sink=progress,
            idempotency_key=str(call["idempotency_key"]),
        )
        result = await _beating(progress, execute_call(entry, run_call, limits, context))
        data = dump_result(result)
        size = payload_size(data)
        if size > max_payload_bytes:
            text = call_text(DURABLE_RESULT_TOO_LARGE, tool, size=size, limit=max_payload_bytes)
            data = dump_result(ToolResult(run_call.id, str(ExecutionFailedError(text)), True))
        return data

    return tool_call


_PREVIEW = 500  # characters of the provider's message in the failure's own message

MAX_PROGRESS_MESSAGE = 1_000
"""The most characters of a progress message a heartbeat carries."""


def _provider_failure(exc: ProviderError) -> ApplicationError:
    """The activity's failure for ``exc``, bounded: the provider's message in the details
    (what the workflow reads), its start in the failure's own message (what Temporal's UI
    shows); raised ``from None``, as the cause would carry the whole message again."""
    message = bounded_text(exc.message)
    provider = bounded_text(exc.provider, 200)
    status = f" (HTTP {exc.status})" if exc.status is not None else ""
    return ApplicationError(
        f"{provider} request failed{status}: {bounded_text(exc.message, _PREVIEW)}",
        {
            "provider": provider,
            "message": message,
            "status": exc.status,
            "retryable": exc.retryable,
            "retry_after": exc.retry_after,
        },
        type="ProviderError",
        non_retryable=not exc.retryable,
        next_retry_delay=_retry_delay(exc.retry_after),
    )


MAX_RETRY_AFTER = timedelta(hours=1)
"""The longest wait a provider's ``retry_after`` sets for the next attempt."""


def _retry_delay(retry_after: float | None) -> timedelta | None:
    """The provider's Retry-After as the next attempt's wait, at most ``MAX_RETRY_AFTER``;
    ``None`` (the policy's backoff) for none, or for one that is no wait (NaN, negative)."""
    if retry_after is None or not retry_after >= 0:
        return None
    return timedelta(seconds=min(retry_after, MAX_RETRY_AFTER.total_seconds()))


class _Progress:
    """A tool's progress reports: the latest one goes with the next heartbeat."""

    __slots__ = ("latest",)

    def __init__(self) -> None:
        self.latest: JsonDict | None = None

    def report(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        if message is not None:  # a heartbeat over Temporal's limit would cancel the call
            text = message if isinstance(message, str) else bounded_repr(message)
            message = bounded_text(text, MAX_PROGRESS_MESSAGE)
        # One assignment: safe from a plain-def tool's thread.
        self.latest = {"call_id": call_id, "progress": progress, "total": total, "message": message}


async def _read(client: LlmClient, request: LlmRequest, max_chars: int) -> list[LlmEvent]:
    """The response's events, each checked as it comes, as the workflow's loop checks
    them: a stream that breaks the protocol or runs over ``max_chars`` (an endless one)
    is refused there and then, not read until the activity times out."""
    response = ResponseAssembler(max_chars)
    events: list[LlmEvent] = []
    stream = client.stream(request)
    try:
        async for event in stream:
            response.feed(event)
            events.append(event)
    except BaseException:  # refused here, or the activity cancelled: close the connection
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await close_stream(aclose)
        raise
    return events


async def _beating(progress: _Progress, work: Awaitable[_T]) -> _T:
    """``work``'s result; meanwhile a heartbeat every third of the heartbeat timeout, if any.

    So a live worker's long call (a slow tool, a model that thinks for minutes before
    its first token) is never taken for a dead one, and a dead one's is soon retried.
    """
    timeout: timedelta | None = activity.info().heartbeat_timeout
    if not timeout:
        return await work
    done: list[_T] = []
    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(_heartbeat, progress, timeout.total_seconds() / 3)
        try:
            done.append(await work)
        except Exception as exc:  # raised as it is, not in the task group's ExceptionGroup
            failure = exc
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return done[0]


async def _heartbeat(progress: _Progress, interval: float) -> None:
    while True:
        latest = progress.latest
        if latest is None or not _sendable(latest):
            activity.heartbeat()
        else:
            activity.heartbeat(latest)
        await anyio.sleep(interval)


_MAX_HEARTBEAT_BYTES = 20_000


def _sendable(details: JsonDict) -> bool:
    """Whether ``details`` go with a heartbeat: JSON, and small. (A heartbeat Temporal's
    SDK cannot encode or send cancels the activity; without details one always goes.)"""
    try:
        return payload_size(details) <= _MAX_HEARTBEAT_BYTES
    except (TypeError, ValueError):
        return False
