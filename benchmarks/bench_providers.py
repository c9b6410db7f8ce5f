"""What a provider client adds to its SDK's own cost of a request, on a long history.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_providers.py            # ~1-2 min
    .venv/bin/python benchmarks/bench_providers.py --quick    # smoke run, a few seconds

Each case is one request at turn 100 of a tool-calling conversation: the history holds
the first message, 99 earlier turns (an assistant message with one tool call, and its
result) and a new turn, so the client has seen all but the newest turn before, as it
has in a real run. *Ours* is ``client.stream(request)`` read to its end: the client
turns the history into the SDK's parameters and the SDK builds, sends and parses the
request. The *floor* is the same SDK call with those parameters built beforehand, read
to its end the same way: the SDK's own cost. The SDK sends to an in-process
``httpx2.MockTransport`` that answers with a short streamed text answer, so no socket
or server thread is timed; before timing, the script checks that both send the same
request body. Cases:

- Anthropic, plain tool turns (text and tool_use rebuilt from each message);
- Anthropic, thinking turns (each assistant message keeps its thinking and tool_use
  blocks as provider items);
- OpenAI Chat Completions, plain tool turns;
- OpenAI Responses, reasoning turns (each keeps a reasoning item with encrypted content);
- Gemini, thinking turns (each keeps a thought and a function call with its signature).

Three rows per case, each the median of per-round ratios (within a round, ours and the
floor alternate request by request; the conversions are timed right after):

- ``end to end``: ``client.stream()`` read to its end / the SDK's call read to its end,
  both measured. Target <= 1.03x: what a request through the client costs beyond the
  SDK's own, all of it: the conversion of the history, the request's parameters,
  reading the response into events, the client's async generator. Each side is an SDK
  call of some milliseconds on a shared machine, so the ratio moves a little from run
  to run (read the p25-p75 column).
- ``(context) conversion alone, computed``: ``1 + conversion / SDK call``, where the
  conversion (the client's, of that history, as warm as in a run) is timed on its own.
  Not a measurement of ``stream()``: everything ``stream()`` does besides converting the
  history is left out. It says how much of the end-to-end row the conversion is, and
  that it does not grow with the history beyond what the SDK does itself.
- ``(context) whole history converted, computed``: the same with the conversion done
  from scratch, as the clients did every request before they kept the last one's (and
  as they still do once after ``set_history`` or ``load_state``).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import gc
import json
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anthropic
import anyio
import httpx2
import openai
from _common import Row, format_ns, machine_note, median, print_table, ratio_row
from google import genai
from google.genai import types

from llm_worker import (
    AssistantMessage,
    LlmRequest,
    Message,
    ProviderItem,
    ToolCall,
    ToolResult,
    UserMessage,
    tool,
    tool_metas,
    tool_registry,
)
from llm_worker._formats import export_tools
from llm_worker.providers import anthropic as claude_module
from llm_worker.providers import gemini as gemini_module
from llm_worker.providers import openai as openai_module
from llm_worker.providers.anthropic import AnthropicClient
from llm_worker.providers.gemini import GeminiClient
from llm_worker.providers.openai import OpenAIChatClient, OpenAIResponsesClient

TURNS = 100
TARGET = 1.03
SYSTEM = "You keep notes for the user. Save what they ask you to, and read it back."
RunFn = Callable[[], Awaitable[object]]


@tool_registry
class Notes:
    """Notes the model can save and read back."""

    @tool
    async def add_note(self, title: str, body: str = "", tags: list[str] | None = None) -> str:
        """Save a note under a title."""
        return title

    @tool
    async def get_note(self, title: str) -> str:
        """Read the note saved under a title."""
        return title


DEFINITIONS = tuple(
    meta.to_llm_definition() for meta in sorted(tool_metas(Notes), key=lambda m: m.name)
)


# -- histories ------------------------------------------------------------------------------


def arguments(turn: int) -> str:
    return json.dumps(
        {"title": f"note {turn}", "body": f"the body of note {turn}, " * 4, "tags": ["a", "b"]}
    )


def signature(turn: int) -> str:
    return base64.b64encode(f"signature of turn {turn} ".encode() * 8).decode()


def plain_turn(turn: int) -> AssistantMessage:
    call = ToolCall(f"call_{turn:04d}", "add_note", arguments(turn))
    return AssistantMessage(f"Saving note {turn}.", (call,), "tool_use")


def claude_thinking_turn(turn: int) -> AssistantMessage:
    message = plain_turn(turn)
    call = message.tool_calls[0]
    blocks = [
        {
            "type": "thinking",
            "thinking": f"The user wants note {turn}. " * 6,
            "signature": signature(turn),
        },
        {"type": "text", "text": message.text},
        {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": json.loads(call.input_json),
        },
    ]
    items = tuple(ProviderItem("anthropic", b["type"], json.dumps(b)) for b in blocks)
    return dataclasses.replace(message, provider_items=items)


def responses_reasoning_turn(turn: int) -> AssistantMessage:
    item = {
        "id": f"rs_{turn:040d}",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": f"Saving note {turn}."}],
        "encrypted_content": "gAAAAAB" + "x" * 600,
    }
    return dataclasses.replace(
        plain_turn(turn), provider_items=(ProviderItem("openai", "reasoning", json.dumps(item)),)
    )


def gemini_thinking_turn(turn: int) -> AssistantMessage:
    message = plain_turn(turn)
    call = message.tool_calls[0]
    parts = [
        {"text": f"The user wants note {turn}. " * 6, "thought": True},
        {"text": message.text},
        {
            "functionCall": {"id": call.id, "name": call.name, "args": json.loads(call.input_json)},
            "thoughtSignature": signature(turn),
        },
    ]
    items = (
        ProviderItem("gemini", "thought", json.dumps(parts[0])),
        ProviderItem("gemini", "text", json.dumps(parts[1])),
        ProviderItem("gemini", "function_call", json.dumps(parts[2])),
    )
    return dataclasses.replace(message, provider_items=items)


MAX_BATCH = 40  # requests in one timed batch, at most


@dataclass
class History:
    """A conversation at turn 100, and the turns after it, one request each.

    ``base`` is the first message and 99 turns (each an assistant message with one call,
    and its result); request ``i`` of a batch has ``base`` and ``i + 1`` more turns, so
    each request of a batch extends the one before, as in a run.
    """

    base: list[Message]
    requests: list[LlmRequest]


def history(turn: Callable[[int], AssistantMessage]) -> History:
    messages: list[Message] = [UserMessage("Please save these notes for me.")]
    requests = []
    for number in range(TURNS - 1 + MAX_BATCH):
        if number == TURNS - 1:
            base = list(messages)
        message = turn(number)
        messages += [message, ToolResult(message.tool_calls[0].id, f"saved note {number}")]
        if number >= TURNS - 1:
            requests.append(LlmRequest(SYSTEM, list(messages), DEFINITIONS))
    return History(base, requests)


# -- the transport: a short answer in each wire format ----------------------------------------

CLAUDE_ANSWER = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":'
    '"message","role":"assistant","content":[],"model":"m","stop_reason":null,'
    '"stop_sequence":null,"usage":{"input_tokens":9000,"output_tokens":1}}}\n\n'
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    '"content_block":{"type":"text","text":""}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"All saved."}}\n\n'
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
    '"stop_sequence":null},"usage":{"output_tokens":4}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
CHAT_ANSWER = (
    "".join(
        f"data: {json.dumps(chunk)}\n\n"
        for chunk in (
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "All saved."},
                        "finish_reason": None,
                    }
                ],
            },
            {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            },
        )
    )
    + "data: [DONE]\n\n"
)
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "status": "completed",
    "model": "m",
    "output": [
        {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "All saved.", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 9000,
        "output_tokens": 4,
        "total_tokens": 9004,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
RESPONSES_ANSWER = (
    'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
    '"item_id":"msg_1","output_index":0,"content_index":0,"delta":"All saved.",'
    '"logprobs":[],"sequence_number":0}\n\n'
    "event: response.completed\ndata: "
    + json.dumps({"type": "response.completed", "sequence_number": 1, "response": RESPONSE})
    + "\n\n"
)
GEMINI_ANSWER = (
    "data: "
    + json.dumps(
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": "All saved."}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 9000, "candidatesTokenCount": 4},
            "modelVersion": "m",
            "responseId": "r1",
        }
    )
    + "\r\n\r\n"
)


@dataclass
class Transport:
    """Answers every request with ``answer`` and remembers the last body."""

    answer: bytes
    last_body: Any = None

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.last_body = json.loads(request.content)
        return httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=self.answer
        )

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))


# -- the cases --------------------------------------------------------------------------------

Convert = Callable[[Sequence[Message]], Any]  # the client's conversion, with its own prefix
Call = Callable[[Any], Awaitable[Any]]  # the SDK's call on converted parameters


@dataclass
class Case:
    """One row: a client, the same SDK call on prebuilt parameters, and the conversion."""

    name: str
    client: Any
    convert: Convert
    convert_full: Convert  # the same conversion without the client's last request
    call: Call
    past: History
    transport: Transport
    prebuilt: list[Any] = field(default_factory=list)  # the floor's parameters, per request
    reps: int = 1
    ours_ns: list[float] = field(default_factory=list)
    floor_ns: list[float] = field(default_factory=list)
    convert_ns: list[float] = field(default_factory=list)
    full_ns: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)
    full_shares: list[float] = field(default_factory=list)

    def prime(self) -> None:
        """The client has seen the history up to turn 99 (untimed)."""
        self.convert(self.past.base)

    async def round(self, reps: int, floor_first: bool) -> tuple[float, float]:
        """One batch of ``reps`` requests each way, per request: ours and the floor
        alternate request by request (so a change in the machine's load hits both), the
        collector paused. Returns the mean nanoseconds of ours and of the floor."""
        self.prime()
        ours = floor = 0
        gc.collect()
        gc.disable()
        try:
            for index in range(reps):
                ours_first = (index % 2 == 0) != floor_first
                for side in ("ours", "floor") if ours_first else ("floor", "ours"):
                    start = time.perf_counter_ns()
                    if side == "ours":
                        await drain(self.client.stream(self.past.requests[index]))
                        ours += time.perf_counter_ns() - start
                    else:
                        await self.sdk_call(self.prebuilt[index])
                        floor += time.perf_counter_ns() - start
        finally:
            gc.enable()
        return ours / reps, floor / reps

    async def sdk_call(self, params: Any) -> None:
        await drain(await self.call(params))

    def conversion(self, reps: int, convert: Convert) -> float:
        """Nanoseconds per request to convert each request's history, as in a batch."""
        self.prime()
        requests = self.past.requests[:reps]
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter_ns()
            for request in requests:
                convert(request.messages)
            return (time.perf_counter_ns() - start) / len(requests)
        finally:
            gc.enable()


async def drain(stream: Any) -> None:
    async for _ in stream:
        pass


def anthropic_case(name: str, turn: Callable[[int], AssistantMessage]) -> Case:
    transport = Transport(CLAUDE_ANSWER.encode())
    sdk = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://bench.invalid", max_retries=0, http_client=transport.client()
    )
    client = AnthropicClient("claude-bench", client=sdk)
    tools = export_tools(DEFINITIONS, "anthropic")

    def call(messages: Any) -> Awaitable[Any]:
        return sdk.messages.create(
            model="claude-bench",
            max_tokens=client.max_tokens,
            messages=messages,
            system=SYSTEM,
            tools=tools,  # type: ignore[arg-type]
            stream=True,
        )

    def convert(messages: Sequence[Message]) -> Any:
        return claude_module.claude_messages(messages, client._history)

    def full(messages: Sequence[Message]) -> Any:
        return claude_module.claude_messages(messages)

    case = Case(name, client, convert, full, call, history(turn), transport)
    case.prebuilt = [full(r.messages) for r in case.past.requests]
    return case


