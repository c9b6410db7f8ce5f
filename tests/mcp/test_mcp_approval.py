"""Served tools that need approval: asked of the host through MCP elicitation, never run unasked.

The SDK's own clients (in process, in both protocol eras, and over stdio)
answer the question, and a raw client over stdio answers it as no SDK client would;
``Gallery.delete`` always needs approval, ``Gallery.copy`` only to overwrite. On the
client side, an approval policy reads the MCP annotations our client keeps.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
import mcp_apps
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp_support import APPS, ROOT, SERVE, server_env, text_of
from test_mcp_rich import remote

from llm_worker import (
    Deny,
    ToolMeta,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._server import entry_of
from llm_worker.mcp import create_server, mcp_tool_definitions
from llm_worker.mcp._approval import APPROVAL_SCHEMA, approval_question
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

# The handshake era (initialize; the server sends elicitation/create) and the 2026-07-28 one
# (the question comes back as an input_required result; the client retries with the answer).
ERAS = [pytest.param("legacy", id="handshake"), pytest.param("auto", id="2026")]

DECLINED = "Tool call 'delete' was denied; it did not run: the user declined it"
CANCELLED = (
    "Tool call 'delete' was denied; it did not run: the user dismissed the request for approval"
)
UNAVAILABLE = (
    "Tool call 'delete' did not run: it needs a user's approval, which this MCP client cannot "
    "ask for (it does not support elicitation)"
)


class Host:
    """An MCP host's user: answers every question the same way, and remembers them."""

    def __init__(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


APPROVING = {"approve": True}


def served() -> tuple[mcp_apps.Gallery, ToolServer]:
    gallery = mcp_apps.Gallery()
    server = ToolServer()
    server.register_tools(tool_definitions(gallery))
    return gallery, server


class TestElicitation:
    @pytest.mark.anyio
    @pytest.mark.parametrize("era", ERAS)
    async def test_approved_calls_run(self, era):
        """The host is asked once, naming the tool and its arguments, for one boolean; an
        accept with approve: true runs the call."""
        gallery, server = served()
        host = Host("accept", APPROVING)
        with anyio.fail_after(10):
            async with Client(create_server(server), mode=era, elicitation_callback=host) as c:
                result = await c.call_tool("delete", {"path": "/tmp/a"})
        assert (text_of(result), result.is_error) == ("deleted /tmp/a", False)
        assert gallery.deleted == ["/tmp/a"]
        [question] = host.asked
        assert (
            question.message
            == "Allow the tool 'delete' to run with these arguments?\npath: \"/tmp/a\""
        )
        assert question.requested_schema == APPROVAL_SCHEMA

    @pytest.mark.anyio
    @pytest.mark.parametrize("era", ERAS)
    @pytest.mark.parametrize(
        ("action", "content", "text"),
        [
            ("decline", None, DECLINED),
            ("accept", {"approve": False}, DECLINED),
            ("cancel", None, CANCELLED),
        ],
    )
    async def test_anything_else_is_a_refusal(self, era, action, content, text):
        """Decline, accept without approving, and cancel: an isError result saying so; the
        call never ran."""
        gallery, server = served()
        host = Host(action, content)
        with anyio.fail_after(10):
            async with Client(create_server(server), mode=era, elicitation_callback=host) as c:
                result = await c.call_tool("delete", {"path": "/tmp/a"})
        assert (text_of(result), result.is_error) == (text, True)
        assert gallery.deleted == []
        assert len(host.asked) == 1

    @pytest.mark.anyio
    @pytest.mark.parametrize("era", ERAS)
    async def test_a_client_without_elicitation_is_refused(self, era):
        """A client that cannot ask its user gets a refusal saying so; the call never ran."""
        gallery, server = served()
        with anyio.fail_after(10):
            async with Client(create_server(server), mode=era) as client:
                result = await client.call_tool("delete", {"path": "/tmp/a"})
        assert (text_of(result), result.is_error) == (UNAVAILABLE, True)
        assert gallery.deleted == []

    @pytest.mark.anyio
    @pytest.mark.parametrize("era", ERAS)
    async def test_a_policy_decides_per_call(self, era):
        """A policy function sees the call: a copy that overwrites is asked about, another
        one runs at once; a tool without a policy is never asked about."""
        gallery, server = served()
        host = Host("decline")
        with anyio.fail_after(10):
            async with Client(create_server(server), mode=era, elicitation_callback=host) as c:
                plain = await c.call_tool("copy", {"path": "a"})
                forced = await c.call_tool("copy", {"path": "b", "overwrite": True})
                counted = await c.call_tool("count", {"text": "x y"})
        assert (text_of(plain), text_of(counted)) == ("copied a", "2")
        assert text_of(forced) == (
            "Tool call 'copy' was denied; it did not run: the user declined it"
        )
        assert gallery.copied == ["a"]
        assert ["overwrite: true" in question.message for question in host.asked] == [True]

    @pytest.mark.anyio
    async def test_a_failing_policy_refuses(self, caplog):
        """A policy that raises is an isError result naming the exception type, logged;
        the call never ran."""

        def broken(ctx: Any) -> bool:
            raise KeyError("secret")

        gallery = mcp_apps.Gallery()
        server = ToolServer()
        server.register_tools(tool_definitions(gallery), requires_approval=broken)
        host = Host("accept", APPROVING)
        with (
            anyio.fail_after(10),
            caplog.at_level(logging.ERROR, logger="llm_worker.mcp"),
        ):
            async with Client(create_server(server), elicitation_callback=host) as client:
                result = await client.call_tool("count", {"text": "x"})
        assert (text_of(result), result.is_error) == (
            "Internal error: could not tell whether tool call 'count' needs approval (KeyError)",
            True,
        )
        assert host.asked == []
        assert "The approval policy of tool 'count' failed" in caplog.text

    @pytest.mark.anyio
    async def test_a_host_error_refuses(self):
        """A host that answers the question with an error: a refusal naming it."""
        gallery, server = served()

        async def failing(context: Any, params: Any) -> types.ErrorData:
            return types.ErrorData(code=-32000, message="the user is away")

        with anyio.fail_after(10):
            async with Client(
                create_server(server), mode="legacy", elicitation_callback=failing
            ) as client:
                result = await client.call_tool("delete", {"path": "/tmp/a"})
        assert result.is_error
        assert text_of(result) == (
            "Tool call 'delete' did not run: it needs a user's approval, and asking for it "
            "failed (MCPError: the user is away)"
        )
        assert gallery.deleted == []


class TestAnswersAreBound:
    """In the 2026-07-28 era the answer comes with a retry: it approves only its own call."""

    @pytest.mark.anyio
    async def test_an_answer_approves_only_the_call_asked_about(self):
        """An approval sent with other arguments, or with a state we never made, is no
        approval: the question is asked again and nothing runs; with the call asked about,
        it runs."""
        gallery, server = served()
        yes = {"approval": types.ElicitResult(action="accept", content=APPROVING)}
        host = Host("accept", APPROVING)  # declares elicitation; never called here
        with anyio.fail_after(10):
            async with Client(
                create_server(server), mode="auto", elicitation_callback=host
            ) as client:
                session = client.session
                asked = await session.call_tool(
                    "delete", {"path": "/tmp/a"}, allow_input_required=True
                )
                assert isinstance(asked, types.InputRequiredResult)
                other = await session.call_tool(
                    "delete",
                    {"path": "/etc"},
                    input_responses=yes,
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
                forged = await session.call_tool(
                    "delete",
                    {"path": "/tmp/a"},
                    input_responses=yes,
                    request_state="0" * 64,
                    allow_input_required=True,
                )
                unasked = await session.call_tool(
                    "delete", {"path": "/tmp/a"}, input_responses=yes, allow_input_required=True
                )
                assert gallery.deleted == []
                approved = await session.call_tool(
                    "delete",
                    {"path": "/tmp/a"},
                    input_responses=yes,
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
        for again in (other, forged, unasked):
            assert isinstance(again, types.InputRequiredResult)
        assert isinstance(approved, types.CallToolResult)
        assert text_of(approved) == "deleted /tmp/a"
        assert gallery.deleted == ["/tmp/a"]
        assert host.asked == []


@pytest.fixture(scope="module")
def stdio_parameters() -> StdioServerParameters:
    return StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], f"{APPS}:rich_factory"], cwd=ROOT
    )


