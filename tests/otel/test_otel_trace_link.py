"""A run's trace link (``RunSpan.link()``, kept in ``RunState.trace_link``) under a long or
hostile ``tracestate``: it keeps the ``traceparent`` and a ``tracestate`` cut as W3C Trace
Context says to cut one (https://www.w3.org/TR/trace-context/#tracestate-limits): the
list-members over 128 characters first, then members from the right, to at most 32
members and 512 characters. A link is at most 1024 characters a string: a run under a
longer tracestate (which vendors send, and the API's propagator lets in up to 8192) lost
its whole link, with an ERROR and a traceback for each run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.trace.span import TraceState
from otel_support import OpenAIScripted, Telemetry

from llm_worker import (
    Approve,
    Pause,
    RunState,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedResponse

pytestmark = pytest.mark.anyio

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def member(key: str, length: int) -> str:
    """A valid list-member ``keyyy=vvv...`` of ``length`` characters (at most 513: a key
    and a value are at most 256 each)."""
    value = min(256, length - len(key) - 1)
    return f"{key.ljust(length - 1 - value, 'y')}={'v' * value}"


# Kept: the members of at most 128 characters, from the left, until the next would pass
# 512 (3 * 128 + 125 and 3 commas: 512 exactly).
KEPT = [member("a0", 128), member("a1", 128), member("a2", 128), member("a3", 125)]
LONG = [member(f"long{i}", length) for i, length in enumerate((129, 200, 256, 400, 513))]
# The header of 15 members, 2,190 characters: the long ones among the kept, then members
# that would fit alone but are past 512 (dropped from the right, short or not).
TRACESTATE = ",".join(
    [
        *(KEPT[0], LONG[0], KEPT[1], LONG[1], KEPT[2], LONG[2], KEPT[3], LONG[3]),
        *(member("b0", 4), member("b1", 120), member("b2", 128), LONG[4]),
        *(member("b3", 10), member("b4", 60), member("b5", 4)),
    ]
)


@tool_registry
class Files:
    @tool
    async def delete(self, path: str) -> str:
        """Delete a file."""
        return "deleted " + path


def paused_worker(telemetry: Telemetry, *, pause: bool = True) -> Worker:
    call = ScriptedCall("delete", {"path": "a"})
    worker = Worker(
        OpenAIScripted([ScriptedResponse(tool_calls=[call]), "done"]),
        instrumentation=telemetry.instrumentation(),
    )
    worker.register_tools(tool_definitions(Files()))
    if pause:
        worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
    return worker


class HostileState(Mapping[str, object]):
    """A trace_state that is no TraceState: any pairs, in order, a mapping of any size."""

    def __init__(self, pairs: list[tuple[object, object]], fail: bool = False) -> None:
        self._pairs = pairs
        self._fail = fail

    def __getitem__(self, key: object) -> object:
        return dict(self._pairs)[key]

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._pairs)  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._pairs)

    def items(self):  # type: ignore[override]
        if self._fail:
            raise RuntimeError("no reading this")
        return iter(self._pairs)


@contextmanager
def incoming(tracestate: str) -> Iterator[None]:
    """Inside a request whose trace context the application's framework extracted with
    W3C's propagator (the API's)."""
    carrier = {"traceparent": TRACEPARENT, "tracestate": tracestate}
    token = otel_context.attach(TraceContextTextMapPropagator().extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


@contextmanager
def under_state(state: object) -> Iterator[None]:
    """Under a span whose trace_state is ``state`` (a tracer of the application's, or
    another SDK, made it): the SDK's run span inherits it as it is."""
    parent = SpanContext(
        int(TRACE_ID, 16),
        int(PARENT_ID, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=state,  # type: ignore[arg-type]
    )
    with trace.use_span(NonRecordingSpan(parent)):
        yield


def run_span(telemetry: Telemetry) -> ReadableSpan:
    (span,) = telemetry.named("invoke_agent")
    return span


def no_errors(caplog: pytest.LogCaptureFixture) -> None:
    failed = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert failed == [], [r.getMessage() for r in failed]


class TestALongTracestate:
    async def test_is_cut_to_w3c_limits(self, telemetry, caplog):
        """Over 128 characters first, then from the right: the link keeps the traceparent
        of the run's span and 512 characters of tracestate; nothing is logged as an
        error."""
        assert len(TRACESTATE) > 1024
        caplog.set_level(logging.DEBUG)
        worker = paused_worker(telemetry)
        with incoming(TRACESTATE):
            assert await worker.run("delete a") is WorkerResult.PAUSED
        link = worker.state.trace_link
        assert link is not None
        context = run_span(telemetry).context
        assert context is not None
        assert dict(link) == {
            "traceparent": f"00-{TRACE_ID}-{context.span_id:016x}-01",
            "tracestate": ",".join(KEPT),
        }
        assert len(link["tracestate"]) == 512
        no_errors(caplog)

    async def test_survives_the_saved_state_and_links_the_resumed_run(self, telemetry, caplog):
        """The cut link goes through to_json()/from_json(): a worker resuming it (in no
        trace of the original's) links its run to the paused run's span, with the kept
        tracestate."""
        caplog.set_level(logging.DEBUG)
        worker = paused_worker(telemetry)
        with incoming(TRACESTATE):
            await worker.run("delete a")
        saved = worker.state.to_json()
        assert TRACESTATE not in saved
        state = RunState.from_json(saved)
        assert state.trace_link == worker.state.trace_link
        paused = run_span(telemetry)
        telemetry.exporter.clear()

        other = paused_worker(telemetry, pause=False)
        other.load_state(state)
        assert await other.resume(Approve()) is WorkerResult.FINISHED
        resumed = run_span(telemetry)
        assert paused.context is not None
        assert resumed.context is not None
        (link,) = resumed.links
        assert (link.context.trace_id, link.context.span_id) == (
            paused.context.trace_id,
            paused.context.span_id,
        )
        assert link.context.trace_state.to_header() == ",".join(KEPT)
        assert resumed.context.trace_id != paused.context.trace_id  # its own trace, linked
        no_errors(caplog)

    async def test_of_only_long_members_gives_a_link_without_tracestate(self, telemetry, caplog):
        """No member of at most 128 characters: the link is the traceparent alone, and a
        resumed run still links to the paused one."""
        caplog.set_level(logging.DEBUG)
        tracestate = ",".join(LONG)
        assert len(tracestate) > 1024
        worker = paused_worker(telemetry)
        with incoming(tracestate):
            await worker.run("delete a")
        link = worker.state.trace_link
        assert link is not None
        assert list(link) == ["traceparent"]
        paused = run_span(telemetry)
        assert paused.context is not None
        assert link["traceparent"] == f"00-{TRACE_ID}-{paused.context.span_id:016x}-01"

        other = paused_worker(telemetry, pause=False)
        other.load_state(RunState.from_json(worker.state.to_json()))
        await other.resume(Approve())
        (resumed,) = [s for s in telemetry.named("invoke_agent") if s is not paused]
        assert [link.context.span_id for link in resumed.links] == [paused.context.span_id]
        no_errors(caplog)

    async def test_keeps_at_most_32_members(self, telemetry):
        """A state of more than 32 short members (an SDK's own, the API's propagator
        takes no more than 32) keeps the first 32."""
        members = [(f"k{i}", "v") for i in range(40)]  # 40 * 4 + 39: 199 characters
        worker = paused_worker(telemetry)
        with under_state(HostileState(members)):
            await worker.run("delete a")
        link = worker.state.trace_link
        assert link is not None
        assert link["tracestate"] == ",".join(f"k{i}=v" for i in range(32))

    async def test_with_empty_members_keeps_the_members(self, telemetry):
        """Thousands of commas (empty members, valid) among members over the limits."""
        tracestate = ",".join(["x=1", *[""] * 3000, "y=2", *LONG])
        worker = paused_worker(telemetry)
        with incoming(tracestate):
            await worker.run("delete a")
        link = worker.state.trace_link
        assert link is not None
        assert link["tracestate"] == "x=1,y=2"


HUGE = 2_000_000


class TestAHostileTracestate:
    """Whatever a span's trace_state is, the run keeps a link with its traceparent, no
    error or traceback is logged, and the cut takes one pass."""

    @pytest.mark.parametrize(
        ("state", "kept"),
        [
            pytest.param("a=1," * (HUGE // 4), None, id="a string of commas"),
            pytest.param(TraceState(), None, id="empty"),
            pytest.param(HostileState([("a", "1")], fail=True), None, id="unreadable"),
            pytest.param(
                HostileState([(f"k{i}", "v" * 200) for i in range(HUGE // 200)] + [("z", "1")]),
                "z=1",
                id="megabytes of long members",
            ),
            pytest.param(HostileState([("k", "v" * HUGE), ("z", "1")]), "z=1", id="a huge one"),
            pytest.param(
                HostileState(
                    [(1, "a"), ("b", 2), ("UPPER", "x"), ("c", "x,y=z"), ("d", ""), ("e", "5")]
                ),
                "e=5",
                id="garbage",
            ),
        ],
    )
    async def test_gives_a_link_with_what_is_valid(self, telemetry, caplog, state, kept):
        caplog.set_level(logging.DEBUG)
        worker = paused_worker(telemetry)
        with under_state(state):
            assert await worker.run("delete a") is WorkerResult.PAUSED
        link = worker.state.trace_link
        assert link is not None
        assert link["traceparent"].startswith(f"00-{TRACE_ID}-")
        assert link.get("tracestate") == kept
        no_errors(caplog)

    async def test_a_megabyte_header_is_dropped_by_the_propagator(self, telemetry, caplog):
        """The API's propagator takes no tracestate over 8192 characters (and says so):
        the link is the traceparent alone."""
        caplog.set_level(logging.DEBUG)
        worker = paused_worker(telemetry)
        with incoming(",".join(["a=1"] * (HUGE // 4))):
            await worker.run("delete a")
        link = worker.state.trace_link
        assert link is not None
        assert list(link) == ["traceparent"]
        no_errors(caplog)
