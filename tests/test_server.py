"""Tests for ``ToolServer`` and ``ToolServerHandle`` (``llm_worker._server``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import CountingDefinition, EchoTool, simple_schemas, tool_definition_sets

from llm_worker import (
    DuplicateToolError,
    ExecutionFailedError,
    InternalToolError,
    InvalidArgumentError,
    LlmToolDefinition,
    Tool,
    ToolDefinition,
    ToolError,
    ToolExecutionError,
    ToolMeta,
    ToolNotFoundError,
    ToolReturn,
    ToolServer,
    ToolServerHandle,
    tool,
    tool_definitions,
    tool_metas,
    tool_registry,
)

T = TypeVar("T")

# A name no snake-case strategy draws, so it never collides with generated definitions.
OUTSIDER = "pre-registered"

# Each example draws several metas with schemas; 50 examples keep the module quick.
QUICK = settings(max_examples=50)

# How long a test that waits for something may take before it fails instead of hanging.
GUARD = 10.0


def definition(
    name: str, make_tool: Callable[[ToolMeta], Tool] | None = None
) -> CountingDefinition:
    """A counting definition for a tool called ``name`` (an ``EchoTool`` by default)."""
    return CountingDefinition(
        ToolMeta(name=name, description=f"The {name} tool.", input_schema={"type": "object"}),
        make_tool,
    )


def run_with_deadline(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in another thread; fail instead of hanging if it blocks.

    Used to prove the server lock is free: a call that needs the lock would block.
    """
    results: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(fn(*args))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), f"{fn!r} blocked: the server lock is held"
    if errors:
        raise errors[0]
    return results[0]


def names(handle: ToolServerHandle) -> list[str]:
    """The registered names, in tool_definitions_sorted order."""
    return [d.name for d in handle.tool_definitions_sorted()]


def sorted_json(handle: ToolServerHandle) -> str:
    """The bytes a client would send: json.dumps of the to_dict() list."""
    return json.dumps([d.to_dict() for d in handle.tool_definitions_sorted()])


class Counter:
    """The hand-written tool of the Rust spec: a session counter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    async def execute(self, input_json: str) -> str:
        with self._lock:
            n = self._count
            self._count += 1
        return f"count: {n}"


def counter_definition() -> tuple[ToolMeta, Tool]:
    """The Rust example's ToolDefinition, with a manual ToolMeta."""
    meta = (
        ToolMeta(name="counter")
        .with_description("Increment the counter")
        .with_input_schema({"type": "object"})
    )
    return meta, Counter()


class Failing:
    """A tool that raises the exception it was given."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def execute(self, input_json: str) -> str:
        raise self.error


@tool_registry
class Library:
    def __init__(self, shelf: str) -> None:
        self.shelf = shelf

    @tool
    async def search(self, query: str, limit: int = 3) -> str:
        """Search the library."""
        return f"{self.shelf}: {query} ({limit})"

    @tool
    def count(self, word: str) -> int:
        """Count the books whose title holds a word."""
        return len(word)

    @tool(name="shelf_name")
    async def shelf(self) -> str:
        return self.shelf


class TestServerHandle:
    def test_no_public_constructor(self) -> None:
        """ToolServerHandle() raises TypeError; server.handle() is the way to get one."""
        with pytest.raises(TypeError, match="no public constructor"):
            ToolServerHandle()

    @pytest.mark.parametrize("attr", ["register_tool", "register_tools"])
    def test_no_registration_methods(self, attr: str) -> None:
        """A handle has no register_tool / register_tools attribute at all."""
        handle = ToolServer().handle()
        assert not hasattr(handle, attr)
        assert not hasattr(ToolServerHandle, attr)

    def test_handle_type(self) -> None:
        """server.handle() returns a ToolServerHandle."""
        assert type(ToolServer().handle()) is ToolServerHandle

    def test_handles_share_the_map(self) -> None:
        """Handles see tools registered before and after they were made."""
        server = ToolServer()
        early = server.handle()
        server.register_tool(definition("a"))
        late = server.handle()
        server.register_tool(definition("b"))
        assert names(early) == names(late) == ["a", "b"]
        assert len(early) == len(late) == 2

    def test_equality(self) -> None:
        """Handles of one server are equal and hash alike; other servers' handles differ."""
        server = ToolServer()
        assert server.handle() == server.handle()
        assert hash(server.handle()) == hash(server.handle())
        assert server.handle() != ToolServer().handle()
        assert server.handle() != object()

    def test_len_and_contains(self) -> None:
        """len(handle) counts tools; ``name in handle`` tells whether a name is registered."""
        server = ToolServer()
        handle = server.handle()
        assert len(handle) == 0
        assert "a" not in handle
        server.register_tools([definition("a"), definition("b")])
        assert len(handle) == 2
        assert "a" in handle
        assert "b" in handle
        assert "c" not in handle
        assert 1 not in handle

    def test_get_tool(self) -> None:
        """get_tool returns the registered meta and the very tool instance the factory made."""
        server = ToolServer()
        made = definition("a")
        server.register_tool(made)
        entry = server.handle().get_tool("a")
        assert entry is not None
        meta, tool_ = entry
        assert meta == made.meta
        assert tool_ is made.made[0]

    def test_get_tool_unknown(self) -> None:
        """get_tool returns None for an unknown name."""
        server = ToolServer()
        server.register_tool(definition("a"))
        assert server.handle().get_tool("b") is None
        assert server.handle().get_tool("A") is None


