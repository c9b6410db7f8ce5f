"""Server-sent events and error bodies exactly as each provider documents them.

OpenAI Chat Completions (``stream: true``, API reference "The chat completion chunk
object" and "Streaming"): every frame is ``data: {chat.completion.chunk}``; the first
delta carries the role, a tool call's first delta carries ``index``, ``id``,
``type: "function"`` and ``function.name`` with empty ``arguments``, later deltas only
``index`` and an ``arguments`` fragment; the finishing chunk has an empty delta and a
``finish_reason``; with ``stream_options.include_usage`` every chunk has
``"usage": null`` and one last chunk has ``"choices": []`` and the usage; then
``data: [DONE]``. Errors: ``{"error": {"message", "type", "param", "code"}}``.

OpenAI Responses (``stream: true``, API reference "Streaming events"): named events
whose data repeats the ``type`` and carries a ``sequence_number``: ``response.created``
and ``response.in_progress`` (the Response object), then per output item
``response.output_item.added`` ... ``response.output_item.done`` (a message item with
``response.content_part.added`` / ``response.output_text.delta`` / ``.done`` /
``response.content_part.done``; a ``function_call`` item with
``response.function_call_arguments.delta`` / ``.done``), and last ``response.completed``
(or ``response.incomplete`` / ``response.failed``) with the final Response and usage;
``error`` events carry ``code``, ``message``, ``param``.

Anthropic Messages (``stream: true``, "Streaming Messages"): named events
``message_start`` (a Message with empty content and the input usage),
``content_block_start`` / ``content_block_delta`` (``text_delta`` or
``input_json_delta`` with ``partial_json``) / ``content_block_stop`` per block,
``message_delta`` (``stop_reason`` and cumulative ``usage``), ``message_stop``; ``ping``
anywhere; ``error`` with ``{"type": "error", "error": {"type", "message"}}``, the
same body as an HTTP error. Extended thinking ("Building with extended thinking",
streaming): a ``thinking`` block starts as ``{"thinking": "", "signature": ""}``, streams
``thinking_delta``s and one ``signature_delta`` just before its stop; a
``redacted_thinking`` block comes whole (``data``). Server tools ("Web search tool"): a
``server_tool_use`` block streams its input as ``input_json_delta``s like ``tool_use``;
its ``web_search_tool_result`` block comes whole; text that cites results starts with
``citations: []`` and gets ``citations_delta``s; a long turn may stop with
``pause_turn``. Context management ("Compaction"): a ``compaction`` block streams one
``compaction_delta``, and ``usage.iterations`` lists the compaction's own tokens.

Gemini (``streamGenerateContent?alt=sse``, API reference "Method:
models.streamGenerateContent"): every frame is ``data: {GenerateContentResponse}``
followed by a blank line (CRLF); each carries ``candidates[0].content.parts`` (text
parts, ``thought: true`` summaries, ``functionCall`` parts with ``name``, ``args`` and
maybe ``id``; ``thoughtSignature`` on the part it belongs to), ``usageMetadata`` (running
totals) and ``modelVersion``/``responseId``; the last one has ``finishReason``. Vertex
AI's ``streamFunctionCallArguments`` sends a call in pieces: ``functionCall`` parts with
``partialArgs`` (``jsonPath`` and a value, ``willContinue`` for more of a string) and
``willContinue: true``, and a last one without it. Errors: ``{"error": {"code",
"message", "status"}}``, as an HTTP body or as a ``data:`` frame inside the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

# -- OpenAI Chat Completions -----------------------------------------------------------------

CHAT_ID = "chatcmpl-BQb0iSFzE1zz1OVhaqg3u2Yqn1Ezf"
CHAT_MODEL = "gpt-test-mini"


def data(payload: Any) -> str:
    """One ``data:`` frame."""
    return f"data: {json.dumps(payload)}\n\n"


DONE = "data: [DONE]\n\n"


def chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    choices: bool = True,
    usage: dict[str, Any] | None = None,
) -> str:
    """A ``chat.completion.chunk`` frame (one choice, or none for the usage chunk)."""
    payload: dict[str, Any] = {
        "id": CHAT_ID,
        "object": "chat.completion.chunk",
        "created": 1745678496,
        "model": CHAT_MODEL,
        "service_tier": "default",
        "system_fingerprint": "fp_eede8f0d45",
        "choices": [
            {
                "index": 0,
                "delta": delta if delta is not None else {},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ]
        if choices
        else [],
        "usage": usage,
    }
    return data(payload)


def chat_usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_text(*pieces: str, usage: tuple[int, int] | None = (11, 7)) -> tuple[str, ...]:
    """A whole text answer, one content delta per piece, finish_reason "stop"."""
    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    frames += [chunk({"content": piece}) for piece in pieces]
    frames.append(chunk({}, "stop"))
    if usage is not None:
        frames.append(chunk(choices=False, usage=chat_usage(*usage)))
    frames.append(DONE)
    return tuple(frames)


def tool_call_start(index: int, call_id: str, name: str) -> dict[str, Any]:
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }


def tool_call_args(index: int, fragment: str) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": fragment}}


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chat_tool_calls(
    calls: Sequence[tuple[str, str, str]],
    *,
    text: str = "",
    chunk_size: int | None = None,
    interleave: bool = False,
    finish_reason: str = "tool_calls",
    usage: tuple[int, int] | None = (40, 18),
) -> tuple[str, ...]:
    """A response calling ``calls`` ``(id, name, arguments)``: optional text first, then
    each call's start and its arguments (split into ``chunk_size`` pieces, the calls'
    fragments alternating when ``interleave``)."""
    frames = [chunk({"role": "assistant", "content": None})]
    if text:
        frames.append(chunk({"content": text}))
    pieces = [split(args, chunk_size or max(len(args), 1)) for _, _, args in calls]
    if interleave:
        for index, (call_id, name, _) in enumerate(calls):
            frames.append(chunk({"tool_calls": [tool_call_start(index, call_id, name)]}))
        for position in range(max(len(p) for p in pieces)):
            for index, call_pieces in enumerate(pieces):
                if position < len(call_pieces):
                    frames.append(
                        chunk({"tool_calls": [tool_call_args(index, call_pieces[position])]})
                    )
    else:
        for index, (call_id, name, _) in enumerate(calls):
            frames.append(chunk({"tool_calls": [tool_call_start(index, call_id, name)]}))
            frames += [chunk({"tool_calls": [tool_call_args(index, p)]}) for p in pieces[index]]
    frames.append(chunk({}, finish_reason))
    if usage is not None:
        frames.append(chunk(choices=False, usage=chat_usage(*usage)))
    frames.append(DONE)
    return tuple(frames)


def openai_error(message: str, type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


RATE_LIMITED = openai_error(
    "Rate limit reached for gpt-test-mini in organization org-test on requests per min (RPM): "
    "Limit 3, Used 3, Requested 1. Please try again in 20s.",
    "requests",
    "rate_limit_exceeded",
)
BAD_KEY = openai_error(
    "Incorrect API key provided: sk-test. You can find your API key at "
    "https://platform.openai.com/account/api-keys.",
    "invalid_request_error",
    "invalid_api_key",
)

# -- OpenAI Responses ------------------------------------------------------------------------

RESPONSE_ID = "resp_6859a4b21f84819bba8036beab6d54360be65637a2186412"


def response_object(
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
    *,
    error: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    """A Response object as the stream's ``response.*`` events carry it."""
    return {
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1750705330,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": CHAT_MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "auto",
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def responses_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


class ResponseEvents:
    """Builds one Responses stream, numbering the events as the API does."""

    def __init__(self) -> None:
        self.frames: list[str] = []
        self.output: list[dict[str, Any]] = []

    def add(self, type: str, **fields: Any) -> None:
        payload = {"type": type, "sequence_number": len(self.frames), **fields}
        self.frames.append(event(type, payload))

    def start(self) -> ResponseEvents:
        self.add("response.created", response=response_object("in_progress", []))
        self.add("response.in_progress", response=response_object("in_progress", []))
        return self

    def text(self, *pieces: str) -> ResponseEvents:
        index, item_id = (
            len(self.output),
            f"msg_67c9fdcecf488190bdd9a0409de3a1ec0{len(self.output)}",
        )
        item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
        self.add("response.output_item.added", output_index=index, item={**item, "content": []})
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        self.add("response.content_part.added", **where, part=part)
        for piece in pieces:
            self.add("response.output_text.delta", **where, delta=piece, logprobs=[])
        text = "".join(pieces)
        self.add("response.output_text.done", **where, text=text, logprobs=[])
        done_part = {**part, "text": text}
        self.add("response.content_part.done", **where, part=done_part)
        done = {**item, "status": "completed", "content": [done_part]}
        self.add("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return self

    def call(self, call_id: str, name: str, *fragments: str) -> ResponseEvents:
        index, item_id = len(self.output), f"fc_6859a4b3d5a4819b9f5dbe1bd2fcf4b20{len(self.output)}"
        item = {"id": item_id, "type": "function_call", "call_id": call_id, "name": name}
        added = {**item, "arguments": "", "status": "in_progress"}
        self.add("response.output_item.added", output_index=index, item=added)
        for fragment in fragments:
            self.add(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=fragment,
            )
        arguments = "".join(fragments)
        self.add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )
        done = {**item, "arguments": arguments, "status": "completed"}
        self.add("response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return self

    def completed(self, usage: tuple[int, int] = (37, 11)) -> tuple[str, ...]:
        response = response_object("completed", self.output, responses_usage(*usage))
        self.add("response.completed", response=response)
        return tuple(self.frames)

    def incomplete(self, reason: str, usage: tuple[int, int] = (37, 11)) -> tuple[str, ...]:
        response = response_object(
            "incomplete", self.output, responses_usage(*usage), incomplete_reason=reason
        )
        self.add("response.incomplete", response=response)
        return tuple(self.frames)

    def failed(self, code: str, message: str) -> tuple[str, ...]:
        error = {"code": code, "message": message}
        self.add("response.failed", response=response_object("failed", self.output, error=error))
        return tuple(self.frames)

    def error(self, code: str, message: str) -> tuple[str, ...]:
        self.add("error", code=code, message=message, param=None)
        return tuple(self.frames)


def responses_text(*pieces: str, usage: tuple[int, int] = (37, 11)) -> tuple[str, ...]:
    """A whole Responses text answer."""
    return ResponseEvents().start().text(*pieces).completed(usage)


def responses_calls(
    calls: Sequence[tuple[str, str, str]], *, text: str = "", chunk_size: int | None = None
) -> tuple[str, ...]:
    """Optional text, then one function_call item per ``(call_id, name, arguments)``."""
    events = ResponseEvents().start()
    if text:
        events.text(text)
    for call_id, name, args in calls:
        events.call(call_id, name, *split(args, chunk_size or max(len(args), 1)))
    return events.completed((80, 24))


# -- Anthropic Messages ----------------------------------------------------------------------

MESSAGE_ID = "msg_01XFDUDYJgAACzvnptvVoYEL"
CLAUDE_MODEL = "claude-test-model"


def event(name: str, payload: dict[str, Any]) -> str:
    """One named event frame; the ``type`` in the data matches the event name."""
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n"


PING = event("ping", {"type": "ping"})


def message_start(input_tokens: int = 25, cache_read: int = 0) -> str:
    return event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": MESSAGE_ID,
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": CLAUDE_MODEL,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        },
    )


def text_block(index: int, *pieces: str) -> list[str]:
    return [
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        *(
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": p},
                },
            )
            for p in pieces
        ),
        block_stop(index),
    ]


