"""MCP against hostile tools, clients and networks: the server stays up, the network stays shut.

- A served tool raising ``SystemExit``, ``KeyboardInterrupt`` or another
  ``BaseException``, or returning a lone surrogate, gets an ``isError`` result
  (or a valid text) and the server goes on serving, in-process, over stdio and
  over HTTP. Over stdio the process exits promptly once the client has gone,
  even while a plain-``def`` tool still runs.
- Over HTTP, Host/Origin checks hold on every bind address, a bearer token can
  be required, the session idle timeout and cap apply, a request whose id MCP
  does not allow is answered, and an answer to the question for an approval that
  is no JSON-RPC response fails the question: real requests against a real
  ``llm-worker mcp serve`` process.
- The client scrubs remote error texts, refuses NaN before sending, does not
  offer task-only tools, and with ``mcp_http_client()`` survives its server.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import hostile_apps
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp_support import (
    GUARD,
    HOSTILE,
    ROOT,
    SERVE,
    connect,
    free_port,
    hostile_stdio_session,
    server_env,
    text_of,
    wait_until_listening,
)
from test_mcp_stdio_unreadable import exchange

from llm_worker import (
    ExecutionFailedError,
    InvalidArgumentError,
    ToolResult,
    Worker,
    tool_definitions,
)
from llm_worker.mcp import McpToolDefinition, create_server, mcp_http_client, mcp_tool_definitions
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = [
    pytest.mark.anyio,
    # As in test_mcp_http: the SDK's HTTP client leaves response iterators to the collector.
    pytest.mark.filterwarnings(
        r"ignore:Async generator 'http(core|x)2\.[\w.]+' was garbage collected:ResourceWarning"
    ),
]

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
# Each hostile call, and what the client reads (isError).
HOSTILE_CALLS = [
    ("parse", {"flag": "--bogus"}, "Internal error: tool 'parse' failed unexpectedly (SystemExit)"),
    ("interrupt", {}, "Internal error: tool 'interrupt' failed unexpectedly (KeyboardInterrupt)"),
    ("custom", {}, "Execution failed: custom"),
]


class TestServedToolsCannotStopTheServer:
    @pytest.mark.parametrize(("name", "arguments", "text"), HOSTILE_CALLS)
    async def test_in_process(self, name, arguments, text):
        """The call is an isError result; the next call is served as usual."""
        async with connect(create_server(hostile_apps.factory())) as session:
            result = await session.call_tool(name, arguments)
            assert (text_of(result), result.is_error) == (text, True)
            after = await session.call_tool("echo", {"text": "still here"})
        assert (text_of(after), after.is_error) == ("still here", False)

    async def test_a_lone_surrogate_is_replaced(self):
        """A result that is not valid Unicode reaches the client with U+FFFD in its place."""
        async with connect(create_server(hostile_apps.factory())) as session:
            result = await session.call_tool("listing", {})
        assert (text_of(result), result.is_error) == ("report-\ufffd.txt", False)

    async def test_over_stdio(self, tmp_path):
        """Over stdio: SystemExit, KeyboardInterrupt and a lone surrogate; the server goes on."""
        async with hostile_stdio_session(tmp_path) as session:
            texts = [
                text_of(await session.call_tool(name, arguments))
                for name, arguments, _ in HOSTILE_CALLS
            ]
            listing = text_of(await session.call_tool("listing", {}))
            echo = text_of(await session.call_tool("echo", {"text": "alive"}))
        assert texts == [text for _, _, text in HOSTILE_CALLS]
        assert (listing, echo) == ("report-\ufffd.txt", "alive")

    def test_stdio_server_exits_while_a_thread_tool_runs(self):
        """When the client goes away, the server exits at once, not when the tool returns."""
        messages = [
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 120}},
            },
        ]
        with subprocess.Popen(
            [*SERVE, HOSTILE],
            cwd=ROOT,
            env=server_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            try:
                for message in messages:
                    process.stdin.write((json.dumps(message) + "\n").encode())
                process.stdin.flush()
                assert b'"id":1' in process.stdout.readline()
                while b"sleeping" not in process.stderr.readline():
                    pass  # the tool now blocks its thread for two minutes
                process.stdin.close()  # the host went away
                assert process.wait(timeout=GUARD) == 0
            finally:
                if process.poll() is None:  # pragma: no cover - only on a regression
                    process.kill()
                    process.wait(timeout=GUARD)


@dataclass
class HttpServer:
    port: int
    process: subprocess.Popen[str]
    stderr: Path

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/mcp"


@pytest.fixture
def http_server(tmp_path) -> Iterator[Any]:
    """Start ``llm-worker mcp serve`` over HTTP with the given options; stop it afterwards."""
    started: list[HttpServer] = []

    def start(*options: str, env: dict[str, str] | None = None) -> HttpServer:
        port = free_port()
        stderr = tmp_path / f"stderr-{len(started)}.txt"
        with stderr.open("w", encoding="utf-8") as errlog:
            process = subprocess.Popen(
                [*SERVE, HOSTILE, "--transport", "http", "--port", str(port), *options],
                cwd=ROOT,
                env={**server_env(), **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errlog,
                text=True,
            )
        server = HttpServer(port, process, stderr)
        started.append(server)
        host = options[options.index("--host") + 1] if "--host" in options else "127.0.0.1"
        wait_until_listening(port, process, host="127.0.0.1" if host == "0.0.0.0" else host)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGTERM)
            try:
                server.process.wait(timeout=GUARD)
            except subprocess.TimeoutExpired:  # pragma: no cover - only if it hangs
                server.process.kill()
                server.process.wait(timeout=GUARD)


async def post(
    server: HttpServer, *, host: str | None = None, body: Any = INITIALIZE, **headers: str
) -> httpx2.Response:
    """One raw POST to the server (on 127.0.0.1), with the Host header ``host`` if given."""
    sent = {**ACCEPT, **headers}
    if host is not None:
        sent["Host"] = host
    async with httpx2.AsyncClient() as client:
        with anyio.fail_after(GUARD):
            return await client.post(server.url(), headers=sent, json=body)


@asynccontextmanager
async def session_for(url: str, **headers: str):
    async with (
        mcp_http_client(headers=headers or None) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


class TestServedToolsCannotStopTheHttpServer:
    async def test_system_exit_in_a_tool(self, http_server):
        """Over HTTP: the call is an isError result, and the next client is served."""
        server = http_server()
        with anyio.fail_after(GUARD):
            async with session_for(server.url()) as session:
                result = await session.call_tool("parse", {"flag": "--bogus"})
            async with session_for(server.url()) as session:
                after = await session.call_tool("echo", {"text": "alive"})
        assert (text_of(result), result.is_error) == (HOSTILE_CALLS[0][2], True)
        assert (text_of(after), after.is_error) == ("alive", False)
        assert server.process.poll() is None


class TestHostAndOrigin:
    async def test_every_loopback_address_is_protected(self, http_server):
        """On 127.0.0.2 too (not a literal loopback name), a foreign Host header gets 421."""
        server = http_server("--host", "127.0.0.2")
        with anyio.fail_after(GUARD):
            async with httpx2.AsyncClient() as client:
                url = server.url("127.0.0.2")
                foreign_host = {**ACCEPT, "Host": "evil.example"}
                foreign = await client.post(url, headers=foreign_host, json=INITIALIZE)
                own = await client.post(url, headers=ACCEPT, json=INITIALIZE)
        assert (foreign.status_code, own.status_code) == (421, 200)

    async def test_a_wildcard_bind_is_protected_and_warned_about(self, http_server):
        """On 0.0.0.0: loopback names and --allow-host names pass, others get 421, a foreign
        Origin gets 403, and a warning says the tools are reachable from other machines."""
        server = http_server("--host", "0.0.0.0", "--allow-host", "tools.lan")
        port = server.port
        statuses = [
            (await post(server, host=f"127.0.0.1:{port}")).status_code,
            (await post(server, host=f"tools.lan:{port}")).status_code,
            (await post(server, host=f"evil.example:{port}")).status_code,
            (await post(server, Origin="https://evil.example")).status_code,
            (await post(server, Origin=f"http://tools.lan:{port}")).status_code,
        ]
        assert statuses == [200, 200, 421, 403, 200]
        stderr = server.stderr.read_text(encoding="utf-8")
        assert "WARNING llm_worker.mcp: listening on 0.0.0.0, reachable from other machines" in (
            stderr
        )

    async def test_allowed_origins_can_be_added(self, http_server):
        """--allow-origin admits a browser origin that is not the server's own."""
        server = http_server("--allow-origin", "https://app.example.com")
        admitted = await post(server, Origin="https://app.example.com")
        refused = await post(server, Origin="https://other.example.com")
        assert (admitted.status_code, refused.status_code) == (200, 403)


