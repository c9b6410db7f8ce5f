"""An HTTP client for the SDK's streamable-HTTP transport that outlives the server it talks to.

With the SDK's own client, a request whose POST cannot reach the server (it
died, or restarted) raises ``httpx2.ConnectError`` inside the transport's task
group (an upstream SDK issue). That cancels everything inside
``async with streamable_http_client(...)``: the next tool call reads
"cancelled before it finished" and a running ``Worker`` is cancelled with it,
then an ``ExceptionGroup([ConnectError])`` escapes the ``async with``.

``mcp_http_client()`` answers such a POST itself, with the JSON-RPC error a
stdio client gets when its server goes away (``Connection closed``), which the
SDK hands to the request that made it. So over HTTP as over stdio, each call
after the server is gone fails on its own as ``Execution failed: MCP error:
Connection closed``, the run goes on, and nothing escapes.
"""

from __future__ import annotations

import json

import httpx2
import mcp.types as types
from typing_extensions import override

__all__ = ["mcp_http_client"]

# What the SDK's own client uses: a server may hold a response stream open for long.
_DEFAULT_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_CONNECTION_CLOSED = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": None,  # the SDK puts the request's own id on it
        "error": {"code": types.CONNECTION_CLOSED, "message": "Connection closed"},
    }
).encode()


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
    """Turns a POST that cannot reach the server into a ``Connection closed`` JSON-RPC error."""

    def __init__(self, transport: httpx2.AsyncBaseTransport) -> None:
        self._transport = transport

    @override
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._transport.handle_async_request(request)
        except httpx2.TransportError:
            if request.method != "POST":
                raise  # the SDK retries its GET stream and ignores a failed DELETE
            return httpx2.Response(
                503,
                headers={"content-type": "application/json"},
                content=_CONNECTION_CLOSED,
                request=request,
            )

    @override
    async def aclose(self) -> None:
        await self._transport.aclose()
