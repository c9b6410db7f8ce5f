"""``mcp_http_client()``: a POST that got no response says why, not always "Connection closed".

Against real servers: an address where nothing listens, and an SDK server in
JSON-response mode (it sends its headers only once the result is ready) whose
tool outlasts the client's read timeout.
"""

from __future__ import annotations

import logging
import ssl
import subprocess
import sys
from collections.abc import Iterator

import anyio
import anyio.abc
import httpx2
import pytest
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_support import GUARD, free_port, server_env, wait_until_listening

from llm_worker import ExecutionFailedError
from llm_worker.mcp import mcp_http_client, mcp_tool_definitions

pytestmark = [
    pytest.mark.anyio,
    # As in test_mcp_http: the SDK's HTTP client leaves response iterators to the collector.
    pytest.mark.filterwarnings(
        r"ignore:Async generator 'http(core|x)2\.[\w.]+' was garbage collected:ResourceWarning"
    ),
]


# An SDK server in JSON-response mode: "slow" answers after 3 s, "quick" at once.
SLOW_SERVER = """
import sys, anyio, uvicorn
import mcp.types as types
from mcp.server import Server

async def list_tools(ctx, params):
    return types.ListToolsResult(
        tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in ("slow", "quick")]
    )

async def call_tool(ctx, params):
    if params.name == "slow":
        await anyio.sleep(3)
    return types.CallToolResult(content=[types.TextContent(text=params.name + " done")])

app = Server("slow", on_list_tools=list_tools, on_call_tool=call_tool)
uvicorn.run(
    app.streamable_http_app(json_response=True),
    host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
)
"""


@pytest.fixture(scope="module")
def slow_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_SERVER, str(port)],
        env=server_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait(timeout=GUARD)


class TestUnansweredPosts:
    async def test_nothing_listening_names_the_refusal_and_logs_the_address(self, caplog):
        """A first initialize where nothing listens: the error says "Connection refused",
        not "Connection closed"; the URL goes to the log (the text may reach a model)."""
        url = f"http://127.0.0.1:{free_port()}/mcp"
        with anyio.fail_after(GUARD), caplog.at_level(logging.WARNING, logger="llm_worker.mcp"):
            async with (
                mcp_http_client() as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                with pytest.raises(MCPError) as caught:
                    await session.initialize()
        assert str(caught.value) == (
            "cannot connect to the MCP server: Connection refused (ConnectError)"
        )
        assert f"cannot connect to the MCP server at {url}: Connection refused" in caplog.text

    async def test_a_read_timeout_says_the_call_may_have_run(self, slow_server):
        """A call past the read timeout on a live server says it timed out and may have run
        there; the next call is served."""
        timeout = httpx2.Timeout(GUARD, read=1.0)
        with anyio.fail_after(GUARD):
            async with (
                mcp_http_client(timeout=timeout) as http,
                streamable_http_client(slow_server, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = {d.meta.name: d()[1] for d in await mcp_tool_definitions(session)}
                with pytest.raises(ExecutionFailedError) as caught:
                    await tools["slow"].execute("{}")
                after = await tools["quick"].execute("{}")
        assert str(caught.value) == (
            "Execution failed: MCP error: no response from the MCP server within the read "
            "timeout (1 s); the request was sent, so it may have run on the server"
        )
        assert after == "quick done"


class TestTlsFailures:
    async def test_a_tls_handshake_that_fails_says_so(self):
        """``https://`` to a server that speaks no TLS: the reason is the TLS error's, not
        the OS errno an ``ssl.SSLError`` carries (1, "Operation not permitted")."""

        async def plain_http(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                await stream.send(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")

        with anyio.fail_after(GUARD):
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            async with listener, anyio.create_task_group() as group:
                group.start_soon(listener.serve, plain_http)
                async with mcp_http_client() as http:
                    response = await http.post(
                        f"https://127.0.0.1:{port}/mcp", json={"jsonrpc": "2.0", "id": 1}
                    )
                group.cancel_scope.cancel()
        message = response.json()["error"]["message"]
        assert message.startswith("cannot connect to the MCP server: TLS error: "), message
        assert "Operation not permitted" not in message

    def test_a_certificate_that_does_not_verify_says_why(self):
        """``SSLCertVerificationError`` is an ``OSError`` with errno 1 too."""
        from llm_worker.mcp._http_client import _os_reason

        failure = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] ...")
        failure.verify_message = "self-signed certificate"
        error = httpx2.ConnectError("handshake")
        error.__cause__ = failure
        assert _os_reason(error) == "certificate verify failed: self-signed certificate"