class TestRegisterTool:
    def test_registers(self) -> None:
        """register_tool adds the tool under its meta's name."""
        server = ToolServer()
        server.register_tool(definition("search"))
        assert names(server.handle()) == ["search"]

    @pytest.mark.anyio
    async def test_factory_called_once(self) -> None:
        """The factory is called exactly once, at registration, never on lookup or call."""
        server = ToolServer()
        handle = server.handle()
        made = definition("search")
        server.register_tool(made)
        assert made.calls == 1
        handle.get_tool("search")
        handle.tool_definitions_sorted()
        await handle.call_tool("search", "{}")
        await handle.call_tool("search", "{}")
        assert made.calls == 1

    def test_duplicate(self) -> None:
        """A taken name raises DuplicateToolError; the first tool stays registered."""
        server = ToolServer()
        first = definition("search")
        server.register_tool(first)
        second = definition("search")
        with pytest.raises(DuplicateToolError) as info:
            server.register_tool(second)
        assert str(info.value) == "Tool with name 'search' already registered"
        assert info.value.name == "search"
        entry = server.handle().get_tool("search")
        assert entry is not None
        assert entry[1] is first.made[0]

    def test_same_definition_twice(self) -> None:
        """Registering one definition twice is a duplicate; its factory ran each time."""
        server = ToolServer()
        made = definition("search")
        server.register_tool(made)
        with pytest.raises(DuplicateToolError):
            server.register_tool(made)
        assert made.calls == 2
        assert len(server.handle()) == 1

    def test_factory_error_propagates(self) -> None:
        """An exception from the factory propagates unchanged and nothing is registered."""
        error = RuntimeError("no database")

        def broken() -> tuple[ToolMeta, Tool]:
            raise error

        server = ToolServer()
        with pytest.raises(RuntimeError) as info:
            server.register_tool(broken)
        assert info.value is error
        assert len(server.handle()) == 0

    @pytest.mark.parametrize(
        "made",
        [
            None,
            "search",
            (ToolMeta(name="x"),),
            (ToolMeta(name="x"), EchoTool("x"), "extra"),
            [ToolMeta(name="x"), EchoTool("x")],
            ({"name": "x"}, EchoTool("x")),
            (ToolMeta(name="x").to_llm_definition(), EchoTool("x")),
            (ToolMeta(name="x"), object()),
            (ToolMeta(name="x"), "not a tool"),
            (EchoTool("x"), ToolMeta(name="x")),
        ],
        ids=[
            "none",
            "str",
            "one-tuple",
            "three-tuple",
            "list",
            "dict-meta",
            "llm-definition",
            "object-tool",
            "str-tool",
            "swapped",
        ],
    )
    def test_bad_factory_result(self, made: object) -> None:
        """A factory returning anything but (ToolMeta, Tool) raises TypeError; nothing added."""
        server = ToolServer()
        with pytest.raises(TypeError, match=r"\(ToolMeta, Tool\)"):
            server.register_tool(lambda: made)
        assert len(server.handle()) == 0

    @pytest.mark.parametrize(
        "not_callable", [ToolMeta(name="x"), "search", None], ids=["meta", "str", "none"]
    )
    def test_not_callable(self, not_callable: object) -> None:
        """A definition that is not callable raises TypeError."""
        server = ToolServer()
        with pytest.raises(TypeError):
            server.register_tool(not_callable)
        assert len(server.handle()) == 0

    def test_hand_written_factory_function(self) -> None:
        """A plain function returning (ToolMeta, Tool) is a ToolDefinition."""
        server = ToolServer()
        defn: ToolDefinition = counter_definition
        server.register_tool(defn)
        entry = server.handle().get_tool("counter")
        assert entry is not None
        assert entry[0] == ToolMeta(
            name="counter", description="Increment the counter", input_schema={"type": "object"}
        )
        assert isinstance(entry[1], Counter)


