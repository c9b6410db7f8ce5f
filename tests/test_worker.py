"""Worker and LockedWorker (``_worker.py``): registration, locking, the turn loop, cancellation.

Every run goes through ``llm_worker.testing.ScriptedClient`` (or a tiny hand-written
``LlmClient`` where a test needs a stream that blocks); nothing is monkeypatched.
``assert_history_valid`` is the history invariant shared by the worker and hook tests.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator

import anyio
import pytest
from support import (
    Lab,
    Threads,
    assert_history_valid,
    broken_definition,
    calls,
    make_worker,
    results_of,
)

from llm_worker import (
    Approve,
    AssistantMessage,
    Completion,
    DuplicateToolError,
    LlmEvent,
    LlmRequest,
    LockedWorker,
    MaxTurnsExceededError,
    Pause,
    Skip,
    TextDelta,
    ToolCall,
    ToolMeta,
    ToolResult,
    ToolServerHandle,
    ToolUseStart,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool_definitions,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

LOCKED = (
    "This Worker is locked; use the LockedWorker that lock() returned, "
    "or call its unlock() to get this Worker back"
)
UNLOCKED = "This LockedWorker was unlocked; use the Worker that unlock() returned"
CANCELLED = "Tool call '{}' was cancelled before it finished"


# -- the invariant helper can fail ---------------------------------------------------------


class TestAssertHistoryValid:
    def test_accepts_complete_history(self):
        """A history whose calls each have one result in order passes."""
        call_a, call_b = ToolCall("a", "echo", "{}"), ToolCall("b", "echo", "{}")
        assert_history_valid(
            [
                UserMessage("hi"),
                AssistantMessage("", (call_a, call_b)),
                ToolResult("a", "x"),
                ToolResult("b", "y"),
                AssistantMessage("done"),
                UserMessage("again"),
            ]
        )

    @pytest.mark.parametrize(
        "tail",
        [
            pytest.param([ToolResult("a", "x")], id="missing"),
            pytest.param([ToolResult("b", "y"), ToolResult("a", "x")], id="out-of-order"),
            pytest.param(
                [ToolResult("a", "x"), ToolResult("b", "y"), ToolResult("b", "y")], id="extra"
            ),
            pytest.param([ToolResult("a", "x"), UserMessage("?"), ToolResult("b", "y")], id="gap"),
        ],
    )
    def test_rejects_broken_history(self, tail):
        """Missing, reordered, extra or interrupted results fail the check."""
        call_a, call_b = ToolCall("a", "echo", "{}"), ToolCall("b", "echo", "{}")
        with pytest.raises(AssertionError):
            assert_history_valid([UserMessage("hi"), AssistantMessage("", (call_a, call_b)), *tail])


# -- ported from the Rust crate's worker tests ---------------------------------------------


class TestOneResponsesCalls:
    @pytest.mark.anyio
    async def test_three_tools_run_in_parallel_in_one_turn(self):
        """Three calls of one response run at once (all start before any wakes), in one turn."""
        client = ScriptedClient(
            [
                calls(*[("nap", {"name": n, "seconds": 0.1}) for n in "abc"]),
                "All rested.",
            ]
        )
        worker, lab = make_worker(client)
        with anyio.fail_after(5):
            result = await worker.run("rest")
        assert result is WorkerResult.FINISHED
        assert len(client.requests) == 2  # one turn with tools, one answer
        assert lab.log[:3] == ["start a", "start b", "start c"]  # all started before any woke
        assert [r.content for r in results_of(worker.history)] == [
            "a rested",
            "b rested",
            "c rested",
        ]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_pre_hook_skip_keeps_tool_from_running(self):
        """A pre-hook Skip() keeps the tool from running; the model still gets an error result."""
        client = ScriptedClient(
            [calls(("echo", {"text": "allowed"}), ("echo", {"text": "blocked"})), "ok"]
        )
        worker, lab = make_worker(client)

        def block(ctx):
            return Skip() if "blocked" in ctx.call.input_json else None

        worker.add_pre_tool_call_hook(block)
        await worker.run("go")
        assert lab.log == ["echo allowed"]  # the skipped call never ran
        assert client.requests[1].messages[-2:] == (
            ToolResult("call_0_0", "allowed", False),
            ToolResult(
                "call_0_1", "Tool call 'echo' was skipped by the application; it did not run", True
            ),
        )
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_post_hook_edit_is_what_the_next_request_carries(self):
        """A post-hook's edited result is exactly what the next request sends the model."""
        client = ScriptedClient([calls(("echo", {"text": "secret 42"})), "ok"])
        worker, lab = make_worker(client)

        async def redact(ctx):
            ctx.result = dataclasses.replace(ctx.result, content="[redacted]")

        worker.add_post_tool_call_hook(redact)
        await worker.run("go")
        assert lab.log == ["echo secret 42"]
        assert client.requests[1].messages == (
            UserMessage("go"),
            AssistantMessage(
                "", (ToolCall("call_0_0", "echo", '{"text": "secret 42"}'),), "tool_use"
            ),
            ToolResult("call_0_0", "[redacted]", False),
        )
        assert worker.history[2] == ToolResult("call_0_0", "[redacted]", False)

    @pytest.mark.anyio
    async def test_registration_in_mutable_state(self):
        """A Worker registers tools one by one and in batches; the model sees them all, sorted."""
        lab = Lab()
        client = ScriptedClient(["ok"])
        worker = Worker(client)
        echo, fail, nap = tool_definitions(lab)
        worker.register_tool(nap)
        worker.register_tools([echo, fail])
        worker.register_tool(broken_definition)
        handle = worker.tool_server_handle()
        assert len(handle) == 4
        assert "echo" in handle
        await worker.run("hi")
        assert [d.name for d in client.requests[0].tools] == ["broken", "echo", "fail", "nap"]

    def test_registration_rejects_duplicates(self):
        """Registering a taken name raises DuplicateToolError; a batch is all or none."""
        lab = Lab()
        worker = Worker(ScriptedClient())
        echo, fail, nap = tool_definitions(lab)
        worker.register_tool(echo)
        with pytest.raises(DuplicateToolError, match=r"^Tool with name 'echo' already registered$"):
            worker.register_tool(echo)
        with pytest.raises(DuplicateToolError, match="'echo'"):
            worker.register_tools([fail, nap, echo])
        handle = worker.tool_server_handle()
        assert len(handle) == 1
        assert "fail" not in handle
        assert "nap" not in handle

    @pytest.mark.anyio
    async def test_lock_unlock_keeps_system_prompt_and_history(self):
        """lock() and unlock() keep the system prompt and the history; runs on either append."""
        client = ScriptedClient(["first", "second", "third"])
        worker, _ = make_worker(client, system_prompt="Be brief.")
        await worker.run("one")
        before = worker.history
        locked = worker.lock()
        assert locked.system_prompt == "Be brief."
        assert locked.history == before
        await locked.run("two")
        assert locked.history[: len(before)] == before
        assert len(locked.history) == len(before) + 2
        after_locked_run = locked.history
        again = locked.unlock()
        assert again.system_prompt == "Be brief."
        assert again.history == after_locked_run
        await again.run("three")
        assert [r.system_prompt for r in client.requests] == ["Be brief."] * 3
        assert [m.text for m in again.history] == [
            "one",
            "first",
            "two",
            "second",
            "three",
            "third",
        ]

    @pytest.mark.anyio
    async def test_locked_worker_object_refuses_every_mutation(self):
        """A Worker that has been locked raises WorkerStateError on every mutating call."""
        worker, _ = make_worker(ScriptedClient(["never"]))
        worker.lock()
        attempts = {
            "register_tool": lambda: worker.register_tool(broken_definition),
            "register_tools": lambda: worker.register_tools([broken_definition]),
            "set_history": lambda: worker.set_history([UserMessage("x")]),
            "clear_history": worker.clear_history,
            "system_prompt": lambda: setattr(worker, "system_prompt", "x"),
            "lock": worker.lock,
            "add_pre_tool_call_hook": lambda: worker.add_pre_tool_call_hook(lambda ctx: None),
            "add_post_tool_call_hook": lambda: worker.add_post_tool_call_hook(lambda ctx: None),
        }
        for name, attempt in attempts.items():
            with pytest.raises(WorkerStateError) as info:
                attempt()
            assert str(info.value) == LOCKED, name
        with pytest.raises(WorkerStateError) as info:
            await worker.run("x")
        assert str(info.value) == LOCKED
        with pytest.raises(WorkerStateError) as info:
            await worker.resume()
        assert str(info.value) == LOCKED
        assert worker.system_prompt is None
        assert worker.history == ()
        assert len(worker.tool_server_handle()) == 3

    @pytest.mark.anyio
    async def test_locked_worker_after_unlock_is_stale(self):
        """A LockedWorker raises WorkerStateError once unlock() gave the Worker back."""
        worker, _ = make_worker(ScriptedClient(["never"]))
        locked = worker.lock()
        locked.unlock()
        for attempt in (
            locked.unlock,
            lambda: locked.add_pre_tool_call_hook(lambda ctx: None),
            lambda: locked.add_post_tool_call_hook(lambda ctx: None),
        ):
            with pytest.raises(WorkerStateError) as info:
                attempt()
            assert str(info.value) == UNLOCKED
        with pytest.raises(WorkerStateError) as info:
            await locked.run("x")
        assert str(info.value) == UNLOCKED
        with pytest.raises(WorkerStateError) as info:
            await locked.resume()
        assert str(info.value) == UNLOCKED
        assert worker.history == ()

    @pytest.mark.anyio
    async def test_a_stream_made_before_lock_cannot_be_entered_after(self):
        """A stream keeps the worker that made it: after lock() (or unlock()) it refuses to
        start, and the worker lock() returned runs as usual."""
        worker, _ = make_worker(ScriptedClient(["hi", "again"]))
        early = worker.run_stream("x")
        locked = worker.lock()
        with pytest.raises(WorkerStateError, match="locked or unlocked after the stream"):
            async with early:
                pass
        assert worker.history == ()
        assert await locked.run("x") is WorkerResult.FINISHED
        before_unlock = locked.run_stream("y")
        locked.unlock()
        with pytest.raises(WorkerStateError, match="locked or unlocked after the stream"):
            async with before_unlock:
                pass

    def test_unlock_returns_the_same_worker(self):
        """unlock() returns the very Worker object that lock() was called on."""
        worker, _ = make_worker(ScriptedClient())
        assert worker.lock().unlock() is worker
        assert worker.lock().unlock() is worker  # and again

    def test_tool_server_handle_is_the_same_in_both_states(self):
        """tool_server_handle() works on Worker and LockedWorker and gives the same handle."""
        worker, _ = make_worker(ScriptedClient())
        handle = worker.tool_server_handle()
        locked = worker.lock()
        assert isinstance(handle, ToolServerHandle)
        assert locked.tool_server_handle() is handle
        assert worker.tool_server_handle() is handle  # even on the locked Worker object
        assert locked.unlock().tool_server_handle() is handle
        assert len(handle) == 3


