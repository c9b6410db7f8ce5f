"""Worker and LockedWorker under mypy --strict and pyright strict: type_tests/locked_worker.py.

The sample is checked twice, in one run of each checker:

- as it is, with its ``# type: ignore[...]`` marks and unused ignores reported as errors:
  zero diagnostics means the correct program passes and every mark is needed;
- with the marks stripped: each checker reports exactly the marked lines (a LockedWorker
  cannot register tools, edit history or set the system prompt), and mypy with the code
  the mark names.

The checkers are the ones installed next to the running interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SAMPLE = Path(__file__).parent / "type_tests" / "locked_worker.py"
CHECKED = "locked_worker.py"  # the sample as it is
STRIPPED = "locked_worker_unignored.py"  # the sample without its ignore marks
BIN = Path(sys.executable).parent
IGNORE = re.compile(r"  # type: ignore\[(?P<code>[\w-]+)\]$")
PYRIGHT_CONFIG = {
    "typeCheckingMode": "strict",
    "pythonVersion": "3.10",
    "reportUnnecessaryTypeIgnoreComment": "error",
}

CHECKERS = pytest.mark.parametrize("checker", ["mypy", "pyright"])


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int  # 1-based
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: [{self.code}] {self.message}"


def marked_lines() -> dict[int, str]:
    """Line number → the mypy code of its ``# type: ignore[code]`` mark."""
    marks = {}
    for number, text in enumerate(SAMPLE.read_text().splitlines(), start=1):
        match = IGNORE.search(text)
        if match:
            marks[number] = match["code"]
    return marks


def executable(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed next to {sys.executable}"
    return str(path)


def run(command: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1", "NO_COLOR": "1"}
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    # 0: clean, 1: diagnostics found; anything else is a crash or a usage error.
    assert result.returncode in (0, 1), f"{command[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the sample, its stripped copy and a strict pyright config."""
    directory = tmp_path_factory.mktemp("type_tests_worker")
    source = SAMPLE.read_text()
    (directory / CHECKED).write_text(source)
    stripped = "\n".join(IGNORE.sub("", line) for line in source.splitlines()) + "\n"
    (directory / STRIPPED).write_text(stripped)
    (directory / "pyrightconfig.json").write_text(json.dumps(PYRIGHT_CONFIG))
    return directory


@pytest.fixture(scope="module")
def mypy_diagnostics(workdir: Path) -> list[Diagnostic]:
    output = run(
        [
            executable("mypy"),
            "--strict",
            "--warn-unused-ignores",
            "--python-version",
            "3.10",
            "--cache-dir",
            str(workdir / ".mypy_cache"),
            "-O",
            "json",
            CHECKED,
            STRIPPED,
        ],
        workdir,
    )
    diagnostics = []
    for line in output.splitlines():
        item = json.loads(line)
        if item["severity"] == "error":
            diagnostics.append(
                Diagnostic(Path(item["file"]).name, item["line"], item["code"], item["message"])
            )
    return diagnostics


@pytest.fixture(scope="module")
def pyright_diagnostics(workdir: Path) -> list[Diagnostic]:
    output = run(
        [
            executable("pyright"),
            "--project",
            str(workdir / "pyrightconfig.json"),
            "--pythonpath",
            sys.executable,
            "--outputjson",
            CHECKED,
            STRIPPED,
        ],
        workdir,
    )
    report = json.loads(output)
    assert report["summary"]["filesAnalyzed"] == 2, report["summary"]
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


def diagnostics_of(request: pytest.FixtureRequest, checker: str, file: str) -> list[Diagnostic]:
    found: list[Diagnostic] = request.getfixturevalue(f"{checker}_diagnostics")
    return [d for d in found if d.file == file]


def line_of(fragment: str) -> int:
    [number] = [
        n for n, text in enumerate(SAMPLE.read_text().splitlines(), start=1) if fragment in text
    ]
    return number


class TestLockedWorkerSample:
    def test_marks_the_required_wrong_uses(self):
        """The sample marks locked.register_tool, locked.register_tools and the prompt setter."""
        marks = marked_lines()
        for fragment, code in [
            ("locked.register_tool(", "attr-defined"),
            ("locked.register_tools(", "attr-defined"),
            ('locked.system_prompt = "x"', "misc"),
        ]:
            assert marks.get(line_of(fragment)) == code, fragment

    @CHECKERS
    def test_correct_program_has_zero_errors(self, request, checker):
        """The correct program passes, and every ignore mark is needed (none is unused)."""
        found = diagnostics_of(request, checker, CHECKED)
        assert found == [], "\n".join(map(str, found))

    @CHECKERS
    def test_each_wrong_use_is_reported(self, request, checker):
        """Without the marks, the checker reports exactly the marked lines."""
        found = diagnostics_of(request, checker, STRIPPED)
        assert sorted({d.line for d in found}) == sorted(marked_lines()), "\n".join(map(str, found))

    def test_mypy_codes_match_the_marks(self, request):
        """mypy reports each marked line with the code its mark names."""
        found = {(d.line, d.code) for d in diagnostics_of(request, "mypy", STRIPPED)}
        assert found == set(marked_lines().items())

    @CHECKERS
    def test_registration_on_locked_worker_is_named(self, request, checker):
        """The register_* errors name LockedWorker and the missing method."""
        found = diagnostics_of(request, checker, STRIPPED)
        for method in ("register_tool", "register_tools"):
            line = line_of(f"locked.{method}(")
            messages = [d.message for d in found if d.line == line]
            assert any("LockedWorker" in m and f'"{method}"' in m for m in messages), messages

    @pytest.mark.anyio
    async def test_sample_runs(self, monkeypatch):
        """The checked program is real code: it runs and its worker does what it says."""
        spec = importlib.util.spec_from_file_location("llm_worker_type_tests_locked", SAMPLE)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        assert await module.main() == [
            "finished",
            "Keep short notes.",
            "True",
            "2",
            "milk",
            "One note.",
            "8",
            "4",
            "2",
        ]
        assert await module.with_deps() == ["ADA", "WorkerResult.FINISHED", "2"]
        assert await module.typed_output() == ["Oslo", "3"]
        assert await module.any_output_and_typed_hooks() == ["7", "'b'", "8", "guard"]
