"""``llm_worker.otel.OpenTelemetry`` (``otel/_tracing.py``): the spans of a run, read back
from the SDK's in-memory exporter. Names, kinds, parents and attributes follow the GenAI
semantic conventions; every span ends, with its status, however the run ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import anyio
import anyio.from_thread
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import ExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import SpanKind, StatusCode
from otel_support import OpenAIScripted, Telemetry, parent_id, span_id
from pydantic import BaseModel

from llm_worker import (
    Abort,
    Approve,
    AssistantMessage,
    Completion,
    Deny,
    HookError,
    Limits,
    LlmClientError,
    OutputValidationError,
    Pause,
    ProviderError,
    RunState,
    Skip,
    TextDelta,
    ToolResult,
    Usage,
    Worker,
    WorkerAbortedError,
    WorkerResult,
    tool,
    tool_definitions,
    tool_registry,
)
from llm_worker.otel import SCHEMA_URL, SEMCONV_VERSION, OpenTelemetry
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

CONTENT_KEYS = {
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


@tool_registry
class Probe:
    """Tools that report the span current while they run, and open one of their own."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.in_thread: dict[str, bool] = {}
        self.released: anyio.Event | None = None
        self.tracer: trace.Tracer = trace.NoOpTracer()  # the application's own tracer

    @tool
    async def where(self, key: str) -> str:
        """Wait until the thread tool ran (so the two overlap), then report."""
        if self.released is not None:
            with anyio.fail_after(5):
                await self.released.wait()
        self.seen[key] = trace.get_current_span().get_span_context().span_id
        return "async ok"

    @tool
    def where_in_thread(self, key: str) -> str:
        """Report from a worker thread, open a child span, and release the async tool."""
        self.seen[key] = trace.get_current_span().get_span_context().span_id
        self.in_thread[key] = threading.current_thread() is not threading.main_thread()
        with self.tracer.start_as_current_span("inside the tool"):
            pass
        if self.released is not None:
            anyio.from_thread.run_sync(self.released.set)
        return "thread ok"

    @tool
    async def fail(self, why: str) -> str:
        """Always fails."""
        raise ValueError(why)

    @tool
    async def hang(self) -> str:
        """Never finishes."""
        await anyio.sleep_forever()
        return "never"


def traced(
    telemetry: Telemetry,
    script: list[ScriptedResponse | str],
    *,
    client: ScriptedClient | None = None,
    limits: Limits | None = None,
    **options: object,
) -> tuple[Worker, Probe]:
    worker = Worker(
        client or OpenAIScripted(script),
        system_prompt="Be brief.",
        instrumentation=telemetry.instrumentation(**options),
        limits=limits,
    )
    probe = Probe()
    probe.tracer = telemetry.tracer_provider.get_tracer("app")
    worker.register_tools(tool_definitions(probe))
    return worker, probe


def calls(*pairs: tuple[str, dict[str, object]], usage: Usage | None = None) -> ScriptedResponse:
    return ScriptedResponse(
        tool_calls=[ScriptedCall(name, json.dumps(args)) for name, args in pairs], usage=usage
    )


def tool_span(telemetry: Telemetry, call_id: str) -> ReadableSpan:
    (span,) = [
        s
        for s in telemetry.spans()
        if s.attributes is not None and s.attributes.get("gen_ai.tool.call.id") == call_id
    ]
    return span


def attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


