"""``llm-worker mcp serve FACTORY`` over stdio, driven by the SDK's own stdio client.

One server process per backend serves the tests of ``TestServedTools``; the
other tests start their own, to watch the process itself (stdout, exit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import mcp_apps
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_support import (
    APPS,
    CALL_IDS,
    CALLS,
    EXAMPLES,
    ROOT,
    SERVE,
    dump_tools,
    exported,
    jsonrpc_lines,
    process_exists,
    server_env,
    text_of,
)

from llm_worker._cli import render_schema


def parameters(*serve_args: str, pythonpath: Path | None = None) -> StdioServerParameters:
    """Start ``python -m llm_worker mcp serve ...`` in the repository root."""
    env = {"PYTHONPATH": str(pythonpath)} if pythonpath is not None else None
    return StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], *serve_args], env=env, cwd=ROOT
    )


@dataclass
class Served:
    session: ClientSession
    stderr: Path


@pytest.fixture(scope="module")
async def served(anyio_backend, tmp_path_factory):
    """A session with ``llm-worker mcp serve tests.mcp.mcp_apps:factory`` over stdio."""
    stderr = tmp_path_factory.mktemp("stdio") / "stderr.txt"
    with stderr.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(parameters(f"{APPS}:factory"), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield Served(session, stderr)


class TestServedTools:
    @pytest.mark.anyio
    async def test_lists_exactly_our_mcp_export(self, served):
        """tools/list over stdio equals export_tools(..., "mcp") of the same registry."""
        listed = dump_tools(await served.session.list_tools())
        expected = exported(mcp_apps.factory().handle())
        assert listed == expected

    @pytest.mark.anyio
    @pytest.mark.parametrize(("name", "arguments", "text", "is_error"), CALLS, ids=CALL_IDS)
    async def test_call(self, served, name, arguments, text, is_error):
        """Each tool, with valid and invalid arguments: results and isError results, our texts."""
        result = await served.session.call_tool(name, arguments)
        assert (text_of(result), result.is_error) == (text, is_error)

    @pytest.mark.anyio
    async def test_print_in_a_tool_goes_to_stderr(self, served):
        """A tool that prints does not break the protocol: its output lands on stderr."""
        result = await served.session.call_tool("shout", {"text": "over stdio"})
        assert text_of(result) == "OVER STDIO"
        assert "shouting over stdio\n" in served.stderr.read_text(encoding="utf-8")

    @pytest.mark.anyio
    async def test_logs_go_to_stderr(self, served):
        """The server says what it serves on stderr."""
        await served.session.send_ping()
        lines = served.stderr.read_text(encoding="utf-8").splitlines()
        assert "INFO llm_worker.mcp: serving 7 tools over stdio" in lines


class TestExampleFactory:
    @pytest.mark.anyio
    async def test_quickstart_tracker_over_stdio(self):
        """examples/mcp_factory.py serves the tracker's tools as `llm-worker schema` has them."""
        params = parameters("mcp_factory:factory", pythonpath=EXAMPLES)
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = dump_tools(await session.list_tools())
                found = await session.call_tool("search", {"query": "crash"})
                bad = await session.call_tool("close_issue", {"issue_id": "one"})
                missing = await session.call_tool("close_issue", {"issue_id": 99})
                closed = await session.call_tool("close_issue", {"issue_id": 1, "comment": "ok"})
        sys.path.insert(0, str(EXAMPLES))
        try:
            assert listed == json.loads(render_schema(["quickstart:IssueTracker"], "mcp"))
        finally:
            sys.path.remove(str(EXAMPLES))
        assert json.loads(text_of(found)) == [
            {"id": 1, "title": "Crash on empty input", "status": "open", "labels": ["bug"]}
        ]
        assert (text_of(bad), bad.is_error) == (
            "Invalid argument: 'issue_id': Input should be a valid integer (got \"one\")",
            True,
        )
        assert (text_of(missing), missing.is_error) == (
            "Execution failed: there is no issue #99 in llm-worker",
            True,
        )
        assert (text_of(closed), closed.is_error) == ("Closed #1: ok", False)

    @pytest.mark.anyio
    async def test_running_the_example_file_serves_stdio(self):
        """`python examples/mcp_factory.py` serves through llm_worker.mcp.serve() over stdio."""
        params = StdioServerParameters(
            command=sys.executable, args=[str(EXAMPLES / "mcp_factory.py")], cwd=ROOT
        )
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
        assert names == ["close_issue", "file_issues", "search"]


class TestProcess:
    @pytest.mark.anyio
    async def test_no_orphan_after_the_client_closes(self):
        """When the client closes the session, the server process is gone."""
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(parameters(f"{APPS}:factory"), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                pid = int(text_of(await session.call_tool("pid", {})))
                assert process_exists(pid)
        assert not process_exists(pid)

    def test_stdout_carries_only_protocol_and_eof_ends_with_status_0(self):
        """Only JSON-RPC reaches stdout, even when the factory and a tool print; EOF exits 0."""
        messages = [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "shout", "arguments": {"text": "hi"}},
            },
        ]
        process = subprocess.Popen(
            [*SERVE, f"{APPS}:printing_factory"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            cwd=ROOT,
            env=server_env(),
        )
        watchdog = threading.Timer(60, process.kill)  # a hung server fails the test, not the run
        watchdog.start()
        try:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
            process.stdin.flush()
            # The SDK cancels requests still running at EOF: close stdin after the last answer.
            lines = [process.stdout.readline(), process.stdout.readline()]
            stdout, stderr = process.communicate(timeout=60)
        finally:
            watchdog.cancel()
        done = subprocess.CompletedProcess(
            process.args, process.returncode, "".join(lines) + stdout, stderr
        )
        assert done.returncode == 0, done.stderr
        responses = jsonrpc_lines(done.stdout)
        assert [response["id"] for response in responses] == [1, 2]
        assert responses[1]["result"]["content"] == [{"type": "text", "text": "HI"}]
        assert "hello from the factory\n" in done.stderr
        assert "shouting hi\n" in done.stderr
        assert "Traceback" not in done.stderr
