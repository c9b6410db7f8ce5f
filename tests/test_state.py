"""Run state (``_state.py``, ``_state_json.py``): a conversation as one JSON value, checked
on the way in, continued in another worker (and another process).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import Lab, assert_history_valid, calls, make_worker, results_of

from llm_worker import (
    Approve,
    AssistantMessage,
    DataPart,
    Deny,
    Limits,
    ProviderItem,
    RunState,
    RunStateError,
    RunStateWarning,
    RunUsage,
    ToolCall,
    ToolResult,
    Usage,
    UsageLimitExceededError,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
)
from llm_worker._events import ToolCallOutcome
from llm_worker._state import PausedCall
from llm_worker.testing import ScriptedClient, ScriptedResponse

ROOT = Path(__file__).resolve().parent.parent


async def paused_worker(client: ScriptedClient) -> tuple[Worker, Lab]:
    worker, lab = make_worker(client)
    worker.add_pre_tool_call_hook(
        lambda ctx: None if ctx.call.name == "echo" and "ok" in ctx.call.input_json else _pause()
    )
    assert await worker.run("go") is WorkerResult.PAUSED
    return worker, lab


def _pause():
    from llm_worker import Pause

    return Pause("a human decides")


def state_of(history, paused=None, turns=0, **fields) -> RunState:
    defaults = {
        "run_usage": RunUsage(),
        "usage": RunUsage(),
        "tool_choice": "auto",
        "allowed_tools": None,
        "fingerprint": "sha256:x",
    }
    return RunState(history=history, paused=paused, turns=turns, **{**defaults, **fields})


CALL_A = ToolCall("a", "echo", '{"text": "1"}')
CALL_B = ToolCall("b", "echo", '{"text": "2"}')


class TestRoundTrip:
    @pytest.mark.anyio
    async def test_the_response_id_and_model_are_kept(self):
        """The provider's response id and model reach the history and survive save/load;
        a state written without them (before they existed) still loads."""
        client = ScriptedClient([ScriptedResponse("hi", response_id="r1", model="m-2025")])
        worker = Worker(client)
        await worker.run("go")
        answer = worker.history[-1]
        assert isinstance(answer, AssistantMessage)
        assert (answer.response_id, answer.model) == ("r1", "m-2025")
        text = worker.state.to_json()
        loaded = RunState.from_json(text).history[-1]
        assert isinstance(loaded, AssistantMessage)
        assert (loaded.response_id, loaded.model) == ("r1", "m-2025")
        document = json.loads(text)
        for message in document["history"]:
            message.pop("response_id", None)
            message.pop("model", None)
        older = RunState.from_json(json.dumps(document)).history[-1]
        assert isinstance(older, AssistantMessage)
        assert (older.response_id, older.model) == (None, None)
        assert older == answer  # they are the provider's account: equality ignores them
        # ... but a state keeps them, so states differing only in them differ
        assert RunState.from_json(json.dumps(document)) != RunState.from_json(text)
        assert RunState.from_json(text) == RunState.from_json(text)

    @pytest.mark.anyio
    async def test_a_paused_run_round_trips(self):
        """A paused run's state written to JSON and read back is the same state."""
        client = ScriptedClient(
            [calls(("echo", {"text": "ok"}), ("echo", {"text": "delete"}), ("nope", {})), "done"]
        )
        worker, _ = await paused_worker(client)
        state = worker.state
        text = state.to_json()
        again = RunState.from_json(text)
        assert again == state
        assert again.to_json() == text
        assert again.pending_call_ids == ("call_0_1",)
        assert again.is_paused
        document = json.loads(text)
        assert document["format"] == "llm-worker.run-state"
        assert document["version"] == 1
        assert [c["status"] for c in document["paused"]["calls"]] == ["ready", "held", "final"]

    @pytest.mark.anyio
    async def test_load_and_resume_in_a_new_worker(self):
        """A new worker with the same tools loads the state and resumes: each call runs once,
        and the model's answer comes after both decisions."""
        client = ScriptedClient(
            [
                calls(
                    ("echo", {"text": "ok"}), ("echo", {"text": "first"}), ("echo", {"text": "x"})
                ),
                "done",
            ]
        )
        worker, lab = await paused_worker(client)
        text = worker.state.to_json()
        again, new_lab = make_worker(client)
        again.load_state(RunState.from_json(text))
        assert again.is_paused
        assert [p.call.id for p in again.pending] == ["call_0_1", "call_0_2"]
        result = await again.resume({"call_0_1": Approve(), "call_0_2": Deny("not x")})
        assert result is WorkerResult.FINISHED
        assert lab.log == []
        assert new_lab.log == ["echo ok", "echo first"]
        assert results_of(again.history)[2].content == (
            "Tool call 'echo' was denied; it did not run: not x"
        )
        assert_history_valid(again.history)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def test_random_valid_states_round_trip(self, data):
        """Any state a worker could be in writes to JSON and reads back exactly."""
        state = data.draw(valid_states())
        assert RunState.from_json(state.to_json()) == state


