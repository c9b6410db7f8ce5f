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
   are added (``files_read_1b2c3d4e``): the same name always gives the same
   result, and different names give different ones.
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
    result: list[str] = []
    for name in names:
        if name in kept:
            result.append(name)
            continue
        candidate = renamed[name]
        if not is_valid_tool_name(candidate) or candidate in kept or counts[candidate] > 1:
            import hashlib  # only here: it loads OpenSSL, 3 ms of `import llm_worker`

            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
            candidate = f"{candidate[:_HASHED_PREFIX]}_{digest}"
        result.append(candidate)
    if len(set(result)) < len(result):  # only if a hashed name equals another tool's name
        raise ValueError(f"cannot give these tools distinct valid names: {list(names)}")
    return result
