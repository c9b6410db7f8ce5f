"""``llm-worker mcp serve``: refusing bad input, and what importing the MCP support costs.

Serving itself is tested over real transports in ``test_mcp_stdio.py`` and
``test_mcp_http.py``. Here ``_cli.main`` runs in-process only for inputs it
refuses before serving; everything that needs a fresh interpreter runs one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp_support import APPS, ROOT, SERVE, server_env

from llm_worker import _cli

ERROR = "llm-worker mcp serve: error: "
MISSING_EXTRA = "llm_worker.mcp needs the mcp package: pip install 'llm-worker[mcp]'"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        env=server_env(),
        timeout=120,
        check=False,
    )


class TestBadFactory:
    @pytest.mark.parametrize(
        ("target", "message"),
        [
            ("mcp_apps", "invalid factory 'mcp_apps' (expected package.module:function)"),
            ("mcp_apps:", "invalid factory 'mcp_apps:' (expected package.module:function)"),
            ("no_such_module_here:factory", "no module named 'no_such_module_here'"),
            ("mcp_apps:nope", "module 'mcp_apps' has no attribute 'nope'"),
            (
                "mcp_apps:NOT_CALLABLE",
                "'mcp_apps:NOT_CALLABLE' is not callable (int); "
                "name a function that returns a ToolServer",
            ),
            (
                "mcp_apps:raising_factory",
                "calling 'mcp_apps:raising_factory' failed: "
                "RuntimeError: database is down; (second line)",
            ),
            (
                "mcp_apps:needs_arguments",
                "calling 'mcp_apps:needs_arguments' failed: TypeError: "
                "needs_arguments() missing 1 required positional argument: 'project'",
            ),
            (
                "mcp_apps:wrong_type_factory",
                "'mcp_apps:wrong_type_factory' returned list, not a ToolServer or ToolServerHandle",
            ),
            (
                "mcp_apps:async_factory",
                "'mcp_apps:async_factory' is an async function; "
                "the factory must be a plain function that returns a ToolServer",
            ),
            (
                "cli_targets.broken:factory",
                "importing 'cli_targets.broken' failed: TypeError: Cannot build tools for "
                "cli_targets.broken.Broken: search: parameter 'query' has no type annotation "
                "(add one, e.g. query: str)",
            ),
        ],
    )
    def test_exit_2_with_one_line(self, capsys, target, message):
        """A bad FACTORY exits 2 with one line on stderr saying what is wrong; nothing on stdout."""
        assert _cli.main(["mcp", "serve", target]) == 2
        assert capsys.readouterr() == ("", f"{ERROR}{message}\n")

    def test_in_a_fresh_process_no_traceback(self):
        """From the command line: exit 2, the one line, no traceback."""
        done = subprocess.run(
            [*SERVE, f"{APPS}:raising_factory"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=ROOT,
            env=server_env(),
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "python -m llm_worker mcp serve: error: calling 'tests.mcp.mcp_apps:raising_factory' "
            "failed: RuntimeError: database is down; (second line)\n"
        )

    def test_console_script_names_itself(self):
        """The llm-worker console script reports errors under its own name."""
        script = Path(sys.executable).with_name("llm-worker")
        done = subprocess.run(
            [str(script), "mcp", "serve", f"{APPS}:wrong_type_factory"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=ROOT,
            env=server_env(),
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            f"{ERROR}'{APPS}:wrong_type_factory' returned list, "
            "not a ToolServer or ToolServerHandle\n"
        )


class TestOptions:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (["--port", "9000"], "--port needs --transport http"),
            (["--host", "::1", "--path", "/x"], "--host and --path need --transport http"),
            (
                ["--host", "h", "--port", "1", "--path", "/x"],
                "--host, --port and --path need --transport http",
            ),
            (["--transport", "http", "--path", "mcp"], "--path must start with '/', not 'mcp'"),
            (
                ["--transport", "http", "--port", "70000"],
                "--port must be between 0 and 65535, not 70000",
            ),
        ],
    )
    def test_bad_options_exit_2(self, capsys, options, message):
        """HTTP options without --transport http, or bad values: exit 2 before the factory runs."""
        assert _cli.main(["mcp", "serve", "mcp_apps:printing_factory", *options]) == 2
        assert capsys.readouterr() == ("", f"{ERROR}{message}\n")

    def test_unknown_transport_is_an_argparse_error(self, capsys):
        """--transport takes only stdio and http."""
        with pytest.raises(SystemExit) as info:
            _cli.main(["mcp", "serve", "mcp_apps:factory", "--transport", "sse"])
        assert info.value.code == 2
        assert "invalid choice: 'sse'" in capsys.readouterr().err

    def test_schema_command_is_unchanged(self, capsys):
        """The schema command keeps its own error prefix next to the mcp command."""
        assert _cli.main(["schema", "no_such_module_here"]) == 2
        assert capsys.readouterr().err == (
            "llm-worker schema: error: no module named 'no_such_module_here'\n"
        )


class TestPackage:
    def test_all_is_the_sorted_public_names(self):
        """llm_worker.mcp.__all__ lists exactly its public names, sorted."""
        import llm_worker.mcp

        public = sorted(
            name
            for name in vars(llm_worker.mcp)
            if not name.startswith("_") and name != "annotations"  # from __future__
        )
        assert (
            llm_worker.mcp.__all__
            == public
            == [
                "McpTool",
                "McpToolDefinition",
                "Transport",
                "create_http_app",
                "create_server",
                "mcp_http_client",
                "mcp_tool_definitions",
                "serve",
                "serve_async",
            ]
        )

    def test_public_names_live_in_llm_worker_mcp(self):
        """Classes and functions say they come from llm_worker.mcp, not the private modules."""
        import llm_worker.mcp

        modules = {
            getattr(llm_worker.mcp, name).__module__
            for name in llm_worker.mcp.__all__
            if name != "Transport"
        }
        assert modules == {"llm_worker.mcp"}


class TestImportCost:
    def test_llm_worker_does_not_import_mcp(self):
        """`import llm_worker` and the CLI module load neither the SDK nor its web stack."""
        done = run_python(
            "import sys, llm_worker, llm_worker._cli\n"
            "heavy = ('mcp', 'mcp_types', 'starlette', 'uvicorn', 'httpx2', 'llm_worker.mcp')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
            " or m.startswith('llm_worker.mcp')))\n"
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")

    def test_missing_sdk_import_error(self):
        """Without the SDK, `import llm_worker.mcp` raises ImportError naming the extra."""
        done = run_python(
            "import sys\n"
            "sys.modules['mcp'] = None\n"
            "try:\n"
            "    import llm_worker.mcp\n"
            "except ImportError as exc:\n"
            "    print(exc.name, exc, sep='|')\n"
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, f"mcp|{MISSING_EXTRA}\n", "")

    def test_missing_sdk_cli_exit_2(self):
        """Without the SDK, `llm-worker mcp serve` exits 2 with one line naming the extra."""
        done = run_python(
            "import sys\n"
            "sys.modules['mcp'] = None\n"
            "from llm_worker._cli import main\n"
            f"raise SystemExit(main(['mcp', 'serve', '{APPS}:factory']))\n"
        )
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"{ERROR}{MISSING_EXTRA}\n")
