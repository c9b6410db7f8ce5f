"""An HTTP client for the SDK's streamable-HTTP transport that outlives the server it talks to.

With the SDK's own client, a request whose POST cannot reach the server (it
died, or restarted) raises ``httpx2.ConnectError`` inside the transport's task
group (an upstream SDK issue). That cancels everything inside
``async with streamable_http_client(...)``: the next tool call reads
"cancelled before it finished" and a running ``Worker`` is cancelled with it,
then an ``ExceptionGroup([ConnectError])`` escapes the ``async with``.

``mcp_http_client()`` answers such a POST itself, with a JSON-RPC error that
says what happened, which the SDK hands to the request that made it:

==========================================  ==========================================
the POST                                    the error's message
==========================================  ==========================================
could not connect (``ConnectError``,        ``cannot connect to the MCP server:
``ConnectTimeout``): nothing was sent       Connection refused (ConnectError)`` (the
                                            address in a warning on the log)
was sent, and no response came within the   ``no response from the MCP server within
read (or write) timeout                     the read timeout (300 s); the request
                                            was sent, so it may have run on the
                                            server``
lost its connection (anything else)         ``Connection closed``, as a stdio client
                                            reads when its server goes away
==========================================  ==========================================

So over HTTP as over stdio, each call fails on its own as ``Execution failed:
MCP error: ...``, the run goes on, and nothing escapes.
"""

from __future__ import annotations

import json
import logging
import os
import ssl

import httpx2
import mcp.types as types
from typing_extensions import override

__all__ = ["mcp_http_client"]

logger = logging.getLogger("llm_worker.mcp")

# What the SDK's own client uses: a server may hold a response stream open for long.
_DEFAULT_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
# Which of the request's timeouts (httpx's "timeout" extension) each timeout exceeded.
_TIMEOUTS: dict[type[httpx2.TransportError], str] = {
    httpx2.ReadTimeout: "read",
    httpx2.WriteTimeout: "write",
}


def mcp_http_client(
    *,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """An ``httpx2.AsyncClient`` for ``streamable_http_client(url, http_client=...)``.

    The arguments are those of the SDK's ``create_mcp_http_client`` (same
    default timeouts). Enter it yourself (``async with mcp_http_client() as
    http:``): the SDK does not close a client it was given.
    """
    return httpx2.AsyncClient(
        headers=headers,
        timeout=_DEFAULT_TIMEOUT if timeout is None else timeout,
        auth=auth,
        transport=_ConnectionClosedAsError(httpx2.AsyncHTTPTransport()),
    )


class _ConnectionClosedAsError(httpx2.AsyncBaseTransport):
    """Turns a POST that got no response into a JSON-RPC error saying why (the module's table)."""

    def __init__(self, transport: httpx2.AsyncBaseTransport) -> None:
        self._transport = transport

    @override
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._transport.handle_async_request(request)
        except httpx2.TransportError as exc:
            if request.method != "POST":
                raise  # the SDK retries its GET stream and ignores a failed DELETE
            code, message = _unanswered(request, exc)
            error = {
                "jsonrpc": "2.0",
                "id": None,  # the SDK puts the request's own id on it
                "error": {"code": code, "message": message},
            }
            return httpx2.Response(
                503,
                headers={"content-type": "application/json"},
                content=json.dumps(error).encode(),
                request=request,
            )

    @override
    async def aclose(self) -> None:
        await self._transport.aclose()


def _unanswered(request: httpx2.Request, exc: httpx2.TransportError) -> tuple[int, str]:
    """The JSON-RPC error code and message for a POST that failed with ``exc``."""
    if isinstance(exc, (httpx2.ConnectError, httpx2.ConnectTimeout)):
        url = request.url
        why = _os_reason(exc) or str(exc) or "no reason given"
        # The address is for the log: the message may reach a model, which has no use
        # for the names of the deployment's hosts.
        address = f"{url.scheme}://{url.netloc.decode('ascii')}{url.path}"  # no query
        logger.warning("cannot connect to the MCP server at %s: %s", address, why)
        return (
            types.CONNECTION_CLOSED,
            f"cannot connect to the MCP server: {why} ({type(exc).__name__})",
        )
    which = _TIMEOUTS.get(type(exc))
    if which is not None:
        seconds = request.extensions.get("timeout", {}).get(which)
        within = (
            f"the {which} timeout" if seconds is None else f"the {which} timeout ({seconds:g} s)"
        )
        # The server may well have got the request and be running the tool: say so, as a
        # model retrying the call might otherwise run it twice.
        return types.REQUEST_TIMEOUT, (
            f"no response from the MCP server within {within}; the request was sent, "
            f"so it may have run on the server"
        )
    return types.CONNECTION_CLOSED, "Connection closed"


def _os_reason(exc: BaseException) -> str | None:
    """The reason of the OS error under ``exc`` ("Connection refused"), if there is one:
    httpx's own text says only "All connection attempts failed"."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):  # an OSError whose errno says 1
            return f"certificate verify failed: {cause.verify_message}"
        if isinstance(cause, ssl.SSLError):
            return f"TLS error: {cause.reason or cause.strerror or cause}"
        if isinstance(cause, OSError) and cause.errno:
            # The errno's own words: the loop's text differs between asyncio and trio.
            return os.strerror(cause.errno) if cause.errno > 0 else cause.strerror or str(cause)
        grouped: object = getattr(cause, "exceptions", None)  # trio's: one per address tried
        if isinstance(grouped, tuple) and grouped and isinstance(grouped[0], BaseException):
            cause = grouped[0]
        else:
            cause = cause.__cause__ or cause.__context__
    return None
