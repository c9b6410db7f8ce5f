"""Making text safe for a model: bounded, scrubbed of this machine's details, secrets redacted.

An exception's text, or an error message from a remote MCP server, may carry
what a model must never read: file paths and object addresses of this
machine, tracebacks, and secrets (an API key from the environment, a
password in a database URL). ``model_safe_text`` and ``safe_text`` turn such
text into a short sentence a model can act on.

Every pattern here takes time linear in its input, and only the first
``_WINDOW`` characters of a text are read at all (truncate first, then
scrub): a hostile text costs the same as a long harmless one, microseconds.

``valid_unicode`` replaces lone surrogates, which no UTF-8 wire can carry.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import json
import os
import re
import reprlib
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = ["MAX_ERROR_TEXT", "bounded_repr", "model_safe_text", "safe_text", "valid_unicode"]

MAX_ERROR_TEXT = 500
"""The longest text ``model_safe_text`` and ``safe_text`` return, in characters."""

# Only this much of a text is read; scrubbing shortens text (a path becomes `<path>`),
# so the window is wider than what is kept.
_WINDOW = 4 * MAX_ERROR_TEXT
_MIN_SECRET_LENGTH = 6  # shorter values ("1", "true") would redact ordinary words

REDACTED = "<redacted>"
PATH = "<path>"

# -- secrets -------------------------------------------------------------------------------

# An environment variable whose name says its value is secret: *_KEY, *_TOKEN, *_SECRET, *PASSWORD*.
_SECRET_ENV_NAME = re.compile(r"(?:_KEY|_TOKEN|_SECRET)\Z|PASSWORD|PASSWD", re.IGNORECASE)
# A parameter or field name that says the same: api_key, access_token, client_secret, password,
# an Authorization header...
_SECRET_FIELD_NAME = re.compile(
    r"(?i:(?:\A|[_.-])(?:api_?key|apikey|key|token|accesstoken|secret|passw(?:or)?d|pwd"
    r"|sig|signature|credentials?|auth|authorization)(?:\Z|[_.-]))"
    r"|[a-z0-9](?:Key|Token|Secret|Password)\Z"  # apiKey, accessToken (not "monkey")
)
# Those that name only secrets. `key`, `sig`, `signature` and `auth` alone also name
# ordinary things (a sort key, a function's signature, an auth method): before a colon
# in prose (`sort_key: 'created_at'`), they are kept. (A token is taken for a secret
# even there: "invalid token: '...'" quotes one more often than a parser's.)
_SECRET_ONLY_NAME = re.compile(
    r"(?i:(?:\A|[_.-])(?:api_?key|apikey|token|accesstoken|secret|passw(?:or)?d|pwd"
    r"|credentials?|authorization)(?:\Z|[_.-]))"
    r"|[a-z0-9](?:Token|Secret|Password)\Z|(?i:api)Key\Z"
)
# `name=value` unquoted, in a query string or a message (?api_key=..., &token=..., password=...).
# Bounded quantifiers and a start only where a name can begin: linear time.
_NAME_EQUALS_VALUE = re.compile(r"(?<![\w.-])([\w.-]{1,64})=([^\s&#;,'\"<>]{1,512})")
# A quoted value as a repr or JSON writes it, escapes included (`'it\'s'`, `"a\"b"`). A text
# matches one way only, and the closing quote may be missing (a value the cut went through):
# once begun, a value matches, so nothing is read twice. (Only `_WINDOW` characters are scrubbed.)
_DOUBLE_QUOTED = rf'"(?:[^"\\\n]|\\.){{0,{_WINDOW}}}"?'
_QUOTED = rf"'(?:[^'\\\n]|\\.){{0,{_WINDOW}}}'?|{_DOUBLE_QUOTED}"
# A quoted value after a name: `password='...'` (a dataclass's or pydantic model's repr, keyword
# arguments), `password: "..."`, `'password': '...'` (a dict's repr), `"apiKey": "..."` (JSON).
_QUOTED_FIELD = re.compile(
    rf"""(?<![\w.-])(['"]?)([\w.-]{{1,64}})\1(\s{{0,3}}[:=]\s{{0,3}})({_QUOTED})"""
)
# The scheme an Authorization header's value starts with: `Basic ...`, `Digest ...`.
_AUTH_SCHEME = re.compile(r"[A-Za-z][\w-]{0,30}\s{1,3}(?=\S)")
# The credentials of an unquoted `Authorization: <scheme> ...` header (any scheme, and
# Proxy-Authorization), and of a bearer token anywhere: a token68 (`dXNlcjpodW50ZXIy==`) or
# auth-params (Digest's `username="bob", response="6629fa..."`).
_AUTH_PARAM = rf"""[\w-]{{1,64}}\s{{0,3}}=\s{{0,3}}(?:{_DOUBLE_QUOTED}|[^\s,'"]{{1,{_WINDOW}}})"""
# HTTP authentication schemes (IANA's registry, and the common vendor ones): a header's
# value starts with one; "authorization: user lacks a role" is prose.
_SCHEMES = (
    r"(?:basic|bearer|digest|token|negotiate|ntlm|hoba|mutual|vapid|dpop|gnap|apikey|"
    r"privatetoken|concealed|scram-sha-\d+|aws4-hmac-sha256|oauth|mac|hawk)"
)
_AUTHORIZATION = re.compile(
    rf"(?i)(\b(?:authorization\s{{0,3}}[:=]\s{{0,3}}{_SCHEMES}|bearer)\s{{1,3}})"
    rf"(?:{_AUTH_PARAM}(?:\s{{0,3}},\s{{0,3}}{_AUTH_PARAM})*|[\w.~+/-]{{1,{_WINDOW}}}=*)"
)
# The userinfo of a URL or DSN: scheme://user:password@host (the user is kept), and
# scheme://token@host.
_URL_USERINFO = re.compile(
    r"(?<![\w+.-])([a-zA-Z][\w+.-]{0,30}://)([^\s:/@'\"]{0,256}:)?[^\s@/'\"]{1,256}@"
)

# -- this machine's details ----------------------------------------------------------------

_FILE_URL = re.compile(r"""(?i)\bfile://[^\s'"<>]*""")
_UNC_PATH = re.compile(r"""(?<![\w\\])\\\\[^\s\\/'"<>|]+(?:\\[^\s\\'"<>|]*)+""")
# An absolute path (POSIX, `C:\` or `C:/`, `~/`), not the tail of a URL or a word
# ("https://x/y", "a/b", "km/h"). A segment may hold single spaces when more path
# follows ("/Users/bob/Library/Application Support/x.json"). Segments exclude the
# separators, so no two ways to match the same text exist: linear time.
_SEGMENT = r"""[^\s'"/\\:<>|*?]+"""
_ABSOLUTE_PATH = re.compile(
    rf"""(?<![\w:/.\\~-])(?:[A-Za-z]:[\\/]|~[\w.-]{{0,32}}[\\/]|/)(?=[^\s'"/\\:<>|*?])"""
    rf"""(?:{_SEGMENT}(?: {_SEGMENT})*[\\/])*(?:{_SEGMENT})?"""
)
# `<mod.Thing object at 0x7f...>`, `<function f.<locals>.g at 0x7f...>`: keep the words only.
_OBJECT_REPR = re.compile(r"<((?:[^<>]|<\w{1,20}>){1,300}?) at 0x[0-9a-fA-F]{1,16}>")
_TRACEBACK = "Traceback (most recent call last)"


def model_safe_text(exc: BaseException) -> str:
    """A short text for the model about ``exc``: no paths, reprs, tracebacks or secrets.

    Falls back to the class name when the exception has no text, or its
    ``__str__`` fails.
    """
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not break the error path
        text = ""
    if isinstance(exc, OSError):  # its filenames appear as reprs: "C:\\Users\\..." or with spaces
        for filename in (exc.filename, exc.filename2):
            if filename is not None:
                text = _hide_filename(text, filename)
    return safe_text(text) or type(exc).__name__


def safe_text(text: str) -> str:
    """``text`` made safe for a model (see the module docstring), ``MAX_ERROR_TEXT`` at most."""
    secrets = _secret_values()
    if secrets:  # before the cut, so that a secret the cut would halve is still whole
        head = _redact(text[: _WINDOW + len(secrets[0])], secrets)
        if len(text) > _WINDOW + len(secrets[0]):
            # That slice may have gone through a secret, and redacting may have made the
            # text too short for the cut below to drop it: drop its beginning now.
            head = _without_cut_secret(head, secrets)
        text = head
    if len(text) > _WINDOW:
        text = _cut(text)
    text = text.strip()
    if _TRACEBACK in text:
        text = text.splitlines()[0]
    if "uthorization" in text or "UTHORIZATION" in text or "earer" in text or "EARER" in text:
        text = _AUTHORIZATION.sub(rf"\1{REDACTED}", text)
    if "'" in text or '"' in text:
        text = _QUOTED_FIELD.sub(_redact_quoted_field, text)
    if "=" in text:
        text = _NAME_EQUALS_VALUE.sub(_redact_named_value, text)
    if ":" in text:
        text = _URL_USERINFO.sub(rf"\1\2{REDACTED}@", text)
        text = _FILE_URL.sub(PATH, text)
    if "\\\\" in text:
        text = _UNC_PATH.sub(PATH, text)
    if "/" in text or "\\" in text:
        text = _ABSOLUTE_PATH.sub(PATH, text)
    if " at 0x" in text:
        text = _OBJECT_REPR.sub(_object_words, text)
    if len(text) > MAX_ERROR_TEXT:
        text = text[: MAX_ERROR_TEXT - 1] + "…"
    return text


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate (which UTF-8 cannot encode) replaced by U+FFFD."""
    if text.isascii():  # O(1) in CPython
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _hide_filename(text: str, filename: Any) -> str:  # OSError.filename is Any
    """``text`` without ``filename``, which it shows as a repr (``'...'``, ``b'...'``, a Path's)."""
    try:
        name = os.fsdecode(filename)
    except TypeError:  # not a path (an OSError raised with odd arguments)
        return text
    if not name:
        return text
    for shown in dict.fromkeys((repr(filename), repr(name))):
        text = text.replace(shown, f"'{PATH}'")
    return text.replace(name, PATH)


class _SecretNames:
    """The names of the secret-looking environment variables, found again when their number changes.

    Listing the environment costs tens of microseconds; looking up a few names
    costs one. Values are read at every use, so a changed secret is redacted too.
    """

    size = -1
    names: tuple[str, ...] = ()

    @classmethod
    def current(cls) -> tuple[str, ...]:
        size = len(os.environ)
        if size != cls.size:
            cls.names = tuple(name for name in os.environ if _SECRET_ENV_NAME.search(name))
            cls.size = size
        return cls.names


def _secret_values() -> list[str]:
    """The values of the environment variables whose names say they are secret, and the
    forms texts show them in, longest first."""
    values: set[str] = set()
    for name in _SecretNames.current():
        value = os.environ.get(name, "")
        if len(value) >= _MIN_SECRET_LENGTH:
            values.update(_shown_forms(value))
    return sorted(values, key=len, reverse=True)  # one containing another goes whole


@functools.lru_cache(maxsize=256)
def _shown_forms(value: str) -> frozenset[str]:
    """``value`` as texts show it: itself, a repr's (``KeyError``, a tuple, ``{x!r}``:
    backslashes doubled), JSON's (``\\/`` too), URL-encoded (in a path or a query, upper or
    lower case escapes). Made once per value: an error's scrubbing stays microseconds."""
    forms = {value, repr(value)[1:-1], repr(value.encode("utf-8", "surrogatepass"))[2:-1]}
    for escaped in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]):
        forms.update((escaped, escaped.replace("/", "\\/")))
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value, safe="")):
        forms.update((encoded, _LOWER_ESCAPES.sub(lambda m: m[0].lower(), encoded)))
    return frozenset(forms)


