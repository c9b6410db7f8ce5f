"""Over stdio, a line that is no JSON-RPC message gets an error response, not silence.

A real ``llm-worker mcp serve`` process reads raw lines: not JSON, bytes that are
not UTF-8, an escaped lone surrogate (in a notification: a request with an id that
the SDK's parser refuses is answered with its id, see ``test_mcp_serve_depth``), JSON
that is no message, and a blank line.
So do requests whose id MCP does not allow, read by the CLI (asyncio) and by
``serve_async`` under trio; and a tool reading stdin reads EOF, not the client's
messages.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest
from mcp_support import APPS, ROOT, SERVE, jsonrpc_lines, server_env

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ECHO = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "still here"}},
}
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
INVALID = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}


class TestUnreadableLines:
    def test_each_unreadable_line_is_answered_and_serving_goes_on(self):
        """Each line that is not JSON gets -32700 and JSON that is no message -32600, with
        id null and a warning; a blank line gets nothing; the next request is served."""
        lines = [
            json.dumps(INITIALIZE).encode(),
            json.dumps(INITIALIZED).encode(),
            b"{not json",
            b"\xff\xfe garbage",
            # A request with an id gets its own answer (test_mcp_serve_depth); this is none.
            b'{"jsonrpc": "2.0", "method": "notifications/x", "params": {"x": "\\ud800"}}',
            b"[1, 2, 3]",
            b"",
            json.dumps(ECHO).encode(),
        ]
        process = subprocess.Popen(
            [*SERVE, f"{APPS}:factory"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=server_env(),
        )
        watchdog = threading.Timer(60, process.kill)  # a hung server fails the test, not the run
        watchdog.start()
        try:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(b"".join(line + b"\n" for line in lines))
            process.stdin.flush()
            answers = [process.stdout.readline() for _ in range(6)]
            stdout, stderr = process.communicate(timeout=60)  # closes stdin: the server exits
        finally:
            watchdog.cancel()
        messages = jsonrpc_lines(b"".join(answers).decode("utf-8"))
        assert [message.get("id", "no id") for message in messages] == [
            1,
            None,
            None,
            None,
            None,
            2,
        ]
        assert messages[1:5] == [PARSE_ERROR, PARSE_ERROR, PARSE_ERROR, INVALID]
        assert messages[5]["result"]["content"] == [{"type": "text", "text": "still here"}]
        assert (process.returncode, stdout) == (0, b"")
        warnings = [
            line
            for line in stderr.decode("utf-8").splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered a line on stdin")
        ]
        assert warnings[0] == (
            "WARNING llm_worker.mcp: answered a line on stdin with Parse error (-32700): "
            "Invalid JSON: key must be a string at line 1 column 2"
        )
        assert warnings[3] == (
            "WARNING llm_worker.mcp: answered a line on stdin with Invalid Request (-32600): "
            "not a JSON-RPC message"
        )
        assert len(warnings) == 4


# serve_async over stdio under trio (the CLI runs asyncio), logging as the CLI does.
TRIO_SERVE = """
import logging, sys
import anyio
from {module} import factory
from llm_worker.mcp import serve_async
logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
anyio.run(serve_async, factory(), backend="trio")
"""
SERVERS = [
    pytest.param(lambda module: [*SERVE, f"{module}:factory"], id="cli-asyncio"),
    pytest.param(
        lambda module: [sys.executable, "-c", TRIO_SERVE.format(module=module)], id="trio"
    ),
]


def exchange(command: list[str], messages: list[bytes], answers: int) -> tuple[list[Any], str]:
    """Send ``messages`` (lines) to a server process, read ``answers`` lines, close stdin:
    the answers and the server's stderr."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=server_env(),
    )
    watchdog = threading.Timer(60, process.kill)  # a hung server fails the test, not the run
    watchdog.start()
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(b"".join(line + b"\n" for line in messages))
        process.stdin.flush()
        lines = [process.stdout.readline() for _ in range(answers)]
        stdout, stderr = process.communicate(timeout=60)  # closes stdin: the server exits
    finally:
        watchdog.cancel()
    assert (process.returncode, stdout) == (0, b"")
    return jsonrpc_lines(b"".join(lines).decode("utf-8")), stderr.decode("utf-8")


ODD_IDS = ["1.5", "null", "true", '{"a": 1}', "[1]", "2.0", "1e2"]


class TestRequestIds:
    @pytest.mark.parametrize("server", SERVERS)
    def test_a_request_whose_id_mcp_does_not_allow_is_answered(self, server):
        """A request with an id that is not a string or an integer (the SDK would read it as
        a notification, never answered) gets -32600 with id null and a warning; requests
        with a string, an integer or a negative id are served."""
        odd = [
            b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % odd_id.encode()
            for odd_id in ODD_IDS
        ]
        fine = [
            b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % ok_id
            for ok_id in (b'"x"', b"-3", b"7")
        ]
        lines = [json.dumps(INITIALIZE).encode(), json.dumps(INITIALIZED).encode(), *odd, *fine]
        messages, stderr = exchange(server(APPS), lines, 1 + len(odd) + len(fine))
        assert [m for m in messages if "error" in m] == [INVALID] * len(odd)
        answered = sorted((m["id"] for m in messages if "result" in m), key=str)
        assert answered == [-3, 1, 7, "x"]
        warnings = [
            line
            for line in stderr.splitlines()
            if line.startswith("WARNING llm_worker.mcp: answered a line on stdin")
        ]
        kinds = ["1.5", "null", "true", "an object", "an array", "2.0", "100.0"]
        assert warnings == [
            "WARNING llm_worker.mcp: answered a line on stdin with Invalid Request (-32600): "
            f"a request's id must be a string or an integer, not {kind}"
            for kind in kinds
        ]

    @pytest.mark.parametrize("server", SERVERS)
    def test_a_tool_reading_stdin_reads_nothing_of_the_client(self, server):
        """While the server reads the client's lines, fd 0 is the null device: a tool (and a
        process it starts) reading stdin gets EOF, and the next request is still served."""
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "read_stdin", "arguments": {}},
        }
        lines = [
            json.dumps(INITIALIZE).encode(),
            json.dumps(INITIALIZED).encode(),
            json.dumps(call).encode(),
            b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}',
        ]
        messages, _ = exchange(server("tests.mcp.hostile_apps"), lines, 3)
        by_id = {message["id"]: message for message in messages}
        assert by_id[2]["result"]["content"] == [{"type": "text", "text": "own=b'' child=''"}]
        assert by_id[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}
