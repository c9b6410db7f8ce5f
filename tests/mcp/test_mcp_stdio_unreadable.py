"""Over stdio, a line that is no JSON-RPC message gets an error response, not silence.

A real ``llm-worker mcp serve`` process reads raw lines: not JSON, bytes that are
not UTF-8, an escaped lone surrogate, JSON that is no message, and a blank line.
"""

from __future__ import annotations

import json
import subprocess
import threading

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
            b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": "\\ud800"}}',
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
