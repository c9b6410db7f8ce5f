"""Structured final output: a run's answer validated into ``output_type``.

A run with an ``output_type`` gets its answer one of two ways, chosen from the
client:

- natively, when the client says ``supports_output_format``: every request
  carries the schema (``LlmRequest.output_format``) and the final text is
  validated;
- through a tool otherwise: the requests also offer a tool ``final_result``
  whose arguments are the answer, and ask for a tool call
  (``tool_choice="required"``).

An answer that does not validate goes back to the model with what was wrong
(a user message, or the tool's error result), ``output_retries`` times at
most; one more bad answer is told so too (the history keeps it, and
``retry()`` can ask again), and ends the run with ``OutputValidationError``.
When its response did not end as an answer does (cut off at the token limit, a
refusal, blocked by the provider: any stop reason but ``end_turn`` and
``tool_use``), what was wrong begins with that: JSON cut short is no format
mistake, and an answer cut off is asked for again shorter. A refusal is retried
as any bad answer (``output_retries=0`` does not retry): a filter's false
positive or a sampled refusal may pass the next time, and the stop reason is in
the history and the error for an application that decides otherwise.

An answer holding ``NaN``, ``Infinity`` or a number past a float's range (``1e400``)
is refused as a tool's arguments are (``_strict_json``): none is JSON, and an app
reading ``nan`` gets a value every comparison calls false. pydantic reads them (a
model's ``float`` allows them unless its config says ``allow_inf_nan=False``), so
the validated answer is looked at, one step per value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from ._client import OutputFormat
from ._conversation import FILTERED_STOP_REASONS, ToolCall
from ._exceptions import OutputValidationError, RunStateError
from ._meta import LlmToolDefinition
from ._model_texts import (
    CUT_OFF_LIMITS,
    OUTPUT_ACCEPTED,
    OUTPUT_CUT_OFF,
    OUTPUT_INVALID,
    OUTPUT_NEEDS_TOOL,
    OUTPUT_TOOL,
    STOP_BLOCKED,
    STOP_CUT_OFF,
    STOP_OTHER,
    STOP_REFUSED,
    call_text,
    describe_validation_error,
    shown_name,
)
from ._output_schema import output_shape
from ._safe_text import bounded_repr
from ._strict_json import non_finite_problem

__all__ = ["OUTPUT_TOOL_NAME", "RunOutput", "answers_natively"]

OUTPUT_TOOL_NAME = "final_result"
"""The tool a client without native structured output gives its final answer through."""

_FORMAT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")

# Stop reasons of a response that ended as an answer does: nothing to say of them.
_ANSWER_ENDS = frozenset({"end_turn", "tool_use"})
_REFUSALS = frozenset({"refusal"})  # Anthropic's; the OpenAI clients' for a refusal
# A provider's filter or policy stopped the response; Gemini's other refusals to go on too.
_BLOCKS = FILTERED_STOP_REASONS | {"language", "escalation", "pup_limited_disabled"}


def answers_natively(client: object, output_type: Any) -> bool:
    """Whether ``client`` is sent ``output_type``'s schema (``supports_output_format``),
    else the answer comes through the ``final_result`` tool. A client may take some
    schemas and not others (``supports_output_schema``: Anthropic cannot express a
    ``dict[str, X]``): those come through the tool."""
    if getattr(client, "supports_output_format", False) is not True:
        return False
    takes_schema = getattr(client, "supports_output_schema", None)
    schema = output_shape(output_type, mode="validation").schema  # the schema a run sends
    return not callable(takes_schema) or takes_schema(schema) is True


class RunOutput:
    """What one run asks of its final answer, and the answer once it is accepted.

    ``format`` (native) or ``tool`` (through a tool) is set, never both.
    """

    __slots__ = (
        "_fields",
        "_shape",
        "attempts",
        "done",
        "format",
        "problems",
        "retries",
        "tool",
        "value",
    )

    def __init__(self, output_type: Any, *, native: bool, retries: int) -> None:
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"output_retries must be an int of at least 0, got {retries!r}")
        # The validation-mode schema: its keys are the ones the answer is validated with
        # (a field's validation_alias, no computed_field), which the serialization-mode
        # one may not take (a serialization_alias; a computed field it requires).
        shape = output_shape(output_type, mode="validation")
        self._shape = shape
        self._fields: tuple[str, ...] = tuple(shape.schema.get("properties", {}))
        self.retries = retries
        self.attempts = 0  # answers that failed
        self.problems = ""  # what was wrong with the last one
        self.done = False
        self.value: Any = None
        self.format: OutputFormat | None = None
        self.tool: LlmToolDefinition | None = None
        if native:
            schema_json = json.dumps(shape.schema, ensure_ascii=False)
            self.format = OutputFormat(_format_name(output_type), schema_json)
        else:
            self.tool = LlmToolDefinition(
                name=OUTPUT_TOOL_NAME, description=OUTPUT_TOOL, input_schema=shape.schema
            )

    def answer_text(self, text: str, *, stop_reason: str | None = None) -> str | None:
        """Take a final text and its response's stop reason: ``None`` if it is the
        answer, else what to tell the model (then ``check_retries()``)."""
        if self.tool is not None:
            return self._reject(call_text(OUTPUT_NEEDS_TOOL, OUTPUT_TOOL_NAME), stop_reason)
        value, problems = self._validated(text)
        if problems is not None:
            return self._reject(problems, stop_reason)
        self._accept(value)
        return None

    def answer_call(self, input_json: str, *, stop_reason: str | None = None) -> tuple[str, bool]:
        """Take a call of the output tool (and its response's stop reason): its result text
        and whether it is an error (then ``check_retries()``)."""
        if self.done:
            return OUTPUT_ACCEPTED, False  # the first answer of a response stands
        value, problems = self._validated(input_json or "{}")
        if problems is not None:
            return self._reject(problems, stop_reason), True
        self._accept(value)
        return OUTPUT_ACCEPTED, False

    def ask_again(self) -> None:
        """A retry: the model answers anew, with its retries again (an answer a stopped
        response gave does not end the retried run)."""
        self.attempts = 0
        self.problems = ""
        self.done = False
        self.value = None

    def _validated(self, text: str) -> tuple[Any, str | None]:
        """The answer ``text`` holds, or what is wrong with it (then the value is ``None``)."""
        try:
            value = self._shape.validate_json(text)
        except ValidationError as exc:
            return None, describe_validation_error(exc, self._fields)
        # Not JSON, though pydantic read it: NaN, Infinity, 1e400 (as a tool's arguments).
        # Looked for only where the type lets them through (a float, Any...).
        problem = non_finite_problem((value,)) if self._shape.admits_non_finite else None
        return (None, problem) if problem is not None else (value, None)

    def _accept(self, value: Any) -> None:
        self.value = value
        self.done = True

    def take_answer_of(self, calls: Iterable[ToolCall]) -> None:
        """Accept again the answer a loaded paused response gave through the output tool
        (``calls``: the response's calls whose result is not an error).

        A run state keeps the call, not the value. The answer stands even if this run
        answers natively (``tool`` is ``None``: say, another client loaded the state):
        the model was told it was received. The caller leaves out the calls of an
        application's own tool of that name. Raises ``RunStateError`` if the answer
        does not fit this ``output_type``.
        """
        for call in calls:
            if call.name != OUTPUT_TOOL_NAME:
                continue
            value, problems = self._validated(call.input_json or "{}")
            if problems is not None:
                raise RunStateError(
                    f"the paused run's answer (its {OUTPUT_TOOL_NAME!r} call "
                    f"{bounded_repr(call.id, 80)}) does not fit this worker's output_type: "
                    f"{problems}"
                )
            self._accept(value)
            return

    def check_retries(self) -> None:
        """Raise ``OutputValidationError`` if the answers failed more often than retried, and
        none was accepted (a response's bad answer may come before its valid one)."""
        if not self.done and self.attempts > self.retries:
            raise OutputValidationError(self.problems, self.attempts)

    def _reject(self, problems: str, stop_reason: str | None) -> str:
        self.attempts += 1
        why = _why_stopped(stop_reason)
        self.problems = problems if why is None else f"{why}; {problems}"
        told = OUTPUT_CUT_OFF if stop_reason in CUT_OFF_LIMITS else OUTPUT_INVALID
        return told.format(problems=self.problems)


def _why_stopped(stop_reason: str | None) -> str | None:
    """What the stop reason of a failed answer's response says of it; ``None`` if nothing
    (it ended as an answer does)."""
    if stop_reason is None or stop_reason in _ANSWER_ENDS:
        return None
    reason = shown_name(stop_reason)  # a server's text: kept short
    limit = CUT_OFF_LIMITS.get(stop_reason)
    if limit is not None:
        return STOP_CUT_OFF.format(limit=limit, reason=reason)
    if stop_reason in _REFUSALS:
        return STOP_REFUSED.format(reason=reason)
    if stop_reason in _BLOCKS:
        return STOP_BLOCKED.format(reason=reason)
    return STOP_OTHER.format(reason=reason)


def _format_name(output_type: Any) -> str:
    name = getattr(output_type, "__name__", "")
    return name if isinstance(name, str) and _FORMAT_NAME.fullmatch(name) else "output"
