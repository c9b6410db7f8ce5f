"""Every sentence a model can read about a tool call that went wrong, in one place.

A tool's own failures reach the model as the ``ToolError``'s text
(``Invalid argument: ...``, ``Execution failed: ...``, ``Internal error: ...``,
SPEC §1), and an unknown name as ``ToolNotFoundError``'s (``Tool 'x' not
found``). Everything else a model reads about a call is written here: why a
call did not run, why its result was replaced, which arguments were wrong,
that a result was cut short. The Worker and the MCP server both use these
texts, so a model reads the same words for the same failure wherever it
called from. Each template is filled with ``str.format``: ``{name}`` is the
tool's name.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "ABORTED",
    "CANCELLED",
    "DENIED",
    "INPUT_TOO_DEEP",
    "INPUT_TOO_LARGE",
    "MCP_CONNECTION_LOST",
    "MCP_ERROR",
    "MCP_NO_MESSAGE",
    "MCP_UNEXPECTED",
    "NOT_ALLOWED",
    "NOT_RUN",
    "NOT_TEXT",
    "SKIPPED",
    "SKIPPED_BECAUSE",
    "STOPPED",
    "TIMED_OUT",
    "UNEXPECTED",
    "WITHHELD",
    "call_text",
    "describe_validation_error",
    "shown_name",
    "truncation_note",
]

# -- calls that did not run ---------------------------------------------------------------

SKIPPED = "Tool call '{name}' was skipped by the application; it did not run"
SKIPPED_BECAUSE = "Tool call '{name}' was skipped by the application; it did not run: {reason}"
DENIED = "Tool call '{name}' was denied; it did not run: {reason}"
NOT_ALLOWED = (
    "Tool call '{name}' did not run: that tool is not available now (available: {allowed})"
)
ABORTED = "Tool call '{name}' did not run: the run was aborted ({reason})"
CANCELLED = "Tool call '{name}' was cancelled before it finished"
STOPPED = "Tool call '{name}' was cancelled before it finished: {why}"
NOT_RUN = "Tool call '{name}' did not run: the run stopped with an error"

# -- calls that ran, but whose own result the model does not get ---------------------------

WITHHELD = "Tool call '{name}' ran, but its result was withheld: {why}"
# The message of the ExecutionFailedError a call that ran too long gets.
TIMED_OUT = "tool '{name}' timed out after {seconds:g}s"
# A tool that broke its contract (a bug in the tool, not a bad call).
UNEXPECTED = "Internal error: tool '{name}' failed unexpectedly ({kind})"
NOT_TEXT = "Internal error: tool '{name}' returned {kind}, not text"

_MAX_NAME_SHOWN = 100  # a model-chosen name can be a megabyte long


def shown_name(name: str) -> str:
    """``name`` as a text shows it: cut short when a model made it long."""
    return name if len(name) <= _MAX_NAME_SHOWN else name[: _MAX_NAME_SHOWN - 1] + "…"


def call_text(template: str, name: str, **fields: object) -> str:
    """``template`` (one of the above) filled in for a call of tool ``name``."""
    return template.format(name=shown_name(name), **fields)


# -- MCP tools (the text after "Execution failed: " or "Internal error: ") -------------------

MCP_ERROR = "MCP error: {message}"
MCP_CONNECTION_LOST = "lost the connection to the MCP server ({kind})"
MCP_UNEXPECTED = "calling MCP tool '{name}' failed unexpectedly ({kind})"
MCP_NO_MESSAGE = "MCP tool '{name}' reported an error (no message)"

# -- arguments over a limit (the text after "Invalid argument: ") ----------------------------

INPUT_TOO_LARGE = "input is {size} bytes, over the limit of {limit} bytes"
INPUT_TOO_DEEP = "input nests deeper than the limit of {limit} levels"


def truncation_note(dropped: int, total: int) -> str:
    """What follows a result cut at ``Limits.max_result_bytes``."""
    return (
        f"\n[truncated: {dropped} of {total} bytes dropped; "
        f"narrow the request (filter, paginate or ask for less) to see the rest]"
    )


# -- arguments that failed validation (the text after "Invalid argument: ") ------------------

# A model that gets many things wrong at once learns the first few; the rest are counted.
_MAX_REPORTED_ERRORS = 10
_MAX_INPUT_PREVIEW = 60


def describe_validation_error(exc: ValidationError, field_names: tuple[str, ...]) -> str:
    """One line naming every failing argument and why, in terms a model can act on."""
    errors = exc.errors(include_url=False, include_context=False)
    if len(errors) == 1:
        return _describe_one(errors[0], field_names)
    problems = [_describe_one(error, field_names) for error in errors[:_MAX_REPORTED_ERRORS]]
    if len(errors) > _MAX_REPORTED_ERRORS:
        problems.append(f"and {len(errors) - _MAX_REPORTED_ERRORS} more errors")
    return "; ".join(problems)


def _describe_one(error: Any, field_names: tuple[str, ...]) -> str:
    kind: str = error["type"]
    loc: tuple[int | str, ...] = error["loc"]
    message: str = error["msg"]
    if kind == "json_invalid":
        return f"input is not valid JSON ({message.removeprefix('Invalid JSON: ')})"
    if kind == "string_unicode" and not loc:
        return "input is not valid Unicode text"
    if kind in ("model_type", "model_attributes_type", "dict_type") and not loc:
        return f"input must be a JSON object, got {_json_type(error.get('input'))}"
    where = _format_loc(loc)
    if kind == "missing":
        return f"{where}: missing required argument" if len(loc) == 1 else f"{where}: missing"
    if kind == "extra_forbidden":
        if len(loc) == 1:
            allowed = ", ".join(field_names) if field_names else "no arguments"
            return f"{where}: unexpected argument (this tool takes: {allowed})"
        return f"{where}: unexpected field"
    return f"{where}: {message} (got {_preview(error.get('input'))})"


def _format_loc(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return f"'{text}'" if text else "input"


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return type(value).__name__


_encode_json = json.JSONEncoder(ensure_ascii=False).encode


def _preview(value: object) -> str:
    try:
        text = _encode_json(value)
    except (TypeError, ValueError):
        text = _json_type(value)
    if len(text) > _MAX_INPUT_PREVIEW:
        text = text[: _MAX_INPUT_PREVIEW - 1] + "…"
    return text
