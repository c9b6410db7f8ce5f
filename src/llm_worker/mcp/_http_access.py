"""Who may reach tools served over HTTP: Host and Origin checks, and a bearer token.

Host and Origin checks (the SDK's DNS-rebinding protection) are on for every
address the server listens on. A request whose ``Host`` header is not an
allowed host gets ``421 Misdirected Request``; one whose ``Origin`` header (a
browser page) is not an allowed origin gets ``403 Forbidden``; a request
without ``Origin`` (any non-browser client) passes that check. Allowed are
the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``, any port), the
address listened on (unless it is a wildcard such as ``0.0.0.0``), and what
the caller adds; each allowed host allows its own ``http://`` and
``https://`` origins.

A bearer token, when set, is required on every request
(``Authorization: Bearer <token>``), compared in constant time; a missing or
wrong one gets ``401`` with ``WWW-Authenticate: Bearer``. It is checked before
the Host and Origin headers.

A browser page may read the answers only from an origin the caller allowed
by name (``cross_origin``): CORS, its preflight answered before the token is
asked for (a preflight never carries it). The loopback origins pass the
Origin check but get no CORS: a browser sends no page's JSON request to the
server across origins unless the server says it may, and any local web page
(a dev server's third-party script) would otherwise call every tool.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "BearerTokenAuth",
    "check_auth_token",
    "cross_origin",
    "is_loopback",
    "transport_security",
    "warn_if_exposed",
]

# What an MCP client in a browser sends and must read (streamable HTTP: POST, GET for
# the event stream, DELETE to end a session). Any request header: the protocol adds its
# own (Mcp-Method, Mcp-Name, Mcp-Param-*), and the origin is one the caller trusts.
_CORS_METHODS = ("GET", "POST", "DELETE")
_CORS_HEADERS = ("*",)
_CORS_EXPOSED = ("mcp-protocol-version", "mcp-session-id")

logger = logging.getLogger("llm_worker.mcp")

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARDS = ("", "0.0.0.0", "::", "[::]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to listen on) is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def transport_security(
    host: str, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    """The SDK's Host/Origin settings for a server listening on ``host`` (see the module)."""
    names: list[str] = list(_LOOPBACK_HOSTS)
    if host not in _WILDCARDS:
        listened = f"[{host.strip('[]')}]" if ":" in host else host
        if listened not in names:
            names.append(listened)
    names.extend(name for name in allowed_hosts if name not in names)
    hosts: list[str] = []
    origins: list[str] = list(allowed_origins)
    for name in names:
        has_port = name.rpartition(":")[2].isdigit() and not name.endswith("]")
        hosts.extend([name] if has_port else [name, f"{name}:*"])
        for scheme in ("http", "https"):
            origins.extend(
                [f"{scheme}://{name}"]
                if has_port
                else [f"{scheme}://{name}", f"{scheme}://{name}:*"]
            )
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def cross_origin(app: Starlette, origins: Sequence[str]) -> None:
    """Have ``app`` answer CORS for ``origins`` (``http://host:*``: any port), if any; added
    last, so outermost: a preflight is answered before the token is asked for."""
    if not origins:
        return
    pattern = "|".join(re.escape(origin).replace(r":\*", r":[0-9]+") for origin in origins)
    app.add_middleware(
        CORSMiddleware,
        allow_origin_regex=f"(?:{pattern})",
        allow_methods=_CORS_METHODS,
        allow_headers=_CORS_HEADERS,
        expose_headers=_CORS_EXPOSED,
    )


def warn_if_exposed(host: str, *, authenticated: bool) -> None:
    """Log a warning when ``host`` is reachable from other machines."""
    if is_loopback(host):
        return
    advice = (
        "clients must send the bearer token"
        if authenticated
        else "anyone who can connect can call every tool: set an auth token, or put an "
        "authenticating proxy in front"
    )
    logger.warning(
        "listening on %s, reachable from other machines; %s. Requests must name an "
        "allowed host (add the names clients use with --allow-host / allowed_hosts)",
        host or "all interfaces",
        advice,
    )


def check_auth_token(token: str) -> None:
    """``ValueError`` unless ``token`` is one a client can send as ``Bearer <token>``."""
    if not token:
        raise ValueError("the auth token must not be empty")
    if any(char.isspace() for char in token):
        # A client's token has none (the check strips what it sends): this one would
        # refuse everyone. A secret file written with echo ends in a newline.
        raise ValueError("the auth token must not contain whitespace (a trailing newline?)")


class BearerTokenAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        check_auth_token(token)
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"www-authenticate", b'Bearer realm="mcp"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"Missing or invalid bearer token"})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, token = bytes(value).partition(b" ")
                # compare_digest takes the same time wherever the tokens differ.
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    token.strip(), self._token
                )
        return False
