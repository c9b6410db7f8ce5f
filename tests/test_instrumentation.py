"""The Instrumentation protocol (``_instrumentation.py``) as the turn loop drives it: every
span started ends exactly once, with what happened; a tool call's span is active in the
task and the thread that run it, and never around the application's own code.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio
import pytest
from support import calls, results_of

from llm_worker import (
    Abort,
    Approve,
    Deny,
    Limits,
    Pause,
    ProviderError,
    RunState,
    RunStateError,
    Skip,
    ToolMeta,
    ToolResult,
    Worker,
    WorkerAbortedError,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedClient

ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar("active", default=None)


@dataclass
class Span:
    name: str
    log: list[tuple[str, ...]]
    ended: int = 0

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        token = ACTIVE.set(self.name)
        try:
            yield
        finally:
            ACTIVE.reset(token)

    def end(self, result, error) -> None:
        self.ended += 1
        if result is not None and hasattr(result, "is_error"):
            self.log.append(("end", self.name, "error" if result.is_error else "ok"))
        elif result is not None:  # a request's message
            self.log.append(("end", self.name, "ok"))
        elif error is not None:
            self.log.append(("end", self.name, type(error).__name__))
        else:
            self.log.append(("end", self.name, "cancelled"))


@dataclass
class RunRecorder:
    log: list[tuple[str, ...]]
    number: int = 0
    spans: list[Span] = field(default_factory=list)

    def request(self, request, number):
        span = Span(f"request {number}", self.log)
        self.spans.append(span)
        self.log.append(("start", span.name))
        return span

    def tool_call(self, call, meta):
        span = Span(f"tool {call.id}", self.log)
        self.spans.append(span)
        self.log.append(("start", span.name))
        return span

    def decided(self, call, outcome, reason):
        assert type(outcome) is str  # a ToolCallOutcome value, or "paused"
        self.log.append(("decided", call.id, outcome, reason or ""))

    def link(self):
        return {"run": str(self.number)}

    def end(self, outcome, error, usage):
        self.log.append(("run end", outcome, type(error).__name__ if error else ""))


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []
        self.runs: list[RunRecorder] = []
        self.continued: list[object] = []  # each run's `continues`

    def run(self, *, kind, client, system_prompt, tools, continues):
        self.log.append(("run", kind))
        self.continued.append(None if continues is None else dict(continues))
        recorder = RunRecorder(self.log, len(self.runs))
        self.runs.append(recorder)
        return recorder

    def all_ended_once(self) -> bool:
        return all(span.ended == 1 for run in self.runs for span in run.spans)


@tool_registry
class Probe:
    """Tools that report which span is active while they run."""

    def __init__(self) -> None:
        self.seen: dict[str, str | None] = {}

    @tool
    async def where(self, key: str) -> str:
        """Report the active span (async)."""
        await anyio.sleep(0)
        self.seen[key] = ACTIVE.get()
        return "ok"

    @tool
    def where_in_thread(self, key: str) -> str:
        """Report the active span (in a worker thread)."""
        self.seen[key] = (
            f"{ACTIVE.get()} in {threading.current_thread() is not threading.main_thread()}"
        )
        return "ok"

    @tool
    async def hang(self) -> str:
        """Never finishes."""
        await anyio.sleep_forever()
        return "never"


def traced(client: ScriptedClient, **limits: float) -> tuple[Worker, Probe, Recorder]:
    recorder = Recorder()
    worker = Worker(client, instrumentation=recorder, limits=Limits(**limits))
    probe = Probe()
    worker.register_tools(tool_definitions(probe))
    return worker, probe, recorder


@pytest.mark.anyio
async def test_spans_of_a_run_with_parallel_calls():
    """A run: its requests and each tool call get a span that ends once; each call's span
    is the active one inside it, in the async task and in the thread; the reader's own
    code never runs inside a span."""
    client = ScriptedClient(
        [calls(("where", {"key": "a"}), ("where_in_thread", {"key": "b"})), "done"]
    )
    worker, probe, recorder = traced(client)
    async with worker.run_stream("go") as stream:
        async for _ in stream:
            assert ACTIVE.get() is None
    assert probe.seen == {"a": "tool call_0_0", "b": "tool call_0_1 in True"}
    assert recorder.all_ended_once()
    assert recorder.log[0] == ("run", "run")
    assert recorder.log[-1] == ("run end", "finished", "")
    assert ("end", "tool call_0_0", "ok") in recorder.log
    assert next(e for e in recorder.log if e[0] == "start") == ("start", "request 1")


@pytest.mark.anyio
async def test_decisions_are_reported():
    """Skipped, unknown, held and denied calls are reported as decisions, with the hook's
    or the human's reason."""
    client = ScriptedClient(
        [calls(("where", {"key": "a"}), ("nope", {}), ("where", {"key": "b"})), "done"]
    )
    worker, _, recorder = traced(client)
    worker.add_pre_tool_call_hook(
        lambda ctx: Skip("no") if "a" in ctx.call.input_json else Pause("ask")
    )
    await worker.run("go")
    await worker.resume(Deny("not now"))
    decided = [e for e in recorder.log if e[0] == "decided"]
    assert decided == [
        ("decided", "call_0_0", "skipped", "no"),
        ("decided", "call_0_1", "not_found", ""),
        ("decided", "call_0_2", "paused", "ask"),
        ("decided", "call_0_2", "denied", "not now"),
    ]
    assert [e for e in recorder.log if e[0] == "run end"] == [
        ("run end", "paused", ""),
        ("run end", "finished", ""),
    ]
    assert recorder.all_ended_once()


