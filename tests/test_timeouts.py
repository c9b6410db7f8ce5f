"""Timeouts and cancellation of tool calls (``@tool(timeout=)``, ``Limits.tool_timeout``).

A timed-out ``async def`` tool is cancelled (its ``finally`` runs); a timed-out plain-``def``
tool's thread cannot be interrupted, so it is abandoned: the worker goes on at once and the
thread finishes on its own later. Either way the model reads
``Execution failed: tool '<name>' timed out after <N>s`` and the turn goes on.

Nothing here measures time: tools block on events that only the test releases, so
"the worker did not wait" is shown by the run ending while the tool is still blocked.
Every test runs under ``anyio.fail_after(GUARD)``: if a timeout never fires, the test
fails after ``GUARD`` seconds instead of waiting forever.
"""

from __future__ import annotations

import sys
import threading
import time

import anyio
import pytest

from llm_worker import (
    ExecutionFailedError,
    Limits,
    ToolExecutionError,
    ToolMeta,
    ToolResult,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

# Long enough that a tool blocked on an event never beats it; short enough to keep tests quick.
SHORT = 0.05
# A bound on how long a released thread may take to finish (never reached in practice).
THREAD_GRACE = 10.0
# How long a test may take before it fails: 60 times SHORT, so only a timeout that never
# fires reaches it (then the test fails rather than hangs).
GUARD = 3.0


def timed_out(name: str, seconds: float = SHORT) -> str:
    return f"Execution failed: tool '{name}' timed out after {seconds:g}s"


@tool_registry
class Waiting:
    """Tools that block until the test lets them go (or forever)."""

    def __init__(self) -> None:
        self.cleaned_up: list[str] = []
        self.started = threading.Event()  # a thread tool began
        self.entered = anyio.Event()  # an async tool began
        self.release = threading.Event()
        self.finished = threading.Event()

    @tool(timeout=SHORT)
    async def wait_async(self) -> str:
        """Wait forever; record that the wait was cleaned up."""
        try:
            await anyio.Event().wait()
        finally:
            self.cleaned_up.append("wait_async")
        return "unreachable"

    @tool(timeout=SHORT)
    def wait_thread(self) -> str:
        """Block this worker thread until the test releases it."""
        self.started.set()
        try:
            self.release.wait(THREAD_GRACE)
        finally:
            self.finished.set()
        return "released"

    @tool
    def block(self) -> str:
        """Block, with no timeout of its own (only the worker's)."""
        self.started.set()
        try:
            self.release.wait(THREAD_GRACE)
        finally:
            self.finished.set()
        return "released"

    @tool
    async def wait_untimed(self) -> str:
        """Wait forever, with no timeout of its own (only the worker's)."""
        self.entered.set()
        try:
            await anyio.Event().wait()
        finally:
            self.cleaned_up.append("wait_untimed")
        return "unreachable"

    @tool(timeout=1000)
    async def wait_loose(self) -> str:
        """Wait forever, with a timeout looser than the worker's."""
        await anyio.Event().wait()
        return "unreachable"

    @tool
    async def quick(self, text: str) -> str:
        """Answer at once."""
        return text


@tool_registry(timeout=SHORT)
class RegistryTimeout:
    """A registry-wide timeout, inherited by one tool and overridden by the other."""

    @tool
    async def inherits(self) -> str:
        await anyio.Event().wait()
        return "unreachable"

    @tool(timeout=2 * SHORT)
    async def overrides(self) -> str:
        await anyio.Event().wait()
        return "unreachable"


class HandWaiting:
    """A hand-written ``Tool`` that waits forever; it has no timeout of its own."""

    def __init__(self) -> None:
        self.cleaned_up = False

    async def execute(self, input_json: str) -> str:
        try:
            await anyio.Event().wait()
        finally:
            self.cleaned_up = True
        return "unreachable"


def make_worker(app: Waiting, limits: Limits | None = None) -> tuple[Worker, ScriptedClient]:
    client = ScriptedClient()
    worker = Worker(client, limits=limits)
    worker.register_tools(tool_definitions(app))
    return worker, client


async def run_batch(
    worker: Worker, client: ScriptedClient, *calls: ScriptedCall
) -> list[ToolResult]:
    """One response of ``calls``, then an answer; returns what the second request carried."""
    client.add(ScriptedResponse(tool_calls=calls), "done")
    first = len(client.requests)
    assert await worker.run("go") is WorkerResult.FINISHED
    carried = client.requests[first + 1].messages
    return [m for m in carried if isinstance(m, ToolResult)][-len(calls) :]


class TestAsyncToolTimeout:
    @pytest.mark.anyio
    async def test_timed_out_async_tool_is_cancelled(self):
        """A timed-out async tool is cancelled: its ``finally`` has run when execute raises
        ``Execution failed: tool 'x' timed out after Ns``."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            execute = app.wait_async.definition()()[1].execute
            with pytest.raises(ExecutionFailedError) as info:
                await execute("{}")
            assert str(info.value) == timed_out("wait_async")
            assert app.cleaned_up == ["wait_async"]

    @pytest.mark.anyio
    async def test_through_the_handle(self):
        """Through ``call_tool`` the timeout is a ToolExecutionError chained to the
        ExecutionFailedError."""
        with anyio.fail_after(GUARD):
            server = ToolServer()
            server.register_tools(tool_definitions(Waiting()))
            with pytest.raises(ToolExecutionError) as info:
                await server.handle().call_tool("wait_async", "")
            assert info.value.detail == timed_out("wait_async")
            assert isinstance(info.value.__cause__, ExecutionFailedError)

    @pytest.mark.anyio
    async def test_the_turn_goes_on(self):
        """The model reads the timeout as an error result in its next request; the other calls
        of the batch get their own results and the run finishes."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app)
            results = await run_batch(
                worker,
                client,
                ScriptedCall("quick", {"text": "a"}, id="c1"),
                ScriptedCall("wait_async", id="c2"),
                ScriptedCall("quick", {"text": "b"}, id="c3"),
            )
            assert results == [
                ToolResult("c1", "a", False),
                ToolResult("c2", timed_out("wait_async"), True),
                ToolResult("c3", "b", False),
            ]
            assert worker.final_text == "done"
            assert app.cleaned_up == ["wait_async"]

    @pytest.mark.anyio
    async def test_registry_timeout_and_tool_override(self):
        """``@tool_registry(timeout=)`` applies to its tools; ``@tool(timeout=)`` wins."""
        with anyio.fail_after(GUARD):
            app = RegistryTimeout()
            inherits = app.inherits.definition()()[1].execute
            overrides = app.overrides.definition()()[1].execute
            with pytest.raises(ExecutionFailedError) as info:
                await inherits("")
            assert str(info.value) == timed_out("inherits", SHORT)
            with pytest.raises(ExecutionFailedError) as info:
                await overrides("")
            assert str(info.value) == timed_out("overrides", 2 * SHORT)


class TestThreadToolTimeout:
    @pytest.mark.anyio
    async def test_timed_out_thread_is_abandoned(self):
        """A timed-out plain-def tool's thread is abandoned: the run ends while the thread is
        still blocked, and the thread finishes on its own once released."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app)
            [result] = await run_batch(worker, client, ScriptedCall("wait_thread", id="c1"))
            assert result == ToolResult("c1", timed_out("wait_thread"), True)
            assert app.started.is_set()
            assert not app.finished.is_set()  # the worker did not wait for the thread
            app.release.set()
            assert await anyio.to_thread.run_sync(app.finished.wait, THREAD_GRACE)

    @pytest.mark.anyio
    async def test_abandoned_thread_result_is_dropped(self):
        """What an abandoned thread returns later never reaches the history."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app)
            await run_batch(worker, client, ScriptedCall("wait_thread", id="c1"))
            app.release.set()
            assert await anyio.to_thread.run_sync(app.finished.wait, THREAD_GRACE)
            await anyio.sleep(0)
            contents = [m.content for m in worker.history if isinstance(m, ToolResult)]
            assert contents == [timed_out("wait_thread")]


class TestWorkerTimeout:
    @pytest.mark.anyio
    async def test_hand_written_tool_is_cancelled_at_the_worker_timeout(self):
        """A hand-written tool is held to ``Limits.tool_timeout``: cancelled, and the model
        reads the same timeout text."""
        with anyio.fail_after(GUARD):
            hand = HandWaiting()
            client = ScriptedClient()
            worker = Worker(client, limits=Limits(tool_timeout=SHORT))
            worker.register_tool(lambda: (ToolMeta(name="hand"), hand))
            [result] = await run_batch(worker, client, ScriptedCall("hand", id="c1"))
            assert result == ToolResult("c1", timed_out("hand"), True)
            assert hand.cleaned_up

    @pytest.mark.anyio
    async def test_generated_tools_without_own_timeout_use_the_worker_timeout(self):
        """Tools with no timeout of their own time out at the worker's: the async one is
        cancelled, the thread one abandoned."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app, Limits(tool_timeout=SHORT))
            results = await run_batch(
                worker,
                client,
                ScriptedCall("wait_untimed", id="c1"),
                ScriptedCall("block", id="c2"),
            )
            assert results == [
                ToolResult("c1", timed_out("wait_untimed"), True),
                ToolResult("c2", timed_out("block"), True),
            ]
            assert app.cleaned_up == ["wait_untimed"]
            assert not app.finished.is_set()
            app.release.set()
            assert await anyio.to_thread.run_sync(app.finished.wait, THREAD_GRACE)

    @pytest.mark.anyio
    async def test_worker_timeout_caps_a_looser_tool_timeout(self):
        """A tool's own timeout cannot extend the worker's: the worker's fires first."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app, Limits(tool_timeout=SHORT))
            [result] = await run_batch(worker, client, ScriptedCall("wait_loose", id="c1"))
            assert result == ToolResult("c1", timed_out("wait_loose", SHORT), True)

    @pytest.mark.anyio
    async def test_tighter_tool_timeout_reports_its_own_value(self):
        """A tool timeout tighter than the worker's fires first and names its own seconds."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app, Limits(tool_timeout=1000))
            [result] = await run_batch(worker, client, ScriptedCall("wait_async", id="c1"))
            assert result == ToolResult("c1", timed_out("wait_async", SHORT), True)

    @pytest.mark.anyio
    async def test_next_request_carries_the_timeout(self):
        """After a timeout the run goes on: the next request ends with the timeout result."""
        with anyio.fail_after(GUARD):
            client = ScriptedClient()
            worker = Worker(client, limits=Limits(tool_timeout=SHORT))
            worker.register_tool(lambda: (ToolMeta(name="hand"), HandWaiting()))
            client.add(ScriptedResponse(tool_calls=[ScriptedCall("hand", id="c1")]), "done")
            assert await worker.run("go") is WorkerResult.FINISHED
            assert len(client.requests) == 2
            assert client.requests[1].messages[-1] == ToolResult("c1", timed_out("hand"), True)


class TestRunCancellation:
    @pytest.mark.anyio
    async def test_cancelled_run_does_not_wait_for_a_thread_tool(self):
        """A run cancelled while a plain-def tool blocks its thread returns at once: the
        thread is abandoned and finishes on its own once released."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app)  # default limits: a 300 s timeout
            client.add(ScriptedResponse(tool_calls=[ScriptedCall("block", id="c1")]), "done")
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(worker.run, "go")
                    await anyio.to_thread.run_sync(app.started.wait, THREAD_GRACE)
                    scope.cancel()
            assert scope.cancelled_caught
            assert not app.finished.is_set()  # the run ended while the thread was still blocked
            assert worker.history[-1] == ToolResult(
                "c1", "Tool call 'block' was cancelled before it finished", True
            )
            app.release.set()
            assert await anyio.to_thread.run_sync(app.finished.wait, THREAD_GRACE)

    @pytest.mark.anyio
    async def test_cancelled_run_cancels_async_tools(self):
        """A run cancelled while an async tool runs cancels it: its ``finally`` has run by
        the time the run returns, and the worker can run again."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app)
            client.add(ScriptedResponse(tool_calls=[ScriptedCall("wait_untimed", id="c1")]))
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(worker.run, "go")
                    await app.entered.wait()
                    scope.cancel()
            assert scope.cancelled_caught
            assert app.cleaned_up == ["wait_untimed"]
            assert worker.history[-1] == ToolResult(
                "c1", "Tool call 'wait_untimed' was cancelled before it finished", True
            )
            client.add("still here")
            assert await worker.run("again") is WorkerResult.FINISHED
            assert worker.final_text == "still here"


class FirstStep:
    """Hand-written tools whose first step (before they first wait) does something."""

    def __init__(self, first: str, then_wait: float | None = None) -> None:
        self.first = first
        self.then_wait = then_wait  # None: wait forever
        self.cleaned_up = False

    async def execute(self, input_json: str) -> str:
        try:
            if self.first == "scopes":
                # Scopes of the tool's own, open at its first wait: the worker's timer
                # begins after this step and must not misnest with them.
                with anyio.CancelScope():
                    async with anyio.create_task_group():
                        with anyio.move_on_after(100):
                            await self.wait()
            elif self.first == "blocks":
                time.sleep(2 * SHORT)  # past the timeout before the call first waits
                await self.wait()
            else:
                await self.wait()
        finally:
            self.cleaned_up = True
        return "finished"

    async def wait(self) -> None:
        if self.then_wait is None:
            await anyio.Event().wait()
        else:
            await anyio.sleep(self.then_wait)


def worker_with(
    *tools: tuple[str, object],
    timeout: float = SHORT,
    max_concurrent_calls: int = Limits.max_concurrent_calls,
) -> tuple[Worker, ScriptedClient]:
    client = ScriptedClient()
    limits = Limits(tool_timeout=timeout, max_concurrent_calls=max_concurrent_calls)
    worker = Worker(client, limits=limits)
    for name, tool_object in tools:
        meta = ToolMeta(name=name, description="A tool.", input_schema={"type": "object"})
        worker.register_tool(lambda meta=meta, tool_object=tool_object: (meta, tool_object))
    return worker, client


class TestTimerSetWhenTheCallWaits:
    """The worker's timeout is armed only when a call first waits (a call that never waits
    cannot be ended by one), counted from the call's start; the call's own scopes, opened
    before that, nest as they should."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("together", [False, True], ids=["alone", "with-another-call"])
    async def test_scopes_of_the_first_step_still_nest(self, together):
        """A call that opened its own cancel scopes and a task group before it first waits
        is timed out cleanly, alone (in the run's own task) or beside another call."""
        with anyio.fail_after(GUARD):
            tool_object = FirstStep("scopes")
            worker, client = worker_with(("scoped", tool_object), ("other", FirstStep("", 0)))
            calls = [ScriptedCall("scoped", id="c1")]
            if together:
                calls.append(ScriptedCall("other", id="c2"))
            results = await run_batch(worker, client, *calls)
            assert results[0] == ToolResult("c1", timed_out("scoped"), True)
            assert tool_object.cleaned_up
            if together:
                assert results[1] == ToolResult("c2", "finished", False)

    @pytest.mark.anyio
    @pytest.mark.parametrize("together", [False, True], ids=["alone", "with-another-call"])
    async def test_the_timeout_counts_from_the_call_start(self, together):
        """A call that blocked past its timeout before it first waits is ended at that wait,
        though the wait itself is shorter than the timeout."""
        with anyio.fail_after(GUARD):
            tool_object = FirstStep("blocks", then_wait=SHORT / 2)
            worker, client = worker_with(("blocking", tool_object), ("other", FirstStep("", 0)))
            calls = [ScriptedCall("blocking", id="c1")]
            if together:
                calls.append(ScriptedCall("other", id="c2"))
            results = await run_batch(worker, client, *calls)
            assert results[0] == ToolResult("c1", timed_out("blocking"), True)
            assert tool_object.cleaned_up

    @pytest.mark.anyio
    async def test_each_call_of_a_row_gets_its_own_deadline(self):
        """Calls one runner runs one after another share its scope: a waiting call after
        another gets its whole timeout, not what is left of the earlier call's."""
        with anyio.fail_after(GUARD):
            timeout, wait = 10 * SHORT, 6 * SHORT  # the two waits together exceed the timeout
            worker, client = worker_with(
                ("slow", FirstStep("", wait)),
                ("quick", FirstStep("", 0)),
                timeout=timeout,
                max_concurrent_calls=1,  # one runner runs the three calls in a row
            )
            calls = [ScriptedCall("slow", id="s1"), ScriptedCall("quick", id="q1")]
            calls.append(ScriptedCall("slow", id="s2"))
            results = await run_batch(worker, client, *calls)
            assert [r.content for r in results] == ["finished"] * 3

    @pytest.mark.anyio
    @pytest.mark.parametrize("together", [False, True], ids=["alone", "with-another-call"])
    async def test_a_shielded_step_of_the_tool_is_not_cut(self, together):
        """A tool's shielded scope finishes what it does though the timeout passes meanwhile;
        the call ends at its next wait outside the shield."""
        steps: list[str] = []

        class Shielded:
            async def execute(self, input_json: str) -> str:
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(2 * SHORT)  # past the timeout
                    steps.append("shielded step done")
                await anyio.Event().wait()
                return "unreachable"

        with anyio.fail_after(GUARD):
            worker, client = worker_with(("shielded", Shielded()), ("other", FirstStep("", 0)))
            calls = [ScriptedCall("shielded", id="c1")]
            if together:
                calls.append(ScriptedCall("other", id="c2"))
            results = await run_batch(worker, client, *calls)
            assert results[0] == ToolResult("c1", timed_out("shielded"), True)
            assert steps == ["shielded step done"]

    @pytest.mark.anyio
    async def test_a_tool_timeout_inside_the_worker_timeout(self):
        """``@tool(timeout=)`` inside the worker's timeout: the shorter one ends the call and
        names its own seconds, whichever is the tool's."""
        with anyio.fail_after(GUARD):
            app = Waiting()
            worker, client = make_worker(app, Limits(tool_timeout=2 * SHORT))
            results = await run_batch(
                worker,
                client,
                ScriptedCall("wait_async", id="c1"),
                ScriptedCall("wait_loose", id="c2"),
            )
            assert results == [
                ToolResult("c1", timed_out("wait_async"), True),
                ToolResult("c2", timed_out("wait_loose", 2 * SHORT), True),
            ]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout() is new in Python 3.11")
