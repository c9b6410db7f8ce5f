"""What needs no server: the JSON that crosses Temporal, ActivityConfig, DurableWorker's checks."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import typing
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.common import RetryPolicy
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from llm_worker import (
    Approve,
    AssistantMessage,
    Completion,
    Deny,
    Limits,
    LlmRequest,
    LlmToolDefinition,
    PendingCall,
    ProviderError,
    ProviderItem,
    ProviderItemDone,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
    ToolUseStop,
    Usage,
    UserMessage,
    Worker,
    tool_definitions,
    tool_metas,
)
from llm_worker.temporal import ActivityConfig, DurableWorker, LlmWorkerPlugin
from llm_worker.temporal._activities import (
    MAX_FAILURE_TEXT,
    MAX_PROGRESS_MESSAGE,
    _Progress,
    _provider_failure,
    _sendable,
)
from llm_worker.temporal._definition import definition_changes
from llm_worker.temporal._payloads import payload_size
from llm_worker.temporal._plugin import PASSED_THROUGH, _pass_through
from llm_worker.temporal._wire import (
    coalesce,
    dump_decisions,
    dump_events,
    dump_pending,
    dump_request,
    load_decisions,
    load_events,
    load_pending,
    load_request,
)

from .durable_apps import Deps, Ledger


class TestWire:
    def test_a_request_crosses_as_json_and_comes_back_equal(self):
        """History (provider items, usage, calls), tools and the tool selection survive."""
        request = LlmRequest(
            "be terse",
            [
                UserMessage("hi"),
                AssistantMessage(
                    "on it",
                    (ToolCall("a", "credit", '{"x": 1}'),),
                    "tool_use",
                    Usage(3, 4, 1, 0),
                    (ProviderItem("anthropic", "thinking", '{"sig": "s"}'),),
                ),
                ToolResult("a", "done", False),
            ],
            [LlmToolDefinition(name="credit", description="Add.", input_schema={"type": "object"})],
            "required",
            ("credit",),
        )
        loaded = load_request(dump_request(request))
        assert loaded == request
        assert [m.usage for m in loaded.messages if isinstance(m, AssistantMessage)] == [
            Usage(3, 4, 1, 0)
        ]

    def test_a_response_travels_with_its_deltas_joined(self):
        """Runs of text and of one call's fragments become one event each; order stays."""
        events = [
            TextDelta("Lo"),
            TextDelta("oking"),
            ReasoningDelta("r1"),
            ReasoningDelta("r2"),
            ToolUseStart(0, "a", "credit"),
            ToolInputDelta(0, '{"x"'),
            ToolInputDelta(0, ": 1}"),
            ToolUseStart(1, "b", "audit"),
            ToolInputDelta(1, "{}"),
            ToolInputDelta(0, " "),
            ToolUseStop(0),
            ToolUseStop(1),
            ProviderItemDone(ProviderItem("openai", "reasoning", "{}")),
            Completion("tool_use", Usage(1, 2)),
        ]
        joined = coalesce(events)
        assert joined == [
            TextDelta("Looking"),
            ReasoningDelta("r1r2"),
            ToolUseStart(0, "a", "credit"),
            ToolInputDelta(0, '{"x": 1}'),
            ToolUseStart(1, "b", "audit"),
            ToolInputDelta(1, "{}"),
            ToolInputDelta(0, " "),
            ToolUseStop(0),
            ToolUseStop(1),
            ProviderItemDone(ProviderItem("openai", "reasoning", "{}")),
            Completion("tool_use", Usage(1, 2)),
        ]
        assert load_events(dump_events(joined)) == joined
        answered = [Completion("end_turn", None, "resp_1", "gpt-4o-2024-08-06")]
        assert load_events(dump_events(answered)) == answered
        # A response recorded before Completion had them replays as it was.
        assert load_events([{"type": "completion", "stop_reason": "end_turn", "usage": None}]) == [
            Completion("end_turn")
        ]

    def test_bad_data_is_refused_with_what_is_wrong(self):
        """A field of the wrong type or an unknown event is a ValueError naming it."""
        with pytest.raises(ValueError, match="'index' has the wrong type"):
            load_events([{"type": "tool_use_stop", "index": True}])
        with pytest.raises(ValueError, match="unknown model event type 'gossip'"):
            load_events([{"type": "gossip"}])
        with pytest.raises(ValueError, match="missing 'allowed_tools'"):
            load_request({"system_prompt": None, "messages": [], "tools": []})

    def test_decisions_cross_as_resume_takes_them(self):
        """Per call or one for all; approved arguments as text or an object."""
        decisions = {
            "a": Approve(),
            "b": Approve('{"x": 2}'),
            "c": Approve({"x": 3}),
            "d": Deny("no"),
        }
        assert load_decisions(dump_decisions(decisions)) == decisions
        assert load_decisions(dump_decisions(Deny("not today"))) == Deny("not today")
        with pytest.raises(ValueError, match="must be"):
            load_decisions({"calls": {"a": {"approve": "yes"}}})
        with pytest.raises(ValueError, match=re.escape('decisions must be {"all"')):
            load_decisions({"everything": True})
        with pytest.raises(TypeError, match="Approve\\(\\) or Deny\\(reason\\)"):
            dump_decisions({"a": "yes"})  # type: ignore[dict-item]

    def test_a_pending_call_crosses_with_its_tool_s_meta(self):
        """The pending query's items come back as the PendingCall a worker lists."""
        meta = Ledger.transfer_out.meta()
        pending = PendingCall(ToolCall("t", "transfer_out", "{}"), meta, "requires approval")
        assert load_pending(dump_pending(pending)) == pending


