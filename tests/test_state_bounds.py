"""Run state bounds: what a state may hold so that it always saves and loads, and how
much of a hostile state an error message repeats (``_state_json.py``, ``_state.py``,
``_session.py``, ``_response.py``, ``_content.py``).

- Counts are at most ``MAX_COUNT`` (2**63 - 1): a larger one does not load, a client
  may not report one, and the run's totals stop there.
- A result's metadata nests at most ``MAX_METADATA_DEPTH`` (100) levels: deeper is
  refused where it enters, and the deepest allowed round-trips.
- A ``RunStateError`` shows the state's ids and names cut to 80 characters.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from support import assert_history_valid

from llm_worker import (
    Approve,
    AssistantMessage,
    HookError,
    LlmClientError,
    RunState,
    RunStateError,
    ToolCall,
    ToolResult,
    ToolReturn,
    Usage,
    UserMessage,
    Worker,
    WorkerStateError,
    tool,
    tool_registry,
)
from llm_worker._content import MAX_METADATA_DEPTH, check_metadata
from llm_worker._conversation import MAX_COUNT
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

BIG = "X" * 1_000_000  # a hostile state's id or name
SHOWN_BIG = "'" + "X" * 76 + "..."  # as an error message shows it: 80 characters


def nested(depth: int) -> list[Any]:
    """A list ``depth`` levels deep: ``nested(1) == []``, ``nested(2) == [[]]``."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def nested_dict(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


class Lookup:
    """What the tool's ToolReturn carries as metadata."""

    metadata: Any = None


@tool_registry
class Files:
    @tool(requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    @tool
    async def lookup(self, q: str) -> ToolReturn:
        """Look something up."""
        return ToolReturn(f"found {q}", metadata=Lookup.metadata)


def make_worker(*script: str | ScriptedResponse) -> Worker:
    worker = Worker(ScriptedClient(list(script)))
    files = Files()
    worker.register_tools([files.delete.definition(), files.lookup.definition()])
    return worker


async def paused_with_lookup(metadata: Any) -> Worker:
    """A worker paused on ``delete`` (``c1``), its ``lookup`` (``c0``, returning
    ``metadata``) ready to run on resume."""
    Lookup.metadata = metadata
    worker = make_worker(
        ScriptedResponse(
            tool_calls=[
                ScriptedCall("lookup", {"q": "x"}, id="c0"),
                ScriptedCall("delete", {"path": "a"}, id="c1"),
            ]
        )
    )
    with anyio.fail_after(5):
        await worker.run("go")
    assert [p.call.id for p in worker.pending] == ["c1"]
    return worker


def with_final_lookup(doc: dict[str, Any], metadata: Any) -> str:
    """``doc`` (of ``paused_with_lookup``) with ``c0`` final, its result holding
    ``metadata``: the deepest place a state keeps metadata,
    ``paused.calls[0].result.metadata``."""
    doc["paused"]["calls"][0].update(
        status="final",
        outcome="ran",
        result={"call_id": "c0", "content": "found x", "is_error": False, "metadata": metadata},
    )
    return json.dumps(doc)


async def paused_doc() -> dict[str, Any]:
    """The JSON data of a state paused on call ``c1`` to ``delete``."""
    worker = make_worker(
        ScriptedResponse(tool_calls=[ScriptedCall("delete", {"path": "a"}, id="c1")])
    )
    with anyio.fail_after(5):
        await worker.run("go")
    return json.loads(worker.state.to_json())


def saved_paused_state() -> dict[str, Any]:
    return anyio.run(paused_doc)


# -- counts ------------------------------------------------------------------------------


def test_the_count_bound_is_a_signed_64_bit_int():
    assert MAX_COUNT == 2**63 - 1 == 9223372036854775807


COUNT_FIELDS: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str]] = [
    ("usage.input_tokens", lambda d: d["usage"], "input_tokens"),
    ("usage.requests", lambda d: d["usage"], "requests"),
    ("run.usage.tool_calls", lambda d: d["run"]["usage"], "tool_calls"),
    ("run.usage.reasoning_tokens", lambda d: d["run"]["usage"], "reasoning_tokens"),
    ("paused.turns", lambda d: d["paused"], "turns"),
    ("paused.output_attempts", lambda d: d["paused"], "output_attempts"),
]