texts = st.text(max_size=8)
ids = st.text("abcdef0123", min_size=1, max_size=4)
usages = st.builds(Usage, *[st.integers(0, 10**6)] * 4) | st.none()
run_usages = st.builds(RunUsage, *[st.integers(0, 10**6)] * 6)
provider_items = st.builds(
    ProviderItem,
    st.sampled_from(["anthropic", "openai"]),
    st.sampled_from(["thinking", "reasoning"]),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3)).map(json.dumps),
)


@st.composite
def calls_of(draw: st.DrawFn, min_size: int = 0) -> tuple[ToolCall, ...]:
    call_ids = draw(st.lists(ids, min_size=min_size, max_size=3, unique=True))
    return tuple(ToolCall(i, draw(st.sampled_from(["echo", "nap"])), draw(texts)) for i in call_ids)


@st.composite
def valid_states(draw: st.DrawFn) -> RunState:
    history: list = []
    for _ in range(draw(st.integers(0, 4))):
        history.append(UserMessage(draw(texts)))
        message_calls = draw(calls_of())
        items = draw(st.lists(provider_items, max_size=2).map(tuple))
        history.append(
            AssistantMessage(
                draw(texts), message_calls, draw(st.none() | texts), draw(usages), items
            )
        )
        history.extend(ToolResult(c.id, draw(texts), draw(st.booleans())) for c in message_calls)
    paused = None
    if draw(st.booleans()):
        pending_calls = draw(calls_of(min_size=1))
        history.append(AssistantMessage("", pending_calls, "tool_use"))
        statuses = draw(
            st.lists(
                st.sampled_from(["ready", "held", "final"]),
                min_size=len(pending_calls),
                max_size=len(pending_calls),
            ).filter(lambda s: "held" in s)
        )
        paused = [
            PausedCall(
                call,
                status,
                draw(texts.filter(bool)) if status == "held" else None,
                ToolResult(call.id, draw(texts), True) if status == "final" else None,
                draw(st.sampled_from(list(ToolCallOutcome))) if status == "final" else None,
            )
            for call, status in zip(pending_calls, statuses, strict=True)
        ]
    return state_of(
        history,
        paused,
        turns=draw(st.integers(0, 10)),
        run_usage=draw(run_usages),
        usage=draw(run_usages),
        tool_choice=draw(st.sampled_from(["auto", "none", "required", "echo"])),
        allowed_tools=draw(st.none() | st.lists(st.sampled_from(["echo", "nap"])).map(tuple)),
    )


