"""Import-time costs of llm_worker, each measured in fresh processes, interleaved.

Run from the repository root with the project's venv:

    .venv/bin/python benchmarks/bench_import.py            # ~1 minute
    .venv/bin/python benchmarks/bench_import.py --quick    # smoke run, a few seconds

(a) ``import llm_worker`` against ``import pydantic, anyio, docstring_parser,
    typing_extensions`` (its runtime dependencies), timed inside the process
    around the import statement; the wall time of the whole process and its
    net over ``python -c pass`` are shown as well.
(b) A generated module of 200 tools on 10 ``@tool_registry`` classes
    (``gen_tools_module.py``): its import time minus that of the same module
    without the decorator lines, against building the same 200 argument
    models and their JSON schemas eagerly by hand with ``pydantic.create_model``
    minus a module with only the imports and the nested models.
(c) ``tool_metas()`` on the 10 classes afterwards (all 200 schemas), in the
    same process as (b), against the same eager cost.

Every round starts one fresh process per variant, in a rotating order; each
process times its own work with ``perf_counter_ns`` (interpreter start-up is
not in (b) and (c)). The table gives the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _common import Row, format_ns, machine_note, median, print_table, ratio_row
from gen_tools_module import write_modules

PYTHON = sys.executable
REPO = Path(__file__).resolve().parent.parent

# (a): the statement timed inside the process.
IMPORT_VARIANTS = {
    "pass": "pass",
    "llm_worker": "import llm_worker",
    "deps": "import pydantic, anyio, docstring_parser, typing_extensions",
    # `import llm_worker` loads each module when one of its names is first used: these two
    # say what code that declares tools, and code that also runs a Worker, pays.
    "tools": "from llm_worker import tool, tool_registry, tool_definitions",
    "everything": "import llm_worker\nfor name in llm_worker.__all__: getattr(llm_worker, name)",
}
IMPORT_TEMPLATE = """\
import time
t0 = time.perf_counter_ns()
{statement}
t1 = time.perf_counter_ns()
print(t1 - t0)
"""

# (b) and (c): what every variant imports before the timer starts is the same,
# so it only takes noise out; what a module imports itself (pydantic's schema
# machinery, llm_worker's code generator) is inside the timer.
MODULE_TEMPLATE = """\
import json, sys, time
sys.path.insert(0, {directory!r})
import pydantic, llm_worker
from pydantic import BaseModel, ConfigDict, Field, create_model
from llm_worker import tool_metas
t0 = time.perf_counter_ns()
import {module} as module
t1 = time.perf_counter_ns()
metas = 0
count = 0
if {decorated!r}:
    t2 = time.perf_counter_ns()
    for cls in module.REGISTRIES:
        count += len(tool_metas(cls))
    metas = time.perf_counter_ns() - t2
