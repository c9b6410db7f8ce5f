"""A target whose import-time setup is cancelled: ``asyncio.CancelledError`` is a BaseException."""

import asyncio


async def _warm_up() -> None:
    raise asyncio.CancelledError


asyncio.run(_warm_up())