# -- Worker construction and state ---------------------------------------------------------


class TestWorkerState:
    def test_defaults(self):
        """A new Worker has no system prompt, no history, max_turns 10 and is not paused."""
        worker = Worker(ScriptedClient())
        assert worker.system_prompt is None
        assert worker.history == ()
        assert worker.max_turns == 10
        assert worker.is_paused is False
        assert worker.final_text is None

    def test_max_turns_must_be_positive(self):
        """max_turns below 1 is refused."""
        with pytest.raises(ValueError, match=r"^max_turns must be at least 1, got 0$"):
            Worker(ScriptedClient(), max_turns=0)

    def test_max_turns_must_fit_a_run_state(self):
        """A run counts its requests up to max_turns and a saved state keeps the count:
        more than MAX_COUNT (2**63 - 1) would make a state no Worker could load."""
        from llm_worker.temporal import DurableWorker

        Worker(ScriptedClient(), max_turns=2**63 - 1)  # the most, accepted
        message = r"^max_turns must be at most 9223372036854775807, got 9223372036854775808$"
        with pytest.raises(ValueError, match=message):
            Worker(ScriptedClient(), max_turns=2**63)
        with pytest.raises(ValueError, match=message):
            DurableWorker("d", max_turns=2**63)
        with pytest.raises(
            ValueError, match=r"^max_turns must be at most \d+, got <int of 16610 bits>$"
        ):
            Worker(ScriptedClient(), max_turns=10**5000)  # more digits than Python writes out

    @pytest.mark.parametrize("value", [float("nan"), 2.5, True, "3"])
    def test_max_turns_must_be_an_int(self, value):
        """A NaN max_turns never ended a tool loop (every comparison is false), 2.5 made
        three requests and True read as 'after True requests': all refused."""
        from llm_worker.temporal import DurableWorker

        with pytest.raises(TypeError, match=r"^max_turns must be an int, got "):
            Worker(ScriptedClient(), max_turns=value)
        with pytest.raises(TypeError, match=r"^max_turns must be an int, got "):
            DurableWorker("d", max_turns=value)

    def test_locked_worker_has_no_public_constructor(self):
        """LockedWorker() raises TypeError naming Worker.lock()."""
        with pytest.raises(
            TypeError, match=r"^LockedWorker has no public constructor; use Worker.lock\(\)$"
        ):
            LockedWorker()

    def test_locked_worker_cannot_register_or_edit(self):
        """A LockedWorker has no register_*, set_history, clear_history or prompt setter."""
        locked = Worker(ScriptedClient(), system_prompt="p").lock()
        for name in ("register_tool", "register_tools", "set_history", "clear_history"):
            assert not hasattr(locked, name), name
        with pytest.raises(AttributeError):
            locked.system_prompt = "x"  # type: ignore[misc]
        assert locked.system_prompt == "p"

    def test_system_prompt_and_history_editing(self):
        """An unlocked Worker's system prompt and history can be set and cleared."""
        worker = Worker(ScriptedClient(), system_prompt="a")
        worker.system_prompt = "b"
        assert worker.system_prompt == "b"
        messages = [UserMessage("x"), AssistantMessage("y")]
        worker.set_history(messages)
        messages.append(UserMessage("not seen"))  # the worker keeps its own copy
        assert worker.history == (UserMessage("x"), AssistantMessage("y"))
        assert worker.final_text == "y"
        worker.clear_history()
        assert worker.history == ()

    @pytest.mark.anyio
    async def test_set_history_is_what_the_model_gets(self):
        """A restored history is sent before the new user message."""
        client = ScriptedClient(["ok"])
        worker = Worker(client)
        worker.set_history([UserMessage("earlier"), AssistantMessage("noted")])
        await worker.run("now")
        assert client.requests[0].messages == (
            UserMessage("earlier"),
            AssistantMessage("noted"),
            UserMessage("now"),
        )

    @pytest.mark.anyio
    async def test_no_run_or_edit_while_running(self):
        """While a run is in progress, run(), set_history() and lock() raise WorkerStateError."""
        worker, lab = make_worker(
            ScriptedClient([calls(("nap", {"name": "a", "seconds": 10})), "done"])
        )
        lab.all_started, lab.expected_starts = anyio.Event(), 1
        messages: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(worker.run, "go")
            await lab.all_started.wait()
            for attempt in (
                lambda: worker.set_history([]),
                worker.lock,
            ):
                with pytest.raises(WorkerStateError) as info:
                    attempt()
                messages.append(str(info.value))
            with pytest.raises(WorkerStateError) as info:
                await worker.run("again")
            messages.append(str(info.value))
            group.cancel_scope.cancel()
        assert messages == [
            "Cannot call set_history(): a run is in progress",
            "Cannot call lock(): a run is in progress",
            "Cannot call run(): a run is in progress",
        ]
        assert_history_valid(worker.history)

    def test_repr(self):
        """repr shows the tool count, message count, phase and lock state."""
        worker, _ = make_worker(ScriptedClient())
        assert repr(worker) == "<Worker tools=3 messages=0 idle>"
        locked = worker.lock()
        assert repr(locked) == "<LockedWorker tools=3 messages=0 idle>"
        assert repr(worker) == "<Worker tools=3 messages=0 idle locked>"