@pytest.mark.parametrize(("where", "holder", "key"), COUNT_FIELDS, ids=[f[0] for f in COUNT_FIELDS])
@pytest.mark.parametrize("value", [MAX_COUNT + 1, int("9" * 4300)], ids=["bound+1", "4300-digits"])
def test_a_state_with_a_count_over_the_bound_does_not_load(where, holder, key, value):
    """A 4 300-digit count loaded, and once the next response added to it, to_json()
    raised a bare ValueError (Python's int-to-text limit): the run could not be saved."""
    doc = saved_paused_state()
    holder(doc)[key] = value
    with pytest.raises(RunStateError) as caught:
        RunState.from_json(json.dumps(doc))
    assert str(caught.value) == (
        f"Not a valid run state: {where}: Input should be less than or equal to 9223372036854775807"
    )


def test_a_response_usage_in_the_history_over_the_bound_does_not_load():
    doc = saved_paused_state()
    doc["history"][1]["usage"] = {
        "input_tokens": 1,
        "output_tokens": MAX_COUNT + 1,
        "cached_input_tokens": 0,
        "reasoning_tokens": 0,
    }
    with pytest.raises(RunStateError, match=r"history\.1\.assistant\.usage\.output_tokens: "):
        RunState.from_json(json.dumps(doc))


@pytest.mark.anyio
async def test_counts_at_the_bound_load_and_stay_there_as_the_run_goes_on():
    """The largest counts load; the run's totals stop at them (a sum past the bound would
    write a state no from_json reads), and the state still saves and loads."""
    doc = await paused_doc()
    for usage in (doc["usage"], doc["run"]["usage"]):
        usage.update(requests=MAX_COUNT, tool_calls=MAX_COUNT, input_tokens=MAX_COUNT)
    state = RunState.from_json(json.dumps(doc))
    assert state.usage.input_tokens == MAX_COUNT
    worker = make_worker(ScriptedResponse("done", usage=Usage(input_tokens=5, output_tokens=7)))
    worker.load_state(state)
    with anyio.fail_after(5):
        await worker.resume({"c1": Approve()})
    assert worker.final_text == "done"
    for usage in (worker.usage, worker.run_usage):
        assert (usage.requests, usage.tool_calls, usage.input_tokens) == (MAX_COUNT,) * 3
        assert usage.output_tokens == 7
    again = RunState.from_json(worker.state.to_json())
    assert again == worker.state


@pytest.mark.anyio
async def test_responses_whose_counts_add_up_past_the_bound_are_kept_at_it():
    """Each response's counts within the bound, their sum not: the total is the bound."""
    worker = make_worker(
        ScriptedResponse(
            tool_calls=[ScriptedCall("lookup", {"q": "x"})],
            usage=Usage(input_tokens=MAX_COUNT, cached_input_tokens=2**62 + 1),
        ),
        ScriptedResponse("done", usage=Usage(input_tokens=MAX_COUNT, cached_input_tokens=2**62)),
    )
    with anyio.fail_after(5):
        await worker.run("go")
    assert worker.usage.input_tokens == worker.run_usage.input_tokens == MAX_COUNT
    assert worker.usage.cached_input_tokens == MAX_COUNT
    assert worker.usage.requests == 2
    assert RunState.from_json(worker.state.to_json()) == worker.state


USAGE_OVER = (
    "LlmClient sent a Completion whose usage.{} is over 9223372036854775807 (2**63 - 1, the "
    "most a run state keeps): {} (int)"
)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("usage", "message"),
    [
        pytest.param(
            Usage(output_tokens=MAX_COUNT + 1),
            USAGE_OVER.format("output_tokens", "9223372036854775808"),
            id="bound+1",
        ),
        pytest.param(
            Usage(input_tokens=10**4300),
            USAGE_OVER.format("input_tokens", "<int of 14285 bits>"),
            id="4301-digits",
        ),
    ],
)
async def test_a_client_reporting_a_count_over_the_bound_is_refused(usage, message):
    """As a negative count is: LlmClientError naming the field, nothing of the response
    in the history, and the conversation still saves (the count was kept, and to_json()
    failed)."""
    worker = make_worker(ScriptedResponse("hi", usage=usage))
    with anyio.fail_after(5), pytest.raises(LlmClientError) as caught:
        await worker.run("go")
    assert str(caught.value) == message
    assert [type(m) for m in worker.history] == [UserMessage]
    assert RunState.from_json(worker.state.to_json()) == worker.state


