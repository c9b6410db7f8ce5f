"""The histograms ``OpenTelemetry`` records (``otel/_metrics.py``), read back from the SDK's
in-memory metric reader: names, units, attributes, counts and sums."""

from __future__ import annotations

import json

import anyio
import pytest
from opentelemetry.sdk.metrics.export import Histogram
from otel_support import OpenAIScripted

from llm_worker import (
    ProviderError,
    Usage,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedResponse


@tool_registry
class Calc:
    """Two tools: one that works, one that does not."""

    @tool
    async def add(self, a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool
    def divide(self, a: int, b: int) -> float:
        """Divide (in a thread)."""
        return a / b


def worker_for(telemetry, script, **options) -> Worker:
    worker = Worker(OpenAIScripted(script), instrumentation=telemetry.instrumentation(**options))
    worker.register_tools(tool_definitions(Calc()))
    return worker


def call(name: str, **args: int) -> ScriptedCall:
    return ScriptedCall(name, json.dumps(args))


def by_attributes(points) -> dict[frozenset, tuple[int, float]]:
    return {frozenset((p.attributes or {}).items()): (p.count, p.sum) for p in points}


CHAT = {
    ("gen_ai.operation.name", "chat"),
    ("gen_ai.provider.name", "openai"),
    ("gen_ai.request.model", "gpt-test"),
}


@pytest.mark.anyio
async def test_token_usage_per_response_and_type(telemetry):
    """gen_ai.client.token.usage: one input and one output measurement per response that
    reported usage, with the chat attributes and gen_ai.token.type."""
    script = [
        ScriptedResponse(
            tool_calls=[call("add", a=1, b=2)], usage=Usage(input_tokens=100, output_tokens=20)
        ),
        ScriptedResponse(text="3", usage=Usage(input_tokens=150, output_tokens=2)),
    ]
    await worker_for(telemetry, script).run("1+2?")
    points = by_attributes(telemetry.points("gen_ai.client.token.usage"))
    assert points == {
        frozenset({*CHAT, ("gen_ai.token.type", "input")}): (2, 250),
        frozenset({*CHAT, ("gen_ai.token.type", "output")}): (2, 22),
    }


@pytest.mark.anyio
async def test_no_usage_no_token_measurement(telemetry):
    """A response that reports no usage records no token measurement (the conventions:
    MUST NOT report what is not known)."""
    await worker_for(telemetry, ["hi"]).run("hello")
    assert telemetry.points("gen_ai.client.token.usage") == []
    assert [p.count for p in telemetry.points("gen_ai.client.operation.duration")] == [1]


@pytest.mark.anyio
async def test_durations_of_requests_tool_calls_and_runs(telemetry):
    """gen_ai.client.operation.duration per request, gen_ai.execute_tool.duration per
    call (error.type on the failed one, the same as its span), gen_ai.invoke_agent.duration
    per run; all in seconds."""
    script = [
        ScriptedResponse(tool_calls=[call("add", a=1, b=2), call("divide", a=1, b=0)]),
        "done",
    ]
    await worker_for(telemetry, script, agent_name="calculator").run("go")
    requests = telemetry.points("gen_ai.client.operation.duration")
    assert [(dict(p.attributes or {}), p.count) for p in requests] == [(dict(CHAT), 2)]
    tools = by_attributes(telemetry.points("gen_ai.execute_tool.duration"))
    agent = ("gen_ai.agent.name", "calculator")
    function = ("gen_ai.tool.type", "function")
    assert {key: count for key, (count, _) in tools.items()} == {
        frozenset({("gen_ai.tool.name", "add"), function, agent}): 1,
        frozenset(
            {
                ("gen_ai.tool.name", "divide"),
                function,
                agent,
                ("error.type", "ExecutionFailedError"),
            }
        ): 1,
    }
    runs = telemetry.points("gen_ai.invoke_agent.duration")
    assert [(dict(p.attributes or {}), p.count) for p in runs] == [
        ({"gen_ai.agent.name": "calculator", "gen_ai.request.model": "gpt-test"}, 1)
    ]
    for point in (*requests, *runs):
        assert point.sum >= 0


@pytest.mark.anyio
async def test_a_failed_request_is_measured_with_its_error_type(telemetry):
    """A failed request's duration carries error.type, as its span does."""

    def limited(request):
        raise ProviderError("openai", "slow down", status=429, retryable=True)

    worker = worker_for(telemetry, [limited])
    with pytest.raises(ProviderError):
        await worker.run("go")
    (point,) = telemetry.points("gen_ai.client.operation.duration")
    assert dict(point.attributes or {}) == {**dict(CHAT), "error.type": "429"}
    (run,) = telemetry.points("gen_ai.invoke_agent.duration")
    assert dict(run.attributes or {})["error.type"] == "429"


@pytest.mark.anyio
async def test_units_and_the_advised_buckets(telemetry):
    """Units as the conventions give them, and their advised bucket boundaries."""
    script = [ScriptedResponse(tool_calls=[call("add", a=1, b=1)], usage=Usage(5, 1)), "2"]
    await worker_for(telemetry, script).run("go")
    data = telemetry.reader.get_metrics_data()
    assert data is not None
    found = {
        metric.name: metric
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }
    assert {name: metric.unit for name, metric in found.items()} == {
        "gen_ai.client.operation.duration": "s",
        "gen_ai.client.token.usage": "{token}",
        "gen_ai.execute_tool.duration": "s",
        "gen_ai.invoke_agent.duration": "s",
    }
    tokens = found["gen_ai.client.token.usage"].data
    assert isinstance(tokens, Histogram)
    assert tokens.data_points[0].explicit_bounds[:4] == (1, 4, 16, 64)
    durations = found["gen_ai.client.operation.duration"].data
    assert isinstance(durations, Histogram)
    assert durations.data_points[0].explicit_bounds[:3] == (0.01, 0.02, 0.04)


@pytest.mark.anyio
async def test_exemplars_point_at_the_operations_span(telemetry):
    """Each measurement is recorded in its operation's span (the SDK's trace-based exemplar
    filter keeps that span's id): a request's and its tokens' at the chat span, a call's at
    its execute_tool span, a run's at its invoke_agent span; never the caller's span."""
    script = [
        ScriptedResponse(tool_calls=[call("add", a=1, b=2)], usage=Usage(5, 1)),
        ScriptedResponse(text="3", usage=Usage(6, 1)),
    ]
    worker = worker_for(telemetry, script)
    app = telemetry.tracer_provider.get_tracer("app")
    with anyio.fail_after(5), app.start_as_current_span("http request"):
        await worker.run("1+2?")
    names = {
        span.context.span_id: span.name for span in telemetry.spans() if span.context is not None
    }
    expected = {
        "gen_ai.client.operation.duration": "chat gpt-test",
        "gen_ai.client.token.usage": "chat gpt-test",
        "gen_ai.execute_tool.duration": "execute_tool add",
        "gen_ai.invoke_agent.duration": "invoke_agent",
    }
    data = telemetry.reader.get_metrics_data()  # once: a collection takes the exemplars
    assert data is not None
    pointed: dict[str, set[object]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    for exemplar in point.exemplars:
                        span = names.get(exemplar.span_id, exemplar.span_id)
                        pointed.setdefault(metric.name, set()).add(span)
    assert pointed == {metric: {span} for metric, span in expected.items()}
