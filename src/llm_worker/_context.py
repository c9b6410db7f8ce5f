"""``ToolContext``: what a tool may know about the call it is running.

A ``@tool`` method takes it by declaring a parameter annotated
``ToolContext[Deps]`` (any name, any position after ``self``): that parameter
is left out of the arguments and the schema, and the Worker passes the call's
context. A hand-written ``Tool`` opts in by also defining
``execute_with_context(input_json, context)``. Tools that do neither pay
nothing.
"""

from __future__ import annotations

import math
from typing import Generic, Protocol

from typing_extensions import TypeVar, final

__all__ = ["ProgressSink", "ToolContext"]

DepsT = TypeVar("DepsT", default=None)


class ProgressSink(Protocol):
    """Where ``report_progress`` goes: a Worker's event stream, or an MCP client."""

    def report(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None: ...


@final
class ToolContext(Generic[DepsT]):
    """The context of one tool call: its id, its tool, the run's ``deps``, progress reports.

    ``deps`` is what the run was given (``worker.run(..., deps=...)``); a call
    made outside a run (``ToolServerHandle.call_tool``) gets ``None``.
    ``call_id`` is the model's id for the call (``""`` outside a run).
    """

    __slots__ = ("_sink", "call_id", "deps", "tool_name")

    call_id: str
    tool_name: str
    deps: DepsT

    def __init__(
        self, *, call_id: str, tool_name: str, deps: DepsT, sink: ProgressSink | None = None
    ) -> None:
        self.call_id = call_id
        self.tool_name = tool_name
        self.deps = deps
        self._sink = sink

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell whoever watches the run how far the call has got. Never blocks for long.

        Safe from any thread, async or plain-``def``. Reports are coalesced: a
        watcher that reads slowly sees the latest one. Outside a run, or once
        the call's result is in, a report goes nowhere. Raises ``ValueError``
        for a progress or total that is not a finite number.
        """
        if not math.isfinite(progress) or (total is not None and not math.isfinite(total)):
            raise ValueError(f"progress must be finite numbers, got {progress!r} of {total!r}")
        sink = self._sink
        if sink is not None:
            sink.report(self.call_id, float(progress), total, message)

    def __repr__(self) -> str:
        return f"<ToolContext call_id={self.call_id!r} tool={self.tool_name!r}>"