_LOWER_ESCAPES = re.compile(r"%[0-9A-F]{2}")


def _redact(text: str, secrets: list[str]) -> str:
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def _without_cut_secret(text: str, secrets: list[str]) -> str:
    """``text`` without the beginning of a secret it ends with (the rest was cut off).

    Only a secret's beginning is dropped, whatever it holds (a passphrase's spaces): an
    ordinary text is kept whole.
    """
    cut = len(text)
    for value in secrets:
        position = text.find(value[0], max(0, len(text) - len(value) + 1))
        while position != -1 and position < cut:
            if value.startswith(text[position:]):
                cut = position
                break
            position = text.find(value[0], position + 1)
    return text[:cut]


def _cut(text: str) -> str:
    """The first ``_WINDOW`` characters, without the word the cut went through.

    A half-seen secret or path would not be recognised, so it is dropped.
    """
    window = text[:_WINDOW]
    boundary = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
    return window[:boundary] if boundary > _WINDOW // 2 else window


def _redact_named_value(match: re.Match[str]) -> str:
    if _SECRET_FIELD_NAME.search(match[1]) is None:
        return match[0]
    return f"{match[1]}={REDACTED}"


def _redact_quoted_field(match: re.Match[str]) -> str:
    name_quote, name, separator, value = match[1], match[2], match[3], match[4]
    if _SECRET_FIELD_NAME.search(name) is None:
        return match[0]
    if not name_quote and ":" in separator and _prose_name(name):
        return match[0]  # "Missing key: 'user_id'", "Unknown sort_key: 'created_at'"
    scheme = ""
    if name.lower().endswith("authorization"):  # `Basic <redacted>`, as an unquoted header shows
        shown = _AUTH_SCHEME.match(value, 1)
        scheme = shown[0] if shown else ""
    quote = value[0]
    return f"{name_quote}{name}{name_quote}{separator}{quote}{scheme}{REDACTED}{quote}"