class TestRegisterTools:
    def test_registers_all(self) -> None:
        """register_tools adds every tool of the batch, each factory called once."""
        server = ToolServer()
        batch = [definition(name) for name in ("c", "a", "b")]
        server.register_tools(batch)
        assert names(server.handle()) == ["a", "b", "c"]
        assert [made.calls for made in batch] == [1, 1, 1]

    def test_empty_batch(self) -> None:
        """An empty batch registers nothing and raises nothing."""
        server = ToolServer()
        server.register_tools([])
        assert len(server.handle()) == 0

    def test_any_iterable(self) -> None:
        """The batch may be any iterable, a generator included."""
        server = ToolServer()

        def batch() -> Iterator[ToolDefinition]:
            yield definition("a")
            yield definition("b")

        server.register_tools(batch())
        assert names(server.handle()) == ["a", "b"]

    def test_duplicate_inside_batch(self) -> None:
        """A name twice in one batch raises DuplicateToolError and adds nothing of the batch."""
        server = ToolServer()
        with pytest.raises(DuplicateToolError) as info:
            server.register_tools([definition("a"), definition("b"), definition("a")])
        assert str(info.value) == "Tool with name 'a' already registered"
        assert info.value.name == "a"
        assert len(server.handle()) == 0

    def test_duplicate_of_map(self) -> None:
        """A batch naming a registered tool raises DuplicateToolError and adds nothing of it."""
        server = ToolServer()
        first = definition("b")
        server.register_tool(first)
        with pytest.raises(DuplicateToolError) as info:
            server.register_tools([definition("a"), definition("b"), definition("c")])
        assert info.value.name == "b"
        assert names(server.handle()) == ["b"]
        entry = server.handle().get_tool("b")
        assert entry is not None
        assert entry[1] is first.made[0]

    def test_bad_result_in_batch(self) -> None:
        """A factory in the batch returning a bad value raises TypeError; nothing is added."""
        server = ToolServer()
        with pytest.raises(TypeError):
            server.register_tools([definition("a"), lambda: None, definition("b")])
        assert len(server.handle()) == 0

    @QUICK
    @given(batch=tool_definition_sets(max_size=6, schemas=simple_schemas()), data=st.data())
    def test_failing_factory_all_or_none(
        self, batch: list[CountingDefinition], data: st.DataObject
    ) -> None:
        """register_tools registers all or none: a failing factory anywhere adds nothing."""
        server = ToolServer()
        server.register_tool(definition(OUTSIDER))
        error = LookupError("factory failed")

        def broken() -> tuple[ToolMeta, Tool]:
            raise error

        position = data.draw(st.integers(0, len(batch)), label="failing position")
        with_failure: list[ToolDefinition] = [*batch[:position], broken, *batch[position:]]
        with pytest.raises(LookupError) as info:
            server.register_tools(with_failure)
        assert info.value is error
        assert names(server.handle()) == [OUTSIDER]
        assert all(made.calls <= 1 for made in batch)
        # Without the failing factory the same batch goes in whole.
        server.register_tools(batch)
        assert names(server.handle()) == sorted([OUTSIDER, *(m.meta.name for m in batch)])

    @QUICK
    @given(
        batch=tool_definition_sets(min_size=1, max_size=6, schemas=simple_schemas()),
        data=st.data(),
    )
    def test_duplicate_all_or_none(
        self, batch: list[CountingDefinition], data: st.DataObject
    ) -> None:
        """A duplicate anywhere in the batch, or of the map, adds nothing of the batch."""
        server = ToolServer()
        taken = data.draw(st.sampled_from(batch), label="duplicated")
        position = data.draw(st.integers(0, len(batch)), label="duplicate position")
        in_map = data.draw(st.booleans(), label="duplicate of the map")
        twin = CountingDefinition(taken.meta.with_description("a twin"))
        if in_map:
            server.register_tool(twin)
            attempt: list[ToolDefinition] = list(batch)
        else:
            attempt = [*batch[:position], twin, *batch[position:]]
        before = names(server.handle())
        with pytest.raises(DuplicateToolError) as info:
            server.register_tools(attempt)
        assert info.value.name == taken.meta.name
        assert names(server.handle()) == before
        assert all(made.calls <= 1 for made in batch)

    def test_factories_run_outside_the_lock(self) -> None:
        """Each factory is called outside the lock: it may read and even register on the server."""
        server = ToolServer()
        handle = server.handle()
        server.register_tool(definition("existing"))
        seen: list[object] = []

        def nosy() -> tuple[ToolMeta, Tool]:
            seen.append(run_with_deadline(handle.get_tool, "existing") is not None)
            seen.append([d.name for d in run_with_deadline(handle.tool_definitions_sorted)])
            run_with_deadline(server.register_tool, definition("side"))
            seen.append(handle.get_tool("side") is not None)
            return ToolMeta(name="nosy"), EchoTool("nosy")

        server.register_tools([definition("first"), nosy])
        assert seen == [True, ["existing"], True]
        assert names(handle) == ["existing", "first", "nosy", "side"]


