"""``llm-worker schema`` at its edges: output after it is done, unexpected errors, Windows
command lines, and a file path given as a target.

The targets are written into a temporary directory, which is the current
directory of the command (importable, as with ``python -m``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from llm_worker import _cli

_TOOLS = '''
from llm_worker import tool, tool_registry


@tool_registry
class Shop:
    @tool
    async def ping(self) -> str:
        """Answer pong."""
        return "pong"
'''

# At exit, after the command has written its output: print(), sys.__stdout__ and descriptor 1.
_AT_EXIT = (
    _TOOLS
    + """
import atexit, os, sys


@atexit.register
def _goodbye() -> None:
    print("atexit print")
    sys.__stdout__.write("atexit sys.__stdout__\\n")
    sys.__stdout__.flush()
    os.write(1, b"atexit descriptor 1\\n")
"""
)

# A lazy module whose __getattr__ raises KeyError for a name it lacks (it must raise
# AttributeError): looking up the target's class fails as no target error explains.
_LOOKUP_FAILS = (
    _TOOLS
    + """
_LAZY: dict[str, object] = {}


def __getattr__(name: str) -> object:
    return _LAZY[name]
"""
)

# The same, raising asyncio.CancelledError: a BaseException, past every `except Exception`.
_LOOKUP_CANCELLED = (
    _TOOLS
    + """
import asyncio


def __getattr__(name: str) -> object:
    raise asyncio.CancelledError
"""
)


# A target that moves to its data directory as it is imported, as many applications do.
_MOVES = (
    _TOOLS
    + """
import os