class TestARun:
    @pytest.mark.anyio
    async def test_spans_of_a_run_with_parallel_calls(self, telemetry):
        """A run with an async and a thread tool running together: one invoke_agent span
        (INTERNAL) whose children are each chat span (CLIENT) and each execute_tool span
        (INTERNAL); each call's span is current inside it, in its task and its thread."""
        script = [
            calls(
                ("where", {"key": "a"}),
                ("where_in_thread", {"key": "b"}),
                usage=Usage(input_tokens=120, output_tokens=30, cached_input_tokens=100),
            ),
            ScriptedResponse(text="done", usage=Usage(input_tokens=200, output_tokens=5)),
        ]
        worker, probe = traced(telemetry, script)
        probe.released = anyio.Event()
        app = telemetry.tracer_provider.get_tracer("app")
        with anyio.fail_after(10), app.start_as_current_span("request handler") as outer:
            await worker.run("go")

        run = telemetry.one("invoke_agent")
        chats = telemetry.named("chat gpt-test")
        tool_a, tool_b = tool_span(telemetry, "call_0_0"), tool_span(telemetry, "call_0_1")
        assert [s.name for s in (tool_a, tool_b)] == [
            "execute_tool where",
            "execute_tool where_in_thread",
        ]
        assert run.kind is SpanKind.INTERNAL
        assert parent_id(run) == outer.get_span_context().span_id
        assert len(chats) == 2
        for child in (*chats, tool_a, tool_b):
            assert parent_id(child) == span_id(run)
            assert child.context is not None
            assert run.context is not None
            assert child.context.trace_id == run.context.trace_id
        assert {s.kind for s in chats} == {SpanKind.CLIENT}
        assert {s.kind for s in (tool_a, tool_b)} == {SpanKind.INTERNAL}
        # Each call saw its own span as the current one, in the task and in the thread.
        assert probe.seen == {"a": span_id(tool_a), "b": span_id(tool_b)}
        assert probe.in_thread == {"b": True}
        assert parent_id(telemetry.one("inside the tool")) == span_id(tool_b)
        # The two calls overlapped: the async one waited for the thread one to run.
        a_start, a_end = tool_a.start_time or 0, tool_a.end_time or 0
        b_start, b_end = tool_b.start_time or 0, tool_b.end_time or 0
        assert a_start < b_end
        assert b_start < a_end

        assert attributes(run) == {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-test",
            "llm_worker.run.kind": "run",
            "llm_worker.run.outcome": "finished",
            "llm_worker.run.requests": 2,
            "llm_worker.run.tool_calls": 2,
            "gen_ai.usage.input_tokens": 320,
            "gen_ai.usage.output_tokens": 35,
            "gen_ai.usage.cache_read.input_tokens": 100,
        }
        first, second = sorted(chats, key=lambda s: s.start_time or 0)
        first_chunk = attributes(first)["gen_ai.response.time_to_first_chunk"]
        assert isinstance(first_chunk, float)
        assert attributes(first) == {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-test",
            "gen_ai.request.stream": True,
            "gen_ai.response.time_to_first_chunk": first_chunk,
            "gen_ai.response.finish_reasons": ("tool_call",),
            "gen_ai.usage.input_tokens": 120,
            "gen_ai.usage.output_tokens": 30,
            "gen_ai.usage.cache_read.input_tokens": 100,
        }
        assert attributes(second)["gen_ai.response.finish_reasons"] == ("stop",)
        assert attributes(tool_a) == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "where",
            "gen_ai.tool.call.id": "call_0_0",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": (
                "Wait until the thread tool ran (so the two overlap), then report."
            ),
        }
        for span in (run, *chats, tool_a, tool_b):
            assert span.status.status_code is StatusCode.UNSET
            assert span.instrumentation_scope is not None
            assert span.instrumentation_scope.name == "llm_worker"
            assert span.instrumentation_scope.schema_url == SCHEMA_URL
        assert SCHEMA_URL.endswith(SEMCONV_VERSION)

    @pytest.mark.anyio
    async def test_the_stream_reader_runs_outside_every_span(self, telemetry):
        """Code reading run_stream() never runs inside a span of the run."""
        worker, _ = traced(telemetry, [calls(("where_in_thread", {"key": "a"})), "done"])
        async with worker.run_stream("go") as stream:
            async for _ in stream:
                assert not trace.get_current_span().get_span_context().is_valid
        assert len(telemetry.spans()) == 5  # run, two requests, the call, the tool's own

    @pytest.mark.anyio
    async def test_agent_name_and_a_client_that_tells_nothing(self, telemetry):
        """agent_name names the run span; a client without provider or model is named
        by its class, and its chat spans are just "chat"."""
        worker, _ = traced(
            telemetry, [], client=ScriptedClient(["hello"]), agent_name="Support bot"
        )
        await worker.run("hi")
        run = telemetry.one("invoke_agent Support bot")
        assert attributes(run)["gen_ai.agent.name"] == "Support bot"
        assert attributes(run)["gen_ai.provider.name"] == "ScriptedClient"
        chat = telemetry.one("chat")
        assert "gen_ai.request.model" not in attributes(chat)

    @pytest.mark.anyio
    async def test_server_address_from_the_clients_base_url(self, telemetry):
        """A client with a base_url gives the chat spans server.address and server.port."""

        class Hosted(OpenAIScripted):
            base_url = "https://llm.example.com/v1"

        worker, _ = traced(telemetry, [], client=Hosted(["hello"]))
        await worker.run("hi")
        chat = attributes(telemetry.one("chat gpt-test"))
        assert (chat["server.address"], chat["server.port"]) == ("llm.example.com", 443)
        assert "server.address" not in attributes(telemetry.one("invoke_agent"))

    @pytest.mark.anyio
    async def test_a_worker_called_by_a_tool_nests_under_that_call(self, telemetry):
        """An agent used as a tool: the inner worker's run is a child of the outer call's
        execute_tool span, in the same trace."""
        inner = Worker(
            OpenAIScripted(["inner answer"]), instrumentation=telemetry.instrumentation()
        )

        @tool_registry
        class Delegate:
            @tool
            async def ask_expert(self, question: str) -> str:
                """Ask another agent."""
                await inner.run(question)
                return inner.final_text or ""

        outer = Worker(
            OpenAIScripted([calls(("ask_expert", {"question": "why?"})), "done"]),
            instrumentation=telemetry.instrumentation(agent_name="outer"),
        )
        outer.register_tools(tool_definitions(Delegate()))
        await outer.run("go")
        call = telemetry.one("execute_tool ask_expert")
        nested = telemetry.one("invoke_agent")
        assert parent_id(nested) == span_id(call)
        assert parent_id(call) == span_id(telemetry.one("invoke_agent outer"))


