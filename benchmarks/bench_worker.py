"""Worker overhead per tool call: a batch of 100 no-op calls in one response.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_worker.py            # ~1-2 min, asyncio and trio
    .venv/bin/python benchmarks/bench_worker.py --quick    # smoke run, a few seconds
    .venv/bin/python benchmarks/bench_worker.py --profile  # where a worker run spends its time

What is compared, in the same process, with the same tool (``App.ping``, async, returns
"pong", never waits) and the same handle:

- ``W100``: ``worker.run()`` on a script of [a response calling ``ping`` 100 times, a
  final text]: two model requests, event assembly, pre-/post-hook passes, the 100 calls,
  results appended in call order.
- ``W0``: ``worker.run()`` on a script of [the final text] alone: what a run costs
  without tool calls (one request, the loop, the history).
- ``H100``: ``await handle.call_tool("ping", "{}")`` 100 times in a row, in the caller's
  task: the floor, what a hand-written loop pays for the same calls.
- ``H100 in a task group`` (context): the same 100 calls in one anyio task group, one
  task per call: what a hand-written loop pays to run them concurrently.

The figure with the target is ``(W100 - W0) / H100``: the cost the worker adds to each
tool call, relative to awaiting the calls one after another. Target: <= 1.5x. It is the
like-for-like comparison: the worker runs calls that never wait one after another in
one runner task (it starts another only when every runner waits in a call), so a run of
W100 starts one task, the task group 100. Against the task group the worker comes out
below 1x, but mostly because starting a task costs more than a call of ``ping``: that
row says what the worker saves over spawning a task per call, not what it costs.

``W100 - W0`` is one more model turn as well as the 100 calls (the response's 300
events assembled, its calls announced, their results passed back to the loop and
appended), so this figure also carries the loop's per-turn cost, which
``bench_loop.py`` measures on its own ("loop / hand-written" rows).

The model is a replay client that yields precomputed events without awaiting, so the
figure is the worker's own cost (a real client's parsing is not the worker's). Context
rows repeat the measurement with ``llm_worker.testing.ScriptedClient``, which awaits a
checkpoint per event; with ``Limits(max_concurrent_calls=100)`` (the cap bounds the
runners, and calls that never wait need only one either way: all 100 calls are announced
as running up front instead of 16, the rest as a runner takes them); and with
``tool_timeout=None`` as well (no per-call timeout: no deadline to set for a call).

With the ``otel`` extra installed, two more rows trace the workers of the first row with
``instrumentation=llm_worker.otel.OpenTelemetry()``: with no OpenTelemetry SDK configured
(the API's no-op default; target <= 1.5x, the same as without instrumentation), and on an
SDK ``TracerProvider`` and ``MeterProvider`` with no exporter or reader attached (every
span and measurement is made, then dropped: what tracing itself costs).

Each round runs every variant back to back as a batch of runs (order alternating
between rounds); a round gives one ratio per reference, and the table shows the median
and interquartile range of those ratios. Each variant's batch is sized to take about
the same time (``--batch-ms``): W100 takes some ms, H100 some hundred us, and on a
shared machine a longer batch is more likely to lose the CPU to another process.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from _common import Row, format_ns, machine_note, median, print_table, ratio_row
from _tools import PING_INPUT, App

from llm_worker import (
    Completion,
    Limits,
    LlmEvent,
    LlmRequest,
    TextDelta,
    ToolInputDelta,
    ToolResult,
    ToolServerHandle,
    ToolUseStart,
    ToolUseStop,
    Worker,
    WorkerResult,
    tool_definitions,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

if TYPE_CHECKING:
    from llm_worker.otel import OpenTelemetry

CALLS = 100
TARGET = 1.5

RunFn = Callable[[], Awaitable[object]]


def calls_events(n: int) -> list[LlmEvent]:
    """One response calling ``ping`` ``n`` times, as a provider would stream it."""
    events: list[LlmEvent] = []
    for index in range(n):
        events += [
            ToolUseStart(index, f"call_{index}", "ping"),
            ToolInputDelta(index, PING_INPUT),
            ToolUseStop(index),
        ]
    events.append(Completion("tool_use"))
    return events


FINAL_EVENTS: list[LlmEvent] = [TextDelta("done"), Completion("end_turn")]


class ReplayClient:
    """An LlmClient that cycles through precomputed event lists, never awaiting."""

    def __init__(self, responses: Sequence[Sequence[LlmEvent]]) -> None:
        self.responses = responses
        self.count = 0

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        events = self.responses[self.count % len(self.responses)]
        self.count += 1
        for event in events:
            yield event


def replay_worker(
    app: App,
    responses: Sequence[Sequence[LlmEvent]],
    limits: Limits | None = None,
    instrumentation: OpenTelemetry | None = None,
) -> Worker:
    worker = Worker(ReplayClient(responses), limits=limits, instrumentation=instrumentation)
    worker.register_tools(tool_definitions(app))
    return worker


def scripted_worker(app: App) -> tuple[Worker, ScriptedClient]:
    client = ScriptedClient()
    worker = Worker(client)
    worker.register_tools(tool_definitions(app))
    return worker, client


def worker_run(worker: Worker, client: ScriptedClient | None, with_calls: bool) -> RunFn:
    """One run of ``worker`` on a fresh history (the script is topped up for ScriptedClient)."""
    calls_response = ScriptedResponse(tool_calls=[ScriptedCall("ping", PING_INPUT)] * CALLS)

    async def run() -> object:
        worker.clear_history()
        if client is not None:
            if with_calls:
                client.add(calls_response)
            client.add("done")
        result = await worker.run("go")
        assert result is WorkerResult.FINISHED
        return result

    return run


def sequential_calls(handle: ToolServerHandle) -> RunFn:
    """100 ``call_tool`` awaited one after another in the caller's task: the floor."""

    async def run() -> object:
        return [await handle.call_tool("ping", PING_INPUT) for _ in range(CALLS)]

    return run


