"""Serve the tools of a ``ToolServer`` as an MCP server, over stdio or streamable HTTP.

Built on the SDK's low-level ``mcp.server.Server``, not its high-level
``MCPServer``: the high-level server derives each tool's schema from a Python
signature, and we must serve ours.

=================  ===================================================================
MCP request        what the server does
=================  ===================================================================
``tools/list``     every tool's ``ToolMeta`` through ``export_tools(..., "mcp")``: the
                   same name, description and ``inputSchema`` as
                   ``llm-worker schema --format mcp``, and its ``title``,
                   ``annotations`` (``readOnlyHint``... only those it says) and
                   ``outputSchema``; sorted by name, in one page.
``tools/call``     a call that needs approval is first asked of the host
                   (``_approval``); then the call runs as in a ``Worker``
                   (``execute_call``), and its result becomes content blocks, with
                   ``structuredContent`` for a tool with an ``outputSchema``
                   (``_content``); progress reports become ``notifications/progress``.
=================  ===================================================================

A failed call is a result, not a protocol error, so the model reads what went
wrong and can try again (``isError: true``, one text block):

- a ``ToolError`` from the tool: its text, ``Invalid argument: ...``,
  ``Execution failed: ...``;
- an unknown name: ``Tool 'x' not found``;
- a call the host's user did not approve, or could not be asked about;
- any other exception: ``Internal error: tool 'x' failed unexpectedly (KeyError)``,
  with the traceback logged (logger ``llm_worker``), never sent (an exception while its
  result is made MCP content too); so do
  ``SystemExit``, ``KeyboardInterrupt`` and any other ``BaseException`` a tool
  raises: one call never stops the server.

Over stdio, a line that is not JSON (or that the SDK's parser refuses: a lone
surrogate's escape, nested more than 200 levels deep) gets the JSON-RPC ``Parse
error`` (``-32700``, ``id: null``), and JSON that is no JSON-RPC message ``Invalid
Request`` (``-32600``), each with a warning in the log: the SDK would drop them
unanswered, leaving the client to wait. A request with an id that the SDK's parser
refuses gets ``Invalid Request`` with its id and why instead: its client could not
match ``id: null`` to it. So does a request whose id MCP does not allow (only a
string or an integer: not ``1.5``, ``null``, ``true``, an object), with ``id:
null``, over stdio and over HTTP (``400``): the SDK would read it as a
notification, dropping its id, and never answer. Over HTTP, JSON that is no
JSON-RPC message gets the same ``Invalid Request`` (``400``), where the SDK would
answer ``-32602`` with pydantic's account of why. Over both, a response with an id
that the SDK cannot read (the answer to the question for an approval: ``"result":
"yes"``) goes on to the SDK as an error response for that id, so that the question
fails instead of waiting for ever.
Cancellation (the client cancelled the request, or the server is shutting
down) propagates. A lone surrogate in a result becomes U+FFFD. Over HTTP, who
may send requests at all is ``_http_access``'s (Host/Origin checks on every
bind, an optional bearer token).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import io
import json
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, cast, get_args

import anyio
import mcp.types as types
import pydantic_core
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from .._context import ProgressReports, ToolContext
from .._conversation import ToolCall, ToolResult
from .._exceptions import InvalidArgumentError, ToolNotFoundError
from .._execution import execute_call
from .._formats import export_tools
from .._limits import Limits
from .._model_texts import UNEXPECTED, call_text
from .._safe_text import valid_unicode
from .._server import ToolEntry, ToolServer, ToolServerHandle, entry_of, sorted_metas
from ._approval import Approvals
from ._content import call_tool_result
from ._http_access import (
    BearerTokenAuth,
    check_auth_token,
    cross_origin,
    transport_security,
    warn_if_exposed,
)

__all__ = ["Transport", "create_http_app", "create_server", "serve", "serve_async"]

if TYPE_CHECKING:  # Server.run's own types (the SDK's module is private: not imported to run)
    from mcp.shared._stream_protocols import ReadStream, WriteStream

if sys.platform != "win32":
    import fcntl

logger = logging.getLogger("llm_worker.mcp")

Transport = Literal["stdio", "http"]
"""How ``serve`` talks to MCP clients: ``"stdio"`` (one client, the host that started the
process) or ``"http"`` (streamable HTTP, any number of clients)."""

_TRANSPORTS: tuple[str, ...] = get_args(Transport)
DEFAULT_NAME = "llm-worker"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_PATH = "/mcp"

# Slow clients over HTTP (docs/mcp.md, "Slow clients"). uvicorn (h11) has no deadline for
# a request's headers: a client that never ends them holds its connection; a proxy has one.
BODY_TIMEOUT_SECONDS = 10.0
"""Seconds a POST's body has to come whole, once its headers have (else ``408``)."""
MAX_CONNECTIONS = 1000
"""Connections ``serve_async`` takes at once over HTTP, requests in progress too (uvicorn's
``limit_concurrency``): a request past them gets ``503``."""
KEEP_ALIVE_SECONDS = 5
"""Seconds an idle connection is kept open after a response (uvicorn's ``timeout_keep_alive``)."""