def _prose_name(name: str) -> bool:
    """Whether ``name``, written in prose before a colon, says only ordinary things: none of
    its secret-like parts is one a password or an API key is called by."""
    return _SECRET_ONLY_NAME.search(name) is None


def _object_words(match: re.Match[str]) -> str:
    words: str = match[1]
    head, space, rest = words.partition(" ")
    if "." in head and head.replace(".", "").replace("_", "").isalnum():
        head = head.rpartition(".")[2]  # `app.models.Widget object` -> `Widget object`
    return f"<{head}{space}{rest}>"


# -- reprs for error messages ------------------------------------------------------------

_MAX_SHOWN = 300  # characters of a bad value an error message shows


class _BoundedRepr(reprlib.Repr):
    """``reprlib``'s bounded repr, bytes and huge ints included."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = _MAX_SHOWN

    def repr_bytes(self, x: bytes, level: int) -> str:
        return builtins.repr(x[: self.maxstring])

    def repr_bytearray(self, x: bytearray, level: int) -> str:
        return builtins.repr(x[: self.maxstring])

    def repr_int(self, x: int, level: int) -> str:
        try:
            return super().repr_int(x, level)
        except ValueError:  # more digits than Python turns into text
            return f"<int of {x.bit_length()} bits>"


_REPR = _BoundedRepr()


def bounded_repr(value: object, limit: int = _MAX_SHOWN, depth: int = 2) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters.

    Never built whole first: a bad event holding 20 MB of text would make an 80 MB
    message (and log line). Dataclasses (the events, a ``Usage``) show their fields.
    """
    if depth and dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(
            f"{field.name}={bounded_repr(getattr(value, field.name), limit, depth - 1)}"
            for field in dataclasses.fields(value)
            if field.repr
        )
        text = f"{type(value).__qualname__}({fields})"
    else:
        text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
