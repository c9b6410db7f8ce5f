"""Approvals (``_approvals.py`` and the Worker's pause/resume): calls held for a human's
decision, ``worker.pending``, and ``resume(decisions)``.

The rules under test: a response with calls that need a decision pauses the run once; no
call of that response runs until every held call is decided; pre-hooks and approval
policies are asked once per call; ``resume`` takes one decision per call id.
"""

from __future__ import annotations

import dataclasses
import math

import anyio
import anyio.lowlevel
import pytest
from support import Lab, assert_history_valid, calls, collect, make_worker, results_of

from llm_worker import (
    ApprovalRequested,
    Approve,
    Deny,
    HookError,
    Pause,
    PendingCall,
    RunPaused,
    Skip,
    SyntheticResult,
    ToolCall,
    ToolCallFinished,
    ToolCallOutcome,
    ToolCallRunning,
    ToolMeta,
    ToolResult,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool_definitions,
)
from llm_worker.testing import ScriptedClient


class _CountingObserver:
    """An ``Instrumentation`` that counts the runs it saw start and end."""

    def __init__(self) -> None:
        self.started = self.ended = 0

    def run(self, **_: object) -> _CountingObserver:
        self.started += 1
        return self

    def request(self, request: object, number: int) -> _CountingObserver:
        return self

    def tool_call(self, call: object, meta: object) -> _CountingObserver:
        return self

    def activate(self) -> None:
        return None

    def decided(self, call: object, outcome: str, reason: str | None) -> None:
        return None

    def link(self) -> None:
        return None

    def end(self, *outcome: object) -> None:
        if len(outcome) == 3:  # the run's end (a span's end has two arguments)
            self.ended += 1


DENIED = "Tool call '{name}' was denied; it did not run: {reason}"


class Vault:
    """A hand-written tool that asks for approval of every call (a class attribute)."""

    requires_approval = True

    def __init__(self) -> None:
        self.opened: list[str] = []

    async def execute(self, input_json: str) -> str:
        self.opened.append(input_json)
        return f"opened {input_json}"


VAULT = ToolMeta(name="vault", description="Open the vault.")


def with_vault(client: ScriptedClient) -> tuple[Worker, Lab, Vault]:
    worker, lab = make_worker(client)
    vault = Vault()
    worker.register_tool(lambda: (VAULT, vault))
    return worker, lab, vault


