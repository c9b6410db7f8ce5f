"""Durable runs against the local Temporal dev server: the run, approvals, failures, the feed.

The Temporal worker runs in the test process here (the crash tests run it in
subprocesses: test_crashes.py). Every run is compared with what a process's
Worker does with the same model and tools.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, Field, computed_field
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.worker import Replayer

from llm_worker import (
    Approve,
    Deny,
    ProviderError,
    RunState,
    ToolCall,
    ToolResult,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool_definitions,
)
from llm_worker.temporal import (
    Conversation,
    ConversationNotFoundError,
    DurableWorker,
    LlmWorkerPlugin,
)
from llm_worker.temporal._wire import dump_pending

from .durable_apps import (
    ANSWERING,
    CAPPED,
    HASTY,
    HOOKED,
    LEDGER,
    LIMITED,
    ROOMY,
    SHORT,
    SPLIT,
    STOPPING,
    TIGHT,
    VAULT_QUEUE,
    AnsweringWorkflow,
    Booking,
    CappedWorkflow,
    Deps,
    EndlessModel,
    FlakyModel,
    GatedModel,
    HastyWorkflow,
    HookedWorkflow,
    Ledger,
    LedgerWorkflow,
    LimitedWorkflow,
    PlanModel,
    Reports,
    RoomyWorkflow,
    ShortWorkflow,
    SplitWorkflow,
    StoppingWorkflow,
    TightWorkflow,
    call,
    plan,
    read_journal,
)
from .support import (
    activity_types,
    count,
    finished,
    history_events,
    temporal_worker,
    wait_for_events,
    wait_for_status,
    wait_until,
    workflow_id,
)

pytestmark = [pytest.mark.anyio, pytest.mark.temporal]

THREE_TURNS = plan(
    [
        call("credit", "a", account="ada", amount=5),
        call("credit", "b", account="bob", amount=7),
        call("audit", "c", account="ada"),
    ],
    [call("credit", "a", account="ada", amount=1), call("refuse", "b", reason="closed today")],
    answer="booked",
)


async def local_run(folder: Path, message: str) -> Worker[Deps]:
    """The same run in this process: a Worker with the same model, tools and limits."""
    worker: Worker[Deps] = Worker(
        PlanModel(), system_prompt=LEDGER.system_prompt, limits=LEDGER.limits, deps_type=Deps
    )
    worker.register_tools(tool_definitions(Ledger(folder)))
    assert await worker.run(message, deps=Deps("ada")) is WorkerResult.FINISHED
    return worker


async def feed_pause_ids(conversation: Conversation) -> list[str]:
    """The ``pause_id`` of each ``run_paused`` in the feed; each of its pause's
    ``approval_requested`` events has the same."""
    page = await conversation.events()
    ids: list[str] = []
    asked: list[str] = []
    for event in page.events:
        if event["type"] == "approval_requested":
            asked.append(event["pause_id"])
        elif event["type"] == "run_paused":
            assert set(asked) == {event["pause_id"]}, (asked, event["pause_id"])
            ids.append(event["pause_id"])
            asked = []
    return ids


class TestRun:
    async def test_a_multi_turn_run_with_parallel_calls_ends_as_it_does_in_a_process(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """Three requests, five calls (three at once): the same state as a process's run,
        each call executed once, one activity per request and per call."""
        durable_folder, local_folder = tmp_path / "durable", tmp_path / "local"
        durable_folder.mkdir()
        local_folder.mkdir()
        ledger = Ledger(durable_folder)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                THREE_TURNS,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            result = await finished(conversation)
            events = await history_events(conversation.handle)
        local = await local_run(local_folder, THREE_TURNS)

        assert result.state == local.state  # history, usage, fingerprint: all of it
        assert (
            result.final_text
            == local.final_text
            == (
                "booked: credited 5 to ada | credited 7 to bob | ada is in order | "
                "credited 1 to ada | Execution failed: closed today"
            )
        )
        runs = [(e["tool"], e["call_id"]) for e in read_journal(ledger.journal)]
        assert sorted(runs) == sorted(
            [("credit", "a"), ("credit", "b"), ("audit", None), ("credit", "a"), ("refuse", None)]
        )
        assert ledger.balances() == {"ada": 6, "bob": 7}
        assert activity_types(events) == [
            "ledger.model_request",
            *["ledger.tool_call"] * 3,
            "ledger.model_request",
            *["ledger.tool_call"] * 2,
            "ledger.model_request",
        ]
        # The first response's three calls were all scheduled before any of them completed.
        kinds = [e.event_type for e in events]
        first_tool_done = kinds.index(
            EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
            kinds.index(
                EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
                kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) + 1,
            ),
        )
        scheduled_before = kinds[:first_tool_done].count(
            EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        )
        assert scheduled_before == 4  # the first model request and the three calls

    async def test_a_structured_answer_comes_back_as_the_output_type(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """``output_type=``: the model answers through ``final_result`` (a bad answer is
        told what is wrong, as in a process); the outcome carries the answer as JSON
        data and ``load_output`` makes it a ``Booking`` again."""
        message = plan(
            [call("credit", "a", account="ada", amount=5)],
            [call("final_result", "f1", account="ada")],  # no total: told so, answers again
            [call("final_result", "f2", account="ada", total=5)],
        )
        activities = ANSWERING.activities(
            model=PlanModel(), tools=tool_definitions(Ledger(tmp_path))
        )
        async with temporal_worker(
            client, task_queue, workflows=[AnsweringWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                AnsweringWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            result = await finished(conversation)
            page = await conversation.events(0)
        assert result.output == {"account": "ada", "total": 5}
        assert page.events[-1]["type"] == "run_finished"
        assert page.events[-1]["output"] == result.output  # the feed's end says it too
        assert ANSWERING.load_output(result.output) == Booking("ada", 5)
        local: Worker[Deps, Booking] = Worker(
            PlanModel(), limits=ANSWERING.limits, deps_type=Deps, output_type=Booking
        )
        (tmp_path / "local").mkdir()
        local.register_tools(tool_definitions(Ledger(tmp_path / "local")))
        with anyio.fail_after(10):
            assert await local.run(message, deps=Deps("ada")) is WorkerResult.FINISHED
        assert local.output == Booking("ada", 5)
        assert result.state.history == local.state.history
        told = result.state.history[-3]
        assert isinstance(told, ToolResult)
        assert told.is_error
        assert "total" in told.content

    async def test_a_rich_result_keeps_its_parts_and_metadata(
        self, client: Client, task_queue: str
    ):
        """A ToolReturn's image, data and metadata reach the history as in a process (the
        stand-in gave the workflow only the text: the model never saw the image)."""
        message = plan([call("chart", "c")])
        activities = TIGHT.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[TightWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, TightWorkflow, message, id=workflow_id(), task_queue=task_queue
            )
            result = await finished(conversation)
        local = Worker(PlanModel(), limits=TIGHT.limits)
        local.register_tools(tool_definitions(Reports()))
        with anyio.fail_after(10):
            assert await local.run(message) is WorkerResult.FINISHED
        (durable,) = [m for m in result.state.history if isinstance(m, ToolResult)]
        (in_process,) = [m for m in local.history if isinstance(m, ToolResult)]
        assert durable == in_process
        assert [type(part).__name__ for part in durable.parts] == [
            "TextPart",
            "MediaPart",
            "DataPart",
        ]
        assert durable.metadata == {"rows": 3}
        assert result.state.history == local.history

    def test_an_output_type_is_checked_where_it_is_given(self):
        class Opaque:
            pass

        with pytest.raises(TypeError, match=r"output type .*Opaque cannot be validated"):
            DurableWorker("opaque", output_type=Opaque)
        with pytest.raises(ValueError, match="output_retries must be"):
            DurableWorker("opaque", output_retries=-1)
        assert DurableWorker("plain").load_output("the text") == "the text"

    async def test_tools_get_an_idempotency_key_of_the_workflow_the_request_and_the_call(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """Call ids repeat across responses, keys do not: "{workflow_id}/{request}/{call_id}"."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        identifier = workflow_id()
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                THREE_TURNS,
                id=identifier,
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await finished(conversation)
        keys = sorted(e["key"] for e in read_journal(ledger.journal) if e["tool"] == "credit")
        assert keys == [f"{identifier}/1/a", f"{identifier}/1/b", f"{identifier}/2/a"]
        assert {e["user"] for e in read_journal(ledger.journal) if e["tool"] == "credit"} == {"ada"}

    async def test_hooks_run_in_the_workflow_with_the_runs_deps(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A pre-hook's Skip (which reads the deps) keeps the call from running at all."""
        ledger = Ledger(tmp_path)
        activities = HOOKED.activities(model=PlanModel(), tools=tool_definitions(ledger))
        message = plan(
            [
                call("credit", "a", account="mallory", amount=9),
                call("credit", "b", account="ada", amount=1),
            ]
        )
        async with temporal_worker(
            client, task_queue, workflows=[HookedWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                HookedWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("eve"),
            )
            result = await finished(conversation)
        assert result.state.history[2] == ToolResult(
            "a",
            "Tool call 'credit' was skipped by the application; it did not run: "
            "no credit for mallory (asked by eve)",
            True,
        )
        assert [e["args"]["account"] for e in read_journal(ledger.journal)] == ["ada"]

    async def test_a_tool_on_its_own_task_queue_runs_on_the_worker_of_that_queue(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """``ActivityConfig(task_queue=...)``: that tool's calls run only where its queue is."""
        main, vault = Ledger(tmp_path, worker="main"), Ledger(tmp_path, worker="vault")
        main_tools = [main.credit.definition(), main.audit.definition()]
        message = plan(
            [
                call("credit", "a", account="ada", amount=3),
                call("transfer_out", "b", account="ada", amount=2),
            ]
        )
        async with (
            temporal_worker(
                client,
                task_queue,
                workflows=[SplitWorkflow],
                activities=SPLIT.activities(model=PlanModel(), tools=main_tools),
            ),
            temporal_worker(
                client,
                VAULT_QUEUE,
                activities=SPLIT.activities(tools=[vault.transfer_out.definition()]),
            ),
        ):
            conversation = await Conversation.start(
                client, SplitWorkflow, message, id=workflow_id(), task_queue=task_queue
            )
            await wait_for_status(conversation, "paused")
            await conversation.decide(Approve())
            await finished(conversation)
        # The two calls ran together, each on the worker of its queue.
        assert sorted((e["tool"], e["worker"]) for e in read_journal(main.journal)) == [
            ("credit", "main"),
            ("transfer_out", "vault"),
        ]

    async def test_the_next_run_of_the_conversation_starts_from_the_last_state(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A second workflow continues the first's state; request numbers (and keys) go on."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        identifier = workflow_id()
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            first = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("credit", "a", account="ada", amount=1)]),
                id=identifier,
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            state = (await finished(first)).state
            second = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("credit", "a", account="ada", amount=2)]),
                id=identifier + "-2",
                task_queue=task_queue,
                deps=Deps("ada"),
                state=state,
            )
            result = await finished(second)
        assert result.state.usage.requests == 4
        assert len(result.state.history) == 8
        assert [e["key"] for e in read_journal(ledger.journal)] == [
            f"{identifier}/1/a",
            f"{identifier}-2/3/a",
        ]


