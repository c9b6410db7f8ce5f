"""What tracing costs when it is off, checked in fresh interpreters: ``import llm_worker``
imports no OpenTelemetry, a worker without ``instrumentation=`` emits nothing even when
the application has configured the SDK, and without the extra ``llm_worker.otel`` says
which to install while the rest works."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A run with a tool call on the scripted model: what each check below does.
RUN = """
import anyio
from llm_worker import Worker, tool, tool_definitions, tool_registry
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

@tool_registry
class App:
    @tool
    def add(self, a: int, b: int) -> int:
        "Add."
        return a + b

def worker(**options):
    call = ScriptedCall("add", '{"a": 1, "b": 2}')
    client = ScriptedClient([ScriptedResponse(tool_calls=[call]), "3"])
    w = Worker(client, **options)
    w.register_tools(tool_definitions(App()))
    return w
"""

# Makes every opentelemetry import fail, as in an environment without the extra.
NO_OTEL = """
import importlib.abc, sys

class NoOpenTelemetry(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoOpenTelemetry())
"""


def run_python(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints one JSON line, returned parsed."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_import_llm_worker_imports_no_opentelemetry():
    """import llm_worker, and a whole run without instrumentation, import no OpenTelemetry."""
    result = run_python(
        RUN
        + """
import json, sys
w = worker()
anyio.run(w.run, "1+2?")
loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
print(json.dumps({"text": w.final_text, "otel": loaded}))
"""
    )
    assert result == {"text": "3", "otel": []}


def test_a_worker_without_instrumentation_emits_nothing():
    """With the SDK configured globally, a worker without instrumentation emits no span
    and no metric; one with OpenTelemetry() (made before the SDK was configured) does."""
    result = run_python(
        RUN
        + """
import json
from llm_worker.otel import OpenTelemetry
telemetry = OpenTelemetry()  # before the application configures the SDK: looked up when used

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

def metric_names():
    data = reader.get_metrics_data()
    if data is None:
        return []
    return sorted(m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics)

anyio.run(worker().run, "1+2?")
plain = {"spans": len(exporter.get_finished_spans()), "metrics": metric_names()}
anyio.run(worker(instrumentation=telemetry).run, "1+2?")
traced = {"spans": sorted(s.name for s in exporter.get_finished_spans()), "metrics": metric_names()}
print(json.dumps({"plain": plain, "traced": traced}))
"""
    )
    assert result["plain"] == {"spans": 0, "metrics": []}
    assert result["traced"] == {
        "spans": ["chat", "chat", "execute_tool add", "invoke_agent"],
        "metrics": [
            "gen_ai.client.operation.duration",
            "gen_ai.execute_tool.duration",
            "gen_ai.invoke_agent.duration",
        ],
    }


def test_without_the_extra():
    """Without OpenTelemetry installed, llm_worker.otel raises ImportError naming the
    extra to install, and workers run as usual."""
    result = run_python(
        NO_OTEL
        + RUN
        + """
import json
try:
    import llm_worker.otel
except ImportError as exc:
    error = [type(exc).__name__, str(exc), exc.name]
w = worker()
anyio.run(w.run, "1+2?")
print(json.dumps({"error": error, "text": w.final_text}))
"""
    )
    assert result == {
        "error": [
            "ImportError",
            "llm_worker.otel needs the OpenTelemetry API: pip install 'llm-worker[otel]'",
            "opentelemetry",
        ],
        "text": "3",
    }
