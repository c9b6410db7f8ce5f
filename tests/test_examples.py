"""The example programs in ``examples/`` run and do what their docstrings say."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from providers.server import ProviderServer, stalled_stream
from providers.wire import chunk

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(script: str) -> subprocess.CompletedProcess[str]:
    # Into a pipe, stdout is block-buffered, as under `| less` (unless PYTHONUNBUFFERED).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLES.parent,
        env=env,
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
    # In the order they happened, into a pipe too (process 1's lines came out last).
    firsts = [n for n, line in enumerate(lines) if line.startswith("process 1")]
    seconds = [n for n, line in enumerate(lines) if line.startswith("process 2")]
    assert max(firsts) < min(seconds), lines


# -- Ctrl-C and a closed stdout: an exit status, never a traceback ---------------------------

POSIX_ONLY = pytest.mark.skipif(
    sys.platform == "win32",
    reason="sends SIGINT to a child process, and closes a pipe under it: POSIX only",
)
WAIT = 60  # seconds: imports alone take some on a busy machine


def example_env(**extra: str) -> dict[str, str]:
    """The environment without any provider's settings (the scripted model), plus ``extra``."""
    prefixes = ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    return {**clean, "NO_PROXY": "127.0.0.1", **extra}


# Run an example as `python SCRIPT ARGS...` in a terminal would, Ctrl-C included: Python
# turns SIGINT into KeyboardInterrupt only if SIGINT is not ignored when it starts, and a
# test run started in the background by a non-interactive shell ignores it.
AS_IN_A_TERMINAL = """
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
{setup}
sys.argv = {argv!r}
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def in_a_terminal(*argv: str, setup: str = "") -> list[str]:
    return ["-c", AS_IN_A_TERMINAL.format(setup=setup, argv=list(argv))]


def start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=EXAMPLES,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_until(pipe: IO[bytes] | None, marker: bytes, timeout: float = WAIT) -> bytes:
    """What ``pipe`` gave until ``marker`` appeared; fails after ``timeout`` seconds."""
    assert pipe is not None
    deadline = time.monotonic() + timeout
    seen = b""
    while marker not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([pipe], [], [], max(left, 0))
        chunk = os.read(pipe.fileno(), 65536) if ready else b""
        if not chunk:
            raise AssertionError(f"{marker!r} did not appear within {timeout} s; got {seen!r}")
        seen += chunk
    return seen


def interrupt(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Send SIGINT and wait for the process to end: (the rest of stdout, all of stderr)."""
    process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise AssertionError(f"still running {WAIT} s after SIGINT") from None


@pytest.fixture
def stalled_model() -> Iterator[ProviderServer]:
    """An OpenAI-compatible server that starts its answer ("Thinking") and then stalls."""
    with ProviderServer() as server:
        server.add(
            stalled_stream(
                chunk({"role": "assistant", "content": "", "refusal": None}),
                chunk({"content": "Thinking"}),
            )
        )
        yield server


@POSIX_ONLY
def test_chat_ctrl_c_during_a_request(stalled_model: ProviderServer):
    """Ctrl-C while the model streams: the half-written line is ended, "interrupted" is
    said, the exit status is 130, and no traceback is printed."""
    pytest.importorskip("openai")
    env = example_env(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=f"{stalled_model.base_url}/v1")
    process = start(in_a_terminal("chat.py"), env)
    try:
        before = read_until(process.stdout, b"assistant | Thinking")
        out, err = interrupt(process)
    finally:
        process.kill()
    assert process.returncode == 130, err.decode()
    assert b"Traceback" not in err, err.decode()
    assert err.decode().strip() == "interrupted"
    assert (before + out).endswith(b"assistant | Thinking\n")