class TestRequestIds:
    async def test_a_request_whose_id_mcp_does_not_allow_gets_400(self, http_server):
        """A POST of a request whose id is not a string or an integer gets 400 with -32600
        and id null, and a warning (the SDK would accept it as a notification, 202, and
        never answer); a foreign Host is still refused first; the session goes on."""
        server = http_server()
        odd_ids: list[Any] = [1.5, None, True, {"a": 1}, [1]]
        with anyio.fail_after(GUARD):
            async with httpx2.AsyncClient() as client:
                first = await client.post(server.url(), headers=ACCEPT, json=INITIALIZE)
                session = {
                    **ACCEPT,
                    "Mcp-Session-Id": first.headers["mcp-session-id"],
                    "Mcp-Protocol-Version": "2025-06-18",
                }
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await client.post(server.url(), headers=session, json=initialized)
                answers = [
                    await client.post(
                        server.url(),
                        headers=session,
                        json={"jsonrpc": "2.0", "id": odd_id, "method": "ping"},
                    )
                    for odd_id in odd_ids
                ]
                foreign = await client.post(
                    server.url(),
                    headers={**session, "Host": "evil.example"},
                    json={"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
                )
                ping = await client.post(
                    server.url(),
                    headers=session,
                    json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                )
        invalid = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid Request"},
        }
        assert [(a.status_code, a.json()) for a in answers] == [(400, invalid)] * len(odd_ids)
        assert (foreign.status_code, ping.status_code) == (421, 200)
        assert '"id":9' in ping.text
        warnings = [
            line
            for line in server.stderr.read_text(encoding="utf-8").splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered")
        ]
        assert warnings == [
            "WARNING llm_worker.mcp: answered a POST with Invalid Request (-32600): "
            f"a request's id must be a string or an integer, not {kind}"
            for kind in ["1.5", "null", "true", "an object", "an array"]
        ]

    async def test_json_that_is_no_message_gets_400_invalid_request_as_over_stdio(
        self, http_server
    ):
        """A POST of JSON that is no JSON-RPC message (a batch, no "jsonrpc", another version,
        params that are no object) gets 400 with -32600 Invalid Request, id null, and the
        warning a line on stdin gets (the SDK answered -32602 with pydantic's dump of why);
        a body that is not JSON keeps the SDK's -32700; the session goes on."""
        server = http_server()
        bodies = [
            b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
            b'{"foo": 1}',
            b'{"id": 2, "method": "ping"}',
            b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}',
            b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": 5}',
        ]
        with anyio.fail_after(GUARD):
            async with httpx2.AsyncClient() as client:
                first = await client.post(server.url(), headers=ACCEPT, json=INITIALIZE)
                session = {
                    **ACCEPT,
                    "Mcp-Session-Id": first.headers["mcp-session-id"],
                    "Mcp-Protocol-Version": "2025-06-18",
                }
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await client.post(server.url(), headers=session, json=initialized)
                answers = [
                    await client.post(server.url(), headers=session, content=body)
                    for body in bodies
                ]
                not_json = await client.post(server.url(), headers=session, content=b"{nope")
                ping = await client.post(
                    server.url(),
                    headers=session,
                    json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                )
        invalid = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": "Invalid Request"},
        }
        assert [(a.status_code, a.json()) for a in answers] == [(400, invalid)] * len(bodies)
        assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, -32700)
        assert (ping.status_code, '"id":9' in ping.text) == (200, True)
        warnings = [
            line
            for line in server.stderr.read_text(encoding="utf-8").splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered")
        ]
        assert warnings == [
            "WARNING llm_worker.mcp: answered a POST with Invalid Request (-32600): "
            "not a JSON-RPC message"
        ] * len(bodies)
        # The same lines over stdio: the same answers, the same warnings.
        lines = [json.dumps(INITIALIZE).encode(), *bodies]
        over_stdio, stderr = exchange([*SERVE, HOSTILE], lines, 1 + len(bodies))
        assert over_stdio[1:] == [invalid] * len(bodies)
        assert [
            line.replace("a line on stdin", "a POST")
            for line in stderr.splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered")
        ] == warnings


