"""``bench_execute.py --peers``: other libraries' per-call tool path for T2, against the same floor.

Runs with the Python of a SEPARATE venv that has the peers installed (see
README.md); llm_worker is taken from ``src/`` of this checkout, so ours, the
floor and the peers share one process and one pydantic. Each peer is measured
through the entry point its own agent loop uses for a tool call:

pydantic-ai    ``ToolManager.handle_call(ToolCallPart(args=json))`` (what an Agent runs), and
               its core alone: ``validator.validate_json`` + ``FunctionSchema.call`` + ``to_json``
openai-agents  ``FunctionTool.on_invoke_tool(ToolContext, json)`` (result not stringified)
fastmcp        ``Tool.run(json.loads(s))`` (MCP hands it parsed arguments; gives a ToolResult)
langchain-core ``StructuredTool.ainvoke(ToolCall(args=json.loads(s)))`` (gives a ToolMessage)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "src"))

import anyio
import bench_execute
from _common import machine_note, print_table
from _tools import ADD_INPUT, App
from bench_execute import Case, Variant
from pydantic_core import to_json


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def peer_variants() -> tuple[list[tuple[str, Variant]], list[str]]:
    """``(label, variant)`` for every peer that imports; the reasons for those that don't."""
    variants: list[tuple[str, Variant]] = []
    missing: list[str] = []

    try:
        from pydantic_ai import FunctionToolset, RunContext, Tool
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.usage import RunUsage
    except ImportError as exc:
        missing.append(f"pydantic-ai: {exc}")
    else:
        schema = Tool(add).function_schema
        validate = schema.validator.validate_json

        async def pydantic_ai_core(s: str) -> str:
            return to_json(await schema.call(validate(s), None)).decode()  # type: ignore[arg-type]

        manager_holder: list[Any] = []

        async def pydantic_ai_manager(call: Any) -> Any:
            if not manager_holder:  # for_run_step is async: made on the first call (warm-up)
                context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
                manager_holder.append(
                    await ToolManager(FunctionToolset([add])).for_run_step(context)
                )
            return await manager_holder[0].handle_call(call)

        call = ToolCallPart(tool_name="add", args=ADD_INPUT, tool_call_id="call_1")
        variants.append(
            ("pydantic-ai ToolManager.handle_call", Variant(pydantic_ai_manager, (call,)))
        )
        variants.append(
            ("pydantic-ai core (validate+call+to_json)", Variant(pydantic_ai_core, (ADD_INPUT,)))
        )

    try:
        from agents import function_tool
        from agents.tool_context import ToolContext
    except ImportError as exc:
        missing.append(f"openai-agents: {exc}")
    else:
        agents_tool = function_tool(add)
        tool_context = ToolContext(
            context=None, tool_name="add", tool_call_id="call_1", tool_arguments=ADD_INPUT
        )
        variants.append(
            (
                "openai-agents FunctionTool.on_invoke_tool",
                Variant(agents_tool.on_invoke_tool, (tool_context, ADD_INPUT)),
            )
        )

    try:
        from fastmcp.tools import Tool as McpTool
    except ImportError as exc:
        missing.append(f"fastmcp: {exc}")
    else:
        mcp_tool = McpTool.from_function(add)

        async def fastmcp_run(s: str) -> Any:
            return await mcp_tool.run(json.loads(s))

        variants.append(("fastmcp Tool.run(json.loads(s))", Variant(fastmcp_run, (ADD_INPUT,))))

    try:
        from langchain_core.tools import tool as langchain_tool
    except ImportError as exc:
        missing.append(f"langchain-core: {exc}")
    else:
        lc_tool = langchain_tool(add)

        async def langchain_invoke(s: str) -> Any:
            tool_call = {"name": "add", "args": json.loads(s), "id": "call_1", "type": "tool_call"}
            return await lc_tool.ainvoke(tool_call)

        variants.append(
            ("langchain-core ainvoke(ToolCall)", Variant(langchain_invoke, (ADD_INPUT,)))
        )

    return variants, missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    options = parser.parse_args()
    rounds = 5 if options.quick else 41
    batch_ns = (1.0 if options.quick else 10.0) * 1e6

    floor = next(c for c in bench_execute.build_cases() if c.name.startswith("T2 add")).floor
    app = App()
    variants, missing = peer_variants()
    cases = [
        Case("llm_worker execute()", None, floor, Variant(App.ToolAdd(app).execute, (ADD_INPUT,)))
    ]
    cases += [Case(label, None, floor, variant, same_output=False) for label, variant in variants]

    async def run() -> None:
        for case in cases:  # warm-up, and a look at what each returns
            print(f"  {case.name}: returns {await case.ours.fn(*case.ours.args)!r:.70}")
        await bench_execute.measure(cases, rounds, batch_ns)

    print(f"\npeers ({sys.executable}): {machine_note()}")
    anyio.run(run, backend="asyncio")
    print_table(
        "T2 add(a, b) per call, asyncio (ratio = library / the same hand-written floor)",
        bench_execute.rows_of(cases),
        "per call: floor / library (medians)",
    )
    for reason in missing:
        print(f"skipped {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