# -- the turn loop -------------------------------------------------------------------------


class TestTurnLoop:
    @pytest.mark.anyio
    async def test_answer_without_tools_ends_the_run(self):
        """A response without tool calls ends the run with FINISHED after one request."""
        client = ScriptedClient(["Hello!"])
        worker, _ = make_worker(client)
        assert await worker.run("hi") is WorkerResult.FINISHED
        assert worker.history == (
            UserMessage("hi"),
            AssistantMessage("Hello!", (), "end_turn"),
        )
        assert worker.final_text == "Hello!"
        assert client.remaining == 0

    @pytest.mark.anyio
    async def test_every_request_carries_prompt_history_and_sorted_tools(self):
        """Each request has the system prompt, the full history so far and the sorted tools."""
        client = ScriptedClient(
            [
                calls(("echo", {"text": "one"})),
                calls(("echo", {"text": "two"}), ("echo", {"text": "three"})),
                "done",
            ]
        )
        worker, _ = make_worker(client, system_prompt="sys")
        worker.register_tool(broken_definition)
        await worker.run("go")
        expected_tools = tuple(worker.tool_server_handle().tool_definitions_sorted())
        assert [d.name for d in expected_tools] == ["broken", "echo", "fail", "nap"]
        history = worker.history
        # request k carries the history up to (not including) the k-th assistant message
        assistant_positions = [i for i, m in enumerate(history) if isinstance(m, AssistantMessage)]
        assert len(client.requests) == len(assistant_positions) == 3
        for request, position in zip(client.requests, assistant_positions, strict=True):
            assert request.system_prompt == "sys"
            assert request.messages == history[:position]
            assert tuple(request.tools) == expected_tools
        assert_history_valid(history)

    @pytest.mark.anyio
    async def test_results_are_appended_in_call_order(self):
        """Results go to history in call order, whatever order the tools finish in."""
        client = ScriptedClient(
            [
                calls(
                    ("nap", {"name": "slow", "seconds": 0.05}),
                    ("nap", {"name": "fast", "seconds": 0}),
                    ("echo", {"text": "instant"}),
                ),
                "done",
            ]
        )
        worker, lab = make_worker(client)
        await worker.run("go")
        assert lab.log.index("exit fast") < lab.log.index("exit slow")
        assert [r.content for r in results_of(worker.history)] == [
            "slow rested",
            "fast rested",
            "instant",
        ]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_several_turns_in_one_run(self):
        """Tool calls on several responses in a row all get answered before the final text."""
        client = ScriptedClient(
            [calls(("echo", {"text": str(i)})) for i in range(4)] + ["finished"]
        )
        worker, lab = make_worker(client)
        assert await worker.run("go") is WorkerResult.FINISHED
        assert lab.log == ["echo 0", "echo 1", "echo 2", "echo 3"]
        assert worker.final_text == "finished"
        assert len(client.requests) == 5
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_max_turns_stops_a_runaway_loop(self):
        """After max_turns requests that all call tools, MaxTurnsExceededError; history valid."""
        client = ScriptedClient([calls(("echo", {"text": str(i)})) for i in range(5)])
        worker, lab = make_worker(client, max_turns=3)
        with pytest.raises(MaxTurnsExceededError) as info:
            await worker.run("loop")
        assert str(info.value) == (
            "The model had not answered after 3 requests (max_turns=3); the run was stopped"
        )
        assert info.value.max_turns == 3
        assert len(client.requests) == 3
        assert lab.log == ["echo 0", "echo 1", "echo 2"]  # the last batch still ran
        assert_history_valid(worker.history)
        assert isinstance(worker.history[-1], ToolResult)
        assert worker.is_paused is False

    @pytest.mark.anyio
    async def test_max_turns_counts_per_run(self):
        """The turn limit applies to each run separately."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "one", "two"])
        worker, _ = make_worker(client, max_turns=2)
        await worker.run("first")  # two requests: at the limit, not over it
        assert await worker.run("second") is WorkerResult.FINISHED
        assert worker.final_text == "two"

    @pytest.mark.anyio
    async def test_max_turns_counts_each_resume_from_zero(self):
        """A run paused on its max_turns-th request can be resumed: the resume's requests
        are its own (it raised MaxTurnsExceededError before asking the model anything)."""
        client = ScriptedClient(
            [calls(("echo", {"text": "a"})), calls(("echo", {"text": "b"})), "ok"]
        )
        worker, _ = make_worker(client, max_turns=2)
        worker.add_pre_tool_call_hook(
            lambda ctx: Pause("check it") if '"b"' in ctx.call.input_json else None
        )
        assert await worker.run("go") is WorkerResult.PAUSED
        [pending] = worker.pending
        assert await worker.resume({pending.call.id: Approve()}) is WorkerResult.FINISHED
        assert worker.final_text == "ok"
        assert len(client.requests) == 3

    @pytest.mark.anyio
    async def test_max_turns_counts_answers_output_type_refused(self):
        """Requests whose answer failed validation count too, and the message says the model
        had not answered (it said it was still calling tools)."""
        client = ScriptedClient(["not json", "still not"])
        worker = Worker(client, max_turns=2, output_type=int, output_retries=5)
        with pytest.raises(MaxTurnsExceededError, match="had not answered after 2 requests"):
            await worker.run("go")
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_worker_usable_after_max_turns(self):
        """After MaxTurnsExceededError the next run() sends a valid history and finishes."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "fine"])
        worker, _ = make_worker(client, max_turns=1)
        with pytest.raises(MaxTurnsExceededError):
            await worker.run("loop")
        assert await worker.run("stop") is WorkerResult.FINISHED
        assert_history_valid(client.requests[-1].messages)
        assert client.requests[-1].messages[-1] == UserMessage("stop")

    @pytest.mark.anyio
    async def test_text_and_tool_calls_in_one_response(self):
        """An assistant message keeps both its text and its tool calls."""
        client = ScriptedClient(
            [
                ScriptedResponse("Let me look.", [ScriptedCall("echo", {"text": "x"}, id="c1")]),
                "Done.",
            ]
        )
        worker, _ = make_worker(client)
        await worker.run("go")
        assert worker.history[1] == AssistantMessage(
            "Let me look.", (ToolCall("c1", "echo", '{"text": "x"}'),), "tool_use"
        )
        assert worker.history[2] == ToolResult("c1", "x", False)


