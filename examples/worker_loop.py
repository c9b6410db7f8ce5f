"""A Worker running the quickstart's issue tracker for a (scripted) model.

Run it with:  python examples/worker_loop.py

The model here is a ScriptedClient: it asks for two tools at once, reads their
results, and answers. Swap in a real LlmClient and nothing else changes.
"""

from __future__ import annotations

import anyio
from quickstart import IssueTracker, NewIssue  # the app of examples/quickstart.py

from llm_worker import (
    AssistantMessage,
    ToolCallContext,
    ToolResult,
    UserMessage,
    Worker,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


def print_message(message: object) -> None:
    if isinstance(message, UserMessage):
        print(f"user      | {message.text}")
    elif isinstance(message, AssistantMessage):
        if message.text:
            print(f"assistant | {message.text}")
        for call in message.tool_calls:
            print(f"assistant | -> {call.name}({call.input_json})  [{call.id}]")
    elif isinstance(message, ToolResult):
        marker = "error" if message.is_error else "ok"
        print(f"tool      | <- [{message.call_id}] {marker}: {message.content}")


async def main() -> None:
    tracker = IssueTracker(project="llm-worker")
    # Tools stay ordinary methods: the application can call them directly.
    await tracker.file_issues(
        [NewIssue(title="Crash on empty input"), NewIssue(title="Docs: typo in README")]
    )

    model = ScriptedClient(
        [
            # Turn 1: two tool calls in one response; the worker runs them concurrently.
            ScriptedResponse(
                text="Let me look at the open issues and close the docs one.",
                tool_calls=[
                    ScriptedCall("search", {"query": "crash", "status": "open"}),
                    ScriptedCall("close_issue", {"issue_id": 2, "comment": "fixed the typo"}),
                ],
                chunk_size=7,  # arguments arrive in fragments, as they stream
            ),
            # Turn 2: the model has read both results and answers.
            "Issue #1 (crash on empty input) is still open; I closed #2.",
        ]
    )

    worker = Worker(model, system_prompt="You triage issues for the llm-worker project.")
    worker.register_tools(
        [
            tracker.file_issues.definition(),
            tracker.search.definition(),
            tracker.close_issue.definition(),
        ]
    )

    @worker.add_pre_tool_call_hook
    async def log_call(ctx: ToolCallContext) -> None:
        print(f"  (hook)  | about to run {ctx.meta.name}")

    locked = worker.lock()  # system prompt, tools and history so far are now fixed
    result = await locked.run("What is open, and can you close the docs issue?")

    print()
    for message in locked.history:
        print_message(message)
    print(f"\nrun ended: {result.value}; the model was asked {len(model.requests)} times")


if __name__ == "__main__":
    anyio.run(main)
