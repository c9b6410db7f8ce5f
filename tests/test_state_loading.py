"""Run state: what a loaded state may make run, what it and
``set_history()`` must refuse, and what loading one leaves behind (``_session.py``,
``_state.py``, ``_state_json.py``).
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import json
import math
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from llm_worker import (
    Approve,
    AssistantMessage,
    Deny,
    ProviderItem,
    RunState,
    RunStateError,
    RunStateWarning,
    Skip,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

NO_OUTPUT = (
    "There is no output: no run of this worker has finished since it last started one (a "
    "paused run has its output once resume() finishes it)"
)


@tool_registry
class Files:
    """Tools that record what ran: one needs approval always, one never, one per call."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    @tool(requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a file."""
        self.ran.append(f"delete {path}")
        return f"deleted {path}"

    @tool
    async def read(self, path: str) -> str:
        """Read a file."""
        self.ran.append(f"read {path}")
        return f"content of {path}"

    @tool(requires_approval=lambda ctx: "secret" in ctx.call.input_json)
    async def fetch(self, path: str) -> str:
        """Fetch a file; a secret one needs approval."""
        self.ran.append(f"fetch {path}")
        return f"fetched {path}"


def files_worker(*script: str | ScriptedResponse, **options: object) -> tuple[Worker, Files]:
    files = Files()
    worker = Worker(ScriptedClient(list(script)), **options)  # type: ignore[arg-type]
    worker.register_tools(tool_definitions(files))
    return worker, files


PAUSING = ScriptedResponse(
    tool_calls=[
        ScriptedCall("delete", {"path": "old.log"}, id="c1"),
        ScriptedCall("read", {"path": "notes.txt"}, id="c2"),
        ScriptedCall("fetch", {"path": "public.txt"}, id="c3"),
        ScriptedCall("nope", {}, id="c4"),
    ]
)

# Without the call a policy function let through: a state of it loads exactly as it was.
SETTLED = ScriptedResponse(tool_calls=PAUSING.tool_calls[:2] + PAUSING.tool_calls[3:])


async def paused_text() -> str:
    """A paused state as a worker writes it: c1 held, c2 and c3 ready, c4 final."""
    worker, _ = files_worker(PAUSING)
    assert await worker.run("Clean up.") is WorkerResult.PAUSED
    return worker.state.to_json()


def edited(text: str, change: Callable[[dict[str, Any]], object]) -> RunState:
    document = json.loads(text)
    change(document)
    return RunState.from_json(json.dumps(document))


class TestReadyCallsOnLoad:
    @pytest.mark.anyio
    async def test_a_ready_call_to_a_tool_that_needs_approval_is_held_again(self):
        """A state that marks a call to a requires_approval tool "ready" (with other
        arguments) loads with that call held for approval: resume(Deny(...)) runs nothing."""
        with anyio.fail_after(10):
            text = await paused_text()

        def tamper(document: dict) -> None:
            document["paused"]["calls"][0].update(
                status="ready",
                reason=None,
                call={"id": "c1", "name": "delete", "input_json": '{"path": "/etc/passwd"}'},
            )
            document["paused"]["calls"][1].update(status="held", reason="a human decides")

        worker, files = files_worker("ok")
        worker.load_state(edited(text, tamper))
        assert [(p.call.id, p.call.input_json, p.reason) for p in worker.pending] == [
            ("c1", '{"path": "/etc/passwd"}', "requires approval"),
            ("c2", '{"path": "notes.txt"}', "a human decides"),
            ("c3", '{"path": "public.txt"}', "requires approval"),
        ]
        with anyio.fail_after(10):
            await worker.resume(Deny("the user gives up"))
        assert files.ran == []

    @pytest.mark.anyio
    async def test_a_ready_call_to_a_tool_with_a_policy_function_is_held_again(self):
        """A policy function is asked with the run's deps, which a load has not: the ready
        call it let through waits for a person after loading, with the arguments it has."""
        with anyio.fail_after(10):
            text = await paused_text()
        worker, files = files_worker("done")
        worker.load_state(RunState.from_json(text))
        assert [(p.call.id, p.reason) for p in worker.pending] == [
            ("c1", "requires approval"),
            ("c3", "requires approval"),
        ]
        with anyio.fail_after(10):
            await worker.resume({"c1": Deny("keep it"), "c3": Approve()})
        assert files.ran == ["read notes.txt", "fetch public.txt"]

    @pytest.mark.anyio
    async def test_a_saved_state_resumes_as_the_paused_worker_would(self):
        """A state as the worker wrote it, of tools that need no approval or always do,
        loads as it was saved (written again byte for byte) and resumes as the worker that
        paused does: its ready calls run, its held ones wait for their decisions."""
        first, first_files = files_worker(SETTLED, "done")
        with anyio.fail_after(10):
            await first.run("Clean up.")
        text = first.state.to_json()
        second, second_files = files_worker("done")
        second.load_state(RunState.from_json(text))
        assert second.state.to_json() == text
        assert second.pending == first.pending
        with anyio.fail_after(10):
            await first.resume({"c1": Approve()})
            await second.resume({"c1": Approve()})
        assert second_files.ran == first_files.ran == ["delete old.log", "read notes.txt"]
        assert second.history == first.history