# -- failures become results ---------------------------------------------------------------


class TestToolFailures:
    @pytest.mark.anyio
    async def test_unknown_tool_gets_not_found_result(self):
        """A call to an unregistered tool gets the error result "Tool 'x' not found"."""
        client = ScriptedClient([calls(("x", {}), ("echo", {"text": "still runs"})), "ok"])
        worker, lab = make_worker(client)
        await worker.run("go")
        assert lab.log == ["echo still runs"]
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "Tool 'x' not found", True),
            ToolResult("call_0_1", "still runs", False),
        ]
        assert client.requests[1].messages[-2:] == tuple(results_of(worker.history))

    @pytest.mark.anyio
    async def test_tool_raising_gets_execution_failed_result(self):
        """A @tool method raising ValueError gives "Execution failed: ..." and the run goes on."""
        client = ScriptedClient([calls(("fail", {"why": "disk full"})), "sorry"])
        worker, _ = make_worker(client)
        assert await worker.run("go") is WorkerResult.FINISHED
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "Execution failed: disk full", True)
        ]

    @pytest.mark.anyio
    async def test_invalid_arguments_get_invalid_argument_result(self):
        """Arguments the tool rejects give an "Invalid argument: ..." error result."""
        client = ScriptedClient([calls(("echo", {"text": 5})), "sorry"])
        worker, lab = make_worker(client)
        await worker.run("go")
        assert results_of(worker.history) == [
            ToolResult(
                "call_0_0", "Invalid argument: 'text': Input should be a valid string (got 5)", True
            )
        ]
        assert lab.log == []

    @pytest.mark.anyio
    async def test_unexpected_exception_gets_internal_error_result(self, caplog):
        """A Tool raising a non-ToolError gives "Internal error: ..." (logged) and the run goes
        on."""
        client = ScriptedClient([calls(("broken", {}), ("echo", {"text": "fine"})), "carried on"])
        worker, _ = make_worker(client)
        worker.register_tool(broken_definition)
        with caplog.at_level(logging.ERROR, logger="llm_worker"):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert results_of(worker.history) == [
            ToolResult(
                "call_0_0", "Internal error: tool 'broken' failed unexpectedly (RuntimeError)", True
            ),
            ToolResult("call_0_1", "fine", False),
        ]
        assert worker.final_text == "carried on"
        [record] = caplog.records
        assert record.exc_info is not None
        assert isinstance(record.exc_info[1], RuntimeError)
        assert "oops" not in results_of(worker.history)[0].content

    @pytest.mark.parametrize("copies", [1, 2])
    @pytest.mark.anyio
    async def test_tool_returning_non_str_gets_internal_error_result(self, copies):
        """A hand-written Tool that returns something other than a str (a bug in the tool)
        gets an "Internal error: ..." result like a raising tool; run() neither raises nor
        leaks an ExceptionGroup."""

        class NoneTool:
            async def execute(self, input_json: str) -> str:
                return None  # type: ignore[return-value]

        client = ScriptedClient(
            [ScriptedResponse(tool_calls=[ScriptedCall("none")] * copies), "carried on"]
        )
        worker = Worker(client)
        worker.register_tool(lambda: (ToolMeta(name="none"), NoneTool()))
        assert await worker.run("go") is WorkerResult.FINISHED
        results = results_of(worker.history)
        assert len(results) == copies
        assert results == [
            ToolResult(
                f"call_0_{i}", "Internal error: tool 'none' returned NoneType, not text", True
            )
            for i in range(copies)
        ]
        assert worker.final_text == "carried on"