class TestErrors:
    @pytest.mark.anyio
    async def test_error_results_set_the_error_status(self, telemetry):
        """A call whose result is an error ends its span with the error status and an
        error.type naming the failure; the description (the text the model reads, which
        can quote arguments) is left out without capture_content."""
        script = [calls(("fail", {"why": "disk full"}), ("where", {"key": 5})), "done"]
        worker, _ = traced(telemetry, script)
        await worker.run("go")
        failed, invalid = tool_span(telemetry, "call_0_0"), tool_span(telemetry, "call_0_1")
        assert failed.status.status_code is StatusCode.ERROR
        assert attributes(failed)["error.type"] == "ExecutionFailedError"
        assert failed.status.description is None
        assert invalid.status.status_code is StatusCode.ERROR
        assert attributes(invalid)["error.type"] == "InvalidArgumentError"
        run = telemetry.one("invoke_agent")
        assert run.status.status_code is StatusCode.UNSET  # the run itself went fine

    @pytest.mark.anyio
    async def test_a_timed_out_call(self, telemetry):
        """A call past Limits.tool_timeout ends with error.type "timeout"."""
        worker, _ = traced(
            telemetry, [calls(("hang", {})), "done"], limits=Limits(tool_timeout=0.05)
        )
        with anyio.fail_after(5):
            await worker.run("go")
        span = tool_span(telemetry, "call_0_0")
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["error.type"] == "timeout"

    @pytest.mark.anyio
    async def test_a_provider_error(self, telemetry):
        """A provider error ends the chat span and the run span with the error status,
        error.type the HTTP status, and the error's text as description."""

        def overloaded(request):
            raise ProviderError("openai", "overloaded", status=529, retryable=True)

        worker, _ = traced(telemetry, [], client=OpenAIScripted([overloaded]))
        with pytest.raises(ProviderError):
            await worker.run("go")
        chat, run = telemetry.one("chat gpt-test"), telemetry.one("invoke_agent")
        for span in (chat, run):
            assert span.status.status_code is StatusCode.ERROR
            assert span.status.description == "openai request failed (HTTP 529): overloaded"
            assert attributes(span)["error.type"] == "529"
        assert attributes(run)["llm_worker.run.outcome"] == "failed"
        assert attributes(run)["llm_worker.run.requests"] == 0

    @pytest.mark.anyio
    async def test_an_error_without_a_status_is_named_by_its_class(self, telemetry):
        """Any other failure of the client: error.type is the exception's class."""

        def broken(request):
            raise ProviderError("openai", "connection refused")

        worker, _ = traced(telemetry, [], client=OpenAIScripted([broken]))
        with pytest.raises(ProviderError):
            await worker.run("go")
        assert attributes(telemetry.one("chat gpt-test"))["error.type"] == "ProviderError"

    @pytest.mark.anyio
    async def test_an_abort(self, telemetry):
        """An abort is an event on the run span, which ends with the error status."""
        worker, _ = traced(telemetry, [calls(("where", {"key": "a"}))])
        worker.add_pre_tool_call_hook(lambda ctx: Abort("budget spent"))
        with pytest.raises(WorkerAbortedError):
            await worker.run("go")
        run = telemetry.one("invoke_agent")
        assert run.status.status_code is StatusCode.ERROR
        assert attributes(run)["error.type"] == "WorkerAbortedError"
        assert attributes(run)["llm_worker.run.outcome"] == "aborted"
        assert [dict(e.attributes or {}) for e in run.events] == [
            {
                "llm_worker.decision": "aborted",
                "llm_worker.decision.reason": "budget spent",
                "gen_ai.tool.name": "where",
                "gen_ai.tool.call.id": "call_0_0",
            }
        ]
        assert not telemetry.named("execute_tool where")


class TestDecisions:
    @pytest.mark.anyio
    async def test_skip_pause_and_resume(self, telemetry):
        """Skipped, unknown and held calls are events on the run span (no execute_tool
        span); the paused run ends as such; resume() is a run of its own, whose calls
        get their spans; a denial is an event on it."""
        script = [
            calls(
                ("where", {"key": "skip me"}),
                ("nope", {}),
                ("where", {"key": "hold me"}),
                ("where_in_thread", {"key": "hold me too"}),
            ),
            "done",
        ]
        worker, _ = traced(telemetry, script)

        def decide(ctx):
            if "skip" in ctx.call.input_json:
                return Skip("not needed")
            return Pause("ask a human")

        worker.add_pre_tool_call_hook(decide)
        await worker.run("go")
        first = telemetry.one("invoke_agent")
        assert attributes(first)["llm_worker.run.outcome"] == "paused"
        assert first.status.status_code is StatusCode.UNSET
        assert [
            (e.name, (e.attributes or {}).get("llm_worker.decision")) for e in first.events
        ] == [
            ("llm_worker.tool_call.decision", "skipped"),
            ("llm_worker.tool_call.decision", "not_found"),
            ("llm_worker.tool_call.decision", "paused"),
            ("llm_worker.tool_call.decision", "paused"),
        ]
        assert (first.events[0].attributes or {})["llm_worker.decision.reason"] == "not needed"
        assert dict(first.events[2].attributes or {}) == {
            "llm_worker.decision": "paused",
            "llm_worker.decision.reason": "ask a human",
            "gen_ai.tool.name": "where",
            "gen_ai.tool.call.id": "call_0_2",
        }
        assert not [s for s in telemetry.spans() if s.name.startswith("execute_tool")]

        telemetry.exporter.clear()
        await worker.resume({"call_0_2": Approve(), "call_0_3": Deny("no threads today")})
        second = telemetry.one("invoke_agent")
        assert attributes(second)["llm_worker.run.kind"] == "resume"
        assert attributes(second)["llm_worker.run.outcome"] == "finished"
        assert [dict(e.attributes or {}) for e in second.events] == [
            {
                "llm_worker.decision": "denied",
                "llm_worker.decision.reason": "no threads today",
                "gen_ai.tool.name": "where_in_thread",
                "gen_ai.tool.call.id": "call_0_3",
            }
        ]
        approved = telemetry.one("execute_tool where")
        assert parent_id(approved) == span_id(second)
        assert parent_id(telemetry.one("chat gpt-test")) == span_id(second)


class TestHooksInTheRunSpan:
    @pytest.mark.anyio
    async def test_hooks_and_approval_policies_trace_inside_the_run(self, telemetry):
        """A pre-hook, an approval policy and a post-hook run with the run's span current:
        the spans they open are the run's children, and nothing stays current after."""
        worker = Worker(
            OpenAIScripted([calls(("where", {"key": "a"})), "done"]),
            instrumentation=telemetry.instrumentation(),
        )
        probe = Probe()
        tracer = telemetry.tracer_provider.get_tracer("app")
        seen: list[str] = []

        def before(ctx):
            with tracer.start_as_current_span("pre-hook"):
                seen.append("pre")

        def policy(ctx):
            with tracer.start_as_current_span("approval policy"):
                seen.append("policy")
            return False

        def after(ctx):
            with tracer.start_as_current_span("post-hook"):
                seen.append("post")

        worker.register_tools(tool_definitions(probe), requires_approval=policy)
        worker.add_pre_tool_call_hook(before)
        worker.add_post_tool_call_hook(after)
        async with worker.run_stream("go") as stream:
            async for _ in stream:
                assert not trace.get_current_span().get_span_context().is_valid
        assert seen == ["pre", "policy", "post"]
        run = telemetry.one("invoke_agent")
        for name in ("pre-hook", "approval policy", "post-hook"):
            assert parent_id(telemetry.one(name)) == span_id(run), name
        assert not trace.get_current_span().get_span_context().is_valid