class TestPausedCounts:
    @pytest.mark.anyio
    async def test_a_paused_turn_count_below_zero_is_refused(self):
        """The paused batch's turn count is a count, like every other in the format: a
        negative one is refused, naming the field."""
        with anyio.fail_after(10):
            text = await paused_text()
        with pytest.raises(RunStateError, match=r"paused\.turns"):
            edited(text, lambda document: document["paused"].update(turns=-1))


class TestMetadata:
    @pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
    def test_a_loaded_result_with_a_non_finite_number_is_refused(self, number):
        """from_json reads NaN and Infinity, which to_json cannot write: it refuses them,
        naming the call whose result holds one."""
        worker, _ = files_worker()
        result = ToolResult("c", "ok", metadata={"score": 1.5})
        worker.set_history([UserMessage("hi"), AssistantMessage("", (READ,)), result])
        text = worker.state.to_json().replace('"score": 1.5', f'"score": {number}')
        with pytest.raises(RunStateError) as info:
            RunState.from_json(text)
        assert str(info.value) == (
            "the metadata of the result of call 'c' cannot be written as JSON: Out of range "
            "float values are not JSON compliant"
        )

    @pytest.mark.parametrize(
        ("metadata", "problem"),
        [
            (datetime.date(2024, 1, 1), "Object of type date is not JSON serializable"),
            ({1, 2}, "Object of type set is not JSON serializable"),
            (b"\xff", "Object of type bytes is not JSON serializable"),
            (object(), "Object of type object is not JSON serializable"),
            ({"x": math.nan}, "Out of range float values are not JSON compliant"),
            ([math.inf], "Out of range float values are not JSON compliant"),
        ],
        ids=["date", "set", "bytes", "object", "nan", "inf"],
    )
    def test_set_history_refuses_metadata_a_state_cannot_write(self, metadata, problem):
        """Metadata to_json() could not write is refused by set_history(), naming the
        message; the history stays as it was."""
        worker, _ = files_worker()
        worker.set_history([UserMessage("before")])
        result = ToolResult("c", "r", False, (), metadata)
        with pytest.raises(RunStateError) as info:
            worker.set_history([UserMessage("a"), AssistantMessage("", (READ,)), result])
        assert str(info.value) == (
            f"history[2]: the metadata of the result of call 'c' cannot be written as JSON: "
            f"{problem}"
        )
        assert worker.history == (UserMessage("before"),)

    def test_metadata_that_is_json_is_kept(self):
        """JSON metadata passes set_history() and survives saving and loading."""
        worker, _ = files_worker()
        metadata = {"rows": [1, 2.5, None, True], "name": "x"}
        result = ToolResult("c", "r", False, (), metadata)
        worker.set_history([UserMessage("a"), AssistantMessage("", (READ,)), result])
        loaded = RunState.from_json(worker.state.to_json()).history[2]
        assert isinstance(loaded, ToolResult)
        assert loaded.metadata == metadata


READ = ToolCall("c", "read", '{"path": "x"}')


