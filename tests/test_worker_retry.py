"""Worker.retry(): asking the model again after a run ended before it answered."""

from __future__ import annotations

import anyio
import pytest

from llm_worker import (
    AssistantMessage,
    MaxTurnsExceededError,
    ProviderError,
    ToolResult,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse


class FailingOnce:
    """A client whose first request fails with a ProviderError, then replays a script."""

    def __init__(self, *steps: str | ScriptedResponse) -> None:
        self.failed = False
        self.script = ScriptedClient(steps)

    def stream(self, request):  # type: ignore[no-untyped-def]
        if not self.failed:
            self.failed = True
            raise ProviderError("test", "overloaded", status=529, retryable=True)
        return self.script.stream(request)


class TestRetry:
    @pytest.mark.anyio
    async def test_retry_after_provider_error_sends_the_same_history(self):
        """After a failed request, retry() resends the history unchanged and finishes."""
        client = FailingOnce("answer")
        worker = Worker(client)
        with pytest.raises(ProviderError):
            await worker.run("question")
        assert worker.history == (UserMessage("question"),)
        assert await worker.retry() is WorkerResult.FINISHED
        assert worker.history == (
            UserMessage("question"),
            AssistantMessage("answer", (), "end_turn"),
        )
        assert list(client.script.requests[0].messages) == [UserMessage("question")]

    @pytest.mark.anyio
    async def test_retry_on_a_locked_worker(self):
        """A LockedWorker can retry too (it cannot edit the history to work around it)."""
        client = FailingOnce("answer")
        locked = Worker(client).lock()
        with pytest.raises(ProviderError):
            await locked.run("question")
        assert await locked.retry() is WorkerResult.FINISHED
        assert locked.final_text == "answer"

    @pytest.mark.anyio
    async def test_retry_after_max_turns_continues_from_the_tool_results(self):
        """After MaxTurnsExceededError, retry() asks the model about the last tool results."""
        client = ScriptedClient(
            [ScriptedResponse(tool_calls=[ScriptedCall("missing")]), "done after all"]
        )
        worker = Worker(client, max_turns=1)
        with pytest.raises(MaxTurnsExceededError):
            await worker.run("go")
        assert await worker.retry() is WorkerResult.FINISHED
        assert worker.final_text == "done after all"
        assert len(client.requests) == 2

    @pytest.mark.anyio
    async def test_retry_after_a_cancelled_request(self):
        """A request cancelled mid-stream left no assistant message; retry() asks again."""
        client = ScriptedClient(["never finished", "late answer"], chunk_size=1)
        worker = Worker(client)
        with anyio.CancelScope() as scope:
            scope.cancel()  # cancelled at the stream's first checkpoint
            await worker.run("question")
        assert worker.history == (UserMessage("question"),)
        assert await worker.retry() is WorkerResult.FINISHED
        assert worker.final_text == "late answer"
        assert list(client.requests[1].messages) == [UserMessage("question")]

    @pytest.mark.anyio
    async def test_nothing_to_retry(self):
        """When the model has answered, retry() refuses with WorkerStateError."""
        worker = Worker(ScriptedClient(["hi"]))
        with pytest.raises(WorkerStateError, match=r"^Nothing to retry: the model has answered"):
            await worker.retry()  # empty history
        await worker.run("x")
        with pytest.raises(
            WorkerStateError,
            match=r"^Nothing to retry: the model has answered the last message$",
        ):
            await worker.retry()


def final(arguments: str, call_id: str) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedCall("final_result", arguments, call_id)])


class TestRetryAfterTheOutputTool:
    """A client without native structured output answers through the final_result tool:
    the history then ends with that call's result, and the model has still answered."""

    @pytest.mark.anyio
    async def test_an_answer_through_the_output_tool_leaves_nothing_to_retry(self):
        client = ScriptedClient(
            [final('{"result": [1, 2]}', "f1"), "never sent"], supports_output_format=False
        )
        worker = Worker(client, output_type=list[int])
        with anyio.fail_after(10):
            assert await worker.run("numbers?") is WorkerResult.FINISHED
        assert worker.output == [1, 2]
        with pytest.raises(
            WorkerStateError, match=r"^Nothing to retry: the model has answered the last message$"
        ):
            worker.retry_stream()
        # a worker that loads the state (and so knows nothing of the run) says the same
        again = Worker(ScriptedClient(["never sent"]), output_type=list[int])
        again.load_state(worker.state)
        with pytest.raises(WorkerStateError, match=r"^Nothing to retry"):
            await again.retry()
        assert len(client.requests) == 1

    @pytest.mark.anyio
    async def test_a_refused_answer_can_be_retried(self):
        """An answer the output type refused got an error result: the model still owes one."""
        client = ScriptedClient(
            [final('{"result": ["x"]}', "f1"), final('{"result": [3]}', "f2")],
            supports_output_format=False,
        )
        worker = Worker(client, output_type=list[int], max_turns=1)
        with anyio.fail_after(10):
            with pytest.raises(MaxTurnsExceededError):
                await worker.run("numbers?")
            assert await worker.retry() is WorkerResult.FINISHED
        assert worker.output == [3]

    @pytest.mark.anyio
    async def test_a_tool_of_the_application_named_final_result_is_no_answer(self):
        """Without an output type a worker may have its own tool of that name: its result is
        a tool's result, which the model has not answered yet."""
        client = ScriptedClient(
            [final('{"text": "a"}', "c1"), "now I answer"], supports_output_format=False
        )
        worker = Worker(client, max_turns=1)
        worker.register_tools(tool_definitions(Recorder()))
        with anyio.fail_after(10):
            with pytest.raises(MaxTurnsExceededError):
                await worker.run("go")
            assert worker.history[-1] == ToolResult("c1", "a")
            assert await worker.retry() is WorkerResult.FINISHED
        assert worker.final_text == "now I answer"


@tool_registry
class Recorder:
    @tool
    async def final_result(self, text: str) -> str:
        """Record the final result."""
        return text


class TestRetryStreamMadeEarlier:
    @pytest.mark.anyio
    async def test_a_retry_made_before_another_conversation_is_refused_on_entry(self):
        """A retry stream continues the run it was made for: after load_state(),
        set_history() or a new run it would answer with that run's output_type, so
        entering it is a WorkerStateError that says to make it again."""
        for replace in ("set_history", "load_state", "run"):
            client = FailingOnce("ok", "ok again")
            worker = Worker(client)
            with anyio.fail_after(10):
                with pytest.raises(ProviderError):
                    await worker.run("question", output_type=list[int])
                stale = worker.retry_stream()
                if replace == "set_history":
                    worker.set_history([UserMessage("other")])
                elif replace == "load_state":
                    worker.load_state(worker.state)
                else:
                    await worker.run("another")
                with pytest.raises(WorkerStateError, match=r"^This retry was made for a run"):
                    async with stale:
                        pass
                if replace != "run":
                    assert await worker.retry() is WorkerResult.FINISHED  # made again: text
                    assert worker.output == "ok"
