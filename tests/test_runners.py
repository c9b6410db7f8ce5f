"""How the calls of one response run together (``_run.py``'s runners).

Calls that never wait run one after another in one task; another task starts only when
every runner waits in a call. These tests hold the guarantees that scheme must keep:
calls that wait run at the same time (up to ``max_concurrent_calls``), in every wave of
a response; each call has its own timeout, and a timed-out call does not touch the next
call of its runner; cancelling the run stops every runner at once, whenever it comes.

Nothing measures time: calls that must run together wait for each other (a run that
ran them one at a time would hang, and ``anyio.fail_after`` fails it instead), and calls
that must time out wait forever. One test needs time to pass: two calls in a row that
each take 60 % of their timeout (both must finish: the second one's clock starts when it
does).
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from support import assert_history_valid, results_of

from llm_worker import (
    Limits,
    ToolCallRunning,
    ToolMeta,
    Worker,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

GUARD = 5.0  # only a hang reaches it
SHORT = 0.05  # the timeout of the calls that wait forever
CANCELLED = "Tool call '{}' was cancelled before it finished"


@tool_registry
class Party:
    """Calls that wait for each other, calls that never wait, calls that never end."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.arrived: dict[str, int] = {}
        self.everyone: dict[str, anyio.Event] = {}

    @tool
    async def meet(self, name: str, group: str, size: int) -> str:
        """Wait until ``size`` calls of ``group`` are all here."""
        self.log.append(f"start {name}")
        everyone = self.everyone.setdefault(group, anyio.Event())
        self.arrived[group] = self.arrived.get(group, 0) + 1
        if self.arrived[group] == size:
            everyone.set()
        await everyone.wait()
        self.log.append(f"end {name}")
        return f"{name} met"

    @tool
    async def quick(self, name: str) -> str:
        """Answer at once, never waiting."""
        self.log.append(f"quick {name}")
        return f"{name} done"

    @tool
    async def steps(self, name: str, count: int) -> str:
        """Let the event loop run ``count`` times, then answer."""
        self.log.append(f"start {name}")
        for _ in range(count):
            await anyio.lowlevel.checkpoint()
        self.log.append(f"end {name}")
        return f"{name} done"

    @tool
    async def nap(self, name: str, seconds: float) -> str:
        """Sleep ``seconds``, then answer."""
        await anyio.sleep(seconds)
        return f"{name} rested"

    @tool
    async def hang(self, name: str) -> str:
        """Wait forever (until cancelled or timed out)."""
        self.log.append(f"start {name}")
        try:
            await anyio.sleep_forever()
        finally:
            self.log.append(f"exit {name}")
        return "never"


class Alone:
    """A sequential tool: its call runs with no other."""

    sequential = True

    async def execute(self, input_json: str) -> str:
        return "alone"


def party_worker(*responses: object, limits: Limits | None = None) -> tuple[Worker, Party]:
    party = Party()
    worker = Worker(ScriptedClient([*responses, "done"]), limits=limits)  # type: ignore[list-item]
    worker.register_tools(tool_definitions(party))
    worker.register_tool(lambda: (ToolMeta(name="alone"), Alone()))
    return worker, party


def response(*calls: tuple[str, dict[str, object]]) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=[ScriptedCall(name, args) for name, args in calls])


def meet(name: str, size: int, group: str = "g") -> tuple[str, dict[str, object]]:
    return ("meet", {"name": name, "group": group, "size": size})


def quick(name: str) -> tuple[str, dict[str, object]]:
    return ("quick", {"name": name})


def hang(name: str) -> tuple[str, dict[str, object]]:
    return ("hang", {"name": name})


def steps(name: str, count: int) -> tuple[str, dict[str, object]]:
    return ("steps", {"name": name, "count": count})


def contents(worker: Worker) -> list[str]:
    return [result.content for result in results_of(worker.history)]