os.makedirs(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"), exist_ok=True)
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
"""
)

# A target that starts a thread (not a daemon) as it is imported, as a connection pool or a
# metrics exporter does, which ends only when told to: Python waits for it at exit.
_STARTS_A_THREAD = (
    _TOOLS
    + """
import threading

_stop = threading.Event()
threading.Thread(target=_stop.wait, name="metrics-flusher").start()
"""
)


def _write(directory: Path, name: str, text: str) -> None:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _run(cwd: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m llm_worker ARGV`` in a fresh process started in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "llm_worker", *argv],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        cwd=cwd,
        check=False,
        timeout=timeout,
    )


class TestOutputAfterTheCommand:
    def test_what_an_atexit_handler_prints_goes_to_stderr(self, tmp_path):
        """A target's atexit handler runs after the output is written: what it prints, to
        sys.stdout, sys.__stdout__ or descriptor 1, goes to stderr, never after the JSON."""
        _write(tmp_path, "leaves_late.py", _AT_EXIT)
        result = _run(tmp_path, "schema", "leaves_late")
        assert result.returncode == 0
        assert [tool["name"] for tool in json.loads(result.stdout)] == ["ping"]
        assert result.stderr == ("atexit print\natexit sys.__stdout__\natexit descriptor 1\n")

    def test_after_a_failed_check_too(self, tmp_path):
        """The diff of a failed --check is on stdout alone; the handler's output on stderr."""
        _write(tmp_path, "leaves_late.py", _AT_EXIT)
        _write(tmp_path, "stale.json", "[]\n")
        result = _run(tmp_path, "schema", "leaves_late", "--check", "stale.json")
        assert result.returncode == 1
        assert result.stdout.startswith("--- stale.json\n+++ stale.json (regenerated)\n")
        assert "atexit" not in result.stdout
        assert result.stderr.endswith("atexit print\natexit sys.__stdout__\natexit descriptor 1\n")

    def test_a_call_with_argv_leaves_stdout_alone(self, tmp_path, monkeypatch, capfd):
        """main(argv) is a call from another program, not the program: stdout is its own after."""
        monkeypatch.chdir(tmp_path)
        _write(tmp_path, "plain_tools_for_edges.py", _TOOLS)
        assert _cli.main(["schema", "plain_tools_for_edges", "-o", "out.json"]) == 0
        print("still stdout")
        os.write(1, b"descriptor 1 too\n")
        assert capfd.readouterr().out == "still stdout\ndescriptor 1 too\n"


class TestImportSideEffects:
    def test_o_writes_where_the_command_started_when_a_target_changes_directory(self, tmp_path):
        """A target that chdir()s as it is imported: -o writes the path given from where the
        command started (it was read from the target's directory: "cannot write
        schemas/tools.json: No such file or directory", or the wrong file written)."""
        _write(tmp_path, "moves.py", _MOVES)
        (tmp_path / "schemas").mkdir()
        result = _run(tmp_path, "schema", "moves", "-o", "schemas/tools.json")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        written = json.loads((tmp_path / "schemas" / "tools.json").read_text(encoding="utf-8"))
        assert [tool["name"] for tool in written] == ["ping"]
        assert not (tmp_path / "data" / "schemas").exists()

    def test_check_reads_where_the_command_started_when_a_target_changes_directory(self, tmp_path):
        """--check compares the file given from where the command started, and names it as
        given: up to date, 0; out of date, 1 with its diff; missing, 1."""
        _write(tmp_path, "moves.py", _MOVES)
        (tmp_path / "schemas").mkdir()
        assert _run(tmp_path, "schema", "moves", "-o", "schemas/tools.json").returncode == 0
        fresh = _run(tmp_path, "schema", "moves", "--check", "schemas/tools.json")
        assert (fresh.returncode, fresh.stdout, fresh.stderr) == (0, "", "")
        (tmp_path / "schemas" / "tools.json").write_text("[]\n", encoding="utf-8")
        stale = _run(tmp_path, "schema", "moves", "--check", "schemas/tools.json")
        assert stale.returncode == 1
        assert stale.stdout.startswith(
            "--- schemas/tools.json\n+++ schemas/tools.json (regenerated)\n"
        )
        assert stale.stderr == (
            "schemas/tools.json is out of date; regenerate it with:\n"
            "  python -m llm_worker schema moves -o schemas/tools.json\n"
        )
        missing = _run(tmp_path, "schema", "moves", "--check", "schemas/other.json")
        assert missing.returncode == 1
        assert missing.stderr.startswith("schemas/other.json does not exist; create it with:")

    def test_in_process_too(self, tmp_path, monkeypatch):
        """main(argv) resolves -o before the import as the program does."""
        monkeypatch.chdir(tmp_path)
        _write(tmp_path, "moves_in_process.py", _MOVES)
        assert _cli.main(["schema", "moves_in_process", "-o", "tools.json"]) == 0
        assert (tmp_path / "tools.json").is_file()
        assert not (tmp_path / "data" / "tools.json").exists()

    @pytest.mark.parametrize(
        ("options", "status"),
        [([], 0), (["-o", "tools.json"], 0), (["--check", "stale.json"], 1)],
        ids=["stdout", "output", "check"],
    )
    def test_a_thread_left_running_does_not_keep_the_command(self, tmp_path, options, status):
        """A target that starts a thread (not a daemon) which never ends: once the output is
        written, the command exits with its status, within moments (it never exited: Python
        waits for such threads, so a CI step hung until its job's timeout)."""
        _write(tmp_path, "starts_a_thread.py", _STARTS_A_THREAD)
        _write(tmp_path, "stale.json", "[]\n")
        result = _run(tmp_path, "schema", "starts_a_thread", *options, timeout=30)
        assert (result.returncode, result.stderr.startswith("stale.json is out")) == (
            status,
            status == 1,
        )
        if not options:
            assert [tool["name"] for tool in json.loads(result.stdout)] == ["ping"]
        elif options[0] == "-o":
            assert json.loads((tmp_path / "tools.json").read_text(encoding="utf-8"))
        else:
            assert result.stdout.startswith("--- stale.json\n+++ stale.json (regenerated)\n")

    def test_a_thread_left_running_after_a_usage_error(self, tmp_path):
        """The same for a target that is refused (no tools): exit 2, the one line."""
        _write(tmp_path, "starts_a_thread.py", _STARTS_A_THREAD)
        result = _run(tmp_path, "schema", "starts_a_thread:Missing", timeout=30)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            "python -m llm_worker schema: error: module 'starts_a_thread' has no class 'Missing'\n"
        )


