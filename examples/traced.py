"""A traced Worker: its spans and metrics, as the OpenTelemetry SDK's console exporters print them.

Run it with:  python examples/traced.py
(needs the otel extra and the SDK: pip install 'llm-worker[otel]' opentelemetry-sdk)

The model is a ScriptedClient that calls two tools at once (an async one and a
plain def that runs in a thread), then answers. Each span is printed as one line
when it ends (so the run's own span comes last), its children indented; the
metrics are printed when the meter provider shuts down. Put an OTLP exporter in
place of the console ones to see the same run in Jaeger, Tempo or Logfire
(docs/observability.md).
"""

from __future__ import annotations

from typing import Any

import anyio
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from llm_worker import Usage, Worker, tool, tool_definitions, tool_registry
from llm_worker.otel import OpenTelemetry
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


@tool_registry
class Weather:
    """Two tools a weather assistant might have."""

    @tool
    async def forecast(self, city: str) -> str:
        """Tomorrow's forecast for a city."""
        await anyio.sleep(0.01)
        return f"{city}: sunny, 24 °C"

    @tool
    def to_fahrenheit(self, celsius: float) -> float:
        """Convert a temperature (a plain def: it runs in a worker thread)."""
        return celsius * 9 / 5 + 32


class Model(ScriptedClient):
    """The scripted model, telling its provider and model name as a real client does."""

    provider = "openai"
    model = "gpt-4o-mini"


def span_line(span: ReadableSpan) -> str:
    """One line per span: its depth shown by indentation, then name, kind and key facts."""
    depth = 0 if span.parent is None else 1
    attributes = dict(span.attributes or {})
    facts = [
        f"{key.removeprefix('gen_ai.')}={attributes[key]}"
        for key in ("gen_ai.usage.input_tokens", "gen_ai.tool.call.id", "error.type")
        if key in attributes
    ]
    elapsed_ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    kind = span.kind.name
    return f"{'    ' * depth}{span.name}  [{kind}, {elapsed_ms:.1f} ms] {' '.join(facts)}\n"


def metric_lines(data: MetricsData) -> str:
    lines: list[str] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    labels: dict[str, Any] = dict(point.attributes or {})
                    shown = ", ".join(f"{k}={v}" for k, v in labels.items())
                    count = getattr(point, "count", "")
                    lines.append(f"{metric.name} ({metric.unit}) count={count}  {shown}")
    return "\n".join(lines) + "\n"


def configure_opentelemetry() -> MeterProvider:
    """What an application does once at start-up: SDK providers with exporters, set globally."""
    resource = Resource.create({"service.name": "weather-assistant"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(ConsoleSpanExporter(formatter=span_line))
    )
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(ConsoleMetricExporter(formatter=metric_lines))
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    metrics.set_meter_provider(meter_provider)
    return meter_provider


async def main() -> None:
    model = Model(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedCall("forecast", {"city": "Lisbon"}),
                    ScriptedCall("to_fahrenheit", {"celsius": 24}),
                ],
                usage=Usage(input_tokens=412, output_tokens=38),
            ),
            ScriptedResponse(
                text="Lisbon will be sunny tomorrow, 24 °C (75 °F).",
                usage=Usage(input_tokens=480, output_tokens=16),
            ),
        ]
    )
    worker = Worker(model, instrumentation=OpenTelemetry(agent_name="weather assistant"))
    worker.register_tools(tool_definitions(Weather()))
    await worker.run("What's the weather in Lisbon tomorrow, in °F too?")
    print(f"answer: {worker.final_text}")


if __name__ == "__main__":
    meters = configure_opentelemetry()
    anyio.run(main)
    meters.shutdown()  # exports the metrics one last time
