"""Tests for ``llm_worker._cli`` (``llm-worker schema`` / ``python -m llm_worker schema``).

The targets are the modules in ``tests/cli_targets/``. In-process tests call
``_cli.main(argv)`` (pytest puts ``tests/`` on ``sys.path``); the process tests
run ``python -m llm_worker`` with ``PYTHONPATH=tests``. The expected output is
the golden files of ``test_formats.py``.
"""

from __future__ import annotations

import errno
import importlib.metadata
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from llm_worker import _cli

TESTS_DIR = Path(__file__).parent
GOLDEN_DIR = TESTS_DIR / "golden"
EXAMPLES = "cli_targets.example_tools"
GOLDEN_CASES = [
    ("neutral", False),
    ("openai", False),
    ("openai-responses", False),
    ("anthropic", False),
    ("gemini", False),
    ("mcp", False),
    ("openai", True),
    ("openai-responses", True),
]
GOLDEN_IDS = [fmt + ("-strict" if strict else "") for fmt, strict in GOLDEN_CASES]


def golden(fmt: str = "neutral", strict: bool = False) -> str:
    return (GOLDEN_DIR / f"{fmt}{'-strict' if strict else ''}.json").read_text(encoding="utf-8")


def format_args(fmt: str, strict: bool) -> list[str]:
    return ["--format", fmt, *(["--strict"] if strict else [])]