@pytest.mark.anyio
async def test_calls_settled_before_a_hook_stops_the_batch_are_reported():
    """An unknown tool's call, then a pre-hook aborting the next call: the first call's
    decision is reported too, then each call that never ran, with its outcome (the call
    held before the abort is "aborted", not "paused": it never runs)."""
    client = ScriptedClient(
        [calls(("nope", {}), ("where", {"key": "held"}), ("where", {"key": "stop"}))]
    )
    worker, _, recorder = traced(client)

    def decide(ctx):
        return Pause("ask") if "held" in ctx.call.input_json else Abort("stop")

    worker.add_pre_tool_call_hook(decide)
    with pytest.raises(WorkerAbortedError):
        await worker.run("go")
    decided = [e for e in recorder.log if e[0] == "decided"]
    assert decided == [
        ("decided", "call_0_0", "not_found", ""),
        ("decided", "call_0_1", "aborted", "stop"),
        ("decided", "call_0_2", "aborted", "stop"),
    ]


@pytest.mark.anyio
async def test_an_abort_and_a_provider_error_end_the_run_so():
    """An abort ends the run span as aborted; a provider error as failed."""
    client = ScriptedClient([calls(("where", {"key": "a"}))])
    worker, _, recorder = traced(client)
    worker.add_pre_tool_call_hook(lambda ctx: Abort("stop"))
    with pytest.raises(WorkerAbortedError):
        await worker.run("go")
    assert ("decided", "call_0_0", "aborted", "stop") in recorder.log
    assert recorder.log[-1] == ("run end", "aborted", "WorkerAbortedError")

    def fail(request):
        raise ProviderError("test", "down", retryable=True)

    worker2, _, recorder2 = traced(ScriptedClient([fail]))
    with pytest.raises(ProviderError):
        await worker2.run("go")
    assert recorder2.log[-2:] == [
        ("end", "request 1", "ProviderError"),
        ("run end", "failed", "ProviderError"),
    ]
    assert recorder2.all_ended_once()