# -- pause and resume ----------------------------------------------------------------------


# -- cancellation --------------------------------------------------------------------------


class BlockingClient:
    """An LlmClient whose first stream sends some text and a tool start, then blocks."""

    def __init__(self, then: ScriptedClient) -> None:
        self.then = then
        self.blocked = anyio.Event()
        self.closed = False
        self.requests: list[LlmRequest] = []

    async def stream(self, request: LlmRequest) -> AsyncIterator[LlmEvent]:
        self.requests.append(request)
        if len(self.requests) > 1:
            async for event in self.then.stream(request):
                yield event
            return
        try:
            yield TextDelta("I will ")
            yield ToolUseStart(0, "c0", "echo")
            self.blocked.set()
            await anyio.sleep_forever()
            yield Completion("end_turn")  # never reached
        finally:
            self.closed = True


class TestCancellation:
    @pytest.mark.anyio
    async def test_cancel_mid_batch(self):
        """Cancelling run() while three tools sleep cancels them promptly and leaves a valid
        history; the next run works."""
        client = ScriptedClient(
            [calls(*[("nap", {"name": n, "seconds": 30}) for n in "abc"]), "after", "again"]
        )
        worker, lab = make_worker(client)
        lab.all_started, lab.expected_starts = anyio.Event(), 3
        scope = anyio.CancelScope()
        outcome: list[object] = []

        async def run_in_scope() -> None:
            with scope:
                outcome.append(await worker.run("rest"))
            outcome.append("cancelled" if scope.cancelled_caught else "not cancelled")

        with anyio.fail_after(5):  # a non-prompt cancel would sleep for 30 s
            async with anyio.create_task_group() as group:
                group.start_soon(run_in_scope)
                await lab.all_started.wait()
                scope.cancel()
        assert outcome == ["cancelled"]
        # every tool was cancelled inside its sleep and has exited: no task is left
        assert sorted(lab.log) == sorted(f"{what} {n}" for n in "abc" for what in ("start", "exit"))
        assert not any(entry.startswith("woke") for entry in lab.log)
        assert_history_valid(worker.history)
        assert results_of(worker.history) == [
            ToolResult(f"call_0_{i}", CANCELLED.format("nap"), True) for i in range(3)
        ]
        assert not worker.is_paused
        # the next run works and sends the valid history
        assert await worker.run("next") is WorkerResult.FINISHED
        assert worker.final_text == "after"
        assert_history_valid(client.requests[-1].messages)
        assert client.requests[-1].messages[-1] == UserMessage("next")
        assert lab.count == {"nap a": 1, "nap b": 1, "nap c": 1}  # nothing re-ran

    @pytest.mark.anyio
    async def test_cancel_keeps_finished_results(self):
        """Calls that finished before the cancel keep their results; the rest say cancelled."""
        client = ScriptedClient(
            [
                calls(
                    ("echo", {"text": "quick"}),
                    ("nap", {"name": "slow", "seconds": 30}),
                ),
                "after",
            ]
        )
        worker, lab = make_worker(client)
        lab.all_started, lab.expected_starts = anyio.Event(), 2  # echo, then nap
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(worker.run, "go")
                await lab.all_started.wait()
                group.cancel_scope.cancel()
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "quick", False),
            ToolResult("call_0_1", CANCELLED.format("nap"), True),
        ]
        assert lab.log == ["echo quick", "start slow", "exit slow"]
        assert await worker.run("next") is WorkerResult.FINISHED

    @pytest.mark.anyio
    async def test_cancel_single_call(self):
        """Cancelling a run with one pending call gives that call the cancelled result."""
        client = ScriptedClient([calls(("nap", {"name": "only", "seconds": 30})), "after"])
        worker, lab = make_worker(client)
        lab.all_started, lab.expected_starts = anyio.Event(), 1
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(worker.run, "go")
                await lab.all_started.wait()
                group.cancel_scope.cancel()
        assert lab.log == ["start only", "exit only"]
        assert results_of(worker.history) == [ToolResult("call_0_0", CANCELLED.format("nap"), True)]
        assert await worker.run("next") is WorkerResult.FINISHED

    @pytest.mark.anyio
    async def test_cancel_abandons_a_thread_and_drops_its_result(self):
        """Cancelling a run cancels its running tools at once; a plain-def tool's thread is
        abandoned, may still finish, and its result is dropped."""
        threads = Threads()
        client = ScriptedClient([calls(("block", {})), "after"])
        worker = Worker(client)
        worker.register_tools(tool_definitions(threads))
        scope = anyio.CancelScope()
        outcome: list[bool] = []

        async def run_in_scope() -> None:
            with scope:
                await worker.run("go")
            outcome.append(scope.cancelled_caught)

        try:
            with anyio.fail_after(5):
                async with anyio.create_task_group() as group:
                    group.start_soon(run_in_scope)
                    assert await anyio.to_thread.run_sync(threads.started.wait, 5)
                    scope.cancel()
            assert outcome == [True]
            assert not threads.finished.is_set()  # run() did not wait for the thread
            expected = (
                *worker.history[:2],
                ToolResult("call_0_0", CANCELLED.format("block"), True),
            )
            assert worker.history == expected
        finally:
            threads.release.set()
        assert await anyio.to_thread.run_sync(threads.finished.wait, 5)
        await anyio.sleep(0.01)
        assert worker.history == expected  # the late result was dropped
        assert await worker.run("next") is WorkerResult.FINISHED
        assert_history_valid(client.requests[-1].messages)

    @pytest.mark.anyio
    async def test_cancel_during_model_stream(self):
        """Cancelling while the model streams leaves no half assistant message in history."""
        client = BlockingClient(ScriptedClient(["recovered"]))
        worker = Worker(client)
        worker.register_tools(tool_definitions(Lab()))
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(worker.run, "go")
                await client.blocked.wait()
                group.cancel_scope.cancel()
        assert client.closed  # the stream was closed
        assert worker.history == (UserMessage("go"),)
        assert not worker.is_paused
        assert await worker.run("again") is WorkerResult.FINISHED
        assert client.requests[-1].messages == (UserMessage("go"), UserMessage("again"))
        assert worker.final_text == "recovered"