class TestConcurrentRegistration:
    def test_many_threads_lose_nothing(self) -> None:
        """16 threads registering 50 distinct names each: all 800 tools are registered."""
        server = ToolServer()
        threads_n, per_thread = 16, 50
        barrier = threading.Barrier(threads_n)
        batches = [
            [definition(f"t{t:02d}_n{n:02d}") for n in range(per_thread)] for t in range(threads_n)
        ]
        errors: list[BaseException] = []

        def register(batch: list[CountingDefinition]) -> None:
            try:
                barrier.wait(timeout=30)
                for made in batch:
                    server.register_tool(made)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=register, args=(batch,)) for batch in batches]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        expected = sorted(made.meta.name for batch in batches for made in batch)
        assert names(server.handle()) == expected
        assert len(server.handle()) == threads_n * per_thread
        assert all(made.calls == 1 for batch in batches for made in batch)

    def test_racing_batches(self) -> None:
        """Batches sharing one name race: exactly one goes in whole, the others add nothing."""
        server = ToolServer()
        threads_n = 16
        barrier = threading.Barrier(threads_n)
        outcomes: dict[int, str] = {}

        def register(index: int) -> None:
            barrier.wait(timeout=30)
            try:
                server.register_tools([definition(f"own_{index:02d}"), definition("shared")])
            except DuplicateToolError as exc:
                outcomes[index] = f"duplicate {exc.name}"
            else:
                outcomes[index] = "registered"

        threads = [threading.Thread(target=register, args=(i,)) for i in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [i for i, outcome in outcomes.items() if outcome == "registered"]
        assert len(outcomes) == threads_n
        assert len(winners) == 1
        assert sorted(set(outcomes.values())) == ["duplicate shared", "registered"]
        assert names(server.handle()) == [f"own_{winners[0]:02d}", "shared"]


class TestCallTool:
    @pytest.mark.anyio
    async def test_returns_tool_text(self) -> None:
        """call_tool passes input_json through unchanged and returns the tool's text."""
        server = ToolServer()
        server.register_tool(definition("echo"))
        handle = server.handle()
        assert await handle.call_tool("echo", '{"a": 1}') == 'echo: {"a": 1}'
        assert await handle.call_tool("echo", "") == "echo: "
        assert await handle.call_tool("echo", " not json ") == "echo:  not json "

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("returned", "kind"),
        [
            (42, "int"),
            (None, "NoneType"),
            (ToolReturn(["not a part"]), "a ToolReturn that cannot be sent (TypeError)"),  # type: ignore[list-item]
        ],
        ids=["int", "none", "bad-tool-return"],
    )
    async def test_a_result_that_is_not_text_is_an_execution_error(
        self, returned: object, kind: str
    ) -> None:
        """call_tool() -> str: a hand-written tool's non-text result is its bug, told as
        the Worker tells the model (it came back as it was, or raised a bare TypeError)."""

        class Wrong:
            async def execute(self, input_json: str) -> object:
                return returned

        server = ToolServer()
        server.register_tool(lambda: (ToolMeta(name="wrong"), Wrong()))  # type: ignore[arg-type, return-value]
        with pytest.raises(ToolExecutionError) as info:
            await server.handle().call_tool("wrong", "{}")
        assert str(info.value) == (
            f"Tool execution failed: Internal error: tool 'wrong' returned {kind}, not text"
        )

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "name", [5, None, b"echo", ["echo"]], ids=["int", "none", "bytes", "list"]
    )
    async def test_a_name_that_is_not_a_str_is_a_type_error(self, name: object) -> None:
        """As for input_json: a TypeError naming the type, not a ToolNotFoundError (whose
        text could not be made of it) nor an "unhashable" one."""
        server = ToolServer()
        server.register_tool(definition("echo"))
        with pytest.raises(TypeError) as info:
            await server.handle().call_tool(name, "{}")  # type: ignore[arg-type]
        assert str(info.value) == (
            f"call_tool() takes the tool's name as a str, not {type(name).__name__}: "
            f"call_tool(name, json.dumps(arguments))"
        )

    def test_a_tool_not_found_error_of_a_name_that_is_not_a_str_has_a_text(self) -> None:
        """Its str() shows the name's type instead of raising (logging it must not fail)."""
        assert str(ToolNotFoundError(5)) == "Tool '<int>' not found"  # type: ignore[arg-type]
        assert str(ToolNotFoundError(None)) == "Tool '<NoneType>' not found"  # type: ignore[arg-type]

    @pytest.mark.anyio
    async def test_unknown_name(self) -> None:
        """An unknown name raises ToolNotFoundError("Tool '{name}' not found")."""
        server = ToolServer()
        server.register_tool(definition("echo"))
        with pytest.raises(ToolNotFoundError) as info:
            await server.handle().call_tool("ehco", "{}")
        assert str(info.value) == "Tool 'ehco' not found"
        assert info.value.name == "ehco"
        assert isinstance(info.value, LookupError)

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "error",
        [
            ToolError("plain"),
            InvalidArgumentError("'query': missing required argument"),
            ExecutionFailedError("division by zero"),
            InternalToolError("no database"),
        ],
        ids=["tool-error", "invalid-argument", "execution-failed", "internal"],
    )
    async def test_tool_error_wrapped(self, error: ToolError) -> None:
        """A ToolError becomes ToolExecutionError: detail str(error), __cause__ the original."""
        server = ToolServer()
        server.register_tool(definition("failing", lambda meta: Failing(error)))
        with pytest.raises(ToolExecutionError) as info:
            await server.handle().call_tool("failing", "{}")
        assert info.value.__cause__ is error
        assert info.value.name == "failing"
        assert info.value.detail == str(error)
        assert str(info.value) == f"Tool execution failed: {error}"
        assert info.value.__suppress_context__

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "error",
        [ValueError("bad"), KeyError("k"), RuntimeError("boom"), ToolNotFoundError("inner")],
        ids=["value-error", "key-error", "runtime-error", "server-error"],
    )
    async def test_other_exceptions_propagate(self, error: Exception) -> None:
        """A non-ToolError from a hand-written Tool propagates unchanged, not wrapped."""
        server = ToolServer()
        server.register_tool(definition("failing", lambda meta: Failing(error)))
        with pytest.raises(type(error)) as info:
            await server.handle().call_tool("failing", "{}")
        assert info.value is error
        assert not isinstance(info.value, ToolExecutionError)

    @pytest.mark.anyio
    async def test_cancellation_propagates(self) -> None:
        """Cancelling a call cancels the tool; nothing is turned into a ToolExecutionError."""
        server = ToolServer()
        handle = server.handle()
        started = anyio.Event()
        events: list[str] = []

        class Sleeper:
            async def execute(self, input_json: str) -> str:
                started.set()
                try:
                    await anyio.sleep_forever()
                finally:
                    events.append("tool unwound")
                return "never"  # pragma: no cover

        server.register_tool(definition("sleeper", lambda meta: Sleeper()))

        async def call() -> None:
            try:
                await handle.call_tool("sleeper", "{}")
            except anyio.get_cancelled_exc_class():
                events.append("call cancelled")
                raise

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await started.wait()
                group.cancel_scope.cancel()
        assert events == ["tool unwound", "call cancelled"]

    @pytest.mark.anyio
    async def test_generated_tools(self) -> None:
        """@tool_registry tools (async and sync) run through the handle."""
        app = Library("west")
        server = ToolServer()
        server.register_tools(tool_definitions(app))
        handle = server.handle()
        assert await handle.call_tool("search", '{"query": "cats"}') == "west: cats (3)"
        assert await handle.call_tool("count", '{"word": "mouse"}') == "5"
        assert await handle.call_tool("shelf_name", "") == "west"

    @pytest.mark.anyio
    async def test_generated_tool_invalid_input(self) -> None:
        """A generated tool's validation failure arrives as ToolExecutionError with its text."""
        server = ToolServer()
        server.register_tool(Library("west").search.definition())
        with pytest.raises(ToolExecutionError) as info:
            await server.handle().call_tool("search", "{}")
        assert str(info.value) == (
            "Tool execution failed: Invalid argument: 'query': missing required argument"
        )
        assert isinstance(info.value.__cause__, InvalidArgumentError)