class TestChecks:
    @pytest.mark.parametrize(
        ("history", "problem"),
        [
            (
                [UserMessage("hi"), AssistantMessage("", (CALL_A,))],
                "history[1]: tool call 'a' (echo) has no result (each call is followed by its "
                "ToolResult, in call order)",
            ),
            (
                [UserMessage("hi"), ToolResult("a", "x")],
                "history[1]: a ToolResult for call 'a' that answers no tool call (results follow "
                "the assistant message whose calls they answer, in call order)",
            ),
            (
                [
                    AssistantMessage("", (CALL_A, CALL_B)),
                    ToolResult("b", "2"),
                    ToolResult("a", "1"),
                ],
                "history[1]: the result of call 'b' where the result of 'a' (echo) belongs "
                "(results follow their calls in call order)",
            ),
            (
                [
                    AssistantMessage("", (CALL_A, CALL_A)),
                    ToolResult("a", "1"),
                    ToolResult("a", "1"),
                ],
                "history[0]: two tool calls share the id 'a'",
            ),
            (
                [UserMessage("hi"), "not a message"],
                "history[1]: str is not a UserMessage, AssistantMessage or ToolResult",
            ),
        ],
        ids=["no-result", "orphan", "out-of-order", "duplicate-id", "not-a-message"],
    )
    def test_set_history_refuses_a_broken_history(self, history, problem):
        """set_history() raises RunStateError naming the problem, and keeps the old history."""
        worker, _ = make_worker(ScriptedClient())
        worker.set_history([UserMessage("before")])
        with pytest.raises(RunStateError) as info:
            worker.set_history(history)
        assert str(info.value) == problem
        assert worker.history == (UserMessage("before"),)

    @pytest.mark.parametrize(
        ("paused", "problem"),
        [
            (
                [PausedCall(CALL_A, "ready")],
                "history[1]: the state is paused, but no call waits for a decision",
            ),
            (
                [PausedCall(CALL_B, "held", "why")],
                "history[1]: paused call 'b' (echo) is not the response's call 'a' (echo)",
            ),
            (
                [PausedCall(CALL_A, "final", None, None, None)],
                "history[1]: paused call 'a' is final but has no result of its own",
            ),
            (
                [PausedCall(CALL_A, "held", "")],
                "history[1]: paused call 'a' waits, but for no reason",
            ),
            (
                [PausedCall(CALL_A, "held", "x"), PausedCall(CALL_B, "held", "y")],
                "history[1]: the paused response has 1 tool calls, but the state holds 2",
            ),
        ],
        ids=["nothing-held", "other-call", "final-without-result", "no-reason", "count"],
    )
    def test_a_broken_paused_response_is_refused(self, paused, problem):
        """A paused state must hold exactly the last response's calls, consistently."""
        with pytest.raises(RunStateError) as info:
            state_of([UserMessage("hi"), AssistantMessage("", (CALL_A,))], paused)
        assert str(info.value) == problem

    @pytest.mark.parametrize(
        ("change", "problem"),
        [
            (lambda d: d.update(version=2), "format version 2 is not supported"),
            (  # a later version's shape: its number is the problem, not its fields
                lambda d: d.update(version=2, history={"messages": []}, usage=None),
                "format version 2 is not supported",
            ),
            (lambda d: d.update(format="other"), "format: Input should be 'llm-worker.run-state'"),
            (
                lambda d: d["history"][0].update(text=5),
                "history.0.user.text: Input should be a valid string",
            ),
            (lambda d: d["history"].append({"type": "robot"}), "history.4: Input tag 'robot'"),
            (lambda d: d.pop("usage"), "usage: Field required"),
            (
                lambda d: d["history"].pop(2),
                "history[1]: tool call 'call_0_0' (echo) has no result",
            ),
        ],
        ids=[
            "version",
            "version-and-shape",
            "format",
            "field-type",
            "unknown-message",
            "missing-field",
            "no-result",
        ],
    )
    @pytest.mark.anyio
    async def test_corrupt_json_is_refused(self, change, problem):
        """from_json names what is wrong with a corrupted document."""
        worker, _ = make_worker(ScriptedClient([calls(("echo", {"text": "a"})), "ok"]))
        await worker.run("go")
        document = json.loads(worker.state.to_json())
        change(document)
        with pytest.raises(RunStateError) as info:
            RunState.from_json(json.dumps(document))
        assert problem in str(info.value)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def test_random_corruptions_are_refused_or_read_exactly(self, data):
        """A state's JSON with one value replaced either reads back as a valid state or is
        refused with RunStateError: never another exception, never half-loaded."""
        state = data.draw(valid_states())
        document = json.loads(state.to_json())
        paths = list(_paths(document))
        path = data.draw(st.sampled_from(paths))
        junk = data.draw(st.sampled_from([None, 0, -1, "", "x", [], {}, True, 1.5]))
        _set(document, path, junk)
        text = json.dumps(document)
        try:
            loaded = RunState.from_json(text)
        except RunStateError:
            return
        assert RunState.from_json(loaded.to_json()) == loaded

    def test_not_json_at_all(self):
        """Text that is not JSON is a RunStateError."""
        with pytest.raises(
            RunStateError, match="Not a valid run state: the document: Invalid JSON"
        ):
            RunState.from_json("{oops")

    @pytest.mark.parametrize(
        ("part_json", "problem"),
        [
            ("{oops", "the data part of the result of call 'a': DataPart json_text is not JSON"),
            # Deeper than json.loads reads: its RecursionError must not escape from_json.
            (
                "[" * 100_000 + "]" * 100_000,
                "the data part of the result of call 'a': DataPart json_text nests too deep",
            ),
        ],
        ids=["not-json", "nested-100k"],
    )
    def test_a_data_part_that_does_not_read_back_is_refused(self, part_json, problem):
        """A data part whose JSON text cannot be parsed is a RunStateError naming the call."""
        result = ToolResult("a", "{}", parts=(DataPart("{}"),))
        state = state_of([UserMessage("hi"), AssistantMessage("", (CALL_A,)), result])
        document = json.loads(state.to_json())
        document["history"][2]["parts"][0]["json"] = part_json
        with pytest.raises(RunStateError) as info:
            RunState.from_json(json.dumps(document))
        assert str(info.value).startswith(problem)

    @pytest.mark.parametrize(
        "change",
        [
            lambda d: d["usage"].update(input_tokens=-1),
            lambda d: d["run"]["usage"].update(requests=-1),
            lambda d: d["history"][1]["usage"].update(output_tokens=-1),
        ],
        ids=["usage", "run-usage", "message-usage"],
    )
    def test_a_negative_count_is_refused(self, change):
        """No client can report negative usage (the worker refuses it), and a negative run
        usage read back would keep the budgets from firing: from_json refuses one."""
        message = AssistantMessage("hi", usage=Usage(1, 2))
        state = state_of([UserMessage("hi"), message], usage=RunUsage(1), run_usage=RunUsage(1))
        document = json.loads(state.to_json())
        change(document)
        with pytest.raises(RunStateError, match="Input should be greater than or equal to 0"):
            RunState.from_json(json.dumps(document))


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _set(document, path, value):
    if not path:
        return
    target = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value


