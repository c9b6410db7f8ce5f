"""Each OpenTelemetry test gets its own SDK providers, exporter and reader (``otel_support``)."""

from __future__ import annotations

import pytest
from otel_support import Telemetry, make_telemetry


@pytest.fixture
def telemetry() -> Telemetry:
    return make_telemetry()
