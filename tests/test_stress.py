"""Stress: many concurrent calls, many threads, and a model asking for 1 000 calls at once.

- 10 000 concurrent ``call_tool``s on one handle from one event loop: every result matches
  its input; none is lost or duplicated.
- 8 threads registering and calling tools on one ``ToolServer`` at once, each with its own
  event loop (asyncio or trio): every result is correct, every registration is kept.
- A ``Worker`` given 1 000 calls in one response never runs more than
  ``Limits.max_concurrent_calls`` of them at once, nor more plain-def tools than anyio's
  thread limit (40) at once.

Wall-clock figures are printed (``pytest -s``) and recorded as junit properties; they are
not asserted (speed belongs in ``benchmarks/``). ``docs/reliability.md`` quotes them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from strategies import CountingDefinition

from llm_worker import (
    DuplicateToolError,
    Limits,
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

CALLS = 10_000
THREADS = 8
TOOLS_PER_THREAD = 60
BATCH = 6  # each thread registers its tools in batches of this size (some one by one)
WORKER_CALLS = 1_000
ANYIO_THREAD_LIMIT = 40  # anyio's (and trio's) default thread limiter
# A bound on waits that only a bug would exhaust.
PATIENCE = 60.0


@pytest.fixture
def figure(record_property):
    """Print a wall-clock figure and record it as a junit property."""

    def record(name: str, seconds: float, **details: Any) -> None:
        extra = "".join(f", {key}={value}" for key, value in details.items())
        print(f"[stress] {name}: {seconds:.3f} s{extra}")
        record_property(name, round(seconds, 4))

    return record


class Gauge:
    """Counts the calls running now and the most that ever ran at once (thread-safe)."""

    def __init__(self, target: int) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.target = target
        self.reached = threading.Event()  # set once `target` calls ran at once

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            if self.now >= self.target:
                self.reached.set()

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


@tool_registry
class Echo:
    """An async echo that waits until every one of ``expected`` calls has started."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.seen: list[int] = []
        self.all_started: anyio.Event | None = None

    @tool
    async def echo(self, n: int) -> str:
        """Answer ``n=<n>`` once all expected calls are in flight."""
        if self.all_started is None:
            self.all_started = anyio.Event()
        self.seen.append(n)
        if len(self.seen) == self.expected:
            self.all_started.set()
        await self.all_started.wait()
        return f"n={n}"


@tool_registry
class Gauged:
    """Tools that record how many of them run at once."""

    def __init__(self, target: int) -> None:
        self.gauge = Gauge(target)

    @tool
    async def in_loop(self, n: int) -> str:
        """An async tool: holds until ``target`` calls ran at once, then answers."""
        self.gauge.enter()
        try:
            while not self.gauge.reached.is_set():
                await anyio.sleep(0.001)
            await anyio.lowlevel.checkpoint()
        finally:
            self.gauge.leave()
        return f"loop {n}"

    @tool
    def in_thread(self, n: int) -> str:
        """A plain-def tool: holds its thread until ``target`` ran at once, then answers."""
        self.gauge.enter()
        try:
            self.gauge.reached.wait(PATIENCE)
            time.sleep(0.001)
            return f"thread {n} {threading.active_count()}"
        finally:
            self.gauge.leave()


class TestConcurrentCallTool:
    @pytest.mark.anyio
    async def test_ten_thousand_concurrent_calls_on_one_handle(self, figure, anyio_backend):
        """10 000 concurrent call_tools on one handle, all in flight at once: every result
        matches its input; none is lost or duplicated."""
        app = Echo(CALLS)
        server = ToolServer()
        server.register_tools(tool_definitions(app))
        handle = server.handle()
        results: list[str | None] = [None] * CALLS

        async def call(n: int) -> None:
            results[n] = await handle.call_tool("echo", f'{{"n": {n}}}')

        started = time.perf_counter()
        with anyio.fail_after(PATIENCE):  # only reached if the calls did not all run at once
            async with anyio.create_task_group() as group:
                for n in range(CALLS):
                    group.start_soon(call, n)
        elapsed = time.perf_counter() - started
        assert results == [f"n={n}" for n in range(CALLS)]
        assert Counter(app.seen) == Counter(range(CALLS))
        figure(f"call_tool x{CALLS} [{anyio_backend}]", elapsed)