class TestLoading:
    @pytest.mark.anyio
    async def test_a_pending_call_to_a_missing_tool_is_refused(self):
        """Loading a paused state into a worker without the pending call's tool raises
        RunStateError and loads nothing."""
        worker, _ = await paused_worker(ScriptedClient([calls(("echo", {"text": "go"})), "done"]))
        state = worker.state
        bare = Worker(ScriptedClient())
        bare.set_history([UserMessage("mine")])
        with pytest.raises(RunStateError) as info:
            bare.load_state(state)
        assert str(info.value) == (
            "paused call 'call_0_0' is to tool 'echo', which this worker does not have "
            "(register the same tools before load_state())"
        )
        assert bare.history == (UserMessage("mine"),)
        assert not bare.is_paused

    @pytest.mark.anyio
    async def test_another_prefix_loads_with_a_warning(self):
        """A state taken with another system prompt loads, with a RunStateWarning."""
        worker, _ = make_worker(ScriptedClient(["hi"]), system_prompt="one")
        await worker.run("go")
        other, _ = make_worker(ScriptedClient(), system_prompt="two")
        with pytest.warns(RunStateWarning, match="prompt cache will not match"):
            other.load_state(worker.state)
        assert other.history == worker.history
        same, _ = make_worker(ScriptedClient(), system_prompt="one")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same.load_state(worker.state)

    @pytest.mark.anyio
    async def test_usage_and_counters_come_back(self):
        """Usage, the run's usage and the tool selection are restored."""
        client = ScriptedClient(["hi"])
        worker, _ = make_worker(client)
        await worker.run("go", allowed_tools=["echo"])
        other, _ = make_worker(ScriptedClient())
        other.load_state(RunState.from_json(worker.state.to_json()))
        assert other.usage == worker.usage
        assert other.run_usage == worker.run_usage
        assert other.state.allowed_tools == ("echo",)

    @pytest.mark.anyio
    async def test_state_and_load_need_a_worker_at_rest(self):
        """Taking or loading a state while a run is in progress raises WorkerStateError; a
        LockedWorker has no load_state."""
        worker, _ = make_worker(ScriptedClient([calls(("echo", {"text": "a"})), "ok"]))
        async with worker.run_stream("go") as stream:
            await stream.__anext__()
            with pytest.raises(WorkerStateError, match=r"^Cannot call worker.state"):
                worker.state  # noqa: B018
        assert not hasattr(worker.lock(), "load_state")

    @pytest.mark.anyio
    async def test_the_state_is_there_from_the_streams_last_event(self):
        """docs/worker.md: save the state "on RunPaused". From the last event on, the
        run's history and pause are final: worker.state and is_paused say so (they
        refused, and said not paused, until the stream's exit), and the saved pause
        resumes in another worker; the worker stays busy until the exit."""
        from llm_worker import RunFailed, RunFinished, RunPaused

        client = ScriptedClient([calls(("echo", {"text": "a"})), "ok"])
        worker, _ = make_worker(client)
        worker.register_tools([], requires_approval=True)
        worker.add_pre_tool_call_hook(lambda ctx: _pause())
        saved = None
        async with worker.run_stream("go") as stream:
            async for event in stream:
                if isinstance(event, RunPaused):
                    assert worker.is_paused
                    assert [p.call.id for p in worker.pending] == ["call_0_0"]
                    saved = worker.state.to_json()
                    with pytest.raises(WorkerStateError, match="a run is in progress"):
                        await worker.resume(Approve())
        assert saved is not None
        assert worker.state.to_json() == saved
        other, lab = make_worker(ScriptedClient(["done"]))
        other.load_state(RunState.from_json(saved))
        with anyio.fail_after(5):
            assert await other.resume(Approve()) is WorkerResult.FINISHED
        assert lab.log == ["echo a"]

        finished, _ = make_worker(ScriptedClient(["hi"]))
        async with finished.run_stream("go") as stream:
            async for event in stream:
                if isinstance(event, RunFinished):
                    assert not finished.is_paused
                    assert finished.state.history == finished.history
        assert isinstance(finished.history[-1], AssistantMessage)
        failing, _ = make_worker(ScriptedClient([calls(("echo", {"text": "a"})), "ok"]))
        failing.limits = Limits(max_requests=1)
        seen: list[tuple[bool, RunState]] = []

        async def read_to_the_end() -> None:
            async with failing.run_stream("go") as stream:
                async for event in stream:
                    if isinstance(event, RunFailed):
                        seen.append((failing.is_paused, failing.state))

        with pytest.raises(UsageLimitExceededError):
            await read_to_the_end()
        ((paused, state),) = seen
        assert not paused
        assert_history_valid(state.history)
        assert state.history == failing.history