@pytest.mark.anyio
async def test_cancelled_and_timed_out_calls_end_their_spans():
    """A call that times out ends its span with the timeout result; a run cancelled while
    calls run ends every span (as cancelled) and the run as cancelled."""
    client = ScriptedClient([calls(("hang", {}), ("hang", {})), "done"])
    worker, _, recorder = traced(client, tool_timeout=0.05)
    with anyio.fail_after(5):
        await worker.run("go")
    assert sorted(e for e in recorder.log if e[0] == "end" and e[1].startswith("tool")) == [
        ("end", "tool call_0_0", "error"),
        ("end", "tool call_0_1", "error"),
    ]
    assert recorder.all_ended_once()

    client = ScriptedClient([calls(("hang", {}), ("hang", {})), "done"])
    worker, _, recorder = traced(client)
    with anyio.fail_after(5), anyio.move_on_after(0.1):
        await worker.run("go")  # cancelled while both calls hang
    assert recorder.all_ended_once()
    assert recorder.log[-1] == ("run end", "cancelled", "")
    assert sorted(e for e in recorder.log if e[0] == "end" and e[1].startswith("tool")) == [
        ("end", "tool call_0_0", "cancelled"),
        ("end", "tool call_0_1", "cancelled"),
    ]


@pytest.mark.anyio
async def test_a_resumed_run_is_its_own_run():
    """resume() starts a run of kind "resume" whose approved calls get spans."""
    client = ScriptedClient([calls(("where", {"key": "a"})), "done"])
    worker, _, recorder = traced(client)
    worker.add_pre_tool_call_hook(lambda ctx: Pause())
    await worker.run("go")
    await worker.resume(Approve())
    assert [e for e in recorder.log if e[0] == "run"] == [("run", "run"), ("run", "resume")]
    assert recorder.all_ended_once()


@pytest.mark.anyio
async def test_a_resume_or_retry_continues_the_run_before_it_a_new_run_none():
    """A resume is given the paused run's link(), a retry the failed run's; a new run()
    continues nothing."""
    outcomes = [calls(("where", {"key": "a"})), "done"]

    def fail(request):
        raise ProviderError("test", "down", retryable=True)

    worker, _, recorder = traced(ScriptedClient([outcomes[0], fail, "done", "again"]))
    worker.add_pre_tool_call_hook(lambda ctx: Pause())
    await worker.run("go")  # run 0 pauses
    assert worker.state.trace_link == {"run": "0"}
    with pytest.raises(ProviderError):
        await worker.resume(Approve())  # run 1 fails after the call
    await worker.retry()  # run 2
    await worker.run("next")  # run 3: a new run
    assert recorder.continued == [None, {"run": "0"}, {"run": "1"}, None]
    worker.clear_history()
    assert worker.state.trace_link is None  # another conversation: nothing to continue


@pytest.mark.anyio
async def test_a_link_goes_with_the_saved_state_to_another_worker():
    """RunState keeps the link through JSON: a worker loading it (elsewhere) continues it."""
    worker, _, _ = traced(ScriptedClient([calls(("where", {"key": "a"}))]))
    worker.add_pre_tool_call_hook(lambda ctx: Pause())
    await worker.run("go")
    text = worker.state.to_json()
    assert json.loads(text)["run"]["trace_link"] == {"run": "0"}
    loaded = RunState.from_json(text)
    assert loaded == worker.state
    assert loaded.to_json() == text
    other, _, recorder = traced(ScriptedClient(["done"]))
    other.load_state(loaded)
    assert await other.resume(Approve()) is WorkerResult.FINISHED
    assert recorder.continued == [{"run": "0"}]
    untraced = Worker(ScriptedClient())  # a state without a link has no key for it
    assert "trace_link" not in json.loads(untraced.state.to_json())["run"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("link", "logged"),
    [
        (RuntimeError("observer down"), "observer down"),
        ({"k": 1}, "a trace link maps str to str, not int"),
        ({str(i): "v" for i in range(9)}, "at most 8 items, not 9"),
        ({"k": "v" * 1025}, "at most 1024 characters, not 1025"),
    ],
)
async def test_a_link_the_observer_cannot_give_is_logged_not_kept(link, logged, caplog):
    """link() raising or giving what no state could keep: logged; the run is unchanged and
    its resume continues nothing."""

    class Failing(Recorder):
        def run(self, **kwargs):
            recorder = super().run(**kwargs)

            def give():
                if isinstance(link, Exception):
                    raise link
                return link

            recorder.link = give
            return recorder

    recorder = Failing()
    worker = Worker(
        ScriptedClient([calls(("where", {"key": "a"})), "done"]), instrumentation=recorder
    )
    worker.register_tools(tool_definitions(Probe()))
    worker.add_pre_tool_call_hook(lambda ctx: Pause())
    with caplog.at_level(logging.ERROR, logger="llm_worker"):
        assert await worker.run("go") is WorkerResult.PAUSED
    assert "RunSpan.link() failed" in caplog.text
    assert logged in caplog.text
    assert worker.state.trace_link is None
    assert await worker.resume(Approve()) is WorkerResult.FINISHED
    assert recorder.continued == [None, None]


