"""Worker.retry(): asking the model again after a run ended before it answered."""

from __future__ import annotations

import anyio
import pytest

from llm_worker import (
    AssistantMessage,
    MaxTurnsExceededError,
    ProviderError,
    UserMessage,
    Worker,
    WorkerResult,
    WorkerStateError,
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
