"""Tool threads against the event loop (``_codegen/threads.py``, ``_codegen/dedicated.py``,
``_context.py``): what a thread raises fails only its call, a dedicated thread ends with
its app object, hashable or not, and a progress report from a thread never waits for
the event loop."""

from __future__ import annotations

import dataclasses
import gc
import threading
import weakref
from typing import Any

import anyio
import pytest
from support import calls, results_of

from llm_worker import (
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
