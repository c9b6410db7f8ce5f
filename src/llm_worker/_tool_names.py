"""The tool names model providers accept, and how a name they refuse is renamed.

OpenAI and Anthropic take ``^[a-zA-Z0-9_-]{1,64}$``. ``@tool`` names must follow
the rule, the ``openai``, ``openai-responses`` and ``anthropic`` formats of
``export_tools`` refuse a name that does not, and ``mcp_tool_definitions``
renames a server's tool that does not (the calls still go out under the
server's name), by the rule below.

Gemini takes 1 to 128 letters, digits, ``_``, ``.``, ``:`` or ``-``, the first a
letter or ``_`` (google-genai's ``FunctionDeclaration.name``): not every name of
the rule above (``3d_render``, ``-x``), and some others (``files.read``). The
``gemini`` format refuses a name Gemini does not take (``mcp_tool_definitions``
does not rename for it).

Renaming:

1. A name that follows the rule is kept.
2. Otherwise each run of other characters becomes one ``_``
   (``files.read`` → ``files_read``, ``my tool`` → ``my_tool``).
3. If that is longer than 64 characters, is still not a valid name, or is
   the name of another tool in the same listing, it is cut to 55 characters
   and ``_`` plus the first 8 hex digits of the SHA-256 of the original name
   are added (``files_read_1b2c3d4e``).
4. If that name is taken too (a listing of ``files.read``, ``files_read`` and
   ``files_read_601e4eb6``: a server can list the hashed name of one tool as
   another's), the hash is of the original name, a zero byte and a count
   (``1``, ``2``...): the first count whose name no other tool has or gets.
   Names are given in the order of the original names, sorted, so the same
   names always give the same results, whatever the order they are listed in.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "GEMINI_TOOL_NAME_RULE",
    "TOOL_NAME_RULE",
    "is_valid_gemini_tool_name",
    "is_valid_tool_name",
    "provider_safe_names",
]

TOOL_NAME_RULE = "1 to 64 letters, digits, '_' or '-'"
"""The rule in words, for error messages."""

GEMINI_TOOL_NAME_RULE = "1 to 128 letters, digits, '_', '.', ':' or '-', the first a letter or '_'"
"""Gemini's rule in words."""

_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GEMINI_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}")
_OTHERS = re.compile(r"[^A-Za-z0-9_-]+")
_HASHED_PREFIX = 55  # 55 + "_" + 8 hex digits = 64


def is_valid_tool_name(name: str) -> bool:
    """Whether ``name`` is a name every major provider accepts."""
    return _VALID.fullmatch(name) is not None


def is_valid_gemini_tool_name(name: str) -> bool:
    """Whether Gemini accepts ``name`` as a function's name."""
    return _GEMINI_VALID.fullmatch(name) is not None


def provider_safe_names(names: Sequence[str]) -> list[str]:
    """A valid, distinct name for each of ``names``, by the module's rule (same order).

    Raises ``ValueError`` if two of ``names`` are equal: there is no telling
    their tools apart.
    """
    duplicates = [name for name, count in Counter(names).items() if count > 1]
    if duplicates:
        raise ValueError(f"tool names must be distinct; listed more than once: {duplicates}")
    kept = {name for name in names if is_valid_tool_name(name)}
    renamed = {name: _OTHERS.sub("_", name) for name in names if name not in kept}
    counts = Counter(renamed.values())
    result = {name: name for name in kept}
    to_hash: list[str] = []
    for name, candidate in renamed.items():
        if not is_valid_tool_name(candidate) or candidate in kept or counts[candidate] > 1:
            to_hash.append(name)
        else:
            result[name] = candidate
    taken = set(result.values())  # distinct: the kept names, and renamed ones no other got
    for name in sorted(to_hash):  # sorted: the listing's order does not change a name
        hashed = _hashed(name, renamed[name], taken)
        taken.add(hashed)
        result[name] = hashed
    return [result[name] for name in names]


def _hashed(name: str, renamed: str, taken: set[str]) -> str:
    """``renamed`` cut short, ``_`` and 8 hex digits of a SHA-256 of ``name``: of ``name``
    alone, else of it with the first count that gives a name not in ``taken``."""
    import hashlib  # only here: it loads OpenSSL, 3 ms of `import llm_worker`

    data = name.encode("utf-8", "surrogatepass")
    count = 0
    while True:
        salted = data if count == 0 else b"%b\0%d" % (data, count)
        candidate = f"{renamed[:_HASHED_PREFIX]}_{hashlib.sha256(salted).hexdigest()[:8]}"
        if candidate not in taken:  # ends: each count is a new name, and few are taken
            return candidate
        count += 1
