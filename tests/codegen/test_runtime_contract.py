"""The contract of a generated tool's ``execute()`` against hostile tools (``runtime.py``).

``execute`` returns a ``str`` or raises a ``ToolError``, whatever the method
raises or returns; only cancellation, ``KeyboardInterrupt`` and ``SystemExit``
pass through. Making a result text is part of the call: inside its timeout,
and never on the event loop when it runs the tool's own code (``repr()``).
Plain-``def`` tools run in a bounded number of threads, abandoned ones included
(``_codegen/threads.py``).

Nothing here measures time: tools block on events the test releases, and every
wait is bounded by ``anyio.fail_after`` or an event's timeout.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from llm_worker import (
    ExecutionFailedError,
    InternalToolError,
    ToolResult,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio

GUARD = 30  # seconds: only a regression ever waits this long
SHORT = 0.05


class Custom(BaseException):
    """A BaseException of the tool's own: not cancellation, KeyboardInterrupt or SystemExit."""


class BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class BadRepr:
    def __repr__(self) -> str:
        raise ValueError("repr is broken")


class SlowRepr:
    """Its repr waits until the test releases it, and records whether it had to give up."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.gave_up = False

    def __repr__(self) -> str:
        self.entered.set()
        self.gave_up = not self.release.wait(GUARD)
        return "<slow>"


def deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


@tool_registry
class Hostile:
    def __init__(self) -> None:
        self.slow = SlowRepr()
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most_running = 0
        self.finished = 0

    @tool
    async def custom_async(self) -> str:
        raise Custom("custom stop")

    @tool
    def custom_thread(self) -> str:
        raise Custom("custom stop")

    @tool(thread=False)
    def custom_inline(self) -> str:
        raise Custom("custom stop")

    @tool
    async def generator_exit(self) -> str:
        raise GeneratorExit

    @tool
    async def exit_async(self) -> str:
        raise SystemExit(2)

    @tool
    def exit_thread(self) -> str:
        raise SystemExit(2)

    @tool(thread=False)
    def interrupt_inline(self) -> str:
        raise KeyboardInterrupt

    @tool
    async def broken_str(self) -> str:
        raise BrokenStr

    @tool
    async def bad_repr(self) -> object:
        return BadRepr()

    @tool
    def bad_repr_thread(self) -> object:
        return BadRepr()

    @tool
    async def too_deep(self) -> object:
        return deep(100_000)

    @tool
    async def slow_repr(self) -> object:
        return self.slow

    @tool(timeout=SHORT)
    async def slow_repr_timed(self) -> object:
        return self.slow

    @tool
    async def quick(self) -> str:
        return "quick"

    @tool(timeout=SHORT)
    def block(self) -> str:
        return _block(self)

    @tool
    def block_untimed(self) -> str:
        return _block(self)


def _block(app: Hostile) -> str:
    """Wait for the test's gate, counting the threads that wait at once."""
    with app.lock:
        app.running += 1
        app.most_running = max(app.most_running, app.running)
    try:
        app.gate.wait(GUARD)
    finally:
        with app.lock:
            app.running -= 1
            app.finished += 1
    return "unblocked"


def tool_of(app: Hostile, name: str) -> Any:
    return next(d for d in tool_definitions(app) if d.name == name)()[1]


async def wait_for(condition: Any) -> None:
    """Poll ``condition`` (a thread is involved) until it holds, within the guard."""
    with anyio.fail_after(GUARD):
        while not condition():
            await anyio.sleep(0.01)


class TestOnlyThreeExceptionsEscape:
    @pytest.mark.parametrize("name", ["custom_async", "custom_thread", "custom_inline"])
    async def test_a_base_exception_of_the_tools_own_is_a_tool_error(self, name):
        """A custom BaseException becomes ExecutionFailedError, chained to it."""
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_of(Hostile(), name).execute("")
        assert str(excinfo.value) == "Execution failed: custom stop"
        assert isinstance(excinfo.value.__cause__, Custom)

    async def test_generator_exit_is_a_tool_error(self):
        """GeneratorExit raised by a tool is an ExecutionFailedError too."""
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_of(Hostile(), "generator_exit").execute("")
        assert str(excinfo.value) == "Execution failed: GeneratorExit"

    @pytest.mark.parametrize(
        ("name", "kind"),
        [
            ("exit_async", SystemExit),
            ("exit_thread", SystemExit),
            ("interrupt_inline", KeyboardInterrupt),
        ],
    )
    async def test_system_exit_and_keyboard_interrupt_pass_through(self, name, kind):
        """SystemExit and KeyboardInterrupt propagate unchanged, from every kind of tool."""
        with pytest.raises(kind) as excinfo:
            await tool_of(Hostile(), name).execute("")
        assert type(excinfo.value) is kind
        assert excinfo.value.__cause__ is None

    async def test_an_exception_whose_str_raises(self):
        """An exception without a usable text is named by its class."""
        with pytest.raises(ExecutionFailedError) as excinfo:
            await tool_of(Hostile(), "broken_str").execute("")
        assert str(excinfo.value) == "Execution failed: BrokenStr"

    @pytest.mark.parametrize("name", ["bad_repr", "bad_repr_thread"])
    async def test_a_result_whose_repr_raises(self, name):
        """A result that is neither JSON nor repr-able is an InternalToolError."""
        with pytest.raises(InternalToolError) as excinfo:
            await tool_of(Hostile(), name).execute("")
        assert str(excinfo.value) == (
            f"Internal error: tool '{name}' returned BadRepr, which could not be turned into "
            f"text (ValueError)"
        )
        assert isinstance(excinfo.value.__cause__, ValueError)

    async def test_a_result_too_deep_to_serialise(self):
        """A 100 000-deep result: an InternalToolError, not a RecursionError."""
        with pytest.raises(InternalToolError) as excinfo:
            await tool_of(Hostile(), "too_deep").execute("")
        assert str(excinfo.value) == (
            "Internal error: tool 'too_deep' returned list, which could not be turned into "
            "text (RecursionError)"
        )