class TestUnexpectedErrors:
    def test_a_bug_exits_2_with_one_line_then_the_traceback(self, tmp_path):
        """An exception no error of a target explains (a bug): exit 2, not the 1 of a stale
        file; the first line names it, the traceback follows for a bug report."""
        _write(tmp_path, "lookup_fails.py", _LOOKUP_FAILS)
        result = _run(tmp_path, "schema", "lookup_fails:Missing")
        assert (result.returncode, result.stdout) == (2, "")
        first, *rest = result.stderr.splitlines()
        assert first == (
            "python -m llm_worker schema: error: unexpected KeyError: 'Missing' "
            "(a bug in llm-worker or in the target; the traceback follows)"
        )
        assert rest[0] == "Traceback (most recent call last):"
        assert rest[-1] == "KeyError: 'Missing'"

    def test_a_bug_in_check_mode_is_not_an_out_of_date_file(self, tmp_path):
        """With --check, CI must not read a crash as 'the file is out of date' (status 1)."""
        _write(tmp_path, "lookup_fails.py", _LOOKUP_FAILS)
        _write(tmp_path, "tools.json", "[]\n")
        result = _run(tmp_path, "schema", "lookup_fails:Missing", "--check", "tools.json")
        assert result.returncode == 2
        assert "is out of date" not in result.stderr

    def test_a_base_exception_is_a_bug_too(self, tmp_path):
        """A BaseException that is no KeyboardInterrupt or SystemExit (asyncio.CancelledError)
        past the import: exit 2, the one line and the traceback; it was a bare traceback and
        status 1, which --check means for an out-of-date file."""
        _write(tmp_path, "lookup_cancelled.py", _LOOKUP_CANCELLED)
        _write(tmp_path, "tools.json", "[]\n")
        result = _run(tmp_path, "schema", "lookup_cancelled:Missing", "--check", "tools.json")
        assert (result.returncode, result.stdout) == (2, "")
        first, *rest = result.stderr.splitlines()
        assert first == (
            "python -m llm_worker schema: error: unexpected CancelledError "
            "(a bug in llm-worker or in the target; the traceback follows)"
        )
        assert rest[0] == "Traceback (most recent call last):"
        assert rest[-1] == "asyncio.exceptions.CancelledError"

    def test_in_process(self, tmp_path, monkeypatch, capsys):
        """main() returns 2 rather than raising, and writes nothing to stdout."""
        monkeypatch.chdir(tmp_path)
        _write(tmp_path, "lookup_fails_in_process.py", _LOOKUP_FAILS)
        assert _cli.main(["schema", "lookup_fails_in_process:Missing"]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.startswith("llm-worker schema: error: unexpected KeyError: 'Missing' (")
        assert "Traceback (most recent call last):" in err


def _check_args(path: str, fmt: str = "openai", strict: bool = True) -> argparse.Namespace:
    return argparse.Namespace(targets=["shop.tools"], format=fmt, strict=strict, check=path)


class TestRegenerateCommand:
    def test_windows_quotes_for_cmd(self):
        """On Windows the command is quoted as cmd.exe and the C runtime read it: a path
        with a space in double quotes, its backslashes as they are."""
        args = _check_args(r"C:\proj\schemas\openai tools.json")
        assert _cli._regenerate_command(args, "llm-worker", windows=True) == (
            r"llm-worker schema shop.tools --format openai --strict "
            r'-o "C:\proj\schemas\openai tools.json"'
        )

    def test_windows_path_without_spaces_is_not_quoted(self):
        """No quotes where none are needed (POSIX quoting put a backslash path in '...')."""
        args = _check_args(r"schemas\openai-tools.json")
        assert _cli._regenerate_command(args, "python -m llm_worker", windows=True) == (
            r"python -m llm_worker schema shop.tools --format openai --strict "
            r"-o schemas\openai-tools.json"
        )

    def test_posix_quotes_for_the_shell(self):
        """Elsewhere the shell's quoting, which shlex.split reads back."""
        args = _check_args("schemas/openai tools.json", fmt="neutral", strict=False)
        command = _cli._regenerate_command(args, "llm-worker", windows=False)
        assert command == "llm-worker schema shop.tools -o 'schemas/openai tools.json'"
        assert shlex.split(command)[-1] == "schemas/openai tools.json"

    @pytest.mark.parametrize("windows", [False, True], ids=["posix", "windows"])
    def test_a_path_that_starts_with_a_dash(self, windows):
        """A path starting with '-' is given as --output=PATH: argparse takes '-o -x.json' for
        an -o without its value."""
        args = _check_args("-x.json", fmt="neutral", strict=False)
        assert _cli._regenerate_command(args, "llm-worker", windows=windows) == (
            "llm-worker schema shop.tools --output=-x.json"
        )

    def test_undecodable_bytes_are_quoted_as_bytes(self):
        """A name given as bytes that are no UTF-8 (lone surrogates in sys.argv) is quoted
        as $'...' with those bytes, not as the text of the surrogates."""
        args = _check_args(os.fsdecode(b"caf\xe9 it's.json"), fmt="neutral", strict=False)
        command = _cli._regenerate_command(args, "llm-worker", windows=False)
        assert command == r"llm-worker schema shop.tools -o $'caf\xe9 it\x27s.json'"

    @pytest.mark.skipif(
        sys.platform != "linux"
        or shutil.which("bash") is None
        or not (Path(sys.executable).parent / "python").exists(),
        reason="needs bash, a 'python' beside this one, and file names of any bytes (Linux)",
    )
    @pytest.mark.parametrize(
        "name",
        [b"-x.json", b"caf\xe9.json", b"schemas dir/it's.json"],
        ids=["dash", "not-utf8", "quotes"],
    )
    def test_the_printed_command_works_in_a_shell(self, tmp_path, name):
        """The command a failed --check prints, pasted into a POSIX shell (bash), writes the
        file the check reads: the next check passes."""
        _write(tmp_path, "shop_for_shell.py", _TOOLS)
        (tmp_path / "schemas dir").mkdir()
        check = f"--check={os.fsdecode(name)}"
        result = _run(tmp_path, "schema", "shop_for_shell", check)
        assert result.returncode == 1
        command = result.stderr.splitlines()[-1].strip()
        assert command.startswith("python -m llm_worker schema shop_for_shell ")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        # The printed "python" is this test's interpreter.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        shell = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            check=False,
            timeout=120,
        )
        assert (shell.returncode, shell.stderr) == (0, b"")
        assert (tmp_path / os.fsdecode(name)).is_file()
        assert _run(tmp_path, "schema", "shop_for_shell", check).returncode == 0

    def test_the_default_is_this_system(self):
        """Without windows=, the quoting of the system the command runs on."""
        args = _check_args("a b.json")
        expected = '"a b.json"' if os.name == "nt" else "'a b.json'"
        assert _cli._regenerate_command(args, "llm-worker").endswith(f" -o {expected}")


