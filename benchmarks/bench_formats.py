"""How the schema rewrites of ``export_tools`` scale with the size and depth of a schema.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_formats.py            # ~1 min
    .venv/bin/python benchmarks/bench_formats.py --quick    # smoke run, a few seconds

The rewrites (OpenAI strict mode, ``_strict_schema.strict_schema``; Gemini,
``_gemini_schema.gemini_schema``) are timed directly, bypassing the cache
``export_tools`` keeps, against a **floor** measured in the same run on the
same schema: ``json.loads(json.dumps(schema))``, a copy, which any rewrite
must at least make and which is linear in the schema's size. Shapes:

- ``wide N``: one object with N properties of the kinds tools have (a
  described string, an integer with a default, an optional list, an enum, a
  nested model by ``$ref``);
- ``deep D``: objects nested D levels, three properties each;
- ``reused L`` (strict only): ``$defs`` L0 ... L_L, each used twice, with a
  description, by the one before: 2**L paths through the schema (the shape that
  took 10 s at L = 16 and never finished at L = 30 before).

For each shape the table shows ``rewrite / floor`` at every size, and one
``linear?`` row: that ratio at the largest size over the ratio at the smallest.
A rewrite linear in the schema's size keeps it near 1 (target: <= 1.5x). The
smallest sizes are chosen so that the floor, some microseconds, is well above
its own fixed cost.

Two more rows time ``export_tools`` on 10,000 tools with distinct schemas,
the way a provider client or an MCP server calls it: the first strict export
(which rewrites every schema) and every later one (cached by schema text),
against parsing the 10,000 strict schemas it returns (``json.loads`` of each:
the least a call returning new dicts must do). Target for the cached export:
<= 1.5x.

Every round measures every case and its floor back to back (alternating which
goes first); a case's batch of repetitions is calibrated to ~20 ms, garbage
collection paused. The table shows the median of the per-round ratios and
their interquartile range.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from _common import format_ns, machine_note, median, print_table, ratio_row

import llm_worker._formats as formats
from llm_worker import ToolMeta, export_tools
from llm_worker._gemini_schema import gemini_schema
from llm_worker._strict_schema import strict_schema

LINEAR_TARGET = 1.5
CACHED_TARGET = 1.5


def wide(n: int) -> dict[str, Any]:
    kinds: list[dict[str, Any]] = [
        {"type": "string", "description": "What to look for"},
        {"type": "integer", "default": 10, "minimum": 1},
        {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
        {"enum": ["asc", "desc"], "type": "string"},
        {"$ref": "#/$defs/Window", "description": "When"},
    ]
    properties = {f"p{i}": kinds[i % len(kinds)] for i in range(n)}
    return {
        "type": "object",
        "properties": properties,
        "required": [f"p{i}" for i in range(0, n, 3)],
        "$defs": {
            "Window": {
                "type": "object",
                "properties": {"start": {"type": "string"}, "end": {"type": "string"}},
                "required": ["start"],
            }
        },
    }


def deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {
            "type": "object",
            "properties": {"child": schema, "name": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["child", "name"],
        }
    return schema


def reused(levels: int) -> dict[str, Any]:
    defs: dict[str, Any] = {f"L{levels}": {"type": "string"}}
    for i in range(levels - 1, -1, -1):
        ref = {"$ref": f"#/$defs/L{i + 1}", "description": f"level {i + 1}"}
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {"left": ref, "right": ref},
            "required": ["left", "right"],
        }
    return {"type": "object", "properties": {"top": {"$ref": "#/$defs/L0"}}, "$defs": defs}


def _rewrite(
    rewrite: Callable[[dict[str, Any]], object], schema: dict[str, Any]
) -> Callable[[], object]:
    return lambda: rewrite(schema)


def copy_floor(schema: dict[str, Any]) -> Callable[[], object]:
    return lambda: json.loads(json.dumps(schema))


def calibrate(func: Callable[[], object], target_ns: float) -> int:
    reps = 1
    while True:
        per_rep = time_batch(func, reps)
        if per_rep * reps >= target_ns / 4 or reps >= 1 << 20:
            return max(1, int(target_ns / max(per_rep, 1)))
        reps *= 4


def time_batch(func: Callable[[], object], reps: int) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(reps):
            func()
        return (time.perf_counter_ns() - start) / reps
    finally:
        gc.enable()


class Case:
    """One rewrite on one schema, and its floor: per-round ratios and times."""

    def __init__(
        self, label: str, ours: Callable[[], object], floor: Callable[[], object], batch_ns: float
    ) -> None:
        self.label = label
        self.ours = ours
        self.floor = floor
        self.ours_reps = calibrate(ours, batch_ns)
        self.floor_reps = calibrate(floor, batch_ns)
        self.ratios: list[float] = []
        self.ours_ns: list[float] = []
        self.floor_ns: list[float] = []

    def run(self, ours_first: bool) -> None:
        pairs = [
            (self.ours, self.ours_reps, self.ours_ns),
            (self.floor, self.floor_reps, self.floor_ns),
        ]
        for func, reps, times in pairs if ours_first else pairs[::-1]:
            times.append(time_batch(func, reps))
        self.ratios.append(self.ours_ns[-1] / self.floor_ns[-1])

    def context(self) -> str:
        return f"{format_ns(median(self.ours_ns))} vs {format_ns(median(self.floor_ns))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few rounds, small sizes")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 15)
    batch_ns = 2e6 if args.quick else 2e7
    tools = 1_000 if args.quick else 10_000

    shapes: dict[str, list[tuple[str, Callable[[], object], dict[str, Any]]]] = {
        "strict wide": [],
        "strict deep": [],
        "strict reused": [],
        "gemini wide": [],
        "gemini deep": [],
    }
    # The smallest sizes keep the floor (a JSON copy, some us) well above its fixed cost.
    widths = (100, 400) if args.quick else (100, 1_000, 4_000)  # Gemini writes at most 20,000 nodes
    depths = (16, 32) if args.quick else (16, 32, 60)
    levels = (16, 30) if args.quick else (16, 30, 100, 1000)
    for n in widths:
        schema = wide(n)
        shapes["strict wide"].append((f"strict wide {n}", _rewrite(strict_schema, schema), schema))
        shapes["gemini wide"].append((f"gemini wide {n}", _rewrite(gemini_schema, schema), schema))
    for d in depths:
        schema = deep(d)
        shapes["strict deep"].append((f"strict deep {d}", _rewrite(strict_schema, schema), schema))
        shapes["gemini deep"].append((f"gemini deep {d}", _rewrite(gemini_schema, schema), schema))
    for level in levels:
        schema = reused(level)
        shapes["strict reused"].append(
            (f"strict reused {level}", _rewrite(strict_schema, schema), schema)
        )

    cases = {
        shape: [Case(label, ours, copy_floor(schema), batch_ns) for label, ours, schema in entries]
        for shape, entries in shapes.items()
    }

    metas = [
        ToolMeta(
            name=f"tool_{i}",
            description="Look something up.",
            input_schema={**wide(5 + i % 7), "title": f"Tool{i}Args"},  # distinct schemas
        )
        for i in range(tools)
    ]
    exported = [
        json.dumps(tool["function"]["parameters"])
        for tool in export_tools(metas, "openai", strict=True)
    ]

    def export_first() -> object:
        formats._rewritten.cache_clear()  # as if these tools had never been exported
        return export_tools(metas, "openai", strict=True)

    def parse_all() -> object:
        return [json.loads(text) for text in exported]

    def export_again() -> object:
        return export_tools(metas, "openai", strict=True)

    exports = [
        Case(f"export {tools} tools again (cached)", export_again, parse_all, batch_ns),
        Case(f"export {tools} tools, first time (context)", export_first, parse_all, batch_ns),
    ]

    everything = [case for group in cases.values() for case in group] + exports
    for r in range(rounds):
        for case in everything:
            case.run(ours_first=r % 2 == 0)

    rows = []
    for shape, group in cases.items():
        for case in group:
            rows.append(ratio_row(case.label, case.ratios, None, case.context()))
        pairs = zip(group[0].ratios, group[-1].ratios, strict=True)
        growth = [last / first for first, last in pairs]
        sizes = f"{group[-1].label.rsplit(' ', 1)[1]} vs {group[0].label.rsplit(' ', 1)[1]}"
        rows.append(ratio_row(f"{shape}: linear? ({sizes})", growth, LINEAR_TARGET))
    rows.append(ratio_row(exports[0].label, exports[0].ratios, CACHED_TARGET, exports[0].context()))
    rows.append(ratio_row(exports[1].label, exports[1].ratios, None, exports[1].context()))
    print(f"bench_formats: {rounds} rounds; {machine_note()}")
    title = "rewrite / floor (a JSON copy of the same schema); export / parsing every schema"
    print_table(title, rows, "ours vs floor (median)")


if __name__ == "__main__":
    main()