def assistant_state(item: ProviderItem) -> str:
    worker, _ = files_worker()
    worker.set_history([UserMessage("hi"), AssistantMessage("hello", provider_items=())])
    document = json.loads(worker.state.to_json())
    document["history"][1]["provider_items"] = [dataclasses.asdict(item)]
    return json.dumps(document)


BAD_ITEMS = [
    (
        "not json",
        "the 'openai' item 'reasoning' of an assistant message is not JSON text (Expecting "
        "value: line 1 column 1 (char 0))",
    ),
    (
        '{"a": NaN}',
        "the 'openai' item 'reasoning' of an assistant message is not JSON text (NaN is not JSON)",
    ),
    *[
        (
            data,
            "the 'openai' item 'reasoning' of an assistant message is JSON, but not an object "
            "(its provider's client reads it back as one)",
        )
        for data in ("[1, 2]", "null", '"text"', "5")
    ],
    (
        "[" * 100_000 + "]" * 100_000,
        "the 'openai' item 'reasoning' of an assistant message nests too deep to read",
    ),
]
BAD_ITEM_IDS = ["not-json", "nan", "array", "null", "string", "number", "nested-100k"]


class TestProviderItems:
    @pytest.mark.parametrize(("data", "problem"), BAD_ITEMS, ids=BAD_ITEM_IDS)
    def test_from_json_refuses_an_item_its_client_cannot_send_back(self, data, problem):
        """A provider item whose data is not a JSON object would fail every later request
        inside its client: from_json refuses it, naming it."""
        with pytest.raises(RunStateError) as info:
            RunState.from_json(assistant_state(ProviderItem("openai", "reasoning", data)))
        assert str(info.value) == problem

    @pytest.mark.parametrize(("data", "problem"), BAD_ITEMS, ids=BAD_ITEM_IDS)
    def test_set_history_refuses_it_too(self, data, problem):
        """set_history() refuses the same items, naming the message."""
        worker, _ = files_worker()
        message = AssistantMessage("x", provider_items=(ProviderItem("openai", "reasoning", data),))
        with pytest.raises(RunStateError) as info:
            worker.set_history([UserMessage("a"), message])
        assert str(info.value) == f"history[1]: {problem}"
        assert worker.history == ()

    def test_an_object_loads(self):
        """An item whose data is a JSON object loads, as it was."""
        item = ProviderItem("openai", "reasoning", '{"id": "r1", "summary": []}')
        message = RunState.from_json(assistant_state(item)).history[1]
        assert isinstance(message, AssistantMessage)
        assert message.provider_items == (item,)


class TestSetHistoryTypes:
    @pytest.mark.parametrize(
        ("history", "problem"),
        [
            ([UserMessage(None)], "history[0]: user.text: Input should be a valid string"),
            (
                [UserMessage("a"), AssistantMessage(None)],
                "history[1]: assistant.text: Input should be a valid string",
            ),
            (
                [UserMessage("a"), AssistantMessage("", (ToolCall(1, "t", "{}"),))],
                "history[1]: assistant.tool_calls.0.id: Input should be a valid string",
            ),
            (
                [UserMessage("a"), AssistantMessage("", (READ,)), ToolResult("c", None)],
                "history[2]: tool_result.content: Input should be a valid string",
            ),
            (
                [UserMessage("a"), AssistantMessage("", (READ,)), ToolResult("c", "r", "yes")],
                "history[2]: tool_result.is_error: Input should be a valid boolean",
            ),
            (
                [UserMessage("a"), AssistantMessage("x", stop_reason=3)],
                "history[1]: assistant.stop_reason: Input should be a valid string",
            ),
            (
                [UserMessage("a"), AssistantMessage("x", usage=Usage(-5))],
                "history[1]: assistant.usage.input_tokens: Input should be greater than or "
                "equal to 0",
            ),
            (
                [UserMessage("a"), AssistantMessage("x", usage=Usage(math.nan))],
                "history[1]: assistant.usage.input_tokens: Input should be a valid integer",
            ),
            (
                [UserMessage("a"), AssistantMessage("x", tool_calls=None)],
                "history[1]: the AssistantMessage cannot be written in a run state ("
                "'NoneType' object is not iterable)",
            ),
        ],
        ids=[
            "user-text",
            "assistant-text",
            "call-id",
            "result-content",
            "is-error",
            "stop-reason",
            "usage-negative",
            "usage-nan",
            "calls-none",
        ],
    )
    def test_a_field_of_the_wrong_type_is_refused(self, history, problem):
        """set_history() checks each message as from_json would read it back, naming the
        message and the field; the history stays as it was."""
        worker, _ = files_worker()
        worker.set_history([UserMessage("before")])
        with pytest.raises(RunStateError) as info:
            worker.set_history(history)
        assert str(info.value) == problem
        assert worker.history == (UserMessage("before"),)

    def test_what_it_keeps_reads_back(self):
        """The history set_history() keeps is the one its saved state reads back (tool
        calls given as a list are kept as a tuple)."""
        worker, _ = files_worker()
        message = AssistantMessage("", [READ], "tool_use", Usage(1, 2))  # type: ignore[arg-type]
        worker.set_history([UserMessage("a"), message, ToolResult("c", "r")])
        kept = worker.history[1]
        assert isinstance(kept, AssistantMessage)
        assert kept.tool_calls == (READ,)
        assert kept.usage == Usage(1, 2)
        assert RunState.from_json(worker.state.to_json()) == worker.state


