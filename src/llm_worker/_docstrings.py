"""Docstring → (tool description, parameter descriptions). The only docstring-parser user.

One rule for Google, NumPy, reST and Epydoc docstrings: the sections that
describe the call itself are taken out of the prose, and everything else
stays as written, for the model to read.

=============  ====================================================  =======================
style          taken out                                             stays (examples)
=============  ====================================================  =======================
Google         ``Args:``, ``Arguments:``, ``Parameters:``,           ``Note:``, ``Example:``,
               ``Params:``, ``Keyword Args:``, ``Other Parameters:``  ``Warning:``, ``See
               ..., ``Returns:``, ``Yields:``, ``Raises:``,           Also:``, ``Attributes:``,
               ``Warns:`` (a header alone on its line, at the         any other header
               docstring's margin, and its indented lines)
NumPy          ``Parameters``, ``Other Parameters``, ``Receives``,   ``Notes``, ``Warnings``,
               ``Returns``, ``Yields``, ``Raises``, ``Warns`` (a     ``See Also``,
               header underlined with ``---``, up to the next one)   ``Examples``, any other
reST / Epydoc  ``:param:``/``@param`` and their kin (``:type:``,     ``.. note::``, other
               ``:returns:``, ``:rtype:``, ``:raises:``,             fields (``:note:``,
               ``:yields:``...), with their indented lines           ``@see:``...)
=============  ====================================================  =======================

A docstring is read in every style, and the style whose sections describe
the most of the function's parameters wins (then the one that finds the most
sections): a stray ``---`` rule, a line opening with ``:class:`` or ``@here``
does not make a Google docstring NumPy, reST or Epydoc.

The parameter sections are then read by docstring-parser for each
parameter's text. A section it cannot read (``x - no colon`` under ``Args:``,
``:param x - no colon``) never fails the import: it stays in the prose, and a
``UserWarning`` names ``Class.method`` and the line.
"""

from __future__ import annotations

import inspect
import linecache
import re
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import docstring_parser
from docstring_parser.common import ParseError

__all__ = ["parse_docstring"]

_PARAMS, _DROPPED = "params", "dropped"

_GOOGLE_TITLES = {
    **dict.fromkeys(
        (
            "args",
            "arguments",
            "parameters",
            "params",
            "keyword args",
            "keyword arguments",
            "kwargs",
            "other parameters",
            "other params",
            "other args",
            "other arguments",
        ),
        _PARAMS,
    ),
    **dict.fromkeys(
        (
            "returns",
            "return",
            "yields",
            "yield",
            "raises",
            "raise",
            "exceptions",
            "exception",
            "except",
            "warns",
            "warn",
        ),
        _DROPPED,
    ),
}
_NUMPY_TITLES = {
    **dict.fromkeys(
        (
            "parameters",
            "params",
            "arguments",
            "args",
            "other parameters",
            "other params",
            "other arguments",
            "other args",
            "receives",
            "receive",
        ),
        _PARAMS,
    ),
    **dict.fromkeys(
        ("returns", "return", "yields", "yield", "raises", "raise", "warns", "warn"), _DROPPED
    ),
}
_REST_FIELDS = {
    **dict.fromkeys(("param", "parameter", "arg", "argument", "key", "keyword"), _PARAMS),
    **dict.fromkeys(
        (
            "type",
            "kwtype",
            "returns",
            "return",
            "rtype",
            "raises",
            "raise",
            "except",
            "exception",
            "yields",
            "yield",
            "ytype",
        ),
        _DROPPED,
    ),
}
_EPYDOC_FIELDS = {
    **dict.fromkeys(("param", "keyword"), _PARAMS),
    **dict.fromkeys(
        ("type", "returns", "return", "rtype", "raises", "raise", "yields", "yield", "ytype"),
        _DROPPED,
    ),
}

_GOOGLE_HEADER = re.compile(r"([A-Za-z][A-Za-z ]*?)[ \t]*:[ \t]*$")
_NUMPY_UNDERLINE = re.compile(r"[ \t]*-{3,}[ \t]*$")
_REST_FIELD = re.compile(r":([A-Za-z]+)\b")
_EPYDOC_FIELD = re.compile(r"@([A-Za-z]+)\b")

_PLACEHOLDER = "(summary)"


@dataclass(frozen=True)
class _Block:
    """A section taken out of the prose: lines ``start`` to ``stop`` (exclusive)."""

    kind: str  # _PARAMS or _DROPPED
    start: int
    stop: int


