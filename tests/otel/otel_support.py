"""What the OpenTelemetry tests share: SDK providers in memory, and readers of what they got.

Every test gets its own providers (never the global ones, which a process can set only
once), an in-memory span exporter and metric reader, and an ``OpenTelemetry`` on them.
Not a test module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llm_worker.otel import OpenTelemetry
from llm_worker.testing import ScriptedClient


class OpenAIScripted(ScriptedClient):
    """A scripted client that tells its provider and model, as a real client would."""

    provider = "openai"
    model = "gpt-test"


@dataclass
class Telemetry:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def instrumentation(self, **options: Any) -> OpenTelemetry:
        return OpenTelemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        (span,) = self.named(name)
        return span

    def points(self, metric: str) -> list[HistogramDataPoint]:
        """The data points of histogram ``metric`` (none if it was never recorded)."""
        data = self.reader.get_metrics_data()
        found: list[HistogramDataPoint] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for recorded in scope.metrics:
                    if recorded.name == metric:
                        found.extend(recorded.data.data_points)  # type: ignore[arg-type]
        return found


def make_telemetry() -> Telemetry:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    return Telemetry(exporter, reader, tracer_provider, meter_provider)


def parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id
