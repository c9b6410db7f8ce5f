"""Helpers shared by the MCP tests: in-process connections, server processes, the call table,
what a run logged."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.server import Server

from llm_worker import ToolServerHandle, export_tools
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
APPS = "tests.mcp.mcp_apps"  # the module name a server process (cwd: ROOT) imports
SERVE = [sys.executable, "-m", "llm_worker", "mcp", "serve"]
HOSTILE = "tests.mcp.hostile_apps:factory"  # tools whose results MCP cannot carry as they are
GUARD = 30  # seconds; only a regression waits this long

# (tool, arguments, text the client reads, is_error): every tool of mcp_apps.factory(),
# with valid and invalid arguments, and a tool that does not exist.
CALLS: list[tuple[str, dict[str, Any], str, bool]] = [
    ("echo", {"text": "hi", "times": 3}, "hihihi", False),
    ("echo", {"text": "hi"}, "hi", False),
    ("echo", {"text": 5}, "Invalid argument: 'text': Input should be a valid string (got 5)", True),
    ("echo", {}, "Invalid argument: 'text': missing required argument", True),
    ("add", {"a": 2, "b": 40}, "42", False),
    (
        "add",
        {"a": "2", "b": 40},
        "Invalid argument: 'a': Input should be a valid integer (got \"2\")",
        True,
    ),
    ("centroid", {"points": [{"x": 0, "y": 0}, {"x": 4, "y": 3}]}, '{"x":2,"y":1}', False),
    ("centroid", {"points": [{"x": 0}]}, "Invalid argument: 'points[0].y': missing", True),
    (
        "centroid",
        {"points": [], "unit": "cm"},
        "Invalid argument: 'unit': Input should be 'px' or 'pt' (got \"cm\")",
        True,
    ),
    ("centroid", {"points": []}, "Execution failed: no points given", True),
    ("shout", {"text": "hey"}, "HEY", False),
    (
        "shout",
        {"text": "hey", "loud": True},
        "Invalid argument: 'loud': unexpected argument (this tool takes: text)",
        True,
    ),
    (
        "pid",
        {"x": 1},
        "Invalid argument: 'x': unexpected argument (this tool takes: no arguments)",
        True,
    ),
    ("broken", {}, "Internal error: tool 'broken' failed unexpectedly (KeyError)", True),
    ("not_text", {}, "Internal error: tool 'not_text' returned int, not text", True),
    ("missing", {"a": 1}, "Tool 'missing' not found", True),
]
CALL_IDS = [
    f"{name}-{'error' if is_error else 'ok'}-{i}" for i, (name, _, _, is_error) in enumerate(CALLS)
]


def dump_tools(result: types.ListToolsResult) -> list[dict[str, Any]]:
    """The listed tools as the JSON a client received (what `export_tools` would write)."""
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in result.tools]


def exported(handle: ToolServerHandle) -> list[dict[str, Any]]:
    """``export_tools`` of every tool's ToolMeta, sorted by name: what tools/list must give."""
    metas = [handle.get_tool(d.name)[0] for d in handle.tool_definitions_sorted()]  # type: ignore[index]
    return export_tools(metas, "mcp")


def text_of(result: types.CallToolResult) -> str:
    """The text of a result that must be exactly one text block."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@asynccontextmanager
async def connect(server: Server[Any]) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession talking JSON-RPC to ``server`` in this process."""
    async with Client(server, mode="legacy") as client:
        yield client.session


def server_env() -> dict[str, str]:
    """Environment for a server process: this one's, minus anything that would add output."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_listening(
    port: int, process: subprocess.Popen[Any], timeout: float = 30.0, host: str = "127.0.0.1"
) -> None:
    """Poll until ``host:port`` accepts connections; fail if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise AssertionError(
                f"the server exited with status {process.returncode} before listening"
            )
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listened on port {port} within {timeout}s") from None
            time.sleep(0.1)


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def jsonrpc_lines(text: str) -> list[dict[str, Any]]:
    """Each line of ``text`` parsed as a JSON-RPC message (fails on anything else)."""
    messages = [json.loads(line) for line in text.splitlines()]
    assert all(message.get("jsonrpc") == "2.0" for message in messages), text
    return messages


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def run_logs(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, bool]]:
    """What llm_worker logged: (level, message, with a traceback)."""
    return [
        (r.levelname, r.getMessage(), r.exc_info is not None)
        for r in caplog.records
        if r.name.startswith("llm_worker")
    ]


def scripted(*names: str) -> ScriptedClient:
    calls = [
        ScriptedResponse(tool_calls=[ScriptedCall(n, {}, id=f"c{i}")]) for i, n in enumerate(names)
    ]
    return ScriptedClient([*calls, "Done."])


@asynccontextmanager
async def hostile_stdio_session(tmp_path: Path) -> AsyncIterator[ClientSession]:
    """The SDK's client, initialized, on ``llm-worker mcp serve`` of ``HOSTILE`` over
    stdio (its stderr in ``tmp_path / "stderr.txt"``); all of it within ``GUARD``."""
    params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], HOSTILE], cwd=ROOT)
    with (tmp_path / "stderr.txt").open("w") as errlog, anyio.fail_after(GUARD):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
