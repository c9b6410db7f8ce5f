"""The apps of the durable-run tests, and (``python -m temporal.durable_apps``) a worker process.

``Ledger`` is a @tool_registry app whose tools record every execution in a
journal (a JSON-lines file) and apply their effects to a store (a JSON file)
at most once per idempotency key: so a test can tell a call that ran twice from
an effect applied twice. ``PlanModel`` is a model whose answers are a function
of the request alone (the user message is the plan), so a fresh worker process
answers exactly as the one it replaces. ``LEDGER`` is the DurableWorker and
``LedgerWorkflow`` its workflow; the crash tests run them in worker processes
(``main()``), the other tests in the test process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from llm_worker import (
        Abort,
        AssistantMessage,
        Completion,
        DataPart,
        ExecutionFailedError,
        Limits,
        LlmEvent,
        LlmRequest,
        MediaPart,
        PostToolCallContext,
        ProviderError,
        Skip,
        SyntheticResult,
        TextDelta,
        TextPart,
        ToolCallContext,
        ToolContext,
        ToolInputDelta,
        ToolResult,
        ToolReturn,
        ToolUseStart,
        ToolUseStop,
        UserMessage,
        tool,
        tool_definitions,
        tool_registry,
    )
    from llm_worker.temporal import (
        ActivityConfig,
        ConversationOutcome,
        ConversationStart,
        ConversationWorkflow,
        DurableWorker,
        LlmWorkerPlugin,
    )


@dataclass
class Deps:
    user: str


def append(path: Path, entry: dict[str, Any]) -> None:
    """One JSON line, written and flushed to disk before the call goes on."""
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")
        file.flush()
        os.fsync(file.fileno())


def read_journal(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@tool_registry
class Ledger:
    """Accounts whose every change is applied once per call, whatever runs it again."""

    def __init__(self, folder: Path, worker: str = "main") -> None:
        self.folder = folder
        self.worker = worker
        self.journal = folder / "journal.jsonl"
        self.store = folder / "effects.json"
        self.block = folder / "block"  # while it exists, slow_credit waits after its effect

    def _record(
        self, event: str, tool_name: str, ctx: ToolContext[Any] | None, **args: Any
    ) -> None:
        append(
            self.journal,
            {
                "event": event,
                "tool": tool_name,
                "call_id": None if ctx is None else ctx.call_id,
                "key": None if ctx is None else ctx.idempotency_key,
                "user": None if ctx is None or ctx.deps is None else ctx.deps.user,
                "args": args,
                "worker": self.worker,
                "pid": os.getpid(),
            },
        )

    def _apply(self, key: str, account: str, amount: int) -> bool:
        effects = json.loads(self.store.read_text()) if self.store.exists() else {}
        if key in effects:
            return False
        effects[key] = {"account": account, "amount": amount}
        self.store.write_text(json.dumps(effects))
        return True

    def balances(self) -> dict[str, int]:
        effects = json.loads(self.store.read_text()) if self.store.exists() else {}
        totals: dict[str, int] = {}
        for effect in effects.values():
            totals[effect["account"]] = totals.get(effect["account"], 0) + effect["amount"]
        return totals

    @tool
    async def credit(self, ctx: ToolContext[Deps], account: str, amount: int) -> str:
        """Add to an account."""
        self._record("run", "credit", ctx, account=account, amount=amount)
        applied = self._apply(ctx.idempotency_key, account, amount)
        return f"credited {amount} to {account}" + ("" if applied else " (already)")

    @tool
    async def slow_credit(self, ctx: ToolContext[Deps], account: str, amount: int) -> str:
        """Add to an account, slowly: the effect is applied, then the call takes its time."""
        self._record("run", "slow_credit", ctx, account=account, amount=amount)
        applied = self._apply(ctx.idempotency_key, account, amount)
        self._record("applied" if applied else "already", "slow_credit", ctx)
        while self.block.exists():
            await asyncio.sleep(0.05)
        return f"credited {amount} to {account}" + ("" if applied else " (already)")

    @tool
    async def reconcile(self, ctx: ToolContext[Deps], account: str) -> str:
        """Reconcile an account, reporting progress; waits while the block file exists."""
        ctx.report_progress(1, 3, f"reading {account}")
        while self.block.exists():
            await asyncio.sleep(0.05)
        return f"{account} reconciled"

    @tool(requires_approval=True)
    async def transfer_out(self, ctx: ToolContext[Deps], account: str, amount: int) -> str:
        """Send money out of an account: a human approves each one."""
        self._record("run", "transfer_out", ctx, account=account, amount=amount)
        self._apply(ctx.idempotency_key, account, -amount)
        return f"sent {amount} from {account}"

    @tool
    def audit(self, account: str) -> str:
        """Check an account (a plain def: it runs in a thread)."""
        self._record("run", "audit", None, account=account)
        return f"{account} is in order"

    @tool
    async def refuse(self, reason: str) -> str:
        """Always fails, as a tool does: the model reads why."""
        self._record("run", "refuse", None, reason=reason)
        raise ExecutionFailedError(reason)


# -- the model ----------------------------------------------------------------------------


class PlanModel:
    """A model that follows the plan in the user's message: a JSON list of turns.

    The message is ``{"turns": [[{"tool": ..., "args": {...}, "id": ...}, ...], ...],
    "answer": "..."}``: the n-th response after the message makes the n-th turn's
    calls; then it answers with ``answer`` and the results it read, in order.
    A function of the request alone, so any process answers alike.
    """

    def __init__(self, journal: Path | None = None) -> None:
        self.journal = journal
        self.requests: list[LlmRequest] = []

    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.requests.append(request)
        return self._events(request)

    async def _events(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        for event in plan_response(request):
            await asyncio.sleep(0)
            yield event


def plan_response(request: LlmRequest) -> list[LlmEvent]:
    messages = list(request.messages)
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    plan = json.loads(user.text)
    after = messages[last_user + 1 :]
    made = sum(1 for m in after if isinstance(m, AssistantMessage))
    turns = plan["turns"]
    if made < len(turns):
        events: list[LlmEvent] = [TextDelta(f"turn {made + 1}")]
        for index, call in enumerate(turns[made]):
            events.append(ToolUseStart(index, call.get("id", f"c{index}"), call["tool"]))
            events.append(ToolInputDelta(index, json.dumps(call.get("args", {}))))
            events.append(ToolUseStop(index))
        events.append(Completion("tool_use"))
        return events
    read = [m.content for m in after if isinstance(m, ToolResult)]
    return [TextDelta(plan.get("answer", "done") + ": " + " | ".join(read)), Completion("end_turn")]


def plan(*turns: list[dict[str, Any]], answer: str = "done") -> str:
    """The user message of a plan (see ``PlanModel``)."""
    return json.dumps({"turns": list(turns), "answer": answer})


def call(tool_name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool_name, "id": call_id, "args": args}


class FlakyModel(PlanModel):
    """``PlanModel``, but its first requests fail with ``failures``, one each."""

    def __init__(self, failures: list[ProviderError]) -> None:
        super().__init__()
        self.failures = list(failures)
        self.attempts = 0

    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.attempts += 1
        if self.failures:
            failure = self.failures.pop(0)
            return _failing(failure)
        return super().stream(request)


class GatedModel(PlanModel):
    """``PlanModel``, but each request first marks ``started`` and waits while ``gate``
    exists: a model request that is under way for as long as the test likes."""

    def __init__(self, gate: Path, started: Path) -> None:
        super().__init__()
        self.gate = gate
        self.started = started

    async def _events(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.started.touch()
        while self.gate.exists():
            await asyncio.sleep(0.05)
        async for event in super()._events(request):
            yield event


class EndlessModel:
    """A model whose every response is text without end; it counts its requests and
    the streams closed."""

    def __init__(self) -> None:
        self.attempts = 0
        self.closed = 0

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.attempts += 1
        try:
            while True:
                await asyncio.sleep(0)
                yield TextDelta("x" * 100)
        finally:
            self.closed += 1


async def _failing(error: ProviderError) -> AsyncIterator[LlmEvent]:
    raise error
    yield  # an async generator that fails on its first step, as a real client's stream


# -- the durable definitions ----------------------------------------------------------------

FAST_RETRIES = RetryPolicy(
    initial_interval=timedelta(milliseconds=100), maximum_interval=timedelta(milliseconds=500)
)

LEDGER = DurableWorker(
    "ledger",
    system_prompt="You keep the books.",
    deps_type=Deps,
    limits=Limits(tool_timeout=30),
    model_activity=ActivityConfig(
        heartbeat_timeout=timedelta(seconds=2), retry_policy=FAST_RETRIES
    ),
    tool_activity=ActivityConfig(heartbeat_timeout=timedelta(seconds=2), retry_policy=FAST_RETRIES),
)
LEDGER.register_tools(Ledger)


@workflow.defn
class LedgerWorkflow(ConversationWorkflow):
    durable = LEDGER

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# The same tools, with hooks that run in the workflow.
HOOKED = DurableWorker(
    "hooked",
    system_prompt="You keep the books.",
    deps_type=Deps,
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
)
HOOKED.register_tools(Ledger)


@HOOKED.add_pre_tool_call_hook
def no_credit_for_mallory(ctx: ToolCallContext) -> Skip | None:
    if json.loads(ctx.call.input_json).get("account") == "mallory":
        return Skip(f"no credit for mallory (asked by {ctx.deps.user})")
    return None


@workflow.defn
class HookedWorkflow(ConversationWorkflow):
    durable = HOOKED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Tool calls on two task queues: transfer_out runs only on the vault's workers.
VAULT_QUEUE = "split-vault"
SPLIT = DurableWorker("split", limits=Limits(tool_timeout=30))
SPLIT.register_tools([Ledger.credit.meta(), Ledger.audit.meta()])
SPLIT.register_tools(
    [Ledger.transfer_out.meta()],
    requires_approval=True,
    activity=ActivityConfig(task_queue=VAULT_QUEUE),
)


@workflow.defn
class SplitWorkflow(ConversationWorkflow):
    durable = SPLIT

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# A model request tried twice at most.
LIMITED = DurableWorker(
    "limited",
    limits=Limits(tool_timeout=30),
    model_activity=ActivityConfig(
        retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=50), maximum_attempts=2)
    ),
)
LIMITED.register_tools(Ledger)


@workflow.defn
class LimitedWorkflow(ConversationWorkflow):
    durable = LIMITED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# One request per run, at most.
SHORT = DurableWorker("short", max_turns=1, limits=Limits(tool_timeout=30))
SHORT.register_tools(Ledger)


@workflow.defn
class ShortWorkflow(ConversationWorkflow):
    durable = SHORT

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# LedgerWorkflow as a later version of the code might have it: a hook now answers
# audit calls in the workflow. Replaying an old history with it must fail.
CHANGED = DurableWorker(
    "ledger", system_prompt="You keep the books.", deps_type=Deps, limits=Limits(tool_timeout=30)
)
CHANGED.register_tools(Ledger)


@CHANGED.add_pre_tool_call_hook
def answer_audits(ctx: ToolCallContext) -> SyntheticResult | None:
    return SyntheticResult("audited in the workflow") if ctx.meta.name == "audit" else None


@workflow.defn(name="LedgerWorkflow")
class ChangedLedgerWorkflow(ConversationWorkflow):
    durable = CHANGED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# LedgerWorkflow as two later deploys might have it, with another definition: transfer_out
# no longer held for approval, or no longer there. A run that paused for a transfer_out
# on LedgerWorkflow must not go on with either.
UNGUARDED = DurableWorker(
    "ledger", system_prompt="You keep the books.", deps_type=Deps, limits=Limits(tool_timeout=30)
)
UNGUARDED.register_tools(Ledger, requires_approval=False)


@workflow.defn(name="LedgerWorkflow")
class UnguardedLedgerWorkflow(ConversationWorkflow):
    durable = UNGUARDED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


KEPT_TOOLS = ("credit", "slow_credit", "reconcile", "audit", "refuse")  # not transfer_out
TRIMMED = DurableWorker(
    "ledger", system_prompt="You keep the books.", deps_type=Deps, limits=Limits(tool_timeout=30)
)
TRIMMED.register_tools([getattr(Ledger, name).meta() for name in KEPT_TOOLS])


@workflow.defn(name="LedgerWorkflow")
class TrimmedLedgerWorkflow(ConversationWorkflow):
    durable = TRIMMED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# A post-hook that aborts the run when a "refuse" result comes, while other calls run.
STOPPING = DurableWorker(
    "stopping",
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(heartbeat_timeout=timedelta(seconds=2), retry_policy=FAST_RETRIES),
)
STOPPING.register_tools(Ledger)


@STOPPING.add_post_tool_call_hook
def stop_at_a_refusal(ctx: PostToolCallContext) -> Abort | None:
    return Abort("refused") if ctx.call.name == "refuse" else None


@workflow.defn
class StoppingWorkflow(ConversationWorkflow):
    durable = STOPPING

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


@tool_registry
class Reports:
    @tool
    async def report(self, size: int) -> str:
        """A report of ``size`` characters."""
        return "r" * size

    @tool
    async def repeat(self, text: str, times: int) -> str:
        """``text``, ``times`` over."""
        return text * times

    @tool
    async def chart(self) -> ToolReturn:
        """A chart: a caption, an image and its data; the row count for the application."""
        return ToolReturn(
            [
                TextPart("The chart:"),
                MediaPart("image/png", data=b"\x89PNG\r\n\x1a\n"),
                DataPart.of({"rows": [1, 2, 3]}),
            ],
            metadata={"rows": 3},
        )


# Payloads of at most 6 000 bytes: a result or a conversation past that does not fit.
TIGHT = DurableWorker(
    "tight",
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
    max_payload_bytes=6_000,
)
TIGHT.register_tools(Reports)


@workflow.defn
class TightWorkflow(ConversationWorkflow):
    durable = TIGHT

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Runs that answer with a Booking (through the final_result tool).
@dataclass
class Booking:
    account: str
    total: int


ANSWERING = DurableWorker(
    "answering",
    deps_type=Deps,
    output_type=Booking,
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
)
ANSWERING.register_tools(Ledger)


@workflow.defn
class AnsweringWorkflow(ConversationWorkflow):
    durable = ANSWERING

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Results up to 1.9 MB each, under the default max_payload_bytes: a few of them make a
# run state larger than one payload. Its answers are text (output_type=str).
ROOMY = DurableWorker(
    "roomy",
    output_type=str,
    limits=Limits(tool_timeout=30, max_result_bytes=1_900_000),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
)
ROOMY.register_tools(Reports)


@workflow.defn
class RoomyWorkflow(ConversationWorkflow):
    durable = ROOMY

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Responses of 1 000 characters at most.
CAPPED = DurableWorker("capped", limits=Limits(tool_timeout=30, max_response_chars=1_000))


@workflow.defn
class CappedWorkflow(ConversationWorkflow):
    durable = CAPPED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Approvals that wait one second at most.
HASTY = DurableWorker(
    "hasty",
    limits=Limits(tool_timeout=30),
    deps_type=Deps,
    approval_timeout=timedelta(seconds=1),
)
HASTY.register_tools(Ledger)


@workflow.defn
class HastyWorkflow(ConversationWorkflow):
    durable = HASTY

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# The ledger, with payloads of at most 1 000 bytes (less than any of its requests): to
# replay a history the ledger recorded (before the limit existed, in effect).
TIGHT_LEDGER = DurableWorker(
    "ledger",
    system_prompt="You keep the books.",
    deps_type=Deps,
    limits=Limits(tool_timeout=30),
    model_activity=ActivityConfig(
        heartbeat_timeout=timedelta(seconds=2), retry_policy=FAST_RETRIES
    ),
    tool_activity=ActivityConfig(heartbeat_timeout=timedelta(seconds=2), retry_policy=FAST_RETRIES),
    max_payload_bytes=1_000,
)
TIGHT_LEDGER.register_tools(Ledger)


@workflow.defn(name="LedgerWorkflow")
class TightLedgerWorkflow(ConversationWorkflow):
    durable = TIGHT_LEDGER

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Errors whose text is what the run was given: a hook's Abort reason made of the model's
# arguments (any length, any code points), and deps whose every part can be wrong.
@dataclass
class Quota:
    limits: list[int]


REFUSING = DurableWorker(
    "refusing",
    deps_type=Quota,
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
)
REFUSING.register_tools(Reports)


@REFUSING.add_pre_tool_call_hook
def refuse_to_repeat(ctx: ToolCallContext) -> Abort | None:
    if ctx.call.name != "repeat":
        return None
    arguments = json.loads(ctx.call.input_json)
    return Abort("will not repeat " + arguments["text"] * arguments["times"])


@workflow.defn
class RefusingWorkflow(ConversationWorkflow):
    durable = REFUSING

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# -- a worker process, for the crash tests ----------------------------------------------------


async def serve(address: str, task_queue: str, folder: Path, name: str) -> None:
    from temporalio.client import Client
    from temporalio.worker import Worker

    client = await Client.connect(address)
    ledger = Ledger(folder, worker=name)
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[LedgerWorkflow],
        activities=LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger)),
        plugins=[LlmWorkerPlugin()],
        # A killed worker's workflow tasks wait this long on its own queue before any
        # other worker may take them (Temporal's default is 10 s).
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    ):
        print("ready", flush=True)
        await asyncio.Event().wait()  # until the test kills the process


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--name", default="worker")
    args = parser.parse_args()
    asyncio.run(serve(args.address, args.task_queue, args.folder, args.name))


if __name__ == "__main__":
    sys.exit(main())
