"""Per-call overhead of a generated tool's ``execute()`` against a hand-written floor.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_execute.py            # ~45 s, asyncio then trio
    .venv/bin/python benchmarks/bench_execute.py --quick    # smoke run, a few seconds
    .venv/bin/python benchmarks/bench_execute.py --peers    # also pydantic-ai & co (see README)

The floor is what a careful user would write by hand for the same tool, in the
same process: ``Args.model_validate_json(s)`` on the very model the tool
validates with (``App.AddArgs``), a direct call of the same function with the
fields, and ``pydantic_core.to_json(result).decode()`` for a non-``str``
result, awaited from an ``async def`` just like ``execute``.

Each case times batches of N calls with ``perf_counter_ns``. Rounds go
round-robin over every case, floor and ours back to back (which one goes first
alternates), and each pair gives one ratio ours/floor. The table shows the
median of those ratios and their interquartile range, never a single time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from _common import Row, format_ns, machine_note, median, print_table, ratio_row
from _tools import (
    ADD_INPUT,
    ADD_INVALID_INPUT,
    PING_INPUT,
    SEARCH_INPUT,
    App,
)
from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from llm_worker import (
    InvalidArgumentError,
    ToolExecutionError,
    ToolServer,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._fail_fast import screen_of

AsyncFn = Callable[..., Awaitable[Any]]

PEERS_PYTHON = os.environ.get("BENCH_PEERS_PYTHON", "/work/bench-peers-venv/bin/python")


class Item(BaseModel):
    name: str
    qty: int
    tags: list[str]


@tool_registry
class Store:
    """T5: the shape of a large valid call (a list of small objects), where ``execute()``
    does more than T1-T3 ever do: the depth scan (more than 64 brackets) and, over 1 024
    characters, the screen (``_fail_fast.py``) before pydantic's validation."""

    @tool
    async def add_items(self, items: list[Item]) -> int:
        """Add items to the store."""
        return len(items)


def items_input(count: int, *, compact: bool = False) -> str:
    """``add_items`` arguments: ``count`` items; compact ones are empty, brackets mostly."""
    if compact:
        items = [{"name": "", "qty": 0, "tags": []} for _ in range(count)]
        return json.dumps({"items": items}, separators=(",", ":"))
    items = [{"name": f"item {n}", "qty": n, "tags": ["a", "b"]} for n in range(count)]
    return json.dumps({"items": items})


ITEMS_10K = items_input(189)  # 9 997 characters, 380 brackets: scanned and screened
ITEMS_SMALL = items_input(32, compact=True)  # 971 characters, 66 brackets: scanned only


@dataclass(frozen=True)
class Variant:
    """One side of a comparison: ``await fn(*args)`` N times (catching ``catch`` if set)."""

    fn: AsyncFn
    args: tuple[Any, ...]
    catch: type[BaseException] | None = None


@dataclass
class Case:
    name: str
    target: float | None
    floor: Variant
    ours: Variant
    same_output: bool = True  # check that both sides return the same before timing
    n: int = 0  # calls per batch, calibrated
    floor_ns: list[float] = field(default_factory=list)  # per call, one per round
    ours_ns: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)


