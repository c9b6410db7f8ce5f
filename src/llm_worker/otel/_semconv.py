"""The OpenTelemetry semantic-convention names llm_worker emits, and the version they follow.

Spans, attributes and the chat metrics follow the GenAI semantic conventions
as released in OpenTelemetry semantic conventions v1.41.1, the last release
that defines them (from v1.42.0 they live in the separate GenAI conventions
repository, which has no tagged release yet). Two histograms that v1.41.1
does not define come from that repository's current text and are marked
below. Everything this library adds of its own is under ``llm_worker.*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from .._conversation import FILTERED_STOP_REASONS

__all__ = ["SCHEMA_URL", "SEMCONV_VERSION"]

SEMCONV_VERSION: Final = "1.41.1"
"""The OpenTelemetry semantic-conventions release the spans and metrics follow."""

SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
"""The schema URL of that release, set on the tracer and the meter."""

# -- span names and operations -------------------------------------------------------

INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

# -- attributes ------------------------------------------------------------------------

OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_STREAM: Final = "gen_ai.request.stream"  # True: every request streams
AGENT_NAME: Final = "gen_ai.agent.name"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_ID: Final = "gen_ai.response.id"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"  # s, a double
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE: Final = "gen_ai.token.type"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_DESCRIPTION: Final = "gen_ai.tool.description"
OUTPUT_TYPE: Final = "gen_ai.output.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"

# Opt-in content (``capture_content=True``): JSON text, as the conventions ask of
# span attributes where structured values are not supported.
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# llm_worker's own.
RUN_KIND: Final = "llm_worker.run.kind"  # "run", "resume", "retry"
RUN_OUTCOME: Final = "llm_worker.run.outcome"  # "finished", "paused", "aborted", ...
RUN_REQUESTS: Final = "llm_worker.run.requests"
RUN_TOOL_CALLS: Final = "llm_worker.run.tool_calls"
DECISION_EVENT: Final = "llm_worker.tool_call.decision"
DECISION: Final = "llm_worker.decision"  # "skipped", "denied", "paused", ...
DECISION_REASON: Final = "llm_worker.decision.reason"

# -- values ----------------------------------------------------------------------------

TOOL_TYPE_FUNCTION: Final = "function"  # executed by the application, from the model's arguments
CANCELLED: Final = "cancelled"  # error.type of an operation its run stopped
TIMEOUT: Final = "timeout"  # error.type of a tool call past Limits.tool_timeout
TOOL_ERROR: Final = "tool_error"  # error.type of any other error result
OUTPUT_TYPE_JSON: Final = "json"  # gen_ai.output.type of a request for a structured answer

# The library's stop reasons (Anthropic's vocabulary, docs/providers.md) that have a
# counterpart among the conventions' finish reasons (the FinishReason of
# gen-ai-output-messages.json: stop, length, content_filter, tool_call, error). Any
# other stop reason is recorded as it is.
FINISH_REASONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "end_turn": "stop",
        "tool_use": "tool_call",
        "max_tokens": "length",
        "stop_sequence": "stop",  # Anthropic
        "refusal": "content_filter",
        **dict.fromkeys(FILTERED_STOP_REASONS, "content_filter"),
    }
)

# -- metrics ---------------------------------------------------------------------------

OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
TOKEN_USAGE: Final = "gen_ai.client.token.usage"
# Not in v1.41.1: from the GenAI conventions repository (status: development).
EXECUTE_TOOL_DURATION: Final = "gen_ai.execute_tool.duration"
INVOKE_AGENT_DURATION: Final = "gen_ai.invoke_agent.duration"

# Bucket boundaries the conventions advise for each histogram.
DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
AGENT_DURATION_BUCKETS: Final = (
    0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6,
)  # fmt: skip
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
