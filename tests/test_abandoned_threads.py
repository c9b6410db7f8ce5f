"""A thread a call abandoned (it timed out) keeps what its call held until it really ends,
for the whole worker: a sequential tool's turn across a pause, a resume and the next run,
and a slot of ``max_concurrent_calls`` across responses. And what a run no longer needs
it does not keep: a paused run holds no deps, a dedicated thread's abandoned job no call.
"""

from __future__ import annotations

import contextvars
import gc
import threading
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from llm_worker import Approve, Limits, ToolContext, ToolResult, Worker, tool, tool_registry
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio

TIMEOUT = 0.2  # each call's; the bodies run until released


class Bodies:
    """Counts the tool bodies running at once, and holds them until released."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.started = 0
        self.release = threading.Event()

    def run(self) -> str:
        with self.lock:
            self.running += 1
            self.started += 1
            self.peak = max(self.peak, self.running)
        try:
            self.release.wait(10)
        finally:
            with self.lock:
                self.running -= 1
        return "done"

    @asynccontextmanager
    async def held(self) -> AsyncIterator[Bodies]:
        """Release the bodies on the way out, and wait until every one has ended."""
        try:
            yield self
        finally:
            self.release.set()
            with anyio.fail_after(10):
                while self.running:
                    await anyio.sleep(0.01)


def make_app(bodies: Bodies) -> object:
    @tool_registry
    class App:
        @tool(sequential=True)
        def write(self, n: int) -> str:
            """Write (never twice at once)."""
            return bodies.run()

        @tool
        def work(self, n: int) -> str:
            """Slow work."""
            return bodies.run()

        @tool(requires_approval=True)
        async def ask(self) -> str:
            """Needs a person."""
            return "asked"

    return App()


def make_worker(bodies: Bodies, *steps: object, most: int = 16) -> Worker:
    app = make_app(bodies)
    worker = Worker(
        ScriptedClient([*steps, "the end"]),  # type: ignore[list-item]
        limits=Limits(tool_timeout=TIMEOUT, max_concurrent_calls=most),
    )
    worker.register_tools([app.write.definition(), app.work.definition(), app.ask.definition()])  # type: ignore[attr-defined]
    return worker


def calls(*names_and_numbers: tuple[str, int]) -> ScriptedResponse:
    return ScriptedResponse(
        tool_calls=[ScriptedCall(name, {"n": n}) for name, n in names_and_numbers]
    )


def results(worker: Worker) -> list[str]:
    return [message.content for message in worker.history if isinstance(message, ToolResult)]


TIMED_OUT = "Execution failed: tool 'write' timed out after 0.2s"


def relax_timeout(worker: Worker) -> None:
    """Give the next run's calls time to see the released threads end: a body has returned
    its count before its thread tells the worker so, and a loaded machine can stretch that
    gap past the 0.2 s a call may wait (a slot still kept then times the call out)."""
    worker.limits = Limits(tool_timeout=5, max_concurrent_calls=worker.limits.max_concurrent_calls)


class TestSequentialTurn:
    async def test_kept_across_a_pause_and_resume(self):
        """The sequential call after the resume ran beside the earlier call's thread: the
        thread list belonged to the run stream, and a resume makes another."""
        bodies = Bodies()
        worker = make_worker(
            bodies,
            calls(("write", 1)),
            ScriptedResponse(tool_calls=[ScriptedCall("ask"), ScriptedCall("write", {"n": 2})]),
        )
        async with bodies.held():
            with anyio.fail_after(10):
                await worker.run("go")
                assert worker.is_paused
                await worker.resume(Approve())
            assert bodies.peak == 1
            assert bodies.started == 1  # the second waited for the first's thread, and timed out
        assert results(worker) == [TIMED_OUT, "asked", TIMED_OUT]

    async def test_kept_into_the_next_run(self):
        bodies = Bodies()
        worker = make_worker(bodies, calls(("write", 1)), "ok", calls(("write", 2)))
        async with bodies.held():
            with anyio.fail_after(10):
                await worker.run("first")
                await worker.run("second")
            assert (bodies.peak, bodies.started) == (1, 1)

    async def test_a_thread_that_ended_keeps_nothing(self):
        """Once the abandoned thread ends, the next sequential call runs."""
        bodies = Bodies()
        worker = make_worker(bodies, calls(("write", 1)), "ok", calls(("write", 2)))
        with anyio.fail_after(10):
            await worker.run("first")
            bodies.release.set()
            while bodies.running:
                await anyio.sleep(0.01)
            relax_timeout(worker)
            await worker.run("second")
        assert results(worker) == [TIMED_OUT, "done"]


class TestConcurrencySlots:
    async def test_threads_of_an_earlier_response_keep_their_slots(self):
        """With max_concurrent_calls=2, response 1's two calls time out and run on;
        response 2's two calls started at once: four bodies ran together."""
        bodies = Bodies()
        worker = make_worker(
            bodies, calls(("work", 1), ("work", 2)), calls(("work", 3), ("work", 4)), most=2
        )
        async with bodies.held():
            with anyio.fail_after(10):
                await worker.run("go")
            assert (bodies.peak, bodies.started) == (2, 2)
        timed_out = TIMED_OUT.replace("'write'", "'work'")
        assert results(worker) == [timed_out] * 4

    async def test_a_free_slot_is_taken_at_once(self):
        """Two threads abandoned of three slots: of the next response's two calls, one runs
        at once, the other waits for a slot (and times out, the threads running on)."""
        bodies = Bodies()
        worker = make_worker(
            bodies, calls(("work", 1), ("work", 2)), calls(("work", 3), ("work", 4)), most=3
        )
        async with bodies.held():
            with anyio.fail_after(10):
                await worker.run("go")
            assert (bodies.peak, bodies.started) == (3, 3)

    async def test_a_lone_call_waits_when_every_slot_is_kept(self):
        bodies = Bodies()
        worker = make_worker(bodies, calls(("work", 1)), calls(("work", 2)), most=1)
        async with bodies.held():
            with anyio.fail_after(10):
                await worker.run("go")
            assert (bodies.peak, bodies.started) == (1, 1)

    async def test_slots_free_again_once_the_threads_end(self):
        bodies = Bodies()
        worker = make_worker(
            bodies, calls(("work", 1), ("work", 2)), "ok", calls(("work", 3), ("work", 4)), most=2
        )
        with anyio.fail_after(10):
            await worker.run("first")
            bodies.release.set()
            while bodies.running:
                await anyio.sleep(0.01)
            relax_timeout(worker)
            await worker.run("second")
        assert bodies.started == 4
        assert results(worker)[-2:] == ["done", "done"]


