"""Durable runs at Temporal's own limits: the history's size, a workflow task's commands,
timeouts and Retry-After values past what a timedelta holds, workflows Temporal closes
itself, cache evictions, a tool the activity worker lacks, and pending calls that do
not fit in one query's answer.

Against the local Temporal dev server, as test_durable_runs.py (asyncio only: Temporal's
SDK is). The workflows here run unsandboxed: this module imports pytest.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from llm_worker import (
    Approve,
    Deny,
    Limits,
    Pause,
    ProviderError,
    Tool,
    ToolCallContext,
    ToolContext,
    ToolDefinition,
    ToolMeta,
    ToolResult,
    UserMessage,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.temporal import (
    ActivityConfig,
    Conversation,
    ConversationOutcome,
    ConversationStart,
    ConversationWorkflow,
    DurableWorker,
)
from llm_worker.temporal._activities import MAX_RETRY_AFTER, _retry_delay
from llm_worker.temporal._payloads import payload_size
from llm_worker.temporal._wire import dump_pending

from .durable_apps import (
    FAST_RETRIES,
    LEDGER,
    Deps,
    FlakyModel,
    Ledger,
    LedgerWorkflow,
    PlanModel,
    Reports,
    call,
    plan,
    read_journal,
)
from .support import (
    count,
    finished,
    history_events,
    temporal_worker,
    wait_for_events,
    wait_for_status,
    workflow_id,
)

pytestmark = [pytest.mark.anyio, pytest.mark.temporal]

# A history bound small enough for a test to reach: each turn adds a 3 000 byte result.
CRAMPED = DurableWorker(
    "cramped",
    max_turns=30,
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
    max_payload_bytes=50_000,
    max_history_bytes=150_000,
)
CRAMPED.register_tools(Reports)


@workflow.defn(sandboxed=False)
class CrampedWorkflow(ConversationWorkflow):
    durable = CRAMPED

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Deps as JSON data: each call's input carries them.
HEAVY = DurableWorker(
    "heavy", limits=Limits(tool_timeout=30), tool_activity=ActivityConfig(retry_policy=FAST_RETRIES)
)
HEAVY.register_tools(Reports)


@workflow.defn(sandboxed=False)
class HeavyWorkflow(ConversationWorkflow):
    durable = HEAVY

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


class TestHistoryLimit:
    async def test_a_run_stops_before_its_history_passes_the_bound_and_keeps_its_work(
        self, client: Client, task_queue: str
    ):
        """Without the bound, Temporal terminates a workflow past its history limit and the
        run's work is lost (the state query gives the start state)."""
        turns = [[call("report", f"r{i}", size=3_000)] for i in range(25)]
        activities = CRAMPED.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[CrampedWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, CrampedWorkflow, plan(*turns), id=workflow_id(), task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation)
            state = await conversation.state()
            description = await conversation.handle.describe()
        assert description.status is WorkflowExecutionStatus.FAILED
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "ProviderError"
        assert (
            "it would pass the 150000 bytes a durable run keeps it under (max_history_bytes)"
            in (cause.message)
        )
        assert state is not None
        done = [m.call_id for m in state.history if isinstance(m, ToolResult)]
        assert 2 <= len(done) < 25
        assert done == [f"r{i}" for i in range(len(done))]

    async def test_calls_of_a_batch_wait_for_the_room_calls_under_way_keep(
        self, client: Client, task_queue: str
    ):
        """Room is kept for each scheduled call's result, the most one may be: six calls'
        (300 000 bytes) are more than the bound leaves. The later calls wait until the
        earlier ones are recorded (with what they really returned), and every call runs;
        refusing them left the history a third full."""
        batch = [call("report", f"r{i}", size=10) for i in range(6)]
        activities = CRAMPED.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[CrampedWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, CrampedWorkflow, plan(batch), id=workflow_id(), task_queue=task_queue
            )
            result = await finished(conversation)
        results = [m for m in result.state.history if isinstance(m, ToolResult)]
        assert [(m.call_id, m.is_error) for m in results] == [(f"r{i}", False) for i in range(6)]

    async def test_a_call_with_no_room_and_none_under_way_is_not_called(
        self, client: Client, task_queue: str
    ):
        """Each call carries the run's 40 000 bytes of deps (as the start does): once the
        history holds the first call's, the next call's input and the room for its
        result no longer fit, and with no call under way to wait for, it is refused (the
        model reads why) while the model's answer still fits."""
        deps = {"blob": "d" * 40_000}
        turns = [[call("report", f"r{i}", size=10)] for i in range(2)]
        activities = CRAMPED.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[CrampedWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                CrampedWorkflow,
                plan(*turns),
                id=workflow_id(),
                task_queue=task_queue,
                deps=deps,
            )
            result = await finished(conversation)
        results = [m for m in result.state.history if isinstance(m, ToolResult)]
        assert [(m.call_id, m.is_error) for m in results] == [("r0", False), ("r1", True)]
        assert results[1].content == (
            "Execution failed: tool 'report' was not called: this durable run has no room left "
            "to record more calls"
        )


