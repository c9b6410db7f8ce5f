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
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Generic, Protocol

from typing_extensions import TypeVar, final, is_typeddict

from ._annotations import is_class
from ._safe_text import bounded_repr

__all__ = [
    "ProgressReports",
    "ProgressSink",
    "ToolContext",
    "deps_fit",
    "deps_types_fit",
    "run_checked",
]

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
    ``call_id`` is the model's id for the call (``""`` outside a run); it is
    unique only within one response. ``idempotency_key`` names the call within
    its conversation: a Worker gives ``"{request}/{call_id}"`` (the conversation's
    request number of the response that made the call, which a saved and loaded
    run state keeps), a durable run ``"{workflow_id}/{request}/{call_id}"``;
    ``""`` outside a run. A tool whose effect must not repeat when a call runs
    again (after a crash) records it under this key.
    """

    __slots__ = ("_sink", "call_id", "deps", "idempotency_key", "tool_name")

    call_id: str
    tool_name: str
    deps: DepsT
    idempotency_key: str

    def __init__(
        self,
        *,
        call_id: str,
        tool_name: str,
        deps: DepsT,
        sink: ProgressSink | None = None,
        idempotency_key: str = "",
    ) -> None:
        self.call_id = call_id
        self.tool_name = tool_name
        self.deps = deps
        self.idempotency_key = idempotency_key
        self._sink = sink

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell whoever watches the run how far the call has got. Never blocks for long.

        Safe from any thread, async or plain-``def``. Reports are coalesced: a
        watcher that reads slowly sees the latest one. Outside a run, or once
        the call's result is in, a report goes nowhere. Raises ``TypeError`` for a
        progress or total that is not a number (a ``bool``, a ``str``), ``ValueError``
        for one that is not finite (NaN, infinity, an int past a float's range).
        """
        done = _as_float("progress", progress)
        of = None if total is None else _as_float("total", total)
        if not math.isfinite(done) or (of is not None and not math.isfinite(of)):
            raise ValueError(
                f"progress must be finite numbers, got {bounded_repr(progress, 40)} of "
                f"{bounded_repr(total, 40)}"
            )
        sink = self._sink
        if sink is not None:
            sink.report(self.call_id, done, of, message)

    def __repr__(self) -> str:
        return f"<ToolContext call_id={self.call_id!r} tool={self.tool_name!r}>"


def _as_float(name: str, value: float) -> float:
    """``value`` as a float: ``math.inf`` for an int past a float's range (not finite).

    ``True`` is not a progress of 1, nor ``"5"`` of 5: both raise ``TypeError``.
    """
    if isinstance(value, (bool, str, bytes, bytearray)):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # 10**400: refused as not finite, not raised as a crash
        return math.inf
    except TypeError:
        raise TypeError(f"{name} must be a number, not {type(value).__name__}") from None


Report = tuple[str, float, "float | None", "str | None"]
"""One progress report: call id, progress, total, message."""