class TestWhatLoadingLeaves:
    @pytest.mark.parametrize("replace", ["load_state", "set_history", "clear_history"])
    @pytest.mark.anyio
    async def test_the_last_answer_goes_with_its_conversation(self, replace):
        """worker.output is the last finished run's answer, until the conversation is
        replaced: then there is none until a run finishes."""
        worker, _ = files_worker("Alice's answer", "Bob's answer")
        with anyio.fail_after(10):
            await worker.run("alice asks")
        assert worker.output == "Alice's answer"
        if replace == "load_state":
            other, _ = files_worker()
            worker.load_state(other.state)
        elif replace == "set_history":
            worker.set_history([UserMessage("bob's")])
        else:
            worker.clear_history()
        with pytest.raises(WorkerStateError) as info:
            worker.output  # noqa: B018
        assert str(info.value) == NO_OUTPUT
        with anyio.fail_after(10):
            await worker.run("bob asks")
        assert worker.output == "Bob's answer"

    @pytest.mark.parametrize("method", ["set_history", "clear_history"])
    @pytest.mark.anyio
    async def test_a_paused_worker_refuses_a_new_history_naming_the_call_made(self, method):
        """clear_history() is refused while paused as set_history() is, in its own name."""
        worker, _ = files_worker(PAUSING)
        with anyio.fail_after(10):
            assert await worker.run("Clean up.") is WorkerResult.PAUSED
        replace = (
            (lambda: worker.set_history([])) if method == "set_history" else worker.clear_history
        )
        with pytest.raises(WorkerStateError) as info:
            replace()
        assert str(info.value) == (
            f"Cannot call {method}(): the worker is paused with tool calls waiting for "
            f"decisions (worker.pending); call resume(decisions) first"
        )
        assert worker.is_paused

    @pytest.mark.anyio
    async def test_a_skip_reason_survives_loading(self):
        """A paused response's skipped call keeps its Skip reason: save, load and save
        again write the same text."""
        worker, _ = files_worker(SETTLED)
        worker.add_pre_tool_call_hook(
            lambda ctx: Skip("reads are off today") if ctx.meta.name == "read" else None
        )
        with anyio.fail_after(10):
            await worker.run("go")
        text = worker.state.to_json()
        assert json.loads(text)["paused"]["calls"][1]["reason"] == "reads are off today"
        again, _ = files_worker()
        again.load_state(RunState.from_json(text))
        assert again.state.to_json() == text

    def test_the_warning_points_at_the_load_state_call(self):
        """A RunStateWarning names the line that called load_state()."""
        state = files_worker(system_prompt="one")[0].state
        other, _ = files_worker(system_prompt="two")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
            other.load_state(state)
        [warning] = caught
        assert warning.category is RunStateWarning
        assert (warning.filename, warning.lineno) == (__file__, line)


