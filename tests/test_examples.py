"""The example programs in ``examples/`` run and do what their docstrings say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES.parent,
    )


def test_approval_across_two_processes():
    """approval.py pauses in one process, and a second one approves one close and denies
    the other: only the approved issue is closed, and the answer says both."""
    done = run("approval.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "process 1: the run is paused; waiting for a decision on:"
    assert (
        "process 1: saved the run state to run-state.json; issues still: #1 open, #2 open" in lines
    )
    assert lines[-2] == (
        "process 2: the model answered: Done: Closed #2: fixed. Not done: Tool call "
        "'close_issue' was denied; it did not run: #1 is not stale, a fix is in review."
    )
    assert lines[-1] == "process 2: issues now: #1 open, #2 closed"