def test_a_run_state_checks_its_link():
    """RunState(trace_link=...) takes a few short strings; the JSON reader refuses more."""
    fields = RunState.from_json(Worker(ScriptedClient()).state.to_json())
    with pytest.raises(TypeError, match="mapping of str to str, not list"):
        RunState(
            history=(),
            paused=None,
            turns=0,
            run_usage=fields.run_usage,
            usage=fields.usage,
            tool_choice="auto",
            allowed_tools=None,
            fingerprint="x",
            trace_link=["a"],
        )
    data = json.loads(Worker(ScriptedClient()).state.to_json())
    data["run"]["trace_link"] = {"traceparent": "x" * 1025}
    with pytest.raises(RunStateError, match="trace_link"):
        RunState.from_json(json.dumps(data))
    data["run"]["trace_link"] = {"traceparent": 5}
    with pytest.raises(RunStateError, match="trace_link"):
        RunState.from_json(json.dumps(data))


def test_no_instrumentation_by_default():
    """A worker without instrumentation has none."""
    worker = Worker(ScriptedClient())
    worker.register_tool(lambda: (ToolMeta(name="x"), Probe.ToolWhere(Probe())))
    assert worker._session.instrumentation is None


@pytest.mark.anyio
async def test_an_observer_failing_at_the_start_changes_nothing():
    """An observer whose run() raises: the run fails with its error before anything
    changed (no user message, no decisions taken), and the worker can run again."""

    class Refusing(Recorder):
        fail = True

        def run(self, *, kind, client, system_prompt, tools, continues):
            if self.fail:
                raise RuntimeError("observer down")
            return super().run(
                kind=kind,
                client=client,
                system_prompt=system_prompt,
                tools=tools,
                continues=continues,
            )

    client = ScriptedClient([calls(("where", {"key": "a"})), "done"])
    recorder = Refusing()
    worker = Worker(client, instrumentation=recorder)
    worker.register_tools(tool_definitions(Probe()))
    worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
    with pytest.raises(RuntimeError, match="observer down"):
        await worker.run("go")
    assert worker.history == ()
    assert client.requests == []
    recorder.fail = False
    assert await worker.run("go") is WorkerResult.PAUSED
    recorder.fail = True
    with pytest.raises(RuntimeError, match="observer down"):
        await worker.resume({"call_0_0": Approve()})
    assert len(worker.pending) == 1
    assert len(worker.history) == 2
    recorder.fail = False
    assert await worker.resume({"call_0_0": Approve()}) is WorkerResult.FINISHED


class ActivatingRecorder(Recorder):
    """An observer whose run spans have the optional ``activate()``."""

    fail = False

    def run(self, *, kind, client, system_prompt, tools, continues):
        recorder = super().run(
            kind=kind, client=client, system_prompt=system_prompt, tools=tools, continues=continues
        )
        fail = self.fail

        @contextlib.contextmanager
        def activate() -> Iterator[None]:
            if fail:
                raise RuntimeError("observer broke")
            token = ACTIVE.set("run")
            try:
                yield
            finally:
                ACTIVE.reset(token)

        recorder.activate = activate  # type: ignore[attr-defined]
        return recorder


