"""The histograms a traced worker records, made once per ``OpenTelemetry`` from its meter.

==================================  ======  =================================================
histogram                           unit    one measurement per
==================================  ======  =================================================
``gen_ai.client.operation.duration`` s      model request (``gen_ai.operation.name`` chat)
``gen_ai.client.token.usage``       {token} model response that reported usage, per
                                            ``gen_ai.token.type`` (input, output)
``gen_ai.execute_tool.duration``    s       tool call that ran
``gen_ai.invoke_agent.duration``    s       run (``run()``, ``resume()``, ``retry()``)
==================================  ======  =================================================

A failed operation's measurement carries ``error.type``, the same as its span.
"""

from __future__ import annotations

from opentelemetry.metrics import Histogram, Meter

from . import _semconv as sc

__all__ = ["Instruments"]


class Instruments:
    """The four histograms, with the units and bucket boundaries the conventions advise."""

    __slots__ = ("agent_duration", "operation_duration", "token_usage", "tool_duration")

    def __init__(self, meter: Meter) -> None:
        self.operation_duration: Histogram = meter.create_histogram(
            sc.OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS,
        )
        self.token_usage: Histogram = meter.create_histogram(
            sc.TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=sc.TOKEN_BUCKETS,
        )
        self.tool_duration: Histogram = meter.create_histogram(
            sc.EXECUTE_TOOL_DURATION,
            unit="s",
            description="The duration of a single tool execution.",
            explicit_bucket_boundaries_advisory=sc.DURATION_BUCKETS,
        )
        self.agent_duration: Histogram = meter.create_histogram(
            sc.INVOKE_AGENT_DURATION,
            unit="s",
            description="The end-to-end duration of a single agent invocation.",
            explicit_bucket_boundaries_advisory=sc.AGENT_DURATION_BUCKETS,
        )
