"""Limits on what a model can make a tool do, and the texts that tell it so.

A model's tool call is untrusted input. Sizes and depths are checked before
any parsing work that grows with the input, and results are capped before they
reach the model, without copying them whole. (Failure texts are made safe for
a model by ``_safe_text``.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import accumulate

from ._model_texts import INPUT_TOO_DEEP, INPUT_TOO_LARGE, truncation_note
from ._safe_text import bounded_repr

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "DEFAULT_MAX_INPUT_DEPTH",
    "DEFAULT_MAX_RESPONSE_CHARS",
    "NO_LIMIT_PAST",
    "WITHIN_LIMITS",
    "Limits",
    "cap_result",
    "cap_texts",
    "check_count",
    "input_limit_problem",
    "known_within_limits",
    "nesting_depth",
    "timeout_seconds",
]

DEFAULT_MAX_INPUT_BYTES = 1_000_000
DEFAULT_MAX_INPUT_DEPTH = 64
DEFAULT_MAX_RESPONSE_CHARS = 10_000_000
MIN_RESULT_BYTES = 256  # the truncation note itself takes about 120
NO_LIMIT_PAST = 1e9
"""Seconds (about 31 years) past which a timeout means no limit: it is kept as ``math.inf``.

No call lives that long, and some readers of a timeout need a bounded one: a
durable tool call's activity timeout is a ``timedelta`` (at most about 8.6e13
seconds), so ``1e15`` made none and failed every workflow task; ``math.inf``
means none there too.
"""


@dataclass(frozen=True)
class Limits:
    """What a ``Worker`` allows each tool call; every field has a safe default.

    - ``max_input_bytes`` / ``max_input_depth``: larger or deeper argument JSON
      is refused with ``Invalid argument: ...`` before it is parsed.
    - ``tool_timeout``: seconds a call may take (``None`` or ``math.inf``: no limit; more
      than ``1e9``, about 31 years, is kept as ``math.inf``). ``@tool(timeout=)``
      sets a tighter one per tool.
    - ``max_result_bytes``: longer results are cut at a UTF-8 boundary and the
      model is told how much was dropped.
    - ``max_media_bytes``: the images, audio and documents of one rich result
      together; a part past it is replaced by a note saying what was dropped.
    - ``max_concurrent_calls``: how many calls of one response run at once.
    - ``max_response_chars``: the text, reasoning, argument fragments, calls' ids and
      names and provider items of one model response together, each event counting
      one at least; a response past it is refused (``LlmClientError``), as a broken
      client's: an endless stream would otherwise fill memory, and the history.

    Budgets of a run (``run()`` and the ``resume()`` / ``retry()`` that continue
    it; ``None``: no budget). Before each model request the worker checks
    what the run has used; once a budget is used up it raises
    ``UsageLimitExceededError`` instead of sending:

    - ``max_requests``: model requests;
    - ``max_input_tokens`` / ``max_output_tokens``: tokens, as the provider
      reported them in each response's ``usage``.
    """

    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    max_input_depth: int = DEFAULT_MAX_INPUT_DEPTH
    tool_timeout: float | None = 300.0
    max_result_bytes: int = 100_000
    max_media_bytes: int = 20_000_000
    max_concurrent_calls: int = 16
    max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS
    max_requests: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None

    def __post_init__(self) -> None:
        # Checked whole, not only compared: `nan < 1` is false, so a NaN limit would pass a
        # range check and then allow everything; a float size or a bool is a mistake too.
        for name in ("max_requests", "max_input_tokens", "max_output_tokens"):
            if getattr(self, name) is not None:
                check_count(f"Limits.{name}", getattr(self, name), 1, optional=True)
        check_count("Limits.max_input_bytes", self.max_input_bytes, 1)
        check_count("Limits.max_input_depth", self.max_input_depth, 1)
        check_count(
            "Limits.max_result_bytes",
            self.max_result_bytes,
            MIN_RESULT_BYTES,
            why=" (room for the truncation note)",
        )
        check_count("Limits.max_media_bytes", self.max_media_bytes, 0)
        check_count("Limits.max_concurrent_calls", self.max_concurrent_calls, 1)
        check_count("Limits.max_response_chars", self.max_response_chars, 1)
        if self.tool_timeout is not None:
            _check_timeout(self.tool_timeout)
            seconds = timeout_seconds(
                "Limits.tool_timeout", self.tool_timeout, no_limit="None or math.inf"
            )
            object.__setattr__(self, "tool_timeout", seconds)  # frozen: set once, here


def check_count(
    name: str,
    value: object,
    minimum: int,
    *,
    optional: bool = False,
    why: str = "",
    maximum: int | None = None,
) -> None:
    """``name`` (``"Limits.max_requests"``) is an int (not a bool) of at least ``minimum``
    (and at most ``maximum``)."""
    none = " (or None)" if optional else ""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"{name} must be an int{none}, got {type(value).__name__} {bounded_repr(value, 80)}"
        )
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}{why}{none}, got {value}")
    if maximum is not None and value > maximum:
        shown = bounded_repr(value, 80)  # an int of 5 000 digits cannot even be shown whole
        raise ValueError(f"{name} must be at most {maximum}{none}, got {shown}")


def _check_timeout(value: object) -> None:
    """``Limits.tool_timeout`` (not ``None``) is a positive number of seconds.

    Infinity is allowed (it means no limit, like ``None``); NaN is not (anyio refuses a
    NaN deadline, so every call would fail).
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(
            f"Limits.tool_timeout must be a number of seconds (or None), got "
            f"{type(value).__name__} {bounded_repr(value, 80)}"
        )
    if not value > 0:  # NaN too
        raise ValueError(f"Limits.tool_timeout must be positive, got {value}")