@pytest.mark.anyio
async def test_a_client_reporting_the_bound_is_taken():
    worker = make_worker(ScriptedResponse("hi", usage=Usage(reasoning_tokens=MAX_COUNT)))
    with anyio.fail_after(5):
        await worker.run("go")
    assert worker.usage.reasoning_tokens == MAX_COUNT
    assert RunState.from_json(worker.state.to_json()) == worker.state


# -- metadata depth ----------------------------------------------------------------------

DEEPER = f"it nests deeper than {MAX_METADATA_DEPTH} levels, more than a run state keeps"


def test_the_metadata_depth_bound_is_100():
    assert MAX_METADATA_DEPTH == 100


@pytest.mark.parametrize("make", [nested, nested_dict], ids=["lists", "dicts"])
def test_check_metadata_takes_100_levels_and_refuses_101(make):
    check_metadata(make(MAX_METADATA_DEPTH))
    check_metadata({"wide": [nested(MAX_METADATA_DEPTH - 2)] * 50})  # 100 deep, many brackets
    with pytest.raises(ValueError, match=f"^{DEEPER}$"):
        check_metadata(make(MAX_METADATA_DEPTH + 1))
    with pytest.raises(ValueError, match=f"^{DEEPER}$"):
        check_metadata({"ok": [1, 2], "deep": [{"x": make(MAX_METADATA_DEPTH)}]})


def test_check_metadata_still_names_what_is_not_json():
    with pytest.raises(TypeError, match="not JSON serializable"):
        check_metadata({"at": {1, 2}})
    with pytest.raises(ValueError, match="nests too deep to write as JSON"):
        check_metadata(nested(100_000))


@pytest.mark.anyio
@pytest.mark.parametrize("make", [nested, nested_dict], ids=["lists", "dicts"])
async def test_the_deepest_metadata_allowed_round_trips(make):
    """100 levels of metadata from a tool, in the history, and in a paused call's result
    (the deepest place a state keeps it): to_json(), from_json() and load_state() keep
    it as it was."""
    metadata = make(MAX_METADATA_DEPTH)
    first = await paused_with_lookup(metadata)
    state = RunState.from_json(first.state.to_json())
    second = make_worker("Done.")
    second.load_state(state)
    with anyio.fail_after(5):
        await second.resume({"c1": Approve()})
    kept = second.history[2]
    assert isinstance(kept, ToolResult)
    assert (kept.call_id, kept.content, kept.is_error) == ("c0", "found x", False)
    assert kept.metadata == metadata
    saved = second.state.to_json()
    again = RunState.from_json(saved)
    assert again == second.state
    assert again.to_json() == saved
    third = make_worker()
    third.load_state(again)
    assert third.history == second.history

    paused = RunState.from_json(with_final_lookup(json.loads(state.to_json()), metadata))
    result = paused.paused_calls[0].result
    assert result is not None
    assert result.metadata == metadata
    assert RunState.from_json(paused.to_json()) == paused
    fourth = make_worker("Done.")
    fourth.load_state(paused)
    assert fourth.state == paused
    with anyio.fail_after(5):
        await fourth.resume({"c1": Approve()})
    assert fourth.history[2].metadata == metadata  # type: ignore[union-attr]
    assert RunState.from_json(fourth.state.to_json()) == fourth.state


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [MAX_METADATA_DEPTH + 1, 220])
async def test_a_tool_returning_deeper_metadata_gets_the_bad_tool_return_result(depth):
    """220 levels were kept and saved, but the saved state did not load (pydantic's JSON
    parser reads 200 levels): the conversation was lost. Now it is the tool's bug, as
    metadata that is not JSON is: the model reads the "cannot be sent" result."""
    Lookup.metadata = nested(depth)
    worker = make_worker(ScriptedResponse(tool_calls=[ScriptedCall("lookup", {"q": "x"})]), "ok")
    with anyio.fail_after(5):
        await worker.run("go")
    result = worker.history[2]
    assert isinstance(result, ToolResult)
    assert result == ToolResult(
        result.call_id,
        "Internal error: tool 'lookup' returned a ToolReturn that cannot be sent "
        "(ValueError), not text",
        True,
    )
    assert result.metadata is None
    assert RunState.from_json(worker.state.to_json()) == worker.state


