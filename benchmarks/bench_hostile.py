"""Time and peak memory for the worst inputs of docs/reliability.md ("Hostile input: figures").

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_hostile.py          # ~20 s
    .venv/bin/python benchmarks/bench_hostile.py --quick  # smaller inputs, a few seconds

Each case runs in this process on asyncio (the thread case on trio too): the
median wall time of a few runs, and the peak of memory traced by ``tracemalloc``
during one run, beyond what the input itself holds. The thread case reports
the most threads alive at once, and how many of its calls ended waiting for a
thread (llm_worker logs a warning for each: expected here, so they are counted
and left out of the output). These are orders of magnitude for the docs,
not a benchmark with a floor: there is nothing to compare against but the
figures the issue measured before the fixes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import statistics
import threading
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
from _common import machine_note
from pydantic import BaseModel

from llm_worker import InvalidArgumentError, ToolError, tool, tool_registry
from llm_worker._limits import cap_result
from llm_worker._safe_text import model_safe_text, safe_text


class Item(BaseModel):
    """Ten required fields: each empty object is ten errors."""

    f0: int
    f1: int
    f2: int
    f3: int
    f4: int
    f5: int
    f6: int
    f7: int
    f8: int
    f9: int


@tool_registry
class Hostile:
    def __init__(self) -> None:
        self.release = threading.Event()

    @tool
    async def lookup(self, key: str) -> str:
        raise ValueError(f"no record for {key}")

    @tool
    async def store(self, value: Any = None) -> str:
        return "stored"

    @tool
    async def save(self, items: list[Item]) -> str:
        return "saved"

    @tool(timeout=0.1)
    def block(self) -> str:
        self.release.wait(30)
        return "late"

    @tool
    async def slow(self) -> object:
        return SlowRepr()

    @tool(timeout=1.0)
    async def nap(self) -> str:
        await anyio.sleep(60)
        return "never"


class SlowRepr:
    def __repr__(self) -> str:
        time.sleep(3)
        return "<slow>"


def measure(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median seconds, peak traced MB) of ``run()``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    try:
        run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return statistics.median(times), peak / 1e6


def run_async(func: Callable[[], Awaitable[object]]) -> Callable[[], object]:
    def run() -> object:
        async def main() -> object:
            try:
                return await func()
            except ToolError as exc:
                return str(exc)

        return anyio.run(main)

    return run


class ThreadsBusyCounter(logging.Filter):
    """Drops, and counts, llm_worker's warning that a call ended waiting for a thread.

    The thread case makes every tool thread busy on purpose, so most of its calls end
    that way, each with that warning: one line per backend says how many instead.
    """

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if "ended waiting for a thread" in record.getMessage():
            self.count += 1
            return False
        return True


@contextlib.contextmanager
def busy_warnings_counted() -> Iterator[ThreadsBusyCounter]:
    logger = logging.getLogger("llm_worker")
    counter = ThreadsBusyCounter()
    logger.addFilter(counter)
    try:
        yield counter
    finally:
        logger.removeFilter(counter)


def threads_case(backend: str, calls: int) -> tuple[float, int]:
    """``calls`` concurrent calls of a blocking def with timeout=0.1: (seconds, most threads)."""
    app = Hostile()
    execute = Hostile.ToolBlock(app).execute
    most = threading.active_count()

    async def main() -> None:
        nonlocal most

        async def call() -> None:
            with contextlib.suppress(ToolError):
                await execute("")

        async def watch() -> None:
            nonlocal most
            while True:
                most = max(most, threading.active_count())
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            async with anyio.create_task_group() as calls_group:
                for _ in range(calls):
                    calls_group.start_soon(call)
            group.cancel_scope.cancel()

    start = time.perf_counter()
    anyio.run(main, backend=backend)
    elapsed = time.perf_counter() - start
    app.release.set()
    return elapsed, most


def stretched_timeout() -> float:
    """Seconds until a 1 s timeout fires while another call's result has a 3 s repr."""
    app = Hostile()
    fired = 0.0

    async def main() -> None:
        nonlocal fired

        async def nap() -> None:
            nonlocal fired
            start = time.perf_counter()
            try:
                await Hostile.ToolNap(app).execute("")
            except ToolError:
                fired = time.perf_counter() - start

        async with anyio.create_task_group() as group:
            group.start_soon(nap)
            group.start_soon(Hostile.ToolSlow(app).execute, "")

    anyio.run(main)
    return fired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    scale = 10 if quick else 1
    repeat = 3
    app = Hostile()
    hostile_key = "<" + "a." * (499_000 // scale)  # just under the 1 MB input limit
    unknown_keys = json.dumps({f"k{i}": 1 for i in range(60_000 // scale)})
    nan_input = '{"value": [' + "1.5, " * (199_000 // scale) + "NaN]}"
    empty_items = '{"items": [' + ",".join(["{}"] * (330_000 // scale)) + "]}"
    big_ascii = "x" * (100_000_000 // scale)
    big_utf8 = "é" * (50_000_000 // scale)

    async def scrub() -> object:
        return await Hostile.ToolLookup(app).execute(json.dumps({"key": hostile_key}))

    async def keys() -> object:
        return await Hostile.ToolLookup(app).execute(unknown_keys)

    async def nan() -> object:
        try:
            return await Hostile.ToolStore(app).execute(nan_input)
        except InvalidArgumentError as exc:
            return str(exc)

    async def errors() -> object:
        try:
            return await Hostile.ToolSave(app).execute(empty_items)
        except InvalidArgumentError as exc:
            return str(exc)

    cases: list[tuple[str, Callable[[], object]]] = [
        (
            f"tool raising ValueError with a {len(hostile_key) // 1000} KB hostile key",
            run_async(scrub),
        ),
        ("model_safe_text of that exception", lambda: model_safe_text(ValueError(hostile_key))),
        (
            f"remote MCP error text of {len(hostile_key) // 1000} KB (safe_text)",
            lambda: safe_text(hostile_key),
        ),
        (
            f"{len(unknown_keys) // 1000} KB of JSON, {60_000 // scale} unknown keys",
            run_async(keys),
        ),
        (
            f"{len(nan_input) // 1000} KB of JSON for an Any argument, NaN at the end",
            run_async(nan),
        ),
        (
            f"{len(empty_items) // 1000} KB of JSON, {330_000 // scale} empty objects for a "
            "list of models of ten required fields (the first item's errors)",
            run_async(errors),
        ),
        (
            f"cap_result of {len(big_ascii) // 1_000_000} MB of ASCII",
            lambda: cap_result(big_ascii, 100_000),
        ),
        (
            f"cap_result of {len(big_utf8.encode()) // 1_000_000} MB of UTF-8 (é)",
            lambda: cap_result(big_utf8, 100_000),
        ),
    ]
    for name, run in cases[:1] + cases[3:6]:
        text = str(run())
        assert "over the limit" not in text, (name, text[:100])
    print(f"bench_hostile: {machine_note()}")
    print()
    print("| case | time (median) | peak traced memory |")
    print("|---|---|---|")
    for name, run in cases:
        seconds, peak = measure(run, repeat)
        shown = f"{seconds * 1000:.1f} ms" if seconds >= 0.001 else f"{seconds * 1e6:.0f} µs"
        print(f"| {name} | {shown} | {peak:.2f} MB |")
    print()
    calls = 200 // (scale // 5 or 1)
    print(
        f"| {calls} concurrent calls of a blocking def, timeout=0.1 | wall | most threads alive "
        "| calls that ended waiting for a thread (warnings not shown) |"
    )
    print("|---|---|---|---|")
    for backend in ("asyncio", "trio"):
        with busy_warnings_counted() as busy:
            elapsed, most = threads_case(backend, calls)
        print(f"| {backend} | {elapsed:.2f} s | {most} | {busy.count} |")
    if not quick:
        print()
        fired = stretched_timeout()
        print(f"a 1 s timeout, a parallel call's result with a 3 s repr(): fired at {fired:.2f} s")


if __name__ == "__main__":
    main()