class TestTaskLimit:
    async def test_parallel_calls_whose_inputs_pass_a_task_s_message_go_in_later_tasks(
        self, client: Client, task_queue: str
    ):
        """Four calls with 1.2 MB deps each: 4.8 MB in one workflow task's completion is over
        gRPC's 4 MiB, and Temporal terminated the workflow (GrpcMessageTooLarge)."""
        deps = {"blob": "y" * 1_200_000}
        batch = [call("report", f"r{i}", size=5) for i in range(4)]
        activities = HEAVY.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[HeavyWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                HeavyWorkflow,
                plan(batch, answer="read"),
                id=workflow_id(),
                task_queue=task_queue,
                deps=deps,
            )
            result = await finished(conversation)
        assert result.final_text == "read: rrrrr | rrrrr | rrrrr | rrrrr"


class TestInfiniteToolTimeout:
    def test_an_infinite_tool_timeout_is_no_timeout(self):
        """``Limits(tool_timeout=inf)`` means no limit, as ``None``: a call activity needs
        one of its own (inf made no timedelta: every workflow task failed)."""
        with pytest.raises(ValueError, match=r"needs a timeout, and limits\.tool_timeout is None"):
            DurableWorker("endless", limits=Limits(tool_timeout=math.inf))
        durable = DurableWorker(
            "endless",
            limits=Limits(tool_timeout=math.inf),
            tool_activity=ActivityConfig(start_to_close_timeout=timedelta(minutes=5)),
        )
        durable.register_tools(Reports)
        assert isinstance(durable.workflow_worker(), Worker)  # no OverflowError


class TestRetryAfter:
    def test_a_wait_is_capped_and_one_that_is_no_wait_is_ignored(self):
        assert _retry_delay(2.5) == timedelta(seconds=2.5)
        assert _retry_delay(1e14) == MAX_RETRY_AFTER
        assert _retry_delay(math.inf) == MAX_RETRY_AFTER
        assert _retry_delay(math.nan) is None
        assert _retry_delay(-1.0) is None
        assert _retry_delay(None) is None

    @pytest.mark.parametrize("wait", [1e14, math.nan])
    async def test_a_non_retryable_error_with_any_retry_after_fails_the_run_at_once(
        self, client: Client, task_queue: str, tmp_path: Path, wait: float
    ):
        """A wait past a timedelta's range (or NaN) made the activity fail with an
        OverflowError: retried, and the 429's details lost."""
        model = FlakyModel(
            [ProviderError("test", "quota", status=429, retryable=False, retry_after=wait)]
        )
        activities = LEDGER.activities(model=model, tools=tool_definitions(Ledger(tmp_path)))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan(answer="hello"),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation)
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "ProviderError"
        assert "quota" in cause.message
        assert model.attempts == 1


