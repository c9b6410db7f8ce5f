"""Where a run reports itself to an observer: the ``Instrumentation`` protocol.

The turn loop calls an ``Instrumentation`` (``Worker(..., instrumentation=...)``)
at the points tracing needs: a run starts and ends, a model request starts and
ends, a tool call runs, a hook or a human decides a call. ``llm_worker.otel``
implements it with OpenTelemetry; a worker without one pays one ``None`` check
per step.

The spans' contexts are the observer's business: ``activate()`` is entered
around work that should run "inside" a span (reading the model's stream, one
event at a time; a tool call, in the task and thread that run it; the hooks, in
the run's span if it has an ``activate()``), and never around code of the
application reading the run stream. An observer with
nothing to make active returns ``None``, and the loop enters nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ._client import LlmClient, LlmRequest
    from ._conversation import AssistantMessage, RunUsage, ToolCall, ToolResult
    from ._meta import LlmToolDefinition, ToolMeta

__all__ = [
    "MAX_TRACE_LINK_CHARS",
    "MAX_TRACE_LINK_ITEMS",
    "Instrumentation",
    "RequestSpan",
    "RunSpan",
    "ToolSpan",
    "check_trace_link",
]

MAX_TRACE_LINK_ITEMS = 8
MAX_TRACE_LINK_CHARS = 1024  # per key or value: a W3C tracestate is at most 512


class ToolSpan(Protocol):
    """One tool call, from the moment it starts running."""

    def activate(self) -> AbstractContextManager[None] | None:
        """Entered around the call itself, in the task (and so the thread) that runs it;
        ``None``: nothing to make active."""
        ...

    def end(self, result: ToolResult | None, error: BaseException | None) -> None:
        """The call ended: with ``result`` (maybe an error result), or ``error`` escaped
        it; with neither, it was cancelled when its run stopped."""
        ...


class RequestSpan(Protocol):
    """One model request, from sending it to its whole response."""

    def activate(self) -> AbstractContextManager[None] | None:
        """Entered around each step of reading the response (called before each);
        ``None``: nothing to make active."""
        ...

    def end(self, message: AssistantMessage | None, error: BaseException | None) -> None:
        """The response is complete (``message``), or failed with ``error``."""
        ...


class RunSpan(Protocol):
    """One run: ``run()`` (or its ``resume()`` / ``retry()``), from start to end.

    A run span may also have ``activate() -> AbstractContextManager[None] | None``
    (optional, so observers written before it keep working): entered around the
    application's pre-hooks, approval policies and post-hooks, so what they trace
    belongs to the run.
    """

    def request(self, request: LlmRequest, number: int) -> RequestSpan:
        """Model request ``number`` of the run is about to be sent."""
        ...

    def tool_call(self, call: ToolCall, meta: ToolMeta) -> ToolSpan:
        """``call`` is about to run (called in the task that runs it)."""
        ...

    def decided(self, call: ToolCall, outcome: str, reason: str | None) -> None:
        """A call did not run as asked: ``outcome`` is a ``ToolCallOutcome`` value
        (``"skipped"``, ``"answered"``, ``"denied"``, ``"aborted"``...) or ``"paused"``;
        ``reason`` the hook's or the human's, if they gave one."""
        ...

    def link(self) -> Mapping[str, str] | None:
        """What a later run continuing this one (a resume of its pause, a retry of its
        failure) is given to link to, kept in ``RunState.trace_link`` across processes:
        short strings (a W3C trace context for OpenTelemetry); ``None``: nothing."""
        ...

    def end(self, outcome: str, error: BaseException | None, usage: RunUsage) -> None:
        """The run ended: ``"finished"``, ``"paused"``, ``"aborted"``, ``"failed"`` or
        ``"cancelled"``; ``usage`` is what it cost."""
        ...


class Instrumentation(Protocol):
    """Starts a ``RunSpan`` per run (see the module docstring)."""

    def run(
        self,
        *,
        kind: str,
        client: LlmClient,
        system_prompt: str | None,
        tools: Sequence[LlmToolDefinition],
        continues: Mapping[str, str] | None,
    ) -> RunSpan:
        """A run of ``kind`` ``"run"``, ``"resume"`` or ``"retry"`` starts; a resume or
        retry ``continues`` the run whose ``link()`` that is, if it gave one."""
        ...


def check_trace_link(link: Mapping[str, str]) -> Mapping[str, str]:
    """``link`` as a read-only copy, checked: a few short strings (``RunSpan.link()``)."""
    if not isinstance(link, Mapping):
        raise TypeError(f"a trace link is a mapping of str to str, not {type(link).__name__}")
    items = dict(link)
    for item in items.items():
        for text in item:
            if not isinstance(text, str):
                raise TypeError(f"a trace link maps str to str, not {type(text).__name__}")
            if len(text) > MAX_TRACE_LINK_CHARS:
                raise ValueError(
                    f"a trace link's keys and values are at most {MAX_TRACE_LINK_CHARS} "
                    f"characters, not {len(text)}"
                )
    if len(items) > MAX_TRACE_LINK_ITEMS:
        raise ValueError(f"a trace link has at most {MAX_TRACE_LINK_ITEMS} items, not {len(items)}")
    return MappingProxyType(items)