async def _next_event(lines: AsyncIterator[str]) -> dict[str, Any]:
    """The next JSON-RPC message of a POST's event stream (past events without data)."""
    async for line in lines:
        if line.startswith("data:") and line[5:].strip():
            message: dict[str, Any] = json.loads(line[5:])
            return message
    raise AssertionError("the event stream ended")


class TestApprovalAnswersOverHttp:
    async def test_an_answer_that_is_no_response_refuses_the_call(self, http_server):
        """A POST answering the question for an approval with no valid JSON-RPC response
        ("result": "yes") gets 202 and fails the question: the call, waiting on its own
        event stream, is refused at once (it never ran), with a warning; the SDK dropped the
        answer (400), and the call waited for ever."""
        server = http_server()
        initialize = {
            **INITIALIZE,
            "params": {**INITIALIZE["params"], "capabilities": {"elicitation": {}}},
        }
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "remove", "arguments": {"path": "/tmp/a"}},
        }
        with anyio.fail_after(GUARD):
            async with httpx2.AsyncClient(timeout=GUARD) as client:
                first = await client.post(server.url(), headers=ACCEPT, json=initialize)
                session = {
                    **ACCEPT,
                    "Mcp-Session-Id": first.headers["mcp-session-id"],
                    "Mcp-Protocol-Version": "2025-06-18",
                }
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await client.post(server.url(), headers=session, json=initialized)
                async with client.stream(
                    "POST", server.url(), headers=session, json=call
                ) as events:
                    lines = events.aiter_lines()
                    question = await _next_event(lines)
                    answer = {"jsonrpc": "2.0", "id": question["id"], "result": "yes"}
                    posted = await client.post(server.url(), headers=session, json=answer)
                    refused = await _next_event(lines)
        assert question["method"] == "elicitation/create"
        assert posted.status_code == 202
        assert refused["id"] == 2
        assert refused["result"]["isError"] is True
        assert refused["result"]["content"] == [
            {
                "type": "text",
                "text": "Tool call 'remove' did not run: it needs a user's approval, and asking "
                "for it failed (MCPError: Invalid response: not a valid JSON-RPC response)",
            }
        ]
        assert (
            f"WARNING llm_worker.mcp: passed a POST on as an error response (id {question['id']}): "
            "Invalid response: not a valid JSON-RPC response"
        ) in server.stderr.read_text(encoding="utf-8")