class TestLockNotHeldWhileToolRuns:
    @pytest.mark.anyio
    async def test_tool_reads_the_server(self) -> None:
        """The server lock is never held while a tool runs: execute may use the same handle."""
        server = ToolServer()
        handle = server.handle()

        class Introspecting:
            async def execute(self, input_json: str) -> str:
                # From another thread first: a held lock would block, and fail, not hang.
                entry = run_with_deadline(handle.get_tool, "echo")
                listed = run_with_deadline(handle.tool_definitions_sorted)
                # Then from this very thread, and a nested call on the same handle.
                assert handle.get_tool("introspecting") is not None
                nested = await handle.call_tool("echo", input_json)
                return json.dumps(
                    {
                        "entry": entry is not None,
                        "names": [d.name for d in listed],
                        "nested": nested,
                        "len": len(handle),
                    }
                )

        server.register_tools(
            [definition("echo"), definition("introspecting", lambda m: Introspecting())]
        )
        answer = json.loads(await handle.call_tool("introspecting", "hi"))
        assert answer == {
            "entry": True,
            "names": ["echo", "introspecting"],
            "nested": "echo: hi",
            "len": 2,
        }

    @pytest.mark.anyio
    async def test_registration_during_a_call(self) -> None:
        """The server lock is never held while a tool runs: other threads can register meanwhile."""
        server = ToolServer()
        handle = server.handle()
        started = anyio.Event()
        release = anyio.Event()
        results: list[str] = []

        class Blocking:
            async def execute(self, input_json: str) -> str:
                started.set()
                await release.wait()
                return "done"

        server.register_tool(definition("blocking", lambda meta: Blocking()))

        async def call() -> None:
            results.append(await handle.call_tool("blocking", "{}"))

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await started.wait()
                await anyio.to_thread.run_sync(
                    run_with_deadline, server.register_tool, definition("late")
                )
                assert names(handle) == ["blocking", "late"]
                assert await handle.call_tool("late", "{}") == "late: {}"
                assert results == []
                release.set()
        assert results == ["done"]

    @pytest.mark.anyio
    async def test_concurrent_calls_overlap(self) -> None:
        """Two calls of one tool are in flight at once (neither waits for the other)."""
        server = ToolServer()
        handle = server.handle()
        arrived: list[str] = []
        both_in = anyio.Event()

        class Rendezvous:
            async def execute(self, input_json: str) -> str:
                arrived.append(input_json)
                if len(arrived) == 2:
                    both_in.set()
                await both_in.wait()
                return f"left {input_json}"

        server.register_tool(definition("rendezvous", lambda meta: Rendezvous()))
        results: dict[str, str] = {}
        with anyio.fail_after(GUARD):  # a deadlock guard, not a timing assertion
            async with anyio.create_task_group() as group:

                async def call(arg: str) -> None:
                    results[arg] = await handle.call_tool("rendezvous", arg)

                group.start_soon(call, "a")
                group.start_soon(call, "b")
        assert results == {"a": "left a", "b": "left b"}