def create_server(
    tools: ToolServer | ToolServerHandle,
    *,
    name: str = DEFAULT_NAME,
    version: str | None = None,
    instructions: str | None = None,
    limits: Limits | None = None,
) -> Server[Any]:
    """The SDK's low-level ``Server`` answering ``tools/list`` and ``tools/call`` from ``tools``.

    ``name``, ``version`` (default: llm-worker's) and ``instructions`` are what
    the server tells clients about itself. The server reads the tool map on
    every request, so tools registered later are listed too. With ``limits``,
    every call is held to them as a ``Worker`` holds its calls (input size and
    depth, ``tool_timeout``, the result caps), hand-written tools included;
    without, each tool's own (a ``@tool``'s options) only.
    """
    handle = _handle_of(tools)
    approvals = Approvals()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if params is not None and params.cursor is not None:
            # One page is all we list, so no cursor of ours exists: the spec's answer to an
            # invalid cursor is Invalid params, not the first page again (a client looping
            # on pages would never end).
            raise MCPError(
                types.INVALID_PARAMS,
                f"Invalid cursor {params.cursor[:100]!r}: tools/list has one page "
                "(no nextCursor was given)",
            )
        return types.ListToolsResult(tools=list_mcp_tools(handle))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        return await call_mcp_tool(handle, params, ctx, approvals=approvals, limits=limits)

    def input_schema(tool_name: str) -> Mapping[str, Any] | None:
        entry = handle.get_tool(tool_name)
        return None if entry is None else entry[0].input_schema

    return Server(
        name,
        version=__version__ if version is None else version,
        instructions=instructions,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def list_mcp_tools(handle: ToolServerHandle) -> list[types.Tool]:
    """Every tool of ``handle`` as an MCP ``Tool``, sorted by name: exactly our ``mcp`` export."""
    return [types.Tool.model_validate(tool) for tool in export_tools(sorted_metas(handle), "mcp")]


async def call_mcp_tool(
    handle: ToolServerHandle,
    params: types.CallToolRequestParams,
    request: ServerRequestContext[Any] | None = None,
    *,
    approvals: Approvals,
    limits: Limits | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """Run one ``tools/call`` through ``handle``; every failure becomes an ``isError`` result.

    Even ``SystemExit`` and ``KeyboardInterrupt`` raised by the tool (argparse
    exits on bad arguments): one call must not take the server, and every other
    client, down with it. Only cancellation propagates. A call that needs
    approval runs only once ``approvals`` had the host's user approve it. A tool
    that takes a ``ToolContext`` gets the request's id as its call id; its
    progress reports become ``notifications/progress`` when the client asked
    for them.
    """
    name = params.name
    entry = entry_of(handle, name)
    if entry is None:
        return _error(str(ToolNotFoundError(name)))
    arguments = dict(params.arguments or {})
    try:  # an in-process caller's arguments need not be JSON (a 5 000-digit int, a set)
        input_json = json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        return _error(str(InvalidArgumentError(f"the arguments are not JSON: {exc}")))
    call_id = "" if request is None or request.request_id is None else str(request.request_id)
    call = ToolCall(call_id, name, input_json)
    schema_json = entry.meta.output_schema_json
    run_limits = limits
    if limits is not None and schema_json is not None:
        # Run uncapped, so that its value comes whole: call_tool_result structures it, or
        # cuts it into an isError result (cut JSON is no value its schema describes).
        run_limits = dataclasses.replace(limits, max_result_bytes=sys.maxsize)
    try:
        refused = await approvals.check(entry, call, arguments, request, params)
        if refused is not None:
            return refused
        if entry.execute_with_context is None:
            result = await execute_call(entry, call, run_limits, None)
        else:
            result = await _call_with_context(entry, call, request, run_limits)
    except BaseException as exc:
        if _is_cancellation(exc):
            raise
        logger.error("Tool %r raised %s", name, type(exc).__name__, exc_info=exc)
        return _error(call_text(UNEXPECTED, name, kind=type(exc).__name__))
    max_bytes = None if limits is None else limits.max_result_bytes
    try:
        return call_tool_result(result, name, schema_json, max_bytes)
    except Exception as exc:  # a bug of ours, or a schema jsonschema cannot use: still a result
        logger.error("Tool %r's result cannot be sent: %s", name, type(exc).__name__, exc_info=exc)
        return _error(call_text(UNEXPECTED, name, kind=type(exc).__name__))


async def _call_with_context(
    entry: ToolEntry,
    call: ToolCall,
    request: ServerRequestContext[Any] | None,
    limits: Limits | None,
) -> ToolResult:
    """Run a context-taking tool, forwarding its progress to the client, if it asked for it."""
    if request is None:
        context = ToolContext(call_id=call.id, tool_name=call.name, deps=None)
        return await execute_call(entry, call, limits, context)
    session = request.session
    forwarder = _ProgressForwarder(session.report_progress)
    reports = forwarder.reports
    context = ToolContext(
        call_id=call.id, tool_name=call.name, deps=None, sink=reports.start(call.id)
    )
    result: ToolResult | None = None
    failure: BaseException | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(forwarder.run)
        try:
            result = await execute_call(entry, call, limits, context)
        except BaseException as exc:  # raised as it is below, not in the group's ExceptionGroup
            failure = exc
            group.cancel_scope.cancel()
        else:
            forwarder.returned()  # what it reported last goes before the result
    reports.finish(call.id)
    if failure is not None:
        raise failure
    assert result is not None
    return result


class _ProgressForwarder:
    """Sends a call's progress reports to the client while it runs: as they come, the
    latest of those made while it sent (a slow client gets fewer, never stale ones).

    ``run()`` ends once ``returned()`` was called and everything reported before it is
    sent. Sent on the request's own channel, in either protocol era; nothing goes unless
    the client asked for progress (a progress token, or a 2026-era callback).
    """

    __slots__ = ("_returned", "_send", "_wake", "reports")

    def __init__(
        self, send: Callable[[float, float | None, str | None], Awaitable[object]]
    ) -> None:
        self._send = send
        self._wake = anyio.Event()
        self._returned = False
        # A report wakes whichever event is current: run() makes a new one before it
        # drains, so a report that comes while it sends is never missed.
        self.reports = ProgressReports(lambda: self._wake.set())

    def returned(self) -> None:
        self._returned = True
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            last = self._returned  # seen before the drain: every report is in this one
            for _, progress, total, message in self.reports.drain():
                with contextlib.suppress(Exception):  # a client gone mid-call
                    await self._send(progress, total, message)
            if last:
                return


def _is_cancellation(exc: BaseException) -> bool:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return True
    grouped: object = getattr(exc, "exceptions", None)  # a BaseExceptionGroup of cancellations
    return isinstance(grouped, tuple) and any(
        isinstance(inner, BaseException) and _is_cancellation(inner)
        for inner in cast("tuple[object, ...]", grouped)
    )


def _error(text: str) -> types.CallToolResult:
    # A lone surrogate (in a tool name a client sent) cannot go on the wire.
    block = types.TextContent(text=valid_unicode(text))
    return types.CallToolResult(content=[block], is_error=True)


def create_http_app(
    tools: ToolServer | ToolServerHandle,
    *,
    path: str = DEFAULT_PATH,
    host: str = DEFAULT_HOST,
    name: str = DEFAULT_NAME,
    version: str | None = None,
    instructions: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    auth_token: str | None = None,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    limits: Limits | None = None,
) -> Starlette:
    """An ASGI app serving ``tools`` over streamable HTTP at ``path``, for any ASGI server.

    ``host`` is where the app will listen. Requests must name an allowed host
    (``Host``, else ``421``) and, from a browser, an allowed origin
    (``Origin``, else ``403``): the loopback names, ``host`` itself (unless a
    wildcard like ``0.0.0.0``), and ``allowed_hosts`` / ``allowed_origins``.
    With ``auth_token``, every request must carry ``Authorization: Bearer
    <auth_token>`` (else ``401``; a token that is empty or has whitespace, which
    no client could send, is a ``ValueError``). A warning is logged when ``host`` is not a
    loopback address. A session with no request for ``session_idle_timeout``
    seconds is closed, and at most ``max_sessions`` are open at once (more get
    ``503``); ``None`` lifts either limit. A POST's body must come whole within
    ``BODY_TIMEOUT_SECONDS`` (else ``408``, the connection closed). ``limits`` are
    ``create_server``'s. Run the app with its lifespan (the streamable-HTTP session
    manager starts there).
    """
    _check_path(path)
    if auth_token is not None:
        check_auth_token(auth_token)  # now: the middleware is only made at the first request
    warn_if_exposed(host, authenticated=auth_token is not None)
    server = create_server(
        tools, name=name, version=version, instructions=instructions, limits=limits
    )
    security = transport_security(host, allowed_hosts, allowed_origins)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        transport_security=security,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
    )
    # Added first, so innermost of ours: after the token, before the SDK's handler.
    app.add_middleware(_PostedMessagesChecked, path=path, security=security)
    if auth_token is not None:
        app.add_middleware(BearerTokenAuth, token=auth_token)
    cross_origin(app, allowed_origins)
    return app


async def serve_async(
    tools: ToolServer | ToolServerHandle,
    *,
    transport: Transport = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = DEFAULT_PATH,
    name: str = DEFAULT_NAME,
    version: str | None = None,
    instructions: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    auth_token: str | None = None,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    limits: Limits | None = None,
) -> None:
    """Serve ``tools`` until the client goes away (stdio) or the process is stopped (http).

    ``"stdio"``: reads requests from stdin and writes responses to stdout, and
    returns when stdin closes. While it serves, anything else the process
    writes to stdout (a ``print`` in a tool) goes to stderr instead, so only
    protocol messages reach the client. Runs on asyncio and trio.

    ``"http"``: streamable HTTP at ``http://{host}:{port}{path}``, served by
    uvicorn (so asyncio only). ``port=0`` picks a free port; the address is
    logged (logger ``llm_worker.mcp``, level INFO). A port that cannot be
    bound raises ``OSError`` before anything is served. SIGINT and SIGTERM
    shut the server down gracefully, then take their usual effect. At most
    ``MAX_CONNECTIONS`` connections are served at once (a request past them gets
    ``503``), an idle one is closed ``KEEP_ALIVE_SECONDS`` after its last response;
    uvicorn has no deadline for a request's headers (a proxy in front has). The other
    options are ``create_http_app``'s (allowed hosts and origins, bearer token,
    session limits) and ``create_server``'s (``limits``).
    """
    if transport not in _TRANSPORTS:
        raise ValueError(f"transport must be 'stdio' or 'http', not {transport!r}")
    handle = _handle_of(tools)
    if transport == "stdio":
        server = create_server(
            handle, name=name, version=version, instructions=instructions, limits=limits
        )
        logger.info("serving %d tools over stdio", len(handle))
        sys.stdout.flush()
        # The SDK points fd 1 elsewhere while it serves, but text buffered in sys.stdout
        # would reach the wire when flushed after it restores fd 1: send prints to stderr.
        # (Inside stdio_server: it claims fd 1 through the real sys.stdout.)
        with _stdin_wire() as wire:
            lines = None if wire is None else _StdinLinesChecked(_text_lines(wire))
            # The SDK only iterates the stdin it is given: our lines are all it needs.
            stdin = cast("anyio.AsyncFile[str] | None", lines)
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                if lines is not None:
                    lines.answer_on(write_stream)
                with contextlib.redirect_stdout(sys.stderr):
                    await server.run(
                        _UnreadableLinesAnswered(read_stream, write_stream),
                        write_stream,
                        server.create_initialization_options(),
                    )
        return
    _check_path(path)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "the http transport runs on asyncio (uvicorn); run serve_async() under asyncio"
        ) from None
    import uvicorn

    app = create_http_app(
        handle,
        path=path,
        host=host,
        name=name,
        version=version,
        instructions=instructions,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        auth_token=auth_token,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
        limits=limits,
    )
    sock = _listen(host, port)
    try:
        bound_port: int = sock.getsockname()[1]
        url = f"http://{_url_host(host)}:{bound_port}{path}"
        # log_config=None: leave the application's logging alone (uvicorn's records
        # propagate to the root logger); no access log.
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="on",
            limit_concurrency=MAX_CONNECTIONS,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
        logger.info("serving %d tools at %s (streamable HTTP)", len(handle), url)
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()


