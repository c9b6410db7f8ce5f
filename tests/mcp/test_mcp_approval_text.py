"""The approval question shows what would run: invisible characters escaped, long values cut
in the middle so both ends show. Asked through the SDK client's elicitation callback."""

from __future__ import annotations

from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp_support import GUARD

from llm_worker import ToolServer, tool, tool_definitions, tool_registry
from llm_worker.mcp import create_server


@tool_registry
class Files:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    @tool(requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a file."""
        self.deleted.append(path)
        return f"deleted {path}"


async def asked_about(arguments: dict[str, Any]) -> str:
    """The question the host's user is asked about ``delete(**arguments)`` (declined)."""
    files = Files()
    server = ToolServer()
    server.register_tools(tool_definitions(files))
    questions: list[str] = []

    async def host(context: Any, params: Any) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action="decline")

    with anyio.fail_after(GUARD):
        async with Client(create_server(server), elicitation_callback=host) as client:
            result = await client.call_tool("delete", arguments)
    assert result.is_error
    assert files.deleted == []
    [question] = questions
    return question


class TestTheQuestionShowsWhatRuns:
    @pytest.mark.anyio
    async def test_a_bidi_override_is_escaped(self):
        """U+202E (which shows "/tmp/\u202egnp.exe" as "/tmp/exe.png") and a zero-width
        space are shown as \\uXXXX, as line breaks are."""
        question = await asked_about({"path": "/tmp/\u202egnp.exe\u200b"})
        assert question.splitlines()[1] == 'path: "/tmp/\\u202egnp.exe\\u200b"'

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("value", "shown"),
        [
            ("\u2066x\u2069\u00ad", '"\\u2066x\\u2069\\u00ad"'),  # isolates, soft hyphen (Cf)
            ("a\x7fb\x9fc", '"a\\u007fb\\u009fc"'),  # DEL and a C1 control, which JSON leaves
            ("rm\u00a0-rf", '"rm\\u00a0-rf"'),  # a space that is not one
            ("tag\U000e0041", '"tag\\udb40\\udc41"'),  # a tag character, beyond the BMP
            ("plain text, é ü 中文", '"plain text, é ü 中文"'),  # visible ones stay as they are
        ],
        ids=["format", "control", "nbsp", "astral", "visible"],
    )
    async def test_invisible_characters_are_escaped(self, value, shown):
        """Every character that does not show as itself is escaped; others are kept."""
        question = await asked_about({"path": value})
        assert question.splitlines()[1] == f"path: {shown}"

    @pytest.mark.anyio
    async def test_a_long_value_shows_its_start_and_its_end(self):
        """A long value is cut in the middle: a harmless start cannot hide a ../../ tail."""
        path = "/tmp/reports/" + "a" * 2100 + "/../../../etc/passwd"
        question = await asked_about({"path": path})
        line = question.splitlines()[1]
        assert line.startswith('path: "/tmp/reports/aaaa')
        assert line.endswith(f'aaa/../../../etc/passwd" ({len(path) + 2} characters)')
        assert "…" in line
        assert len(line) <= len("path: ") + 2000

    @pytest.mark.anyio
    async def test_escapes_at_the_ends_of_a_long_value_show(self):
        """Escaping happens before the cut: an override at either end of a long value shows
        as \\u202e, and the line stays within its room."""
        path = "\u202e" + "b" * 3000 + "\u202e"
        question = await asked_about({"path": path})
        line = question.splitlines()[1]
        assert line.startswith('path: "\\u202ebbb')
        assert line.endswith(f'bbb\\u202e" ({len(path) + 2} characters)')
        assert "\u202e" not in question
        assert len(line) <= len("path: ") + 2000
