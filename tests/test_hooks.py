"""Tool-call hooks (``_hooks.py``) as a Worker runs them: order, contexts, decisions, errors."""

from __future__ import annotations

import dataclasses
import datetime
import math
import sys

import anyio
import pytest
from support import (
    Lab,
    assert_history_valid,
    broken_definition,
    calls,
    needs_counted_cancellations,
    results_of,
)

from llm_worker import (
    Abort,
    Continue,
    HookError,
    MediaPart,
    Pause,
    PostToolCallContext,
    Skip,
    SyntheticResult,
    TextPart,
    ToolCall,
    ToolCallContext,
    ToolResult,
    ToolReturn,
    Worker,
    WorkerAbortedError,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedClient

SKIPPED = "Tool call '{}' was skipped by the application; it did not run"
ABORTED = "Tool call '{}' did not run: the run was aborted ({})"
NOT_RUN = "Tool call '{}' did not run: the run stopped with an error"
CANCELLED = "Tool call '{}' was cancelled before it finished"


def make_worker(client: ScriptedClient) -> tuple[Worker, Lab]:
    lab = Lab()
    worker = Worker(client)
    worker.register_tools(tool_definitions(lab))
    return worker, lab


def three_echoes() -> ScriptedClient:
    return ScriptedClient(
        [
            calls(("echo", {"text": "a"}), ("echo", {"text": "b"}), ("echo", {"text": "c"})),
            "done",
        ]
    )


@tool_registry
class Relay:
    """Two tools where ``second`` must finish before ``first`` can."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.second_done = anyio.Event()

    @tool
    async def first(self) -> str:
        """Waits for second."""
        await self.second_done.wait()
        self.log.append("first finished")
        return "A"

    @tool
    async def second(self) -> str:
        """Finishes at once."""
        self.log.append("second finished")
        self.second_done.set()
        return "B"


class TestHookOrder:
    @pytest.mark.anyio
    async def test_hooks_run_in_call_order_when_tools_finish_out_of_order(self):
        """Pre- and post-hooks run in call order even when tool B finishes before tool A."""
        log: list[str] = []
        client = ScriptedClient([calls(("first", {}), ("second", {})), "done"])
        worker = Worker(client)
        worker.register_tools(tool_definitions(Relay(log)))
        worker.add_pre_tool_call_hook(lambda ctx: log.append(f"pre {ctx.call.name}"))
        worker.add_post_tool_call_hook(lambda ctx: log.append(f"post {ctx.call.name}"))
        with anyio.fail_after(5):
            await worker.run("go")
        assert log == [
            "pre first",
            "pre second",
            "second finished",
            "first finished",
            "post first",
            "post second",
        ]
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "A", False),
            ToolResult("call_0_1", "B", False),
        ]

    @pytest.mark.anyio
    async def test_hooks_run_in_registration_order(self):
        """Hooks of one stage run in the order they were added, for every call."""
        log: list[str] = []
        worker, _ = make_worker(three_echoes())
        for name in ("p1", "p2"):
            worker.add_pre_tool_call_hook(
                lambda ctx, name=name: log.append(f"{name} {ctx.call.id[-1]}")
            )
        for name in ("q1", "q2"):
            worker.add_post_tool_call_hook(
                lambda ctx, name=name: log.append(f"{name} {ctx.call.id[-1]}")
            )
        await worker.run("go")
        pre = ["p1 0", "p2 0", "p1 1", "p2 1", "p1 2", "p2 2"]
        post = ["q1 0", "q2 0", "q1 1", "q2 1", "q1 2", "q2 2"]
        assert log == [*pre, *post]

    @pytest.mark.anyio
    async def test_first_decision_stops_the_chain(self):
        """Once a pre-hook decides something other than Continue, later hooks are not asked."""
        log: list[str] = []
        worker, lab = make_worker(three_echoes())
        worker.add_pre_tool_call_hook(lambda ctx: Skip() if ctx.call.id == "call_0_1" else None)
        worker.add_pre_tool_call_hook(lambda ctx: log.append(ctx.call.id))
        await worker.run("go")
        assert log == ["call_0_0", "call_0_2"]
        assert lab.log == ["echo a", "echo c"]

    @pytest.mark.anyio
    async def test_hook_registration_in_both_states(self):
        """Hooks can be added to a Worker and to its LockedWorker; all of them keep running."""
        log: list[str] = []
        client = ScriptedClient(
            [calls(("echo", {"text": "1"})), "one", calls(("echo", {"text": "2"})), "two"]
        )
        worker, _ = make_worker(client)
        worker.add_pre_tool_call_hook(lambda ctx: log.append("worker pre"))
        locked = worker.lock()
        locked.add_pre_tool_call_hook(lambda ctx: log.append("locked pre"))
        locked.add_post_tool_call_hook(lambda ctx: log.append("locked post"))
        await locked.run("go")
        assert log == ["worker pre", "locked pre", "locked post"]
        log.clear()
        await locked.unlock().run("again")
        assert log == ["worker pre", "locked pre", "locked post"]

    def test_add_hook_returns_the_hook(self):
        """add_*_tool_call_hook returns its argument, so it works as a decorator."""
        worker, _ = make_worker(ScriptedClient())

        @worker.add_pre_tool_call_hook
        def pre(ctx):
            return None

        @worker.add_post_tool_call_hook
        async def post(ctx):
            return None

        assert callable(pre)
        assert callable(post)
        assert pre.__name__ == "pre"
        assert post.__name__ == "post"


class TestHookContexts:
    @pytest.mark.anyio
    async def test_pre_hook_sees_call_meta_and_tool(self):
        """A pre-hook sees the call, the ToolMeta and the tool instance (whose ctx is the app)."""
        seen: list[ToolCallContext] = []
        worker, lab = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))
        worker.add_pre_tool_call_hook(seen.append)
        await worker.run("go")
        [ctx] = seen
        assert ctx.call == ToolCall("call_0_0", "echo", '{"text": "x"}')
        assert ctx.meta == Lab.echo.meta()
        assert ctx.meta.name == "echo"
        assert ctx.meta.description == "Return the text."
        assert isinstance(ctx.tool, Lab.ToolEcho)
        assert ctx.tool.ctx is lab
        assert worker.tool_server_handle().get_tool("echo") == (ctx.meta, ctx.tool)

    @pytest.mark.anyio
    async def test_post_hook_sees_call_result_meta_and_tool(self):
        """A post-hook sees the call, the result, the ToolMeta and the tool instance."""
        seen: list[PostToolCallContext] = []
        worker, lab = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))
        worker.add_post_tool_call_hook(seen.append)
        await worker.run("go")
        [ctx] = seen
        assert isinstance(ctx, PostToolCallContext)
        assert ctx.call == ToolCall("call_0_0", "echo", '{"text": "x"}')
        assert ctx.result == ToolResult("call_0_0", "x", False)
        assert ctx.meta == Lab.echo.meta()
        assert ctx.tool.ctx is lab  # type: ignore[attr-defined]

    @pytest.mark.anyio
    async def test_hand_written_tool_instance(self):
        """For a hand-written Tool, ctx.tool is the instance its factory returned."""
        seen: list[ToolCallContext] = []
        worker, _ = make_worker(ScriptedClient([calls(("broken", {})), "ok"]))
        worker.register_tool(broken_definition)
        worker.add_pre_tool_call_hook(seen.append)
        await worker.run("go")
        assert seen[0].tool is worker.tool_server_handle().get_tool("broken")[1]  # type: ignore[index]
        assert seen[0].meta.name == "broken"

    @pytest.mark.anyio
    async def test_meta_and_tool_are_read_only(self):
        """ctx.meta and ctx.tool cannot be replaced by a hook; ctx.call can."""
        problems: list[str] = []

        def hook(ctx):
            for name in ("meta", "tool"):
                try:
                    setattr(ctx, name, None)
                except AttributeError:
                    problems.append(name)
            ctx.call = ctx.call  # allowed

        worker, _ = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))
        worker.add_pre_tool_call_hook(hook)
        await worker.run("go")
        assert problems == ["meta", "tool"]

    @pytest.mark.anyio
    async def test_post_hook_sees_the_rewritten_call(self):
        """After a pre-hook rewrote the call, the post-hook sees the rewritten call."""
        seen: list[ToolCall] = []
        worker, lab = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))

        def rewrite(ctx):
            ctx.call = dataclasses.replace(ctx.call, input_json='{"text": "y"}')

        worker.add_pre_tool_call_hook(rewrite)
        worker.add_post_tool_call_hook(lambda ctx: seen.append(ctx.call))
        await worker.run("go")
        assert seen == [ToolCall("call_0_0", "echo", '{"text": "y"}')]
        assert lab.log == ["echo y"]

    @pytest.mark.anyio
    async def test_a_pre_hook_cannot_change_the_call_id(self):
        """A pre-hook that changes ctx.call.id ends the run with HookError; nothing runs."""
        worker, lab = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))

        def rewrite(ctx):
            ctx.call = dataclasses.replace(ctx.call, id="made-up")

        worker.add_pre_tool_call_hook(rewrite)
        with pytest.raises(HookError) as caught:
            await worker.run("go")
        assert caught.value.problem == (
            "changed the call id from 'call_0_0' to 'made-up'; a hook may change a call's "
            "arguments, not its id"
        )
        assert lab.log == []
        assert results_of(worker.history) == [
            ToolResult(
                "call_0_0", "Tool call 'echo' did not run: the run stopped with an error", True
            )
        ]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_a_pre_hook_cannot_send_a_call_to_another_tool(self):
        """A pre-hook that changes ctx.call.name ends the run with HookError: the other tool
        never runs without its own hooks being asked, and no post-hook sees the wrong meta."""
        worker, lab = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))
        seen: list[str] = []

        def reroute(ctx):
            seen.append(ctx.meta.name)
            if ctx.call.name == "echo":
                ctx.call = dataclasses.replace(ctx.call, name="fail", input_json='{"why": "x"}')

        worker.add_pre_tool_call_hook(reroute)
        worker.add_post_tool_call_hook(lambda ctx: seen.append(f"post {ctx.meta.name}"))
        with pytest.raises(HookError) as caught:
            await worker.run("go")
        assert caught.value.problem == (
            "changed the tool of call 'call_0_0' from 'echo' to 'fail'; a hook may change a "
            "call's arguments, not which tool it calls (return SyntheticResult(...) or "
            "Skip(reason) instead)"
        )
        assert seen == ["echo"]
        assert lab.log == []
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_post_hook_cannot_change_the_result_id(self):
        """A result always answers the model's call id, even if a post-hook changed
        ctx.result.call_id (only content and is_error are the hook's to change)."""
        worker, _ = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))

        def rewrite(ctx):
            ctx.result = dataclasses.replace(ctx.result, call_id="made-up", content="edited")

        worker.add_post_tool_call_hook(rewrite)
        await worker.run("go")
        assert_history_valid(worker.history)
        assert results_of(worker.history) == [ToolResult("call_0_0", "edited", False)]

    @pytest.mark.anyio
    async def test_hooks_are_not_asked_about_unknown_tools(self):
        """A call to an unknown tool gets its not-found result without any hook being asked."""
        asked: list[str] = []
        worker, _ = make_worker(ScriptedClient([calls(("nope", {})), "ok"]))
        worker.add_pre_tool_call_hook(lambda ctx: asked.append(ctx.call.name))
        worker.add_post_tool_call_hook(lambda ctx: asked.append(ctx.call.name))
        await worker.run("go")
        assert asked == []
        assert results_of(worker.history) == [ToolResult("call_0_0", "Tool 'nope' not found", True)]