class TestActivityConfig:
    def test_timeouts_must_be_positive(self):
        """A zero or negative timeout is refused, naming the field."""
        with pytest.raises(
            ValueError,
            match=re.escape("ActivityConfig.heartbeat_timeout must be a positive timedelta"),
        ):
            ActivityConfig(heartbeat_timeout=timedelta(0))

    def test_a_tool_s_config_takes_what_it_leaves_open_from_the_worker_s(self):
        """``over``: the fields a config sets win; the others come from the base."""
        base = ActivityConfig(task_queue="main", heartbeat_timeout=timedelta(seconds=5))
        mine = ActivityConfig(task_queue="vault")
        assert mine.over(base) == ActivityConfig(
            task_queue="vault", heartbeat_timeout=timedelta(seconds=5)
        )


class TestDurableWorker:
    def test_a_registry_class_gives_its_tools_with_their_own_options(self):
        """No instance is made; requires_approval comes from @tool, as a Worker reads it."""
        durable = DurableWorker("d")
        durable.register_tools(Ledger)
        assert list(durable.tool_metas) == tool_metas(Ledger)
        worker = durable.workflow_worker()
        assert worker.limits == Limits(tool_timeout=None)
        handle = worker.tool_server_handle()
        assert handle.tool_definitions_sorted() == sorted(
            (meta.to_llm_definition() for meta in tool_metas(Ledger)), key=lambda d: d.name
        )

    def test_registration_mistakes_are_refused_with_the_fix(self):
        """Not a registry class, a name taken twice, activities for a tool it lacks."""
        durable = DurableWorker("d")
        with pytest.raises(TypeError, match="Deps is not a @tool_registry class"):
            durable.register_tools(Deps)
        with pytest.raises(
            TypeError, match=re.escape("(Ledger): pass its class, register_tools(Ledger)")
        ):
            durable.register_tools(Ledger(Path(".")))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=re.escape("one ToolMeta: put it in a list")):
            durable.register_tools(Ledger.credit.meta())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="not int"):
            durable.register_tools([Ledger.credit.meta(), 5])  # type: ignore[list-item]
        durable.register_tools([Ledger.credit.meta()])
        with pytest.raises(ValueError, match="already has a tool 'credit'"):
            durable.register_tools(Ledger)
        assert [m.name for m in durable.tool_metas] == ["credit"]  # all or none
        with pytest.raises(ValueError, match="has no tool 'audit'"):
            durable.activities(tools=[Ledger(Path(".")).audit.definition()])
        with pytest.raises(ValueError, match=re.escape("needs model=..., tools=..., or both")):
            durable.activities()

    def test_a_tool_call_activity_needs_some_timeout(self):
        """Without Limits.tool_timeout, an ActivityConfig must give Temporal a timeout."""
        with pytest.raises(
            ValueError, match=re.escape("limits.tool_timeout is None (or infinite)")
        ):
            DurableWorker("d", limits=Limits(tool_timeout=None))
        DurableWorker(
            "d",
            limits=Limits(tool_timeout=None),
            tool_activity=ActivityConfig(start_to_close_timeout=timedelta(minutes=1)),
        )

    def test_a_start_to_close_timeout_within_the_tool_timeout_is_refused(self):
        """One attempt cut off before the tool's own timeout gives its "timed out" result
        was retried without end, running the tool every time."""
        limits = Limits(tool_timeout=30)
        expected = re.escape(
            "DurableWorker 'd': tool_activity's start_to_close_timeout (2 s) is not longer "
            "than limits.tool_timeout (30 s): a call that takes that long would be cut off "
            "and run again without end, never timing out; leave start_to_close_timeout out "
            "(tool_timeout + 10 s), make it longer, or bound the attempts "
            "(schedule_to_close_timeout, retry_policy.maximum_attempts)"
        )
        with pytest.raises(ValueError, match=expected):
            DurableWorker(
                "d",
                limits=limits,
                tool_activity=ActivityConfig(start_to_close_timeout=timedelta(seconds=2)),
            )
        at_the_timeout = ActivityConfig(start_to_close_timeout=timedelta(seconds=30))
        with pytest.raises(ValueError, match=r"\(30 s\) is not longer"):
            DurableWorker("d", limits=limits, tool_activity=at_the_timeout)
        durable = DurableWorker("d", limits=limits)
        with pytest.raises(ValueError, match=r"'d': activity's start_to_close_timeout \(5 s\)"):
            durable.register_tools(
                Ledger, activity=ActivityConfig(start_to_close_timeout=timedelta(seconds=5))
            )
        assert durable.tool_metas == ()
        bounded = [
            ActivityConfig(start_to_close_timeout=timedelta(seconds=31)),
            dataclasses.replace(at_the_timeout, schedule_to_close_timeout=timedelta(minutes=2)),
            dataclasses.replace(at_the_timeout, retry_policy=RetryPolicy(maximum_attempts=3)),
        ]
        for config in bounded:
            DurableWorker("d", limits=limits, tool_activity=config)

    def test_an_added_hook_is_typed_as_worker_types_it(self):
        """As Worker's: the hook takes the context of the worker's deps and comes back
        typed by what it returns, so a decorated function keeps its return type."""
        for adder in ("add_pre_tool_call_hook", "add_post_tool_call_hook"):
            hints = typing.get_type_hints(getattr(DurableWorker, adder))
            worker_hints = typing.get_type_hints(getattr(Worker, adder))
            assert hints["return"] == hints["hook"]
            (context,), returns = typing.get_args(hints["hook"])
            (worker_context,), worker_returns = typing.get_args(worker_hints["hook"])
            assert isinstance(returns, typing.TypeVar)
            assert returns is worker_returns
            assert typing.get_origin(context) is typing.get_origin(worker_context)
            (deps,) = typing.get_args(context)
            assert deps is typing.get_args(DurableWorker.__orig_bases__[0])[0]  # type: ignore[attr-defined]

    def test_deps_cross_as_json_and_come_back_as_the_deps_type(self):
        """With deps_type, dump gives JSON data and load the instance again."""
        durable = DurableWorker("d", deps_type=Deps)
        assert durable.dump_deps(Deps("ada")) == {"user": "ada"}
        assert durable.load_deps({"user": "ada"}) == Deps("ada")
        assert durable.load_deps(None) is None

    def test_a_protocol_as_deps_type_is_refused_when_the_worker_is_built(self):
        """Durable deps are data made again by pydantic: a Protocol cannot say how."""

        class HasUser(typing.Protocol):
            user: str

        with pytest.raises(TypeError, match="HasUser is a Protocol") as info:
            DurableWorker("d", deps_type=HasUser)
        assert "dataclass, a pydantic model or a TypedDict" in str(info.value)

    def test_activities_are_named_after_the_worker(self, tmp_path):
        """Their names are the ones the workflow schedules."""
        durable = DurableWorker("books")
        durable.register_tools(Ledger)
        made = durable.activities(model=object(), tools=tool_definitions(Ledger(tmp_path)))  # type: ignore[arg-type]
        names = [getattr(a, "__temporal_activity_definition").name for a in made]
        assert names == ["books.model_request", "books.tool_call"]


