"""A served tool's result, or a client's request, nested deeper than MCP carries it: an answer.

- A structured result nested deeper than the SDK writes JSON (a recursive model, 127
  trees deep), or than ``jsonschema`` can check it, or (a hand-written tool's JSON text)
  holding a lone surrogate, is an ``isError`` result saying so; one whose making fails
  (a ``$ref`` that points to nothing) the ``failed unexpectedly`` one, its traceback only
  in the log. Never the SDK's protocol error (code 0) with the exception's own text.
- Over stdio, a request with an id that the SDK's parser refuses (nested more than 200
  levels deep, a lone surrogate's escape) is answered with that id, so the SDK client's
  call fails at once instead of waiting for ever.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import hostile_apps
import pytest
from mcp import MCPError
from mcp_support import GUARD, HOSTILE, connect, hostile_stdio_session, text_of
from test_mcp_stdio_unreadable import INITIALIZE, INITIALIZED, SERVERS, exchange

from llm_worker.mcp import create_server

pytestmark = pytest.mark.anyio


# Trees 127 deep (as {"result": tree}) nest more than 255 arrays and objects: more than the
# SDK writes (199: more than jsonschema checks through the model's $ref; the check raised).
DEEP_TREES = [127, 150, 199]
NOT_DESCRIBED = (
    "Internal error: tool '{name}' returned a result its output schema does not describe"
)
TOO_DEEP = NOT_DESCRIBED.format(name="grow") + " (nested deeper than MCP can carry)"
# Each hand-written tool of hostile_apps.TYPED, and the start of what the client reads.
TYPED = [
    (
        "chained",
        NOT_DESCRIBED.format(name="chained")
        + " (nested too deeply to be checked against its output schema)",
    ),
    (
        "unpaired",
        NOT_DESCRIBED.format(name="unpaired")
        + " (a lone surrogate in a string, which no JSON-RPC wire can carry)",
    ),
    ("dangling", "Internal error: tool 'dangling' failed unexpectedly ("),
]


def nested(depth: int) -> list[Any]:
    """``depth`` arrays, each the only item of the next: ``[[[]]]`` for 3."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def tree_depth(structured: dict[str, Any]) -> int:
    """How many trees deep the structured content of ``grow`` is (a wrapped value)."""
    value = structured["result"]
    depth = 0
    while value.get("children"):
        [value] = value["children"]
        depth += 1
    return depth


class TestDeepResults:
    async def test_in_process(self, caplog):
        """A tree as deep as the SDK writes is structured content; deeper ones, and the
        hand-written tools' results, are isError results, and the next call is served."""
        with (
            anyio.fail_after(GUARD),
            caplog.at_level(logging.ERROR, logger="llm_worker.mcp"),
        ):
            async with connect(create_server(hostile_apps.factory())) as session:
                shallow = await session.call_tool("grow", {"depth": 126})
                deep = [await session.call_tool("grow", {"depth": d}) for d in DEEP_TREES]
                typed = [await session.call_tool(name, {}) for name, _ in TYPED]
                after = await session.call_tool("echo", {"text": "still here"})
        assert not shallow.is_error
        assert shallow.structured_content is not None
        assert tree_depth(shallow.structured_content) == 126
        assert [(text_of(r), r.is_error, r.structured_content) for r in deep] == [
            (TOO_DEEP, True, None)
        ] * len(DEEP_TREES)
        for result, (name, text) in zip(typed, TYPED, strict=True):
            assert (text_of(result).startswith(text), result.is_error) == (True, True), name
            assert result.structured_content is None
        assert (text_of(after), after.is_error) == ("still here", False)
        [failed] = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert failed.getMessage().startswith("Tool 'dangling''s result cannot be sent: ")
        assert failed.exc_info is not None

    async def test_over_stdio(self, tmp_path):
        """Over stdio, through the SDK's own client: the same isError results, not protocol
        errors, and the server goes on serving."""
        async with hostile_stdio_session(tmp_path) as session:
            deep = await session.call_tool("grow", {"depth": 150})
            typed = [await session.call_tool(name, {}) for name, _ in TYPED]
            after = await session.call_tool("echo", {"text": "alive"})
        assert (text_of(deep), deep.is_error) == (TOO_DEEP, True)
        for result, (name, text) in zip(typed, TYPED, strict=True):
            assert (text_of(result).startswith(text), result.is_error) == (True, True), name
        assert (text_of(after), after.is_error) == ("alive", False)
        stderr = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
        assert "Traceback" in stderr  # dangling's, logged and never sent


class TestDeepRequests:
    async def test_a_call_nested_too_deeply_fails_at_once(self, tmp_path):
        """The SDK's client sends a call whose arguments nest 220 levels: it gets Invalid
        Request for its own id (not Parse error with id null, which it cannot match), and
        the next call is served."""
        async with hostile_stdio_session(tmp_path) as session:
            with pytest.raises(MCPError) as refused:
                await session.call_tool("echo", {"text": nested(220)})
            after = await session.call_tool("echo", {"text": "still here"})
        # The deepest array is inside the message, its params, the arguments and 219 arrays.
        assert (refused.value.error.code, refused.value.error.message) == (
            -32600,
            "Invalid Request: nested 222 levels deep, more than the 200 the server reads",
        )
        assert (text_of(after), after.is_error) == ("still here", False)

    @pytest.mark.parametrize("server", SERVERS)
    def test_the_depth_the_sdk_reads_and_a_lone_surrogate(self, server):
        """A request nested as deep as the SDK's parser reads (200 levels) is served, one
        level deeper is answered Invalid Request with its id, and so is one with a lone
        surrogate's escape, each with a warning; a notification of either gets the SDK's
        Parse error (id null), as ever."""
        ping = {"jsonrpc": "2.0", "method": "ping"}
        lines = [
            json.dumps(INITIALIZE).encode(),
            json.dumps(INITIALIZED).encode(),
            json.dumps({**ping, "id": 2, "params": {"x": nested(199)}}).encode(),
            json.dumps({**ping, "id": 3, "params": {"x": nested(200)}}).encode(),
            b'{"jsonrpc": "2.0", "id": "s", "method": "ping", "params": {"x": "\\udc00"}}',
            json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/x", "params": nested(201)}
            ).encode(),
        ]
        messages, stderr = exchange(server(HOSTILE.split(":")[0]), lines, 5)
        by_id = {message["id"]: message for message in messages}
        assert set(by_id) == {1, 2, 3, "s", None}
        assert by_id[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert by_id[3]["error"] == {
            "code": -32600,
            "message": (
                "Invalid Request: nested 201 levels deep, more than the 200 the server reads"
            ),
        }
        assert by_id["s"]["error"]["code"] == -32600
        assert by_id["s"]["error"]["message"].startswith(
            "Invalid Request: JSON the server cannot read (lone leading surrogate in hex escape"
        )
        assert by_id[None]["error"] == {"code": -32700, "message": "Parse error"}
        warnings = [
            line
            for line in stderr.splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered a line on stdin")
        ]
        assert warnings[0] == (
            "WARNING llm_worker.mcp: answered a line on stdin with Invalid Request (-32600): "
            "nested 201 levels deep, more than the 200 the server reads"
        )
        assert len(warnings) == 3