def serve(
    tools: ToolServer | ToolServerHandle,
    *,
    transport: Transport = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    path: str = DEFAULT_PATH,
    name: str = DEFAULT_NAME,
    version: str | None = None,
    instructions: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    auth_token: str | None = None,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    limits: Limits | None = None,
) -> None:
    """Run ``serve_async`` on asyncio until it returns: the blocking form, for scripts.
    Ctrl-C raises ``KeyboardInterrupt`` (on Python 3.10 too)."""
    from .._interrupt import run_until_ctrl_c

    async def main() -> None:
        await serve_async(
            tools,
            transport=transport,
            host=host,
            port=port,
            path=path,
            name=name,
            version=version,
            instructions=instructions,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            auth_token=auth_token,
            session_idle_timeout=session_idle_timeout,
            max_sessions=max_sessions,
            limits=limits,
        )

    run_until_ctrl_c(main)


def _handle_of(tools: ToolServer | ToolServerHandle) -> ToolServerHandle:
    if isinstance(tools, ToolServerHandle):
        return tools
    if isinstance(tools, ToolServer):
        return tools.handle()
    raise TypeError(f"expected a ToolServer or ToolServerHandle, not {type(tools).__name__}")


def _check_path(path: str) -> None:
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/', not {path!r}")


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; ``OSError`` names the address if it fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        raise OSError(f"cannot listen on {_url_host(host)}:{port}: {reason}") from exc
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class _UnreadableLinesAnswered:
    """The stdio transport's read stream, answering each line that is no message.

    The SDK's stdio transport passes such a line on as an exception, which its
    server drops unanswered (logged at DEBUG), leaving the client to wait for an
    answer. This answers it with the JSON-RPC error (``id: null``: its id cannot
    be read) and logs a warning; a blank line is passed over. Messages go on as
    they came, with their sender's context.
    """

    __slots__ = ("_read", "_write")

    def __init__(
        self, read: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
    ) -> None:
        self._read = read
        self._write = write

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message (the SDK's streams keep it)."""
        return cast("contextvars.Context | None", getattr(self._read, "last_context", None))

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            answer = _unreadable_line(item)
            if answer is not None:
                await self._write.send(answer)

    async def aclose(self) -> None:
        await self._read.aclose()

    def __aiter__(self) -> _UnreadableLinesAnswered:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _UnreadableLinesAnswered:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _unreadable_line(exc: Exception) -> SessionMessage | None:
    """The answer to a line the SDK could not read as a message (``exc`` says why), or
    ``None`` for a blank one."""
    first = exc.errors()[0] if isinstance(exc, ValidationError) and exc.errors() else None
    if first is not None and first["type"] == "json_invalid":
        line = first.get("input")
        if isinstance(line, str) and line.isspace():
            return None
        error = _answer_error(_ON_STDIN, types.PARSE_ERROR, "Parse error", first["msg"])
    else:
        error = _answer_error(_ON_STDIN, *_INVALID_REQUEST, _NOT_A_MESSAGE)
    return SessionMessage(error)


_ON_STDIN = "a line on stdin"
_NOT_A_MESSAGE = "not a JSON-RPC message"
_INVALID_REQUEST = (types.INVALID_REQUEST, "Invalid Request")


_MAX_DEPTH = 200
"""How many arrays and objects a value may be inside for the SDK's JSON parser (jiter's
recursion limit): it refuses a line nested deeper, which ``json`` reads."""


def _answer_error(
    what: str, code: int, message: str, why: str, request_id: types.RequestId | None = None
) -> types.JSONRPCError:
    """The JSON-RPC error answering ``what``, logged as a warning saying why; ``id: null``
    unless ``request_id`` is given (the message's id cannot be read, or is none MCP allows).
    An answer with an id says why in its message too: its client reads it."""
    logger.warning("answered %s with %s (%d): %s", what, message, code, why)
    text = message if request_id is None else f"{message}: {why}"
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=text)
    )