class TestToolDefinitionsSorted:
    def test_empty(self) -> None:
        """A server without tools lists none."""
        assert ToolServer().handle().tool_definitions_sorted() == []

    def test_sorted_by_name(self) -> None:
        """Definitions come sorted by name (code point order), whatever the registration order."""
        server = ToolServer()
        order = ["b", "B", "a_b", "a", "ä", "a1", "_x"]
        server.register_tools(definition(name) for name in order)
        assert names(server.handle()) == sorted(order)
        assert names(server.handle()) == ["B", "_x", "a", "a1", "a_b", "b", "ä"]

    def test_values(self) -> None:
        """Each entry is the LlmToolDefinition of the registered meta."""
        server = ToolServer()
        made = [definition("b"), definition("a")]
        server.register_tools(made)
        listed = server.handle().tool_definitions_sorted()
        assert all(type(d) is LlmToolDefinition for d in listed)
        assert listed == [made[1].meta.to_llm_definition(), made[0].meta.to_llm_definition()]

    def test_fresh_list(self) -> None:
        """Each call returns a new list; changing one does not change the next."""
        server = ToolServer()
        server.register_tools([definition("a"), definition("b")])
        handle = server.handle()
        first = handle.tool_definitions_sorted()
        first.clear()
        second = handle.tool_definitions_sorted()
        assert second is not first
        assert [d.name for d in second] == ["a", "b"]

    def test_follows_registrations(self) -> None:
        """A later registration shows up in the next listing, in its sorted place."""
        server = ToolServer()
        handle = server.handle()
        server.register_tool(definition("c"))
        assert names(handle) == ["c"]
        server.register_tools([definition("a"), definition("d")])
        assert names(handle) == ["a", "c", "d"]
        server.register_tool(definition("b"))
        assert names(handle) == ["a", "b", "c", "d"]

    @QUICK
    @given(batch=tool_definition_sets(max_size=6), data=st.data())
    def test_byte_identical_for_any_order(
        self, batch: list[CountingDefinition], data: st.DataObject
    ) -> None:
        """tool_definitions_sorted is byte-identical JSON for any registration order and split."""
        reference = ToolServer()
        reference.register_tools(batch)
        expected = sorted_json(reference.handle())

        shuffled = data.draw(st.permutations(batch), label="registration order")
        server = ToolServer()
        rest = list(shuffled)
        while rest:
            size = data.draw(st.integers(1, len(rest)), label="chunk size")
            chunk, rest = rest[:size], rest[size:]
            if size == 1 and data.draw(st.booleans(), label="single register_tool"):
                server.register_tool(chunk[0])
            else:
                server.register_tools(chunk)

        assert sorted_json(server.handle()) == expected
        assert names(server.handle()) == sorted(made.meta.name for made in batch)
        assert server.handle().tool_definitions_sorted() == [
            made.meta.to_llm_definition() for made in sorted(batch, key=lambda m: m.meta.name)
        ]