class TestResultTextOffTheLoop:
    async def test_a_slow_repr_does_not_block_other_calls(self):
        """While a result's repr runs, the event loop serves other calls."""
        app = Hostile()
        results: list[str] = []

        async def slow() -> None:
            results.append(await tool_of(app, "slow_repr").execute(""))

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await anyio.to_thread.run_sync(app.slow.entered.wait, GUARD)
                # The repr is running: this call and the release below need the loop.
                results.append(await tool_of(app, "quick").execute(""))
                app.slow.release.set()
        assert results == ["quick", "<slow>"]
        assert not app.slow.gave_up

    async def test_a_slow_repr_counts_against_the_timeout(self):
        """Making the result text is part of the call: a repr past the timeout times out."""
        app = Hostile()
        with anyio.fail_after(GUARD), pytest.raises(ExecutionFailedError) as excinfo:
            await tool_of(app, "slow_repr_timed").execute("")
        assert (
            str(excinfo.value)
            == f"Execution failed: tool 'slow_repr_timed' timed out after {SHORT:g}s"
        )
        app.slow.release.set()


class TestThreadBound:
    async def test_abandoned_threads_count_against_the_bound(self):
        """Calls that time out leave threads behind; later calls start no more than the bound
        allows, on asyncio as on trio, and every call still gets its timeout result."""
        app = Hostile()
        anyio.to_thread.current_default_thread_limiter().total_tokens = 3
        batches = [
            ScriptedResponse(tool_calls=[ScriptedCall("block", id=f"c{b}{i}") for i in range(3)])
            for b in range(4)
        ]
        client = ScriptedClient([*batches, "done"])
        worker = Worker(client)
        worker.register_tools(tool_definitions(app))
        with anyio.fail_after(GUARD):
            await worker.lock().run("go")
        timed_out = f"Execution failed: tool 'block' timed out after {SHORT:g}s"
        assert [r for r in worker.history if isinstance(r, ToolResult)] == [
            ToolResult(f"c{b}{i}", timed_out, True) for b in range(4) for i in range(3)
        ]
        assert app.most_running == 3  # the first batch's threads, abandoned and still running
        app.gate.set()
        await wait_for(lambda: app.running == 0)

    async def test_a_call_waits_for_a_free_thread(self):
        """At the bound, a call waits for a thread to end, then runs."""
        app = Hostile()
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        execute = tool_of(app, "block_untimed").execute
        results: list[str] = []

        async def call() -> None:
            results.append(await execute(""))

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(call)
                await wait_for(lambda: app.running == 2)
                await anyio.sleep(0.2)  # time for a third thread to start, if it could
                assert (app.running, app.finished) == (2, 0)
                app.gate.set()
        assert results == ["unblocked"] * 3
        assert app.most_running == 2

    async def test_a_cancelled_run_does_not_wait_for_its_thread(self, caplog):
        """Cancelling a call abandons its thread at once; the thread keeps its slot until done.
        A call that ends waiting for a slot never started: a warning says so, and why."""
        app = Hostile()
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1
        execute = tool_of(app, "block_untimed").execute
        with anyio.fail_after(GUARD):
            with anyio.move_on_after(SHORT):
                await execute("")
            assert app.running == 1  # abandoned, still running
            assert "waiting for a thread" not in caplog.text
            with anyio.move_on_after(SHORT):
                await execute("")  # waits for the slot the abandoned thread holds
            assert (app.most_running, app.finished) == (1, 0)
            assert (
                "A call of tool 'block_untimed' ended waiting for a thread: this event "
                "loop's tool threads were busy (1 alive of 1, 1 of them abandoned by calls "
                "that timed out or were cancelled)"
            ) in caplog.text
            app.gate.set()
            await wait_for(lambda: app.finished == 1)
            assert await execute("") == "unblocked"  # the slot is free again