def _request_id_problem(message: object) -> str | None:
    """Why ``message`` (parsed JSON) is a request whose id MCP does not allow, or ``None``.

    A request (it has a ``method``) with an ``id`` that is not a string or an integer
    (a JSON-RPC id may be a fraction or ``null``, an MCP one may not). The SDK reads one
    as a notification, dropping the id, and answers nothing: the client would wait.
    """
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    request_id = cast("dict[str, object]", message)["id"]
    if isinstance(request_id, str) or type(request_id) is int:  # bool is an int, and no id
        return None
    if isinstance(request_id, dict):
        kind = "an object"
    elif isinstance(request_id, list):
        kind = "an array"
    else:
        kind = json.dumps(request_id)  # null, true, 1.5
    return f"a request's id must be a string or an integer, not {kind}"


def _checked_line(line: str) -> str | types.JSONRPCError:
    """What becomes of a line on stdin: a line for the SDK to read (``line`` itself, or an
    error response in place of a client's response the SDK could not read), or the error
    to answer the client with, the line dropped. See ``_StdinLinesChecked``."""
    parsed = _parsed(line)
    if parsed is None:
        return line  # not JSON at all: the SDK's Parse error says so
    message, refused = parsed
    why = _request_id_problem(message)
    if why is not None:
        return _answer_error(_ON_STDIN, *_INVALID_REQUEST, why)
    in_place = _response_in_place(message, refused)
    if in_place is not None:
        return _passed_on(_ON_STDIN, in_place).decode()
    request_id = _readable_id(message)
    if refused is None or request_id is None or "method" not in cast("dict[str, object]", message):
        return line
    return _answer_error(_ON_STDIN, *_INVALID_REQUEST, _refused_why(message, refused), request_id)


