"""Worker overhead per tool call: a batch of 100 no-op calls in one response.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_worker.py            # ~1 min, asyncio and trio
    .venv/bin/python benchmarks/bench_worker.py --quick    # smoke run, a few seconds
    .venv/bin/python benchmarks/bench_worker.py --profile  # where a worker run spends its time

What is compared, in the same process, with the same tool (``App.ping``, async, returns
"pong") and the same handle:

- ``W100``: ``worker.run()`` on a script of [a response calling ``ping`` 100 times, a
  final text]: two model requests, event assembly, pre-/post-hook passes, the 100 calls,
  results appended in call order.
- ``W0``: ``worker.run()`` on a script of [the final text] alone: what a run costs
  without tool calls (one request, the loop, the history).
- ``H100``: ``handle.call_tool("ping", "{}")`` 100 times in one anyio task group: what a
  hand-written loop would do with the same calls.

The figure with the target is ``(W100 - W0) / H100``: the cost the worker adds to each
tool call, relative to calling the tools directly. Target: <= 1.5x.

The model is a replay client that yields precomputed events without awaiting, so the
figure is the worker's own cost (a real client's parsing is not the worker's). A
context row repeats the measurement with ``llm_worker.testing.ScriptedClient``, which
awaits a checkpoint per event. The worker runs at most ``Limits.max_concurrent_calls``
(default 16) calls at once, on that many tasks, while H100 starts 100 tasks; another
context row lifts the cap to 100 so both sides start one task per call, and one more
also drops the per-call timeout (``tool_timeout=None``: no cancel scope per call).

With the ``otel`` extra installed, two more rows trace the workers of the first row with
``instrumentation=llm_worker.otel.OpenTelemetry()``: with no OpenTelemetry SDK configured
(the API's no-op default; target <= 1.5x, the same as without instrumentation), and on an
SDK ``TracerProvider`` and ``MeterProvider`` with no exporter or reader attached (every
span and measurement is made, then dropped: what tracing itself costs).

Each round runs every variant back to back as a batch of ``reps`` runs (order
alternating between rounds); a round gives one ratio, and the table shows the median
and interquartile range of those ratios.
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


def direct_calls(handle: ToolServerHandle) -> RunFn:
    """100 ``call_tool`` in one task group, results stored by index (as a caller would)."""

    async def run() -> object:
        results: list[str | None] = [None] * CALLS

        async def one(index: int) -> None:
            results[index] = await handle.call_tool("ping", PING_INPUT)

        async with anyio.create_task_group() as group:
            for index in range(CALLS):
                group.start_soon(one, index)
        return results

    return run


@dataclass
class Case:
    name: str
    target: float | None
    worker: Worker  # the one W100 runs, for the sanity check
    w100: RunFn
    w0: RunFn
    h100: RunFn
    reps: int = 1
    times: dict[str, list[float]] = field(
        default_factory=lambda: {"w100": [], "w0": [], "h100": []}
    )
    ratios: list[float] = field(default_factory=list)


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
    """Each variant does its job: the worker answered 100 calls, the direct loop got 100."""
    results = await case.h100()
    assert results == ["pong"] * CALLS, results
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
    return [
        Case(
            f"(W{CALLS} - W0) / H{CALLS}, replay client",
            TARGET,
            calls_worker,
            worker_run(calls_worker, None, True),
            worker_run(plain_worker, None, False),
            direct_calls(handle),
        ),
        Case(
            f"(context) same, Limits(max_concurrent_calls={CALLS})",
            None,
            uncapped_calls,
            worker_run(uncapped_calls, None, True),
            worker_run(uncapped_plain, None, False),
            direct_calls(handle),
        ),
        Case(
            f"(context) same, Limits(max_concurrent_calls={CALLS}, tool_timeout=None)",
            None,
            bare_calls,
            worker_run(bare_calls, None, True),
            worker_run(bare_plain, None, False),
            direct_calls(handle),
        ),
        Case(
            "(context) same, ScriptedClient",
            None,
            scripted_calls,
            worker_run(scripted_calls, scripted_calls_client, True),
            worker_run(scripted_plain, scripted_plain_client, False),
            direct_calls(handle),
        ),
        *instrumented_cases(app, handle),
    ]


def instrumented_cases(app: App, handle: ToolServerHandle) -> list[Case]:
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
                direct_calls(handle),
            )
        )
    return cases


async def calibrate(case: Case, batch_ns: float) -> None:
    for _ in range(10):  # warm up: lazy validators, caches
        await case.w100()
        await case.w0()
        await case.h100()
    elapsed = min([await timed(case.w100, 1) for _ in range(5)])
    case.reps = max(1, round(batch_ns / max(elapsed, 1)))


async def measure(cases: list[Case], rounds: int, batch_ns: float) -> None:
    for case in cases:
        await check(case)
        await calibrate(case, batch_ns)
    for round_index in range(rounds):
        for case in cases:
            order = ["w100", "w0", "h100"]
            if round_index % 2:
                order.reverse()
            got = {}
            for name in order:
                got[name] = await timed(getattr(case, name), case.reps)
                case.times[name].append(got[name])
            case.ratios.append((got["w100"] - got["w0"]) / got["h100"])


def rows_of(cases: list[Case]) -> list[Row]:
    rows = []
    for case in cases:
        w100, w0, h100 = (median(case.times[k]) for k in ("w100", "w0", "h100"))
        context = (
            f"per call: worker {format_ns((w100 - w0) / CALLS)} / direct {format_ns(h100 / CALLS)}"
            f"; W{CALLS} {format_ns(w100)}, W0 {format_ns(w0)}, H{CALLS} {format_ns(h100)}"
            f" (reps={case.reps})"
        )
        rows.append(ratio_row(case.name, case.ratios, case.target, context))
    return rows


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
            f"Worker overhead per tool call on {backend} "
            f"(ratio = (W{CALLS} - W0) / H{CALLS}; lower is better)",
            rows,
            "medians",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