class TestDefinition:
    def test_the_fingerprint_is_of_what_a_run_is_bound_to(self):
        """Equal definitions, equal fingerprints; each part that changes what a paused
        run would do changes it; what is code (hooks, activity options) does not."""

        def ledger(**options: object) -> DurableWorker:
            durable = DurableWorker("d", **options)  # type: ignore[arg-type]
            durable.register_tools(Ledger)
            return durable

        first = ledger(system_prompt="Keep the books.")
        same = ledger(system_prompt="Keep the books.", tool_activity=ActivityConfig(task_queue="q"))
        same.add_pre_tool_call_hook(lambda ctx: None)
        assert first.definition() == same.definition()
        assert first.definition()["tools"]["transfer_out"] == {
            "definition": first.definition()["tools"]["transfer_out"]["definition"],
            "requires_approval": True,
            "sequential": False,
        }
        unguarded = DurableWorker("d", system_prompt="Keep the books.")
        unguarded.register_tools([m for m in tool_metas(Ledger) if m.name != "transfer_out"])
        unguarded.register_tools([Ledger.transfer_out.meta()], requires_approval=lambda ctx: False)
        trimmed = DurableWorker("d", system_prompt="Keep the books.")
        trimmed.register_tools([m for m in tool_metas(Ledger) if m.name != "refuse"])
        # (its transfer_out, a bare meta, needs no approval: named after refuse's changes)
        trimmed.register_tools([Ledger.refuse.meta().with_description("Fails.")], sequential=True)
        others = {
            "the system prompt changed": ledger(system_prompt="Keep them well."),
            "max_turns was 10, is 3": ledger(system_prompt="Keep the books.", max_turns=3),
            "tool 'transfer_out': requires_approval was True, is 'policy'": unguarded,
            "tool 'refuse': its description or input schema changed; "
            "tool 'refuse': sequential was False, is True": trimmed,
        }
        for change, other in others.items():
            assert other.definition()["fingerprint"] != first.definition()["fingerprint"]
            changes = definition_changes(first.definition(), other.definition())
            assert "; ".join(changes).startswith(change), change

    def test_added_and_removed_tools_are_named_and_junk_is_read_as_nothing(self):
        durable = DurableWorker("d")
        durable.register_tools([m for m in tool_metas(Ledger) if m.name != "transfer_out"])
        fewer = DurableWorker("d")
        fewer.register_tools(
            [m for m in tool_metas(Ledger) if m.name not in ("audit", "transfer_out")]
        )
        assert definition_changes(durable.definition(), fewer.definition()) == [
            "tool 'audit' was removed"
        ]
        assert definition_changes(fewer.definition(), durable.definition()) == [
            "tool 'audit' was added"
        ]
        junk = {"tools": {"credit": "x" * 1_000, "y" * 1_000: {}}, "max_turns": "z" * 1_000}
        changes = definition_changes(junk, fewer.definition())
        assert changes[0] == "the system prompt changed"
        assert changes[1].startswith("max_turns was 'zzz")
        assert changes[1].endswith("..., is 10")
        assert all(len(change) < 300 for change in changes)


