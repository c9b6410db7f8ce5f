"""Pause ids: each pause has its own id (``worker.pause_id``, ``RunPaused.pause_id``,
``RunState.pause_id``), and ``resume(..., pause_id=...)`` applies decisions only to the
pause they were made for (``_session.py``, ``_run.py``, ``_state.py``, ``_state_json.py``).

The case they exist for: a web service makes a new ``resume(...)`` per HTTP request, and a
retried or duplicated "approve" meant for an earlier pause arrives while a later pause
waits, whose call the model gave the same id (ids are unique only within one response).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from llm_worker import (
    Approve,
    Deny,
    LockedWorker,
    RunPaused,
    RunState,
    RunStateError,
    Worker,
    WorkerResult,
    WorkerStateError,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

pytestmark = pytest.mark.anyio

TIMEOUT = 10


@tool_registry
class Files:
    """A tool that needs approval for every call, and records what it deleted."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    @tool(requires_approval=True)
    async def delete(self, path: str) -> str:
        """Delete a file."""
        self.deleted.append(path)
        return f"deleted {path}"


def deleting(path: str) -> ScriptedResponse:
    # Every response calls its tool with the id "call_0", as a provider that reuses ids does.
    return ScriptedResponse(tool_calls=[ScriptedCall("delete", {"path": path}, id="call_0")])


def two_deletions() -> ScriptedClient:
    return ScriptedClient(
        [deleting("draft.txt"), "deleted draft.txt", deleting("payroll.db"), "deleted payroll.db"]
    )


def files_worker(client: ScriptedClient) -> tuple[Worker, Files]:
    files = Files()
    worker = Worker(client)
    worker.register_tools(tool_definitions(files))
    return worker, files


async def second_pause(worker: Worker | LockedWorker) -> tuple[str, str]:
    """Pause 1 (draft.txt), approved with its id; then pause 2 (payroll.db), same call id."""
    assert await worker.run("delete draft.txt") is WorkerResult.PAUSED
    first = worker.pause_id
    assert first is not None
    assert await worker.resume({"call_0": Approve()}, pause_id=first) is WorkerResult.FINISHED
    assert worker.pause_id is None
    assert await worker.run("delete payroll.db") is WorkerResult.PAUSED
    second = worker.pause_id
    assert second is not None
    assert second != first
    assert [p.call.id for p in worker.pending] == ["call_0"]
    return first, second


def stale(given: str, current: str | None) -> str:
    where = (
        "the worker is not paused" if current is None else f"the run is now paused at {current!r}"
    )
    return (
        f"This decision is for pause {given!r}, which has ended; {where} (read "
        f"worker.pending and decide again)"
    )


