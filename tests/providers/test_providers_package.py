"""``llm_worker.providers``: importing the core never imports an SDK, and a missing SDK
names the extra to install. Each check runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


class TestImportCost:
    def test_core_does_not_import_sdks(self):
        """``import llm_worker`` (and ``llm_worker.providers``) imports no SDK."""
        loaded = run_python(
            "import sys, llm_worker, llm_worker.providers\n"
            "names = {'openai', 'anthropic', 'google.genai', 'httpx2'}\n"
            "print(sorted(names & set(sys.modules)))"
        )
        assert loaded == "[]"


class TestMissingSdk:
    @pytest.mark.parametrize(
        ("provider", "module", "package"),
        [
            ("openai", "openai", "openai"),
            ("anthropic", "anthropic", "anthropic"),
            ("gemini", "google.genai", "google-genai"),
        ],
    )
    def test_import_error_names_the_extra(self, provider, module, package):
        """Without the SDK, importing the provider module raises ImportError naming the
        extra to install, chained to the original ImportError."""
        output = run_python(
            "import sys\n"
            f"sys.modules[{module!r}] = None  # as if it were not installed\n"
            "try:\n"
            f"    import llm_worker.providers.{provider}\n"
            "except ImportError as exc:\n"
            "    print(exc)\n"
            "    print(type(exc.__cause__).__name__)\n"
        )
        fix = f": pip install 'llm-worker[{provider}]'"
        if provider == "gemini" and sys.version_info < (3, 11):  # no google-genai there
            fix = ", which needs Python 3.11 or newer"
        assert output.splitlines() == [
            f"llm_worker.providers.{provider} needs the {package} package{fix}",
            "ModuleNotFoundError",
        ]