class TestOverStdio:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("answer", "text", "is_error"),
        [
            (("accept", APPROVING), "deleted /tmp/a", False),
            (("decline", None), DECLINED, True),
            (None, UNAVAILABLE, True),
        ],
        ids=["accept", "decline", "no-elicitation"],
    )
    async def test_the_host_is_asked(self, stdio_parameters, tmp_path, answer, text, is_error):
        """`llm-worker mcp serve` over stdio asks an SDK ClientSession that supports
        elicitation, and refuses one that does not."""
        host = None if answer is None else Host(*answer)
        with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errlog, anyio.fail_after(30):
            async with (
                stdio_client(stdio_parameters, errlog=errlog) as (read, write),
                ClientSession(read, write, elicitation_callback=host) as session,
            ):
                await session.initialize()
                result = await session.call_tool("delete", {"path": "/tmp/a"})
        assert (text_of(result), result.is_error) == (text, is_error)
        if host is not None:
            assert len(host.asked) == 1


FAILED = "Tool call 'delete' did not run: it needs a user's approval, and asking for it failed"
NO_RESPONSE = f"{FAILED} (MCPError: Invalid response: not a valid JSON-RPC response)"
# The answer to the question, each as no SDK client sends it, and what the model reads.
BAD_ANSWERS = [
    pytest.param({"result": "yes"}, NO_RESPONSE, id="result-a-string"),
    pytest.param({"result": None}, NO_RESPONSE, id="result-null"),
    pytest.param({"error": "the user is away"}, NO_RESPONSE, id="error-a-string"),
    pytest.param(
        {"result": {"x": json.loads("[" * 210 + "]" * 210)}},
        # The deepest array is inside the message, its result and 209 arrays.
        f"{FAILED} (MCPError: Invalid response: nested 211 levels deep, more than the 200 the "
        "server reads)",
        id="nested-too-deeply",
    ),
    pytest.param(
        {"result": {"action": "bogus"}},
        f"{FAILED} (the answer is not valid MCP: at /action: Input should be 'accept', "
        "'cancel' or 'decline')",
        id="no-elicit-result",
    ),
]


