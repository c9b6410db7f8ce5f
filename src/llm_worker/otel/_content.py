"""What a model was sent and answered, in the GenAI conventions' JSON forms (opt-in content).

Only ``OpenTelemetry(capture_content=True)`` calls these (but ``finish_reason``):
messages, prompts, arguments and results can hold personal data. Each returns the
JSON text of one attribute (span attributes take no structured values in Python):

- ``system_instructions``: ``[{"type": "text", "content": ...}]``;
- ``input_messages``: the history, one ``{"role", "parts"}`` object per message
  (user text, assistant text and ``tool_call`` parts, ``tool`` messages with a
  ``tool_call_response`` part);
- ``output_messages``: the response, with its ``finish_reason`` (the conventions' value
  for its stop reason: ``finish_reason()``);
- ``tool_definitions``: ``[{"type": "function", "name", "description", "parameters"}]``.

Provider items (reasoning signatures, encrypted items) are opaque and left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._conversation import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from .._meta import LlmToolDefinition
from . import _semconv as sc

__all__ = [
    "finish_reason",
    "input_messages",
    "output_messages",
    "system_instructions",
    "tool_definitions",
]


def system_instructions(system_prompt: str) -> str:
    return _json([{"type": "text", "content": system_prompt}])


def input_messages(messages: Sequence[Message]) -> str:
    return _json([_message(message) for message in messages])


def output_messages(message: AssistantMessage) -> str:
    body = _assistant(message)
    stop_reason = message.stop_reason
    body["finish_reason"] = "" if stop_reason is None else finish_reason(stop_reason)
    return _json([body])


def finish_reason(stop_reason: str) -> str:
    """The conventions' finish reason for the library's ``stop_reason`` (``end_turn`` is
    ``stop``, ``tool_use`` ``tool_call``...), or ``stop_reason`` itself if none fits.
    Used by the chat span's ``gen_ai.response.finish_reasons`` and its output messages."""
    return sc.FINISH_REASONS.get(stop_reason, stop_reason)


def tool_definitions(tools: Sequence[LlmToolDefinition]) -> str:
    return _json(
        [
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            }
            for tool in tools
        ]
    )


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": [{"type": "text", "content": message.text}]}
    if isinstance(message, ToolResult):
        part = {"type": "tool_call_response", "id": message.call_id, "response": message.content}
        return {"role": "tool", "parts": [part]}
    return _assistant(message)


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"type": "text", "content": message.text})
    parts.extend(_tool_call(call) for call in message.tool_calls)
    return {"role": "assistant", "parts": parts}


def _tool_call(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": _arguments(call)}


def _arguments(call: ToolCall) -> object:
    """The call's arguments as a value (the conventions want an object), else its raw text:
    when it is not JSON, or nests too deep to parse (``RecursionError``)."""
    try:
        return json.loads(call.input_json) if call.input_json.strip() else {}
    except (ValueError, RecursionError):
        return call.input_json


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
