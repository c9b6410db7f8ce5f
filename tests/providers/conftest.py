"""Fixtures of the provider tests: a scripted local provider server and the Notes app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .app import Notes
from .server import ProviderServer


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A provider server on 127.0.0.1, shut down (every handler thread joined) after the test."""
    with ProviderServer() as running:
        yield running


@pytest.fixture
def notes() -> Notes:
    return Notes()