class TestClosedByTemporal:
    @pytest.mark.parametrize("how", ["terminated", "timed_out"])
    async def test_status_and_feed_say_how_temporal_closed_the_workflow(
        self, client: Client, task_queue: str, tmp_path: Path, how: str
    ):
        """The workflow's code never runs then: its own status stayed "paused"."""
        options = {"execution_timeout": timedelta(seconds=2)} if how == "timed_out" else {}
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("transfer_out", "t", account="ada", amount=1)]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
                **options,
            )
            await wait_for_status(conversation, "paused")
            if how == "terminated":
                await conversation.handle.terminate("by an operator")
            with anyio.fail_after(30):
                while (status := await conversation.status()) == "paused":
                    await anyio.sleep(0.1)
            page = await conversation.events()
        assert status == how
        assert page.status == how
        assert page.events[-1]["type"] == "run_paused"  # what the workflow recorded


class TestEviction:
    async def test_an_evicted_workflow_s_calls_in_flight_log_no_error(
        self, client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ):
        """One cached workflow for three runs: each run with calls under way is evicted
        again and again; its calls were logged as tools that raised."""
        ledger = Ledger(tmp_path)
        ledger.block.touch()
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        with caplog.at_level(logging.WARNING):
            async with temporal_worker(
                client,
                task_queue,
                workflows=[LedgerWorkflow],
                activities=activities,
                max_cached_workflows=1,
            ):
                conversations = [
                    await Conversation.start(
                        client,
                        LedgerWorkflow,
                        plan(
                            [
                                call("slow_credit", f"s{i}", account="ada", amount=1),
                                call("credit", f"c{i}", account="bob", amount=1),
                            ]
                        ),
                        id=workflow_id(),
                        task_queue=task_queue,
                        deps=Deps("ada"),
                    )
                    for i in range(3)
                ]
                for conversation in conversations:  # each query brings its workflow back
                    await wait_for_events(conversation, "tool_call_finished", 1)
                ledger.block.unlink()
                results = [await finished(conversation) for conversation in conversations]
        assert [r.final_text for r in results] == [
            "done: credited 1 to ada | credited 1 to bob"
        ] * 3
        evicted = [r for r in caplog.records if "_WorkflowBeingEvictedError" in r.getMessage()]
        assert evicted == []


class TestMissingTool:
    async def test_the_model_reads_that_the_tool_is_not_available_the_log_reads_why(
        self, client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ):
        """The model read the task queue's name and advice for the developer."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=[ledger.credit.definition()])
        with caplog.at_level(logging.WARNING):
            async with temporal_worker(
                client, task_queue, workflows=[LedgerWorkflow], activities=activities
            ):
                conversation = await Conversation.start(
                    client,
                    LedgerWorkflow,
                    plan([call("audit", "x", account="ada")]),
                    id=workflow_id(),
                    task_queue=task_queue,
                    deps=Deps("ada"),
                )
                result = await finished(conversation)
        message = result.state.history[2]
        assert isinstance(message, ToolResult)
        assert message.is_error
        assert message.content == "Execution failed: tool 'audit' is not available"
        assert any(
            task_queue in r.getMessage() and "activities(tools=...)" in r.getMessage()
            for r in caplog.records
        )


# Payloads of at most 10 000 bytes: a conversation soon outgrows one.
NARROW = DurableWorker(
    "narrow",
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(retry_policy=FAST_RETRIES),
    max_payload_bytes=10_000,
)
NARROW.register_tools(Reports)


@workflow.defn(sandboxed=False)
class NarrowWorkflow(ConversationWorkflow):
    durable = NARROW

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


class TestStateParts:
    @pytest.mark.parametrize("text", ["a", "é"])
    async def test_a_state_comes_in_parts_as_full_as_a_payload_holds(
        self, client: Client, task_queue: str, text: str
    ):
        """Parts were cut for 12 bytes a character: a state of mostly ASCII took 12 times
        the queries it needs."""
        turns = [[call("repeat", f"r{i}", text=text, times=1_500)] for i in range(8)]
        activities = NARROW.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[NarrowWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, NarrowWorkflow, plan(*turns), id=workflow_id(), task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError):  # the request outgrew the payload
                await finished(conversation)
            first = await conversation.handle.query("state_part", 0, result_type=dict)
            parts = [first] + [
                await conversation.handle.query("state_part", index, result_type=dict)
                for index in range(1, first["parts"])
            ]
            state = await conversation.state()
        assert state is not None
        whole = "".join(part["text"] for part in parts)
        assert whole == state.to_json()
        budget = NARROW.max_payload_bytes - 200
        assert all(payload_size(part["text"]) <= budget for part in parts)
        assert len(parts) <= payload_size(whole) // budget + 2


@tool_registry
class Chatty:
    """A tool whose progress message is its whole log: over Temporal's payload limit."""

    def __init__(self) -> None:
        self.runs = 0

    @tool
    async def build(self, ctx: ToolContext) -> str:
        """Build, reporting progress."""
        self.runs += 1
        ctx.report_progress(1, 3, "log line " * 400_000)
        await asyncio.sleep(1.5)  # heartbeats go meanwhile, a third of a second apart
        return "built"


