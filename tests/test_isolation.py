"""Each tool call runs in a context of its own (``_isolation.py``), as a task would.

A value a tool sets in a ``ContextVar`` (a log context, a request-scoped setting)
must not reach the application that called ``run()``, the hooks, or the calls after
it, whether the call runs in the run's own task or one after another in a runner's;
what the application set before the run, the tool sees. Both backends, with and
without a timeout, read by ``run()`` and by ``run_stream()``.
"""

from __future__ import annotations

import contextvars

import anyio
import anyio.lowlevel
import pytest

from llm_worker import (
    Limits,
    PostToolCallContext,
    ToolCallFinished,
    ToolResult,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

GUARD = 5.0
SHORT = 0.05
SETTING: contextvars.ContextVar[str] = contextvars.ContextVar("setting", default="unset")


@tool_registry
class Settings:
    """Tools that set and read ``SETTING``."""

    @tool
    async def change(self, value: str) -> str:
        """Set the setting, wait, and say what it is then."""
        SETTING.set(value)
        await anyio.lowlevel.checkpoint()
        return SETTING.get()

    @tool
    async def change_now(self, value: str) -> str:
        """Set the setting without waiting."""
        SETTING.set(value)
        return SETTING.get()

    @tool
    async def read(self) -> str:
        """Say what the setting is."""
        return SETTING.get()

    @tool
    async def change_and_hang(self, value: str) -> str:
        """Set the setting, then wait forever."""
        SETTING.set(value)
        await anyio.sleep_forever()
        return "never"


def responses(*calls: list[tuple[str, dict[str, str]]]) -> list[ScriptedResponse | str]:
    script: list[ScriptedResponse | str] = [
        ScriptedResponse(tool_calls=[ScriptedCall(name, args) for name, args in response])
        for response in calls
    ]
    return [*script, "done"]


def results(worker: Worker) -> list[str]:
    return [message.content for message in worker.history if isinstance(message, ToolResult)]


LIMITS = [
    pytest.param(Limits(), id="timeout"),
    pytest.param(Limits(tool_timeout=None), id="no-timeout"),
]


async def run_or_stream(worker: Worker, how: str, seen: list[str]) -> WorkerResult:
    """Run ``worker``; while streaming, note the setting after each call's result."""
    if how == "run":
        return await worker.run("go")
    async with worker.run_stream("go") as stream:
        async for event in stream:
            if isinstance(event, ToolCallFinished):
                seen.append(SETTING.get())
    assert stream.result is not None
    return stream.result


@pytest.mark.anyio
@pytest.mark.parametrize("limits", LIMITS)
@pytest.mark.parametrize("how", ["run", "stream"])
async def test_a_value_a_tool_sets_stays_its_own(limits: Limits, how: str) -> None:
    """A call alone in its response sets the setting: it keeps it across its own wait;
    the next turn's call, the post-hooks, the stream's reader and the caller see the
    application's value."""
    worker = Worker(
        ScriptedClient(
            responses(
                [("change", {"value": "tool"})],
                [("change_now", {"value": "other"})],
                [("read", {})],
            )
        ),
        limits=limits,
    )
    worker.register_tools(tool_definitions(Settings()))
    in_hooks: list[str] = []

    async def note(ctx: PostToolCallContext) -> None:
        in_hooks.append(SETTING.get())

    worker.add_post_tool_call_hook(note)
    seen: list[str] = []
    token = SETTING.set("app")
    try:
        with anyio.fail_after(GUARD):
            assert await run_or_stream(worker, how, seen) is WorkerResult.FINISHED
        assert SETTING.get() == "app"
    finally:
        SETTING.reset(token)
    assert results(worker) == ["tool", "other", "app"]
    assert in_hooks == ["app", "app", "app"]
    assert seen == (["app", "app", "app"] if how == "stream" else [])


@pytest.mark.anyio
@pytest.mark.parametrize("limits", LIMITS)
async def test_calls_in_one_runner_do_not_see_each_others_values(limits: Limits) -> None:
    """Calls of one response that never wait run one after another in one runner task:
    each still starts from the application's value."""
    worker = Worker(
        ScriptedClient(
            responses(
                [
                    ("change_now", {"value": "first"}),
                    ("read", {}),
                    ("change_now", {"value": "third"}),
                    ("read", {}),
                ]
            )
        ),
        limits=limits,
    )
    worker.register_tools(tool_definitions(Settings()))
    token = SETTING.set("app")
    try:
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert SETTING.get() == "app"
    finally:
        SETTING.reset(token)
    assert results(worker) == ["first", "app", "third", "app"]


@pytest.mark.anyio
@pytest.mark.parametrize("alone", [True, False], ids=["alone", "beside-another"])
async def test_a_timed_out_call_leaves_no_value_behind(alone: bool) -> None:
    """A call that set the setting and was then ended by its timeout: the caller and
    the next call still see the application's value."""
    first = [("change_and_hang", {"value": "stuck"})]
    if not alone:
        first.append(("change", {"value": "beside"}))
    worker = Worker(
        ScriptedClient(responses(first, [("read", {})])),
        limits=Limits(tool_timeout=SHORT),
    )
    worker.register_tools(tool_definitions(Settings()))
    token = SETTING.set("app")
    try:
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert SETTING.get() == "app"
    finally:
        SETTING.reset(token)
    got = results(worker)
    assert "timed out" in got[0]
    assert got[1:] == (["app"] if alone else ["beside", "app"])