class TestAsyncioTimers:
    """On asyncio the worker's timeout composes with a tool's own ``asyncio.timeout``,
    whichever fires first."""

    @pytest.fixture(autouse=True)
    def only_asyncio(self, anyio_backend):
        if anyio_backend != "asyncio":
            pytest.skip("asyncio's own timeouts")

    @pytest.mark.anyio
    async def test_the_tools_own_asyncio_timeout_fires_first(self):
        import asyncio

        class OwnTimeout:
            async def execute(self, input_json: str) -> str:
                try:
                    async with asyncio.timeout(SHORT / 5):
                        await asyncio.sleep(100)
                except TimeoutError:
                    return "my own timeout"
                return "unreachable"

        with anyio.fail_after(GUARD):
            worker, client = worker_with(("own", OwnTimeout()), timeout=100)
            results = await run_batch(worker, client, ScriptedCall("own", id="c1"))
            assert results == [ToolResult("c1", "my own timeout", False)]

    @pytest.mark.anyio
    async def test_the_workers_timeout_fires_first(self):
        """The tool's looser ``asyncio.timeout`` does not turn the worker's timeout into
        a ``TimeoutError`` of its own."""
        import asyncio

        class LooseTimeout:
            async def execute(self, input_json: str) -> str:
                try:
                    async with asyncio.timeout(100):
                        await asyncio.sleep(100)
                except TimeoutError:
                    return "the tool's timeout fired"
                return "unreachable"

        with anyio.fail_after(GUARD):
            worker, client = worker_with(("loose", LooseTimeout()))
            results = await run_batch(worker, client, ScriptedCall("loose", id="c1"))
            assert results == [ToolResult("c1", timed_out("loose"), True)]

    @pytest.mark.anyio
    async def test_a_run_cancelled_meanwhile_is_cancelled(self):
        """A run cancelled while a call waits under the worker's timeout and its own
        ``asyncio.timeout`` ends as cancelled, the call's result saying so."""
        import asyncio

        cleaned_up: list[bool] = []

        class OwnTimeout:
            async def execute(self, input_json: str) -> str:
                try:
                    async with asyncio.timeout(100):
                        await asyncio.sleep(100)
                finally:
                    cleaned_up.append(True)
                return "unreachable"

        with anyio.fail_after(GUARD):
            worker, client = worker_with(("own", OwnTimeout()), timeout=100)
            client.add(ScriptedResponse(tool_calls=[ScriptedCall("own", id="c1")]), "done")
            with anyio.move_on_after(SHORT) as scope:
                await worker.run("go")
            assert scope.cancelled_caught
            assert cleaned_up == [True]
            last = worker.history[-1]
            assert isinstance(last, ToolResult)
            assert last.is_error
            assert "cancelled" in last.content