def hooked_worker(recorder: Recorder) -> tuple[Worker, list[tuple[str, str | None]]]:
    """A worker whose pre-hook, approval policy and post-hook note the active span."""
    seen: list[tuple[str, str | None]] = []

    def policy(ctx) -> bool:
        seen.append(("policy", ACTIVE.get()))
        return False

    worker = Worker(
        ScriptedClient([calls(("where", {"key": "a"})), "done"]), instrumentation=recorder
    )
    worker.register_tools(tool_definitions(Probe()), requires_approval=policy)
    worker.add_pre_tool_call_hook(lambda ctx: seen.append(("pre", ACTIVE.get())))
    worker.add_post_tool_call_hook(lambda ctx: seen.append(("post", ACTIVE.get())))
    return worker, seen


@pytest.mark.anyio
async def test_hooks_run_in_the_run_span_when_it_activates():
    """A run span with ``activate()`` is active around every hook and approval policy,
    and never while the reader has an event."""
    worker, seen = hooked_worker(ActivatingRecorder())
    with anyio.fail_after(5):
        async with worker.run_stream("go") as stream:
            async for _ in stream:
                assert ACTIVE.get() is None
    assert seen == [("pre", "run"), ("policy", "run"), ("post", "run")]


@pytest.mark.anyio
async def test_a_run_span_without_activate_runs_hooks_as_before():
    """``RunSpan.activate()`` is optional: an observer written before it works unchanged."""
    worker, seen = hooked_worker(Recorder())
    with anyio.fail_after(5):
        assert await worker.run("go") is WorkerResult.FINISHED
    assert seen == [("pre", None), ("policy", None), ("post", None)]


@pytest.mark.anyio
async def test_a_run_activation_that_raises_is_the_runs_error():
    """An ``activate()`` that raises fails the run, as a tool span's does: the hook never
    runs, the call gets its result, and the worker runs again once the observer works."""
    recorder = ActivatingRecorder()
    recorder.fail = True
    worker, seen = hooked_worker(recorder)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer broke"):
        await worker.run("go")
    gc.collect()  # a hook's coroutine never awaited would warn here: an error in this suite
    assert seen == []
    last = worker.history[-1]
    assert isinstance(last, ToolResult)
    assert last.is_error
    assert recorder.log[-1] == ("run end", "failed", "RuntimeError")
    recorder.fail = False
    worker.set_history(())
    with anyio.fail_after(5):
        assert await worker.run("go") is WorkerResult.FINISHED


@tool_registry
class Stuck:
    """A plain def that outlives its timeout, and a sequential tool that comes after it."""

    def __init__(self) -> None:
        self.release = threading.Event()

    @tool(timeout=0.05)
    def stuck(self) -> str:
        """Runs in a thread until released; abandoned at its timeout."""
        self.release.wait(10)
        return "late"

    @tool(sequential=True, timeout=0.2)
    async def write(self) -> str:
        """Waits for the abandoned thread's turn, within its own timeout."""
        return "written"


@pytest.mark.anyio
async def test_a_call_timed_out_waiting_for_its_turn_is_traced_as_any_other():
    """A sequential call waiting for a thread an earlier call abandoned, until its own
    timeout: its span starts before the wait and ends with the timed-out result."""
    script = [
        calls(("stuck", {}), ("write", {})),  # a runner runs write after stuck's thread
        "done",
    ]
    recorder = Recorder()
    worker = Worker(ScriptedClient(script), instrumentation=recorder)
    tools = Stuck()
    worker.register_tools(tool_definitions(tools))
    try:
        with anyio.fail_after(5):
            await worker.run("go")
    finally:
        tools.release.set()
    write = results_of(worker.history)[1]
    assert write.is_error
    assert "timed out" in write.content, write.content
    assert ("start", f"tool {write.call_id}") in recorder.log
    assert ("end", f"tool {write.call_id}", "error") in recorder.log
    assert recorder.all_ended_once()
