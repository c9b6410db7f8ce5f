"""Run context for tools (``_context.py``, and ``ToolContext`` parameters of ``@tool``
methods): per-run deps and the call id reach the tool, progress reaches the stream, and
nothing of it reaches the schema.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TypedDict

import anyio
import pytest
from support import calls, collect, results_of

from llm_worker import (
    Approve,
    Limits,
    Pause,
    ToolCallProgress,
    ToolCallRunning,
    ToolContext,
    ToolMeta,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedClient


@dataclass
class Deps:
    user: str


@dataclass
class OtherDeps:
    tenant: int


@tool_registry
class Notes:
    """Tools that read the run's context."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    @tool
    async def whoami(self, ctx: ToolContext[Deps], greeting: str = "hi") -> str:
        """Say who is asking."""
        self.seen.append((ctx.call_id, ctx.tool_name, ctx.deps.user))
        return f"{greeting} {ctx.deps.user}"

    @tool
    def whoami_in_thread(self, greeting: str, ctx: ToolContext[Deps]) -> str:
        """Say who is asking, from a worker thread."""
        assert threading.current_thread() is not threading.main_thread()
        self.seen.append((ctx.call_id, ctx.tool_name, ctx.deps.user))
        return f"{greeting} {ctx.deps.user}"

    @tool
    async def slow(self, ctx: ToolContext[Deps], steps: int) -> str:
        """Report progress as it goes."""
        for step in range(1, steps + 1):
            await anyio.sleep(0.001)
            ctx.report_progress(step, steps, f"step {step}")
        return "done"

    @tool
    def slow_in_thread(self, ctx: ToolContext[Deps], steps: int) -> str:
        """Report progress from a worker thread."""
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps)
        return "done"


def make(client: ScriptedClient, **options) -> tuple[Worker[Deps], Notes]:
    notes = Notes()
    worker = Worker(client, deps_type=Deps, **options)
    worker.register_tools(tool_definitions(notes))
    return worker, notes


class TestInjection:
    @pytest.mark.anyio
    async def test_async_and_thread_tools_get_the_runs_deps_and_their_call_id(self):
        """The ToolContext parameter receives this run's deps, the call's id and the tool's
        name, in an async tool and in a plain-def one (in its thread)."""
        client = ScriptedClient(
            [
                calls(("whoami", {}), ("whoami_in_thread", {"greeting": "hello"})),
                "ok",
                calls(("whoami", {"greeting": "yo"})),
                "ok",
            ]
        )
        worker, notes = make(client)
        await worker.run("who?", deps=Deps("ada"))
        await worker.run("again", deps=Deps("grace"))
        assert notes.seen == [
            ("call_0_0", "whoami", "ada"),
            ("call_0_1", "whoami_in_thread", "ada"),
            ("call_2_0", "whoami", "grace"),
        ]
        assert [r.content for r in results_of(worker.history)] == [
            "hi ada",
            "hello ada",
            "yo grace",
        ]

    def test_the_schema_has_no_trace_of_the_context(self):
        """A ToolContext parameter is not an argument: not in the schema, not in Args."""
        meta = Notes.whoami.meta()
        assert meta.input_schema == {
            "additionalProperties": False,
            "properties": {"greeting": {"default": "hi", "type": "string"}},
            "type": "object",
        }
        assert list(Notes.WhoamiArgs.model_fields) == ["greeting"]
        assert "ctx" not in Notes.WhoamiInThreadArgs.model_fields

    @pytest.mark.anyio
    async def test_the_model_cannot_send_the_context(self):
        """An argument named like the context parameter is an unexpected argument."""
        client = ScriptedClient([calls(("whoami", {"ctx": "forged"})), "ok"])
        worker, notes = make(client)
        await worker.run("go", deps=Deps("ada"))
        [result] = results_of(worker.history)
        assert result.is_error
        assert result.content == (
            "Invalid argument: 'ctx': unexpected argument (this tool takes: greeting)"
        )
        assert notes.seen == []

    @pytest.mark.anyio
    async def test_outside_a_run_the_context_is_empty(self):
        """Called directly (call_tool), a context tool gets no deps, call id or key."""

        @tool_registry
        class Bare:
            @tool
            async def probe(self, ctx: ToolContext) -> str:
                """Show the context."""
                return f"{ctx.call_id!r} {ctx.deps!r} {ctx.tool_name} {ctx.idempotency_key!r}"

        from llm_worker import ToolServer

        server = ToolServer()
        server.register_tools(tool_definitions(Bare()))
        assert await server.handle().call_tool("probe", "{}") == "'' None probe ''"

    @pytest.mark.anyio
    async def test_the_idempotency_key_names_the_call_in_its_conversation_across_a_reload(
        self,
    ):
        """``idempotency_key`` is "{request}/{call_id}": the same call id in two responses
        gets two keys, and a paused call keeps its key through save and load."""

        @tool_registry
        class Keys:
            def __init__(self) -> None:
                self.keys: list[str] = []

            @tool
            async def note(self, ctx: ToolContext) -> str:
                """Remember the key."""
                self.keys.append(ctx.idempotency_key)
                return "ok"

        client = ScriptedClient(
            [calls(("note", {})), calls(("note", {})), "done", calls(("note", {})), "done"]
        )
        first = Keys()
        worker = Worker(client)
        worker.register_tools(tool_definitions(first))
        await worker.run("one")
        assert first.keys == ["1/call_0_0", "2/call_1_0"]

        worker.add_pre_tool_call_hook(lambda ctx: Pause())
        assert await worker.run("two") is WorkerResult.PAUSED
        saved = worker.state.to_json()
        from llm_worker import RunState

        second = Keys()
        later = Worker(client)
        later.register_tools(tool_definitions(second))
        later.load_state(RunState.from_json(saved))
        await later.resume(Approve())
        assert second.keys == ["4/call_3_0"]

    @pytest.mark.anyio
    async def test_hooks_see_the_deps_and_a_resume_takes_them_again(self):
        """Hooks read ctx.deps; a resumed run gets the deps resume() is given."""
        client = ScriptedClient([calls(("whoami", {})), "ok"])
        worker, notes = make(client)
        users: list[str] = []

        def gate(ctx):
            users.append(ctx.deps.user)
            return Pause()

        worker.add_pre_tool_call_hook(gate)
        assert await worker.run("go", deps=Deps("ada")) is WorkerResult.PAUSED
        await worker.resume(Approve(), deps=Deps("ada, later"))
        assert users == ["ada"]
        assert notes.seen == [("call_0_0", "whoami", "ada, later")]

    @pytest.mark.anyio
    async def test_a_context_tool_keeps_its_timeout(self):
        """A context tool past the worker's timeout gets the timeout result."""

        @tool_registry
        class Sleepy:
            @tool
            async def nap(self, ctx: ToolContext[Deps]) -> str:
                """Sleep."""
                await anyio.sleep(30)
                return "never"

        worker = Worker(
            ScriptedClient([calls(("nap", {})), "ok"]),
            deps_type=Deps,
            limits=Limits(tool_timeout=0.05),
        )
        worker.register_tools(tool_definitions(Sleepy()))
        with anyio.fail_after(5):
            await worker.run("go", deps=Deps("ada"))
        assert results_of(worker.history)[0].content == (
            "Execution failed: tool 'nap' timed out after 0.05s"
        )

    def test_two_context_parameters_are_refused(self):
        """A method with two ToolContext parameters fails at declaration."""
        with pytest.raises(TypeError, match="parameters 'a' and 'b' both take the ToolContext"):

            @tool_registry
            class Twice:
                @tool
                async def f(self, a: ToolContext, b: ToolContext) -> str:
                    """Two."""
                    return ""