class TestDecisions:
    @pytest.mark.parametrize("decision", [None, Continue()], ids=["None", "Continue"])
    @pytest.mark.anyio
    async def test_none_and_continue_run_the_call(self, decision):
        """A hook returning None means Continue(): the call runs and the result is kept."""
        worker, lab = make_worker(three_echoes())
        worker.add_pre_tool_call_hook(lambda ctx: decision)
        worker.add_post_tool_call_hook(lambda ctx: decision)
        assert await worker.run("go") is WorkerResult.FINISHED
        assert lab.log == ["echo a", "echo b", "echo c"]
        assert [r.content for r in results_of(worker.history)] == ["a", "b", "c"]

    @pytest.mark.anyio
    async def test_sync_and_async_hooks(self):
        """Plain-def and async-def hooks both work, and their decisions count."""
        worker, lab = make_worker(three_echoes())

        def sync_pre(ctx):
            return Skip() if ctx.call.id == "call_0_0" else Continue()

        async def async_pre(ctx):
            await anyio.sleep(0)
            return Skip() if ctx.call.id == "call_0_1" else None

        def sync_post(ctx):
            ctx.result = dataclasses.replace(ctx.result, content=ctx.result.content + "!")

        async def async_post(ctx):
            await anyio.sleep(0)
            ctx.result = dataclasses.replace(ctx.result, content=ctx.result.content + "?")

        worker.add_pre_tool_call_hook(sync_pre)
        worker.add_pre_tool_call_hook(async_pre)
        worker.add_post_tool_call_hook(sync_post)
        worker.add_post_tool_call_hook(async_post)
        await worker.run("go")
        assert lab.log == ["echo c"]
        assert [r.content for r in results_of(worker.history)] == [
            SKIPPED.format("echo"),
            SKIPPED.format("echo"),
            "c!?",
        ]

    @pytest.mark.anyio
    async def test_skipped_call_gets_no_post_hook(self):
        """A skipped call gets its skipped result; post-hooks only see calls that ran."""
        post: list[str] = []
        worker, lab = make_worker(three_echoes())
        worker.add_pre_tool_call_hook(lambda ctx: Skip() if ctx.call.id == "call_0_1" else None)
        worker.add_post_tool_call_hook(lambda ctx: post.append(ctx.call.id))
        await worker.run("go")
        assert lab.log == ["echo a", "echo c"]
        assert post == ["call_0_0", "call_0_2"]
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "a", False),
            ToolResult("call_0_1", SKIPPED.format("echo"), True),
            ToolResult("call_0_2", "c", False),
        ]

    @pytest.mark.anyio
    async def test_post_hook_can_change_is_error(self):
        """A post-hook may turn an error result into a success and back."""
        client = ScriptedClient([calls(("fail", {"why": "x"}), ("echo", {"text": "y"})), "ok"])
        worker, _ = make_worker(client)

        def flip(ctx):
            ctx.result = dataclasses.replace(ctx.result, is_error=not ctx.result.is_error)

        worker.add_post_tool_call_hook(flip)
        await worker.run("go")
        assert client.requests[1].messages[-2:] == (
            ToolResult("call_0_0", "Execution failed: x", False),
            ToolResult("call_0_1", "y", True),
        )

    def test_decisions_are_values(self):
        """Decisions are frozen values compared by content."""
        assert Continue() == Continue()
        assert Skip() == Skip()
        assert Pause() == Pause()
        assert Abort("x") == Abort("x")
        assert Abort("x") != Abort("y")
        assert Abort("x").reason == "x"
        with pytest.raises(dataclasses.FrozenInstanceError):
            Abort("x").reason = "y"  # type: ignore[misc]


