"""Every async test runs on asyncio and on trio (anyio's pytest plugin).

Hypothesis has two profiles: ``default`` (random examples, the local database:
new cases keep being found) and ``ci``, chosen with ``HYPOTHESIS_PROFILE=ci``
(``.ci/run`` sets it) or ``--hypothesis-profile=ci``. In ``ci`` every run tries
the same examples, and nothing depends on the machine's speed, so a red run
is one anyone can reproduce, never a case found by chance in an unrelated
change. Cases a property once caught are ``@example``s of it, so both profiles
try them first.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from support import GEMINI_SDK, WITHOUT_GEMINI_SDK

# The modules of GeminiClient alone import google-genai, absent on Python 3.10: not
# collected there (the header says so). Other modules skip their Gemini cases.
collect_ignore_glob = [] if GEMINI_SDK else ["providers/test_gemini*.py"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not GEMINI_SDK:  # said after the skips, -q or not
        terminalreporter.write_line(
            f"tests/providers/test_gemini*.py not collected: {WITHOUT_GEMINI_SDK}"
        )


settings.register_profile(
    "ci",
    derandomize=True,  # the examples follow from the test alone
    database=None,  # and not from what earlier runs on this machine saved
    deadline=None,  # a busy CI machine is slow, not wrong
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,  # a failure prints the line that replays it
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(
    params=[
        pytest.param("asyncio", id="asyncio"),
        pytest.param("trio", id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
