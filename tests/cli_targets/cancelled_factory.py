"""An ``mcp serve`` factory that raises ``asyncio.CancelledError``, a BaseException."""

import asyncio


def make() -> None:
    raise asyncio.CancelledError