def _slow_post(port: int, *, declared: int, hold: float) -> tuple[bytes, float | None]:
    """A POST to the server declaring a ``declared``-byte body, of which it sends a byte now
    and then for up to ``hold`` seconds: what the server answered, and when it closed the
    connection (``None``: still open)."""
    start = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=GUARD) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            b"Content-Length: %d\r\n\r\n{" % declared
        )
        sock.settimeout(0.5)
        while time.monotonic() - start < hold:
            try:
                sock.sendall(b" ")
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:  # reset: the server closed it
                return answer, time.monotonic() - start
            if not chunk:
                return answer, time.monotonic() - start
            answer += chunk
    return answer, None


class TestSlowClients:
    def test_a_body_that_never_comes_whole_gets_408_and_is_closed(self, http_server):
        """A POST whose declared body never comes whole (a byte now and then): 408 once
        BODY_TIMEOUT_SECONDS have passed, and the connection closed, with a warning (it was
        held open for good, a descriptor and a task each); the server goes on."""
        from llm_worker.mcp._serve import BODY_TIMEOUT_SECONDS

        server = http_server()
        answer, closed = _slow_post(server.port, declared=100_000, hold=BODY_TIMEOUT_SECONDS + 10)
        assert closed is not None
        assert BODY_TIMEOUT_SECONDS - 1 < closed < BODY_TIMEOUT_SECONDS + 5
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert answer.endswith(b"Request Timeout: the body did not come whole within 10 s")
        warnings = [
            line
            for line in server.stderr.read_text(encoding="utf-8").splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered a POST with 408")
        ]
        assert warnings == [
            "WARNING llm_worker.mcp: answered a POST with 408 Request Timeout: its body did "
            "not come whole within 10 s"
        ]
        with httpx2.Client(timeout=GUARD) as client:
            assert client.post(server.url(), headers=ACCEPT, json=INITIALIZE).status_code == 200

    def test_connections_past_the_cap_get_503(self, http_server):
        """With MAX_CONNECTIONS connections open, a request on one more gets 503 (uvicorn's
        limit_concurrency; there was no cap: each connection took a descriptor until the
        process had none left); once they close, requests are served again."""
        from llm_worker.mcp._serve import MAX_CONNECTIONS

        resource = pytest.importorskip("resource")  # POSIX: the descriptors both sides need
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = MAX_CONNECTIONS + 200
        if soft < wanted and hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"needs {wanted} file descriptors (RLIMIT_NOFILE {soft}/{hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))  # the server's too
        try:
            server = http_server()
            held: list[socket.socket] = []
            try:
                for _ in range(MAX_CONNECTIONS):
                    address = ("127.0.0.1", server.port)
                    held.append(socket.create_connection(address, timeout=GUARD))
                with httpx2.Client(timeout=GUARD) as client:
                    refused = client.post(server.url(), headers=ACCEPT, json=INITIALIZE)
            finally:
                for sock in held:
                    sock.close()
            with httpx2.Client(timeout=GUARD) as client:
                deadline = time.monotonic() + GUARD
                while True:
                    served = client.post(server.url(), headers=ACCEPT, json=INITIALIZE)
                    if served.status_code != 503 or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert (refused.status_code, served.status_code) == (503, 200)