def chat_case(name: str) -> Case:
    transport = Transport(CHAT_ANSWER.encode())
    sdk = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://bench.invalid/v1",
        max_retries=0,
        http_client=transport.client(),
    )
    client = OpenAIChatClient("gpt-bench", client=sdk)
    tools = export_tools(DEFINITIONS, "openai")

    def call(messages: Any) -> Awaitable[Any]:
        return sdk.chat.completions.create(
            model="gpt-bench",
            messages=messages,
            tools=tools,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )

    def convert(messages: Sequence[Message]) -> Any:
        return openai_module.chat_messages(SYSTEM, messages, client._history)

    def full(messages: Sequence[Message]) -> Any:
        return openai_module.chat_messages(SYSTEM, messages)

    case = Case(name, client, convert, full, call, history(plain_turn), transport)
    case.prebuilt = [full(r.messages) for r in case.past.requests]
    return case


def responses_case(name: str) -> Case:
    transport = Transport(RESPONSES_ANSWER.encode())
    sdk = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://bench.invalid/v1",
        max_retries=0,
        http_client=transport.client(),
    )
    client = OpenAIResponsesClient("gpt-bench", client=sdk)
    tools = export_tools(DEFINITIONS, "openai-responses")

    def call(items: Any) -> Awaitable[Any]:
        return sdk.responses.create(
            model="gpt-bench",
            input=items,
            instructions=SYSTEM,
            tools=tools,  # type: ignore[arg-type]
            stream=True,
            store=False,
            include=["reasoning.encrypted_content"],
        )

    def convert(messages: Sequence[Message]) -> Any:
        return openai_module.responses_input(messages, client._history)

    def full(messages: Sequence[Message]) -> Any:
        return openai_module.responses_input(messages)

    case = Case(name, client, convert, full, call, history(responses_reasoning_turn), transport)
    case.prebuilt = [full(r.messages) for r in case.past.requests]
    return case


