"""MCP serve and tracing: a span per ``tools/call`` (the MCP semantic conventions) that
continues the caller's trace from ``params._meta``, across a real process boundary.

The server is ``llm_worker.mcp.serve`` over stdio in its own process, with the SDK
configured there and its spans written to a file (``traced_mcp_server.py``); the client
is the MCP SDK's own. The span comes from the MCP SDK's server middleware, on in every
server the SDK makes; llm_worker's own part is that the trace reaches the server at all
when a traced ``Worker`` calls an MCP tool.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from otel_support import OpenAIScripted, make_telemetry

from llm_worker import Worker
from llm_worker.mcp import mcp_tool_definitions
from llm_worker.testing import ScriptedCall, ScriptedResponse

ROOT = Path(__file__).resolve().parents[2]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture(
    scope="module",
    params=[pytest.param("asyncio", id="asyncio"), pytest.param("trio", id="trio")],
)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Served:
    def __init__(self, session: ClientSession, spans: Path) -> None:
        self.session = session
        self.spans = spans

    async def server_span(self, name: str) -> dict[str, Any]:
        """The one span named ``name`` the server wrote (waiting until it has: the server
        ends its span as it answers, so the answer can come first)."""
        with anyio.fail_after(10):
            while True:
                lines = self.spans.read_text(encoding="utf-8").splitlines()
                found = [span for span in map(json.loads, lines) if span["name"] == name]
                if found:
                    (span,) = found
                    return span
                await anyio.sleep(0.02)


@pytest.fixture(scope="module")
async def served(anyio_backend, tmp_path_factory):
    """A session with a traced ``llm_worker.mcp.serve`` process over stdio."""
    spans = tmp_path_factory.mktemp("mcp-spans") / "spans.jsonl"
    spans.touch()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.otel.traced_mcp_server", str(spans)],
        cwd=ROOT,
    )
    errors = tmp_path_factory.mktemp("mcp-stderr") / "stderr.txt"
    with errors.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield Served(session, spans)


@pytest.mark.anyio
async def test_a_tools_call_continues_the_traceparent_in_meta(served):
    """A tools/call carrying traceparent in params._meta gets a SERVER span named
    "tools/call {tool}", in that trace, whose parent is the caller's span."""
    result = await served.session.call_tool(
        "echo", {"text": "hi"}, meta={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    )
    assert result.is_error is False
    span = await served.server_span("tools/call echo")
    assert span["kind"] == "SpanKind.SERVER"
    assert span["context"]["trace_id"] == f"0x{TRACE_ID}"
    assert span["parent_id"] == f"0x{PARENT_ID}"
    assert span["status"]["status_code"] == "UNSET"
    attributes = span["attributes"]
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert "jsonrpc.request.id" in attributes
    assert "mcp.protocol.version" in attributes


@pytest.mark.anyio
async def test_an_error_result_sets_the_error_status(served):
    """A call whose result has isError: true ends its span with error.type "tool_error"."""
    result = await served.session.call_tool("add", {"a": "two", "b": 2})
    assert result.is_error is True
    span = await served.server_span("tools/call add")
    assert span["status"]["status_code"] == "ERROR"
    assert span["attributes"]["error.type"] == "tool_error"


@pytest.mark.anyio
async def test_a_traced_worker_calling_an_mcp_tool_continues_into_the_server(served):
    """A traced Worker calling a served tool: the server's span is a child of the
    worker's execute_tool span, in the same trace (the client puts the current context
    in params._meta)."""
    telemetry = make_telemetry()
    client = OpenAIScripted(
        [ScriptedResponse(tool_calls=[ScriptedCall("shout", '{"text": "hey"}')]), "done"]
    )
    worker = Worker(client, instrumentation=telemetry.instrumentation())
    worker.register_tools(await mcp_tool_definitions(served.session))
    with anyio.fail_after(20):
        await worker.run("shout hey")
    (ours,) = telemetry.named("execute_tool shout")
    assert ours.context is not None
    server = await served.server_span("tools/call shout")
    assert server["context"]["trace_id"] == f"0x{ours.context.trace_id:032x}"
    assert server["parent_id"] == f"0x{ours.context.span_id:016x}"