@tool_registry
class Gated:
    """``step`` calls: "2" waits until "3" ran, so "3"'s result comes before "2"'s."""

    def __init__(self) -> None:
        self.gate = anyio.Event()

    @tool
    async def step(self, k: str) -> str:
        """One step."""
        if k == "2":
            with anyio.fail_after(5):
                await self.gate.wait()
        elif k == "3":
            self.gate.set()
        return f"ok {k}"


def decisions_of(span: ReadableSpan) -> list[tuple[object, object, object]]:
    return [
        (
            (e.attributes or {}).get("gen_ai.tool.call.id"),
            (e.attributes or {}).get("llm_worker.decision"),
            (e.attributes or {}).get("llm_worker.decision.reason"),
        )
        for e in span.events
    ]


class TestDecisionsWhenARunStops:
    """One decision event per call that did not run (its outcome as the history records
    it), none for a call that ran: its execute_tool span says so."""

    @staticmethod
    def gated(telemetry: Telemetry) -> Worker:
        script = [
            ScriptedResponse(
                tool_calls=[ScriptedCall("step", json.dumps({"k": k})) for k in "123"]
            ),
            "done",
        ]
        worker = Worker(OpenAIScripted(script), instrumentation=telemetry.instrumentation())
        worker.register_tools(tool_definitions(Gated()))
        return worker

    @staticmethod
    def outcomes(worker: Worker) -> dict[str, str]:
        results = [m for m in worker.history if isinstance(m, ToolResult)]
        return {r.call_id: r.content for r in results}

    @pytest.mark.anyio
    async def test_a_pre_hook_abort_reports_every_call_that_never_ran(self, telemetry):
        """A pre-hook aborts at the second call: the first (ready) and third (undecided)
        never ran either, and each gets its "aborted" event, in call order."""
        worker = self.gated(telemetry)
        worker.add_pre_tool_call_hook(
            lambda ctx: Abort("no") if '"2"' in ctx.call.input_json else None
        )
        with anyio.fail_after(5), pytest.raises(WorkerAbortedError):
            await worker.run("go")
        run = telemetry.one("invoke_agent")
        assert decisions_of(run) == [
            ("call_0_0", "aborted", "no"),
            ("call_0_1", "aborted", "no"),
            ("call_0_2", "aborted", "no"),
        ]
        assert not telemetry.named("execute_tool step")
        assert all("did not run" in text for text in self.outcomes(worker).values())

    @pytest.mark.anyio
    async def test_a_post_hook_abort_reports_only_the_withheld_result(self, telemetry):
        """A post-hook aborts on the second call's result: the calls that ran and were
        reviewed get no event (their spans say they ran); the third ran, but its result
        was withheld from the model: one "withheld" event."""
        worker = self.gated(telemetry)
        worker.add_post_tool_call_hook(
            lambda ctx: Abort("no") if '"2"' in ctx.call.input_json else None
        )
        with anyio.fail_after(5), pytest.raises(WorkerAbortedError):
            await worker.run("go")
        outcomes = self.outcomes(worker)
        assert (outcomes["call_0_0"], outcomes["call_0_1"]) == ("ok 1", "ok 2")
        assert "withheld" in outcomes["call_0_2"]
        run = telemetry.one("invoke_agent")
        assert decisions_of(run) == [("call_0_2", "withheld", "no")]
        assert len(telemetry.named("execute_tool step")) == 3

    @pytest.mark.anyio
    async def test_calls_announced_but_never_begun_are_reported(self, telemetry):
        """The reader leaves at the first ToolCallRunning: no call began (no span), and
        each gets its one "not_run" event (the announced ones had none)."""
        from llm_worker import ToolCallRunning

        worker = self.gated(telemetry)
        with anyio.fail_after(5):
            async with worker.run_stream("go") as stream:
                async for event in stream:
                    if isinstance(event, ToolCallRunning):
                        break
        assert not telemetry.named("execute_tool step")
        run = telemetry.one("invoke_agent")
        assert [(call_id, outcome) for call_id, outcome, _ in decisions_of(run)] == [
            ("call_0_0", "not_run"),
            ("call_0_1", "not_run"),
            ("call_0_2", "not_run"),
        ]

    @pytest.mark.anyio
    async def test_a_hook_error_reports_the_calls_that_never_ran(self, telemetry):
        """A pre-hook that fails: the calls that never ran are "not_run"."""
        worker = self.gated(telemetry)

        def failing(ctx):
            if '"2"' in ctx.call.input_json:
                raise RuntimeError("hook broke")

        worker.add_pre_tool_call_hook(failing)
        with anyio.fail_after(5), pytest.raises(HookError):
            await worker.run("go")
        assert decisions_of(telemetry.one("invoke_agent")) == [
            ("call_0_0", "not_run", None),
            ("call_0_1", "not_run", None),
            ("call_0_2", "not_run", None),
        ]


class TestCancellation:
    @pytest.mark.anyio
    async def test_a_cancelled_run_ends_every_span(self, telemetry):
        """A run cancelled while its calls run: every span ends, with the error status and
        error.type "cancelled", and the run's outcome is "cancelled"."""
        worker, _ = traced(telemetry, [calls(("hang", {}), ("hang", {})), "done"])
        with anyio.fail_after(5), anyio.move_on_after(0.1):
            await worker.run("go")
        calls_ = [tool_span(telemetry, "call_0_0"), tool_span(telemetry, "call_0_1")]
        run = telemetry.one("invoke_agent")
        for span in (*calls_, run):
            assert span.end_time is not None
            assert span.status.status_code is StatusCode.ERROR
            assert attributes(span)["error.type"] == "cancelled"
        assert attributes(run)["llm_worker.run.outcome"] == "cancelled"
        assert telemetry.one("chat gpt-test").status.status_code is StatusCode.UNSET

    @pytest.mark.anyio
    async def test_leaving_a_stream_mid_response_ends_the_chat_span(self, telemetry):
        """A reader that leaves while the response streams in ends its chat span as
        cancelled."""
        worker, _ = traced(telemetry, [ScriptedResponse(text="a long answer", chunk_size=1)])
        async with worker.run_stream("go") as stream:
            async for event in stream:
                if type(event).__name__ == "TextDelta":
                    break
        chat = telemetry.one("chat gpt-test")
        assert chat.status.status_code is StatusCode.ERROR
        assert attributes(chat)["error.type"] == "cancelled"
        assert attributes(telemetry.one("invoke_agent"))["llm_worker.run.outcome"] == "cancelled"


