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
        """``import llm_worker`` (and ``llm_worker.providers``) imports neither SDK."""
        loaded = run_python(
            "import sys, llm_worker, llm_worker.providers\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic'}))"
        )
        assert loaded == "[]"


class TestMissingSdk:
    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_import_error_names_the_extra(self, provider):
        """Without the SDK, importing the provider module raises ImportError naming the
        extra to install, chained to the original ImportError."""
        output = run_python(
            "import sys\n"
            f"sys.modules[{provider!r}] = None  # as if it were not installed\n"
            "try:\n"
            f"    import llm_worker.providers.{provider}\n"
            "except ImportError as exc:\n"
            "    print(exc)\n"
            "    print(type(exc.__cause__).__name__)\n"
        )
        assert output.splitlines() == [
            f"llm_worker.providers.{provider} needs the {provider} package: "
            f"pip install 'llm-worker[{provider}]'",
            "ModuleNotFoundError",
        ]
