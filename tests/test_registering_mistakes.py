"""What a user coming from other libraries passes first: a tool method where its
definition belongs, a registry app for its tools, a dict of arguments for JSON text.
Each is refused with what to pass instead, and nothing of the tool runs."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from typing import ClassVar

import anyio
import pytest

from llm_worker import ToolServer, Worker, tool, tool_definitions, tool_registry
from llm_worker.testing import ScriptedClient

pytestmark = pytest.mark.anyio


@tool_registry
class Db:
    """A database whose reset must never run by mistake."""

    def __init__(self) -> None:
        self.rows = [1, 2, 3]

    @tool
    def reset(self) -> str:
        """Delete every row."""
        self.rows.clear()
        return "deleted"

    @tool
    async def search(self, query: str) -> str:
        """Search the rows."""
        return f"found {query}"


@tool_registry
class Opened:
    """An app whose making is seen: ``Opened.made`` holds every one made."""

    made: ClassVar[list[Opened]] = []

    def __init__(self) -> None:
        Opened.made.append(self)

    @tool
    def ping(self) -> str:
        """Answer."""
        return "pong"


@pytest.mark.parametrize("register", ["server", "worker"])
async def test_a_bound_tool_method_is_refused_without_running(register: str) -> None:
    """``register_tool(db.reset)`` would call the method itself: refused first, saying to
    pass its definition; the rows are still there."""
    db = Db()
    target = ToolServer() if register == "server" else Worker(ScriptedClient(["ok"]))
    with pytest.raises(TypeError) as caught:
        target.register_tool(db.reset)  # type: ignore[arg-type]
    assert "is a tool method, not its definition: register app.reset.definition()" in str(
        caught.value
    )
    assert db.rows == [1, 2, 3]


async def test_an_async_tool_method_is_refused_without_a_coroutine_left() -> None:
    """Refused before it is called: no coroutine is made, so none is left never awaited."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with pytest.raises(TypeError, match="not its definition"):
            ToolServer().register_tools([Db().search])  # type: ignore[list-item]
        gc.collect()
    assert [str(w.message) for w in warned if "never awaited" in str(w.message)] == []


async def test_an_unbound_tool_method_is_refused_with_the_spelling_that_works() -> None:
    with pytest.raises(TypeError, match=r"register Db\.reset\.definition\(app\)"):
        ToolServer().register_tool(Db.reset)  # type: ignore[arg-type]


async def test_a_registry_app_is_refused_pointing_at_tool_definitions() -> None:
    with pytest.raises(TypeError) as caught:
        ToolServer().register_tools([Db()])  # type: ignore[list-item]
    assert str(caught.value) == (
        "a @tool_registry app (Db) is not a tool definition: register tool_definitions(app), "
        "its tools' definitions"
    )


@pytest.mark.parametrize("register", ["server", "worker"])
async def test_a_registry_class_is_refused_without_making_an_app(register: str) -> None:
    """Called as a factory, ``Db`` would make an app (running its ``__init__``) and then fail
    on what it returned: refused first, saying to pass its app's definitions."""
    made = len(Opened.made)
    target = ToolServer() if register == "server" else Worker(ScriptedClient(["ok"]))
    with pytest.raises(TypeError) as caught:
        target.register_tool(Opened)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "the @tool_registry class Opened is not a tool definition: register "
        "tool_definitions(Opened(...)), its tools' definitions"
    )
    assert len(Opened.made) == made


_BATCH = "register_tools() takes an iterable of tool definitions, not "


def _not_a_batch(given: str, db: Db) -> tuple[object, str]:
    """What ``given`` names, passed where a batch belongs, and the error's text after
    "takes an iterable of tool definitions, not "."""
    return {
        "app": (db, "a @tool_registry app (Db): pass tool_definitions(app)"),
        "class": (Db, "the @tool_registry class Db: pass tool_definitions(Db(...))"),
        "bound method": (db.reset, f"a tool method ({db.reset!r}): pass [app.reset.definition()]"),
        "unbound method": (
            Db.reset,
            "a tool method (<tool method Db.reset>): pass [Db.reset.definition(app)]",
        ),
        "one definition": (
            db.reset.definition(),
            "one definition (ToolFactory): put it in a list, register_tools([...]), or call "
            "register_tool(definition)",
        ),
        "int": (5, "int"),
    }[given]


@pytest.mark.parametrize("register", ["server", "worker"])
@pytest.mark.parametrize(
    "given", ["app", "class", "bound method", "unbound method", "one definition", "int"]
)
async def test_register_tools_of_what_is_no_batch_says_what_to_pass(
    register: str, given: str
) -> None:
    """``register_tools(app)`` (and the class, a tool method, one definition) says what to
    pass, where Python said only "'Db' object is not iterable"; nothing of the tool runs."""
    db = Db()
    value, instead = _not_a_batch(given, db)
    target = ToolServer() if register == "server" else Worker(ScriptedClient(["ok"]))
    with pytest.raises(TypeError) as caught:
        target.register_tools(value)  # type: ignore[arg-type]
    assert str(caught.value) == _BATCH + instead
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert db.rows == [1, 2, 3]


async def test_an_iterables_own_type_error_is_left_as_it_is() -> None:
    """An ``__iter__`` that raises ``TypeError`` itself: its error, not "takes an iterable"."""

    class Broken:
        def __iter__(self) -> Iterator[object]:
            raise TypeError("not today")

    with pytest.raises(TypeError, match=r"^not today$"):
        ToolServer().register_tools(Broken())  # type: ignore[arg-type]


async def test_the_definitions_register_and_run() -> None:
    db = Db()
    server = ToolServer()
    server.register_tools(tool_definitions(db))
    with anyio.fail_after(5):
        assert await server.handle().call_tool("search", '{"query": "x"}') == "found x"
    assert db.rows == [1, 2, 3]


@pytest.mark.parametrize("arguments", [{"query": "x"}, ["x"], 5, None, b'{"query": "x"}'])
async def test_call_tool_takes_json_text_only(arguments: object) -> None:
    """A dict (LangChain's ``invoke({...})`` habit) is refused with the call to make,
    before the tool sees it."""
    server = ToolServer()
    server.register_tools(tool_definitions(Db()))
    with anyio.fail_after(5), pytest.raises(TypeError) as caught:
        await server.handle().call_tool("search", arguments)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"call_tool() takes the arguments as JSON text (a str), not "
        f"{type(arguments).__name__}: call_tool('search', json.dumps(arguments))"
    )