class TestContent:
    @pytest.mark.anyio
    async def test_content_is_absent_by_default(self, telemetry):
        """Without capture_content no span carries messages, prompts, tool definitions,
        arguments or results."""
        script = [calls(("where_in_thread", {"key": "secret"}), ("fail", {"why": "x"})), "ok"]
        worker, _ = traced(telemetry, script)
        await worker.run("my password is hunter2")
        assert telemetry.spans()
        for span in telemetry.spans():
            assert not CONTENT_KEYS & set(attributes(span)), span.name
            assert "hunter2" not in json.dumps(attributes(span), default=str)
            assert span.status.description is None or "x" not in span.status.description
        assert OpenTelemetry().capture_content is False

    @pytest.mark.anyio
    async def test_content_when_opted_in(self, telemetry):
        """capture_content=True records the conventions' content attributes, as JSON text:
        system instructions, input and output messages, tool definitions, each call's
        arguments and result, and an error result's text as its span's description."""
        script = [calls(("where", {"key": "k"}), ("fail", {"why": "no disk"})), "all done"]
        worker, _ = traced(telemetry, script, capture_content=True)
        await worker.run("hello")
        run = attributes(telemetry.one("invoke_agent"))
        assert json.loads(run["gen_ai.system_instructions"]) == [
            {"type": "text", "content": "Be brief."}
        ]
        definitions = json.loads(run["gen_ai.tool.definitions"])
        assert [d["name"] for d in definitions] == ["fail", "hang", "where", "where_in_thread"]
        assert definitions[0]["type"] == "function"
        assert definitions[0]["parameters"]["properties"] == {"why": {"type": "string"}}

        first, second = sorted(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
        assert json.loads(attributes(first)["gen_ai.input.messages"]) == [
            {"role": "user", "parts": [{"type": "text", "content": "hello"}]}
        ]
        assert json.loads(attributes(first)["gen_ai.output.messages"]) == [
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call_0_0",
                        "name": "where",
                        "arguments": {"key": "k"},
                    },
                    {
                        "type": "tool_call",
                        "id": "call_0_1",
                        "name": "fail",
                        "arguments": {"why": "no disk"},
                    },
                ],
                "finish_reason": "tool_call",
            }
        ]
        history = json.loads(attributes(second)["gen_ai.input.messages"])
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool"]
        assert history[2]["parts"] == [
            {"type": "tool_call_response", "id": "call_0_0", "response": "async ok"}
        ]
        assert json.loads(attributes(second)["gen_ai.output.messages"])[0]["parts"] == [
            {"type": "text", "content": "all done"}
        ]
        ok, failed = tool_span(telemetry, "call_0_0"), tool_span(telemetry, "call_0_1")
        assert attributes(ok)["gen_ai.tool.call.arguments"] == '{"key": "k"}'
        assert attributes(ok)["gen_ai.tool.call.result"] == "async ok"
        assert "gen_ai.tool.call.result" not in attributes(failed)
        assert failed.status.description == "Execution failed: no disk"


class TestNoTracer:
    @pytest.mark.anyio
    async def test_a_noop_tracer_starts_no_spans_and_activates_nothing(self, telemetry):
        """With a tracer provider that traces nothing, a run activates no span context
        (a tool sees none) and still records its metrics."""
        worker = Worker(
            OpenAIScripted([calls(("where", {"key": "a"})), "done"]),
            instrumentation=OpenTelemetry(
                tracer_provider=trace.NoOpTracerProvider(),
                meter_provider=telemetry.meter_provider,
            ),
        )
        probe = Probe()
        worker.register_tools(tool_definitions(probe))
        await worker.run("go")
        assert probe.seen == {"a": trace.INVALID_SPAN_ID}
        assert [p.count for p in telemetry.points("gen_ai.execute_tool.duration")] == [1]
        assert [p.count for p in telemetry.points("gen_ai.client.operation.duration")] == [2]


class FailingProcessor(SpanProcessor):
    """A span processor of the application's that raises when a span of ``name`` starts
    or ends (``when``), as a buggy or overloaded one does."""

    def __init__(self, name: str, when: str) -> None:
        self.name, self.when = name, when

    def on_start(self, span, parent_context=None) -> None:
        if self.when == "start" and span.name.startswith(self.name):
            raise RuntimeError("processor down")

    def on_end(self, span) -> None:
        if self.when == "end" and span.name.startswith(self.name):
            raise RuntimeError("processor down")


class TestFailingTelemetry:
    """Telemetry never changes a run: an SDK that raises is logged, and the run goes on."""

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("name", "when"),
        [
            ("invoke_agent", "start"),
            ("invoke_agent", "end"),
            ("chat", "start"),
            ("chat", "end"),
            ("execute_tool", "start"),
            ("execute_tool", "end"),
        ],
    )
    @pytest.mark.parametrize("parallel", [False, True])
    async def test_a_raising_span_processor(self, telemetry, caplog, name, when, parallel):
        telemetry.tracer_provider.add_span_processor(FailingProcessor(name, when))
        pairs = [("where", {"key": "a"})] + ([("where", {"key": "b"})] if parallel else [])
        worker, _ = traced(telemetry, [calls(*pairs), "done"])
        with anyio.fail_after(5):
            assert await worker.run("go") is WorkerResult.FINISHED
        results = [m.content for m in worker.history if isinstance(m, ToolResult)]
        assert results == ["async ok"] * len(pairs)  # the calls' real results
        assert worker.history[-1] == AssistantMessage("done", (), "end_turn")
        assert "OpenTelemetry failed to" in caplog.text
        with anyio.fail_after(5):  # and the worker goes on
            worker._session.client.add("again")  # type: ignore[attr-defined]
            assert await worker.run("more") is WorkerResult.FINISHED


