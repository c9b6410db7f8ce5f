"""Dedicated threads (``_codegen/dedicated.py``, ``thread="dedicated"``): every plain-def
call of one app object runs on that object's own thread, one at a time, so objects made
there (a sqlite3 connection) stay usable; cancellation never blocks the event loop."""

from __future__ import annotations

import contextvars
import sqlite3
import threading
import time

import anyio
import pytest
from support import calls, results_of

from llm_worker import ToolServer, Worker, tool, tool_definitions, tool_registry
from llm_worker.testing import ScriptedClient


@tool_registry(thread="dedicated")
class Notes:
    """The natural sqlite3 app, with the connection opened on first use."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None
        self.threads: set[int] = set()
        self.active = 0
        self.overlaps = 0
        self.log: list[str] = []  # what finished, in order

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(":memory:")
            self._db.execute("create table notes (text)")
        return self._db

    @tool
    def add(self, text: str) -> str:
        """Store a note."""
        self.threads.add(threading.get_ident())
        self.active += 1
        self.overlaps += self.active > 1
        try:
            time.sleep(0.005)
            self.db.execute("insert into notes values (?)", (text,))
            self.db.commit()
            return "saved"
        finally:
            self.active -= 1

    @tool
    def count(self) -> int:
        """How many notes there are."""
        self.threads.add(threading.get_ident())
        self.log.append("count")
        return self.db.execute("select count(*) from notes").fetchone()[0]

    @tool(timeout=0.05)
    def hang(self, seconds: float) -> str:
        """Block the thread."""
        time.sleep(seconds)
        self.log.append("hang")
        return "late"


@tool_registry
class SharedConnection:
    """The same app with the default worker threads, connection made in __init__."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")

    @tool
    def count(self) -> int:
        """Count rows."""
        return self.db.execute("select 1").fetchone()[0]


@pytest.mark.anyio
async def test_a_sqlite_app_works_on_its_own_thread():
    """Six parallel writes and a count all run on one thread that is not the loop's, one
    at a time: every write is kept."""
    writes = [("add", {"text": f"note {i}"}) for i in range(6)]
    client = ScriptedClient([calls(*writes), calls(("count", {})), "ok"])
    notes = Notes()
    worker = Worker(client)
    worker.register_tools(tool_definitions(notes))
    with anyio.fail_after(10):
        await worker.run("save six notes, then count")
    results = results_of(worker.history)
    assert [r.content for r in results[:6]] == ["saved"] * 6
    assert results[6].content == "6"
    assert len(notes.threads) == 1
    assert threading.get_ident() not in notes.threads
    assert notes.overlaps == 0


@pytest.mark.anyio
async def test_worker_threads_fail_the_natural_app():
    """For contrast: with ordinary worker threads, a connection made in __init__ cannot be
    used (the reason thread="dedicated" exists)."""
    server = ToolServer()
    server.register_tools(tool_definitions(SharedConnection()))
    from llm_worker import ToolExecutionError

    with pytest.raises(ToolExecutionError, match="SQLite objects created in a thread"):
        await server.handle().call_tool("count", "{}")


@pytest.mark.anyio
async def test_a_timed_out_call_does_not_block_the_next():
    """A dedicated call past its timeout returns the timeout result at once; the thread
    finishes it, then runs the next call; the loop never blocks."""
    notes = Notes()
    worker = Worker(ScriptedClient([calls(("hang", {"seconds": 0.3})), calls(("count", {})), "ok"]))
    worker.register_tools(tool_definitions(notes))
    with anyio.fail_after(10):
        await worker.run("go")
    results = results_of(worker.history)
    assert results[0].content == "Execution failed: tool 'hang' timed out after 0.05s"
    assert results[1].content == "0"
    assert notes.log == ["hang", "count"]  # the count waited its turn behind hang


@pytest.mark.anyio
async def test_each_app_object_has_its_own_thread():
    """Two app objects get two threads."""
    first, second = Notes(), Notes()
    server = ToolServer()
    server.register_tools(tool_definitions(first))
    other = ToolServer()
    other.register_tools(tool_definitions(second))
    with anyio.fail_after(5):
        await server.handle().call_tool("count", "{}")
        await other.handle().call_tool("count", "{}")
    assert first.threads != second.threads


def test_the_option_is_checked():
    """thread= must be True, False or "dedicated"."""
    with pytest.raises(ValueError, match="thread must be True, False or 'dedicated'"):
        tool(thread="main")  # type: ignore[arg-type]


@tool_registry(thread="dedicated")
class PerUser:
    """An object per request (its own connection, say), on a thread of its own."""

    def __init__(self, user: str) -> None:
        self.user = user

    @tool
    def whoami(self) -> str:
        """Who, and what the request's context says."""
        seen = REQUEST.get("unset")
        REQUEST.set(f"{self.user}-leaked")  # must stay in this call
        return f"{self.user} {seen}"


REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST")


async def _request(app: PerUser, tag: str) -> str:
    REQUEST.set(tag)
    worker = Worker(ScriptedClient([calls(("whoami", {})), "ok"]))
    worker.register_tools(tool_definitions(app))
    with anyio.fail_after(10):
        await worker.lock().run("hi")
    (result,) = results_of(worker.history)
    return result.content


@pytest.mark.anyio
async def test_each_call_runs_in_its_callers_context():
    """A call on the dedicated thread sees its caller's context values, and what it sets
    stays in the call (it ran in the thread's own context: the request's value unseen,
    the previous call's value leaked into the next request)."""
    app = PerUser("ann")
    assert await _request(app, "first request") == "ann first request"
    assert await _request(app, "second request") == "ann second request"
    assert REQUEST.get() == "second request"


@pytest.mark.anyio
async def test_an_object_per_request_and_its_thread_are_freed():
    """The thread held the last call's arguments while it waited for the next: the object
    never died, and its thread never ended (one thread more per request, for ever)."""
    import gc
    import weakref

    before = {t.ident for t in threading.enumerate()}
    refs = []
    for i in range(20):
        app = PerUser(f"u{i}")
        refs.append(weakref.ref(app))
        assert (await _request(app, "r")).startswith(f"u{i} ")
        del app
    gc.collect()
    with anyio.fail_after(10):
        while any(t.name.startswith("llm-worker PerUser") for t in threading.enumerate()):
            await anyio.sleep(0.02)
            gc.collect()
    assert [ref for ref in refs if ref() is not None] == []
    assert {t.ident for t in threading.enumerate()} <= before | {threading.get_ident()}
