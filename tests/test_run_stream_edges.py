"""Edges of the run stream (``_run.py``, ``_session.py``, ``_worker.py``): a resume
stream bound to its pause, progress after its call's start, ``worker.output`` and a run's
own ``output_type``, resume inside the paused stream, request numbers, and the Unicode of
a held call's arguments."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from llm_worker import (
    ApprovalRequested,
    Approve,
    Completion,
    Limits,
    LlmRequest,
    Pause,
    ResponseStarted,
    RunEvent,
    RunPaused,
    RunState,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallRunning,
    ToolContext,
    ToolResult,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio

STALE = (
    "This resume was made for a pause that has ended (the run was resumed, or another "
    "state was loaded); read worker.pending and resume again"
)


@tool_registry
class Files:
    """A tool whose every call needs a person's approval."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    @tool(requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a file."""
        self.deleted.append(path)
        return f"deleted {path}"


def delete(*paths: str) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedCall("delete", {"path": p}) for p in paths])


def files_worker(client: ScriptedClient) -> tuple[Worker, Files]:
    files = Files()
    worker = Worker(client)
    worker.register_tools([files.delete.definition()])
    return worker, files


async def read_all(stream: Any) -> list[RunEvent]:
    async with stream:
        return [event async for event in stream]


class TestResumeIsForItsPause:
    async def test_a_resume_stream_made_for_an_ended_pause_is_refused(self) -> None:
        """A resume stream made for a pause that has since been resumed (and the run paused
        again on other calls) raises WorkerStateError on entering: it approves no call
        nobody saw."""
        client = ScriptedClient([delete("a.log"), delete("/home", "/etc"), "done"])
        worker, files = files_worker(client)
        with anyio.fail_after(10):
            assert await worker.run("clean") is WorkerResult.PAUSED
            first = worker.resume_stream(Approve())
            second = worker.resume_stream(Approve())  # a second click on "approve"
            await read_all(first)
            assert first.result is WorkerResult.PAUSED
            with pytest.raises(WorkerStateError) as caught:
                await read_all(second)
            assert str(caught.value) == STALE
            assert files.deleted == ["a.log"]
            assert [json.loads(p.call.input_json)["path"] for p in worker.pending] == [
                "/home",
                "/etc",
            ]
            # A resume made for the pause now current goes on.
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
        assert files.deleted == ["a.log", "/home", "/etc"]

    async def test_a_resume_stream_made_before_load_state_is_refused(self) -> None:
        """Loading a state (even the same one) ends the pause a resume stream was made for."""
        worker, files = files_worker(ScriptedClient([delete("a.log"), "done"]))
        with anyio.fail_after(10):
            assert await worker.run("clean") is WorkerResult.PAUSED
            stream = worker.resume_stream(Approve())
            worker.load_state(RunState.from_json(worker.state.to_json()))
            with pytest.raises(WorkerStateError) as caught:
                await read_all(stream)
            assert str(caught.value) == STALE
            assert files.deleted == []
            assert worker.is_paused
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
        assert files.deleted == ["a.log"]


class TestResumeInsideThePausedStream:
    async def test_resume_inside_the_open_stream_says_to_leave_it_first(self) -> None:
        """resume() while the stream that paused is still open names the problem: the run
        is paused, its stream is open; after the ``async with`` it resumes."""
        worker, files = files_worker(ScriptedClient([delete("a"), "ok"]))
        messages: list[str] = []
        with anyio.fail_after(10):
            async with worker.run_stream("go") as stream:
                async for event in stream:
                    if isinstance(event, (ApprovalRequested, RunPaused)):
                        with pytest.raises(WorkerStateError) as caught:
                            await worker.resume(Approve())
                        messages.append(str(caught.value))
                        with pytest.raises(WorkerStateError) as caught:
                            worker.resume_stream(Approve())  # the same check, the same words
                        messages.append(str(caught.value))
            assert (
                messages
                == [
                    "Cannot resume: the run is paused, but its stream is still open (a run is "
                    "in progress until its `async with` ends); resume after leaving it"
                ]
                * 4
            )
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
        assert files.deleted == ["a"]