def build_cases() -> list[Case]:
    """The floors, written by hand against the generated models, and the cases."""
    app = App()
    # The plain functions the tools wrap (``ToolMethod.__func__``), and the generated models.
    ping_fn = App.ping.__func__
    add_fn = App.add.__func__
    search_fn = App.search.__func__
    add_sync_fn = App.add_sync.__func__
    ping_args = App.PingArgs
    add_args = App.AddArgs
    search_args = App.SearchArgs
    add_sync_args = App.AddSyncArgs

    async def floor_ping(s: str) -> str:
        ping_args.model_validate_json(s)
        return await ping_fn(app)

    async def floor_add(s: str) -> str:
        args = add_args.model_validate_json(s)
        return to_json(await add_fn(app, a=args.a, b=args.b)).decode()

    async def floor_search(s: str) -> str:
        args = search_args.model_validate_json(s)
        result = await search_fn(
            app, query=args.query, tags=args.tags, limit=args.limit, filter=args.filter
        )
        return to_json(result).decode()

    async def floor_add_sync(s: str) -> str:
        args = add_sync_args.model_validate_json(s)
        result = await anyio.to_thread.run_sync(add_sync_fn, app, args.a, args.b)
        return to_json(result).decode()

    # The tight floor: pydantic's validator itself, without model_validate_json's
    # Python wrapper (what execute() calls). No target; it shows the true overhead.
    validate_ping = ping_args.__pydantic_validator__.validate_json
    validate_add = add_args.__pydantic_validator__.validate_json
    validate_search = search_args.__pydantic_validator__.validate_json

    async def tight_ping(s: str) -> str:
        validate_ping(s)
        return await ping_fn(app)

    async def tight_add(s: str) -> str:
        args = validate_add(s)
        return to_json(await add_fn(app, a=args.a, b=args.b)).decode()

    async def tight_search(s: str) -> str:
        args = validate_search(s)
        result = await search_fn(
            app, query=args.query, tags=args.tags, limit=args.limit, filter=args.filter
        )
        return to_json(result).decode()

    store = Store()
    add_items_fn = Store.add_items.__func__
    add_items_args = Store.AddItemsArgs
    add_items_args.model_rebuild()  # its schema is complete once a first call needs it
    screen = screen_of(add_items_args.__pydantic_core_schema__)  # what the tool screens with
    assert screen is not None

    async def floor_add_items(s: str) -> str:
        args = add_items_args.model_validate_json(s)
        return to_json(await add_items_fn(store, items=args.items)).decode()

    async def floor_add_items_screened(s: str) -> str:  # the floor, and the screen first
        screen.validate_json(s, strict=True)
        return await floor_add_items(s)

    server = ToolServer()
    server.register_tools(tool_definitions(app))
    handle = server.handle()

    return [
        Case(
            "T1 ping() -> str: execute / floor",
            1.2,
            Variant(floor_ping, (PING_INPUT,)),
            Variant(App.ToolPing(app).execute, (PING_INPUT,)),
        ),
        Case(
            "T2 add(a, b) -> int: execute / floor",
            1.2,
            Variant(floor_add, (ADD_INPUT,)),
            Variant(App.ToolAdd(app).execute, (ADD_INPUT,)),
        ),
        Case(
            "T3 search(...) -> list[Hit]: execute / floor",
            1.2,
            Variant(floor_search, (SEARCH_INPUT,)),
            Variant(App.ToolSearch(app).execute, (SEARCH_INPUT,)),
        ),
        Case(
            "T2 invalid input: execute / floor (str(exc))",
            1.3,
            Variant(floor_add, (ADD_INVALID_INPUT,), ValidationError),
            Variant(App.ToolAdd(app).execute, (ADD_INVALID_INPUT,), InvalidArgumentError),
        ),
        Case(
            "T2 invalid via call_tool / floor (str(exc))",
            1.5,
            Variant(floor_add, (ADD_INVALID_INPUT,), ValidationError),
            Variant(handle.call_tool, ("add", ADD_INVALID_INPUT), ToolExecutionError),
        ),
        Case(
            "T2 via ToolServerHandle.call_tool / floor",
            1.3,
            Variant(floor_add, (ADD_INPUT,)),
            Variant(handle.call_tool, ("add", ADD_INPUT)),
        ),
        Case(
            "T4 plain def in a thread: execute / floor",
            1.1,
            Variant(floor_add_sync, (ADD_INPUT,)),
            Variant(App.ToolAddSync(app).execute, (ADD_INPUT,)),
        ),
        Case(
            "T5 add_items, 971 chars, 66 brackets: execute / floor",
            1.5,
            Variant(floor_add_items, (ITEMS_SMALL,)),
            Variant(Store.ToolAddItems(store).execute, (ITEMS_SMALL,)),
        ),
        Case(
            "T5 add_items, 10 KB, 380 brackets: execute / floor",
            2.5,
            Variant(floor_add_items, (ITEMS_10K,)),
            Variant(Store.ToolAddItems(store).execute, (ITEMS_10K,)),
        ),
        Case(
            "(context) T5 10 KB execute / floor + screen",
            None,
            Variant(floor_add_items_screened, (ITEMS_10K,)),
            Variant(Store.ToolAddItems(store).execute, (ITEMS_10K,)),
        ),
        Case(
            "(context) T1 execute / tight floor",
            None,
            Variant(tight_ping, (PING_INPUT,)),
            Variant(App.ToolPing(app).execute, (PING_INPUT,)),
        ),
        Case(
            "(context) T2 execute / tight floor",
            None,
            Variant(tight_add, (ADD_INPUT,)),
            Variant(App.ToolAdd(app).execute, (ADD_INPUT,)),
        ),
        Case(
            "(context) T3 execute / tight floor",
            None,
            Variant(tight_search, (SEARCH_INPUT,)),
            Variant(App.ToolSearch(app).execute, (SEARCH_INPUT,)),
        ),
        Case(
            "(context) T2 invalid: execute / tight floor",
            None,
            Variant(tight_add, (ADD_INVALID_INPUT,), ValidationError),
            Variant(App.ToolAdd(app).execute, (ADD_INVALID_INPUT,), InvalidArgumentError),
        ),
    ]


async def run_batch(variant: Variant, n: int) -> int:
    """Nanoseconds for ``n`` awaited calls of ``variant`` (the loop is the same for all)."""
    fn, args, catch = variant.fn, variant.args, variant.catch
    gc.collect()
    gc.disable()
    try:
        if catch is None:
            start = time.perf_counter_ns()
            for _ in range(n):
                await fn(*args)
            return time.perf_counter_ns() - start
        start = time.perf_counter_ns()
        for _ in range(n):
            try:
                await fn(*args)
            except catch as exc:
                str(exc)  # the text the caller hands on (to the model, a log...)
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


