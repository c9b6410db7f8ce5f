"""Ask a real model about the quickstart's issue tracker, or a scripted one if there is no key.

Run it with:  python examples/chat.py ["your question"]

- With OPENAI_API_KEY set, it talks to OpenAI's Chat Completions API (model from
  OPENAI_MODEL, default gpt-5-mini; OPENAI_BASE_URL points it at any OpenAI-compatible
  server: vLLM, Ollama, llama.cpp, LM Studio). Needs: pip install 'llm-worker[openai]'.
- Otherwise, with ANTHROPIC_API_KEY set, it talks to Anthropic (model from
  ANTHROPIC_MODEL, default claude-haiku-4-5). Needs: pip install 'llm-worker[anthropic]'.
- Otherwise, with GEMINI_API_KEY (or GOOGLE_API_KEY) set, it talks to Google's Gemini API
  (model from GEMINI_MODEL, default gemini-2.5-flash; GOOGLE_GEMINI_BASE_URL points it
  at another server). Needs: pip install 'llm-worker[gemini]'.
- With no key it says so and uses llm_worker.testing.ScriptedClient, so it always
  runs (and needs no SDK).

The keys are tried in that order: OpenAI, Anthropic, Gemini; the first one set wins.

The model gets the tracker's tools (file_issues, search, close_issue); every tool call
it makes runs for real on the in-memory tracker. The answer is printed as it streams in,
and each tool call shows a status line while it runs and its result when it is done
(read from ``worker.run_stream()``'s events).

Ctrl-C ends it with "interrupted" and exit status 130; a closed stdout (``| head -1``)
ends it quietly.
"""

from __future__ import annotations

import os
import sys
from asyncio import CancelledError
from contextlib import AsyncExitStack, suppress

import anyio
from quickstart import IssueTracker, NewIssue  # the app of examples/quickstart.py

from llm_worker import (
    LlmClient,
    ProviderError,
    ResponseCompleted,
    RunEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallRunning,
    Worker,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

QUESTION = "Which issues are open? The docs typo is fixed: please close that one."
SYSTEM_PROMPT = (
    "You triage issues for the llm-worker project. Use the tools to look issues up and "
    "change them; answer in one or two sentences."
)


def scripted_model() -> ScriptedClient:
    """What a model would do with QUESTION: two tool calls at once, then an answer."""
    return ScriptedClient(
        [
            ScriptedResponse(
                text="Let me look at the open issues and close the docs one.",
                tool_calls=[
                    ScriptedCall("search", {"query": "", "status": "open"}),
                    ScriptedCall("close_issue", {"issue_id": 2, "comment": "typo fixed"}),
                ],
                chunk_size=7,  # arguments arrive in fragments, as they stream
            ),
            "Issue #1 (crash on empty input) is still open; I closed #2, the docs typo.",
        ]
    )


async def make_model(stack: AsyncExitStack) -> tuple[LlmClient, str]:
    """The model to talk to, and how to describe it; real clients are closed by ``stack``."""
    if os.environ.get("OPENAI_API_KEY"):
        # Imported only here, so the example runs without the SDK when there is no key.
        from llm_worker.providers.openai import OpenAIChatClient

        model = os.environ.get("OPENAI_MODEL") or "gpt-5-mini"
        openai_client = await stack.enter_async_context(OpenAIChatClient(model))
        return openai_client, f"OpenAI Chat Completions, model {model}"
    if os.environ.get("ANTHROPIC_API_KEY"):
        from llm_worker.providers.anthropic import AnthropicClient

        model = os.environ.get("ANTHROPIC_MODEL") or "claude-haiku-4-5"
        anthropic_client = await stack.enter_async_context(AnthropicClient(model))
        return anthropic_client, f"Anthropic Messages, model {model}"
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        from llm_worker.providers.gemini import GeminiClient

        model = os.environ.get("GEMINI_MODEL") or "gemini-2.5-flash"
        gemini_client = await stack.enter_async_context(GeminiClient(model))
        return gemini_client, f"Gemini, model {model}"
    print(
        "No OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY is set: "
        "using a scripted model (llm_worker.testing.ScriptedClient)."
    )
    return scripted_model(), "a scripted model"


def preview(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class Transcript:
    """Prints a run's events as they come: text as it streams, a line per tool call step."""

    def __init__(self) -> None:
        self.speaking = False  # in the middle of an "assistant | ..." line

    def show(self, event: RunEvent) -> None:
        if isinstance(event, TextDelta):
            if not self.speaking:
                self.write("assistant | ")
                self.speaking = True
            self.write(event.text)
            return
        self.end_line()
        if isinstance(event, ToolCallRunning):
            call = event.call
            print(f"  tool    | … {call.name}({preview(call.input_json, 40)}) is running")
        elif isinstance(event, ToolCallFinished):
            marker = "error" if event.result.is_error else "done"
            print(f"  tool    | ✓ {event.call.name} {marker}: {preview(event.result.content)}")
        elif isinstance(event, ResponseCompleted) and event.message.usage is not None:
            usage = event.message.usage
            print(f"          | ({usage.input_tokens} tokens in, {usage.output_tokens} out)")

    def end_line(self) -> None:
        if self.speaking:
            self.write("\n")
            self.speaking = False

    @staticmethod
    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()


async def main(transcript: Transcript) -> int:
    question = " ".join(sys.argv[1:]) or QUESTION
    tracker = IssueTracker(project="llm-worker")
    await tracker.file_issues(
        [NewIssue(title="Crash on empty input"), NewIssue(title="Docs: typo in README")]
    )

    async with AsyncExitStack() as stack:
        model, description = await make_model(stack)
        print(f"Talking to {description}.\n")

        worker = Worker(model, system_prompt=SYSTEM_PROMPT)
        worker.register_tools(
            [
                tracker.file_issues.definition(),
                tracker.search.definition(),
                tracker.close_issue.definition(),
            ]
        )

        locked = worker.lock()
        print(f"user      | {question}")
        try:
            async with locked.run_stream(question) as stream:
                async for event in stream:
                    transcript.show(event)
        except ProviderError as exc:
            transcript.end_line()
            print(f"\nThe model provider failed: {exc}")
            return 1
        transcript.end_line()

    statuses = ", ".join(f"#{issue.id} {issue.status}" for issue in tracker.issues.values())
    print(f"\ntracker now: {statuses}")
    return 0


def quiet_stdout() -> None:
    """Point stdout at devnull: its reader is gone, and the flush at exit would fail too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def cli() -> int:
    """Run ``main``; Ctrl-C and a closed stdout end it with a status, not a traceback."""
    transcript = Transcript()
    try:
        status = anyio.run(main, transcript)
        sys.stdout.flush()  # here, where a closed stdout is caught, not at exit
        return status
    # Ctrl-C. On Python 3.10 it comes out of anyio.run as the CancelledError of the main
    # task it cancelled (3.11+ turns that into KeyboardInterrupt).
    except (KeyboardInterrupt, CancelledError):
        with suppress(BrokenPipeError):  # stdout may be gone as well
            transcript.end_line()  # the half-written "assistant | ..." line
        print("interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C
    except BrokenPipeError:
        # stdout was closed early (`| head -1`). Not SIGPIPE's default action instead:
        # that would also end the program when the model's connection drops mid-write
        # (Python docs, "Note on SIGPIPE").
        quiet_stdout()
        return 1


if __name__ == "__main__":
    sys.exit(cli())
