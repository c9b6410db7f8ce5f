"""What the worker, hook, stream and provider tests share: the history invariant, tools that
record what happened to them, and small builders. Not a test module."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from llm_worker import (
    AssistantMessage,
    Message,
    RunEvent,
    RunStream,
    ToolMeta,
    ToolResult,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

# -- what the Python version decides -------------------------------------------------------

# google-genai (the gemini extra, and the Gemini half of the dev extra) needs Python 3.11+:
# on 3.10 it is not installed, and the tests of GeminiClient and the gemini format's
# cross-checks against the SDK skip. Only there: on 3.11+ a missing SDK fails them.
GEMINI_SDK = sys.version_info >= (3, 11)
WITHOUT_GEMINI_SDK = "google-genai (the gemini extra) needs Python 3.11+"
needs_gemini_sdk = pytest.mark.skipif(not GEMINI_SDK, reason=WITHOUT_GEMINI_SDK)

# asyncio counts the cancellations asked of a task from Python 3.11 (Task.cancelling()).
# Before, every CancelledError is taken for a cancellation (llm_worker._exceptions), so a
# stray one (a future someone else cancelled) cancels the run there, as documented.
needs_counted_cancellations = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="asyncio counts a task's cancellations (Task.cancelling()) from Python 3.11",
)


# -- the history invariant -----------------------------------------------------------------


def assert_history_valid(history: Sequence[Message]) -> None:
    """Every assistant message's tool calls are followed by exactly one ToolResult per call,
    in call order, with matching call ids, before the next assistant or user message."""
    items = list(history)
    position = 0
    while position < len(items):
        item = items[position]
        position += 1
        if isinstance(item, ToolResult):
            raise AssertionError(
                f"history[{position - 1}] {item!r} answers no tool call of the message before it"
            )
        if not isinstance(item, AssistantMessage):
            continue
        for call in item.tool_calls:
            if position >= len(items):
                raise AssertionError(f"tool call {call.id!r} ({call.name}) has no result")
            result = items[position]
            if not isinstance(result, ToolResult) or result.call_id != call.id:
                raise AssertionError(
                    f"history[{position}] should be the result of call {call.id!r} "
                    f"({call.name}), found {result!r}"
                )
            position += 1


def results_of(history: Sequence[Message]) -> list[ToolResult]:
    return [m for m in history if isinstance(m, ToolResult)]


def calls(*pairs: tuple[str, str | dict[str, object]]) -> ScriptedResponse:
    """A scripted response calling each ``(tool name, arguments)`` in order."""
    return ScriptedResponse(tool_calls=[ScriptedCall(name, args) for name, args in pairs])


# -- tools ---------------------------------------------------------------------------------


@tool_registry
class Lab:
    """Tools that record what happened to them."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.count: Counter[str] = Counter()
        self.all_started: anyio.Event | None = None
        self.expected_starts = 0

    @tool
    async def echo(self, text: str) -> str:
        """Return the text."""
        self.count[f"echo {text}"] += 1
        self.log.append(f"echo {text}")
        return text

    @tool
    async def nap(self, name: str, seconds: float) -> str:
        """Sleep, then say so."""
        self.count[f"nap {name}"] += 1
        self.log.append(f"start {name}")
        if self.all_started is not None and self.count.total() >= self.expected_starts:
            self.all_started.set()
        try:
            await anyio.sleep(seconds)
            self.log.append(f"woke {name}")
        finally:
            self.log.append(f"exit {name}")
        return f"{name} rested"

    @tool
    async def fail(self, why: str) -> str:
        """Always fails."""
        raise ValueError(why)


@tool_registry
class Threads:
    """A plain-def tool that blocks its worker thread until the test releases it."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    @tool
    def block(self) -> str:
        """Blocks until released."""
        self.started.set()
        try:
            self.release.wait(10)
            return "late result"
        finally:
            self.finished.set()


# -- hand-written tools ------------------------------------------------------------------


class Returns:
    """A hand-written ``Tool`` returning what it was given (any object: a text, a
    ``ToolReturn``, something no tool should return)."""

    def __init__(self, result: object) -> None:
        self.result = result

    async def execute(self, input_json: str) -> Any:
        return self.result


class Raises:
    """A hand-written ``Tool`` raising what it was given."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def execute(self, input_json: str) -> str:
        raise self.error


def hand_written(name: str, tool: object) -> Any:
    """A definition registering the hand-written ``tool`` as ``name``."""
    return lambda: (ToolMeta(name=name), tool)


class BrokenTool:
    """A hand-written Tool with a bug: it raises something that is not a ToolError."""

    async def execute(self, input_json: str) -> str:
        raise RuntimeError("oops")


def broken_definition() -> tuple[ToolMeta, BrokenTool]:
    return ToolMeta(name="broken", description="Has a bug."), BrokenTool()


def make_worker(
    client: ScriptedClient, *, system_prompt: str | None = None, max_turns: int = 10
) -> tuple[Worker, Lab]:
    lab = Lab()
    worker = Worker(client, system_prompt=system_prompt, max_turns=max_turns)
    worker.register_tools(tool_definitions(lab))
    return worker, lab


async def collect(stream: RunStream) -> list[RunEvent]:
    """Every event of ``stream`` (entered and read to its end)."""
    async with stream:
        return [event async for event in stream]


def defs_referenced(value: object) -> set[str]:
    """The names of the ``$defs`` entries the ``$ref``s in ``value`` point at."""
    if isinstance(value, list):
        return set().union(*map(defs_referenced, value))
    if not isinstance(value, dict):
        return set()
    found = set().union(*map(defs_referenced, value.values()))
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found.add(ref.removeprefix("#/$defs/"))
    return found


def defs_used(schema: dict[str, Any]) -> set[str]:
    """The ``$defs`` entries the schema's ``$ref``s reach, through other entries too."""
    defs = schema.get("$defs", {})
    used = defs_referenced({k: v for k, v in schema.items() if k != "$defs"})
    pending = list(used)
    while pending:
        for name in defs_referenced(defs.get(pending.pop(), {})) - used:
            used.add(name)
            pending.append(name)
    return used