@dataclass(frozen=True)
class _Reading:
    """The docstring read in one style: the sections to take out, and what they describe."""

    lines: list[str]  # as this style reads them (see _google_blocks)
    blocks: list[_Block]
    params: dict[str, str]
    unreadable: list[tuple[_Block, ParseError]]  # parameter sections docstring-parser refused


def parse_docstring(
    doc: str | None,
    *,
    where: str = "",
    source: Callable[..., Any] | None = None,
    parameters: Collection[str] | None = None,
) -> tuple[str | None, dict[str, str]]:
    """Return the prose description (``None`` if there is none) and ``{param: description}``.

    ``parameters``: the function's parameter names, which decide between the
    styles (any name counts without them). ``where`` (``"Class.method"``) and
    ``source`` (the function) only serve the warning about a section
    docstring-parser cannot read.
    """
    if not doc or doc.isspace():
        return None, {}
    reading = _best_reading(inspect.cleandoc(doc).splitlines(), parameters)
    for block, exc in reading.unreadable:
        _warn(where, source, reading.lines, block, exc)
    kept = [block for block, _ in reading.unreadable]
    removed = {i for b in reading.blocks if b not in kept for i in range(b.start, b.stop)}
    lines = reading.lines
    description = _join_prose([line for i, line in enumerate(lines) if i not in removed])
    return description, reading.params


def _best_reading(lines: list[str], parameters: Collection[str] | None) -> _Reading:
    """The style whose sections describe the most parameters, then find the most sections."""
    style = docstring_parser.DocstringStyle
    readings = [  # a tie goes to the first
        _read(style.NUMPYDOC, lines, _numpy_blocks(lines)),
        _read(style.REST, lines, _field_blocks(lines, _REST_FIELD, _REST_FIELDS)),
        _read(style.EPYDOC, lines, _field_blocks(lines, _EPYDOC_FIELD, _EPYDOC_FIELDS)),
        _read(style.GOOGLE, *_google_blocks(lines)),
    ]

    wanted = None if parameters is None else set(parameters)

    def score(reading: _Reading) -> tuple[int, int]:
        described = reading.params.keys() if wanted is None else reading.params.keys() & wanted
        return len(described), len(reading.blocks)

    return max(readings, key=score)


def _read(
    style: docstring_parser.DocstringStyle, lines: list[str], blocks: list[_Block]
) -> _Reading:
    params: dict[str, str] = {}
    unreadable: list[tuple[_Block, ParseError]] = []
    param_blocks = [b for b in blocks if b.kind == _PARAMS]
    if param_blocks:
        try:
            params = _read_params(style, lines, param_blocks)
        except ParseError:
            # Read each section alone: only the ones that fail stay in the prose.
            for block in param_blocks:
                try:
                    params.update(_read_params(style, lines, [block]))
                except ParseError as exc:
                    unreadable.append((block, exc))
    return _Reading(lines, blocks, params, unreadable)


def _google_blocks(lines: list[str]) -> tuple[list[str], list[_Block]]:
    """The lines as Google reads them, and their sections."""
    if (
        lines
        and _google_kind(lines[0]) is not None
        and not any(_GOOGLE_HEADER.match(line) for line in lines[1:])
    ):
        # A docstring that opens with its only section ("""Args:\n    x: ..."""):
        # cleandoc measured the margin from the entries and took their indentation.
        lines = [lines[0], *(f"    {line}" if line else line for line in lines[1:])]
    blocks: list[_Block] = []
    for start, line in enumerate(lines):
        kind = _google_kind(line)
        if kind is not None:
            stop = _indented_until(lines, start + 1)
            blocks.append(_Block(kind, start, stop))
    return lines, blocks


def _google_kind(line: str) -> str | None:
    match = _GOOGLE_HEADER.match(line)
    return _GOOGLE_TITLES.get(match.group(1).lower()) if match else None


def _numpy_blocks(lines: list[str]) -> list[_Block]:
    headers = [
        i
        for i in range(len(lines) - 1)
        if lines[i].strip() and not lines[i][0].isspace() and _NUMPY_UNDERLINE.match(lines[i + 1])
    ]
    blocks: list[_Block] = []
    for n, start in enumerate(headers):
        kind = _NUMPY_TITLES.get(lines[start].strip().lower())
        if kind is not None:
            stop = headers[n + 1] if n + 1 < len(headers) else len(lines)
            blocks.append(_Block(kind, start, stop))
    return blocks