class TestToolChoiceOnLoad:
    @pytest.mark.anyio
    async def test_a_tool_choice_that_is_no_tool_is_refused(self):
        """A state's tool_choice is checked as run() checks it: one naming no tool of the
        worker is a RunStateError, and nothing is loaded."""
        with anyio.fail_after(10):
            text = await paused_text()
        state = edited(text, lambda d: d["run"].update(tool_choice="ghost_tool"))
        worker, _ = files_worker()
        with pytest.raises(RunStateError) as info:
            worker.load_state(state)
        assert str(info.value) == (
            "the state's tool_choice='ghost_tool' is neither 'auto', 'required', 'none' nor "
            "the name of a tool of this worker (its tools: 'delete', 'fetch', 'read')"
        )
        assert worker.history == ()
        assert not worker.is_paused

    @pytest.mark.anyio
    async def test_allowed_tools_naming_no_tool_are_refused(self):
        """A state's allowed_tools are checked as run() checks them: a name that is no tool
        of the worker would be offered to the model. Nothing is loaded."""
        with anyio.fail_after(10):
            text = await paused_text()
        state = edited(text, lambda d: d["run"].update(allowed_tools=["read", "ghost_tool"]))
        worker, _ = files_worker()
        with pytest.raises(RunStateError) as info:
            worker.load_state(state)
        assert str(info.value) == (
            "the state's allowed_tools names what is not a tool of this worker: 'ghost_tool' "
            "(its tools: 'delete', 'fetch', 'read')"
        )
        assert worker.history == ()
        assert not worker.is_paused
        fits = edited(text, lambda d: d["run"].update(allowed_tools=["read", "delete"]))
        worker.load_state(fits)
        assert set(worker.state.allowed_tools or ()) == {"delete", "read"}

    @pytest.mark.parametrize(
        ("tool_choice", "output_type", "native", "loads"),
        [
            ("read", None, True, True),
            ("required", None, True, True),
            ("final_result", list[int], False, True),  # the answer's tool, in this worker
            ("final_result", list[int], True, False),  # answered natively: no such tool
            ("final_result", None, False, False),  # answered as text: no such tool
        ],
        ids=["tool", "required", "answer-tool", "native-answer", "text-answer"],
    )
    def test_a_tool_choice_loads_if_a_run_of_the_worker_could_have_it(
        self, tool_choice, output_type, native, loads
    ):
        """A tool's name loads; the structured answer's tool loads into a worker that
        answers through it, and only there."""
        saved, _ = files_worker()
        saved.set_history([UserMessage("hi")])
        state = edited(saved.state.to_json(), lambda d: d["run"].update(tool_choice=tool_choice))
        files = Files()
        client = ScriptedClient(supports_output_format=native)
        worker = Worker(client, output_type=output_type)
        worker.register_tools(tool_definitions(files))
        if loads:
            worker.load_state(state)
            assert worker.state.tool_choice == tool_choice
        else:
            with pytest.raises(RunStateError, match=r"^the state's tool_choice='final_result'"):
                worker.load_state(state)


class TestApproveArguments:
    @pytest.mark.parametrize(
        "arguments",
        [
            '{"a":' * 100_000 + "1" + "}" * 100_000,
            '{"a":' * 3_000 + "1" + "}" * 3_000,
            "deep mapping",
        ],
        ids=["text-100k", "text-3000", "mapping-100k"],
    )
    @pytest.mark.anyio
    async def test_arguments_nested_too_deep_are_a_type_error(self, arguments):
        """Approve() arguments nested deeper than JSON is read or written raise TypeError
        naming the call (not RecursionError), and change nothing."""
        if arguments == "deep mapping":
            arguments = inner = {}
            for _ in range(100_000):
                inner["a"] = inner = {}
        worker, files = files_worker(
            ScriptedResponse(tool_calls=[ScriptedCall("delete", {"path": "a"}, id="c1")]), "ok"
        )
        with anyio.fail_after(10):
            await worker.run("go")
        before = worker.state.to_json()
        with pytest.raises(TypeError) as info, anyio.fail_after(10):
            await worker.resume({"c1": Approve(arguments)})
        assert str(info.value) == (
            "the arguments Approve() gives call 'c1' nest too deep to send as JSON"
        )
        assert worker.is_paused
        assert worker.state.to_json() == before
        assert files.ran == []