def test_a_state_crosses_processes(tmp_path):
    """Save a paused run in one process; in a second, load it, approve one call and deny
    another; each call runs exactly once, in the process that approved it."""
    app = tmp_path / "app.py"
    app.write_text(
        textwrap.dedent(
            '''
            import json, sys
            from pathlib import Path
            import anyio
            from llm_worker import Approve, Deny, RunState, Worker, tool, tool_registry
            from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

            LOG = Path(sys.argv[2])

            @tool_registry
            class Files:
                @tool
                async def delete(self, path: str) -> str:
                    """Delete a file."""
                    with LOG.open("a") as log:
                        log.write(f"deleted {path}\\n")
                    return f"deleted {path}"

            def answer(request):
                results = [m for m in request.messages if type(m).__name__ == "ToolResult"]
                return "; ".join(r.content for r in results)

            # Each process is sent what the model says next: the calls, then the answer.
            first_response = ScriptedResponse(tool_calls=[
                ScriptedCall("delete", {"path": "a.txt"}, id="c1"),
                ScriptedCall("delete", {"path": "b.txt"}, id="c2"),
            ])
            step = first_response if sys.argv[1] == "first" else answer
            worker = Worker(ScriptedClient([step]))
            worker.register_tools([Files().delete.definition()], requires_approval=True)
            state_file = Path(sys.argv[3])

            async def first():
                await worker.run("clean up")
                assert worker.is_paused
                state_file.write_text(worker.state.to_json())

            async def second():
                worker.load_state(RunState.from_json(state_file.read_text()))
                await worker.resume({"c1": Approve(), "c2": Deny("keep b")})
                print(worker.final_text)

            anyio.run(first if sys.argv[1] == "first" else second)
            '''
        )
    )
    log, state = tmp_path / "log.txt", tmp_path / "state.json"
    run = [sys.executable, str(app)]
    options = {"capture_output": True, "text": True, "timeout": 60, "cwd": ROOT}
    first = subprocess.run([*run, "first", str(log), str(state)], check=False, **options)
    assert first.returncode == 0, first.stderr
    assert not log.exists()  # nothing ran before the decisions
    second = subprocess.run([*run, "second", str(log), str(state)], check=False, **options)
    assert second.returncode == 0, second.stderr
    assert log.read_text() == "deleted a.txt\n"
    assert second.stdout.strip() == (
        "deleted a.txt; Tool call 'delete' was denied; it did not run: keep b"
    )