class TestOnePausePerResponse:
    @pytest.mark.anyio
    async def test_two_calls_needing_approval_pause_once(self):
        """Two parallel calls that need approval pause the run once, both pending, and
        nothing of the response runs while it waits."""
        client = ScriptedClient(
            [calls(("vault", {"door": 1}), ("echo", {"text": "a"}), ("vault", {"door": 2})), "ok"]
        )
        worker, lab, vault = with_vault(client)
        assert await worker.run("open both") is WorkerResult.PAUSED
        assert worker.is_paused
        assert [p.call.id for p in worker.pending] == ["call_0_0", "call_0_2"]
        assert worker.pending[0] == PendingCall(
            ToolCall("call_0_0", "vault", '{"door": 1}'), VAULT, "requires approval"
        )
        assert vault.opened == []
        assert lab.log == []  # the call needing no approval waits too
        assert len(client.requests) == 1

        result = await worker.resume({"call_0_0": Approve(), "call_0_2": Approve()})
        assert result is WorkerResult.FINISHED
        assert vault.opened == ['{"door": 1}', '{"door": 2}']
        assert lab.log == ["echo a"]
        assert [r.call_id for r in results_of(worker.history)] == [
            "call_0_0",
            "call_0_1",
            "call_0_2",
        ]
        assert worker.pending == ()
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_hooks_are_asked_once_per_call(self):
        """Pre-hooks run once per call, before the pause; resume does not ask them again."""
        client = ScriptedClient([calls(("vault", {}), ("echo", {"text": "a"})), "ok"])
        worker, _, _ = with_vault(client)
        asked: list[str] = []
        worker.add_pre_tool_call_hook(lambda ctx: asked.append(ctx.call.id))
        await worker.run("go")
        assert asked == ["call_0_0", "call_0_1"]
        await worker.resume(Approve())
        assert asked == ["call_0_0", "call_0_1"]

    @pytest.mark.anyio
    async def test_a_pause_from_a_hook_is_decided_like_an_approval(self):
        """Pause(reason) holds the call with that reason; every other call is still asked."""
        client = ScriptedClient(
            [calls(("echo", {"text": "a"}), ("echo", {"text": "b"}), ("echo", {"text": "c"})), "ok"]
        )
        worker, lab = make_worker(client)
        asked: list[str] = []

        def gate(ctx):
            asked.append(ctx.call.id)
            return Pause("needs a second look") if ctx.call.id == "call_0_1" else None

        worker.add_pre_tool_call_hook(gate)
        assert await worker.run("go") is WorkerResult.PAUSED
        assert asked == ["call_0_0", "call_0_1", "call_0_2"]
        assert [(p.call.id, p.reason) for p in worker.pending] == [
            ("call_0_1", "needs a second look")
        ]
        assert await worker.resume({"call_0_1": Approve()}) is WorkerResult.FINISHED
        assert asked == ["call_0_0", "call_0_1", "call_0_2"]
        assert lab.count == {"echo a": 1, "echo b": 1, "echo c": 1}
        assert [r.content for r in results_of(worker.history)] == ["a", "b", "c"]

    @pytest.mark.anyio
    async def test_a_call_skipped_or_unknown_needs_no_decision(self):
        """Only held calls are pending: a skipped call and an unknown tool have their results."""
        client = ScriptedClient(
            [calls(("nope", {}), ("echo", {"text": "skip me"}), ("vault", {})), "ok"]
        )
        worker, _, vault = with_vault(client)
        worker.add_pre_tool_call_hook(
            lambda ctx: Skip("not today") if ctx.call.name == "echo" else None
        )
        await worker.run("go")
        assert [p.call.id for p in worker.pending] == ["call_0_2"]
        await worker.resume(Deny("no"))
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "Tool 'nope' not found", True),
            ToolResult(
                "call_0_1",
                "Tool call 'echo' was skipped by the application; it did not run: not today",
                True,
            ),
            ToolResult("call_0_2", DENIED.format(name="vault", reason="no"), True),
        ]
        assert vault.opened == []


