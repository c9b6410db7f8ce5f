"""The depth scan of a call's input (``_limits.nesting_depth``), and how often it runs.

- The scan gives the answers of a reader of JSON strings going character by character
  (``reference_depth``), and ``input_limit_problem`` those it gave before it was made
  fast (``previous_depth_problem``, its code then): on JSON, on text that only looks like
  JSON (escapes, brackets in strings, backslashes outside them, unterminated strings), and
  on JSON with a few characters changed.
- What it costs against pydantic's validation is measured by benchmarks/bench_execute.py
  (the T5 rows), not here: a timed test would fail on a busy machine, not on a slow scan.
- In a Worker's run a call's input is checked once: the generated tool skips its own check
  of the very text the worker checked against limits at least as strict. A direct call of
  the tool, and a tool with stricter limits of its own, still check.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from strategies import json_scalars
from support import hand_written, results_of

import llm_worker._codegen.runtime as runtime_module
import llm_worker._execution as execution_module
from llm_worker import (
    InvalidArgumentError,
    Limits,
    ToolServer,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker._limits import (
    WITHIN_LIMITS,
    input_limit_problem,
    nesting_depth,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

# -- references -------------------------------------------------------------------------------


def reference_depth(text: str) -> int:
    """How deep the brackets outside strings nest, read one character at a time."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def previous_depth_problem(text: str, max_depth: int) -> bool:
    """Whether ``input_limit_problem`` found ``text`` too deep before it was made fast."""
    if text.count("{") + text.count("[") > max_depth:
        depth = 0
        for bracket in _BRACKET.findall(_JSON_STRING.sub("", text)):
            depth += 1 if bracket in "[{" else -1
            if depth > max_depth:
                return True
    return False


def too_deep(limit: int) -> str:
    return f"input nests deeper than the limit of {limit} levels"


def assert_same_answers(text: str) -> None:
    """``nesting_depth`` is the reference's, and ``input_limit_problem`` says what it said
    before, at every depth limit around the text's own depth."""
    depth = reference_depth(text)
    assert nesting_depth(text) == depth
    for limit in {1, 2, max(1, depth - 1), max(1, depth), depth + 1, 64}:
        expected = too_deep(limit) if previous_depth_problem(text, limit) else None
        assert (depth > limit) == (expected is not None)
        assert input_limit_problem(text, 10**9, limit) == expected


# -- strategies -------------------------------------------------------------------------------


def json_values() -> st.SearchStrategy[Any]:
    """JSON values with strings full of what the scan must see through."""
    tricky = st.text(st.sampled_from('[]{}"\\/ aé😀\n\x00') | st.characters(), max_size=12)
    leaves = json_scalars() | tricky
    return st.recursive(
        leaves,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(tricky, children, max_size=4)
        ),
        max_leaves=40,
    )


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    value = draw(json_values())
    return json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2])),
        separators=draw(st.sampled_from([None, (",", ":")])),
    )


# Mostly the characters the scan looks at, some others (a lone surrogate too).
near_json = st.text(
    st.sampled_from('[]{}"\\') | st.sampled_from(' ,:a1\n"\\[') | st.characters(), max_size=300
)


@st.composite
def edited_json(draw: st.DrawFn) -> str:
    """A JSON text with a few characters inserted, dropped or replaced: invalid, mostly."""
    text = draw(json_texts())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        char = draw(st.sampled_from('[]{}"\\'))
        edit = draw(st.sampled_from(["insert", "drop", "replace"]))
        if edit == "insert" or at == len(text):
            text = text[:at] + char + text[at:]
        elif edit == "drop":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + char + text[at + 1 :]
    return text


# -- the scan gives the same answers ---------------------------------------------------------


class TestSameAnswers:
    @settings(max_examples=300)
    @given(json_texts())
    def test_json(self, text):
        """On any JSON text: escaped quotes and backslashes, brackets in strings, any
        characters, any layout."""
        assert_same_answers(text)

    @settings(max_examples=300)
    @given(near_json)
    @example('\\"[[[')  # a backslash outside a string: the quote after it starts one
    @example('"a"\\"]]"[[[')  # ... and the one after that ends it
    @example('[[\\\\"[[[')
    @example('"\\')  # an unterminated string ending in a backslash
    @example('"[[\\"[[')  # an unterminated string holding an escaped quote
    @example('""""[[""[')
    @example("]]][[")
    @example("]\\[")  # the backslash is no step: 0 deep
    @example('"{"": null, "}": null, "\\[u001f": null}')
    @example("\ud800[[")  # a lone surrogate
    def test_text_that_looks_like_json(self, text):
        """On any text at all, invalid JSON included: a reader of strings' answer."""
        assert_same_answers(text)

    @settings(max_examples=300)
    @given(edited_json())
    def test_json_with_a_few_characters_changed(self, text):
        """On JSON broken here and there (a quote dropped, a backslash added)."""
        assert_same_answers(text)

    @settings(max_examples=200)
    @given(st.text(st.sampled_from("[]{}"), max_size=400))
    @example(("[" * 60 + "]" * 60) * 10)  # dips too deep to drop a level a pass
    @example(("[" * 65 + "]" * 65) * 10)
    @example("[" + "[]," * 300 + "]")
    @example("]" * 10 + "[" * 70)
    def test_brackets_alone(self, text):
        """Brackets only: how deep they get whatever their order."""
        assert_same_answers(text)

    @pytest.mark.parametrize("depth", [63, 64, 65, 200])
    def test_deep_json_around_the_default_limit(self, depth):
        """Arrays and objects nested around 64 levels, each with strings of brackets."""
        value: Any = "]}"
        for level in range(depth):
            value = {"k[": value, "s": '"{[', "n": level} if level % 2 else [value, "\\"]
        text = json.dumps(value)
        assert nesting_depth(text) == depth
        assert_same_answers(text)


