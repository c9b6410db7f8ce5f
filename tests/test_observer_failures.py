"""An observer (``Instrumentation``) that raises, as the turn loop meets it: every call
still gets exactly one result in the history, every span started ends once, and an
observer's exception while the run is already stopping (cancelled, aborted, failed) is
logged while the run stops for its own reason; at any other time it is the run's error.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator

import anyio
import pytest
from support import assert_history_valid, calls, results_of

from llm_worker import (
    Abort,
    Approve,
    Deny,
    Limits,
    LlmEvent,
    Pause,
    ProviderError,
    RunFailed,
    Skip,
    TextDelta,
    ToolCallProgress,
    ToolContext,
    Usage,
    UsageLimitExceededError,
    Worker,
    WorkerAbortedError,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio

STOPPING_LOG = "failed while the run was stopping"


class Span:
    """A request's or a call's span: raises at its end when its owner says so."""

    def __init__(self, owner: Faulty, kind: str) -> None:
        self.owner = owner
        self.kind = kind
        self.ended = 0

    def activate(self) -> Broken | None:
        kind, fails = self.kind, self.owner.fails
        wanted = f"{kind} activate" in fails or f"{kind} exit" in fails
        return Broken(self.owner, kind) if wanted else None

    def end(self, result: object, error: BaseException | None) -> None:
        self.ended += 1
        if error is not None:
            how = "raised"
        elif result is None:
            how = "cancelled"
        else:
            how = "error result" if getattr(result, "is_error", False) else "ok"
        self.owner.fail_at(f"{self.kind} end {how}")


class Broken:
    """An activation whose ``__enter__`` raises, or (``"<kind> exit"``) whose ``__exit__``
    raises once the step it was around raised."""

    def __init__(self, owner: Faulty, kind: str) -> None:
        self.owner = owner
        self.kind = kind

    def __enter__(self) -> None:
        self.owner.fail_at(f"{self.kind} activate")

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        if exc is not None:
            self.owner.fail_at(f"{self.kind} exit")


class RunSpan:
    def __init__(self, owner: Faulty) -> None:
        self.owner = owner

    def request(self, request: object, number: int) -> Span:
        return self.owner.started(Span(self.owner, "request"))

    def tool_call(self, call: object, meta: object) -> Span:
        return self.owner.started(Span(self.owner, "tool"))

    def decided(self, call: object, outcome: str, reason: str | None) -> None:
        self.owner.fail_at(f"decided {outcome}")

    def link(self) -> None:
        return None

    def activate(self) -> Broken | None:
        return Broken(self.owner, "run") if "run exit" in self.owner.fails else None

    def end(self, outcome: str, error: BaseException | None, usage: object) -> None:
        self.owner.outcomes.append(outcome)
        self.owner.fail_at(f"run end {outcome}")


class Faulty:
    """An observer raising ``RuntimeError`` at each point named in ``fails``:
    ``"tool end cancelled"``, ``"request end raised"``, ``"decided denied"``..."""

    def __init__(self, *fails: str) -> None:
        self.fails = set(fails)
        self.spans: list[Span] = []
        self.outcomes: list[str] = []  # each run's, as its RunSpan ended

    def run(self, **_: object) -> RunSpan:
        return RunSpan(self)

    def started(self, span: Span) -> Span:
        self.spans.append(span)
        return span

    def fail_at(self, point: str) -> None:
        if point in self.fails:
            raise RuntimeError(f"observer bug at {point}")

    def all_ended_once(self) -> bool:
        return all(span.ended == 1 for span in self.spans)


@tool_registry
class Tools:
    """A tool that hangs until cancelled (telling when ``expected`` of them run), one
    that answers at once, and one that needs approval."""

    def __init__(self, expected: int = 2) -> None:
        self.expected = expected
        self.running = 0
        self.all_running = anyio.Event()

    @tool
    async def hang(self) -> str:
        """Never finishes."""
        self.running += 1
        if self.running >= self.expected:
            self.all_running.set()
        await anyio.sleep_forever()
        return "never"

    @tool
    async def hang_reporting(self, ctx: ToolContext[None]) -> str:
        """Never finishes; says so once every hanging call runs."""
        self.running += 1
        if self.running >= self.expected:
            self.all_running.set()
        await self.all_running.wait()
        ctx.report_progress(1)
        await anyio.sleep_forever()
        return "never"

    @tool
    async def quick(self) -> str:
        """Answers at once."""
        return "quick"

    @tool(requires_approval=True)
    async def risky(self) -> str:
        """Needs a human's approval."""
        return "done"


