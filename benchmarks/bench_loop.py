"""The turn loop's own cost: the event stream against run(), long histories, and a
hand-written loop.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_loop.py            # ~1-2 min, asyncio and trio
    .venv/bin/python benchmarks/bench_loop.py --quick    # smoke run, a few seconds
    .venv/bin/python benchmarks/bench_loop.py --profile  # where the loop spends its time
    .venv/bin/python benchmarks/bench_loop.py --instrumented  # every worker traced (below)

The model is a replay client that yields prebuilt events without awaiting, and the tool
is a hand-written ``Tool`` whose ``execute`` does what the hand-written loop does per
call (``json.loads`` the arguments, await an async no-op), so every figure is the loop's
own cost. Rows (each a median of per-round ratios, variants interleaved in one process):

- ``stream / run``: reading ``run_stream()`` to its end against ``run()`` on the same
  script: (a) one response with 100 calls, then an answer; (b) a 20-turn conversation,
  one call per turn. Target <= 1.1x.
- ``turn 200 / turn 1``: one turn (a call, then the answer) on a history of 200 earlier
  turns against the same turn on an empty history. Target <= 1.2x: nothing the loop
  does per turn grows with the history (the client is not made to read it). Both
  sides' untimed setup sets the 200-turn history (the reference's on a spare worker):
  walking it evicts the loop from the CPU caches, which would otherwise count against
  turn 200 only.
- ``loop / hand-written``: ``run()`` against a hand-written loop that streams the same
  events, joins each call's fragments, ``json.loads`` them, awaits the tool and appends
  the result: (a) one response with 3 parallel calls, then an answer (target <= 10x);
  (b) 20 turns of one call each, per turn (target <= 5x). The hand-written loop has none
  of the worker's guarantees (no limits, timeouts, hooks, concurrency, cancellation
  safety, protocol checks), which is what the ratio prices.

``--instrumented`` gives every worker ``instrumentation=llm_worker.otel.OpenTelemetry()``
with no OpenTelemetry SDK configured (the API's no-op default, as in an application that
installed the extra but has not set up tracing): run with and without it to see what the
instrumentation hooks cost when nothing is recorded.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from _common import Row, format_ns, machine_note, median, print_table, ratio_row

from llm_worker import (
    AssistantMessage,
    Completion,
    LlmEvent,
    LlmRequest,
    Message,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolMeta,
    ToolResult,
    ToolUseStart,
    ToolUseStop,
    UserMessage,
    Worker,
    WorkerResult,
)

if TYPE_CHECKING:
    from llm_worker.otel import OpenTelemetry

RunFn = Callable[[], Awaitable[object]]
INSTRUMENTATION: list[OpenTelemetry] = []  # --instrumented: the one every worker gets
ARGUMENTS = '{"n": 1}'


async def noop(n: int) -> str:
    return "pong"


class PingTool:
    """What the hand-written loop does per call, as a Tool: parse the JSON, await the tool."""

    async def execute(self, input_json: str) -> str:
        return await noop(**json.loads(input_json or "{}"))


PING = ToolMeta(
    name="ping",
    description="No-op.",
    input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
)


def calls_response(n: int, turn: int = 0) -> list[LlmEvent]:
    events: list[LlmEvent] = []
    for index in range(n):
        events += [
            ToolUseStart(index, f"call_{turn}_{index}", "ping"),
            ToolInputDelta(index, ARGUMENTS),
            ToolUseStop(index),
        ]
    return [*events, Completion("tool_use")]


ANSWER: list[LlmEvent] = [TextDelta("done"), Completion("end_turn")]


class ReplayClient:
    """Yields its responses in order, over and over, never awaiting."""

    def __init__(self, responses: Sequence[Sequence[LlmEvent]]) -> None:
        self.responses = responses
        self.count = 0

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        events = self.responses[self.count % len(self.responses)]
        self.count += 1
        for event in events:
            yield event


def make_worker(responses: Sequence[Sequence[LlmEvent]]) -> Worker:
    instrumentation = INSTRUMENTATION[0] if INSTRUMENTATION else None
    worker = Worker(ReplayClient(responses), max_turns=1000, instrumentation=instrumentation)
    worker.register_tool(lambda: (PING, PingTool()))
    return worker


def earlier_turns(turns: int) -> list[Message]:
    history: list[Message] = []
    for turn in range(turns):
        call = ToolCall(f"old_{turn}", "ping", ARGUMENTS)
        history += [
            UserMessage(f"question {turn}"),
            AssistantMessage("", (call,), "tool_use"),
            ToolResult(call.id, "pong"),
            AssistantMessage("answer", (), "end_turn"),
        ]
    return history


def by_run(worker: Worker) -> RunFn:
    async def run() -> object:
        result = await worker.run("go")
        assert result is WorkerResult.FINISHED
        return result

    return run


def by_stream(worker: Worker) -> RunFn:
    async def run() -> object:
        async with worker.run_stream("go") as stream:
            async for _ in stream:
                pass
        assert stream.result is WorkerResult.FINISHED
        return stream.result

    return run


def by_hand(client: ReplayClient) -> RunFn:
    """A hand-written loop: stream, join fragments, json.loads, await the tool, append."""
    tools = {"ping": noop}

    async def run() -> object:
        history: list[object] = ["go"]
        while True:
            text: list[str] = []
            calls: dict[int, list[object]] = {}
            async for event in client.stream(None):  # type: ignore[arg-type]
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, ToolUseStart):
                    calls[event.index] = [event.call_id, event.name, []]
                elif isinstance(event, ToolInputDelta):
                    calls[event.index][2].append(event.fragment)  # type: ignore[union-attr]
            history.append(("".join(text), list(calls.values())))
            if not calls:
                return history
            for call_id, name, fragments in calls.values():
                arguments = json.loads("".join(fragments) or "{}")  # type: ignore[arg-type]
                result = await tools[name](**arguments)  # type: ignore[index]
                history.append((call_id, result))

    return run


@dataclass
class Case:
    name: str
    target: float | None
    ours: RunFn
    reference: RunFn
    per: int = 1  # report per this many units (turns)
    # Run before each timed run, untimed: the history each side starts from.
    ours_setup: Callable[[], None] | None = None
    reference_setup: Callable[[], None] | None = None
    reps: int = 1
    ours_ns: list[float] = field(default_factory=list)
    reference_ns: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)


def fresh(worker: Worker, history: Sequence[Message] = ()) -> Callable[[], None]:
    def setup() -> None:
        worker.set_history(history)

    return setup


def both(*setups: Callable[[], None]) -> Callable[[], None]:
    def setup() -> None:
        for one in setups:
            one()

    return setup


def build_cases() -> list[Case]:
    hundred = [calls_response(100), ANSWER]
    twenty = [calls_response(1, turn) for turn in range(20)] + [ANSWER]
    three = [calls_response(3), ANSWER]
    one_turn = [calls_response(1), ANSWER]
    long_history = earlier_turns(200)
    late, early, spare = make_worker(one_turn), make_worker(one_turn), make_worker(one_turn)
    streamed, ran = make_worker(hundred), make_worker(hundred)
    streamed20, ran20 = make_worker(twenty), make_worker(twenty)
    return [
        Case(
            "stream / run, 100 calls in one response",
            1.1,
            by_stream(streamed),
            by_run(ran),
            ours_setup=fresh(streamed),
            reference_setup=fresh(ran),
        ),
        Case(
            "stream / run, 20 turns of one call",
            1.1,
            by_stream(streamed20),
            by_run(ran20),
            ours_setup=fresh(streamed20),
            reference_setup=fresh(ran20),
        ),
        Case(
            "turn 200 / turn 1 (one call, then the answer)",
            1.2,
            by_run(late),
            by_run(early),
            ours_setup=fresh(late, long_history),
            reference_setup=both(fresh(early), fresh(spare, long_history)),
        ),
        loop_case("loop / hand-written, 3 parallel calls", 10.0, three),
        loop_case("loop / hand-written, per turn of one call (20 turns)", 5.0, twenty, per=20),
    ]


def loop_case(name: str, target: float, responses: list[list[LlmEvent]], per: int = 1) -> Case:
    worker = make_worker(responses)
    return Case(
        name,
        target,
        by_run(worker),
        by_hand(ReplayClient(responses)),
        per=per,
        ours_setup=fresh(worker),
    )


async def timed(fn: RunFn, reps: int, setup: Callable[[], None] | None = None) -> float:
    """Nanoseconds per run of ``fn``, over ``reps`` runs; ``setup`` before each, untimed."""
    gc.collect()
    gc.disable()
    try:
        total = 0
        for _ in range(reps):
            if setup is not None:
                setup()
            start = time.perf_counter_ns()
            await fn()
            total += time.perf_counter_ns() - start
        return total / reps
    finally:
        gc.enable()


async def measure(cases: list[Case], rounds: int, batch_ns: float) -> None:
    for case in cases:
        for _ in range(20):  # warm up
            await timed(case.ours, 1, case.ours_setup)
            await timed(case.reference, 1, case.reference_setup)
        elapsed = min([await timed(case.ours, 1, case.ours_setup) for _ in range(5)])
        case.reps = max(1, round(batch_ns / max(elapsed, 1)))
    for round_index in range(rounds):
        for case in cases:
            pair = [
                ("ours", case.ours, case.ours_setup),
                ("reference", case.reference, case.reference_setup),
            ]
            if round_index % 2:
                pair.reverse()
            got = {name: await timed(fn, case.reps, setup) for name, fn, setup in pair}
            case.ours_ns.append(got["ours"])
            case.reference_ns.append(got["reference"])
            case.ratios.append(got["ours"] / got["reference"])


def rows_of(cases: list[Case]) -> list[Row]:
    rows = []
    for case in cases:
        ours, reference = median(case.ours_ns) / case.per, median(case.reference_ns) / case.per
        unit = "per turn: " if case.per > 1 else ""
        context = (
            f"{unit}ours {format_ns(ours)}, reference {format_ns(reference)} (reps={case.reps})"
        )
        rows.append(ratio_row(case.name, case.ratios, case.target, context))
    return rows


def profile(backend: str, runs: int, calls: int) -> None:
    worker = make_worker([calls_response(calls), ANSWER])
    run = by_run(worker)

    async def main() -> None:
        for _ in range(20):
            await run()
        profiler = cProfile.Profile()
        for _ in range(runs):
            worker.clear_history()
            profiler.enable()
            await run()
            profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue())

    anyio.run(main, backend=backend)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--rounds", type=int, help="rounds per case (default 31; quick 3)")
    parser.add_argument("--batch-ms", type=float, help="time per batch (default 20)")
    parser.add_argument(
        "--profile", type=int, metavar="CALLS", help="profile runs of a response with CALLS calls"
    )
    parser.add_argument(
        "--instrumented",
        action="store_true",
        help="trace every worker with OpenTelemetry(), no SDK configured (needs the otel extra)",
    )
    options = parser.parse_args()
    if options.instrumented:
        from llm_worker.otel import OpenTelemetry

        INSTRUMENTATION.append(OpenTelemetry())
    backends = ["asyncio", "trio"] if options.backend == "both" else [options.backend]
    if options.profile:
        for backend in backends:
            print(f"\n=== cProfile, {backend}: 2000 runs, {options.profile} calls ===")
            profile(backend, 2000, options.profile)
        return 0
    rounds = options.rounds or (3 if options.quick else 31)
    batch_ns = (options.batch_ms or (2.0 if options.quick else 20.0)) * 1e6
    print(f"bench_loop: {machine_note()}")
    print(f"{rounds} rounds per case, batches of ~{batch_ns / 1e6:g} ms")
    if INSTRUMENTATION:
        print("every worker has instrumentation=OpenTelemetry(), no SDK configured")
    for backend in backends:
        cases = build_cases()

        async def run_all(cases: list[Case] = cases) -> None:
            await measure(cases, rounds, batch_ns)

        anyio.run(run_all, backend=backend)
        print_table(f"The turn loop on {backend} (lower is better)", rows_of(cases), "medians")
    return 0


if __name__ == "__main__":
    sys.exit(main())
