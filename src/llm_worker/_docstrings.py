"""Docstring → (tool description, parameter descriptions). The only docstring-parser user.

Google, NumPy, reST and Epydoc styles are recognised (docstring-parser picks
the style that explains the most). The description is the prose before the
first section, line breaks kept; the sections themselves never reach it.
"""

from __future__ import annotations

import inspect
import re

import docstring_parser

__all__ = ["parse_docstring"]

# Any of these means the docstring has sections worth a full parse; without
# them the whole cleaned docstring is prose and parsing would only cost time.
_SECTION_MARKERS = re.compile(
    r"^\s*(?:(?:Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|"
    r"Attributes|Keyword Args|Keyword Arguments|Other Parameters|Notes?|Warnings?|"
    r"See Also|References)\s*:?\s*$|[:@](?:param|type|returns?|rtype|raises?|keyword)\b)",
    re.MULTILINE,
)


_GOOGLE_HEADER = re.compile(r"[A-Z][A-Za-z ]*:[ \t]*$", re.MULTILINE)
_PLACEHOLDER = "(summary)"


_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$", re.MULTILINE)
_REST_FIELD = re.compile(r"^\s*:(?:param|type|returns?|rtype|raises?)\b", re.MULTILINE)
_EPYDOC_FIELD = re.compile(r"^\s*@(?:param|type|returns?|rtype|raises?)\b", re.MULTILINE)


def _style_of(cleaned: str) -> docstring_parser.DocstringStyle:
    """The style the docstring's markers show; AUTO (try them all) only if they don't."""
    if _NUMPY_UNDERLINE.search(cleaned):
        return docstring_parser.DocstringStyle.NUMPYDOC
    if _REST_FIELD.search(cleaned):
        return docstring_parser.DocstringStyle.REST
    if _EPYDOC_FIELD.search(cleaned):
        return docstring_parser.DocstringStyle.EPYDOC
    if _GOOGLE_HEADER.search(cleaned):
        return docstring_parser.DocstringStyle.GOOGLE
    return docstring_parser.DocstringStyle.AUTO


def _parse_google_without_summary(cleaned: str) -> docstring_parser.Docstring:
    """A docstring that opens with ``Args:``: docstring-parser needs a summary first.

    ``cleandoc`` also took away the entries' indentation under that first line
    (it is measured from the lines below it), so it is restored when no other
    section follows.
    """
    header, _, body = cleaned.partition("\n")
    if not _GOOGLE_HEADER.search(body):
        body = "\n".join(f"    {line}" if line else line for line in body.splitlines())
    parsed = docstring_parser.parse(f"{_PLACEHOLDER}\n\n{header}\n{body}")
    parsed.short_description = None
    return parsed


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """Return the prose description (``None`` if there is none) and ``{param: description}``."""
    if not doc or doc.isspace():
        return None, {}
    cleaned = inspect.cleandoc(doc)
    if not _SECTION_MARKERS.search(cleaned):
        return cleaned, {}
    if _GOOGLE_HEADER.match(cleaned):
        parsed = _parse_google_without_summary(cleaned)
    else:
        parsed = docstring_parser.parse(cleaned, _style_of(cleaned))
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    separator = "\n\n" if parsed.blank_after_short_description else "\n"
    description = separator.join(parts).strip() or None
    params = {p.arg_name: p.description.strip() for p in parsed.params if p.description}
    return description, params
