"""Fixtures of the provider tests: a scripted local provider server and the Notes app."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from .app import Notes
from .server import ProviderServer


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A provider server on 127.0.0.1, shut down (every handler thread joined) after the test.

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


@pytest.fixture
def notes() -> Notes:
    return Notes()