class TestDepsTypes:
    def test_a_tool_for_other_deps_is_refused_at_registration(self):
        """Registering a tool whose ToolContext wants other deps than the worker's raises
        TypeError naming both; nothing of the batch is registered."""
        worker = Worker(ScriptedClient(), deps_type=OtherDeps)
        with pytest.raises(TypeError) as info:
            worker.register_tools(tool_definitions(Notes()))
        assert str(info.value) == (
            "tool 'whoami' takes ToolContext[Deps], but this worker's runs give deps of type "
            "OtherDeps (deps_type=)"
        )
        assert len(worker.tool_server_handle()) == 0

    def test_runs_must_give_the_workers_deps(self):
        """A worker with deps_type refuses a run without deps or with others."""
        worker, _ = make(ScriptedClient())
        with pytest.raises(TypeError) as info:
            worker.run_stream("go")
        assert str(info.value) == (
            "this worker's runs take deps of type Deps (deps_type=); run() was given none: "
            "pass deps=Deps(...)"
        )
        with pytest.raises(TypeError) as info:
            worker.resume_stream()
        assert str(info.value) == (
            "this worker's runs take deps of type Deps (deps_type=); resume() was given none: "
            "pass deps=Deps(...) (deps are not kept from the run that paused or failed)"
        )
        with pytest.raises(TypeError, match="got OtherDeps"):
            worker.run_stream("go", deps=OtherDeps(1))  # type: ignore[arg-type]


class UserDeps(TypedDict):
    user: str


@tool_registry
class Greeter:
    @tool
    async def greet(self, ctx: ToolContext[UserDeps]) -> str:
        """Greet the run's user."""
        return f"hello {ctx.deps['user']}"


