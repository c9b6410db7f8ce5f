"""What a user coming from other libraries passes first: a tool method where its
definition belongs, a registry app for its tools, a dict of arguments for JSON text.
Each is refused with what to pass instead, and nothing of the tool runs."""

from __future__ import annotations

import gc
import warnings

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
    with pytest.raises(TypeError, match=r"a Db app is not a tool definition: register "):
        ToolServer().register_tools([Db()])  # type: ignore[list-item]


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