def timed_out(name: str) -> str:
    return f"Execution failed: tool '{name}' timed out after {SHORT:g}s"


class TestCallsThatWaitRunTogether:
    @pytest.mark.anyio
    async def test_calls_that_wait_for_each_other(self):
        """Three calls that each wait until all three are running: they run together."""
        worker, party = party_worker(response(meet("a", 3), meet("b", 3), meet("c", 3)))
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker)[:3] == ["a met", "b met", "c met"]
        assert party.log[:3] == ["start a", "start b", "start c"]  # in call order

    @pytest.mark.anyio
    async def test_a_call_that_waits_after_quick_ones_does_not_hold_back_the_next(self):
        """Quick calls run one after another; the first call that waits does not keep the
        calls after it from starting, even when the runner that ran the quick calls is the
        one waiting, and even with only two runners allowed."""
        worker, party = party_worker(
            response(quick("a"), quick("b"), meet("c", 2), quick("d"), meet("e", 2)),
            limits=Limits(max_concurrent_calls=2),
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker)[:5] == ["a done", "b done", "c met", "d done", "e met"]
        starts = [entry for entry in party.log if not entry.startswith("end")]
        assert starts == ["quick a", "quick b", "start c", "quick d", "start e"]

    @pytest.mark.anyio
    async def test_waiting_calls_run_exactly_max_concurrent_calls_at_once(self):
        """Six calls in groups of three that wait for their group, three runners: the first
        three meet, then the next three; a fourth never runs with them."""
        worker, party = party_worker(
            response(*[meet(n, 3, "first") for n in "abc"], *[meet(n, 3, "second") for n in "def"]),
            limits=Limits(max_concurrent_calls=3),
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker)[:6] == [f"{n} met" for n in "abcdef"]
        log = party.log
        # None of the second group started before one of the first had ended.
        first_end = min(log.index(f"end {n}") for n in "abc")
        assert all(log.index(f"start {n}") > first_end for n in "def")

    @pytest.mark.anyio
    async def test_every_wave_runs_its_calls_together(self):
        """A sequential call splits the response into waves: the calls of the wave after it
        still run together."""
        worker, _ = party_worker(
            response(
                meet("a", 2, "one"),
                meet("b", 2, "one"),
                ("alone", {}),
                meet("c", 2, "two"),
                meet("d", 2, "two"),
            )
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker)[:5] == ["a met", "b met", "alone", "c met", "d met"]

    @pytest.mark.anyio
    async def test_every_response_runs_its_calls_together(self):
        """The runners of one response do not count against the next response's calls."""
        worker, _ = party_worker(
            response(quick("a"), quick("b"), meet("c", 2, "one"), meet("d", 2, "one")),
            response(meet("e", 2, "two"), meet("f", 2, "two")),
            limits=Limits(max_concurrent_calls=2),
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker) == ["a done", "b done", "c met", "d met", "e met", "f met"]


class TestTimeoutsOfCallsInARow:
    @pytest.mark.anyio
    async def test_a_timed_out_call_leaves_the_next_call_of_its_runner_alone(self):
        """One runner (``max_concurrent_calls=1``) runs every call in turn: each call that
        hangs times out, a call after calls that ended too, and each call after a timed-out
        one runs to its end."""
        worker, party = party_worker(
            response(hang("a"), steps("b", 20), quick("c"), hang("d"), quick("e")),
            limits=Limits(max_concurrent_calls=1, tool_timeout=SHORT),
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker) == [
            timed_out("hang"),
            "b done",
            "c done",
            timed_out("hang"),
            "e done",
        ]
        assert party.log == [
            "start a", "exit a", "start b", "end b", "quick c", "start d", "exit d", "quick e",
        ]  # fmt: skip

    @pytest.mark.anyio
    async def test_each_call_in_a_row_has_its_whole_timeout(self):
        """Two calls in a row in one runner, each taking 60 % of the timeout: together they
        take longer than it, and neither times out."""
        timeout = 1.0
        nap = ("nap", {"name": "a", "seconds": 0.6 * timeout})
        worker, _ = party_worker(
            response(nap, nap), limits=Limits(max_concurrent_calls=1, tool_timeout=timeout)
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker) == ["a rested", "a rested"]

    @pytest.mark.anyio
    async def test_a_timeout_ends_only_its_own_call(self):
        """A call that hangs times out while the calls running beside it go on, and the
        calls waiting for a runner then start."""
        worker, _ = party_worker(
            response(hang("a"), meet("b", 2), meet("c", 2), hang("d"), steps("e", 5)),
            limits=Limits(max_concurrent_calls=3, tool_timeout=SHORT),
        )
        with anyio.fail_after(GUARD):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert contents(worker) == [
            timed_out("hang"),
            "b met",
            "c met",
            timed_out("hang"),
            "e done",
        ]


