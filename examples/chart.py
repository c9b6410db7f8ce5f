"""A tool that returns a chart image, which the model looks at; a scripted model if no key.

Run it with:  python examples/chart.py ["your question"]

The tool ``sales_chart`` draws a year's monthly sales as a bar chart: a real PNG, made
here with ``zlib`` and ``struct`` (no plotting library needed), returned as a
``ToolReturn`` with a line of text, the image (a ``MediaPart``) and metadata for the
application. Each provider client sends the image the way its API takes it
(docs/providers.md, "Rich tool results"): Anthropic as an image block in the
tool_result, Chat Completions in a user message after the tool message, Gemini in the
function response's parts.

The model is chosen as in examples/chat.py: OPENAI_API_KEY (Chat Completions, model
from OPENAI_MODEL, default gpt-5-mini; OPENAI_BASE_URL for a compatible server with a
vision model), else ANTHROPIC_API_KEY (ANTHROPIC_MODEL, default claude-haiku-4-5), else
GEMINI_API_KEY or GOOGLE_API_KEY (GEMINI_MODEL, default gemini-3-flash-preview: images
in a function response need a Gemini 3 model). With no key it uses
llm_worker.testing.ScriptedClient, so it always runs (and needs no SDK).
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from asyncio import CancelledError
from contextlib import AsyncExitStack

import anyio

from llm_worker import (
    LlmClient,
    MediaPart,
    ProviderError,
    TextPart,
    ToolResult,
    ToolReturn,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

QUESTION = "How did sales go in 2025? Look at the chart and tell me the best month."
SYSTEM_PROMPT = "You analyse sales. Use the chart tool, look at the chart, answer in one sentence."

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SALES = {
    2024: (31, 28, 35, 40, 38, 44, 47, 45, 41, 39, 50, 58),
    2025: (36, 33, 41, 46, 52, 49, 55, 61, 48, 45, 57, 72),
}

WIDTH, HEIGHT = 240, 120
WHITE, GREY, BLUE, ORANGE = (255, 255, 255), (90, 90, 90), (66, 110, 200), (235, 140, 40)


def png(width: int, height: int, pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """An RGB PNG of ``pixels`` (rows of (r, g, b)): signature, IHDR, IDAT, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + bytes(value for pixel in row for value in pixel) for row in pixels)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def bar_chart(values: tuple[int, ...]) -> bytes:
    """A bar per value on a white ground above a grey axis, the highest bar orange."""
    pixels = [[WHITE] * WIDTH for _ in range(HEIGHT)]
    base, top, step = HEIGHT - 10, 10, WIDTH // len(values)
    highest = max(values)
    for index, value in enumerate(values):
        color = ORANGE if value == highest else BLUE
        bar_top = base - round((base - top) * value / highest)
        left = index * step + 4
        for y in range(bar_top, base):
            for x in range(left, left + step - 8):
                pixels[y][x] = color
    for x in range(WIDTH):
        pixels[base][x] = GREY
    return png(WIDTH, HEIGHT, pixels)


@tool_registry
class SalesCharts:
    """Sales figures, as charts."""

    @tool
    def sales_chart(self, year: int) -> ToolReturn:
        """Draw the monthly sales of a year (2024 or 2025) as a bar chart."""
        values = SALES.get(year)
        if values is None:
            return ToolReturn(f"No sales figures for {year}; there are 2024 and 2025.")
        return ToolReturn(
            [
                TextPart(f"Monthly sales in {year}, in units, January to December:"),
                MediaPart("image/png", data=bar_chart(values), name=f"sales-{year}.png"),
            ],
            metadata={"year": year, "values": list(values)},  # for the application only
        )


def scripted_model() -> ScriptedClient:
    """What a model would do with QUESTION: draw the chart, then read it."""
    return ScriptedClient(
        [
            ScriptedResponse(tool_calls=[ScriptedCall("sales_chart", {"year": 2025})]),
            "Sales grew through 2025 and peaked in December (the orange bar).",
        ]
    )


async def make_model(stack: AsyncExitStack) -> tuple[LlmClient, str]:
    """The model to talk to, and how to describe it; real clients are closed by ``stack``."""
    if os.environ.get("OPENAI_API_KEY"):
        from llm_worker.providers.openai import OpenAIChatClient

        model = os.environ.get("OPENAI_MODEL") or "gpt-5-mini"
        openai_client = await stack.enter_async_context(OpenAIChatClient(model))
        return openai_client, f"OpenAI Chat Completions, model {model}"
    if os.environ.get("ANTHROPIC_API_KEY"):
        from llm_worker.providers.anthropic import AnthropicClient

        model = os.environ.get("ANTHROPIC_MODEL") or "claude-haiku-4-5"
        anthropic_client = await stack.enter_async_context(AnthropicClient(model))
        return anthropic_client, f"Anthropic Messages, model {model}"
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        from llm_worker.providers.gemini import GeminiClient

        model = os.environ.get("GEMINI_MODEL") or "gemini-3-flash-preview"
        gemini_client = await stack.enter_async_context(GeminiClient(model))
        return gemini_client, f"Gemini, model {model}"
    print(
        "No OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY is set: "
        "using a scripted model (llm_worker.testing.ScriptedClient)."
    )
    return scripted_model(), "a scripted model"


async def main() -> int:
    question = " ".join(sys.argv[1:]) or QUESTION
    async with AsyncExitStack() as stack:
        model, description = await make_model(stack)
        print(f"Talking to {description}.\n")
        worker = Worker(model, system_prompt=SYSTEM_PROMPT)
        worker.register_tools(tool_definitions(SalesCharts()))
        print(f"user      | {question}")
        try:
            await worker.run(question)
        except ProviderError as exc:
            print(f"\nThe model provider failed: {exc}")
            return 1
    for message in worker.history:
        if isinstance(message, ToolResult):
            media = [part for part in message.parts if isinstance(part, MediaPart)]
            shown = f" + {', '.join(map(repr, media))}" if media else ""
            print(f"  tool    | {message.content}{shown}")
            print(f"          | (metadata, not sent: {message.metadata})")
    print(f"assistant | {worker.final_text}")
    return 0


def cli() -> int:
    """Run ``main``; Ctrl-C ends it with a status, not a traceback (as in examples/chat.py)."""
    try:
        return anyio.run(main)
    except (KeyboardInterrupt, CancelledError):  # CancelledError: Ctrl-C on Python 3.10
        print("interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT


if __name__ == "__main__":
    sys.exit(cli())
