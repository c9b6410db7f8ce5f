"""A worker process killed mid-activity and mid-approval, then a new one: each effect once.

Each test runs the Temporal worker (workflows and activities) in a subprocess
(``python -m temporal.durable_apps``), kills it with SIGKILL at a chosen
point, starts another, and reads the journal the tools write: which calls
ran, in which process, and which effects were applied.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from llm_worker import Approve
from llm_worker.temporal import Conversation

from .durable_apps import Deps, Ledger, LedgerWorkflow, call, plan, read_journal
from .support import finished, wait_for_events, wait_for_status, wait_until, workflow_id

pytestmark = [pytest.mark.anyio, pytest.mark.temporal]

TESTS = Path(__file__).resolve().parent.parent


class WorkerProcesses:
    """Starts worker processes on one task queue; kills what is left at the end."""

    def __init__(self, address: str, task_queue: str, folder: Path) -> None:
        self.address, self.task_queue, self.folder = address, task_queue, folder
        self.started: list[subprocess.Popen[str]] = []

    def start(self, name: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "temporal.durable_apps",
                "--address",
                self.address,
                "--task-queue",
                self.task_queue,
                "--folder",
                str(self.folder),
                "--name",
                name,
            ],
            cwd=TESTS,
            env={**os.environ, "PYTHONPATH": str(TESTS)},
            stdout=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        return process

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()


@pytest.fixture
def workers(temporal_address: str, task_queue: str, tmp_path: Path) -> Iterator[WorkerProcesses]:
    processes = WorkerProcesses(temporal_address, task_queue, tmp_path)
    try:
        yield processes
    finally:
        processes.close()


def kill(process: subprocess.Popen[str]) -> None:
    process.kill()  # SIGKILL: no shutdown, no last words to the server
    process.wait(timeout=30)


def runs_of(journal: list[dict], tool: str) -> list[tuple[str, str]]:
    return [
        (e["call_id"], e["worker"]) for e in journal if e["tool"] == tool and e["event"] == "run"
    ]


async def test_a_worker_killed_mid_activity_is_replaced_and_every_effect_applies_once(
    client: Client, workers: WorkerProcesses, task_queue: str, tmp_path: Path
):
    """Killed while a call runs (its effect applied, its completion not recorded): that call
    runs again in the new process and its idempotency key keeps the effect single; the calls
    whose completions were recorded never run again."""
    ledger = Ledger(tmp_path)
    ledger.block.touch()
    first = workers.start("first")
    conversation = await Conversation.start(
        client,
        LedgerWorkflow,
        plan(
            [
                call("credit", "a", account="ada", amount=5),
                call("credit", "b", account="bob", amount=7),
                call("slow_credit", "s", account="ada", amount=100),
            ],
            [call("credit", "a", account="bob", amount=1)],
            answer="booked",
        ),
        id=workflow_id(),
        task_queue=task_queue,
        deps=Deps("ada"),
    )

    # The slow call has applied its effect and waits; the two quick calls' completions
    # are in the workflow's history (the workflow has seen them finish).
    await wait_until(lambda: any(e["event"] == "applied" for e in read_journal(ledger.journal)))
    await wait_for_events(conversation, "tool_call_finished", 2)
    kill(first)
    ledger.block.unlink()
    workers.start("second")

    result = await finished(conversation)
    journal = read_journal(ledger.journal)
    # a and b ran together in the first process; the second request's a in the second.
    assert sorted(runs_of(journal, "credit")) == [("a", "first"), ("a", "second"), ("b", "first")]
    assert runs_of(journal, "slow_credit") == [("s", "first"), ("s", "second")]
    assert [e["event"] for e in journal if e["tool"] == "slow_credit" and e["event"] != "run"] == [
        "applied",
        "already",
    ]
    assert ledger.balances() == {"ada": 105, "bob": 8}
    assert result.final_text == (
        "booked: credited 5 to ada | credited 7 to bob | credited 100 to ada (already) | "
        "credited 1 to bob"
    )


async def test_a_worker_killed_while_the_run_waits_for_approval_is_replaced_and_the_run_ends(
    client: Client, workers: WorkerProcesses, task_queue: str, tmp_path: Path
):
    """Killed while paused: the new process takes the decision (the update), runs the
    approved call once, and nothing that ran before the pause runs again."""
    ledger = Ledger(tmp_path)
    first = workers.start("first")
    conversation = await Conversation.start(
        client,
        LedgerWorkflow,
        plan(
            [call("credit", "c", account="ada", amount=50)],
            [
                call("transfer_out", "t", account="ada", amount=20),
                call("audit", "x", account="ada"),
            ],
            answer="paid",
        ),
        id=workflow_id(),
        task_queue=task_queue,
        deps=Deps("ada"),
    )
    await wait_for_status(conversation, "paused")
    assert [p.call.id for p in await conversation.pending()] == ["t"]
    kill(first)
    workers.start("second")

    assert await conversation.decide({"t": Approve()}) == ("t",)
    result = await finished(conversation)
    journal = read_journal(ledger.journal)
    assert runs_of(journal, "credit") == [("c", "first")]
    assert runs_of(journal, "transfer_out") == [("t", "second")]
    assert [e["worker"] for e in journal if e["tool"] == "audit"] == ["second"]
    assert ledger.balances() == {"ada": 30}
    assert result.final_text == "paid: credited 50 to ada | sent 20 from ada | ada is in order"