class TestFilePathTargets:
    @pytest.mark.parametrize(
        ("target", "suggestion"),
        [
            ("good.py", "good"),
            ("good.py:Shop", "good:Shop"),
            ("pkg/mod.py", "pkg.mod"),
            ("./pkg/mod.py:Shop", "pkg.mod:Shop"),
            (r"pkg\mod.py", "pkg.mod"),
        ],
    )
    def test_a_file_path_is_refused_before_any_import(self, tmp_path, target, suggestion):
        """A .py path: exit 2, the module name to use instead, and the file is not imported
        (its side effects do not run; it used to be, then 'no module named good.py')."""
        side_effect = tmp_path / "imported.txt"
        module = f"{_TOOLS}\nopen({str(side_effect)!r}, 'w').close()\n"
        _write(tmp_path, "good.py", module)
        _write(tmp_path, "pkg/__init__.py", "")
        _write(tmp_path, "pkg/mod.py", module)
        result = _run(tmp_path, "schema", target)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            f"python -m llm_worker schema: error: {target!r} is a file path; "
            f"a target is a module name: try {suggestion!r}\n"
        )
        assert not side_effect.exists()

    def test_an_absolute_path_below_the_current_directory(self, tmp_path, monkeypatch, capsys):
        """An absolute path is named from the current directory, where imports start."""
        monkeypatch.chdir(tmp_path)
        assert _cli.main(["schema", str(tmp_path / "pkg" / "mod.py")]) == 2
        assert capsys.readouterr().err.endswith(" a target is a module name: try 'pkg.mod'\n")

    def test_an_existing_file_that_is_no_module_name(self, tmp_path, monkeypatch, capsys):
        """A path to an existing file without .py is a path too, not an invalid name."""
        monkeypatch.chdir(tmp_path)
        _write(tmp_path, "scripts/tools", _TOOLS)
        assert _cli.main(["schema", "scripts/tools"]) == 2
        assert capsys.readouterr().err == (
            "llm-worker schema: error: 'scripts/tools' is a file path; "
            "a target is a module name: try 'scripts.tools'\n"
        )

    def test_a_path_with_no_module_name_to_suggest(self, capsys):
        """A file whose name is no module name ('my-tools.py'): no suggestion to try."""
        assert _cli.main(["schema", "my-tools.py"]) == 2
        assert capsys.readouterr().err == (
            "llm-worker schema: error: 'my-tools.py' is a file path; a target is a module "
            "name (package.module or package.module:Class)\n"
        )

    def test_a_factory_path_for_mcp_serve(self, capsys):
        """mcp serve's FACTORY the same: app.py:make is app:make."""
        pytest.importorskip("mcp")
        assert _cli.main(["mcp", "serve", "app.py:make"]) == 2
        assert capsys.readouterr().err == (
            "llm-worker mcp serve: error: 'app.py:make' is a file path; "
            "a factory is a module name: try 'app:make'\n"
        )