class TestAStaleDecision:
    async def test_an_approval_for_an_earlier_pause_is_refused(self):
        """The reviewer's case: an approval sent again for pause 1 while pause 2 waits, on a
        call with the same id, is refused and changes nothing; pause 2's own id runs it."""
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            first, second = await second_pause(worker)
            history = worker.history
            with pytest.raises(WorkerStateError) as caught:
                await worker.resume({"call_0": Approve()}, pause_id=first)
            assert str(caught.value) == stale(first, second)
            assert files.deleted == ["draft.txt"]
            assert worker.history == history
            assert worker.pause_id == second
            assert [p.call.id for p in worker.pending] == ["call_0"]

            assert await worker.resume({"call_0": Approve()}, pause_id=second) is (
                WorkerResult.FINISHED
            )
            assert files.deleted == ["draft.txt", "payroll.db"]

    async def test_approve_all_for_an_earlier_pause_is_refused(self):
        """A bare ``Approve()`` (every pending call) with a stale id is refused too."""
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            first, second = await second_pause(worker)
            for decision in (Approve(), Deny("no")):
                with pytest.raises(WorkerStateError, match="which has ended"):
                    await worker.resume(decision, pause_id=first)
                with pytest.raises(WorkerStateError, match="which has ended"):
                    worker.resume_stream(decision, pause_id=first)
            assert files.deleted == ["draft.txt"]
            assert await worker.resume(Approve(), pause_id=second) is WorkerResult.FINISHED
            assert files.deleted == ["draft.txt", "payroll.db"]

    async def test_a_stale_id_when_nothing_is_paused(self):
        """A decision for a pause that has ended, with no pause now, says so."""
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            assert await worker.run("delete draft.txt") is WorkerResult.PAUSED
            first = worker.pause_id
            assert first is not None
            await worker.resume(Approve(), pause_id=first)
            with pytest.raises(WorkerStateError) as caught:
                await worker.resume(Approve(), pause_id=first)
            assert str(caught.value) == stale(first, None)
            assert files.deleted == ["draft.txt"]

    async def test_a_stream_entered_after_its_pause_ended(self):
        """A ``resume_stream`` made with the right id, entered only after that pause ended
        and another began (same call id), is refused on entry and runs nothing."""
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            assert await worker.run("delete draft.txt") is WorkerResult.PAUSED
            first = worker.pause_id
            assert first is not None
            late = worker.resume_stream({"call_0": Approve()}, pause_id=first)
            await worker.resume({"call_0": Approve()}, pause_id=first)
            assert await worker.run("delete payroll.db") is WorkerResult.PAUSED
            second = worker.pause_id
            with pytest.raises(WorkerStateError) as caught:
                async with late:
                    pytest.fail("the stream was entered")
            assert str(caught.value) == stale(first, second)
            assert files.deleted == ["draft.txt"]
            assert worker.pause_id == second

    async def test_without_a_pause_id_nothing_changes(self):
        """Decisions without ``pause_id`` apply to the pause now, as they always did."""
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            await worker.run("delete draft.txt")
            await worker.resume({"call_0": Approve()})
            await worker.run("delete payroll.db")
            assert await worker.resume(Approve()) is WorkerResult.FINISHED
            assert files.deleted == ["draft.txt", "payroll.db"]

    async def test_a_pause_id_that_is_not_text(self):
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            await worker.run("delete draft.txt")
            with pytest.raises(TypeError, match="pause_id must be a str"):
                await worker.resume(Approve(), pause_id=7)  # type: ignore[arg-type]
            assert files.deleted == []
            assert worker.is_paused

    async def test_a_locked_worker(self):
        """A ``LockedWorker`` has the same pause ids and refuses the same stale decisions."""
        with anyio.fail_after(TIMEOUT):
            worker, files = files_worker(two_deletions())
            locked = worker.lock()
            first, second = await second_pause(locked)
            with pytest.raises(WorkerStateError, match="which has ended"):
                await locked.resume({"call_0": Approve()}, pause_id=first)
            assert files.deleted == ["draft.txt"]
            assert await locked.resume(Approve(), pause_id=second) is WorkerResult.FINISHED
            assert files.deleted == ["draft.txt", "payroll.db"]
            assert locked.pause_id is None


class TestThePauseId:
    async def test_the_event_gives_the_workers_id(self):
        """``RunPaused.pause_id`` is ``worker.pause_id``, which is there as long as
        ``worker.pending`` is (from the first ``ApprovalRequested``); ``None`` before a
        pause, while the resumed run goes on, and once it has finished."""
        with anyio.fail_after(TIMEOUT):
            worker, _ = files_worker(two_deletions())
            assert worker.pause_id is None
            seen: list[tuple[str, str | None, bool]] = []
            async with worker.run_stream("delete draft.txt") as stream:
                async for event in stream:
                    seen.append((type(event).__name__, worker.pause_id, bool(worker.pending)))
                    if isinstance(event, RunPaused):
                        paused_at = event.pause_id
            assert paused_at is not None
            assert seen[-2:] == [
                ("ApprovalRequested", paused_at, True),
                ("RunPaused", paused_at, True),
            ]
            assert all(pause_id is None and not pending for _, pause_id, pending in seen[:-2])
            assert worker.pause_id == paused_at
            async with worker.resume_stream(Approve(), pause_id=paused_at) as stream:
                async for _ in stream:
                    assert worker.pause_id is None
            assert stream.result is WorkerResult.FINISHED
            assert worker.pause_id is None

    async def test_ids_are_new_and_unguessable(self):
        with anyio.fail_after(TIMEOUT):
            client = ScriptedClient([deleting(str(n)) for n in range(5)])
            worker, _ = files_worker(client)
            seen = set()
            await worker.run("delete")
            for _ in range(4):
                pause_id = worker.pause_id
                assert isinstance(pause_id, str)
                assert len(pause_id) == 16
                int(pause_id, 16)  # hex
                seen.add(pause_id)
                await worker.resume(Approve(), pause_id=pause_id)
            assert len(seen) == 4

    async def test_run_paused_made_by_hand(self):
        """Code that makes a ``RunPaused(pending)`` (a test's fake stream) still can."""
        assert RunPaused(()).pause_id is None
        assert RunPaused((), "p1").pause_id == "p1"


