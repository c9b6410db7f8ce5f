"""An MCP server process (stdio) whose spans go to a file: ``python traced_mcp_server.py SPANS``.

Configures the OpenTelemetry SDK globally (as an application would), with an
exporter writing each finished span as one JSON line to SPANS, then serves
``tests.mcp.mcp_apps:factory`` with ``llm_worker.mcp.serve``. Not a test module.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class JsonLinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (open for the process)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            self._file.write(json.dumps(json.loads(span.to_json())) + "\n")
        self._file.flush()
        return SpanExportResult.SUCCESS


def main() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(sys.argv[1])))
    trace.set_tracer_provider(provider)

    from llm_worker.mcp import serve
    from tests.mcp.mcp_apps import factory

    serve(factory())


if __name__ == "__main__":
    main()
