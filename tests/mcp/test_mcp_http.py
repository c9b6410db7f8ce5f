"""``llm-worker mcp serve FACTORY --transport http``, driven by the SDK's streamable-HTTP client.

One server process on 127.0.0.1 (a free port) serves the tests of
``TestServedTools``; each test connects its own client. ``TestProcess`` starts
its own server to stop it.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import mcp_apps
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_support import (
    APPS,
    CALL_IDS,
    CALLS,
    ROOT,
    SERVE,
    dump_tools,
    exported,
    free_port,
    process_exists,
    server_env,
    text_of,
    wait_until_listening,
)

# The SDK's streamable-HTTP client leaves httpx2/httpcore2 response iterators
# unexhausted when a session closes; trio (not asyncio) warns when it finalizes
# them. A leak in the client library, not in the server under test.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:Async generator 'http(core|x)2\.[\w.]+' was garbage collected:ResourceWarning"
)


@dataclass
class HttpServer:
    url: str
    port: int
    process: subprocess.Popen[str]
    stderr: Path


def start_server(stderr: Path, *extra: str) -> HttpServer:
    """Start the server on a free port and wait (bounded) until it listens."""
    port = free_port()
    with stderr.open("w", encoding="utf-8") as errlog:
        process = subprocess.Popen(
            [*SERVE, f"{APPS}:factory", "--transport", "http", "--port", str(port), *extra],
            cwd=ROOT,
            env=server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            text=True,
        )
    try:
        wait_until_listening(port, process)
    except BaseException:
        process.kill()
        process.wait(timeout=30)
        raise
    return HttpServer(f"http://127.0.0.1:{port}/mcp", port, process, stderr)


def stop(server: HttpServer, sig: signal.Signals) -> int:
    """Send ``sig`` and wait for the process; its exit status."""
    server.process.send_signal(sig)
    try:
        return server.process.wait(timeout=30)
    finally:
        if server.process.poll() is None:  # pragma: no cover - only if the server hangs
            server.process.kill()
            server.process.wait(timeout=30)


@pytest.fixture(scope="module")
def http_server(tmp_path_factory) -> Iterator[HttpServer]:
    server = start_server(tmp_path_factory.mktemp("http") / "stderr.txt")
    try:
        yield server
    finally:
        status = stop(server, signal.SIGTERM)
        assert status == -signal.SIGTERM
        assert not process_exists(server.process.pid)


@asynccontextmanager
async def session_for(url: str):
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


class TestServedTools:
    @pytest.mark.anyio
    async def test_lists_exactly_our_mcp_export(self, http_server):
        """tools/list over HTTP equals export_tools(..., "mcp") of the same registry."""
        async with session_for(http_server.url) as session:
            listed = dump_tools(await session.list_tools())
        assert listed == exported(mcp_apps.factory().handle())

    @pytest.mark.anyio
    @pytest.mark.parametrize(("name", "arguments", "text", "is_error"), CALLS, ids=CALL_IDS)
    async def test_call(self, http_server, name, arguments, text, is_error):
        """Each tool, with valid and invalid arguments: results and isError results, our texts."""
        async with session_for(http_server.url) as session:
            result = await session.call_tool(name, arguments)
        assert (text_of(result), result.is_error) == (text, is_error)

    @pytest.mark.anyio
    async def test_clients_share_the_application(self, http_server):
        """Every HTTP client is served by the same process (and so the same app instance)."""
        async with session_for(http_server.url) as first, session_for(http_server.url) as second:
            pids = {
                text_of(await first.call_tool("pid", {})),
                text_of(await second.call_tool("pid", {})),
            }
        assert pids == {str(http_server.process.pid)}

    @pytest.mark.anyio
    async def test_foreign_host_header_is_refused(self, http_server):
        """On 127.0.0.1 the SDK's DNS-rebinding protection refuses another Host header."""
        async with httpx2.AsyncClient() as client:
            response = await client.post(
                http_server.url,
                headers={"Host": "evil.example", "Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            )
        assert response.status_code == 421

    def test_logs_the_address(self, http_server):
        """The server says where it listens, on stderr."""
        lines = http_server.stderr.read_text(encoding="utf-8").splitlines()
        assert f"INFO llm_worker.mcp: serving 7 tools at {http_server.url} (streamable HTTP)" in (
            lines
        )


class TestProcess:
    def test_ctrl_c_stops_cleanly(self, tmp_path):
        """SIGINT shuts the server down: exit status 130, no traceback, no process left."""
        server = start_server(tmp_path / "stderr.txt", "--path", "/tools")
        status = stop(server, signal.SIGINT)
        stderr = server.stderr.read_text(encoding="utf-8")
        assert status == 130, stderr
        assert "Traceback" not in stderr
        assert f"at http://127.0.0.1:{server.port}/tools (streamable HTTP)" in stderr
        assert not process_exists(server.process.pid)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "a page", "version": "0"},
    },
}


class TestBrowsers:
    def test_an_allowed_origin_gets_cors_before_the_token(self, tmp_path):
        """A page of an --allow-origin origin can use the server: its preflight is answered
        (before the token is asked for: a preflight never carries it) and the answers carry
        Access-Control-Allow-Origin and expose Mcp-Session-Id. A loopback page, which the
        Origin check lets through, gets no CORS: the browser keeps it out."""
        allowed = "https://app.example.com"
        server = start_server(
            tmp_path / "stderr.txt", "--allow-origin", allowed, "--auth-token", "s3cret"
        )
        try:
            with httpx2.Client(timeout=10) as client:
                preflight = client.options(
                    server.url,
                    headers={
                        "Origin": allowed,
                        "Access-Control-Request-Method": "POST",
                        "Access-Control-Request-Headers": "authorization,content-type,mcp-method,"
                        "mcp-name,mcp-param-path",
                    },
                )
                answered = client.post(
                    server.url,
                    json=INITIALIZE,
                    headers={
                        "Origin": allowed,
                        "Authorization": "Bearer s3cret",
                        "Accept": "application/json, text/event-stream",
                    },
                )
                local = client.options(
                    server.url,
                    headers={
                        "Origin": "http://localhost:3000",
                        "Access-Control-Request-Method": "POST",
                    },
                )
        finally:
            stop(server, signal.SIGTERM)
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == allowed
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert answered.status_code == 200
        assert answered.headers["access-control-allow-origin"] == allowed
        assert "mcp-session-id" in answered.headers["access-control-expose-headers"]
        assert "access-control-allow-origin" not in local.headers