def tool_use_start(index: int, call_id: str, name: str) -> str:
    return event(
        "content_block_start",
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        },
    )


def input_delta(index: int, partial_json: str) -> str:
    return event(
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": partial_json},
        },
    )


def block_stop(index: int) -> str:
    return event("content_block_stop", {"type": "content_block_stop", "index": index})


def tool_use_block(index: int, call_id: str, name: str, pieces: Iterable[str]) -> list[str]:
    # The API's first input_json_delta of a block is often empty.
    return [
        tool_use_start(index, call_id, name),
        input_delta(index, ""),
        *(input_delta(index, p) for p in pieces),
        block_stop(index),
    ]


def message_delta(stop_reason: str, output_tokens: int) -> str:
    return event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
    )


MESSAGE_STOP = event("message_stop", {"type": "message_stop"})


def claude_text(*pieces: str, input_tokens: int = 25, output_tokens: int = 9) -> tuple[str, ...]:
    """A whole text answer: one text block, stop_reason end_turn."""
    return (
        message_start(input_tokens),
        PING,
        *text_block(0, *pieces),
        message_delta("end_turn", output_tokens),
        MESSAGE_STOP,
    )


def claude_tool_calls(
    calls: Sequence[tuple[str, str, str]],
    *,
    text: str = "",
    chunk_size: int | None = None,
    input_tokens: int = 60,
    output_tokens: int = 30,
) -> tuple[str, ...]:
    """Optional text block, then one tool_use block per ``(id, name, input JSON)``, with the
    input split into ``chunk_size`` pieces; stop_reason tool_use."""
    frames = [message_start(input_tokens)]
    index = 0
    if text:
        frames += text_block(0, text)
        index = 1
    for call_id, name, args in calls:
        frames += tool_use_block(index, call_id, name, split(args, chunk_size or max(len(args), 1)))
        index += 1
    frames += [message_delta("tool_use", output_tokens), MESSAGE_STOP]
    return tuple(frames)