class TestCancellation:
    @pytest.mark.anyio
    async def test_cancelling_the_run_stops_every_runner(self):
        """Cancelled while three calls hang and three wait for a runner: the run ends at
        once, the hanging calls are cancelled, the waiting ones never start, every call
        has its one result, and the next run works."""
        worker, party = party_worker(
            response(*[hang(n) for n in "abcdef"]), limits=Limits(max_concurrent_calls=3)
        )

        async def cancel_when_three_hang(scope: anyio.CancelScope) -> None:
            while len(party.log) < 3:
                await anyio.lowlevel.checkpoint()
            scope.cancel()

        with anyio.fail_after(GUARD):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(cancel_when_three_hang, scope)
                    await worker.run("go")
            assert scope.cancelled_caught
            assert sorted(party.log) == sorted(
                f"{what} {n}" for n in "abc" for what in ("start", "exit")
            )
            assert contents(worker) == [CANCELLED.format("hang")] * 6
            assert await worker.run("next") is WorkerResult.FINISHED
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    @pytest.mark.parametrize("at", [0, 1, 2])
    async def test_cancelled_as_the_calls_start(self, at):
        """Cancelled when a call of the response is announced, before a runner began: the
        run ends at once (nothing waits for a runner that never takes a call), a call that
        started was cancelled, and every call reads that it was cancelled."""
        worker, party = party_worker(response(hang("a"), hang("b"), hang("c")))
        running = 0
        with anyio.fail_after(GUARD):
            with anyio.CancelScope() as scope:
                async with worker.run_stream("go") as stream:
                    async for event in stream:
                        if isinstance(event, ToolCallRunning):
                            if running == at:
                                scope.cancel()  # and go on reading without a checkpoint
                            running += 1
            assert scope.cancelled_caught
            started = [entry[len("start ") :] for entry in party.log if entry.startswith("start")]
            assert sorted(party.log) == sorted(
                [*(f"start {n}" for n in started), *(f"exit {n}" for n in started)]
            )
            assert contents(worker) == [CANCELLED.format("hang")] * 3
            assert await worker.run("next") is WorkerResult.FINISHED
        assert_history_valid(worker.history)

    @pytest.mark.anyio
    async def test_leaving_while_calls_in_a_row_run(self):
        """Leaving the stream while one runner runs calls in a row cancels the one running;
        the rest never start, and a new run works."""
        worker, party = party_worker(
            response(quick("a"), hang("b"), quick("c"), quick("d")),
            limits=Limits(max_concurrent_calls=1),
        )
        with anyio.fail_after(GUARD):
            async with worker.run_stream("go") as stream:
                async for _ in stream:
                    if "start b" in party.log:
                        break
                    await anyio.lowlevel.checkpoint()
        assert party.log == ["quick a", "start b", "exit b"]
        assert contents(worker) == [
            "a done",
            CANCELLED.format("hang"),
            CANCELLED.format("quick"),
            CANCELLED.format("quick"),
        ]
        assert_history_valid(worker.history)