class TestAbort:
    @pytest.mark.anyio
    async def test_pre_hook_abort(self):
        """A pre-hook Abort(reason) ends the run with WorkerAbortedError; no tool runs and every
        call gets a result saying it was aborted."""
        client = three_echoes()
        worker, lab = make_worker(client)
        worker.add_pre_tool_call_hook(lambda ctx: Abort("not today"))
        with pytest.raises(WorkerAbortedError) as info:
            await worker.run("go")
        assert info.value.reason == "not today"
        assert str(info.value) == "Run aborted by a hook: not today"
        assert lab.log == []
        assert results_of(worker.history) == [
            ToolResult(f"call_0_{i}", ABORTED.format("echo", "not today"), True) for i in range(3)
        ]
        assert_history_valid(worker.history)
        assert len(client.requests) == 1

    @pytest.mark.anyio
    async def test_pre_hook_abort_on_a_later_call(self):
        """An abort on the second call gives it and every later call the aborted result."""
        worker, lab = make_worker(three_echoes())
        worker.add_pre_tool_call_hook(
            lambda ctx: Abort("stop") if ctx.call.id == "call_0_1" else None
        )
        with pytest.raises(WorkerAbortedError, match=r"^Run aborted by a hook: stop$"):
            await worker.run("go")
        assert "echo b" not in lab.log
        assert "echo c" not in lab.log
        assert_history_valid(worker.history)
        assert results_of(worker.history)[1:] == [
            ToolResult("call_0_1", ABORTED.format("echo", "stop"), True),
            ToolResult("call_0_2", ABORTED.format("echo", "stop"), True),
        ]

    @pytest.mark.anyio
    async def test_post_hook_abort(self):
        """A post-hook Abort(reason) ends the run with WorkerAbortedError; history stays valid."""
        client = three_echoes()
        worker, lab = make_worker(client)
        worker.add_post_tool_call_hook(lambda ctx: Abort("enough"))
        with pytest.raises(WorkerAbortedError) as info:
            await worker.run("go")
        assert info.value.reason == "enough"
        assert lab.log == ["echo a", "echo b", "echo c"]  # all ran before post-hooks
        assert_history_valid(worker.history)
        assert results_of(worker.history)[0] == ToolResult("call_0_0", "a", False)
        assert len(client.requests) == 1

    @pytest.mark.parametrize("how", ["abort", "raise", "cancel"])
    @pytest.mark.anyio
    async def test_results_not_seen_by_post_hooks_do_not_reach_history(self, how):
        """When the run stops in a post-hook (abort, error, cancel), results whose post-hooks
        never ran do not reach history: the model reads that the call ran and its result
        was withheld."""
        worker, _ = make_worker(three_echoes())
        post: list[str] = []
        in_hook = anyio.Event()

        async def redact(ctx):
            post.append(ctx.call.id)
            ctx.result = dataclasses.replace(ctx.result, content="[redacted]")
            if ctx.call.id == "call_0_0":
                if how == "raise":
                    raise RuntimeError("audit failed")
                if how == "cancel":
                    in_hook.set()
                    await anyio.sleep_forever()
                return Abort("leak")
            return None

        worker.add_post_tool_call_hook(redact)
        if how == "cancel":
            with anyio.fail_after(5):
                async with anyio.create_task_group() as group:
                    group.start_soon(worker.run, "go")
                    await in_hook.wait()
                    group.cancel_scope.cancel()
        else:
            with pytest.raises(WorkerAbortedError if how == "abort" else HookError):
                await worker.run("go")
        assert post == ["call_0_0"]
        assert_history_valid(worker.history)
        results = results_of(worker.history)
        # "b" and "c" were never seen by the redacting hook: they must not go to the model
        why = {
            "abort": "the run was aborted (leak)",
            "raise": "the run stopped with an error",
            "cancel": "the run was cancelled",
        }[how]
        closing = f"Tool call 'echo' ran, but its result was withheld: {why}"
        assert results[1:] == [
            ToolResult("call_0_1", closing, True),
            ToolResult("call_0_2", closing, True),
        ]
        # the aborting hook saw call 0 through; a hook that raised or was cancelled did not
        first = ToolResult("call_0_0", "[redacted]", False) if how == "abort" else None
        assert results[0] == (first or ToolResult("call_0_0", closing, True))

    @pytest.mark.anyio
    async def test_worker_usable_after_abort(self):
        """After an abort the next run() sends a valid history and finishes."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "fine"])
        worker, _ = make_worker(client)
        decisions = iter([Abort("once"), None])
        worker.add_pre_tool_call_hook(lambda ctx: next(decisions))
        with pytest.raises(WorkerAbortedError):
            await worker.run("go")
        assert await worker.run("again") is WorkerResult.FINISHED
        assert_history_valid(client.requests[-1].messages)


class _HookOwnBaseException(BaseException):
    pass


class TestHookErrors:
    @pytest.mark.parametrize("where", ["pre", "post", "approval"])
    @pytest.mark.parametrize(
        "raised",
        [pytest.param("stray-cancel", marks=needs_counted_cancellations), "own-base-exception"],
    )
    @pytest.mark.parametrize("anyio_backend", ["asyncio"])
    @pytest.mark.anyio
    async def test_a_cancellation_nothing_asked_for_is_the_hooks_failure(self, where, raised):
        """A hook awaiting a future someone else cancelled raises CancelledError while
        nothing cancels the run (asyncio), or raises a BaseException of its own: a
        HookError, as for any failure (it escaped run() as a cancellation nobody made)."""
        import asyncio

        async def hook(ctx):
            if raised == "own-base-exception":
                raise _HookOwnBaseException("mine")
            cancelled = asyncio.get_running_loop().create_future()
            cancelled.cancel()
            await cancelled

        lab = Lab()
        worker = Worker(ScriptedClient([calls(("echo", {"text": "a"})), "done"]))
        worker.register_tools(
            tool_definitions(lab), requires_approval=hook if where == "approval" else None
        )
        if where == "pre":
            worker.add_pre_tool_call_hook(hook)
        elif where == "post":
            worker.add_post_tool_call_hook(hook)
        with anyio.fail_after(5), pytest.raises(HookError) as info:
            await worker.run("go")
        kind = "CancelledError" if raised == "stray-cancel" else "_HookOwnBaseException"
        assert f"failed: {kind}" in str(info.value)
        if sys.version_info >= (3, 11):  # Task.cancelling() is new in 3.11
            assert asyncio.current_task().cancelling() == 0
        assert_history_valid(worker.history)
        assert not worker.is_paused

    @pytest.mark.anyio
    async def test_pre_hook_raising(self):
        """A raising pre-hook ends the run with HookError naming it, chained to the exception;
        no tool runs and history stays valid."""
        worker, lab = make_worker(three_echoes())

        def picky(ctx):
            if ctx.call.id == "call_0_1":
                raise ValueError("no b")

        worker.add_pre_tool_call_hook(picky)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        error = info.value
        assert error.hook == picky.__qualname__
        assert error.stage == "pre_tool_call"
        assert str(error) == f"pre_tool_call hook {picky.__qualname__} failed: ValueError: no b"
        assert isinstance(error.__cause__, ValueError)
        assert str(error.__cause__) == "no b"
        assert lab.log == []
        assert results_of(worker.history) == [
            ToolResult(f"call_0_{i}", NOT_RUN.format("echo"), True) for i in range(3)
        ]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_async_post_hook_raising(self):
        """A raising async post-hook ends the run with HookError; history stays valid."""
        worker, lab = make_worker(three_echoes())

        async def audit(ctx):
            raise KeyError("audit log")

        worker.add_post_tool_call_hook(audit)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert str(info.value) == (
            f"post_tool_call hook {audit.__qualname__} failed: KeyError: 'audit log'"
        )
        assert isinstance(info.value.__cause__, KeyError)
        assert info.value.stage == "post_tool_call"
        assert lab.log == ["echo a", "echo b", "echo c"]
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_post_hook_returning_skip(self):
        """A post-hook may not return Skip(): HookError says what it may return."""
        worker, _ = make_worker(three_echoes())

        def wrong(ctx):
            return Skip()

        worker.add_post_tool_call_hook(wrong)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert str(info.value) == (
            f"post_tool_call hook {wrong.__qualname__} failed: returned Skip(reason=None); "
            "expected one of Continue(), Abort() or None"
        )
        assert info.value.__cause__ is None
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_pre_hook_returning_nonsense(self):
        """A pre-hook returning something that is not a decision raises HookError."""
        worker, lab = make_worker(three_echoes())

        async def wrong(ctx):
            return True

        worker.add_pre_tool_call_hook(wrong)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert str(info.value) == (
            f"pre_tool_call hook {wrong.__qualname__} failed: returned True; "
            "expected one of Continue(), Skip(), Abort(), Pause(), SyntheticResult() or None"
        )
        assert lab.log == []
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_pre_hook_setting_call_to_a_non_call(self):
        """A pre-hook that sets ctx.call to something that is not a ToolCall raises HookError."""
        worker, lab = make_worker(three_echoes())

        def wrong(ctx):
            ctx.call = '{"text": "x"}'

        worker.add_pre_tool_call_hook(wrong)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert str(info.value) == (
            f"pre_tool_call hook {wrong.__qualname__} failed: "
            'set ctx.call to \'{"text": "x"}\'; it must be a ToolCall of strings'
        )
        assert lab.log == []
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_pre_hook_setting_non_str_input_json(self):
        """A pre-hook that puts a dict (not JSON text) into input_json raises HookError."""
        worker, lab = make_worker(three_echoes())

        def wrong(ctx):
            ctx.call = dataclasses.replace(ctx.call, input_json={"text": "x"})

        worker.add_pre_tool_call_hook(wrong)
        with pytest.raises(HookError, match=r"it must be a ToolCall of strings$"):
            await worker.run("go")
        assert lab.log == []
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_post_hook_setting_result_to_a_non_result(self):
        """A post-hook that sets ctx.result to something that is not a ToolResult raises
        HookError."""
        worker, _ = make_worker(three_echoes())

        def wrong(ctx):
            ctx.result = "just text"

        worker.add_post_tool_call_hook(wrong)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert str(info.value) == (
            f"post_tool_call hook {wrong.__qualname__} failed: "
            "set ctx.result to 'just text', not a ToolResult with text content"
        )
        assert_history_valid(worker.history)
        assert "just text" not in worker.history

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("metadata", "why"),
        [
            ({"score": math.nan}, "Out of range float values are not JSON compliant"),
            ({"at": datetime.date(2026, 12, 2)}, "Object of type date is not JSON serializable"),
        ],
    )
    async def test_post_hook_giving_metadata_no_state_can_keep(self, metadata, why):
        """A post-hook's result whose metadata is not JSON is the hook's error: kept, every
        later worker.state.to_json() of the conversation failed."""
        worker, _ = make_worker(three_echoes())

        def annotate(ctx):
            ctx.result = dataclasses.replace(ctx.result, metadata=metadata)

        worker.add_post_tool_call_hook(annotate)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert str(info.value) == (
            f"post_tool_call hook {annotate.__qualname__} failed: "
            f"set ctx.result's metadata to what is not JSON ({why})"
        )
        assert_history_valid(worker.history)
        worker.state.to_json()  # the conversation still saves

    @pytest.mark.anyio
    async def test_hook_without_qualname_is_named_by_repr(self):
        """A callable object without __qualname__ is named by its repr."""

        class Gate:
            def __call__(self, ctx):
                raise RuntimeError("closed")

            def __repr__(self):
                return "<Gate>"

        worker, _ = make_worker(three_echoes())
        worker.add_pre_tool_call_hook(Gate())
        with pytest.raises(
            HookError, match=r"^pre_tool_call hook <Gate> failed: RuntimeError: closed$"
        ):
            await worker.run("go")

    @pytest.mark.anyio
    async def test_worker_usable_after_hook_error(self):
        """After a HookError the next run() sends a valid history and finishes."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "fine"])
        worker, _ = make_worker(client)
        fail = [True]

        def flaky(ctx):
            if fail.pop():
                raise ValueError("flaky")

        worker.add_pre_tool_call_hook(flaky)
        with pytest.raises(HookError):
            await worker.run("go")
        assert await worker.run("again") is WorkerResult.FINISHED
        assert_history_valid(client.requests[-1].messages)


