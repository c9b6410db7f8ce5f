"""``import llm_worker`` stays cheap: what it leaves for later is not imported at all.

The import is measured by benchmarks/bench_import.py; this test keeps the two
regressions it once found from coming back unnoticed: pydantic (and pydantic_core,
about 20 ms) are imported when a tool is first declared, not by ``import llm_worker``,
and no optional extra is imported. Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys

DEFERRED = ("pydantic", "pydantic_core", "jsonschema", "mcp", "opentelemetry", "temporalio")


def test_import_llm_worker_defers_pydantic_and_every_extra():
    code = (
        "import sys, llm_worker\n"
        f"deferred = {DEFERRED!r}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(deferred)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_declaring_a_tool_imports_pydantic():
    """The check above can fail: pydantic is imported as soon as it is needed."""
    code = (
        "import sys\n"
        "from llm_worker import tool, tool_registry, tool_metas\n"
        "@tool_registry\n"
        "class App:\n"
        "    @tool\n"
        "    def add(self, a: int, b: int) -> int:\n"
        "        '''Add.'''\n"
        "        return a + b\n"
        "tool_metas(App)\n"
        "print('pydantic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "True"