CHATTY = DurableWorker(
    "chatty",
    limits=Limits(tool_timeout=30),
    tool_activity=ActivityConfig(heartbeat_timeout=timedelta(seconds=1), retry_policy=FAST_RETRIES),
)
CHATTY.register_tools(Chatty)


@workflow.defn(sandboxed=False)
class ChattyWorkflow(ConversationWorkflow):
    durable = CHATTY

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


class TestLargeTexts:
    async def test_a_long_progress_message_goes_cut_and_the_tool_runs_once(
        self, client: Client, task_queue: str
    ):
        """A 3.6 MB heartbeat made Temporal's SDK cancel the activity at each attempt:
        the tool ran again and again, for ever."""
        chatty = Chatty()
        activities = CHATTY.activities(model=PlanModel(), tools=tool_definitions(chatty))
        async with temporal_worker(
            client, task_queue, workflows=[ChattyWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                ChattyWorkflow,
                plan([call("build", "b")]),
                id=workflow_id(),
                task_queue=task_queue,
            )
            result = await finished(conversation, seconds=20)
        assert result.final_text == "done: built"
        assert chatty.runs == 1

    async def test_a_provider_s_long_message_fails_the_run_at_once(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A 2.5 MB message made a 7.5 MB activity failure (message, details, the cause's
        message): Temporal refused it, the activity timed out and ran again (each time a
        paid request), without end."""
        model = FlakyModel([ProviderError("test", "bad request: " + "y" * 2_500_000, status=400)])
        activities = LEDGER.activities(model=model, tools=tool_definitions(Ledger(tmp_path)))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan(answer="hello"),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation, seconds=20)
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "ProviderError"
        assert cause.message.startswith("test request failed (HTTP 400): bad request: yyy")
        assert cause.message.endswith("... (2490013 more characters)")
        assert model.attempts == 1

    async def test_decisions_over_the_payload_limit_are_refused_before_they_go(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A 2.5 MB Deny reason raised Temporal's RPCError, and left failed workflow tasks
        in the history; the run then takes a decision that fits."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("transfer_out", "t", account="ada", amount=1)]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            with pytest.raises(ValueError, match="the decisions are 2500037 bytes") as refused:
                await conversation.decide(Deny("x" * 2_500_000))
            await conversation.decide(Approve())
            await finished(conversation)
            events = await history_events(conversation.handle)
        assert str(refused.value) == (
            "the decisions are 2500037 bytes as JSON, over the 2000000 bytes one update may "
            "carry (max_payload_bytes): shorten the Deny reasons (each becomes a tool result "
            "the model reads) or the approved arguments"
        )
        assert count(events, EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) == 0
        assert count(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) == 1
        assert [e["tool"] for e in read_journal(ledger.journal)] == ["transfer_out"]

    async def test_a_state_over_the_payload_limit_is_refused_before_it_goes(
        self, client: Client, task_queue: str
    ):
        """Continuing from a state larger than one payload raised Temporal's RPCError
        ("Blob data size exceeds limit")."""
        worker = Worker(PlanModel())
        worker.set_history([UserMessage("x" * 2_100_000)])
        id = workflow_id()
        with pytest.raises(ValueError, match="the state is 2100") as refused:
            await Conversation.start(
                client,
                LedgerWorkflow,
                None,
                id=id,
                task_queue=task_queue,
                state=worker.state,
                deps=Deps("ada"),
            )
        assert str(refused.value).endswith(
            "over the 2000000 bytes one payload may be (max_payload_bytes): shorten its "
            "history first (Worker.set_history, then worker.state)"
        )
        with pytest.raises(RPCError) as missing:  # no workflow was started
            await client.get_workflow_handle(id).describe()
        assert missing.value.status is RPCStatusCode.NOT_FOUND


# -- the pending calls, in pages of one payload ------------------------------------------------


@tool_registry
class Payments:
    @tool(requires_approval=True)
    async def pay(self, account: str, amount: int) -> str:
        """Send a payment."""
        return f"paid {amount} to {account}"


@tool_registry
class Forms:
    @tool(requires_approval=True)
    async def sign(self, form: str) -> str:
        """Sign a form."""
        return f"signed {form}"


RULES = " ".join(
    f"Rule {i}: payments to accounts of kind {i} need a reference." for i in range(450)
)
# A tool whose description is 27 KB: every request carries it, far under the limit.
PAY = Payments.pay.meta().with_description("Send a payment. " + RULES)
PAYING = DurableWorker("paying", limits=Limits(tool_timeout=30))
PAYING.register_tools([PAY], requires_approval=True)


@workflow.defn(sandboxed=False)
class PayingWorkflow(ConversationWorkflow):
    durable = PAYING

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# Payloads of 6 000 bytes at most, and a pre-hook that holds each call with a note of the
# size its arguments ask for: the pending calls outgrow one payload, the requests do not.
FILE = Forms.sign.meta().with_description("Sign a form. " + "Forms are read first. " * 25)
FORMS = DurableWorker("forms", limits=Limits(tool_timeout=30), max_payload_bytes=6_000)
FORMS.register_tools([FILE])


@FORMS.add_pre_tool_call_hook
def review_each_form(ctx: ToolCallContext) -> Pause:
    return Pause("review: " + "n" * json.loads(ctx.call.input_json)["note"])


@workflow.defn(sandboxed=False)
class FormsWorkflow(ConversationWorkflow):
    durable = FORMS

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# A tool whose meta alone nearly fills a payload: with a call, no page holds it.
HUGE = Forms.sign.meta().with_description("Sign a form. " + "x" * 5_800)
HUGE_SIZE = payload_size({"description": HUGE.description, "input_schema": HUGE.input_schema})
SIGNING = DurableWorker("signing", limits=Limits(tool_timeout=30), max_payload_bytes=6_000)
SIGNING.register_tools([HUGE], requires_approval=True)


@workflow.defn(sandboxed=False)
class SigningWorkflow(ConversationWorkflow):
    durable = SIGNING

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


@workflow.defn(name="LedgerWorkflow", sandboxed=False)
class EarlierLedgerWorkflow(ConversationWorkflow):
    """``LedgerWorkflow`` as an earlier version answered the ``pending`` query: every call
    with its tool's meta, in one list."""

    durable = LEDGER

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)

    @workflow.query
    def pending(self) -> list[dict[str, Any]]:  # type: ignore[override]
        worker = self._worker
        return [] if worker is None else [dump_pending(p) for p in worker.pending]


async def pending_pages(conversation: Conversation) -> list[dict[str, Any]]:
    """The pages of the ``pending`` query, from the first to the last, as it answers them."""
    pages = [await conversation.handle.query("pending", result_type=dict)]
    while pages[-1]["next"] < pages[-1]["total"]:
        pages.append(
            await conversation.handle.query("pending", pages[-1]["next"], result_type=dict)
        )
    return pages


async def whole_feed(conversation: Conversation) -> list[Mapping[str, Any]]:
    feed: list[Mapping[str, Any]] = []
    while True:
        page = await conversation.events(len(feed))
        if not page.events:
            return feed
        feed += page.events


def with_meta(definition: ToolDefinition, meta: ToolMeta) -> ToolDefinition:
    """``definition``'s tool, with ``meta``."""

    def make() -> tuple[ToolMeta, Tool]:
        return meta, definition()[1]

    return make


class TestPendingPages:
    async def test_many_calls_of_one_large_tool_come_whole_and_each_page_fits(
        self, client: Client, task_queue: str
    ):
        """90 calls of a tool with a 27 KB description: the pending query repeated the
        tool's meta for each call (2.4 MB, over Temporal's payload limit, while every
        payload of the run was far under it) and Conversation.pending() raised Temporal's
        WorkflowQueryFailedError. A page has each tool's meta once. The feed's run_paused,
        as large as that, is left out of it (keeping its pause id); each call's
        approval_requested comes."""
        calls = [call("pay", f"p{i}", account=f"acct{i}", amount=i) for i in range(90)]
        activities = PAYING.activities(model=PlanModel(), tools=tool_definitions(Payments()))
        async with temporal_worker(
            client, task_queue, workflows=[PayingWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, PayingWorkflow, plan(calls), id=workflow_id(), task_queue=task_queue
            )
            await wait_for_status(conversation, "paused")
            pending = await conversation.pending()
            pages = await pending_pages(conversation)
            feed = await whole_feed(conversation)
            state = await conversation.state()
            assert state is not None
            await conversation.decide(Deny("no"), pause_id=state.pause_id)
            result = await finished(conversation)
        assert [(p.call.id, p.call.input_json, p.reason) for p in pending] == [
            (f"p{i}", json.dumps({"account": f"acct{i}", "amount": i}), "requires approval")
            for i in range(90)
        ]
        assert all(
            (p.meta.name, p.meta.description, p.meta.input_schema)
            == (PAY.name, PAY.description, PAY.input_schema)
            for p in pending
        )
        [page] = pages
        assert (page["next"], page["total"], page["pause_id"]) == (90, 90, state.pause_id)
        assert page["tools"] == {
            "pay": {"description": PAY.description, "input_schema": PAY.input_schema}
        }
        assert payload_size(page) < 41_000
        asked = [e for e in feed if e["type"] == "approval_requested"]
        assert [e["pending"]["call"]["id"] for e in asked] == [f"p{i}" for i in range(90)]
        [paused] = [e for e in feed if e["type"] == "run_paused"]
        assert sorted(paused) == ["left_out", "pause_id", "seq", "type"]
        assert paused["pause_id"] == state.pause_id
        assert paused["left_out"].startswith("this event is 24")
        assert result.final_text is not None

    async def test_calls_come_in_pages_and_one_too_large_for_any_from_the_state(
        self, client: Client, task_queue: str
    ):
        """Held calls whose notes (their reasons) together pass max_payload_bytes: pages
        each within it, each with the tool's meta once; a call too large for a page of
        its own is left out of it, and Conversation.pending() reads it in the state."""
        notes = [500] * 10 + [6_500] + [500] * 2
        forms = [call("sign", f"f{i}", form=f"form {i}", note=n) for i, n in enumerate(notes)]
        activities = FORMS.activities(model=PlanModel(), tools=tool_definitions(Forms()))
        async with temporal_worker(
            client, task_queue, workflows=[FormsWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, FormsWorkflow, plan(forms), id=workflow_id(), task_queue=task_queue
            )
            await wait_for_status(conversation, "paused")
            pending = await conversation.pending()
            pages = await pending_pages(conversation)
            feed = await whole_feed(conversation)
            [pause_id] = {e["pause_id"] for e in feed if "pause_id" in e}
            await conversation.decide(Deny("no"), pause_id=pause_id)
            result = await finished(conversation)
        assert [(p.call.id, p.call.input_json, p.reason) for p in pending] == [
            (f"f{i}", json.dumps({"form": f"form {i}", "note": n}), "review: " + "n" * n)
            for i, n in enumerate(notes)
        ]
        assert {(p.meta.name, p.meta.description) for p in pending} == {("sign", FILE.description)}
        assert [(page["next"], page["total"]) for page in pages] == [(8, 13), (10, 13), (13, 13)]
        assert all(payload_size(page) <= FORMS.max_payload_bytes for page in pages)
        assert all(page["pause_id"] == pause_id for page in pages)
        assert all(list(page["tools"]) == ["sign"] for page in pages)
        left_out = pages[2]["calls"][0]
        assert sorted(left_out) == ["call_id", "left_out", "tool"]
        assert (left_out["call_id"], left_out["tool"]) == ("f10", "sign")
        assert left_out["left_out"].startswith("this call is 66")
        assert left_out["left_out"].endswith(
            "together over max_payload_bytes (6000); read the call in the run state "
            "(Conversation.state(), its paused_calls)"
        )
        # The feed's events too large for a page keep their pause's id.
        stubs = [(e["type"], e["pause_id"]) for e in feed if "left_out" in e]
        assert stubs == [("approval_requested", pause_id), ("run_paused", pause_id)]
        assert result.final_text is not None

    async def test_a_tool_too_large_for_any_page_is_an_error_naming_the_limit(
        self, client: Client, task_queue: str
    ):
        """A paused state whose call's tool has a meta of nearly max_payload_bytes (a
        process paused it: no request of this run carried the tool yet): no page holds
        the tool with a call, and pending() says so instead of answering without it."""
        local = Worker(PlanModel())
        [definition] = tool_definitions(Forms())
        local.register_tools([with_meta(definition, HUGE)], requires_approval=True)
        assert await local.run(plan([call("sign", "s1", form="lease")])) is WorkerResult.PAUSED
        activities = SIGNING.activities(model=PlanModel(), tools=tool_definitions(Forms()))
        async with temporal_worker(
            client, task_queue, workflows=[SigningWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                SigningWorkflow,
                None,
                id=workflow_id(),
                task_queue=task_queue,
                state=local.state,
            )
            await wait_for_status(conversation, "paused")
            with pytest.raises(ValueError, match="cannot be read") as refused:
                await conversation.pending()
            [page] = await pending_pages(conversation)
            await conversation.handle.terminate("done")
        assert payload_size(page) <= SIGNING.max_payload_bytes
        assert str(refused.value) == (
            "the pending calls of tool 'sign' cannot be read: its description and input "
            f"schema are {HUGE_SIZE} bytes as JSON: with a call, over what one answer of the "
            "pending query holds (max_payload_bytes, 6000 bytes); raise "
            "DurableWorker(max_payload_bytes=...), within the cluster's blob size limit"
        )

    async def test_a_worker_of_an_earlier_version_is_read_as_it_answers(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """During a deploy, a Temporal worker of the earlier code answers the pending
        query with every call whole: Conversation.pending() reads that too."""
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
        async with temporal_worker(
            client, task_queue, workflows=[EarlierLedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("transfer_out", "t1", account="ada", amount=3)]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            pending = await conversation.pending()
            await conversation.decide(Deny("no"))
            await finished(conversation)
        assert [(p.call.id, p.meta.name, p.reason) for p in pending] == [
            ("t1", "transfer_out", "requires approval")
        ]