class TestDecisions:
    @pytest.mark.anyio
    async def test_deny_with_a_reason_reaches_the_model(self):
        """A denied call does not run; the next request carries the reason as its result."""
        client = ScriptedClient([calls(("vault", {}), ("vault", {"door": 2})), "understood"])
        worker, _, vault = with_vault(client)
        await worker.run("open")
        await worker.resume({"call_0_0": Approve(), "call_0_1": Deny("the second door stays shut")})
        assert vault.opened == ["{}"]
        sent = client.requests[1].messages
        assert sent[-1] == ToolResult(
            "call_0_1", DENIED.format(name="vault", reason="the second door stays shut"), True
        )
        assert sent[-2] == ToolResult("call_0_0", "opened {}", False)

    @pytest.mark.parametrize(
        "arguments", [{"door": 7}, '{"door": 7}'], ids=["mapping", "json-text"]
    )
    @pytest.mark.anyio
    async def test_approve_with_changed_arguments(self, arguments):
        """Approve(arguments=...) runs the call with those arguments; history keeps the
        model's call."""
        client = ScriptedClient([calls(("vault", {"door": 1})), "ok"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        await worker.resume({"call_0_0": Approve(arguments)})
        assert vault.opened == ['{"door": 7}']
        assert worker.history[1].tool_calls == (ToolCall("call_0_0", "vault", '{"door": 1}'),)

    @pytest.mark.anyio
    async def test_changed_arguments_are_validated_by_the_tool(self):
        """Arguments a human changed are checked like the model's: bad ones are an error
        result, not a crash."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "ok"])
        worker, lab = make_worker(client)
        worker.add_pre_tool_call_hook(lambda ctx: Pause())
        await worker.run("go")
        await worker.resume(Approve({"text": 5}))
        [result] = results_of(worker.history)
        assert result.is_error
        assert result.content.startswith("Invalid argument: 'text': Input should be a valid string")
        assert lab.log == []

    @pytest.mark.anyio
    async def test_one_decision_applies_to_every_pending_call(self):
        """resume(Deny(reason)) denies every pending call."""
        client = ScriptedClient([calls(("vault", {}), ("vault", {"door": 2})), "ok"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        await worker.resume(Deny("closed for the day"))
        assert vault.opened == []
        assert [r.content for r in results_of(worker.history)] == [
            DENIED.format(name="vault", reason="closed for the day")
        ] * 2

    @pytest.mark.anyio
    async def test_every_pending_call_needs_a_decision(self):
        """resume() without a decision for each pending call raises WorkerStateError and
        changes nothing; the run stays paused."""
        client = ScriptedClient([calls(("vault", {}), ("vault", {"door": 2})), "ok"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        before = worker.history
        with pytest.raises(WorkerStateError) as info:
            await worker.resume()
        assert str(info.value) == (
            "resume() needs a decision for each pending call: 'call_0_0', 'call_0_1' "
            "(pass {call_id: Approve() or Deny(reason)}, or one decision for all)"
        )
        with pytest.raises(WorkerStateError) as info:
            await worker.resume({"call_0_0": Approve()})
        assert str(info.value) == (
            "resume() needs a decision for each pending call; missing: 'call_0_1'"
        )
        with pytest.raises(WorkerStateError) as info:
            await worker.resume({"call_0_0": Approve(), "call_0_1": Approve(), "x": Deny("?")})
        assert str(info.value) == (
            "resume() got decisions for calls that are not pending: 'x' "
            "(pending: 'call_0_0', 'call_0_1')"
        )
        with pytest.raises(TypeError, match=r"call 'call_0_0' must be Approve\(\) or Deny"):
            await worker.resume({"call_0_0": True, "call_0_1": Approve()})  # type: ignore[dict-item]
        assert worker.is_paused
        assert worker.history == before
        assert vault.opened == []
        assert await worker.resume(Approve()) is WorkerResult.FINISHED

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("arguments", "problem"),
        [
            ({"door": dataclasses}, "Object of type module is not JSON serializable"),
            ({"door": float("nan")}, "Out of range float values are not JSON compliant"),
            (["door"], "list is not a mapping of names to values"),
            (["ab"], "list is not a mapping of names to values"),  # dict() made {"a": "b"}
            ('["door"]', "the text is JSON, but not an object of arguments"),
            ("door", "Expecting value"),
            ('{"door": NaN}', "NaN is not JSON"),  # json.loads reads them; JSON has none
            ('{"door": [-Infinity]}', "-Infinity is not JSON"),
            ('{"door": 1e999}', "1e999 is out of range for a JSON number"),
        ],
        ids=[
            "not-json",
            "nan",
            "not-a-mapping",
            "pairs",
            "text-not-an-object",
            "text-not-json",
            "text-nan",
            "text-infinity",
            "text-out-of-range",
        ],
    )
    async def test_arguments_that_cannot_be_sent_are_refused_and_change_nothing(
        self, arguments, problem
    ):
        """An Approve whose arguments are not a JSON object raises a TypeError naming the
        call, before anything changes: the run stays paused, its calls still pending."""
        client = ScriptedClient([calls(("vault", {}), ("vault", {"door": 2})), "ok"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        pending, before = worker.pending, worker.history
        decisions = {"call_0_0": Deny("no"), "call_0_1": Approve(arguments)}
        with pytest.raises(TypeError) as info:
            await worker.resume(decisions)
        assert str(info.value).startswith(  # (newer Pythons add to json's own words)
            f"the arguments Approve() gives call 'call_0_1' cannot be sent as JSON: {problem}"
        )
        assert worker.is_paused
        assert worker.pending == pending
        assert worker.history == before
        assert worker.state.is_paused  # and it can still be saved
        assert vault.opened == []
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
        assert vault.opened == ["{}", '{"door": 2}']

    @pytest.mark.anyio
    @pytest.mark.parametrize("arguments", ["[1]", {"door": math.nan}])
    async def test_one_approve_for_all_is_checked_when_the_resume_is_made(self, arguments):
        """One Approve for every call is checked as a mapping of them is: at once, when
        the resume stream is made, so no run begins (an observer sees none start) and
        the pause stays as it was."""
        observer = _CountingObserver()
        worker = Worker(ScriptedClient([calls(("vault", {})), "ok"]), instrumentation=observer)
        vault = Vault()
        worker.register_tool(lambda: (VAULT, vault))
        await worker.run("go")
        assert observer.started == observer.ended == 1
        pending = worker.pending
        with pytest.raises(TypeError, match=r"^the arguments Approve\(\) gives call 'call_0_0'"):
            worker.resume_stream(Approve(arguments))
        with pytest.raises(TypeError, match=r"^the arguments Approve\(\) gives call 'call_0_0'"):
            await worker.resume(Approve(arguments))
        assert observer.started == observer.ended == 1
        assert worker.is_paused
        assert worker.pending == pending
        with anyio.fail_after(10):
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
        assert observer.started == observer.ended == 2
        assert vault.opened == ["{}"]

    @pytest.mark.anyio
    async def test_resume_when_not_paused_is_refused(self):
        """resume() without a pause raises WorkerStateError."""
        worker, _ = make_worker(ScriptedClient(["hi"]))
        with pytest.raises(
            WorkerStateError, match=r"^Nothing to resume: the worker is not paused$"
        ):
            await worker.resume(Approve())
        await worker.run("x")
        with pytest.raises(WorkerStateError, match=r"^Nothing to resume"):
            await worker.resume()

    @pytest.mark.anyio
    async def test_a_paused_worker_refuses_run_and_edits(self):
        """run() and set_history() on a paused worker raise WorkerStateError; the pause survives."""
        client = ScriptedClient([calls(("vault", {})), "done"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        with pytest.raises(WorkerStateError) as info:
            await worker.run("other")
        assert str(info.value) == (
            "Cannot call run(): the worker is paused with tool calls waiting for decisions "
            "(worker.pending); call resume(decisions) first"
        )
        with pytest.raises(WorkerStateError, match=r"^Cannot call set_history\(\): the worker"):
            worker.set_history([])
        assert worker.is_paused
        assert await worker.resume(Approve()) is WorkerResult.FINISHED
        assert UserMessage("other") not in worker.history
        assert vault.opened == ["{}"]

    @pytest.mark.anyio
    async def test_a_pause_survives_lock(self):
        """A run paused on a Worker is resumed by its LockedWorker."""
        client = ScriptedClient([calls(("vault", {})), "done"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        locked = worker.lock()
        assert locked.is_paused
        assert [p.call.id for p in locked.pending] == ["call_0_0"]
        assert await locked.resume(Approve()) is WorkerResult.FINISHED
        assert vault.opened == ["{}"]
        assert_history_valid(locked.history)


class TestApprovalPolicies:
    @pytest.mark.anyio
    async def test_a_policy_decides_per_call(self):
        """A requires_approval function sees each call's context and holds only those it
        says need approval."""
        client = ScriptedClient(
            [calls(("echo", {"text": "harmless"}), ("echo", {"text": "rm -rf"})), "ok"]
        )
        lab = Lab()
        seen: list[tuple[str, str]] = []

        def dangerous(ctx):
            seen.append((ctx.meta.name, ctx.call.id))
            return "rm -rf" in ctx.call.input_json

        worker = Worker(client)
        worker.register_tools(tool_definitions(lab), requires_approval=dangerous)
        await worker.run("go")
        assert seen == [("echo", "call_0_0"), ("echo", "call_0_1")]
        assert [p.call.id for p in worker.pending] == ["call_0_1"]
        await worker.resume(Deny("not that"))
        assert lab.log == ["echo harmless"]

    @pytest.mark.anyio
    async def test_an_async_policy_sees_the_runs_deps(self):
        """A policy may be async, and reads the run's deps through ctx.deps."""
        client = ScriptedClient(
            [calls(("echo", {"text": "a"})), "ok", calls(("echo", {"text": "b"})), "ok"]
        )
        lab = Lab()
        worker = Worker(client)

        async def only_for_guests(ctx):
            await anyio.lowlevel.checkpoint()
            return ctx.deps == "guest"

        worker.register_tools(tool_definitions(lab), requires_approval=only_for_guests)
        assert await worker.run("go", deps="admin") is WorkerResult.FINISHED
        assert await worker.run("go", deps="guest") is WorkerResult.PAUSED

    @pytest.mark.anyio
    async def test_a_failing_policy_is_a_hook_error(self):
        """A policy that raises ends the run with HookError naming it; nothing runs."""
        client = ScriptedClient([calls(("vault", {})), "ok"])
        vault = Vault()

        def broken(ctx):
            raise KeyError("user")

        worker = Worker(client)
        worker.register_tool(lambda: (VAULT, vault), requires_approval=broken)
        with pytest.raises(HookError) as info:
            await worker.run("go")
        assert info.value.stage == "requires_approval"
        assert info.value.problem == "KeyError: 'user'"
        assert vault.opened == []
        assert_history_valid(worker.history)

    def test_registration_checks_the_policy(self):
        """A requires_approval that is neither a bool nor a function is refused at once."""
        worker, _ = make_worker(ScriptedClient())
        with pytest.raises(TypeError, match=r"tool 'vault': requires_approval must be True"):
            worker.register_tool(lambda: (VAULT, Vault()), requires_approval="yes")  # type: ignore[arg-type]

    @pytest.mark.anyio
    async def test_registration_overrides_the_tools_own_policy(self):
        """register_tool(..., requires_approval=False) runs a tool that asks for approval."""
        client = ScriptedClient([calls(("vault", {})), "ok"])
        worker, _ = make_worker(client)
        vault = Vault()
        worker.register_tool(lambda: (VAULT, vault), requires_approval=False)
        assert await worker.run("go") is WorkerResult.FINISHED
        assert vault.opened == ["{}"]


class TestSyntheticResults:
    @pytest.mark.anyio
    async def test_a_hook_can_answer_a_call_itself(self):
        """SyntheticResult(content) is the call's result; the tool and post-hooks do not run."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "ok"])
        worker, lab = make_worker(client)
        post: list[str] = []
        worker.add_pre_tool_call_hook(lambda ctx: SyntheticResult("cached: a"))
        worker.add_post_tool_call_hook(lambda ctx: post.append(ctx.call.id))
        events = await collect(worker.run_stream("go"))
        assert results_of(worker.history) == [ToolResult("call_0_0", "cached: a", False)]
        assert lab.log == []
        assert post == []
        finished = [e for e in events if isinstance(e, ToolCallFinished)]
        assert [e.outcome for e in finished] == [ToolCallOutcome.ANSWERED]

    @pytest.mark.anyio
    async def test_a_synthetic_error(self):
        """SyntheticResult(content, is_error=True) tells the model the call failed."""
        client = ScriptedClient([calls(("echo", {"text": "a"})), "ok"])
        worker, _ = make_worker(client)
        worker.add_pre_tool_call_hook(lambda ctx: SyntheticResult("quota exceeded", True))
        await worker.run("go")
        assert results_of(worker.history) == [ToolResult("call_0_0", "quota exceeded", True)]


class TestApprovalEvents:
    @pytest.mark.anyio
    async def test_pause_and_resume_as_events(self):
        """The stream shows one ApprovalRequested per held call, then RunPaused; resuming
        shows the denied call's result, then the approved call running and finishing."""
        client = ScriptedClient([calls(("vault", {}), ("vault", {"door": 2})), "ok"])
        worker, _, _ = with_vault(client)
        events = await collect(worker.run_stream("go"))
        requested = [e for e in events if isinstance(e, ApprovalRequested)]
        assert [e.pending.call.id for e in requested] == ["call_0_0", "call_0_1"]
        assert isinstance(events[-1], RunPaused)
        assert events[-1].pending == worker.pending
        assert not any(isinstance(e, ToolCallRunning) for e in events)

        events = await collect(
            worker.resume_stream({"call_0_0": Deny("no"), "call_0_1": Approve()})
        )
        steps = [
            (type(e).__name__, getattr(e, "outcome", None))
            for e in events
            if isinstance(e, (ToolCallFinished, ToolCallRunning))
        ]
        assert steps == [
            ("ToolCallFinished", ToolCallOutcome.DENIED),
            ("ToolCallRunning", None),
            ("ToolCallFinished", ToolCallOutcome.RAN),
        ]

    @pytest.mark.anyio
    async def test_leaving_a_resume_stream_unread_cancels_the_resumed_calls(self):
        """A resume stream left before it is read ends the run: the approved calls did
        not run and get the cancelled result; the history is valid."""
        client = ScriptedClient([calls(("vault", {})), "ok", "next"])
        worker, _, vault = with_vault(client)
        await worker.run("go")
        async with worker.resume_stream(Approve()):
            pass
        assert vault.opened == []
        assert not worker.is_paused
        assert results_of(worker.history) == [
            ToolResult("call_0_0", "Tool call 'vault' was cancelled before it finished", True)
        ]
        assert_history_valid(worker.history)
        assert await worker.retry() is WorkerResult.FINISHED


def test_decisions_are_frozen_values():
    """Approve and Deny are frozen, comparable values."""
    assert Approve() == Approve(None)
    assert Deny("x") == Deny("x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        Deny("x").reason = "y"  # type: ignore[misc]
    assert Approve({"a": 1}).input_json(ToolCall("c", "t", "{}")) == '{"a": 1}'
    assert Approve().input_json(ToolCall("c", "t", '{"b": 2}')) == '{"b": 2}'


class TestDeclaredPolicies:
    @pytest.mark.anyio
    async def test_tool_options_declare_approval_and_sequential(self):
        """@tool(requires_approval=...) and @tool(sequential=True) are what a Worker reads;
        a policy function stays a function of the call's context."""
        from llm_worker import tool, tool_registry

        @tool_registry
        class Ops:
            @tool(requires_approval=True)
            async def drop(self, table: str) -> str:
                """Drop a table."""
                return f"dropped {table}"

            @tool(requires_approval=lambda ctx: "prod" in ctx.call.input_json, sequential=True)
            async def migrate(self, target: str) -> str:
                """Migrate a database."""
                return f"migrated {target}"

            @tool
            async def status(self) -> str:
                """Say how things are."""
                return "fine"

        client = ScriptedClient(
            [
                calls(
                    ("drop", {"table": "t"}),
                    ("migrate", {"target": "dev"}),
                    ("migrate", {"target": "prod"}),
                    ("status", {}),
                ),
                "ok",
            ]
        )
        worker = Worker(client)
        worker.register_tools(tool_definitions(Ops()))
        await worker.run("go")
        assert [p.call.id for p in worker.pending] == ["call_0_0", "call_0_2"]
        entry = worker.tool_server_handle().get_tool("migrate")
        assert entry is not None
        assert entry[1].sequential is True  # type: ignore[attr-defined]
        assert Ops.ToolStatus.requires_approval is False
        assert Ops.ToolDrop.requires_approval is True

    @pytest.mark.anyio
    async def test_a_registry_default_and_a_tools_own(self):
        """@tool_registry(requires_approval=True) holds every tool's calls; a tool's own
        requires_approval=False wins over it."""
        from llm_worker import tool, tool_registry

        @tool_registry(requires_approval=True)
        class Careful:
            @tool
            async def write(self, text: str) -> str:
                """Write."""
                return text

            @tool(requires_approval=False)
            async def read(self) -> str:
                """Read."""
                return "data"

        client = ScriptedClient([calls(("write", {"text": "x"}), ("read", {})), "ok"])
        worker = Worker(client)
        worker.register_tools(tool_definitions(Careful()))
        await worker.run("go")
        assert [p.call.name for p in worker.pending] == ["write"]

    def test_bad_options_are_refused_at_declaration(self):
        """requires_approval and sequential of the wrong type fail at once."""
        from llm_worker import tool

        with pytest.raises(TypeError, match="requires_approval must be True, False or a function"):
            tool(requires_approval="always")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="sequential must be True or False"):
            tool(sequential=1)  # type: ignore[arg-type]