DEEP = '{"key": ' + "[" * 3000 + "]" * 3000 + "}"  # the model's arguments: too deep to parse


class RaisingFilter(ExemplarFilter):
    """An exemplar filter that raises on every measurement, as a broken metrics SDK
    extension of the application's does."""

    def should_sample(self, value, time_unix_nano, attributes, context) -> bool:
        raise RuntimeError("metrics backend down")


class TestTelemetryNeverChangesARun:
    @pytest.mark.anyio
    async def test_arguments_too_deep_to_parse_are_recorded_as_their_text(self, telemetry, caplog):
        """capture_content=True with arguments nested too deep for json (RecursionError):
        the run goes on as it would untraced, every span ends, and the output messages
        give the arguments as their raw text, as for arguments that are not JSON."""
        worker, _ = traced(
            telemetry,
            [ScriptedResponse(tool_calls=[ScriptedCall("where", DEEP)]), "done"],
            capture_content=True,
        )
        with anyio.fail_after(10):
            assert await worker.run("go") is WorkerResult.FINISHED
        first, second = sorted(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
        (output,) = json.loads(attributes(first)["gen_ai.output.messages"])
        assert output["parts"][0]["arguments"] == DEEP
        sent = json.loads(attributes(second)["gen_ai.input.messages"])
        assert sent[1]["parts"][0]["arguments"] == DEEP
        assert attributes(telemetry.one("invoke_agent"))["llm_worker.run.outcome"] == "finished"
        assert len(telemetry.named("execute_tool where")) == 1
        assert "RecursionError" not in caplog.text

    @pytest.mark.anyio
    async def test_a_client_attribute_that_raises(self, telemetry, caplog):
        """Every entry point of the observer is shielded: a client whose ``model`` raises
        when read (the observer's run() reads it) is logged, and the run goes on."""

        class Broken(OpenAIScripted):
            @property
            def model(self) -> str:  # type: ignore[override]
                raise RuntimeError("no model configured")

        worker, _ = traced(telemetry, [], client=Broken([calls(("where", {"key": "a"})), "ok"]))
        with anyio.fail_after(5):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert "OpenTelemetry failed to start a run's span" in caplog.text
        assert worker.final_text == "ok"

    @pytest.mark.anyio
    async def test_a_failing_measurement_still_ends_every_span(self, telemetry, caplog):
        """A metrics SDK that raises on every record (here an exemplar filter): each
        failed measurement is logged and lost, and every span still ends and exports."""
        meters = MeterProvider(
            metric_readers=[InMemoryMetricReader()], exemplar_filter=RaisingFilter()
        )
        worker = Worker(
            OpenAIScripted([calls(("where", {"key": "a"}), usage=Usage(5, 1)), "done"]),
            instrumentation=OpenTelemetry(
                tracer_provider=telemetry.tracer_provider, meter_provider=meters
            ),
        )
        worker.register_tools(tool_definitions(Probe()))
        with anyio.fail_after(5):
            assert await worker.run("go") is WorkerResult.FINISHED
        assert sorted(s.name for s in telemetry.spans()) == [
            "chat gpt-test",
            "chat gpt-test",
            "execute_tool where",
            "invoke_agent",
        ]
        first = min(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
        assert attributes(first)["gen_ai.usage.input_tokens"] == 5  # described all the same
        assert "OpenTelemetry failed to record a measurement" in caplog.text


class TestWhatSpansSay:
    @pytest.mark.anyio
    async def test_every_request_streams_and_its_first_chunk_is_timed(self, telemetry):
        """gen_ai.request.stream is True on every chat span (every LlmClient request
        streams); gen_ai.response.time_to_first_chunk is the seconds from the request to
        its stream's first event."""

        class Slow(OpenAIScripted):
            async def stream(self, request):
                await anyio.sleep(0.05)
                async for event in super().stream(request):
                    yield event

        worker, _ = traced(telemetry, [], client=Slow([calls(("where", {"key": "a"})), "ok"]))
        with anyio.fail_after(5):
            await worker.run("go")
        chats = telemetry.named("chat gpt-test")
        assert len(chats) == 2
        for chat in chats:
            assert attributes(chat)["gen_ai.request.stream"] is True
            first_chunk = attributes(chat)["gen_ai.response.time_to_first_chunk"]
            assert isinstance(first_chunk, float)
            assert chat.start_time is not None
            assert chat.end_time is not None
            assert 0.05 <= first_chunk <= (chat.end_time - chat.start_time) / 1e9

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("stop_reason", "finish_reason"),
        [
            ("end_turn", "stop"),
            ("max_tokens", "length"),
            ("refusal", "content_filter"),
            ("content_filter", "content_filter"),
            ("stop_sequence", "stop"),  # Chat Completions' "stop" includes stop sequences
            ("safety", "content_filter"),  # Gemini's
            ("recitation", "content_filter"),
            ("other", "other"),  # no counterpart: as it is
        ],
    )
    async def test_finish_reasons_are_the_conventions(self, telemetry, stop_reason, finish_reason):
        """gen_ai.response.finish_reasons and the output message's finish_reason use the
        conventions' values where the stop reason has one (tool_use is tool_call)."""
        script = [calls(("where", {"key": "a"})), ScriptedResponse("hi", stop_reason=stop_reason)]
        worker, _ = traced(telemetry, script, capture_content=True)
        with anyio.fail_after(5):
            await worker.run("go")
        first, second = sorted(telemetry.named("chat gpt-test"), key=lambda s: s.start_time or 0)
        for span, expected in ((first, "tool_call"), (second, finish_reason)):
            assert attributes(span)["gen_ai.response.finish_reasons"] == (expected,)
            (output,) = json.loads(attributes(span)["gen_ai.output.messages"])
            assert output["finish_reason"] == expected

    @pytest.mark.anyio
    @pytest.mark.parametrize("capture", [False, True])
    async def test_a_client_error_is_content(self, telemetry, capture):
        """An LlmClientError quotes the client's event (the model's text): the chat span's
        and the run span's status give it only with capture_content=True."""

        class Replaying:
            provider = "openai"
            model = "gpt-test"

            async def stream(self, request):
                yield TextDelta("card 4111-1111-1111-1111")
                yield Completion("end_turn")
                yield TextDelta("card 4111-1111-1111-1111")

        worker = Worker(
            Replaying(), instrumentation=telemetry.instrumentation(capture_content=capture)
        )
        with anyio.fail_after(5), pytest.raises(LlmClientError):
            await worker.run("go")
        for span in (telemetry.one("chat gpt-test"), telemetry.one("invoke_agent")):
            assert span.status.status_code is StatusCode.ERROR
            assert attributes(span)["error.type"] == "LlmClientError"
            assert ("4111" in (span.status.description or "")) is capture

    @pytest.mark.anyio
    @pytest.mark.parametrize("capture", [False, True])
    async def test_a_bad_final_answer_is_content(self, telemetry, capture):
        """The run's status quotes the model's bad structured answer only with
        capture_content=True (OutputValidationError quotes it)."""

        class Person(BaseModel):
            age: int

        client = OpenAIScripted(['{"age": "SSN-123-45-6789"}'] * 2)
        worker = Worker(client, instrumentation=telemetry.instrumentation(capture_content=capture))
        with pytest.raises(OutputValidationError):
            await worker.run("go", output_type=Person)
        run = telemetry.one("invoke_agent")
        assert attributes(run)["error.type"] == "OutputValidationError"
        description = run.status.description or ""
        assert ("SSN-123" in description) is capture

    @pytest.mark.anyio
    async def test_a_hooks_failure_is_content(self, telemetry):
        worker, _ = traced(telemetry, [calls(("where", {"key": "hunter2"}))])

        def quoting(ctx):
            raise ValueError(f"cannot check {ctx.call.input_json}")

        worker.add_pre_tool_call_hook(quoting)
        with pytest.raises(HookError):
            await worker.run("go")
        run = telemetry.one("invoke_agent")
        assert attributes(run)["error.type"] == "HookError"
        assert run.status.description is None

    @pytest.mark.anyio
    async def test_a_resume_reports_what_it_cost_itself(self, telemetry):
        """resume()'s span counts its own requests, calls and tokens (its budgets count the
        run's too): summed over a run's spans, nothing is counted twice."""
        script = [
            calls(("where", {"key": "a"}), usage=Usage(100, 10)),
            ScriptedResponse(text="done", usage=Usage(200, 20)),
        ]
        worker, _ = traced(telemetry, script)
        worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
        await worker.run("go")
        first = attributes(telemetry.one("invoke_agent"))
        telemetry.exporter.clear()
        await worker.resume(Approve())
        second = attributes(telemetry.one("invoke_agent"))
        assert worker.run_usage.input_tokens == 300  # the budgets' count: the whole run
        counted = ("llm_worker.run.requests", "llm_worker.run.tool_calls")
        tokens = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
        assert [first[key] for key in counted + tokens] == [1, 1, 100, 10]
        assert [second[key] for key in counted + tokens] == [1, 0, 200, 20]

    @pytest.mark.anyio
    async def test_tokens_no_response_reported_are_not_reported(self, telemetry):
        worker, _ = traced(telemetry, ["done"])
        await worker.run("go")
        run = attributes(telemetry.one("invoke_agent"))
        assert run["llm_worker.run.requests"] == 1
        assert "gen_ai.usage.input_tokens" not in run
        assert "gen_ai.usage.output_tokens" not in run

    @pytest.mark.anyio
    async def test_a_tools_own_timeout_error_is_not_a_timeout(self, telemetry):
        """error.type "timeout" is for a call past Limits.tool_timeout, not a tool whose
        own error says "timed out"."""

        @tool_registry
        class Upstream:
            @tool
            async def fetch(self) -> str:
                """Fetch."""
                raise TimeoutError("upstream API timed out after 3s")

        worker = Worker(
            OpenAIScripted([calls(("fetch", {})), "done"]),
            instrumentation=telemetry.instrumentation(),
        )
        worker.register_tools(tool_definitions(Upstream()))
        await worker.run("go")
        span = telemetry.one("execute_tool fetch")
        assert attributes(span)["error.type"] == "ExecutionFailedError"

    @pytest.mark.anyio
    async def test_an_answer_through_the_output_tool_is_no_decision(self, telemetry):
        """The final_result call is the loop's own: no decision event (those are for calls
        that did not run as asked)."""

        class Person(BaseModel):
            age: int

        client = OpenAIScripted(
            [calls(("final_result", {"age": 3})), "done"], supports_output_format=False
        )
        worker = Worker(client, instrumentation=telemetry.instrumentation())
        await worker.run("go", output_type=Person)
        assert worker.output == Person(age=3)
        assert telemetry.one("invoke_agent").events == ()

    @pytest.mark.anyio
    async def test_the_response_id_and_the_model_that_answered(self, telemetry):
        """gen_ai.response.id and gen_ai.response.model on the chat span, and the model on
        its measurements, when the provider says (here an alias answered by a dated model)."""
        script = [ScriptedResponse("hi", usage=Usage(3, 1), response_id="r1", model="gpt-t-0815")]
        worker, _ = traced(telemetry, script)
        await worker.run("go")
        chat = attributes(telemetry.one("chat gpt-test"))
        assert (chat["gen_ai.response.id"], chat["gen_ai.response.model"]) == ("r1", "gpt-t-0815")
        for metric in ("gen_ai.client.operation.duration", "gen_ai.client.token.usage"):
            for point in telemetry.points(metric):
                assert point.attributes["gen_ai.response.model"] == "gpt-t-0815"

    @pytest.mark.anyio
    async def test_a_structured_answers_request_has_output_type_json(self, telemetry):
        class Person(BaseModel):
            age: int

        worker = Worker(OpenAIScripted(['{"age": 3}']), instrumentation=telemetry.instrumentation())
        await worker.run("go", output_type=Person)
        assert attributes(telemetry.one("chat gpt-test"))["gen_ai.output.type"] == "json"
        telemetry.exporter.clear()
        worker.clear_history()
        worker._session.client.add("text")  # type: ignore[attr-defined]
        await worker.run("go")
        assert "gen_ai.output.type" not in attributes(telemetry.one("chat gpt-test"))


class CountingTracer(trace.NoOpTracer):
    """The API's no-op tracer (no SDK installed), counting the spans asked of it."""

    def __init__(self) -> None:
        self.started = 0

    def start_span(self, *args, **kwargs):
        self.started += 1
        return super().start_span(*args, **kwargs)


class CountingProvider(trace.NoOpTracerProvider):
    def __init__(self) -> None:
        self.tracer = CountingTracer()

    def get_tracer(self, *args, **kwargs):
        return self.tracer


@pytest.mark.anyio
async def test_no_sdk_under_a_remote_parent_starts_only_the_runs_span():
    """Without an SDK, a run under a parent from elsewhere (a framework extracted a
    traceparent) starts no child spans: the no-op span it gets is its parent's."""
    parent = trace.NonRecordingSpan(
        trace.SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=trace.TraceFlags(1))
    )
    provider = CountingProvider()
    worker = Worker(
        OpenAIScripted([calls(("where", {"key": "a"}), ("where", {"key": "b"})), "done"]),
        instrumentation=OpenTelemetry(tracer_provider=provider),
    )
    worker.register_tools(tool_definitions(Probe()))
    with trace.use_span(parent):
        assert await worker.run("go") is WorkerResult.FINISHED
    assert provider.tracer.started == 1