# -- a large valid call (what it costs is measured in benchmarks/bench_execute.py, T5) ---------


class Item(BaseModel):
    name: str
    qty: int
    tags: list[str]


@tool_registry
class Store:
    def __init__(self) -> None:
        self.added = 0

    @tool
    async def add_items(self, items: list[Item]) -> int:
        """Add items to the store."""
        self.added += len(items)
        return len(items)


def items_input(size: int) -> str:
    """A valid ``add_items`` input of about ``size`` characters (200 items for 10 000)."""
    count = size // 50
    items = [{"name": f"item {n}", "qty": n, "tags": ["a", "b"]} for n in range(count)]
    return json.dumps({"items": items})


# -- a Worker's call is checked once -------------------------------------------------------------


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts ``input_limit_problem`` is asked about, by the worker and by generated tools."""
    texts: list[str] = []
    for module in (execution_module, runtime_module):
        real = module.input_limit_problem

        def counting(text: str, max_bytes: int, max_depth: int, real: Any = real) -> str | None:
            texts.append(text)
            return real(text, max_bytes, max_depth)

        monkeypatch.setattr(module, "input_limit_problem", counting)
    return texts


async def run_one(worker: Worker[Any, Any], client: ScriptedClient, name: str, text: str) -> str:
    client.add(ScriptedResponse(tool_calls=[ScriptedCall(name, text)]), "done")
    with anyio.fail_after(10):
        result = await worker.run("go")
    assert result is WorkerResult.FINISHED
    return results_of(worker.history)[-1].content


@pytest.mark.anyio
async def test_a_worker_checks_a_call_input_once(checks):
    """A 10 KB input with 400 brackets is checked by the worker, not again by the tool
    (the same default limits)."""
    text = items_input(10_000)
    client = ScriptedClient()
    worker = Worker(client)
    store = Store()
    worker.register_tools(tool_definitions(store))
    assert await run_one(worker, client, "add_items", text) == "200"
    assert checks.count(text) == 1
    assert store.added == 200


@pytest.mark.anyio
async def test_stricter_worker_limits_spare_the_tool_its_check(checks):
    """The worker's limits stricter than the tool's: what the tool would check is known."""
    text = items_input(10_000)
    client = ScriptedClient()
    worker = Worker(client, limits=Limits(max_input_bytes=20_000, max_input_depth=10))
    worker.register_tools(tool_definitions(Store()))
    assert await run_one(worker, client, "add_items", text) == "200"
    assert checks.count(text) == 1


@tool_registry
class Strict:
    """The same tool, with a tighter depth limit of its own than any worker's here."""

    @tool(max_input_depth=2)
    async def add_items(self, items: list[Item]) -> int:
        """Add items to the store."""
        return len(items)


@pytest.mark.anyio
async def test_a_tool_with_stricter_limits_checks_in_a_worker(checks):
    """The worker's check (64 levels) does not stand for the tool's own (2 levels)."""
    text = items_input(2_000)
    client = ScriptedClient()
    worker = Worker(client)
    worker.register_tools(tool_definitions(Strict()))
    content = await run_one(worker, client, "add_items", text)
    assert content == f"Invalid argument: {too_deep(2)}"
    assert checks.count(text) == 2


class Forwarder:
    """A hand-written tool that hands its very input text to a generated tool."""

    def __init__(self, target: Any) -> None:
        self.target = target

    async def execute(self, input_json: str) -> str:
        return str(await self.target.execute(input_json))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(Store.ToolAddItems(Store()), "200", id="as-strict"),
        pytest.param(
            Strict.ToolAddItems(Strict()), f"Invalid argument: {too_deep(2)}", id="tighter"
        ),
    ],
)
async def test_a_call_a_tool_makes_with_the_same_text_is_checked_as_its_limits_say(
    target, expected
):
    """Inside a worker's call the text is known within the worker's limits: a tool called with
    it and limits no stricter runs, one with stricter limits refuses it (as it would alone)."""
    client = ScriptedClient()
    worker = Worker(client)
    worker.register_tools([hand_written("forward", Forwarder(target))])
    assert await run_one(worker, client, "forward", items_input(10_000)) == expected


@pytest.mark.anyio
async def test_direct_callers_still_check(checks):
    """A direct call of the tool, ``call_tool``, and a call after a worker's run (the mark
    lasts the call only) all check the input themselves."""
    text = items_input(10_000)
    deep = '{"items": ' + "[" * 70 + "]" * 70 + "}"
    tool_object = Store.ToolAddItems(Store())
    server = ToolServer()
    server.register_tools(tool_definitions(Store()))
    client = ScriptedClient()
    worker = Worker(client)
    worker.register_tools(tool_definitions(Store()))
    with anyio.fail_after(10):
        assert await run_one(worker, client, "add_items", text) == "200"
        assert WITHIN_LIMITS.get() is None
        checks.clear()
        assert await tool_object.execute(text) == "200"
        assert await server.handle().call_tool("add_items", text) == "200"
        assert checks == [text, text]
        with pytest.raises(InvalidArgumentError, match=re.escape(too_deep(64))):
            await tool_object.execute(deep)
