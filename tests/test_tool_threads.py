"""Tool threads against the event loop (``_codegen/threads.py``, ``_codegen/dedicated.py``,
``_context.py``, ``_batch.Turn``): what a thread raises fails only its call, a dedicated
thread ends with its app object, hashable or not, a progress report from a thread never
waits for the event loop, and a thread its timeout abandoned keeps what its call held in a
run (a sequential tool's turn, a slot of max_concurrent_calls) until it ends."""

from __future__ import annotations

import dataclasses
import gc
import itertools
import threading
import time
import weakref
from typing import Any

import anyio
import pytest
from support import calls, hand_written, results_of

from llm_worker import (
    Limits,
    ToolCallProgress,
    ToolContext,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._context import ProgressReports
from llm_worker.testing import ScriptedClient


class _ReprRaises:
    def __repr__(self) -> str:
        raise GeneratorExit


@tool_registry
class Raisers:
    """Tools whose thread raises GeneratorExit, and one that answers."""

    @tool
    def in_thread(self) -> str:
        """Raise in a worker thread."""
        raise GeneratorExit

    @tool(timeout=30)
    def in_thread_with_timeout(self) -> str:
        """Raise in a worker thread, under a timeout."""
        raise GeneratorExit

    @tool
    async def repr_in_thread(self) -> Any:
        """Return what only repr() turns into text, in a worker thread."""
        return _ReprRaises()

    @tool
    async def ok(self) -> str:
        """Answer."""
        return "ok"


class TestThreadExceptions:
    @pytest.mark.parametrize("name", ["in_thread", "in_thread_with_timeout", "repr_in_thread"])
    @pytest.mark.parametrize("alone", [True, False], ids=["alone", "with_another_call"])
    @pytest.mark.anyio
    async def test_generator_exit_in_a_tool_thread_fails_only_its_call(self, name, alone):
        """A GeneratorExit raised in a tool's thread reads "Execution failed: GeneratorExit",
        and the run goes on (asyncio used to throw it into the run's coroutines: a close)."""
        pairs: list[tuple[str, str | dict[str, object]]] = [(name, {})]
        if not alone:
            pairs.append(("ok", {}))
        worker = Worker(ScriptedClient([calls(*pairs), "done"]))
        worker.register_tools(tool_definitions(Raisers()))
        with anyio.fail_after(10):
            result = await worker.run("go")
        assert result is WorkerResult.FINISHED
        contents = [r.content for r in results_of(worker.history)]
        assert contents == ["Execution failed: GeneratorExit"] + ([] if alone else ["ok"])


@tool_registry(thread="dedicated")
@dataclasses.dataclass
class Session:
    """A plain dataclass: eq=True makes it unhashable, yet weakly referenceable."""

    user: str

    @tool
    def whoami(self) -> str:
        """Who this session is."""
        return f"{self.user} on {threading.current_thread().name}"


@tool_registry(thread="dedicated")
class Pinned:
    """An app object that cannot be weakly referenced."""

    __slots__ = ("user",)

    def __init__(self, user: str) -> None:
        self.user = user

    @tool
    def whoami(self) -> str:
        """Which thread serves it."""
        return str(threading.get_ident())


async def _whoami(app: object) -> str:
    server = ToolServer()
    server.register_tools(tool_definitions(app))
    with anyio.fail_after(10):
        return await server.handle().call_tool("whoami", "{}")


class TestDedicatedThreads:
    @pytest.mark.anyio
    async def test_an_unhashable_app_object_and_its_thread_are_freed(self):
        """A dedicated thread ends with its app object, which need not be hashable (each one
        used to be pinned, with its thread, for the life of the process)."""
        refs = []
        for i in range(20):
            app = Session(f"u{i}")
            refs.append(weakref.ref(app))
            assert await _whoami(app) == f"u{i} on llm-worker Session"
            del app
        gc.collect()
        with anyio.fail_after(10):
            while any(t.name == "llm-worker Session" for t in threading.enumerate()):
                await anyio.sleep(0.02)
        assert [ref for ref in refs if ref() is not None] == []

    @pytest.mark.anyio
    async def test_one_unhashable_app_object_keeps_one_thread(self):
        """Every call of one app object runs on its one thread, hashable or not, weakly
        referenceable or not."""
        session = Session("ann")
        assert {await _whoami(session) for _ in range(3)} == {"ann on llm-worker Session"}
        pinned = Pinned("bob")
        served_by = {await _whoami(pinned) for _ in range(3)}
        assert len(served_by) == 1
        assert served_by != {str(threading.get_ident())}


@tool_registry
class Busy:
    """A tool that blocks the event loop while another thread reports its progress."""

    def __init__(self) -> None:
        self.progress_seen = anyio.Event()

    @tool
    async def block_while_reporting(self, ctx: ToolContext) -> str:
        """Report from a thread, and wait for it on the event loop."""
        reporter = threading.Thread(target=ctx.report_progress, args=(1, 2))
        reporter.start()
        reporter.join(10)  # the event loop waits on the thread, as a blocking call would
        if reporter.is_alive():
            return "the report waited for the event loop"
        await self.progress_seen.wait()  # and the report still reaches the stream
        return "reported"


class TestProgressFromThreads:
    @pytest.mark.anyio
    async def test_a_report_from_a_thread_does_not_wait_for_the_event_loop(self):
        """report_progress from a thread returns while the event loop is blocked on that
        thread (it used to wait for the loop: a deadlock), and the report reaches the stream
        once the loop runs."""
        app = Busy()
        worker = Worker(ScriptedClient([calls(("block_while_reporting", {})), "done"]))
        worker.register_tools(tool_definitions(app))
        progress = []
        with anyio.fail_after(30):
            async with worker.run_stream("go") as stream:
                async for event in stream:
                    if isinstance(event, ToolCallProgress):
                        progress.append((event.progress, event.total))
                        app.progress_seen.set()
        assert [r.content for r in results_of(worker.history)] == ["reported"]
        assert progress == [(1.0, 2.0)]

    @pytest.mark.anyio
    async def test_reports_while_the_loop_is_busy_wake_it_once(self):
        """Reports from a thread while the event loop runs nothing are coalesced: the loop
        is woken once, on its own thread, and the latest report is kept."""
        loop_thread = threading.get_ident()
        wakes: list[int] = []
        reports = ProgressReports(lambda: wakes.append(threading.get_ident()))
        sink = reports.start("call")

        def report_many() -> None:
            for step in range(100):
                sink.report("call", float(step), 100.0, None)

        reporter = threading.Thread(target=report_many)
        reporter.start()
        reporter.join(10)  # the event loop runs nothing meanwhile
        assert not reporter.is_alive(), "a report waited for the event loop"
        assert wakes == []
        with anyio.fail_after(5):
            while not wakes:
                await anyio.sleep(0)
        for _ in range(3):
            await anyio.sleep(0)
        assert wakes == [loop_thread]
        assert reports.drain() == [("call", 99.0, 100.0, None)]

    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_a_report_after_the_event_loop_ended_goes_nowhere(self, backend):
        """A thread's report once the event loop is gone is dropped, without an error."""

        async def make() -> ProgressReports:
            return ProgressReports(lambda: None)

        reports = anyio.run(make, backend=backend)
        sink = reports.start("call")
        errors: list[BaseException] = []

        def report() -> None:
            try:
                sink.report("call", 1.0, None, None)
            except BaseException as exc:
                errors.append(exc)

        reporter = threading.Thread(target=report)
        reporter.start()
        reporter.join(10)
        assert not reporter.is_alive()
        assert errors == []


# -- what an abandoned thread keeps ---------------------------------------------------------


class Bodies:
    """The tool bodies of a test: how many ran at once, and when each began and ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.spans: dict[str, tuple[float, float]] = {}
        self.release = threading.Event()  # what a body that would never end waits for

    def run(self, name: str, seconds: float | None) -> None:
        """A body of ``seconds`` (``None``: until ``release``, as a hung call would)."""
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            began = time.monotonic()
        try:
            if seconds is None:
                self.release.wait(30)
            else:
                time.sleep(seconds)
        finally:
            with self.lock:
                self.active -= 1
                self.spans[name] = (began, time.monotonic())

    def began_after_ended(self, later: str, earlier: str) -> bool:
        return self.spans[later][0] >= self.spans[earlier][1]

    async def wait_idle(self) -> None:
        """Until every body has ended (none is left running into the next test)."""
        self.release.set()
        with anyio.fail_after(10):
            while self.active:
                await anyio.sleep(0.02)


@tool_registry
class Writes:
    """Tools over a connection that is not safe to use twice at once."""

    def __init__(self, bodies: Bodies) -> None:
        self.bodies = bodies

    @tool(sequential=True, timeout=0.2)
    def write(self, n: int, seconds: float | None = None) -> str:
        """Write; abandoned after 0.2 s."""
        self.bodies.run(f"write {n}", seconds)
        return f"wrote {n}"

    @tool(sequential=True, timeout=5)
    def write_patiently(self, n: int) -> str:
        """Write, with time to wait for its turn."""
        self.bodies.run(f"patient {n}", 0)
        return f"wrote {n}"

    @tool(sequential=True, timeout=5)
    async def write_async(self, n: int) -> str:
        """Write from the event loop: says how many bodies ran beside it."""
        return f"async {n} beside {self.bodies.active}"

    @tool(sequential=True, thread="dedicated", timeout=0.2)
    def write_dedicated(self, n: int, seconds: float | None = None) -> str:
        """Write on the app object's own thread; abandoned after 0.2 s."""
        self.bodies.run(f"dedicated {n}", seconds)
        return f"wrote {n}"

    @tool(timeout=0.2)
    def plain(self, n: int, seconds: float | None = None) -> str:
        """Write, not sequential; abandoned after 0.2 s."""
        self.bodies.run(f"plain {n}", seconds)
        return f"wrote {n}"

    @tool(timeout=5)
    def plain_patiently(self, n: int) -> str:
        """Write, not sequential, with time to wait for a slot."""
        self.bodies.run(f"plain patient {n}", 0)
        return f"wrote {n}"

    @tool
    async def quick(self, n: int, seconds: float = 0.01) -> str:
        """Answer after a little while."""
        await anyio.sleep(seconds)
        return f"quick {n}"


class HandWrittenWrite:
    """A hand-written sequential tool: says how many bodies ran beside it."""

    sequential = True

    def __init__(self, bodies: Bodies) -> None:
        self.bodies = bodies

    async def execute(self, input_json: str) -> str:
        return f"hand-written beside {self.bodies.active}"


TIMED_OUT = "Execution failed: tool '{}' timed out after {}s"


async def _run_writes(
    *pairs: tuple[str, dict[str, object]], limits: Limits | None = None
) -> tuple[list[str], Bodies, Worker]:
    bodies = Bodies()
    worker = Worker(ScriptedClient([calls(*pairs), "done"]), limits=limits or Limits())
    worker.register_tools(tool_definitions(Writes(bodies)))
    worker.register_tool(hand_written("hand_write", HandWrittenWrite(bodies)))
    try:
        with anyio.fail_after(10):
            assert await worker.run("go") is WorkerResult.FINISHED
    finally:
        await bodies.wait_idle()
    return [r.content for r in results_of(worker.history)], bodies, worker


class TestAbandonedThreadsKeepTheirTurn:
    @pytest.mark.anyio
    async def test_a_sequential_call_waits_for_the_thread_a_timeout_abandoned(self):
        """The calls before a sequential call finish first, even one abandoned at its
        timeout: the next call waits for its thread (inside its own timeout), then runs."""
        contents, bodies, _ = await _run_writes(
            ("write", {"n": 0, "seconds": 0.5}), ("write_patiently", {"n": 1})
        )
        assert contents == [TIMED_OUT.format("write", 0.2), "wrote 1"]
        assert bodies.peak == 1
        assert bodies.began_after_ended("patient 1", "write 0")

    @pytest.mark.anyio
    async def test_sequential_calls_never_overlap_though_each_times_out(self):
        """Each call waits for the one before it, within its 0.2 s: it times out waiting,
        with its usual result, and no two bodies run at once."""
        contents, bodies, _ = await _run_writes(
            *[("write", {"n": n, "seconds": 0.5}) for n in range(3)]
        )
        assert contents == [TIMED_OUT.format("write", 0.2)] * 3
        assert bodies.peak == 1
        spans = sorted(bodies.spans.values())  # of those that began: each after the last
        assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans))

    @pytest.mark.anyio
    @pytest.mark.parametrize("name", ["write_async", "hand_write"])
    async def test_an_async_or_hand_written_sequential_call_waits_too(self, name):
        """Not only thread tools wait: a call of an async def tool, or of a hand-written
        Tool (for which the run waits), starts once the abandoned thread has ended."""
        contents, _, _ = await _run_writes(("write", {"n": 0, "seconds": 0.5}), (name, {"n": 0}))
        beside = "async 0 beside 0" if name == "write_async" else "hand-written beside 0"
        assert contents == [TIMED_OUT.format("write", 0.2), beside]

    @pytest.mark.anyio
    async def test_the_calls_after_a_sequential_call_wait_for_its_thread(self):
        """A sequential call's abandoned thread keeps its turn: the calls after it (run
        together) wait for it."""
        contents, bodies, _ = await _run_writes(
            ("write", {"n": 0, "seconds": 0.5}),
            ("plain_patiently", {"n": 1}),
            ("plain_patiently", {"n": 2}),
        )
        assert contents == [TIMED_OUT.format("write", 0.2), "wrote 1", "wrote 2"]
        assert bodies.began_after_ended("plain patient 1", "write 0")
        assert bodies.began_after_ended("plain patient 2", "write 0")

    @pytest.mark.anyio
    async def test_a_dedicated_thread_s_call_keeps_its_turn_too(self):
        contents, bodies, _ = await _run_writes(
            ("write_dedicated", {"n": 0, "seconds": 0.5}), ("write_patiently", {"n": 1})
        )
        assert contents == [TIMED_OUT.format("write_dedicated", 0.2), "wrote 1"]
        assert bodies.began_after_ended("patient 1", "dedicated 0")

    @pytest.mark.anyio
    async def test_an_abandoned_thread_keeps_its_slot_of_max_concurrent_calls(self):
        """With one slot, the next call waits for the thread of the call that timed out."""
        contents, bodies, _ = await _run_writes(
            ("plain", {"n": 0, "seconds": 0.5}),
            ("plain_patiently", {"n": 1}),
            ("plain", {"n": 2, "seconds": 0}),
            limits=Limits(max_concurrent_calls=1),
        )
        assert contents[:2] == [TIMED_OUT.format("plain", 0.2), "wrote 1"]
        assert bodies.peak == 1
        assert bodies.began_after_ended("plain patient 1", "plain 0")

    @pytest.mark.anyio
    async def test_a_kept_slot_leaves_the_calls_to_the_free_ones(self):
        """A hung thread keeps one slot of two: the other runs the rest of the calls (none
        waits for the hung one, under the default 300 s timeout)."""
        contents, bodies, _ = await _run_writes(
            ("plain", {"n": 0}),  # hangs; times out while the other slot is busy
            *[("quick", {"n": n, "seconds": 0.1}) for n in range(1, 6)],
            limits=Limits(max_concurrent_calls=2),
        )
        assert contents == [TIMED_OUT.format("plain", 0.2)] + [f"quick {n}" for n in range(1, 6)]
        assert bodies.peak == 1

    @pytest.mark.anyio
    @pytest.mark.parametrize("tool_timeout", [None, 300.0])
    async def test_a_thread_that_never_ends_does_not_hang_the_run(self, tool_timeout, caplog):
        """The waiting calls time out with their own timeout (Limits.tool_timeout off or
        not), a warning says why, and the worker runs again."""
        bodies = Bodies()
        script = [
            calls(*[("write", {"n": n}) for n in range(3)]),
            "done",
            calls(("quick", {"n": 9})),
            "ok",
        ]
        worker = Worker(ScriptedClient(script), limits=Limits(tool_timeout=tool_timeout))
        worker.register_tools(tool_definitions(Writes(bodies)))
        try:
            with anyio.fail_after(5):
                assert await worker.run("go") is WorkerResult.FINISHED
                assert await worker.run("again") is WorkerResult.FINISHED
        finally:
            await bodies.wait_idle()
        contents = [r.content for r in results_of(worker.history)]
        assert contents == [TIMED_OUT.format("write", 0.2)] * 3 + ["quick 9"]
        assert bodies.peak == 1
        waited = [
            r.getMessage() for r in caplog.records if "waiting for its turn" in r.getMessage()
        ]
        assert (
            waited
            == [
                "A call of tool 'write' ended waiting for its turn: 1 thread(s) of earlier calls, "
                "abandoned when those timed out, still run (a sequential tool's turn, or a slot "
                "of max_concurrent_calls, is theirs until they end)"
            ]
            * 2
        )

    @pytest.mark.anyio
    async def test_calls_not_in_a_run_take_no_turns(self):
        """Turns are a Worker run's: call_tool() calls do not wait for each other's threads."""
        bodies = Bodies()
        server = ToolServer()
        server.register_tools(tool_definitions(Writes(bodies)))
        handle = server.handle()
        try:
            with anyio.fail_after(5):
                with pytest.raises(Exception, match="timed out"):
                    await handle.call_tool("write", '{"n": 0}')
                assert await handle.call_tool("write", '{"n": 1, "seconds": 0}') == "wrote 1"
        finally:
            await bodies.wait_idle()
