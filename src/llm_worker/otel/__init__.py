"""See runs in the tools teams already use: OpenTelemetry traces and metrics for a ``Worker``.

Needs the optional extra: ``pip install 'llm-worker[otel]'`` (``opentelemetry-api``;
bring the SDK and an exporter yourself, see ``docs/observability.md``)::

    from llm_worker.otel import OpenTelemetry

    worker = Worker(client, instrumentation=OpenTelemetry())

Spans and metrics follow the OpenTelemetry GenAI semantic conventions of
``SEMCONV_VERSION``. ``import llm_worker`` never imports this package or
OpenTelemetry, and a worker without ``instrumentation=`` pays nothing for it.
"""

from __future__ import annotations

# Fail at once, with the fix in the message, when the optional extra is missing.
try:
    from opentelemetry import trace as _trace
except ImportError as exc:
    raise ImportError(
        "llm_worker.otel needs the OpenTelemetry API: pip install 'llm-worker[otel]'",
        name="opentelemetry",
    ) from exc

from ._semconv import SCHEMA_URL, SEMCONV_VERSION
from ._tracing import OpenTelemetry

__all__ = ["SCHEMA_URL", "SEMCONV_VERSION", "OpenTelemetry"]

OpenTelemetry.__module__ = __name__
del _trace
