"""What needs no server: the JSON that crosses Temporal, ActivityConfig, DurableWorker's checks."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
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
    tool_definitions,
    tool_metas,
)
from llm_worker.temporal import ActivityConfig, DurableWorker, LlmWorkerPlugin
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

    def test_deps_cross_as_json_and_come_back_as_the_deps_type(self):
        """With deps_type, dump gives JSON data and load the instance again."""
        durable = DurableWorker("d", deps_type=Deps)
        assert durable.dump_deps(Deps("ada")) == {"user": "ada"}
        assert durable.load_deps({"user": "ada"}) == Deps("ada")
        assert durable.load_deps(None) is None

    def test_activities_are_named_after_the_worker(self, tmp_path):
        """Their names are the ones the workflow schedules."""
        durable = DurableWorker("books")
        durable.register_tools(Ledger)
        made = durable.activities(model=object(), tools=tool_definitions(Ledger(tmp_path)))  # type: ignore[arg-type]
        names = [getattr(a, "__temporal_activity_definition").name for a in made]
        assert names == ["books.model_request", "books.tool_call"]


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