print(json.dumps({{"import": t1 - t0, "metas": metas, "count": count}}))
"""

MODULE_VARIANTS = ("decorated", "plain", "eager", "base")


def run_child(code: str) -> tuple[int, str]:
    """Run ``code`` in a fresh interpreter; its wall time (ns) and its stdout."""
    start = time.perf_counter_ns()
    done = subprocess.run(
        [PYTHON, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    wall = time.perf_counter_ns() - start
    if done.returncode != 0:
        raise SystemExit(f"child process failed:\n{code}\n{done.stderr}")
    return wall, done.stdout


def rotated(names: Sequence[str], round_index: int) -> list[str]:
    shift = round_index % len(names)
    return [*names[shift:], *names[:shift]]


def bench_imports(rounds: int) -> list[Row]:
    inner: dict[str, list[int]] = {name: [] for name in IMPORT_VARIANTS}
    wall: dict[str, list[int]] = {name: [] for name in IMPORT_VARIANTS}
    for statement in IMPORT_VARIANTS.values():  # warm-up: writes .pyc files
        run_child(IMPORT_TEMPLATE.format(statement=statement))
    for round_index in range(rounds):
        for name in rotated(list(IMPORT_VARIANTS), round_index):
            elapsed, out = run_child(IMPORT_TEMPLATE.format(statement=IMPORT_VARIANTS[name]))
            wall[name].append(elapsed)
            inner[name].append(int(out))
    pairs = range(rounds)
    return [
        ratio_row(
            "(a) import llm_worker / import its 4 deps (in-process)",
            [inner["llm_worker"][i] / inner["deps"][i] for i in pairs],
            1.2,
            f"{format_ns(median(inner['llm_worker']))} / {format_ns(median(inner['deps']))}",
        ),
        ratio_row(
            "(context) from llm_worker import tool, tool_registry... / the 4 deps",
            [inner["tools"][i] / inner["deps"][i] for i in pairs],
            None,
            f"{format_ns(median(inner['tools']))} / {format_ns(median(inner['deps']))}",
        ),
        ratio_row(
            "(context) every public name of llm_worker / the 4 deps",
            [inner["everything"][i] / inner["deps"][i] for i in pairs],
            None,
            f"{format_ns(median(inner['everything']))} / {format_ns(median(inner['deps']))}",
        ),
        ratio_row(
            "(a) same, whole process wall time",
            [wall["llm_worker"][i] / wall["deps"][i] for i in pairs],
            None,
            f"{format_ns(median(wall['llm_worker']))} / {format_ns(median(wall['deps']))}"
            f" (python -c pass: {format_ns(median(wall['pass']))})",
        ),
        ratio_row(
            "(a) same, wall time net of python -c pass",
            [
                (wall["llm_worker"][i] - wall["pass"][i]) / (wall["deps"][i] - wall["pass"][i])
                for i in pairs
            ],
            None,
            f"{format_ns(median(wall['llm_worker']) - median(wall['pass']))} / "
            f"{format_ns(median(wall['deps']) - median(wall['pass']))}",
        ),
    ]


def bench_modules(rounds: int) -> list[Row]:
    directory = write_modules()
    codes = {
        name: MODULE_TEMPLATE.format(
            directory=str(directory), module=f"bench_tools_{name}", decorated=name == "decorated"
        )
        for name in MODULE_VARIANTS
    }
    imports: dict[str, list[int]] = {name: [] for name in MODULE_VARIANTS}
    metas: list[int] = []
    for name in MODULE_VARIANTS:  # warm-up: writes .pyc files, checks the 200 tools
        _, out = run_child(codes[name])
        if name == "decorated" and json.loads(out)["count"] != 200:
            raise SystemExit(f"expected 200 tools, got {out}")
    for round_index in range(rounds):
        for name in rotated(MODULE_VARIANTS, round_index):
            result = json.loads(run_child(codes[name])[1])
            imports[name].append(result["import"])
            if name == "decorated":
                metas.append(result["metas"])
    decorated_net = [d - p for d, p in zip(imports["decorated"], imports["plain"], strict=True)]
    eager_net = [e - b for e, b in zip(imports["eager"], imports["base"], strict=True)]
    pairs = range(rounds)
    return [
        ratio_row(
            "(b) 200 tools: decorators' import cost / eager pydantic",
            [decorated_net[i] / eager_net[i] for i in pairs],
            0.5,
            f"{format_ns(median(decorated_net))} / {format_ns(median(eager_net))}",
        ),
        ratio_row(
            "(c) then tool_metas() on all 10 classes / eager pydantic",
            [metas[i] / eager_net[i] for i in pairs],
            1.1,
            f"{format_ns(median(metas))} / {format_ns(median(eager_net))}",
        ),
        ratio_row(
            "(b)+(c) lazy total: import + all metas / eager pydantic",
            [(decorated_net[i] + metas[i]) / eager_net[i] for i in pairs],
            None,
            f"{format_ns(median([d + m for d, m in zip(decorated_net, metas, strict=True)]))}"
            f" / {format_ns(median(eager_net))}",
        ),
        ratio_row(
            "(context) import: decorated module / plain module",
            [imports["decorated"][i] / imports["plain"][i] for i in pairs],
            None,
            f"{format_ns(median(imports['decorated']))} / {format_ns(median(imports['plain']))}"
            f" (eager {format_ns(median(imports['eager']))},"
            f" base {format_ns(median(imports['base']))})",
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--rounds", type=int, help="processes per variant (default 25; quick 3)")
    parser.add_argument(
        "--only", choices=("a", "bc"), help="run only (a) or only (b) and (c)", default=None
    )
    options = parser.parse_args()
    rounds = options.rounds or (3 if options.quick else 25)
    print(f"bench_import: {machine_note()}")
    print(f"{rounds} fresh processes per variant, interleaved; {PYTHON}")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the children use .pyc files like users do
    if options.only in (None, "a"):
        print_table(
            "(a) import cost (ratio = ours / reference; lower is better)",
            bench_imports(rounds),
            "medians: ours / reference",
        )
    if options.only in (None, "bc"):
        print_table(
            "(b, c) 200 tools on 10 classes (ratio = ours / eager pydantic; lower is better)",
            bench_modules(rounds),
            "medians: ours / eager",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