class ProgressReports:
    """The ``ProgressSink`` of running calls: reports from any thread, kept latest-per-call.

    Made on an event loop's thread; ``wake`` (which must not raise) is called on
    that thread when the first report after a ``drain()`` arrives (the reader then
    drains); a report from another thread never waits for it to run. A report
    for a call that is not running (its result is in, or it never ran here) is
    dropped; a call's last report made while it ran is drained with its result. So
    memory stays bounded whatever a tool reports, and a slow reader sees the latest
    report of each call.

    Each call reports through a sink of its own (``start``): ids repeat across
    responses, and a call that timed out may go on reporting from its thread while a
    later call of the same id runs; its reports are not that call's.
    """

    __slots__ = ("_call_soon", "_latest", "_lock", "_loop_thread", "_running", "_wake")

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._latest: dict[str, Report] = {}
        self._running: dict[str, _CallReports] = {}
        self._loop_thread = threading.get_ident()
        self._call_soon = _call_soon_from_threads()

    def start(self, call_id: str) -> ProgressSink:
        """Call ``call_id`` begins: the sink its ``ToolContext`` reports to."""
        sink = _CallReports(self)
        with self._lock:
            self._running[call_id] = sink
        return sink

    def finish(self, call_id: str) -> None:
        """Call ``call_id`` ended: later reports go nowhere; its last one, if not read yet,
        is still drained (a thread's report may be ahead of the wake it asked for)."""
        with self._lock:
            self._running.pop(call_id, None)

    def report_of(
        self,
        sink: _CallReports,
        call_id: str,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        with self._lock:
            if self._running.get(call_id) is not sink:  # not running, or another call now
                return
            wake = not self._latest
            self._latest[call_id] = (call_id, progress, total, message)
        if not wake:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake()
        else:
            # Without waiting for the loop: it may be busy, or blocked on this very thread.
            with suppress(RuntimeError):  # the event loop is gone: nobody reads reports now
                self._call_soon(self._wake)

    def drain(self) -> list[Report]:
        with self._lock:
            reports = list(self._latest.values())
            self._latest.clear()
        return reports


def _call_soon_from_threads() -> Callable[[Callable[[], object]], object]:
    """How another thread has the running event loop call a function soon, without waiting.

    Once that loop is closed, it raises ``RuntimeError`` (trio's ``RunFinishedError`` is one).
    """
    if "trio" in sys.modules:  # asked first: trio may run as a guest on an asyncio loop
        import trio

        with suppress(RuntimeError):  # not in a trio run
            return trio.lowlevel.current_trio_token().run_sync_soon
    import asyncio

    return asyncio.get_running_loop().call_soon_threadsafe


class _CallReports:
    """One call's ``ProgressSink``: its reports count while it runs, and only its."""

    __slots__ = ("_reports",)

    def __init__(self, reports: ProgressReports) -> None:
        self._reports = reports

    def report(
        self, call_id: str, progress: float, total: float | None, message: str | None
    ) -> None:
        self._reports.report_of(self, call_id, progress, total, message)


# Deps types a run cannot check are not checked. isinstance() refuses a Protocol that is
# not @runtime_checkable, and issubclass() one with data members: such a type says what the
# deps must look like to the type checkers, which check it, and a run takes any deps for it
# (as it does for ToolContext[Any]). Whether a type can be checked is asked once, where it is
# given (a Worker built, a tool registered), never per run.


def run_checked(deps_type: object) -> type[Any] | None:
    """``deps_type`` if a run can check its deps against it (``deps_fit``), else ``None``:
    ``Any``, what is not a class, a ``Protocol`` that is not ``@runtime_checkable``."""
    if not is_class(deps_type) or deps_type is Any:  # typing.Any is a class on 3.11+
        return None
    try:
        deps_fit(None, deps_type)
    except TypeError:  # isinstance() cannot check it
        return None
    return deps_type


def deps_fit(deps: object, deps_type: type[Any]) -> bool:
    """Whether ``deps`` is of ``deps_type``, a type ``run_checked`` kept (a ``TypedDict``'s
    are dicts: it has no instances to check)."""
    if is_typeddict(deps_type):
        return isinstance(deps, dict)
    return isinstance(deps, deps_type)


def deps_types_fit(given: type[Any], wanted: type[Any]) -> bool:
    """Whether deps of type ``given`` are what a tool taking ``ToolContext[wanted]`` wants
    (a ``TypedDict`` wants a dict: which keys, the type checkers tell). Asked at
    registration; a ``wanted`` that ``issubclass()`` cannot check (a ``Protocol`` with data
    members, runtime-checkable or not) is not checked: ``True``."""
    if given is wanted:
        return True
    if is_typeddict(wanted):
        return issubclass(given, dict)  # a TypedDict's class is a dict's subclass
    try:
        return issubclass(given, wanted)
    except TypeError:  # issubclass() cannot check it
        return True