# Ctrl-C (SIGINT to the process itself, in its main thread) while the run awaits, then a
# CancelledError nobody asked for: `mcp serve` and `llm_worker.mcp.serve()` run their
# server in `run_until_ctrl_c`.
_CTRL_C = """
import asyncio, os, signal
import anyio
from llm_worker._interrupt import run_until_ctrl_c

async def interrupted() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    await anyio.sleep(30)

async def stray() -> None:
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future

for func in (interrupted, stray, interrupted):
    try:
        run_until_ctrl_c(func)
    except BaseException as exc:
        print(func.__name__, type(exc).__name__)
print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT to itself: POSIX only")
class TestCtrlC:
    def test_ctrl_c_is_a_keyboard_interrupt_and_a_stray_cancel_is_not(self):
        """Ctrl-C ends the run with KeyboardInterrupt on every Python (3.10's asyncio runner
        lets it out as a CancelledError); a CancelledError nobody asked for stays one (a
        bug, reported as one), and Python's own SIGINT handler is back after each run."""
        done = subprocess.run(
            [sys.executable, "-c", _CTRL_C], capture_output=True, text=True, timeout=60
        )
        assert done.stdout.splitlines() == [
            "interrupted KeyboardInterrupt",
            "stray CancelledError",
            "interrupted KeyboardInterrupt",
            "True",
        ], done.stderr