class RawClient:
    """A client of an ``llm-worker mcp serve`` process that writes its JSON-RPC lines itself:
    it answers the server's question as no SDK client would."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)

    async def send(self, message: dict[str, Any]) -> None:
        await self._stdin.send(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        line = await self._stdout.receive_until(b"\n", 1_000_000)
        message: dict[str, Any] = json.loads(line)
        return message


@asynccontextmanager
async def raw_client(stderr: Path) -> AsyncIterator[RawClient]:
    """A ``RawClient`` of a server of ``rich_factory``, initialized (with elicitation)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    with stderr.open("w", encoding="utf-8") as errlog:
        process = await anyio.open_process(
            [*SERVE, f"{APPS}:rich_factory"], cwd=ROOT, env=server_env(), stderr=errlog
        )
    async with process:  # closes stdin (the server exits), and waits for it
        client = RawClient(process)
        await client.send(initialize)
        assert (await client.receive())["id"] == "init"
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield client


class TestAnswersNoSdkClientSends:
    @pytest.mark.anyio
    @pytest.mark.parametrize(("answer", "text"), BAD_ANSWERS)
    async def test_the_call_is_refused_at_once(self, tmp_path, answer, text):
        """A response to the question that is no valid JSON-RPC response, or whose result is
        no valid answer, refuses the call with a short text (never pydantic's dump); the
        call neither waits for ever nor runs, and the server goes on serving."""
        call = {"name": "delete", "arguments": {"path": "/tmp/a"}}
        with anyio.fail_after(30):
            async with raw_client(tmp_path / "stderr.txt") as client:
                await client.send(
                    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
                )
                question = await client.receive()
                assert question["method"] == "elicitation/create"
                await client.send({"jsonrpc": "2.0", "id": question["id"], **answer})
                refused = await client.receive()
                await client.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
                ping = await client.receive()
        assert refused["id"] == 1
        assert refused["result"]["isError"] is True
        assert refused["result"]["content"] == [{"type": "text", "text": text}]
        assert ping == {"jsonrpc": "2.0", "id": 2, "result": {}}
        stderr = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
        if "MCPError: Invalid response" in text:
            assert (
                "WARNING llm_worker.mcp: passed a line on stdin on as an error response "
                f"(id {question['id']}): Invalid response: "
            ) in stderr