class TestThreadedRegistration:
    def test_eight_threads_register_and_call_at_once(self, figure):
        """8 threads register their own tools and call them, each from its own event loop
        (asyncio and trio alternately), all at once: every result is correct, every tool is
        registered once, and exactly one thread wins a contested name."""
        server = ToolServer()
        handle = server.handle()
        start = threading.Barrier(THREADS)
        all_registered = threading.Barrier(THREADS)
        errors: list[BaseException] = []
        contested: list[str] = []
        answered: list[int] = []  # calls answered per event loop run
        definitions: dict[str, CountingDefinition] = {}
        lock = threading.Lock()

        def definition(name: str) -> CountingDefinition:
            made = CountingDefinition(ToolMeta(name=name, input_schema={"type": "object"}))
            with lock:
                definitions[name] = made
            return made

        async def call_all(names: list[str], tag: str) -> None:
            answers: dict[str, str] = {}

            async def call(name: str) -> None:
                answers[name] = await handle.call_tool(name, f'{{"from": "{tag}"}}')

            async with anyio.create_task_group() as group:
                for name in names:
                    group.start_soon(call, name)
            wrong = {n: a for n, a in answers.items() if a != f'{n}: {{"from": "{tag}"}}'}
            assert not wrong, wrong
            assert sorted(answers) == sorted(names)
            answered.append(len(answers))

        def run_loop(index: int, names: list[str], tag: str) -> None:
            if index % 2:
                anyio.run(call_all, names, tag, backend="trio")
            else:
                asyncio.run(call_all(names, tag))

        def worker(index: int) -> None:
            try:
                mine = [f"t{index}_tool{k}" for k in range(TOOLS_PER_THREAD)]
                start.wait()
                try:
                    server.register_tool(definition("contested"))
                    contested.append(f"t{index}")
                except DuplicateToolError:
                    pass
                for first in range(0, TOOLS_PER_THREAD, BATCH):
                    batch = mine[first : first + BATCH]
                    if (first // BATCH) % 2:
                        server.register_tools([definition(name) for name in batch])
                    else:
                        for name in batch:
                            server.register_tool(definition(name))
                    run_loop(index, mine[: first + BATCH], f"t{index}-{first}")
                all_registered.wait()
                everyone = [
                    f"t{i}_tool{k}" for i in range(THREADS) for k in range(TOOLS_PER_THREAD)
                ]
                run_loop(index, everyone, f"t{index}-all")
            except BaseException as exc:
                errors.append(exc)
                start.abort()
                all_registered.abort()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(PATIENCE)
        elapsed = time.perf_counter() - started
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        expected = sorted(
            ["contested"]
            + [f"t{i}_tool{k}" for i in range(THREADS) for k in range(TOOLS_PER_THREAD)]
        )
        assert [d.name for d in handle.tool_definitions_sorted()] == expected
        assert len(contested) == 1
        assert all(d.calls == 1 for d in definitions.values())
        figure(
            f"{THREADS} threads: register {THREADS * TOOLS_PER_THREAD} tools + call",
            elapsed,
            calls=sum(answered),
        )


def thousand_calls(name: str) -> ScriptedResponse:
    return ScriptedResponse(
        tool_calls=[ScriptedCall(name, {"n": n}, id=f"c{n}") for n in range(WORKER_CALLS)]
    )


async def run_thousand(worker: Worker, client: ScriptedClient, name: str) -> list[ToolResult]:
    client.add(thousand_calls(name), "done")
    with anyio.fail_after(PATIENCE):
        assert await worker.run("go") is WorkerResult.FINISHED
    results = [m for m in worker.history if isinstance(m, ToolResult)]
    assert [r.call_id for r in results] == [f"c{n}" for n in range(WORKER_CALLS)]
    assert not any(r.is_error for r in results)
    return results


class TestWorkerConcurrencyCap:
    @pytest.mark.parametrize("cap", [16, 5])
    @pytest.mark.anyio
    async def test_thousand_calls_run_at_most_cap_at_once(self, cap, figure, anyio_backend):
        """1 000 calls in one response: exactly ``max_concurrent_calls`` run at once, never
        more, and every call gets its own result in call order."""
        app = Gauged(target=cap)
        client = ScriptedClient()
        limits = Limits() if cap == 16 else Limits(max_concurrent_calls=cap)
        worker = Worker(client, limits=limits)
        worker.register_tools(tool_definitions(app))
        started = time.perf_counter()
        results = await run_thousand(worker, client, "in_loop")
        elapsed = time.perf_counter() - started
        assert [r.content for r in results] == [f"loop {n}" for n in range(WORKER_CALLS)]
        assert app.gauge.most == cap
        assert app.gauge.now == 0
        figure(f"worker {WORKER_CALLS} async calls, cap {cap} [{anyio_backend}]", elapsed)

    @pytest.mark.anyio
    async def test_thousand_thread_calls_use_at_most_the_thread_limit(self, figure, anyio_backend):
        """1 000 plain-def calls with a concurrency cap above 40: anyio's thread limiter lets
        exactly 40 run at once, and the threads alive stay bounded by it, not by the calls."""
        app = Gauged(target=ANYIO_THREAD_LIMIT)
        client = ScriptedClient()
        worker = Worker(client, limits=Limits(max_concurrent_calls=WORKER_CALLS))
        worker.register_tools(tool_definitions(app))
        baseline = threading.active_count()
        started = time.perf_counter()
        results = await run_thousand(worker, client, "in_thread")
        elapsed = time.perf_counter() - started
        assert [r.content.split()[:2] for r in results] == [
            ["thread", str(n)] for n in range(WORKER_CALLS)
        ]
        assert app.gauge.most == ANYIO_THREAD_LIMIT
        most_threads = max(int(r.content.split()[2]) for r in results)
        # Bounded by the limit, not by the 1 000 calls: a thread that has just finished may
        # linger a moment before it is reused (trio's thread cache), hence the slack.
        assert most_threads - baseline < 2 * ANYIO_THREAD_LIMIT
        figure(
            f"worker {WORKER_CALLS} thread calls, cap {WORKER_CALLS} [{anyio_backend}]",
            elapsed,
            max_threads_alive=most_threads,
            baseline=baseline,
        )

    @pytest.mark.anyio
    async def test_default_cap_bounds_thread_tools_too(self, anyio_backend):
        """With default limits, 1 000 plain-def calls run at most 16 at once."""
        app = Gauged(target=16)
        client = ScriptedClient()
        worker = Worker(client)
        worker.register_tools(tool_definitions(app))
        await run_thousand(worker, client, "in_thread")
        assert app.gauge.most == 16