def _parsed(text: str | bytes) -> tuple[object, str | None] | None:
    """JSON ``text`` as the SDK's parser reads it, and ``None``; JSON that parser refuses
    (nested deeper than it reads, a lone surrogate's escape) as ``json`` reads it, and the
    parser's account of why; ``None`` if ``text`` is not JSON at all."""
    try:
        return pydantic_core.from_json(text), None
    except ValueError as exc:
        refused = str(exc)
    try:
        return json.loads(text), refused
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        return None


def _readable_id(message: object) -> types.RequestId | None:
    """The id of ``message`` (parsed JSON), if it has one MCP allows (a string, an integer)."""
    if not isinstance(message, dict):
        return None
    message_id = cast("dict[str, object]", message).get("id")
    if isinstance(message_id, str) or type(message_id) is int:  # bool is an int, and no id
        return message_id
    return None


def _response_in_place(message: object, refused: str | None) -> types.JSONRPCError | None:
    """The error response to pass on to the SDK in place of ``message`` (parsed JSON) if it
    is a response (no ``method``; a ``result`` or an ``error``) with an id, that the SDK
    cannot read (``refused``: its parser's account, if the parser refused it; ``"result":
    "yes"``); else ``None``.

    The SDK would drop the response, so the request of ours it answers (a question for an
    approval) would wait for ever: now it fails (``Invalid response: ...``).
    """
    response_id = _readable_id(message)
    fields = cast("dict[str, object]", message)  # a dict, if it has an id
    if response_id is None or "method" in fields or not ("result" in fields or "error" in fields):
        return None
    if refused is not None:
        why = _refused_why(message, refused)
    elif _is_message(message):
        return None
    else:
        why = _NOT_A_RESPONSE
    error = types.ErrorData(code=types.INVALID_REQUEST, message=f"Invalid response: {why}")
    return types.JSONRPCError(jsonrpc="2.0", id=response_id, error=error)


