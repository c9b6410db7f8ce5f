"""The public API under mypy --strict and pyright (strict): the files in tests/type_tests/.

- ``user_app.py`` is ordinary user code (a ``@tool_registry`` class, async and sync tools,
  ``@tool(name=...)``, a nested pydantic argument, registration via ``app.search.definition()``
  and ``tool_definitions(app)``, calls through a handle): both checkers report nothing.
- ``wrong_uses.py`` marks each wrong use with ``# expect: mypy[code] pyright[rule]`` on the
  line before it: each checker reports exactly the marked lines, with those codes.

The checkers are the ones installed next to the running interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

TYPE_TESTS = Path(__file__).parent / "type_tests"
USER_APP = TYPE_TESTS / "user_app.py"
WRONG_USES = TYPE_TESTS / "wrong_uses.py"
# Only these files: other helpers keep their own samples in type_tests/ too.
SAMPLES = [str(USER_APP), str(WRONG_USES)]
BIN = Path(sys.executable).parent
REPO = Path(__file__).parent.parent

CHECKERS = pytest.mark.parametrize("checker", ["mypy", "pyright"])


@dataclass(frozen=True)
class Diagnostic:
    file: str  # file name within type_tests/
    line: int  # 1-based
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: [{self.code}] {self.message}"


def executable(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed next to {sys.executable}"
    return str(path)


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1", "NO_COLOR": "1"}
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, check=False)
    # 0: clean, 1: diagnostics found; anything else is a crash or a usage error.
    assert result.returncode in (0, 1), f"{command[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def mypy_diagnostics(tmp_path_factory: pytest.TempPathFactory) -> list[Diagnostic]:
    cache = tmp_path_factory.mktemp("mypy_cache")
    result = run(
        [executable("mypy"), "--strict", "--cache-dir", str(cache), "-O", "json", *SAMPLES]
    )
    diagnostics = []
    for line in result.stdout.splitlines():
        item = json.loads(line)
        if item["severity"] == "error":
            diagnostics.append(
                Diagnostic(Path(item["file"]).name, item["line"], item["code"], item["message"])
            )
    return diagnostics


@pytest.fixture(scope="module")
def pyright_diagnostics() -> list[Diagnostic]:
    result = run(
        [
            executable("pyright"),
            "--project",
            str(TYPE_TESTS / "pyrightconfig.json"),
            "--pythonpath",
            sys.executable,
            "--outputjson",
            *SAMPLES,
        ]
    )
    report = json.loads(result.stdout)
    # Guard against a vacuous pass: pyright must really have read both sample files.
    assert report["summary"]["filesAnalyzed"] == len(SAMPLES), report["summary"]
    return [
        Diagnostic(
            Path(item["file"]).name,
            item["range"]["start"]["line"] + 1,
            item.get("rule", ""),
            item["message"],
        )
        for item in report["generalDiagnostics"]
        if item["severity"] in ("error", "warning")
    ]


def diagnostics_of(request: pytest.FixtureRequest, checker: str) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = request.getfixturevalue(f"{checker}_diagnostics")
    return diagnostics


_MARKER = re.compile(r"^\s*# expect: (?P<specs>.+)$")
_SPEC = re.compile(r"(?P<checker>mypy|pyright)\[(?P<codes>[\w\-, ]+)\]")


def expected_codes(path: Path, checker: str) -> dict[int, set[str]]:
    """Line number → codes ``checker`` must report there, from the ``# expect:`` markers."""
    expected: dict[int, set[str]] = {}
    lines = path.read_text().splitlines()
    for index, text in enumerate(lines):
        marker = _MARKER.search(text)
        if marker is None:
            continue
        specs = {m["checker"]: m["codes"] for m in _SPEC.finditer(marker["specs"])}
        assert set(specs) == {"mypy", "pyright"}, f"marker on line {index + 1} names both checkers"
        target = index + 2  # the marker describes the next line
        assert lines[target - 1].strip(), f"marker on line {index + 1} precedes a blank line"
        expected[target] = {code.strip() for code in specs[checker].split(",")}
    return expected


class TestUserApp:
    @CHECKERS
    def test_zero_errors(self, request: pytest.FixtureRequest, checker: str) -> None:
        """Typical user code type-checks with zero diagnostics."""
        found = [d for d in diagnostics_of(request, checker) if d.file == USER_APP.name]
        assert found == [], "\n".join(map(str, found))

    @pytest.mark.anyio
    async def test_runs(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The checked sample is real code: it runs and every call gives the expected text."""
        spec = importlib.util.spec_from_file_location("llm_worker_type_tests_user_app", USER_APP)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        assert await module.main() == [
            "shop:cats (limit 10)",
            "3",
            "count: 0",
            '{"bo":0}',
            "'a': Input should be a valid integer (got \"one\"); 'b': missing required argument",
            "search",
            "register_customer",
            "3",
            "3",
            "search",
            "3",
            "add",
            "lamp (limit 5, tags [])",
        ]


class TestWrongUses:
    def test_markers(self) -> None:
        """The sample marks every kind of wrong use the checkers must catch."""
        source = WRONG_USES.read_text()
        marked = expected_codes(WRONG_USES, "mypy")
        assert len(marked) >= 10
        assert "handle.register_tool(" in source
        assert "handle.register_tools(" in source
        assert "server.register_tool(" in source

    @CHECKERS
    def test_exactly_the_marked_lines(self, request: pytest.FixtureRequest, checker: str) -> None:
        """Each checker reports an error on every marked line and on no other line."""
        reported = {d.line for d in diagnostics_of(request, checker) if d.file == WRONG_USES.name}
        assert sorted(reported) == sorted(expected_codes(WRONG_USES, checker))

    @CHECKERS
    def test_codes(self, request: pytest.FixtureRequest, checker: str) -> None:
        """On each marked line the checker reports (at least) the codes the marker names."""
        reported: dict[int, set[str]] = defaultdict(set)
        for diagnostic in diagnostics_of(request, checker):
            if diagnostic.file == WRONG_USES.name:
                reported[diagnostic.line].add(diagnostic.code)
        missing = {
            line: sorted(codes - reported[line])
            for line, codes in expected_codes(WRONG_USES, checker).items()
            if not codes <= reported[line]
        }
        assert missing == {}

    @CHECKERS
    def test_handle_registration_named(self, request: pytest.FixtureRequest, checker: str) -> None:
        """Registering through a handle is rejected because the handle has no such method."""
        lines = WRONG_USES.read_text().splitlines()
        handle_calls = {
            number: text.strip().split("(")[0].split(".")[1]
            for number, text in enumerate(lines, start=1)
            if text.strip().startswith("handle.register_tool")
        }
        assert sorted(handle_calls.values()) == ["register_tool", "register_tools"]
        for number, attribute in handle_calls.items():
            messages = [
                d.message
                for d in diagnostics_of(request, checker)
                if d.file == WRONG_USES.name and d.line == number
            ]
            assert any("ToolServerHandle" in m and f'"{attribute}"' in m for m in messages), (
                messages
            )