def gemini_case(name: str) -> Case:
    transport = Transport(GEMINI_ANSWER.encode())
    options = types.HttpOptions(
        base_url="http://bench.invalid", httpx_async_client=transport.client()
    )
    sdk = genai.Client(api_key="k", http_options=options)
    client = GeminiClient("gemini-bench", client=sdk)
    config = {
        "automatic_function_calling": {"disable": True},
        "system_instruction": SYSTEM,
        "tools": [{"function_declarations": export_tools(DEFINITIONS, "gemini")}],
    }

    def call(contents: Any) -> Awaitable[Any]:
        return sdk.aio.models.generate_content_stream(
            model="gemini-bench",
            contents=contents,
            config=config,  # type: ignore[arg-type]
        )

    def convert(messages: Sequence[Message]) -> Any:
        return gemini_module.gemini_contents(messages, client._history)

    def full(messages: Sequence[Message]) -> Any:
        return gemini_module.gemini_contents(messages)

    case = Case(name, client, convert, full, call, history(gemini_thinking_turn), transport)
    case.prebuilt = [full(r.messages) for r in case.past.requests]
    return case


def build_cases() -> list[Case]:
    return [
        anthropic_case(f"Anthropic, {TURNS} plain tool turns", plain_turn),
        anthropic_case(f"Anthropic, {TURNS} thinking turns (kept blocks)", claude_thinking_turn),
        chat_case(f"OpenAI Chat, {TURNS} plain tool turns"),
        responses_case(f"OpenAI Responses, {TURNS} reasoning turns (kept items)"),
        gemini_case(f"Gemini, {TURNS} thinking turns (kept parts, signatures)"),
    ]