@POSIX_ONLY
def test_chart_ctrl_c_during_a_request(stalled_model: ProviderServer):
    """chart.py talks to a real model as chat.py does, and ends as it does on Ctrl-C: it
    printed a KeyboardInterrupt traceback, status -2."""
    pytest.importorskip("openai")
    env = example_env(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=f"{stalled_model.base_url}/v1")
    process = start(in_a_terminal("chart.py"), env)
    try:
        deadline = time.monotonic() + WAIT
        while not stalled_model.requests:  # the request is out, and its answer stalls
            assert time.monotonic() < deadline, "chart.py sent no request"
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        _, err = interrupt(process)
    finally:
        process.kill()
    assert process.returncode == 130, err.decode()
    assert b"Traceback" not in err, err.decode()
    assert err.decode().strip() == "interrupted"


@POSIX_ONLY
def test_chat_stdout_closed_from_the_start():
    """A stdout whose reader is gone before the first line: exit status 1, stderr empty
    (no BrokenPipeError traceback, none at the interpreter's exit either)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "chat.py"],
            cwd=EXAMPLES,
            env=example_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=WAIT,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1, done.stderr.decode()
    assert done.stderr == b""


@POSIX_ONLY
@pytest.mark.parametrize("lines", [1, 10])
def test_chat_piped_into_head(lines: int):
    """`python examples/chat.py | head -N`: the reader takes N lines and goes; the example
    ends without a traceback. (``head -10`` goes after the answer, before the last
    lines, which were flushed at the interpreter's exit: "Exception ignored ...
    BrokenPipeError", status 120.)"""
    env = {k: v for k, v in example_env().items() if k != "PYTHONUNBUFFERED"}
    example = start(["chat.py"], env)
    try:
        assert example.stdout is not None
        head = subprocess.Popen(
            ["head", f"-{lines}"], stdin=example.stdout, stdout=subprocess.DEVNULL
        )
        example.stdout.close()  # head has the pipe's read end: it closes it when it goes
        head.wait(timeout=WAIT)
        _, err = example.communicate(timeout=WAIT)
    finally:
        example.kill()
    assert example.returncode in (0, 1), err.decode()
    assert b"Traceback" not in err, err.decode()
    assert b"BrokenPipeError" not in err, err.decode()
    assert b"Exception ignored" not in err, err.decode()


INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"test","version":"1"}}}\n'
)

# `python examples/mcp_factory.py --http`, on a free port rather than its 8000.
ON_A_FREE_PORT = """
import functools, llm_worker.mcp
llm_worker.mcp.serve = functools.partial(llm_worker.mcp.serve, port=0)
"""


@POSIX_ONLY
def test_mcp_factory_ctrl_c_over_stdio():
    """Ctrl-C while serving stdio: exit status 130 and the one log line, as
    `llm-worker mcp serve mcp_factory:factory` does."""
    pytest.importorskip("mcp")
    process = start(in_a_terminal("mcp_factory.py"), example_env())
    try:
        assert process.stdin is not None
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        read_until(process.stdout, b'"id":1')
        _, err = interrupt(process)
    finally:
        process.kill()
    assert process.returncode == 130, err.decode()
    assert err.decode().splitlines() == ["INFO llm_worker.mcp: serving 3 tools over stdio"]


def wait_for_http(url: str) -> None:
    """Until the server at ``url`` answers: the address is logged before uvicorn's startup
    is done, and a Ctrl-C during that startup is another case (uvicorn logs it)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with contextlib.suppress(urllib.error.HTTPError):  # a GET without a session is refused:
        opener.open(url, timeout=WAIT).close()  # any HTTP answer will do


@POSIX_ONLY
def test_mcp_factory_ctrl_c_over_http():
    """With --http it logs the address it serves at, and Ctrl-C ends it with 130."""
    pytest.importorskip("mcp")
    process = start(in_a_terminal("mcp_factory.py", "--http", setup=ON_A_FREE_PORT), example_env())
    try:
        logged = read_until(process.stderr, b"(streamable HTTP)\n")
        wait_for_http(re.findall(rb"http://\S+", logged)[0].decode())
        _, err = interrupt(process)
    finally:
        process.kill()
    assert process.returncode == 130, (logged + err).decode()
    assert re.fullmatch(
        rb"INFO llm_worker\.mcp: serving 3 tools at http://127\.0\.0\.1:\d+/mcp "
        rb"\(streamable HTTP\)\n",
        logged + err,
    ), (logged + err).decode()