class TestApprovals:
    async def test_a_paused_run_waits_then_resumes_with_the_update_s_decisions(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """Queries show the pending calls; approve with other arguments, deny with a reason."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        message = plan(
            [
                call("credit", "c1", account="ada", amount=10),
                call("transfer_out", "t1", account="ada", amount=4),
                call("transfer_out", "t2", account="ada", amount=5),
            ],
            answer="settled",
        )
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            pending = await conversation.pending()
            assert [(p.call.id, p.meta.name, p.reason) for p in pending] == [
                ("t1", "transfer_out", "requires approval"),
                ("t2", "transfer_out", "requires approval"),
            ]
            assert read_journal(ledger.journal) == []  # nothing of the response ran
            state = await conversation.state()
            assert state is not None
            assert state.pending_call_ids == ("t1", "t2")
            decided = await conversation.decide(
                {"t1": Approve({"account": "ada", "amount": 3}), "t2": Deny("one is enough")}
            )
            assert decided == ("t1", "t2")
            result = await finished(conversation)
        ran = sorted((e["tool"], e["args"]["amount"]) for e in read_journal(ledger.journal))
        assert ran == [("credit", 10), ("transfer_out", 3)]  # with the approved arguments
        assert result.state.history[4] == ToolResult(
            "t2", "Tool call 'transfer_out' was denied; it did not run: one is enough", True
        )
        assert ledger.balances() == {"ada": 7}

    async def test_a_decision_sent_again_with_its_id_decides_nothing_more(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A retried decide (same decision_id) arriving at the next pause, whose call has
        the same model id, is the first one's repeat: it approves nothing there."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        message = plan(
            [call("transfer_out", "t1", account="ada", amount=1)],
            [call("transfer_out", "t1", account="ada", amount=1000)],
        )
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            assert await conversation.decide({"t1": Approve()}, decision_id="d1") == ("t1",)
            await wait_for_events(conversation, "approval_requested", 2)
            await wait_for_status(conversation, "paused")
            assert await conversation.decide({"t1": Approve()}, decision_id="d1") == ("t1",)
            pending = await conversation.pending()
            assert [(p.call.id, p.call.input_json) for p in pending] == [
                ("t1", '{"account": "ada", "amount": 1000}')
            ]
            assert await conversation.decide({"t1": Deny("too much")}, decision_id="d2") == ("t1",)
            await finished(conversation)
        ran = [(e["tool"], e["args"]["amount"]) for e in read_journal(ledger.journal)]
        assert ran == [("transfer_out", 1)]

    async def test_a_decision_for_an_earlier_pause_is_refused_at_a_later_one(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A decision naming its pause (``pause_id``), sent again (a new update id) once a
        later pause waits whose call has the same model id, is refused with resume()'s
        words and changes nothing; the later pause's own id is taken."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        message = plan(
            [call("transfer_out", "t1", account="ada", amount=1)],
            [call("transfer_out", "t1", account="ada", amount=1000)],
        )
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            [first] = await feed_pause_ids(conversation)
            assert await conversation.decide({"t1": Approve()}, pause_id=first) == ("t1",)
            await wait_for_events(conversation, "run_paused", 2)
            await wait_for_status(conversation, "paused")
            [_, second] = await feed_pause_ids(conversation)
            assert second != first
            before = await conversation.events()
            with pytest.raises(WorkerStateError) as stale:
                await conversation.decide({"t1": Approve()}, pause_id=first)
            assert str(stale.value) == (
                f"This decision is for pause {first!r}, which has ended; the run is now "
                f"paused at {second!r} (read worker.pending and decide again)"
            )
            with pytest.raises(WorkerStateError, match="which has ended"):
                await conversation.decide(Approve(), pause_id=first)
            after = await conversation.events()
            assert (after.events, after.status) == (before.events, "paused")
            pending = await conversation.pending()
            assert [(p.call.id, p.call.input_json) for p in pending] == [
                ("t1", '{"account": "ada", "amount": 1000}')
            ]
            events = await history_events(conversation.handle)
            assert count(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) == 1
            assert await conversation.decide({"t1": Deny("too much")}, pause_id=second) == ("t1",)
            result = await finished(conversation)
            page = await conversation.events()
        ran = [(e["tool"], e["args"]["amount"]) for e in read_journal(ledger.journal)]
        assert ran == [("transfer_out", 1)]
        assert result.state.history[-2] == ToolResult(
            "t1", "Tool call 'transfer_out' was denied; it did not run: too much", True
        )
        decided = [e["decisions"] for e in page.events if e["type"] == "decided"]
        assert decided == [
            {"calls": {"t1": {"approve": True, "arguments": None}}, "pause_id": first},
            {"calls": {"t1": {"approve": False, "reason": "too much"}}, "pause_id": second},
        ]

    async def test_a_pause_id_is_checked_for_what_it_is(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """Not text: ``decide`` raises TypeError before sending, the workflow a ValueError
        for one sent by hand; a ``null`` pause id is none (as updates without one)."""
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("transfer_out", "t1", account="ada", amount=1)]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            with pytest.raises(TypeError, match="pause_id must be a str"):
                await conversation.decide(Approve(), pause_id=7)  # type: ignore[arg-type]
            with pytest.raises(WorkflowUpdateFailedError) as by_hand:
                await conversation.handle.execute_update(
                    "decide", {"all": {"approve": True}, "pause_id": 7}
                )
            cause = by_hand.value.cause
            assert isinstance(cause, ApplicationError)
            assert (cause.type, cause.message) == (
                "ValueError",
                "'pause_id' has the wrong type (int)",
            )
            sent = {"all": {"approve": False, "reason": "no"}, "pause_id": None}
            assert await conversation.handle.execute_update("decide", sent, result_type=list) == [
                "t1"
            ]
            await finished(conversation)

    async def test_a_pause_past_the_approval_timeout_denies_its_calls(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        ledger = Ledger(tmp_path)
        activities = HASTY.activities(model=PlanModel(), tools=tool_definitions(ledger))
        async with temporal_worker(
            client, task_queue, workflows=[HastyWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                HastyWorkflow,
                plan([call("transfer_out", "t1", account="ada", amount=9)]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            result = await finished(conversation, seconds=30)
            with pytest.raises(WorkerStateError):  # nothing waits any more
                await conversation.decide(Approve())
            page = await conversation.events()
        assert result.state.history[2] == ToolResult(
            "t1",
            "Tool call 'transfer_out' was denied; it did not run: no decision came within "
            "the approval timeout (1s)",
            True,
        )
        assert read_journal(ledger.journal) == []
        assert [e["type"] for e in page.events].count("decided") == 1

    def test_the_timeout_reads_as_a_duration(self):
        from llm_worker.temporal._workflow import _duration

        spans = [timedelta(seconds=1), timedelta(seconds=90), timedelta(minutes=15)]
        spans += [timedelta(hours=36), timedelta(days=14), timedelta(seconds=1_234_567)]
        assert [_duration(span) for span in spans] == [
            "1s",
            "90s",
            "15 min",
            "36 h",
            "14 days",
            "14.29 days",
        ]

    def test_the_approval_timeout_is_checked(self):
        with pytest.raises(ValueError, match="approval_timeout must be a positive timedelta"):
            DurableWorker("x", approval_timeout=timedelta(0))

    async def test_decisions_resume_would_refuse_are_refused_and_leave_no_trace(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """The update's validator applies resume()'s rules, with resume()'s messages."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        message = plan(
            [
                call("transfer_out", "t1", account="ada", amount=1),
                call("transfer_out", "t2", account="ada", amount=2),
            ]
        )
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            with pytest.raises(WorkerStateError) as missing:
                await conversation.decide({"t1": Approve()})
            assert str(missing.value) == (
                "resume() needs a decision for each pending call; missing: 't2'"
            )
            with pytest.raises(WorkerStateError) as unknown:
                await conversation.decide({"t1": Approve(), "t2": Approve(), "zz": Deny("x")})
            assert str(unknown.value) == (
                "resume() got decisions for calls that are not pending: 'zz' (pending: 't1', 't2')"
            )
            with pytest.raises(WorkflowUpdateFailedError) as malformed:  # by hand, no helper
                await conversation.handle.execute_update("decide", {"calls": {"t1": "yes"}})
            cause = malformed.value.cause
            assert isinstance(cause, ApplicationError)
            assert (cause.type, cause.message) == (
                "ValueError",
                'the decision for \'t1\' must be {"approve": true, "arguments": ...} or '
                '{"approve": false, "reason": "..."}, not \'yes\'',
            )
            events = await history_events(conversation.handle)
            assert count(events, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) == 0
            await conversation.decide(Deny("not today"))
            result = await finished(conversation)
            with pytest.raises(WorkerStateError, match="Nothing to decide: the run has ended"):
                await conversation.decide(Approve())
        assert read_journal(ledger.journal) == []
        assert result.final_text == (
            "done: Tool call 'transfer_out' was denied; it did not run: not today | "
            "Tool call 'transfer_out' was denied; it did not run: not today"
        )

    async def test_the_feed_records_the_decisions_as_the_run_took_them(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """An update sent by hand with keys of its own: the ``decided`` event recorded it
        as it came, junk and all."""
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
        message = plan(
            [
                call("transfer_out", "t1", account="ada", amount=1),
                call("transfer_out", "t2", account="ada", amount=2),
            ]
        )
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            sent = {
                "calls": {
                    "t1": {"approve": True, "note": "x" * 1_000},
                    "t2": {"approve": False, "reason": "no", "by": {"user": "bob"}},
                }
            }
            await conversation.handle.execute_update("decide", sent, result_type=list)
            await finished(conversation)
            page = await conversation.events()
        [decided] = [e for e in page.events if e["type"] == "decided"]
        assert decided["decisions"] == {
            "calls": {
                "t1": {"approve": True, "arguments": None},
                "t2": {"approve": False, "reason": "no"},
            }
        }

    async def test_an_id_no_workflow_has_is_told_from_a_run_that_ended(self, client: Client):
        """``decide`` said "the run has ended" of an id never started; the queries raised
        Temporal's RPCError."""
        conversation = Conversation(client.get_workflow_handle("never-started-" + workflow_id()))
        expected = f"There is no conversation {conversation.id!r}: Temporal has no workflow"
        questions: list[Callable[[], Awaitable[object]]] = [
            lambda: conversation.decide(Approve()),
            conversation.status,
            conversation.events,
            conversation.pending,
            conversation.history,
            conversation.state,
            conversation.result,
        ]
        for question in questions:
            with pytest.raises(ConversationNotFoundError, match=expected):
                await question()
        assert issubclass(ConversationNotFoundError, WorkerStateError)

    async def test_the_event_feed_shows_the_run_step_by_step_from_any_offset(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """``events(after)`` pages through numbered events: request, calls, pause, decision, end."""
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
        message = plan([call("transfer_out", "t1", account="ada", amount=1)], answer="ok")
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            first = await conversation.events()
            await conversation.decide(Approve())
            await finished(conversation)
            rest = await conversation.events(first.next)
        assert first.status == "paused"
        assert [e["type"] for e in first.events] == [
            "response_started",
            "text",
            "tool_call_ready",
            "response_completed",
            "approval_requested",
            "run_paused",
        ]
        assert rest.status == "finished"
        assert [e["type"] for e in rest.events] == [
            "decided",
            "tool_call_running",
            "tool_call_finished",
            "response_started",
            "text",
            "response_completed",
            "run_finished",
        ]
        assert [e["seq"] for e in (*first.events, *rest.events)] == list(range(rest.next))
        assert rest.events[2]["result"] == {
            "call_id": "t1",
            "content": "sent 1 from ada",
            "is_error": False,
        }


class TestPauseIds:
    async def test_a_paused_run_keeps_its_pause_id_on_a_new_worker(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """The worker that ran the pause is replaced: the new one replays the history
        and the feed and the state query give the same pause id, which decide takes."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        message = plan([call("transfer_out", "t1", account="ada", amount=2)], answer="sent")
        async with temporal_worker(
            client,
            task_queue,
            workflows=[LedgerWorkflow],
            activities=activities,
            # Its workflow tasks (queries too) wait this long on its own queue once it is
            # gone, before the next worker may take them.
            sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                message,
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            [paused_at] = await feed_pause_ids(conversation)
            state = await conversation.state()
            assert state is not None
            assert state.pause_id == paused_at
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            with anyio.fail_after(30):
                assert await feed_pause_ids(conversation) == [paused_at]
                state = await conversation.state()
            assert state is not None
            assert state.pause_id == paused_at
            assert await conversation.decide(Approve(), pause_id=paused_at) == ("t1",)
            result = await finished(conversation)
        assert result.final_text == "sent: sent 2 from ada"
        assert result.state.pause_id is None

    async def test_a_run_started_from_a_paused_state_shows_the_pause_in_its_feed(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A state a process's Worker paused in: the workflow waits for decisions, and its
        feed says so as a run's pause does (an ``approval_requested`` per pending call,
        then ``run_paused``, with the pause's id); it had no event at all. Its history
        replays."""
        local: Worker[Deps] = Worker(
            PlanModel(), system_prompt=LEDGER.system_prompt, limits=LEDGER.limits, deps_type=Deps
        )
        local.register_tools(tool_definitions(Ledger(tmp_path)))
        message = plan(
            [
                call("credit", "c1", account="ada", amount=10),
                call("transfer_out", "t1", account="ada", amount=4),
                call("transfer_out", "t2", account="ada", amount=5),
            ],
            answer="settled",
        )
        assert await local.run(message, deps=Deps("ada")) is WorkerResult.PAUSED
        state = local.state
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                None,
                id=workflow_id(),
                task_queue=task_queue,
                state=state,
                deps=Deps("ada"),
            )
            await wait_for_status(conversation, "paused")
            page = await conversation.events()
            assert await feed_pause_ids(conversation) == [state.pause_id]
            await conversation.decide(Approve(), pause_id=state.pause_id)
            result = await finished(conversation)
            history = await conversation.handle.fetch_history()
        assert [e["type"] for e in page.events] == [
            "approval_requested",
            "approval_requested",
            "run_paused",
        ]
        # The very events a run that pauses records (test_the_event_feed_shows_...).
        pending = [dump_pending(p) for p in local.pending]
        assert [e["pending"] for e in page.events[:2]] == pending
        assert page.events[2] == {
            "seq": 2,
            "type": "run_paused",
            "pending": pending,
            "pause_id": state.pause_id,
        }
        assert result.final_text is not None
        assert result.final_text.startswith("settled: ")
        replayer = Replayer(workflows=[LedgerWorkflow], plugins=[LlmWorkerPlugin()])
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None

    @pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
    async def test_outside_a_workflow_a_pause_id_is_random(self, anyio_backend: str):
        """With Temporal's workflow module imported, code that is not in a workflow (a
        process's run, on asyncio or trio) still gets os.urandom's ids."""
        import sys

        from llm_worker._approvals import new_pause_id

        assert "temporalio.workflow" in sys.modules
        ids = {new_pause_id() for _ in range(50)}
        assert len(ids) == 50
        assert all(len(pause_id) == 16 and int(pause_id, 16) >= 0 for pause_id in ids)


class TestProgress:
    async def test_a_running_tool_s_progress_goes_with_its_heartbeats(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """``ctx.report_progress`` is the heartbeat's details: describe() shows it."""
        ledger = Ledger(tmp_path)
        ledger.block.touch()
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("reconcile", "r", account="ada")]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            details: list[object] = []
            with anyio.fail_after(30):
                while not details:
                    description = await conversation.handle.describe()
                    for pending in description.raw_description.pending_activities:
                        if pending.heartbeat_details.payloads:
                            details = await client.data_converter.decode(
                                pending.heartbeat_details.payloads
                            )
                    await anyio.sleep(0.1)
            ledger.block.unlink()
            result = await finished(conversation)
        assert details == [{"call_id": "r", "progress": 1.0, "total": 3, "message": "reading ada"}]
        assert result.final_text == "done: ada reconciled"


class TestFailures:
    async def test_retryable_provider_errors_are_retried_by_the_policy(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """Two 529s, then an answer: three attempts of one model activity; the run goes on."""
        model = FlakyModel([ProviderError("test", "overloaded", status=529, retryable=True)] * 2)
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
            result = await finished(conversation)
            events = await history_events(conversation.handle)
        assert result.final_text == "hello: "
        assert model.attempts == 3
        assert activity_types(events) == ["ledger.model_request"]
        started = [
            e.activity_task_started_event_attributes.attempt
            for e in events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        ]
        assert started == [3]  # Temporal records the attempt that completed

    async def test_the_providers_retry_after_is_the_next_attempts_wait(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A 429 asking to wait 3 s: Temporal's next attempt waits that long (the policy's
        backoff would be 100 ms, about 1 s on the dev server)."""
        model = FlakyModel(
            [ProviderError("test", "slow down", status=429, retryable=True, retry_after=3.0)]
        )
        starts: list[float] = []
        stream = model.stream

        def timed(request: Any) -> Any:
            starts.append(time.monotonic())
            return stream(request)

        model.stream = timed  # type: ignore[method-assign]
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
            result = await finished(conversation)
        assert result.final_text == "hello: "
        assert len(starts) == 2
        assert starts[1] - starts[0] >= 2.9

    async def test_a_non_retryable_provider_error_fails_the_run_at_once(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """A 401 is tried once; the workflow fails as ProviderError, with a state to retry from."""
        model = FlakyModel([ProviderError("test", "bad key", status=401, retryable=False)])
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
            assert await conversation.status() == "failed"
            # The conversation goes on in a new workflow: retry() from the saved state.
            cause = failed.value.cause
            assert isinstance(cause, ApplicationError)
            state = RunState.from_json(cause.details[0])
            again = await Conversation.start(
                client,
                LedgerWorkflow,
                None,
                id=workflow_id(),
                task_queue=task_queue,
                state=state,
                deps=Deps("ada"),
            )
            retried = await finished(again)
        assert cause.type == "ProviderError"
        assert cause.message == "test request failed (HTTP 401): bad key"
        assert model.attempts == 2  # one for the failed workflow, one for the retry
        assert len(state.history) == 1  # the user's message, and nothing half-received
        assert retried.final_text == "hello: "

    async def test_the_policy_s_maximum_attempts_ends_retrying(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """``RetryPolicy(maximum_attempts=2)``: two attempts, then the run fails."""
        model = FlakyModel([ProviderError("test", "busy", status=503, retryable=True)] * 5)

        async with temporal_worker(
            client,
            task_queue,
            workflows=[LimitedWorkflow],
            activities=LIMITED.activities(model=model),
        ):
            conversation = await Conversation.start(
                client, LimitedWorkflow, plan(), id=workflow_id(), task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation)
        assert model.attempts == 2
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert (cause.type, cause.message) == (
            "ProviderError",
            "test request failed (HTTP 503): busy",
        )

    async def test_an_endless_response_fails_the_run_at_max_response_chars(
        self, client: Client, task_queue: str
    ):
        """The model activity checks ``max_response_chars`` as the response comes: an
        endless stream is closed at the limit and fails the run once, not retried (it
        used to be read until the activity's timeout)."""
        model = EndlessModel()
        async with temporal_worker(
            client,
            task_queue,
            workflows=[CappedWorkflow],
            activities=CAPPED.activities(model=model),
        ):
            conversation = await Conversation.start(
                client, CappedWorkflow, "go", id=workflow_id(), task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation, seconds=30)
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "LlmClientError"
        assert "over 1000 characters" in cause.message
        assert "Limits.max_response_chars" in cause.message
        assert (model.attempts, model.closed) == (1, 1)

    async def test_a_tool_s_error_is_its_result_not_an_activity_failure(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """``ExecutionFailedError`` reaches the model as its text, after one attempt."""
        ledger = Ledger(tmp_path)
        activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
        async with temporal_worker(
            client, task_queue, workflows=[LedgerWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                LedgerWorkflow,
                plan([call("refuse", "r", reason="no")]),
                id=workflow_id(),
                task_queue=task_queue,
                deps=Deps("ada"),
            )
            result = await finished(conversation)
            events = await history_events(conversation.handle)
        assert result.state.history[2] == ToolResult("r", "Execution failed: no", True)
        assert len(read_journal(ledger.journal)) == 1
        assert count(events, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED) == 0

    async def test_an_aborted_run_fails_the_workflow_with_a_valid_state(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """max_turns exceeded: ApplicationError type MaxTurnsExceededError; the state loads."""
        ledger = Ledger(tmp_path)
        async with temporal_worker(
            client,
            task_queue,
            workflows=[ShortWorkflow],
            activities=SHORT.activities(model=PlanModel(), tools=tool_definitions(ledger)),
        ):
            conversation = await Conversation.start(
                client,
                ShortWorkflow,
                plan([call("audit", "x", account="ada")]),
                id=workflow_id(),
                task_queue=task_queue,
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation)
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "MaxTurnsExceededError"
        state = RunState.from_json(cause.details[0])
        assert state.history[1].tool_calls == (ToolCall("x", "audit", '{"account": "ada"}'),)
        assert state.history[2] == ToolResult("x", "ada is in order")
        assert json.loads(state.to_json())["usage"]["requests"] == 1


def _kinds(events: list[Any]) -> list[str]:
    return [EventType.Name(event.event_type).removeprefix("EVENT_TYPE_") for event in events]


class TestCancellation:
    """A call cancelled in the workflow (an abort, a cancelled workflow) cancels its
    activity at once and ends as in a process: never a workflow task stuck re-delivering
    the cancellation (Temporal's deadlock detector), never waiting for the tool."""

    async def test_an_abort_while_a_call_runs_cancels_its_activity(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        ledger = Ledger(tmp_path)
        ledger.block.touch()  # slow_credit runs until the test ends
        activities = STOPPING.activities(model=PlanModel(), tools=tool_definitions(ledger))
        try:
            async with temporal_worker(
                client, task_queue, workflows=[StoppingWorkflow], activities=activities
            ):
                conversation = await Conversation.start(
                    client,
                    StoppingWorkflow,
                    plan(
                        [
                            call("refuse", "a", reason="closed"),
                            call("slow_credit", "b", account="ada", amount=5),
                        ]
                    ),
                    id=workflow_id(),
                    task_queue=task_queue,
                )
                with pytest.raises(WorkflowFailureError) as failed:
                    await finished(conversation, seconds=15)
                events = await history_events(conversation.handle)
        finally:
            ledger.block.unlink()
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "WorkerAbortedError"
        state = RunState.from_json(cause.details[0])
        assert state.history[-1] == ToolResult(
            "b",
            "Tool call 'slow_credit' was cancelled before it finished: the run was aborted "
            "(refused)",
            True,
        )
        kinds = _kinds(events)
        assert "WORKFLOW_TASK_FAILED" not in kinds
        assert "ACTIVITY_TASK_CANCEL_REQUESTED" in kinds

    @pytest.mark.parametrize("under_way", ["tool call", "model request"])
    async def test_a_workflow_cancelled_mid_call_is_cancelled(
        self, client: Client, task_queue: str, tmp_path: Path, under_way: str
    ):
        """CANCELED, promptly, whether a tool call or a model request was under way (the
        cancelled model request was a ProviderError that failed the workflow)."""
        ledger = Ledger(tmp_path)
        gate, started = tmp_path / "gate", tmp_path / "model started"
        if under_way == "tool call":
            ledger.block.touch()
            model: PlanModel = PlanModel()
        else:
            gate.touch()
            model = GatedModel(gate, started)
        activities = LEDGER.activities(model=model, tools=tool_definitions(ledger))
        try:
            async with temporal_worker(
                client, task_queue, workflows=[LedgerWorkflow], activities=activities
            ):
                conversation = await Conversation.start(
                    client,
                    LedgerWorkflow,
                    plan([call("slow_credit", "s", account="ada", amount=5)]),
                    id=workflow_id(),
                    task_queue=task_queue,
                    deps=Deps("ada"),
                )
                if under_way == "tool call":
                    await wait_until(lambda: ledger.balances() == {"ada": 5})
                else:
                    await wait_until(started.exists)
                await conversation.handle.cancel()
                with pytest.raises(WorkflowFailureError) as failed:
                    await finished(conversation, seconds=15)
                description = await conversation.handle.describe()
                events = await history_events(conversation.handle)
                # A UI polling the queries sees the end (they said "running", for ever).
                status = await conversation.status()
                feed = await conversation.events()
                state = await conversation.state()
        finally:
            ledger.block.unlink(missing_ok=True)
            gate.unlink(missing_ok=True)
        assert isinstance(failed.value.cause, CancelledError)
        assert description.status is WorkflowExecutionStatus.CANCELED
        assert "WORKFLOW_TASK_FAILED" not in _kinds(events)
        assert status == "cancelled"
        assert feed.events[-1]["type"] == "run_cancelled"
        assert feed.status == "cancelled"
        assert state is not None
        results = [m for m in state.history if isinstance(m, ToolResult)]
        if under_way == "tool call":  # the state has the call, with its cancelled result
            assert [m.call_id for m in results] == ["s"]
            assert results[0].content.startswith("Tool call 'slow_credit' was cancelled")
        else:
            assert results == []


class TestPayloadLimits:
    """What would not fit in a Temporal payload (max_payload_bytes) is never sent: a tool
    result is an error result, a model request fails the run with its state. Before,
    the server refused it at every attempt: the activity ran again without end, or the
    workflow task failed again and again, the run never ending."""

    async def test_a_result_too_large_to_record_is_an_error_result(
        self, client: Client, task_queue: str
    ):
        activities = TIGHT.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[TightWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                TightWorkflow,
                plan([call("report", "r", size=8_000)]),
                id=workflow_id(),
                task_queue=task_queue,
            )
            result = await finished(conversation, seconds=30)
            events = await history_events(conversation.handle)
        (message,) = [m for m in result.state.history if isinstance(m, ToolResult)]
        assert message.is_error
        assert message.content.startswith(
            "Execution failed: tool 'report' returned 80"  # 8 000 and the JSON around it
        )
        assert message.content.endswith(
            "bytes, over the 6000 bytes a durable run can record of one result; return "
            "less (a summary, a page, a link)"
        )
        assert _kinds(events).count("ACTIVITY_TASK_STARTED") == 3  # model, tool once, model

    async def test_a_conversation_too_large_to_send_fails_the_run_with_its_state(
        self, client: Client, task_queue: str
    ):
        activities = TIGHT.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[TightWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                TightWorkflow,
                plan([call("report", "a", size=3_000)], [call("report", "b", size=3_000)]),
                id=workflow_id(),
                task_queue=task_queue,
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await finished(conversation, seconds=30)
            # The state is larger than the request that did not fit: it cannot go with
            # the failure, and the state query gives it, in parts.
            state = await conversation.state()
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "ProviderError"
        assert "over the 6000 bytes a durable run can send as one activity's input" in (
            cause.message
        )
        assert cause.details[0] is None
        assert state is not None
        assert [m.call_id for m in state.history if isinstance(m, ToolResult)] == ["a", "b"]

    @pytest.mark.parametrize("ending", ["finished", "failed", "one-event-too-large"])
    async def test_a_state_too_large_for_the_result_is_left_to_the_state_query(
        self, client: Client, task_queue: str, ending: str
    ):
        """Results that fit one by one, but not together with the rest of the run: the
        state went with the failure (or the outcome) whatever its size, Temporal refused
        the payload, and the workflow task failed again and again (the run stuck in
        RUNNING, its result never coming). It is left out, and the state query has it.
        A str answer is not sent twice (as text and output: 2.4 MB for 1.2 MB); an event
        too large for any page is left out of the feed, which goes on to the end."""
        if ending == "finished":  # two results, then an answer that repeats them
            turns = [[call("report", f"r{i}", size=600_000) for i in range(2)]]
        elif ending == "failed":  # three results: the next request is over the limit
            turns = [[call("report", f"r{i}", size=750_000) for i in range(3)]]
        else:  # 700 KB of arguments, a 1.4 MB result: their tool_call_finished is 2.1 MB
            turns = [[call("repeat", "r0", text="a" * 700_000, times=2)]]
        activities = ROOMY.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[RoomyWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client, RoomyWorkflow, plan(*turns), id=workflow_id(), task_queue=task_queue
            )
            if ending == "finished":
                result = await finished(conversation, seconds=60)
                state = result.state
                assert result.final_text is not None
                assert result.final_text.startswith("done: rrr")
                assert result.output is None  # the answer is final_text
            else:
                with pytest.raises(WorkflowFailureError) as failed:
                    await finished(conversation, seconds=60)
                cause = failed.value.cause
                assert isinstance(cause, ApplicationError)
                assert cause.type == "ProviderError"
                assert cause.details[0] is None
                assert "is over max_payload_bytes and is not attached: read it with the " in (
                    cause.message
                )
                state = await conversation.state()
                assert state is not None
            # The feed comes in pages of one payload each (a page of these events was
            # over the limit: the query failed).
            feed: list[Mapping[str, Any]] = []
            while not feed or feed[-1]["type"] not in ("run_finished", "run_failed"):
                page = await conversation.events(len(feed))
                assert page.events
                assert len(json.dumps(list(page.events))) <= ROOMY.max_payload_bytes
                feed += page.events
            events = await history_events(conversation.handle)
        assert [e["seq"] for e in feed] == list(range(len(feed)))
        left_out = [e["type"] for e in feed if "left_out" in e]
        assert left_out == (["tool_call_finished"] if ending == "one-event-too-large" else [])
        assert "WORKFLOW_TASK_FAILED" not in _kinds(events)
        assert len(state.to_json()) > ROOMY.max_payload_bytes
        calls_made = len(turns[0])
        assert [m.call_id for m in state.history if isinstance(m, ToolResult)] == [
            f"r{i}" for i in range(calls_made)
        ]

    def test_the_limit_is_checked(self):
        with pytest.raises(ValueError, match="max_payload_bytes must be a positive int"):
            DurableWorker("x", max_payload_bytes=0)

    async def test_a_call_too_large_to_send_is_an_error_result(
        self, client: Client, task_queue: str
    ):
        """The call's input is its arguments and the run's deps: over the limit together,
        the tool is not called, and the model reads why."""
        activities = TIGHT.activities(model=PlanModel(), tools=tool_definitions(Reports()))
        async with temporal_worker(
            client, task_queue, workflows=[TightWorkflow], activities=activities
        ):
            conversation = await Conversation.start(
                client,
                TightWorkflow,
                plan([call("report", "r", size=10)]),
                id=workflow_id(),
                task_queue=task_queue,
                deps={"notes": "n" * 7_000},
            )
            result = await finished(conversation, seconds=30)
            events = await history_events(conversation.handle)
        (message,) = [m for m in result.state.history if isinstance(m, ToolResult)]
        assert message.is_error
        assert message.content.startswith(
            "Execution failed: tool 'report' was not called: its arguments and the run's deps "
            "are 71"
        )
        assert message.content.endswith("over the 6000 bytes a durable run can send to one call")
        assert _kinds(events).count("ACTIVITY_TASK_STARTED") == 2  # the two model requests


class TestTypedDictDeps:
    def test_typing_typed_dict_is_refused_where_pydantic_cannot_read_it(self):
        import sys
        from typing import TypedDict

        class Plain(TypedDict):
            user: str

        if sys.version_info < (3, 12):
            with pytest.raises(TypeError, match=r"declare it with typing_extensions\.TypedDict"):
                DurableWorker("plain", deps_type=Plain)
        else:
            assert DurableWorker("plain", deps_type=Plain).deps_type is Plain

    def test_typed_dict_deps_go_as_json_and_come_back_as_dicts(self):
        from typing_extensions import TypedDict

        class Who(TypedDict):
            user: str

        durable = DurableWorker("who", deps_type=Who)
        assert durable.load_deps(durable.dump_deps({"user": "ada"})) == {"user": "ada"}


class Forecast(BaseModel):
    """An answer whose keys differ by mode: validated from "City", dumped with "f"."""

    model_config = ConfigDict(extra="forbid")
    city: str = Field(validation_alias="City")
    celsius: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fahrenheit(self) -> float:
        return self.celsius * 9 / 5 + 32


class Labelled(BaseModel):
    name: str = Field(serialization_alias="Name")


class TestDataWithAliases:
    """A run accepts an answer of a type with aliases or computed fields (it is validated
    as the model wrote it): the workflow's result and the tools' deps carry it as data and
    make the same value again."""

    @pytest.mark.parametrize("role", ["output_type", "deps_type"])
    def test_a_value_with_a_validation_alias_and_a_computed_field_comes_back(self, role):
        durable = DurableWorker("forecast", **{role: Forecast})
        value = Forecast.model_validate({"City": "Oslo", "celsius": 10.0})
        dump, load = (
            (durable.dump_output, durable.load_output)
            if role == "output_type"
            else (durable.dump_deps, durable.load_deps)
        )
        data = dump(value)
        assert data == {"city": "Oslo", "celsius": 10.0}  # no computed field: it is not input
        assert load(data) == value
        assert load({"City": "Oslo", "celsius": 10.0}) == value  # by its alias too

    def test_a_value_with_a_serialization_alias_comes_back(self):
        durable = DurableWorker("labelled", output_type=Labelled)
        assert durable.load_output(durable.dump_output(Labelled(name="x"))) == Labelled(name="x")