class TestHandWrittenTool:
    @pytest.mark.anyio
    async def test_counter_reused_across_calls(self) -> None:
        """The instance made at registration serves every call: the counter keeps counting."""
        server = ToolServer()
        server.register_tool(counter_definition)
        handle = server.handle()
        entry = handle.get_tool("counter")
        assert entry is not None
        results = [await handle.call_tool("counter", "{}") for _ in range(3)]
        assert results == ["count: 0", "count: 1", "count: 2"]
        again = handle.get_tool("counter")
        assert again is not None
        assert again[1] is entry[1]
        assert handle.tool_definitions_sorted()[0].to_dict() == {
            "name": "counter",
            "description": "Increment the counter",
            "input_schema": {"type": "object"},
        }

    @pytest.mark.anyio
    async def test_counter_concurrent_calls(self) -> None:
        """Concurrent calls share the one instance and each gets its own count."""
        server = ToolServer()
        server.register_tool(counter_definition)
        handle = server.handle()
        results: list[str] = []
        async with anyio.create_task_group() as group:
            for _ in range(20):

                async def call() -> None:
                    results.append(await handle.call_tool("counter", ""))

                group.start_soon(call)
        assert sorted(results, key=lambda r: int(r.split()[1])) == [
            f"count: {n}" for n in range(20)
        ]

    @pytest.mark.anyio
    async def test_separate_servers_separate_state(self) -> None:
        """Each registration calls the factory anew, so each server has its own counter."""
        first, second = ToolServer(), ToolServer()
        first.register_tool(counter_definition)
        second.register_tool(counter_definition)
        assert await first.handle().call_tool("counter", "") == "count: 0"
        assert await first.handle().call_tool("counter", "") == "count: 1"
        assert await second.handle().call_tool("counter", "") == "count: 0"


@tool_registry
class Searcher:
    def __init__(self, prefix: str = "Results for") -> None:
        self.prefix = prefix

    @tool
    async def search(self, query: str) -> str:
        """Run a search.
        Searches the database for the given query."""
        return f"{self.prefix}: {query}"

    @tool
    async def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    async def ping(self) -> str:
        """Check that the app is alive."""
        return "pong"

    @tool
    async def divide(self, a: int, b: int) -> int:
        """Divide a by b."""
        if b == 0:
            raise ValueError("division by zero")
        return a // b


@tool_registry
class CounterApp:
    def __init__(self) -> None:
        self.count = 0

    @tool
    def increment(self) -> str:
        """Increment the counter."""
        self.count += 1
        return f"count: {self.count}"


