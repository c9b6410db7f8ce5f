"""What the provider clients share: when a failure is worth retrying, and the texts they use.

Nothing here imports a provider SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from .._exceptions import ProviderError

__all__ = [
    "STREAM_ENDED",
    "TIMED_OUT",
    "body_text",
    "connection_failed",
    "error_field",
    "is_retryable_status",
    "stream_ended",
]

# What a ProviderError says when no provider message exists.
STREAM_ENDED = "the response stream ended before the response was complete"
TIMED_OUT = "the request timed out"

_MAX_BODY_TEXT = 300


def is_retryable_status(status: int) -> bool:
    """The statuses both SDKs retry themselves: 408, 409, 429 and every 5xx (529 included)."""
    return status in (408, 409, 429) or status >= 500


def error_field(body: object, name: str) -> str | None:
    """``body["error"][name]`` (or ``body[name]`` when the SDK already unwrapped ``error``)."""
    if not isinstance(body, Mapping):
        return None
    fields = cast("Mapping[str, object]", body)
    error = fields.get("error", fields)
    if not isinstance(error, Mapping):
        return None
    value = cast("Mapping[str, object]", error).get(name)
    return value if isinstance(value, str) and value else None


def body_text(body: object) -> str | None:
    """A non-JSON error body (a proxy's HTML page...), shortened to what fits in a message."""
    if not isinstance(body, str) or not body.strip():
        return None
    text = " ".join(body.split())
    return text if len(text) <= _MAX_BODY_TEXT else text[: _MAX_BODY_TEXT - 3] + "..."


def connection_failed(provider: str, cause: BaseException | None, fallback: str) -> ProviderError:
    """The connection failed or broke mid-response: always worth retrying."""
    detail = f"{type(cause).__name__}: {cause}" if cause is not None and str(cause) else fallback
    return ProviderError(provider, f"the connection failed ({detail})", retryable=True)


def stream_ended(provider: str) -> ProviderError:
    """The stream ended cleanly but before the provider said the response was complete."""
    return ProviderError(provider, STREAM_ENDED, retryable=True)


def refuse_client_with_options(owner: str, sdk_client: str, **options: object) -> None:
    """``client=`` comes configured: refuse connection options given beside it."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise TypeError(
            f"{owner} takes client= or {'/'.join(given)}=, not both; "
            f"configure the {sdk_client} client instead"
        )