async def outcome(variant: Variant) -> str:
    try:
        return repr(await variant.fn(*variant.args))
    except Exception as exc:
        return type(exc).__name__


async def check_equivalent(case: Case) -> None:
    """Both sides must do the same job: same result, or both the expected error."""
    floor, ours = await outcome(case.floor), await outcome(case.ours)
    if case.floor.catch is not None:
        expected = (case.floor.catch.__name__, case.ours.catch.__name__)  # type: ignore[union-attr]
        ok = (floor, ours) == expected
    else:
        ok = floor == ours
    if not ok:
        raise SystemExit(f"{case.name}: floor gave {floor}, ours gave {ours}; not comparable")


async def calibrate(case: Case, batch_ns: float) -> None:
    """Pick N so that a batch of the slower side takes about ``batch_ns``."""
    for _ in range(20):  # warm up both sides (lazy validators, thread pool)
        await run_batch(case.floor, 1)
        await run_batch(case.ours, 1)

    async def slower(n: int) -> int:
        return max(await run_batch(case.floor, n), await run_batch(case.ours, n))

    n = 1
    while await slower(n) < batch_ns / 4 and n < 1 << 22:
        n *= 2
    # The fastest of a few tries: a busy moment of the machine must not shrink N.
    elapsed = min([await slower(n) for _ in range(3)])
    case.n = max(1, round(n * batch_ns / max(elapsed, 1)))


async def measure(cases: list[Case], rounds: int, batch_ns: float) -> None:
    # Everything alive now (modules, models, the tools) is set aside, so the
    # collection before each batch only looks at what the calls left behind.
    gc.collect()
    gc.freeze()
    for case in cases:
        if case.same_output:
            await check_equivalent(case)
        await calibrate(case, batch_ns)
    for round_index in range(rounds):
        for case in cases:
            if round_index % 2 == 0:
                floor_ns = await run_batch(case.floor, case.n)
                ours_ns = await run_batch(case.ours, case.n)
            else:
                ours_ns = await run_batch(case.ours, case.n)
                floor_ns = await run_batch(case.floor, case.n)
            case.floor_ns.append(floor_ns / case.n)
            case.ours_ns.append(ours_ns / case.n)
            case.ratios.append(ours_ns / floor_ns)


def rows_of(cases: list[Case]) -> list[Row]:
    return [
        ratio_row(
            case.name,
            case.ratios,
            case.target,
            f"{format_ns(median(case.floor_ns))} / {format_ns(median(case.ours_ns))} (N={case.n})",
        )
        for case in cases
    ]


def run_backend(backend: str, rounds: int, batch_ns: float) -> list[Row]:
    cases = build_cases()

    async def main() -> None:
        await measure(cases, rounds, batch_ns)

    anyio.run(main, backend=backend)
    return rows_of(cases)


def run_peers(quick: bool) -> int:
    """Run ``_peers.py`` with the separate peers venv's Python (never the project venv)."""
    if not os.path.exists(PEERS_PYTHON):
        print(
            f"\n--peers: {PEERS_PYTHON} not found; create it as benchmarks/README.md says "
            f"(or set BENCH_PEERS_PYTHON)."
        )
        return 1
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_peers.py")
    command = [PEERS_PYTHON, script, *(["--quick"] if quick else [])]
    return subprocess.call(command)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument(
        "--backend", choices=("asyncio", "trio", "both"), default="both", help="event loop(s)"
    )
    parser.add_argument("--rounds", type=int, help="pairs per case (default 61; quick 5)")
    parser.add_argument("--batch-ms", type=float, help="floor time per batch (default 10)")
    parser.add_argument("--peers", action="store_true", help="also measure peer libraries")
    options = parser.parse_args()
    rounds = options.rounds or (5 if options.quick else 61)
    batch_ns = (options.batch_ms or (1.0 if options.quick else 10.0)) * 1e6
    backends = ["asyncio", "trio"] if options.backend == "both" else [options.backend]

    print(f"bench_execute: {machine_note()}")
    print(f"{rounds} rounds per case, batches of ~{batch_ns / 1e6:g} ms of floor calls")
    for backend in backends:
        if backend == "trio":
            try:
                import trio  # noqa: F401
            except ImportError:
                print("\ntrio is not installed; skipping the trio run")
                continue
        rows = run_backend(backend, rounds, batch_ns)
        print_table(
            f"execute() overhead on {backend} (ratio = ours / hand-written floor; lower is better)",
            rows,
            "per call: floor / ours (medians)",
        )
    status = 0
    if options.peers:
        status = run_peers(options.quick)
    return status


if __name__ == "__main__":
    sys.exit(main())
