"""A redeploy while runs are under way: a run goes on only with the definition it began with.

A run pauses on LedgerWorkflow for a ``transfer_out``; the workers are replaced by
ones whose LedgerWorkflow has another definition (the approval dropped, the tool
removed). The commands are the same, so Temporal's replay sees nothing wrong: without
the check, the new code ran the transfer whatever the human decided, or dropped the
pause. Against the local Temporal dev server, as test_durable_runs.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateRPCTimeoutOrCancelledError

from llm_worker import Decision, Deny, ToolResult, WorkerStateError, tool_definitions
from llm_worker.temporal import Conversation

from .durable_apps import (
    KEPT_TOOLS,
    LEDGER,
    TRIMMED,
    UNGUARDED,
    Deps,
    Ledger,
    LedgerWorkflow,
    PlanModel,
    TrimmedLedgerWorkflow,
    UnguardedLedgerWorkflow,
    call,
    plan,
    read_journal,
)
from .support import finished, history_events, temporal_worker, wait_for_status, workflow_id

pytestmark = [pytest.mark.anyio, pytest.mark.temporal]


async def task_failure(handle: WorkflowHandle[Any, Any], seconds: float = 20) -> str:
    """The message of the workflow's first failed workflow task, once there is one."""
    with anyio.fail_after(seconds):
        while True:
            for event in await history_events(handle):
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    return str(event.workflow_task_failed_event_attributes.failure.message)
            await anyio.sleep(0.1)


async def decided_once_it_can(
    conversation: Conversation, decision: Decision, decision_id: str, seconds: float = 20
) -> tuple[str, ...]:
    """``decide``, sent again while Temporal refuses it: until the failed workflow task
    is taken again (by a worker that can complete it), the run takes no decisions."""
    with anyio.fail_after(seconds):
        while True:
            try:
                return await conversation.decide(decision, decision_id=decision_id)
            except WorkerStateError as exc:
                if "The run cannot take decisions now" not in str(exc):
                    raise
            await anyio.sleep(0.2)


def redeployed(ledger: Ledger, change: str) -> tuple[type, list[Callable[..., Any]]]:
    """The new deploy's workflow and activities: LedgerWorkflow with ``change`` made."""
    if change == "approval dropped":
        tools = tool_definitions(ledger)
        return UnguardedLedgerWorkflow, UNGUARDED.activities(model=PlanModel(), tools=tools)
    kept = [getattr(ledger, name).definition() for name in KEPT_TOOLS]
    return TrimmedLedgerWorkflow, TRIMMED.activities(model=PlanModel(), tools=kept)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("approval dropped", "tool 'transfer_out': requires_approval was True, is False"),
        ("tool removed", "tool 'transfer_out' was removed"),
    ],
)
async def test_a_paused_run_waits_for_workers_with_its_definition(
    client: Client, task_queue: str, tmp_path: Path, change: str, named: str
):
    """The new workers fail its workflow task (saying what changed) and run nothing; the
    decision sent meanwhile waits, and the run goes on as it began when the old code is
    back: the transfer denied, not run."""
    ledger = Ledger(tmp_path)
    old_activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(ledger))
    async with temporal_worker(
        client, task_queue, workflows=[LedgerWorkflow], activities=old_activities
    ):
        conversation = await Conversation.start(
            client,
            LedgerWorkflow,
            plan([call("transfer_out", "t", account="ada", amount=1000)], answer="done"),
            id=workflow_id(),
            task_queue=task_queue,
            deps=Deps("ada"),
            # A worker that failed a task again holds it until it times out (Temporal's
            # default: 10 s), and only then may the old code's worker take it.
            task_timeout=timedelta(seconds=1),
        )
        await wait_for_status(conversation, "paused")

    workflow, activities = redeployed(ledger, change)
    async with temporal_worker(client, task_queue, workflows=[workflow], activities=activities):
        # It waits for a worker that can take it (Temporal's SDK makes the cancellation
        # of the wait an error of its own).
        with pytest.raises(WorkflowUpdateRPCTimeoutOrCancelledError), anyio.move_on_after(1):
            await conversation.decide(Deny("no!"), decision_id="the human's")
        failure = await task_failure(conversation.handle)
    assert "is not the one this run started with: " + named in failure
    assert read_journal(ledger.journal) == []

    async with temporal_worker(
        client, task_queue, workflows=[LedgerWorkflow], activities=old_activities
    ):
        decided = await decided_once_it_can(conversation, Deny("no!"), "the human's")
        result = await finished(conversation, seconds=30)
    assert decided == ("t",)
    assert result.state.history[2] == ToolResult(
        "t", "Tool call 'transfer_out' was denied; it did not run: no!", True
    )
    assert read_journal(ledger.journal) == []