@tool_registry
class Reporters:
    """Three calls for two runners: ``c`` waits for a free runner, then reports at once."""

    def __init__(self) -> None:
        self.release_a = anyio.Event()
        self.release_b = anyio.Event()
        self.c_reported = anyio.Event()

    @tool
    async def a(self, ctx: ToolContext[None]) -> str:
        """Report, then wait."""
        ctx.report_progress(1, 2, "a started")
        await self.release_a.wait()
        return "a"

    @tool
    async def b(self) -> str:
        """Wait."""
        await self.release_b.wait()
        return "b"

    @tool
    async def c(self, ctx: ToolContext[None]) -> str:
        """Report at once."""
        ctx.report_progress(1, 2, "c started")
        self.c_reported.set()
        return "c"


class TestProgressComesAfterItsCallStarts:
    async def test_a_queued_calls_progress_comes_after_its_tool_call_running(self) -> None:
        """A call that waited for a free runner reports at once: its ToolCallProgress comes
        after its ToolCallRunning (the reader was slow), and no report is lost."""
        client = ScriptedClient(
            [
                ScriptedResponse(
                    tool_calls=[ScriptedCall("a"), ScriptedCall("b"), ScriptedCall("c")]
                ),
                "done",
            ]
        )
        worker = Worker(client, limits=Limits(max_concurrent_calls=2))
        tools = Reporters()
        worker.register_tools(
            [d for d in (tools.a.definition(), tools.b.definition(), tools.c.definition())]
        )
        log: list[str] = []
        with anyio.fail_after(10):
            async with worker.run_stream("go") as stream:
                async for event in stream:
                    if isinstance(event, ToolCallRunning):
                        log.append(f"running {event.call.name}")
                    elif isinstance(event, ToolCallProgress):
                        log.append(f"progress {event.message}")
                        if event.message == "a started":
                            # A slow reader: a ends and c starts and reports meanwhile.
                            tools.release_a.set()
                            await tools.c_reported.wait()
                    elif isinstance(event, ToolCallFinished):
                        log.append(f"finished {event.call.name}")
                        if event.call.name == "c":
                            tools.release_b.set()
        assert log == [
            "running a",
            "running b",
            "progress a started",
            "finished a",
            "running c",
            "progress c started",
            "finished c",
            "finished b",
        ]


class Answer(BaseModel):
    n: int


class TestWorkerOutputAndARunsOwnOutputType:
    async def test_worker_output_refuses_the_answer_of_a_runs_own_output_type(self) -> None:
        """After a run given an output_type other than the Worker's, worker.output (typed
        by the Worker's) raises WorkerStateError; stream.output has the answer."""
        client = ScriptedClient(['{"result": [1, 2]}', '{"n": 3}', '{"n": 4}'])
        worker = Worker(client, output_type=Answer)
        with anyio.fail_after(10):
            async with worker.run_stream("numbers", output_type=list[int]) as stream:
                async for _ in stream:
                    pass
            assert stream.output == [1, 2]
            with pytest.raises(WorkerStateError) as caught:
                _ = worker.output
            assert str(caught.value) == (
                "worker.output has the type of the Worker's output_type, but the last run "
                "was given its own output_type; read its answer from the run's stream "
                "(stream.output of run_stream(..., output_type=...), or RunFinished.output)"
            )
            # The Worker's own type, given or not, is worker.output's.
            assert await worker.run("n", output_type=Answer) is WorkerResult.FINISHED
            assert worker.output == Answer(n=3)
            assert await worker.run("n") is WorkerResult.FINISHED
            assert worker.output == Answer(n=4)

    async def test_a_resumed_run_keeps_its_own_output_type_out_of_worker_output(self) -> None:
        """A run with its own output_type that pauses and is resumed still has no
        worker.output."""
        files = Files()
        client = ScriptedClient([delete("a"), '{"result": [5]}'])
        worker = Worker(client, output_type=Answer)
        worker.register_tools([files.delete.definition()])
        with anyio.fail_after(10):
            assert await worker.run("go", output_type=list[int]) is WorkerResult.PAUSED
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
        with pytest.raises(WorkerStateError, match="given its own output_type"):
            _ = worker.output

    async def test_a_worker_without_output_type_gives_any_runs_answer(self) -> None:
        """A Worker built without output_type has ``output: Any``: it gives the answer of a
        run with its own output_type."""
        worker = Worker(ScriptedClient(['{"result": [1, 2]}']))
        with anyio.fail_after(10):
            assert await worker.run("numbers", output_type=list[int]) is WorkerResult.FINISHED
        assert worker.output == [1, 2]