class TestPolicyOnMcpTools:
    @pytest.mark.anyio
    async def test_destructive_remote_tools_need_approval(self):
        """requires_approval=lambda ctx: ctx.meta.annotations.destructive is True holds the
        destructive remote tool for a decision (and its response's other calls with it); denied,
        it never reaches the server, and the read-only one runs."""
        calls: list[str] = []
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("erase", {}, id="e"),
                        ScriptedCall("peek", {}, id="p"),
                    ]
                ),
                "done",
            ]
        )
        worker = Worker(client)
        async with Client(remote(calls), mode="legacy") as session:
            worker.register_tools(
                await mcp_tool_definitions(session),
                requires_approval=lambda ctx: ctx.meta.annotations.destructive is True,
            )
            with anyio.fail_after(10):
                assert await worker.run("tidy up") is WorkerResult.PAUSED
                assert [pending.call.name for pending in worker.pending] == ["erase"]
                assert worker.pending[0].meta.annotations.destructive is True
                assert calls == []
                assert await worker.resume(Deny("not now")) is WorkerResult.FINISHED
        assert calls == ["peek"]


@tool_registry
class Files:
    def __init__(self) -> None:
        self.written: list[str] = []

    @tool(requires_approval=True)
    async def write(self, content: str, path: str) -> str:
        """Write a file."""
        self.written.append(path)
        return f"wrote {path}"


class TestTheQuestion:
    @pytest.mark.anyio
    async def test_a_long_argument_cannot_hide_another(self):
        """Every argument the tool takes is in the question, each cut short on its own: a
        model cannot push the path out of sight with a long harmless content."""
        files = Files()
        server = ToolServer()
        server.register_tools(tool_definitions(files))
        host = Host("decline")
        arguments = {
            "content": "harmless notes " * 200,
            "path": "/home/me/.bashrc",
            'x: 1\npath: "/tmp/safe"': 1,  # a name the tool does not take cannot fake a line
        }
        with anyio.fail_after(10):
            async with Client(create_server(server), elicitation_callback=host) as client:
                result = await client.call_tool("write", arguments)
        assert result.is_error
        assert files.written == []
        [question] = host.asked
        lines = question.message.split("\n")
        assert lines[0] == "Allow the tool 'write' to run with these arguments?"
        assert lines[1].startswith('content: "harmless notes harmless')
        # Cut in the middle: its end shows too.
        assert lines[1].endswith('harmless notes " (3002 characters)')
        assert "…" in lines[1]
        assert lines[2:] == ['path: "/home/me/.bashrc"', '"x: 1\\npath: \\"/tmp/safe\\"": 1']
        assert len(question.message) < 2_200

    @pytest.mark.anyio
    async def test_a_tool_that_takes_any_names_shows_every_one(self):
        """A schema open to other names (a map of settings): every name is one the tool
        takes, so all of them are shown, however many come first."""
        settings: dict[str, str] = {}

        class SetEnv:
            async def execute(self, input_json: str) -> str:
                settings.update(json.loads(input_json))
                return "set"

        meta = ToolMeta(
            name="setenv",
            description="Set environment variables.",
            input_schema={"type": "object", "additionalProperties": {"type": "string"}},
        )
        server = ToolServer()
        server.register_tool(lambda: (meta, SetEnv()), requires_approval=True)
        host = Host("decline")
        arguments = {f"HARMLESS_{n}": "1" for n in range(8)} | {"LD_PRELOAD": "/tmp/evil.so"}
        with anyio.fail_after(10):
            async with Client(create_server(server), elicitation_callback=host) as client:
                await client.call_tool("setenv", arguments)
        [question] = host.asked
        assert '"LD_PRELOAD": "/tmp/evil.so"' in question.message.split("\n")
        assert "more arguments" not in question.message
        assert settings == {}

    def test_line_breaks_json_leaves_are_escaped(self):
        entry_meta = ToolMeta(
            name="note", input_schema={"type": "object", "properties": {"text": {}}}
        )
        server = ToolServer()
        server.register_tool(lambda: (entry_meta, Files().write.definition()()[1]))
        entry = entry_of(server.handle(), "note")
        assert entry is not None
        question = approval_question(entry, {"text": "a\u2028b\u0085c\u2029d"})
        assert question.splitlines() == [
            "Allow the tool 'note' to run with these arguments?",
            'text: "a\\u2028b\\u0085c\\u2029d"',
        ]