CONTINUED_APP = '''
import json, sys
import anyio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from llm_worker import Approve, Pause, RunState, Worker, tool, tool_definitions, tool_registry
from llm_worker.otel import OpenTelemetry
from llm_worker.testing import ScriptedCall, ScriptedClient, ScriptedResponse

@tool_registry
class Files:
    @tool
    async def delete(self, path: str) -> str:
        """Delete a file."""
        return "deleted " + path

async def main(phase, path):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    script = [ScriptedResponse(tool_calls=[ScriptedCall("delete", {"path": "a"})]), "done"]
    worker = Worker(ScriptedClient(script[1:] if phase == "second" else script),
                    instrumentation=OpenTelemetry(tracer_provider=provider))
    worker.register_tools(tool_definitions(Files()))
    if phase == "first":
        worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
        await worker.run("delete a")
        open(path, "w").write(worker.state.to_json())
    else:
        worker.load_state(RunState.from_json(open(path).read()))
        await worker.resume(Approve())
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    print(json.dumps({
        "trace": span.context.trace_id, "span": span.context.span_id,
        "links": [[l.context.trace_id, l.context.span_id, l.context.is_remote]
                  for l in span.links],
    }))

anyio.run(main, sys.argv[1], sys.argv[2])
'''


class TestContinuedRuns:
    @pytest.mark.anyio
    async def test_a_resume_links_to_the_paused_run(self, telemetry):
        """The resumed run's span links to the paused run's; a new run links to none."""
        worker, _ = traced(telemetry, [calls(("where", {"key": "a"})), "done", "again"])
        worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
        await worker.run("go")
        await worker.resume(Approve())
        await worker.run("next")
        paused, resumed, new = sorted(
            telemetry.named("invoke_agent"), key=lambda s: s.start_time or 0
        )
        assert [(link.context.trace_id, link.context.span_id) for link in resumed.links] == [
            (paused.context.trace_id, paused.context.span_id)
        ]
        assert paused.links == ()
        assert new.links == ()
        assert attributes(resumed)["llm_worker.run.kind"] == "resume"

    def test_a_resume_in_another_process_links_to_the_paused_run(self, tmp_path):
        """The link goes with the saved state: a process resuming it links its span to the
        span of the run that paused in another process."""
        app, state = tmp_path / "app.py", tmp_path / "state.json"
        app.write_text(CONTINUED_APP)
        run = [sys.executable, str(app)]
        options = {"capture_output": True, "text": True, "timeout": 60}
        first = subprocess.run([*run, "first", str(state)], check=False, **options)
        assert first.returncode == 0, first.stderr
        second = subprocess.run([*run, "second", str(state)], check=False, **options)
        assert second.returncode == 0, second.stderr
        paused, resumed = json.loads(first.stdout), json.loads(second.stdout)
        assert paused["links"] == []
        assert resumed["links"] == [[paused["trace"], paused["span"], True]]
        assert resumed["trace"] != paused["trace"]  # its own trace, linked

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "traceparent",
        ["00-zzzz", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "00-" + "a" * 32 + "-xyz", ""],
    )
    async def test_a_link_that_reads_as_no_span_is_left_out(self, telemetry, traceparent):
        """A saved link that is no valid trace context: the resumed run has no link, and
        runs as any other."""
        worker, _ = traced(telemetry, [calls(("where", {"key": "a"})), "done"])
        worker.add_pre_tool_call_hook(lambda ctx: Pause("ask"))
        await worker.run("go")
        data = json.loads(worker.state.to_json())
        data["run"]["trace_link"] = {"traceparent": traceparent}
        other, _ = traced(telemetry, ["done"])
        other.load_state(RunState.from_json(json.dumps(data)))
        assert await other.resume(Approve()) is WorkerResult.FINISHED
        resumed = max(telemetry.named("invoke_agent"), key=lambda s: s.start_time or 0)
        assert resumed.links == ()
        assert resumed.status.status_code is StatusCode.UNSET