# -- arguments in fragments ----------------------------------------------------------------


class TestFragmentedArguments:
    ARGUMENTS = r'{"text": "caf\u00e9 \ud83d\ude00 ü \"q\" \\ 😀"}'
    DECODED = 'café 😀 ü "q" \\ 😀'

    @pytest.mark.parametrize("interleave", [False, True])
    @pytest.mark.parametrize("chunk_size", [1, 2, 3, 7])
    @pytest.mark.anyio
    async def test_split_arguments_reach_the_tool_intact(self, chunk_size, interleave):
        """Arguments split into many fragments, mid-escape and interleaved, arrive intact."""
        other = '{"text": "\\u0041\\n"}'
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("echo", self.ARGUMENTS),
                        ScriptedCall("echo", other),
                        ScriptedCall("echo", self.ARGUMENTS),
                    ],
                    chunk_size=chunk_size,
                    interleave=interleave,
                ),
                "ok",
            ]
        )
        worker, lab = make_worker(client)
        await worker.run("go")
        assistant = worker.history[1]
        assert isinstance(assistant, AssistantMessage)
        assert [c.input_json for c in assistant.tool_calls] == [
            self.ARGUMENTS,
            other,
            self.ARGUMENTS,
        ]
        assert [r.content for r in results_of(worker.history)] == [
            self.DECODED,
            "A\n",
            self.DECODED,
        ]
        assert lab.count == {f"echo {self.DECODED}": 2, "echo A\n": 1}

    @pytest.mark.anyio
    async def test_client_wide_chunk_size(self):
        """ScriptedClient(chunk_size=1) splits every response; the text is reassembled too."""
        client = ScriptedClient(
            [ScriptedResponse("thinking…", [ScriptedCall("echo", self.ARGUMENTS)]), "done ✓"],
            chunk_size=1,
        )
        worker, _ = make_worker(client)
        await worker.run("go")
        assert worker.history[1].text == "thinking…"  # type: ignore[union-attr]
        assert results_of(worker.history)[0].content == self.DECODED
        assert worker.final_text == "done ✓"


