"""``examples/chat.py`` runs with no key (and no SDK), and with each key against the
local provider server (``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` /
``GOOGLE_GEMINI_BASE_URL``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import needs_gemini_sdk

from . import wire
from .server import ProviderServer, error, stream

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FINAL = "Issue #1 is open; I closed #2."

# Run the example as `python examples/chat.py` would, with the SDKs made unimportable
# when `block_sdks` is set.
RUNNER = """
import runpy, sys
if {block_sdks}:
    sys.modules["openai"] = None
    sys.modules["anthropic"] = None
    sys.modules["google.genai"] = None
sys.path.insert(0, {examples!r})
sys.argv = ["chat.py"]
runpy.run_path({script!r}, run_name="__main__")
"""


def run_example(env: dict[str, str], block_sdks: bool = False) -> subprocess.CompletedProcess[str]:
    prefixes = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    code = RUNNER.format(
        block_sdks=block_sdks, examples=str(EXAMPLES), script=str(EXAMPLES / "chat.py")
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class TestChatExample:
    def test_without_a_key(self):
        """With no key it says it uses a scripted model and runs the conversation, with
        neither SDK importable."""
        done = run_example({}, block_sdks=True)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == (
            "No OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY is set: "
            "using a scripted model (llm_worker.testing.ScriptedClient)."
        )
        assert "Talking to a scripted model." in lines
        assert lines[-1] == "tracker now: #1 open, #2 closed"

    def test_with_an_openai_key(self, server: ProviderServer):
        """With OPENAI_API_KEY it talks to the (here: local) OpenAI server: the tracker's
        tools are offered, the model's calls run, and the answer is printed."""
        server.add(
            stream(
                *wire.chat_tool_calls(
                    [("call_1", "close_issue", '{"issue_id": 2, "comment": "fixed"}')]
                )
            ),
            stream(*wire.chat_text(FINAL)),
        )
        done = run_example(
            {
                "OPENAI_API_KEY": "test-key",
                "OPENAI_BASE_URL": f"{server.base_url}/v1",
                "OPENAI_MODEL": "gpt-test-mini",
            }
        )
        assert done.returncode == 0, done.stderr
        assert "Talking to OpenAI Chat Completions, model gpt-test-mini." in done.stdout
        assert f"assistant | {FINAL}" in done.stdout
        assert done.stdout.splitlines()[-1] == "tracker now: #1 open, #2 closed"
        first, second = (r.json for r in server.requests)
        assert first["model"] == "gpt-test-mini"
        assert [t["function"]["name"] for t in first["tools"]] == [
            "close_issue",
            "file_issues",
            "search",
        ]
        assert second["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Closed #2: fixed",
        }

    def test_with_an_anthropic_key(self, server: ProviderServer):
        """With ANTHROPIC_API_KEY (and no OpenAI key) it talks to the Anthropic server."""
        server.add(
            stream(
                *wire.claude_tool_calls(
                    [("toolu_1", "close_issue", '{"issue_id": 2, "comment": "fixed"}')]
                )
            ),
            stream(*wire.claude_text(FINAL)),
        )
        done = run_example(
            {
                "ANTHROPIC_API_KEY": "test-key",
                "ANTHROPIC_BASE_URL": server.base_url,
                "ANTHROPIC_MODEL": "claude-test-model",
            }
        )
        assert done.returncode == 0, done.stderr
        assert "Talking to Anthropic Messages, model claude-test-model." in done.stdout
        assert f"assistant | {FINAL}" in done.stdout
        assert done.stdout.splitlines()[-1] == "tracker now: #1 open, #2 closed"
        assert server.requests[1].json["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"

    @needs_gemini_sdk
    @pytest.mark.parametrize("key", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
    def test_with_a_gemini_key(self, server: ProviderServer, key: str):
        """With GEMINI_API_KEY or GOOGLE_API_KEY (and no other key) it talks to the Gemini
        server: the tracker's tools are declared, the call runs, its response goes back."""
        server.add(
            stream(
                *wire.gemini_calls(
                    [("close_issue", {"issue_id": 2, "comment": "fixed"})], ids=["fc_1"]
                )
            ),
            stream(*wire.gemini_text(FINAL)),
        )
        done = run_example(
            {
                key: "test-key",
                "GOOGLE_GEMINI_BASE_URL": server.base_url,
                "GEMINI_MODEL": "gemini-test-flash",
            }
        )
        assert done.returncode == 0, done.stderr
        assert "Talking to Gemini, model gemini-test-flash." in done.stdout
        assert f"assistant | {FINAL}" in done.stdout
        assert done.stdout.splitlines()[-1] == "tracker now: #1 open, #2 closed"
        first, second = (r.json for r in server.requests)
        assert server.requests[0].path.endswith(
            "/models/gemini-test-flash:streamGenerateContent?alt=sse"
        )
        assert server.requests[0].headers["x-goog-api-key"] == "test-key"
        declared = [d["name"] for d in first["tools"][0]["functionDeclarations"]]
        assert declared == ["close_issue", "file_issues", "search"]
        assert second["contents"][-1] == {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "fc_1",
                        "name": "close_issue",
                        "response": {"output": "Closed #2: fixed"},
                    }
                }
            ],
        }

    def test_provider_error(self, server: ProviderServer):
        """A provider failure (a 401, which the SDK does not retry) is reported in one
        line and the example exits with 1."""
        server.add(error(401, wire.BAD_KEY))
        done = run_example(
            {
                "OPENAI_API_KEY": "sk-test",
                "OPENAI_BASE_URL": f"{server.base_url}/v1",
            }
        )
        assert done.returncode == 1, done.stderr
        message = wire.BAD_KEY["error"]["message"]
        assert done.stdout.splitlines()[-1] == (
            f"The model provider failed: openai request failed (HTTP 401): {message}"
        )