@tool_registry
class Charts:
    @tool
    async def chart(self) -> ToolReturn:
        """A chart with a caption."""
        return ToolReturn([TextPart("token sk-SECRET"), MediaPart("image/png", data=b"png")])


def _redact(ctx: PostToolCallContext) -> None:
    ctx.result = dataclasses.replace(
        ctx.result, content=ctx.result.content.replace("sk-SECRET", "***")
    )


class TestRichResults:
    """A rich result's ``content`` is the text of its ``parts`` (which a client sends):
    whichever of the two a post-hook changes, the other follows."""

    async def _run(self, hook) -> tuple[Worker, ScriptedClient]:
        client = ScriptedClient([calls(("chart", {})), "done"])
        worker = Worker(client)
        worker.register_tools(tool_definitions(Charts()))
        worker.add_post_tool_call_hook(hook)
        with anyio.fail_after(5):
            await worker.run("go")
        return worker, client

    @pytest.mark.anyio
    async def test_a_redacted_content_redacts_the_parts(self):
        worker, client = await self._run(_redact)
        (result,) = results_of(worker.history)
        assert result.content == "token ***"
        assert result.parts == (TextPart("token ***"), MediaPart("image/png", data=b"png"))
        sent = client.requests[-1].messages[-1]
        assert sent == result  # what the client is given, and so the provider
        assert "sk-SECRET" not in worker.state.to_json()

    @pytest.mark.anyio
    async def test_rewritten_parts_rewrite_the_content(self):
        def caption(ctx: PostToolCallContext) -> None:
            ctx.result = dataclasses.replace(
                ctx.result, parts=(TextPart("a chart"), *ctx.result.parts[1:])
            )

        worker, _ = await self._run(caption)
        (result,) = results_of(worker.history)
        assert result.content == "a chart"
        assert result.parts == (TextPart("a chart"), MediaPart("image/png", data=b"png"))

    @pytest.mark.anyio
    async def test_content_and_parts_that_disagree_are_the_hooks_error(self):
        def both(ctx: PostToolCallContext) -> None:
            ctx.result = dataclasses.replace(ctx.result, content="one", parts=(TextPart("two"),))

        with pytest.raises(HookError, match="content is not the text of the parts"):
            await self._run(both)


