"""``DurableWorker``: a Worker's definition that both sides of a durable run are built from.

The workflow side needs what the turn loop decides with: the system prompt,
the tools' metas and options (``requires_approval``, ``sequential``), the
hooks, the limits. The activity side needs what does the work: the real
``LlmClient`` and the real tools. One ``DurableWorker``, defined at module level
in code both sides import, holds the first and names the activities; the
activity side adds the second with ``activities(model=..., tools=...)``.

(A ``DurableWorker`` is an llm_worker ``Worker`` made durable, not a Temporal
worker: the Temporal worker is the process that polls a task queue and runs
workflows and activities.)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from typing import Any, Generic

from typing_extensions import TypeVar

from .._client import LlmClient
from .._conversation import MAX_COUNT
from .._hooks import (
    ApprovalPolicy,
    PostHookResult,
    PostToolCallContext,
    PostToolCallHook,
    PreHookResult,
    PreToolCallHook,
    ToolCallContext,
)
from .._limits import Limits, check_count
from .._meta import ToolMeta
from .._registry import (
    declaration_error,
    is_tool_registry,
    name_clashes,
    qualified_name,
    registered_tools,
)
from .._server import ToolServer
from .._state import fingerprint_of
from .._types import ToolDefinition
from .._worker import Worker, check_output_options
from ._activities import model_request_activity, tool_call_activity
from ._config import MODEL_REQUEST_TIMEOUT, TOOL_TIMEOUT_GRACE, ActivityConfig
from ._data import DataCodec
from ._payloads import DEFAULT_MAX_HISTORY_BYTES, DEFAULT_MAX_PAYLOAD_BYTES
from ._stand_ins import ActivityModel, ActivityTool, Sends

__all__ = ["DurableWorker"]

DepsT = TypeVar("DepsT", default=None)
OutputT = TypeVar("OutputT", default=Any)


@dataclasses.dataclass(frozen=True)
class _DurableTool:
    meta: ToolMeta
    requires_approval: ApprovalPolicy
    sequential: bool
    activity: ActivityConfig | None


class DurableWorker(Generic[DepsT, OutputT]):
    """A ``Worker`` whose every model request and tool call is a Temporal activity.

    >>> tracker = DurableWorker("tracker", system_prompt="You triage issues.")
    >>> tracker.register_tools(IssueTracker)          # the @tool_registry class
    >>> tracker.add_pre_tool_call_hook(audit)         # hooks run in the workflow

    ``name`` names its activities (``"{name}.model_request"``,
    ``"{name}.tool_call"``), so it must be the same on every machine and unique
    among the DurableWorkers of one Temporal namespace. The keywords are the
    ``Worker``'s; ``limits.tool_timeout`` becomes each tool call activity's
    start-to-close timeout (plus ``TOOL_TIMEOUT_GRACE``). ``model_activity`` and
    ``tool_activity`` set the activities' task queues, timeouts and retry
    policies. ``output_type`` asks each run for a structured answer, as a
    ``Worker``'s does (through the ``final_result`` tool: the workflow does not know
    the activity's client); ``ConversationResult.output`` carries it as JSON data,
    ``load_output`` reads it back. ``approval_timeout``: how long a paused run
    waits for its decisions before its pending calls are denied (``None``: for
    ever). ``max_payload_bytes`` is the most an activity's input or result may be
    as JSON (under the Temporal server's blob size limit, 2 MiB by default): a
    model request past it fails the run, a tool result past it is an error
    result. ``max_history_bytes``: the most the workflow's history may grow to
    (under the server's history size limit, 50 MiB by default, past which it
    terminates the workflow): a model request that, with room for its response,
    would pass it fails the run with its state, a tool call is an error result.
    Hooks and approval policies run in the workflow and must be deterministic
    (see docs/durable.md). A run is bound to its ``definition()`` (prompt, ``max_turns``,
    tools and their options): a worker with another does not go on with it.
    """

    def __init__(
        self,
        name: str,
        *,
        system_prompt: str | None = None,
        max_turns: int = 10,
        limits: Limits | None = None,
        deps_type: type[DepsT] | None = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
        model_activity: ActivityConfig | None = None,
        tool_activity: ActivityConfig | None = None,
        approval_timeout: timedelta | None = None,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        max_history_bytes: int = DEFAULT_MAX_HISTORY_BYTES,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("DurableWorker needs a name (it names its activities)")
        check_count("max_turns", max_turns, 1, maximum=MAX_COUNT)
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, not {type(limits).__name__}")
        if approval_timeout is not None and (
            not isinstance(approval_timeout, timedelta) or approval_timeout <= timedelta(0)
        ):
            raise ValueError(
                f"approval_timeout must be a positive timedelta (or None), got {approval_timeout!r}"
            )
        check_output_options(output_type, output_retries)
        if not isinstance(max_payload_bytes, int) or max_payload_bytes < 1:
            raise ValueError(f"max_payload_bytes must be a positive int, got {max_payload_bytes!r}")
        if not isinstance(max_history_bytes, int) or max_history_bytes < 1:
            raise ValueError(f"max_history_bytes must be a positive int, got {max_history_bytes!r}")
        self.name = name
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.limits = limits or Limits()
        self.model_activity = model_activity or ActivityConfig()
        self.tool_activity = tool_activity or ActivityConfig()
        self.max_payload_bytes = max_payload_bytes
        self.max_history_bytes = max_history_bytes
        self.approval_timeout = approval_timeout
        self.output_retries = output_retries
        self._deps = DataCodec(deps_type, "deps_type")
        self._output = DataCodec(None if output_type is str else output_type, "output_type")
        self._output_type = output_type
        self._tools: dict[str, _DurableTool] = {}
        self._pre_hooks: list[PreToolCallHook] = []
        self._post_hooks: list[PostToolCallHook] = []
        self._check_timeout(self.tool_activity, "tool_activity")

    @property
    def deps_type(self) -> type[DepsT] | None:
        """The type of the deps its runs take (``None``: JSON data)."""
        deps_type: type[DepsT] | None = self._deps.data_type
        return deps_type

    @property
    def output_type(self) -> type[OutputT] | None:
        """The type of its runs' structured answers (``None``: the answer is the text)."""
        return self._output_type

    @property
    def model_activity_name(self) -> str:
        """The name of its model request activity."""
        return f"{self.name}.model_request"

    @property
    def tool_activity_name(self) -> str:
        """The name of its tool call activity."""
        return f"{self.name}.tool_call"

    @property
    def tool_metas(self) -> tuple[ToolMeta, ...]:
        """The metas of its tools, in registration order."""
        return tuple(tool.meta for tool in self._tools.values())

    # -- what the workflow decides with ----------------------------------------------

    def register_tools(
        self,
        tools: type | Iterable[ToolMeta],
        *,
        requires_approval: (
            bool | Callable[[ToolCallContext[DepsT]], bool | Awaitable[bool]] | None
        ) = None,
        sequential: bool | None = None,
        activity: ActivityConfig | None = None,
    ) -> None:
        """Register the tools the model may call: a ``@tool_registry`` class, or ``ToolMeta``s.

        A registry class gives every tool of it, with its ``@tool(requires_approval=...,
        sequential=...)``; no instance is made (the instances live on the activity
        side). The keywords override those for the whole batch, as
        ``Worker.register_tools`` does; ``activity`` sets the batch's activity options
        over ``tool_activity`` (a ``task_queue`` of its own runs them elsewhere).
        All or none: a name already taken raises ``ValueError``.
        """
        batch: dict[str, _DurableTool] = {}
        for meta, own_policy, own_sequential in _tool_sources(tools):
            if meta.name in batch or meta.name in self._tools:
                raise ValueError(f"DurableWorker {self.name!r} already has a tool {meta.name!r}")
            batch[meta.name] = _DurableTool(
                meta,
                own_policy if requires_approval is None else requires_approval,
                own_sequential if sequential is None else sequential,
                activity,
            )
        if activity is not None:
            self._check_timeout(activity.over(self.tool_activity), "activity")
        self._tools.update(batch)

    def add_pre_tool_call_hook(
        self, hook: Callable[[ToolCallContext[DepsT]], PreHookResult]
    ) -> Callable[[ToolCallContext[DepsT]], PreHookResult]:
        """Run ``hook`` (in the workflow) before each tool call. Returns ``hook``."""
        self._pre_hooks.append(hook)
        return hook

    def add_post_tool_call_hook(
        self, hook: Callable[[PostToolCallContext[DepsT]], PostHookResult]
    ) -> Callable[[PostToolCallContext[DepsT]], PostHookResult]:
        """Run ``hook`` (in the workflow) after each tool call. Returns ``hook``."""
        self._post_hooks.append(hook)
        return hook

    def definition(self) -> dict[str, Any]:
        """What a run of this worker is bound to, as JSON data; ``fingerprint`` hashes it.

        ``{"fingerprint": ..., "system_prompt": <hash>, "max_turns": n, "tools": {name:
        {"definition": <hash of its description and input schema>, "requires_approval":
        true | false | "policy", "sequential": ...}}}``. A ``ConversationWorkflow``
        records the fingerprint at its first workflow task and goes on with no other
        (see docs/durable.md). Hooks, policy functions and activity options are code,
        not in it.
        """
        tools = {
            name: {
                "definition": _short(fingerprint_of(None, (tool.meta.to_llm_definition(),))),
                "requires_approval": tool.requires_approval
                if isinstance(tool.requires_approval, bool)
                else "policy",
                "sequential": tool.sequential,
            }
            for name, tool in sorted(self._tools.items())
        }
        bound: dict[str, Any] = {
            "system_prompt": _short(fingerprint_of(self.system_prompt, ())),
            "max_turns": self.max_turns,
            "tools": tools,
        }
        return {"fingerprint": _hash(bound), **bound}

    def workflow_worker(self) -> Worker[DepsT, OutputT]:
        """The ``Worker`` a workflow runs: activity-backed model and tools. Workflow code only.

        Its limits are this worker's with ``tool_timeout=None``: a call's timeout
        is its activity's, so the workflow sets no timer per call.
        """
        sends = Sends(self.max_payload_bytes, self.max_history_bytes)
        worker: Worker[DepsT, OutputT] = Worker(
            ActivityModel(
                self.model_activity_name, self.model_activity, MODEL_REQUEST_TIMEOUT, sends
            ),
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            limits=dataclasses.replace(self.limits, tool_timeout=None),
            deps_type=self.deps_type,
            output_type=self._output_type,
            output_retries=self.output_retries,
        )
        default_timeout = self._default_tool_timeout()
        for tool in self._tools.values():
            config = (
                self.tool_activity
                if tool.activity is None
                else tool.activity.over(self.tool_activity)
            )
            stand_in = ActivityTool(
                self.tool_activity_name,
                tool.meta,
                config,
                default_timeout,
                self._deps.dump,
                sends,
            )
            worker.register_tool(
                _definition(tool.meta, stand_in),
                requires_approval=tool.requires_approval,
                sequential=tool.sequential,
            )
        for pre in self._pre_hooks:
            worker.add_pre_tool_call_hook(pre)
        for post in self._post_hooks:
            worker.add_post_tool_call_hook(post)
        return worker

    def dump_deps(self, deps: DepsT | None) -> object:
        """A run's deps as the JSON data the workflow's input and the tool calls carry."""
        return self._deps.dump(deps)

    def load_deps(self, data: object) -> DepsT | None:
        """The deps ``dump_deps`` wrote: a ``deps_type`` instance again."""
        loaded: DepsT | None = self._deps.load(data)
        return loaded

    def dump_output(self, output: OutputT) -> object:
        """A run's answer (``worker.output``) as the JSON data its outcome carries."""
        return self._output.dump(output)

    def load_output(self, data: object) -> OutputT:
        """The answer ``ConversationResult.output`` carries, validated into ``output_type``.

        Without an ``output_type``, the data as it is (the answer's text).
        """
        loaded: OutputT = self._output.load(data)
        return loaded

    # -- what the activities do the work with ----------------------------------------

    def activities(
        self, *, model: LlmClient | None = None, tools: Iterable[ToolDefinition] = ()
    ) -> list[Callable[..., Any]]:
        """The activities to give a Temporal worker (``Worker(..., activities=...)``).

        ``model``: the real ``LlmClient`` (its model request activity). ``tools``:
        the real tools (``tool_definitions(app)``...), all or some of the registered
        ones (its tool call activity; a worker on another task queue gives its own).
        """
        made: list[Callable[..., Any]] = []
        if model is not None:
            made.append(
                model_request_activity(
                    self.model_activity_name, model, self.limits, self.max_payload_bytes
                )
            )
        definitions = list(tools)
        if definitions:
            server = ToolServer()
            server.register_tools(definitions)  # each factory is called once, here
            handle = server.handle()
            unknown = [
                d.name for d in handle.tool_definitions_sorted() if d.name not in self._tools
            ]
            if unknown:
                raise ValueError(
                    f"DurableWorker {self.name!r} has no tool {unknown[0]!r}: register it "
                    f"(register_tools) where the workflow can see it, or leave it out here"
                )
            made.append(
                tool_call_activity(
                    self.tool_activity_name, handle, self.limits, self._deps, self.max_payload_bytes
                )
            )
        if not made:
            raise ValueError("activities() needs model=..., tools=..., or both")
        return made

    # -- checks ----------------------------------------------------------------------

    def _tool_timeout(self) -> float | None:
        """``limits.tool_timeout``, with an infinite one as what it means: none."""
        timeout = self.limits.tool_timeout
        return None if timeout is None or math.isinf(timeout) else timeout

    def _default_tool_timeout(self) -> timedelta | None:
        timeout = self._tool_timeout()
        return None if timeout is None else timedelta(seconds=timeout) + TOOL_TIMEOUT_GRACE

    def _check_timeout(self, config: ActivityConfig, where: str) -> None:
        tool_timeout = self._tool_timeout()
        if (
            config.start_to_close_timeout is None
            and config.schedule_to_close_timeout is None
            and tool_timeout is None
        ):
            raise ValueError(
                f"DurableWorker {self.name!r}: a tool call activity needs a timeout, and "
                f"limits.tool_timeout is None (or infinite); give {where}=ActivityConfig("
                f"start_to_close_timeout=...)"
            )
        attempt = config.start_to_close_timeout
        if tool_timeout is None or attempt is None or attempt.total_seconds() > tool_timeout:
            return
        if config.schedule_to_close_timeout is not None or _attempts_bounded(config):
            return  # a slow call ends, with an "Execution failed" result, after its attempts
        # Temporal would end each attempt of a slow call before the tool's own timeout
        # gives its "timed out" result, and start it again, without end.
        raise ValueError(
            f"DurableWorker {self.name!r}: {where}'s start_to_close_timeout "
            f"({attempt.total_seconds():g} s) is not longer than limits.tool_timeout "
            f"({tool_timeout:g} s): a call that takes that long would be cut off and run again "
            f"without end, never timing out; leave start_to_close_timeout out (tool_timeout + "
            f"{TOOL_TIMEOUT_GRACE.total_seconds():g} s), make it longer, or bound the attempts "
            f"(schedule_to_close_timeout, retry_policy.maximum_attempts)"
        )

    def __repr__(self) -> str:
        return f"<DurableWorker {self.name!r} tools={len(self._tools)}>"


def _tool_sources(tools: type | Iterable[ToolMeta]) -> list[tuple[ToolMeta, ApprovalPolicy, bool]]:
    """Each tool's meta and own options, from a registry class or a list of metas."""
    if isinstance(tools, type):
        if not is_tool_registry(tools):
            raise TypeError(
                f"register_tools() takes a @tool_registry class or ToolMetas; "
                f"{tools.__qualname__} is not a @tool_registry class"
            )
        built_tools = registered_tools(tools) or ()
        clashes = name_clashes(built_tools)  # a class of two registries, not decorated itself
        if clashes:
            raise declaration_error(qualified_name(tools), clashes)
        sources: list[tuple[ToolMeta, ApprovalPolicy, bool]] = []
        for built in built_tools:
            # The generated tool class carries the @tool options a Worker reads.
            policy: ApprovalPolicy = getattr(built.tool_class, "requires_approval", False)
            sequential = getattr(built.tool_class, "sequential", False) is True
            sources.append((built.meta(), policy, sequential))
        return sources
    message = "register_tools() takes a @tool_registry class or ToolMetas, not "
    try:
        given: list[object] = list(tools)
    except TypeError:
        if getattr(type(tools), "__iter__", None) is not None:
            raise  # an __iter__ of its own failed: its error, as it is
        raise TypeError(message + _instead_of_metas(tools)) from None
    metas: list[ToolMeta] = []
    for meta in given:
        if not isinstance(meta, ToolMeta):
            raise TypeError(message + _instead_of_metas(meta))
        metas.append(meta)
    return [(meta, False, False) for meta in metas]


def _instead_of_metas(given: object) -> str:
    """What ``given``, refused among the metas, is, and what to pass (after "not ")."""
    if is_tool_registry(type(given)):
        name = type(given).__qualname__
        return f"a @tool_registry app ({name}): pass its class, register_tools({name})"
    if isinstance(given, ToolMeta):
        return "one ToolMeta: put it in a list, register_tools([meta])"
    return type(given).__name__


def _attempts_bounded(config: ActivityConfig) -> bool:
    policy = config.retry_policy
    return policy is not None and policy.maximum_attempts > 0


def _short(fingerprint: str) -> str:
    """A part's fingerprint, short: enough to tell two versions of one part apart."""
    return fingerprint.removeprefix("sha256:")[:16]


def _hash(data: object) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _definition(meta: ToolMeta, tool: ActivityTool) -> ToolDefinition:
    def definition() -> tuple[ToolMeta, ActivityTool]:
        return meta, tool

    return definition