def paused_document(worker: Worker) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(worker.state.to_json())
    return document


class TestSavedPauseIds:
    async def test_the_id_goes_with_the_state_to_a_new_worker(self):
        """As a service that loads the state for each request: the new worker's pause has
        the saved id, a decision for the earlier pause is refused, and the right one runs."""
        with anyio.fail_after(TIMEOUT):
            client = two_deletions()
            worker, _ = files_worker(client)
            first, second = await second_pause(worker)
            state = worker.state
            assert state.pause_id == second
            text = state.to_json()
            assert json.loads(text)["paused"]["pause_id"] == second
            loaded = RunState.from_json(text)
            assert loaded.pause_id == second
            assert loaded == state

            again, files = files_worker(client)
            again.load_state(loaded)
            assert again.pause_id == second
            assert again.state == state
            with pytest.raises(WorkerStateError, match="which has ended"):
                await again.resume({"call_0": Approve()}, pause_id=first)
            assert files.deleted == []
            assert await again.resume({"call_0": Approve()}, pause_id=second) is (
                WorkerResult.FINISHED
            )
            assert files.deleted == ["payroll.db"]
            assert again.state.pause_id is None
            assert "pause_id" not in json.dumps(json.loads(again.state.to_json())["run"])

    async def test_a_state_saved_without_an_id_loads_with_a_new_one(self):
        """A state written before pause ids reads with a fresh one, and resumes."""
        with anyio.fail_after(TIMEOUT):
            client = two_deletions()
            worker, _ = files_worker(client)
            await worker.run("delete draft.txt")
            document = paused_document(worker)
            saved = document["paused"].pop("pause_id")
            state = RunState.from_json(json.dumps(document))
            assert isinstance(state.pause_id, str)
            assert state.pause_id != saved
            again, files = files_worker(client)
            again.load_state(state)
            assert again.pause_id == state.pause_id
            with pytest.raises(WorkerStateError, match="which has ended"):
                await again.resume(Approve(), pause_id=saved)
            assert await again.resume(Approve()) is WorkerResult.FINISHED
            assert files.deleted == ["draft.txt"]

    @pytest.mark.parametrize(
        ("value", "problem"),
        [
            (7, "paused.pause_id: Input should be a valid string"),
            (None, "paused.pause_id: Input should be a valid string"),
            ("", "paused.pause_id: String should have at least 1 character"),
            ("a" * 65, "paused.pause_id: String should have at most 64 characters"),
            ("a b", "paused.pause_id: String should match pattern"),
            ("caf\u00e9", "paused.pause_id: String should match pattern"),
        ],
    )
    async def test_a_malformed_id_is_refused(self, value: object, problem: str):
        with anyio.fail_after(TIMEOUT):
            worker, _ = files_worker(two_deletions())
            await worker.run("delete draft.txt")
            document = paused_document(worker)
            document["paused"]["pause_id"] = value
            with pytest.raises(RunStateError, match=f"Not a valid run state: {problem}"):
                RunState.from_json(json.dumps(document))

    async def test_the_constructor_checks_it_too(self):
        with anyio.fail_after(TIMEOUT):
            worker, _ = files_worker(two_deletions())
            await worker.run("delete draft.txt")
            state = worker.state
            fields: dict[str, Any] = {
                "history": state.history,
                "paused": state.paused_calls,
                "turns": state.turns,
                "run_usage": state.run_usage,
                "usage": state.usage,
                "tool_choice": state.tool_choice,
                "allowed_tools": state.allowed_tools,
                "fingerprint": state.fingerprint,
            }
            assert RunState(**fields, pause_id=state.pause_id) == state
            for bad in (7, "", "x" * 65, "a\nb"):
                with pytest.raises(RunStateError, match="pause_id"):
                    RunState(**fields, pause_id=bad)
            unpaused = {**fields, "paused": None, "history": state.history[:1]}
            assert RunState(**unpaused, pause_id="p1").pause_id is None

    async def test_states_of_two_pauses_differ(self):
        """The id is part of the state: two pauses with the same calls are two states."""
        with anyio.fail_after(TIMEOUT):
            worker, _ = files_worker(two_deletions())
            await worker.run("delete draft.txt")
            document = paused_document(worker)
            state = RunState.from_json(json.dumps(document))
            document["paused"]["pause_id"] = "0123456789abcdef"
            other = RunState.from_json(json.dumps(document))
            assert other.pause_id == "0123456789abcdef"
            assert other != state
