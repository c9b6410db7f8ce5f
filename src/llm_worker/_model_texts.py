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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, get_args

from ._safe_text import safe_text

if TYPE_CHECKING:
    from pydantic import ValidationError

    from ._content import MediaPart

__all__ = [
    "ABORTED",
    "AN_ITERATOR",
    "APPROVAL_CANCELLED",
    "APPROVAL_DECLINED",
    "APPROVAL_FAILED",
    "APPROVAL_POLICY_FAILED",
    "APPROVAL_UNAVAILABLE",
    "CANCELLED",
    "CUT_OFF_LIMITS",
    "DENIED",
    "DURABLE_CALL_FAILED",
    "DURABLE_HISTORY_FULL",
    "DURABLE_INPUT_TOO_LARGE",
    "DURABLE_RESULT_TOO_LARGE",
    "DURABLE_TOOL_UNAVAILABLE",
    "INPUT_TOO_DEEP",
    "INPUT_TOO_LARGE",
    "MCP_BAD_CONTENT",
    "MCP_BAD_OUTPUT_SCHEMA",
    "MCP_BAD_RESULT",
    "MCP_CONNECTION_LOST",
    "MCP_ERROR",
    "MCP_NOT_STRUCTURED",
    "MCP_NO_MESSAGE",
    "MCP_UNEXPECTED",
    "MEDIA_ATTACHED",
    "MEDIA_DOCUMENT_TEXT",
    "MEDIA_DROPPED",
    "MEDIA_NOT_SENT",
    "MEDIA_OF_RESULT",
    "MEDIA_PARTS_DROPPED",
    "MEDIA_URL_NOT_FETCHED",
    "MEDIA_URL_UNREADABLE",
    "MIXED_PARTS",
    "NOT_ALLOWED",
    "NOT_AWAITED",
    "NOT_JSON_NUMBER",
    "NOT_RUN",
    "NOT_STRUCTURED",
    "NOT_TEXT",
    "OUTPUT_ACCEPTED",
    "OUTPUT_CUT_OFF",
    "OUTPUT_INVALID",
    "OUTPUT_NEEDS_TOOL",
    "OUTPUT_TOOL",
    "PART_INSIDE",
    "SKIPPED",
    "SKIPPED_BECAUSE",
    "STOPPED",
    "STOP_BLOCKED",
    "STOP_CUT_OFF",
    "STOP_OTHER",
    "STOP_REFUSED",
    "TIMED_OUT",
    "UNEXPECTED",
    "UNSENDABLE_RETURN",
    "UNSERIALIZABLE",
    "WITHHELD",
    "call_text",
    "describe_validation_error",
    "media_label",
    "shown_media_type",
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
# A served tool that needs a person's approval, asked for through MCP elicitation.
APPROVAL_DECLINED = "Tool call '{name}' was denied; it did not run: the user declined it"
APPROVAL_CANCELLED = (
    "Tool call '{name}' was denied; it did not run: the user dismissed the request for approval"
)
APPROVAL_UNAVAILABLE = (
    "Tool call '{name}' did not run: it needs a user's approval, which this MCP client "
    "cannot ask for (it does not support elicitation)"
)
APPROVAL_FAILED = (
    "Tool call '{name}' did not run: it needs a user's approval, and asking for it failed ({why})"
)
APPROVAL_POLICY_FAILED = (
    "Internal error: could not tell whether tool call '{name}' needs approval ({kind})"
)

# -- calls that ran, but whose own result the model does not get ---------------------------

WITHHELD = "Tool call '{name}' ran, but its result was withheld: {why}"
# The message of the ExecutionFailedError a call that ran too long gets.
TIMED_OUT = "tool '{name}' timed out after {seconds:g}s"
# A tool that broke its contract (a bug in the tool, not a bad call).
UNEXPECTED = "Internal error: tool '{name}' failed unexpectedly ({kind})"
NOT_TEXT = "Internal error: tool '{name}' returned {kind}, not text"
# NOT_TEXT's kind for parts that are not parts, or metadata that is not JSON.
UNSENDABLE_RETURN = "a ToolReturn that cannot be sent ({error})"
# In place of a media part over Limits.max_media_bytes (a URL counts its length).
MEDIA_DROPPED = (
    "[{media_type} of {size} bytes from tool '{name}' dropped: over the limit of {limit} "
    "bytes for media in one result]"
)
# In place of the media parts of one result past the number it may hold.
MEDIA_PARTS_DROPPED = (
    "[{count} more media parts from tool '{name}' dropped: over the limit of {limit} "
    "media parts in one result]"
)
# A served tool with an output schema whose result is not the JSON object it describes.
NOT_STRUCTURED = (
    "Internal error: tool '{name}' returned a result its output schema does not describe ({why})"
)
# The message of the InternalToolError a generated tool raises for a result it cannot serialise.
UNSERIALIZABLE = "tool '{name}' returned {kind}, which could not be turned into text ({error})"
# ...for a result that is not one yet: a coroutine nothing awaited, an iterator not consumed.
NOT_AWAITED = (
    "tool '{name}' returned {kind} instead of its result: its method is a plain def that "
    "does not await what it calls; declare it async def"
)
AN_ITERATOR = "tool '{name}' returned an iterator ({kind}), not a result; return a list"
# ...for a list or tuple that begins with a content part but holds other values too.
MIXED_PARTS = (
    "tool '{name}' returned content parts mixed with other values ({kind}); return only "
    "parts (text as a TextPart), or no parts"
)
# ...for a content part inside a dict, a list or another container ({where}: the keys that
# lead to it): as JSON, its media would reach the model as base64 text, past every limit.
PART_INSIDE = (
    "tool '{name}' returned a content part ({kind}) inside its result, at {where}; return "
    "parts as the result itself (a part, a list of parts only, or a ToolReturn), and other "
    "values in a DataPart"
)

# -- structured final output (output_type=) ---------------------------------------------------

# The description of the tool a client without native structured output answers through.
OUTPUT_TOOL = (
    "Give your final answer: call this once you have it, with the answer as its arguments. "
    "Calling it ends your turn."
)
OUTPUT_ACCEPTED = "Final answer received."
# Sent back (as a user message, or the output tool's error result) for an answer that fails.
OUTPUT_INVALID = (
    "Your final answer does not match the required format: {problems}. "
    "Answer again, with only the corrected answer."
)
# The answer's whole problem when it came as text (read after OUTPUT_INVALID's colon).
OUTPUT_NEEDS_TOOL = "give your final answer by calling the tool '{name}', not as text"
# Sent back in place of OUTPUT_INVALID for an answer its response's token limit cut off:
# the same answer would be cut again.
OUTPUT_CUT_OFF = (
    "Your final answer does not match the required format: {problems}. "
    "Answer again, shorter, with only the answer."
)
# Why the response of an answer that failed ended as it did, put before its problems (so
# the model and OutputValidationError.problems read it): {reason} is the stop reason.
STOP_CUT_OFF = "the response was cut off at {limit} (stop reason '{reason}')"
# STOP_CUT_OFF's {limit}, by stop reason.
CUT_OFF_LIMITS: Mapping[str, str] = {
    "max_tokens": "the output token limit",
    "model_context_window_exceeded": "the model's context window",
}
STOP_REFUSED = "the response was a refusal (stop reason '{reason}')"
STOP_BLOCKED = "the provider blocked the response (stop reason '{reason}')"
STOP_OTHER = "the response ended with stop reason '{reason}'"

_MAX_NAME_SHOWN = 100  # a model-chosen name can be a megabyte long


def shown_name(name: str) -> str:
    """``name`` as a text shows it: cut short when a model made it long. A name that is not a
    ``str`` (a caller's mistake, ``call_tool(5, ...)``) shows its type: ``<int>``."""
    if not isinstance(name, str):
        return f"<{type(name).__name__}>"
    return name if len(name) <= _MAX_NAME_SHOWN else name[: _MAX_NAME_SHOWN - 1] + "…"


def call_text(template: str, name: str, **fields: object) -> str:
    """``template`` (one of the above) filled in for a call of tool ``name``."""
    return template.format(name=shown_name(name), **fields)


# -- media of a tool result, as a provider client sends it (llm_worker.providers) ------------

# In place of a media part the provider's API cannot take in a tool result ({media}: a
# media_label).
MEDIA_NOT_SENT = "[{media} not shown: this API cannot take {media_type} in a tool result]"
# In place of a media part by a URL of a scheme the API does not fetch ({scheme}: gs).
MEDIA_URL_NOT_FETCHED = "[{media} not shown: this API does not fetch {scheme}:// URLs]"
# In place of a media part by a data: URL whose bytes cannot be read (not base64, say).
MEDIA_URL_UNREADABLE = "[{media} not shown: its data: URL holds no bytes that can be read]"
# In a text-only tool message (Chat Completions...), for the media sent after it.
MEDIA_ATTACHED = "[attached in the next user message: {media}]"
# Heads those media in that user message.
MEDIA_OF_RESULT = "[attachments of the result of tool call {call_id}:]"
# Heads a text document sent there as text, which would otherwise read as bare text.
MEDIA_DOCUMENT_TEXT = "[file {media}:]"


# The characters a note shows of a media part's name, URL or type: notes are written after
# Limits.max_result_bytes is applied, so each holds only what is bounded.
_MAX_MEDIA_SHOWN = 200


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown_media_type(media_type: str) -> str:
    """A media type as a note shows it: cut short past 200 characters (its parameters,
    after ``;``, can be of any length)."""
    return _shortened(media_type, _MAX_MEDIA_SHOWN)


def media_label(part: MediaPart) -> str:
    """How a note names a media part: ``'q3.pdf' (application/pdf, 5120 bytes)``,
    ``image/png (812 bytes)``, ``image/png at https://...``, ``video/mp4 (a data: URL of
    3000022 bytes)``.

    Bounded whatever the part holds: its name, URL and type are cut short past 200
    characters each, and a ``data:`` URL (the bytes themselves) is shown by its size.
    """
    media_type = shown_media_type(part.media_type)
    name = None if not part.name else repr(_shortened(part.name, _MAX_MEDIA_SHOWN))
    url = part.url
    if url is not None:
        where = f"{name} ({media_type})" if name else media_type
        if url[:5].lower() == "data:":
            size = len(url) if url.isascii() else len(url.encode("utf-8", "surrogatepass"))
            return f"{where} (a data: URL of {size} bytes)"
        return f"{where} at {_shortened(url, _MAX_MEDIA_SHOWN)}"
    if name:
        return f"{name} ({media_type}, {part.size} bytes)"
    return f"{media_type} ({part.size} bytes)"


# -- MCP tools (the text after "Execution failed: " or "Internal error: ") -------------------

MCP_ERROR = "MCP error: {message}"
MCP_CONNECTION_LOST = "lost the connection to the MCP server ({kind})"
MCP_UNEXPECTED = "calling MCP tool '{name}' failed unexpectedly ({kind})"
MCP_NO_MESSAGE = "MCP tool '{name}' reported an error (no message)"
MCP_BAD_CONTENT = "MCP tool '{name}' sent {what} that cannot be read: {problem}"
# A result the SDK could not read as MCP ({problem}: where and why, from pydantic).
MCP_BAD_RESULT = "MCP tool '{name}' sent a result that is not valid MCP: {problem}"
# The SDK could not check a result: the tool's outputSchema (changed since it was listed)
# is no valid JSON Schema, or a $ref in it points to nothing.
MCP_BAD_OUTPUT_SCHEMA = (
    "MCP tool '{name}' has an output schema that is not a valid JSON Schema, "
    "so its results cannot be checked"
)
# A result the SDK refused for the tool's output schema, worded as NOT_STRUCTURED.
MCP_NOT_STRUCTURED = (
    "MCP tool '{name}' returned a result its output schema does not describe ({why})"
)

# -- durable runs (the text after "Execution failed: ") ---------------------------------------

# A tool call's activity that Temporal gave up on (its retries ran out, or it timed out).
DURABLE_CALL_FAILED = "tool '{name}' did not complete: {why}"
# A call too large for Temporal to send to its activity: its arguments and the run's deps.
DURABLE_INPUT_TOO_LARGE = (
    "tool '{name}' was not called: its arguments and the run's deps are {size} bytes, over "
    "the {limit} bytes a durable run can send to one call"
)
# A result too large for Temporal to record (DurableWorker(max_payload_bytes=)).
DURABLE_RESULT_TOO_LARGE = (
    "tool '{name}' returned {size} bytes, over the {limit} bytes a durable run can record "
    "of one result; return less (a summary, a page, a link)"
)

# -- arguments over a limit (the text after "Invalid argument: ") ----------------------------

INPUT_TOO_LARGE = "input is {size} bytes, over the limit of {limit} bytes"
INPUT_TOO_DEEP = "input nests deeper than the limit of {limit} levels"


def truncation_note(dropped: int, total: int) -> str:
    """What follows a result cut at ``Limits.max_result_bytes``."""
    return (
        f"\n[truncated: {dropped} of {total} bytes dropped; "
        f"narrow the request (filter, paginate or ask for less) to see the rest]"
    )


# -- arguments that are not JSON (the text after "Invalid argument: ") ------------------------

NOT_JSON_NUMBER = (
    "input is not valid JSON: NaN, Infinity and numbers out of range for a 64-bit float "
    "are not JSON numbers (found {value})"
)

# -- arguments that failed validation (the text after "Invalid argument: ") ------------------

# A model that gets many things wrong at once learns the first few; the rest are counted.
_MAX_REPORTED_ERRORS = 10
# Up to this many errors are read as pydantic's dicts (about 650 bytes each); past it, only
# the first few are read back from pydantic's compact JSON, without their inputs (about 85
# bytes each): 60 000 unknown keys cost megabytes, not tens of them.
_MAX_READ_ERRORS = 100
_MAX_INPUT_PREVIEW = 60
# Kinds whose text is worded here.
_OWN_WORDS = frozenset({"missing", "extra_forbidden", "finite_number"})
# Kinds whose message is a user's validator's text, made safe like an exception's.
_USER_TEXT = frozenset({"value_error", "assertion_error"})
# Pydantic's own kinds (the others are pydantic's words about one value): read on the
# first failed call, since importing pydantic_core's schema module would cost
# `import llm_worker` about 20 ms.
_pydantic_words: frozenset[str] = frozenset()


def _load_pydantic_words() -> frozenset[str]:
    global _pydantic_words
    from pydantic_core.core_schema import ErrorType

    _pydantic_words = frozenset(get_args(ErrorType)) - _OWN_WORDS - _USER_TEXT
    return _pydantic_words


def describe_validation_error(exc: ValidationError, field_names: tuple[str, ...]) -> str:
    """One line naming every failing argument and why, in terms a model can act on.

    Work and memory stay bounded by what the line shows, however many errors there are.
    """
    words = _pydantic_words or _load_pydantic_words()
    count = exc.error_count()
    if count == 1:
        [error] = exc.errors(include_url=False, include_context=False)
        loc = error["loc"]
        if len(loc) == 1 and error["type"] in words and "input" in error and type(loc[0]) is str:
            # The common case, in one go (a failed call is a hot path too): what
            # _describe_one says of pydantic's words about one argument.
            value = error["input"]
            got = _preview(value) if type(value) is not str else _encode_str(value)
            if len(got) > _MAX_INPUT_PREVIEW:
                got = got[: _MAX_INPUT_PREVIEW - 1] + "…"
            return f"'{loc[0]}': {error['msg']} (got {got})"
        return _describe_one(error, field_names, words)
    errors: list[Any]
    if count <= _MAX_READ_ERRORS:
        errors = exc.errors(include_url=False, include_context=False)[:_MAX_REPORTED_ERRORS]
    else:
        errors = _first_errors(exc)
    problems = [_describe_one(error, field_names, words) for error in errors]
    if count > _MAX_REPORTED_ERRORS:
        problems.append(f"and {count - _MAX_REPORTED_ERRORS} more errors")
    return "; ".join(problems)


_read_json = json.JSONDecoder().raw_decode


def _first_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """The first ``_MAX_REPORTED_ERRORS`` errors, read from pydantic's JSON (``[{...},{...}]``)."""
    text = exc.json(include_url=False, include_context=False, include_input=False)
    errors: list[dict[str, Any]] = []
    position = 1
    while len(errors) < _MAX_REPORTED_ERRORS:
        error, position = _read_json(text, position)
        errors.append(error)
        if text[position] != ",":
            break
        position += 1
    return errors


def _describe_one(error: Any, field_names: tuple[str, ...], words: frozenset[str]) -> str:
    kind: str = error["type"]
    loc: tuple[int | str, ...] = error["loc"]
    if len(loc) == 1 and type(loc[0]) is str:  # one named argument
        where = f"'{loc[0]}'"
    elif loc:
        where = _format_loc(loc)
    else:
        return _describe_input(kind, error, words)
    if kind in words:
        message: str = error["msg"]
    elif kind == "missing":
        return f"{where}: missing required argument" if len(loc) == 1 else f"{where}: missing"
    elif kind == "extra_forbidden":
        if len(loc) == 1:
            allowed = ", ".join(field_names) if field_names else "no arguments"
            return f"{where}: unexpected argument (this tool takes: {allowed})"
        return f"{where}: unexpected field"
    elif kind == "finite_number":
        message = "NaN, Infinity and numbers out of range for a 64-bit float are not JSON"
    else:  # a user's validator (or custom error type) wrote it: it may hold a path or a secret
        message = safe_text(error["msg"])
    if "input" not in error:
        return f"{where}: {message}"
    return f"{where}: {message} (got {_preview(error['input'])})"


def _describe_input(kind: str, error: Any, words: frozenset[str]) -> str:
    """An error about the input as a whole (it has no location)."""
    message: str = error["msg"]
    if kind == "json_invalid":
        return f"input is not valid JSON ({message.removeprefix('Invalid JSON: ')})"
    if kind == "string_unicode":
        return "input is not valid Unicode text"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"input must be a JSON object, got {_json_type(error.get('input'))}"
    if kind not in words:
        message = safe_text(message)
    return f"input: {message}"


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


_encode_str = json.encoder.encode_basestring  # the C encoder, without JSONEncoder's dispatch


def _preview(value: object) -> str:
    if type(value) is str:
        text = _encode_str(value)
    elif type(value) is int:
        text = int.__repr__(value)
    else:
        try:
            text = _encode_json(value)
        except (TypeError, ValueError):
            text = _json_type(value)
    if len(text) > _MAX_INPUT_PREVIEW:
        text = text[: _MAX_INPUT_PREVIEW - 1] + "…"
    return text


# -- durable runs: calls Temporal cannot take (llm_worker.temporal) ----------------------------

# A call the workflow's history has no room left to record (DurableWorker(max_history_bytes=)).
DURABLE_HISTORY_FULL = (
    "tool '{name}' was not called: this durable run has no room left to record more calls"
)
# A call of a tool the activity worker that took it does not have (the details go to the log).
DURABLE_TOOL_UNAVAILABLE = "tool '{name}' is not available"