def anthropic_error(type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def error_event(type: str, message: str) -> str:
    return event("error", anthropic_error(type, message))


def thinking_block(index: int, pieces: Sequence[str], signature: str) -> list[str]:
    """A ``thinking`` block: its deltas, then its signature."""
    start = {"type": "thinking", "thinking": "", "signature": ""}
    return [
        event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *(
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": p},
                },
            )
            for p in pieces
        ),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": signature},
            },
        ),
        block_stop(index),
    ]


def whole_block(index: int, block: dict[str, Any]) -> list[str]:
    """A block that comes whole at its start (``redacted_thinking``, a server tool's result)."""
    return [
        event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        ),
        block_stop(index),
    ]


def server_tool_use_block(index: int, call_id: str, name: str, input_json: str) -> list[str]:
    start = {"type": "server_tool_use", "id": call_id, "name": name, "input": {}}
    return [
        event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        input_delta(index, ""),
        *(input_delta(index, p) for p in split(input_json, 7)),
        block_stop(index),
    ]


def cited_text_block(index: int, text: str, citations: Sequence[dict[str, Any]]) -> list[str]:
    """A text block that cites search results: ``citations: []`` at the start, then each
    citation as a ``citations_delta`` before the text."""
    start = {"type": "text", "text": "", "citations": []}
    return [
        event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *(
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "citations_delta", "citation": citation},
                },
            )
            for citation in citations
        ),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        block_stop(index),
    ]