class TestBearerToken:
    async def test_requests_without_the_token_are_refused(self, http_server):
        """With --auth-token-env, no token or a wrong one gets 401; the right one is served."""
        token = "t0ken-for-tests"
        server = http_server("--auth-token-env", "MCP_TEST_TOKEN", env={"MCP_TEST_TOKEN": token})
        missing = await post(server)
        wrong = await post(server, Authorization="Bearer not-it")
        assert (missing.status_code, wrong.status_code) == (401, 401)
        assert missing.headers["www-authenticate"] == 'Bearer realm="mcp"'
        with anyio.fail_after(GUARD):
            async with session_for(server.url(), Authorization=f"Bearer {token}") as session:
                result = await session.call_tool("echo", {"text": "authorized"})
        assert text_of(result) == "authorized"

    def test_a_missing_token_variable_is_a_usage_error(self):
        """--auth-token-env naming an unset variable: exit 2, one line."""
        done = subprocess.run(
            [*SERVE, HOSTILE, "--transport", "http", "--auth-token-env", "NO_SUCH_TOKEN_VAR"],
            cwd=ROOT,
            env=server_env(),
            capture_output=True,
            text=True,
            timeout=GUARD,
        )
        assert (done.returncode, done.stderr) == (
            2,
            "python -m llm_worker mcp serve: error: --auth-token-env: the environment variable "
            "NO_SUCH_TOKEN_VAR is not set\n",
        )


class TestSessions:
    async def test_the_session_cap(self, http_server):
        """With --max-sessions 1, a second session gets 503 while the first is open."""
        server = http_server("--max-sessions", "1")
        first = await post(server)
        second = await post(server)
        assert (first.status_code, second.status_code) == (200, 503)

    async def test_the_idle_timeout(self, http_server):
        """With --session-idle-timeout, an idle session is closed: its id then gets 404."""
        server = http_server("--session-idle-timeout", "0.2")
        session_id = (await post(server)).headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        with anyio.fail_after(GUARD):
            while True:
                # Longer than the timeout between requests: each request is activity.
                await anyio.sleep(0.6)
                status = (
                    await post(server, body=ping, **{"mcp-session-id": session_id})
                ).status_code
                if status == 404:
                    break


class TestClientSurvivesItsServer:
    async def test_calls_after_the_server_died_fail_one_by_one(self, http_server):
        """With mcp_http_client(), each call after the server is killed says it cannot
        connect, naming the address, the worker's run goes on, and nothing escapes the
        session."""
        server = http_server()
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[
                        ScriptedCall("echo", {"text": "one"}, id="c1"),
                        ScriptedCall("echo", {"text": "two"}, id="c2"),
                    ]
                ),
                "Done.",
            ]
        )
        with anyio.fail_after(GUARD):
            async with session_for(server.url()) as session:
                worker = Worker(client)
                worker.register_tools(await mcp_tool_definitions(session))
                server.process.kill()
                server.process.wait(timeout=GUARD)
                await worker.lock().run("echo twice")
        closed = (
            "Execution failed: MCP error: cannot connect to the MCP server: Connection "
            "refused (ConnectError)"
        )
        results = [item for item in worker.history if isinstance(item, ToolResult)]
        assert results == [ToolResult("c1", closed, True), ToolResult("c2", closed, True)]


def remote(tools: list[types.Tool], answer: types.CallToolResult, calls: list[Any]) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        calls.append(params.arguments)
        return answer

    return Server("remote", on_list_tools=list_tools, on_call_tool=call_tool)


OBJECT = {"type": "object", "properties": {}}