def _field_blocks(lines: list[str], field: re.Pattern[str], kinds: dict[str, str]) -> list[_Block]:
    blocks: list[_Block] = []
    for start, line in enumerate(lines):
        match = field.match(line)
        kind = kinds.get(match.group(1).lower()) if match else None
        if kind is not None:
            blocks.append(_Block(kind, start, _indented_until(lines, start + 1)))
    return blocks


def _indented_until(lines: list[str], start: int) -> int:
    """The end of the indented lines from ``start`` (blank lines inside them included)."""
    stop = start
    for i in range(start, len(lines)):
        if lines[i].strip():
            if not lines[i][0].isspace():
                break
            stop = i + 1
    return stop


def _read_params(
    style: docstring_parser.DocstringStyle, lines: list[str], blocks: list[_Block]
) -> dict[str, str]:
    """``{param: text}`` from the parameter sections, read by docstring-parser."""
    # The entries under the one title docstring-parser knows ("Other Parameters" is read
    # apart, and a second "Args:" replaces the first), or the fields as they are.
    if style is docstring_parser.DocstringStyle.GOOGLE:
        parts = ["Args:", *(line for b in blocks for line in lines[b.start + 1 : b.stop])]
    elif style is docstring_parser.DocstringStyle.NUMPYDOC:
        entries = (line for b in blocks for line in lines[b.start + 2 : b.stop])
        parts = ["Parameters", "----------", *entries]
    else:
        parts = [line for b in blocks for line in lines[b.start : b.stop]]
    body = "\n".join(parts)
    parsed = docstring_parser.parse(f"{_PLACEHOLDER}\n\n{body}", style)
    params: dict[str, str] = {}
    for param in parsed.params:
        arg_name, description = param.arg_name, param.description or ""
        typed = _TYPE_WITH_COLON.match(f"{arg_name}:{description}") if "(" in arg_name else None
        if typed is not None and ")" not in arg_name:
            # Google's `b (:obj:`int`, optional): text`: docstring-parser splits it at the
            # type's colon, giving `b (`; the text is what follows the parenthesis.
            arg_name, description = typed.group(1), typed.group(2)
        if description.strip():
            for name in _names_in(arg_name):
                params[name] = description.strip()
    return params


def _names_in(arg_name: str) -> list[str]:
    """The parameters one entry documents (NumPy's ``a, b : int`` documents two)."""
    names: list[str] = []
    for part in arg_name.split(","):
        match = _LEADING_NAME.match(part)
        if match:
            names.append(match.group(1))
    return names


_LEADING_NAME = re.compile(r"\s*\*{0,2}([A-Za-z_]\w*)")
_TYPE_WITH_COLON = re.compile(r"\s*\*{0,2}([A-Za-z_]\w*)\s*\([^)]*\)\s*:(.*)", re.DOTALL)


def _join_prose(lines: list[str]) -> str | None:
    """The kept lines, without the blank lines a removed section leaves behind."""
    result: list[str] = []
    for line in lines:
        if line.strip() or (result and result[-1].strip()):
            result.append(line)
    return "\n".join(result).strip() or None


def _warn(
    where: str,
    source: Callable[..., Any] | None,
    lines: list[str],
    block: _Block,
    exc: ParseError,
) -> None:
    line = _offending_line(lines, block, str(exc))
    filename, lineno = _source_position(source, line)
    owner = where or "a tool"
    warnings.warn_explicit(
        f"{owner}: cannot read the parameter descriptions in its docstring, line {lineno}: "
        f"{line.strip()!r} ({exc}); that section stays in the tool's description as written "
        f"(fix the line to give the parameters their descriptions)",
        UserWarning,
        filename,
        lineno,
        module=getattr(source, "__module__", None) or "llm_worker",
    )


def _offending_line(lines: list[str], block: _Block, message: str) -> str:
    """The line docstring-parser names in its message, else the section's first line."""
    for line in lines[block.start : block.stop]:
        if line.strip() and line.strip() in message:
            return line
    return lines[block.start]


def _source_position(source: Callable[..., Any] | None, line: str) -> tuple[str, int]:
    """``(file, line number)`` of ``line`` in ``source``'s file, or of its ``def``."""
    code = getattr(inspect.unwrap(source), "__code__", None) if source is not None else None
    if code is None:
        return "<docstring>", 1
    filename, first = code.co_filename, code.co_firstlineno
    wanted = line.strip()
    for lineno in range(first, first + 10_000):
        text = linecache.getline(filename, lineno)
        if not text:
            break
        if text.strip() == wanted:
            return filename, lineno
    return filename, first