def claude_message(
    blocks: Sequence[str],
    stop_reason: str,
    *,
    input_tokens: int = 50,
    usage: dict[str, Any] | None = None,
) -> tuple[str, ...]:
    """A whole response of the given block frames; ``usage`` is ``message_delta``'s."""
    delta_usage = usage if usage is not None else {"output_tokens": 40}
    return (
        message_start(input_tokens),
        *blocks,
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": delta_usage,
            },
        ),
        MESSAGE_STOP,
    )


# -- OpenAI Responses: reasoning -------------------------------------------------------------


def reasoning_item(index: int, summary: Sequence[str], encrypted: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": f"rs_6859a4b21f84819b8f5bd0c1a7e4e3d00{index}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": text} for text in summary],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def add_reasoning(
    events: ResponseEvents, summary: Sequence[str], encrypted: str | None
) -> ResponseEvents:
    """A ``reasoning`` output item: its summary parts streamed, then the item done, with
    ``encrypted_content`` when the request asked for it (``include``)."""
    index = len(events.output)
    item = reasoning_item(index, summary, encrypted)
    added = {**item, "summary": []}
    if encrypted is not None:
        added["encrypted_content"] = encrypted[: len(encrypted) // 2]  # may be incomplete
    events.add("response.output_item.added", output_index=index, item=added)
    for number, text in enumerate(summary):
        where = {"item_id": item["id"], "output_index": index, "summary_index": number}
        part = {"type": "summary_text", "text": ""}
        events.add("response.reasoning_summary_part.added", **where, part=part)
        for piece in split(text, 12):
            events.add("response.reasoning_summary_text.delta", **where, delta=piece)
        events.add("response.reasoning_summary_text.done", **where, text=text)
        done = {"type": "summary_text", "text": text}
        events.add("response.reasoning_summary_part.done", **where, part=done)
    events.add("response.output_item.done", output_index=index, item=item)
    events.output.append(item)
    return events


# -- Gemini ----------------------------------------------------------------------------------

GEMINI_MODEL = "gemini-test-flash"
GEMINI_RESPONSE_ID = "7JxlaNnvIuqLxN8Pn7SU4A8"


def gemini_usage(
    prompt: int, candidates: int, *, thoughts: int = 0, cached: int = 0
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if cached:
        usage["cachedContentTokenCount"] = cached
    return usage


def gemini_chunk(
    parts: Sequence[dict[str, Any]],
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    *,
    response_id: str = GEMINI_RESPONSE_ID,
) -> str:
    """One ``data:`` frame of a GenerateContentResponse (candidate 0 only)."""
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    payload: dict[str, Any] = {
        "candidates": [candidate],
        "usageMetadata": usage if usage is not None else {"promptTokenCount": 12},
        "modelVersion": GEMINI_MODEL,
        "responseId": response_id,
    }
    return f"data: {json.dumps(payload)}\r\n\r\n"


def gemini_text(
    *pieces: str, usage: tuple[int, int] = (12, 5), finish_reason: str = "STOP"
) -> tuple[str, ...]:
    """A text answer, one chunk per piece, the last with the finish reason and usage."""
    frames = [gemini_chunk([{"text": piece}]) for piece in pieces[:-1]]
    frames.append(gemini_chunk([{"text": pieces[-1]}], finish_reason, gemini_usage(*usage)))
    return tuple(frames)


def gemini_calls(
    calls: Sequence[tuple[str, dict[str, Any]]],
    *,
    text: str = "",
    ids: Sequence[str] | None = None,
    signature: str | None = None,
    usage: tuple[int, int] = (30, 12),
) -> tuple[str, ...]:
    """Optional text, then one chunk with a ``functionCall`` part per ``(name, args)``
    (``ids`` if Gemini names them; ``signature`` on the first call, as Gemini 3 sends it)."""
    frames = [gemini_chunk([{"text": text}])] if text else []
    parts: list[dict[str, Any]] = []
    for position, (name, args) in enumerate(calls):
        call: dict[str, Any] = {"name": name, "args": args}
        if ids is not None:
            call["id"] = ids[position]
        part: dict[str, Any] = {"functionCall": call}
        if signature is not None and position == 0:
            part["thoughtSignature"] = signature
        parts.append(part)
    frames.append(gemini_chunk(parts, "STOP", gemini_usage(*usage)))
    return tuple(frames)


def gemini_error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}
