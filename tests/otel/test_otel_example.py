"""``examples/traced.py`` runs and prints the spans and metrics of its run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_traced_example_prints_its_spans_and_metrics():
    """The example prints each span as it ends (the run's last), then the answer, then
    the four histograms."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "traced.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stdout.splitlines()
    names = [line.split("  [")[0] for line in lines if "  [" in line]
    assert sorted(names[:4]) == [
        "    chat gpt-4o-mini",
        "    chat gpt-4o-mini",
        "    execute_tool forecast",
        "    execute_tool to_fahrenheit",
    ]
    assert names[4] == "invoke_agent weather assistant"
    assert "answer: Lisbon will be sunny tomorrow, 24 °C (75 °F)." in lines
    metrics = {line.split(" ")[0] for line in lines if line.startswith("gen_ai.")}
    assert metrics == {
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
        "gen_ai.execute_tool.duration",
        "gen_ai.invoke_agent.duration",
    }
