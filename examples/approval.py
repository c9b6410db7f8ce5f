"""A human approves a destructive call later, in another process.

Run it with:  python examples/approval.py

The quickstart's issue tracker, behind a Worker whose ``close_issue`` tool needs
approval. The (scripted) model asks to close two issues at once. The run pauses
before either call runs; this process saves the run state to a JSON file and exits
its part. A second process (started here, as a web request or a Slack button would
be) loads the state into a new Worker with the same tools, approves one close,
denies the other with a reason, and resumes: the approved call runs once, the
denied one never, and the model's answer reflects both.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
from quickstart import IssueTracker, NewIssue  # the app of examples/quickstart.py

from llm_worker import (
    Approve,
    Deny,
    LlmRequest,
    RunState,
    ToolResult,
    Worker,
    WorkerResult,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


def model(request: LlmRequest) -> ScriptedResponse | str:
    """What a model would do: ask to close both issues, then report what happened."""
    results = [m for m in request.messages if isinstance(m, ToolResult)]
    if not results:
        return ScriptedResponse(
            text="I'll close both issues.",
            tool_calls=[
                ScriptedCall("close_issue", {"issue_id": 1, "comment": "stale"}, id="close-1"),
                ScriptedCall("close_issue", {"issue_id": 2, "comment": "fixed"}, id="close-2"),
            ],
        )
    done = [r.content for r in results if not r.is_error]
    refused = [r.content for r in results if r.is_error]
    return f"Done: {'; '.join(done) or 'nothing'}. Not done: {'; '.join(refused) or 'nothing'}."


async def make_worker() -> tuple[Worker, IssueTracker]:
    """The same app and tools in every process; close_issue needs a human's approval."""
    tracker = IssueTracker(project="llm-worker")
    await tracker.file_issues(
        [NewIssue(title="Crash on empty input"), NewIssue(title="Docs: typo in README")]
    )
    # Each process is a fresh model session: the script is a function of what it is sent.
    worker = Worker(ScriptedClient([model, model]), system_prompt="You triage issues.")
    worker.register_tools([tracker.search.definition(), tracker.file_issues.definition()])
    worker.register_tool(tracker.close_issue.definition(), requires_approval=True)
    return worker, tracker


async def first_process(state_file: Path) -> None:
    worker, tracker = await make_worker()
    result = await worker.run("Close the stale issue #1 and the fixed #2.")
    assert result is WorkerResult.PAUSED
    print("process 1: the run is paused; waiting for a decision on:")
    for pending in worker.pending:
        print(f"  {pending.call.id}: {pending.call.name}({pending.call.input_json})")
    state_file.write_text(worker.state.to_json())
    print(f"process 1: saved the run state to {state_file.name}; issues still: {statuses(tracker)}")


async def second_process(state_file: Path) -> None:
    worker, tracker = await make_worker()
    worker.load_state(RunState.from_json(state_file.read_text()))
    print(f"process 2: loaded the run; {len(worker.pending)} calls wait for a decision")
    await worker.resume(
        {"close-1": Deny("#1 is not stale, a fix is in review"), "close-2": Approve()}
    )
    print(f"process 2: the model answered: {worker.final_text}")
    print(f"process 2: issues now: {statuses(tracker)}")


def statuses(tracker: IssueTracker) -> str:
    return ", ".join(f"#{issue.id} {issue.status}" for issue in tracker.issues.values())


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--resume":
        anyio.run(second_process, Path(sys.argv[2]))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        state_file = Path(folder) / "run-state.json"
        anyio.run(first_process, state_file)
        sys.stdout.flush()  # this process's lines before the next one's, into a pipe too
        # Another process, as a web request answering the approval would be.
        done = subprocess.run([sys.executable, __file__, "--resume", str(state_file)], check=False)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