class TestDecisionValues:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("make", "problem"),
        [
            (lambda: SyntheticResult(123), "SyntheticResult content must be a str, not int"),
            (
                lambda: SyntheticResult("x", "no"),
                "SyntheticResult is_error must be a bool, not str",
            ),
            (lambda: Pause(["x"]), "Pause reason must be a str or None, not list"),
            (lambda: Skip(7), "Skip reason must be a str or None, not int"),
            (lambda: Abort(object()), "Abort reason must be a str, not object"),
        ],
        ids=["synthetic-content", "synthetic-is-error", "pause", "skip", "abort"],
    )
    async def test_a_decision_that_is_not_text_is_a_hook_error(self, make, problem):
        """Made where the hook makes it: a number as content raised a bare AttributeError
        past the hook; a list as a Pause reason made a state that did not load; an object
        as an Abort reason put its address in the model's text."""
        worker, lab = make_worker(ScriptedClient([calls(("echo", {"text": "x"})), "ok"]))
        worker.add_pre_tool_call_hook(lambda ctx: make())
        with pytest.raises(HookError) as caught:
            await worker.run("go")
        assert caught.value.problem == f"TypeError: {problem}"
        assert lab.log == []
        assert_history_valid(worker.history)

    def test_a_deny_reason_is_text(self):
        from llm_worker import Deny

        with pytest.raises(TypeError, match="Deny reason must be a str, not int"):
            Deny(3)  # type: ignore[arg-type]
