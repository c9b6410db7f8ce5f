"""``OpenTelemetry``: the ``Instrumentation`` that traces runs with the GenAI conventions.

One run is one tree of spans::

    invoke_agent [agent]           INTERNAL  the run (run(), resume(), retry())
    ├── chat {model}               CLIENT    model request 1, active while its stream is read
    ├── execute_tool {name}        INTERNAL  a tool call, active in the task and thread
    ├── execute_tool {name}        INTERNAL  that run it (calls run concurrently)
    └── chat {model}               CLIENT    model request 2

Requests and tool calls are children of the run's span, whatever task or
thread reports them: their parent is given explicitly, never taken from the
ambient context. The run's span is a child of whatever span is current where
the run starts. Decisions about calls that did not run (skipped, denied,
held...) are events on the run's span.

When no tracer provider is configured (the API's default, a no-op), a run
starts no child spans and activates no contexts: it costs a few attribute
reads and the (no-op) metric records.

Telemetry never changes a run: an error from the SDK (a span processor or a
metric reader of the application's that raises), or in making an attribute,
is logged on the ``llm_worker.otel`` logger, and the run goes on without that
span, attribute or record. Every method the loop calls is guarded
(``_shielded``, or its own ``try`` where it runs for every event or call), each
measurement is recorded on its own (``_record``), and a span that was started
is ended whatever failed before.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import anyio
from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    StatusCode,
    TracerProvider,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.trace.span import TraceState

from .. import __version__
from .._exceptions import (
    ExecutionFailedError,
    HookError,
    InternalToolError,
    InvalidArgumentError,
    LlmClientError,
    OutputValidationError,
    ProviderError,
)
from .._model_texts import TIMED_OUT, call_text, shown_name
from . import _content
from . import _semconv as sc
from ._metrics import Instruments

if TYPE_CHECKING:
    from .._client import LlmClient, LlmRequest
    from .._conversation import AssistantMessage, RunUsage, ToolCall, ToolResult
    from .._meta import LlmToolDefinition, ToolMeta

__all__ = ["OpenTelemetry"]

_SCOPE = "llm_worker"
_PROPAGATOR = TraceContextTextMapPropagator()  # a link must read the same in every process
_now = time.perf_counter
_logger = logging.getLogger("llm_worker.otel")
_F = TypeVar("_F", bound=Callable[..., Any])

# error.type of an error result: the ToolError class its text comes from (SPEC §1), or
# "timeout" for a call past Limits.tool_timeout, else "tool_error".
_ERROR_PREFIXES = tuple(
    (str(error("")), error.__name__)
    for error in (InvalidArgumentError, ExecutionFailedError, InternalToolError)
)
_TIMED_OUT_HEAD, _TIMED_OUT_TAIL = TIMED_OUT.split("{seconds:g}")

# The longest id or label a span or metric shows: a model chooses call ids, a provider
# response ids and model names, and either can make one a megabyte long.
_MAX_LABEL_SHOWN = 256
# The longest status description a span shows: an error's message (a provider's, a hook's
# exception's, a custom error's) or an error result's text can be any length, and the
# SDK's attribute limits do not apply to a status.
_MAX_DESCRIPTION = 1024

# A run's link keeps its tracestate within W3C Trace Context's limits
# (https://www.w3.org/TR/trace-context/#tracestate-limits): at most 32 list-members and
# 512 characters, where a member longer than 128 characters is the first to go. (The
# API's propagator lets in up to 8192, and a link's strings are at most 1024.)
_MAX_TRACESTATE = 512
_MAX_TRACESTATE_MEMBER = 128
_MAX_TRACESTATE_MEMBERS = 32
_NO_TRACESTATE = TraceState()

# Errors whose message quotes what the model wrote (its answer, a hook's view of a call,
# an event of the client's): content, so a span's status gives it only with
# capture_content=True.
_QUOTING_ERRORS = (OutputValidationError, HookError, LlmClientError)


def _failed(what: str) -> None:
    _logger.warning("OpenTelemetry failed to %s; the run goes on", what, exc_info=True)


class _Shield:
    """A ``with`` block whose ``Exception`` is logged (``_failed(what)``) and goes no
    further: a part of a method that may fail alone (its content, its span), where
    ``_shielded`` guards the whole method. Cancellation and other ``BaseException``s
    pass."""

    __slots__ = ("_what",)

    def __init__(self, what: str) -> None:
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if exc_type is None or not issubclass(exc_type, Exception):
            return False
        _failed(self._what)
        return True


def _nothing(owner: object) -> None:
    return None


def _shielded(what: str, fallback: Callable[[Any], Any] = _nothing) -> Callable[[_F], _F]:
    """Makes a method the loop calls (an entry point of the observer) never raise: an
    error in it is logged, and it returns ``fallback(self)`` instead. (The methods that
    cannot fail, called for every event, go without: a wrapper costs a call there.)"""

    def decorate(method: _F) -> _F:
        @functools.wraps(method)
        def shielded(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:  # free when nothing is raised, unlike a `with` block's two calls
                return method(self, *args, **kwargs)
            except Exception:
                _failed(what)
                return fallback(self)

        return cast(_F, shielded)

    return decorate


def _record(
    histogram: Histogram, amount: float, attributes: dict[str, Any], context: Context | None
) -> None:
    """One measurement, with its operation's span (``context``) for the exemplars: one
    that fails loses only itself."""
    try:
        histogram.record(amount, attributes, context)
    except Exception:
        _failed("record a measurement")


class _Lost:
    """What a tool call gets when its span could not be made: nothing to do."""

    __slots__ = ()

    def activate(self) -> None:
        return None

    def end(self, result: ToolResult | None, error: BaseException | None) -> None:
        return None


_LOST = _Lost()


class OpenTelemetry:
    """Traces and measures every run of the workers it is given to, with OpenTelemetry.

    >>> telemetry = OpenTelemetry()
    >>> worker = Worker(client, instrumentation=telemetry)

    Spans and metrics follow the OpenTelemetry GenAI semantic conventions
    (``SEMCONV_VERSION``; see docs/observability.md for what each span carries).
    ``tracer_provider`` and ``meter_provider`` default to the global ones
    (``opentelemetry.trace.set_tracer_provider``...), looked up when used, so
    they may be configured after this object is made. ``capture_content=True``
    records what the model was sent and answered, and each call's arguments and
    result: these can hold personal data, so they are left out by default.
    ``agent_name`` names the agent in span names and attributes.

    The provider, model and server come from the worker's client: its
    ``provider``, ``model`` and ``base_url`` attributes when it has them (the
    built-in provider clients do).
    """

    __slots__ = ("_agent", "_agent_name", "_capture", "_instruments", "_tool_measures", "_tracer")

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        agent_name: str | None = None,
    ) -> None:
        self._tracer = trace.get_tracer(
            _SCOPE, __version__, tracer_provider, schema_url=sc.SCHEMA_URL
        )
        meter = metrics.get_meter(_SCOPE, __version__, meter_provider, schema_url=sc.SCHEMA_URL)
        self._instruments = Instruments(meter)
        self._capture = bool(capture_content)
        self._agent_name = agent_name
        self._agent: dict[str, Any] = {} if agent_name is None else {sc.AGENT_NAME: agent_name}
        # The attributes of a successful call's measurement, per tool: made once each.
        self._tool_measures: dict[str, dict[str, Any]] = {}

    @property
    def capture_content(self) -> bool:
        """Whether spans carry messages, arguments and results."""
        return self._capture

    @_shielded("start a run's span", lambda self: _RunSpan(self, None, {}))
    def run(
        self,
        *,
        kind: str,
        client: LlmClient,
        system_prompt: str | None,
        tools: Sequence[LlmToolDefinition],
        continues: Mapping[str, str] | None = None,
    ) -> _RunSpan:
        """Start the span of one run (``kind``: ``"run"``, ``"resume"`` or ``"retry"``),
        linked to the span of the run it ``continues`` (its ``link()``: a W3C trace
        context), wherever that ran."""
        common = _client_attributes(client)
        attributes: dict[str, Any] = {sc.OPERATION_NAME: sc.INVOKE_AGENT}
        for key in (sc.PROVIDER_NAME, sc.REQUEST_MODEL):  # the server is the requests' business
            if key in common:
                attributes[key] = common[key]
        name = sc.INVOKE_AGENT
        if self._agent_name is not None:
            attributes[sc.AGENT_NAME] = self._agent_name
            name = f"{name} {self._agent_name}"
        attributes[sc.RUN_KIND] = kind
        if self._capture:
            with _Shield("record a run's content"):
                content: dict[str, Any] = {}
                if system_prompt is not None:
                    content[sc.SYSTEM_INSTRUCTIONS] = _content.system_instructions(system_prompt)
                content[sc.TOOL_DEFINITIONS] = _content.tool_definitions(tools)
                attributes.update(content)
        parent = trace.get_current_span().get_span_context()
        span: Span | None = None
        links: list[Link] = []
        if continues:
            with _Shield("link a run's span to the run it continues"):
                earlier = trace.get_current_span(_PROPAGATOR.extract(dict(continues)))
                if earlier.get_span_context().is_valid:
                    links.append(Link(earlier.get_span_context()))
        with _Shield("start a run's span"):
            span = self._tracer.start_span(
                name, kind=SpanKind.INTERNAL, attributes=attributes, links=links
            )
        if span is None:
            return _RunSpan(self, None, common)
        # A no-op tracer's span is its parent's (or an invalid one): nothing below it would
        # record. An SDK's span has an id of its own, even if it is not sampled.
        context = span.get_span_context()
        traced = context.is_valid and context.span_id != parent.span_id
        return _RunSpan(self, span if traced else None, common)


class _RunSpan:
    """One run's span, and the parent of its requests' and tool calls' spans.

    Each method the loop calls is ``_shielded``: telemetry never changes a run, and a
    span that was started is ended whatever fails on the way.
    """

    __slots__ = ("_common", "_context", "_owner", "_span", "_started", "usage_reported")

    def __init__(self, owner: OpenTelemetry, span: Span | None, common: dict[str, Any]) -> None:
        self._owner = owner
        self._span = span
        self._context: Context | None = None if span is None else trace.set_span_in_context(span)
        self._common = common  # provider, model, server
        self._started = _now()
        self.usage_reported = False  # whether a response of the run said what it cost

    @_shielded("make a run's span current")
    def activate(self) -> AbstractContextManager[None] | None:
        """The run's span made current around the application's hooks."""
        context = self._context
        return None if context is None else _Attached(context)

    @_shielded(
        "start a model request's span",
        lambda self: _RequestSpan(self, None, self._common, self._context),
    )
    def request(self, request: LlmRequest, number: int) -> _RequestSpan:
        owner = self._owner
        model = self._common.get(sc.REQUEST_MODEL)
        span: Span | None = None
        if self._span is not None:
            attributes: dict[str, Any] = {
                sc.OPERATION_NAME: sc.CHAT,
                **self._common,
                sc.REQUEST_STREAM: True,  # an LlmClient streams every response
            }
            if request.output_format is not None:
                attributes[sc.OUTPUT_TYPE] = sc.OUTPUT_TYPE_JSON
            if owner._capture:
                with _Shield("record a model request's content"):
                    content: dict[str, Any] = {}
                    if request.system_prompt is not None:
                        content[sc.SYSTEM_INSTRUCTIONS] = _content.system_instructions(
                            request.system_prompt
                        )
                    content[sc.INPUT_MESSAGES] = _content.input_messages(request.messages)
                    content[sc.TOOL_DEFINITIONS] = _content.tool_definitions(request.tools)
                    attributes.update(content)
            with _Shield("start a model request's span"):
                span = owner._tracer.start_span(
                    sc.CHAT if model is None else f"{sc.CHAT} {model}",
                    self._context,
                    SpanKind.CLIENT,
                    attributes,
                )
        return _RequestSpan(self, span, self._common, self._context)

    def tool_call(self, call: ToolCall, meta: ToolMeta) -> _ToolTimer | _Lost:
        # Guarded inline: a wrapper would cost every call of a worker not traced.
        try:
            return self._tool_call(call, meta)
        except Exception:
            _failed("start a tool call's span")
            return _LOST

    def _tool_call(self, call: ToolCall, meta: ToolMeta) -> _ToolTimer:
        owner = self._owner
        measured = owner._tool_measures.get(call.name)
        if measured is None:  # made once per tool: the name is shortened once
            measured = owner._tool_measures[call.name] = {
                sc.TOOL_NAME: shown_name(call.name),
                sc.TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
                **owner._agent,
            }
        if self._span is None:  # the common case of a worker not traced: keep it lean
            return _ToolTimer(owner._instruments.tool_duration, measured)
        name = measured[sc.TOOL_NAME]
        attributes: dict[str, Any] = {
            sc.OPERATION_NAME: sc.EXECUTE_TOOL,
            sc.TOOL_NAME: name,
            sc.TOOL_CALL_ID: _shown(call.id),
            sc.TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
            **owner._agent,
        }
        if meta.description:
            attributes[sc.TOOL_DESCRIPTION] = meta.description
        if owner._capture:
            attributes[sc.TOOL_CALL_ARGUMENTS] = call.input_json
        span: Span | None = None
        with _Shield("start a tool call's span"):
            span = owner._tracer.start_span(
                f"{sc.EXECUTE_TOOL} {name}", self._context, SpanKind.INTERNAL, attributes
            )
        if span is None:
            return _ToolTimer(owner._instruments.tool_duration, measured)
        return _ToolSpan(owner._instruments.tool_duration, measured, span, self._context, owner)

    @_shielded("record a decision")
    def decided(self, call: ToolCall, outcome: str, reason: str | None) -> None:
        span = self._span
        if span is None:
            return
        attributes: dict[str, Any] = {  # an unknown tool's name is the model's, at any length
            sc.DECISION: outcome,
            sc.TOOL_NAME: shown_name(call.name),
            sc.TOOL_CALL_ID: _shown(call.id),
        }
        if reason is not None:
            attributes[sc.DECISION_REASON] = reason
        span.add_event(sc.DECISION_EVENT, attributes)

    @_shielded("give a run's link")
    def link(self) -> dict[str, str] | None:
        """The run's span as a W3C trace context (``traceparent``...), for the run that
        continues this one to link to; ``None`` when nothing is recorded. Its
        ``tracestate`` (the one the run's span inherited) is cut to W3C's limits
        (``_kept_tracestate``), and left out when nothing of it is left."""
        span = self._span
        if span is None:
            return None
        context = span.get_span_context()
        if not context.is_valid:
            return None
        kept = SpanContext(
            context.trace_id,
            context.span_id,
            is_remote=False,
            trace_flags=context.trace_flags,
            trace_state=_kept_tracestate(context.trace_state),
        )
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, trace.set_span_in_context(NonRecordingSpan(kept)))
        return carrier or None

    @_shielded("end a run's span")
    def end(self, outcome: str, error: BaseException | None, usage: RunUsage) -> None:
        span = self._span
        try:
            elapsed = _now() - self._started
            error_type: str | None = None
            if outcome == "cancelled":
                error_type = sc.CANCELLED
            elif error is not None:
                error_type = _error_type(error)
            measured: dict[str, Any] = dict(self._owner._agent)
            model = self._common.get(sc.REQUEST_MODEL)
            if model is not None:
                measured[sc.REQUEST_MODEL] = model
            if error_type is not None:
                measured[sc.ERROR_TYPE] = error_type
            _record(self._owner._instruments.agent_duration, elapsed, measured, self._context)
            if span is not None:
                self._describe(span, outcome, error, error_type, usage)
        finally:
            if span is not None:
                span.end()

    def _describe(
        self,
        span: Span,
        outcome: str,
        error: BaseException | None,
        error_type: str | None,
        usage: RunUsage,
    ) -> None:
        span.set_attributes(
            {
                sc.RUN_OUTCOME: outcome,
                sc.RUN_REQUESTS: usage.requests,
                sc.RUN_TOOL_CALLS: usage.tool_calls,
            }
        )
        if self.usage_reported:  # tokens no response reported are not known to be 0
            span.set_attribute(sc.USAGE_INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(sc.USAGE_OUTPUT_TOKENS, usage.output_tokens)
            if usage.cached_input_tokens:
                span.set_attribute(sc.USAGE_CACHE_READ_INPUT_TOKENS, usage.cached_input_tokens)
            if usage.reasoning_tokens:
                span.set_attribute(sc.USAGE_REASONING_OUTPUT_TOKENS, usage.reasoning_tokens)
        if error_type is not None:
            _set_error(span, error_type, _description(error, self._owner._capture))


class _RequestSpan:
    """One model request's span; active while each event of its response is read."""

    __slots__ = ("_active", "_common", "_first_chunk", "_owner", "_run", "_span", "_started")

    def __init__(
        self,
        run: _RunSpan,
        span: Span | None,
        common: dict[str, Any],
        parent: Context | None,
    ) -> None:
        self._run = run
        self._owner = run._owner
        self._span = span
        self._common = common
        self._active = None if span is None else trace.set_span_in_context(span, parent)
        self._started = _now()
        self._first_chunk: float | None = None  # seconds until the stream's first event

    def activate(self) -> AbstractContextManager[None] | None:
        active = self._active  # once per event of the response: nothing here can fail
        return None if active is None else _Reading(self, active)

    @_shielded("end a model request's span")
    def end(self, message: AssistantMessage | None, error: BaseException | None) -> None:
        if message is not None and message.usage is not None:
            self._run.usage_reported = True
        span = self._span
        try:
            elapsed = _now() - self._started
            error_type: str | None = None
            if message is None:
                error_type = sc.CANCELLED if error is None else _error_type(error)
            self._measure(elapsed, message, error_type)
            if span is not None:
                self._describe(span, message, error, error_type)
        finally:
            if span is not None:
                span.end()

    def _measure(
        self, elapsed: float, message: AssistantMessage | None, error_type: str | None
    ) -> None:
        instruments = self._owner._instruments
        context = self._active
        measured: dict[str, Any] = {sc.OPERATION_NAME: sc.CHAT, **self._common}
        if message is None:
            measured[sc.ERROR_TYPE] = error_type
            _record(instruments.operation_duration, elapsed, measured, context)
            return
        if message.model is not None:
            measured[sc.RESPONSE_MODEL] = _shown(message.model)
        _record(instruments.operation_duration, elapsed, measured, context)
        usage = message.usage
        if usage is not None:
            tokens = instruments.token_usage
            _record(tokens, usage.input_tokens, {**measured, sc.TOKEN_TYPE: "input"}, context)
            _record(tokens, usage.output_tokens, {**measured, sc.TOKEN_TYPE: "output"}, context)

    def _describe(
        self,
        span: Span,
        message: AssistantMessage | None,
        error: BaseException | None,
        error_type: str | None,
    ) -> None:
        if self._first_chunk is not None:
            span.set_attribute(sc.RESPONSE_TIME_TO_FIRST_CHUNK, self._first_chunk)
        if message is None:
            assert error_type is not None
            _set_error(span, error_type, _description(error, self._owner._capture))
            return
        if message.stop_reason is not None:
            reason = _content.finish_reason(message.stop_reason)
            span.set_attribute(sc.RESPONSE_FINISH_REASONS, (_shown(reason),))
        if message.response_id is not None:
            span.set_attribute(sc.RESPONSE_ID, _shown(message.response_id))
        if message.model is not None:
            span.set_attribute(sc.RESPONSE_MODEL, _shown(message.model))
        usage = message.usage
        if usage is not None:
            span.set_attribute(sc.USAGE_INPUT_TOKENS, usage.input_tokens)
            span.set_attribute(sc.USAGE_OUTPUT_TOKENS, usage.output_tokens)
            if usage.cached_input_tokens:
                span.set_attribute(sc.USAGE_CACHE_READ_INPUT_TOKENS, usage.cached_input_tokens)
            if usage.reasoning_tokens:
                span.set_attribute(sc.USAGE_REASONING_OUTPUT_TOKENS, usage.reasoning_tokens)
        if self._owner._capture:
            span.set_attribute(sc.OUTPUT_MESSAGES, _content.output_messages(message))


class _ToolTimer:
    """One tool call nothing traces: only its duration is measured."""

    __slots__ = ("_context", "_histogram", "_measured", "_started")

    def __init__(self, histogram: Histogram, measured: dict[str, Any]) -> None:
        self._histogram = histogram
        self._measured = measured  # shared by the calls of one tool: never changed
        self._context: Context | None = None  # the call's span, for the exemplars
        self._started = _now()

    def activate(self) -> AbstractContextManager[None] | None:
        return None

    def end(self, result: ToolResult | None, error: BaseException | None) -> None:
        try:  # inline: a wrapper would cost every call of a worker not traced
            self._measure(result, error)
        except Exception:
            _failed("measure a tool call")

    def _measure(self, result: ToolResult | None, error: BaseException | None) -> str | None:
        """Record the call's duration; its error.type (``None`` if it succeeded)."""
        elapsed = _now() - self._started
        measured = self._measured
        if error is None and result is not None and not result.is_error:  # the usual call
            # Direct: the callers' guards hold (this runs for every call of a worker).
            self._histogram.record(elapsed, measured, self._context)
            return None
        error_type = _call_error_type(measured[sc.TOOL_NAME], result, error)
        if error_type is not None:
            measured = {**measured, sc.ERROR_TYPE: error_type}
        _record(self._histogram, elapsed, measured, self._context)
        return error_type


class _ToolSpan(_ToolTimer):
    """One tool call's span; active in the task (and thread) that runs the call."""

    __slots__ = ("_active", "_capture", "_span")

    def __init__(
        self,
        histogram: Histogram,
        measured: dict[str, Any],
        span: Span,
        parent: Context | None,
        owner: OpenTelemetry,
    ) -> None:
        super().__init__(histogram, measured)
        self._span = span
        self._active = self._context = trace.set_span_in_context(span, parent)
        self._capture = owner._capture

    @_shielded("make a tool call's span current")
    def activate(self) -> AbstractContextManager[None]:
        return _Attached(self._active)

    @_shielded("end a tool call's span")
    def end(self, result: ToolResult | None, error: BaseException | None) -> None:
        span = self._span
        try:
            error_type = self._measure(result, error)
            if error_type is None:
                if self._capture and result is not None:
                    span.set_attribute(sc.TOOL_CALL_RESULT, result.content)
            else:
                # An error result's text can quote the arguments: it is content, opt-in.
                description = None
                if error is not None:
                    description = _description(error, self._capture)
                elif self._capture and result is not None:
                    description = result.content
                _set_error(span, error_type, description)
        finally:
            span.end()


class _Attached:
    """Makes ``context`` the current OpenTelemetry context for the ``with`` block."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: Context) -> None:
        self._context = context
        self._token: Token[Context] | None = None

    def __enter__(self) -> None:
        try:
            self._token = otel_context.attach(self._context)
        except Exception:
            _failed("make a span current")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        token, self._token = self._token, None
        if token is not None:
            try:
                otel_context.detach(token)
            except Exception:
                _failed("make a span current again")


class _Reading(_Attached):
    """A model request's span made current around one step of reading its stream; the
    first step that brings an event times the first chunk."""

    __slots__ = ("_request",)

    def __init__(self, request: _RequestSpan, context: Context) -> None:
        super().__init__(context)
        self._request = request

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        super().__exit__(exc_type, exc, traceback)
        request = self._request
        if exc_type is None and request._first_chunk is None:  # an event came
            request._first_chunk = _now() - request._started


def _shown(label: str, limit: int = _MAX_LABEL_SHOWN) -> str:
    """A call id, or a provider's response id, model or stop reason, as a span or a metric
    shows it: cut short to ``limit`` characters (ending in "…") when a model or a provider
    made it long."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _kept_tracestate(state: object) -> TraceState:
    """``state`` (a span's tracestate) cut as W3C Trace Context says to cut one
    (https://www.w3.org/TR/trace-context/#tracestate-limits): the list-members longer than
    128 characters are left out, then members from the right (the end, the oldest)
    until at most 32 are left in at most 512 characters. Empty when nothing is left, or
    ``state`` is no mapping of strings or cannot be read (logged, without a traceback:
    a link goes without it). One pass over ``state``, whatever its size."""
    if not isinstance(state, Mapping):
        return _NO_TRACESTATE
    kept: list[tuple[str, str]] = []
    length = -1  # of the header so far: its members, and a comma between each two
    try:
        for key, value in cast("Mapping[object, object]", state).items():
            if not (isinstance(key, str) and isinstance(value, str)):
                continue
            member = len(key) + 1 + len(value)  # key=value
            if member > _MAX_TRACESTATE_MEMBER:
                continue
            if length + 1 + member > _MAX_TRACESTATE:
                break  # this one and all after it: from the right until it fits
            kept.append((key, value))
            length += 1 + member
            if len(kept) == _MAX_TRACESTATE_MEMBERS:
                break
        # The API's TraceState leaves out (and logs) a pair that is no valid member.
        return TraceState(kept) if kept else _NO_TRACESTATE
    except Exception as error:
        _logger.warning(
            "A run's tracestate could not be read (%s); its link goes without one",
            type(error).__name__,
        )
        return _NO_TRACESTATE


def _client_attributes(client: object) -> dict[str, Any]:
    """Provider, model and server of ``client``, as far as it tells them."""
    # The built-in provider clients have all three; a client of the user's may not.
    provider = getattr(client, "provider", None)
    if not isinstance(provider, str):
        provider = type(client).__name__
    attributes: dict[str, Any] = {sc.PROVIDER_NAME: provider}
    model = getattr(client, "model", None)
    if isinstance(model, str):
        attributes[sc.REQUEST_MODEL] = model
    base_url = getattr(client, "base_url", None)
    if base_url is not None:
        attributes.update(_server_attributes(str(base_url)))
    return attributes


def _server_attributes(base_url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of ``base_url`` (none if it has no host)."""
    try:
        url = urlsplit(base_url)
        host, port = url.hostname, url.port
    except ValueError:
        return {}
    if not host:
        return {}
    if port is None:
        port = {"https": 443, "http": 80}.get(url.scheme)
    return (
        {sc.SERVER_ADDRESS: host}
        if port is None
        else {sc.SERVER_ADDRESS: host, sc.SERVER_PORT: port}
    )


def _is_cancellation(error: BaseException) -> bool:
    """``error`` is the run stopping (cancelled, or its reader left), not a failure."""
    if isinstance(error, (GeneratorExit, asyncio.CancelledError)):
        return True
    try:
        return isinstance(error, anyio.get_cancelled_exc_class())  # trio's Cancelled
    except RuntimeError:  # not in an event loop's thread: never a cancellation of one
        return False


def _error_type(error: BaseException) -> str:
    if _is_cancellation(error):
        return sc.CANCELLED
    if isinstance(error, ProviderError) and error.status is not None:
        return str(error.status)
    return type(error).__qualname__


def _call_error_type(
    name: str, result: ToolResult | None, error: BaseException | None
) -> str | None:
    """The error.type of a call of tool ``name``: ``None`` if it succeeded."""
    if error is not None:
        return _error_type(error)
    if result is None:
        return sc.CANCELLED  # its run stopped it
    return _result_error_type(name, result.content) if result.is_error else None


def _result_error_type(name: str, text: str) -> str:
    for prefix, error_type in _ERROR_PREFIXES:
        if text.startswith(prefix):
            if error_type == "ExecutionFailedError" and _is_timed_out(name, text[len(prefix) :]):
                return sc.TIMEOUT
            return error_type
    return sc.TOOL_ERROR


def _is_timed_out(name: str, message: str) -> bool:
    """Whether ``message`` is the loop's own for a call of ``name`` past its timeout (not a
    tool's error that happens to say "timed out")."""
    head = call_text(_TIMED_OUT_HEAD, name)
    if not (message.startswith(head) and message.endswith(_TIMED_OUT_TAIL)):
        return False
    seconds = message[len(head) : len(message) - len(_TIMED_OUT_TAIL)]
    try:
        float(seconds)
    except ValueError:
        return False
    return True


def _description(error: BaseException | None, capture: bool) -> str | None:
    """The status description of an operation that failed with ``error``: its message,
    unless it quotes content (``_QUOTING_ERRORS``) and ``capture`` is off. (``_set_error``
    cuts it short.)"""
    if error is None or _is_cancellation(error):
        return None
    if not capture and isinstance(error, _QUOTING_ERRORS):
        return None
    return str(error) or None


def _set_error(span: Span, error_type: str, description: str | None) -> None:
    """Mark ``span`` failed: its ``error.type``, and its status with ``description``, cut
    to ``_MAX_DESCRIPTION`` characters (ending in "…") if it is longer: every status
    description goes through here."""
    span.set_attribute(sc.ERROR_TYPE, error_type)
    if description is not None:
        description = _shown(description, _MAX_DESCRIPTION)
    span.set_status(StatusCode.ERROR, description)
