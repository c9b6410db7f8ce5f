"""Determinism: a recorded history replays on the workflow code (Temporal's ``Replayer``).

The workflow runs the Worker's turn loop (anyio task groups, memory streams,
cancel scopes, on Temporal's asyncio event loop) and the hooks; replaying a
history re-runs all of it against the recorded events, and Temporal fails the
replay at the first command that differs. So a replay that passes shows the
loop is deterministic; a replay on changed code must fail, or the check proves
nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from llm_worker import Approve, Deny, WorkerStateError, tool_definitions
from llm_worker.temporal import Conversation, LlmWorkerPlugin

from .durable_apps import (
    LEDGER,
    ChangedLedgerWorkflow,
    Deps,
    Ledger,
    LedgerWorkflow,
    PlanModel,
    TightLedgerWorkflow,
    TrimmedLedgerWorkflow,
    UnguardedLedgerWorkflow,
    call,
    plan,
)
from .support import finished, temporal_worker, wait_for_events, wait_for_status, workflow_id

pytestmark = [pytest.mark.anyio, pytest.mark.temporal]

# A LedgerWorkflow run (a pause, a denial) recorded by the code from before runs recorded
# their definition: its history has no definition markers.
BEFORE_DEFINITIONS = Path(__file__).parent / "histories" / "ledger_before_definitions.json"


async def recorded_history(client: Client, task_queue: str, folder: Path) -> WorkflowHistory:
    """The history of a run with parallel calls, a pause, a rejected and an accepted update."""
    activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(folder)))
    message = plan(
        [call("credit", "a", account="ada", amount=1), call("audit", "b", account="ada")],
        [
            call("transfer_out", "t", account="ada", amount=1),
            call("transfer_out", "u", account="ada", amount=2),
            call("credit", "v", account="bob", amount=3),
        ],
        answer="done",
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
        with pytest.raises(WorkerStateError, match="missing"):
            await conversation.decide({"t": Approve()})
        await conversation.decide({"t": Approve(), "u": Deny("too much")})
        await finished(conversation)
    return await conversation.handle.fetch_history()


async def test_a_recorded_history_replays_on_the_workflow_code(
    client: Client, task_queue: str, tmp_path: Path
):
    """Parallel calls, a pause and its decision: the replay issues the very same commands."""
    history = await recorded_history(client, task_queue, tmp_path)
    replayer = Replayer(workflows=[LedgerWorkflow], plugins=[LlmWorkerPlugin()])
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None


async def test_a_replay_makes_the_pause_ids_the_run_made(
    client: Client, task_queue: str, tmp_path: Path
):
    """Two pauses, each decided with the pause id the feed showed: the replay's pauses
    have the same ids (drawn from ``workflow.random()``), so its decide handler takes
    the recorded decisions again and the run goes on as it did."""
    activities = LEDGER.activities(model=PlanModel(), tools=tool_definitions(Ledger(tmp_path)))
    message = plan(
        [call("transfer_out", "t", account="ada", amount=1)],
        [call("transfer_out", "t", account="ada", amount=2)],
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
        for number in (1, 2):
            await wait_for_events(conversation, "run_paused", number)
            await wait_for_status(conversation, "paused")
            state = await conversation.state()
            assert state is not None
            assert state.pause_id is not None
            await conversation.decide(Approve(), pause_id=state.pause_id)
        await finished(conversation)
        history = await conversation.handle.fetch_history()
    replayer = Replayer(workflows=[LedgerWorkflow], plugins=[LlmWorkerPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None


async def test_a_replay_on_changed_workflow_code_fails(
    client: Client, task_queue: str, tmp_path: Path
):
    """A hook that now answers a call the history ran as an activity: a nondeterminism error."""
    history = await recorded_history(client, task_queue, tmp_path)
    replayer = Replayer(workflows=[ChangedLedgerWorkflow], plugins=[LlmWorkerPlugin()])
    with pytest.raises(NondeterminismError):
        await replayer.replay_workflow(history)


async def test_a_history_recorded_before_the_payload_limit_replays_under_it(
    client: Client, task_queue: str, tmp_path: Path
):
    """The payload checks are patched in (``workflow.patched``): a history whose requests
    were sent replays as it ran, even where the limit would now refuse them."""
    history = await recorded_history(client, task_queue, tmp_path)
    replayer = Replayer(workflows=[TightLedgerWorkflow], plugins=[LlmWorkerPlugin()])
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None


@pytest.mark.parametrize(
    ("workflow", "change"),
    [
        (UnguardedLedgerWorkflow, "tool 'transfer_out': requires_approval was True, is False"),
        (TrimmedLedgerWorkflow, "tool 'transfer_out' was removed"),
    ],
)
async def test_a_replay_on_another_definition_fails_saying_what_changed(
    client: Client, task_queue: str, tmp_path: Path, workflow: type, change: str
):
    """The same commands (Temporal sees no nondeterminism), another definition: a paused
    transfer_out would run without its approval, or vanish."""
    history = await recorded_history(client, task_queue, tmp_path)
    replayer = Replayer(workflows=[workflow], plugins=[LlmWorkerPlugin()])
    with pytest.raises(RuntimeError) as failed:
        await replayer.replay_workflow(history)
    message = str(failed.value)
    assert "is not the one this run started with: " + change in message
    assert "Temporal retries this workflow task" in message


async def test_a_history_recorded_before_runs_recorded_their_definition_replays():
    """A run the earlier code started has no definition markers: the check records none
    in its replay (a command the history lacks would be a nondeterminism error)."""
    history = WorkflowHistory.from_json("before-definitions", BEFORE_DEFINITIONS.read_text())
    replayer = Replayer(workflows=[LedgerWorkflow], plugins=[LlmWorkerPlugin()])
    result = await replayer.replay_workflow(history)
    assert result.replay_failure is None
