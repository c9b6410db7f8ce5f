"""What tracing costs a worker run: the same run with and without ``instrumentation=``.

Run from the repository root with the project's venv (needs the otel extra and the SDK,
both in the dev dependencies):

    .venv/bin/python benchmarks/bench_otel.py            # ~1 min, asyncio and trio
    .venv/bin/python benchmarks/bench_otel.py --quick    # smoke run, a few seconds

The run is ``bench_worker.py``'s W100 (one response calling a no-op tool 100 times,
then an answer, from a replay client that never awaits), and each row is the median of
per-round ratios ``W100 with instrumentation / W100 without``, the variants interleaved
in one process:

- ``OpenTelemetry(), no SDK configured``: the extra installed, tracing not set up (the
  API's no-op default). Target <= 1.15x.
- ``(context) a do-nothing Instrumentation``: every hook of the protocol called, nothing
  done; the floor any observer pays, whatever it does (the loop's own hooks).
- ``(context) OpenTelemetry() on an SDK TracerProvider and MeterProvider``, nothing
  exported: 103 spans and 103 measurements made per run, then dropped.

A whole-run ratio is steadier than ``bench_worker.py``'s per-call figure, a difference
of two runs over a third, on a busy machine.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import anyio
from _common import Row, format_ns, machine_note, median, print_table, ratio_row
from _tools import App
from bench_worker import CALLS, FINAL_EVENTS, calls_events, replay_worker, worker_run
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from llm_worker import Worker
from llm_worker.otel import OpenTelemetry

TARGET = 1.15
_INACTIVE = nullcontext()


class _Nothing:
    """Every span of the do-nothing instrumentation: no state, no work."""

    __slots__ = ()

    def activate(self) -> AbstractContextManager[None]:
        return _INACTIVE

    def end(self, *outcome: object) -> None:
        pass


class _NothingRun(_Nothing):
    __slots__ = ()

    def request(self, request: object, number: int) -> _Nothing:
        return _NOTHING

    def tool_call(self, call: object, meta: object) -> _Nothing:
        return _NOTHING

    def decided(self, *decision: object) -> None:
        pass

    def link(self) -> None:
        return None


_NOTHING = _Nothing()
_NOTHING_RUN = _NothingRun()


class DoNothing:
    """An ``Instrumentation`` whose hooks do nothing: the protocol's own cost."""

    def run(self, **start: Any) -> _NothingRun:
        return _NOTHING_RUN


def variants() -> dict[str, Worker]:
    app = App()
    responses = [calls_events(CALLS), FINAL_EVENTS]
    sdk = OpenTelemetry(tracer_provider=TracerProvider(), meter_provider=MeterProvider())
    return {
        "plain": replay_worker(app, responses),
        "otel": replay_worker(app, responses, instrumentation=OpenTelemetry()),
        "nothing": replay_worker(app, responses, instrumentation=DoNothing()),
        "sdk": replay_worker(app, responses, instrumentation=sdk),
    }


ROWS = (
    ("otel", f"W{CALLS}, OpenTelemetry(), no SDK configured / no instrumentation", TARGET),
    ("nothing", "(context) same, a do-nothing Instrumentation", None),
    (
        "sdk",
        "(context) same, OpenTelemetry() on an SDK TracerProvider and MeterProvider",
        None,
    ),
)


def orders(names: list[str]) -> Iterator[list[str]]:
    """Each round's order: rotated, so no variant always runs first."""
    index = 0
    while True:
        yield names[index % len(names) :] + names[: index % len(names)]
        index += 1


async def measure(rounds: int, reps: int) -> list[Row]:
    workers = variants()
    runs = {name: worker_run(worker, None, True) for name, worker in workers.items()}
    for run in runs.values():
        for _ in range(20):  # warm up: lazy validators, caches
            await run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    ratios: dict[str, list[float]] = {name: [] for name in runs}
    for _, order in zip(range(rounds), orders(list(runs)), strict=False):
        got = {}
        for name in order:
            gc.collect()
            gc.disable()
            try:
                start = time.perf_counter_ns()
                for _ in range(reps):
                    await runs[name]()
                got[name] = (time.perf_counter_ns() - start) / reps
            finally:
                gc.enable()
        for name, elapsed in got.items():
            times[name].append(elapsed)
            ratios[name].append(elapsed / got["plain"])
    plain = median(times["plain"])
    return [
        ratio_row(
            case,
            ratios[name],
            target,
            f"W{CALLS} {format_ns(median(times[name]))}, without {format_ns(plain)} (reps={reps})",
        )
        for name, case, target in ROWS
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--backend", choices=("asyncio", "trio", "both"), default="both")
    parser.add_argument("--rounds", type=int, help="rounds (default 61; quick 5)")
    parser.add_argument("--reps", type=int, help="runs per variant per round (default 8)")
    options = parser.parse_args()
    backends = ["asyncio", "trio"] if options.backend == "both" else [options.backend]
    rounds = options.rounds or (5 if options.quick else 61)
    reps = options.reps or (2 if options.quick else 8)
    print(f"bench_otel: {machine_note()}")
    print(f"{rounds} rounds, {reps} runs of W{CALLS} per variant per round")
    for backend in backends:

        async def run(backend: str = backend) -> None:
            rows = await measure(rounds, reps)
            print_table(
                f"A traced W{CALLS} run on {backend} (ratio = with / without; lower is better)",
                rows,
                "medians",
            )

        anyio.run(run, backend=backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
