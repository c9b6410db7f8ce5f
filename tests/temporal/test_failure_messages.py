"""What a failed durable run, start or decision says: its error's text, bounded and valid
Unicode, so that Temporal can send it.

A failure Temporal cannot encode (a lone surrogate, which UTF-8 cannot carry) ends the
workflow with an empty failure: no type, no message, no state. One over the server's
blob size limit (2 MiB) fails the workflow task at every attempt: the run never ends.

Against the local Temporal dev server, as test_durable_runs.py (asyncio only: Temporal's
SDK is).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from llm_worker import Deny, RunState, ToolResult, tool_definitions
from llm_worker.temporal import Conversation, ConversationStart
from llm_worker.temporal._workflow import MAX_FAILURE_MESSAGE

from .durable_apps import (
    LEDGER,
    REFUSING,
    Deps,
    Ledger,
    LedgerWorkflow,
    PlanModel,
    Quota,
    RefusingWorkflow,
    Reports,
    call,
    plan,
)
from .support import finished, temporal_worker, wait_for_status, workflow_id

pytestmark = [pytest.mark.anyio, pytest.mark.temporal]

# A bounded text: MAX_FAILURE_MESSAGE characters and "... (n more characters)".
BOUNDED = MAX_FAILURE_MESSAGE + 40


async def refused_run(client: Client, task_queue: str, text: str, times: int) -> ApplicationError:
    """The failure of a RefusingWorkflow run whose hook aborts it with ``text * times``."""
    activities = REFUSING.activities(model=PlanModel(), tools=tool_definitions(Reports()))
    async with temporal_worker(
        client, task_queue, workflows=[RefusingWorkflow], activities=activities
    ):
        conversation = await Conversation.start(
            client,
            RefusingWorkflow,
            plan([call("repeat", "r1", text=text, times=times)]),
            id=workflow_id(),
            task_queue=task_queue,
            deps=Quota([1]),
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await finished(conversation, seconds=30)  # unbounded, it never ended
        assert await conversation.status() == "failed"
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    return cause


class TestARunsFailure:
    async def test_an_abort_reason_with_a_lone_surrogate_fails_the_run_with_its_state(
        self, client: Client, task_queue: str
    ):
        """The model's "\\udcff" (a JSON escape) in the reason made the failure unencodable:
        the workflow failed with no type, no message and no state."""
        cause = await refused_run(client, task_queue, "\udcff", 1)
        assert cause.type == "WorkerAbortedError"
        assert cause.message == "Run aborted by a hook: will not repeat \ufffd"
        assert cause.cause is None  # the error's text goes once
        last = RunState.from_json(cause.details[0]).history[-1]  # the aborted call's result
        assert isinstance(last, ToolResult)
        assert (last.call_id, last.is_error) == ("r1", True)

    async def test_a_huge_abort_reason_is_cut_and_the_run_ends(
        self, client: Client, task_queue: str
    ):
        """A 1.2 MB reason made a 2.4 MB failure (message and cause): over Temporal's limit,
        the workflow task failed at every attempt and the run never ended."""
        cause = await refused_run(client, task_queue, "x", 1_200_000)
        assert cause.type == "WorkerAbortedError"
        text = "Run aborted by a hook: will not repeat " + "x" * 1_200_000
        cut = len(text) - MAX_FAILURE_MESSAGE
        assert cause.message == f"{text[:MAX_FAILURE_MESSAGE]}... ({cut} more characters)"
        assert cause.cause is None
        RunState.from_json(cause.details[0])  # the state (1.2 MB) still fits with it


class TestARefusedStart:
    async def test_deps_that_fail_in_every_part_fail_the_workflow_with_a_bounded_message(
        self, client: Client, task_queue: str
    ):
        """pydantic's error for 20 000 bad parts is 4 MB of text: the workflow task failed
        at every attempt and the workflow never ended."""
        start = ConversationStart(
            user_input=plan(), deps={"limits": ["x"] * 20_000}, definition=REFUSING.definition()
        )
        async with temporal_worker(client, task_queue, workflows=[RefusingWorkflow]):
            handle = await client.start_workflow(
                RefusingWorkflow.run, start, id=workflow_id(), task_queue=task_queue
            )
            with pytest.raises(WorkflowFailureError) as failed, anyio.fail_after(30):
                await handle.result()
        cause = failed.value.cause
        assert isinstance(cause, ApplicationError)
        assert cause.type == "ValidationError"
        assert "20000 validation errors for Quota" in cause.message
        assert len(cause.message) < BOUNDED
        assert cause.cause is None


class TestARefusedDecision:
    async def test_a_refusal_quoting_a_huge_call_id_is_cut_and_the_run_goes_on(
        self, client: Client, task_queue: str, tmp_path: Path
    ):
        """The refusal quotes the call id's repr, twice as long as the id sent when it
        escapes each quote: over Temporal's limit, the update never got its answer."""
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
            call_id = "'" * 1_100_000 + '"'  # 1.1 MB sent; its repr is 2.2 MB
            with pytest.raises(WorkflowUpdateFailedError) as refused, anyio.fail_after(30):
                await conversation.handle.execute_update(
                    "decide", {"calls": {call_id: {"approve": True, "arguments": 5}}}
                )
            cause = refused.value.cause
            assert isinstance(cause, ApplicationError)
            assert cause.type == "ValueError"
            assert cause.message.startswith("the arguments approved for ")
            assert len(cause.message) < BOUNDED
            assert await conversation.decide(Deny("no")) == ("t1",)
            await finished(conversation, seconds=30)