# -- timing -----------------------------------------------------------------------------------


async def check(case: Case) -> None:
    """Ours and the floor send the same request body (the first requests of a batch)."""
    case.prime()
    for request, params in zip(case.past.requests[:3], case.prebuilt[:3], strict=True):
        await drain(case.client.stream(request))
        ours = case.transport.last_body
        await case.sdk_call(params)
        if ours != case.transport.last_body:
            raise AssertionError(f"{case.name}: the floor sends another request than the client")


async def measure(cases: list[Case], rounds: int, batch_ns: float) -> None:
    for case in cases:
        await check(case)
        _, floor = await case.round(2, False)  # warm up, and how long a request takes
        case.reps = max(2, min(MAX_BATCH, round(batch_ns / max(floor, 1))))
    # One case at a time: another case's garbage (the SDKs allocate much per request)
    # would otherwise change the heap under the next one's rounds.
    for case in cases:
        for round_index in range(rounds):
            ours, floor = await case.round(case.reps, floor_first=round_index % 2 == 1)
            case.ours_ns.append(ours)
            case.floor_ns.append(floor)
            case.ratios.append(ours / floor)
            convert = case.conversion(case.reps, case.convert)
            case.convert_ns.append(convert)
            case.shares.append(1 + convert / floor)
            full = case.conversion(case.reps, case.convert_full)
            case.full_ns.append(full)
            case.full_shares.append(1 + full / floor)


def rows_of(cases: list[Case]) -> list[Row]:
    rows = []
    for case in cases:
        sdk = format_ns(median(case.floor_ns))
        rows.append(
            ratio_row(
                f"{case.name}: end to end, stream() / SDK call",
                case.ratios,
                TARGET,
                f"ours {format_ns(median(case.ours_ns))}, SDK {sdk} (batches of {case.reps})",
            )
        )
        rows.append(
            ratio_row(
                "(context) conversion alone, computed: 1 + conversion / SDK",
                case.shares,
                None,
                f"conversion {format_ns(median(case.convert_ns))}, SDK {sdk}",
            )
        )
        rows.append(
            ratio_row(
                "(context) whole history converted, computed: 1 + conversion / SDK",
                case.full_shares,
                None,
                f"conversion {format_ns(median(case.full_ns))}",
            )
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--rounds", type=int, help="rounds per case (default 31; quick 3)")
    parser.add_argument("--batch-ms", type=float, help="time per batch (default 40; quick 5)")
    parser.add_argument(
        "--backend", choices=("asyncio", "trio"), default="asyncio", help="event loop"
    )
    options = parser.parse_args()
    rounds = options.rounds or (3 if options.quick else 31)
    batch_ns = (options.batch_ms or (5.0 if options.quick else 40.0)) * 1e6
    print(f"bench_providers: {machine_note()}")
    print(f"{rounds} rounds per case, batches of ~{batch_ns / 1e6:g} ms, {options.backend}")
    cases = build_cases()
    gc.freeze()  # the histories and prebuilt parameters: not the collector's work to time

    async def run() -> None:
        await measure(cases, rounds, batch_ns)

    anyio.run(run, backend=options.backend)
    print_table(
        f"a request at turn {TURNS}: through the client / the SDK's own call (lower is better)",
        rows_of(cases),
        "median times",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