class TestActivityTexts:
    def test_a_progress_message_is_cut_and_anything_else_made_text(self):
        """A heartbeat's details over Temporal's limit, or not JSON, cancelled the call."""
        progress = _Progress()
        progress.report("c", 1.0, 3.0, "log line " * 400_000)
        assert progress.latest is not None
        message = progress.latest["message"]
        assert message.startswith("log line ")
        assert message.endswith("... (3599000 more characters)")
        assert len(message) < MAX_PROGRESS_MESSAGE + 40
        progress.report("c", 1.0, None, "bad \ud800 text")
        assert progress.latest["message"] == "bad \ufffd text"
        progress.report("c", 1.0, None, {1, 2})  # type: ignore[arg-type]
        assert progress.latest["message"] == "{1, 2}"
        assert _sendable(progress.latest)
        assert not _sendable({"message": {1, 2}})
        assert not _sendable({"message": "x" * 30_000})

    def test_a_provider_s_message_is_cut_once_in_the_failure(self):
        """The failure carried the message three times: text, details and cause."""
        error = ProviderError("acme\udcff", "bad: " + "y" * 2_500_000, status=400)
        failure = _provider_failure(error)
        [details] = failure.details
        assert isinstance(details, dict)
        assert details["message"].endswith("... (2490005 more characters)")
        assert len(details["message"]) < MAX_FAILURE_TEXT + 40
        assert failure.message.startswith("acme\ufffd request failed (HTTP 400): bad: yyy")
        assert len(failure.message) < 600
        assert failure.non_retryable
        assert payload_size(details) + len(failure.message) < 12_000


class TestPlugin:
    def test_the_sandbox_passes_llm_worker_and_its_dependencies_through(self):
        """The plugin's runner adds them to whatever the sandbox already passes through."""
        runner = _pass_through(None)
        assert isinstance(runner, SandboxedWorkflowRunner)
        assert set(PASSED_THROUGH) <= runner.restrictions.passthrough_modules
        assert LlmWorkerPlugin().name() == "llm_worker.LlmWorkerPlugin"

    def test_import_llm_worker_does_not_import_temporalio(self):
        """The extra is paid for only by ``import llm_worker.temporal``."""
        done = subprocess.run(
            [sys.executable, "-c", "import sys, llm_worker; print('temporalio' in sys.modules)"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == "False"
