"""A ``$ref`` that is no reference, in the Gemini rewrite (``_gemini_schema.py``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llm_worker import ToolMeta, export_tools

SCHEMAS = [
    {"type": "object", "properties": {"a": {"$ref": None}}},
    {"type": "object", "properties": {"a": {"items": {"$ref": None}, "type": "array"}}},
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_a_null_ref_is_an_error_not_an_endless_loop(schema):
    """``"$ref": null`` (an MCP server's tool may say anything) looped for ever, on the
    event loop of a Worker with a GeminiClient: it is refused as any non-reference is.
    Run in a subprocess with a time limit, so the old loop fails the test, not the suite."""
    code = (
        "from llm_worker import ToolMeta, export_tools\n"
        f"export_tools([ToolMeta(name='t', input_schema={schema!r})], 'gemini')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert "the $ref None is not a local reference" in done.stderr
    with pytest.raises(ValueError, match="the \\$ref None is not a local reference"):
        export_tools([ToolMeta(name="t", input_schema=schema)], "gemini")