def timeout_seconds(name: str, seconds: float, *, no_limit: str) -> float:
    """``seconds`` (a positive number, checked already) as a timeout: ``math.inf`` past
    ``NO_LIMIT_PAST``, else as it is.

    Raises ``ValueError`` naming ``name`` for an int no float can hold (``10**400``):
    every deadline is a float, so each call would fail with ``OverflowError``.
    ``no_limit`` says what to give instead (``"math.inf"``).
    """
    try:
        as_float = float(seconds)
    except OverflowError:
        raise ValueError(
            f"{name} must be a number of seconds a float can hold, got an int past "
            f"1.8e308 ({no_limit} means no limit)"
        ) from None
    return math.inf if as_float > NO_LIMIT_PAST else seconds


# A JSON string literal, escapes included (the unrolled form). The closing quote is
# optional so that an unterminated string ends the match instead of making the
# engine retry from every escaped quote: linear time on any input. Only for text with a
# backslash outside every string (no JSON has one): see _steps_outside_strings.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)

# Bytes of the scan: an opening bracket becomes 0x01 (+1 as a signed byte), a closing one
# 0xFF (-1); quotes and backslashes are kept as they are, every other byte dropped.
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'[]{}"\\')
_NOT_BRACKET = bytes(byte for byte in range(256) if byte not in b"[]{}")
_OPEN = b"\x01"
_DIP = b"\xff\x01"  # a close followed by an open

WITHIN_LIMITS: ContextVar[tuple[str, int, int] | None] = ContextVar(
    "llm_worker_within_limits", default=None
)
"""``(input_json, max_bytes, max_depth)``: that very text is within those limits.

Set by ``execute_call`` while a tool runs a call whose input it checked against a
Worker's ``Limits``, so that a generated tool skips its own check when that one is no
stricter (``known_within_limits``). A fact about the text alone: true wherever the value
is seen, in a task the tool starts or a call it makes.
"""


def known_within_limits(input_json: str, max_bytes: int, max_depth: int) -> bool:
    """Whether ``input_json`` (this very object) is known to be within limits at least as
    strict as these, so that ``input_limit_problem`` would find nothing (``WITHIN_LIMITS``)."""
    checked = WITHIN_LIMITS.get()
    return (
        checked is not None
        and checked[0] is input_json
        and checked[1] <= max_bytes
        and checked[2] <= max_depth
    )


def input_limit_problem(input_json: str, max_bytes: int, max_depth: int) -> str | None:
    """Why ``input_json`` is over a limit, or ``None``. Cheap for ordinary inputs."""
    # A character is at most 4 UTF-8 bytes: short inputs need no encoding.
    if len(input_json) * 4 > max_bytes:
        size = len(input_json) if input_json.isascii() else _utf8_size(input_json)
        if size > max_bytes:
            return INPUT_TOO_LARGE.format(size=size, limit=max_bytes)
    # Fewer brackets than the limit cannot nest deeper than it.
    brackets = input_json.count("{") + input_json.count("[")
    if brackets > max_depth and nesting_depth(input_json) > max_depth:
        return INPUT_TOO_DEEP.format(limit=max_depth)
    return None


def nesting_depth(input_json: str) -> int:
    """How deep the brackets of ``input_json`` outside its strings nest (0: none).

    As a reader of JSON strings finds them: a backslash escapes the character after it, an
    unterminated string runs to the end; a backslash outside a string is a character like
    any other, and a closing bracket counts even where nothing opened (``][[`` is 1 deep).
    """
    return _deepest(_steps_outside_strings(input_json))


