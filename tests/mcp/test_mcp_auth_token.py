"""The bearer token a served HTTP endpoint requires is one a client can send.

A token read with ``--auth-token-env`` from a secret file written with ``echo``
ends in a newline: it is stripped, so clients sending the token are served. A
token that is empty or has whitespace inside is a usage error (CLI) or a
``ValueError`` (``create_http_app``), not a server that refuses everyone.
"""

from __future__ import annotations

import subprocess

import anyio
import pytest
from mcp_support import GUARD, HOSTILE, ROOT, SERVE, server_env, text_of
from test_mcp_hardening import http_server as http_server  # the fixture, for these tests
from test_mcp_hardening import session_for

from llm_worker import ToolServer
from llm_worker.mcp import create_http_app

PROGRAM = "python -m llm_worker mcp serve"


class TestConfiguredToken:
    @pytest.mark.anyio
    @pytest.mark.filterwarnings(
        r"ignore:Async generator 'http(core|x)2\.[\w.]+' was garbage collected:ResourceWarning"
    )
    async def test_a_trailing_newline_is_stripped(self, http_server):
        """A token variable ending in a newline: a client sending the token is served."""
        server = http_server(
            "--auth-token-env", "MCP_TEST_TOKEN", env={"MCP_TEST_TOKEN": "t0ken-for-tests\n"}
        )
        with anyio.fail_after(GUARD):
            async with session_for(server.url(), Authorization="Bearer t0ken-for-tests") as session:
                result = await session.call_tool("echo", {"text": "authorized"})
        assert text_of(result) == "authorized"

    @pytest.mark.parametrize(
        ("options", "env", "error"),
        [
            (
                ["--auth-token-env", "MCP_TEST_TOKEN"],
                {"MCP_TEST_TOKEN": " \n"},
                "--auth-token-env: the token is empty (only whitespace)",
            ),
            (
                ["--auth-token-env", "MCP_TEST_TOKEN"],
                {"MCP_TEST_TOKEN": "two words\n"},
                "--auth-token-env: the token contains whitespace, which a bearer token cannot",
            ),
            (
                ["--auth-token", "two\twords"],
                {},
                "--auth-token: the token contains whitespace, which a bearer token cannot",
            ),
            (["--auth-token", " "], {}, "--auth-token: the token is empty (only whitespace)"),
        ],
        ids=["env-blank", "env-inner-space", "option-tab", "option-blank"],
    )
    def test_a_token_no_client_can_send_is_a_usage_error(self, options, env, error):
        """Empty once stripped, or whitespace inside: exit 2 with one line, nothing served."""
        done = subprocess.run(
            [*SERVE, HOSTILE, "--transport", "http", "--port", "0", *options],
            cwd=ROOT,
            env={**server_env(), **env},
            capture_output=True,
            text=True,
            timeout=GUARD,
        )
        assert (done.returncode, done.stderr) == (2, f"{PROGRAM}: error: {error}\n")

    @pytest.mark.parametrize("token", ["", "t0ken\n", "two words"])
    def test_create_http_app_refuses_such_a_token_at_once(self, token):
        """From Python: a ValueError when the app is made, not at its first request."""
        with pytest.raises(ValueError, match="the auth token must not"):
            create_http_app(ToolServer(), auth_token=token)