class TestClient:
    async def test_remote_error_texts_are_made_safe(self, monkeypatch):
        """A server's isError text is scrubbed and capped like a local exception's."""
        monkeypatch.setenv("REMOTE_API_KEY", "sk-remote-123456")
        text = "cannot open /srv/app/data.db with sk-remote-123456 at <Conn object at 0x7f01>"
        answer = types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        calls: list[Any] = []
        server = remote([types.Tool(name="open", input_schema=OBJECT)], answer, calls)
        async with connect(server) as session:
            [definition] = await mcp_tool_definitions(session)
            with pytest.raises(ExecutionFailedError) as excinfo:
                await definition()[1].execute("{}")
        assert (
            str(excinfo.value)
            == "Execution failed: cannot open <path> with <redacted> at <Conn object>"
        )

    async def test_a_long_remote_error_is_capped(self):
        """At most 500 characters of a server's error text are passed on."""
        answer = types.CallToolResult(
            content=[types.TextContent(text="e" * 100_000)], is_error=True
        )
        server = remote([types.Tool(name="open", input_schema=OBJECT)], answer, [])
        async with connect(server) as session:
            [definition] = await mcp_tool_definitions(session)
            with pytest.raises(ExecutionFailedError) as excinfo:
                await definition()[1].execute("{}")
        assert str(excinfo.value) == "Execution failed: " + "e" * 499 + "…"

    @pytest.mark.parametrize("literal", ["NaN", "-Infinity", "1e100000"])
    async def test_non_json_arguments_are_never_sent(self, literal):
        """NaN, infinities and out-of-range numbers are refused before anything is sent."""
        answer = types.CallToolResult(content=[types.TextContent(text="ok")])
        calls: list[Any] = []
        server = remote([types.Tool(name="pay", input_schema=OBJECT)], answer, calls)
        async with connect(server) as session:
            [definition] = await mcp_tool_definitions(session)
            with pytest.raises(InvalidArgumentError, match="not valid JSON"):
                await definition()[1].execute(f'{{"amount": {literal}}}')
        assert calls == []

    async def test_task_only_tools_are_not_offered(self, caplog):
        """A tool the server runs only as a task is left out, with a warning; building its
        definition directly is a ValueError."""
        task_only = types.Tool(
            name="render",
            input_schema=OBJECT,
            execution=types.ToolExecution(task_support="required"),
        )
        optional = types.Tool(
            name="quick",
            input_schema=OBJECT,
            execution=types.ToolExecution(task_support="optional"),
        )
        answer = types.CallToolResult(content=[types.TextContent(text="ok")])
        caplog.set_level(logging.WARNING, logger="llm_worker.mcp")
        async with connect(remote([task_only, optional], answer, [])) as session:
            definitions = await mcp_tool_definitions(session)
            assert [d.meta.name for d in definitions] == ["quick"]  # type: ignore[attr-defined]
            with pytest.raises(ValueError, match="can only be called as a task"):
                McpToolDefinition(session, task_only)
        assert [r.getMessage() for r in caplog.records if r.name == "llm_worker.mcp"] == [
            "MCP tool 'render' is not offered: the server only runs it as a task "
            "(execution.taskSupport: required)"
        ]


class _Plain:
    """A hand-written tool: no limits of its own."""

    def __init__(self, answer: str = "", wait: float = 0) -> None:
        self.answer, self.wait = answer, wait

    async def execute(self, input_json: str) -> str:
        await anyio.sleep(self.wait)
        return self.answer or f"got {len(input_json)} bytes"


def _plain_tools() -> Any:
    from llm_worker import ToolMeta, ToolServer

    server = ToolServer()
    for name, tool in [
        ("echo_size", _Plain()),
        ("big", _Plain("x" * 5_000)),
        ("slow", _Plain(wait=30)),
    ]:
        server.register_tool(lambda name=name, tool=tool: (ToolMeta(name=name), tool))
    return server


async def _worker_result(
    definitions: Any, limits: Any, name: str, arguments: dict[str, Any]
) -> ToolResult:
    """What a Worker with ``limits`` gives its model for one call of ``name``."""
    client = ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall(name, arguments)]), "ok"])
    worker = Worker(client, limits=limits)
    worker.register_tools(definitions)
    await worker.run("go")
    [result] = [item for item in worker.history if isinstance(item, ToolResult)]
    return result