def observed(client: ScriptedClient, observer: Faulty, **limits: float) -> tuple[Worker, Tools]:
    worker = Worker(client, instrumentation=observer, limits=Limits(**limits))
    tools = Tools()
    worker.register_tools(tool_definitions(tools))
    return worker, tools


def stopping_logs(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "llm_worker" and STOPPING_LOG in r.message]


async def test_a_span_end_failing_as_the_run_is_cancelled_leaves_every_call_its_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Cancelled while two calls run, the observer's ToolSpan.end(None, None) raising: the
    cancellation goes on (the error is logged, each span's), both calls get their
    "cancelled" result, and the next run sends a valid history."""
    client = ScriptedClient([calls(("hang", {}), ("hang", {})), "done"])
    observer = Faulty("tool end cancelled")
    worker, tools = observed(client, observer)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(worker.run, "go")
            await tools.all_running.wait()
            group.cancel_scope.cancel()
    assert_history_valid(worker.history)
    assert [r.content for r in results_of(worker.history)] == [
        "Tool call 'hang' was cancelled before it finished"
    ] * 2
    assert observer.all_ended_once()
    assert observer.outcomes == ["cancelled"]
    assert len(stopping_logs(caplog)) == 2
    with anyio.fail_after(5):
        assert await worker.run("again") is WorkerResult.FINISHED
    assert_history_valid(client.requests[1].messages)


async def test_a_span_end_failing_as_the_reader_leaves_leaves_every_call_its_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The reader of run_stream() leaving while two calls run (at their first progress
    report), the observer's ToolSpan.end raising: the stream closes as usual and both
    calls get their result."""
    client = ScriptedClient([calls(("hang_reporting", {}), ("hang_reporting", {})), "done"])
    observer = Faulty("tool end cancelled")
    worker, _ = observed(client, observer)
    with anyio.fail_after(5):
        async with worker.run_stream("go") as stream:
            async for event in stream:
                if isinstance(event, ToolCallProgress):
                    break
    assert_history_valid(worker.history)
    assert len(results_of(worker.history)) == 2
    assert observer.all_ended_once()
    assert len(stopping_logs(caplog)) == 2


async def test_observer_errors_as_a_hook_aborts_keep_the_abort(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A post-hook aborting on one call's result while another runs and a third waits for
    a runner; the observer raising at the running call's end and at the waiting call's
    "aborted" decision: the run is aborted (not failed with the observer's error), and
    every call has its result."""
    client = ScriptedClient([calls(("quick", {}), ("hang", {}), ("hang", {}))])
    observer = Faulty("tool end cancelled", "decided aborted")
    worker, tools = observed(client, observer, max_concurrent_calls=2)
    tools.expected = 1

    async def abort_on_quick(ctx):
        if ctx.call.name == "quick":
            await tools.all_running.wait()  # the hang call is running by then
            return Abort("enough")
        return None

    worker.add_post_tool_call_hook(abort_on_quick)
    with anyio.fail_after(5), pytest.raises(WorkerAbortedError, match="enough"):
        await worker.run("go")
    assert_history_valid(worker.history)
    assert len(results_of(worker.history)) == 3
    assert observer.all_ended_once()
    assert observer.outcomes == ["aborted"]
    assert len(stopping_logs(caplog)) == 2


async def test_a_decision_failing_as_a_pre_hook_aborts_keeps_the_abort(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A pre-hook skipping one call and aborting on the next, the observer raising at
    the "skipped" and "aborted" decisions: the run is aborted, as the hook said."""
    client = ScriptedClient([calls(("quick", {}), ("hang", {}))])
    observer = Faulty("decided skipped", "decided aborted")
    worker, _ = observed(client, observer)
    worker.add_pre_tool_call_hook(
        lambda ctx: Skip("no") if ctx.call.name == "quick" else Abort("x")
    )
    with anyio.fail_after(5), pytest.raises(WorkerAbortedError):
        await worker.run("go")
    assert_history_valid(worker.history)
    assert observer.outcomes == ["aborted"]
    assert len(stopping_logs(caplog)) == 2


async def test_a_request_span_failing_on_a_provider_error_keeps_that_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The observer's RequestSpan.end(None, error) raising: the run fails with the
    provider's error, not the observer's."""

    def down(request: object) -> None:
        raise ProviderError("test", "down", retryable=True)

    observer = Faulty("request end raised")
    worker, _ = observed(ScriptedClient([down]), observer)
    with anyio.fail_after(5), pytest.raises(ProviderError, match="down"):
        await worker.run("go")
    assert observer.all_ended_once()
    assert observer.outcomes == ["failed"]
    assert len(stopping_logs(caplog)) == 1


async def test_a_request_span_failing_at_its_end_still_counts_the_response() -> None:
    """The observer's RequestSpan.end(message, None) raising: the run fails with its error,
    and the response it ended still counts (it was paid for): the next retry is refused by
    the token budget instead of spending past it."""
    paid = ScriptedResponse(text="answer", usage=Usage(input_tokens=5000, output_tokens=900))
    observer = Faulty("request end ok")
    worker, _ = observed(ScriptedClient([paid, paid]), observer, max_input_tokens=6000)
    with anyio.fail_after(5):
        with pytest.raises(RuntimeError, match="observer bug at request end ok"):
            await worker.run("go")
        assert (worker.run_usage.requests, worker.run_usage.input_tokens) == (1, 5000)
        with pytest.raises(RuntimeError, match="observer bug at request end ok"):
            await worker.retry()
        assert (worker.run_usage.requests, worker.run_usage.input_tokens) == (2, 10000)
        with pytest.raises(UsageLimitExceededError, match="max_input_tokens"):
            await worker.retry()
    assert observer.all_ended_once()
    assert observer.outcomes == ["failed", "failed", "failed"]


async def test_a_span_end_failing_on_a_timeout_is_the_runs_error_as_it_is() -> None:
    """Two calls timing out together, the observer raising at a timed-out call's end:
    that error is the run's (as any observer error in the course of a run), raised as it
    is and not in an exception group, and every call has its result."""
    client = ScriptedClient([calls(("hang", {}), ("hang", {})), "done"])
    observer = Faulty("tool end error result")
    worker, _ = observed(client, observer, tool_timeout=0.05)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer bug") as raised:
        await worker.run("go")
    assert type(raised.value) is RuntimeError
    assert_history_valid(worker.history)
    assert len(results_of(worker.history)) == 2
    assert observer.all_ended_once()
    assert observer.outcomes == ["failed"]


async def test_a_denial_failing_on_resume_still_gives_every_call_its_result() -> None:
    """A resume denying one call and approving another, the observer raising at the
    "denied" decision: the resume fails with that error, the denied call keeps its
    denial and the approved one is "not run", and the worker runs again."""
    client = ScriptedClient([calls(("risky", {}), ("risky", {})), "done"])
    observer = Faulty("decided denied")
    worker, _ = observed(client, observer)
    with anyio.fail_after(5):
        assert await worker.run("go") is WorkerResult.PAUSED
    decisions = {"call_0_0": Deny("no"), "call_0_1": Approve()}
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer bug at decided denied"):
        await worker.resume(decisions)
    assert_history_valid(worker.history)
    denied, approved = results_of(worker.history)
    assert "denied" in denied.content
    assert "did not run" in approved.content
    assert observer.outcomes == ["paused", "failed"]
    with anyio.fail_after(5):
        assert await worker.run("again") is WorkerResult.FINISHED
    assert_history_valid(client.requests[1].messages)


async def test_an_observer_error_in_the_course_of_a_run_is_its_error() -> None:
    """The observer raising at a call's end with its result, the run not stopping: as
    documented, that error is the run's, and every call still has its result."""
    client = ScriptedClient([calls(("quick", {}), ("quick", {})), "done"])
    observer = Faulty("tool end ok")
    worker, _ = observed(client, observer)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer bug at tool end ok"):
        await worker.run("go")
    assert_history_valid(worker.history)
    assert len(results_of(worker.history)) == 2
    assert observer.all_ended_once()


async def test_a_pause_is_unchanged_by_a_quiet_observer() -> None:
    """The failing points above are the observer's only: with none, a held call pauses and
    resumes as usual (the resumed batch's decisions are told inside the loop now)."""
    client = ScriptedClient([calls(("quick", {})), "done"])
    observer = Faulty()
    worker, _ = observed(client, observer)
    worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
    with anyio.fail_after(5):
        assert await worker.run("go") is WorkerResult.PAUSED
        assert await worker.resume(Deny("no")) is WorkerResult.FINISHED
    assert_history_valid(worker.history)
    assert observer.outcomes == ["paused", "finished"]


async def test_a_reader_leaving_at_run_failed_is_not_raised_the_observers_error() -> None:
    """The observer raising at a parallel call's end fails the run (RunFailed carries it);
    a reader that leaves at that event is not raised it again, as for an inline call: only
    a tool's KeyboardInterrupt or SystemExit is kept to raise on leaving."""
    client = ScriptedClient([calls(("quick", {}), ("quick", {})), "done"])
    observer = Faulty("tool end ok")
    worker, _ = observed(client, observer)
    failed: list[BaseException] = []
    with anyio.fail_after(5):
        async with worker.run_stream("go") as stream:
            async for event in stream:
                if isinstance(event, RunFailed):
                    failed.append(event.error)
                    break
    assert [type(error) for error in failed] == [RuntimeError]
    assert_history_valid(worker.history)
    assert len(results_of(worker.history)) == 2


async def test_a_tool_spans_activation_that_raises_leaves_no_call_unawaited():
    """A call's activation whose ``__enter__`` raises: the run fails with the observer's
    error, the call gets its result, and the call's coroutine is closed, not left for the
    garbage collector to warn about."""
    faulty = Faulty("tool activate")
    worker = Worker(ScriptedClient([calls(("quick", {}))]), instrumentation=faulty)
    worker.register_tools(tool_definitions(Tools()))
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="tool activate"):
        await worker.run("go")
    gc.collect()  # a coroutine never awaited would warn here: an error in this suite
    assert_history_valid(worker.history)
    assert faulty.all_ended_once()


@pytest.mark.parametrize("parallel", [False, True], ids=["inline", "parallel"])
async def test_a_call_whose_span_end_fails_keeps_the_result_it_ran_to(parallel: bool) -> None:
    """The observer raising at the end of a call that ran: the run fails with its error,
    and the history keeps what the call returned (the model must not read that a call
    which ran, and maybe changed something, was cancelled)."""
    pairs = [("quick", {}), ("quick", {})] if parallel else [("quick", {})]
    client = ScriptedClient([calls(*pairs), "done"])
    observer = Faulty("tool end ok")
    worker, _ = observed(client, observer)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer bug at tool end ok"):
        await worker.run("go")
    assert_history_valid(worker.history)
    first = results_of(worker.history)[0]
    assert (first.content, first.is_error) == ("quick", False)


async def test_a_call_whose_span_end_fails_with_post_hooks_is_withheld_not_cancelled() -> None:
    """With a post-hook that never saw the result, the call that ran reads "withheld"."""
    client = ScriptedClient([calls(("quick", {})), "done"])
    worker, _ = observed(client, Faulty("tool end ok"))
    worker.add_post_tool_call_hook(lambda ctx: None)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer bug"):
        await worker.run("go")
    (result,) = results_of(worker.history)
    assert "withheld" in result.content
    assert "cancel" not in result.content


async def test_a_timed_out_call_whose_span_end_fails_reads_timed_out() -> None:
    """The observer raising at a timed-out call's end: the call reads its timeout."""
    client = ScriptedClient([calls(("hang", {}), ("quick", {})), "done"])
    worker, _ = observed(client, Faulty("tool end error result"), tool_timeout=0.05)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="observer bug"):
        await worker.run("go")
    assert_history_valid(worker.history)
    hung = results_of(worker.history)[0]
    assert "timed out" in hung.content, hung.content


@pytest.mark.parametrize("how", ["failed", "aborted", "cancelled", "reader left"])
async def test_a_run_span_end_failing_as_the_run_stops_lets_it_stop_for_its_reason(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """RunSpan.end raising as the run stops for a reason of its own: that reason goes on
    (the run's error, its cancellation, the reader's leaving) and the observer's error is
    logged."""
    observer = Faulty(f"run end {how if how != 'reader left' else 'cancelled'}")
    hanging = calls(("hang", {}), ("hang", {}))
    script = [hanging] if how == "cancelled" else [calls(("quick", {})), "done"]
    client = _FailingClient() if how == "failed" else ScriptedClient(script)
    worker, tools = observed(client, observer)  # type: ignore[arg-type]
    with anyio.fail_after(5):
        if how == "failed":
            with pytest.raises(ProviderError, match="the model is down"):
                await worker.run("go")
        elif how == "aborted":
            worker.add_pre_tool_call_hook(lambda ctx: Abort("no"))
            with pytest.raises(WorkerAbortedError):
                await worker.run("go")
        elif how == "cancelled":
            with anyio.move_on_after(5) as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(worker.run, "go")
                    await tools.all_running.wait()
                    group.cancel_scope.cancel()
            assert not scope.cancelled_caught
        else:
            async with worker.run_stream("go") as stream:
                async for _ in stream:
                    break
    assert observer.outcomes == [how if how != "reader left" else "cancelled"]
    assert len(stopping_logs(caplog)) == 1
    assert_history_valid(worker.history)


async def test_a_run_span_end_failing_at_a_finished_run_is_its_error() -> None:
    """At a run that ended as it should, the observer's error is the run's error."""
    observer = Faulty("run end finished")
    worker, _ = observed(ScriptedClient(["done"]), observer)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="run end finished"):
        await worker.run("go")


@pytest.mark.parametrize("kind", ["request", "tool", "run"])
async def test_an_activation_exit_failing_as_the_run_is_cancelled_lets_it_stop(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An activation whose ``__exit__`` raises once the step it was around raised (here:
    the run's cancellation, in the model's stream, a call, a hook): the cancellation goes
    on, the observer's error is logged, and the history stays valid."""
    observer = Faulty(f"{kind} exit")
    started = anyio.Event()
    script = ScriptedClient([calls(("hang", {}), ("hang", {})), "done"])
    client = _HangingClient(started) if kind == "request" else script
    worker, tools = observed(client, observer)  # type: ignore[arg-type]
    if kind == "run":

        async def hook(ctx: object) -> None:
            started.set()
            await anyio.sleep_forever()

        worker.add_pre_tool_call_hook(hook)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(worker.run, "go")
            if kind == "tool":
                await tools.all_running.wait()
            else:
                await started.wait()
            group.cancel_scope.cancel()
    assert len(stopping_logs(caplog)) == (2 if kind == "tool" else 1)  # (two calls hang)
    assert_history_valid(worker.history)
    assert observer.outcomes == ["cancelled"]


class _FailingClient:
    async def stream(self, request: object) -> AsyncIterator[LlmEvent]:
        raise ProviderError("test", "the model is down")
        yield TextDelta("")  # an async generator


class _HangingClient:
    def __init__(self, started: anyio.Event) -> None:
        self.started = started

    async def stream(self, request: object) -> AsyncIterator[LlmEvent]:
        yield TextDelta("thinking")
        self.started.set()
        await anyio.sleep_forever()
        yield TextDelta("never")
