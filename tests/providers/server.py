"""A local HTTP server that plays a model provider: scripted replies, recorded requests.

``ProviderServer`` listens on 127.0.0.1 (a free port), answers each POST with the
next scripted ``Reply`` and records what it received, so a test can assert both
directions: what the SDK sent and what the worker made of the answer. Streams are
sent as server-sent events, one chunk per event (``Transfer-Encoding: chunked``),
so a ``cut`` reply can drop the connection mid-body the way a broken network does.
Every reply carries ``Connection: close``: no connection outlives its request, and
``close()`` joins every handler thread.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP response: a JSON body, or a stream of SSE frames."""

    status: int = 200
    body: Any = None
    events: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    cut: bool = False  # drop the connection after the events, mid chunked body
    stall: bool = False  # after the events (if any), send nothing more until close()
    keep_alive: str | None = None  # with stall: this frame every 50 ms instead of nothing


def stream(*events: str, cut: bool = False) -> Reply:
    """A 200 ``text/event-stream`` reply sending ``events`` (whole SSE frames) one by one."""
    return Reply(events=events, cut=cut)


STALL = Reply(stall=True)
"""A reply that never comes: the handler waits for ``close()`` and hangs up."""


def stalled_stream(*events: str, keep_alive: str | None = None) -> Reply:
    """A stream that sends ``events`` and then nothing until the server closes (or, with
    ``keep_alive``, that frame every 50 ms: a ping, an SSE comment)."""
    return Reply(events=events, stall=True, keep_alive=keep_alive)


def error(status: int, body: Any, **headers: str) -> Reply:
    """An error status with a JSON body (a str is sent as text); ``retry_after_ms="5"``
    becomes the header ``retry-after-ms: 5``."""
    return Reply(
        status=status,
        body=body,
        headers=tuple((name.replace("_", "-"), value) for name, value in headers.items()),
    )


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


@dataclass
class _State:
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    frames_sent: int = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # a stuck connection cannot hang a test run
    server: _HTTPServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        state = self.server.state
        with state.lock:
            state.requests.append(
                Received(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    json=json.loads(raw) if raw else None,
                )
            )
            reply = state.replies.popleft() if state.replies else None
        if reply is None:
            reply = error(
                500, {"error": {"message": "the test scripted no reply for this request"}}
            )
        self.close_connection = True
        if reply.stall and not reply.events:
            state.closing.wait(self.timeout)
            return
        if reply.events or reply.cut or (reply.status == 200 and reply.body is None):
            self._send_stream(reply)
        else:
            self._send_json(reply)

    def _send_json(self, reply: Reply) -> None:
        # A str body is sent as it is (an HTML error page); anything else as JSON.
        raw = isinstance(reply.body, str)
        body = reply.body.encode() if raw else json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/html" if raw else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_stream(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for frame in reply.events:
            data = frame.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            with self.server.state.lock:
                self.server.state.frames_sent += 1
        if reply.stall:
            self._hold_open(reply.keep_alive)
            return
        if not reply.cut:
            self.wfile.write(b"0\r\n\r\n")

    def _hold_open(self, keep_alive: str | None) -> None:
        # Send nothing more (or keep-alives) until close(), or the client hangs up.
        closing, deadline = self.server.state.closing, time.monotonic() + self.timeout
        if keep_alive is None:
            closing.wait(self.timeout)
            return
        data = keep_alive.encode()
        while not closing.wait(0.05) and time.monotonic() < deadline:
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            except OSError:  # the client closed the stream: what it should do
                return

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins every handler thread
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that stops reading early (as some tests do on purpose) is no error.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ProviderServer:
    """A scripted provider on ``base_url``; use as a context manager (or call ``close()``)."""

    def __init__(self) -> None:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.state = _State()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def add(self, *replies: Reply) -> None:
        """Script the next replies, in order."""
        with self._httpd.state.lock:
            self._httpd.state.replies.extend(replies)

    @property
    def requests(self) -> list[Received]:
        """Every request received so far, in order."""
        with self._httpd.state.lock:
            return list(self._httpd.state.requests)

    @property
    def frames_sent(self) -> int:
        """How many SSE frames have been written so far, over all streams."""
        with self._httpd.state.lock:
            return self._httpd.state.frames_sent

    @property
    def unused(self) -> int:
        """How many scripted replies no request has taken."""
        with self._httpd.state.lock:
            return len(self._httpd.state.replies)

    def close(self) -> None:
        self._httpd.state.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> ProviderServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@contextlib.contextmanager
def running_server() -> Iterator[ProviderServer]:
    """A provider server on 127.0.0.1, shut down (every handler thread joined) at the end.

    The SDKs leave some async generators for the garbage collector. Collected in
    the server's thread while trio runs the test, one once failed the teardown
    with "async generator already executing". So no collection runs while the
    server does; trio closes what is left when its run ends.
    """
    gc.disable()
    try:
        with ProviderServer() as running:
            yield running
    finally:
        gc.enable()