@pytest.mark.anyio
async def test_call_tool_refuses_deeper_metadata_as_the_worker_does():
    from llm_worker import ToolExecutionError

    Lookup.metadata = nested(MAX_METADATA_DEPTH + 1)
    handle = make_worker()._session.handle
    with anyio.fail_after(5), pytest.raises(ToolExecutionError, match="cannot be sent"):
        await handle.call_tool("lookup", '{"q": "x"}')


@pytest.mark.parametrize("depth", [MAX_METADATA_DEPTH + 1, 500])
def test_set_history_refuses_deeper_metadata(depth):
    worker = make_worker()
    with pytest.raises(RunStateError) as caught:
        worker.set_history(
            [
                UserMessage("hi"),
                AssistantMessage("", (ToolCall("a", "lookup", "{}"),)),
                ToolResult("a", "ok", False, (), nested(depth)),
            ]
        )
    assert str(caught.value) == (
        f"history[2]: the metadata of the result of call 'a' cannot be written as JSON: {DEEPER}"
    )
    assert worker.history == ()


def test_set_history_takes_the_deepest_metadata_allowed_and_it_round_trips():
    worker = make_worker()
    history = [
        UserMessage("hi"),
        AssistantMessage("", (ToolCall("a", "lookup", "{}"),)),
        ToolResult("a", "ok", False, (), nested(MAX_METADATA_DEPTH)),
    ]
    worker.set_history(history)
    state = RunState.from_json(worker.state.to_json())
    assert state == worker.state
    other = make_worker()
    other.load_state(state)
    assert list(other.history) == history


@pytest.mark.anyio
async def test_a_post_hook_giving_deeper_metadata_is_the_hooks_error():
    Lookup.metadata = None
    worker = make_worker(ScriptedResponse(tool_calls=[ScriptedCall("lookup", {"q": "x"})]), "ok")

    def annotate(ctx):
        ctx.result = dataclasses.replace(ctx.result, metadata=nested(MAX_METADATA_DEPTH + 1))

    worker.add_post_tool_call_hook(annotate)
    with anyio.fail_after(5), pytest.raises(HookError) as caught:
        await worker.run("go")
    assert str(caught.value) == (
        f"post_tool_call hook {annotate.__qualname__} failed: "
        f"set ctx.result's metadata to what is not JSON ({DEEPER})"
    )
    assert_history_valid(worker.history)
    assert RunState.from_json(worker.state.to_json()) == worker.state


@pytest.mark.anyio
async def test_a_state_holding_deeper_metadata_does_not_load():
    """Metadata 150 levels deep, which pydantic's parser reads, but no worker writes: what
    loads is what a worker could have saved."""
    worker = await paused_with_lookup(None)
    text = with_final_lookup(json.loads(worker.state.to_json()), nested(150))
    with pytest.raises(RunStateError) as caught:
        RunState.from_json(text)
    assert str(caught.value) == (
        f"the metadata of the result of call 'c0' cannot be written as JSON: {DEEPER}"
    )


# -- bounded error messages --------------------------------------------------------------


def _missing_tool(doc: dict[str, Any]) -> None:
    doc["history"][1]["tool_calls"][0]["name"] = BIG
    doc["paused"]["calls"][0]["call"]["name"] = BIG