def _passed_on(what: str, in_place: types.JSONRPCError) -> bytes:
    """``in_place`` (of ``_response_in_place``) as JSON, logged as a warning about ``what``."""
    logger.warning(
        "passed %s on as an error response (id %r): %s",
        what,
        in_place.id,
        in_place.error.message,
    )
    return in_place.model_dump_json(by_alias=True, exclude_unset=True).encode()


def _is_message(message: object) -> bool:
    """Whether parsed JSON ``message`` is a JSON-RPC message as the SDK reads one."""
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return False
    return True


_NOT_A_RESPONSE = "not a valid JSON-RPC response"


def _refused_why(message: object, parser_error: str) -> str:
    """Why the SDK's parser refused JSON ``message`` that ``json`` read (``parser_error``
    is its account): nested too deeply (``json`` reads about 1 000 levels), or that."""
    depth = _depth(message)
    if depth > _MAX_DEPTH:
        return f"nested {depth} levels deep, more than the {_MAX_DEPTH} the server reads"
    return f"JSON the server cannot read ({parser_error})"  # a lone surrogate's escape


def _depth(value: object) -> int:
    """How many arrays and objects the most deeply nested value of ``value`` is inside
    (``[[1]]``, ``[[[]]]``: 2); walked without recursion. The depth the SDK's parser
    (pydantic's) limits, unlike ``nesting_depth``'s of brackets (``[[[]]]``: 3)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, around = pending.pop()
        deepest = max(deepest, around)
        if isinstance(item, dict):
            inner: Iterable[object] = cast("dict[str, object]", item).values()
        elif isinstance(item, list):
            inner = cast("list[object]", item)
        else:
            continue
        pending.extend((each, around + 1) for each in inner)
    return deepest


def _posted_message_problem(message: object) -> str | None:
    """Why a POST's JSON ``message`` (as the SDK's parser read it) is no message the SDK
    answers as JSON-RPC asks, or ``None``.

    A request whose id MCP does not allow (``_request_id_problem``), or JSON that is
    no JSON-RPC message at all (a batch array, ``{"foo": 1}``, no ``"jsonrpc"``), which
    the SDK answers ``-32602`` and pydantic's dump of why. Checked as the SDK does (its
    message adapter), so it sees what the SDK would.
    """
    why = _request_id_problem(message)
    if why is not None:
        return why
    return None if _is_message(message) else _NOT_A_MESSAGE


class _StdinLinesChecked:
    """Stdin's lines, as the SDK's stdio transport reads them (it iterates them), with each
    line the SDK would leave a waiting peer unanswered for taken care of here, with a
    warning (``_checked_line``):

    - a request whose id MCP does not allow: answered ``Invalid Request`` (``id:
      null``), and dropped. The SDK reads it as a notification (its id dropped), which
      it never answers;
    - a request with an id that the SDK's parser refuses (nested more than
      ``_MAX_DEPTH`` levels deep, a lone surrogate's escape): answered ``Invalid
      Request`` with its id and why, and dropped. The SDK's ``Parse error`` would have
      ``id: null``, which the client cannot match to its request;
    - a response with an id that the SDK cannot read (``"result": "yes"``, the
      client's answer to our question for an approval): passed on as an error response
      for that id, so our request fails (``Invalid response``) instead of waiting for ever.

    ``answer_on`` gives the stream to answer on, once the transport is open.
    """

    __slots__ = ("_lines", "_ready", "_write")

    def __init__(self, lines: anyio.AsyncFile[str]) -> None:
        self._lines = lines
        self._write: WriteStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def answer_on(self, write: WriteStream[SessionMessage]) -> None:
        self._write = write
        self._ready.set()

    def __aiter__(self) -> _StdinLinesChecked:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.readline()
            if not line:
                raise StopAsyncIteration
            checked = _checked_line(line)
            if isinstance(checked, str):
                return checked
            await self._ready.wait()  # a line read before the transport was open
            assert self._write is not None
            await self._write.send(SessionMessage(checked))


@contextlib.contextmanager
def _stdin_wire() -> Generator[BinaryIO | None, None, None]:
    """What the client writes to stdin, to read while fd 0 reads the null device.

    The SDK's ``stdio_server`` does this for the stdin it reads itself; we read ours
    (``_StdinLinesChecked`` sees each line first), so we do it too: a tool, or a process
    it starts, that reads stdin gets EOF, never the client's messages. After, fd 0 is
    the client's again. Where stdin is not fd 0 (a host embedding us, pytest), or fd 0
    cannot be moved, ``sys.stdin``'s own buffer, read in place (as the SDK does).
    ``None`` on Windows, where the process's standard handle would have to move too:
    there the SDK reads stdin itself, and a request's id is not checked.
    """
    if sys.platform == "win32":
        yield None
        return
    buffer = sys.stdin.buffer
    wire = _duplicate_of_fd_0(buffer)
    if wire is None:
        yield buffer
        return
    try:
        # A thread may still block reading the wire after we are done: never closed.
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


def _duplicate_of_fd_0(buffer: BinaryIO) -> int | None:
    """A duplicate of fd 0 (``buffer``'s), above the standard descriptors, with fd 0 made
    the null device; ``None`` (and fd 0 left alone) if ``buffer`` is not fd 0, or it fails."""
    try:
        if buffer.fileno() != 0:
            return None
        wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except (AttributeError, OSError, ValueError):  # no file, or not one with a descriptor
        return None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(wire)
        return None
    return wire


class _Unowned(io.TextIOWrapper):
    """A text layer that never closes its buffer (``sys.stdin``'s, when read in place)."""

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.detach()


def _text_lines(wire: BinaryIO) -> anyio.AsyncFile[str]:
    # As the SDK's stdio_server reads stdin: UTF-8, bytes that are not becoming U+FFFD.
    return anyio.wrap_file(_Unowned(wire, encoding="utf-8", errors="replace"))


class _PostedMessagesChecked:
    """ASGI middleware: a POST to ``path`` whose body is JSON but no message MCP allows gets
    ``400`` with ``Invalid Request`` (``-32600``, and a warning), as the same line over
    stdio does: a request with an id MCP does not allow (the SDK would answer ``202
    Accepted``, a notification, and nothing more), or no JSON-RPC message at all (the SDK
    would answer ``-32602`` Invalid params with pydantic's dump). A response with an id
    that the SDK cannot read goes on as an error response for its id, as over stdio
    (``_response_in_place``). Only a request the SDK would take otherwise: one with an
    allowed Host and Origin and a JSON content type (else the SDK refuses it as ever),
    whose body is no larger than the SDK reads (else the SDK answers ``413``).
    """

    def __init__(self, app: ASGIApp, path: str, security: TransportSecuritySettings) -> None:
        self.app = app
        self._path = path
        self._security = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or _route_path(scope) != self._path:
            await self.app(scope, receive, send)
            return
        try:
            received, body = await _body_of(scope, receive)
        except TimeoutError:
            await _body_timed_out(scope, receive, send)
            return
        # A body that is not JSON, or JSON the SDK's parser refuses (but a response), is the
        # SDK's to answer: Parse error, in the POST's own answer.
        parsed = None if body is None else _parsed(body)
        in_place = why = None
        if parsed is not None:
            message, refused = parsed
            in_place = _response_in_place(message, refused)
            if in_place is None and refused is None:
                why = _posted_message_problem(message)
        if (in_place is not None or why is not None) and await self._taken(scope):
            if in_place is not None:
                body = _passed_on("a POST", in_place)
                received = [{"type": "http.request", "body": body, "more_body": False}]
                scope = _with_content_length(scope, len(body))
            elif why is not None:
                error = _answer_error("a POST", *_INVALID_REQUEST, why)
                answer = Response(
                    error.model_dump_json(by_alias=True, exclude_unset=True),
                    status_code=400,
                    media_type="application/json",
                )
                await answer(scope, receive, send)
                return

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        await self.app(scope, replay, send)

    async def _taken(self, scope: Scope) -> bool:
        """Whether the SDK would take this POST (an allowed Host and Origin, a JSON content
        type): only then is it ours to answer or to change (else the SDK refuses it)."""
        return await self._security.validate_request(Request(scope), is_post=True) is None


def _with_content_length(scope: Scope, length: int) -> Scope:
    """``scope`` with its ``Content-Length`` header saying ``length`` (a body put in place)."""
    headers = [(key, value) for key, value in scope["headers"] if key.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode("ascii"))]}


def _route_path(scope: Scope) -> str:
    # The path after the prefix the app is mounted under, as Starlette routes it.
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


async def _body_of(scope: Scope, receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages of a request's body as received (to give the app next), and the body;
    ``None`` for it if it is larger than the SDK reads or did not come whole.

    Raises ``TimeoutError`` if it does not come whole within ``BODY_TIMEOUT_SECONDS``: a
    client that declares a body and never sends it (or sends a byte now and then) would
    hold its connection, and a task, for good.
    """
    received: list[Message] = []
    declared = Headers(scope=scope).get("content-length", "")
    if declared.isdigit() and int(declared) > DEFAULT_MAX_REQUEST_BODY_SIZE:
        return received, None  # refused unread by the SDK
    size = 0
    with anyio.fail_after(BODY_TIMEOUT_SECONDS):
        while True:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                return received, None  # the client left
            size += len(message.get("body", b""))
            if size > DEFAULT_MAX_REQUEST_BODY_SIZE:
                return received, None
            if not message.get("more_body", False):
                return received, b"".join(part.get("body", b"") for part in received)


async def _body_timed_out(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a POST whose body did not come in time: ``408``, and the connection closed."""
    logger.warning(
        "answered a POST with 408 Request Timeout: its body did not come whole within %g s",
        BODY_TIMEOUT_SECONDS,
    )
    answer = Response(
        f"Request Timeout: the body did not come whole within {BODY_TIMEOUT_SECONDS:g} s",
        status_code=408,
        headers={"Connection": "close"},  # what is left of the body is not read
    )
    await answer(scope, receive, send)