def run(*argv: str, seed: str = "0", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m llm_worker ARGV`` in a fresh process that can import ``cli_targets``."""
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR), "PYTHONHASHSEED": seed}
    return subprocess.run(
        [sys.executable, "-m", "llm_worker", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=cwd,
        check=False,
        timeout=120,
    )


class TestOutput:
    @pytest.mark.parametrize(("fmt", "strict"), GOLDEN_CASES, ids=GOLDEN_IDS)
    def test_prints_the_golden_file(self, capsys, fmt, strict):
        """stdout is exactly the golden file of the format, and exit status 0."""
        assert _cli.main(["schema", EXAMPLES, *format_args(fmt, strict)]) == 0
        out, err = capsys.readouterr()
        assert (out, err) == (golden(fmt, strict), "")

    def test_default_format_is_neutral(self, capsys):
        """Without --format the output is the neutral format."""
        assert _cli.main(["schema", EXAMPLES]) == 0
        assert capsys.readouterr().out == golden("neutral")

    def test_classes_and_module_give_the_same_output(self, capsys):
        """Naming each class of a module gives what naming the module gives, in any order."""
        _cli.main(["schema", f"{EXAMPLES}:Shelter", f"{EXAMPLES}:Library"])
        assert capsys.readouterr().out == golden("neutral")

    def test_a_class_named_twice_counts_once(self, capsys):
        """A class reached through two targets (module and Module:Class) is not a duplicate."""
        assert _cli.main(["schema", EXAMPLES, f"{EXAMPLES}:Library"]) == 0
        assert capsys.readouterr().out == golden("neutral")

    def test_tools_are_sorted_by_name_across_targets(self, capsys):
        """Tools of several targets come out as one list sorted by name."""
        import json

        assert _cli.main(["schema", "cli_targets.other_tools:Archive", EXAMPLES]) == 0
        names = [tool["name"] for tool in json.loads(capsys.readouterr().out)]
        assert names == ["add_book", "adopt", "archive_book", "file_under", "ping", "search"]

    def test_no_instance_is_created(self, capsys):
        """A registry class whose __init__ raises still exports: no instance is made."""
        assert _cli.main(["schema", "cli_targets.other_tools:Archive"]) == 0
        assert '"name": "archive_book"' in capsys.readouterr().out

    def test_nested_class_target(self, capsys):
        """Module:Outer.Inner names a nested registry class."""
        assert _cli.main(["schema", "cli_targets.other_tools:Outer.Inner"]) == 0
        assert '"name": "nested_tool"' in capsys.readouterr().out

    def test_module_target_takes_only_top_level_classes(self, capsys):
        """A module target takes the registry classes defined at its top level."""
        import json

        assert _cli.main(["schema", "cli_targets.other_tools"]) == 0
        assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["archive_book"]

    @pytest.mark.parametrize("target", ["cli_targets.reexport:Shop", "cli_targets.reexport.tools"])
    def test_the_targets_named_for_a_reexported_class_work(self, capsys, target):
        """The targets the error for a package that re-exports its registry names do work."""
        assert _cli.main(["schema", target]) == 0
        assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["buy"]

    def test_inherited_tool_is_one_tool(self, capsys):
        """A tool a registry subclass inherits unchanged is listed once, not a clash."""
        import json

        assert _cli.main(["schema", "cli_targets.inherit"]) == 0
        assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["own", "shared"]

    def test_a_subclass_without_the_decorator_is_a_target(self, capsys):
        """A plain subclass of a registry class has its tools: a module:Class target takes it."""
        import json

        assert _cli.main(["schema", "cli_targets.inherit:Renamed"]) == 0
        assert [t["name"] for t in json.loads(capsys.readouterr().out)] == ["own", "shared"]

    def test_output_file(self, capsys, tmp_path):
        """-o FILE writes the bytes stdout would get, and prints nothing."""
        path = tmp_path / "tools.json"
        assert _cli.main(["schema", EXAMPLES, "--format", "gemini", "-o", str(path)]) == 0
        assert capsys.readouterr() == ("", "")
        assert path.read_bytes() == golden("gemini").encode("utf-8")

    def test_the_file_is_replaced_whole(self, capsys, tmp_path):
        """-o writes a new file and renames it over the old one: a reader that opened the old
        file (a concurrent --check) reads it whole, never a truncated or half-written one."""
        path = tmp_path / "tools.json"
        path.write_text("[]\n", encoding="utf-8")
        with path.open("rb") as reader:
            assert _cli.main(["schema", EXAMPLES, "-o", str(path)]) == 0
            assert reader.read() == b"[]\n"
        assert path.read_text(encoding="utf-8") == golden("neutral")
        assert os.listdir(tmp_path) == ["tools.json"]  # no temporary file left

    @pytest.mark.skipif(os.name != "posix", reason="needs POSIX file modes")
    def test_the_file_keeps_its_permissions(self, capsys, tmp_path):
        """The new file has the old one's mode, as rewriting it in place left it."""
        path = tmp_path / "tools.json"
        path.write_text("[]\n", encoding="utf-8")
        path.chmod(0o640)
        assert _cli.main(["schema", EXAMPLES, "-o", str(path)]) == 0
        assert stat.S_IMODE(path.stat().st_mode) == 0o640

    @pytest.mark.skipif(os.name != "posix", reason="needs POSIX file modes")
    def test_a_new_file_gets_the_mode_open_gives(self, capsys, tmp_path):
        """A new file is 0o666 less the umask, as open() makes it (not mkstemp's 0o600)."""
        umask = os.umask(0o022)
        os.umask(umask)
        path = tmp_path / "tools.json"
        assert _cli.main(["schema", EXAMPLES, "-o", str(path)]) == 0
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask

    @pytest.mark.skipif(os.name != "posix", reason="symlinks need privileges on Windows")
    def test_a_symlink_has_its_target_written(self, capsys, tmp_path):
        """-o through a symlink writes the file it points at and keeps the link."""
        real = tmp_path / "real.json"
        real.write_text("[]\n", encoding="utf-8")
        link = tmp_path / "tools.json"
        link.symlink_to(real.name)
        assert _cli.main(["schema", EXAMPLES, "-o", str(link)]) == 0
        assert link.is_symlink()
        assert real.read_text(encoding="utf-8") == golden("neutral")

    def test_what_is_no_regular_file_is_written_in_place(self, capsys):
        """A device such as the null device cannot be replaced: it is written to, and kept."""
        assert _cli.main(["schema", EXAMPLES, "-o", os.devnull]) == 0
        assert capsys.readouterr() == ("", "")
        if os.name == "posix":
            assert stat.S_ISCHR(os.stat(os.devnull).st_mode)

    @pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs RLIMIT_FSIZE (POSIX)")
    def test_a_failed_write_leaves_the_old_file(self, tmp_path):
        """A write that fails midway (here the file size limit, as a disk that fills up):
        exit 2 in one line, and the old file is there as it was, with no temporary file."""
        import resource

        def limit_file_size() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
            resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))

        path = tmp_path / "tools.json"
        path.write_text("[]\n", encoding="utf-8")
        result = subprocess.run(
            [sys.executable, "-m", "llm_worker", "schema", EXAMPLES, "-o", str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
            check=False,
            timeout=120,
            preexec_fn=limit_file_size,
        )
        assert (result.returncode, result.stderr) == (
            2,
            f"python -m llm_worker schema: error: cannot write {path}: File too large\n",
        )
        assert path.read_text(encoding="utf-8") == "[]\n"
        assert os.listdir(tmp_path) == ["tools.json"]

    def test_current_directory_is_importable(self, capsys, tmp_path, monkeypatch):
        """A module in the current directory is a valid target; sys.path is restored after."""
        (tmp_path / "cwd_tools_for_cli_test.py").write_text(
            "from llm_worker import tool, tool_registry\n\n"
            "@tool_registry\n"
            "class Here:\n"
            "    @tool\n"
            "    async def here(self) -> str:\n"
            "        return ''\n",
            encoding="utf-8",
        )
        monkeypatch.chdir(tmp_path)
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
        before = list(sys.path)
        assert _cli.main(["schema", "cwd_tools_for_cli_test"]) == 0
        assert '"name": "here"' in capsys.readouterr().out
        assert sys.path == before


class TestCheck:
    def test_up_to_date(self, capsys):
        """--check on a file holding exactly the output: exit 0, nothing printed."""
        path = GOLDEN_DIR / "openai-strict.json"
        assert (
            _cli.main(["schema", EXAMPLES, *format_args("openai", True), "--check", str(path)]) == 0
        )
        assert capsys.readouterr() == ("", "")

    def test_out_of_date(self, capsys, tmp_path):
        """--check on a stale file: exit 1, a unified diff on stdout, the fix on stderr."""
        path = tmp_path / "tools.json"
        stale = golden("mcp").replace('"name": "ping"', '"name": "pong"')
        path.write_text(stale, encoding="utf-8")
        assert _cli.main(["schema", EXAMPLES, "--format", "mcp", "--check", str(path)]) == 1
        out, err = capsys.readouterr()
        assert out.startswith(f"--- {path}\n+++ {path} (regenerated)\n@@ ")
        assert '\n-    "name": "pong"\n+    "name": "ping"\n' in out
        assert err == (
            f"{path} is out of date; regenerate it with:\n"
            f"  llm-worker schema {EXAMPLES} --format mcp -o {path}\n"
        )
        assert path.read_text(encoding="utf-8") == stale  # --check never writes

    def test_missing_file(self, capsys, tmp_path):
        """--check on a file that does not exist: exit 1 and the command that creates it."""
        path = tmp_path / "tools.json"
        argv = ["schema", EXAMPLES, "--format", "openai", "--strict", "--check", str(path)]
        assert _cli.main(argv) == 1
        assert capsys.readouterr() == (
            "",
            f"{path} does not exist; create it with:\n"
            f"  llm-worker schema {EXAMPLES} --format openai --strict -o {path}\n",
        )
        assert not path.exists()

    def test_regenerate_command_fixes_the_file(self, capsys, tmp_path):
        """Running the printed command makes the next --check pass."""
        path = tmp_path / "tools.json"
        path.write_text("[]\n", encoding="utf-8")
        argv = ["schema", EXAMPLES, "--format", "gemini", "--check", str(path)]
        assert _cli.main(argv) == 1
        command = capsys.readouterr().err.splitlines()[-1].strip()
        assert _cli.main(shlex.split(command)[1:]) == 0
        assert _cli.main(argv) == 0

    def test_missing_final_newline_is_a_difference(self, capsys, tmp_path):
        """A file that differs only by its last newline is out of date, and the diff says so."""
        path = tmp_path / "tools.json"
        path.write_text(golden("neutral").rstrip("\n"), encoding="utf-8")
        assert _cli.main(["schema", EXAMPLES, "--check", str(path)]) == 1
        assert "\\ No newline at end of file\n" in capsys.readouterr().out

    def test_only_line_endings_differ(self, capsys, tmp_path):
        """A snapshot with \\r\\n line endings (core.autocrlf) and no other change: exit 1,
        no diff of identical-looking lines, and a message that names the line endings."""
        path = tmp_path / "tools.json"
        path.write_bytes(golden("neutral").encode("utf-8").replace(b"\n", b"\r\n"))
        assert _cli.main(["schema", EXAMPLES, "--check", str(path)]) == 1
        assert capsys.readouterr() == (
            "",
            f"{path} differs only in its line endings: \\r\\n where the output has \\n; "
            f"regenerate it with:\n"
            f"  llm-worker schema {EXAMPLES} -o {path}\n"
            f"To keep Git from converting it again (core.autocrlf), give it a .gitattributes "
            f"line such as: tools.json text eol=lf\n",
        )

    def test_line_endings_and_a_change(self, capsys, tmp_path, monkeypatch):
        """\\r\\n line endings and a real change: the diff shows the change alone."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "schemas").mkdir()
        stale = golden("mcp").replace('"name": "ping"', '"name": "pong"')
        Path("schemas/tools.json").write_bytes(stale.encode("utf-8").replace(b"\n", b"\r\n"))
        argv = ["schema", EXAMPLES, "--format", "mcp", "--check", "schemas/tools.json"]
        assert _cli.main(argv) == 1
        out, err = capsys.readouterr()
        assert "\r" not in out
        assert [line for line in out.splitlines() if line.startswith(("+", "-"))] == [
            "--- schemas/tools.json",
            "+++ schemas/tools.json (regenerated)",
            '-    "name": "pong"',
            '+    "name": "ping"',
        ]
        assert err.endswith(
            "(its \\r\\n line endings are left out of the diff)\n"
            "To keep Git from converting it again (core.autocrlf), give it a .gitattributes "
            "line such as: schemas/tools.json text eol=lf\n"
        )

    def test_only_a_byte_order_mark_differs(self, capsys, tmp_path):
        """A snapshot an editor saved with a UTF-8 byte-order mark and no other change: exit 1,
        as for line endings, and a message naming the mark, not a diff of look-alike lines."""
        path = tmp_path / "tools.json"
        path.write_bytes(b"\xef\xbb\xbf" + golden("neutral").encode("utf-8"))
        assert _cli.main(["schema", EXAMPLES, "--check", str(path)]) == 1
        assert capsys.readouterr() == (
            "",
            f"{path} differs only in its byte-order mark: it starts with U+FEFF (a UTF-8 BOM), "
            f"the output does not; regenerate it with:\n"
            f"  llm-worker schema {EXAMPLES} -o {path}\n",
        )

    def test_only_a_byte_order_mark_and_line_endings_differ(self, capsys, tmp_path):
        """A byte-order mark and \\r\\n line endings, nothing else: both named, and Git's advice."""
        path = tmp_path / "tools.json"
        text = golden("neutral").encode("utf-8").replace(b"\n", b"\r\n")
        path.write_bytes(b"\xef\xbb\xbf" + text)
        assert _cli.main(["schema", EXAMPLES, "--check", str(path)]) == 1
        assert capsys.readouterr() == (
            "",
            f"{path} differs only in its byte-order mark and its line endings: it starts with "
            f"U+FEFF (a UTF-8 BOM), the output does not, and has \\r\\n where the output has "
            f"\\n; regenerate it with:\n"
            f"  llm-worker schema {EXAMPLES} -o {path}\n"
            f"To keep Git from converting it again (core.autocrlf), give it a .gitattributes "
            f"line such as: tools.json text eol=lf\n",
        )

    @pytest.mark.parametrize(
        ("crlf", "note"),
        [
            (False, "(its byte-order mark is left out of the diff)\n"),
            (True, "(its byte-order mark and its \\r\\n line endings are left out of the diff)\n"),
        ],
        ids=["bom", "bom-crlf"],
    )
    def test_a_byte_order_mark_and_a_change(self, capsys, tmp_path, crlf, note):
        """A byte-order mark and a real change: the diff shows the change alone, and says
        what it leaves out."""
        path = tmp_path / "tools.json"
        stale = golden("mcp").replace('"name": "ping"', '"name": "pong"').encode("utf-8")
        path.write_bytes(b"\xef\xbb\xbf" + (stale.replace(b"\n", b"\r\n") if crlf else stale))
        assert _cli.main(["schema", EXAMPLES, "--format", "mcp", "--check", str(path)]) == 1
        out, err = capsys.readouterr()
        assert "\ufeff" not in out
        assert [line for line in out.splitlines() if line.startswith(("+", "-"))] == [
            f"--- {path}",
            f"+++ {path} (regenerated)",
            '-    "name": "pong"',
            '+    "name": "ping"',
        ]
        assert err.startswith(f"{path} is out of date; regenerate it with:\n")
        assert err.split("\n")[2] + "\n" == note

    def test_an_empty_target_fails_the_check(self, capsys, tmp_path):
        """--check of a target without tools is an error, not a pass on a file holding []."""
        path = tmp_path / "tools.json"
        path.write_text("[]\n", encoding="utf-8")
        assert _cli.main(["schema", "cli_targets.empty:Empty", "--check", str(path)]) == 2
        assert capsys.readouterr().err.startswith(
            "llm-worker schema: error: 'cli_targets.empty:Empty' has no tools"
        )

    def test_output_and_check_exclude_each_other(self, capsys, tmp_path):
        """-o and --check together are a usage error (exit 2)."""
        with pytest.raises(SystemExit) as info:
            _cli.main(["schema", EXAMPLES, "-o", "a.json", "--check", "b.json"])
        assert info.value.code == 2
        assert "not allowed with argument" in capsys.readouterr().err


BAD_TARGETS = [
    (["cli_targets.nope"], "no module named 'cli_targets.nope'"),
    (["no_such_package_xyz.tools"], "no module named 'no_such_package_xyz.tools'"),
    ([f"{EXAMPLES}:Nope"], f"module '{EXAMPLES}' has no class 'Nope'"),
    ([f"{EXAMPLES}:Library.nope"], f"module '{EXAMPLES}' has no class 'Library.nope'"),
    (["cli_targets.plain:Plain"], "'cli_targets.plain:Plain' is not a @tool_registry class"),
    (["cli_targets.plain:helper"], "'cli_targets.plain:helper' is not a class (it is a function)"),
    (["cli_targets.plain"], "module 'cli_targets.plain' defines no @tool_registry class"),
    (
        ["cli_targets.reexport"],
        "module 'cli_targets.reexport' defines no @tool_registry class (a module target takes "
        "only those it defines; it imports cli_targets.reexport.tools.Shop): give "
        "'cli_targets.reexport:Shop' or 'cli_targets.reexport.tools'",
    ),
    (
        ["cli_targets.needs_missing"],
        "importing 'cli_targets.needs_missing' failed: ModuleNotFoundError: "
        "No module named 'llm_worker_test_missing_dependency'",
    ),
    (
        [EXAMPLES, "cli_targets.clash"],
        "two tools are named 'search': one in cli_targets.example_tools.Library, "
        "one in cli_targets.clash.Clash (tool names must be unique)",
    ),
    (
        ["cli_targets.empty:Empty"],
        "'cli_targets.empty:Empty' has no tools (a @tool_registry class without @tool methods)",
    ),
    (["cli_targets.empty"], "module 'cli_targets.empty' has no tools (no @tool methods in Empty)"),
    (  # a target without tools is an error beside one with tools too
        [EXAMPLES, "cli_targets.empty"],
        "module 'cli_targets.empty' has no tools (no @tool methods in Empty)",
    ),
    (
        ["cli_targets.surrogate"],
        "tool 'open_file': the text at input_schema/properties/name/description holds U+DCE9, "
        "a lone surrogate, which UTF-8 cannot encode (such as bytes decoded with "
        "errors='surrogateescape' leave)",
    ),
    (
        [EXAMPLES, "--strict"],
        "--strict applies only to --format openai and --format openai-responses",
    ),
    (
        ["cli_targets.freeform", "--format", "openai", "--strict"],
        "Cannot make strict OpenAI schemas: free: at properties/meta: an object with keys "
        "not named in advance (such as dict[str, ...]) has no strict form (strict mode "
        "needs additionalProperties false)",
    ),
    *(
        ([target], f"invalid target {target!r} (expected package.module or package.module:Class)")
        for target in ("a:b:c", "pkg.mod:", ":Class", "pkg..mod", "1pkg.mod", "pkg.mod:Cls-1")
    ),
]


class TestBadTargets:
    @pytest.mark.parametrize(("argv", "message"), BAD_TARGETS, ids=[m for _, m in BAD_TARGETS])
    def test_one_line_and_exit_2(self, capsys, argv, message):
        """A bad target exits 2 with one line on stderr naming the problem, and no output."""
        assert _cli.main(["schema", *argv]) == 2
        assert capsys.readouterr() == ("", f"llm-worker schema: error: {message}\n")

    def test_import_error_in_the_target(self, capsys):
        """A target whose import raises is reported in one line with the exception's text."""
        assert _cli.main(["schema", "cli_targets.broken"]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            "llm-worker schema: error: importing 'cli_targets.broken' failed: TypeError: "
            "Cannot build tools for cli_targets.broken.Broken: search: parameter 'query' "
            "has no type annotation (add one, e.g. query: str)\n"
        )

    def test_a_target_that_exits_while_imported(self, capsys):
        """sys.exit() in the target's import is a usage error in one line, not its exit."""
        assert _cli.main(["schema", "cli_targets.exits"]) == 2
        assert capsys.readouterr() == (
            "",
            "llm-worker schema: error: importing 'cli_targets.exits' failed: SystemExit: 3\n",
        )

    @pytest.mark.parametrize(
        ("module", "raised"),
        [
            ("cli_targets.import_cancelled", "CancelledError"),
            ("cli_targets.import_generator_exit", "GeneratorExit: while importing"),
            ("cli_targets.import_base_exception", "Stop: a BaseException of its own"),
        ],
    )
    def test_a_base_exception_while_imported(self, capsys, tmp_path, module, raised):
        """A BaseException that is no KeyboardInterrupt (asyncio.CancelledError, GeneratorExit,
        the target's own) while the target is imported: exit 2 in one line, as any failed
        import; it was a traceback and the status 1 of an out-of-date file."""
        path = tmp_path / "tools.json"
        path.write_text("[]\n", encoding="utf-8")
        assert _cli.main(["schema", module, "--check", str(path)]) == 2
        assert capsys.readouterr() == (
            "",
            f"llm-worker schema: error: importing {module!r} failed: {raised}\n",
        )

    def test_a_factory_that_raises_a_base_exception(self, capsys):
        """mcp serve: a factory raising asyncio.CancelledError is a failed call in one line."""
        pytest.importorskip("mcp")
        assert _cli.main(["mcp", "serve", "cli_targets.cancelled_factory:make"]) == 2
        assert capsys.readouterr() == (
            "",
            "llm-worker mcp serve: error: calling 'cli_targets.cancelled_factory:make' "
            "failed: CancelledError\n",
        )

    def test_what_a_target_prints_goes_to_stderr(self, capsys):
        """The schema on stdout stays JSON when the target prints while it is imported."""
        assert _cli.main(["schema", "cli_targets.noisy"]) == 0
        out, err = capsys.readouterr()
        assert [tool["name"] for tool in json.loads(out)] == ["ping"]
        assert err == "noise on import\n"

    def test_no_file_is_written_for_a_bad_target(self, capsys, tmp_path):
        """A bad target leaves -o's file alone."""
        path = tmp_path / "tools.json"
        path.write_text("keep\n", encoding="utf-8")
        assert _cli.main(["schema", "cli_targets.plain", "-o", str(path)]) == 2
        assert path.read_text(encoding="utf-8") == "keep\n"

    def test_unwritable_output(self, capsys, tmp_path):
        """An -o path that cannot be written exits 2 with one line."""
        path = tmp_path / "missing-dir" / "tools.json"
        assert _cli.main(["schema", EXAMPLES, "-o", str(path)]) == 2
        assert capsys.readouterr() == (
            "",
            f"llm-worker schema: error: cannot write {path}: No such file or directory\n",
        )

    @pytest.mark.parametrize(
        ("error", "status", "message"),
        [
            (
                OSError(errno.EIO, "Input/output error"),
                2,
                "cannot write stdout: Input/output error",
            ),
            (
                OSError(errno.ENOSPC, "No space left on device"),
                2,
                "cannot write stdout: No space left on device",
            ),
            (BrokenPipeError(errno.EPIPE, "Broken pipe"), 1, None),  # the reader left: quietly
        ],
        ids=["EIO", "ENOSPC", "EPIPE"],
    )
    def test_unwritable_stdout(self, capsys, monkeypatch, error, status, message):
        """A stdout that cannot be written is an error in one line, as -o's (exit 2); a reader
        that left early still ends the command quietly with status 1."""
        monkeypatch.setattr(sys, "stdout", _FailingStdout(error))
        assert _cli.main(["schema", EXAMPLES]) == status
        expected = "" if message is None else f"llm-worker schema: error: {message}\n"
        assert capsys.readouterr().err == expected

    def test_a_stdout_that_takes_part_of_each_write(self, capsys, monkeypatch):
        """A write that takes part of the data and returns the count is written on from
        there: the whole output arrives (it was cut after the first write)."""
        stdout = _PartialStdout(per_write=1000)
        monkeypatch.setattr(sys, "stdout", stdout)
        assert _cli.main(["schema", EXAMPLES]) == 0
        assert bytes(stdout.taken) == golden("neutral").encode("utf-8")

    def test_a_stdout_that_takes_no_more_is_a_reader_that_left(self, capsys, monkeypatch):
        """A write that takes nothing, and raises nothing, ends the command as a reader that
        left does: status 1, nothing on stderr (it was status 0 and a cut output)."""
        monkeypatch.setattr(sys, "stdout", _PartialStdout(per_write=1000, capacity=3000))
        assert _cli.main(["schema", EXAMPLES]) == 1
        assert capsys.readouterr().err == ""


class _PartialStdout:
    """A stdout that takes at most ``per_write`` bytes a write, and nothing past ``capacity``."""

    def __init__(self, per_write: int, capacity: int | None = None) -> None:
        self.buffer = self
        self.per_write = per_write
        self.capacity = capacity
        self.taken = bytearray()

    def write(self, data: bytes) -> int:
        room = self.per_write
        if self.capacity is not None:
            room = min(room, self.capacity - len(self.taken))
        self.taken += data[:room]
        return len(data[:room])

    def flush(self) -> None:
        pass


class _FailingStdout:
    """A stdout whose writes fail as a full disk, a broken device or a closed pipe do."""

    def __init__(self, error: OSError) -> None:
        self.buffer = self
        self.error = error

    def write(self, data: object) -> int:
        raise self.error

    def flush(self) -> None:
        pass


class TestProcess:
    @pytest.mark.parametrize(
        ("fmt", "strict"), [("gemini", False), ("openai", True)], ids=["gemini", "openai-strict"]
    )
    def test_byte_identical_across_hash_seeds(self, fmt, strict):
        """Two processes with different PYTHONHASHSEED print the same bytes: the golden file."""
        first = run("schema", EXAMPLES, *format_args(fmt, strict), seed="1")
        second = run("schema", EXAMPLES, *format_args(fmt, strict), seed="4242")
        assert (first.returncode, first.stderr) == (0, "")
        assert first.stdout == second.stdout == golden(fmt, strict)

    def test_a_closed_stdout_is_a_one_line_error(self):
        """Started with stdout closed (`>&-`): sys.stdout is None (it was a traceback)."""
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
        result = subprocess.run(
            [sys.executable, "-m", "llm_worker", "schema", EXAMPLES],
            stdout=None,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
            timeout=120,
            pass_fds=(),
            preexec_fn=lambda: os.close(1),
        )
        assert result.returncode == 2
        assert result.stderr.decode().splitlines()[-1] == (
            "python -m llm_worker schema: error: cannot write stdout: it is closed"
        )

    def test_stdout_bytes_do_not_depend_on_its_encoding(self):
        """Non-ASCII text reaches stdout as UTF-8 even when stdout's encoding is ASCII."""
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR), "PYTHONIOENCODING": "ascii"}
        result = subprocess.run(
            [sys.executable, "-m", "llm_worker", "schema", EXAMPLES],
            capture_output=True,
            env=env,
            check=False,
            timeout=120,
        )
        assert (result.returncode, result.stderr) == (0, b"")
        assert "«quoted»".encode() in result.stdout
        assert result.stdout == golden("neutral").encode("utf-8")

    def test_check_diff_does_not_depend_on_stdout_encoding(self, tmp_path):
        """--check's diff reaches a cp1252 stdout (Windows CI) as UTF-8, not as a traceback."""
        stale = tmp_path / "stale.json"
        stale.write_text(golden().replace('"name": "ping"', '"name": "пинг"'), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR), "PYTHONIOENCODING": "cp1252"}
        result = subprocess.run(
            [sys.executable, "-m", "llm_worker", "schema", EXAMPLES, "--check", str(stale)],
            capture_output=True,
            env=env,
            check=False,
            timeout=120,
        )
        assert result.returncode == 1
        assert b"Traceback" not in result.stderr
        assert '\n-    "name": "пинг"\n+    "name": "ping"\n'.encode() in result.stdout
        assert result.stderr.endswith(
            f"  python -m llm_worker schema {EXAMPLES} -o {stale}\n".encode()
        )

    @pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
    def test_stdout_on_a_full_disk(self):
        """stdout on a full disk: exit 2 and one line, as -o's, no traceback."""
        with open("/dev/full", "wb") as full:
            result = subprocess.run(
                [sys.executable, "-m", "llm_worker", "schema", EXAMPLES],
                stdout=full,
                stderr=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
                check=False,
                timeout=120,
            )
        assert (result.returncode, result.stderr) == (
            2,
            b"python -m llm_worker schema: error: cannot write stdout: No space left on device\n",
        )

    def test_descriptor_level_output_goes_to_stderr(self):
        """What a target writes to file descriptor 1 itself (a native banner, sys.__stdout__)
        while it is imported goes to stderr: stdout holds the JSON alone."""
        result = run("schema", "cli_targets.fd_noisy")
        assert result.returncode == 0
        assert [tool["name"] for tool in json.loads(result.stdout)] == ["ping"]
        assert result.stderr == "banner at fd level\nto sys.__stdout__, unflushed\n"

    def test_descriptor_is_restored_after_a_failed_import(self, capfd):
        """Descriptor 1 is stdout again after a target's import failed (output went to stderr)."""
        assert _cli.main(["schema", "cli_targets.fd_broken"]) == 2
        os.write(1, b"stdout again\n")
        out, err = capfd.readouterr()
        assert out == "stdout again\n"
        assert err == (
            "written before the error\n"
            "llm-worker schema: error: importing 'cli_targets.fd_broken' failed: "
            "RuntimeError: the import fails\n"
        )

    def test_mcp_serve_stdio_keeps_descriptor_output_off_the_protocol(self):
        """mcp serve over stdio: what the factory's module and call write to descriptor 1 goes
        to stderr, so stdout (the protocol) stays empty when the client sends nothing."""
        pytest.importorskip("mcp")
        result = subprocess.run(
            [sys.executable, "-m", "llm_worker", "mcp", "serve", "cli_targets.fd_noisy:factory"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
            check=False,
            timeout=120,
        )
        assert (result.returncode, result.stdout) == (0, "")
        assert result.stderr.startswith(
            "banner at fd level\nto sys.__stdout__, unflushed\nbanner from the factory\n"
        )

    def test_check_in_a_process(self, tmp_path):
        """python -m llm_worker schema --check exits 0 on the golden file, 1 on a stale one."""
        assert run("schema", EXAMPLES, "--check", str(GOLDEN_DIR / "neutral.json")).returncode == 0
        stale = tmp_path / "stale.json"
        stale.write_text("[]\n", encoding="utf-8")
        result = run("schema", EXAMPLES, "--check", str(stale))
        assert result.returncode == 1
        assert result.stderr.endswith(f"  python -m llm_worker schema {EXAMPLES} -o {stale}\n")

    def test_a_reader_that_leaves_early_gets_no_traceback(self, tmp_path):
        """`schema ... --check FILE | head`: the reader closes the pipe before the diff is
        written; the command ends with status 1 and nothing on stderr but its own line."""
        empty = tmp_path / "empty.json"
        empty.write_text("", encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
        process = subprocess.Popen(
            [sys.executable, "-m", "llm_worker", "schema", EXAMPLES, "--check", str(empty)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert process.stdout is not None
        process.stdout.close()  # before the command has imported its target
        _, err = process.communicate(timeout=120)
        assert process.returncode == 1
        assert b"Traceback" not in err
        assert b"BrokenPipeError" not in err

    def test_a_reader_that_leaves_during_a_large_output(self):
        """`schema ... | head -c 10` on an output larger than a pipe holds: the reader takes a
        few bytes and closes, the one write is cut short. Status 1 and nothing on stderr, as
        for any reader that left; it was status 0, quietly cut."""
        with subprocess.Popen(
            [sys.executable, "-m", "llm_worker", "schema", "cli_targets.large"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        ) as process:
            assert process.stdout is not None
            # Waits until the command writes; its one write then fills the pipe and waits.
            assert process.stdout.read(10).startswith(b"[")
            process.stdout.close()
            _, err = process.communicate(timeout=120)
        assert (process.returncode, err) == (1, b"")

    def test_a_cancelled_import_is_not_an_out_of_date_file(self, tmp_path):
        """A target whose import raises asyncio.CancelledError (a BaseException), with
        --check: exit 2 and one line, not a traceback and the 1 of an out-of-date file."""
        snapshot = tmp_path / "tools.json"
        snapshot.write_text("[]\n", encoding="utf-8")
        result = run("schema", "cli_targets.import_cancelled", "--check", str(snapshot))
        assert (result.returncode, result.stdout, result.stderr) == (
            2,
            "",
            "python -m llm_worker schema: error: importing 'cli_targets.import_cancelled' "
            "failed: CancelledError\n",
        )

    def test_bad_target_has_no_traceback(self):
        """A bad target in a real process: exit 2, one stderr line, no traceback."""
        result = run("schema", "cli_targets.broken")
        assert result.returncode == 2
        assert result.stdout == ""
        assert len(result.stderr.splitlines()) == 1
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith(
            "python -m llm_worker schema: error: importing 'cli_targets.broken' failed: "
        )

    def test_console_script_style_entry(self, tmp_path):
        """main() called as a console script does (cwd not on sys.path) imports from the cwd."""
        code = (
            "import os, sys\n"
            "sys.path[:] = [p for p in sys.path if p not in ('', os.getcwd())]\n"
            "from llm_worker._cli import main\n"
            f"sys.exit(main(['schema', '{EXAMPLES}', '--format', 'anthropic']))\n"
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=TESTS_DIR,
            check=False,
            timeout=120,
        )
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout == golden("anthropic")

    def test_installed_console_script(self):
        """If the llm-worker console script is installed, it points at _cli.main and works."""
        [*scripts] = importlib.metadata.entry_points(group="console_scripts", name="llm-worker")
        if not scripts:  # the entry point is declared in pyproject.toml by the packaging step
            assert callable(_cli.main)
            return
        assert scripts[0].value == "llm_worker._cli:main"
        script = Path(sys.executable).with_name("llm-worker")
        env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
        result = subprocess.run(
            [str(script), "schema", EXAMPLES],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=env,
            check=False,
            timeout=120,
        )
        assert (result.returncode, result.stdout) == (0, golden("neutral"))

    def test_importing_llm_worker_does_not_load_the_cli(self):
        """import llm_worker loads neither _cli nor argparse's parser for it."""
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, llm_worker; print('llm_worker._cli' in sys.modules)",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        assert result.stdout == "False\n"


class TestPreCommitHook:
    def test_hook_runs_the_schema_command(self):
        """The published pre-commit hook runs `llm-worker schema` once, without file names."""
        text = (TESTS_DIR.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
        assert text.count("- id: ") == 1
        assert "- id: llm-worker-schema\n" in text
        assert "  entry: llm-worker schema\n" in text
        assert "  pass_filenames: false\n" in text


def test_the_diff_splits_lines_at_newlines_only():
    """A description's U+2028 or U+0085 (JSON leaves them in its strings) is not a line
    end: splitlines() cut there and marked each piece "No newline at end of file"."""
    from llm_worker._cli import _diff

    old = '[\n  "one\u2028two\u0085three",\n  "x"\n]\n'.encode()
    new = '[\n  "one\u2028two\u0085three",\n  "y"\n]\n'.encode()
    diff = _diff("schema.json", old, new).decode()
    assert "No newline" not in diff
    assert '-  "x"\n+  "y"\n' in diff
    assert '\n   "one\u2028two\u0085three",\n' in diff