class TestServedLimits:
    async def test_without_limits_a_hand_written_tool_has_none(self):
        async with connect(create_server(_plain_tools())) as session:
            result = await session.call_tool("big", {})
        assert text_of(result) == "x" * 5_000

    async def test_limits_hold_every_call(self):
        """create_server(limits=...): the sizes, the result cap and the timeout a Worker
        holds its calls to (a hand-written tool had none: a 20 MB input, a 50 MB result,
        a call never ending)."""
        from llm_worker import Limits

        limits = Limits(max_input_bytes=1_000, max_result_bytes=1_000, tool_timeout=0.2)
        with anyio.fail_after(GUARD):
            async with connect(create_server(_plain_tools(), limits=limits)) as session:
                refused = await session.call_tool("echo_size", {"text": "y" * 2_000})
                capped = await session.call_tool("big", {})
                slow = await session.call_tool("slow", {})
        assert refused.is_error
        assert text_of(refused).startswith("Invalid argument: input is ")
        assert len(text_of(capped).encode()) <= 1_000
        assert "[truncated: " in text_of(capped)
        assert slow.is_error
        assert "timed out after 0.2s" in text_of(slow)

    async def test_a_structured_result_over_the_cap_is_cut_into_an_error(self):
        """A tool with an output schema: a result over max_result_bytes is cut as a Worker
        cuts it, truncation note and all (it read only "returned a structured result of
        13891 bytes ... cannot be cut", none of the data), in an isError result without
        structuredContent (a cut value conforms to no schema). Under the cap it is
        structured."""
        from llm_worker import Limits, ToolServer, tool, tool_definitions, tool_registry

        @tool_registry
        class Numbers:
            @tool
            def numbers(self, n: int) -> list[int]:
                """The numbers below n."""
                return list(range(n))

        limits = Limits(max_result_bytes=2_000)
        with anyio.fail_after(GUARD):
            served = ToolServer()
            served.register_tools(tool_definitions(Numbers()))
            async with connect(create_server(served, limits=limits)) as s:
                big = await s.call_tool("numbers", {"n": 3_000})
                small = await s.call_tool("numbers", {"n": 3})
            local = await _worker_result(
                tool_definitions(Numbers()), limits, "numbers", {"n": 3_000}
            )
        assert (big.is_error, big.structured_content) == (True, None)
        assert (local.is_error, text_of(big)) == (False, local.content)
        assert text_of(big).startswith("[0,1,2,3,")
        assert text_of(big).endswith(
            ",494\n[truncated: 12021 of 13891 bytes dropped; narrow the request (filter, paginate "
            "or ask for less) to see the rest]"
        )
        assert not small.is_error
        assert small.structured_content == {"result": [0, 1, 2]}

    async def test_a_rich_structured_result_over_the_cap_is_cut_as_a_worker_cuts_it(self):
        """A hand-written tool with an output schema returning parts: its texts are cut
        together as a Worker cuts them (the one that crosses the cap ends in the note, those
        after it are left out), its media kept, in an isError result."""
        from llm_worker import (
            DataPart,
            Limits,
            MediaPart,
            TextPart,
            ToolMeta,
            ToolReturn,
            ToolServer,
        )

        class Report:
            async def execute(self, input_json: str) -> ToolReturn:
                rows = DataPart.of({"rows": ["r" * 50] * 100})
                image = MediaPart("image/png", data=b"\x89PNG")
                return ToolReturn([TextPart("head"), image, rows, TextPart("tail")])

        def definition() -> tuple[ToolMeta, Report]:
            return ToolMeta(name="report", output_schema={"type": "object"}), Report()

        served = ToolServer()
        served.register_tool(definition)
        limits = Limits(max_result_bytes=1_000)
        with anyio.fail_after(GUARD):
            async with connect(create_server(served, limits=limits)) as session:
                result = await session.call_tool("report", {})
            local = await _worker_result([definition], limits, "report", {})
        assert (result.is_error, result.structured_content) == (True, None)
        assert [block.type for block in result.content] == ["text", "image", "text"]
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        assert texts == [part.text for part in local.parts if isinstance(part, TextPart)]
        assert texts[0] == "head"
        assert texts[1].startswith('{"rows":["rrrr')
        assert texts[1].endswith("to see the rest]")  # and "tail", past the cap, left out

    async def test_a_structured_result_over_the_cli_cap_over_stdio(self, tmp_path):
        """`mcp serve --max-result-bytes`, over stdio: the SDK client reads the Worker's cut
        text in an isError result; a string result is cut as ever, not an error."""
        from llm_worker import Limits

        limits = Limits(max_result_bytes=2_000)
        params = StdioServerParameters(
            command=SERVE[0], args=[*SERVE[1:], HOSTILE, "--max-result-bytes", "2000"], cwd=ROOT
        )
        with (tmp_path / "stderr.txt").open("w") as errlog, anyio.fail_after(GUARD):
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = await session.call_tool("names", {"n": 500})
                echo = await session.call_tool("echo", {"text": "e" * 5_000})
            local = await _worker_result(
                tool_definitions(hostile_apps.Hostile()), limits, "names", {"n": 500}
            )
        assert (names.is_error, names.structured_content) == (True, None)
        assert (local.is_error, text_of(names)) == (False, local.content)
        assert "[truncated: 6629 of 8501 bytes dropped;" in text_of(names)
        assert not echo.is_error
        assert "[truncated: " in text_of(echo)

    async def test_an_error_of_a_structured_tool_is_cut_as_ever(self):
        """Its calls run uncapped (a structured result is measured whole): its error text
        is still cut at max_result_bytes (it went out whole: 100 KB under a 1 000 cap)."""
        from llm_worker import (
            ExecutionFailedError,
            Limits,
            ToolServer,
            tool,
            tool_definitions,
            tool_registry,
        )

        @tool_registry
        class Failing:
            @tool
            def count(self) -> dict[str, int]:
                """Counts, or fails at length."""
                raise ExecutionFailedError("\u00e9" * 50_000)

        served = ToolServer()
        served.register_tools(tool_definitions(Failing()))
        with anyio.fail_after(GUARD):
            limits = Limits(max_result_bytes=1_000)
            async with connect(create_server(served, limits=limits)) as session:
                result = await session.call_tool("count", {})
        assert result.is_error
        assert len(text_of(result).encode()) <= 1_000
        assert "[truncated: " in text_of(result)

    async def test_a_lone_surrogate_in_a_structured_result_is_replaced(self):
        """A file name os.listdir gave (not UTF-8) inside a structured result: U+FFFD, as in
        a text result (pydantic refused to write it: the repr went out, an isError)."""
        from llm_worker import ToolServer, tool, tool_definitions, tool_registry

        @tool_registry
        class Files:
            @tool
            def listing(self) -> dict[str, list[str]]:
                """The files."""
                return {"names": ["caf\udce9.txt", "plain.txt"]}

        with anyio.fail_after(GUARD):
            served = ToolServer()
            served.register_tools(tool_definitions(Files()))
            async with connect(create_server(served)) as session:
                result = await session.call_tool("listing", {})
        assert not result.is_error
        assert result.structured_content == {"names": ["caf\ufffd.txt", "plain.txt"]}
        assert json.loads(text_of(result)) == result.structured_content

    async def test_an_input_schema_without_a_type_is_an_object_schema(self):
        """ToolMeta(input_schema={}) was listed as it was, and the SDK refused the whole
        tools/list (every tool hidden by one): a root without a type is an object."""
        from llm_worker import ToolMeta, ToolServer

        server = ToolServer()
        server.register_tool(lambda: (ToolMeta(name="bare", input_schema={}), _Plain()))
        loose = {"properties": {"q": {"type": "string"}}}
        server.register_tool(lambda: (ToolMeta(name="loose", input_schema=loose), _Plain()))
        with anyio.fail_after(GUARD):
            async with connect(create_server(server)) as session:
                listed = await session.list_tools()
        schemas = {t.name: t.input_schema for t in listed.tools}
        assert schemas == {"bare": {"type": "object"}, "loose": {"type": "object", **loose}}
        with pytest.raises(ValueError, match="input_schema must be an object schema"):
            ToolMeta(name="text", input_schema={"type": "string"})

    def test_the_cli_options_make_limits(self):
        import argparse

        from llm_worker._cli import _serve_limits, _UsageError

        args = argparse.Namespace(tool_timeout=5.0, max_input_bytes=None, max_result_bytes=2_000)
        limits = _serve_limits(args)
        assert limits is not None
        assert (limits.tool_timeout, limits.max_result_bytes) == (5.0, 2_000)
        none = argparse.Namespace(tool_timeout=None, max_input_bytes=None, max_result_bytes=None)
        assert _serve_limits(none) is None
        bad = argparse.Namespace(tool_timeout=None, max_input_bytes=None, max_result_bytes=10)
        with pytest.raises(_UsageError, match=r"--max-result-bytes: Limits\.max_result_bytes"):
            _serve_limits(bad)