class Flaky:
    """A client whose first request fails halfway through its stream."""

    def __init__(self) -> None:
        self.requests = 0

    async def stream(self, request: LlmRequest) -> AsyncIterator[TextDelta | Completion]:
        self.requests += 1
        yield TextDelta("partial ")
        if self.requests == 1:
            raise ConnectionError("connection reset")
        yield TextDelta("answer")
        yield Completion("end_turn")


async def requests_started(stream: Any, numbers: list[int]) -> None:
    """Read ``stream``, adding the number of each ResponseStarted to ``numbers``."""
    async with stream:
        async for event in stream:
            if isinstance(event, ResponseStarted):
                numbers.append(event.request)


class TestRequestNumbers:
    async def test_a_failed_request_keeps_its_number_and_the_retry_takes_the_next(self) -> None:
        """ResponseStarted numbers the requests the run sent, a failed one too: a retry's
        request is number 2, never a second number 1."""
        worker = Worker(Flaky())
        numbers: list[int] = []
        with anyio.fail_after(10):
            with pytest.raises(ConnectionError):
                await requests_started(worker.run_stream("q"), numbers)
            await requests_started(worker.retry_stream(), numbers)
            assert numbers == [1, 2]
            assert worker.run_usage.requests == 1  # usage counts the responses that came
            await requests_started(worker.run_stream("again"), numbers)
        assert numbers == [1, 2, 1]  # a new run numbers from 1 again


@tool_registry
class Reader:
    @tool
    async def read(self, path: str) -> str:
        """Read a file."""
        return f"read {path!a}"


def reader_worker(client: ScriptedClient) -> Worker:
    worker = Worker(client)
    worker.register_tools([Reader().read.definition()])
    return worker


class TestHeldArgumentsAreValidUnicode:
    async def test_a_held_call_a_hook_rewrote_runs_the_same_resumed_or_loaded(self) -> None:
        """A pre-hook's arguments with a lone surrogate, held by Pause, are kept with U+FFFD
        (as the saved state keeps them): resumed in this process or after load_state(), the
        call runs the same, and the reason reads the same."""
        bad = json.dumps({"path": "bad\udcff"}, ensure_ascii=False)

        def rewrite(ctx: Any) -> Pause:
            ctx.call = dataclasses.replace(ctx.call, input_json=bad)
            return Pause("check \udcfe")

        worker = reader_worker(
            ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("read")]), "ok"])
        )
        worker.add_pre_tool_call_hook(rewrite)
        with anyio.fail_after(10):
            assert await worker.run("go") is WorkerResult.PAUSED
            [pending] = worker.pending
            assert pending.call.input_json == '{"path": "bad\ufffd"}'
            assert pending.reason == "check \ufffd"
            loaded = reader_worker(ScriptedClient(["ok"]))
            loaded.load_state(RunState.from_json(worker.state.to_json()))
            assert loaded.pending == worker.pending
            assert await loaded.resume(Approve()) is WorkerResult.FINISHED
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
        expected = ToolResult(pending.call.id, "read 'bad\\ufffd'")
        assert worker.history[-2] == loaded.history[-2] == expected

    async def test_approve_with_arguments_holding_a_lone_surrogate_runs_them_valid(self) -> None:
        """Approve(text) or Approve(mapping) with a lone surrogate runs with U+FFFD in its
        place, as a saved state would keep it."""
        for arguments in ('{"path": "x\udcff"}', {"path": "x\udcff"}):
            client = ScriptedClient([ScriptedResponse(tool_calls=[ScriptedCall("read")]), "ok"])
            worker = reader_worker(client)
            worker.add_pre_tool_call_hook(lambda ctx: Pause())
            with anyio.fail_after(10):
                assert await worker.run("go") is WorkerResult.PAUSED
                assert await worker.resume(Approve(arguments)) is WorkerResult.FINISHED
            result = worker.history[-2]
            assert isinstance(result, ToolResult)
            assert result == ToolResult(result.call_id, "read 'x\\ufffd'")