HOSTILE_EDITS: list[Any] = [
    pytest.param(
        _missing_tool,
        True,
        f"paused call 'c1' is to tool {SHOWN_BIG}, which this worker does not have "
        f"(register the same tools before load_state())",
        id="paused-call-to-a-missing-tool",
    ),
    pytest.param(
        lambda d: d["history"].append(
            {"type": "tool_result", "call_id": BIG, "content": "", "is_error": False}
        ),
        False,
        None,
        id="orphan-result",
    ),
    pytest.param(
        lambda d: d["run"].__setitem__("tool_choice", BIG),
        True,
        f"the state's tool_choice={SHOWN_BIG} is neither 'auto', 'required', 'none' nor the "
        f"name of a tool of this worker (its tools: 'delete', 'lookup')",
        id="tool-choice",
    ),
    pytest.param(
        lambda d: d["run"].__setitem__("allowed_tools", [BIG + str(i) for i in range(12)]),
        True,
        "the state's allowed_tools names what is not a tool of this worker: "
        + ", ".join([SHOWN_BIG] * 10)
        + " and 2 more (its tools: 'delete', 'lookup')",
        id="allowed-tools",
    ),
    pytest.param(
        lambda d: d["history"][1].__setitem__(
            "provider_items", [{"provider": BIG, "kind": BIG, "data": "[]"}]
        ),
        False,
        f"the {SHOWN_BIG} item {SHOWN_BIG} of an assistant message is JSON, but not an object "
        f"(its provider's client reads it back as one)",
        id="provider-item",
    ),
    pytest.param(
        lambda d: d["run"].__setitem__("trace_link", {BIG: "v"}),
        False,
        None,
        id="trace-link-key",
    ),
    pytest.param(
        lambda d: d["history"][0].__setitem__("type", BIG),
        False,
        None,
        id="message-type-tag",
    ),
    pytest.param(
        lambda d: d.__setitem__("version", int("9" * 4000)),
        False,
        f"Not a valid run state: format version {'9' * 18}...{'9' * 19} is not supported "
        f"(this llm-worker reads version 1)",
        id="version",
    ),
]


@pytest.mark.parametrize(("edit", "load", "message"), HOSTILE_EDITS)
def test_a_hostile_state_gets_a_short_error_message(edit, load, message):
    """A 1 MB id or name in a state gave a 1 MB RunStateError (3 MB for three
    allowed_tools), in every log line of it: each is shown cut to 80 characters."""
    doc = saved_paused_state()
    edit(doc)
    text = json.dumps(doc)
    if load:  # read, but no worker can continue it
        state = RunState.from_json(text)
        with pytest.raises(RunStateError) as caught:
            make_worker().load_state(state)
    else:
        with pytest.raises(RunStateError) as caught:
            RunState.from_json(text)
    text = str(caught.value)
    assert len(text) < 1_000, text[:300]
    if message is not None:
        assert text == message


def test_the_shared_call_id_message_is_cut():
    doc = saved_paused_state()
    call = {"id": BIG, "name": "delete", "input_json": "{}"}
    doc["history"][1]["tool_calls"] = [call, call]
    doc["paused"] = None
    with pytest.raises(RunStateError) as caught:
        RunState.from_json(json.dumps(doc))
    assert str(caught.value) == f"history[1]: two tool calls share the id {SHOWN_BIG}"


def test_a_call_without_its_result_is_named_cut_short():
    doc = saved_paused_state()
    doc["history"][1]["tool_calls"][0].update(id=BIG, name=BIG)
    doc["paused"] = None
    with pytest.raises(RunStateError) as caught:
        RunState.from_json(json.dumps(doc))
    assert str(caught.value) == (
        f"history[1]: tool call {SHOWN_BIG} ({SHOWN_BIG}) has no result (each call is "
        f"followed by its ToolResult, in call order)"
    )


@pytest.mark.anyio
async def test_resume_names_a_loaded_states_pending_ids_cut_short():
    """A loaded state's call ids are the state's text too: resume()'s errors about them
    show each cut to 80 characters."""
    doc = await paused_doc()
    doc["history"][1]["tool_calls"][0]["id"] = BIG
    doc["paused"]["calls"][0]["call"]["id"] = BIG
    worker = make_worker("done")
    worker.load_state(RunState.from_json(json.dumps(doc)))
    with anyio.fail_after(5), pytest.raises(WorkerStateError) as caught:
        await worker.resume({"other": Approve()})
    assert str(caught.value) == (
        f"resume() got decisions for calls that are not pending: 'other' (pending: {SHOWN_BIG})"
    )
