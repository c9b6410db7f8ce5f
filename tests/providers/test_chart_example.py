"""``examples/chart.py`` runs with no key (and no SDK), and with each key against the
local provider server: the chart it draws is a valid PNG, and each API gets it the way
it takes an image from a tool."""

from __future__ import annotations

import base64
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from support import needs_gemini_sdk

from . import wire
from .server import ProviderServer, stream

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FINAL = "December was the best month."
TOOL_LINE = "Monthly sales in 2025, in units, January to December:"

RUNNER = """
import runpy, sys
if {block_sdks}:
    sys.modules["openai"] = None
    sys.modules["anthropic"] = None
    sys.modules["google.genai"] = None
sys.path.insert(0, {examples!r})
sys.argv = ["chart.py"]
runpy.run_path({script!r}, run_name="__main__")
"""


def run_example(env: dict[str, str], block_sdks: bool = False) -> subprocess.CompletedProcess[str]:
    prefixes = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    code = RUNNER.format(
        block_sdks=block_sdks, examples=str(EXAMPLES), script=str(EXAMPLES / "chart.py")
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def png_size(data: bytes) -> tuple[int, int]:
    """The width and height of a PNG, after checking every chunk's CRC and the image data."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, size, raw = 8, (0, 0), b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        (crc,) = struct.unpack(">I", data[position + 8 + length : position + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            raw += zlib.decompress(body)
        position += 12 + length
    width, height = size
    assert len(raw) == (1 + 3 * width) * height  # one filter byte and RGB per row
    return width, height


class TestChartExample:
    def test_without_a_key(self):
        """With no key (and no SDK importable) it uses a scripted model: the tool's text,
        image and metadata are shown, then the answer."""
        done = run_example({}, block_sdks=True)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert "Talking to a scripted model." in lines
        assert lines[-3].startswith(f"  tool    | {TOOL_LINE} + MediaPart('image/png', ")
        assert lines[-3].endswith(" bytes, name='sales-2025.png')")
        assert lines[-2].startswith("          | (metadata, not sent: {'year': 2025,")
        assert lines[-1] == (
            "assistant | Sales grew through 2025 and peaked in December (the orange bar)."
        )

    def test_with_an_openai_key(self, server: ProviderServer):
        """Chat Completions: the chart goes in a user message after the tool message, as a
        data URL of a 240x120 PNG."""
        server.add(
            stream(*wire.chat_tool_calls([("call_1", "sales_chart", '{"year": 2025}')])),
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
        assert done.stdout.splitlines()[-1] == f"assistant | {FINAL}"
        tool_message, user_message = server.requests[1].json["messages"][-2:]
        assert tool_message["content"].startswith(TOOL_LINE)
        image = user_message["content"][1]
        prefix = "data:image/png;base64,"
        assert image["image_url"]["url"].startswith(prefix)
        png = base64.b64decode(image["image_url"]["url"].removeprefix(prefix))
        assert png_size(png) == (240, 120)

    def test_with_an_anthropic_key(self, server: ProviderServer):
        """Anthropic: the chart is an image block of the tool_result."""
        server.add(
            stream(*wire.claude_tool_calls([("toolu_1", "sales_chart", '{"year": 2025}')])),
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
        [result] = server.requests[1].json["messages"][-1]["content"]
        text, image = result["content"]
        assert text == {"type": "text", "text": TOOL_LINE}
        assert image["source"]["media_type"] == "image/png"
        assert png_size(base64.b64decode(image["source"]["data"])) == (240, 120)

    @needs_gemini_sdk
    @pytest.mark.parametrize("key", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
    def test_with_a_gemini_key(self, server: ProviderServer, key: str):
        """Gemini: the chart is inline data in the function response's parts."""
        server.add(
            stream(*wire.gemini_calls([("sales_chart", {"year": 2025})], ids=["fc_1"])),
            stream(*wire.gemini_text(FINAL)),
        )
        done = run_example({key: "test-key", "GOOGLE_GEMINI_BASE_URL": server.base_url})
        assert done.returncode == 0, done.stderr
        assert "Talking to Gemini, model gemini-3-flash-preview." in done.stdout
        assert server.requests[0].path.endswith(
            "/models/gemini-3-flash-preview:streamGenerateContent?alt=sse"
        )
        [part] = server.requests[1].json["contents"][-1]["parts"]
        response = part["functionResponse"]
        assert response["response"] == {"output": TOOL_LINE}
        [inline] = response["parts"]
        assert inline["inline_data"]["mime_type"] == "image/png"
        # The SDK writes bytes in URL-safe base64.
        assert png_size(base64.urlsafe_b64decode(inline["inline_data"]["data"])) == (240, 120)