def concurrent_calls(handle: ToolServerHandle) -> RunFn:
    """100 ``call_tool`` in one task group, one task each, results stored by index."""

    async def run() -> object:
        results: list[str | None] = [None] * CALLS

        async def one(index: int) -> None:
            results[index] = await handle.call_tool("ping", PING_INPUT)

        async with anyio.create_task_group() as group:
            for index in range(CALLS):
                group.start_soon(one, index)
        return results

    return run


LOOP = "loop"  # the floor: H100, awaited in a row
GROUP = "group"  # context: H100 in a task group


@dataclass
class Case:
    name: str
    target: float | None
    worker: Worker  # the one W100 runs, for the sanity check
    w100: RunFn
    w0: RunFn
    references: dict[str, RunFn]  # LOOP always (the target's); GROUP for the first case
    reps: dict[str, int] = field(default_factory=dict)  # runs per batch, per variant
    times: dict[str, list[float]] = field(default_factory=dict)
    ratios: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.times = {name: [] for name in ("w100", "w0", *self.references)}
        self.ratios = {name: [] for name in self.references}

    def variants(self) -> dict[str, RunFn]:
        return {"w100": self.w100, "w0": self.w0, **self.references}


async def timed(fn: RunFn, reps: int) -> float:
    """Nanoseconds per run, over ``reps`` runs (the clear_history inside each run is tiny)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(reps):
            await fn()
        return (time.perf_counter_ns() - start) / reps
    finally:
        gc.enable()


async def check(case: Case) -> None:
    """Each variant does its job: the worker answered 100 calls, each reference got 100."""
    for name, reference in case.references.items():
        results = await reference()
        assert results == ["pong"] * CALLS, (name, results)
    await case.w100()
    answered = [m for m in case.worker.history if isinstance(m, ToolResult)]
    assert [(r.content, r.is_error) for r in answered] == [("pong", False)] * CALLS, answered
    assert case.worker.final_text == "done"


def build_cases() -> list[Case]:
    app = App()
    calls_worker = replay_worker(app, [calls_events(CALLS), FINAL_EVENTS])
    plain_worker = replay_worker(app, [FINAL_EVENTS])
    uncapped = Limits(max_concurrent_calls=CALLS)
    uncapped_calls = replay_worker(app, [calls_events(CALLS), FINAL_EVENTS], uncapped)
    uncapped_plain = replay_worker(app, [FINAL_EVENTS], uncapped)
    bare = Limits(max_concurrent_calls=CALLS, tool_timeout=None)
    bare_calls = replay_worker(app, [calls_events(CALLS), FINAL_EVENTS], bare)
    bare_plain = replay_worker(app, [FINAL_EVENTS], bare)
    scripted_calls, scripted_calls_client = scripted_worker(app)
    scripted_plain, scripted_plain_client = scripted_worker(app)
    handle = calls_worker.tool_server_handle()
    loop = {LOOP: sequential_calls(handle)}
    return [
        Case(
            f"(W{CALLS} - W0) / H{CALLS}, replay client",
            TARGET,
            calls_worker,
            worker_run(calls_worker, None, True),
            worker_run(plain_worker, None, False),
            {**loop, GROUP: concurrent_calls(handle)},
        ),
        Case(
            f"(context) same, Limits(max_concurrent_calls={CALLS})",
            None,
            uncapped_calls,
            worker_run(uncapped_calls, None, True),
            worker_run(uncapped_plain, None, False),
            loop,
        ),
        Case(
            f"(context) same, Limits(max_concurrent_calls={CALLS}, tool_timeout=None)",
            None,
            bare_calls,
            worker_run(bare_calls, None, True),
            worker_run(bare_plain, None, False),
            loop,
        ),
        Case(
            "(context) same, ScriptedClient",
            None,
            scripted_calls,
            worker_run(scripted_calls, scripted_calls_client, True),
            worker_run(scripted_plain, scripted_plain_client, False),
            loop,
        ),
        *instrumented_cases(app, loop),
    ]


def instrumented_cases(app: App, loop: dict[str, RunFn]) -> list[Case]:
    """The first case with OpenTelemetry() on no SDK, and on an SDK that exports nothing."""
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.trace import TracerProvider

        from llm_worker.otel import OpenTelemetry
    except ImportError:
        return []  # the otel extra (and the SDK, a dev dependency) is not installed
    cases = []
    for name, target, telemetry in (
        (
            f"(W{CALLS} - W0) / H{CALLS}, instrumentation=OpenTelemetry(), no SDK configured",
            TARGET,
            OpenTelemetry(),
        ),
        (
            "(context) same, OpenTelemetry() on an SDK TracerProvider and MeterProvider, "
            "nothing exported",
            None,
            OpenTelemetry(tracer_provider=TracerProvider(), meter_provider=MeterProvider()),
        ),
    ):
        calls = replay_worker(app, [calls_events(CALLS), FINAL_EVENTS], instrumentation=telemetry)
        plain = replay_worker(app, [FINAL_EVENTS], instrumentation=telemetry)
        cases.append(
            Case(
                name,
                target,
                calls,
                worker_run(calls, None, True),
                worker_run(plain, None, False),
                loop,
            )
        )
    return cases


async def calibrate(case: Case, batch_ns: float) -> None:
    for _ in range(10):  # warm up: lazy validators, caches
        for variant in case.variants().values():
            await variant()
    for name, variant in case.variants().items():
        elapsed = min([await timed(variant, 1) for _ in range(5)])
        case.reps[name] = max(1, round(batch_ns / max(elapsed, 1)))


async def measure(cases: list[Case], rounds: int, batch_ns: float) -> None:
    for case in cases:
        await check(case)
        await calibrate(case, batch_ns)
    for round_index in range(rounds):
        for case in cases:
            variants = case.variants()
            order = list(variants) if round_index % 2 == 0 else list(reversed(variants))
            got = {}
            for name in order:
                got[name] = await timed(variants[name], case.reps[name])
                case.times[name].append(got[name])
            for name in case.references:
                case.ratios[name].append((got["w100"] - got["w0"]) / got[name])


def rows_of(cases: list[Case]) -> list[Row]:
    rows = []
    for case in cases:
        w100, w0 = median(case.times["w100"]), median(case.times["w0"])
        for name in case.references:
            reference = median(case.times[name])
            context = (
                f"per call: worker {format_ns((w100 - w0) / CALLS)} / "
                f"{REFERENCE_NAMES[name]} {format_ns(reference / CALLS)}; W{CALLS} "
                f"{format_ns(w100)}, W0 {format_ns(w0)}, H{CALLS} {format_ns(reference)}"
                f" (runs per batch: {case.reps['w100']}, {case.reps['w0']}, {case.reps[name]})"
            )
            if name == LOOP:
                rows.append(ratio_row(case.name, case.ratios[name], case.target, context))
            else:
                label = f"(context) same, H{CALLS} in a task group (one task per call)"
                rows.append(ratio_row(label, case.ratios[name], None, context))
    return rows


REFERENCE_NAMES = {LOOP: "awaited in a row", GROUP: "in a task group"}


def run_backend(backend: str, rounds: int, batch_ns: float) -> list[Row]:
    cases = build_cases()

    async def main() -> None:
        await measure(cases, rounds, batch_ns)

    anyio.run(main, backend=backend)
    return rows_of(cases)


def profile(backend: str, runs: int) -> None:
    """cProfile of ``runs`` W100 runs; prints the functions with the most own time."""
    app = App()
    worker = replay_worker(app, [calls_events(CALLS), FINAL_EVENTS])
    run = worker_run(worker, None, True)

    async def main() -> None:
        for _ in range(10):
            await run()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(runs):
            await run()
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(25)
        print(out.getvalue())
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(r"llm_worker", 25)
        print(out.getvalue())

    anyio.run(main, backend=backend)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument(
        "--backend", choices=("asyncio", "trio", "both"), default="both", help="event loop(s)"
    )
    parser.add_argument("--rounds", type=int, help="rounds per case (default 41; quick 5)")
    parser.add_argument("--batch-ms", type=float, help="time per W100 batch (default 20)")
    parser.add_argument("--profile", action="store_true", help="profile W100 runs instead")
    options = parser.parse_args()
    backends = ["asyncio", "trio"] if options.backend == "both" else [options.backend]
    if options.profile:
        for backend in backends:
            print(f"\n=== cProfile, {backend}: 200 runs of W{CALLS} ===")
            profile(backend, 200)
        return 0
    rounds = options.rounds or (5 if options.quick else 41)
    batch_ns = (options.batch_ms or (2.0 if options.quick else 20.0)) * 1e6

    print(f"bench_worker: {machine_note()}")
    print(f"{rounds} rounds per case, batches of ~{batch_ns / 1e6:g} ms of W{CALLS} runs")
    for backend in backends:
        if backend == "trio":
            try:
                import trio  # noqa: F401
            except ImportError:
                print("\ntrio is not installed; skipping the trio run")
                continue
        rows = run_backend(backend, rounds, batch_ns)
        print_table(
            f"Worker overhead per tool call on {backend} (ratio = (W{CALLS} - W0) / H{CALLS}, "
            f"H{CALLS} = {CALLS} call_tool awaited in a row unless said; lower is better)",
            rows,
            "medians",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