class TestGeneratedDefinitions:
    @pytest.mark.anyio
    async def test_the_registered_instance_is_reused(self) -> None:
        """The server keeps the one tool instance made at registration and reuses it."""
        server = ToolServer()
        server.register_tool(CounterApp().increment_definition())
        handle = server.handle()
        entry = handle.get_tool("increment")
        assert entry is not None
        first_tool = entry[1]
        assert await handle.call_tool("increment", "") == "count: 1"
        assert await handle.call_tool("increment", "") == "count: 2"
        again = handle.get_tool("increment")
        assert again is not None
        assert again[1] is first_tool
        assert first_tool.ctx.count == 2  # type: ignore[attr-defined]

    def test_registering_one_tool_twice_is_a_duplicate(self) -> None:
        """Registering the same generated tool twice raises DuplicateToolError."""
        server = ToolServer()
        app = Searcher()
        server.register_tool(app.search_definition())
        with pytest.raises(DuplicateToolError) as excinfo:
            server.register_tool(app.search_definition())
        assert str(excinfo.value) == "Tool with name 'search' already registered"
        assert excinfo.value.name == "search"

    @pytest.mark.anyio
    async def test_an_unknown_name_is_not_found(self) -> None:
        """Calling a name that is not registered raises ToolNotFoundError."""
        server = ToolServer()
        server.register_tool(Searcher().search_definition())
        with pytest.raises(ToolNotFoundError) as excinfo:
            await server.handle().call_tool("nope", "{}")
        assert str(excinfo.value) == "Tool 'nope' not found"

    @pytest.mark.anyio
    async def test_a_tool_error_becomes_tool_execution_error(self) -> None:
        """A generated tool's ToolError reaches the caller as ToolExecutionError, chained."""
        server = ToolServer()
        server.register_tool(Searcher().divide_definition())
        with pytest.raises(ToolExecutionError) as excinfo:
            await server.handle().call_tool("divide", '{"a": 1, "b": 0}')
        assert str(excinfo.value) == "Tool execution failed: Execution failed: division by zero"
        assert isinstance(excinfo.value.__cause__, ExecutionFailedError)

    @pytest.mark.anyio
    async def test_call_tool_runs_the_generated_tools(self) -> None:
        """call_tool dispatches to each registered generated tool."""
        server = ToolServer()
        app = Searcher()
        server.register_tools([app.search_definition(), app.add_definition()])
        handle = server.handle()
        assert await handle.call_tool("search", '{"query": "q"}') == "Results for: q"
        assert await handle.call_tool("add", '{"a": 1, "b": 2}') == "3"

    def test_generated_definitions_are_sorted_by_name(self) -> None:
        """tool_definitions_sorted() lists the generated tools by name, with their metas."""
        server = ToolServer()
        app = Searcher()
        server.register_tools(
            [
                app.search_definition(),
                app.add_definition(),
                app.ping_definition(),
                app.divide_definition(),
            ]
        )
        definitions = server.handle().tool_definitions_sorted()
        assert [d.name for d in definitions] == ["add", "divide", "ping", "search"]
        assert definitions[3].description == (
            "Run a search.\nSearches the database for the given query."
        )
        assert definitions[3].input_schema == Searcher.search.meta().input_schema

    def test_meta_stable_across_factory_calls(self) -> None:
        """Calling a generated definition again gives an equal meta and a new tool bound to app."""
        app = Library("west")
        defn = app.search.definition()
        meta_1, tool_1 = defn()
        meta_2, tool_2 = defn()
        assert meta_1 == meta_2
        assert hash(meta_1) == hash(meta_2)
        assert tool_1 is not tool_2
        assert tool_1.ctx is app
        assert tool_2.ctx is app
        assert meta_1 == app.search.meta() == Library.search.meta()
        assert meta_1 == app.search_definition()()[0]

    def test_registered_meta_matches_tool_metas(self) -> None:
        """What the server lists equals tool_metas(Library), sorted by name."""
        server = ToolServer()
        server.register_tools(tool_definitions(Library("west")))
        expected = sorted(tool_metas(Library), key=lambda meta: meta.name)
        assert server.handle().tool_definitions_sorted() == [
            meta.to_llm_definition() for meta in expected
        ]

    def test_same_json_from_two_apps(self) -> None:
        """Two instances of one registry class give byte-identical sorted definitions."""
        first, second = ToolServer(), ToolServer()
        first.register_tools(tool_definitions(Library("west")))
        second.register_tools(reversed(tool_definitions(Library("east"))))
        assert sorted_json(first.handle()) == sorted_json(second.handle())

    def test_duplicate_generated(self) -> None:
        """Registering one app's tools twice raises DuplicateToolError on the first name."""
        server = ToolServer()
        app = Library("west")
        server.register_tools(tool_definitions(app))
        with pytest.raises(DuplicateToolError) as info:
            server.register_tools(tool_definitions(app))
        assert info.value.name in {"search", "count", "shelf_name"}
        assert len(server.handle()) == 3