class RequestDeps:
    """What a web request gives its run (a database session, say)."""


@tool_registry
class Files:
    @tool(requires_approval=True)
    async def delete(self, ctx: ToolContext[RequestDeps], path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"


async def test_a_paused_run_keeps_no_deps():
    """The paused batch kept each decided call's hook context, and with it the deps of the
    request that paused, for as long as the approval took (resume() has deps of its own)."""
    worker = Worker(
        ScriptedClient(
            [ScriptedResponse(tool_calls=[ScriptedCall("delete", {"path": "a"})]), "ok"]
        ),
        deps_type=RequestDeps,
    )
    worker.register_tools([Files().delete.definition()])
    deps = RequestDeps()
    gone = weakref.ref(deps)
    with anyio.fail_after(5):
        await worker.run("clean up", deps=deps)
    assert worker.is_paused
    del deps
    gc.collect()
    assert gone() is None
    with anyio.fail_after(5):
        await worker.resume(Approve(), deps=RequestDeps())
    assert results(worker) == ["deleted a"]


REQUEST: contextvars.ContextVar[object] = contextvars.ContextVar("request")


class Request:
    """What a web framework keeps per request, in a contextvar the calls' contexts copy."""


async def test_a_dedicated_threads_abandoned_jobs_keep_nothing():
    """While a dedicated thread is busy with a call that hangs, each call that times out
    waiting for it stayed queued with its arguments and its caller's context: memory grew
    with every call until the hung one returned."""
    release = threading.Event()

    @tool_registry(thread="dedicated")
    class Db:
        @tool
        def query(self, sql: str) -> str:
            """Run a query."""
            release.wait(10)
            return "rows"

    db = Db()
    requests: list[weakref.ref[Request]] = []
    try:
        for _ in range(5):
            request = Request()
            requests.append(weakref.ref(request))
            token = REQUEST.set(request)
            worker = Worker(
                ScriptedClient(
                    [ScriptedResponse(tool_calls=[ScriptedCall("query", {"sql": "x"})]), "sorry"]
                ),
                limits=Limits(tool_timeout=0.05),
            )
            worker.register_tools([db.query.definition()])
            with anyio.fail_after(5):
                await worker.run("q")
            REQUEST.reset(token)
            del request, worker
        await anyio.sleep(0.05)  # what the event loop still has of the last run goes
        gc.collect()
        # The first call runs (it hangs, and keeps its context); the queued ones keep none.
        assert [ref() is None for ref in requests[1:]] == [True] * 4
    finally:
        release.set()