def _steps_outside_strings(text: str) -> bytes:
    """The brackets of ``text`` outside its strings, as steps (0x01 opens, 0xFF closes).

    All in C, over bytes (a bracket, a quote or a backslash is one byte of UTF-8, and no
    byte of another character is one of them): a regex match per string, or a Python step
    per bracket, cost more than pydantic's whole validation of a list of small objects.
    """
    data = text.encode("utf-8", "surrogatepass")
    if b"\\" in data:
        # Pairs of backslashes (escaped ones) drop out, then an escaped quote leaves only
        # its backslash: the quotes left start and end the strings, if no backslash stands
        # outside them (checked below; outside a string, a backslash escapes nothing).
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"\\")
    # Two quotes with no bracket between them (a string without one, or one's end and the
    # next one's start) drop out: every other quote still starts or ends a string.
    kept = data.translate(_STEPS, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[::2])  # outside, inside, outside...
    if b"\\" in kept:
        # A backslash outside the strings (not JSON): a quote after it may start a string
        # although it was dropped as escaped. Read the strings one by one instead.
        outside = _JSON_STRING.sub("", text).encode("utf-8", "surrogatepass")
        kept = outside.translate(_STEPS, _NOT_BRACKET)
    return kept


def _deepest(steps: bytes) -> int:
    """How deep ``steps`` (0x01 opens, 0xFF closes, from depth 0) get."""
    # Dropping a dip (a close and the open right after it) changes no depth but the one
    # between them, which is below the one before: the deepest point stays. A pass of
    # `replace` drops them all; what has none left opens all, then closes all.
    while True:
        fewer = steps.replace(_DIP, b"")
        if len(fewer) == len(steps):
            return steps.count(_OPEN)
        if len(fewer) > len(steps) * 3 // 4:
            # Deep dips lose a level a pass: add up the steps left, one at a time, instead.
            return max(accumulate(memoryview(fewer).cast("b"), initial=0))
        steps = fewer


def cap_result(text: str, max_bytes: int) -> str:
    """``text``, or its first bytes (cut at a UTF-8 boundary) and a note of what was dropped.

    Never copies ``text`` whole: a 100 MB result costs a few hundred kilobytes to cap.
    """
    if len(text) * 4 <= max_bytes:
        return text
    return cap_texts([text], max_bytes)[0]


def cap_texts(texts: Sequence[str], max_bytes: int, *, separator: int = 0) -> list[str]:
    """The texts of one result (its text parts, in order) within ``max_bytes`` together,
    counting ``separator`` bytes between each two (``text_of`` joins them by lines).

    The first ones whole; the one that crosses the cap cut at a UTF-8 boundary, with a
    note of what was dropped of them all; those after it left out (the list is shorter).
    """
    sizes = [len(text) if text.isascii() else _utf8_size(text) for text in texts]
    total = sum(sizes) + separator * max(0, len(texts) - 1)
    if total <= max_bytes:
        return list(texts)
    # The note's length depends on the count it reports; a generous bound fits both.
    room = max(0, max_bytes - (120 + 2 * len(str(total))))
    kept: list[str] = []
    kept_bytes = 0
    for text, size in zip(texts, sizes, strict=True):
        if kept:
            room -= separator
            kept_bytes += separator
        if size > room:
            # A character is at least one byte: the first `room` characters hold the bytes.
            keep = max(0, room)
            cut = _decoded(text[:keep].encode("utf-8", "surrogatepass")[:keep])
            kept_bytes += len(cut.encode("utf-8", "surrogatepass"))
            kept.append(cut + truncation_note(total - kept_bytes, total))
            return kept
        kept.append(text)
        kept_bytes += size
        room -= size
    raise AssertionError("unreachable: the texts are over the cap")


def _decoded(data: bytes) -> str:
    """``data``, cut at a UTF-8 boundary, decoded with its lone surrogates kept (they
    are the caller's to replace: left out, a file name would read as another)."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:  # the cut went through the last character
        return data[: exc.start].decode("utf-8", "surrogatepass")


_SIZE_CHUNK = 1 << 16  # characters encoded at a time: at most 256 KB alive


def _utf8_size(text: str) -> int:
    """``len(text.encode("utf-8", "surrogatepass"))``, without encoding it all at once."""
    return sum(
        len(text[start : start + _SIZE_CHUNK].encode("utf-8", "surrogatepass"))
        for start in range(0, len(text), _SIZE_CHUNK)
    )
