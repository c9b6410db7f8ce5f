"""The MCP tests run on asyncio and trio, like the rest; the backend fixture is module-scoped.

Module scope lets one server process (stdio) serve every test of a module on
each backend, instead of one process per test. The SDK supports trio for all
that is tested here (in-process, stdio and streamable-HTTP clients); only
``serve_async(transport="http")`` is asyncio-only, because uvicorn is.
"""

from __future__ import annotations

import pytest


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("asyncio", id="asyncio"),
        pytest.param("trio", id="trio"),
    ],
)
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