# -- the rewrite of a call changes what runs, not what was said ------------------------------


class TestCallRewrite:
    @pytest.mark.anyio
    async def test_history_keeps_the_models_call(self):
        """A pre-hook's new input reaches the tool; history keeps the model's original call."""
        client = ScriptedClient([calls(("echo", {"text": "original"})), "ok"])
        worker, lab = make_worker(client)

        def rewrite(ctx):
            ctx.call = dataclasses.replace(ctx.call, input_json='{"text": "rewritten"}')

        worker.add_pre_tool_call_hook(rewrite)
        await worker.run("go")
        assert lab.log == ["echo rewritten"]
        assert worker.history[1].tool_calls == (  # type: ignore[union-attr]
            ToolCall("call_0_0", "echo", '{"text": "original"}'),
        )
        assert results_of(worker.history) == [ToolResult("call_0_0", "rewritten", False)]
        assert_history_valid(worker.history)


class TestHandWrittenToolResults:
    @pytest.mark.anyio
    async def test_str_subclass_result_is_text(self):
        """A hand-written tool returning a str subclass (a StrEnum member) gives plain text."""
        import enum

        class Status(str, enum.Enum):
            OPEN = "open"

        class StatusTool:
            async def execute(self, input_json: str) -> str:
                return Status.OPEN

        client = ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("status")]), "ok"])
        worker = Worker(client)
        worker.register_tool(lambda: (ToolMeta(name="status"), StatusTool()))
        await worker.run("go")
        [result] = results_of(worker.history)
        assert result == ToolResult("call_0_0", "open", False)
        assert type(result.content) is str
