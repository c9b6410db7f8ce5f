"""examples/durable.py runs against the dev server and does what its docstring says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.temporal

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"


def test_the_durable_example_survives_its_worker_s_death_and_runs_each_call_once(
    temporal_address: str,
):
    """Killed while the model thinks, the run goes on in a second process: the model's second
    request runs again there, each tool call runs once, and the approved close happens."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "durable.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES,
        env={**os.environ, "TEMPORAL_ADDRESS": temporal_address},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("started triage-")
    assert lines[1:] == [
        "killed worker process 1 while it waited for the model's second answer",
        "started worker process 2",
        'waiting for approval: close_issue({"issue_id": 2, "comment": "duplicate of #1"})',
        "approved",
        "the model answered: Done. Closed #2: duplicate of #1.",
        "tool calls run: file_issues (process 1), search (process 1), close_issue (process 2)",
        "model requests: #1 (process 1), #2 (process 1), #2 (process 2), #3 (process 2)",
        "each tool call ran exactly once: True",
        "issues now: #1 open, #2 closed",
    ]
