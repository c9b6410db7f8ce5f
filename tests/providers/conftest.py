"""Fixtures of the provider tests: a scripted local provider server and the Notes app."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .app import Notes
from .server import ProviderServer, running_server


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A provider server on 127.0.0.1 (``running_server``), shut down after the test."""
    with running_server() as running:
        yield running


@pytest.fixture
def notes() -> Notes:
    return Notes()