class TestTypedDictDeps:
    """A ``TypedDict`` deps_type: its deps are dicts (isinstance cannot check one)."""

    @pytest.mark.anyio
    async def test_runs_take_dicts(self):
        worker = Worker(ScriptedClient([calls(("greet", {})), "ok"]), deps_type=UserDeps)
        worker.register_tools(tool_definitions(Greeter()))
        with anyio.fail_after(5):
            await worker.run("go", deps={"user": "ada"})
        assert [r.content for r in results_of(worker.history)] == ["hello ada"]
        with pytest.raises(TypeError, match="take deps of type UserDeps"):
            worker.run_stream("go", deps=Deps("ada"))  # type: ignore[arg-type]

    def test_a_tool_for_other_deps_is_still_refused(self):
        worker = Worker(ScriptedClient(), deps_type=UserDeps)
        with pytest.raises(TypeError, match="takes ToolContext\\[Deps\\]"):
            worker.register_tools(tool_definitions(Notes()))

    @pytest.mark.parametrize("deps_type", [int, Deps])
    def test_a_tool_wanting_a_typed_dict_wants_a_dict(self, deps_type):
        worker = Worker(ScriptedClient(), deps_type=deps_type)
        with pytest.raises(TypeError, match="takes ToolContext\\[UserDeps\\]"):
            worker.register_tools(tool_definitions(Greeter()))

    def test_a_dict_subclass_is_a_typed_dicts_deps(self):
        class Richer(dict):  # type: ignore[type-arg]
            pass

        Worker(ScriptedClient(), deps_type=Richer).register_tools(tool_definitions(Greeter()))


class Counting:
    """A hand-written tool that opts in to the context with execute_with_context."""

    async def execute(self, input_json: str) -> str:
        return "no context"

    async def execute_with_context(self, input_json: str, context: ToolContext[Deps]) -> str:
        for step in range(3):
            context.report_progress(step + 1, 3)
            await anyio.sleep(0.001)
        return f"counted for {context.deps.user}"


@tool_registry
class Lingering:
    """A thread tool that reports until its time is up, or it is told to stop."""

    def __init__(self) -> None:
        self.stop = threading.Event()

    @tool
    def work(self, ctx: ToolContext, label: str, seconds: float) -> str:
        """Reports its label while it works."""
        import time

        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.stop.is_set():
            ctx.report_progress(1, None, label)
            time.sleep(0.01)
        return label


class TestProgress:
    @pytest.mark.anyio
    async def test_a_timed_out_calls_reports_are_not_a_later_calls_of_the_same_id(self):
        """Ids repeat across responses: a call that timed out goes on reporting from its
        thread while the next response's call of the same id runs. Its reports went out
        as that call's; they go nowhere."""
        from llm_worker.testing import ScriptedCall, ScriptedResponse

        def call(label: str, seconds: float) -> ScriptedResponse:
            args = {"label": label, "seconds": seconds}
            return ScriptedResponse(tool_calls=[ScriptedCall("work", args, id="toolu_1")])

        app = Lingering()
        client = ScriptedClient([call("old", 3), call("new", 0.4), "ok"])
        worker = Worker(client, limits=Limits(tool_timeout=0.2))
        worker.register_tools(tool_definitions(app))
        seen: list[tuple[int, str | None]] = []
        turn = 0
        try:
            with anyio.fail_after(10):
                async with worker.run_stream("go") as stream:
                    async for event in stream:
                        if isinstance(event, ToolCallRunning):
                            turn += 1
                        elif isinstance(event, ToolCallProgress):
                            seen.append((turn, event.message))
        finally:
            app.stop.set()
        assert (2, "new") in seen
        assert {message for at, message in seen if at == 2} == {"new"}

    @pytest.mark.parametrize("tool_name", ["slow", "slow_in_thread"])
    @pytest.mark.anyio
    async def test_progress_reaches_the_stream_while_the_call_runs(self, tool_name):
        """report_progress from an async or a thread tool arrives as ToolCallProgress events
        for that call, after it started and before it finished, the last one last."""
        client = ScriptedClient([calls((tool_name, {"steps": 5})), "ok"])
        worker, _ = make(client)
        with anyio.fail_after(5):
            events = await collect(worker.run_stream("go", deps=Deps("ada")))
        progress = [e for e in events if isinstance(e, ToolCallProgress)]
        assert progress, "no progress reached the stream"
        assert all(p.call_id == "call_0_0" for p in progress)
        assert progress[-1].progress <= 5
        values = [p.progress for p in progress]
        assert values == sorted(values)  # coalesced, never out of order
        kinds = [type(e).__name__ for e in events]
        assert kinds.index("ToolCallRunning") < kinds.index("ToolCallProgress")
        assert kinds.index("ToolCallProgress") < kinds.index("ToolCallFinished")

    @pytest.mark.anyio
    async def test_a_hand_written_tool_opts_in(self):
        """A Tool with execute_with_context gets the context (and reports progress)."""
        worker = Worker(ScriptedClient([calls(("count", {})), "ok"]), deps_type=Deps)
        worker.register_tool(lambda: (ToolMeta(name="count"), Counting()))
        events = await collect(worker.run_stream("go", deps=Deps("ada")))
        assert results_of(worker.history)[0].content == "counted for ada"
        assert any(isinstance(e, ToolCallProgress) for e in events)
        assert any(isinstance(e, ToolCallRunning) for e in events)

    def test_progress_values_are_checked(self):
        """Progress that is not a finite number is refused."""
        context = ToolContext(call_id="c", tool_name="t", deps=None)
        with pytest.raises(ValueError, match="progress must be finite numbers"):
            context.report_progress(float("nan"))
        context.report_progress(1.0)  # no sink: goes nowhere, fine
        assert repr(context) == "<ToolContext call_id='c' tool='t'>"
